// The AF_XDP path (ports.hpp). Built only when libxdp, libbpf and a BPF
// compiler were found (RDMACONF_HAVE_XDP).
#include <bpf/bpf.h>
#include <dlfcn.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "engines/unet/ports.hpp"

// The program's object file, assembled into this binary (xdp_object.S).
extern "C" const unsigned char rdmaconf_unet_xdp_object[];
extern "C" const unsigned char rdmaconf_unet_xdp_object_end[];

namespace rdmaconf::engine::unet {

namespace {

// The layout of unet_xdp.bpf.c's channel key.
struct ChannelKey {
  std::uint16_t dst_tag = 0, src_tag = 0;
  std::uint8_t src_mac[6] = {};
  std::uint8_t pad[2] = {};
};
static_assert(sizeof(ChannelKey) == 12);

constexpr std::uint32_t kFrames = 4096, kFrameSize = 2048, kRxFrames = 2048;  // the rest for sending
constexpr std::uint32_t kRing = 2048;

// libbpf and libxdp are loaded when the AF_XDP path is first used rather
// than linked: the command then runs where they are not installed (a user
// of the checker alone), and U-Net falls back to AF_PACKET there, saying why.
#define RDMACONF_BPF_FUNCTIONS(X)                                                                             \
  X(bpf_map_delete_elem) X(bpf_map_lookup_elem) X(bpf_map_update_elem) X(bpf_object__close)                  \
  X(bpf_object__find_map_fd_by_name) X(bpf_object__find_program_by_name) X(bpf_object__load)                 \
  X(bpf_object__open_mem) X(bpf_prog_test_run_opts) X(bpf_program__fd) X(bpf_xdp_attach) X(bpf_xdp_detach)   \
  X(libbpf_num_possible_cpus) X(libbpf_set_print)
#define RDMACONF_XDP_FUNCTIONS(X)                                                                             \
  X(xsk_socket__create) X(xsk_socket__delete) X(xsk_socket__fd) X(xsk_socket__update_xskmap) X(xsk_umem__create) \
  X(xsk_umem__delete)

struct Api {
#define RDMACONF_POINTER(name) decltype(&::name) name = nullptr;
  RDMACONF_BPF_FUNCTIONS(RDMACONF_POINTER)
  RDMACONF_XDP_FUNCTIONS(RDMACONF_POINTER)
#undef RDMACONF_POINTER
  std::string error;  // non-empty: a library or one of its functions is missing
};

const Api& api() {
  static const Api a = [] {
    Api x;
    const auto open = [&](const char* soname) -> void* {
      void* h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
      if (!h && x.error.empty())
        x.error = fmt::format("AF_XDP needs {} (Debian: libbpf1 and libxdp1): {}", soname, dlerror());
      return h;
    };
    void* bpf = open("libbpf.so.1");
    void* xdp = bpf ? open("libxdp.so.1") : nullptr;
    const auto find = [&](void* h, const char* soname, const char* name) -> void* {
      if (!h) return nullptr;
      void* f = dlsym(h, name);
      if (!f && x.error.empty()) x.error = fmt::format("{} has no {}: {}", soname, name, dlerror());
      return f;
    };
#define RDMACONF_BPF(name) x.name = reinterpret_cast<decltype(x.name)>(find(bpf, "libbpf.so.1", #name));
#define RDMACONF_XDP(name) x.name = reinterpret_cast<decltype(x.name)>(find(xdp, "libxdp.so.1", #name));
    RDMACONF_BPF_FUNCTIONS(RDMACONF_BPF)
    RDMACONF_XDP_FUNCTIONS(RDMACONF_XDP)
#undef RDMACONF_BPF
#undef RDMACONF_XDP
    return x;
  }();
  return a;
}

// libbpf's last complaint, for the error message (it is not printed).
thread_local std::string libbpf_said;
int libbpf_print(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  char line[512];
  const int n = vsnprintf(line, sizeof line, format, args);
  if (n > 0) {
    libbpf_said = line;
    while (!libbpf_said.empty() && (libbpf_said.back() == '\n' || libbpf_said.back() == ' ')) libbpf_said.pop_back();
  }
  return 0;
}

std::string privilege(int err, std::string_view what, std::string_view needs) {
  if (err == EPERM || err == EACCES)
    return fmt::format("{}: permission denied; it needs {} (run as root)", what, needs);
  return fmt::format("{}: {}{}", what, std::strerror(err), libbpf_said.empty() ? "" : fmt::format(" (libbpf: {})", libbpf_said));
}

class Program final : public XdpProgram {
 public:
  ~Program() override {
    if (obj_) api().bpf_object__close(obj_);
  }
  std::string load() {
    // Kernels before 5.11 charge BPF maps to locked memory.
    const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
    (void)setrlimit(RLIMIT_MEMLOCK, &unlimited);
    if (!api().error.empty()) return api().error;
    api().libbpf_set_print(libbpf_print);
    libbpf_said.clear();
    const auto size = static_cast<std::size_t>(rdmaconf_unet_xdp_object_end - rdmaconf_unet_xdp_object);
    obj_ = api().bpf_object__open_mem(rdmaconf_unet_xdp_object, size, nullptr);
    if (!obj_) return fmt::format("opening the embedded XDP object: {}", std::strerror(errno));
    if (const int e = api().bpf_object__load(obj_); e != 0)
      return privilege(-e, "loading the U-Net XDP program", "CAP_BPF and CAP_NET_ADMIN (or CAP_SYS_ADMIN)");
    bpf_program* prog = api().bpf_object__find_program_by_name(obj_, "unet_demux");
    tags_ = api().bpf_object__find_map_fd_by_name(obj_, "unet_tags");
    channels_ = api().bpf_object__find_map_fd_by_name(obj_, "unet_channels");
    xsks_ = api().bpf_object__find_map_fd_by_name(obj_, "unet_xsks");
    stats_ = api().bpf_object__find_map_fd_by_name(obj_, "unet_stats");
    config_ = api().bpf_object__find_map_fd_by_name(obj_, "unet_config");
    if (!prog || tags_ < 0 || channels_ < 0 || xsks_ < 0 || stats_ < 0 || config_ < 0)
      return "the embedded XDP object lacks its program or maps (a build fault)";
    prog_ = api().bpf_program__fd(prog);
    check_channels(true);
    return {};
  }
  int fd() const { return prog_; }
  int xsks() const { return xsks_; }

