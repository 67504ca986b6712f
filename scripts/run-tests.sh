#!/usr/bin/env bash
# `make test`, after lint, typecheck and the RocketMQ distribution: every test, arranged to fit the CI budget
# on a 2-core machine. Most of the time is waiting (JVMs starting, failovers, pods becoming Ready), so two
# lines of work overlap:
#   background: build the cluster parts (Go builds of the control plane and the node, Debian bases, images; a
#               no-op when warm), then the e2e tests on the real one-node cluster (marker e2e), then the chaos
#               campaign (marker chaos: nine JVMs under faults; beside the e2e pods it starved them into
#               failovers of their own)
#   foreground: the tests that need no cluster (unit, integration on real RocketMQ processes, spark; two pytest
#               workers), then,
#               once the build is done, the tests on the real API server (marker k8s: tests/k8s, kubectl, helm)
# The background's output is printed when it is done. The exit status is non-zero if either line failed.
# Usage: scripts/run-tests.sh [MAKE] [extra pytest args...]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
MAKE_CMD=${1:-make}
shift || true
PYTEST=(.venv/bin/python -m pytest -q -p no:cacheprovider --durations=12 "$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/rocketmq-operator-test.XXXXXX")
build_log=$work/prepare-cluster.log
e2e_log=$work/e2e.log
chaos_log=$work/chaos.log

(
    if "$MAKE_CMD" --no-print-directory prepare-cluster >"$build_log" 2>&1; then
        touch "$work/built"
        "${PYTEST[@]}" -m e2e tests >"$e2e_log" 2>&1
        echo $? >"$work/e2e.rc"
        "${PYTEST[@]}" -m chaos tests >"$chaos_log" 2>&1
        echo $? >"$work/chaos.rc"
    else
        touch "$work/build-failed"
    fi
) &
background=$!

# shellcheck disable=SC2317  # invoked by the trap below
on_interrupt() {
    trap - INT TERM
    if kill -0 "$background" 2>/dev/null; then
        pkill -TERM -P "$background" 2>/dev/null
        kill -TERM "$background" 2>/dev/null
        wait "$background" 2>/dev/null
        echo "interrupted: stopped the background build/e2e line (logs in $work; an e2e node that was up is" \
            "stopped by its test fixture, else run: python3 k8s/node.py down --state-dir <its state dir>)" >&2
    else
        echo "interrupted; nothing is left running (logs in $work)" >&2
    fi
    exit 130
}
trap on_interrupt INT TERM
echo "== background: build the cluster parts, then the e2e tests on the one-node cluster (logs in $work)"
echo "== foreground: tests that need no cluster"

rc=0
# Two workers, whole files each (a file's tests share its local cluster): the integration files mostly wait on
# JVMs, elections and timeouts, so two at a time nearly halve the wall time on two cores.
"${PYTEST[@]}" -n 2 --dist loadfile -m "not k8s and not e2e and not chaos" tests || rc=$?

echo "== waiting for the cluster parts to be built"
while [ ! -e "$work/built" ] && [ ! -e "$work/build-failed" ]; do
    sleep 5
done
if [ -e "$work/build-failed" ]; then
    wait "$background"
    tail -n 40 "$build_log" >&2
    echo "error: building the cluster parts failed (full log: $build_log); fix it and run make test again" >&2
    exit 1
fi
grep -E '^(built|base image|k8s tools ready|.* up to date)' "$build_log" || true
echo "== foreground: tests on the real API server (tests/k8s, kubectl, helm)"
"${PYTEST[@]}" -m k8s tests || rc=$?

echo "== waiting for the e2e tests on the one-node cluster, then the chaos campaign"
wait "$background"
echo "== e2e tests (tests/e2e), as they ran in the background:"
cat "$e2e_log"
e2e_rc=$(cat "$work/e2e.rc" 2>/dev/null || echo 1)
[ "$e2e_rc" = 0 ] || rc=$e2e_rc
echo "== the chaos campaign (marker chaos), as it ran in the background after the e2e tests:"
cat "$chaos_log" 2>/dev/null
chaos_rc=$(cat "$work/chaos.rc" 2>/dev/null || echo 1)
[ "$chaos_rc" = 0 ] || rc=$chaos_rc
exit "$rc"
