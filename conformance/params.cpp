#include "conformance/params.hpp"

#include <algorithm>

namespace rdmaconf::conformance {

std::string params_text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

Params& Params::set_json(std::string key, std::string json) {
  for (auto& [k, v] : members_)
    if (k == key) {
      v = std::move(json);
      return *this;
    }
  members_.emplace_back(std::move(key), std::move(json));
  return *this;
}

std::string Params::text() const {
  std::vector<const std::pair<std::string, std::string>*> sorted;
  sorted.reserve(members_.size());
  std::size_t size = 2;
  for (const auto& m : members_) {
    sorted.push_back(&m);
    size += m.first.size() + m.second.size() + 4;
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  std::string out;
  out.reserve(size);
  out += '{';
  for (const auto* m : sorted) {
    if (out.size() > 1) out += ',';
    out += '"';
    out += m->first;
    out += "\":";
    out += m->second;
  }
  out += '}';
  return out;
}

std::string json_array(const std::vector<std::string>& elements) {
  std::string out = "[";
  for (const auto& e : elements) {
    if (out.size() > 1) out += ',';
    out += e;
  }
  out += ']';
  return out;
}

}  // namespace rdmaconf::conformance
