#pragma once
// A U-Net node's ways onto a real interface (the in-memory link is in
// unet.hpp). Each opens on an interface of the calling thread's network
// namespace:
//  * XdpPort, the main path: an AF_XDP socket whose UMEM is the node's
//    frame memory, behind the XDP program engines/unet/xdp/unet_xdp.bpf.c
//    (built from this repository's source, embedded in the binary). The
//    program demultiplexes by destination tag in the kernel: frames for a
//    tag no endpoint of the node has, or from a peer the endpoint has no
//    channel to, are dropped and counted there; every frame that is not
//    U-Net (ARP, IP, ...) passes to the kernel's stack untouched. The node's
//    control path keeps the program's maps in step (XdpProgram is its
//    ControlObserver).
//  * PacketPort, the portable fallback: an AF_PACKET socket bound to
//    EtherType 0x88B5, where XDP is not available.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engines/unet/unet.hpp"

namespace rdmaconf::engine::unet {

class Port : public Link {
 public:
  // Readable (poll) when frames wait.
  virtual int fd() const = 0;
  // Hands up to `max` frames that arrived (never ones this host sent) to
  // `fn`, each valid only during the call; returns how many.
  virtual std::size_t receive(const std::function<void(Bytes)>& fn, std::size_t max = 64) = 0;
  // "af_xdp" or "af_packet".
  virtual std::string_view kind() const = 0;
};

// AF_PACKET: null and `error` set when it cannot open (CAP_NET_RAW).
std::unique_ptr<Port> open_packet_port(const std::string& ifname, std::string& error);

// What the XDP program counted since the port opened (or since reset()).
struct XdpStats {
  std::uint64_t passed = 0, redirected = 0, malformed = 0, unknown_tag = 0, no_channel = 0, no_socket = 0;
};

// The tag demultiplexer: the XDP program loaded, with its maps, attached
// nowhere by itself. As a ControlObserver it keeps its maps in step with a
// node's control path.
class XdpProgram : public ControlObserver {
 public:
  // The program's channel check; off only to show a case FAILing
  // (the ignore-channels fault).
  virtual void check_channels(bool on) = 0;
  // Forgets every tag and channel (a new node takes over) and starts the
  // counts again.
  virtual void reset() = 0;
  virtual XdpStats stats() const = 0;
  // Runs the program once on `frame` in the kernel (BPF_PROG_TEST_RUN),
  // attached to nothing: its action (XDP_PASS, XDP_DROP, XDP_REDIRECT), or
  // -errno. A frame it would redirect to a slot with no socket is dropped
  // and counted as no_socket.
  virtual int run(Bytes frame) = 0;
};

// Loads the program; null and `error` set (naming the privilege: CAP_BPF
// and CAP_NET_ADMIN) when it cannot.
std::unique_ptr<XdpProgram> load_xdp_program(std::string& error);

class XdpPort : public Port {
 public:
  // Its program (the maps, the counts; the node's control path observer).
  virtual XdpProgram& program() = 0;
  // "native" or "generic": where the program runs.
  virtual std::string_view mode() const = 0;
};

// False when this build has no AF_XDP support (libxdp, libbpf or a BPF
// compiler missing when it was configured).
bool xdp_built();

// Loads and attaches the program to `ifname` and binds an AF_XDP socket to
// its queue 0. Null and `error` set, naming the privilege or resource that
// is missing (CAP_BPF and CAP_NET_ADMIN to load and attach, CAP_NET_RAW for
// the socket, locked memory for the UMEM), when it cannot; and when the
// environment variable RDMACONF_UNET_NO_XDP is set (to see the fallback on
// a machine that has XDP).
std::unique_ptr<XdpPort> open_xdp_port(const std::string& ifname, std::string& error);

}  // namespace rdmaconf::engine::unet
