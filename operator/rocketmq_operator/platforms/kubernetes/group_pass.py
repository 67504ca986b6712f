"""The Kubernetes group pass (the observer): SyncStateSet-driven status, pod roles, the in-sync readiness gate,
Events, metrics, and the failover policy — one pass per BrokerGroup, run by a kopf timer.

Each pass: validate the spec, list the group's pods, look up the ControllerGroup, read the admin Secret and the
authorities, observe (controller leader + brokers), then the steps of `control.group_pass` in its one order,
the same the local supervisor runs (`KubernetesPassSteps`): the user's fences (annotation
`rocketmq-operator.dev/fence`), the switchover annotation or the replication policy (fence deposed masters, fail
over a master that does not answer: fence first, then elect; re-attach slaves; re-register a lost route), the
switchover before a node drain (`drain`), hot keys and one roll step (`roll`); users and topics; the status
(`core.status`, written only where it changed, through `status_writer`), pod labels and readiness conditions,
one Event per master change; storage expansion (`storage`). Fencing here deletes the pod with grace period 1
(`FENCE_GRACE_PERIOD_S`): its process cannot acknowledge anything once the kubelet kills it, and the StatefulSet
brings it back as a new process that registers as the controller says, once the kubelet has confirmed the old one
gone. Everything is derived again from the cluster and the brokers;
the in-memory facts (`control.policy.PolicyMemory`) only time grace periods and remember deposed masters until
they answer as slaves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import kopf

from rocketmq_operator.api.models import (
    BrokerGroup,
    BrokerGroupStatus,
    ControllerGroup,
    GroupDrainStatus,
    HAMode,
    ReplicaStatus,
    RolloutStatus,
)
from rocketmq_operator.control.admin_rotation import rotate_admin
from rocketmq_operator.control.clock import now_iso
from rocketmq_operator.control.fence import run_fences
from rocketmq_operator.control.group_drain import (
    GroupDrainOutcome,
    declared_lag_pairs,
    drain_condition,
    run_group_drain,
)
from rocketmq_operator.control.group_pass import run_group_pass
from rocketmq_operator.control.observe import observe_groups
from rocketmq_operator.control.policy import policy_settings, run_replication_policy
from rocketmq_operator.control.switchover import OperationRefused, switchover_group
from rocketmq_operator.core.admin_rotation import AdminPhase
from rocketmq_operator.core.conditions import (
    ConditionStatus,
    condition,
)
from rocketmq_operator.core.failover import ProcessState, SwitchoverTargetError, switchover_target_id
from rocketmq_operator.core.fence import parse_fence_annotation
from rocketmq_operator.core.group_drain import CONDITION as DRAINED
from rocketmq_operator.core.group_drain import FORCE_ANNOTATION
from rocketmq_operator.core.observation import GroupState, ReplicaEndpoint, ReplicaObservation
from rocketmq_operator.core.quorum import effective_quorum
from rocketmq_operator.core.status import build_broker_status
from rocketmq_operator.platforms.kubernetes.auth import (
    GroupAuth,
    PodRotation,
    auth_status,
    read_group_auth,
    sign_for_group,
)
from rocketmq_operator.platforms.kubernetes.drain import drain_pass
from rocketmq_operator.platforms.kubernetes.group_memory import GroupMemory
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError
from rocketmq_operator.platforms.kubernetes.metrics import OperatorMetrics
from rocketmq_operator.platforms.kubernetes.node_loss import node_loss_pass
from rocketmq_operator.platforms.kubernetes.resources import controller_group, validated, write_condition
from rocketmq_operator.platforms.kubernetes.roll import apply_hot_keys, roll_pass
from rocketmq_operator.platforms.kubernetes.status_writer import StatusChange, write_status
from rocketmq_operator.platforms.kubernetes.storage import storage_pass
from rocketmq_operator.platforms.kubernetes.tls import TLS_CA_DIR, trust_group
from rocketmq_operator.platforms.kubernetes.topics import declared_lag_topics, reassert_topics
from rocketmq_operator.platforms.kubernetes.users import assert_group_users
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.render.config import BROKER_PORT, BrokerPlacement
from rocketmq_operator.render.kubernetes import (
    ANNOTATION_FENCE,
    ANNOTATION_SWITCHOVER_TO,
    LABEL_BROKER_ID,
    LABEL_GROUP,
    LABEL_ROLE,
    READINESS_GATE_IN_SYNC,
    broker_placement,
    controller_addresses,
    name_server_addresses,
)

JSON = dict[str, Any]
# GitOps-friendly planned switchover (ANNOTATION_SWITCHOVER_TO, render.kubernetes.names): set it to a pod name or a
# broker id; the operator clears it when done and records the outcome as the `Switchover` condition (and an Event).


def _drain_change(drain: GroupDrainStatus | None, body: JSON, previous: BrokerGroupStatus | None) -> StatusChange:
    """status.drain and the `Drained` condition (both removed once no drain is under way)."""
    return StatusChange(
        fields={"drain": None if drain is None else drain.model_dump(mode="json", by_alias=True)},
        conditions={
            DRAINED: drain_condition(
                drain, now_iso(), body["metadata"].get("generation"), _condition_of(previous, DRAINED)
            )
        },
    )


def _condition_of(status: BrokerGroupStatus | None, type_: str) -> JSON | None:
    found = next((c for c in status.conditions if c.type == type_), None) if status is not None else None
    return None if found is None else found.model_dump(mode="json", by_alias=True, exclude_none=True)


def _status_doc(status: BrokerGroupStatus) -> JSON:
    return status.model_dump(mode="json", by_alias=True, exclude_none=True)


STATUS_KEYS = ("master", "syncStateSet", "replicas", "needAcks", "writable", "history", "phase")


async def observe_pass(
    kube: KubeClient,
    client: RemotingClient,
    metrics: OperatorMetrics,
    resource: kopf.Body,
    memory: GroupMemory,
    logger: Any,
) -> bool:
    """One pass; True when it acted on the group's roles (a failover, a switchover, a fence, a re-attached slave):
    the caller observes again at once rather than after the timer's interval."""
    body: JSON = dict(resource)
    report = validated(body)
    bg = report.resource
    if not isinstance(bg, BrokerGroup):
        # Ready=False: a spec that cannot be observed at all.
        await write_condition(kube, body, "Ready", ("False", "InvalidSpec", "; ".join(str(p) for p in report.errors)))
        return False
    view = await view_group(kube, client, bg, body)
    previous_doc = body.get("status") or {}
    try:
        previous = BrokerGroupStatus.model_validate(previous_doc)
    except ValueError:
        previous = None
    steps = KubernetesPassSteps(
        kube=kube,
        client=view.client,
        metrics=metrics,
        resource=resource,
        bg=bg,
        cg=view.cg,
        state=view.state,
        pods=view.pods,
        endpoints=view.endpoints,
        controllers=view.controllers,
        name_servers=view.name_servers,
        previous=previous,
        blocked=view.blocked,
        auth=view.auth,
        memory=memory,
        logger=logger,
    )
    record = await run_group_pass(steps, controller_mode=view.controller_mode, blocked=view.blocked is not None)
    return record.acted


