#pragma once
// The host side of the Fast UDP shim ABI ("the simulator"): a NIC plug-in
// loaded from a shared object, simulated physical memory whose regions the
// host's driver registers, MMIO dispatch to the plug-in's register windows,
// an event scheduler on a cycle clock, interrupt lines and a small driver
// that posts receives and transmits, drains the kernel ring and completes
// user receives. Every NIC write outside a posted receive buffer, the
// kernel ring or the producer index word, and every write over a ring slot
// the driver has not consumed, is refused and recorded.
//
// Two clocks. Deterministic (tests, the conformance suite): the clock moves
// only by the NIC's delay_cycles, by frames arriving at a given cycle and by
// running scheduled jobs, so a run is a function of its inputs. Real time
// (live traffic): the clock also follows the wall clock at a nominal rate,
// and a scheduled job runs once its time has come (poll()).
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <vector>

#include "rdmaconf/fastudp_shim.h"

namespace rdmaconf::engine::fastudp {

using Bytes = std::span<const std::byte>;

// A plug-in's shared object, opened and checked: the ABI version it was
// built for and its four entry points.
class Plugin {
 public:
  // Opens `path`; on failure returns nothing and says why in `error` (the
  // file, the missing symbol, the version it was built for).
  static std::unique_ptr<Plugin> open(const std::string& path, std::string& error);
  ~Plugin();
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;
  const std::string& path() const { return path_; }
  fudp_plugin_init_fn init = nullptr;
  fudp_plugin_fini_fn fini = nullptr;
  fudp_plugin_receive_fn receive = nullptr;

 private:
  Plugin() = default;
  void* handle_ = nullptr;
  std::string path_;
};

enum class Region { ring, prod_word, rx_buffer, rx_desc, tx_desc, tx_frame };

// Something the NIC did that the contract forbids.
struct Violation {
  // write_cancelled / write_reset: into the buffer of a receive the driver
  // withdrew (RX_CANCEL) or that CTRL_RESET dropped.
  enum class Kind { write_outside, read_outside, ring_overwrite, bad_call, write_cancelled, write_reset };
  Kind kind;
  std::uint64_t addr = 0, len = 0;
  std::uint64_t frame = 0;  // the wire frame (1-based) being handled, 0: none
  std::string what;
};
std::string_view violation_name(Violation::Kind k);
// A counter's name as the header spells it, without FUDP_STAT_ ("RX_CSUM_BAD").
std::string_view stat_name(unsigned index);

// A NIC write to host memory that landed.
struct Write {
  std::uint64_t addr = 0, len = 0;
  bool cache = false;
  std::uint64_t frame = 0;
  std::uint64_t cycle = 0;
};

// A kernel ring entry as the driver took it.
struct RingEntry {
  fudp_ring_entry head{};
  std::vector<std::byte> data;  // `stored` octets
  std::uint64_t slot = 0;       // producer count it was published under (0-based)
  std::uint64_t frame = 0;      // the wire frame being handled when it was published
  std::uint64_t cycle = 0;      // when the driver took it
};

struct Interrupt {
  std::uint32_t vector = 0;
  std::uint64_t cycle = 0;
  std::uint64_t frame = 0;
  std::uint64_t writes_before = 0;  // NIC writes that had landed when it was raised
};

enum class Clock { deterministic, realtime };

struct HarnessOptions {
  std::uint32_t ring_slots = 64;
  std::uint32_t slot_size = 2048;
  std::uint64_t coalesce = 0;  // FUDP_REG_IRQ_COALESCE
  std::string plugin_args;
  std::size_t max_jobs = 4096;   // queued schedule_job calls before FUDP_ENOSPC
  std::uint64_t max_events = 1u << 20;  // jobs run per call before the harness calls it a livelock
  // Keep every write, entry, interrupt and sent frame for the judge (false:
  // counts only, for benchmarks and long runs; violations are kept either way).
  bool record = true;
  Clock clock = Clock::deterministic;
  std::uint64_t cycles_per_us = 1000;  // the real-time clock's rate (1 GHz)
  bool enable = true;  // false: the driver sets the ring up but does not write CTRL_ENABLE
  // Where the harness says what the NIC is doing, for a parent process to
  // read after a crash (shared memory; may be null): [0] frames handed to
  // the NIC so far, [1] what it is in (a Progress value), [2] its detail
  // (the register's offset, the transmit's number).
  volatile std::uint64_t* progress = nullptr;
};

enum class Progress : std::uint64_t { idle = 0, receive = 1, register_write = 2, register_read = 3, job = 4, transmit = 5 };

class Harness {
 public:
  // Initialises the plug-in; on failure `error()` says why and nothing else works.
  Harness(const Plugin& plugin, HarnessOptions opt = {});
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;
  const std::string& error() const { return error_; }
  bool ok() const { return error_.empty(); }