  void check_channels(bool on) override {
    const std::uint32_t key = 0, value = on ? 1u : 0u;
    (void)api().bpf_map_update_elem(config_, &key, &value, BPF_ANY);
  }
  void reset() override {
    for (const auto tag : tags_held_) (void)api().bpf_map_delete_elem(tags_, &tag);
    for (const auto& k : channels_held_) (void)api().bpf_map_delete_elem(channels_, &k);
    tags_held_.clear();
    channels_held_.clear();
    base_ = read_stats();
    check_channels(true);
  }
  XdpStats stats() const override {
    const auto now = read_stats();
    return {now.passed - base_.passed,           now.redirected - base_.redirected, now.malformed - base_.malformed,
            now.unknown_tag - base_.unknown_tag, now.no_channel - base_.no_channel, now.no_socket - base_.no_socket};
  }
  int run(Bytes frame) override {
    bpf_test_run_opts o{};
    o.sz = sizeof o;
    o.data_in = frame.data();  // the kernel runs the program on its own copy
    o.data_size_in = static_cast<std::uint32_t>(frame.size());
    o.repeat = 1;
    if (const int e = api().bpf_prog_test_run_opts(prog_, &o); e != 0) return e;
    return static_cast<int>(o.retval);
  }

  void endpoint_created(std::uint16_t tag) override {
    const std::uint32_t slot = 0;  // the one socket, on queue 0
    if (api().bpf_map_update_elem(tags_, &tag, &slot, BPF_ANY) == 0) tags_held_.push_back(tag);
  }
  void endpoint_destroyed(std::uint16_t tag) override { (void)api().bpf_map_delete_elem(tags_, &tag); }
  void channel_opened(std::uint16_t tag, const Mac& peer, std::uint16_t peer_tag) override {
    const ChannelKey k = key(tag, peer, peer_tag);
    const std::uint8_t one = 1;
    if (api().bpf_map_update_elem(channels_, &k, &one, BPF_ANY) == 0) channels_held_.push_back(k);
  }
  void channel_closed(std::uint16_t tag, const Mac& peer, std::uint16_t peer_tag) override {
    const ChannelKey k = key(tag, peer, peer_tag);
    (void)api().bpf_map_delete_elem(channels_, &k);
  }

 private:
  static ChannelKey key(std::uint16_t tag, const Mac& peer, std::uint16_t peer_tag) {
    ChannelKey k;
    k.dst_tag = tag;
    k.src_tag = peer_tag;
    std::memcpy(k.src_mac, peer.data(), 6);
    return k;
  }
  XdpStats read_stats() const {
    XdpStats s;
    const int cpus = api().libbpf_num_possible_cpus();
    if (cpus <= 0) return s;
    std::vector<std::uint64_t> v(static_cast<std::size_t>(cpus));
    // In unet_stat's order (unet_xdp.bpf.c).
    std::uint64_t* fields[] = {&s.passed, &s.redirected, &s.malformed, &s.unknown_tag, &s.no_channel, &s.no_socket};
    for (std::uint32_t k = 0; k < 6; ++k) {
      if (api().bpf_map_lookup_elem(stats_, &k, v.data()) != 0) continue;
      for (const auto x : v) *fields[k] += x;
    }
    return s;
  }

