"""Status from observed state: conditions, needAcks/writable, history — table-driven on plain data."""

from __future__ import annotations

import dataclasses

import pytest

from rocketmq_operator.api.models import BrokerGroupSpec, ControllerRef, QuorumSpec
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.core.status import build_broker_status

SPEC = BrokerGroupSpec(
    replicas=3, controller_ref=ControllerRef(name="c"), quorum=QuorumSpec(in_sync_replicas=2, min_in_sync_replicas=2)
)
ADDR = {1: "127.0.0.1:10911", 2: "127.0.0.1:10921", 3: "127.0.0.1:10931"}


def state(
    master: int | None, sss: tuple[int, ...], up: tuple[int, ...], epoch: int = 1, controller: bool = True
) -> GroupState:
    return GroupState(
        group="g",
        observed_at=0.0,
        controller_mode=True,
        controller_reachable=controller,
        controller_error=None if controller else "controller quorum unreadable: refused",
        master_broker_id=master if controller else None,
        master_address=ADDR[master] if (controller and master) else None,
        master_epoch=epoch if controller else None,
        sync_state_set=sss if controller else (),
        sync_state_set_epoch=epoch if controller else None,
        replicas=tuple(
            ReplicaObservation(
                f"g-{i - 1}", ADDR[i], reachable=i in up, broker_id=i, max_offset=100 if i in up else None
            )
            for i in (1, 2, 3)
        ),
    )


def cond(status: object, type_: str) -> str:
    return next(c.status for c in status.conditions if c.type == type_)  # type: ignore[attr-defined]


CASES = [
    # id, state, writable, needAcks, {condition: status}
    (
        "healthy",
        state(1, (1, 2, 3), (1, 2, 3)),
        True,
        2,
        {
            "Ready": "True",
            "Available": "True",
            "Degraded": "False",
            "QuorumAtRisk": "False",
            "NoEligibleMaster": "False",
        },
    ),
    (
        "one-slave-out",
        state(1, (1, 2), (1, 2)),
        True,
        2,
        {"Ready": "False", "Available": "True", "Degraded": "False", "QuorumAtRisk": "True"},
    ),
    ("shrunk-below-min", state(1, (1,), (1,)), False, 2, {"Available": "False", "Degraded": "True"}),
    ("dead-master-alone", state(1, (1,), (2, 3)), False, 0, {"NoEligibleMaster": "True", "Available": "False"}),
    (
        "controller-down",
        state(1, (1, 2, 3), (1, 2, 3), controller=False),
        False,
        0,
        {"ControllerUnavailable": "True", "Ready": "False"},
    ),
]


@pytest.mark.parametrize(("case_id", "st", "writable", "need", "conds"), CASES, ids=[c[0] for c in CASES])
def test_status(case_id: str, st: GroupState, writable: bool, need: int, conds: dict[str, str]) -> None:
    status = build_broker_status(SPEC, st, None, "2026-01-01T00:00:00Z")
    assert status.writable is writable
    assert status.need_acks == need
    for type_, value in conds.items():
        assert cond(status, type_) == value, (type_, [c for c in status.conditions if c.type == type_])


def test_master_change_goes_to_history_and_transition_time_is_kept() -> None:
    first = build_broker_status(SPEC, state(1, (1, 2, 3), (1, 2, 3), epoch=1), None, "t1")
    second = build_broker_status(SPEC, state(2, (2, 3), (2, 3), epoch=2), first, "t2")
    assert [(h.from_broker_id, h.to_broker_id, h.epoch) for h in second.history] == [(1, 2, 2)]
    assert second.master is not None and second.master.replica == "g-1"
    available = next(c for c in second.conditions if c.type == "Available")
    assert available.last_transition_time == "t1"  # still True: no flip


def test_controller_down_keeps_last_known_master_and_data_plane() -> None:
    first = build_broker_status(SPEC, state(1, (1, 2, 3), (1, 2, 3)), None, "t1")
    down = state(1, (1, 2, 3), (1, 2, 3), controller=False)
    down = GroupState(
        **{
            **down.__dict__,
            "replicas": tuple(
                ReplicaObservation(**{**r.__dict__, "is_master": r.broker_id == 1}) for r in down.replicas
            ),
        }
    )
    second = build_broker_status(SPEC, down, first, "t2")
    assert second.master == first.master and not second.history
    assert second.writable is True  # the master keeps serving with the last known SyncStateSet
    assert cond(second, "ControllerUnavailable") == "True"


# Slave-acting-master (classic) mode: brokerId is the ordinal, the master is ordinal 0, and the master reports
# its in-sync HA connections by the slave's client port (not its broker address).
SAM_SPEC = BrokerGroupSpec(
    replicas=3,
    ha_mode="slaveActingMaster",
    quorum=QuorumSpec(in_sync_replicas=2, min_in_sync_replicas=1, auto_degrade=True),
)


