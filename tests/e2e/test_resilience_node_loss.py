"""The master's node lost under a producer, on the real three-node cluster: the node powered off as a machine that
loses its power (k8s/cluster.py `power_off`: its link cut, then every process of it killed, kubelet, containerd,
pods), then powered on again (`power_on`: its daemons back on what they left on disk).

What a user relies on, checked as the client and `kubectl` see it: another replica is master and takes the
producer's sends within seconds (the operator's detection and the controller's election, not Kubernetes' node
timeouts); status, the master Service and a `MasterChanged` Event name it; once the node controller has given up
on the node, a replica whose pod is still bound to it is reported (`NodeLost`, the default `nodeLoss: Report`,
which deletes nothing; the unanswering master's own pod was deleted by its fence and may have started again on
another node); when the node is back, its replica rejoins as a slave and the SyncStateSet is full again; every
acknowledged key is read back. docs/fencing.md, "A lost node (Kubernetes)".

The quickstart's name server and controller, the operator and CoreDNS run one replica each: the lost node must not
hold them, or the test would measure their absence (a ControllerGroup of one replica cannot elect without its
pod). The test moves them off the node it powers off (cordon, delete, uncordon), and the group's other replicas too
if the scheduler's preference left one beside it, then makes that node's broker the master with a switchover, and
runs its producer on another node.

It runs on the second quickstart (namespace rocketmq-b, the lease agent opted in; tests/e2e/conftest.py), first and
alone in `make test` (marker node_fault): every pod on the powered-off node is hit, and the group's pods stay where
the fault put them (the roll and Spark tests that use the group after it do not need the example's placement).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from e2e import java_client
from e2e.e2e_helpers import pod_ready
from e2e.e2e_node import cluster_script, node_count
from real_parts import missing
from rocketmq_operator.tools.noloss import reports_no_loss_failure

pytestmark = pytest.mark.node_fault  # run alone, first (docs/testing.md, "Stage 2")

IN_FLIGHT = 8


def _pods_on(group: Any, node_name: str) -> list[dict[str, Any]]:
    items = group.node.json("get", "pods", "-A", "--field-selector", f"spec.nodeName={node_name}")["items"]
    return [p for p in items if (p.get("status") or {}).get("phase") not in {"Succeeded", "Failed"}]


def _is_own(pod: dict[str, Any], group: Any) -> bool:
    """The group's brokers and the proxies: what may share the lost node (the proxies have a second replica)."""
    labels = pod["metadata"].get("labels") or {}
    return (
        labels.get("rocketmq-operator.dev/group") == group.name or labels.get("app.kubernetes.io/component") == "proxy"
    )


def _singletons(group: Any, node_name: str) -> list[dict[str, Any]]:
    return [p for p in _pods_on(group, node_name) if not _is_own(p, group)]


def _colocated(group: Any, node_name: str, lost_pod: str) -> list[dict[str, Any]]:
    """The group's other brokers on the node that holds ``lost_pod``: the scheduler's spread is a preference, so a
    replica replaced while a node was down (the lease agent's test, before this one) may share a node with another;
    powering that node off would then take two replicas and the quorum with them (seen 2026-12-02)."""
    return [
        p
        for p in _pods_on(group, node_name)
        if (p["metadata"].get("labels") or {}).get("rocketmq-operator.dev/group") == group.name
        and p["metadata"]["name"] != lost_pod
    ]


def _move_singletons_off(group: Any, node_name: str, lost_pod: str) -> None:
    node = group.node
    moved = _singletons(group, node_name) + _colocated(group, node_name, lost_pod)
    if not moved:
        return
    node.kubectl("cordon", node_name)
    try:
        for pod in moved:
            meta = pod["metadata"]
            node.kubectl("-n", meta["namespace"], "delete", "pod", meta["name"], "--wait=true", "--timeout=120s")
        print(
            "moved off "
            + node_name
            + ": "
            + ", ".join(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in moved)
        )

        def settled() -> bool:
            pods = node.json("get", "pods", "-A")["items"]
            running = [p for p in pods if (p.get("status") or {}).get("phase") not in {"Succeeded", "Failed"}]
            return all(pod_ready(p) for p in running if not _is_own(p, group))

        node.wait_for("the moved pods Ready on the other nodes", settled, timeout=300)
    finally:
        node.kubectl("uncordon", node_name)
    group.wait_healthy()
    group.wait_route()  # a name server among the moved pods starts empty (found when this test ran first)


def _master_on(group: Any, pod: str) -> None:
    if group.master() == pod:
        return
    row = next(r for r in group.status()["replicas"] if r["name"] == pod)
    group.node.kubectl(
        "-n", group.ns, "annotate", "bg", group.name, f"rocketmq-operator.dev/switchover-to={row['brokerId']}"
    )  # fmt: skip
    group.node.wait_for(f"{pod} master by a switchover", lambda: group.master() == pod, timeout=180)
    group.wait_healthy()


JAVA_RATE = 50  # msgs/s of RocketMQ's Java client with its defaults, beside the project's producer
JAVA_COUNT = 6_000  # two minutes at that rate: through the outage and its 30 s route poll


def _writable_after(report: dict[str, Any], powered_off: float) -> float:
    """Seconds from the power-off to the end of the producer's pause across it (0: no pause of 1 s or more)."""
    pause = next((g for g in report["ack_gaps"] if g["after"] <= powered_off + 1 and g["until"] > powered_off), None)
    return round(pause["until"] - powered_off, 1) if pause else 0.0