@dataclass
class GroupView:
    """One BrokerGroup as a pass sees it: its pods, controllers and name servers, credentials and trust set on
    ``client`` (a client that knows the group's name servers), and the observation."""

    client: RemotingClient
    cg: ControllerGroup | None
    pods: list[JSON]
    endpoints: list[ReplicaEndpoint]
    controllers: list[str]
    name_servers: list[str]
    controller_mode: bool
    blocked: tuple[str, str] | None  # the spec cannot be applied: Ready says why
    auth: GroupAuth
    state: GroupState


async def view_group(kube: KubeClient, client: RemotingClient, bg: BrokerGroup, body: JSON) -> GroupView:
    """Look the group up and observe it (controller leader and brokers), as every pass of it starts."""
    ns, name = body["metadata"]["namespace"], body["metadata"]["name"]
    pods = await kube.list("Pod", ns, f"{LABEL_GROUP}={name},app.kubernetes.io/component=broker")
    endpoints = [
        ReplicaEndpoint(p["metadata"]["name"], f"{p['status']['podIP']}:{BROKER_PORT}")
        for p in sorted(pods, key=lambda p: str(p["metadata"]["name"]))
        if (p.get("status") or {}).get("podIP")
    ]
    controllers: list[str] = []
    name_servers: list[str] = list(bg.spec.name_servers)
    controller_mode = HAMode(bg.spec.ha_mode) is HAMode.CONTROLLER
    blocked: tuple[str, str] | None = None  # the spec cannot be applied: Ready says why
    cg: ControllerGroup | None = None
    if bg.spec.controller_ref is not None:
        lookup = await controller_group(kube, ns, bg.spec.controller_ref.name)
        cg = lookup.resource
        if cg is None:
            blocked = (lookup.reason, lookup.message)
        else:
            controllers = controller_addresses(cg, ns)
            name_servers = name_servers or name_server_addresses(cg, ns)
    auth = await read_group_auth(kube, bg, ns, body.get("status"))
    if auth.admin is not None:
        # Before the first call: a broker with auth on answers nothing unsigned (observation included).
        sign_for_group(client, auth.admin, endpoints)
    # TLS per address: this group's pods with its certificate's authority, its controllers and name servers with
    # their group's (one per namespace unless the user brought their own Secrets).
    await trust_group(kube, client, bg, ns, [e.address for e in endpoints], TLS_CA_DIR)
    if cg is not None:
        await trust_group(kube, client, cg, ns, [*controllers, *name_servers], TLS_CA_DIR)
    if name_servers:
        # The operator's one client (one connection pool) knows no name server: this group's, for this pass
        # (the switchover has its fenced master forgotten by them).
        client = client.with_name_servers(name_servers)
    states = await observe_groups(client, controllers, {name: endpoints}, {name: controller_mode})
    return GroupView(
        client, cg, pods, endpoints, controllers, name_servers, controller_mode, blocked, auth, states[name]
    )


