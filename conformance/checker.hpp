#pragma once
// Runs the active cases of the registered protocol families over a capture,
// streaming: frames are read one at a time and dissected to the transport
// layer, TCP is reassembled per connection, and each family gets what it
// claims (TCP streams, UDP ports, EtherTypes, link types).
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "captures/io/pcap_reader.hpp"
#include "captures/io/tcp_reassembly.hpp"
#include "conformance/family.hpp"
#include "conformance/result.hpp"

namespace rdmaconf::conformance {

// `rdmaconf check`'s default for the idle time that ends a connection or
// conversation (the Wireshark plugin uses the same, so that both agree).
inline constexpr std::uint64_t kDefaultIdleTimeoutS = 600;
inline constexpr std::uint64_t kDefaultStateMemory = std::uint64_t{192} << 20;
// What one open TCP connection takes with the state the iWARP family keeps
// for it, measured (bench/check_open_state.sh: peak memory over half-open
// connections, 100 000 and 1 000 000 of them with no bound).
inline constexpr std::uint64_t kOpenTcpConnectionBytes = 7 * 1024;

struct CheckOptions {
  std::vector<std::string> case_patterns;  // globs; empty = all
  bool strict = false;                     // also SHOULD and MAY cases
  FamilyOptions family_options;            // the families' own options (--roce-port ...)
  // Called now and then with octets read so far and the file size.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
  // A decoded listing (`rdmaconf fpdus`): its family and unit names, and
  // what gets each unit (every listing's units when the names are empty).
  std::string listing_family, listing_unit;
  std::function<void(const ProtocolFamily&, std::string_view unit, nlohmann::json&&)> on_unit;
  // Called with every warning of the input and its frame (RunContext::on_warning).
  std::function<void(std::uint64_t frame, bool undecodable, const std::string& message)> on_warning;
  // Compute each capture's SHA-256 (for the JSON report), on a second thread.
  bool hash = true;
  // Where a file's hash is kept for the next run while the file stays the
  // same (captures/io/hash_cache.hpp); empty: every file hashed every time.
  std::filesystem::path hash_cache;
  // TCP reassembly's bounds: per connection, for all together, and the
  // idle time (in capture time) after which a connection is closed.
  captures::io::ReassemblyLimits reassembly;
  // The open state the families keep (TCP connections with their iWARP
  // state, RoCE conversations, UDP conversations): a third of it each at
  // most; beyond, the least
  // recently active are closed early (INCONCLUSIVE where that hides what
  // they would have shown). 0: no bound. A split check gives each thread
  // its share, so that where the bound is reached the connections closed
  // early may differ from one thread's.
  std::uint64_t state_memory = kDefaultStateMemory;
  // The families to run; empty: every registered one.
  std::vector<const ProtocolFamily*> families;
  // When set, each scope goes here as soon as it ends, with the input's
  // path, and InputResult::scopes stays empty: memory follows the open
  // connections, not the capture's history (a streamed report).
  std::function<void(const std::string& path, ScopeResult&&)> on_scope;
  // False: no one reads the scopes; each is counted and dropped.
  bool keep_scopes = true;
  // Threads one input's TCP connections are spread over: each reads the
  // whole input and keeps the connections that hash to it, and their scopes
  // are merged into the order, numbering and verdicts one thread gives.
  // Inputs smaller than `split_min_size`, inputs whose first 20,000 frames
  // hold fewer than 16 TCP connections a thread (a few long connections
  // leave nothing to share; not asked with a split_min_size of 0), listings
  // (on_unit, on_warning) and inputs a family reads whole are checked on one
  // thread.
  unsigned threads = 1;
  std::uint64_t split_min_size = 16u << 20;
};

class CheckRun;
struct SplitWorker;

class Checker {
 public:
  explicit Checker(CheckOptions o);
  // The cases that will run (pattern and level applied), in catalog order.
  std::vector<const CaseInfo*> active_cases() const;
  InputResult check_file(const std::string& path) const;
  // A capture held in memory (`name` stands for its path in the result).
  InputResult check_memory(const std::string& name, protocols::Bytes data) const;

 private:
  friend class CheckRun;
  // `skip_scopes`: the first scopes are counted but not handed to on_scope
  // (a split check that had to start again already handed them on).
  InputResult check(const std::string& path, std::unique_ptr<captures::io::PcapReader> reader, const std::string& open_error,
                    std::uint64_t skip_scopes = 0) const;
  bool splittable(const std::string& path, const captures::io::PcapReader& r) const;
  InputResult check_split(const std::string& path, std::unique_ptr<captures::io::PcapReader> first) const;
  // Kept scopes (no on_scope): each family's in its order, families in turn.
  void order_kept(std::vector<ScopeResult>& scopes) const;
  struct Active {
    const ProtocolFamily* family;
    std::vector<std::size_t> cases;  // indices into family->cases()
    Claims claims;
  };
  CheckOptions opt_;
  std::vector<Active> families_;
};

// One input checked frame by frame, for a caller that is handed the frames
// (the Wireshark plugin) rather than a file: what Checker::check_file does
// between opening the file and its end. Results go to `out` (and scopes to
// CheckOptions::on_scope when set) as they end; finish() ends the rest.
class CheckRun {
 public:
  // `linktype` is the input's (a pcap LINKTYPE_ value); out.error is set
  // when neither the checker nor a family reads it.
  CheckRun(const Checker& c, std::string path, int linktype, InputResult& out);
  ~CheckRun();
  CheckRun(const CheckRun&) = delete;
  CheckRun& operator=(const CheckRun&) = delete;
  // The next frame (numbers ascending); ignored when out.error was set at the start.
  void frame(const captures::io::Frame& f);
  // End of input: every open scope ends, families add their counts, kept scopes are sorted.
  void finish();

 private:
  friend class Checker;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

bool case_selected(const CaseInfo& c, const std::vector<std::string>& patterns, bool strict);

}  // namespace rdmaconf::conformance
