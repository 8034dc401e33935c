#include "reports/shard.hpp"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include <fmt/format.h>

namespace rdmaconf::reports {

namespace {

std::optional<std::uint64_t> number(std::string_view s) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoull(std::string(s));
}

constexpr std::uint64_t kMaxShards = 65536;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

}  // namespace

std::optional<Shard> shard_from(std::string_view flag, std::string& err) {
  std::string index, count, source;
  if (!flag.empty()) {
    const auto slash = flag.find('/');
    index = std::string(flag.substr(0, slash));
    count = slash == std::string_view::npos ? "" : std::string(flag.substr(slash + 1));
    source = "--shard";
  } else if (env("TEST_SHARD_INDEX") && env("TEST_TOTAL_SHARDS")) {
    index = env("TEST_SHARD_INDEX"), count = env("TEST_TOTAL_SHARDS"), source = "TEST_SHARD_INDEX/TEST_TOTAL_SHARDS";
  } else if (env("JOB_COMPLETION_INDEX")) {
    index = env("JOB_COMPLETION_INDEX"), count = env("RDMACONF_SHARDS") ? env("RDMACONF_SHARDS") : "";
    source = "JOB_COMPLETION_INDEX/RDMACONF_SHARDS";
  } else if (env("SLURM_ARRAY_TASK_ID") && env("SLURM_ARRAY_TASK_COUNT")) {
    const auto id = number(env("SLURM_ARRAY_TASK_ID")), min = number(env("SLURM_ARRAY_TASK_MIN") ? env("SLURM_ARRAY_TASK_MIN") : "0");
    index = id && min && *id >= *min ? std::to_string(*id - *min) : env("SLURM_ARRAY_TASK_ID");
    count = env("SLURM_ARRAY_TASK_COUNT");
    source = "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT";
  } else if (env("CI_NODE_INDEX") && env("CI_NODE_TOTAL")) {
    // GitLab CI's `parallel: N` numbers its jobs from 1.
    const auto id = number(env("CI_NODE_INDEX"));
    if (id && *id == 0) {
      err = "CI_NODE_INDEX/CI_NODE_TOTAL: CI_NODE_INDEX counts from 1 (GitLab's parallel jobs), got 0";
      return std::nullopt;
    }
    index = id ? std::to_string(*id - 1) : env("CI_NODE_INDEX");
    count = env("CI_NODE_TOTAL");
    source = "CI_NODE_INDEX/CI_NODE_TOTAL";
  } else {
    return std::nullopt;
  }
  const auto i = number(index), n = number(count);
  if (!i || !n || *n == 0 || *i >= *n || *n > kMaxShards) {
    err = fmt::format("{}: expected a shard I of N with 0 <= I < N <= {}, got \"{}/{}\"", source, kMaxShards, index, count);
    return std::nullopt;
  }
  return Shard{*i, *n};
}

std::vector<std::size_t> shard_items(const std::vector<std::uint64_t>& weights, const std::vector<std::string>& names,
                                     const Shard& s) {
  std::vector<std::size_t> order(weights.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return weights[a] != weights[b] ? weights[a] > weights[b] : names[a] < names[b];
  });
  std::vector<std::uint64_t> load(s.count, 0);
  std::vector<std::size_t> mine;
  for (std::size_t k : order) {
    const auto lightest = static_cast<std::uint64_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[lightest] += std::max<std::uint64_t>(weights[k], 1);
    if (lightest == s.index) mine.push_back(k);
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

}  // namespace rdmaconf::reports
