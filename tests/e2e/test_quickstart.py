"""The chart's operator and the quickstart on a real node: real pods, real RocketMQ JVMs, real DNS."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NS = "rocketmq"


def _version() -> str:
    m = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert m
    return m.group(1)


def _ready(pod: dict[str, Any]) -> bool:
    conds = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
    return conds.get("Ready") == "True"


def test_dns_resolves_a_service(k8s_node: Any) -> None:
    """CoreDNS answers for the cluster domain from inside a pod (the pod runs the operator image's Python)."""
    image = f"ghcr.io/rocketmq-operator/rocketmq-operator:{_version()}"
    out = k8s_node.kubectl(
        "run", "dns-check", "--rm", "-i", "--restart=Never", f"--image={image}", "--image-pull-policy=Never",
        "--command", "--", "python3", "-c",
        "import socket; print(socket.gethostbyname('kubernetes.default.svc.cluster.local'))",
        timeout=180,
    )  # fmt: skip
    assert "10.0.0.1" in out


@pytest.fixture(scope="module")
def operator(k8s_node: Any) -> Any:
    k8s_node.kubectl("apply", "--server-side", "-f", ROOT / "crds")
    k8s_node.kubectl("create", "namespace", "rocketmq-operator")
    k8s_node.helm(
        "install", "rocketmq-operator", ROOT / "charts" / "rocketmq-operator",
        "--namespace", "rocketmq-operator", "--set", "image.pullPolicy=Never", "--wait", "--timeout", "5m",
    )  # fmt: skip
    return k8s_node


def test_operator_pod_runs_with_probes_and_metrics(operator: Any) -> None:
    pods = operator.json("-n", "rocketmq-operator", "get", "pods")["items"]
    assert len(pods) == 1 and _ready(pods[0])
    container = pods[0]["spec"]["containers"][0]
    assert container["livenessProbe"] and container["readinessProbe"]
    assert any(p.get("name") == "metrics" for p in container["ports"])


def test_quickstart_brokers_ready_with_master_and_sync_state_set(operator: Any) -> None:
    operator.kubectl("create", "namespace", NS)
    operator.kubectl("-n", NS, "apply", "-f", ROOT / "examples" / "quickstart.yaml")

    def all_ready() -> bool:
        pods = operator.json("-n", NS, "get", "pods")["items"]
        return len(pods) == 4 and all(_ready(p) for p in pods)

    seconds = operator.wait_for("the controller pod and 3 broker pods Ready", all_ready, timeout=900, interval=5)
    print(f"quickstart apply -> 4 pods Ready in {seconds:.0f}s")

    def has_master() -> bool:
        status = operator.json("-n", NS, "get", "bg", "broker-a").get("status", {})
        return bool(status.get("master")) and len(status.get("syncStateSet", {}).get("members", [])) == 3

    operator.wait_for("a master and a SyncStateSet of 3", has_master, timeout=300, interval=5)
    print(operator.kubectl("-n", NS, "get", "bg", "-o", "wide"))
    status = operator.json("-n", NS, "get", "bg", "broker-a")["status"]
    assert status.get("writable") is True
    master = status["master"]["replica"]
    pods = {p["metadata"]["name"]: p for p in operator.json("-n", NS, "get", "pods")["items"]}
    roles = {name: p["metadata"]["labels"].get("rocketmq-operator.dev/role") for name, p in pods.items()}
    assert roles[master] == "master" and sorted(r for n, r in roles.items() if n.startswith("broker-a-")) == [
        "master",
        "slave",
        "slave",
    ]
    # The master Service points at the master pod only.
    slices = operator.json("-n", NS, "get", "endpointslices", "-l", "kubernetes.io/service-name=broker-a-master")
    addresses = [a for s in slices["items"] for e in s.get("endpoints") or [] for a in e["addresses"]]
    assert addresses == [pods[master]["status"]["podIP"]]
    # The connection ConfigMap names the name servers by their StatefulSet DNS names.
    conn = operator.json("-n", NS, "get", "configmap", "rocketmq-ctl-connection")["data"]
    assert conn["nameServers"] == "rocketmq-ctl-0.rocketmq-ctl-headless.rocketmq.svc:9876"
    assert operator.json("-n", NS, "get", "pdb", "broker-a")["spec"]["maxUnavailable"] == 1
    # Real RocketMQ brokers: the JVM in the master's container runs BrokerStartup.
    procs = operator.kubectl("-n", NS, "exec", master, "--", "sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
    assert "org.apache.rocketmq.broker.BrokerStartup" in procs
    logs = operator.kubectl("-n", "rocketmq-operator", "logs", "deploy/rocketmq-operator")
    assert "broker-a" in logs
