#!/usr/bin/env bash
# `make test`: every test, arranged for the CI budget on a 2-core machine.
#   first: start the background build, then install the venv and the RocketMQ distribution (`make install
#               prepare-rocketmq`) beside it
#   background: build the cluster parts (Go builds of the control plane and the node, Debian bases, images, the
#               nodes' image seed; a no-op when warm, an image rebuild when the sources changed)
#   stage 1, foreground: the tests that need no cluster (unit, integration on real RocketMQ processes, spark;
#               two pytest workers). It leaves about a fifth of the two cores idle (its tests wait on JVMs,
#               elections and timeouts: sampled 75-80% busy), so the JVM-free steps run beside it: lint, format,
#               typecheck and the import layers, then (once the build has the control plane) the tests on the real
#               API server (marker k8s; no JVM) and the alert tests (promtool is fetched meanwhile when cold).
#   stage 2, once the build is done: the e2e tests on the real three-node cluster (k8s/cluster.py: each node a
#               network namespace, NetworkPolicies enforced; ROCKETMQ_OPERATOR_E2E_NODES=1 for the one-node
#               cluster of k8s/node.py) in the foreground: first the node faults alone (marker node_fault), then
#               the rest on two workers, each group's tests on one (the xdist_group marks). Beside the node faults,
#               one after the other: the chaos campaign (marker chaos: nine JVMs under faults, in cgroups of their
#               own: its iptables rules match only its own processes) and the integration files of BESIDE_E2E
#               (moved out of stage 1). The two e2e workers keep both cores busy (sampled 95-100%): nothing is put
#               beside them on purpose.
# The JVM-heavy lines never run three at a time: the e2e tests beside the two integration workers ran at load
# average 50 on two cores, where broker pods missed their probes, restarted and re-elected for an hour (a CI run
# of 86 min with 4 e2e failures).
# The exit status is non-zero if any step failed; every step runs even when an earlier one failed.
# Usage: scripts/run-tests.sh [MAKE] [extra pytest args...]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
MAKE_CMD=${1:-make}
shift || true
PYTEST=(.venv/bin/python -m pytest -q -p no:cacheprovider --durations=40 "$@")
work=$(mktemp -d "${TMPDIR:-/tmp}/rocketmq-operator-test.XXXXXX")
build_log=$work/prepare-cluster.log
side_line=""
stage1_line=""
e2e_state=""

stamp() { date -u +%H:%M:%S; }

# One step of a line beside the foreground: its log, exit status and times are kept and printed at the end.
step() {
    local name=$1
    shift
    local status=0
    stamp >"$work/side-$name.start"
    "$@" >"$work/side-$name.log" 2>&1 || status=$?
    echo "$status" >"$work/side-$name.rc"
    stamp >"$work/side-$name.end"
}

(
    if "$MAKE_CMD" --no-print-directory prepare-cluster >"$build_log" 2>&1; then
        # The nodes' image seed too (32-55 s of import when an image changed), here beside stage 1 rather than on
        # the critical path when the nodes come up. It needs the venv, which the foreground installs meanwhile.
        while [ ! -e "$work/venv-ready" ]; do sleep 1; done
        .venv/bin/python tests/e2e/shared_node.py seed >"$work/seed.log" 2>&1
        touch "$work/built"
        # Only the chart's alert tests need promtool (their fixture waits for this build's lock): fetched from
        # Debian's prometheus package after the parts the node needs (seconds; its Go build took 1,024 s beside the
        # e2e tests of a cold run). A no-op when warm.
        "$MAKE_CMD" --no-print-directory k8s-promtool >"$work/promtool.log" 2>&1
    else
        touch "$work/build-failed"
    fi
) &
background=$!

# Every descendant of a process, deepest first: a signal to the direct children only left a make's go build (and
# a pytest's JVMs) running when this script was stopped from outside, not by Ctrl-C to the whole process group.
# shellcheck disable=SC2317  # invoked by the trap below
descendants() {
    local child
    for child in $(pgrep -P "$1" 2>/dev/null); do
        descendants "$child"
        echo "$child"
    done
}

# shellcheck disable=SC2317  # invoked by the trap below
stop_tree() {
    local signal=$1 pid=$2
    # shellcheck disable=SC2046  # one PID per word
    kill "-$signal" $(descendants "$pid") 2>/dev/null
}

