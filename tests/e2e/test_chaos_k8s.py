"""A short chaos campaign on the real cluster's pods (`rocketmq-operator chaos --platform kubernetes`, issue: chaos
on Kubernetes): every family (container SIGKILL, the container frozen, 80% of what a pod sends dropped, all of it
dropped, the pod deleted with grace period 0) on brokers, the master and the controller, under a producer on the
host (3 s timeout, 2 retries), one fault at a time, each held 5 s and healed, the group given back its health
before the next. The operator is spared (`--spare-operator`): the other worker's tests share it; the campaigns with
the `master+operator` target are recorded in docs/chaos.md.

It runs on the second quickstart (namespace rocketmq-b: examples/quickstart.yaml, the default layout, its one
controller hosted in the name server, with the lease agent opted in, so the agent's fence meets real freezes and
partitions), first of that group's worker in `make test`, and leaves the group healthy for the image roll and the
Spark jobs after it. Asserted as the client sees it: every fault injected and recovered from, no acknowledged key
lost (every one read back), none acknowledged by a deposed master. Availability (RTO, failed sends) is the
campaign's record, not asserted: it depends on the machine's load (docs/chaos.md).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import SECOND_QUICKSTART_NS
from rocketmq_operator.bench.chaos import Campaign
from rocketmq_operator.bench.chaos_kubernetes import run_chaos_kubernetes
from rocketmq_operator.bench.chaos_plan import KUBERNETES_FAMILIES, unrecovered

FAULTS = 12


def test_a_short_chaos_campaign_on_the_pods_loses_nothing(
    second_quickstart: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    group = second_quickstart
    group.wait_healthy()
    monkeypatch.setenv("KUBECONFIG", group.node.env["KUBECONFIG"])  # the campaign finds the API server as kubectl does
    doc = asyncio.run(
        run_chaos_kubernetes(
            SECOND_QUICKSTART_NS,
            group.name,
            Campaign(
                FAULTS, seed=7, families=KUBERNETES_FAMILIES, plot=tmp_path / "chaos-k8s.svg", spare_operator=True
            ),
        )
    )
    summary = json.dumps({k: v for k, v in doc.items() if k not in ("per_fault", "lost_sends")}, indent=1)
    print(f"\nchaos on Kubernetes: {summary}")
    assert doc["faults"] == FAULTS, summary
    assert all(doc["by_family"][family]["faults"] >= 1 for family in KUBERNETES_FAMILIES), summary
    assert doc["unrecovered_faults"] == 0, json.dumps(unrecovered(doc), indent=1)
    assert doc["acknowledged"] > 0, summary
    assert doc["lost"] == 0, json.dumps(doc["lost_sends"], indent=1)  # by key: every acknowledged key read back
    assert doc["deposed_acks"] == 0, summary
    group.wait_healthy()
