"""The roll executor (`control.roll.run_roll_step`) and the hot-config executor on plain observations, with a
fake client and a fake platform: what is asked of the platform, what the rollout status says, failures reported,
not raised."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rocketmq_operator.api.models import RolloutStatus
from rocketmq_operator.control.roll import Revisions, RollSettings, apply_hot_config, run_roll_step
from rocketmq_operator.core.observation import GroupState, ReplicaEndpoint, ReplicaObservation
from rocketmq_operator.remoting import RemotingException

GROUP = "broker-a"
ADDR = {1: "10.0.0.1:10911", 2: "10.0.0.2:10911", 3: "10.0.0.3:10911"}


def obs(broker_id: int, master: bool = False, reachable: bool = True) -> ReplicaObservation:
    return ReplicaObservation(
        f"{GROUP}-{broker_id - 1}", ADDR[broker_id], reachable, broker_id=broker_id, is_master=master, max_offset=100
    )


def group(sss: tuple[int, ...] = (1, 2, 3), master: int = 1) -> GroupState:
    return GroupState(
        group=GROUP,
        observed_at=0.0,
        controller_mode=True,
        controller_reachable=True,
        controller_leader="10.0.0.9:9878",
        master_broker_id=master,
        master_address=ADDR[master],
        sync_state_set=sss,
        replicas=tuple(obs(i, master=i == master) for i in (1, 2, 3)),
    )


@dataclass
class FakePlatform:
    current: dict[str, str] = field(default_factory=lambda: {f"{GROUP}-{i}": "old" for i in range(3)})
    restarted: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def revisions(self, group: str) -> Mapping[str, Revisions]:
        return {name: Revisions(rev, "new") for name, rev in self.current.items()}

    async def roll_restart(self, replica: ReplicaObservation) -> str:
        self.restarted.append(replica.name)
        return "restarted"

    async def remove_replica(self, replica: ReplicaObservation) -> str:
        self.removed.append(replica.name)
        return "stopped"


@dataclass
class FakeClient:
    config: dict[str, dict[str, str]] = field(default_factory=dict)
    down: set[str] = field(default_factory=set)

    async def update_broker_config(self, addr: str, config: Mapping[str, object], **_: Any) -> None:
        if addr in self.down:
            raise RemotingException("connection refused")
        self.config.setdefault(addr, {}).update({k: str(v) for k, v in config.items()})

    async def get_broker_config(self, addr: str, **_: Any) -> dict[str, str]:
        return dict(self.config.get(addr, {}))

    async def find_controller_leader(self, *_: Any, **__: Any) -> Any:
        raise RemotingException("controller down")

    async def get_runtime_info(self, addr: str, **_: Any) -> dict[str, str]:
        raise RemotingException("down")


SETTINGS = RollSettings(
    cluster="DefaultCluster",
    controllers=("10.0.0.9:9878",),
    endpoints=tuple(ReplicaEndpoint(f"{GROUP}-{i - 1}", a) for i, a in ADDR.items()),
    min_in_sync_replicas=2,
)


def step(
    state: GroupState, rollout: RolloutStatus | None, platform: FakePlatform, now: float = 100.0, **kw: Any
) -> Any:
    settings = RollSettings(**{**SETTINGS.__dict__, **kw})
    return asyncio.run(run_roll_step(FakeClient(), state, settings, rollout, platform, now=now))  # type: ignore[arg-type]


def test_restart_then_wait_then_next() -> None:
    platform = FakePlatform()
    first = step(group(), None, platform)
    assert platform.restarted == ["broker-a-2"]
    assert (first.phase, first.restarts, first.last_restarted) == ("Rolling", 1, "broker-a-2")
    assert first.started is not None
    second = step(group(), first, platform, now=101.0)
    assert (second.phase, second.reason, second.waiting_since) == ("Waiting", "WaitingForReplica", 101.0)
    platform.current["broker-a-2"] = "new"
    third = step(group(), second, platform, now=102.0)
    assert platform.restarted == ["broker-a-2", "broker-a-1"]
    assert third.replicas_done == ["broker-a-2"] and third.started == first.started and third.waiting_since is None


def test_nothing_to_roll_records_the_revision_only() -> None:
    platform = FakePlatform(current={f"{GROUP}-{i}": "new" for i in range(3)})
    out = step(group(), None, platform)
    assert out.phase == "Complete" and out.restarts == 0 and platform.restarted == []


def test_refusal_is_blocked_status_not_an_action() -> None:
    platform = FakePlatform()
    out = step(group(), None, platform, min_in_sync_replicas=3)
    assert out.phase == "Blocked" and out.reason == "BelowMinInSyncReplicas" and platform.restarted == []
    assert "broker-a-2" in out.message and "fix:" in out.message


def test_paused() -> None:
    out = step(group(), None, FakePlatform(), paused=True)
    assert out.phase == "Paused"


def test_failed_switchover_waits_and_is_retried() -> None:
    platform = FakePlatform(current={"broker-a-0": "old", "broker-a-1": "new", "broker-a-2": "new"})
    out = step(group(), None, platform)
    assert out.phase == "Waiting" and "switchover to broker" in out.message and out.switchovers == 0
    assert platform.restarted == []


def test_hot_config_read_back_and_failures_reported() -> None:
    client = FakeClient(down={ADDR[3]})
    result = asyncio.run(apply_hot_config(client, list(ADDR.values()), {"fileReservedTime": "48"}))  # type: ignore[arg-type]
    assert set(result.applied) == {ADDR[1], ADDR[2]} and not result.ok
    assert "connection refused" in result.failed[ADDR[3]]


def test_scale_in_removes_before_restarting() -> None:
    platform = FakePlatform()
    out = step(group(), None, platform, removing=frozenset({"broker-a-2"}))
    assert platform.removed == ["broker-a-2"] and platform.restarted == []
    assert out.phase == "Rolling" and "broker-a-2" not in out.replicas_done
