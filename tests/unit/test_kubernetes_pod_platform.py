"""The Kubernetes fence: delete the pod with grace period 1 (never a force deletion), but only the container that
was master."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from rocketmq_operator.core.observation import ReplicaObservation
from rocketmq_operator.platforms.kubernetes.group_pass import PodPlatform


@dataclass
class FakeKube:
    deleted: list[tuple[str, str, str, int | None]] = field(default_factory=list)
    fail: bool = False

    async def delete(self, kind: str, namespace: str | None, name: str, *, grace_period_s: int | None = None) -> None:
        if self.fail:
            raise RuntimeError("API server refused")
        self.deleted.append((kind, namespace or "", name, grace_period_s))


def pod(name: str, started: str | None) -> dict[str, Any]:
    state = {"running": {"startedAt": started}} if started else {"waiting": {"reason": "ContainerCreating"}}
    return {"metadata": {"name": name}, "status": {"containerStatuses": [{"name": "broker", "state": state}]}}


REPLICA = ReplicaObservation("broker-a-1", "10.0.0.1:10911", reachable=False, broker_id=1)
STARTED = 1_700_000_000.0  # 2023-11-14T22:13:20Z


@pytest.mark.parametrize(
    ("started", "started_before", "deleted"),
    [
        ("2023-11-14T22:13:20Z", None, True),  # the named master itself: always
        ("2023-11-14T22:13:20Z", STARTED + 60, True),  # started before the deposition: the deposed process
        ("2023-11-14T22:13:20Z", STARTED - 60, False),  # restarted since: a new process, left alone
        (None, STARTED + 60, False),  # not running: nothing to fence
    ],
    ids=["named-master", "deposed-process", "restarted-since", "not-running"],
)
def test_fence_deletes_only_the_deposed_container(
    started: str | None, started_before: float | None, deleted: bool
) -> None:
    kube = FakeKube()
    platform = PodPlatform(kube, "ns", [pod("broker-a-1", started)])  # type: ignore[arg-type]
    done = asyncio.run(platform.fence(REPLICA, started_before=started_before))
    assert (kube.deleted == [("Pod", "ns", "broker-a-1", 1)]) is deleted  # 0 would skip the kubelet
    assert bool(done) is deleted


def test_restart_is_a_graceful_delete() -> None:
    kube = FakeKube()
    asyncio.run(PodPlatform(kube, "ns", []).restart(REPLICA))  # type: ignore[arg-type]
    assert kube.deleted == [("Pod", "ns", "broker-a-1", None)]
