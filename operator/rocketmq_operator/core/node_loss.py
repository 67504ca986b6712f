"""What the operator does about a replica whose node is lost. Pure.

Contract: `plan_node_loss(replicas, nodes, policy)` looks at one observation of a group's pods and of the nodes
they run on, and returns a `NodeLossPlan`:

* `lost`: every replica whose node is gone (the Node object deleted) or not Ready (`False`, or `Unknown`: the
  node controller has not heard from the kubelet for its grace period, 50 s by default). Reported: a `NodeLost`
  condition, an Event per transition and the condition's gauge. A replica without a node (Pending, not
  scheduled) is not lost: it never ran anywhere; nor is one whose node could not be read.
* `force_delete`: only under the opt-in policy `DeletePods`, and only for a lost replica whose node is
  **confirmed fenced**: the Node object is gone, or it carries the `node.kubernetes.io/out-of-service` taint (an
  administrator's or a cloud controller's statement that the machine is off; Kubernetes' non-graceful node
  shutdown). The StatefulSet then recreates the identity elsewhere (with network storage) or when the node
  returns (local volumes).
* `held`: every lost replica that is not deleted, with the reason and the fix. Never a deletion on NotReady
  alone: a node that is NotReady cannot be told from a network partition, and a pod deleted while its process
  still runs would give two brokers one identity and one store. Waiting costs redundancy, not availability: the
  controller has already elected a new master among the replicas that answer.

Kubernetes itself also acts on fenced nodes (the pod garbage collector removes a terminating pod on an
out-of-service node, and orphaned pods of a deleted Node after 40 s); `force_delete` only does it sooner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

CONDITION = "NodeLost"
OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service"


class NodeLossPolicy(StrEnum):
    REPORT = "Report"
    DELETE_PODS = "DeletePods"


class LostReason(StrEnum):
    NODE_DELETED = "NodeDeleted"
    NOT_READY = "NodeNotReady"
    UNREACHABLE = "NodeUnreachable"  # Ready Unknown: the node controller has not heard from the kubelet


@dataclass(frozen=True)
class NodeHealth:
    name: str
    exists: bool = True
    ready: str = "True"  # the Ready condition's status: True, False or Unknown
    out_of_service: bool = False  # carries the node.kubernetes.io/out-of-service taint


@dataclass(frozen=True)
class ReplicaPod:
    name: str  # the pod
    node: str | None  # spec.nodeName; None: not scheduled
    terminating: bool = False


@dataclass(frozen=True)
class LostReplica:
    replica: str
    node: str
    reason: LostReason
    fenced: bool  # the node is confirmed off (deleted or out-of-service)

    @property
    def message(self) -> str:
        what = {
            LostReason.NODE_DELETED: "was deleted",
            LostReason.NOT_READY: "is NotReady",
            LostReason.UNREACHABLE: "is unreachable (Ready Unknown)",
        }[self.reason]
        return f"replica {self.replica}: its node {self.node} {what}"


@dataclass(frozen=True)
class HeldReplica:
    replica: str
    node: str
    reason: str
    fix: str

    @property
    def text(self) -> str:
        return f"{self.reason}; fix: {self.fix}" if self.fix else self.reason


@dataclass(frozen=True)
class NodeLossPlan:
    lost: tuple[LostReplica, ...] = ()
    force_delete: tuple[str, ...] = ()  # pods to delete with grace period 0
    held: tuple[HeldReplica, ...] = ()


def node_lost_reason(node: NodeHealth | None) -> LostReason | None:
    """Why a node counts as lost, or None when it does not. A node that was not read (None) is not lost."""
    if node is None:
        return None
    if not node.exists:
        return LostReason.NODE_DELETED
    if node.ready == "Unknown":
        return LostReason.UNREACHABLE
    if node.ready != "True":
        return LostReason.NOT_READY
    return None


def plan_node_loss(
    replicas: Sequence[ReplicaPod],
    nodes: Mapping[str, NodeHealth],
    policy: NodeLossPolicy = NodeLossPolicy.REPORT,
) -> NodeLossPlan:
    lost: list[LostReplica] = []
    delete: list[str] = []
    held: list[HeldReplica] = []
    for pod in replicas:
        if pod.node is None:
            continue
        node = nodes.get(pod.node)
        reason = node_lost_reason(node)
        if reason is None or node is None:
            continue
        fenced = not node.exists or node.out_of_service
        lost.append(LostReplica(pod.name, pod.node, reason, fenced))
        if policy is NodeLossPolicy.REPORT:
            held.append(
                HeldReplica(
                    pod.name,
                    pod.node,
                    f"pod {pod.name} left on lost node {pod.node} (spec.failover.nodeLoss: Report)",
                    f"once the machine is confirmed off, taint the node {OUT_OF_SERVICE_TAINT}=nodeshutdown:NoExecute "
                    "or delete the Node; or set spec.failover.nodeLoss: DeletePods",
                )
            )
        elif fenced:
            delete.append(pod.name)
        else:
            held.append(
                HeldReplica(
                    pod.name,
                    pod.node,
                    f"pod {pod.name} not deleted: node {pod.node} is lost but not confirmed off (a partitioned "
                    "node looks the same, and its broker may still run)",
                    f"once the machine is confirmed off, taint the node {OUT_OF_SERVICE_TAINT}=nodeshutdown:NoExecute "
                    "or delete the Node",
                )
            )
    return NodeLossPlan(tuple(lost), tuple(delete), tuple(held))