def test_the_masters_node_powered_off_and_on_under_a_producer_loses_nothing(
    second_quickstart: Any, tmp_path: Any
) -> None:
    if node_count() < 3:
        missing("node loss needs the three-node cluster (ROCKETMQ_OPERATOR_E2E_NODES unset or 3)")
    group = second_quickstart
    node = group.node
    java_class = java_client.compile_producer(tmp_path / "java")
    java_client.declare_topic(group)
    group.wait_healthy()
    brokers = {name: pod["spec"]["nodeName"] for name, pod in group.pods().items()}
    # The node that holds the fewest of the singletons: the fewest pods to move.
    lost_pod = min(sorted(brokers), key=lambda name: len(_singletons(group, brokers[name])))
    lost = brokers[lost_pod]
    _move_singletons_off(group, lost, lost_pod)
    _master_on(group, lost_pod)
    assert not _singletons(group, lost), _singletons(group, lost)
    assert not _colocated(group, lost, lost_pod), _colocated(group, lost, lost_pod)
    other = next(n for n in sorted(set(brokers.values())) if n != lost)
    events_before = group.event_mark()

    offset = group.master_offset()
    group.produce(
        "produce-through-node-loss", 40_000, "--rate", "150", "--timeout", "3", "--retries", "2",
        "--concurrency", str(IN_FLIGHT), "--report-keys", wait=False, node_name=other,
    )  # fmt: skip
    group.wait_master_takes_writes(offset, "the producer's first sends stored by the master")
    java_pod = "java-default-through-node-loss"
    java_client.start_producer(group, java_pod, java_class, count=JAVA_COUNT, rate=JAVA_RATE, node_name=other)
    node.wait_for(
        "the Java producer's first acknowledgement",
        lambda: "first acknowledgement" in node.pod_log(group.ns, java_pod),
        timeout=300,
    )

    started = time.monotonic()
    powered_off = time.time()  # the producer's pod reads the same clock (every node is this machine)
    cluster_script.power_off(node.state_dir, lost)
    try:
        node.wait_for("another master", lambda: group.master() not in (None, lost_pod), timeout=120, interval=0.5)
        new_master = group.master()
        elected = time.monotonic() - started
        group.wait_master_takes_writes(group.master_offset(), "the new master taking the producer's sends")
        writable = time.monotonic() - started
        print(f"{lost} powered off: {new_master} master after {elected:.1f}s, taking sends after {writable:.1f}s")
        assert group.events("MasterChanged", since=events_before)
        pods = group.pods()
        node.wait_for(
            "the master Service on the new master",
            lambda: group.master_endpoints() == [group.pods()[new_master]["status"]["podIP"]],
            timeout=120,
        )
        assert pods[new_master]["spec"]["nodeName"] != lost
        # The unanswering master was fenced by deleting its pod (grace period 0; its node cannot confirm, so the
        # object goes at once): its StatefulSet makes it again, on a node that answers (it starts there and rejoins
        # as a slave) or on the lost node while the node controller still counts it Ready (then it waits there,
        # and the group reports the lost node once the node controller gives up on it: NodeLost, nothing deleted).

        def replaced_or_reported() -> bool:
            pod = group.pods().get(lost_pod)
            if pod and pod["spec"].get("nodeName") not in (None, lost) and pod_ready(pod):
                return True
            return group.condition("NodeLost").get("status") == "True"

        node.wait_for(f"{lost_pod} started elsewhere, or NodeLost", replaced_or_reported, timeout=300)
        where = (group.pods().get(lost_pod) or {}).get("spec", {}).get("nodeName")
        lost_condition = group.condition("NodeLost")
        print(f"after {time.monotonic() - started:.1f}s: {lost_pod} on {where}; NodeLost {lost_condition}")
        if where == lost:
            assert lost_condition.get("status") == "True", lost_condition
            assert lost in lost_condition.get("message", "") and lost_pod in lost_condition.get("message", "")
    finally:
        cluster_script.power_on(node.state_dir, lost)
    back = time.monotonic()
    group.wait_healthy(timeout=600)
    print(f"{lost} powered on: the group healthy again after {time.monotonic() - back:.1f}s")
    assert group.master() != lost_pod, group.status()  # back as a slave
    node.wait_for("NodeLost cleared", lambda: group.condition("NodeLost").get("status") != "True", timeout=180)

    group.wait_master_takes_writes(group.master_offset(), "the master taking sends after the node's return")
    during, _, read_back = group.stop_and_read_back("produce-through-node-loss")
    assert during["acknowledged"] > 0 and read_back >= during["acknowledged"], (during, read_back)
    # Writable again as the producer saw it (3 s timeout, 2 retries, a route refresh after each failed attempt):
    # the end of its pause across the power-off.
    client_writable = _writable_after(during, powered_off)
    # RocketMQ's Java client with its defaults (3 s send timeout, 2 retries, a 30 s route poll), same fault.
    java = java_client.result(group, java_pod)
    java_read = group.consume_all("consume-java-after-node-loss", report_keys=True, topic=java_client.TOPIC)
    java_loss = reports_no_loss_failure([java], java_read)
    print(json.dumps({
        "lost_node": lost, "elected_s": round(elected, 1), "status_writable_s": round(writable, 1),
        "client_writable_s": client_writable, "client_pauses": during["ack_gaps"],
        "java_default_client_writable_s": _writable_after(java, powered_off), "java_pauses": java["ack_gaps"],
        "java_acknowledged": java["acknowledged"], "java_sent": java["sent"], "java_failures": java["failures"],
    }))  # fmt: skip
    assert java["acknowledged"] > 0 and java_loss is None, (java_loss, java["failures"])
