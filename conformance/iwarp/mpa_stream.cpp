#include "conformance/iwarp/mpa_stream.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace rdmaconf::conformance::iwarp {

using namespace protocols;
using namespace protocols::iwarp;

namespace {
constexpr std::size_t kMaxHeld = 4u << 20;  // octets held per direction while the negotiation is unknown
constexpr std::size_t kKeySize = 16;
}  // namespace

MpaConnection::MpaConnection(const capture::TcpStreamInfo& info, MpaListener& l) : info_(info), l_(l) {}

void MpaConnection::stop(int dir, std::uint64_t offset, std::uint64_t frame, std::string reason, bool gap) {
  Dir& s = d_[dir];
  s.state = State::stopped;
  s.buf.clear();
  l_.on_stop(StopEvent{dir, offset, frame, gap, std::move(reason)});
}

void MpaConnection::data(int dir, std::uint64_t offset, Bytes data, std::uint64_t frame) {
  Dir& s = d_[dir];
  switch (s.state) {
    case State::not_mpa:
    case State::stopped:
      return;
    case State::wait_negotiation:
      if (s.held_bytes + data.size() > kMaxHeld) {
        s.held.clear();
        stop(dir, offset, frame, "no MPA Reply within 4 MiB of FPDU data; framing not followed", true);
        return;
      }
      s.held.push_back(Held{offset, frame, {data.begin(), data.end()}});
      s.held_bytes += data.size();
      return;
    default:
      feed(dir, offset, data, frame);
  }
}

std::size_t MpaConnection::unit_size(int dir, Bytes b) const {
  if (d_[dir].state == State::rr) return b.size() < kMpaRr.size ? 0 : kMpaRr.size + be16(b, 18);
  return b.size() < 2 ? 0 : fpdu_size(be16(b, 0));
}

void MpaConnection::feed(int dir, std::uint64_t offset, Bytes data, std::uint64_t frame) {
  Dir& s = d_[dir];
  while (!data.empty()) {
    if (s.state == State::wait_negotiation) {
      this->data(dir, offset, data, frame);
      return;
    }
    if (s.state != State::probe && s.state != State::rr && s.state != State::fpdu) return;

    if (s.state == State::probe) {
      // Recognise MPA by the key at the very start of a direction.
      if (s.buf.empty()) {
        s.buf_off = offset;
        s.buf_frame = frame;
      }
      const std::size_t take = std::min(kKeySize - s.buf.size(), data.size());
      std::vector<std::byte> probe = s.buf;
      probe.insert(probe.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(take));
      const Bytes p{probe.data(), probe.size()};
      const bool req = looks_like_mpa_key(p, MpaFrameKind::request);
      const bool rep = looks_like_mpa_key(p, MpaFrameKind::reply);
      if (!req && !rep) {
        if (initiator_dir_ >= 0) {
          // One side spoke MPA and this one starts with something else.
          RrEvent e{dir, from_initiator(dir), nullptr, p, s.buf_frame, frame, s.buf_off};
          l_.on_rr(e);
          s.buf.clear();
          stop(dir, s.buf_off, frame, from_initiator(dir) ? "initiator did not send an MPA Request" : "responder did not send an MPA Reply");
        } else {
          s.state = State::not_mpa;
          s.buf.clear();
        }
        return;
      }
      if (probe.size() < kKeySize) {  // a prefix of a key so far
        s.buf = std::move(probe);
        return;
      }
      // The whole key is here: keep the octets buffered and parse the frame.
      if (req && initiator_dir_ < 0) initiator_dir_ = dir;
      if (rep && initiator_dir_ < 0) initiator_dir_ = 1 - dir;
      s.state = State::rr;
      // Fall through with the probe octets still in s.buf (they are the frame's start).
      s.buf.assign(probe.begin(), probe.end() - static_cast<std::ptrdiff_t>(take));
    }

    if (!s.buf.empty()) {
      const std::size_t header = s.state == State::rr ? kMpaRr.size : 2;
      std::size_t need = unit_size(dir, {s.buf.data(), s.buf.size()});
      if (need == 0) {
        const std::size_t take = std::min(header - s.buf.size(), data.size());
        s.buf.insert(s.buf.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(take));
        data = data.subspan(take);
        offset += take;
        need = unit_size(dir, {s.buf.data(), s.buf.size()});
        if (need == 0) return;
      }
      const std::size_t take = std::min(need - s.buf.size(), data.size());
      s.buf.insert(s.buf.end(), data.begin(), data.begin() + static_cast<std::ptrdiff_t>(take));
      data = data.subspan(take);
      offset += take;
      if (s.buf.size() < need) return;
      s.unit.swap(s.buf);  // s.buf takes the empty vector and its capacity
      unit(dir, {s.unit.data(), s.unit.size()}, s.buf_off, s.buf_frame, frame);
      s.unit.clear();
      continue;
    }

    const std::size_t n = unit_size(dir, data);
    if (n != 0 && n <= data.size()) {
      unit(dir, data.first(n), offset, frame, frame);
      data = data.subspan(n);
      offset += n;
      continue;
    }
    s.buf.assign(data.begin(), data.end());
    s.buf_off = offset;
    s.buf_frame = frame;
    return;
  }
}