async def drain_before_delete(kube: KubeClient, client: RemotingClient, resource: kopf.Body, logger: Any) -> str | None:
    """A deleted BrokerGroup is drained before it goes (`control.group_drain`, removing): None once it may go,
    else why it waits (status.drain and the `Drained` condition say it too). Annotation
    rocketmq-operator.dev/force-delete=true lets it go at once, naming what is dropped."""
    body: JSON = dict(resource)
    bg = validated(body).resource
    if not isinstance(bg, BrokerGroup):
        return None  # never ran as a group: nothing to drain
    view = await view_group(kube, client, bg, body)
    try:
        previous = BrokerGroupStatus.model_validate(body.get("status") or {})
    except ValueError:
        previous = None
    forced = (body["metadata"].get("annotations") or {}).get(FORCE_ANNOTATION, "").lower() == "true"
    outcome = await run_group_drain(
        view.client,
        view.state,
        draining=True,
        removing=True,
        forced=forced,
        recorded=previous.drain if previous is not None else None,
        declared=declared_lag_pairs(await declared_lag_topics(kube, bg, str(body["metadata"]["namespace"]))),
        deadline_s=bg.spec.drain_deadline_seconds,
    )
    for line in outcome.steps:
        kopf.info(resource, reason="GroupDrain", message=line)
    for line in outcome.problems:
        logger.warning("%s", line)
    await write_status(kube, body, _drain_change(outcome.status(), body, previous))
    if outcome.plan.remove:
        if outcome.plan.lost or forced or not outcome.plan.drained:
            kopf.warn(resource, reason="GroupRemoved", message=outcome.plan.message)
        else:
            kopf.info(resource, reason="GroupRemoved", message=outcome.plan.message)
        return None
    return outcome.plan.message


