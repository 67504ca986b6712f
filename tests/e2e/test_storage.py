"""Storage that grows, on real volumes: a larger `spec.storage.size` of the quickstart's BrokerGroup while a
producer sends. The operator patches each PersistentVolumeClaim (a StatefulSet's claim templates are immutable),
the API server admits it because the cluster's default class allows expansion, the back end grows each loop
device (`k8s/resizer.py`, the part a CSI driver plays), and the kubelet grows each mounted XFS file system
online: no pod restarts, the brokers see the larger disk, and every acknowledged key is read back.
"""

from __future__ import annotations

from typing import Any

from e2e.e2e_node import node_count
from real_parts import missing

GI = 2**30
GROWN = "11Gi"


def _claims(group: Any) -> dict[str, dict[str, Any]]:
    return {
        name: group.node.json("-n", group.ns, "get", "pvc", f"data-{name}")
        for name in sorted(group.pods())
    }  # fmt: skip


def _file_system_bytes(group: Any, pod: str) -> int:
    out = group.node.kubectl("-n", group.ns, "exec", pod, "--", "df", "-B1", "--output=size", "/data")
    return int(out.split()[-1])


def _running(group: Any) -> dict[str, tuple[str, int, str]]:
    """Each pod's identity and its container's life: uid, restarts, when the running container started."""
    out = {}
    for name, pod in group.pods().items():
        (container,) = pod["status"]["containerStatuses"]
        started = (container.get("state") or {}).get("running", {}).get("startedAt", "")
        out[name] = (pod["metadata"]["uid"], container["restartCount"], started)
    return out


def test_a_larger_storage_size_grows_every_claim_and_file_system_online_under_a_producer(quickstart: Any) -> None:
    if node_count() < 3:
        missing("the loop-device volumes that can grow are the three-node cluster's (ROCKETMQ_OPERATOR_E2E_NODES)")
    group = quickstart
    node = group.node
    group.wait_healthy()
    claims = _claims(group)
    assert {c["spec"]["storageClassName"] for c in claims.values()} == {"rmq-expandable"}, claims  # the default
    before = {name: _file_system_bytes(group, name) for name in claims}
    assert all(9 * GI < size < 10 * GI + 1 for size in before.values()), before  # a 10Gi XFS file system
    running = _running(group)
    offset_before = group.master_offset()
    group.produce(
        "produce-through-growth", 40_000, "--rate", "150", "--timeout", "3", "--retries", "2",
        "--concurrency", "8", "--report-keys", wait=False,
    )  # fmt: skip
    group.wait_master_takes_writes(offset_before, "the producer's first sends stored by the master")

    node.kubectl("-n", group.ns, "patch", "bg", group.name, "--type", "merge",
                 "-p", f'{{"spec":{{"storage":{{"size":"{GROWN}"}}}}}}')  # fmt: skip

    def grown() -> bool:
        capacities = {n: (c.get("status") or {}).get("capacity", {}).get("storage") for n, c in _claims(group).items()}
        return set(capacities.values()) == {GROWN} and group.condition("StorageResized").get("status") == "True"

    # The kubelet grows a mounted volume's file system at its next sync of the pod (`syncFrequency`, 1 min).
    seconds = node.wait_for(f"every claim at {GROWN} and StorageResized True", grown, timeout=600, interval=2)
    print(f"spec.storage.size {GROWN} -> every claim and file system grown in {seconds:.0f}s")
    resized = group.condition("StorageResized")
    assert resized.get("reason") == "Resized", resized
    after = {name: _file_system_bytes(group, name) for name in claims}
    assert all(after[n] > before[n] + GI // 2 and after[n] <= 11 * GI for n in claims), (before, after)
    assert _running(group) == running, "a pod was restarted or replaced to grow its volume"
    for claim in _claims(group).values():
        volume = node.json("get", "pv", claim["spec"]["volumeName"])
        assert volume["spec"]["capacity"]["storage"] == GROWN, volume["spec"]
    during, _, read_back = group.stop_and_read_back("produce-through-growth")
    assert during["acknowledged"] > 0 and read_back >= during["acknowledged"], (during, read_back)
