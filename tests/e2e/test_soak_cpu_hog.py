"""A CPU hog beside a healthy group on the three-node cluster: no live master is fenced or replaced (issue 30, "No
false fence"; docs/fencing.md, "Starved, not hung").

Run by hand, not by `make test` (marker soak; ten minutes of a spinning process per core on every node):

    make soak-k8s                      # brings up its own cluster, or
    ROCKETMQ_OPERATOR_E2E_NODE=STATE CI=true .venv/bin/python -m pytest -m soak -s tests/e2e/test_soak_cpu_hog.py

The group is examples/quickstart.yaml as a user applies it (its CPU requests), with the lease agent opted in, in a
namespace of its own. On every node, one pod per core of the machine spins (`while True: pass`) with a CPU request
of its own (``ROCKETMQ_OPERATOR_SOAK_HOG_CPU``, 500m: a neighbour that asked for CPU, which a pod without a request
loses to), and on the host one process per core spins too (the nodes share the host's cores), for
``ROCKETMQ_OPERATOR_SOAK_MINUTES`` (10) under a producer of 150 msg/s (3 s timeout, 2 retries). Then: no agent
fenced, the operator fenced nothing, no master changed, every send acknowledged, and every acknowledged key read
back. The test prints its figures as one JSON line (`soak:`), for docs/fencing.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from e2e.conftest import Group, applied_healthy, lease_agent_quickstart
from e2e.e2e_helpers import operator_version
from e2e.e2e_node import Node
from rocketmq_operator.tools.noloss import reports_no_loss_failure

pytestmark = pytest.mark.soak

SOAK_NS = "soak"
RATE = 150
SPIN = ("python3", "-c", "while True: pass")


def _hog_pods(node: Node, per_node: int, cpu: str) -> list[str]:
    names = [n["metadata"]["name"] for n in node.json("get", "nodes")["items"]]
    image = f"ghcr.io/rocketmq-operator/rocketmq-operator:{operator_version()}"  # has python3: nothing is pulled
    pods = []
    for name in names:
        for i in range(per_node):
            pod = f"hog-{name}-{i}"
            spec = {
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "labels": {"app": "cpu-hog"}},
                "spec": {"nodeName": name, "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "hog", "image": image, "command": [*SPIN],
                                         "resources": {"requests": {"cpu": cpu}}}]},
            }  # fmt: skip
            node.kubectl("-n", SOAK_NS, "apply", "-f", "-", input=json.dumps(spec))
            pods.append(pod)
    return pods


def _agent_logs(group: Group) -> dict[str, str]:
    return {
        pod: group.node.kubectl("-n", group.ns, "logs", pod, "-c", "lease-agent", check=False)
        for pod in sorted(group.pods())
    }


def _fences(logs: dict[str, str]) -> dict[str, list[str]]:
    """Each broker pod's lease-agent lines that fenced."""
    found: dict[str, list[str]] = {}
    for pod, log in logs.items():
        lines = [line for line in log.splitlines() if "lease Fence" in line or "fenced (" in line]
        if lines:
            found[pod] = lines
    return found


def test_a_cpu_hog_on_every_core_of_every_node_fences_no_live_master(operator: Node) -> None:
    minutes = float(os.environ.get("ROCKETMQ_OPERATOR_SOAK_MINUTES", "10"))
    hog_cpu = os.environ.get("ROCKETMQ_OPERATOR_SOAK_HOG_CPU", "500m")
    group = applied_healthy(operator, SOAK_NS, "quickstart.yaml", lease_agent_quickstart())
    node = group.node
    master = group.master()
    events_before = group.event_mark()
    per_node = os.cpu_count() or 2
    count = int(RATE * minutes * 60)
    producer = "soak-producer"
    pods = _hog_pods(node, per_node, hog_cpu)
    host_hogs = [subprocess.Popen([sys.executable, *SPIN[1:]]) for _ in range(per_node)]
    try:
        node.wait_for(
            f"{len(pods)} hog pods running",
            lambda: all(
                p["status"].get("phase") == "Running"
                for p in node.json("-n", SOAK_NS, "get", "pods", "-l", "app=cpu-hog")["items"]
            ),
            timeout=300,
        )
        group.produce(producer, count, "--rate", str(RATE), "--report-keys", wait=False)
        produced: dict[str, Any] = group.tool_result(producer, timeout=minutes * 60 * 4 + 600)
    finally:
        for hog in host_hogs:
            hog.kill()
            hog.wait()
        node.kubectl("-n", SOAK_NS, "delete", "pod", "-l", "app=cpu-hog", "--grace-period=0", "--force", check=False)
    elections = len(group.events("MasterChanged", since=events_before))
    operator_fences = [
        e["message"] for e in group.events("ReplicationPolicy") if "fenced" in e.get("message", "")
    ]  # fmt: skip
    logs = _agent_logs(group)
    fences = _fences(logs)
    consumed = group.consume_all("soak-read-back", report_keys=True)
    loss = reports_no_loss_failure([produced], consumed)
    summary = {
        "minutes": minutes, "hog_pods": len(pods), "hog_cpu_request": hog_cpu, "rate": RATE,
        "sent": produced["sent"], "acknowledged": produced["acknowledged"],
        "attempt_failures": produced.get("attempt_failures"), "elapsed_s": produced.get("elapsed_s"),
        "latency_ms": produced.get("latency_ms"), "elections": elections, "master_before": master,
        "master_after": group.master(), "agent_fences": sum(len(v) for v in fences.values()),
        "operator_fences": len(operator_fences), "host_hogs": len(host_hogs),
        "read_back_lost": loss,
    }  # fmt: skip
    print("soak: " + json.dumps(summary, sort_keys=True))
    assert loss is None, loss
    assert master is not None and "lease Confirmed" in logs[master], logs  # the agent ran, and held the lease
    assert not fences, fences
    assert not operator_fences, operator_fences
    assert elections == 0 and group.master() == master, summary
    assert produced["acknowledged"] == count, summary
