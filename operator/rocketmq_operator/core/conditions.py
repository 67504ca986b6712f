"""Kubernetes-convention conditions (type, status, reason, message, lastTransitionTime), written once.

`condition` builds one (its lastTransitionTime carries over from the previous one unless the status flips);
`set_condition` sets one in a list; `conditions_match` says whether a status write is needed. The BrokerGroup
status (`core.status`), the reconciler and the Kubernetes group pass all use these.
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


def conditions_match(current: Sequence[Mapping[str, Any]], wanted: Sequence[Mapping[str, Any]]) -> bool:
    """Every wanted condition is already in `current` with the same status, reason and message (timestamps
    move only with the status, so this decides whether a status write is needed)."""

    def key(c: Mapping[str, Any]) -> tuple[Any, Any, Any]:
        return (c.get("status"), c.get("reason"), c.get("message"))

    have = {c.get("type"): key(c) for c in current}
    return all(have.get(c.get("type")) == key(c) for c in wanted)


def status_unchanged(current: Mapping[str, Any], wanted: Mapping[str, Any], keys: Sequence[str]) -> bool:
    """`current` already says what `wanted` says: the same value for each of `keys` and matching conditions
    (so a pass that would change nothing writes nothing)."""
    if any(current.get(k) != wanted.get(k) for k in keys):
        return False
    return conditions_match(current.get("conditions") or [], wanted.get("conditions") or [])
