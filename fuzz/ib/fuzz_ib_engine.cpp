// The InfiniBand engine's receive path over a sequence of packets: the same
// records as fuzz_roce_state (a 2-octet header: top bit set marks a packet
// whose ICRC the link found bad, low 15 bits the length; then the transport
// packet). The first octet picks RC, UC or UD and the path MTU. The queue
// pair takes its QPN and expected PSN from the first packet and its send PSN
// from the first response, so requests reach the responder and responses
// reach the requester (which has Sends, Writes, Reads and Atomics posted).
// Every packet the engine emits must decode, and time moves on between
// packets so the retransmission and RNR timers run.
#include <cstdlib>

#include "engines/ib/qp.hpp"

using namespace rdmaconf;
using namespace rdmaconf::engine;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  ib::QpConfig cfg;
  cfg.type = data[0] % 3 == 0 ? ib::QpType::rc : data[0] % 3 == 1 ? ib::QpType::uc : ib::QpType::ud;
  cfg.pmtu = 256u << ((data[0] >> 2) % 5);
  cfg.retry_cnt = 2;
  cfg.rnr_retry = 2;
  cfg.timeout_ms = 5;
  // QPN and PSNs from the traffic.
  bool have_req = false, have_resp = false;
  for (std::size_t off = 1; off + 2 + 12 <= size;) {
    const std::size_t len = static_cast<std::size_t>(((data[off] & 0x7f) << 8) | data[off + 1]);
    const std::uint8_t* b = data + off + 2;
    const std::uint8_t op = b[0] & 0x1f;
    const std::uint32_t qp = (b[5] << 16) | (b[6] << 8) | b[7], psn = (b[9] << 16) | (b[10] << 8) | b[11];
    const bool resp = op >= 0x0d && op <= 0x12;
    if (!have_req && !resp && qp >= 2) {
      cfg.qpn = qp;
      cfg.rq_psn = psn;
      have_req = true;
    }
    if (!have_resp && resp) {
      cfg.sq_psn = psn;
      have_resp = true;
    }
    off += 2 + len;
  }
  if (!ib::validate(cfg).empty()) return 0;
  ProtectionDomain pd;
  CompletionQueue scq, rcq;
  std::vector<std::byte> buf(8192), recv(16384), atom(16);
  const auto key = pd.register_mr(buf, kRemoteRead | kRemoteWrite | kLocalWrite);
  const auto rkey = pd.register_mr(recv, kLocalWrite);
  const auto akey = pd.register_mr(atom, kRemoteAtomic | kLocalWrite);
  ib::QueuePair qp(pd, scq, rcq, cfg);
  for (unsigned i = 0; i < 4; ++i) qp.post_recv({i, {rkey, i * 4096u, 4096}});
  SendWr w{};
  w.remote_qpn = cfg.dest_qpn;
  for (WrOpcode op : {WrOpcode::send, WrOpcode::write, WrOpcode::read, WrOpcode::atomic_fetch_add, WrOpcode::send_imm}) {
    w.op = op;
    w.local = {op == WrOpcode::atomic_fetch_add ? akey : key, 0, op == WrOpcode::atomic_fetch_add ? 8u : 3000u};
    w.remote_stag = key;
    qp.post_send(w);
    ++w.wr_id;
  }
  ib::OutPacket out;
  std::uint64_t now = 0;
  auto drain = [&] {
    for (int i = 0; i < 4096 && qp.next_output(out); ++i)
      if (!protocols::ib::decode_transport(out.bytes).ok()) std::abort();  // we emitted a packet we cannot decode
  };
  drain();
  for (std::size_t off = 1; off + 2 <= size;) {
    const bool bad_icrc = data[off] & 0x80;
    const std::size_t len = static_cast<std::size_t>(((data[off] & 0x7f) << 8) | data[off + 1]);
    off += 2;
    const std::size_t n = std::min(len, size - off);
    qp.receive(protocols::as_bytes(data + off, n), !bad_icrc);
    off += n;
    now += 3;
    qp.tick(now);
    drain();
  }
  for (int i = 0; i < 20; ++i) {
    now += 50;
    qp.tick(now);
    drain();
  }
  while (scq.poll()) {
  }
  while (rcq.poll()) {
  }
  return 0;
}