  // ---- The driver ("the host OS") ----
  // A user receive on `port` (family 0, 4 or 6 with `addr`) into a fresh
  // buffer of `length` octets; returns its cookie.
  std::uint64_t post_receive(std::uint16_t port, std::uint32_t length, std::uint8_t family = 0,
                             std::span<const std::uint8_t> addr = {});
  void cancel_receive(std::uint64_t cookie);
  // A post with a register write of `width` octets (the contract has 8; a
  // narrower one must have no effect). The harness treats it as posted.
  std::uint64_t post_receive_width(std::uint16_t port, std::uint32_t length, unsigned width);
  // FUDP_REG_CTRL: with `reset`, the receives posted so far are dropped
  // (their buffers no longer the NIC's).
  void control(bool enable, bool reset);
  // Any register, any width (the driver's own accesses are 8 octets).
  std::uint64_t read_register(std::uint64_t off, unsigned width = 8);
  void write_register(std::uint64_t off, std::uint64_t value, unsigned width = 8);
  // Posts a completed receive again, with its buffer and cookie (an
  // application reusing its buffers).
  void repost_receive(std::uint64_t cookie);
  // Hands a frame to the NIC to transmit; returns the transmit's cookie.
  std::uint64_t transmit(Bytes frame, bool checksum);
  // A frame arrives from the wire now. Deterministic clock: the NIC takes
  // it, then scheduled jobs run and interrupts are serviced until nothing is
  // left to do. Real time: the NIC takes it, and the jobs whose time has
  // come run; later ones wait for poll().
  void wire_receive(Bytes frame);
  // Deterministic clock: a frame arrives at cycle `at` (one in the past
  // arrives now). The jobs due by then run first; then the NIC takes it and
  // the jobs due by the time it is done run. Jobs due later wait for a later
  // arrival or run_until_idle(), so a coalescing timer can span arrivals.
  void arrive(Bytes frame, std::uint64_t at);
  // Real-time clock: runs the jobs whose time has come.
  void poll();
  // Cycles until the next scheduled job is due (0: due now; none: no job).
  std::optional<std::uint64_t> next_job_in();
  // Runs scheduled jobs (and services interrupts) until none is left,
  // whatever their time.
  void run_until_idle();
  // While paused the driver leaves interrupts unserviced and the ring undrained.
  void pause_driver(bool paused);
  std::uint64_t read_stat(fudp_stat s);
  // Every counter after each frame the NIC took (recording on): [frame - 1].
  const std::vector<std::array<std::uint64_t, FUDP_STAT_COUNT>>& stats_after() const { return stats_after_; }
  // Entries the NIC published (the producer index word says so) that the
  // driver has not taken: no interrupt followed them.
  std::vector<RingEntry> published_untaken() const;

  // ---- What happened ----
  struct Receive {
    std::uint64_t cookie = 0, buffer = 0;
    std::uint32_t length = 0;
    std::uint16_t port = 0;
    bool completed = false;
    bool shared = false;  // in a region of the caller's (post_receive_into)
    bool cancelled = false, reset = false;  // withdrawn by RX_CANCEL, dropped by CTRL_RESET
    bool narrow = false;                    // posted with a register write of other than 8 octets
    bool written = false;                   // the NIC wrote into its buffer (recording on)
    std::optional<std::size_t> entry;  // index into entries() that completed it
  };
  const std::vector<Receive>& receives() const { return receives_; }
  // Receives the NIC should hold now: posted with an 8-octet write, neither
  // completed nor withdrawn (what RX_POSTED must read).
  std::uint64_t held_receives() const;
  const Receive* receive(std::uint64_t cookie) const;
  // The receive whose buffer holds `addr`, if any.
  const Receive* receive_at(std::uint64_t addr) const;
  std::uint64_t prod_word() const { return prod_word_; }
  std::uint32_t slot_size() const { return opt_.slot_size; }
  std::uint32_t ring_slots() const { return opt_.ring_slots; }
  // The buffer's octets now (valid until the harness allocates again).
  Bytes buffer(std::uint64_t cookie) const;
  const std::vector<RingEntry>& entries() const { return entries_; }
  const std::vector<Write>& writes() const { return writes_; }
  const std::vector<Violation>& violations() const { return violations_; }
  const std::vector<Interrupt>& interrupts() const { return interrupts_; }
  const std::vector<std::vector<std::byte>>& transmitted() const { return wire_out_; }
  const std::vector<std::string>& log() const { return log_; }
  std::uint64_t cycles() const { return now_; }
  std::uint64_t nic_cycles() const { return busy_; }  // by delay_cycles
  std::uint64_t mem_writes() const { return mem_writes_; }
  std::uint64_t cache_writes() const { return cache_writes_; }
  std::uint64_t frames() const { return frame_; }

