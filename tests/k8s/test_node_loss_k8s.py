"""The node-loss step against the real kube-apiserver: Nodes whose Ready condition and taints are set through
their status subresource as the node controller sets them, broker pods bound to them, and `node_loss_pass` with
each policy. Report leaves every pod alone; DeletePods force-deletes only the pod on the node that carries the
out-of-service taint, never the one on a node that is merely unreachable; the condition says which and why, and
goes False once every node is Ready. (No kubelet runs here: the pods stay bound and Pending, which is all the
step reads.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import kopf
import pytest

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.api.validation import validate_file
from rocketmq_operator.platforms.kubernetes.group_memory import GroupMemory
from rocketmq_operator.platforms.kubernetes.kube import KubeClient
from rocketmq_operator.platforms.kubernetes.node_loss import node_loss_pass

ROOT = Path(__file__).resolve().parents[2]
NS = "node-loss"
NODES = {"nl-ready": "True", "nl-unreachable": "Unknown", "nl-off": "Unknown"}
PODS = {"broker-a-0": "nl-ready", "broker-a-1": "nl-unreachable", "broker-a-2": "nl-off"}


def _node_status(cluster: Any, name: str, ready: str) -> None:
    status = {"conditions": [{"type": "Ready", "status": ready, "reason": "Test", "message": "set by the test"}]}
    cluster.kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps({"status": status}))


def test_node_loss_reports_and_deletes_only_on_a_fenced_node(
    k8s_cluster: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(k8s_cluster.kubeconfig))
    events: list[tuple[str, str, str]] = []
    monkeypatch.setattr(kopf, "event", lambda _obj, *, type, reason, message: events.append((type, reason, message)))
    k8s_cluster.kubectl("apply", "--server-side", "-f", ROOT / "crds")
    k8s_cluster.kubectl(
        "wait", "--for=condition=Established", "crd/brokergroups.rocketmq-operator.dev", "--timeout=60s"
    )
    k8s_cluster.kubectl("create", "namespace", NS)
    group = next(r.resource for r in validate_file(ROOT / "examples" / "quickstart.yaml") if r.resource and
                 isinstance(r.resource, BrokerGroup))  # fmt: skip
    manifest = group.model_dump(by_alias=True, exclude_none=True, mode="json")
    manifest["metadata"] = {"name": group.metadata.name, "namespace": NS}
    for name, ready in NODES.items():
        taints = [{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {}}
        if name == "nl-off":
            node["spec"]["taints"] = taints
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(node), encoding="utf-8")
        k8s_cluster.kubectl("create", "-f", path)
        _node_status(k8s_cluster, name, ready)
    for pod, node_name in PODS.items():
        spec = {
            "nodeName": node_name,
            "containers": [{"name": "broker", "image": "ghcr.io/rocketmq-operator/rocketmq-broker:5.5.0"}],
            "tolerations": [{"operator": "Exists"}],  # the out-of-service taint would evict it otherwise
        }
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "namespace": NS}, "spec": spec}
        path = tmp_path / f"{pod}.json"
        path.write_text(json.dumps(body), encoding="utf-8")
        k8s_cluster.kubectl("create", "-f", path)

    async def one_pass(kube: KubeClient, memory: GroupMemory, policy: str) -> tuple[list[str], dict[str, Any]]:
        await kube.patch("BrokerGroup", NS, group.metadata.name, {"spec": {"failover": {"nodeLoss": policy}}})
        body = await kube.get("BrokerGroup", NS, group.metadata.name)
        assert body is not None
        pods = await kube.list("Pod", NS)
        await node_loss_pass(kube, BrokerGroup.model_validate(body), body, kopf.Body(body), pods, memory,
                             _Logger())  # fmt: skip
        after = await kube.get("BrokerGroup", NS, group.metadata.name)
        assert after is not None
        left = sorted(p["metadata"]["name"] for p in await kube.list("Pod", NS))
        lost = next(c for c in after["status"]["conditions"] if c["type"] == "NodeLost")
        return left, lost

    async def run() -> list[tuple[list[str], dict[str, Any]]]:
        kube = await KubeClient.connect()
        memory = GroupMemory()
        try:
            await kube.apply(manifest)
            out = [await one_pass(kube, memory, "Report"), await one_pass(kube, memory, "DeletePods")]
            for name in NODES:
                _node_status(k8s_cluster, name, "True")
            out.append(await one_pass(kube, memory, "DeletePods"))
            return out
        finally:
            await kube.close()

    try:
        (left1, lost1), (left2, lost2), (left3, lost3) = asyncio.run(run())
        assert left1 == ["broker-a-0", "broker-a-1", "broker-a-2"], "Report deletes nothing"
        assert lost1["status"] == "True" and lost1["reason"] == "NodeUnreachable"
        assert "broker-a-1: its node nl-unreachable" in lost1["message"] and "nl-off" in lost1["message"]
        assert "spec.failover.nodeLoss: Report" in lost1["message"]
        assert left2 == ["broker-a-0", "broker-a-1"], "DeletePods deletes only the pod on the out-of-service node"
        assert "force-deleted pod broker-a-2" in lost2["message"]
        assert "pod broker-a-1 not deleted: node nl-unreachable is lost but not confirmed off" in lost2["message"]
        assert left3 == ["broker-a-0", "broker-a-1"]
        assert lost3["status"] == "False" and lost3["reason"] == "NoNodeLost"
        assert [(t, r) for t, r, _ in events] == [
            ("Warning", "NodeLost"),
            ("Warning", "NodeLossPodDeleted"),
            ("Normal", "NodeRecovered"),
        ]
    finally:
        k8s_cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
        for name in NODES:
            k8s_cluster.kubectl("delete", "node", name, "--wait=false", check=False)


class _Logger:
    def warning(self, *args: Any) -> None:
        pass

    def info(self, *args: Any) -> None:
        pass
