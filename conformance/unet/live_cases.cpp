#include "conformance/unet/live_cases.hpp"

#include <array>

namespace rdmaconf::conformance::unet {

namespace {

constexpr std::string_view kLiveSpec = "rdmaconf U-Net v1";

constexpr std::array kLiveText{
    CaseText{live::data, kLiveSpec, "engine", Level::must,
             "Messages sent on a channel arrive at the peer endpoint octet for octet and in the order sent."},
    CaseText{live::spoof, kLiveSpec, "protection", Level::must,
             "A frame naming a source tag or MAC address its endpoint does not own, or a peer it has no channel to, is "
             "refused and counted on the sending side and never reaches the wire."},
    CaseText{live::unknown_tag, kLiveSpec, "protection", Level::must,
             "A frame for a tag that names no endpoint is dropped and counted, and reaches no endpoint."},
    CaseText{live::channel, kLiveSpec, "protection", Level::must,
             "An endpoint receives only from the peers it has a channel to; a stranger's frames are dropped and counted."},
    CaseText{live::oversize, kLiveSpec, "protection", Level::must,
             "A message longer than its buffer is cut to the buffer and flagged with its full length; no other buffer "
             "is written."},
    CaseText{live::no_free, kLiveSpec, "protection", Level::must,
             "With the free queue empty a message is dropped and counted; no buffer off the free queue is written."},
    CaseText{live::teardown, kLiveSpec, "protection", Level::must,
             "After an endpoint is torn down mid-stream, messages for it are dropped and counted as for an unknown tag, "
             "and the node goes on serving its other endpoints."},
    CaseText{live::kernel, kLiveSpec, "coexistence", Level::must,
             "U-Net traffic leaves the kernel's own traffic on the same interfaces alone: a kernel UDP exchange across "
             "them works while U-Net runs."},
};

}  // namespace

const std::vector<const CaseInfo*>& live_cases() {
  static const TextCatalog<kLiveText.size()> c(kLiveText, kLiveFamily);
  return c.all;
}

}  // namespace rdmaconf::conformance::unet
