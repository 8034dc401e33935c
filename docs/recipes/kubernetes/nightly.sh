#!/bin/sh
# A nightly rdmaconf run on Kubernetes, from this folder's manifests: the
# volumes, the Indexed check Job, then the merge Job once every shard is
# done. Run it from a CronJob with kubectl, or from any scheduler.
#   nightly.sh [NAMESPACE]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ns=${1:-default}
kubectl -n "$ns" apply -f "$here/storage.yaml"
kubectl -n "$ns" delete job rdmaconf-check rdmaconf-merge --ignore-not-found
kubectl -n "$ns" apply -f "$here/check-job.yaml"
kubectl -n "$ns" wait --for=condition=complete --timeout=4h job/rdmaconf-check
kubectl -n "$ns" apply -f "$here/merge-job.yaml"
rc=0
kubectl -n "$ns" wait --for=condition=complete --timeout=30m job/rdmaconf-merge || rc=1
kubectl -n "$ns" logs job/rdmaconf-merge
exit "$rc"
