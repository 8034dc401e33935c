// Our engine as the initiator of a scenario, against our own peer or rping -s.
#include "captures/io/pcap_tap.hpp"
#include "interop/iwarp/session.hpp"

namespace rdmaconf::interop::iwarp {

using namespace detail;

namespace {

constexpr const char* kNeedsRfc7306 =
    "not applicable against rping -s: the scenario needs a responder with RFC 7306 (atomics, Immediate Data) and a "
    "buffer it advertises";

// ---------------------------------------------------------- initiator side

struct Initiator {
  Session& s;
  const ScenarioInfo& info;
  const RunOptions& o;
  RunResult& r;
  std::uint32_t size;
  std::uint64_t iters;
  // For the scenarios that open a second connection to the same peer.
  std::string_view peer = {};
  QpConfig cfg = {};
  std::shared_ptr<engine::FrameTap> tap = {};

  bool fail(std::string_view step) {
    r.message = s.why(step);
    return false;
  }

  // `as`: announce this scenario instead of ours (the first connection of
  // the two-connection scenarios runs plain data).
  std::optional<Ctl> hello(Ctl h, std::optional<Code> as = std::nullopt) {
    h.kind = kHello;
    h.scenario = as.value_or(static_cast<Code>(info.code));
    h.size = size;
    h.iterations = static_cast<std::uint32_t>(iters);
    const auto b = h.encode();
    if (!s.send(b)) return fail("sending the hello"), std::nullopt;
    const auto m = s.receive();
    if (!m) return fail("waiting for the responder's ready"), std::nullopt;
    const auto c = Ctl::decode(*m);
    if (!c || c->kind != kReady) {
      r.message = "the responder's answer to the hello is not a ready message";
      return std::nullopt;
    }
    if (c->status != kOk) {
      r.message = fmt::format("the responder refused scenario {} (size {}, {} iterations)", info.name, size, iters);
      return std::nullopt;
    }
    return c;
  }

  bool finish() {
    Ctl d;
    d.kind = kDone;
    d.scenario = info.code;
    d.iterations = static_cast<std::uint32_t>(iters);
    if (!s.send(d.encode())) return fail("sending done");
    const auto m = s.receive();
    if (!m) return fail("waiting for the result");
    const auto c = Ctl::decode(*m);
    if (!c || c->kind != kResult) {
      r.message = "the responder's last message is not a result";
      return false;
    }
    if (c->status != kOk) {
      r.message = fmt::format("the responder found the data wrong at offset {} of its buffer", c->to);
      return false;
    }
    r.message = "data verified end to end";
    return true;
  }

