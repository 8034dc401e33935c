#include "conformance/fastudp/nic_cases.hpp"

#include <array>

namespace rdmaconf::conformance::fastudp {

namespace {

constexpr std::string_view kContract = "rdmaconf shim v2";

// The requirements, in our own words; "rdmaconf shim v2" is the contract of
// rdmaconf/fastudp_shim.h as docs/fastudp.md states it.
constexpr std::array kNicText{
    CaseText{nic::match, kContract, "receive matching", Level::must,
             "A datagram with a good checksum whose destination port (and address, when the receive names one) matches "
             "a posted receive is placed in that receive's buffer and no other; one that matches no posted receive "
             "reaches no user buffer."},
    CaseText{nic::oldest, kContract, "receive matching", Level::must,
             "Of several posted receives a datagram matches, it goes to the one posted first."},
    CaseText{nic::payload, kContract, "splintering", Level::must,
             "The user buffer holds the datagram's payload octet for octet, from the buffer's first octet."},
    CaseText{nic::splinter, kContract, "splintering", Level::must,
             "Every datagram placed in a user buffer gets one kernel ring entry naming the receive, holding the "
             "frame's headers through the UDP header octet for octet, with the frame length, the UDP payload length "
             "and the octets delivered."},
    CaseText{nic::slow_path, kContract, "slow path", Level::must,
             "A frame the fast path does not take (no matching receive, not UDP, IP options it does not parse) "
             "reaches the kernel ring whole and unchanged, cut only at the slot's end and then flagged."},
    CaseText{nic::fragment, "RFC 768; RFC 791", "§3.2; RFC 8200 §4.5", Level::must,
             "An IP fragment is never checksummed nor matched (the UDP checksum covers octets in other fragments): it "
             "goes whole to the kernel ring, which reassembles."},
    CaseText{nic::memory, kContract, "host memory", Level::must,
             "The NIC writes host memory only inside posted receive buffers (while they are posted), the kernel ring "
             "and the producer index word."},
    CaseText{nic::truncation, kContract, "splintering", Level::must,
             "A payload longer than its buffer fills the buffer and stops there; its ring entry is flagged truncated "
             "and carries the full payload length and the octets delivered. A payload that fits is not flagged."},
    CaseText{nic::csum_bad, "RFC 1122", "§4.1.3.4; RFC 8200 §8.1", Level::must,
             "A UDP datagram whose non-zero checksum is wrong (IPv4 or IPv6) is discarded: it reaches no user buffer "
             "and no ring entry, and the checksum-error counter counts it."},
    CaseText{nic::csum_zero4, "RFC 768", "Fields: Checksum", Level::must,
             "An IPv4 UDP datagram with checksum zero carries no checksum and is accepted, not discarded."},
    CaseText{nic::csum_zero6, "RFC 8200", "§8.1; RFC 6936 §5", Level::must,
             "An IPv6 UDP datagram with checksum zero is discarded (no tunnel exception of RFC 6935/6936 is "
             "configured): it reaches no user buffer and no ring entry."},
    CaseText{nic::length, "RFC 768", "Fields: Length", Level::must,
             "A UDP length below 8 or beyond the IP payload is no whole datagram and reaches no user buffer; octets "
             "after a shorter UDP length are not payload and are not delivered."},
    CaseText{nic::tx_csum, "RFC 768", "Fields: Checksum; RFC 8200 §8.1", Level::must,
             "A frame sent with checksum offload carries the right UDP checksum over the pseudo-header (IPv4 and "
             "IPv6), and is otherwise sent unchanged; one sent without offload is sent unchanged."},
    CaseText{nic::tx_ones, "RFC 768", "Fields: Checksum", Level::must,
             "A checksum that computes to zero is sent as all ones (zero means no checksum)."},
    CaseText{nic::irq, kContract, "interrupts", Level::must,
             "After the NIC publishes a ring entry (the producer index word written), it raises interrupt vector 0 "
             "before it goes idle (coalescing may gather entries, never lose one); with a coalescing time limit set, "
             "before it takes any frame that arrives after the limit has run out."},
    CaseText{nic::ring_order, kContract, "kernel ring", Level::must,
             "Ring entries for received frames appear in the order the frames arrived."},
    CaseText{nic::ring_full, kContract, "kernel ring", Level::must,
             "When no ring slot is free the NIC drops the frame and counts it; it never writes a slot the driver has "
             "not consumed."},
    CaseText{nic::tx_done, kContract, "transmit completions", Level::must,
             "Every transmit gets one tx-done ring entry once its frame is on the wire, naming the transmit's cookie "
             "and its frame length, its other fields zero; when no ring slot is free the completion is not written and "
             "the ring-full counter counts it (the frame is still sent)."},
    CaseText{nic::flags, kContract, "ring entries", Level::must,
             "A splinter entry carries exactly one of the checksum flags: checksum verified, or none carried (IPv4, "
             "zero); a whole entry carries no checksum flag (only truncated, when cut to its slot); a tx-done entry "
             "carries no flag."},
    CaseText{nic::counters, kContract, "counters", Level::must,
             "Each counter counts what the NIC did, as the header defines it: frames taken while enabled; datagrams "
             "placed in a user buffer; frames handed whole to the ring; datagrams dropped for their checksum, for their "
             "length, and entries not written for want of a slot; splinters flagged truncated; frames sent."},
    CaseText{nic::rx_cancel, kContract, "receive matching", Level::must,
             "After the driver writes a posted receive's cookie to RX_CANCEL no datagram reaches that receive: the next "
             "one for its port goes to the next receive it matches, or whole to the kernel ring."},
    CaseText{nic::ctrl, kContract, "control", Level::must,
             "Before CTRL_ENABLE, and while it is clear, the NIC ignores frames from the wire (no write, no entry, no "
             "counter); CTRL_RESET drops every posted receive without an entry and zeroes the counters and RX_POSTED, "
             "while the ring and its producer index go on."},
    CaseText{nic::posted_min, kContract, "receive matching", Level::must,
             "The NIC holds at least FUDP_MIN_POSTED (1024) posted receives at once, and RX_POSTED says how many it "
             "holds."},
    CaseText{nic::mmio, kContract, "registers", Level::must,
             "A 4-octet read at a register's offset returns its low half and at offset + 4 its high half; a register "
             "write of other than 8 octets has no effect."},
    CaseText{nic::shim, kContract, "entry points", Level::must,
             "The plug-in returns from every call (no crash, no hang) and uses the shim's entry points as documented: "
             "known windows and vectors, no null jobs or buffers, reads only of host memory that exists."},
};

const TextCatalog<kNicText.size()>& catalog() {
  static const TextCatalog<kNicText.size()> c(kNicText, kFamily);
  return c;
}

}  // namespace

const std::vector<const CaseInfo*>& nic_cases() { return catalog().all; }

const CaseInfo* nic_case(std::string_view id) {
  for (const auto* c : catalog().all)
    if (c->id == id) return c;
  return nullptr;
}

}  // namespace rdmaconf::conformance::fastudp
