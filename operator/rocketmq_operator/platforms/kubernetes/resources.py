"""Our custom resources as read from the API server: one validation per resource and pass, one
ControllerGroup lookup.

Contract: `manifest_of(body)` is what the user wrote (apiVersion, kind, the user-set metadata, spec; no
status or server-set metadata); `validated(body)` validates exactly that with `api.validation`, the same
rules as `rocketmq-operator validate` and the CRD's CEL. `controller_group(kube, namespace, name)` returns the
referenced ControllerGroup, or the reason and message of why it cannot be used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rocketmq_operator.api.models import ControllerGroup
from rocketmq_operator.api.validation import Report, validate_document
from rocketmq_operator.platforms.kubernetes.kube import KubeClient

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
