"""Processes a killed supervisor left running, adopted by the next one instead of being restarted.

Contract: `AdoptedProcess` has the part of `subprocess.Popen`'s interface the supervisor uses (`pid`, `poll`,
`send_signal`, `kill`, `wait`). It is not the new supervisor's child, so it is watched by pid, and only while
its command line still names its own config (`state.pid_alive`): a recycled pid is never signalled. Its exit
code cannot be read: `poll` answers `UNKNOWN_EXIT` once it is gone.
"""

from __future__ import annotations

import signal
import time

from rocketmq_operator.platforms.local.state import pid_alive, signal_if_ours

UNKNOWN_EXIT = 255


class AdoptedProcess:
    def __init__(self, pid: int, needle: str) -> None:
        self.pid = pid
        self.needle = needle  # its run config path: in its command line, and only in its
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and not pid_alive(self.pid, self.needle):
            self.returncode = UNKNOWN_EXIT
        return self.returncode

    def send_signal(self, sig: int) -> None:
        signal_if_ours(self.pid, self.needle, signal.Signals(sig))

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"pid {self.pid} still runs")
            time.sleep(0.05)
        return UNKNOWN_EXIT
