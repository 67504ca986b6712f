"""Our custom resources as read from the API server: one validation per resource and pass, one
ControllerGroup lookup.

Contract: `manifest_of(body)` is what the user wrote (apiVersion, kind, the user-set metadata, spec; no
status or server-set metadata); `validated(body)` validates exactly that with `api.validation`, the same
rules as `rocketmq-operator validate` and the CRD's CEL. `controller_group(kube, namespace, name)` returns the
referenced ControllerGroup, or the reason and message of why it cannot be used. `write_condition` sets or
removes one condition of a custom resource's status, keeping the others, and writes only on a change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocketmq_operator.api.models import ControllerGroup
from rocketmq_operator.api.validation import Report, validate_document
from rocketmq_operator.control.clock import now_iso
from rocketmq_operator.core.conditions import ConditionStatus, condition
from rocketmq_operator.platforms.kubernetes.kube import KubeClient
from rocketmq_operator.platforms.kubernetes.status_writer import StatusChange, write_status

JSON = dict[str, Any]


def manifest_of(body: JSON) -> JSON:
    return {
        "apiVersion": body.get("apiVersion"),
        "kind": body.get("kind"),
        "metadata": {
            k: v for k, v in (body.get("metadata") or {}).items() if k in ("name", "namespace", "labels", "annotations")
        },
        "spec": body.get("spec") or {},
    }


def validated(body: JSON) -> Report:
    return validate_document(manifest_of(body))


@dataclass(frozen=True)
class ControllerGroupLookup:
    resource: ControllerGroup | None
    reason: str = ""  # why `resource` is None: ControllerGroupNotFound or ControllerGroupInvalid
    message: str = ""


async def controller_group(kube: KubeClient, namespace: str, name: str) -> ControllerGroupLookup:
    raw = await kube.get("ControllerGroup", namespace, name)
    if raw is None:
        return ControllerGroupLookup(
            None,
            "ControllerGroupNotFound",
            f"spec.controllerRef.name: ControllerGroup '{name}' does not exist in namespace {namespace}; "
            "fix: create it, or correct the name",
        )
    report = validated(raw)
    if not isinstance(report.resource, ControllerGroup):
        return ControllerGroupLookup(
            None, "ControllerGroupInvalid", f"ControllerGroup '{name}' is invalid; fix it first"
        )
    cg = report.resource
    cg.metadata.namespace = namespace
    return ControllerGroupLookup(cg)


async def write_condition(
    kube: KubeClient, body: JSON, type_: str, wanted: tuple[ConditionStatus, str, str] | None
) -> bool:
    """Set the condition `type_` of the resource `body` to (status, reason, message), or remove it (`wanted`
    None), keeping every other condition (`status_writer`: nothing is written when `body` as this pass read it
    already says that). True when written."""
    meta = body["metadata"]
    old = next((c for c in (body.get("status") or {}).get("conditions") or [] if c.get("type") == type_), None)
    new = condition(type_, *wanted, now_iso(), meta.get("generation"), previous=old) if wanted is not None else None
    return await write_status(kube, body, StatusChange(conditions={type_: new}))
