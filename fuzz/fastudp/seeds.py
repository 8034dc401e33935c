"""Seeds of fuzz_nic: UDP datagrams over IPv4 and IPv6 to the ports that
have receives (checksums fixed by the target), fragments, a transmit, and
the golden RoCE frames as they are. Called by fuzz/make_seeds.py."""
from seedlib import flagged_frames, ip_udp


def seeds(captures, s):
    nic = flagged_frames
    s.put("fuzz_nic", "basic", nic(0x12, [(1, ip_udp(False, 5001, bytes(range(100)))), (1, ip_udp(True, 5002, b"x" * 700)),
                                          (1, ip_udp(False, 6000, b"k" * 30))]))
    s.put("fuzz_nic", "truncate", nic(0x01, [(3, ip_udp(False, 5003, b"t" * 400)), (1, ip_udp(False, 5001, b"u" * 600))]))
    s.put("fuzz_nic", "fragments", nic(0x01, [(1, ip_udp(False, 5001, b"f" * 64, 0x2000)), (1, ip_udp(True, 5001, b"g" * 64))]))
    s.put("fuzz_nic", "ring-full", nic(0x48, [(1, ip_udp(False, 6000, b"r" * 64))] * 6))
    # Frames that arrive over time with interrupts coalesced (cfg bit 3): gaps
    # of 256 and 3840 cycles, inside and past the 500-cycle timer.
    s.put("fuzz_nic", "arrivals", nic(0x0b, [(0x11, ip_udp(False, 5001, b"a" * 90)), (0x11, ip_udp(False, 5002, b"b" * 90)),
                                             (0xf1, ip_udp(True, 5003, b"c" * 90)), (0x11, ip_udp(False, 6000, b"d" * 90))]))
    s.put("fuzz_nic", "transmit", nic(0x00, [(4, ip_udp(False, 9000, b"s" * 77)), (4, ip_udp(True, 9000, b"s" * 78))]))
    roce = [f for cap in captures if cap.name.startswith("roce") for f in cap.frames[:4]]
    s.put("fuzz_nic", "roce", nic(0x22, [(0, f[:4000]) for f in roce[:12]]))
