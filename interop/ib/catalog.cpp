// The RoCEv2 scenarios of our InfiniBand engine, and the JSON of a run's result and counters.
#include "interop/ib/scenarios.hpp"

#include "interop/ib/detail.hpp"

namespace rdmaconf::interop::ib {

namespace {

const std::vector<ScenarioInfo> kScenarios = {
    {"write", "RC RDMA WRITEs of --size octets, the responder's buffer digest compared", QpType::rc, 65536, 64, {}},
    {"read", "RC RDMA READs of the responder's pattern, compared here", QpType::rc, 65536, 64, {}},
    {"send", "RC SENDs (every other with Immediate) into posted receives, digest compared", QpType::rc, 4096, 64, {}},
    {"atomic", "RC Fetch and Add, then Compare and Swap, originals checked", QpType::rc, 8, 64, {}},
    {"uc-write", "UC RDMA WRITEs, the responder's buffer digest compared", QpType::uc, 16384, 16, {}},
    {"ud-send", "UD SENDs with Q_Key and source QP checked at the responder", QpType::ud, 1024, 64, {}},
    {"fault-psn-gap", "one request packet skipped: one sequence-error NAK, the resend, data intact", QpType::rc, 8192, 1,
     "a responder sends one NAK PSN Sequence Error carrying the expected PSN per gap and accepts the resend "
     "(IBTA Vol.1 ch. 9: ledger ib-nak-once, ib-nak-psn)"},
    {"fault-icrc", "one packet with a wrong ICRC: dropped silently, recovered by the requester's timer", QpType::rc, 100, 1,
     "a packet whose ICRC is wrong is dropped without any answer (IBTA Vol.1 §7.8: ledger ib-icrc-drop)", {"roce.icrc"}},
    {"fault-bad-rkey", "RDMA WRITE with an R_Key the responder does not know: NAK Remote Access Error", QpType::rc, 64, 1,
     "an invalid R_Key draws NAK Remote Access Error and the responder's QP goes to error (IBTA Vol.1 ch. 9: ledger ib-rkey-nak)"},
    {"fault-oversize", "a packet longer than the path MTU: NAK Invalid Request", QpType::rc, 1024, 1,
     "a payload beyond the path MTU is an invalid request (IBTA Vol.1 ch. 9: ledger ib-length-nak)", {"ib.payload.pmtu", "ib.reth.dma_length"}},
    {"fault-wrong-pad", "a pad count one more than the pad: the WRITE's length disagrees, NAK Invalid Request", QpType::rc,
     30, 1, "the packet's length must equal what the RETH announced (IBTA Vol.1 ch. 9: ledger ib-length-nak)", {"ib.reth.dma_length"}},
    {"fault-no-receive", "SEND with no receive posted: RNR NAKs until the retry count runs out", QpType::rc, 64, 1,
     "a responder with no receive posted answers RNR NAK and executes nothing (IBTA Vol.1 ch. 9: ledger ib-rnr-nak)"},
    {"fault-duplicate", "RC RDMA WRITEs, the third request packet sent twice: acknowledged again, placed once", QpType::rc,
     1024, 8, "a duplicate request is answered again, not executed again: a WRITE is acknowledged (IBTA Vol.1 ch. 9, C9-105: "
     "ledger ib-duplicate)"},
    {"fault-duplicate-send", "RC SENDs, the third sent twice: acknowledged again, delivered once", QpType::rc, 1024, 8,
     "a duplicate SEND is acknowledged again and consumes no second receive (IBTA Vol.1 ch. 9, C9-105: ledger ib-duplicate)"},
    {"fault-duplicate-read", "RC RDMA READs, the third request sent twice: the responder answers it again", QpType::rc, 1024, 8,
     "a duplicate READ request is served again from memory (IBTA Vol.1 ch. 9: ledger ib-duplicate)"},
    {"fault-duplicate-atomic", "RC Fetch and Adds, the third sent twice: the saved original comes back, nothing is added twice",
     QpType::rc, 8, 8,
     "a duplicate Atomic is answered with the result saved from its first execution and not executed again (IBTA Vol.1 "
     "ch. 9: ledger ib-duplicate)"},
    {"fault-pkey", "one packet naming P_Key 0x8001: dropped silently, recovered by the requester's timer", QpType::rc, 100, 1,
     "a packet whose P_Key is not of the QP's partition is dropped without any answer (IBTA Vol.1 ch. 10: ledger "
     "ib-pkey-check)", {"ib.qp.pkey"}},
    {"fault-qp-type", "one RC WRITE sent with the UC opcode: dropped silently, recovered by the requester's timer", QpType::rc,
     100, 1,
     "a packet whose opcode belongs to another transport service than the destination QP's is dropped without any answer "
     "(IBTA Vol.1 ch. 9: ledger ib-qp-type)", {"ib.qp.transport"}},
    {"fault-opseq", "two RDMA WRITEs, the second sent as a Middle with no First before it: NAK Invalid Request", QpType::rc,
     1024, 2,
     "an opcode out of sequence draws NAK Invalid Request and the responder's QP goes to error (IBTA Vol.1 ch. 9: ledger "
     "ib-opseq-nak)", {"ib.opseq"}},
    {"fault-opseq-uc", "UC RDMA WRITEs, the first sent as a Middle: that one is dropped, the rest land", QpType::uc, 1024, 4,
     "an unreliable responder drops a message whose opcode is out of sequence and takes the next First (IBTA Vol.1 ch. 9: "
     "ledger ib-opseq-nak, ib-uc-data)", {"ib.opseq"}},
    {"fault-zero-length-rkey", "a zero-length RDMA WRITE and READ naming an R_Key that does not exist: both acknowledged",
     QpType::rc, 64, 1,
     "a zero-length RDMA WRITE or READ is not checked for its R_Key or address (IBTA Vol.1 ch. 9, C9-88: ledger "
     "ib-zero-length-rkey)"},
    {"fault-qkey", "UD SENDs, the second with a Q_Key that is not the responder's: that one is dropped", QpType::ud, 1024, 8,
     "a UD datagram whose Q_Key is not the destination QP's is dropped (IBTA Vol.1 ch. 10: ledger ib-qkey-check)"},
};

}  // namespace

const std::vector<ScenarioInfo>& scenarios() { return kScenarios; }

const ScenarioInfo* find_scenario(std::string_view name) {
  for (const auto& s : kScenarios)
    if (s.name == name) return &s;
  return nullptr;
}

void plant_fault(std::string_view name, eng::QpConfig& cfg) {
  if (name == "fault-psn-gap") cfg.faults.skip_packet = 2;
  if (name == "fault-icrc") cfg.faults.corrupt_icrc = 1;
  if (name == "fault-oversize") cfg.faults.oversize_packet = 1;
  if (name == "fault-wrong-pad") cfg.faults.wrong_pad = 1;
  if (name == "fault-no-receive") cfg.rnr_retry = 2;
  if (name.starts_with("fault-duplicate")) cfg.faults.duplicate_packet = 3;
  if (name == "fault-pkey") cfg.faults.foreign_pkey = 1;
  if (name == "fault-qp-type") cfg.faults.foreign_transport = 1;
  if (name == "fault-opseq") cfg.faults.out_of_sequence = 2;
  if (name == "fault-opseq-uc") cfg.faults.out_of_sequence = 1;
}

std::optional<engine::WcStatus> fatal_completion(std::string_view name) {
  if (name == "fault-bad-rkey") return WcStatus::remote_access_error;
  if (name == "fault-no-receive") return WcStatus::rnr_retry_exceeded;
  if (name == "fault-oversize" || name == "fault-wrong-pad" || name == "fault-opseq") return WcStatus::remote_invalid_request;
  return std::nullopt;
}

json counters_json(const eng::Counters& c, const eng::UdpLink& link) {
  return {{"kernel_dropped_datagrams", link.kernel_drops()},
          {"packets_sent", c.packets_sent},       {"packets_received", c.packets_received},
          {"dropped_icrc", c.dropped_icrc},       {"dropped_header", c.dropped_header},
          {"dropped_sequence", c.dropped_sequence}, {"dropped_uc_ud", c.dropped_uc_ud},
          {"duplicates", c.duplicates},           {"retransmitted", c.retransmitted},
          {"timeouts", c.timeouts},               {"acks_sent", c.acks_sent},
          {"naks_sent", c.naks_sent},             {"rnr_naks_sent", c.rnr_naks_sent},
          {"naks_received", c.naks_received},     {"rnr_naks_received", c.rnr_naks_received},
          {"atomic_replays", c.atomic_replays},   {"atomic_replays_differing", c.atomic_replays_differing}};
}

json refusals_json(const eng::QueuePair& qp) {
  json v = json::array();
  for (const auto& f : qp.refusals()) {
    if (v.size() >= 32) break;
    v.push_back({{"what", f.what}, {"why", f.why}, {"psn", f.psn}});
  }
  return v;
}

json RunResult::to_json() const {
  json j = {{"scenario", scenario}, {"transport", "roce"}, {"verdict", ok ? "PASS" : "FAIL"}, {"message", message},
            {"size", size},         {"iterations", iterations}, {"bytes", bytes}, {"seconds", seconds},
            {"counters", counters}, {"peer", peer}};
  if (seconds > 0 && iterations > 0) {
    j["messages_per_s"] = static_cast<double>(iterations) / seconds;
    j["gbit_per_s"] = static_cast<double>(bytes) * 8 / seconds / 1e9;
  }
  return j;
}

}  // namespace rdmaconf::interop::ib
