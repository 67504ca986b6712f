"""platforms.kubernetes.status_writer: the one writer of status on Kubernetes, against the in-memory API.

What it guarantees: nothing is sent when the status as the pass read it already says the change; a step's write
never drops a condition or field another step or handler wrote after the pass read the object (it merges over the
latest status and writes at that resourceVersion); a write that loses a race is merged again, a refusal raises.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from kube_fake import FakeApi

from rocketmq_operator.core.conditions import condition
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError
from rocketmq_operator.platforms.kubernetes.status_writer import ATTEMPTS, StatusChange, write_status

NOW = "2026-11-27T10:00:00Z"


def _api() -> tuple[FakeApi, dict[str, Any]]:
    fake = FakeApi()
    obj = fake.put({"kind": "BrokerGroup", "metadata": {"name": "broker-a", "resourceVersion": "as-put"}, "status": {}})
    return fake, obj


def _write(fake: FakeApi, body: Mapping[str, Any], change: Any) -> bool:
    kube: KubeClient = fake  # type: ignore[assignment]  # the fake answers KubeClient's calls
    return asyncio.run(write_status(kube, body, change))


def _types(fake: FakeApi) -> list[str]:
    status = fake.objects[("BrokerGroup", "ns", "broker-a")]["status"]
    return [c["type"] for c in status.get("conditions") or []]


def test_nothing_is_sent_when_the_status_read_already_says_it() -> None:
    fake, body = _api()
    body["status"] = {"phase": "Running", "conditions": [condition("Ready", "True", "Ok", "", NOW)]}
    change = StatusChange(fields={"phase": "Running"}, conditions={"Ready": condition("Ready", "True", "Ok", "", NOW)})
    assert not _write(fake, body, change)
    assert fake.log == []  # not even a read


def test_a_later_steps_condition_is_not_dropped_by_an_earlier_read_of_the_same_pass() -> None:
    fake, body = _api()  # the pass read the object here: no conditions
    # An earlier step of the same pass (the observer) and the reconciler write theirs after that read...
    assert _write(fake, body, StatusChange(conditions={"Ready": condition("Ready", "True", "Ok", "", NOW)}))
    assert _write(fake, body, StatusChange(conditions={"Reconciled": condition("Reconciled", "True", "A", "", NOW)}))
    # ...and a later step, holding the same stale read, writes its own: all three are kept.
    assert _write(fake, body, StatusChange(fields={"fenced": ["broker-a-1"]}, conditions={"Fence": None}))
    assert _write(fake, body, StatusChange(conditions={"Fence": condition("Fence", "True", "Fenced", "", NOW)}))
    assert _types(fake) == ["Ready", "Reconciled", "Fence"]
    assert fake.objects[("BrokerGroup", "ns", "broker-a")]["status"]["fenced"] == ["broker-a-1"]


def test_a_write_that_loses_a_race_is_merged_again() -> None:
    fake, body = _api()
    real_patch = fake.patch_status
    raced: list[int] = []

    async def racing_patch(kind: str, namespace: str, name: str, status: Any, **kw: Any) -> Any:
        if not raced:  # another handler writes between this writer's read and its patch
            raced.append(1)
            await real_patch(kind, namespace, name, {"conditions": [condition("Switchover", "True", "S", "", NOW)]})
        return await real_patch(kind, namespace, name, status, **kw)

    fake.patch_status = racing_patch  # type: ignore[method-assign]
    assert _write(fake, body, StatusChange(conditions={"Fence": condition("Fence", "True", "Fenced", "", NOW)}))
    assert _types(fake) == ["Switchover", "Fence"]  # the first patch was refused (409), the second merged both


def test_a_refusal_raises_and_endless_races_give_up() -> None:
    fake, body = _api()
    fake.fail_on("patch_status", "BrokerGroup", status=500)
    change = StatusChange(fields={"phase": "Running"})
    with pytest.raises(KubeError):
        _write(fake, body, change)
    fake.fail_on("patch_status", "BrokerGroup", status=409, times=ATTEMPTS)
    with pytest.raises(KubeError) as refused:
        _write(fake, body, change)
    assert refused.value.status == 409
    assert _write(fake, body, change)  # the next pass writes it


def test_a_change_computed_from_the_status_it_applies_to() -> None:
    fake, body = _api()
    fake.objects[("BrokerGroup", "ns", "broker-a")]["status"] = {"placements": ["broker-b"]}  # written meanwhile

    def add_mine(status: Mapping[str, Any]) -> StatusChange:
        return StatusChange(fields={"placements": sorted([*(status.get("placements") or []), "broker-a"])})

    assert _write(fake, body, add_mine)
    assert fake.objects[("BrokerGroup", "ns", "broker-a")]["status"]["placements"] == ["broker-a", "broker-b"]


def test_a_deleted_object_is_not_written() -> None:
    fake, body = _api()
    del fake.objects[("BrokerGroup", "ns", "broker-a")]
    assert not _write(fake, body, StatusChange(fields={"phase": "Running"}))


def test_the_status_writer_is_the_only_module_that_patches_status() -> None:
    from pathlib import Path

    import rocketmq_operator

    package = Path(rocketmq_operator.__file__).parent
    callers = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if ".patch_status(" in path.read_text(encoding="utf-8")
    )
    assert callers == ["platforms/kubernetes/status_writer.py"]
