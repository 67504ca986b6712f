"""Node loss on Kubernetes: `core.node_loss.plan_node_loss` over the group's pods and the Nodes they run on.

Contract: `node_loss_pass` runs in every group pass (the platform's own steps, last). It reads each Node that one
of the group's broker pods is bound to (one get per node; a Node that is gone is read as deleted, one that cannot
be read is left out: never taken as lost), asks `plan_node_loss` with `spec.failover.nodeLoss`, force-deletes
(grace period 0) only the pods the plan names, and writes the `NodeLost` condition: True with every lost replica
and what was held and why, False once none is lost (never written for a group that never lost a node). An Event
per change of the lost set and per pod deleted. Nothing is remembered but the set last announced (`memory`); a
restarted operator reads the nodes again. An API error becomes part of the condition's message; it is never
raised out of the pass.
"""

from __future__ import annotations

from typing import Any

import kopf

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.core.node_loss import (
    CONDITION,
    OUT_OF_SERVICE_TAINT,
    NodeHealth,
    NodeLossPlan,
    NodeLossPolicy,
    ReplicaPod,
    plan_node_loss,
)
from rocketmq_operator.platforms.kubernetes.group_memory import GroupMemory
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError
from rocketmq_operator.platforms.kubernetes.resources import write_condition

JSON = dict[str, Any]


def node_health(name: str, node: JSON | None) -> NodeHealth:
    """What `plan_node_loss` needs from one Node as the API server returns it (None: not found)."""
    if node is None:
        return NodeHealth(name, exists=False, ready="Unknown")
    ready = next(
        (c.get("status") for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"),
        None,
    )
    taints = (node.get("spec") or {}).get("taints") or []
    return NodeHealth(
        name,
        ready=str(ready or "Unknown"),
        out_of_service=any(t.get("key") == OUT_OF_SERVICE_TAINT for t in taints),
    )


def replica_pods(pods: list[JSON]) -> list[ReplicaPod]:
    return [
        ReplicaPod(
            p["metadata"]["name"],
            (p.get("spec") or {}).get("nodeName"),
            terminating=bool(p["metadata"].get("deletionTimestamp")),
        )
        for p in sorted(pods, key=lambda p: str(p["metadata"]["name"]))
    ]


async def read_node_health(kube: KubeClient, names: set[str]) -> tuple[dict[str, NodeHealth], list[str]]:
    """Each named node's health, and the errors of those that could not be read (left out of the map)."""
    out: dict[str, NodeHealth] = {}
    errors: list[str] = []
    for name in sorted(names):
        try:
            out[name] = node_health(name, await kube.get("Node", None, name))
        except KubeError as exc:
            errors.append(f"node {name} could not be read: {exc}")
    return out, errors


def condition_text(plan: NodeLossPlan, errors: list[str]) -> str:
    parts = [r.message for r in plan.lost]
    parts += [f"force-deleted pod {name} (its node is confirmed off)" for name in plan.force_delete]
    parts += [h.text for h in plan.held]
    parts += errors
    return "; ".join(parts)


async def node_loss_pass(
    kube: KubeClient,
    bg: BrokerGroup,
    body: JSON,
    resource: kopf.Body,
    pods: list[JSON],
    memory: GroupMemory,
    logger: Any,
) -> NodeLossPlan:
    """One node-loss step for the group (see the module docstring). Returns the plan as carried out."""
    namespace = body["metadata"]["namespace"]
    replicas = replica_pods(pods)
    nodes, errors = await read_node_health(kube, {r.node for r in replicas if r.node})
    plan = plan_node_loss(replicas, nodes, NodeLossPolicy(bg.spec.failover.node_loss))
    for name in plan.force_delete:
        try:
            await kube.delete("Pod", namespace, name, grace_period_s=0)
        except KubeError as exc:
            errors.append(f"pod {name} could not be deleted: {exc}")
            continue
        text = f"force-deleted pod {name}: its node is confirmed off (spec.failover.nodeLoss: DeletePods)"
        logger.warning("%s", text)
        kopf.event(resource, type="Warning", reason="NodeLossPodDeleted", message=text)
    conditions = (body.get("status") or {}).get("conditions") or []
    reported = any(c.get("type") == CONDITION for c in conditions)
    lost = tuple(sorted(f"{r.replica}@{r.node}" for r in plan.lost))
    if plan.lost:
        await write_condition(kube, body, CONDITION, ("True", plan.lost[0].reason.value, condition_text(plan, errors)))
    elif reported:
        await write_condition(kube, body, CONDITION, ("False", "NoNodeLost", "every replica's node is Ready"))
    if memory.said_nodes_lost != lost and (plan.lost or memory.said_nodes_lost):
        memory.said_nodes_lost = lost
        text = condition_text(plan, errors) if plan.lost else "every replica's node is Ready again"
        kopf.event(
            resource,
            type="Warning" if plan.lost else "Normal",
            reason=CONDITION if plan.lost else "NodeRecovered",
            message=text[:1000],
        )
    return plan
