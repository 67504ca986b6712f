"""Small statistics helpers for the tool reports.

Contract: :func:`percentile` is the nearest-rank percentile (the smallest value with at least ``p`` percent
of the values at or below it) of a non-empty sequence; :func:`latency_summary` gives ``p50``/``p99``/``max``
in milliseconds rounded to 3 decimals, or ``None`` values for an empty sequence. :func:`recovery_windows` is
OpenChaos's client-visible unavailability over any sends that carry ``start``, ``end`` and ``ok``; the producer
tools, ``bench failover`` and the chaos checker all measure recovery with it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol


class Answered(Protocol):
    """A send as the client saw it: when it started, when its final answer came, and whether it was stored."""

    @property
    def start(self) -> float: ...
    @property
    def end(self) -> float: ...
    @property
    def ok(self) -> bool: ...


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        raise ValueError("percentile of an empty sequence")
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be within [0, 100], got {p}")
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def latency_summary(values_ms: Sequence[float]) -> dict[str, float | None]:
    if not values_ms:
        return {"p50": None, "p99": None, "max": None}
    return {
        "p50": round(percentile(values_ms, 50), 3),
        "p99": round(percentile(values_ms, 99), 3),
        "max": round(max(values_ms), 3),
    }


@dataclass(frozen=True, slots=True)
class RecoveryWindow:
    """One client-visible unavailability window (OpenChaos ``RecoveryChecker``)."""

    start: float
    """Start of the first failed send of the window (its response time minus its latency)."""
    end: float | None
    """Response time of the next successful send; ``None`` if none followed."""
    failed: int

    @property
    def recovery_s(self) -> float | None:
        return None if self.end is None else self.end - self.start


def recovery_windows(records: Iterable[Answered], gap_s: float = 2.0) -> list[RecoveryWindow]:
    """OpenChaos's recovery windows over ``records`` taken in response order: a window opens at the start of
    the first failed (not acknowledged) send and closes at the end of the next acknowledged one. Failures
    answered less than ``gap_s`` after the previous window closed do not open a new window, nor does the failure
    of a send started before it closed (sent during that outage and answered late, e.g. after its retries: a
    straggler of the same outage, not a new one)."""
    windows: list[RecoveryWindow] = []
    opened: float | None = None
    failed = 0
    last_close = float("-inf")
    for rec in sorted(records, key=lambda r: r.end):
        if rec.ok:
            if opened is not None:
                windows.append(RecoveryWindow(opened, rec.end, failed))
                last_close = rec.end
                opened, failed = None, 0
        elif opened is not None:
            failed += 1
        elif rec.end - last_close >= gap_s and rec.start >= last_close:
            opened, failed = rec.start, 1
    if opened is not None:
        windows.append(RecoveryWindow(opened, None, failed))
    return windows
