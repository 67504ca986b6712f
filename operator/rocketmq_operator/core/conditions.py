"""Kubernetes-convention conditions (type, status, reason, message, lastTransitionTime), written once.

`condition` builds one (its lastTransitionTime carries over from the previous one unless the status flips);
`set_condition` sets one in a list. The BrokerGroup status (`core.status`), the reconciler and the Kubernetes
group pass all use these. `merge_status` is what the Kubernetes status writer (`platforms.kubernetes.status_writer`)
sends: one step's changes over a status as read, every other field and condition kept, or nothing when the status
already says them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

ConditionStatus = Literal["True", "False", "Unknown"]


def condition(
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    now: str,
    observed_generation: int | None = None,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One condition; lastTransitionTime is `previous`'s unless there is none or the status flips."""
    same = previous is not None and previous.get("status") == status
    new: dict[str, Any] = {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": previous.get("lastTransitionTime", now) if previous is not None and same else now,
    }
    if observed_generation is not None:
        new["observedGeneration"] = observed_generation
    return new


def set_condition(
    conditions: Sequence[Mapping[str, Any]],
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    now: str,
    observed_generation: int | None = None,
) -> list[dict[str, Any]]:
    """A new list with `type_` set (appended when absent); the other conditions are kept as they are."""
    out: list[dict[str, Any]] = []
    found = False
    for cond in conditions:
        if cond.get("type") == type_:
            found = True
            out.append(condition(type_, status, reason, message, now, observed_generation, previous=cond))
        else:
            out.append(dict(cond))
    if not found:
        out.append(condition(type_, status, reason, message, now, observed_generation))
    return out


def _same_condition(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    if a is None or b is None:
        return a is b
    return all(a.get(k) == b.get(k) for k in ("status", "reason", "message", "observedGeneration"))


def merge_status(
    current: Mapping[str, Any],
    fields: Mapping[str, Any],
    conditions: Mapping[str, Mapping[str, Any] | None],
) -> dict[str, Any] | None:
    """The merge patch of a status that sets ``fields`` (a value of None removes the field) and ``conditions``
    (by type: the condition, or None to remove it) over ``current`` as read; None when ``current`` already says
    all of it. The patch carries the whole merged conditions list (a JSON merge patch replaces lists): every
    condition of another type is kept as read, and a set condition keeps its lastTransitionTime while its status
    does not change."""
    patch: dict[str, Any] = {k: v for k, v in fields.items() if current.get(k) != v}
    have: list[Mapping[str, Any]] = list(current.get("conditions") or [])
    by_type = {c.get("type"): c for c in have}
    if any(not _same_condition(by_type.get(t), c) for t, c in conditions.items()):
        merged: list[dict[str, Any]] = []
        for cond in have:
            type_ = str(cond.get("type"))
            if type_ not in conditions:
                merged.append(dict(cond))
            elif (wanted := conditions[type_]) is not None:
                merged.append(_carry_transition(wanted, cond))
        merged.extend(dict(c) for t, c in conditions.items() if c is not None and t not in by_type)
        patch["conditions"] = merged
    return patch or None


def _carry_transition(wanted: Mapping[str, Any], previous: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(wanted)
    if previous.get("status") == wanted.get("status") and previous.get("lastTransitionTime"):
        out["lastTransitionTime"] = previous["lastTransitionTime"]
    return out
