"""Failover and switchover decisions, table-driven, refusals included."""

from __future__ import annotations

import pytest

from rocketmq_operator.plan.failover import (
    ActionKind,
    GroupFacts,
    ReplicaFacts,
    misattached_slaves,
    plan_failover,
    plan_reattach,
    plan_switchover,
)


def facts(
    master: int | None = 1,
    sss: tuple[int, ...] = (1, 2, 3),
    alive: tuple[int, ...] = (1, 2, 3),
    offsets: dict[int, int] | None = None,
    controller: bool = True,
    age: float = 0.0,
    not_serving_for: float | None = None,
) -> GroupFacts:
    offsets = offsets or {1: 300, 2: 300, 3: 200}
    return GroupFacts(
        now=100.0,
        observed_at=100.0 - age,
        controller_reachable=controller,
        master_broker_id=master,
        sync_state_set=sss,
        replicas={i: ReplicaFacts(i, i in alive, offsets.get(i)) for i in (1, 2, 3)},
        master_not_serving_since=None if not_serving_for is None else 100.0 - not_serving_for,
    )


def kinds(decision: object) -> list[tuple[str, int]]:
    return [(a.kind.value, a.broker_id) for a in decision.actions]  # type: ignore[attr-defined]


FAILOVER = [
    ("serving-master", facts(), False, [], "MasterServing", False),
    ("controller-down", facts(alive=(2, 3), controller=False), False, [], "ControllerUnavailable", True),
    ("stale", facts(alive=(2, 3), age=30), False, [], "StaleObservation", True),
    ("within-grace", facts(alive=(2, 3), not_serving_for=1), False, [], "WaitingForController", False),
    (
        "stuck-master",
        facts(alive=(2, 3), not_serving_for=10),
        False,
        [("Fence", 1), ("Elect", 2)],
        "FailoverToInSyncMember",
        False,
    ),
    (
        "best-offset-wins",
        facts(alive=(2, 3), offsets={2: 100, 3: 300}, not_serving_for=10),
        False,
        [("Fence", 1), ("Elect", 3)],
        "FailoverToInSyncMember",
        False,
    ),
    (
        "dead-master-alone-refused",
        facts(sss=(1,), alive=(2, 3), not_serving_for=10),
        False,
        [],
        "NoEligibleMaster",
        True,
    ),
    (
        "dead-master-alone-unclean",
        facts(sss=(1,), alive=(2, 3), not_serving_for=10),
        True,
        [("Fence", 1), ("Elect", 2)],
        "UncleanFailover",
        False,
    ),
    ("nobody-alive", facts(sss=(1,), alive=(), not_serving_for=10), True, [], "NoReplicaAlive", True),
    (
        "no-master-member-alive",
        facts(master=None, sss=(2,), alive=(2, 3)),
        False,
        [("Elect", 2)],
        "FailoverToInSyncMember",
        False,
    ),
]


@pytest.mark.parametrize(
    ("case_id", "f", "unclean", "actions", "reason", "refused"), FAILOVER, ids=[c[0] for c in FAILOVER]
)
def test_plan_failover(
    case_id: str, f: GroupFacts, unclean: bool, actions: list[tuple[str, int]], reason: str, refused: bool
) -> None:
    d = plan_failover(f, allow_unclean=unclean)
    assert (kinds(d), d.reason, d.refused) == (actions, reason, refused)


def test_unclean_is_loud() -> None:
    d = plan_failover(
        facts(sss=(1,), alive=(2, 3), offsets={1: 500, 2: 300, 3: 100}, not_serving_for=10), allow_unclean=True
    )
    assert d.unclean and d.may_lose_bytes == 200 and "UNCLEAN" in d.message and "may be lost" in d.message


SWITCHOVER = [
    ("ok", facts(), 2, [("Fence", 1), ("WaitCatchUp", 2), ("Elect", 2), ("Unfence", 1)], "Switchover", False),
    ("non-member", facts(sss=(1, 2)), 3, [], "TargetNotInSync", True),
    ("dead-target", facts(alive=(1, 3)), 2, [], "TargetNotAlive", True),
    ("unknown", facts(), 7, [], "UnknownBroker", True),
    ("already", facts(), 1, [], "AlreadyMaster", True),
    ("controller-down", facts(controller=False), 2, [], "ControllerUnavailable", True),
    ("no-master", facts(master=None), 2, [], "NoMaster", True),
]


@pytest.mark.parametrize(
    ("case_id", "f", "target", "actions", "reason", "refused"), SWITCHOVER, ids=[c[0] for c in SWITCHOVER]
)
def test_plan_switchover(
    case_id: str, f: GroupFacts, target: int, actions: list[tuple[str, int]], reason: str, refused: bool
) -> None:
    d = plan_switchover(f, target)
    assert (kinds(d), d.reason, d.refused) == (actions, reason, refused)
    if refused:
        assert d.message


def test_switchover_refusal_names_the_set() -> None:
    d = plan_switchover(facts(sss=(1, 2)), 3)
    assert "not in the SyncStateSet [1, 2]" in d.message


def test_action_kinds_are_strings() -> None:
    assert ActionKind.FENCE == "Fence"