@dataclass
class KubernetesPassSteps:
    """The steps of `control.group_pass` on Kubernetes, for one BrokerGroup in one pass."""

    kube: KubeClient
    client: RemotingClient
    metrics: OperatorMetrics
    resource: kopf.Body
    bg: BrokerGroup
    cg: ControllerGroup | None
    state: GroupState
    pods: list[JSON]
    endpoints: list[ReplicaEndpoint]
    controllers: list[str]
    name_servers: list[str]
    previous: BrokerGroupStatus | None
    blocked: tuple[str, str] | None
    auth: GroupAuth
    memory: GroupMemory
    logger: Any
    drain_outcome: GroupDrainOutcome | None = field(default=None)

    @property
    def body(self) -> JSON:
        return dict(self.resource)

    @property
    def namespace(self) -> str:
        return str(self.resource["metadata"]["namespace"])

    @property
    def controller_mode(self) -> bool:
        return HAMode(self.bg.spec.ha_mode) is HAMode.CONTROLLER

    async def user_fences(self) -> frozenset[str]:
        return await _fence_pass(
            self.kube, self.client, self.bg, self.resource, self.state, self.pods, self.controller_mode
        )

    def switchover_asked(self) -> bool:
        return (self.resource["metadata"].get("annotations") or {}).get(ANNOTATION_SWITCHOVER_TO) is not None

    async def planned_switchover(self, fenced: frozenset[str]) -> bool:
        wanted = (self.resource["metadata"].get("annotations") or {}).get(ANNOTATION_SWITCHOVER_TO)
        if wanted is None:
            return False
        return await _switchover(
                self.kube, self.client, self.bg, self.resource, self.state, self.controllers, self.endpoints, wanted,
                fenced,
            )  # fmt: skip

    async def replication_policy(self) -> bool:
        return await _failover(
            self.kube, self.client, self.bg, self.resource, self.state, self.pods, self.name_servers, self.memory,
            self.logger,
        )  # fmt: skip

    async def drain(self) -> bool:
        return await drain_pass(
            self.kube, self.client, self.bg, self.body, self.resource, self.state, self.pods, self.controllers,
            self.endpoints, self.previous, self.memory, self.logger,
        )  # fmt: skip

    async def converge(self, fenced: frozenset[str]) -> None:
        placement = broker_placement(self.bg, self.cg, self.namespace)
        await _converge(
            self.kube, self.client, self.bg, self.resource, self.state, placement, self.controllers, self.endpoints,
            self.pods, self.previous, self.memory, self.logger, fenced,
        )  # fmt: skip

    async def users_and_topics(self) -> bool:
        await self.admin_rotation()
        await assert_group_users(
            self.kube, self.client, self.bg, self.namespace, self.state, self.auth, self.memory, self.logger
        )
        return await reassert_topics(
            self.kube, self.client, self.metrics, self.bg, self.namespace, self.state, self.memory
        )

    async def admin_rotation(self) -> None:
        """One pass of the admin rotation (`control.admin_rotation`): the operator signs as its outcome says, and
        status.auth, an Event and the log say what moved (names only)."""
        auth = self.auth
        if not self.bg.spec.auth.enabled or auth.plan is None or (auth.declared is None and auth.configured is None):
            return
        admin = auth.declared.user if auth.declared is not None else ""
        platform = PodRotation(self.kube, self.bg, self.namespace, self.pods, admin)
        outcome = await rotate_admin(
            self.client, self.state, auth.declared, auth.configured, auth.retiring, platform, time.time(),
            self.bg.spec.replicas,
        )  # fmt: skip
        for line in outcome.lines:
            self.logger.info("%s: admin rotation: %s", self.bg.metadata.name, line)
        for line in outcome.problems:
            self.logger.warning("%s: admin rotation: %s; retried next pass", self.bg.metadata.name, line)
        signs = outcome.sign_as
        if signs is not None and (auth.admin is None or auth.admin.access_key != signs.user):
            auth.admin = SessionCredentials(signs.user, signs.password)
            sign_for_group(self.client, auth.admin, self.endpoints)
        wanted = auth_status(outcome)
        if (self.body.get("status") or {}).get("auth") != wanted:
            phase, message = outcome.plan.phase, outcome.plan.message
            if message:
                kopf.event(
                    self.resource,
                    type="Warning" if phase is AdminPhase.REFUSED else "Normal",
                    reason=f"Admin{phase}",
                    message=message,
                )
            await write_status(self.kube, self.body, StatusChange(fields={"auth": wanted}))

    async def group_drain(self) -> None:
        recorded = self.previous.drain if self.previous is not None else None
        if not self.bg.spec.draining and recorded is None:
            return
        declared = declared_lag_pairs(await declared_lag_topics(self.kube, self.bg, self.namespace))
        self.drain_outcome = outcome = await run_group_drain(
            self.client, self.state, draining=self.bg.spec.draining, removing=False, recorded=recorded,
            declared=declared,
        )  # fmt: skip
        for line in outcome.steps:
            kopf.info(self.resource, reason="GroupDrain", message=line)
        for line in outcome.problems:
            self.logger.warning("%s", line)

    async def publish(self, topics_asserted: bool) -> None:
        """The observer's status (written once, from the observation at the start of the pass), metrics, the
        `MasterChanged` Event, pod labels and the in-sync readiness gate."""
        ns, name = self.namespace, str(self.resource["metadata"]["name"])
        status = build_broker_status(
            self.bg.spec,
            self.state,
            self.previous,
            now_iso(),
            self.resource["metadata"].get("generation"),
            blocked=self.blocked,
        )
        status.writable = status.writable and topics_asserted
        wanted = _status_doc(status)
        # The observer's own fields and conditions only: the reconciler's (Reconciled, observedGeneration), the
        # fences', the roll's and storage's are theirs (status_writer).
        fields = {k: wanted.get(k) for k in STATUS_KEYS}
        conditions: dict[str, JSON | None] = {c["type"]: c for c in wanted.get("conditions", [])}
        drain = self.drain_outcome.status() if self.drain_outcome is not None else None
        if self.drain_outcome is not None:
            drained = _drain_change(drain, self.body, self.previous)
            fields.update(drained.fields)
            conditions.update(drained.conditions)
        await write_status(self.kube, self.body, StatusChange(fields=fields, conditions=conditions))
        if self.drain_outcome is not None:
            self.metrics.record_drain(ns, name, self.drain_outcome.lag, None if drain is None else drain.drained)
        _metrics(self.metrics, ns, name, status)
        self.metrics.record_quorum_and_conditions(ns, name, self.bg.spec, status)
        if self.previous is not None and len(status.history) > len(self.previous.history):
            change = status.history[-1]
            self.metrics.master_changes.labels(namespace=ns, group=name).inc()
            kopf.event(
                self.resource,
                type="Normal",
                reason="MasterChanged",
                message=(
                    f"master {change.from_broker_id} -> {change.to_broker_id} (epoch {change.epoch}): {change.reason}"
                ),
            )
        await _sync_pods(self.kube, ns, self.pods, status)

    async def platform(self) -> None:
        await storage_pass(self.kube, self.bg, self.body, self.resource, self.memory, self.logger)
        await node_loss_pass(self.kube, self.bg, self.body, self.resource, self.pods, self.memory, self.logger)


