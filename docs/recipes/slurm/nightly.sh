#!/bin/sh
# A nightly rdmaconf run on a Slurm cluster: an array of SHARDS check tasks
# over CAPTURES, then one merge job that waits for all of them.
#   nightly.sh CAPTURES RUN_DIR [SHARDS]
# CAPTURES and RUN_DIR must be on storage every node sees. RUN_DIR keeps
# last-night.json and history/ between nights; each night's shards are
# cleared first. Prints the array's and the merge's job IDs.
# Environment: RDMACONF (the command on the nodes, default rdmaconf),
# SBATCH_PARTITION and the other SBATCH_* variables sbatch reads.
set -eu
[ $# -ge 2 ] || { echo "usage: nightly.sh CAPTURES RUN_DIR [SHARDS]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
CAPTURES=$(cd "$1" && pwd) RUN_DIR=$(mkdir -p "$2" && cd "$2" && pwd)
shards=${3:-8}
export CAPTURES RUN_DIR
rm -rf "$RUN_DIR/shards"
mkdir -p "$RUN_DIR/shards"
array=$(sbatch --parsable --chdir="$RUN_DIR" --array="0-$((shards - 1))" "$here/shard.sbatch")
merge=$(sbatch --parsable --chdir="$RUN_DIR" --dependency="afterok:$array" --kill-on-invalid-dep=yes "$here/merge.sbatch")
echo "array $array ($shards shards), merge $merge"