  bool rping() {
    auto& start = s.buffer(size);
    auto& rdma = s.buffer(size);
    const std::uint64_t start_to = random_to(), rdma_to = random_to();
    const auto start_stag = s.pd.register_mr(start, kRemoteRead, start_to);
    const auto rdma_stag = s.pd.register_mr(rdma, kRemoteWrite | kLocalWrite, rdma_to);
    const auto t0 = Clock::now();
    for (std::uint64_t n = 0; n < iters; ++n) {
      fill_rping(start, n);
      std::fill(rdma.begin(), rdma.end(), std::byte{0});
      if (!s.send(encode_rping({start_to, start_stag, size}))) return fail("advertising the source buffer");
      if (!s.receive()) return fail(fmt::format("ping {}: waiting for the RDMA Read to complete", n));
      if (!s.send(encode_rping({rdma_to, rdma_stag, size}))) return fail("advertising the sink buffer");
      if (!s.receive()) return fail(fmt::format("ping {}: waiting for the RDMA Write to complete", n));
      if (start != rdma) {
        const auto at = std::mismatch(start.begin(), start.end(), rdma.begin()).first - start.begin();
        r.message = fmt::format("ping {}: the buffer written back differs at octet {}", n, at);
        return false;
      }
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.bytes = 2 * iters * size;
    r.message = fmt::format("{} pings, every buffer written back equal to the one read", iters);
    return true;
  }

  // How many `size`-octet slots the responder's buffer of `len` octets holds;
  // nothing (with the reason in r.message) unless a whole, non-zero number.
  std::optional<std::uint32_t> whole_slots(std::uint32_t len) {
    const std::uint32_t slots = len / std::max<std::uint32_t>(size, 1);
    if (slots == 0 || len % size) {
      r.message = fmt::format("the responder's buffer ({} octets) is not a whole number of {}-octet slots", len, size);
      return std::nullopt;
    }
    return slots;
  }

  // Posts the work requests make(0) .. make(iters - 1), at most `window` in
  // flight, until all have completed. `bad` (if given) is a data error found
  // by a completion handler: it ends the run.
  bool pump(unsigned window, std::string_view what, const std::function<SendWr(std::uint64_t)>& make,
            const std::string* bad = nullptr) {
    std::uint64_t posted = 0;
    while (s.completed < iters) {
      while (posted < iters && s.outstanding < window) s.post(make(posted++));
      const std::uint64_t target = s.completed + 1;
      if (!s.wait([&] { return s.completed >= target; })) return fail(what);
      if (bad && !bad->empty()) {
        r.message = *bad;
        return false;
      }
    }
    return true;
  }

  bool write_bw() {
    const auto c = hello({});
    if (!c) return false;
    const auto slots = whole_slots(c->len);
    if (!slots) return false;
    auto& src = s.buffer(std::size_t(size) * *slots);
    for (std::uint32_t k = 0; k < *slots; ++k) fill_pattern(std::span(src).subspan(std::size_t(k) * size, size), k + 1);
    const auto stag = s.pd.register_mr(src, 0);
    const auto t0 = Clock::now();
    const bool ok = pump(o.window, "RDMA Write", [&](std::uint64_t i) {
      const std::uint64_t k = i % *slots;
      SendWr w{kDataBase + i, WrOpcode::write, {stag, k * size, size}};
      w.remote_stag = c->stag;
      w.remote_to = c->to + k * size;
      return w;
    });
    if (!ok || !finish()) return false;
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.bytes = iters * size;
    return true;
  }

  bool read_bw() {
    const auto c = hello({});
    if (!c) return false;
    const auto slots = whole_slots(c->len_ro);
    if (!slots) return false;
    const unsigned window = std::max(1u, o.window);
    auto& dst = s.buffer(std::size_t(size) * window);
    const auto stag = s.pd.register_mr(dst, kLocalWrite);
    std::string bad;
    s.on_data = [&](const Completion& done) {
      const std::uint64_t i = done.wr_id - kDataBase;
      const auto got = std::span(dst).subspan((i % window) * size, size);
      if (const auto at = check_pattern(got, i % *slots + 1); at && bad.empty())
        bad = fmt::format("read {}: octet {} differs from the responder's buffer", i, *at);
    };
    const auto t0 = Clock::now();
    const bool ok = pump(window, "RDMA Read", [&](std::uint64_t i) {
      SendWr w{kDataBase + i, WrOpcode::read, {stag, (i % window) * size, size}};
      w.remote_stag = c->stag_ro;
      w.remote_to = c->to_ro + (i % *slots) * size;
      return w;
    }, &bad);
    s.on_data = nullptr;
    if (!ok || !finish()) return false;
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.bytes = iters * size;
    return true;
  }

  bool send_lat() {
    const auto c = hello({});
    if (!c) return false;
    auto& msg = s.buffer(size);
    fill_pattern(msg, kSeedLat);
    const std::vector<std::byte> base = msg;
    const auto stag = s.pd.register_mr(msg, 0);
    const auto t0 = Clock::now();
    for (std::uint64_t i = 0; i < iters; ++i) {
      stamp_send(msg, i);
      if (!s.post({kDataBase + i, WrOpcode::send, {stag, 0, size}})) return fail("Send");
      const auto got = s.receive_in_place();
      if (!got) return fail(fmt::format("waiting for pong {}", i));
      const bool same = same_message(got->second, base, i, true);
      s.repost(got->first);
      if (!same) {
        r.message = fmt::format("pong {} is not the message sent", i);
        return false;
      }
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!finish()) return false;
    r.bytes = 2 * iters * size;
    return true;
  }

  bool write_lat() {
    auto& mine = s.buffer(size);
    const std::uint64_t mine_to = random_to();
    const auto mine_stag = s.pd.register_mr(mine, kRemoteWrite | kLocalWrite, mine_to);
    Ctl h;
    h.stag = mine_stag;
    h.to = mine_to;
    h.len = size;
    const auto c = hello(h);
    if (!c) return false;
    auto& src = s.buffer(size);
    fill_pattern(src, kSeedLat);
    const std::vector<std::byte> base = src;
    const auto src_stag = s.pd.register_mr(src, 0);
    const auto t0 = Clock::now();
    for (std::uint64_t i = 0; i < iters; ++i) {
      src.back() = write_tag(i);
      SendWr w{kDataBase + i, WrOpcode::write, {src_stag, 0, size}};
      w.remote_stag = c->stag;
      w.remote_to = c->to;
      if (!s.post(w)) return fail("RDMA Write");
      if (!s.wait([&] { return mine.back() == write_tag(i); })) return fail(fmt::format("waiting for pong {}", i));
      if (!same_message(mine, base, i, false)) {
        r.message = fmt::format("pong {} is not the message sent", i);
        return false;
      }
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!finish()) return false;
    r.bytes = 2 * iters * size;
    return true;
  }

  // RFC 7306 §5.1: the steps of kAtomicSteps on the first word of the
  // responder's buffer, one at a time, each Atomic Response's original
  // value checked; the responder checks the word's end value.
  bool atomic() {
    const auto c = hello({});
    if (!c) return false;
    auto& res = s.buffer(8);
    const auto res_stag = s.pd.register_mr(res, kLocalWrite);
    std::string bad;
    std::uint64_t step = 0;
    s.on_data = [&](const Completion& done) {
      const auto& st = kAtomicSteps[step];
      if (bad.empty() && done.atomic_original != st.original)
        bad = fmt::format("{} {}: the Atomic Response's original value is {:#018x}, expected {:#018x} (RFC 7306 §5.1.{})",
                          st.compare_swap ? "CmpSwap" : "FetchAdd", step + 1, done.atomic_original.value_or(0),
                          st.original, st.compare_swap ? 2 : 1);
    };
    for (; step < kAtomicSteps.size(); ++step) {
      const auto& st = kAtomicSteps[step];
      SendWr w{kDataBase + step, st.compare_swap ? WrOpcode::atomic_compare_swap : WrOpcode::atomic_fetch_add,
               {res_stag, 0, 8}};
      w.remote_stag = c->stag;
      w.remote_to = c->to;
      w.add_swap = st.add_swap;
      w.compare = st.compare;
      const std::uint64_t target = s.completed + 1;
      s.post(w);
      if (!s.wait([&] { return s.completed >= target; })) return fail(fmt::format("atomic step {}", step + 1));
      if (!bad.empty()) {
        s.on_data = nullptr;
        r.message = bad;
        return false;
      }
    }
    s.on_data = nullptr;
    if (!finish()) return false;
    r.message = fmt::format("{} Atomic Operations, every original value as RFC 7306 §5.1 computes it; {}",
                            kAtomicSteps.size(), r.message);
    return true;
  }

  // RFC 7306 §6.3: Immediate Data, in batches of the responder's credits,
  // each batch acknowledged by a Send; the responder checks every value
  // and the order.
  bool immediate() {
    const auto c = hello({});
    if (!c) return false;
    const std::uint64_t batch = std::max<std::uint16_t>(c->credits, 1);
    for (std::uint64_t i = 0; i < iters;) {
      const std::uint64_t end = std::min(iters, i + batch);
      for (; i < end; ++i) {
        SendWr w{kDataBase + i, WrOpcode::immediate, {}};
        w.imm = immediate_value(i);
        w.solicited = i % 2 == 1;
        s.post(w);
      }
      if (!s.receive()) return fail(fmt::format("waiting for the responder to take Immediate Data {}", end - 1));
    }
    if (!finish()) return false;
    r.message = fmt::format("{} Immediate Data messages delivered in order with their values; {}", iters, r.message);
    return true;
  }

  // RFC 5040 §5.2.1, RFC 5041 §5.2: a zero-length Write and Read naming an
  // STag that does not exist (and an offset near the top) must go through:
  // the Read is answered, nothing is terminated.
  bool zero_length() {
    std::optional<Ctl> c;
    if (o.peer_program != "rping" && !(c = hello({}))) return false;
    const std::uint32_t bogus = (c ? c->stag : 0x5eed0000u) + (0x10000u << 8);
    auto& local = s.buffer(64);
    const auto stag = s.pd.register_mr(local, kLocalWrite);
    SendWr w{kDataBase, WrOpcode::write, {stag, 0, 0}};
    w.remote_stag = bogus;
    w.remote_to = ~0ull - 16;
    s.post(w);
    SendWr rd{kDataBase + 1, WrOpcode::read, {stag, 0, 0}};
    rd.remote_stag = bogus;
    rd.remote_to = ~0ull - 16;
    s.post(rd);
    if (!s.wait([&] { return s.completed >= 2; })) return fail("waiting for the zero-length Read Response");
    if (c) {
      if (!finish()) return false;
    } else {  // rping -s: no control exchange; a Terminate would come right behind
      s.link->run_until([&] { return s.dead(); }, 300);
      if (s.dead()) return fail("after the zero-length Read Response");
    }
    r.message = "a zero-length RDMA Write and Read naming a made-up STag went through without a Terminate, the Read "
                "answered";
    return true;
  }

  // What `rping -s` offers instead of a ready message: one posted receive of
  // 16 octets (its buffer advertisement) and no buffer of its own; IRD as
  // negotiated. Faults that need one of the responder's buffers are skipped.
  std::optional<Ctl> rping_server_resources() {
    if (info.needs_rfc7306) {
      r.skipped = true;
      r.message = kNeedsRfc7306;
      return std::nullopt;
    }
    switch (info.code) {
      // oversize: its RDMA Write would name our made-up STag, which the
      // responder may rightly report before it finds the framing broken.
      // msn-repeat: a repeat needs a Send before it, which would use rping's only receive.
      // zero-send: rping -s reposts its receive as soon as a message came.
      case kTermMarker: case kTermBounds: case kTermAccess: case kTermReadBounds: case kTermOrd: case kTermOversize:
      case kTermMsnRepeat: case kTermReadWrap: case kTermZeroSend: case kTermRevoked:
        r.skipped = true;
        r.message = "not applicable against rping -s: the fault needs a buffer the responder advertises or a second posted receive";
        return std::nullopt;
      default: break;
    }
    if (info.second_connection) {
      r.skipped = true;
      r.message = "not applicable against rping -s: the fault needs a buffer the responder advertises on a first connection";
      return std::nullopt;
    }
    Ctl c;
    c.credits = 1;
    c.recv_size = kRpingInfo;
    c.ird = s.qp.effective_ord();
    c.stag = 0x5eed0000;  // any STag: rping -s advertises none, so none of ours is valid there
    c.len = 4096;
    c.len_ro = 4096;
    return c;
  }

  // Breaks one rule, then requires the Terminate (or close) of ScenarioInfo.
  bool provoke() {
    if (info.close_only) {  // the fault already happened with the Request
      const auto t0 = Clock::now();
      s.link->run_until([&] { return s.dead(); }, info.code == kMpaWithheld ? kStartupWaitMs : s.timeout_ms);
      waited_s = std::chrono::duration<double>(Clock::now() - t0).count();
      return judge();
    }
    if (info.second_connection && o.peer_program != "rping") return other_stream();
    const auto c = o.peer_program == "rping" ? rping_server_resources() : hello({});
    if (!c) return false;
    const std::uint32_t bad_stag = c->stag + (0x10000u << 8);  // an index no region has
    auto& local = s.buffer(std::max<std::uint32_t>(c->len_ro, 4096));
    fill_pattern(local, 3);  // no run of zeros for a misframed CRC field to land on
    const auto local_stag = s.pd.register_mr(local, kLocalWrite);
    const std::array<std::byte, 16> small{};
    SendWr w{kDataBase, WrOpcode::write, {local_stag, 0, 64}};
    w.remote_stag = c->stag;
    w.remote_to = c->to;
    switch (info.code) {
      case kTermCrc:
      case kSilentAfterCrc:
        s.qp.faults().corrupt_crc_fpdu = s.qp.fpdus_sent() + 1;
        s.send(small);
        break;
      case kTermMarker:
        if (!s.qp.markers_to_peer()) {
          r.skipped = true;
          r.message = "not applicable: the responder did not ask for markers (start the peer with --markers)";
          return false;
        }
        s.qp.faults().wrong_marker = s.qp.markers_sent() + 1;
        w.local.length = std::min<std::uint32_t>(2048, c->len);
        s.post(w);
        break;
      case kTermMsnSkip:
      case kSilentAfterMsn:
      case kTermFirstError:
        s.qp.faults().skip_msn_message = s.qp.send_messages() + 1;
        s.send(small);
        break;
      case kTermMsnRepeat:
        s.qp.faults().repeat_msn_message = s.qp.send_messages() + 1;
        s.send(small);
        break;
      case kTermOversize:
        // The bogus length swallows the start of the next FPDU; the CRC can no longer match.
        s.qp.faults().oversize_length_fpdu = s.qp.fpdus_sent() + 1;
        s.post(w);
        w.wr_id = kDataBase + 1;
        s.post(w);
        break;
      case kTermNoBuffer:  // one Send more than the receives the responder posted
        for (unsigned k = 0; k <= c->credits; ++k) s.send(std::span(small).first(8));
        break;
      case kTermInvalidate:
        s.send(small, WrOpcode::send_invalidate, bad_stag);
        break;
      case kTermRevoked:  // a legal invalidation, then a Write the revoked STag must refuse
        s.send(small, WrOpcode::send_invalidate, c->stag);
        s.post(w);
        break;
      case kTermDdpVersion:
      case kTermDdpVersionTagged:
      case kTermRdmapVersion:
      case kTermOpcode:
      case kTermQn: {
        using Seg = Faults::Segment;
        s.qp.faults().segment = info.code == kTermRdmapVersion ? Seg::rdmap_version : info.code == kTermOpcode ? Seg::opcode
                                : info.code == kTermQn ? Seg::qn : Seg::ddp_version;
        s.qp.faults().segment_fpdu = s.qp.fpdus_sent() + 1;
        if (info.code == kTermDdpVersionTagged)
          s.post(w);
        else
          s.send(small);
        break;
      }
      case kTermReadVersion:
      case kTermReadOpcode: {  // zero length: no STag of the responder's is needed, nor checked
        s.qp.faults().segment = info.code == kTermReadVersion ? Faults::Segment::rdmap_version : Faults::Segment::opcode;
        s.qp.faults().segment_fpdu = s.qp.fpdus_sent() + 1;
        SendWr rd{kDataBase, WrOpcode::read, {local_stag, 0, 0}};
        rd.remote_stag = bad_stag;
        s.post(rd);
        break;
      }
      case kTermReadWrap:
        w.op = WrOpcode::read;
        w.remote_stag = c->stag_ro;
        w.remote_to = ~0ull - 31;  // 64 octets from 2^64 - 32
        s.post(w);
        break;
      case kTermZeroSend:
        for (unsigned k = 0; k <= c->credits; ++k) s.send({});
        break;
      case kTermAtomicAlign:
      case kTermCmpSwapAlign:
      case kTermAtomicOpcode:
      case kTermAtomicDdpVersion:
      case kTermAtomicRdmapOpcode:
      case kTermAtomicVersion: {
        using Seg = Faults::Segment;
        const bool misaligned = info.code == kTermAtomicAlign || info.code == kTermCmpSwapAlign;
        SendWr a{kDataBase, info.code == kTermCmpSwapAlign ? WrOpcode::atomic_compare_swap : WrOpcode::atomic_fetch_add,
                 {local_stag, 0, 8}};
        a.remote_stag = c->stag;
        a.remote_to = c->to + (misaligned ? 4 : 0);
        a.add_swap = 0x0101010101010101ull;
        if (!misaligned) {
          s.qp.faults().segment = info.code == kTermAtomicOpcode       ? Seg::atomic_opcode
                                  : info.code == kTermAtomicDdpVersion ? Seg::ddp_version
                                  : info.code == kTermAtomicRdmapOpcode ? Seg::opcode
                                                                        : Seg::rdmap_version;
          s.qp.faults().segment_fpdu = s.qp.fpdus_sent() + 1;
        }
        s.post(a);
        break;
      }
      case kTermImmediateLength: {
        s.qp.faults().segment = Faults::Segment::short_body;
        s.qp.faults().segment_fpdu = s.qp.fpdus_sent() + 1;
        SendWr im{kDataBase, WrOpcode::immediate, {}};
        im.imm = immediate_value(0);
        s.post(im);
        break;
      }
      case kTermTooLong: {
        auto& big = s.buffer(c->recv_size + 1);
        const auto big_stag = s.pd.register_mr(big, 0);
        s.post({kDataBase, WrOpcode::send, {big_stag, 0, c->recv_size + 1}});
        break;
      }
      case kTermStag:
        w.remote_stag = bad_stag;
        s.post(w);
        break;
      case kTermBounds:
        w.remote_to = c->to + c->len - 32;
        s.post(w);
        break;
      case kTermAccess:
        w.remote_stag = c->stag_ro;
        w.remote_to = c->to_ro;
        s.post(w);
        break;
      case kTermReadStag:
      case kTermReadBounds:
        w.op = WrOpcode::read;
        w.remote_stag = info.code == kTermReadStag ? bad_stag : c->stag_ro;
        w.remote_to = c->to_ro + (info.code == kTermReadBounds ? c->len_ro - 32 : 0);
        s.post(w);
        break;
      case kTermOrd:
        s.qp.faults().ignore_ord = true;
        for (std::uint32_t k = 0; k <= c->ird; ++k) {
          SendWr rd{kDataBase + k, WrOpcode::read, {local_stag, 0, c->len_ro}};
          rd.remote_stag = c->stag_ro;
          rd.remote_to = c->to_ro;
          s.post(rd);
        }
        break;
      default: break;
    }
    bad_segment = s.qp.last_segment_sent();
    if (info.behind == ScenarioInfo::Behind::zero_read) {  // must go unanswered
      SendWr probe{kProbe, WrOpcode::read, {local_stag, 0, 0}};
      probe.remote_stag = bad_stag;
      s.on_data = [this](const Completion& done) { probe_answered = probe_answered || done.wr_id == kProbe; };
      s.post(probe);
    } else if (info.behind == ScenarioInfo::Behind::second_error) {  // the Terminate must not describe it
      w.wr_id = kProbe;
      w.remote_stag = bad_stag;
      s.post(w);
    }
    s.link->run_until([&] { return s.dead() || s.qp.terminate_received().has_value(); }, s.timeout_ms);
    return judge();
  }

  // RFC 5040 §7.2 and §8.1.1, RFC 5041 §8.2 and §8.3.1: an STag is good
  // only on the stream (and protection domain) it was advertised on. This
  // connection runs one slot of `write` (or `read`); a second connection,
  // opened meanwhile, names this one's STag and must draw the Terminate;
  // then this one goes on: its buffer holds only what it wrote itself (its
  // source still reads as advertised; its STag still takes a Write).
  bool other_stream() {
    const bool read = info.code == kTermReadStagStream;
    const auto a = hello({}, read ? kReadBw : kWriteBw);
    if (!a) return false;
    auto& mine = s.buffer(size);
    fill_pattern(mine, 1);  // slot 0 as the responder checks it (or, read, finds it)
    const auto mine_stag = s.pd.register_mr(mine, kLocalWrite);
    SendWr own{kDataBase, read ? WrOpcode::read : WrOpcode::write, {mine_stag, 0, size}};
    own.remote_stag = read ? a->stag_ro : a->stag;
    own.remote_to = read ? a->to_ro : a->to;
    if (!read) {
      s.post(own);
      if (!s.wait([&] { return s.completed >= 1; })) return fail("RDMA Write on the first connection");
    }
    std::string err;
    Fd fd = tcp_connect(peer, o.timeout_ms, err);
    if (!fd) {
      r.message = "opening the second connection: " + err;
      return false;
    }
    Session b(cfg, std::move(fd), o.wait, o.timeout_ms);
    if (tap && !b.link->record(tap)) {
      r.message = "recording the second connection";
      return false;
    }
    b.setup_slots(kMinSlot, kSlots);
    b.qp.connect();
    if (!b.wait([&] { return b.qp.state() == QpState::connected; })) {
      r.message = b.why("MPA setup of the second connection");
      return false;
    }
    Initiator second{b, info, o, r, size, iters};
    if (!second.hello({})) return false;
    auto& theirs = b.buffer(size);
    fill_pattern(theirs, 3);
    SendWr w{kDataBase, read ? WrOpcode::read : WrOpcode::write, {b.pd.register_mr(theirs, kLocalWrite), 0, size}};
    w.remote_stag = own.remote_stag;
    w.remote_to = own.remote_to;
    if (info.code == kTermInvalidateStream)
      b.send(std::span(theirs).first(16), WrOpcode::send_invalidate, a->stag);
    else
      b.post(w);
    second.bad_segment = b.qp.last_segment_sent();
    b.link->run_until([&] { return b.dead() || b.qp.terminate_received().has_value(); }, b.timeout_ms);
    const bool judged = second.judge();
    r.terminate_received = b.qp.terminate_received();
    b.link->close(2000);
    if (!judged) {
      r.message = "second connection: " + r.message;
      return false;
    }
    const std::string on_second = r.message;
    // The first connection: untouched by the second.
    if (read || info.code == kTermInvalidateStream) {
      if (read) std::fill(mine.begin(), mine.end(), std::byte{0});
      s.post(own);
      if (!s.wait([&] { return s.completed >= (read ? 1u : 2u); }))
        return fail(read ? "RDMA Read on the first connection after the second's Terminate"
                         : "RDMA Write to the first connection's STag after the second tried to invalidate it");
      if (read && check_pattern(mine, 1)) {
        r.message = "the first connection's source buffer no longer reads as the responder advertised it";
        return false;
      }
    }
    if (!finish()) return false;
    r.message = fmt::format("second connection: {}; first connection: {}", on_second,
                            read ? "its source still read as advertised"
                            : info.code == kTermInvalidateStream ? "its STag still took a Write, data verified"
                                                                 : "its buffer held only what it wrote itself");
    return true;
  }

  static constexpr std::uint64_t kProbe = kDataBase + 0xffff;
  double waited_s = 0;
  SentSegment bad_segment{};  // the segment the fault went into (the last one sent with it)
  bool probe_answered = false;

  bool copied_headers_match(const eng::TerminateInfo& t) {
    const std::string wrong = copied_headers_problem(t, bad_segment, r.should_not_met);
    if (!wrong.empty()) r.message += "; " + wrong;
    return wrong.empty();
  }

  bool judge() {
    const auto& t = s.qp.terminate_received();
    if (info.close_only) {
      if (info.reply_forbidden && s.qp.mpa_frame_received()) {
        r.message = fmt::format("the responder answered the faulty Request with an MPA Reply{}; it must close the "
                                "connection ({})", s.qp.state() == QpState::connected ? " accepting it" : "", info.rule);
        return false;
      }
      if (t) {
        r.message = fmt::format("the responder sent Terminate {}/{}/{:#04x}; it must close without one", t->layer,
                                t->etype, t->code);
        return false;
      }
      if (info.code == kMpaWithheld) {
        if (!s.link->peer_eof() && !s.link->peer_reset()) {
          r.should_not_met.push_back(fmt::format("RFC 5044 §7.1.2 rules 8 and 10: no timeout on the missing MPA Request "
                                                 "within {} s", kStartupWaitMs / 1000));
          r.message = fmt::format("the responder still held the connection after {:.1f} s without a Request; SHOULD "
                                  "not met: {}", waited_s, r.should_not_met.back());
          return true;
        }
        r.message = fmt::format("the responder {} the connection {:.1f} s after it opened, with no Request sent: a "
                                "startup timeout, as RFC 5044 §7.1.2 rules 8 and 10 recommend",
                                s.link->peer_reset() ? "reset" : "closed", waited_s);
        return true;
      }
      if (s.link->peer_reset()) {  // an abort is a close too (RFC 5044 §7.1.2 asks for no more than that)
        r.message = "the responder reset the connection without a Terminate, as required";
        return true;
      }
      if (!s.link->peer_eof()) return fail("waiting for the responder to close");
      r.message = "the responder closed the connection without a Terminate, as required";
      return true;
    }
    const auto& e = *info.expect;
    if (!t) return fail(fmt::format("waiting for Terminate {}", e.text()));
    r.message = fmt::format("the responder sent Terminate {}/{}/{:#04x}", t->layer, t->etype, t->code);
    // The probe behind the fault: answered (before the Terminate, or any
    // octet after it) is a failure of its own, reported even when the
    // Terminate itself is wrong.
    auto probe_silent = [&] {
      if (info.behind != ScenarioInfo::Behind::zero_read) return true;
      s.link->run_until([&] { return s.link->ended(); }, s.timeout_ms);
      s.drain();
      s.on_data = nullptr;
      if (probe_answered) {
        r.message += "; it answered the zero-length Read Request sent behind the faulty segment: after the error "
                     "nothing more of the stream may be processed (RFC 5041 §7.1, RFC 5044 §8)";
        return false;
      }
      if (const auto n = s.qp.octets_after_terminate()) {
        r.message += fmt::format("; {} octets followed its Terminate (the Read Request sent behind the faulty segment "
                                 "must go unanswered: RFC 5041 §7.1, RFC 5044 §8)", n);
        return false;
      }
      r.message += "; it left the Read Request sent behind the faulty segment unanswered (RFC 5041 §7.1, RFC 5044 §8)";
      return true;
    };
    if (!e.matches(*t)) {
      r.message += fmt::format("; expected {} ({})", e.text(), info.rule);
      probe_silent();
      return false;
    }
    if (!copied_headers_match(*t)) return false;
    // After its Terminate the responder must close.
    s.link->run_until([&] { return s.link->peer_eof(); }, s.timeout_ms);
    if (!s.link->peer_eof()) {
      r.message += ", but did not close the connection";
      return false;
    }
    r.message += " and closed, as required";
    if (!probe_silent()) return false;
    for (const auto& n : r.should_not_met) r.message += fmt::format("; SHOULD not met: {}", n);
    return true;
  }
};


}  // namespace

nlohmann::json RunResult::to_json() const {
  nlohmann::json j = {{"scenario", scenario},
                      {"verdict", skipped ? "SKIP" : ok ? "PASS" : "FAIL"},
                      {"message", message},
                      {"iterations", iterations},
                      {"bytes", bytes},
                      {"seconds", seconds},
                      {"negotiated", negotiated},
                      {"terminate_received", terminate_json(terminate_received)},
                      {"terminate_sent", terminate_json(terminate_sent)},
                      {"should_not_met", should_not_met}};
  if (seconds > 0 && bytes) j["gbit_per_s"] = static_cast<double>(bytes) * 8 / seconds / 1e9;
  if (seconds > 0 && iterations) j["usec_per_iteration"] = seconds * 1e6 / static_cast<double>(iterations);
  if (seconds > 0 && iterations && scenario.ends_with("-lat"))  // one iteration is a round trip
    j["half_round_trip_usec"] = seconds * 1e6 / static_cast<double>(iterations) / 2;
  j["size"] = size;
  return j;
}

RunResult run_initiator(std::string_view peer, const RunOptions& o) {
  RunResult r;
  r.scenario = o.scenario;
  const ScenarioInfo* info = find_scenario(o.scenario);
  if (!info) {
    r.message = fmt::format("unknown scenario '{}'", o.scenario);
    return r;
  }
  const std::uint32_t size = o.size ? o.size : info->default_size;
  const std::uint64_t iters = std::min<std::uint64_t>(o.iterations ? o.iterations : info->default_iterations, 0xffffffffu);
  if ((info->code == kRping || info->code == kCrcIgnored || info->code == kFpduSplit || info->code == kRtrBits ||
       info->code == kMarkerReservedBits) && size < fmt::format("rdma-ping-{}: ", iters).size() + 2) {
    r.message = fmt::format("rping needs a buffer of at least {} octets for {} pings",
                            fmt::format("rdma-ping-{}: ", iters).size() + 2, iters);
    return r;
  }
  QpConfig cfg = o.qp;
  cfg.initiator = true;
  if (info->needs_crc) cfg.crc = true;
  if (info->code == kFpduSplit) cfg.mulpdu = 128;
  if (info->code == kRtrBits) cfg.faults.request = Faults::Frame::rtr_bits;
  if (info->code == kMarkerReservedBits) cfg.faults.marker_reserved_bits = true;  // several FPDUs to a Read Response, so that writes straddle them
  if (info->code == kCrcIgnored) {
    cfg.crc = false;
    cfg.faults.corrupt_every_crc = true;
  }
  switch (info->code) {
    case kTermBeforeReply: cfg.faults.fpdu_before_reply = true; break;
    case kMpaKey: cfg.faults.request = Faults::Frame::key; break;
    case kMpaRevision: cfg.faults.request = Faults::Frame::revision; break;
    case kMpaPrivateData: cfg.faults.request = Faults::Frame::private_data; break;
    case kMpaWithheld:  // and no timeout of ours: the responder's is the test
      cfg.faults.request = Faults::Frame::withheld;
      cfg.setup_timeout_ms = 3600 * 1000;
      break;
    default: break;
  }
  if (const std::string bad = Device().validate(cfg); !bad.empty()) {
    r.message = fmt::format("configuration not supported: {}", bad);
    return r;
  }
  std::string err;
  Fd fd = tcp_connect(peer, o.timeout_ms, err);
  if (!fd) {
    r.message = err;
    return r;
  }
  Session s(cfg, std::move(fd), o.wait, o.timeout_ms);
  std::shared_ptr<engine::FrameTap> tap;
  if (!o.pcap.empty() && !((tap = captures::io::pcap_tap(o.pcap, err)) && s.link->record(tap))) {
    r.message = err;
    return r;
  }
  s.setup_slots(info->code == kSendLat ? size : kMinSlot, kSlots);
  if (info->code == kFpduSplit) s.link->split_writes(37);
  s.qp.connect();
  Initiator in{s, *info, o, r, size, iters, peer, cfg, tap};
  bool ok = false;
  if (info->close_only) {
    ok = in.provoke();
  } else if (!s.wait([&] { return s.qp.state() == QpState::connected; })) {
    in.fail("MPA setup");
  } else {
    r.negotiated = s.negotiated();
    if (o.peer_program == "rping" && info->needs_rfc7306) {
      r.skipped = true;
      r.message = kNeedsRfc7306;
    }
    switch (info->code) {
      case kRping:
      case kFpduSplit: ok = in.rping(); break;
      case kRtrBits:
        if (!(cfg.revision == 2 && cfg.enhanced && !cfg.p2p)) {
          r.skipped = true;
          r.message = "not applicable: the scenario needs an enhanced MPA revision 2 Request outside peer-to-peer mode";
        } else {
          ok = in.rping();
        }
        break;
      case kCrcIgnored:
        if (s.qp.crc_in_use()) {
          r.skipped = true;
          r.message = "not applicable: the responder asked for CRC (the scenario needs C = 0 in both frames)";
        } else {
          ok = in.rping();
          if (ok) r.message += fmt::format(", every one of the {} FPDUs sent with a CRC field of 0x5a5a5a5a", s.qp.fpdus_sent());
        }
        break;
      case kMarkerReservedBits:
        if (!s.qp.markers_to_peer()) {
          r.skipped = true;
          r.message = "not applicable: the responder did not ask for markers (start the peer with --markers)";
        } else {
          ok = in.rping();
          if (ok) r.message += fmt::format(", every one of the {} markers sent with its reserved field and its FPDU pointer's low bits set", s.qp.markers_sent());
        }
        break;
      case kZeroLength: ok = in.zero_length(); break;
      case kAtomic: ok = o.peer_program != "rping" && in.atomic(); break;
      case kImmediate: ok = o.peer_program != "rping" && in.immediate(); break;
      case kWriteBw: ok = in.write_bw(); break;
      case kReadBw: ok = in.read_bw(); break;
      case kSendLat: ok = in.send_lat(); break;
      case kWriteLat: ok = in.write_lat(); break;
      default: ok = in.provoke(); break;
    }
  }
  r.ok = ok && !r.skipped;
  r.size = size;
  r.iterations = info->expect || info->close_only ? 0 : iters;
  if (!r.terminate_received) r.terminate_received = s.qp.terminate_received();  // (or the second connection's)
  r.terminate_sent = s.qp.terminate_sent();
  if (r.negotiated.is_null()) r.negotiated = s.negotiated();
  s.link->close(2000);
  return r;
}


}  // namespace rdmaconf::interop::iwarp