async def _converge(
    kube: KubeClient,
    client: RemotingClient,
    bg: BrokerGroup,
    resource: kopf.Body,
    state: GroupState,
    placement: BrokerPlacement,
    controllers: list[str],
    endpoints: list[ReplicaEndpoint],
    pods: list[JSON],
    previous: BrokerGroupStatus | None,
    memory: GroupMemory,
    logger: Any,
    fenced: frozenset[str] = frozenset(),
) -> None:
    """The running brokers follow the spec: hot keys applied in place (a fenced replica keeps its fence's keys),
    everything else by one roll step. The roll waits while a replica is fenced: its switchover could pick it."""
    for replica, text in (await apply_hot_keys(client, bg, placement, state, fenced)).items():
        if memory.said_hot_keys.get(replica) != text:  # a key that never reads back is said once, not every pass
            memory.said_hot_keys[replica] = text
            logger.info("%s: %s", replica, text)
            kopf.event(resource, type="Normal", reason="ConfigApplied", message=f"{replica}: {text}"[:1000])
    if fenced:
        if memory.said_roll_fenced != fenced:
            memory.said_roll_fenced = fenced
            logger.info("the roll waits while %s is fenced", ", ".join(sorted(fenced)))
        return
    memory.said_roll_fenced = None
    before = previous.rollout if previous is not None else None

    def announce(before: RolloutStatus | None, after: RolloutStatus) -> None:
        same_roll = before is not None and before.target_revision == after.target_revision
        acted_before = (before.restarts + before.switchovers) if before is not None and same_roll else 0
        if after.restarts + after.switchovers > acted_before:
            logger.info("rollout %s: %s", after.phase, after.current_step)
            kopf.event(resource, type="Normal", reason="RollingUpdate", message=after.current_step[:1000])
        elif after.phase != (before.phase if before else None):
            logger.info("rollout %s: %s", after.phase, after.message)
            kind = "Warning" if after.phase == "Blocked" else "Normal"
            kopf.event(resource, type=kind, reason=f"Rollout{after.phase}", message=after.message[:1000])

    await roll_pass(kube, client, bg, state, controllers, endpoints, pods, before, announce)


