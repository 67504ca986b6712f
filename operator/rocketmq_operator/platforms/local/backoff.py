"""Restart back-off for supervised replicas, like a kubelet's CrashLoopBackOff but on a local scale.

Contract (pure functions, no clock: times are arguments):

* After an exit, `failures_after_exit(previous, uptime)` is the new count of consecutive failures: 1 when the
  process had run for at least `reset_after` seconds (a healthy run resets the back-off), else `previous + 1`.
* `delay(failures)` is how long to wait before the next start: `initial * factor**(failures-1)`, capped at
  `maximum` (defaults: 1 s, doubling, 10 s cap, reset after 60 s). `delay(0)` is 0 (a first start).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackoffPolicy:
    initial: float = 1.0
    factor: float = 2.0
    maximum: float = 10.0
    reset_after: float = 60.0

    def delay(self, failures: int) -> float:
        if failures <= 0:
            return 0.0
        # cap the exponent too: factor**large overflows long before it matters
        exponent = min(failures - 1, 64)
        return float(min(self.maximum, self.initial * self.factor**exponent))

    def failures_after_exit(self, previous: int, uptime: float) -> int:
        if uptime >= self.reset_after:
            return 1
        return max(previous, 0) + 1


DEFAULT_BACKOFF = BackoffPolicy()
