#!/usr/bin/env bash
# `make test`, after lint, typecheck and the RocketMQ distribution: every test, arranged to fit the CI budget
# on a 2-core machine.
#   background: build the cluster parts (Go builds of the control plane and the node, Debian bases, images; a
#               no-op when warm, an image rebuild when the sources changed)
#   foreground, one line of JVMs at a time:
#     1. the tests that need no cluster (unit, integration on real RocketMQ processes, spark; two pytest workers)
#     2. once the build is done, beside line 1, the tests on the real API server (marker k8s: tests/k8s,
#        kubectl, helm; no JVM)
#     3. the e2e tests on the real one-node cluster (marker e2e)
#     4. the chaos campaign (marker chaos: nine JVMs under faults)
# The JVM-heavy lines do not overlap: the e2e tests beside the integration workers ran at load average 50 on
# two cores, where broker pods missed their probes, restarted and re-elected for an hour (a CI run of 86 min
# with 4 e2e failures); one at a time they each take minutes.
# The exit status is non-zero if any step failed; every step runs even when an earlier one failed.
# Usage: scripts/run-tests.sh [MAKE] [extra pytest args...]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
MAKE_CMD=${1:-make}
shift || true
PYTEST=(.venv/bin/python -m pytest -q -p no:cacheprovider --durations=12 "$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/rocketmq-operator-test.XXXXXX")
build_log=$work/prepare-cluster.log
k8s_log=$work/k8s-tests.log
k8s_line=""

(
    if "$MAKE_CMD" --no-print-directory prepare-cluster >"$build_log" 2>&1; then
        touch "$work/built"
    else
        touch "$work/build-failed"
    fi
) &
background=$!

# shellcheck disable=SC2317  # invoked by the trap below
on_interrupt() {
    trap - INT TERM
    if [ -n "${k8s_line:-}" ] && kill -0 "$k8s_line" 2>/dev/null; then
        pkill -INT -P "$k8s_line" 2>/dev/null
        wait "$k8s_line" 2>/dev/null
        echo "interrupted: stopped the tests on the real API server (their log: $k8s_log)" >&2
    fi
    if kill -0 "$background" 2>/dev/null; then
        pkill -TERM -P "$background" 2>/dev/null
        kill -TERM "$background" 2>/dev/null
        wait "$background" 2>/dev/null
        echo "interrupted: stopped the background build of the cluster parts (its log: $build_log)" >&2
    else
        echo "interrupted; nothing is left running (logs in $work)" >&2
    fi
    exit 130
}
trap on_interrupt INT TERM
echo "== background: build the cluster parts (log: $build_log)"
echo "== foreground: tests that need no cluster"

# The tests on the real API server (an apiserver, etcd and a controller-manager: no JVM) start as soon as the
# build is done, beside the line below (warm: at once), instead of after it.
(
    while [ ! -e "$work/built" ] && [ ! -e "$work/build-failed" ]; do
        sleep 2
    done
    if [ -e "$work/built" ]; then
        k8s_rc=0
        "${PYTEST[@]}" -m k8s tests >"$k8s_log" 2>&1 || k8s_rc=$?
        echo "$k8s_rc" >"$work/k8s.rc"
    fi
) &
k8s_line=$!

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
echo "== tests on the real API server (tests/k8s, kubectl, helm), run beside the line above (log: $k8s_log)"
wait "$k8s_line"
cat "$k8s_log"
k8s_rc=$(cat "$work/k8s.rc" 2>/dev/null || echo 1)
[ "$k8s_rc" = 0 ] || rc=$k8s_rc

echo "== foreground: e2e tests on the real one-node cluster (tests/e2e)"
"${PYTEST[@]}" -m e2e tests || rc=$?
echo "== foreground: the chaos campaign (marker chaos)"
"${PYTEST[@]}" -m chaos tests || rc=$?
exit "$rc"
