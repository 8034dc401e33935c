// Our InfiniBand engine as the responder of the scenarios a requester names on the control connection, one session per connection.
#include "interop/ib/scenarios.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "captures/io/pcap_tap.hpp"
#include "engines/common/socket.hpp"
#include "engines/ib/udp_link.hpp"
#include "interop/channel.hpp"
#include "interop/control.hpp"
#include "interop/ib/control.hpp"
#include "interop/ib/detail.hpp"
#include "interop/ib/perftest.hpp"
#include "interop/pattern.hpp"
#include "interop/sessions.hpp"

namespace rdmaconf::interop::ib {

namespace {

// What the sessions of one serve() share: the memory budget, and the client
// UDP endpoints that live sessions have claimed (the kernel hands a
// datagram to one connected socket only, so two sessions may not share one).
struct Shared {
  int send_fd;  // the unconnected socket on the peer's port: every session sends through it
  MemoryBudget budget;
  std::mutex mu;
  std::set<std::string> claimed;
};

// A client UDP endpoint held for the life of a session.
class Claim {
 public:
  Claim(Shared& s, std::string endpoint) : s_(s), endpoint_(std::move(endpoint)) {
    std::lock_guard g(s_.mu);
    held_ = s_.claimed.insert(endpoint_).second;
  }
  ~Claim() { release(); }
  void release() {
    if (!held_) return;
    std::lock_guard g(s_.mu);
    s_.claimed.erase(endpoint_);
    held_ = false;
  }
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;
  bool held() const { return held_; }

