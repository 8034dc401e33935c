#pragma once
// The Fast UDP plug-in conformance cases (`rdmaconf nic check`): what a NIC
// plug-in must do under the shim contract (rdmaconf/fastudp_shim.h,
// docs/fastudp.md) and the UDP rules it offloads.
#include <string_view>
#include <vector>

#include "conformance/case.hpp"

namespace rdmaconf::conformance::fastudp {

inline constexpr std::string_view kFamily = "fastudp";

// The case IDs, for the judge.
namespace nic {
inline constexpr std::string_view match = "fastudp.nic.match";
inline constexpr std::string_view oldest = "fastudp.nic.match.oldest";
inline constexpr std::string_view payload = "fastudp.nic.payload";
inline constexpr std::string_view splinter = "fastudp.nic.splinter";
inline constexpr std::string_view slow_path = "fastudp.nic.slow_path";
inline constexpr std::string_view fragment = "fastudp.nic.fragment";
inline constexpr std::string_view memory = "fastudp.nic.memory";
inline constexpr std::string_view truncation = "fastudp.nic.truncation";
inline constexpr std::string_view csum_bad = "fastudp.nic.csum.bad";
inline constexpr std::string_view csum_zero4 = "fastudp.nic.csum.zero_ipv4";
inline constexpr std::string_view csum_zero6 = "fastudp.nic.csum.zero_ipv6";
inline constexpr std::string_view length = "fastudp.nic.length";
inline constexpr std::string_view tx_csum = "fastudp.nic.tx.csum";
inline constexpr std::string_view tx_ones = "fastudp.nic.tx.csum_ones";
inline constexpr std::string_view irq = "fastudp.nic.irq";
inline constexpr std::string_view ring_order = "fastudp.nic.ring.order";
inline constexpr std::string_view ring_full = "fastudp.nic.ring.full";
inline constexpr std::string_view shim = "fastudp.nic.shim";
inline constexpr std::string_view tx_done = "fastudp.nic.tx.done";
inline constexpr std::string_view flags = "fastudp.nic.flags";
inline constexpr std::string_view counters = "fastudp.nic.counters";
inline constexpr std::string_view rx_cancel = "fastudp.nic.rx_cancel";
inline constexpr std::string_view ctrl = "fastudp.nic.ctrl";
inline constexpr std::string_view posted_min = "fastudp.nic.posted_min";
inline constexpr std::string_view mmio = "fastudp.nic.mmio";
}  // namespace nic

// Every case, in catalog order.
const std::vector<const CaseInfo*>& nic_cases();
const CaseInfo* nic_case(std::string_view id);

}  // namespace rdmaconf::conformance::fastudp
