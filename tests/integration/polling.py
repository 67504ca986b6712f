"""`until(what, check)`: poll a client-side check once a second until it returns something truthy (returned), or
fail naming what was waited for. For outcomes only a client sees (a send accepted, a certificate served);
what `local status` reports is waited for with `LocalCluster.wait_for`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(what: str, check: Callable[[], T], timeout: float = 120.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1.0)