def attach_facts(
    master: int | None = 2,
    roles: dict[int, bool | None] | None = None,
    replicating: dict[int, str | None] | None = None,
    alive: tuple[int, ...] = (1, 2, 3),
    controller: bool = True,
    age: float = 0.0,
    sss: tuple[int, ...] | None = None,
    master_ha: str | None = "10.0.0.2:10912",
    misattached_for: dict[int, float] | None = None,
) -> GroupFacts:
    roles = {1: False, 2: True, 3: False} if roles is None else roles
    replicating = {1: "10.0.0.2:10912", 3: None} if replicating is None else replicating
    return GroupFacts(
        now=100.0,
        observed_at=100.0 - age,
        controller_reachable=controller,
        master_broker_id=master,
        sync_state_set=sss if sss is not None else ((2,) if master == 2 else ()),
        replicas={
            i: ReplicaFacts(i, i in alive, 100, is_master=roles.get(i), replicating_from=replicating.get(i))
            for i in (1, 2, 3)
        },
        master_ha_address=master_ha,
        misattached_since={i: 100.0 - t for i, t in (misattached_for or {}).items()},
    )


REATTACH = [
    ("orphan-slave", attach_facts(), [("Reattach", 3)], "ReattachSlaves", False),
    (
        "two-orphans",
        attach_facts(replicating={1: None, 3: ""}),
        [("Reattach", 1), ("Reattach", 3)],
        "ReattachSlaves",
        False,
    ),
    ("all-attached", attach_facts(replicating={1: "a", 3: "a"}), [], "SlavesAttached", False),
    ("orphan-dead", attach_facts(alive=(1, 2)), [], "SlavesAttached", False),
    # A broker with no readable role (no HA status yet) is not a slave we know of.
    ("role-unknown", attach_facts(roles={1: False, 2: True, 3: None}), [], "SlavesAttached", False),
    ("controller-down", attach_facts(controller=False), [], "ControllerUnavailable", True),
    ("stale", attach_facts(age=30), [], "StaleObservation", True),
    ("no-master", attach_facts(master=None), [], "MasterNotConfirmed", True),
    ("master-dead", attach_facts(alive=(1, 3)), [], "MasterNotConfirmed", True),
    # The controller names 2, but 2 does not (yet) answer as master: never point slaves at it.
    ("master-not-confirmed", attach_facts(roles={1: False, 2: False, 3: False}), [], "MasterNotConfirmed", True),
    ("master-role-unknown", attach_facts(roles={1: False, 2: None, 3: False}), [], "MasterNotConfirmed", True),
    # 3 replicates from the old master (1, a slave now) and is out of the set: restarted after the grace.
    (
        "misattached-past-grace",
        attach_facts(replicating={1: "10.0.0.2:10912", 3: "10.0.0.1:10912"}, misattached_for={3: 15}),
        [("Restart", 3)],
        "ReattachSlaves",
        False,
    ),
    (
        "misattached-within-grace",
        attach_facts(replicating={1: "10.0.0.2:10912", 3: "10.0.0.1:10912"}, misattached_for={3: 5}),
        [],
        "SlavesAttached",
        False,
    ),
    (
        "misattached-first-seen",
        attach_facts(replicating={1: "10.0.0.2:10912", 3: "10.0.0.1:10912"}),
        [],
        "SlavesAttached",
        False,
    ),
    # In the SyncStateSet it is counted as in sync: never restarted.
    (
        "misattached-but-in-set",
        attach_facts(replicating={1: "10.0.0.2:10912", 3: "10.0.0.1:10912"}, sss=(2, 3), misattached_for={3: 60}),
        [],
        "SlavesAttached",
        False,
    ),
    # The master's HA address is unknown: nothing to compare with, nothing restarted.
    (
        "master-ha-unknown",
        attach_facts(replicating={1: "a", 3: "b"}, master_ha=None, misattached_for={1: 60, 3: 60}),
        [],
        "SlavesAttached",
        False,
    ),
    (
        "orphan-and-misattached",
        attach_facts(replicating={1: None, 3: "10.0.0.1:10912"}, misattached_for={3: 60}),
        [("Reattach", 1), ("Restart", 3)],
        "ReattachSlaves",
        False,
    ),
]


def test_misattached_slaves() -> None:
    facts_ = attach_facts(replicating={1: "10.0.0.2:10912", 3: "10.0.0.1:10912"})
    assert misattached_slaves(facts_) == [3]
    assert misattached_slaves(attach_facts(replicating={1: "x", 3: "y"}, master_ha=None)) == []
    assert misattached_slaves(attach_facts(replicating={1: "x", 3: "y"}, alive=(2, 3))) == [3]


@pytest.mark.parametrize(("case", "facts_", "actions", "reason", "refused"), REATTACH, ids=[c[0] for c in REATTACH])
def test_plan_reattach(
    case: str, facts_: GroupFacts, actions: list[tuple[str, int]], reason: str, refused: bool
) -> None:
    decision = plan_reattach(facts_)
    assert kinds(decision) == actions
    assert decision.reason == reason and decision.refused is refused
    assert decision.message
