"""The Kubernetes ControllerGroup pass, run by a kopf timer: which controller leads, how many replicas are
ready, and the group's `Ready` condition (`core.status.build_controller_status`, its only writer); and the
scheduled metadata backup when spec.backup says one is due (`platforms.kubernetes.backup_schedule`, the writer of
status.backup).

Each pass lists the group's controller pods, asks every controller for the DLedger metadata (the leader's own
answer wins, as in `control.observe`) and writes status only when something changed. An unreachable
controller quorum is reported (`NoLeader`), never raised out of the pass.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import kopf

from rocketmq_operator.api.models import ControllerGroup, ControllerGroupStatus
from rocketmq_operator.control.clock import now_iso
from rocketmq_operator.core.conditions import condition
from rocketmq_operator.core.status import build_controller_status
from rocketmq_operator.platforms.kubernetes.backup_schedule import scheduled_backup
from rocketmq_operator.platforms.kubernetes.kube import KubeClient
from rocketmq_operator.platforms.kubernetes.metrics import OperatorMetrics
from rocketmq_operator.platforms.kubernetes.resources import validated
from rocketmq_operator.platforms.kubernetes.status_writer import StatusChange, write_status
from rocketmq_operator.platforms.kubernetes.tls import TLS_CA_DIR, controller_restart, trust_group
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.render.kubernetes import LABEL_GROUP, controller_addresses, name_server_addresses
from rocketmq_operator.render.kubernetes.names import tls_secret_name

JSON = dict[str, Any]
log = logging.getLogger("rocketmq_operator.kubernetes.controllers")
_PEER_ID = re.compile(r"n(\d+)")  # render/config names DLedger peers n<ordinal>


def _pod_ready(pod: JSON) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def leader_replica(
    cg: ControllerGroup, leader_id: str | None, leader_address: str | None, addresses: list[str]
) -> str | None:
    """The pod name of the leading controller (`<group>-<ordinal>`), else its address as reported."""
    match = _PEER_ID.fullmatch(leader_id or "")
    if match and int(match.group(1)) < cg.spec.replicas:
        return f"{cg.metadata.name}-{match.group(1)}"
    if leader_address in addresses:
        return f"{cg.metadata.name}-{addresses.index(leader_address)}"
    return leader_address


async def _restart_after_renewal(kube: KubeClient, cg: ControllerGroup, ns: str, pods: list[JSON]) -> None:
    """Controllers load their certificate at start only: after a renewal, one pod at a time is deleted (the
    StatefulSet starts it again with the new files) once the others have been ready for a while."""
    name = tls_secret_name(cg)
    if name is None:
        return
    pod = controller_restart(cg, await kube.get("Secret", ns, name), pods, time.time())
    if pod is not None:
        await kube.delete("Pod", ns, pod)
        log.info("ControllerGroup %s/%s: restarted %s to load the renewed certificate of Secret %s", ns,
                 cg.metadata.name, pod, name)  # fmt: skip


CONTROLLER_STATUS_KEYS = ("leader", "nameServers", "controllers", "readyReplicas", "phase")


async def controller_pass(
    kube: KubeClient, client: RemotingClient, resource: kopf.Body, metrics: OperatorMetrics | None = None
) -> None:
    body: JSON = dict(resource)
    ns, name = body["metadata"]["namespace"], body["metadata"]["name"]
    current: JSON = dict(body.get("status") or {})
    report = validated(body)
    cg = report.resource
    if not isinstance(cg, ControllerGroup):
        message = "; ".join(str(p) for p in report.errors)
        previous = next((c for c in current.get("conditions") or [] if c.get("type") == "Ready"), None)
        ready = condition("Ready", "False", "InvalidSpec", message, now_iso(), previous=previous)
        await write_status(kube, body, StatusChange(conditions={"Ready": ready}))
        return
    cg.metadata.namespace = ns
    component = "controller"
    pods = await kube.list("Pod", ns, f"{LABEL_GROUP}={name},app.kubernetes.io/component={component}")
    addresses = controller_addresses(cg, ns)
    await trust_group(kube, client, cg, ns, [*addresses, *name_server_addresses(cg, ns)], TLS_CA_DIR)
    await _restart_after_renewal(kube, cg, ns, pods)
    leader: str | None = None
    try:
        meta = await client.find_controller_leader(addresses, timeout=1.0)
        leader = leader_replica(cg, meta.leader_id, meta.leader_address, addresses)
    except RemotingException:
        leader = None
    status: ControllerGroupStatus = build_controller_status(
        cg.spec.replicas,
        sum(1 for p in pods if _pod_ready(p)),
        leader,
        name_server_addresses(cg, ns),
        addresses,
        list(current.get("conditions") or []),
        now_iso(),
        body["metadata"].get("generation"),
    )
    wanted = status.model_dump(mode="json", by_alias=True, exclude_none=True)
    # The pass's own fields and conditions (observedGeneration and Reconciled are the reconciler's).
    fields = {k: wanted.get(k) for k in CONTROLLER_STATUS_KEYS}
    backup = await scheduled_backup(kube, client, cg, resource)
    if backup is not None:
        fields["backup"] = backup.model_dump(mode="json", by_alias=True, exclude_none=True)
        if metrics is not None:
            metrics.record_backup(ns, name, backup)
    change = StatusChange(fields=fields, conditions={c["type"]: c for c in wanted.get("conditions", [])})
    await write_status(kube, body, change)
