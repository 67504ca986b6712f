"""Failover and switchover decisions, table-driven, refusals included."""

from __future__ import annotations

import dataclasses

import pytest

from rocketmq_operator.core.failover import (
    ActionKind,
    FenceSeen,
    GroupFacts,
    MasterEvidence,
    ProcessState,
    ReplicaFacts,
    SwitchoverTargetError,
    confirmation_probe_s,
    plan_abandoned_fences,
    plan_failover,
    plan_fence_deposed,
    plan_fence_rollback,
    plan_named_master_as_slave,
    plan_reattach,
    plan_switchover,
    switchover_target_id,
    track_deposed,
    unconnected_slaves,
)

STOPPED = MasterEvidence(process=ProcessState.STOPPED)  # the tables below: the platform sees the process stopped


def facts(
    master: int | None = 1,
    sss: tuple[int, ...] = (1, 2, 3),
    alive: tuple[int, ...] = (1, 2, 3),
    offsets: dict[int, int] | None = None,
    controller: bool = True,
    age: float = 0.0,
    not_serving_for: float | None = None,
    evidence: MasterEvidence = STOPPED,
    controller_alive: dict[int, bool] | None = None,
) -> GroupFacts:
    offsets = offsets or {1: 300, 2: 300, 3: 200}
    return GroupFacts(
        now=100.0,
        observed_at=100.0 - age,
        controller_reachable=controller,
        master_broker_id=master,
        sync_state_set=sss,
        replicas={
            i: ReplicaFacts(i, i in alive, offsets.get(i), controller_alive=(controller_alive or {}).get(i))
            for i in (1, 2, 3)
        },
        master_not_serving_since=None if not_serving_for is None else 100.0 - not_serving_for,
        master_evidence=evidence,
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


IDS: dict[str, int | None] = {"broker-a-0": 1, "broker-a-1": 3, "broker-a-2": 2, "broker-a-3": None}


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        ("broker-a-1", 3),  # a replica name: the id the controller assigned it, not its ordinal
        ("broker-a-2", 2),
        (" broker-a-0 ", 1),
        ("2", 2),  # a broker id as it is (plan_switchover refuses one no replica has)
        ("17", 17),
        ("broker-b-0", "neither a broker id nor a replica of the group (replicas: broker-a-0, broker-a-1, "),
        ("", "neither a broker id nor a replica"),
        ("-1", "neither a broker id nor a replica"),
        ("broker-a-3", "replica broker-a-3 has no broker id yet"),
    ],
)
def test_switchover_target_id(wanted: str, expected: int | str) -> None:
    if isinstance(expected, int):
        assert switchover_target_id(wanted, IDS) == expected
        return
    with pytest.raises(SwitchoverTargetError) as raised:
        switchover_target_id(wanted, IDS, given_as="--to", shown_by="`local status`")
    message = str(raised.value)
    assert message.startswith(f"--to {wanted!r}: ") and expected in message, message
    assert "fix: " in message and "`local status`" in message and "\n" not in message


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
    connections: int | None = None,
    unconnected_for: dict[int, float] | None = None,
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
        master_ha_connections=connections,
        unconnected_since={i: 100.0 - t for i, t in (unconnected_for or {}).items()},
    )


