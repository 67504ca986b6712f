"""Small statistics helpers for the tool reports.

Contract: :func:`percentile` is the nearest-rank percentile (the smallest value with at least ``p`` percent
of the values at or below it) of a non-empty sequence; :func:`latency_summary` gives ``p50``/``p99``/``max``
in milliseconds rounded to 3 decimals, or ``None`` values for an empty sequence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


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
