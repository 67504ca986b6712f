"""The one writer of the operator's resources' status on Kubernetes.

Contract: a step of a pass (the observer, the user's fences, the switchover annotation, the roll, storage) and the
reconciler describe what they change as a `StatusChange`: top-level status fields to set or remove, and conditions
to set or remove by type, each field and condition type owned by one step. `write_status` compares the change
with the status as the caller's pass read it and writes nothing when that already says it (no request at all);
otherwise it reads the object again, merges the change over the latest status (`core.conditions.merge_status`:
every other field and condition as read, a condition's lastTransitionTime kept while its status holds), and
patches once at the resourceVersion it read. A write that lost a race (409) is read, merged and sent again. So a
step never drops a condition another step or handler wrote earlier, in this pass or concurrently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketmq_operator.core.conditions import merge_status
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError

JSON = dict[str, Any]
ATTEMPTS = 5
"""Writes that lose a race are merged again this many times in all; then the last 409 is raised (the next pass
writes)."""


@dataclass(frozen=True)
class StatusChange:
    """What one step changes: ``fields`` (top-level status keys; None removes one) and ``conditions`` (by type:
    the condition, or None to remove it)."""

    fields: Mapping[str, Any] = field(default_factory=dict)
    conditions: Mapping[str, JSON | None] = field(default_factory=dict)


StatusChangeFrom = Callable[[Mapping[str, Any]], StatusChange]
"""A change computed from the status it applies to (e.g. a Topic's placements, one per BrokerGroup pass): asked
again of every status read."""


async def write_status(kube: KubeClient, body: Mapping[str, Any], change: StatusChange | StatusChangeFrom) -> bool:
    """Apply ``change`` to the status of the object ``body`` (as the caller's pass read it: kind and metadata
    name the object). True when a write was sent."""
    of = change if callable(change) else (lambda _status: change)
    seen = body.get("status") or {}
    first = of(seen)
    if merge_status(seen, first.fields, first.conditions) is None:
        return False
    meta = body["metadata"]
    kind, namespace, name = str(body["kind"]), str(meta["namespace"]), str(meta["name"])
    for attempt in range(ATTEMPTS):
        fresh = await kube.get(kind, namespace, name)
        if fresh is None:
            return False  # deleted meanwhile: nothing to write
        latest = fresh.get("status") or {}
        wanted = of(latest)
        patch = merge_status(latest, wanted.fields, wanted.conditions)
        if patch is None:
            return False
        try:
            await kube.patch_status(
                kind, namespace, name, patch, resource_version=(fresh.get("metadata") or {}).get("resourceVersion")
            )
            return True
        except KubeError as exc:
            if exc.status != 409 or attempt == ATTEMPTS - 1:
                raise
    return False
