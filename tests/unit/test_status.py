"""Status from observed state: conditions, needAcks/writable, history — table-driven on plain data."""

from __future__ import annotations

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
