"""The JIT flags and timer slack every process the tests start runs with, local and in the e2e nodes' pods.

JIT: C2 compiles only the hottest code (its tier-4 thresholds ten times the JVM's defaults). Measured on this machine
(2026-11-28, a lone 5.5.0 broker, CPU ticks of the process from 30 s to 90 s after start, /proc/PID/stat):
- with the timer wheel on (RocketMQ's default, and every broker in a pod): C1 only (`-XX:TieredStopAtLevel=1`,
  the suite's flag before) 1,668 ticks, of which 1,311 in `TimerFlushService`, a byte-by-byte compare of the
  ~37 MiB wheel every second that C1 compiles poorly (22% of a core per broker); default tiered 582 and 639
  ticks; these flags 572 ticks (flush 121);
- to 30 s after start (the start's cost): C1 only 1,259 ticks, default tiered 1,392 and 1,444, these flags 1,265;
- with the wheel off (the local platform's default): C1 only 325 ticks a minute, these flags 347.
So these flags cost no more than C1 at start and with the wheel off, and about a third of it with the wheel on.
RocketMQ's behaviour is the same under any JIT; users and benchmarks run with the JVM's defaults.

Timer slack: see tests/conftest.py; `set_timer_slack` is also called by processes the run starts outside pytest
(tests/e2e/shared_node.py, whose containerd every pod inherits it from).
"""

from __future__ import annotations

import ctypes
import os
import sys

TEST_JVM_FLAGS = (
    "-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 "
    "-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000"
)

TIMER_SLACK_ENV = "ROCKETMQ_OPERATOR_TEST_TIMER_SLACK_NS"
TIMER_SLACK_NS = 20_000_000
PR_SET_TIMERSLACK = 29  # linux/prctl.h


def set_timer_slack() -> None:
    """This process's timer slack (inherited by every process and thread it starts), from `$TIMER_SLACK_ENV`."""
    slack = int(os.environ.get(TIMER_SLACK_ENV, str(TIMER_SLACK_NS)))
    if slack <= 0 or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_TIMERSLACK, ctypes.c_ulong(slack), 0, 0, 0) != 0:
        print(f"warning: prctl(PR_SET_TIMERSLACK) failed: errno {ctypes.get_errno()}", file=sys.stderr)