def classic(offsets: tuple[int | None, ...], in_sync_connections: int) -> GroupState:
    return GroupState(
        group="g",
        observed_at=0.0,
        controller_mode=False,
        master_broker_id=0 if offsets[0] is not None else None,
        master_address=ADDR[1] if offsets[0] is not None else None,
        replicas=tuple(
            ReplicaObservation(f"g-{i}", ADDR[i + 1], reachable=o is not None, broker_id=i, max_offset=o)
            for i, o in enumerate(offsets)
        ),
        classic_in_sync_addresses=tuple(f"127.0.0.1:{50000 + i}" for i in range(in_sync_connections)),
    )


@pytest.mark.parametrize(
    ("offsets", "connections", "in_sync"),
    [
        ((1000, 1000, 1000), 2, [True, True, True]),  # both slaves level with the master
        ((1000, 1000, 400), 1, [True, True, False]),  # the master counts one: the slave nearest its offset
        ((1000, 400, 1000), 1, [True, False, True]),
        ((1000, 1000, None), 1, [True, True, False]),  # the third broker does not answer
        ((1000, 1000, 1000), 0, [True, False, False]),  # no in-sync connection (e.g. HA link cut)
        ((None, 1000, 1000), 2, [False, False, False]),  # no master: nothing is in sync
    ],
)
def test_classic_replica_in_sync_agrees_with_the_group_count(
    offsets: tuple[int | None, ...], connections: int, in_sync: list[bool]
) -> None:
    status = build_broker_status(SAM_SPEC, classic(offsets, connections), None, "t")
    assert [r.in_sync for r in status.replicas] == in_sync
    degraded = next(c for c in status.conditions if c.type == "Degraded")
    assert degraded.message.startswith(f"{sum(in_sync)} in sync"), degraded.message


def _controller_down(master_says: int | None) -> GroupState:
    """What `observe` returns with every controller killed: no SyncStateSet, no controller-assigned ids, and
    each broker's own HA runtime info (`is_master`)."""
    return GroupState(
        group="g",
        observed_at=0.0,
        controller_mode=True,
        controller_reachable=False,
        controller_error="controller quorum unreadable: refused",
        replicas=tuple(
            ReplicaObservation(f"g-{i - 1}", ADDR[i], reachable=True, is_master=i == master_says, max_offset=100)
            for i in (1, 2, 3)
        ),
    )


@pytest.mark.parametrize(
    ("master_says", "master_replica", "writable"),
    [
        (1, "g-0", True),  # the last known master still says it is master: it serves with the last known set
        (2, "g-1", True),  # another broker says it is master: that is the one shown, not the last known one
        (None, None, False),  # no broker says it is master: no master, nothing writable
    ],
)
def test_controller_down_roles_master_and_writable_come_from_what_the_brokers_report(
    master_says: int | None, master_replica: str | None, writable: bool
) -> None:
    first = build_broker_status(SPEC, state(1, (1, 2, 3), (1, 2, 3)), None, "t1")
    down = build_broker_status(SPEC, _controller_down(master_says), first, "t2")
    roles = {r.name: r.role for r in down.replicas}
    assert [n for n, role in roles.items() if role == "master"] == ([master_replica] if master_replica else [])
    assert down.master is not None and down.master.replica == master_replica
    assert down.writable is writable
    # the writable claim and the role column rest on the same fact: a master in the role column
    assert down.writable is ("master" in roles.values() and writable)
    assert cond(down, "ControllerUnavailable") == "True"
    if master_says == 1:  # same broker as last known: its id and epoch carry over
        assert down.master == first.master
    # the SyncStateSet the counts keep (the last known one) is the one each replica's inSync shows
    assert [r.in_sync for r in down.replicas] == [True, True, True]
    assert [r.broker_id for r in down.replicas] == [1, 2, 3]


def test_a_named_master_that_answers_as_a_slave_is_not_writable_and_says_why() -> None:
    """The controller names broker 1 master; broker 1 answers as a slave (it missed its role change): nothing is
    writable, whatever the SyncStateSet says, and Available says who and what the operator does about it."""
    observed = state(1, (1, 2, 3), (1, 2, 3))
    roles = {1: False, 2: False, 3: False}
    replicas = tuple(dataclasses.replace(r, is_master=roles[r.broker_id or 0]) for r in observed.replicas)
    status = build_broker_status(SPEC, dataclasses.replace(observed, replicas=replicas), None, "2026-01-01T00:00:00Z")
    assert status.writable is False and cond(status, "Ready") == "False"
    available = next(c for c in status.conditions if c.type == "Available")
    assert (available.status, available.reason) == ("False", "NamedMasterIsSlave"), available
    assert "the controller names g-0 master, but it answers as a slave" in available.message
    # Unknown (its HA status unreadable): the controller's word holds.
    unknown = tuple(dataclasses.replace(r, is_master=None) for r in observed.replicas)
    assert build_broker_status(SPEC, dataclasses.replace(observed, replicas=unknown), None, "t").writable is True