  bpf_object* obj_ = nullptr;
  int prog_ = -1, tags_ = -1, channels_ = -1, xsks_ = -1, stats_ = -1, config_ = -1;
  std::vector<std::uint16_t> tags_held_;
  std::vector<ChannelKey> channels_held_;
  XdpStats base_;
};

class Xdp final : public XdpPort {
 public:
  ~Xdp() override {
    if (xsk_) api().xsk_socket__delete(xsk_);
    if (umem_) api().xsk_umem__delete(umem_);
    if (attached_) api().bpf_xdp_detach(static_cast<int>(ifindex_), attach_flags_, nullptr);
    if (area_ != MAP_FAILED && area_) munmap(area_, std::size_t{kFrames} * kFrameSize);
  }

  std::string open(const std::string& ifname) {
    ifindex_ = if_nametoindex(ifname.c_str());
    if (ifindex_ == 0) return fmt::format("no interface named {} in this network namespace", ifname);
    if (auto e = prog_.load(); !e.empty()) return e;
    // Native mode where the driver has it (veth does), the generic hook
    // otherwise; never replacing another program on the interface.
    int e = 0;
    for (const std::uint32_t m : {XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE}) {
      attach_flags_ = m | XDP_FLAGS_UPDATE_IF_NOEXIST;
      e = api().bpf_xdp_attach(static_cast<int>(ifindex_), prog_.fd(), attach_flags_, nullptr);
      if (e == 0) {
        mode_ = m == XDP_FLAGS_DRV_MODE ? "native" : "generic";
        break;
      }
      if (-e == EPERM || -e == EBUSY || -e == EEXIST) break;
    }
    if (e != 0) {
      if (-e == EBUSY || -e == EEXIST) return fmt::format("{} already has an XDP program attached; U-Net will not replace it", ifname);
      return privilege(-e, fmt::format("attaching the U-Net XDP program to {}", ifname), "CAP_NET_ADMIN");
    }
    attached_ = true;
    area_ = mmap(nullptr, std::size_t{kFrames} * kFrameSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area_ == MAP_FAILED) return fmt::format("mapping the UMEM: {}", std::strerror(errno));
    // A child forked later must not share (or copy-on-write) the pages the
    // kernel writes received frames into.
    (void)madvise(area_, std::size_t{kFrames} * kFrameSize, MADV_DONTFORK);
    xsk_umem_config ucfg{};
    ucfg.fill_size = kRing;
    ucfg.comp_size = kRing;
    ucfg.frame_size = kFrameSize;
    if (const int r = api().xsk_umem__create(&umem_, area_, std::size_t{kFrames} * kFrameSize, &fill_, &comp_, &ucfg); r != 0) {
      umem_ = nullptr;
      return -r == ENOMEM || -r == EPERM
                 ? fmt::format("registering the {} MiB UMEM failed ({}): it needs locked memory (ulimit -l) or CAP_IPC_LOCK",
                               std::size_t{kFrames} * kFrameSize >> 20, std::strerror(-r))
                 : privilege(-r, "registering the UMEM", "CAP_NET_RAW");
    }
    xsk_socket_config scfg{};
    scfg.rx_size = kRing;
    scfg.tx_size = kRing;
    scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;  // our program, not libxdp's default one
    scfg.xdp_flags = attach_flags_;
    if (const int r = api().xsk_socket__create(&xsk_, ifname.c_str(), 0, umem_, &rx_, &tx_, &scfg); r != 0) {
      xsk_ = nullptr;
      return privilege(-r, fmt::format("binding an AF_XDP socket to {} queue 0", ifname), "CAP_NET_RAW");
    }
    if (const int r = api().xsk_socket__update_xskmap(xsk_, prog_.xsks()); r != 0) return privilege(-r, "adding the socket to the XSKMAP", "CAP_BPF");
    // Receive buffers to the fill ring, the rest free for sending.
    std::uint32_t idx = 0;
    if (xsk_ring_prod__reserve(&fill_, kRxFrames, &idx) != kRxFrames) return "the fill ring is smaller than asked";
    for (std::uint32_t i = 0; i < kRxFrames; ++i) *xsk_ring_prod__fill_addr(&fill_, idx + i) = std::uint64_t{i} * kFrameSize;
    xsk_ring_prod__submit(&fill_, kRxFrames);
    for (std::uint32_t i = kRxFrames; i < kFrames; ++i) tx_free_.push_back(std::uint64_t{i} * kFrameSize);
    return {};
  }

