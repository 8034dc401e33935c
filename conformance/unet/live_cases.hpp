#pragma once
// The U-Net live cases (`rdmaconf unet live`): what two U-Net nodes must do
// with real traffic between them, and under fault injection, by the
// protection rules of docs/unet.md.
#include <string_view>
#include <vector>

#include "conformance/case.hpp"

namespace rdmaconf::conformance::unet {

inline constexpr std::string_view kLiveFamily = "unet";

namespace live {
inline constexpr std::string_view data = "unet.live.data";
inline constexpr std::string_view spoof = "unet.live.spoof";
inline constexpr std::string_view unknown_tag = "unet.live.unknown_tag";
inline constexpr std::string_view channel = "unet.live.channel";
inline constexpr std::string_view oversize = "unet.live.oversize";
inline constexpr std::string_view no_free = "unet.live.no_free";
inline constexpr std::string_view teardown = "unet.live.teardown";
inline constexpr std::string_view kernel = "unet.live.kernel";
}  // namespace live

// Every live case, in catalog order.
const std::vector<const CaseInfo*>& live_cases();

}  // namespace rdmaconf::conformance::unet
