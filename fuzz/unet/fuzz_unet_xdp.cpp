// The U-Net XDP program (run in the kernel through BPF_PROG_TEST_RUN)
// against the node's own receive path, frame by frame: two independent
// demultiplexers that must agree. Whatever the frame:
//  * the program passes it to the kernel exactly when the node says it is
//    not U-Net;
//  * whatever the node delivers, the program sends on to the socket (it
//    never drops a frame the node would deliver);
//  * the program counts exactly one verdict per frame.
// Needs root (CAP_BPF); without it every input is skipped, and says so once.
//
// Input: a flags octet (bit 0: an endpoint for the frame's destination tag;
// bit 1: a channel from it to the frame's source MAC and tag; bit 2: make
// the U-Net header well formed; bit 3: turn the program's channel check off
// as the node's ignore-channels fault does), then the frame.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engines/unet/ports.hpp"
#include "engines/unet/unet.hpp"
#include "fuzz/unet/frame.hpp"

namespace u = rdmaconf::engine::unet;

namespace {

const u::Mac kMe{0x02, 0, 0x0a, 0x55, 0, 2};

u::XdpProgram* program() {
  static std::unique_ptr<u::XdpProgram> p = [] {
    std::string error;
    auto x = u::load_xdp_program(error);
    if (!x) std::fprintf(stderr, "fuzz_unet_xdp: the XDP program cannot be loaded (%s); every input is skipped\n", error.c_str());
    return x;
  }();
  return p.get();
}

std::uint64_t total(const u::XdpStats& s) {
  return s.passed + s.redirected + s.malformed + s.unknown_tag + s.no_channel + s.no_socket;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  u::XdpProgram* prog = program();
  // The kernel's test run takes whole Ethernet headers, up to a page.
  if (!prog || size < 1 + 14 || size > 1 + 1514) return 0;
  const unsigned flags = data[0];
  std::vector<std::byte> f(reinterpret_cast<const std::byte*>(data + 1), reinterpret_cast<const std::byte*>(data + size));
  const bool unet = rdmaconf::fuzz::is_unet(f);
  if (unet && (flags & 4u)) rdmaconf::fuzz::make_well_formed(f);

  prog->reset();
  u::Node node(kMe);
  node.set_faults(u::Faults{.forge = false, .ignore_channels = (flags & 8u) != 0, .overflow = false});
  node.observe(prog);
  prog->check_channels((flags & 8u) == 0);
  u::Endpoint* ep = nullptr;
  if (unet && (flags & 1u)) {
    const auto a = rdmaconf::fuzz::addresses(f);
    ep = node.create_endpoint(a.dst_tag);
    if (ep)
      for (std::uint32_t i = 0; i < ep->config().buffers; ++i) ep->give(i);
    if (ep && (flags & 2u)) (void)node.open_channel(*ep, a.src_mac, a.src_tag);
  }

  const auto before = prog->stats();
  const int action = prog->run(f);
  const auto after = prog->stats();
  if (action < 0) std::abort();  // the kernel refused to run it
  if (total(after) != total(before) + 1) std::abort();  // one verdict per frame
  const bool passed = after.passed == before.passed + 1;
  const bool sent_on = after.no_socket == before.no_socket + 1;

  const bool taken = node.receive(f);
  if (passed != !taken) std::abort();  // the kernel's frames and U-Net's: the same split
  const bool delivered = ep && (ep->counters().rx_delivered > 0 || ep->poll().has_value());
  if (delivered && !sent_on) std::abort();  // the program dropped what the node delivers
  return 0;
}
