"""The roll planner, table-driven, every refusal and wait included."""

from __future__ import annotations

import dataclasses

import pytest

from rocketmq_operator.core.roll import RollFacts, RollReplica, StepKind, plan_roll

OLD, NEW = "r1", "r2"


def replica(i: int, rev: str = OLD, alive: bool = True, offset: int | None = 1000, master: bool = False) -> RollReplica:
    return RollReplica(
        name=f"broker-a-{i - 1}",
        current_revision=rev,
        desired_revision=NEW,
        alive=alive,
        broker_id=i,
        is_master=master,
        max_offset=offset,
    )


def facts(
    *replicas: RollReplica,
    master: int | None = 1,
    sss: tuple[int, ...] = (1, 2, 3),
    floor: int = 2,
    **kw: object,
) -> RollFacts:
    reps = replicas or (replica(1, master=True), replica(2), replica(3))
    return RollFacts(
        now=1000.0,
        controller_reachable=bool(kw.pop("controller", True)),
        master_broker_id=master,
        sync_state_set=sss,
        replicas=tuple(reps),
        min_in_sync_replicas=floor,
        **kw,  # type: ignore[arg-type]
    )


CASES = [
    # name, facts, kind, replica, target, reason
    (
        # Replica 3 is down (being replaced) but still named in the set: it acks nothing, so restarting slave 2
        # now would leave the master alone, below minInSyncReplicas 2.
        "a-member-that-is-down-does-not-count",
        facts(replica(1, master=True), replica(2), replica(3, rev=NEW, alive=False)),
        StepKind.WAIT,
        None,
        None,
        "WaitingForSyncStateSet",
    ),
    ("slaves-first-highest-name", facts(), StepKind.RESTART, "broker-a-2", None, "RestartSlave"),
    (
        "out-of-sync-first",
        facts(sss=(1, 2)),
        StepKind.RESTART,
        "broker-a-2",
        None,
        "RestartOutOfSync",
    ),
    (
        "unready-first",
        facts(replica(1, master=True), replica(2, alive=False), replica(3), sss=(1, 3)),
        StepKind.RESTART,
        "broker-a-1",
        None,
        "RestartOutOfSync",
    ),
    (
        "second-slave",
        facts(replica(1, master=True), replica(2), replica(3, NEW)),
        StepKind.RESTART,
        "broker-a-1",
        None,
        "RestartSlave",
    ),
    (
        "master-last-switchover-to-most-caught-up",
        facts(replica(1, master=True), replica(2, NEW, offset=900), replica(3, NEW, offset=1000)),
        StepKind.SWITCHOVER,
        "broker-a-0",
        3,
        "SwitchoverBeforeRestart",
    ),
    (
        "old-master-restarted-after-switchover",
        facts(replica(1), replica(2, NEW, master=True), replica(3, NEW), master=2),
        StepKind.RESTART,
        "broker-a-0",
        None,
        "RestartSlave",
    ),
    (
        "strategy-restart-skips-switchover",
        facts(replica(1, master=True), replica(2, NEW), replica(3, NEW), strategy="restart"),
        StepKind.RESTART,
        "broker-a-0",
        None,
        "RestartMaster",
    ),
    (
        "supervised-waits-for-approval",
        facts(replica(1, master=True), replica(2, NEW), replica(3, NEW), strategy="supervised"),
        StepKind.WAIT,
        "broker-a-0",
        None,
        "WaitingForApproval",
    ),
    (
        "supervised-approved",
        facts(replica(1, master=True), replica(2, NEW), replica(3, NEW), strategy="supervised", master_approved=True),
        StepKind.SWITCHOVER,
        "broker-a-0",
        2,
        "SwitchoverBeforeRestart",
    ),
    (
        "refused-below-min-in-sync-always",
        facts(floor=3),
        StepKind.BLOCKED,
        "broker-a-2",
        None,
        "BelowMinInSyncReplicas",
    ),
    (
        "waits-when-set-too-small-now",
        facts(replica(1, master=True), replica(2), replica(3, NEW, alive=False), sss=(1, 2)),
        StepKind.WAIT,
        None,
        None,
        "WaitingForSyncStateSet",
    ),
    (
        "all-ack-waits-for-a-down-member",
        facts(
            replica(1, master=True),
            replica(2),
            replica(3, NEW, alive=False),
            sss=(1, 2, 3),
            floor=1,
            all_ack_in_sync_state_set=True,
        ),
        StepKind.WAIT,
        None,
        None,
        "WaitingForSyncStateSet",
    ),
    (
        "waits-for-restarted-replica",
        facts(replica(1, master=True), replica(2), replica(3, NEW, offset=None), last_restarted="broker-a-2"),
        StepKind.WAIT,
        None,
        None,
        "WaitingForReplica",
    ),
    (
        "waits-until-level",
        facts(replica(1, master=True, offset=10**9), replica(2), replica(3, NEW), last_restarted="broker-a-2"),
        StepKind.WAIT,
        None,
        None,
        "WaitingForReplica",
    ),
    (
        "restarted-replica-still-on-old-revision",
        facts(last_restarted="broker-a-2"),
        StepKind.WAIT,
        None,
        None,
        "WaitingForReplica",
    ),
    (
        "timeout-becomes-blocked",
        facts(last_restarted="broker-a-2", waiting_since=500.0, timeout_s=300.0),
        StepKind.BLOCKED,
        None,
        None,
        "RolloutTimeout",
    ),
    (
        "back-and-level-then-next",
        facts(replica(1, master=True), replica(2), replica(3, NEW), last_restarted="broker-a-2"),
        StepKind.RESTART,
        "broker-a-1",
        None,
        "RestartSlave",
    ),
    ("paused", facts(paused=True), StepKind.WAIT, None, None, "RolloutPaused"),
    ("controller-down", facts(controller=False), StepKind.WAIT, None, None, "ControllerUnavailable"),
    (
        "no-master",
        facts(replica(1, alive=False), replica(2), replica(3), sss=(1,)),
        StepKind.WAIT,
        None,
        None,
        "NoMaster",
    ),
    (
        "no-switchover-target",
        facts(replica(1, master=True), replica(2, NEW, alive=False), replica(3, NEW), sss=(1, 2)),
        StepKind.WAIT,
        None,
        None,
        "NoSwitchoverTarget",
    ),
    (
        "done",
        facts(replica(1, NEW, master=True), replica(2, NEW), replica(3, NEW)),
        StepKind.DONE,
        None,
        None,
        "RolloutComplete",
    ),
    (
        "done-but-one-not-back",
        facts(replica(1, NEW, master=True), replica(2, NEW), replica(3, NEW), sss=(1, 2)),
        StepKind.WAIT,
        None,
        None,
        "WaitingForSyncStateSet",
    ),
]


