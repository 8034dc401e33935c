#pragma once
// Splitting a run over machines (docs/scale-out.md): shard I of N takes a
// deterministic, balanced share of the items (input files, lab cells), and
// `rdmaconf report merge` puts the shards' reports together again.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rdmaconf::reports {

struct Shard {
  std::uint64_t index = 0, count = 1;  // index in 0..count-1
};

// "I/N" (I from 0), or, when `flag` is empty, the first of these in the
// environment: TEST_SHARD_INDEX with TEST_TOTAL_SHARDS (Bazel and others);
// JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) with RDMACONF_SHARDS (the
// job's completions, which Kubernetes does not pass on); SLURM_ARRAY_TASK_ID
// with SLURM_ARRAY_TASK_COUNT (less SLURM_ARRAY_TASK_MIN). Nothing given:
// nullopt. Something malformed: nullopt and `err` says what.
std::optional<Shard> shard_from(std::string_view flag, std::string& err);

// The items shard `s` takes, as indices into `weights` in ascending order:
// the heaviest item first goes to the lightest shard (ties to the lower
// index), with items ordered by weight, then by `names` (so the split does
// not depend on the order the items were listed in).
std::vector<std::size_t> shard_items(const std::vector<std::uint64_t>& weights, const std::vector<std::string>& names,
                                     const Shard& s);

}  // namespace rdmaconf::reports
