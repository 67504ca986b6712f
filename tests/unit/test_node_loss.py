"""`core.node_loss.plan_node_loss`: which replicas are lost with their node, and which pods may be deleted.
Table-driven, refusals included: never a deletion on NotReady alone, never under the default policy."""

from __future__ import annotations

import pytest

from rocketmq_operator.api.models import FailoverSpec
from rocketmq_operator.core.node_loss import (
    LostReason,
    NodeHealth,
    NodeLossPolicy,
    ReplicaPod,
    node_lost_reason,
    plan_node_loss,
)

REPORT, DELETE = NodeLossPolicy.REPORT, NodeLossPolicy.DELETE_PODS
PODS = (ReplicaPod("broker-a-0", "n1"), ReplicaPod("broker-a-1", "n2"), ReplicaPod("broker-a-2", "n3"))


def nodes(**changed: NodeHealth) -> dict[str, NodeHealth]:
    out = {n: NodeHealth(n) for n in ("n1", "n2", "n3")}
    out.update(changed)
    return out


@pytest.mark.parametrize(
    ("node", "reason"),
    [
        (None, None),  # not read: never taken as lost
        (NodeHealth("n1"), None),
        (NodeHealth("n1", ready="False"), LostReason.NOT_READY),
        (NodeHealth("n1", ready="Unknown"), LostReason.UNREACHABLE),
        (NodeHealth("n1", exists=False), LostReason.NODE_DELETED),
        (NodeHealth("n1", exists=False, ready="Unknown"), LostReason.NODE_DELETED),
    ],
)
def test_when_a_node_counts_as_lost(node: NodeHealth | None, reason: LostReason | None) -> None:
    assert node_lost_reason(node) is reason


@pytest.mark.parametrize(
    ("case", "node", "policy", "lost", "deleted", "held_words"),
    [
        ("healthy", NodeHealth("n1"), DELETE, [], [], []),
        ("unreachable, default policy", NodeHealth("n1", ready="Unknown"), REPORT, ["broker-a-0"], [], ["Report"]),
        (
            "unreachable, DeletePods, not fenced: refused",
            NodeHealth("n1", ready="Unknown"),
            DELETE,
            ["broker-a-0"],
            [],
            ["not confirmed off", "out-of-service"],
        ),
        (
            "NotReady, DeletePods, not fenced: refused",
            NodeHealth("n1", ready="False"),
            DELETE,
            ["broker-a-0"],
            [],
            ["not confirmed off"],
        ),
        (
            "out-of-service taint, DeletePods",
            NodeHealth("n1", ready="Unknown", out_of_service=True),
            DELETE,
            ["broker-a-0"],
            ["broker-a-0"],
            [],
        ),
        (
            "out-of-service taint, default policy: left alone",
            NodeHealth("n1", ready="Unknown", out_of_service=True),
            REPORT,
            ["broker-a-0"],
            [],
            ["Report"],
        ),
        ("Node deleted, DeletePods", NodeHealth("n1", exists=False), DELETE, ["broker-a-0"], ["broker-a-0"], []),
        (
            "out-of-service on a Ready node: not lost, nothing deleted",
            NodeHealth("n1", out_of_service=True),
            DELETE,
            [],
            [],
            [],
        ),
    ],
)
def test_plan(
    case: str,
    node: NodeHealth,
    policy: NodeLossPolicy,
    lost: list[str],
    deleted: list[str],
    held_words: list[str],
) -> None:
    plan = plan_node_loss(PODS, nodes(n1=node), policy)
    assert [r.replica for r in plan.lost] == lost, case
    assert list(plan.force_delete) == deleted, case
    held = " ".join(h.text for h in plan.held)
    assert all(w in held for w in held_words), (case, held)
    assert bool(plan.held) == bool(held_words), case


def test_a_pod_not_scheduled_is_not_lost_and_an_unread_node_is_not_lost() -> None:
    pods = (ReplicaPod("broker-a-0", None), ReplicaPod("broker-a-1", "gone-from-the-read"))
    assert plan_node_loss(pods, nodes(), DELETE) == plan_node_loss((), {}, DELETE)


def test_every_replica_on_a_lost_node_is_reported_with_its_reason() -> None:
    pods = (*PODS, ReplicaPod("broker-a-3", "n1"))
    plan = plan_node_loss(pods, nodes(n1=NodeHealth("n1", ready="Unknown")), REPORT)
    assert [(r.replica, r.reason) for r in plan.lost] == [
        ("broker-a-0", LostReason.UNREACHABLE),
        ("broker-a-3", LostReason.UNREACHABLE),
    ]
    assert plan.lost[0].message == "replica broker-a-0: its node n1 is unreachable (Ready Unknown)"


def test_the_spec_field_names_the_policies_and_defaults_to_report() -> None:
    assert FailoverSpec().node_loss == NodeLossPolicy.REPORT.value
    assert {p.value for p in NodeLossPolicy} == {"Report", "DeletePods"}
    with pytest.raises(ValueError, match=r"nodeLoss|node_loss"):
        FailoverSpec.model_validate({"nodeLoss": "Delete"})