async def _switchover(
    kube: KubeClient,
    client: RemotingClient,
    bg: BrokerGroup,
    resource: kopf.Body,
    state: GroupState,
    controllers: list[str],
    endpoints: list[ReplicaEndpoint],
    wanted: str,
    fenced: frozenset[str] = frozenset(),
) -> bool:
    """The switchover the annotation asks for; False when it waits (refused for now: the annotation is kept)."""
    ns, name = resource["metadata"]["namespace"], resource["metadata"]["name"]
    ok: bool | None = None
    # A pod name or a broker id; a pod's id is the controller's, from this pass's observation.
    ids: dict[str, int | None] = {e.name: None for e in endpoints}
    ids.update({r.name: r.broker_id for r in state.replicas})
    try:
        target_id = switchover_target_id(
            wanted,
            ids,
            given_as=f"annotation {ANNOTATION_SWITCHOVER_TO}",
            shown_by=f"`kubectl get pods -L {LABEL_BROKER_ID}`",
        )
    except SwitchoverTargetError as exc:
        ok, reason, message = False, "InvalidTarget", str(exc)
    else:
        target_name = next((r for r, i in ids.items() if i == target_id), None)
        if target_name in fenced:
            ok, reason, message = (
                False,
                "InvalidTarget",
                f"annotation {ANNOTATION_SWITCHOVER_TO} {wanted!r}: {target_name} is fenced (annotation "
                f"{ANNOTATION_FENCE}), it would refuse every put as master; fix: unfence it first, or name another "
                "replica",
            )
    if ok is None:
        try:
            report = await switchover_group(client, bg, controllers, endpoints, target_id)
            pause = report.write_pause_s
            ok, reason, message = (
                True,
                "Switched",
                (
                    f"master is now broker {report.new_master} (epoch {report.epoch}); write pause "
                    f"{'unknown' if pause is None else f'{pause:.3f}s'}"
                ),
            )
        except OperationRefused as exc:
            if exc.transient:
                # Not now (the controller unreadable, say: a controller pod restarting): the annotation stays and
                # the next pass asks again; said once per episode, not every pass.
                said: JSON = next(
                    (
                        c
                        for c in (resource.get("status") or {}).get("conditions") or []
                        if c.get("type") == "Switchover"
                    ),
                    {},
                )
                if said.get("reason") != "Waiting":
                    message = f"{exc}; annotation {ANNOTATION_SWITCHOVER_TO} kept: tried again on every pass"
                    kopf.event(resource, type="Warning", reason="SwitchoverWaiting", message=message)
                    waiting = condition("Switchover", "False", "Waiting", message, now_iso())
                    await write_status(kube, resource, StatusChange(conditions={"Switchover": waiting}))
                return False
            ok, reason, message = False, "Refused", str(exc)
    kopf.event(resource, type="Normal" if ok else "Warning", reason=f"Switchover{reason}", message=message)
    outcome = condition("Switchover", "True" if ok else "False", reason, message, now_iso())
    await write_status(kube, resource, StatusChange(conditions={"Switchover": outcome}))
    # Cleared when done, so the desired state in Git can drop it and a re-apply does not switch again.
    await kube.patch("BrokerGroup", ns, name, {"metadata": {"annotations": {ANNOTATION_SWITCHOVER_TO: None}}})
    return True


FENCE_CONDITION = "Fence"


