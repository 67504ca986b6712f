"""What a Proxy's status says, from its Deployment: how many proxies are Ready, and where clients connect.

Contract: `observe_proxy(kube, body)` reads the Proxy's Deployment (one get) and writes `readyReplicas`,
`endpoint` (the Service's in-cluster gRPC address) and the `Ready` condition (True while at least one proxy is
Ready: a client is served) through the one status writer, which writes nothing when the status already says
that. The objects themselves are the reconcile pipeline's (`reconcile.reconcile`), as for every kind.
"""

from __future__ import annotations

from typing import Any

from rocketmq_operator.control.clock import now_iso
from rocketmq_operator.core.conditions import ConditionStatus, condition
from rocketmq_operator.platforms.kubernetes.kube import KubeClient
from rocketmq_operator.platforms.kubernetes.status_writer import StatusChange, write_status
from rocketmq_operator.render.kubernetes.proxy import proxy_endpoint_of

JSON = dict[str, Any]


def proxy_status(body: JSON, deployment: JSON | None) -> tuple[int, str, tuple[ConditionStatus, str, str]]:
    """(ready proxies, endpoint, the Ready condition's status, reason and message) for one observation."""
    meta = body["metadata"]
    wanted = int((body.get("spec") or {}).get("replicas") or 0)
    ready = int(((deployment or {}).get("status") or {}).get("readyReplicas") or 0)
    endpoint = proxy_endpoint_of(meta["name"], meta["namespace"])
    if deployment is None:
        return 0, endpoint, ("False", "NotApplied", f"Deployment {meta['name']} does not exist yet")
    if ready == 0:
        return 0, endpoint, ("False", "NoProxyReady", f"0/{wanted} proxies Ready")
    return ready, endpoint, ("True", "ProxiesReady", f"{ready}/{wanted} proxies Ready")


async def observe_proxy(kube: KubeClient, body: JSON) -> bool:
    """One observation written (see the module docstring); True when the status changed."""
    meta = body["metadata"]
    deployment = await kube.get("Deployment", meta["namespace"], meta["name"])
    ready, endpoint, (status, reason, message) = proxy_status(body, deployment)
    old = next((c for c in (body.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None)
    ready_condition = condition("Ready", status, reason, message, now_iso(), meta.get("generation"), previous=old)
    change = StatusChange(fields={"readyReplicas": ready, "endpoint": endpoint}, conditions={"Ready": ready_condition})
    return await write_status(kube, body, change)
