"""The switchover before a node drain on Kubernetes: `core.drain.plan_drain`, with pods and their nodes.

Contract: `drain_pass` runs in the group pass of a controller-mode group, after the replication policy and only
when it did nothing, before the roll step. It reads Nodes by name, per pass, with no watch: first the master's
pod's node (one get per pass while the group is settled), and only when that one is cordoned the nodes of the
other pods (at most spec.replicas gets). A watch of every Node would cost a cluster-wide list and a stream per
operator for what a 2-second observation already sees in time: `kubectl drain` cordons before it evicts, and the
eviction of the master's pod still has to pass its PodDisruptionBudget and grace period. A switchover is the one
`control.switchover.switchover` (as the roll and the `switchover-to` annotation), followed, as in the roll, by
handing every slave the new master's HA address. The outcome is the `DrainSwitchover` condition (True:
switched; False: held, with the reason, the node and the fix; removed once the master runs on a schedulable node
after a hold) and an Event per switchover and per change of reason. Nothing is remembered but which reason was
last announced (`memory`); an API or broker error becomes the condition, never an exception out of the pass.
"""

from __future__ import annotations

from typing import Any

import kopf

from rocketmq_operator.api.models import BrokerGroup, BrokerGroupStatus
from rocketmq_operator.control.switchover import OperationRefused, switchover_group
from rocketmq_operator.core.conditions import ConditionStatus
from rocketmq_operator.core.drain import CONDITION, DrainFacts, DrainKind, DrainReplica, NodeFacts, plan_drain
from rocketmq_operator.core.observation import GroupState, ReplicaEndpoint
from rocketmq_operator.core.roll import PAUSE_ANNOTATION
from rocketmq_operator.platforms.kubernetes.group_memory import GroupMemory
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError
from rocketmq_operator.platforms.kubernetes.resources import write_condition
from rocketmq_operator.remoting import RemotingClient, RemotingException

JSON = dict[str, Any]


async def read_nodes(kube: KubeClient, names: set[str]) -> dict[str, NodeFacts]:
    """Each named node as `plan_drain` sees it; one that cannot be read is unknown, with the error."""
    out: dict[str, NodeFacts] = {}
    for name in sorted(names):
        try:
            node = await kube.get("Node", None, name)
        except KubeError as exc:
            out[name] = NodeFacts(name, None, str(exc))
            continue
        if node is not None:
            out[name] = NodeFacts(name, not (node.get("spec") or {}).get("unschedulable", False))
    return out


def drain_facts(
    state: GroupState, pods: list[JSON], nodes: dict[str, NodeFacts], paused: bool, roll_phase: str | None
) -> DrainFacts:
    by_name = {p["metadata"]["name"]: p for p in pods}
    replicas = tuple(
        DrainReplica(
            name=r.name,
            broker_id=r.broker_id,
            alive=r.reachable,
            max_offset=r.max_offset,
            node=((by_name.get(r.name) or {}).get("spec") or {}).get("nodeName"),
            terminating=bool((by_name.get(r.name) or {}).get("metadata", {}).get("deletionTimestamp")),
        )
        for r in state.replicas
    )
    return DrainFacts(
        controller_reachable=state.controller_reachable,
        master_broker_id=state.master_broker_id,
        sync_state_set=state.sync_state_set,
        replicas=replicas,
        nodes=nodes,
        paused=paused,
        roll_phase=roll_phase,
    )


async def drain_pass(
    kube: KubeClient,
    client: RemotingClient,
    bg: BrokerGroup,
    body: JSON,
    resource: kopf.Body,
    state: GroupState,
    pods: list[JSON],
    controllers: list[str],
    endpoints: list[ReplicaEndpoint],
    previous: BrokerGroupStatus | None,
    memory: GroupMemory,
    logger: Any,
) -> bool:
    """One drain step for the group (see the module docstring). True when it switched over, or tried to."""
    rollout = previous.rollout if previous is not None else None
    roll_phase = rollout.phase if rollout is not None and rollout.phase != "Complete" else None
    paused = bg.metadata.annotations.get(PAUSE_ANNOTATION, "").lower() == "true"
    master = state.named_master
    pod = next((p for p in pods if master is not None and p["metadata"]["name"] == master.name), None)
    master_node = ((pod or {}).get("spec") or {}).get("nodeName")
    nodes = await read_nodes(kube, {master_node} if master_node else set())
    if master_node in nodes and nodes[master_node].schedulable is False:
        # Cordoned: where could the master go? Only now are the other pods' nodes read.
        others = {((p.get("spec") or {}).get("nodeName")) for p in pods} - {None, master_node}
        nodes.update(await read_nodes(kube, {str(n) for n in others}))
    step = plan_drain(drain_facts(state, pods, nodes, paused, roll_phase))
    if step.kind is DrainKind.NONE:
        # A hold is over (the master's node is schedulable again, or another pass moved it): drop it. A
        # switchover's True condition stays as the record of the last one.
        current = next(
            (c for c in (body.get("status") or {}).get("conditions") or [] if c.get("type") == CONDITION), None
        )
        if current is not None and current.get("status") == "False":
            await write_condition(kube, body, CONDITION, None)
        memory.said_drain_reason = None
        return False
    if step.kind is DrainKind.HOLD:
        await _report(kube, body, resource, memory, logger, "False", step.reason, step.text)
        return False
    assert step.target_broker_id is not None  # a SWITCHOVER names its target
    try:
        report = await switchover_group(client, bg, controllers, endpoints, step.target_broker_id)
    except (OperationRefused, RemotingException, OSError) as exc:
        message = (
            f"{step.message}: the switchover failed ({exc}); rule: the master moves only by a clean switchover "
            "(fence, catch-up, designated election); fix: tried again next pass; see the brokers' logs, or uncordon "
            f"{step.node} meanwhile"
        )
        await _report(kube, body, resource, memory, logger, "False", "SwitchoverFailed", message)
        return True
    pause = report.write_pause_s
    message = (
        f"moved the master from {step.master} on cordoned node {step.node} to {step.target} (broker "
        f"{step.target_broker_id}, epoch {report.epoch}) before the eviction; write pause "
        f"{'unknown' if pause is None else f'{pause:.3f}s'}"
    )
    await _report(kube, body, resource, memory, logger, "True", "Switched", message)
    return True


async def _report(
    kube: KubeClient,
    body: JSON,
    resource: kopf.Body,
    memory: GroupMemory,
    logger: Any,
    status: ConditionStatus,
    reason: str,
    message: str,
) -> None:
    await write_condition(kube, body, CONDITION, (status, reason, message))
    if status == "True" or memory.said_drain_reason != reason:
        # Every switchover is an Event; a hold or a failure once per change of reason, not every pass.
        memory.said_drain_reason = None if status == "True" else reason
        logger.info("node drain: %s", message)
        kind = "Normal" if status == "True" else "Warning"
        kopf.event(
            resource,
            type=kind,
            reason="DrainSwitchover" if status == "True" else f"Drain{reason}",
            message=message[:1000],
        )
