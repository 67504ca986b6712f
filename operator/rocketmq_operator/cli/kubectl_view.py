"""The view of `kubectl rocketmq status` and of the report (`cli.kubectl_report`): one BrokerGroup and its pods as
a document (`group_document`, the shape `local status --json` gives a group) and as text (`render_status`). Pure:
it reads the objects it is given and asks nothing of the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from rocketmq_operator.core.status_view import cell, group_lines, replica_table
from rocketmq_operator.render.kubernetes.names import ANNOTATION_FENCE, ANNOTATION_SWITCHOVER_TO, LABEL_BROKER_ID

JSON = dict[str, Any]
# Conditions of the operator's own operations, shown when they report a problem (core.status_view shows the
# observer's).
MORE_PROBLEMS = {"Reconciled": "False", "RolloutBlocked": "True", "Switchover": "False", "Fence": "False"}


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_summary(pod: Mapping[str, Any]) -> JSON:
    """What `status` shows of a pod: phase, ready containers, restarts, node, and the operator's labels."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    containers = status.get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or []) or len(containers)
    labels = meta.get("labels") or {}
    return {
        "name": meta.get("name"),
        "phase": "Terminating" if meta.get("deletionTimestamp") else status.get("phase"),
        "ready": f"{sum(1 for c in containers if c.get('ready'))}/{total}",
        "restarts": sum(int(c.get("restartCount") or 0) for c in containers),
        "node": (pod.get("spec") or {}).get("nodeName"),
        "podIP": status.get("podIP"),
        "role": labels.get("rocketmq-operator.dev/role"),
        "brokerId": labels.get(LABEL_BROKER_ID),
    }


def group_document(bg: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> JSON:
    """The BrokerGroup's status as `local status` documents a group (camelCase, plus `name`, `namespace`), each
    replica with its pod (`pod`: `pod_summary`), a pod the operator has not observed yet as a replica of unknown
    role, and every pod under `pods`."""
    meta = bg.get("metadata") or {}
    status = dict(bg.get("status") or {})
    summaries = [pod_summary(p) for p in pods]
    by_name = {str(p["name"]): p for p in summaries}
    replicas: list[JSON] = []
    for r in status.get("replicas") or []:
        replicas.append({**r, "pod": by_name.pop(str(r.get("name")), None)})
    for name, p in by_name.items():
        broker_id = p.get("brokerId")
        replicas.append(
            {
                "name": name,
                "brokerId": int(broker_id) if isinstance(broker_id, str) and broker_id.isdigit() else None,
                "role": None,
                "alive": None,
                "inSync": None,
                "maxOffset": None,
                "pod": p,
            }
        )
    return {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        **status,
        "replicas": replicas,
        "pods": summaries,
        "annotations": {
            k: v
            for k, v in (meta.get("annotations") or {}).items()
            if k in (ANNOTATION_SWITCHOVER_TO, ANNOTATION_FENCE)
        },
    }


def _role(g: Mapping[str, Any], r: Mapping[str, Any]) -> str:
    role = cell(r.get("role"))
    if r.get("name") in (g.get("fenced") or []):
        role += " (fenced)"
    return role


def _pod_cells(g: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    del g
    pod = r.get("pod")
    if not pod:
        return ["(no pod)", "-", "-"]
    return [cell(pod.get("phase")), cell(pod.get("ready")), cell(pod.get("restarts"))]


def render_status(doc: Mapping[str, Any]) -> str:
    """The human view of one group document (`group_document`)."""
    lines = [f"brokergroup {doc['namespace']}/{doc['name']}: phase {cell(doc.get('phase'))}"]
    lines.extend(
        replica_table([doc], extra_headers=("POD", "READY", "RESTARTS"), extra_cells=_pod_cells, role_text=_role)
    )
    if not doc.get("conditions") and doc.get("master") is None:
        lines.append(
            f"{doc['name']}: no status yet: the operator has not observed this group (is it running? its log says why)"
        )
        return "\n".join(lines)
    lines.extend(group_lines([doc], more_problems=MORE_PROBLEMS))
    for c in doc.get("conditions") or []:
        if c.get("type") == "Switchover" and c.get("status") == "True":
            lines.append(f"  last switchover ({c.get('lastTransitionTime', '?')}): {c.get('message', '')}")
    rollout = doc.get("rollout") or {}
    if rollout and rollout.get("phase") != "Complete":
        what = rollout.get("currentStep") or rollout.get("message") or ""
        lines.append(f"  rollout {rollout.get('phase')}: {what}".rstrip(": "))
    if doc.get("fenced"):
        lines.append(f"  fenced: {', '.join(doc['fenced'])} (puts refused; `kubectl rocketmq unfence REPLICA`)")
    pending = (doc.get("annotations") or {}).get(ANNOTATION_SWITCHOVER_TO)
    if pending:
        lines.append(f"  switchover to {pending} requested, not done yet")
    history = doc.get("history") or []
    if history:
        h = history[-1]
        lines.append(
            f"  last master change {h.get('time')}: broker {cell(h.get('fromBrokerId'))} -> "
            f"{cell(h.get('toBrokerId'))} (epoch {cell(h.get('epoch'))}): {h.get('reason', '')}"
        )
    return "\n".join(lines)