  // ---- Link ----
  void send(Bytes f) override {
    reclaim();
    for (int tries = 0; tx_free_.empty() && tries < 1000; ++tries) {  // a full TX ring: let the kernel drain it
      kick();
      reclaim();
    }
    std::uint32_t idx = 0;
    if (tx_free_.empty() || f.size() > kFrameSize || xsk_ring_prod__reserve(&tx_, 1, &idx) != 1) {
      ++tx_dropped_;
      return;
    }
    const std::uint64_t addr = tx_free_.back();
    tx_free_.pop_back();
    std::memcpy(xsk_umem__get_data(area_, addr), f.data(), f.size());
    xdp_desc* d = xsk_ring_prod__tx_desc(&tx_, idx);
    d->addr = addr;
    d->len = static_cast<std::uint32_t>(f.size());
    xsk_ring_prod__submit(&tx_, 1);
    ++pending_;
  }
  void flush() override {
    if (pending_ == 0) return;
    kick();
    pending_ = 0;
  }

  // ---- Port ----
  int fd() const override { return api().xsk_socket__fd(xsk_); }
  std::string_view kind() const override { return "af_xdp"; }
  std::size_t receive(const std::function<void(Bytes)>& fn, std::size_t max) override {
    std::uint32_t idx = 0;
    const std::uint32_t n = xsk_ring_cons__peek(&rx_, static_cast<std::uint32_t>(max), &idx);
    if (n == 0) return 0;
    std::uint32_t fidx = 0;
    // The fill ring has room for every frame the RX ring can hold.
    while (xsk_ring_prod__reserve(&fill_, n, &fidx) != n) {
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      const xdp_desc* d = xsk_ring_cons__rx_desc(&rx_, idx + i);
      const std::uint64_t addr = xsk_umem__extract_addr(d->addr);
      fn(Bytes(static_cast<const std::byte*>(xsk_umem__get_data(area_, d->addr)), d->len));
      *xsk_ring_prod__fill_addr(&fill_, fidx + i) = addr;
    }
    xsk_ring_cons__release(&rx_, n);
    xsk_ring_prod__submit(&fill_, n);
    return n;
  }

  // ---- XdpPort ----
  XdpProgram& program() override { return prog_; }
  std::string_view mode() const override { return mode_; }

 private:
  void kick() {
    // Copy mode sends only when asked; EAGAIN and EBUSY mean "again later".
    for (int i = 0; i < 16; ++i) {
      if (sendto(api().xsk_socket__fd(xsk_), nullptr, 0, MSG_DONTWAIT, nullptr, 0) >= 0) return;
      if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS) return;
      reclaim();
    }
  }
  void reclaim() {
    std::uint32_t idx = 0;
    const std::uint32_t n = xsk_ring_cons__peek(&comp_, kRing, &idx);
    for (std::uint32_t i = 0; i < n; ++i) tx_free_.push_back(*xsk_ring_cons__comp_addr(&comp_, idx + i));
    if (n) xsk_ring_cons__release(&comp_, n);
  }
  unsigned ifindex_ = 0;
  std::uint32_t attach_flags_ = 0;
  bool attached_ = false;
  std::string_view mode_ = "generic";
  Program prog_;
  void* area_ = nullptr;
  xsk_umem* umem_ = nullptr;
  xsk_socket* xsk_ = nullptr;
  xsk_ring_prod fill_{}, tx_{};
  xsk_ring_cons comp_{}, rx_{};
  std::vector<std::uint64_t> tx_free_;
  std::uint32_t pending_ = 0;
  std::uint64_t tx_dropped_ = 0;
};

}  // namespace

bool xdp_built() { return true; }

std::unique_ptr<XdpProgram> load_xdp_program(std::string& error) {
  auto p = std::make_unique<Program>();
  error = p->load();
  if (!error.empty()) return nullptr;
  return p;
}

std::unique_ptr<XdpPort> open_xdp_port(const std::string& ifname, std::string& error) {
  if (std::getenv("RDMACONF_UNET_NO_XDP")) {
    error = "RDMACONF_UNET_NO_XDP is set";
    return nullptr;
  }
  auto p = std::make_unique<Xdp>();
  error = p->open(ifname);
  if (!error.empty()) return nullptr;
  return p;
}

}  // namespace rdmaconf::engine::unet
