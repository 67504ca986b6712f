"""examples/proxy.yaml on the real node: two RocketMQ proxies (a Deployment of the broker image) in front of the
quickstart group, reached from outside the pod network as a user outside the cluster would: from the host,
through the NodePort, with RocketMQ 5's own gRPC client (rocketmq-python-client, default settings). The
`quickstart` fixture applies the example (tests/e2e/conftest.py), so the proxies start beside the brokers."""

from __future__ import annotations

import json
from typing import Any

from e2e.e2e_helpers import pod_ready
from rocketmq_operator.tools.grpc_client import receive_keys, send_keys
from rocketmq_operator.tools.noloss import missing_acknowledged

NS = "rocketmq"
TOPIC = "proxy-e2e"
GROUP = "proxy-e2e-readers"


def _topic_and_group() -> str:
    """A Topic and a ConsumerGroup of their own (gRPC clients do not create topics), so that this test's pop
    consumption never moves the quickstart group's offsets that other tests read."""
    docs = [
        {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "Topic", "metadata": {"name": TOPIC},
         "spec": {"brokerGroups": ["broker-a"], "readQueueNums": 4, "writeQueueNums": 4, "messageType": "NORMAL"}},
        {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "ConsumerGroup", "metadata": {"name": GROUP},
         "spec": {"brokerGroups": ["broker-a"], "topics": [TOPIC]}},
    ]  # fmt: skip
    return "\n---\n".join(json.dumps(d) for d in docs)


def test_proxy_example_serves_a_grpc_client_on_the_host_through_the_node_port(quickstart: Any) -> None:
    node = quickstart.node
    node.kubectl("-n", NS, "apply", "-f", "-", input=_topic_and_group())

    def ready() -> bool:
        status = node.json("-n", NS, "get", "proxy", "proxy").get("status") or {}
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
        return status.get("readyReplicas") == 2 and conditions.get("Ready") == "True"

    seconds = node.wait_for("both proxies Ready", ready, timeout=600)
    print(f"\nproxies Ready ({seconds:.0f}s more after the group was healthy)")
    print(node.kubectl("-n", NS, "get", "proxy", "-o", "wide"))
    status = node.json("-n", NS, "get", "proxy", "proxy")["status"]
    assert status["endpoint"] == f"proxy.{NS}.svc:8081"
    pods = [
        p
        for p in node.json(
            "-n", NS, "get", "pods", "-l", "app.kubernetes.io/component=proxy,app.kubernetes.io/instance=proxy"
        )["items"]
        if pod_ready(p)
    ]
    assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
    procs = node.kubectl(
        "-n", NS, "exec", pods[0]["metadata"]["name"], "--", "sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"
    )
    assert "org.apache.rocketmq.proxy.ProxyStartup" in procs
    service = node.json("-n", NS, "get", "service", "proxy")
    assert service["spec"]["type"] == "NodePort"
    node_port = next(p["nodePort"] for p in service["spec"]["ports"] if p["name"] == "grpc")
    assert node_port == 30081

    def topic_asserted() -> bool:
        return bool((node.json("-n", NS, "get", "topic", TOPIC).get("status") or {}).get("ready"))

    node.wait_for(f"topic {TOPIC} on the master", topic_asserted, timeout=300)

    # From the host, outside the pod network: the node's address and the node port.
    endpoint = f"{node.node_address()}:{node_port}"
    keys = [f"proxy-e2e-{i}" for i in range(40)]
    failed = [(s.key, s.status, s.error) for s in send_keys(endpoint, TOPIC, keys) if not s.ok]
    assert not failed, failed
    got = receive_keys(endpoint, GROUP, TOPIC, keys, idle_s=30)
    lost = missing_acknowledged(set(keys), got)
    assert not lost, sorted(lost)[:10]

    # Deleting the Proxy deletes what it owns (its Deployment, Service and PodDisruptionBudget), as a user expects;
    # the brokers keep serving. It also frees the two proxy JVMs for the tests after this one.
    node.kubectl("-n", NS, "delete", "proxy", "proxy")

    def proxy_objects_gone() -> bool:
        names = node.kubectl(
            "-n", NS, "get", "deployment,service,pdb", "-l", "app.kubernetes.io/instance=proxy", "-o", "name"
        )
        return not names.strip()

    node.wait_for("the Proxy's Deployment, Service and PDB gone", proxy_objects_gone, timeout=300)
    assert quickstart.healthy()
