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
from typing import Any

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
    "tests/integration/test_proxy_real.py",  # with the proxies' roll: about 270 s (2026-11-29)
    "tests/integration/test_scale_real.py",
    "tests/integration/test_roll_real.py",
    "tests/integration/test_fencing_real.py",
    "tests/integration/test_spark_real.py",
    "tests/integration/test_failover_real.py",
    "tests/integration/test_group_scale_real.py",  # about 100 s (2026-11-29)
    "tests/integration/test_quorum_real.py",
    "tests/integration/test_tls_real.py",
    "tests/integration/test_topics_real.py",
    "tests/integration/test_local_quickstart.py",
    "tests/integration/test_auth_real.py",
    "tests/integration/test_backup_real.py",  # about 50 s, two cluster starts
    "tests/integration/test_tools_real.py",
    "tests/integration/test_remoting_real.py",
    # The e2e files whose turn comes first on their worker (`--dist loadgroup` keeps this order within a group):
    # the TLS example first on the quickstart's worker, which is the longer of the two (about 1,050 s of tests
    # against 780 s, 2026-12-06). Last, as it was in file order, it ran alone for the last ~4 minutes of a cold run
    # with the machine mostly idle: its rotation waits on the cluster (certificates reissued, files updated in the
    # pods, restarts) more than it computes, so it goes where the other worker's tests can use what it leaves.
    "tests/e2e/test_tls.py",
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


# The e2e tests' worker groups in `make test`'s second e2e phase (`-n 2 --dist loadgroup`, docs/testing.md "Stage 2"):
# the tests of one group share its cluster objects and run on one worker, in file order. The table, not pytest-xdist's
# `xdist_group` marks: with pytest 9.2, pytest-xdist 3.8's marks do nothing (it renames `item._nodeid`, which pytest
# no longer reads), and the marked tests of one group ran on both workers at once (found 2026-11-28: a Spark job
# read the topic while the image roll of the same group ran on the other worker).
E2E_IMAGE_ROLL = "tests/e2e/test_rolling.py::test_an_image_tag_change_rolls_the_brokers_master_last_with_no_loss"
E2E_DEFAULT_GROUP = "quickstart"  # every other e2e test: the quickstart group in namespace rocketmq
E2E_WORKER_GROUPS = {
    # The second quickstart's worker: the chaos campaign on its pods, then the image roll, then both Spark jobs
    # (file order), about 750 s of tests (2026-11-29).
    "tests/e2e/test_chaos_k8s.py": "second-quickstart",
    E2E_IMAGE_ROLL: "second-quickstart",
    # A group added to its cluster, then deleted: drained first (docs/scaling.md).
    "tests/e2e/test_group_scale.py": "second-quickstart",
    "tests/e2e/test_spark_job.py": "second-quickstart",
    # On the quickstart's worker (their own namespaces; auth first and TLS last, in file order): about 730 s of
    # tests. Before the campaign came, auth was a group of its own, which went to the second quickstart's worker.
    "tests/e2e/test_auth.py": E2E_DEFAULT_GROUP,
    "tests/e2e/test_tls.py": E2E_DEFAULT_GROUP,
}


def e2e_worker_group(nodeid: str) -> str:
    """The worker group of a test id: its own entry, its file's, the quickstart's for another e2e test, else its
    file (as `--dist loadfile` would)."""
    path = nodeid.split("::", 1)[0]
    name = nodeid.split("[", 1)[0]
    if name in E2E_WORKER_GROUPS:
        return E2E_WORKER_GROUPS[name]
    if path in E2E_WORKER_GROUPS:
        return E2E_WORKER_GROUPS[path]
    return E2E_DEFAULT_GROUP if path.startswith("tests/e2e/") else path


def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:
    """`--dist loadgroup` schedules by `e2e_worker_group`: whole groups to a worker, the largest first."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class E2EGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return e2e_worker_group(nodeid)

    return E2EGroupScheduling(config, log)
