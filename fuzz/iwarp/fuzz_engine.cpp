// The iWARP engine's receive path fed a hostile peer: the first octet picks
// our role and what we ask for (bit 0 initiator, 1 CRC, 2 markers, 3 revision
// 1, 4-5 peer-to-peer RTR type, 6 the socket reader's path: receive_whole()
// with what it leaves handed again, as TcpLink does); the rest is chunks
// [len:1][octets] that arrive one receive() call each, while everything the engine writes is
// taken away. Receive buffers and regions of every kind are in place, so
// Sends, Writes, Reads and atomics all reach placement code.
#include <algorithm>
#include <vector>

#include "engines/iwarp/qp.hpp"

using namespace rdmaconf::engine::iwarp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  QpConfig c;
  c.initiator = data[0] & 1;
  c.crc = data[0] & 2;
  c.markers = data[0] & 4;
  c.revision = (data[0] & 8) ? 1 : 2;
  c.enhanced = c.revision == 2;
  const int rtr = (data[0] >> 4) & 3;
  c.p2p = rtr != 0;
  c.rtr = rtr == 1 ? Rtr::send : rtr == 2 ? Rtr::write : Rtr::read;
  c.ird = 4;
  c.mulpdu = 512;
  ProtectionDomain pd;
  CompletionQueue scq, rcq;
  std::vector<std::byte> recv(4096), remote(4096), atom(64);
  const auto rs = pd.register_mr(recv, kLocalWrite);
  pd.register_mr(remote, kRemoteRead | kRemoteWrite | kLocalWrite);
  pd.register_mr(atom, kRemoteAtomic);
  QueuePair qp(pd, scq, rcq, c);
  for (std::uint64_t i = 0; i < 4; ++i) qp.post_recv({i, {rs, i * 1024, 1024}});
  qp.connect();
  SendWr rd{9, WrOpcode::read, {rs, 0, 100}};
  rd.remote_stag = 0x100;
  qp.post_send(rd);
  qp.consume(qp.output().size());
  const bool whole = data[0] & 0x40;
  std::vector<std::byte> held;
  std::size_t i = 1;
  while (i < size) {
    const std::size_t len = std::min<std::size_t>(data[i], size - i - 1);
    const auto in = rdmaconf::protocols::as_bytes(data + i + 1, len);
    if (whole) {
      held.insert(held.end(), in.begin(), in.end());
      const std::size_t taken = qp.receive_whole(rdmaconf::protocols::Bytes(held));
      if (taken > held.size()) __builtin_trap();
      held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(taken));
    } else {
      qp.receive(in);
    }
    qp.consume(qp.output().size());
    while (scq.poll() || rcq.poll()) {
    }
    i += 1 + len;
  }
  qp.peer_closed();
  return 0;
}