# shellcheck disable=SC2317  # invoked by the trap below
on_interrupt() {
    trap - INT TERM
    if [ -n "${e2e_state:-}" ] && [ -d "$e2e_state" ]; then
        .venv/bin/python tests/e2e/shared_node.py down "$e2e_state" "$work/e2e-diagnostics" >/dev/null 2>&1
        echo "interrupted: stopped the e2e node (diagnostics: $work/e2e-diagnostics)" >&2
    fi
    for line in "${stage1_line:-}" "${side_line:-}"; do
        if [ -n "$line" ] && kill -0 "$line" 2>/dev/null; then
            stop_tree INT "$line"
            wait "$line" 2>/dev/null
            echo "interrupted: stopped the steps beside the tests (their logs: $work/side-*.log)" >&2
        fi
    done
    if kill -0 "$background" 2>/dev/null; then
        stop_tree TERM "$background"
        kill -TERM "$background" 2>/dev/null
        wait "$background" 2>/dev/null
        echo "interrupted: stopped the background build of the cluster parts (its log: $build_log)" >&2
    else
        echo "interrupted; nothing is left running (logs in $work)" >&2
    fi
    exit 130
}
trap on_interrupt INT TERM
echo "== $(stamp) background: build the cluster parts (log: $build_log)"
# Beside the build (which uses neither): the venv and the RocketMQ distribution the tests need.
if ! "$MAKE_CMD" --no-print-directory install prepare-rocketmq; then
    echo "error: installing the Python side or the RocketMQ distribution failed (above); fix it and run make test again" >&2
    pkill -TERM -P "$background" 2>/dev/null
    kill -TERM "$background" 2>/dev/null
    wait "$background" 2>/dev/null
    exit 1
fi
touch "$work/venv-ready"
# The project's own byte-code, written now: where PYTHONDONTWRITEBYTECODE is set (this machine sets it) every
# process the tests start (CLI calls, supervisors, tools) would otherwise compile every module it imports (measured:
# 0.14 s of CPU per process for the CLI's and the supervisor's imports). Up-to-date files are skipped.
.venv/bin/python -m compileall -q -j 2 operator/rocketmq_operator >/dev/null
echo "== $(stamp) stage 1: tests that need no cluster; beside them: lint and typecheck, then the tests on the real" \
    "API server once the build has its binaries (logs: $work/side-*.log)"

# Integration files run beside the e2e tests instead of in stage 1 (each starts its own local clusters; about
# 2-2.5 min each alone, docs/testing.md). Their marker filter is stage 1's: nothing runs twice, nothing is left out.
# Not the roll and scale files too (tried 2026-11-28 08:59-09:34: stage 1 took 1 min 40 s less, the e2e tests
# beside them 3 min more, each slower under the load, and the whole run 2 min more).
# Not the proxy file (its roll test, about 4 min): beside the e2e tests it cut stage 1 by 40 s but slowed the e2e
# proxy and image-roll tests by about 2 min each (the whole run 28 min 5 s against 26 min 1 s, 2026-11-29).
BESIDE_E2E=(tests/integration/test_quorum_real.py tests/integration/test_tls_real.py)
NO_CLUSTER=(-m "not k8s and not e2e and not chaos")
ALERTS=tests/k8s/test_chart_alerts.py  # the API-server tests that need promtool

# pytest workers of stage 1 and of the second e2e phase (overridable to measure another arrangement).
STAGE1_WORKERS=${ROCKETMQ_OPERATOR_STAGE1_WORKERS:-2}
E2E_WORKERS=${ROCKETMQ_OPERATOR_E2E_WORKERS:-2}

# Beside stage 1, one after the other: the JVM-free steps (beside the saturated e2e workers they cost those tests
# about as much CPU as they used; here they use what stage 1 leaves idle).
(
    step lint "$MAKE_CMD" --no-print-directory lint typecheck
    # The control plane's binaries come with the build (a no-op when warm); a failed build is reported by the
    # foreground, which stops this line.
    while [ ! -e "$work/built" ] && [ ! -e "$work/build-failed" ]; do sleep 2; done
    [ -e "$work/built" ] || exit 0
    step k8s "${PYTEST[@]}" -m k8s --ignore "$ALERTS" tests
    # Last: promtool, which only these tests use, is fetched after the node's parts when cold; their fixture waits
    # on the build lock.
    step alerts "${PYTEST[@]}" -m k8s "$ALERTS"
) &
stage1_line=$!

rc=0
# Two workers, whole files each (a file's tests share its local cluster), the longest files first (tests/conftest.py,
# LONGEST_FILES_FIRST; xdist's own order put them last): the integration files mostly wait on
# JVMs, elections and timeouts, so two at a time nearly halve the wall time on two cores.
ignore=()
for path in "${BESIDE_E2E[@]}"; do ignore+=(--ignore "$path"); done
"${PYTEST[@]}" -n "$STAGE1_WORKERS" --dist loadfile --no-loadscope-reorder "${NO_CLUSTER[@]}" "${ignore[@]}" tests || rc=$?

echo "== $(stamp) waiting for the cluster parts to be built"
while [ ! -e "$work/built" ] && [ ! -e "$work/build-failed" ]; do
    sleep 5