async def _fence_pass(
    kube: KubeClient,
    client: RemotingClient,
    bg: BrokerGroup,
    resource: kopf.Body,
    state: GroupState,
    pods: list[JSON],
    controller_mode: bool,
) -> frozenset[str]:
    """The user's fences (annotation ANNOTATION_FENCE, `control.fence.run_fences`): fence the replicas it names
    (again, after a restart), unfence the ones `status.fenced` records and it no longer names. Writes
    `status.fenced` and the `Fence` condition when they change (False with the reason while something asked
    cannot be done; dropped once nothing is fenced), one Event per step. Returns the replicas fenced or asked
    to be, which the hot keys leave alone and the switchover and the roll avoid."""
    name = resource["metadata"]["name"]
    wanted = parse_fence_annotation((resource["metadata"].get("annotations") or {}).get(ANNOTATION_FENCE))
    status_doc = resource.get("status") or {}
    recorded = list(status_doc.get("fenced") or [])
    current = next((c for c in status_doc.get("conditions") or [] if c.get("type") == FENCE_CONDITION), None)
    if not wanted and not recorded and current is None:
        return frozenset()
    if not controller_mode:
        fenced: list[str] = recorded
        problems = [f"annotation {ANNOTATION_FENCE}: the fence needs haMode controller (it raises minInSyncReplicas)"]
        steps: list[str] = []
    else:
        known = {f"{name}-{i}" for i in range(bg.spec.replicas)} | {str(p["metadata"]["name"]) for p in pods}
        outcome = await run_fences(
            client,
            state,
            wanted,
            recorded,
            known,
            min_in_sync_replicas=effective_quorum(bg.spec).min_in_sync_replicas,
            annotation=ANNOTATION_FENCE,
        )
        fenced, problems, steps = outcome.fenced, outcome.problems, outcome.steps
    for step in steps:
        kopf.event(resource, type="Normal", reason="Fenced" if step.startswith("fenced") else "Unfenced", message=step)
    wanted_condition: JSON | None = None
    if problems:
        wanted_condition = condition(
            FENCE_CONDITION, "False", "FencePending", "; ".join(problems), now_iso(), None, current
        )
    elif fenced:
        message = (
            f"{', '.join(fenced)} refuse every put (brokerPermission=4, minInSyncReplicas above any SyncStateSet); "
            "the roll waits meanwhile; unfence: kubectl rocketmq unfence REPLICA"
        )
        wanted_condition = condition(FENCE_CONDITION, "True", "Fenced", message, now_iso(), None, current)
    change = StatusChange(fields={"fenced": sorted(fenced) or None}, conditions={FENCE_CONDITION: wanted_condition})
    await write_status(kube, resource, change)
    return frozenset(wanted) | frozenset(fenced)


def _metrics(metrics: OperatorMetrics, ns: str, name: str, status: BrokerGroupStatus) -> None:
    members = status.sync_state_set.members if status.sync_state_set else []
    metrics.sync_state_set_size.labels(namespace=ns, group=name).set(len(members))
    metrics.in_sync.labels(namespace=ns, group=name).set(sum(1 for r in status.replicas if r.in_sync))
    metrics.need_acks.labels(namespace=ns, group=name).set(status.need_acks or 0)
    metrics.writable.labels(namespace=ns, group=name).set(1 if status.writable else 0)
    for r in status.replicas:
        if r.lag_bytes is not None:
            metrics.lag_bytes.labels(namespace=ns, group=name, replica=r.name).set(r.lag_bytes)


async def _sync_pods(kube: KubeClient, ns: str, pods: list[JSON], status: BrokerGroupStatus) -> None:
    """Role and broker-id labels and the in-sync readiness gate of each pod of the pass's pod list. A pod that
    is gone since the list (the roll or a fence deleted it earlier in this pass) has nothing left to label."""
    by_name = {r.name: r for r in status.replicas}
    for pod in pods:
        pod_name = pod["metadata"]["name"]
        replica = by_name.get(pod_name)
        if replica is None:
            continue
        try:
            await _sync_pod(kube, ns, pod, replica)
        except KubeError as exc:
            if exc.status != 404:
                raise


async def _sync_pod(kube: KubeClient, ns: str, pod: JSON, replica: ReplicaStatus) -> None:
    pod_name = pod["metadata"]["name"]
    labels = pod["metadata"].get("labels") or {}
    want = {LABEL_ROLE: replica.role, LABEL_BROKER_ID: "" if replica.broker_id is None else str(replica.broker_id)}
    if any(labels.get(k) != v for k, v in want.items()):
        await kube.patch("Pod", ns, pod_name, {"metadata": {"labels": want}})
    in_sync: ConditionStatus = "True" if (replica.in_sync or replica.role == "master") and replica.alive else "False"
    current = next(
        (c for c in (pod.get("status") or {}).get("conditions", []) if c.get("type") == READINESS_GATE_IN_SYNC),
        None,
    )
    if current is None or current.get("status") != in_sync:
        reason = "InSyncStateSet" if in_sync == "True" else "NotInSyncStateSet"
        gate = condition(READINESS_GATE_IN_SYNC, in_sync, reason, "", now_iso())
        await kube.patch_strategic("Pod", ns, pod_name, {"status": {"conditions": [gate]}}, "status")


