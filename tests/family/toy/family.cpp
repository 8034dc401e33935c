// The toy family's capture side: it claims UDP port 9 and judges toy.length.
#include <fmt/format.h>

#include "conformance/family.hpp"
#include "conformance/scope.hpp"
#include "tests/family/toy/toy.hpp"

namespace rdmaconf::conformance::toy {

namespace {

const CaseInfo kLength{"toy.length", "toy spec", "§1", Level::must,
                       "The first octet of a toy message counts the octets that follow it.", "toy"};

class Run final : public FamilyRun {
 public:
  Run(RunContext& ctx, const std::vector<const CaseInfo*>& all) : infos_(active(ctx, all)), scope_(infos_.size()) {}
  void packet(const captures::io::Packet& p) override {
    const protocols::Bytes msg = p.payload;
    ++messages_;
    if (!first_) first_ = p.frame;
    last_ = p.frame;
    for (std::size_t i = 0; i < infos_.size(); ++i) {
      CaseCtx c = scope_.ctx(i);
      if (!msg.empty() && std::to_integer<std::size_t>(msg[0]) == msg.size() - 1) {
        c.tally.pass();
        continue;
      }
      Evidence e;
      e.frames = {p.frame};
      e.side = "sender";
      e.expected = msg.empty() ? "a count octet" : fmt::format("{} octets after the count", std::to_integer<unsigned>(msg[0]));
      e.actual = msg.empty() ? "an empty datagram" : fmt::format("{} octets", msg.size() - 1);
      c.tally.fail(std::move(e));
    }
  }
  void finish(std::vector<ScopeResult>& scopes, std::vector<FamilyCount>& counts) override {
    if (messages_) {
      ScopeResult r;
      r.family = "toy";
      r.id = "toy/1";
      r.label = fmt::format("UDP port {}", rdmaconf::toy::kPort);
      r.first_frame = first_;
      r.last_frame = last_;
      r.outcomes = scope_.outcomes(infos_);
      scopes.push_back(std::move(r));
    }
    counts.push_back({"toy_messages", "toy messages", messages_});
  }

 private:
  static std::vector<const CaseInfo*> active(const RunContext& ctx, const std::vector<const CaseInfo*>& all) {
    std::vector<const CaseInfo*> v;
    for (std::size_t i : ctx.active()) v.push_back(all[i]);
    return v;
  }
  std::vector<const CaseInfo*> infos_;
  ScopeState scope_;
  std::uint64_t messages_ = 0, first_ = 0, last_ = 0;
};

class Family final : public ProtocolFamily {
 public:
  std::string_view name() const override { return "toy"; }
  std::string_view title() const override { return "the toy family (tests/family/toy)"; }
  const std::vector<const CaseInfo*>& cases() const override { return cases_; }
  Claims claims(const FamilyOptions&) const override {
    Claims c;
    c.udp_ports = {rdmaconf::toy::kPort};
    return c;
  }
  std::unique_ptr<FamilyRun> start(RunContext& ctx) const override { return std::make_unique<Run>(ctx, cases_); }

 private:
  std::vector<const CaseInfo*> cases_{&kLength};
};

}  // namespace

const ProtocolFamily& family() {
  static const Family f;
  return f;
}

}  // namespace rdmaconf::conformance::toy
