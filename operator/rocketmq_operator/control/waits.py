"""Ask a broker again until a condition holds: the polling the switchover (`control.switchover`) and the name-server
route surgery (`control.routes`) share.

Contract: decides nothing (no core module: a condition, a deadline and an interval are all it is given); `until`
never raises for a broker that does not answer or times out, it asks again until the deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from rocketmq_operator.remoting import RemotingException


async def until(check: Callable[[], Awaitable[bool]], timeout_s: float, interval_s: float = 0.05) -> bool:
    """``True`` as soon as ``check`` does; ``False`` at the deadline. A broker that does not answer (or times out)
    is asked again: under load one request may miss its timeout while the next one is answered."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if await check():
                return True
        except (RemotingException, OSError):
            pass
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(interval_s)
