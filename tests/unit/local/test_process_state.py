"""What the supervisor sees of a process it owns (`kernel_process_state`): the evidence that tells a hung master
(stopped) from a slow one (running) before the replication policy fences it."""

from __future__ import annotations

import signal
import subprocess
import sys

from rocketmq_operator.core.failover import ProcessState
from rocketmq_operator.platforms.local.supervisor import kernel_process_state


def _wait_state(pid: int, wanted: ProcessState) -> ProcessState:
    # The kernel changes the state when the signal is delivered: read until it shows (bounded by the test's
    # own timeout, never by a clock here).
    while (seen := kernel_process_state(pid)) is not wanted:
        pass
    return seen


def test_running_stopped_and_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert kernel_process_state(child.pid) is ProcessState.RUNNING  # asleep is running: it can answer
        child.send_signal(signal.SIGSTOP)
        assert _wait_state(child.pid, ProcessState.STOPPED) is ProcessState.STOPPED
        child.send_signal(signal.SIGCONT)
        assert _wait_state(child.pid, ProcessState.RUNNING) is ProcessState.RUNNING
    finally:
        child.kill()
        child.wait()
    assert kernel_process_state(child.pid) is ProcessState.GONE