def stuck(
    replicating: dict[int, str | None] | None = None,
    sss: tuple[int, ...] = (1, 2),
    connections: int | None = 1,
    unconnected_for: dict[int, float] | None = None,
) -> GroupFacts:
    """Master 2 with slave 1 in the set; slave 3 outside it (by default attached elsewhere)."""
    return attach_facts(
        replicating=replicating or {1: "10.0.0.2:10912", 3: "10.0.0.1:10912"},
        sss=sss,
        connections=connections,
        unconnected_for=unconnected_for,
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
    # 3 is attached to the old master (1, a slave now): the master has 1 connection (from 1, in the set) for 2
    # alive slaves, and 3 is the only one outside the set. Restarted after the grace period.
    (
        "unconnected-past-grace",
        stuck(connections=1, unconnected_for={3: 20}),
        [("Restart", 3)],
        "ReattachSlaves",
        False,
    ),
    # Unconnected for 1 s or more: its HA client is woken once (it may be waiting out a failed connection)...
    ("unconnected-wake", stuck(connections=1, unconnected_for={3: 5}), [("Wake", 3)], "ReattachSlaves", False),
    # ... and not again in the same episode; restarted only after the grace period.
    (
        "unconnected-woken-within-grace",
        dataclasses.replace(stuck(connections=1, unconnected_for={3: 5}), woken=frozenset({3})),
        [],
        "SlavesAttached",
        False,
    ),
    ("unconnected-just-seen", stuck(connections=1, unconnected_for={3: 0.5}), [], "SlavesAttached", False),
    ("unconnected-first-seen", stuck(connections=1), [], "SlavesAttached", False),
    # Both slaves connected (3 is catching up outside the set): nothing to restart.
    ("outside-but-connected", stuck(connections=2, unconnected_for={3: 60}), [], "SlavesAttached", False),
    # In the SyncStateSet it counts as in sync: never restarted.
    ("connected-in-set", stuck(sss=(1, 2, 3), connections=1, unconnected_for={3: 60}), [], "SlavesAttached", False),
    # The master's connections are unknown: nothing restarted.
    ("connections-unknown", stuck(connections=None, unconnected_for={3: 60}), [], "SlavesAttached", False),
    # Two outside the set, one connection for two slaves: which one is connected is unknown: nothing restarted.
    ("ambiguous", stuck(sss=(2,), connections=1, unconnected_for={1: 60, 3: 60}), [], "SlavesAttached", False),
    (
        "orphan-and-unconnected",
        stuck(replicating={1: None, 3: "b"}, sss=(2,), connections=0, unconnected_for={3: 60, 1: 60}),
        [("Reattach", 1), ("Restart", 1), ("Restart", 3)],
        "ReattachSlaves",
        False,
    ),
]


def test_unconnected_slaves() -> None:
    assert unconnected_slaves(stuck(connections=1)) == [3]
    assert unconnected_slaves(stuck(connections=2)) == []
    assert unconnected_slaves(stuck(connections=None)) == []
    assert unconnected_slaves(attach_facts(sss=(2,), connections=0, alive=(2, 3))) == [3]


@pytest.mark.parametrize(("case", "facts_", "actions", "reason", "refused"), REATTACH, ids=[c[0] for c in REATTACH])
def test_plan_reattach(
    case: str, facts_: GroupFacts, actions: list[tuple[str, int]], reason: str, refused: bool
) -> None:
    decision = plan_reattach(facts_)
    assert kinds(decision) == actions
    assert decision.reason == reason and decision.refused is refused
    assert decision.message


def test_detection_time_is_the_spec_field() -> None:
    hung = facts(alive=(2, 3), not_serving_for=2.5)
    assert plan_failover(hung, allow_unclean=False, detection_s=4.0).reason == "WaitingForController"
    tuned = plan_failover(hung, allow_unclean=False, detection_s=2.0)
    assert kinds(tuned) == [("Fence", 1), ("Elect", 2)]
    assert "detectionSeconds" in plan_failover(hung, allow_unclean=False, detection_s=4.0).message


# A slave pointed at an address that is not the confirmed master's HA address (a name server handed it a deposed
# master) is pointed at the master again; with the master's HA address unknown, only orphans are.
WRONG_MASTER = [
    ("stale-address", "master-ha", {1: "master-ha", 3: "old-ha"}, [("Reattach", 3)]),
    ("right-address", "master-ha", {1: "master-ha", 3: "master-ha"}, []),
    ("address-unknown", None, {1: "master-ha", 3: "old-ha"}, []),
    ("orphan-too", "master-ha", {1: None, 3: "old-ha"}, [("Reattach", 1), ("Reattach", 3)]),
]


@pytest.mark.parametrize(
    ("case", "master_ha", "replicating", "actions"), WRONG_MASTER, ids=[c[0] for c in WRONG_MASTER]
)
def test_reattach_points_slaves_at_the_confirmed_master_only(
    case: str, master_ha: str | None, replicating: dict[int, str | None], actions: list[tuple[str, int]]
) -> None:
    f = dataclasses.replace(attach_facts(replicating=replicating), master_ha_address=master_ha)
    assert kinds(plan_reattach(f)) == actions


