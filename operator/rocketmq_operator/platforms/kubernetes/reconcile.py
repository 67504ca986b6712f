"""The reconcile pipeline for one BrokerGroup, ControllerGroup or Proxy, in ordered, guarded steps.

A Proxy whose spec.tls.enabled disagrees with the BrokerGroups of its cluster (or its ControllerGroup) is not
applied: Reconciled=False, reason TlsMismatch, the one line `validate` prints for the same manifests.

validate → resolve references → render → apply what differs → status. Each step either continues or stops
with a condition that says why (a blocked reconcile is a state in status, never an exception loop). Nothing is
remembered between calls: what was applied is read back from the objects' hash annotation, so a restarted
operator resumes from the cluster alone, and a resync with nothing to change makes no API write.

A StatefulSet's volumeClaimTemplates are immutable (the API server refuses any change with 422): an existing
StatefulSet keeps the claim sizes it was created with (`keep_claim_sizes`), and a larger spec.storage.size is
carried out on the PVCs themselves by the group pass (`platforms.kubernetes.storage`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from rocketmq_operator.api.models import BrokerGroup, ControllerGroup, Proxy
from rocketmq_operator.api.validation import client_auth_mismatch, proxy_tls_mismatch
from rocketmq_operator.control.clock import now_iso
from rocketmq_operator.core.conditions import set_condition
from rocketmq_operator.core.config_change import running_downgrade_warning
from rocketmq_operator.platforms.kubernetes.auth import ANNOTATION_ADMIN_USER, admin_config_objects, admin_in_config
from rocketmq_operator.platforms.kubernetes.kube import KubeClient
from rocketmq_operator.platforms.kubernetes.resources import controller_group, validated
from rocketmq_operator.platforms.kubernetes.status_writer import StatusChange, write_status
from rocketmq_operator.platforms.kubernetes.tls import certificate_objects, client_certificate_template
from rocketmq_operator.render.kubernetes import RenderError, render_broker_group, render_controller_group, render_proxy
from rocketmq_operator.render.kubernetes.broker_group import DEFAULT_AGENT_IMAGE
from rocketmq_operator.render.kubernetes.names import tls_secret_name
from rocketmq_operator.render.kubernetes.network_policy import network_policy_names

JSON = dict[str, Any]
ANNOTATION_APPLIED_HASH = "rocketmq-operator.dev/applied-hash"


@dataclass
class Outcome:
    applied: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    blocked_reason: str | None = None
    blocked_message: str = ""
    warnings: list[str] = field(default_factory=list)
    downgrade: str | None = None  # spec.version older than what the brokers run (said as an Event when applied)
    seconds: float = 0.0


def object_hash(obj: JSON) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:20]


def with_ownership(obj: JSON, owner: JSON) -> JSON:
    """Owner reference (garbage collection on delete) and the hash of what we rendered."""
    out: JSON = json.loads(json.dumps(obj))
    meta = out["metadata"]
    meta.setdefault("annotations", {})[ANNOTATION_APPLIED_HASH] = object_hash(obj)
    meta["ownerReferences"] = [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return out


def keep_claim_sizes(obj: JSON, current: JSON | None) -> JSON:
    """`obj` with the storage request of each volumeClaimTemplate that `current` (the StatefulSet as it exists)
    already has: the API server refuses to change a claim template, and the existing PVCs are resized in place
    instead. A new StatefulSet (`current` None) or a new template name takes the rendered size."""
    if obj.get("kind") != "StatefulSet" or current is None:
        return obj
    existing = {
        (t.get("metadata") or {}).get("name"): (((t.get("spec") or {}).get("resources") or {}).get("requests") or {})
        for t in (current.get("spec") or {}).get("volumeClaimTemplates") or []
    }
    out: JSON = json.loads(json.dumps(obj))
    for template in out["spec"].get("volumeClaimTemplates") or []:
        size = existing.get(template["metadata"]["name"], {}).get("storage")
        if size is not None:
            template["spec"]["resources"]["requests"]["storage"] = size
    return out


async def apply_objects(kube: KubeClient, objects: list[JSON], owner: JSON, outcome: Outcome) -> None:
    for rendered in objects:
        meta = rendered["metadata"]
        current = await kube.get(rendered["kind"], meta["namespace"], meta["name"])
        obj = keep_claim_sizes(rendered, current)
        wanted_hash = object_hash(obj)
        current_hash = ((current or {}).get("metadata", {}).get("annotations") or {}).get(ANNOTATION_APPLIED_HASH)
        if current is not None and current_hash == wanted_hash:
            outcome.unchanged += 1
            continue
        await kube.apply(with_ownership(obj, owner))
        outcome.applied.append(f"{obj['kind']}/{meta['name']}")


async def delete_stale_network_policies(
    kube: KubeClient, resource: BrokerGroup | ControllerGroup, objects: list[JSON], owner: JSON, outcome: Outcome
) -> None:
    """Delete the NetworkPolicies of `resource` that it no longer renders (spec.networkPolicy.enabled turned off,
    or standalone name servers gone): the garbage collector removes them only with the group. Only policies this
    resource owns (owner reference by uid) are touched; a policy the user created under the same name is kept.
    With policies on, every name is rendered and nothing is read."""
    rendered = {o["metadata"]["name"] for o in objects if o["kind"] == "NetworkPolicy"}
    namespace = owner["metadata"]["namespace"]
    for name in network_policy_names(resource):
        if name in rendered:
            continue
        current = await kube.get("NetworkPolicy", namespace, name)
        refs = ((current or {}).get("metadata") or {}).get("ownerReferences") or []
        if not any(ref.get("uid") == owner["metadata"].get("uid") for ref in refs):
            continue
        await kube.delete("NetworkPolicy", namespace, name)
        outcome.deleted.append(f"NetworkPolicy/{name}")


async def reconcile(kube: KubeClient, body: JSON) -> Outcome:
    """One pass for either kind. `body` is the custom resource as read from the API."""
    started = time.monotonic()
    outcome = Outcome()
    report = validated(body)
    namespace = body["metadata"]["namespace"]
    if not report.ok or report.resource is None:
        outcome.blocked_reason = "InvalidSpec"
        outcome.blocked_message = "; ".join(str(p) for p in report.errors)
    else:
        resource = report.resource
        resource.metadata.namespace = namespace
        outcome.warnings = [str(w) for w in report.warnings]
        objects: list[JSON] | None = None
        if isinstance(resource, ControllerGroup):
            objects = render_controller_group(resource)
        elif isinstance(resource, BrokerGroup):
            objects = await _render_broker(kube, resource, namespace, outcome)
            reported = [r.get("version") for r in (body.get("status") or {}).get("replicas") or []]
            outcome.downgrade = running_downgrade_warning(reported, resource.spec.version)
            if outcome.downgrade is not None:
                outcome.warnings.append(outcome.downgrade)
        elif isinstance(resource, Proxy):
            objects = await _render_proxy(kube, resource, namespace, outcome)
        if objects is not None and isinstance(resource, BrokerGroup | ControllerGroup | Proxy):
            # The certificate Secret comes first: a pod with spec.tls cannot start without it.
            certificates, blocked = await certificate_objects(kube, resource, namespace)
            if blocked is not None:
                outcome.blocked_reason, outcome.blocked_message = blocked
                objects = None
            else:
                if resource.spec.tls.mutual:
                    secret_name = tls_secret_name(resource)
                    held = await kube.get("Secret", namespace, secret_name) if secret_name else None
                    client_certificate_template(objects, certificates[0] if certificates else held, resource)
                objects = [*certificates, *objects]
        if objects is not None:
            await apply_objects(kube, objects, body, outcome)
            if isinstance(resource, BrokerGroup | ControllerGroup):
                await delete_stale_network_policies(kube, resource, objects, body, outcome)
    outcome.seconds = time.monotonic() - started
    await write_reconciled(kube, body, outcome)
    return outcome


AGENT_IMAGE_ENV = "ROCKETMQ_OPERATOR_AGENT_IMAGE"


def lease_agent_image() -> str:
    """The image of the brokers' lease agent: the operator's own, as the chart passes it (the default outside a
    chart: the operator image of this version)."""
    return os.environ.get(AGENT_IMAGE_ENV) or DEFAULT_AGENT_IMAGE


async def _render_broker(kube: KubeClient, bg: BrokerGroup, namespace: str, outcome: Outcome) -> list[JSON] | None:
    cg: ControllerGroup | None = None
    if bg.spec.controller_ref is not None:
        lookup = await controller_group(kube, namespace, bg.spec.controller_ref.name)
        if lookup.resource is None:
            outcome.blocked_reason = lookup.reason
            outcome.blocked_message = lookup.message
            return None
        cg = lookup.resource
        if cg.spec.tls.enabled and bg.spec.tls.enabled and cg.spec.tls.client_auth != bg.spec.tls.client_auth:
            outcome.blocked_reason = "TlsMismatch"  # brokers and controllers would refuse each other's handshakes
            outcome.blocked_message = client_auth_mismatch(bg, cg)
            return None
    sts = await kube.get("StatefulSet", namespace, bg.metadata.name)
    running = int(((sts or {}).get("spec") or {}).get("replicas") or 0) if sts is not None else None
    try:
        objects = render_broker_group(bg, cg, running, agent_image=lease_agent_image())
    except RenderError as exc:
        outcome.blocked_reason = "NotRenderable"
        outcome.blocked_message = str(exc)
        return None
    # The admin Secret's copy the brokers mount comes first: a broker pod cannot start without it.
    status = (await kube.get("BrokerGroup", namespace, bg.metadata.name) or {}).get("status")
    auth_objects, blocked = await admin_config_objects(kube, bg, namespace, status)
    if blocked is not None:
        outcome.blocked_reason, outcome.blocked_message = blocked
        return None
    return [*auth_objects, *objects]


async def _render_proxy(kube: KubeClient, proxy: Proxy, namespace: str, outcome: Outcome) -> list[JSON] | None:
    cg: ControllerGroup | None = None
    if proxy.spec.controller_ref is not None and not proxy.spec.name_servers:
        lookup = await controller_group(kube, namespace, proxy.spec.controller_ref.name)
        if lookup.resource is None:
            outcome.blocked_reason = lookup.reason
            outcome.blocked_message = lookup.message
            return None
        cg = lookup.resource
    mismatch = await _proxy_tls_mismatch(kube, proxy, cg, namespace)
    if mismatch is not None:
        # Its connections to the name servers and brokers would be refused (enforcing, one JVM-wide tls.enable).
        outcome.blocked_reason = "TlsMismatch"
        outcome.blocked_message = f"Proxy/{proxy.metadata.name}: spec.tls.enabled: {mismatch}"
        return None
    try:
        objects = render_proxy(proxy, cg)
    except RenderError as exc:
        outcome.blocked_reason = "NotRenderable"
        outcome.blocked_message = str(exc)
        return None
    # The admin Secret's copy the proxies mount comes first: a proxy pod with spec.auth cannot start without it.
    auth_objects, blocked = await admin_config_objects(kube, proxy, namespace)
    if blocked is not None:
        outcome.blocked_reason, outcome.blocked_message = blocked
        return None
    signs = admin_in_config(auth_objects[0], proxy=True) if auth_objects else None
    if signs is not None:
        # The admin the proxies sign as, named on their template: a rotation rolls them onto the new one.
        for obj in objects:
            if obj.get("kind") == "Deployment":
                template = obj["spec"]["template"].setdefault("metadata", {})
                template.setdefault("annotations", {})[ANNOTATION_ADMIN_USER] = signs.user
    return [*auth_objects, *objects]


async def _proxy_tls_mismatch(kube: KubeClient, proxy: Proxy, cg: ControllerGroup | None, namespace: str) -> str | None:
    """`api.validation.proxy_tls_mismatch` against the valid BrokerGroups of the proxy's cluster in its namespace
    (and its ControllerGroup), as `validate` judges them within one file."""
    brokers: list[BrokerGroup] = []
    for raw in await kube.list("BrokerGroup", namespace):
        report = validated(raw)
        if isinstance(report.resource, BrokerGroup) and report.resource.spec.cluster_name == proxy.spec.cluster_name:
            brokers.append(report.resource)
    return proxy_tls_mismatch(proxy, brokers, cg)


def desired_status(body: JSON, outcome: Outcome, now: str) -> JSON:
    status = dict(body.get("status") or {})
    generation = body["metadata"].get("generation")
    conditions = list(status.get("conditions") or [])
    # One writer of Ready per resource: the observing pass, which knows the replicas (a BrokerGroup's group
    # pass, a ControllerGroup's controller pass); the reconciler writes Reconciled only.
    if outcome.blocked_reason:
        conditions = set_condition(
            conditions,
            "Reconciled",
            "False",
            outcome.blocked_reason,
            outcome.blocked_message,
            now,
            generation,
        )
    else:
        changes = [
            f"{verb} {', '.join(names)}"
            for verb, names in (("applied", outcome.applied), ("deleted", outcome.deleted))
            if names
        ]
        message = "; ".join(changes) or "objects match the spec"
        if outcome.warnings:
            message += "; warnings: " + "; ".join(outcome.warnings)
        old = next((c for c in conditions if c.get("type") == "Reconciled"), None)
        if old is not None and old.get("status") == "True" and not outcome.applied and not outcome.deleted:
            message = str(old.get("message", message))  # a no-op pass must not rewrite status
        conditions = set_condition(conditions, "Reconciled", "True", "Applied", message, now, generation)
    return {"observedGeneration": generation, "conditions": conditions}


async def write_reconciled(kube: KubeClient, body: JSON, outcome: Outcome) -> None:
    """observedGeneration and the Reconciled condition, through the one status writer."""
    wanted = desired_status(body, outcome, now_iso())
    reconciled = next(c for c in wanted["conditions"] if c.get("type") == "Reconciled")
    change = StatusChange(
        fields={"observedGeneration": wanted["observedGeneration"]}, conditions={"Reconciled": reconciled}
    )
    await write_status(kube, body, change)
