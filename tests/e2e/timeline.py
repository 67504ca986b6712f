"""Where an e2e test's time goes: every wait of `Node.wait_for` and every `kubectl rocketmq` call, one line each, in
the file named by `$ROCKETMQ_OPERATOR_E2E_TIMELINE` (`scripts/run-tests.sh` names one per run and prints the longest
lines at the end). Lines are appended whole (one `write` of O_APPEND), so the two e2e workers can share the file.
Nothing is recorded without the variable."""

from __future__ import annotations

import os
import time

TIMELINE_ENV = "ROCKETMQ_OPERATOR_E2E_TIMELINE"


def record(kind: str, what: str, seconds: float) -> None:
    """One line: the wall-clock end, the seconds taken, the test that waited, what kind of step and what for."""
    path = os.environ.get(TIMELINE_ENV)
    if not path:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ", 1)[0]
    line = f"{time.strftime('%H:%M:%S')} {seconds:8.1f}s {test} {kind}: {' '.join(what.split())[:160]}\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