 private:
  Shared& s_;
  std::string endpoint_;
  bool held_ = false;
};

json serve_one(int cfd, const PeerOptions& o, std::uint64_t index, std::stop_token stop, Shared& shared) {
  json rep = {{"connection", index}, {"ok", false}};
  std::string err;
  ControlChannel rd(cfd, stop);
  auto hello_msg = rd.receive(o.idle_timeout_ms, err);
  if (!hello_msg || hello_msg->is_null()) {
    if (hello_msg) err = stop.stop_requested() ? "the peer was stopped (a signal)" : "no hello within the idle timeout";
    send_message(cfd, {{"error", err}});
    rep["error"] = err;
    return rep;
  }
  auto refuse = [&](std::string why) {
    send_message(cfd, {{"error", why}});
    rep["error"] = why;
    return rep;
  };
  const std::optional<Hello> h = read_hello(*hello_msg, o.max_size, remote_endpoint(cfd), err);
  if (!h) return refuse(err);
  rep["scenario"] = h->scenario;
  QpConfig cfg = o.qp;
  cfg.type = h->type;
  // QPN and PSN unguessable, so that nothing but this session's requester
  // can aim datagrams at it (QPN 0 and 1 are the special QPs).
  cfg.qpn = 2 + static_cast<std::uint32_t>(random_u64() % (kMaxQpn - 1));
  cfg.dest_qpn = h->qpn;
  cfg.rq_psn = h->psn;
  cfg.sq_psn = static_cast<std::uint32_t>(random_u64() & kMaxPsn);
  cfg.pmtu = h->mtu;
  if (const std::string bad = eng::validate(cfg); !bad.empty()) return refuse("hello: " + bad);
  // This session's own socket on the peer's address and port, connected to
  // the client's endpoint: the kernel hands it that endpoint's datagrams and
  // no one else's, whatever other sessions run.
  UdpLink link;
  if (!link.open(o.udp_local, err, true) || (o.raw_receive && !link.raw_receive(err))) return refuse(err);
  if (!link.set_peer(h->udp, err, true)) return refuse("hello: " + err);
  Claim claim(shared, link.peer_name());
  if (!claim.held()) return refuse(fmt::format("hello: udp {} is in use by another session", link.peer_name()));
  // The endpoint and the socket are let go before the session's last word
  // to its client, so that a client that starts its next session from the
  // same endpoint on hearing it finds the endpoint free.
  auto let_go = [&] {
    link.stop_recording();
    link.close();
    claim.release();
  };
  auto refuse_held = [&](std::string why) {
    let_go();
    return refuse(std::move(why));
  };
  if (!link.connect_peer(err)) return refuse_held(err);
  link.send_through(shared.send_fd);
  const std::uint64_t size = h->size, recvs = h->recvs;
  Reservation mem(&shared.budget);
  if (!mem.add(h->buffer + recvs * size + 8))
    return refuse_held(fmt::format("hello: {} octets of buffers are beyond the peer's memory budget ({} of {} in use)",
                              h->buffer + recvs * size + 8, shared.budget.used(), shared.budget.limit()));
  if (!o.pcap_dir.empty() &&
      !link.record(captures::io::pcap_tap((std::filesystem::path(o.pcap_dir) / fmt::format("peer-roce-{}.pcap", index)).string(), err)))
    return refuse_held(err);

  ProtectionDomain pd;
  CompletionQueue scq, rcq;
  std::vector<std::byte> data(h->buffer), recv(recvs * size), atom(8);
  fill_pattern(data, h->seed + 1);
  // Virtual addresses as unguessable as the keys: page-aligned, anywhere
  // below 2^47 (the region never wraps), the atomic one 8-aligned.
  const std::uint64_t va = random_u64() & 0x00007FFFFFFFF000ull, atomic_va = random_u64() & 0x00007FFFFFFFFFF8ull;
  const auto dkey = pd.register_mr(data, kRemoteRead | kRemoteWrite | kLocalWrite, va);
  const auto akey = pd.register_mr(atom, kRemoteAtomic | kLocalWrite, atomic_va);
  const auto rkey = pd.register_mr(recv, kLocalWrite);
  QueuePair qp(pd, scq, rcq, cfg);
  for (std::uint64_t i = 0; i < recvs; ++i) qp.post_recv({i, {rkey, i * size, static_cast<std::uint32_t>(size)}});
  const json ready = {{"ready",
                       {{"qpn", cfg.qpn},
                        {"psn", cfg.sq_psn},
                        {"udp", link.local_name()},
                        {"rkey", dkey},
                        {"va", va},
                        {"length", h->buffer},
                        {"atomic_rkey", akey},
                        {"atomic_va", atomic_va},
                        {"qkey", cfg.qkey}}}};
  // What reached the socket before this session's ready belongs to no session.
  rep["stale_datagrams_dropped"] = link.discard_pending();
  const std::uint64_t foreign_before = link.foreign_datagrams();
  if (!send_message(cfd, ready)) {
    rep["error"] = "control connection: cannot send ready";
    return rep;
  }
  // Receive completions, taken as they come (memory stays bounded): their
  // count, the digest of their data in order, Immediate data, source QP.
  std::uint64_t recv_digest = interop::kDigestInit, recv_count = 0;
  std::uint32_t src_qp = 0;
  json imms = json::array(), statuses = json::object();
  auto take_receives = [&] {
    while (auto c = rcq.poll()) {
      const std::string st(wc_status_name(c->status));
      statuses[st] = statuses.value(st, 0) + 1;
      if (c->status != WcStatus::success) continue;
      ++recv_count;
      recv_digest = digest(std::span(recv).subspan(c->wr_id * size, c->byte_len), recv_digest);
      if (c->imm && imms.size() < 16) imms.push_back(*c->imm);
      if (c->src_qp) src_qp = *c->src_qp;
    }
  };
  // Serve until the requester says done (or goes quiet, or we are stopped).
  bool finished = false;
  std::uint64_t requester_sent = 0;
  std::uint64_t last_activity = engine::ib::now_ms();
  std::uint64_t seen = 0, last_control = 0;
  link.run_until(qp, [&] {
    if (stop.stop_requested()) return true;
    take_receives();
    const std::uint64_t t = engine::ib::now_ms();
    if (qp.counters().packets_received != seen) {
      seen = qp.counters().packets_received;
      last_activity = t;
    }
    // The control connection is looked at every few milliseconds, not on
    // every batch of packets.
    if (t - last_control < 2) return false;
    last_control = t;
    pollfd p{cfd, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) {
      auto m = rd.receive(0, err);
      if (!m) return true;
      if (const auto d = read_done(*m, err)) {
        finished = true;
        requester_sent = d->packets_sent;
        return true;
      }
      if (!err.empty()) return true;  // a done that does not fit its schema ends the session
    }
    return t - last_activity > static_cast<std::uint64_t>(o.idle_timeout_ms);
  }, o.idle_timeout_ms * 4);
  if (!finished && qp.state() == QpState::error && !stop.stop_requested()) {
    // After a fatal NAK our QP is in error; the requester still ends the
    // exchange with its done.
    auto m = rd.receive(o.idle_timeout_ms, err);
    if (const auto d = m ? read_done(*m, err) : std::nullopt) {
      finished = true;
      requester_sent = d->packets_sent;
    }
  }
  // A control message that broke its schema (a done that is not
  // {"done": true, "packets_sent": N}, a line that is no JSON object) is
  // answered with the error, not with a result.
  if (!finished && !err.empty() && !stop.stop_requested()) {
    let_go();
    return refuse(err);
  }
  // Datagrams still queued behind the "done" (UC and UD complete at the
  // requester when sent) are taken in, and our last answers go out, before
  // we report.
  link.run_until(qp, [&] { return qp.counters().packets_received >= requester_sent && qp.idle(); }, 500);
  take_receives();
  std::uint64_t atomic_value = 0;
  std::memcpy(&atomic_value, atom.data(), 8);
  const json refusals = refusals_json(qp);
  const json result = {{"recv_count", recv_count},
                       {"recv_digest", recv_digest},
                       {"recv_statuses", statuses},
                       {"immediates", imms},
                       {"src_qp", src_qp},
                       {"buffer_digest", digest(data)},
                       {"atomic_value", atomic_value},
                       {"counters", counters_json(qp.counters(), link)},
                       {"refusals", refusals},
                       {"state", qp.state() == QpState::rts ? "rts" : "error"},
                       {"error", qp.error()}};
  rep["foreign_datagrams_dropped"] = link.foreign_datagrams() - foreign_before;
  let_go();
  send_message(cfd, {{"result", result}});
  rep["ok"] = finished;
  rep["result"] = result;
  if (!finished) rep["error"] = err.empty() ? "the requester went quiet" : err;
  return rep;
}

}  // namespace


void accept_sessions(int listen_fd, const PeerOptions& o, std::stop_token stop,
                     const std::function<void(json)>& report, const std::function<json(int fd, std::uint64_t index)>& serve_one,
                     const std::function<std::string(const std::string& why)>& busy, const std::function<void()>& between) {
  const std::string why = fmt::format("busy: {} sessions in progress", o.max_sessions);
  const std::string answer = busy(why);
  Refuser refuser([&answer](std::string_view) { return std::optional<std::string>(answer); },
                  [&](std::uint64_t index, bool, const std::string& outcome) {
                    report({{"connection", index}, {"ok", false}, {"refused", true}, {"error", why + " (" + outcome + ")"}});
                  });
  Acceptor acceptor(listen_fd, "serve ib", o.log);
  SessionPool pool(o.max_sessions, &refuser, o.max_per_source);
  for (std::uint64_t n = 0; !stop.stop_requested() && (o.connections == 0 || n < o.connections);) {
    between();
    Fd c = acceptor.next(200);
    if (!c) continue;
    between();
    const std::uint64_t index = n++;
    pool.admit(
        std::move(c),
        [&, index](Fd& f) {
          // Whatever a session throws ends that session, with an error to its
          // client, and never the peer.
          try {
            report(serve_one(f.get(), index));
          } catch (const std::exception& e) {
            const std::string internal = fmt::format("internal error: {}", e.what());
            send_message(f.get(), {{"error", internal}});
            report({{"connection", index}, {"ok", false}, {"error", internal}});
          }
        },
        index);
  }
}


void serve(int listen_fd, const PeerOptions& o, const std::function<void(const json&)>& on_connection,
           std::stop_token stop) {
  // Datagrams no live session claims reach this socket (it shares the port
  // with the sessions' connected ones); they are dropped and counted.
  UdpLink unclaimed;
  std::string err;
  if (!unclaimed.open(o.udp_local, err, true)) {
    on_connection({{"ok", false}, {"error", err}});
    return;
  }
  std::atomic<std::uint64_t> dropped{0};
  std::mutex report_mu;
  auto report = [&](json j) {
    j["datagrams_for_no_session"] = dropped.load();
    std::lock_guard g(report_mu);
    on_connection(j);
  };
  Shared shared{unclaimed.fd(), MemoryBudget(o.memory_budget), {}, {}};
  accept_sessions(
      listen_fd, o, stop, report, [&](int fd, std::uint64_t index) { return serve_one(fd, o, index, stop, shared); },
      [](const std::string& why) { return interop::safe_dump(json{{"error", why}}) + "\n"; },
      [&] { dropped += unclaimed.discard_pending(); });
}

}  // namespace rdmaconf::interop::ib
