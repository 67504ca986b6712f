"""The switchover before a node drain, table-driven, every hold included (core.drain)."""

from __future__ import annotations

import dataclasses

import pytest

from rocketmq_operator.core.drain import DrainFacts, DrainKind, DrainReplica, NodeFacts, plan_drain


def rep(i: int, node: str | None = None, offset: int = 1000, **kw: object) -> DrainReplica:
    """Replica i (broker id i, pod broker-a-<i-1>), by default on node n<i-1>."""
    return DrainReplica(
        name=f"broker-a-{i - 1}",
        broker_id=i,
        alive=bool(kw.pop("alive", True)),
        max_offset=offset,
        node=node if node is not None or kw.pop("unscheduled", False) else f"n{i - 1}",
        **kw,  # type: ignore[arg-type]
    )


def nodes(*cordoned: str, unknown: tuple[str, ...] = (), error: str = "") -> dict[str, NodeFacts]:
    out = {f"n{i}": NodeFacts(f"n{i}", f"n{i}" not in cordoned) for i in range(3)}
    for name in unknown:
        if error:
            out[name] = NodeFacts(name, None, error)
        else:
            del out[name]
    return out


def facts(
    *replicas: DrainReplica, master: int | None = 1, sss: tuple[int, ...] = (1, 2, 3), **kw: object
) -> DrainFacts:
    return DrainFacts(
        controller_reachable=bool(kw.pop("controller", True)),
        master_broker_id=master,
        sync_state_set=sss,
        replicas=replicas or (rep(1), rep(2, offset=900), rep(3)),
        nodes=kw.pop("nodes", nodes("n0")),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


CASES = [
    # name, facts, kind, reason, target broker id, words the message (with its fix) must have
    (
        "cordoned-master-to-most-caught-up-on-schedulable-node",
        facts(),
        DrainKind.SWITCHOVER,
        "SwitchoverBeforeDrain",
        3,
        ["node n0", "broker-a-2", "cordoned"],
    ),
    (
        "a-slave-on-a-cordoned-node-is-no-target",
        facts(rep(1), rep(2, offset=900), rep(3, node="n0")),
        DrainKind.SWITCHOVER,
        "SwitchoverBeforeDrain",
        2,
        [],
    ),
    (
        "a-slave-outside-the-sync-state-set-is-no-target",
        facts(sss=(1, 2)),
        DrainKind.SWITCHOVER,
        "SwitchoverBeforeDrain",
        2,
        [],
    ),
    (
        "a-slave-whose-pod-is-not-scheduled-is-no-target",
        facts(rep(1), rep(2, offset=900), rep(3, unscheduled=True)),
        DrainKind.SWITCHOVER,
        "SwitchoverBeforeDrain",
        2,
        [],
    ),
    (
        "a-slave-on-an-unknown-node-is-no-target",
        facts(nodes=nodes("n0", unknown=("n2",))),
        DrainKind.SWITCHOVER,
        "SwitchoverBeforeDrain",
        2,
        [],
    ),
    (
        "a-terminating-slave-is-no-target",
        facts(rep(1), rep(2, offset=900), rep(3, terminating=True)),
        DrainKind.SWITCHOVER,
        "SwitchoverBeforeDrain",
        2,
        [],
    ),
    (
        "no-target-every-node-cordoned",
        facts(nodes=nodes("n0", "n1", "n2")),
        DrainKind.HOLD,
        "NoSchedulableTarget",
        None,
        ["node n0", "broker-a-1: node n1 cordoned too", "uncordon n0", "add a node"],
    ),
    (
        "no-target-slaves-down-or-out-of-sync",
        facts(rep(1), rep(2, alive=False), rep(3), sss=(1, 2)),
        DrainKind.HOLD,
        "NoSchedulableTarget",
        None,
        ["broker-a-1: not answering", "broker-a-2: not in the SyncStateSet"],
    ),
    ("one-replica", facts(rep(1), sss=(1,)), DrainKind.HOLD, "NoSchedulableTarget", None, ["no other replica"]),
    ("master-node-schedulable", facts(nodes=nodes()), DrainKind.NONE, "MasterNodeSchedulable", None, []),
    (
        "after-the-switch-nothing-more",
        facts(rep(1), rep(2), rep(3), master=3),
        DrainKind.NONE,
        "MasterNodeSchedulable",
        None,
        [],
    ),
    (
        "master-pod-not-scheduled",
        facts(rep(1, unscheduled=True), rep(2), rep(3)),
        DrainKind.NONE,
        "MasterNotScheduled",
        None,
        [],
    ),
    (
        "master-node-unknown",
        facts(nodes=nodes(unknown=("n0",))),
        DrainKind.HOLD,
        "NodeUnknown",
        None,
        ["node n0", "does not exist", "rbac.clusterRead"],
    ),
    (
        "master-node-unreadable",
        facts(nodes=nodes(unknown=("n0",), error="HTTP 403: forbidden")),
        DrainKind.HOLD,
        "NodeUnknown",
        None,
        ["HTTP 403", "rbac.clusterRead"],
    ),
    ("paused", facts(paused=True), DrainKind.HOLD, "Paused", None, ["rollout-paused", "uncordon n0"]),
    ("paused-but-schedulable", facts(paused=True, nodes=nodes()), DrainKind.NONE, "MasterNodeSchedulable", None, []),
    (
        "roll-in-progress",
        facts(roll_phase="Rolling"),
        DrainKind.HOLD,
        "RolloutInProgress",
        None,
        ["status.rollout.phase Rolling", "not fought"],
    ),
    (
        "controller-unreachable",
        facts(controller=False),
        DrainKind.HOLD,
        "ControllerUnavailable",
        None,
        ["controller quorum is unreadable"],
    ),
    ("no-master", facts(master=None), DrainKind.NONE, "NoServingMaster", None, []),
    ("master-not-answering", facts(rep(1, alive=False), rep(2), rep(3)), DrainKind.NONE, "NoServingMaster", None, []),
]


@pytest.mark.parametrize(("name", "given", "kind", "reason", "target", "words"), CASES, ids=[c[0] for c in CASES])
def test_plan_drain(
    name: str, given: DrainFacts, kind: DrainKind, reason: str, target: int | None, words: list[str]
) -> None:
    step = plan_drain(given)
    assert (step.kind, step.reason) == (kind, reason), step.text
    assert step.target_broker_id == target
    for word in words:
        assert word in step.text, (word, step.text)
    if kind is DrainKind.HOLD:
        assert step.fix and step.node == "n0" and step.master == "broker-a-0"
    if kind is DrainKind.SWITCHOVER:
        assert step.target == f"broker-a-{target - 1}" and step.master == "broker-a-0"  # type: ignore[operator]


def test_the_target_is_the_rolls_choice_most_caught_up_then_lowest_id() -> None:
    tie = facts(rep(1), rep(2, offset=1000), rep(3, offset=1000))
    assert plan_drain(tie).target_broker_id == 2
    behind = dataclasses.replace(tie, replicas=(rep(1), rep(2, offset=10), rep(3, offset=1000)))
    assert plan_drain(behind).target_broker_id == 3


def test_the_drain_prefers_a_slave_alone_on_its_node_over_a_more_caught_up_one() -> None:
    # Four replicas: the master on cordoned n0; 2 and 4 share n1; 3 is alone on n2 though less caught up.
    step = plan_drain(facts(rep(1), rep(2, offset=1000), rep(3, offset=900), rep(4, node="n1", offset=1000),
                            sss=(1, 2, 3, 4)))  # fmt: skip
    assert step.kind is DrainKind.SWITCHOVER and step.target_broker_id == 3, step
    assert "best-placed, most caught-up" in step.message