def deposed_facts(
    master: int | None = 2,
    alive: tuple[int, ...] = (2, 3),
    roles: dict[int, bool | None] | None = None,
    deposed: dict[int, float] | None = None,
) -> GroupFacts:
    roles = roles if roles is not None else {1: None, 2: True, 3: False}
    return GroupFacts(
        now=100.0,
        observed_at=100.0,
        controller_reachable=True,
        master_broker_id=master,
        sync_state_set=(2,),
        replicas={i: ReplicaFacts(i, i in alive, 100, is_master=roles.get(i)) for i in (1, 2, 3)},
        deposed_at=deposed if deposed is not None else {1: 99.5},
    )


FENCE_DEPOSED = [
    # Hung (SIGSTOP) or partitioned: it would wake up as master of the old epoch. Fenced at once.
    ("deposed-hung", deposed_facts(), [("FenceDeposed", 1)], "FenceDeposedMaster"),
    # Answers as master: the role-change notice may still be on its way; fenced after the grace.
    ("deposed-master-within-grace", deposed_facts(alive=(1, 2, 3), roles={1: True, 2: True}), [], "NoDeposedMaster"),
    (
        "deposed-master-past-grace",
        deposed_facts(alive=(1, 2, 3), roles={1: True, 2: True}, deposed={1: 95.0}),
        [("FenceDeposed", 1)],
        "FenceDeposedMaster",
    ),
    ("deposed-now-slave", deposed_facts(alive=(1, 2, 3), roles={1: False, 2: True}), [], "NoDeposedMaster"),
    # Re-elected: it is the master again, not deposed.
    ("re-elected", deposed_facts(master=1, alive=(1, 2, 3), roles={1: True}), [], "NoDeposedMaster"),
    ("nothing-deposed", deposed_facts(deposed={}), [], "NoDeposedMaster"),
    # Needs no controller answer: the deposition was read before.
    (
        "controller-down-still-fences",
        dataclasses.replace(deposed_facts(), controller_reachable=False),
        [("FenceDeposed", 1)],
        "FenceDeposedMaster",
    ),
]


@pytest.mark.parametrize(("case", "f", "actions", "reason"), FENCE_DEPOSED, ids=[c[0] for c in FENCE_DEPOSED])
def test_plan_fence_deposed(case: str, f: GroupFacts, actions: list[tuple[str, int]], reason: str) -> None:
    decision = plan_fence_deposed(f)
    assert (kinds(decision), decision.reason) == (actions, reason)
    assert decision.message


TRACK = [
    # The controller moved from 1 to 2: 1 is watched from now on.
    ("master-changed", {}, 1, deposed_facts(deposed={}), {1: 100.0}),
    ("no-change", {}, 2, deposed_facts(deposed={}), {}),
    ("first-observation", {}, None, deposed_facts(deposed={}), {}),
    # It answered as a slave: safe, forgotten.
    ("now-slave", {1: 90.0}, 2, deposed_facts(alive=(1, 2, 3), roles={1: False, 2: True}, deposed={}), {}),
    ("still-hung", {1: 90.0}, 2, deposed_facts(deposed={}), {1: 90.0}),
    # 1 is master again (no longer watched); 2, the master it replaced, is watched now.
    ("re-elected", {1: 90.0}, 2, deposed_facts(master=1, alive=(1, 2), roles={1: True}, deposed={}), {2: 100.0}),
    # A restarted operator (no previous master remembered) sees 1 answer as master while the controller names 2.
    (
        "second-master-no-memory",
        {},
        None,
        deposed_facts(alive=(1, 2, 3), roles={1: True, 2: True}, deposed={}),
        {1: 100.0},
    ),
    (
        "second-master-already-watched",
        {1: 90.0},
        2,
        deposed_facts(alive=(1, 2, 3), roles={1: True, 2: True}, deposed={}),
        {1: 90.0},
    ),
    # Not without a readable controller: whom it names is unknown.
    (
        "second-master-controller-down",
        {},
        None,
        dataclasses.replace(
            deposed_facts(alive=(1, 2, 3), roles={1: True, 2: True}, deposed={}), controller_reachable=False
        ),
        {},
    ),
]