@pytest.mark.parametrize(
    ("name", "given", "kind", "replica_name", "target", "reason"), CASES, ids=[c[0] for c in CASES]
)
def test_plan_roll(
    name: str, given: RollFacts, kind: StepKind, replica_name: str | None, target: int | None, reason: str
) -> None:
    step = plan_roll(given)
    assert (step.kind, step.reason) == (kind, reason), step.text
    if replica_name is not None:
        assert step.replica == replica_name
    assert step.target_broker_id == target


def test_refusal_names_replica_rule_and_fix() -> None:
    step = plan_roll(facts(floor=3))
    assert "broker-a-2" in step.message and "minInSyncReplicas 3" in step.message
    assert "IN_SYNC_REPLICAS_NOT_ENOUGH" in step.message
    assert step.fix.startswith("lower spec.quorum.minInSyncReplicas to 2")


def test_every_wait_times_out_into_blocked() -> None:
    waiting = facts(replica(1, master=True), replica(2), replica(3, NEW, alive=False), sss=(1, 2))
    assert plan_roll(waiting).kind is StepKind.WAIT
    late = dataclasses.replace(waiting, waiting_since=0.0, timeout_s=10.0)
    step = plan_roll(late)
    assert step.kind is StepKind.BLOCKED and step.fix


def test_old_master_rejoins_before_its_restart() -> None:
    after = facts(replica(1), replica(2, NEW, master=True), replica(3, NEW), master=2, sss=(2, 3))
    assert plan_roll(after).reason == "RestartOutOfSync"  # without the memory it would be restarted at once
    step = plan_roll(dataclasses.replace(after, switched_from="broker-a-0"))
    assert (step.kind, step.reason) == (StepKind.WAIT, "WaitingForReplica")


