"""The chart's operator and the quickstart on a real node: real pods, real RocketMQ JVMs, real DNS."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e.e2e_helpers import operator_version, pod_ready

ROOT = Path(__file__).resolve().parents[2]
NS = "rocketmq"


def test_dns_resolves_a_service(k8s_node: Any) -> None:
    """CoreDNS answers for the cluster domain from inside a pod (the pod runs the operator image's Python)."""
    image = f"ghcr.io/rocketmq-operator/rocketmq-operator:{operator_version()}"
    script = "import socket; print(socket.gethostbyname('kubernetes.default.svc.cluster.local'))"
    k8s_node.start_pod("default", "dns-check", image, "python3", "-c", script)
    out = k8s_node.pod_output("default", "dns-check", timeout=300)
    assert "10.0.0.1" in out


def test_operator_pod_runs_with_probes_and_metrics(operator: Any) -> None:
    pods = operator.json("-n", "rocketmq-operator", "get", "pods")["items"]
    assert len(pods) == 1 and pod_ready(pods[0])
    container = pods[0]["spec"]["containers"][0]
    assert container["livenessProbe"] and container["readinessProbe"]
    assert any(p.get("name") == "metrics" for p in container["ports"])


def test_quickstart_brokers_ready_with_master_and_sync_state_set(quickstart: Any) -> None:
    operator = quickstart.node
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
    # Two disjoint budgets: the master's pod (minAvailable 1) and every other pod, one at a time.
    assert operator.json("-n", NS, "get", "pdb", "broker-a")["spec"]["minAvailable"] == 1
    assert operator.json("-n", NS, "get", "pdb", "broker-a-master")["spec"]["minAvailable"] == 1
    # Real RocketMQ brokers: the JVM in the master's container runs BrokerStartup.
    procs = operator.kubectl("-n", NS, "exec", master, "--", "sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
    assert "org.apache.rocketmq.broker.BrokerStartup" in procs
    # ... of the pinned release: every broker reports RocketMQ 5.5.0 itself (GET_BROKER_RUNTIME_INFO).
    versions = {r["name"]: r.get("version") for r in status["replicas"]}
    assert set(versions.values()) == {"V5_5_0"}, versions
    # The master PodDisruptionBudget: no voluntary eviction of the master's pod (a drain waits for a switchover).
    master_pdb = operator.json("-n", NS, "get", "pdb", "broker-a-master")
    assert master_pdb["spec"]["minAvailable"] == 1
    assert master_pdb["spec"]["selector"]["matchLabels"]["rocketmq-operator.dev/role"] == "master"

    # The ControllerGroup says which controller leads (`kubectl get cg`: LEADER, READY).
    def controller_ready() -> bool:
        cg = operator.json("-n", NS, "get", "cg", "rocketmq-ctl").get("status") or {}
        ready = {c["type"]: c["status"] for c in cg.get("conditions", [])}.get("Ready")
        return cg.get("leader") == "rocketmq-ctl-0" and ready == "True" and cg.get("readyReplicas") == 1

    operator.wait_for("the ControllerGroup to show its leader and Ready", controller_ready, timeout=120)
    print(operator.kubectl("-n", NS, "get", "cg"))
    logs = operator.kubectl("-n", "rocketmq-operator", "logs", "deploy/rocketmq-operator")
    assert "broker-a" in logs
