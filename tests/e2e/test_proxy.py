"""examples/proxy.yaml on the real node: two RocketMQ proxies (a Deployment of the broker image) in front of the
quickstart group, reached from outside the pod network as a user outside the cluster would: from the host,
through the NodePort, with RocketMQ 5's own gRPC clients (rocketmq-python-client and rocketmq-client-java, default
settings). The `quickstart` fixture applies the example (tests/e2e/conftest.py), so the proxies start beside the
brokers.

Then, under a default gRPC producer on the host: the proxies rolled to a new image tag and, in the same change,
opened to remoting clients outside the cluster (spec.service.remotingNodePort and advertisedHost: the node's
address), with the Deployment's surge-one, unavailable-zero roll; a remoting producer on the host (this project's,
taking the proxy as its name server, as RocketMQ's remoting SDKs do) sends through that node port; and each
proxy's JVM SIGKILLed in turn (the client's connection is on one of them, so one kill is its proxy's); every
acknowledged key, gRPC and remoting, read back through the gRPC NodePort."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import java_grpc
from e2e.e2e_helpers import pod_ready, wait_proxy_ready
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.remoting.namesrv import TopicRoute
from rocketmq_operator.tools.grpc_client import SteadyGrpcProducer, receive_keys, send_keys
from rocketmq_operator.tools.noloss import missing_acknowledged
from rocketmq_operator.tools.produce import produce

NS = "rocketmq"
TOPIC = "proxy-e2e"
GROUP = "proxy-e2e-readers"
PROXY_PODS = "app.kubernetes.io/component=proxy,app.kubernetes.io/instance=proxy"
REMOTING_NODE_PORT = 30080


def topic_and_group(topic: str, group: str) -> str:
    """A Topic and a ConsumerGroup of their own on broker-a (gRPC clients do not create topics), so that a test's
    pop consumption never moves the offsets that other tests read."""
    docs = [
        {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "Topic", "metadata": {"name": topic},
         "spec": {"brokerGroups": ["broker-a"], "readQueueNums": 4, "writeQueueNums": 4, "messageType": "NORMAL"}},
        {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "ConsumerGroup", "metadata": {"name": group},
         "spec": {"brokerGroups": ["broker-a"], "topics": [topic]}},
    ]  # fmt: skip
    return "\n---\n".join(json.dumps(d) for d in docs)


def wait_topic_ready(node: Any, ns: str, topic: str) -> None:
    def asserted() -> bool:
        return bool((node.json("-n", ns, "get", "topic", topic).get("status") or {}).get("ready"))

    node.wait_for(f"topic {topic} on the master", asserted, timeout=300)


def test_proxy_example_serves_a_grpc_client_on_the_host_through_the_node_port(quickstart: Any, tmp_path: Path) -> None:
    node = quickstart.node
    node.kubectl("-n", NS, "apply", "-f", "-", input=topic_and_group(TOPIC, GROUP))
    seconds = wait_proxy_ready(node, NS, "proxy", 2)
    print(f"\nproxies Ready ({seconds:.0f}s more after the group was healthy)")
    print(node.kubectl("-n", NS, "get", "proxy", "-o", "wide"))
    status = node.json("-n", NS, "get", "proxy", "proxy")["status"]
    assert status["endpoint"] == f"proxy.{NS}.svc:8081"
    pods = [p for p in node.json("-n", NS, "get", "pods", "-l", PROXY_PODS)["items"] if pod_ready(p)]
    assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
    procs = node.kubectl(
        "-n", NS, "exec", pods[0]["metadata"]["name"], "--", "sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"
    )
    assert "org.apache.rocketmq.proxy.ProxyStartup" in procs
    service = node.json("-n", NS, "get", "service", "proxy")
    assert service["spec"]["type"] == "NodePort"
    node_port = next(p["nodePort"] for p in service["spec"]["ports"] if p["name"] == "grpc")
    assert node_port == 30081

    wait_topic_ready(node, NS, TOPIC)

    # From the host, outside the pod network: the node's address and the node port.
    endpoint = f"{node.node_address()}:{node_port}"
    keys = [f"proxy-e2e-{i}" for i in range(40)]
    failed = [(s.key, s.status, s.error) for s in send_keys(endpoint, TOPIC, keys) if not s.ok]
    assert not failed, failed
    got = receive_keys(endpoint, GROUP, TOPIC, keys, idle_s=30)
    lost = missing_acknowledged(set(keys), got)
    assert not lost, sorted(lost)[:10]

    # RocketMQ 5's Java gRPC clients with their defaults (TLS on: the proxy's permissive mode answers them), on the
    # host: a Producer, then a SimpleConsumer that acks what it reads.
    classpath = java_grpc.compile_clients(tmp_path / "java")
    java = java_grpc.produce(classpath, endpoint, TOPIC, "proxy-e2e-java", 20)
    assert len(java.acknowledged) == 20 and not java.failures, java.output[-3000:]
    read = java_grpc.receive(classpath, endpoint, TOPIC, GROUP, java.acknowledged, idle_s=30)
    assert not missing_acknowledged(java.acknowledged, read.keys), sorted(java.acknowledged - read.keys)[:10]

    _roll_and_kill_under_a_producer(quickstart, endpoint, pods[0]["spec"]["containers"][0]["image"])

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


def _roll_and_kill_under_a_producer(quickstart: Any, endpoint: str, image: str) -> None:
    """The proxies rolled to a new tag of their image, then each proxy's JVM SIGKILLed in turn, under a default
    gRPC producer on the host sending through the NodePort; every acknowledged key read back."""
    node = quickstart.node
    new_image = image.rpartition(":")[0] + ":rolled-proxy-e2e"
    node.tag_image(image, new_image)  # what a push of a new tag would give (no registry is reachable here)
    producer = SteadyGrpcProducer(endpoint, TOPIC, rate=20.0, key_prefix="proxy-e2e-steady-")
    producer.start()
    try:
        node.wait_for("acknowledged sends before the roll", lambda: len(producer.acknowledged()) >= 20, timeout=120)

        def acked_after(at: float) -> bool:
            return any(r.ok and r.start > at for r in producer.records)

        def pods() -> list[dict[str, Any]]:
            return list(node.json("-n", NS, "get", "pods", "-l", PROXY_PODS)["items"])

        rolled_at = time.time()
        outside = {"remotingNodePort": REMOTING_NODE_PORT, "advertisedHost": node.node_address()}
        change = {"spec": {"image": new_image, "service": outside}}
        node.kubectl("-n", NS, "patch", "proxy", "proxy", "--type", "merge", "-p", json.dumps(change))

        def rolled() -> bool:
            now = pods()
            images = {p["spec"]["containers"][0]["image"] for p in now}
            return images == {new_image} and len(now) == 2 and all(pod_ready(p) for p in now)

        node.wait_for("both proxies rolled to the new image and Ready", rolled, timeout=600, interval=1)
        done_at = time.time()
        node.wait_for("an acknowledged send after the roll", lambda: acked_after(done_at), timeout=120)
        print(f"\nproxies rolled to {new_image} in {time.time() - rolled_at:.0f}s under the producer")
        remoting_acked = _remoting_sends_from_the_host(f"{node.node_address()}:{REMOTING_NODE_PORT}")

        for pod in sorted(p["metadata"]["name"] for p in pods()):

            def restarts(name: str = pod) -> int:
                found = node.json("-n", NS, "get", "pod", name)
                return sum(c.get("restartCount", 0) for c in (found.get("status") or {}).get("containerStatuses", []))

            before = restarts()
            killed_at = time.time()
            quickstart.kill_jvm(pod)

            def back(name: str = pod, before: int = before) -> bool:
                return restarts(name) > before and pod_ready(node.json("-n", NS, "get", "pod", name))

            node.wait_for(f"{pod} restarted and Ready after its JVM's SIGKILL", back, timeout=300, interval=1)
            node.wait_for(f"an acknowledged send after {pod}'s kill", lambda at=killed_at: acked_after(at), timeout=120)
            first = min(r.end for r in producer.records if r.ok and r.start > killed_at)
            print(f"{pod}: JVM SIGKILLed, the client writable again {first - killed_at:.2f}s after")
    finally:
        records = producer.stop()
    acked = {r.key for r in records if r.ok} | remoting_acked
    failed = sorted({r.status for r in records if not r.ok})
    print(f"gRPC producer on the host: {len(records)} sends, {len(acked)} acknowledged, failures {failed}")
    got = receive_keys(endpoint, GROUP, TOPIC, acked, idle_s=30)
    lost = missing_acknowledged(acked, got)
    assert not lost, f"{len(lost)} acknowledged keys not read back through the proxies: {sorted(lost)[:10]}"


def _remoting_sends_from_the_host(proxy_remoting: str) -> set[str]:
    """20 sends of a remoting producer on the host that takes the proxies' advertised remoting address as its name
    server: the route it gets names that address (the proxy's remotingAccessAddr and port), so every send goes
    through the node port. Returns the acknowledged keys; every send must be acknowledged."""
    route = asyncio.run(_route_through(proxy_remoting))
    addresses = {addr for broker in route.broker_datas for addr in broker.broker_addrs.values()}
    assert addresses == {proxy_remoting}, route
    report = asyncio.run(
        produce(proxy_remoting, TOPIC, 20, key_prefix="proxy-e2e-remoting-", create_topic=False, timeout=5.0)
    )
    failed = [(r.key, r.status) for r in report.records if r.status != "PUT_OK"]
    assert report.acknowledged == 20 and not failed, (report.failures, failed)
    print(f"remoting producer on the host through {proxy_remoting}: 20 of 20 acknowledged")
    return {r.key for r in report.records if r.status == "PUT_OK"}


async def _route_through(proxy_remoting: str) -> TopicRoute:
    async with RemotingClient([proxy_remoting], request_timeout=5.0) as client:
        return await client.get_route(TOPIC)