FENCE_GRACE_PERIOD_S = 1
"""The fence's pod deletion: 1 s, not 0. Grace period 0 is a force deletion: the API server removes the object
at once, without the kubelet, and the StatefulSet makes the same identity again while the old process may still
run (a partitioned node). Seen on the three-node cluster with a powered-off node: the force-deleted master's pod
was made again at once and scheduled back onto the dead node, which the node controller still counted Ready. With
1 s the object stays until the kubelet confirms the containers gone (`Terminating` for as long as a lost node
stays lost: at most one pod per identity). It kills no later: the kubelet stops a container with SIGTERM and
SIGKILLs it after at least 2 s whatever the grace period (its `minimumGracePeriodInSeconds`)."""


class PodPlatform:
    """What only Kubernetes can do to a broker replica: delete its pod."""

    def __init__(self, kube: KubeClient, namespace: str, pods: list[JSON]) -> None:
        self.kube = kube
        self.namespace = namespace
        self.pods = {p["metadata"]["name"]: p for p in pods}

    def _started_at(self, name: str) -> float | None:
        statuses = ((self.pods.get(name) or {}).get("status") or {}).get("containerStatuses") or []
        for container in statuses:
            started = ((container.get("state") or {}).get("running") or {}).get("startedAt")
            if started:
                return datetime.fromisoformat(str(started).replace("Z", "+00:00")).timestamp()
        return None

    async def fence(self, replica: ReplicaObservation, *, started_before: float | None) -> str:
        if (self.pods.get(replica.name) or {}).get("metadata", {}).get("deletionTimestamp"):
            return ""  # already being deleted (a fence of an earlier pass): the kubelet is stopping it
        if started_before is not None:
            started = self._started_at(replica.name)
            # startedAt has whole seconds: a successor started in the second of the kill reads as before it. The
            # deposed container started long before (it had to start, register and be elected).
            if started is None or started + 1.0 >= started_before:
                return ""  # not the container that was master (restarted since, or not running)
        await self.kube.delete("Pod", self.namespace, replica.name, grace_period_s=FENCE_GRACE_PERIOD_S)
        return f"deleted pod {replica.name} with grace period {FENCE_GRACE_PERIOD_S} s"

    async def restart(self, replica: ReplicaObservation) -> None:
        await self.kube.delete("Pod", self.namespace, replica.name)

    async def freeze(self, replica: ReplicaObservation) -> bool:
        del replica
        return False  # a container cannot be stopped from the API server

    async def process_state(self, replica: ReplicaObservation) -> ProcessState:
        """Gone when the pod or its running container is (as of this pass's pod list); whether a running container
        is frozen or only slow, the API server cannot tell."""
        if replica.name not in self.pods or self._started_at(replica.name) is None:
            return ProcessState.GONE
        return ProcessState.UNKNOWN


async def _failover(
    kube: KubeClient,
    client: RemotingClient,
    bg: BrokerGroup,
    resource: kopf.Body,
    state: GroupState,
    pods: list[JSON],
    name_servers: list[str],
    memory: GroupMemory,
    logger: Any,
) -> bool:
    """The replication policy's pass; True when it acted (the roll waits for the next pass then)."""
    ns = resource["metadata"]["namespace"]
    settings = policy_settings(bg, name_servers)
    published = ((resource.get("status") or {}).get("master") or {}).get("brokerId")
    outcome = await run_replication_policy(
        client,
        state,
        settings,
        memory.policy,
        PodPlatform(kube, ns, pods),
        published_master=published if isinstance(published, int) else None,
    )
    for decision in outcome.decisions:
        if decision.refused and decision.reason not in ("ControllerUnavailable", "MasterNotConfirmed"):
            logger.warning("failover refused: %s", decision.message)
        if decision.unclean and decision.actions:
            kopf.event(resource, type="Warning", reason="UncleanFailover", message=decision.message)
    for note in outcome.notes:
        logger.info("%s", note)
    for step in outcome.steps:
        logger.info("%s", step)
        kopf.event(resource, type="Normal", reason="ReplicationPolicy", message=step[:1000])
    return outcome.acted