  // Allocates a region of simulated memory (a 4 KiB guard gap on each side).
  std::uint64_t alloc(std::size_t len, Region kind);
  // The octets of a region from `addr` on (the application's view of its own
  // buffer; nullptr outside every region). Stable while the harness lives.
  std::byte* memory(std::uint64_t addr);
  // A receive into part of a receive-buffer region the caller allocated (an
  // application receiving into buff + offset); the region stays writable.
  std::uint64_t post_receive_into(std::uint64_t addr, std::uint32_t length, std::uint16_t port);
  // Called back for each frame the NIC puts on the wire (after it is recorded).
  std::function<void(Bytes)> on_transmit;
  // Called back for each ring entry the driver takes (after it completed its receive).
  std::function<void(const RingEntry&)> on_entry;
  std::uint64_t interrupt_count() const { return irq_count_; }
  std::uint64_t entry_count() const { return entry_count_; }

 private:
  struct Area {
    std::uint64_t base = 0;
    Region kind;
    bool writable = false;  // by the NIC
    std::vector<std::byte> mem;
  };
  struct Window {
    std::uint64_t size = 0;
    fudp_mmio_read_fn read = nullptr;
    fudp_mmio_write_fn write = nullptr;
    void* nic = nullptr;
  };
  struct Job {
    std::uint64_t at = 0, seq = 0;
    fudp_job_fn fn = nullptr;
    void* nic = nullptr;
    std::uint64_t arg = 0;
    bool operator>(const Job& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  friend struct Shim;
  int nic_write(std::uint64_t addr, const void* src, std::size_t len, bool cache);
  int nic_read(std::uint64_t addr, void* dst, std::size_t len);
  Area* find(std::uint64_t addr);
  void reg_write(std::uint64_t off, std::uint64_t v, unsigned width = 8);
  std::uint64_t reg_read(std::uint64_t off, unsigned width = 8);
  void mark(Progress what, std::uint64_t detail = 0);
  RingEntry read_slot(std::uint64_t index) const;
  std::string gap_text(std::uint64_t at) const;  // where an address outside every region lies
  std::uint64_t post(std::uint64_t buffer, std::uint32_t length, std::uint16_t port, std::uint8_t family,
                     std::span<const std::uint8_t> addr, bool shared, unsigned width = 8);
  void violation(Violation::Kind k, std::uint64_t addr, std::uint64_t len, std::string what);
  void service();  // the driver's interrupt handler
  void drain();
  bool slot_busy(std::uint64_t addr, std::uint64_t len) const;
  void take(Bytes frame);             // the NIC takes a frame from the wire
  void run_due(std::uint64_t until);  // jobs due at or before `until`
  void follow_wall();                 // real time: the clock catches up with the wall

  const Plugin& plugin_;
  HarnessOptions opt_;
  std::string error_;
  fudp_host host_{};
  void* nic_ = nullptr;
  std::map<std::uint32_t, Window> windows_;
  std::map<std::uint64_t, Area> areas_;  // by base
  std::uint64_t next_addr_ = 0x100000;
  std::priority_queue<Job, std::vector<Job>, std::greater<>> jobs_;
  std::uint64_t seq_ = 0, now_ = 0, busy_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::uint64_t frame_ = 0;
  bool irq_pending_ = false, paused_ = false, in_service_ = false;
  std::uint64_t ring_ = 0, prod_word_ = 0, cons_ = 0, prod_seen_ = 0;
  std::uint64_t next_cookie_ = 1;
  std::uint64_t mem_writes_ = 0, cache_writes_ = 0;
  std::vector<Receive> receives_;
  std::map<std::uint64_t, std::size_t> receive_index_;  // cookie -> receives_
  std::map<std::uint64_t, std::uint64_t> receive_desc_;  // cookie -> its descriptor's address
  std::uint64_t irq_count_ = 0, entry_count_ = 0;
  std::map<std::uint64_t, std::uint64_t> tx_areas_;  // cookie -> frame area
  std::uint64_t tx_posted_ = 0;  // transmits posted, for the progress mark
  std::vector<std::array<std::uint64_t, FUDP_STAT_COUNT>> stats_after_;
  std::vector<RingEntry> entries_;
  std::vector<Write> writes_;
  std::vector<Violation> violations_;
  std::vector<Interrupt> interrupts_;
  std::vector<std::vector<std::byte>> wire_out_;
  std::vector<std::string> log_;
};

}  // namespace rdmaconf::engine::fastudp
