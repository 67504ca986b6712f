"""Shared test setup: the repo's source root on sys.path for tests that import case tables, hypothesis
without its per-example deadline (a timed assertion: on a shared 2-core machine one slow example fails a
correct property), and a coarse timer slack for every process the tests start.

Timer slack: an idle RocketMQ JVM polls. The broker's ReputMessageService sleeps 1 ms in a loop, the DLedger
controller's QuorumAckChecker waits 1 ms, and so on. An idle quickstart (a name server hosting the controller,
three brokers) burns about a third of a core doing it. Linux lets a timed sleep end up to the thread's timer slack
late, so that wake-ups are batched. The slack is inherited across fork and exec by every process and thread. The
test process sets it once (tests/jvm_flags.py `set_timer_slack`), and the local JVMs, the supervisors, Spark, and
the node's containerd (and so every pod) inherit it; `make test`'s shared e2e node, started outside pytest
(tests/e2e/shared_node.py), sets it too. At 20 ms, the same idle quickstart measured 1024 → 405 CPU ticks over 30 s, and
tests/integration/test_failover_real.py alone took 220 busy CPU-seconds instead of 252. Waits that are woken by an
event (a socket, a notify) are not delayed; only timeouts end up to 20 ms late, well inside the timeouts RocketMQ
and the operator use (seconds). Benchmarks and users run with the kernel's default (50 µs).
`ROCKETMQ_OPERATOR_TEST_TIMER_SLACK_NS=0` turns it off.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from jvm_flags import set_timer_slack  # noqa: E402

settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")

set_timer_slack()


# The no-cluster line runs whole files on two workers (`--dist loadfile --no-loadscope-reorder`, run-tests.sh), each
# worker taking the next file when it has fewer than two left. The files that hold one long JVM test each come
# first, longest first (as measured in a warm `make test`, docs/testing.md), and the many short unit files fill in
# behind them: with pytest-xdist's default order (most tests first) the two longest files were scheduled last,
# and one worker ran them alone at the end while the other idled.
LONGEST_FILES_FIRST = (
    "tests/integration/test_scale_real.py",
    "tests/integration/test_roll_real.py",
    "tests/integration/test_fencing_real.py",
    "tests/integration/test_spark_real.py",
    "tests/integration/test_failover_real.py",
    "tests/integration/test_quorum_real.py",
    "tests/integration/test_tls_real.py",
    "tests/integration/test_topics_real.py",
    "tests/integration/test_local_quickstart.py",
    "tests/integration/test_auth_real.py",
    "tests/integration/test_tools_real.py",
    "tests/integration/test_remoting_real.py",
)


def pytest_collection_modifyitems(config: object, items: list[object]) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FILES_FIRST)}

    def key(item: object) -> int:
        path = Path(str(getattr(item, "path", ""))).resolve()
        try:
            relative = str(path.relative_to(ROOT))
        except ValueError:
            return len(rank)
        return rank.get(relative, len(rank))

    items.sort(key=key)  # stable: within a file, and among the other files, the collection order is kept
