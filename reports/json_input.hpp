#pragma once
// The JSON the report commands are handed (check and lab reports, shards,
// history records, coverage files, manifests) comes from wherever a user
// found it, so its nesting is bounded before anything walks it: copying,
// dumping and destroying a value recurse once per level, and a document
// nested 100 000 deep would overflow the stack. No report this tool writes
// nests deeper than a dozen levels.
#include <string>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/compare.hpp"

namespace rdmaconf::reports {

inline constexpr int kMaxJsonDepth = 200;

// nlohmann::json::parse(in, keep, false): a discarded value when `in` is not
// JSON, ReportError ("NAME: nested deeper than 200 levels") when it nests
// deeper than kMaxJsonDepth. `keep`, when given, decides as parse's callback does.
template <class Input>
nlohmann::json parse_input_json(Input&& in, const std::string& name, const nlohmann::json::parser_callback_t& keep = nullptr) {
  const nlohmann::json::parser_callback_t bounded = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
    if ((ev == nlohmann::json::parse_event_t::object_start || ev == nlohmann::json::parse_event_t::array_start) &&
        depth > kMaxJsonDepth)
      throw ReportError(fmt::format("{}: nested deeper than {} levels", name, kMaxJsonDepth));
    return keep ? keep(depth, ev, parsed) : true;
  };
  return nlohmann::json::parse(std::forward<Input>(in), bounded, false);
}

}  // namespace rdmaconf::reports