@pytest.mark.parametrize(("case", "before", "previous", "f", "after"), TRACK, ids=[c[0] for c in TRACK])
def test_track_deposed(
    case: str, before: dict[int, float], previous: int | None, f: GroupFacts, after: dict[int, float]
) -> None:
    assert track_deposed(before, previous, f) == after


# A master silent past detectionSeconds (4 s here): the platform's view of its process, a confirmation probe and
# the controller's heartbeat table decide whether it is dead or only slow (a loaded machine). The tables above
# stand for a process the platform sees stopped.
UNKNOWN = MasterEvidence(process=ProcessState.UNKNOWN)
RUNNING = MasterEvidence(process=ProcessState.RUNNING)
PROBE_FAILED = dataclasses.replace(RUNNING, probe_answered=False, probe_s=4.0)
EVIDENCE = [
    (
        "stopped-fenced-at-once",
        MasterEvidence(process=ProcessState.STOPPED),
        5,
        None,
        [("Fence", 1), ("Elect", 2)],
        "FailoverToInSyncMember",
        "its process is stopped",
    ),
    (
        "gone-fenced-at-once",
        MasterEvidence(process=ProcessState.GONE),
        5,
        None,
        [("Fence", 1), ("Elect", 2)],
        "FailoverToInSyncMember",
        "its process is gone",
    ),
    ("running-asked-first", RUNNING, 5, None, [("Confirm", 1)], "ConfirmingMasterSilence", "asking once more"),
    ("unknown-asked-first", UNKNOWN, 5, None, [("Confirm", 1)], "ConfirmingMasterSilence", "asking once more"),
    (
        "answered-is-slow-not-dead",
        dataclasses.replace(RUNNING, probe_answered=True, probe_s=4.0),
        30,
        None,
        [],
        "MasterSlow",
        "answered a 4s confirmation probe",
    ),
    ("failed-but-heartbeating-waits", PROBE_FAILED, 5, True, [], "MasterUnconfirmed", "fenced after 8s"),
    (
        "failed-and-heartbeats-lost",
        PROBE_FAILED,
        5,
        False,
        [("Fence", 1), ("Elect", 2)],
        "FailoverToInSyncMember",
        "the controller no longer receives its heartbeats",
    ),
    (
        "failed-and-silent-twice-the-detection",
        PROBE_FAILED,
        8,
        True,
        [("Fence", 1), ("Elect", 2)],
        "FailoverToInSyncMember",
        "silent for twice",
    ),
    (
        "unknown-failed-twice-the-detection-but-heartbeating-fenced-not-replaced",
        dataclasses.replace(UNKNOWN, probe_answered=False, probe_s=4.0),
        8,
        True,
        [("Fence", 1)],
        "MasterFencedAwaitingElection",
        "once the controller stops receiving its heartbeats",
    ),
    (
        "unknown-failed-twice-the-detection-heartbeats-lost",
        dataclasses.replace(UNKNOWN, probe_answered=False, probe_s=4.0),
        8,
        False,
        [("Fence", 1), ("Elect", 2)],
        "FailoverToInSyncMember",
        "no longer receives its heartbeats",
    ),
    (
        "unknown-failed-heartbeats-unknown",
        dataclasses.replace(UNKNOWN, probe_answered=False, probe_s=4.0),
        5,
        None,
        [],
        "MasterUnconfirmed",
        "not visible to the platform",
    ),
]


@pytest.mark.parametrize(
    ("case", "evidence", "silent_s", "heartbeating", "actions", "reason", "said"),
    EVIDENCE,
    ids=[c[0] for c in EVIDENCE],
)
def test_slow_is_told_from_dead(
    case: str,
    evidence: MasterEvidence,
    silent_s: float,
    heartbeating: bool | None,
    actions: list[tuple[str, int]],
    reason: str,
    said: str,
) -> None:
    alive = None if heartbeating is None else {1: heartbeating}
    f = facts(alive=(2, 3), not_serving_for=silent_s, evidence=evidence, controller_alive=alive)
    d = plan_failover(f, allow_unclean=False, detection_s=4.0)
    assert (kinds(d), d.reason) == (actions, reason)
    assert said in d.message


