// The iWARP peer's control path: what a client sends before it has a
// session (the MPA Request a refusal waits for, answered by busy_reply)
// and the control messages of a scenario (Ctl). Any input: no crash; a
// refusal answers only a whole Request, with an MPA Reply that decodes and
// rejects; a control message that decodes encodes back to the same octets.
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "interop/iwarp/session.hpp"

namespace ii = rdmaconf::interop::iwarp;
namespace pi = rdmaconf::protocols::iwarp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const rdmaconf::protocols::Bytes bytes{reinterpret_cast<const std::byte*>(data), size};
  static const ii::PeerOptions options = [] {
    ii::PeerOptions o;
    o.max_sessions = 3;
    return o;
  }();
  if (const auto answer = ii::detail::busy_reply(in, options)) {
    if (!answer->empty()) {
      // Only a whole Request is answered, with a rejecting Reply.
      if (size < pi::kMpaRr.size || !pi::looks_like_mpa_key(bytes, pi::MpaFrameKind::request)) std::abort();
      const rdmaconf::protocols::Bytes reply{reinterpret_cast<const std::byte*>(answer->data()), answer->size()};
      const auto r = pi::decode_mpa_rr(reply);
      if (!r || r->kind() != pi::MpaFrameKind::reply || !r->hdr.get(pi::MpaRr::r) || r->consumed != answer->size()) std::abort();
    }
  } else if (size >= pi::kMpaRr.size && size >= pi::kMpaRr.size + rdmaconf::protocols::be16(bytes, 18)) {
    std::abort();  // a whole Request (or no Request) was left waiting
  }
  if (const auto c = ii::detail::Ctl::decode(bytes)) {
    const auto again = c->encode();
    if (std::memcmp(again.data(), data, again.size()) != 0) std::abort();
  }
  return 0;
}
