#include "engines/fastudp/harness.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

namespace rdmaconf::engine::fastudp {

namespace {

void put_le(std::byte* p, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = std::byte(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint64_t get_le(const std::byte* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}

std::string_view region_name(Region r) {
  switch (r) {
    case Region::ring: return "the kernel ring";
    case Region::prod_word: return "the producer index word";
    case Region::rx_buffer: return "a receive buffer";
    case Region::rx_desc: return "a receive descriptor";
    case Region::tx_desc: return "a transmit descriptor";
    case Region::tx_frame: return "a transmit frame";
  }
  return "?";
}

constexpr std::uint64_t kGuard = 4096;

}  // namespace

std::string_view violation_name(Violation::Kind k) {
  switch (k) {
    case Violation::Kind::write_outside: return "write outside posted memory";
    case Violation::Kind::read_outside: return "read outside host memory";
    case Violation::Kind::ring_overwrite: return "write over an unconsumed ring slot";
    case Violation::Kind::bad_call: return "shim entry point misused";
    case Violation::Kind::write_cancelled: return "write into a cancelled receive";
    case Violation::Kind::write_reset: return "write into a receive CTRL_RESET dropped";
  }
  return "?";
}

std::string_view stat_name(unsigned index) {
  static constexpr std::array<std::string_view, FUDP_STAT_COUNT> names{
      "RX_FRAMES", "RX_SPLINTERED", "RX_SLOW", "RX_CSUM_BAD", "RX_RING_FULL", "RX_TRUNCATED", "RX_MALFORMED", "TX_FRAMES"};
  return index < names.size() ? names[index] : "?";
}

// ---- Plugin ----

std::unique_ptr<Plugin> Plugin::open(const std::string& path, std::string& error) {
  // dlopen searches the library path for a bare name: a plug-in is a file.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    error = fmt::format("{}: cannot load the plug-in: {}", path, e ? e : "unknown error");
    return nullptr;
  }
  std::unique_ptr<Plugin> p(new Plugin());
  p->handle_ = h;
  p->path_ = path;
  auto sym = [&](const char* name) -> void* {
    void* s = dlsym(h, name);
    if (!s && error.empty())
      error = fmt::format("{}: the plug-in does not export {} (every plug-in defines the four symbols of "
                          "rdmaconf/fastudp_shim.h)",
                          path, name);
    return s;
  };
  const auto* version = static_cast<const std::uint32_t*>(sym(FUDP_SYM_ABI_VERSION));
  p->init = reinterpret_cast<fudp_plugin_init_fn>(sym(FUDP_SYM_INIT));
  p->fini = reinterpret_cast<fudp_plugin_fini_fn>(sym(FUDP_SYM_FINI));
  p->receive = reinterpret_cast<fudp_plugin_receive_fn>(sym(FUDP_SYM_RECEIVE));
  if (!error.empty()) return nullptr;
  if (*version != FUDP_ABI_VERSION) {
    error = fmt::format("{}: the plug-in was built for shim ABI version {}; this harness speaks version {} (rebuild it "
                        "against this release's rdmaconf/fastudp_shim.h)",
                        path, *version, FUDP_ABI_VERSION);
    return nullptr;
  }
  return p;
}

Plugin::~Plugin() {
  if (handle_) dlclose(handle_);
}

// ---- The shim entry points ----

struct Shim {
  static Harness& h(void* p) { return *static_cast<Harness*>(p); }
  static int mem_write(void* p, std::uint64_t a, const void* s, std::size_t n) { return h(p).nic_write(a, s, n, false); }
  static int cache_write(void* p, std::uint64_t a, const void* s, std::size_t n) { return h(p).nic_write(a, s, n, true); }
  static int mem_read(void* p, std::uint64_t a, void* d, std::size_t n) { return h(p).nic_read(a, d, n); }
  static int cache_read(void* p, std::uint64_t a, void* d, std::size_t n) { return h(p).nic_read(a, d, n); }
  static int mmap_define(void* p, std::uint32_t w, std::uint64_t size) {
    auto& x = h(p);
    if (size == 0 || w >= 16) {
      x.violation(Violation::Kind::bad_call, 0, size, fmt::format("mmap_define of window {} with {} octets", w, size));
      return FUDP_EINVAL;
    }
    x.windows_[w] = Harness::Window{size, nullptr, nullptr, nullptr};
    return FUDP_OK;
  }
  static int mmap_delete(void* p, std::uint32_t w) {
    auto& x = h(p);
    if (!x.windows_.erase(w)) {
      x.violation(Violation::Kind::bad_call, 0, 0, fmt::format("mmap_delete of window {}, never defined", w));
      return FUDP_EINVAL;
    }
    return FUDP_OK;
  }
  static int set_mmap_io_funcs(void* p, std::uint32_t w, fudp_mmio_read_fn rd, fudp_mmio_write_fn wr, void* nic) {
    auto& x = h(p);
    auto it = x.windows_.find(w);
    if (it == x.windows_.end() || !rd || !wr) {
      x.violation(Violation::Kind::bad_call, 0, 0,
                  fmt::format("set_mmap_io_funcs on window {}{}", w,
                              it == x.windows_.end() ? ", never defined" : " with a null handler"));
      return FUDP_EINVAL;
    }
    it->second.read = rd;
    it->second.write = wr;
    it->second.nic = nic;
    return FUDP_OK;
  }
  static int schedule_job(void* p, std::uint64_t delay, fudp_job_fn fn, void* nic, std::uint64_t arg) {
    auto& x = h(p);
    if (!fn) {
      x.violation(Violation::Kind::bad_call, 0, 0, "schedule_job with a null job");
      return FUDP_EINVAL;
    }
    if (x.jobs_.size() >= x.opt_.max_jobs) {
      x.violation(Violation::Kind::bad_call, 0, 0, fmt::format("more than {} jobs scheduled at once", x.opt_.max_jobs));
      return FUDP_ENOSPC;
    }
    const std::uint64_t at = delay > UINT64_MAX - x.now_ ? UINT64_MAX : x.now_ + delay;
    x.jobs_.push(Harness::Job{at, x.seq_++, fn, nic, arg});
    return FUDP_OK;
  }
  static void delay_cycles(void* p, std::uint64_t c) {
    auto& x = h(p);
    c = std::min<std::uint64_t>(c, UINT64_MAX / 4);  // a clock that stays a clock
    x.now_ += c;
    x.busy_ += c;
  }
  static int raise_interrupt(void* p, std::uint32_t v) {
    auto& x = h(p);
    if (v != 0) {
      x.violation(Violation::Kind::bad_call, 0, 0, fmt::format("raise_interrupt on vector {} (the contract has vector 0)", v));
      return FUDP_EINVAL;
    }
    ++x.irq_count_;
    if (x.opt_.record) x.interrupts_.push_back(Interrupt{v, x.now_, x.frame_, x.writes_.size()});
    x.irq_pending_ = true;
    return FUDP_OK;
  }
  static int transmit(void* p, const void* f, std::size_t n) {
    auto& x = h(p);
    if (!f && n) {
      x.violation(Violation::Kind::bad_call, 0, n, "transmit of a null frame");
      return FUDP_EINVAL;
    }
    const Bytes frame(static_cast<const std::byte*>(f), n);
    if (x.opt_.record) x.wire_out_.emplace_back(frame.begin(), frame.end());
    if (x.on_transmit) x.on_transmit(frame);
    return FUDP_OK;
  }
  static void log(void* p, const char* m) {
    auto& x = h(p);
    if (x.log_.size() < 1000 && m) x.log_.emplace_back(m, strnlen(m, 200));
  }
};

// ---- Harness ----

Harness::Harness(const Plugin& plugin, HarnessOptions opt) : plugin_(plugin), opt_(std::move(opt)) {
  host_.abi_version = FUDP_ABI_VERSION;
  host_.struct_size = sizeof host_;
  host_.host = this;
  host_.mem_write = &Shim::mem_write;
  host_.cache_write = &Shim::cache_write;
  host_.mem_read = &Shim::mem_read;
  host_.cache_read = &Shim::cache_read;
  host_.mmap_define = &Shim::mmap_define;
  host_.mmap_delete = &Shim::mmap_delete;
  host_.set_mmap_io_funcs = &Shim::set_mmap_io_funcs;
  host_.schedule_job = &Shim::schedule_job;
  host_.delay_cycles = &Shim::delay_cycles;
  host_.raise_interrupt = &Shim::raise_interrupt;
  host_.transmit = &Shim::transmit;
  host_.log = &Shim::log;

  nic_ = plugin_.init(&host_, opt_.plugin_args.c_str());
  if (!nic_) {
    error_ = fmt::format("{}: fudp_plugin_init returned NULL (the plug-in refused to start)", plugin_.path());
    return;
  }
  auto w = windows_.find(0);
  if (w == windows_.end() || !w->second.write || w->second.size < FUDP_WINDOW0_SIZE) {
    error_ = fmt::format("{}: after init the plug-in has no register window 0 of {} octets with handlers (mmap_define "
                         "and set_mmap_io_funcs)",
                         plugin_.path(), FUDP_WINDOW0_SIZE);
    return;
  }
  ring_ = alloc(std::size_t{opt_.ring_slots} * opt_.slot_size, Region::ring);
  prod_word_ = alloc(8, Region::prod_word);
  reg_write(FUDP_REG_KRING_BASE, ring_);
  reg_write(FUDP_REG_KRING_SLOTS, opt_.ring_slots);
  reg_write(FUDP_REG_KRING_SLOT_SIZE, opt_.slot_size);
  reg_write(FUDP_REG_KRING_PROD_ADDR, prod_word_);
  reg_write(FUDP_REG_IRQ_COALESCE, opt_.coalesce);
  if (opt_.enable) reg_write(FUDP_REG_CTRL, FUDP_CTRL_ENABLE);
}

void Harness::mark(Progress what, std::uint64_t detail) {
  if (!opt_.progress) return;
  opt_.progress[0] = frame_;
  opt_.progress[1] = static_cast<std::uint64_t>(what);
  opt_.progress[2] = detail;
}

std::string Harness::gap_text(std::uint64_t at) const {
  auto it = areas_.upper_bound(at);
  if (it == areas_.begin()) return "below every region";
  const Area& a = std::prev(it)->second;
  const std::uint64_t past = at - (a.base + a.mem.size()) + 1;
  std::string what(region_name(a.kind));
  if (a.kind == Region::rx_buffer)
    for (const auto& r : receives_)
      if (r.buffer + r.length == a.base + a.mem.size()) what = fmt::format("receive {}'s buffer ({} octets)", r.cookie, r.length);
  return fmt::format("from octet {} past the end of {}", past, what);
}

Harness::~Harness() {
  if (nic_) plugin_.fini(nic_);
}

std::uint64_t Harness::alloc(std::size_t len, Region kind) {
  const std::uint64_t base = next_addr_;
  Area a{base, kind, kind == Region::ring || kind == Region::prod_word || kind == Region::rx_buffer, {}};
  a.mem.resize(std::max<std::size_t>(len, 1));  // every region has an address that finds it
  areas_.emplace(base, std::move(a));
  // The next area starts past a guard gap, rounded to 64 octets.
  next_addr_ = (base + len + kGuard + 63) / 64 * 64;
  return base;
}

std::byte* Harness::memory(std::uint64_t addr) {
  Area* a = find(addr);
  return a ? a->mem.data() + (addr - a->base) : nullptr;
}

Harness::Area* Harness::find(std::uint64_t addr) {
  auto it = areas_.upper_bound(addr);
  if (it == areas_.begin()) return nullptr;
  --it;
  return addr - it->second.base < it->second.mem.size() ? &it->second : nullptr;
}

void Harness::violation(Violation::Kind k, std::uint64_t addr, std::uint64_t len, std::string what) {
  if (violations_.size() < 10000) violations_.push_back(Violation{k, addr, len, frame_, std::move(what)});
}

bool Harness::slot_busy(std::uint64_t addr, std::uint64_t len) const {
  const std::uint64_t used = prod_seen_ - cons_;
  if (used == 0 || len == 0) return false;
  const std::uint64_t first = (addr - ring_) / opt_.slot_size, last = (addr + len - 1 - ring_) / opt_.slot_size;
  for (std::uint64_t s = first; s <= last; ++s) {
    // Slot s holds an entry when it is one of the `used` slots after cons_.
    const std::uint64_t since_cons = (s + opt_.ring_slots - cons_ % opt_.ring_slots) % opt_.ring_slots;
    if (since_cons < used) return true;
  }
  return false;
}

int Harness::nic_write(std::uint64_t addr, const void* src, std::size_t len, bool cache) {
  if (len == 0) return FUDP_OK;
  if (!src && len) {
    violation(Violation::Kind::bad_call, addr, len, "a write from a null pointer");
    return FUDP_EINVAL;
  }
  const auto* s = static_cast<const std::byte*>(src);
  int rc = FUDP_OK;
  std::uint64_t done = 0;
  while (done < len) {
    const std::uint64_t at = addr + done;
    if (at < addr) {  // wrapped around the address space
      violation(Violation::Kind::write_outside, at, len - done, "a write past the end of the address space");
      return FUDP_EFAULT;
    }
    Area* a = find(at);
    if (!a) {
      // Up to the next area, or the end of the write.
      auto next = areas_.upper_bound(at);
      const std::uint64_t stop = next == areas_.end() ? addr + len : std::min<std::uint64_t>(addr + len, next->second.base);
      violation(Violation::Kind::write_outside, at, stop - at,
                fmt::format("{} octet(s) outside every region the host registered, {}", stop - at, gap_text(at)));
      rc = FUDP_EFAULT;
      done += stop - at;
      continue;
    }
    const std::uint64_t n = std::min<std::uint64_t>(len - done, a->base + a->mem.size() - at);
    if (!a->writable) {
      const Receive* r = a->kind == Region::rx_buffer ? receive_at(at) : nullptr;
      if (r && (r->cancelled || r->reset))
        violation(r->cancelled ? Violation::Kind::write_cancelled : Violation::Kind::write_reset, at, n,
                  fmt::format("{} octet(s) into receive {}'s buffer, {}", n, r->cookie,
                              r->cancelled ? "withdrawn by RX_CANCEL" : "dropped by CTRL_RESET"));
      else if (r)
        violation(Violation::Kind::write_outside, at, n,
                  fmt::format("{} octet(s) at offset {} of receive {}'s buffer, which is no longer posted (completed)", n,
                              at - r->buffer, r->cookie));
      else
        violation(Violation::Kind::write_outside, at, n,
                  fmt::format("{} octet(s) into {}{}", n, region_name(a->kind),
                              a->kind == Region::rx_buffer ? " that is no longer posted" : ", which the NIC may only read"));
      rc = FUDP_EFAULT;
    } else if (a->kind == Region::ring && slot_busy(at, n)) {
      violation(Violation::Kind::ring_overwrite, at, n,
                fmt::format("ring slot {} holds an entry the driver has not consumed",
                            (at - ring_) / opt_.slot_size));
      rc = FUDP_EFAULT;
    } else {
      std::memcpy(a->mem.data() + (at - a->base), s + done, n);
      if (opt_.record && a->kind == Region::rx_buffer)
        if (const Receive* r = receive_at(at)) receives_[receive_index_.at(r->cookie)].written = true;
      (cache ? cache_writes_ : mem_writes_) += 1;
      if (opt_.record && writes_.size() < (1u << 22)) writes_.push_back(Write{at, n, cache, frame_, now_});
      if (a->kind == Region::prod_word && at == prod_word_ && n == 8) prod_seen_ = get_le(a->mem.data(), 8);
    }
    done += n;
  }
  return rc;
}

int Harness::nic_read(std::uint64_t addr, void* dst, std::size_t len) {
  if (len == 0) return FUDP_OK;
  if (!dst && len) {
    violation(Violation::Kind::bad_call, addr, len, "a read into a null pointer");
    return FUDP_EINVAL;
  }
  auto* d = static_cast<std::byte*>(dst);
  Area* a = find(addr);
  if (!a || len > a->base + a->mem.size() - addr) {
    violation(Violation::Kind::read_outside, addr, len, "a read of octets outside every region the host registered");
    std::memset(d, 0, len);
    return FUDP_EFAULT;
  }
  std::memcpy(d, a->mem.data() + (addr - a->base), len);
  return FUDP_OK;
}

void Harness::reg_write(std::uint64_t off, std::uint64_t v, unsigned width) {
  auto w = windows_.find(0);
  if (w == windows_.end() || !w->second.write) return;  // deleted by the NIC: the driver's writes go nowhere
  mark(Progress::register_write, off);
  w->second.write(w->second.nic, off, v, width);
  mark(Progress::idle);
}

std::uint64_t Harness::reg_read(std::uint64_t off, unsigned width) {
  auto w = windows_.find(0);
  if (w == windows_.end() || !w->second.read) return 0;
  mark(Progress::register_read, off);
  const std::uint64_t v = w->second.read(w->second.nic, off, width);
  mark(Progress::idle);
  return v;
}

std::uint64_t Harness::read_register(std::uint64_t off, unsigned width) { return reg_read(off, width); }

void Harness::write_register(std::uint64_t off, std::uint64_t value, unsigned width) {
  reg_write(off, value, width);
  service();
}

void Harness::control(bool enable, bool reset) {
  if (reset)
    for (auto& r : receives_) {
      if (r.completed || r.cancelled || r.reset) continue;
      r.reset = true;
      if (!r.shared) find(r.buffer)->writable = false;
    }
  reg_write(FUDP_REG_CTRL, (enable ? FUDP_CTRL_ENABLE : 0u) | (reset ? FUDP_CTRL_RESET : 0u));
  service();
}

std::uint64_t Harness::post_receive_width(std::uint16_t port, std::uint32_t length, unsigned width) {
  return post(alloc(length, Region::rx_buffer), length, port, 0, {}, false, width);
}

std::uint64_t Harness::read_stat(fudp_stat s) { return reg_read(FUDP_REG_STATS + 8u * static_cast<unsigned>(s)); }

std::uint64_t Harness::post_receive(std::uint16_t port, std::uint32_t length, std::uint8_t family,
                                    std::span<const std::uint8_t> addr) {
  return post(alloc(length, Region::rx_buffer), length, port, family, addr, false);
}

std::uint64_t Harness::post_receive_into(std::uint64_t addr, std::uint32_t length, std::uint16_t port) {
  return post(addr, length, port, 0, {}, true);
}

std::uint64_t Harness::post(std::uint64_t buffer, std::uint32_t length, std::uint16_t port, std::uint8_t family,
                            std::span<const std::uint8_t> addr, bool shared, unsigned width) {
  Receive r;
  r.cookie = next_cookie_++;
  r.buffer = buffer;
  r.length = length;
  r.port = port;
  r.shared = shared;
  r.narrow = width != 8;
  const std::uint64_t desc = alloc(40, Region::rx_desc);
  std::byte* d = find(desc)->mem.data();
  put_le(d, r.buffer, 8);
  put_le(d + 8, length, 4);
  put_le(d + 12, port, 2);
  d[14] = std::byte{family};
  put_le(d + 16, r.cookie, 8);
  if (!addr.empty()) std::memcpy(d + 24, addr.data(), std::min<std::size_t>(addr.size(), 16));
  receive_index_[r.cookie] = receives_.size();
  receive_desc_[r.cookie] = desc;
  receives_.push_back(r);
  reg_write(FUDP_REG_RX_POST, desc, width);
  service();
  return r.cookie;
}

void Harness::repost_receive(std::uint64_t cookie) {
  auto it = receive_index_.find(cookie);
  if (it == receive_index_.end()) return;
  Receive& r = receives_[it->second];
  r.completed = false;
  r.written = false;
  r.entry.reset();
  find(r.buffer)->writable = true;
  reg_write(FUDP_REG_RX_POST, receive_desc_.at(cookie));
  service();
}

void Harness::cancel_receive(std::uint64_t cookie) {
  if (auto it = receive_index_.find(cookie); it != receive_index_.end()) {
    Receive& r = receives_[it->second];
    r.cancelled = true;
    if (!r.shared) find(r.buffer)->writable = false;
  }
  reg_write(FUDP_REG_RX_CANCEL, cookie);
  service();
}

std::uint64_t Harness::transmit(Bytes frame, bool checksum) {
  const std::uint64_t cookie = next_cookie_++;
  const std::uint64_t area = alloc(frame.size(), Region::tx_frame);
  std::copy(frame.begin(), frame.end(), find(area)->mem.begin());
  const std::uint64_t desc = alloc(24, Region::tx_desc);
  std::byte* d = find(desc)->mem.data();
  put_le(d, area, 8);
  put_le(d + 8, frame.size(), 4);
  put_le(d + 12, checksum ? FUDP_TX_CSUM : 0, 4);
  put_le(d + 16, cookie, 8);
  tx_areas_[cookie] = area;
  ++tx_posted_;
  follow_wall();
  mark(Progress::transmit, tx_posted_);
  reg_write(FUDP_REG_TX_POST, desc);
  service();
  if (opt_.clock == Clock::realtime)
    run_due(now_);
  else
    run_until_idle();
  return cookie;
}

void Harness::take(Bytes frame) {
  ++frame_;
  mark(Progress::receive);
  plugin_.receive(nic_, frame.data(), frame.size());
  mark(Progress::idle);
  service();
  if (opt_.record && stats_after_.size() < (1u << 16)) {
    std::array<std::uint64_t, FUDP_STAT_COUNT> v{};
    for (unsigned k = 0; k < FUDP_STAT_COUNT; ++k) v[k] = reg_read(FUDP_REG_STATS + 8u * k);
    stats_after_.push_back(v);
  }
}

void Harness::wire_receive(Bytes frame) {
  follow_wall();
  take(frame);
  if (opt_.clock == Clock::realtime)
    run_due(now_);
  else
    run_until_idle();
}

void Harness::arrive(Bytes frame, std::uint64_t at) {
  run_due(at);
  now_ = std::max(now_, at);
  take(frame);
  run_due(now_);
}

void Harness::follow_wall() {
  if (opt_.clock != Clock::realtime) return;
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
  now_ = std::max(now_, static_cast<std::uint64_t>(ns) * opt_.cycles_per_us / 1000);
}

void Harness::poll() {
  follow_wall();
  service();
  run_due(now_);
}

std::optional<std::uint64_t> Harness::next_job_in() {
  if (jobs_.empty()) return std::nullopt;
  follow_wall();
  const std::uint64_t at = jobs_.top().at;
  return at > now_ ? at - now_ : 0;
}

void Harness::run_until_idle() { run_due(UINT64_MAX); }

void Harness::run_due(std::uint64_t until) {
  std::uint64_t n = 0;
  while (!jobs_.empty() && jobs_.top().at <= until) {
    if (++n > opt_.max_events) {
      violation(Violation::Kind::bad_call, 0, 0,
                fmt::format("more than {} jobs ran with no frame arriving: the NIC keeps rescheduling itself", opt_.max_events));
      jobs_ = {};
      break;
    }
    const Job j = jobs_.top();
    jobs_.pop();
    now_ = std::max(now_, j.at);
    mark(Progress::job);
    j.fn(j.nic, j.arg);
    mark(Progress::idle);
    service();
  }
}

void Harness::pause_driver(bool paused) {
  paused_ = paused;
  if (!paused_) {
    // A driver back at work looks at the ring even without a new interrupt.
    irq_pending_ = true;
    service();
  }
}

void Harness::service() {
  if (paused_ || in_service_) return;
  in_service_ = true;
  while (irq_pending_) {
    irq_pending_ = false;
    drain();
  }
  in_service_ = false;
}

void Harness::drain() {
  std::uint64_t prod = get_le(find(prod_word_)->mem.data(), 8);
  if (prod - cons_ > opt_.ring_slots) {
    violation(Violation::Kind::bad_call, prod_word_, 8,
              fmt::format("producer index {} with {} consumed: more entries than the ring's {} slots", prod, cons_,
                          opt_.ring_slots));
    return;
  }
  for (; cons_ != prod; ++cons_) {
    RingEntry e = read_slot(cons_);
    if (e.head.kind == FUDP_ENTRY_SPLINTER) {
      auto it = receive_index_.find(e.head.cookie);
      if (it != receive_index_.end() && !receives_[it->second].completed) {
        Receive& r = receives_[it->second];
        r.completed = true;
        r.entry = entries_.size();
        if (!r.shared) find(r.buffer)->writable = false;  // the user owns it again
      }
    }
    ++entry_count_;
    if (on_entry) on_entry(e);
    if (opt_.record && entries_.size() < (1u << 20)) entries_.push_back(std::move(e));
  }
  reg_write(FUDP_REG_KRING_CONS, cons_);
}

std::uint64_t Harness::held_receives() const {
  return static_cast<std::uint64_t>(std::count_if(receives_.begin(), receives_.end(), [](const Receive& r) {
    return !r.completed && !r.written && !r.cancelled && !r.reset && !r.narrow;
  }));
}

RingEntry Harness::read_slot(std::uint64_t index) const {
  auto it = areas_.find(ring_);
  const std::byte* s = it->second.mem.data() + (index % opt_.ring_slots) * opt_.slot_size;
  RingEntry e;
  e.head.kind = static_cast<std::uint32_t>(get_le(s, 4));
  e.head.flags = static_cast<std::uint32_t>(get_le(s + 4, 4));
  e.head.cookie = get_le(s + 8, 8);
  e.head.frame_len = static_cast<std::uint32_t>(get_le(s + 16, 4));
  e.head.payload_len = static_cast<std::uint32_t>(get_le(s + 20, 4));
  e.head.delivered = static_cast<std::uint32_t>(get_le(s + 24, 4));
  e.head.stored = static_cast<std::uint32_t>(get_le(s + 28, 4));
  const std::size_t stored = std::min<std::size_t>(e.head.stored, opt_.slot_size - FUDP_ENTRY_SIZE);
  e.data.assign(s + FUDP_ENTRY_SIZE, s + FUDP_ENTRY_SIZE + stored);
  e.slot = index;
  e.frame = frame_;
  e.cycle = now_;
  return e;
}

std::vector<RingEntry> Harness::published_untaken() const {
  std::vector<RingEntry> v;
  auto it = areas_.find(prod_word_);
  if (it == areas_.end() || !ring_) return v;
  const std::uint64_t prod = get_le(it->second.mem.data(), 8);
  for (std::uint64_t i = cons_; i != prod && i - cons_ < opt_.ring_slots; ++i) v.push_back(read_slot(i));
  return v;
}

const Harness::Receive* Harness::receive(std::uint64_t cookie) const {
  auto it = receive_index_.find(cookie);
  return it == receive_index_.end() ? nullptr : &receives_[it->second];
}

const Harness::Receive* Harness::receive_at(std::uint64_t addr) const {
  for (const auto& r : receives_)
    if (addr - r.buffer < r.length) return &r;
  return nullptr;
}

Bytes Harness::buffer(std::uint64_t cookie) const {
  const Receive* r = receive(cookie);
  if (!r) return {};
  auto it = areas_.upper_bound(r->buffer);
  if (it == areas_.begin()) return {};
  const Area& a = std::prev(it)->second;
  const std::size_t from = r->buffer - a.base;
  if (from + r->length > a.mem.size()) return {};
  return Bytes(a.mem).subspan(from, r->length);
}

}  // namespace rdmaconf::engine::fastudp
