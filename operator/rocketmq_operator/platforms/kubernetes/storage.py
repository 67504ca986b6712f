"""Storage expansion on Kubernetes: `core.storage.plan_storage`, with the group's PVCs and their StorageClasses.

Contract: `storage_pass` runs in every group pass. It lists the group's broker PVCs (one list, by the labels
the StatefulSet controller copies from its selector), keeps those of the current ordinals (`data-<group>-<i>`),
reads the StorageClass of each claim that must grow (one get per class, only then), asks `plan_storage`, patches
`spec.resources.requests.storage` of each planned claim (merge patch: the claim's only mutable size field), and
writes the `StorageResized` condition when it changed, with an Event per patch and per change of reason.
Nothing is remembered but which reason was last announced (`memory`): everything else is read again from the
claims, so a restarted operator picks up a resize where the claims stand. An API error (a list, a get or a patch
refused: 403, 422, 500) becomes the condition with the fix; it is never raised out of the pass.
"""

from __future__ import annotations

from typing import Any

import kopf

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.core.storage import (
    CONDITION,
    ClaimFacts,
    ClassFacts,
    StorageFacts,
    StoragePlan,
    classes_needed,
    plan_storage,
    refused_patch,
)
from rocketmq_operator.platforms.kubernetes.group_memory import GroupMemory
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError
from rocketmq_operator.platforms.kubernetes.resources import write_condition
from rocketmq_operator.render.kubernetes import LABEL_GROUP

JSON = dict[str, Any]
CLAIM_TEMPLATE = "data"  # render.kubernetes.kinds: the one volumeClaimTemplate of a broker StatefulSet


def claim_facts(pvc: JSON) -> ClaimFacts:
    """What `plan_storage` needs from one PVC as the API server returns it."""
    spec, status = pvc.get("spec") or {}, pvc.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
    # allocatedResourceStatuses (Kubernetes 1.32+, RecoverVolumeExpansionFailure): the resize controller's state.
    allocated = str((status.get("allocatedResourceStatuses") or {}).get("storage") or "")
    errors = [
        f"{t}: {c.get('message', '')}".strip(": ") for t, c in conditions.items() if str(t).endswith("ResizeError")
    ]
    failed = allocated if allocated.endswith("Infeasible") else (errors[0] if errors else None)
    return ClaimFacts(
        name=pvc["metadata"]["name"],
        requested=((spec.get("resources") or {}).get("requests") or {}).get("storage"),
        capacity=(status.get("capacity") or {}).get("storage"),
        storage_class=spec.get("storageClassName"),
        bound=status.get("phase") == "Bound",
        resize_pending="FileSystemResizePending" in conditions or allocated == "NodeResizePending",
        resizing="Resizing" in conditions or allocated.endswith("ResizeInProgress"),
        resize_failed=failed,
    )


async def _classes(kube: KubeClient, names: set[str]) -> dict[str, ClassFacts]:
    out: dict[str, ClassFacts] = {}
    for name in sorted(names):
        try:
            found = await kube.get("StorageClass", None, name)
        except KubeError as exc:
            out[name] = ClassFacts(name, None, str(exc))
            continue
        out[name] = ClassFacts(name, None if found is None else bool(found.get("allowVolumeExpansion")))
    return out


async def _plan(
    kube: KubeClient, bg: BrokerGroup, namespace: str, reported: bool
) -> tuple[StoragePlan, dict[str, str]]:
    """The plan, and each claim's StorageClass (for the Events)."""
    name = bg.metadata.name
    try:
        pvcs = await kube.list(
            "PersistentVolumeClaim", namespace, f"{LABEL_GROUP}={name},app.kubernetes.io/component=broker"
        )
    except KubeError as exc:
        return (
            StoragePlan(
                (),
                "False",
                "ClaimsUnreadable",
                f"cannot list the PVCs of BrokerGroup {name} ({exc}): spec.storage.size {bg.spec.storage.size} is "
                "not checked; rule: the operator grows each replica's PVC in place; fix: grant the operator list "
                "on persistentvolumeclaims (the chart's Role does)",
            ),
            {},
        )
    wanted = {f"{CLAIM_TEMPLATE}-{name}-{i}" for i in range(bg.spec.replicas)}  # not those a scale-in left behind
    claims = tuple(
        claim_facts(p)
        for p in sorted(pvcs, key=lambda p: str(p["metadata"]["name"]))
        if p["metadata"]["name"] in wanted
    )
    size = bg.spec.storage.size
    classes = await _classes(kube, classes_needed(size, claims))
    return plan_storage(StorageFacts(size, claims, classes, reported)), {c.name: c.storage_class or "" for c in claims}


async def storage_pass(
    kube: KubeClient, bg: BrokerGroup, body: JSON, resource: kopf.Body, memory: GroupMemory, logger: Any
) -> StoragePlan:
    """One storage step for the group (see the module docstring). Returns the plan as carried out."""
    namespace = body["metadata"]["namespace"]
    conditions = (body.get("status") or {}).get("conditions") or []
    reported = any(c.get("type") == CONDITION for c in conditions)
    plan, classes = await _plan(kube, bg, namespace, reported)
    for patch in plan.patches:
        try:
            await kube.patch(
                "PersistentVolumeClaim",
                namespace,
                patch.claim,
                {"spec": {"resources": {"requests": {"storage": patch.size}}}},
            )
        except KubeError as exc:
            plan = refused_patch(patch, str(exc))
            break
        text = f"patched PVC {patch.claim} from {patch.from_size} to {patch.size} (StorageClass {classes[patch.claim]})"
        logger.info("%s", text)
        kopf.event(resource, type="Normal", reason="StorageExpansion", message=text)
    if plan.status is None:
        return plan
    await write_condition(kube, body, CONDITION, (plan.status, plan.reason, plan.message))
    if memory.said_storage_reason != plan.reason:
        # One Event per change of reason: progress (Resizing) changes its message every few passes.
        memory.said_storage_reason = plan.reason
        warning = plan.status == "False" and plan.reason != "Resizing"
        kopf.event(
            resource,
            type="Warning" if warning else "Normal",
            reason="StorageResized" if plan.status == "True" else plan.reason,
            message=plan.message[:1000],
        )
    return plan
