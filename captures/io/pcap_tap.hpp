#pragma once
// An engine's frame tap (engines/common/tap.hpp) written to a pcap file:
// TCP connections as conversations with a handshake (no MSS option: the
// segments recorded are the engine's writes and reads, not the wire's) and
// UDP datagrams in IP, each stamped with the time it was handed over.
#include <memory>
#include <string>

#include "engines/common/tap.hpp"

namespace rdmaconf::captures::io {

// nullptr, with `err` saying why, when the file cannot be written.
std::shared_ptr<engine::FrameTap> pcap_tap(const std::string& path, std::string& err);

}  // namespace rdmaconf::captures::io