def five(*revs: str, master: int = 5, alive: tuple[int, ...] = (1, 2, 3, 4, 5)) -> tuple[RollReplica, ...]:
    return tuple(replica(i, revs[i - 1], alive=i in alive, master=i == master) for i in range(1, 6))


REMOVING = frozenset({"broker-a-3", "broker-a-4"})
SCALE_IN = [
    # the master is on a removed ordinal: a switchover to a kept in-sync replica first
    (five(NEW, NEW, NEW, NEW, NEW), 5, (1, 2, 3, 4, 5), 2, StepKind.SWITCHOVER, "SwitchoverBeforeRemoval"),
    # then the highest removed replica, then the next
    (five(NEW, NEW, NEW, NEW, NEW, master=1), 1, (1, 2, 3, 4, 5), 2, StepKind.REMOVE, "RemoveReplica"),
    # removal before any restart of the kept replicas (totalReplicas changed)
    (five(OLD, OLD, OLD, NEW, NEW, master=1), 1, (1, 2, 3, 4, 5), 2, StepKind.REMOVE, "RemoveReplica"),
    # never below the floor: 5 in the set, floor 5
    (five(NEW, NEW, NEW, NEW, NEW, master=1), 1, (1, 2, 3, 4, 5), 5, StepKind.BLOCKED, "BelowMinInSyncReplicas"),
    # a removed replica outside the set goes at once, whatever the floor
    (five(NEW, NEW, NEW, NEW, NEW, master=1, alive=(1, 2, 3, 4)), 1, (1, 2, 3, 4), 4, StepKind.REMOVE, "RemoveReplica"),
]


@pytest.mark.parametrize(("reps", "master", "sss", "floor", "kind", "reason"), SCALE_IN)
def test_scale_in(
    reps: tuple[RollReplica, ...], master: int, sss: tuple[int, ...], floor: int, kind: StepKind, reason: str
) -> None:
    step = plan_roll(facts(*reps, master=master, sss=sss, floor=floor, removing=REMOVING))
    assert (step.kind, step.reason) == (kind, reason), step.text
    if kind is StepKind.SWITCHOVER:
        assert step.replica == "broker-a-4" and step.target_broker_id not in (4, 5)
    if kind is StepKind.REMOVE:
        assert step.replica == "broker-a-4"
    if kind is StepKind.BLOCKED:
        assert "removing replica broker-a-4" in step.message


def on(r: RollReplica, node: str) -> RollReplica:
    return dataclasses.replace(r, node=node)


@pytest.mark.parametrize(
    ("case", "nodes", "offsets", "target"),
    [
        # Five replicas on three nodes; the master (1) shares n1 with 4, and 2 shares n2 with 5: only 3 is alone.
        ("alone on its node beats more caught up", ("n1", "n2", "n3", "n1", "n2"), (900, 1000, 990, 1000, 1000), 3),
        ("nodes not known: the most caught up", (None,) * 5, (900, 990, 1000, 1000, 980), 3),
        ("all crowded: the most caught up, then the lowest id", ("n1", "n1", "n2", "n2", "n1"), (0, 5, 5, 5, 9), 5),
        ("equal: the lowest id alone", ("n1", "n2", "n3", "n4", "n1"), (0, 7, 7, 7, 7), 2),
    ],
)
def test_the_master_goes_where_a_lost_node_takes_it_alone(
    case: str, nodes: tuple[str | None, ...], offsets: tuple[int, ...], target: int
) -> None:
    reps = [replica(i + 1, rev=OLD if i == 0 else NEW, offset=offsets[i], master=i == 0) for i in range(5)]
    reps = [on(r, n) if n else r for r, n in zip(reps, nodes, strict=True)]
    step = plan_roll(facts(*reps, sss=(1, 2, 3, 4, 5)))
    assert step.kind is StepKind.SWITCHOVER, (case, step)
    assert step.target_broker_id == target, (case, step)
    assert "best-placed, most caught-up" in step.message
