"""`--load N` of the benches: N busy processes competing for the CPU while a bench runs, so that its figures can
be taken on a loaded machine. `CpuLoad` starts them on entry and stops them on exit, whatever ends the run
(Ctrl-C, an error); `record()` is what the bench's JSON says about it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from types import TracebackType
from typing import Any

# A busy loop that ends by itself once its parent is gone: a bench killed with SIGKILL (no clean-up) must not
# leave a CPU hog behind. The check every few million iterations costs nothing of the load.
_BUSY = """
import os, sys
parent = int(sys.argv[1])
while os.getppid() == parent:
    for _ in range(2_000_000):
        pass
"""
STOP_TIMEOUT_S = 5.0


def load_average_1m() -> float | None:
    """The 1-minute load average, or None where the platform has none."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


class CpuLoad:
    """``with CpuLoad(n) as load: ...``: ``n`` busy processes for the duration of the block (0: none)."""

    def __init__(self, processes: int) -> None:
        if processes < 0:
            raise ValueError(f"processes must be >= 0, got {processes}")
        self.count = processes
        self.processes: list[subprocess.Popen[bytes]] = []
        self.load_avg_1m_start: float | None = None
        self.load_avg_1m_end: float | None = None

    def __enter__(self) -> CpuLoad:
        self.load_avg_1m_start = load_average_1m()
        try:
            for _ in range(self.count):
                self.processes.append(
                    subprocess.Popen(
                        [sys.executable, "-c", _BUSY, str(os.getpid())],
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        # Out of the terminal's process group: a Ctrl-C is the bench's to handle, and the load
                        # stays until the bench's own clean-up (its teardown included) is over.
                        start_new_session=True,
                    )
                )
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.load_avg_1m_end = load_average_1m()
        self.stop()

    def stop(self) -> None:
        """Terminate every busy process and reap it (SIGKILL the ones that outlive ``STOP_TIMEOUT_S``)."""
        for proc in self.processes:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        for proc in self.processes:
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def record(self) -> dict[str, Any]:
        """The JSON keys every bench with ``--load`` adds."""
        return {
            "load_processes": self.count,
            "load_avg_1m_start": self.load_avg_1m_start,
            "load_avg_1m_end": self.load_avg_1m_end,
        }
