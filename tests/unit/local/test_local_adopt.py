"""A process a killed supervisor left running is adopted by pid: watched while its command line names it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from rocketmq_operator.platforms.local.adopt import UNKNOWN_EXIT, AdoptedProcess
from rocketmq_operator.platforms.local.state import argv_of


def test_adopted_process_is_watched_and_signalled_by_pid() -> None:
    needle = "rocketmq-operator-adopt-test"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", needle])
    try:
        # Right after spawning, /proc/<pid>/cmdline may still be empty or the parent's until exec is published.
        deadline = time.monotonic() + 10
        while needle not in (argv_of(child.pid) or []) and time.monotonic() < deadline:
            time.sleep(0.01)
        adopted = AdoptedProcess(child.pid, needle)
        assert adopted.poll() is None
        other = AdoptedProcess(child.pid, "another-config")
        other.send_signal(signal.SIGTERM)  # not ours by its command line: never signalled
        assert adopted.poll() is None
        adopted.send_signal(signal.SIGTERM)
        child.wait(timeout=10)  # reaped here as the parent; init reaps a real orphan
        assert adopted.wait(timeout=10) == UNKNOWN_EXIT and adopted.poll() == UNKNOWN_EXIT
    finally:
        child.kill()
        child.wait()
