#!/usr/bin/env bash
# A cold `CI=true make test` on this machine, as a fresh machine would run it: a fresh clone of HEAD, and every
# cache the project uses empty (its own cache, the Maven repository, Go's build and module caches, pip's cache,
# buildah's cache mounts, which are moved aside and put back afterwards). Debian's packages stay installed.
# Root (the suite is). Prints the wall time; everything is left under WORK for inspection.
#   scripts/cold-run.sh [WORK]        (default /tmp/rocketmq-operator-cold; it is emptied first)
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/rocketmq-operator-cold}
rm -rf "$work"
mkdir -p "$work"
git clone -q "$repo" "$work/repo"
mounts=/var/tmp/buildah-cache
if [ -d "$mounts" ]; then mv "$mounts" "$mounts.warm"; fi
# shellcheck disable=SC2317  # invoked by the trap below
restore() {
    rm -rf "$mounts"
    if [ -d "$mounts.warm" ]; then mv "$mounts.warm" "$mounts"; fi
}
trap restore EXIT
cd "$work/repo" || exit 1
start=$(date +%s)
echo "cold run of $(git rev-parse HEAD): start $(date -u +%T)"
env ROCKETMQ_OPERATOR_CACHE="$work/cache" ROCKETMQ_OPERATOR_M2_REPO="$work/m2" GOCACHE="$work/gocache" \
    GOMODCACHE="$work/gomod" GOPATH="$work/gopath" PIP_NO_CACHE_DIR=1 CI=true make test
rc=$?
echo "cold rc=$rc wall=$(($(date +%s) - start))s end $(date -u +%T)"
exit "$rc"
