#!/usr/bin/env python3
"""One node for a whole e2e run (scripts/run-tests.sh), whichever pytest processes share it: brought up with the
images and the chart's operator before the tests, stopped after them with their diagnostics saved.

    shared_node.py seed                      # the nodes' image seed made ahead of `up` (beside other tests)
    shared_node.py up STATE_DIR              # exit 0: the node runs; else one line on stderr saying what is missing
    shared_node.py down STATE_DIR DIAG_DIR   # diagnostics saved under DIAG_DIR, the node stopped; exit 1 when
                                             # the chart's RBAC refused the operator any request meanwhile

The tests find it through $ROCKETMQ_OPERATOR_E2E_NODE (e2e_node.SHARED_NODE_ENV). When `up` fails, the run falls
back to one pytest process whose fixture starts its own node and reports the missing part (a failure under CI).
Started outside pytest, it sets the suite's timer slack itself (tests/jvm_flags.py), which every pod inherits.
"""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from e2e.e2e_node import Node, bring_up, harness, install_operator, missing_part, prepare_seed, tear_down  # noqa: E402
from jvm_flags import set_timer_slack  # noqa: E402


def main(argv: list[str]) -> int:
    if argv == ["seed"]:
        lacking = missing_part()
        if lacking:  # `up` reports it
            return 0
        try:
            prepare_seed()
        except Exception as exc:  # `up` makes it again and fails with the cause there
            print(f"warning: making the image seed ahead failed: {exc}", file=sys.stderr)
        return 0
    if len(argv) < 2 or argv[0] not in {"up", "down"} or (argv[0] == "down" and len(argv) != 3):
        print(__doc__, file=sys.stderr)
        return 2
    state = Path(argv[1]).resolve()
    if argv[0] == "down":
        refused = tear_down(Node(state_dir=state, env=harness.cluster_env(state)), Path(argv[2]))
        if refused:  # every e2e path ran as the chart's operator: a refusal is a missing grant (docs/auth.md)
            print(
                f"error: the chart's RBAC refused the operator {len(refused)} request(s): {refused[0]}",
                file=sys.stderr,
            )
            return 1
        return 0
    lacking = missing_part()
    if lacking:
        print(f"error: {lacking}", file=sys.stderr)
        return 1
    state.mkdir(parents=True, exist_ok=True)
    set_timer_slack()  # as pytest's own processes have it (tests/conftest.py): the node's containerd, every pod
    try:
        cluster = bring_up(state)
        install_operator(cluster)
    except BaseException as exc:  # bring_up stops a node that failed to start; one without its operator, here
        print(f"error: starting the shared e2e node failed: {exc}", file=sys.stderr)
        tear_down(Node(state_dir=state, env=harness.cluster_env(state)), state / "diagnostics")
        return 1
    print(f"e2e node up in {state}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
