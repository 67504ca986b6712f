"""A promotion RocketMQ 5.5.0 holds behind the new master's HA client (docs/chaos.md, finding 9): the operator wakes
that client with a changed HA master address, alternating only between what it followed and the same host at port
0, until the broker answers as master; then each slave is pointed at it until it has read from it."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest

from rocketmq_operator.control import routes
from rocketmq_operator.control.routes import attach_slaves_to
from rocketmq_operator.core.failover import held_role_change_wake, inert_ha_address
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.remoting import HaClient, HaInfo, HaStatus

ADDR = {1: "10.0.0.1:10911", 2: "10.0.0.2:10911", 3: "10.0.0.3:10911"}
HA = {1: "10.0.0.1:10912", 2: "10.0.0.2:10912", 3: "10.0.0.3:10912"}


@pytest.mark.parametrize(
    ("current", "wake"),
    [
        (HA[1], "10.0.0.1:0"),  # still the old master's: the same host at port 0 (every connect fails at once)
        ("10.0.0.1:0", HA[1]),  # what the last wake set: back to what it followed
        (HA[2], None),  # follows another master: its client was replaced, its role change completed
        (None, None),  # reset (a slave's new client before it learns an address): not ours to touch
    ],
)
def test_the_wake_alternates_between_what_it_followed_and_port_zero(current: str | None, wake: str | None) -> None:
    assert held_role_change_wake(HA[1], current) == wake


def test_port_zero_keeps_the_host() -> None:
    assert inert_ha_address("rmq-b-1.rmq-b.ns.svc:10912") == "rmq-b-1.rmq-b.ns.svc:0"


@dataclass
class HeldGroup:
    """Broker 2 was elected; its promotion is held until its HA client's address changes (the wake), or for ever
    (``refuses``: a broker that did not take the role change). Slave 3 replicates from whatever it is pointed at."""

    refuses: bool = False
    promoted: bool = False
    ha_masters: dict[str, str | None] = field(default_factory=lambda: {ADDR[2]: HA[1], ADDR[3]: HA[1]})
    reads: int = 0
    sets: list[tuple[str, str | None]] = field(default_factory=list)

    async def get_ha_info(self, addr: str, **_: Any) -> HaInfo:
        master = addr == ADDR[2] and self.promoted
        return HaInfo(HA[2] if master else None, addr if master else None, 0)

    async def get_ha_status(self, addr: str, **_: Any) -> HaStatus:
        self.reads += 1
        if addr == ADDR[2] and self.promoted:
            return HaStatus(master=True, master_commit_log_max_offset=100, in_sync_slave_nums=0)
        client = HaClient(self.ha_masters.get(addr), 0, 100, self.reads, self.reads, 100, True)
        return HaStatus(master=False, master_commit_log_max_offset=100, in_sync_slave_nums=0, client=client)

    async def set_ha_master(self, addr: str, info: HaInfo, **_: Any) -> None:
        self.sets.append((addr, info.master_ha_address))
        changed = self.ha_masters.get(addr) != info.master_ha_address
        self.ha_masters[addr] = info.master_ha_address
        if addr == ADDR[2] and changed and not self.refuses:
            self.promoted = True


def _state() -> GroupState:
    replicas = tuple(
        ReplicaObservation(f"g-{i - 1}", ADDR[i], True, broker_id=i, is_master=i == 1, ha_master_address=None)
        for i in ADDR
    )
    return GroupState(
        "g", 0.0, True, True, "10.0.0.9:9878", master_broker_id=2, master_address=ADDR[2], replicas=replicas
    )


def test_a_held_promotion_is_woken_and_its_slave_attached() -> None:
    group, state = HeldGroup(), _state()
    asyncio.run(attach_slaves_to(group, state, state.replicas[1], {1}, 1.0))  # type: ignore[arg-type]
    assert group.sets == [(ADDR[2], "10.0.0.1:0"), (ADDR[3], HA[2])]


def test_a_broker_that_refused_the_role_change_is_only_ever_pointed_at_what_it_followed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(routes, "PROMOTION_HOLD_S", 0.0)  # the window: one second of rounds
    group, state = HeldGroup(refuses=True), _state()
    asyncio.run(attach_slaves_to(group, state, state.replicas[1], {1}, 1.0))  # type: ignore[arg-type]
    values = [value for addr, value in group.sets if addr == ADDR[2]]
    assert len(values) >= 2 and set(values) == {"10.0.0.1:0", HA[1]}
    assert values[0] == "10.0.0.1:0" and all(a != b for a, b in itertools.pairwise(values))
    assert [s for s in group.sets if s[0] == ADDR[3]] == []  # no master to point the slave at
    assert group.ha_masters[ADDR[2]] in {"10.0.0.1:0", HA[1]}