def test_confirmation_probe_is_the_detection_time_within_bounds() -> None:
    assert [confirmation_probe_s(s) for s in (0.5, 4, 60)] == [1.0, 4.0, 10.0]


ROLLBACK = [
    ("still-master-same-epoch", True, 1, 5, [("Unfence", 1)], "RollBackFence"),
    ("elected-meanwhile", True, 2, 6, [], "ElectedMeanwhile"),
    ("same-master-new-epoch", True, 1, 6, [], "ElectedMeanwhile"),
    ("controller-unreadable", False, None, None, [], "ControllerUnavailable"),
]


@pytest.mark.parametrize(
    ("case", "readable", "master", "epoch", "actions", "reason"), ROLLBACK, ids=[c[0] for c in ROLLBACK]
)
def test_a_fence_is_rolled_back_only_when_no_election_can_have_happened(
    case: str, readable: bool, master: int | None, epoch: int | None, actions: list[tuple[str, int]], reason: str
) -> None:
    d = plan_fence_rollback(1, 5, controller_readable=readable, master_now=master, epoch_now=epoch)
    assert (kinds(d), d.reason, d.refused) == (actions, reason, not actions)
    assert d.message


ABANDONED = [
    ("slave-lapsed", [FenceSeen(2, False, True)], [("Unfence", 2)], "AbandonedFence"),
    ("master-lapsed", [FenceSeen(1, True, True)], [("Unfence", 1)], "AbandonedFence"),
    ("lease-running", [FenceSeen(1, True, False), FenceSeen(2, False, False)], [], "NoAbandonedFence"),
    ("deposed-still-master", [FenceSeen(3, True, True)], [], "NoAbandonedFence"),
    ("role-unknown", [FenceSeen(2, None, True)], [], "NoAbandonedFence"),
]


@pytest.mark.parametrize(("case", "seen", "actions", "reason"), ABANDONED, ids=[c[0] for c in ABANDONED])
def test_fences_a_switchover_left_behind(
    case: str, seen: list[FenceSeen], actions: list[tuple[str, int]], reason: str
) -> None:
    d = plan_abandoned_fences(facts(), seen)
    assert (kinds(d), d.reason) == (actions, reason)


def test_fences_left_behind_wait_for_a_readable_controller() -> None:
    d = plan_abandoned_fences(facts(controller=False), [FenceSeen(1, True, True)])
    assert d.refused and d.reason == "ControllerUnavailable" and not d.actions


# --- a named master that answers as a slave (controllers that lost an election reused its epoch) ---


def named_slave(
    roles: dict[int, bool | None], since: float | None, *, now: float = 100.0, controller: bool = True
) -> GroupFacts:
    return GroupFacts(
        now=now,
        observed_at=now,
        controller_reachable=controller,
        master_broker_id=1,
        sync_state_set=(1,),
        replicas={i: ReplicaFacts(i, role is not None, 100, is_master=role) for i, role in roles.items()},
        named_master_slave_since=since,
    )


@pytest.mark.parametrize(
    ("facts_", "reason", "restarted"),
    [
        (named_slave({1: True, 2: False, 3: False}, None), "NamedMasterActs", []),
        (named_slave({1: False, 2: False, 3: False}, 90.0), "NamedMasterBecoming", []),  # 10 s: its change may come
        (named_slave({1: False, 2: False, 3: False}, 85.0), "NamedMasterIsSlave", [1]),  # 15 s: restarted
        (named_slave({1: None, 2: False, 3: False}, 50.0), "NamedMasterActs", []),  # not answering: failover's case
        (named_slave({1: False, 2: False}, 50.0, controller=False), "ControllerUnavailable", []),  # refused
        (dataclasses.replace(named_slave({1: False}, 50.0), observed_at=80.0), "StaleObservation", []),  # refused
    ],
)
def test_a_named_master_that_stays_a_slave_is_restarted(facts_: GroupFacts, reason: str, restarted: list[int]) -> None:
    decision = plan_named_master_as_slave(facts_)
    assert decision.reason == reason, decision.message
    assert [a.broker_id for a in decision.actions if a.kind is ActionKind.RESTART] == restarted
    assert decision.refused == (reason in ("ControllerUnavailable", "StaleObservation"))