void MpaConnection::unit(int dir, Bytes b, std::uint64_t offset, std::uint64_t first_frame, std::uint64_t last_frame) {
  Dir& s = d_[dir];
  if (s.state == State::rr) {
    on_rr(dir, b, offset, first_frame, last_frame);
    return;
  }
  auto f = decode_fpdu(b);
  if (!f) {  // cannot happen: unit_size sized it
    stop(dir, offset, first_frame, f.error().message());
    return;
  }
  FpduEvent e;
  e.dir = dir;
  e.from_initiator = from_initiator(dir);
  e.first_frame = first_frame;
  e.last_frame = last_frame;
  e.offset = offset;
  e.fpdu = &*f;
  e.crc_in_use = neg_.crc();
  if (e.crc_in_use) e.crc_computed = fpdu_crc(b.first(b.size() - kMpaCrcSize));
  const auto ddp = decode_ddp(f->ulpdu);
  e.ddp = &ddp;
  e.index = s.fpdus++;
  l_.on_fpdu(e);
}

void MpaConnection::on_rr(int dir, Bytes b, std::uint64_t offset, std::uint64_t first_frame, std::uint64_t last_frame) {
  Dir& s = d_[dir];
  auto f = decode_mpa_rr(b);
  if (!f) {
    stop(dir, offset, first_frame, f.error().message());
    return;
  }
  const bool init = from_initiator(dir);
  RrEvent e{dir, init, &*f, b.first(std::min<std::size_t>(b.size(), kMpaRr.size)), first_frame, last_frame, offset};
  l_.on_rr(e);
  const Header& h = f->hdr;
  MpaSide& side = init ? neg_.req : neg_.rep;
  side.seen = true;
  side.rev = static_cast<std::uint8_t>(h.get(MpaRr::rev));
  side.crc = h.get(MpaRr::c);
  side.markers = h.get(MpaRr::m);
  side.reject = !init && h.get(MpaRr::r);
  if (f->v2) {
    side.ird = static_cast<std::uint16_t>(f->v2->get(MpaV2::ird));
    side.ord = static_cast<std::uint16_t>(f->v2->get(MpaV2::ord));
    side.p2p = f->v2->get(MpaV2::p2p);
  }
  const bool expected_kind = f->kind() == (init ? MpaFrameKind::request : MpaFrameKind::reply);
  if (!expected_kind) {
    stop(dir, offset + b.size(), last_frame, init ? "initiator's first frame is not an MPA Request" : "responder's first frame is not an MPA Reply");
    return;
  }
  s.state = State::wait_negotiation;
  if (neg_.complete()) negotiation_done();
}

void MpaConnection::negotiation_done() {
  neg_.enhanced = neg_.req.rev == 2 && neg_.rep.rev == 2 && neg_.req.ird && neg_.rep.ird;
  for (int dir = 0; dir < 2; ++dir) {
    Dir& s = d_[dir];
    if (s.state != State::wait_negotiation) continue;
    std::vector<Held> held;
    held.swap(s.held);
    s.held_bytes = 0;
    const bool markers = from_initiator(dir) ? neg_.markers_from_initiator() : neg_.markers_from_responder();
    if (neg_.rejected()) {
      s.state = State::stopped;
      if (!held.empty()) l_.on_stop(StopEvent{dir, held[0].offset, held[0].frame, false, "data after a rejecting MPA Reply"});
      continue;
    }
    if (markers) {
      const std::uint64_t off = held.empty() ? 0 : held[0].offset, fr = held.empty() ? 0 : held[0].frame;
      stop(dir, off, fr, "markers negotiated in this direction: marker removal is not implemented yet", true);
      continue;
    }
    s.state = State::fpdu;
    for (auto& h : held) feed(dir, h.offset, {h.bytes.data(), h.bytes.size()}, h.frame);
  }
}

void MpaConnection::gap(int dir, std::uint64_t offset, std::uint64_t len, std::uint64_t frame) {
  Dir& s = d_[dir];
  if (s.state == State::not_mpa || s.state == State::stopped) return;
  if (s.state == State::probe && s.buf.empty() && offset == 0) {
    s.state = State::not_mpa;  // never saw the start of this direction
    return;
  }
  s.held.clear();
  stop(dir, offset, frame, fmt::format("capture gap of {} octets at stream offset {}", len, offset), true);
}

void MpaConnection::close(std::uint64_t frame) {
  for (int dir = 0; dir < 2; ++dir) {
    Dir& s = d_[dir];
    if (s.state == State::rr || s.state == State::fpdu) {
      if (!s.buf.empty()) {
        const std::size_t need = unit_size(dir, {s.buf.data(), s.buf.size()});
        stop(dir, s.buf_off, frame,
             need ? fmt::format("stream ends inside a frame: {} of {} octets present", s.buf.size(), need)
                  : fmt::format("stream ends inside a frame header: {} octets present", s.buf.size()),
             true);
      }
    } else if (s.state == State::wait_negotiation && !s.held.empty()) {
      stop(dir, s.held[0].offset, s.held[0].frame, "the other side's MPA frame is not in the capture", true);
    }
  }
}

}  // namespace rdmaconf::conformance::iwarp