done
if [ -e "$work/build-failed" ]; then
    wait "$background"
    wait "$stage1_line" 2>/dev/null  # lint, which needs no build (its steps waiting for the build end at once)
    tail -n 40 "$build_log" >&2
    echo "error: building the cluster parts failed (full log: $build_log); fix it and run make test again" >&2
    exit 1
fi
grep -E '^(built|base image|k8s tools ready|.* up to date)' "$build_log" || true

# Beside the node faults (one e2e test at a time), one after the other: the JVM-heavy steps.
(
    step chaos "${PYTEST[@]}" -m chaos tests
    step integration "${PYTEST[@]}" "${NO_CLUSTER[@]}" "${BESIDE_E2E[@]}"
) &
side_line=$!

echo "== $(stamp) stage 2: e2e tests on the real cluster (tests/e2e, three nodes); beside them: the chaos campaign," \
    "then ${BESIDE_E2E[*]} (logs: $work/side-*.log)"
# The node is brought up by tests/e2e/shared_node.py (images, the chart's operator) while the steps beside start.
# First the node faults (marker node_fault: a node powered off, drained, its kubelet stopped), alone, since every
# pod on that node is hit; then the other e2e tests on two workers sharing the cluster (`--dist loadgroup`: the
# tests of one group on one worker, in file order; the xdist_group marks in tests/e2e): the first quickstart's
# failovers, fences and spec changes on one, the second quickstart's Spark jobs and image roll (namespace
# rocketmq-b) and the auth and TLS examples on the other. The e2e line was the critical path of stage 2 (22 min
# of one test at a time, about 20% of the CPU idle). Two workers beside the chaos campaign ran at load average 38
# (2026-11-27 08:58-09:09, one quickstart): the campaign now runs beside the node faults instead.
e2e_state=$work/e2e-node
# Every wait of the e2e tests and every `kubectl rocketmq` call, one line each (tests/e2e/timeline.py); the longest
# are printed at the end: where the e2e line's time went.
export ROCKETMQ_OPERATOR_E2E_TIMELINE=$work/e2e-timeline.log
if .venv/bin/python tests/e2e/shared_node.py up "$e2e_state" >"$work/e2e-node.log" 2>&1; then
    echo "== $(stamp) $(tail -n 1 "$work/e2e-node.log"), the operator installed"
    ROCKETMQ_OPERATOR_E2E_NODE=$e2e_state "${PYTEST[@]}" -m "e2e and node_fault" tests || rc=$?
    echo "== $(stamp) e2e node faults done; the other e2e tests on two workers"
    ROCKETMQ_OPERATOR_E2E_NODE=$e2e_state "${PYTEST[@]}" -n "$E2E_WORKERS" --dist loadgroup -m "e2e and not node_fault and not soak" tests \
        || rc=$?
    # Exit 1 when the chart's RBAC refused the operator anything meanwhile (the API server's audit log).
    .venv/bin/python tests/e2e/shared_node.py down "$e2e_state" "$work/e2e-diagnostics" || rc=$?
else
    cat "$work/e2e-node.log"
    echo "== $(stamp) no shared node (above): the e2e tests run in one process, which starts its own node"
    e2e_state=""
    "${PYTEST[@]}" -m "e2e and not soak" tests || rc=$?
fi
e2e_state=""
echo "== $(stamp) e2e tests done; waiting for the steps beside them"
wait "$side_line"
side_line=""
wait "$stage1_line"
stage1_line=""
for name in lint k8s alerts chaos integration; do
    case $name in
    k8s) title="the tests on the real API server (tests/k8s, kubectl, helm)" ;;
    chaos) title="the chaos campaign (marker chaos)" ;;
    lint) title="lint, format, typecheck, import layers" ;;
    integration) title="${BESIDE_E2E[*]}" ;;
    alerts) title="the chart's alerts through promtool ($ALERTS)" ;;
    esac
    echo "== $title, $(cat "$work/side-$name.start" 2>/dev/null)-$(cat "$work/side-$name.end" 2>/dev/null)" \
        "beside the foreground (log: $work/side-$name.log)"
    cat "$work/side-$name.log" 2>/dev/null
    step_rc=$(cat "$work/side-$name.rc" 2>/dev/null || echo 1)
    [ "$step_rc" = 0 ] || rc=$step_rc
done
if [ -s "$work/e2e-timeline.log" ]; then
    echo "== the e2e tests' longest waits and kubectl rocketmq calls (all: $work/e2e-timeline.log)"
    sort -k2 -n -r "$work/e2e-timeline.log" | head -n 30
fi
wait "$background" 2>/dev/null  # promtool's build (done by now: the alert tests waited for it)
echo "== $(stamp) done (exit $rc)"
exit "$rc"
