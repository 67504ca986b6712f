"""The operator's NetworkPolicies enforced on the real three-node cluster (kube-router, docs/node.md "Three nodes"):
measured as a pod outside the group sees it, from another namespace and another node than the master.

The broker's HA port (10912) admits only the group's own brokers; its client port (10911) admits anyone (the
quickstart names no clients). A probe pod of the operator image connects to the master's pod address: 10911
connects, 10912 is refused. Then `spec.networkPolicy.enabled: false` on the group: the operator deletes its
policy and the same probe connects to 10912 (the refusal was the policy, nothing else), and the policy comes back
when it is enabled again. The group's own brokers reaching 10912 is the full SyncStateSet the group keeps
throughout (`wait_healthy`).
"""

from __future__ import annotations

import json
from typing import Any

from e2e.e2e_helpers import operator_version
from e2e.e2e_node import node_count
from real_parts import missing

PROBE_NS = "rocketmq-np-probe"
# The client port admits anyone: it is retried until it connects (a pod's first packets can be refused while the
# policy agent adds the new pod), so that the HA port's verdict below is not that start-up race.
PROBE = r"""
import json, socket, sys, time
host, open_port, probed, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def attempt(port):
    try:
        socket.create_connection((host, port), timeout=3).close()
        return "connected"
    except ConnectionRefusedError:
        return "refused"
    except OSError as exc:
        return type(exc).__name__
deadline = time.time() + 60
while (opened := attempt(open_port)) != "connected" and time.time() < deadline:
    time.sleep(1)
result = attempt(probed)
while want == "connected" and result != "connected" and time.time() < deadline:
    time.sleep(1)  # the policy just deleted: until the agent has removed its rules
    result = attempt(probed)
print(json.dumps({str(open_port): opened, str(probed): result}))
"""


def _probe(group: Any, pod: str, host: str, node: str, want: str) -> dict[str, str]:
    image = f"ghcr.io/rocketmq-operator/rocketmq-operator:{operator_version()}"
    overrides = {"spec": {"nodeName": node}}
    group.node.kubectl(
        "-n", PROBE_NS, "run", pod, "--restart=Never", f"--image={image}", "--image-pull-policy=Never",
        f"--overrides={json.dumps(overrides)}", "--command", "--", "python3", "-c", PROBE, host, "10911", "10912", want,
    )  # fmt: skip
    out = group.node.pod_output(PROBE_NS, pod, timeout=300)
    return dict(json.loads(out.strip().splitlines()[-1]))


def _policies(group: Any) -> list[str]:
    items = group.node.json("-n", group.ns, "get", "networkpolicy", "-l", f"rocketmq-operator.dev/group={group.name}")
    return [p["metadata"]["name"] for p in items["items"]]


def test_the_ha_port_refuses_a_pod_outside_the_group_and_the_policy_is_what_refuses(quickstart: Any) -> None:
    if node_count() < 2:
        missing("NetworkPolicies are enforced on the three-node cluster only (ROCKETMQ_OPERATOR_E2E_NODES unset or 3)")
    group = quickstart
    node = group.node
    master = group.master()
    assert master, group.status()
    pods = group.pods()
    host, master_node = pods[master]["status"]["podIP"], pods[master]["spec"]["nodeName"]
    other = next(
        n["metadata"]["name"] for n in node.json("get", "nodes")["items"] if n["metadata"]["name"] != master_node
    )
    assert _policies(group), "the operator rendered no NetworkPolicy for the group"
    node.kubectl("create", "namespace", PROBE_NS)
    try:
        seen = _probe(group, "np-probe-on", host, other, "refused")
        assert seen == {"10911": "connected", "10912": "refused"}, seen

        patch = {"spec": {"networkPolicy": {"enabled": False}}}
        node.kubectl("-n", group.ns, "patch", "bg", group.name, "--type=merge", "-p", json.dumps(patch))
        node.wait_for("the group's NetworkPolicy deleted", lambda: not _policies(group), timeout=120)
        seen = _probe(group, "np-probe-off", host, other, "connected")
        assert seen == {"10911": "connected", "10912": "connected"}, seen
    finally:
        patch = {"spec": {"networkPolicy": {"enabled": True}}}
        node.kubectl("-n", group.ns, "patch", "bg", group.name, "--type=merge", "-p", json.dumps(patch))
        node.delete_namespace(PROBE_NS)
    node.wait_for("the group's NetworkPolicy back", lambda: bool(_policies(group)), timeout=120)
    group.wait_healthy(timeout=300)


def test_the_brokers_are_spread_over_the_nodes_and_zones(quickstart: Any) -> None:
    if node_count() < 3:
        missing("spread needs the three-node cluster (ROCKETMQ_OPERATOR_E2E_NODES unset or 3)")
    group = quickstart
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in group.node.json("get", "nodes")["items"]}
    placed = {name: pod["spec"]["nodeName"] for name, pod in group.pods().items()}
    print(group.node.kubectl("-n", group.ns, "get", "pods", "-o", "wide"))
    assert len(set(placed.values())) == group.replicas, placed
    zones = {nodes[n].get("topology.kubernetes.io/zone") for n in placed.values()}
    assert len(zones) == group.replicas, (placed, zones)
