"""Shared test setup: the repo's source root on sys.path for tests that import case tables, hypothesis
without its per-example deadline (a timed assertion: on a shared 2-core machine one slow example fails a
correct property), and a coarse timer slack for every process the tests start.

Timer slack: an idle RocketMQ JVM polls. The broker's ReputMessageService sleeps 1 ms in a loop, the DLedger
controller's QuorumAckChecker waits 1 ms, and so on. An idle quickstart (a name server hosting the controller,
three brokers) burns about a third of a core doing it. Linux lets a timed sleep end up to the thread's timer slack
late, so that wake-ups are batched. The slack is inherited across fork and exec by every process and thread. The
test process sets it once, and the local JVMs, the supervisors, Spark, and the node's containerd (and so every pod)
inherit it. At 20 ms, the same idle quickstart measured 1024 → 405 CPU ticks over 30 s, and
tests/integration/test_failover_real.py alone took 220 busy CPU-seconds instead of 252. Waits that are woken by an
event (a socket, a notify) are not delayed; only timeouts end up to 20 ms late, well inside the timeouts RocketMQ
and the operator use (seconds). Benchmarks and users run with the kernel's default (50 µs).
`ROCKETMQ_OPERATOR_TEST_TIMER_SLACK_NS=0` turns it off.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")

TIMER_SLACK_ENV = "ROCKETMQ_OPERATOR_TEST_TIMER_SLACK_NS"
TIMER_SLACK_NS = 20_000_000
PR_SET_TIMERSLACK = 29  # linux/prctl.h


def _set_timer_slack() -> None:
    slack = int(os.environ.get(TIMER_SLACK_ENV, str(TIMER_SLACK_NS)))
    if slack <= 0 or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(slack), 0, 0, 0) != 0:
        print(f"warning: prctl(PR_SET_TIMERSLACK) failed: errno {ctypes.get_errno()}", file=sys.stderr)


_set_timer_slack()
