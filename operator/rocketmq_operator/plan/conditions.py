"""Kubernetes-convention conditions (type, status, reason, message, lastTransitionTime) as pure updates."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

ConditionStatus = Literal["True", "False", "Unknown"]


def set_condition(
    conditions: Sequence[dict[str, Any]],
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    now: str,
    observed_generation: int | None = None,
) -> list[dict[str, Any]]:
    """A new list with `type_` set; lastTransitionTime moves only when the status flips."""
    out: list[dict[str, Any]] = []
    found = False
    for cond in conditions:
        if cond.get("type") != type_:
            out.append(dict(cond))
            continue
        found = True
        changed = cond.get("status") != status
        new = {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": now if changed else cond.get("lastTransitionTime", now),
        }
        if observed_generation is not None:
            new["observedGeneration"] = observed_generation
        out.append(new)
    if not found:
        new = {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": now,
        }
        if observed_generation is not None:
            new["observedGeneration"] = observed_generation
        out.append(new)
    return out


def same_conditions(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]]) -> bool:
    """Equal ignoring order (what decides whether a status write is needed)."""
    key = lambda c: str(c.get("type"))  # noqa: E731
    return sorted(a, key=key) == sorted(b, key=key)
