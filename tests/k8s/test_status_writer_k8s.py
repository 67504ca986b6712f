"""The one status writer against the real kube-apiserver: the status subresource honours the resourceVersion the
writer sends (a stale one is refused with 409), and a step holding a stale read of the object keeps what another
writer added after that read (it merges over the latest status)."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.core.conditions import condition
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError
from rocketmq_operator.platforms.kubernetes.status_writer import StatusChange, write_status
from validation_cases import BASE_TOPIC

ROOT = Path(__file__).resolve().parents[2]
NS = "status-writer"
NOW = "2026-11-27T10:00:00Z"


def test_stale_reads_are_merged_and_stale_versions_refused(k8s_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(k8s_cluster.kubeconfig))
    k8s_cluster.kubectl("apply", "--server-side", "-f", ROOT / "crds")
    k8s_cluster.kubectl("wait", "--for=condition=Established", "crd/topics.rocketmq-operator.dev", "--timeout=60s")
    k8s_cluster.kubectl("create", "namespace", NS)
    topic = copy.deepcopy(BASE_TOPIC)
    topic["metadata"] = {"name": "orders", "namespace": NS}

    async def run() -> tuple[list[str], int]:
        kube = await KubeClient.connect()
        try:
            await kube.apply(topic)
            stale = await kube.get("Topic", NS, "orders")  # one pass's read, before the others write
            assert stale is not None
            ready = condition("Ready", "True", "Asserted", "", NOW)
            assert await write_status(kube, stale, StatusChange(fields={"ready": True}, conditions={"Ready": ready}))
            with pytest.raises(KubeError) as refused:  # the precondition the writer relies on
                await kube.patch_status(
                    "Topic", NS, "orders", {"ready": False}, resource_version=stale["metadata"]["resourceVersion"]
                )
            other = condition("Other", "True", "Written", "", NOW)
            assert await write_status(kube, stale, StatusChange(conditions={"Other": other}))
            latest = await kube.get("Topic", NS, "orders")
            assert latest is not None and latest["status"]["ready"] is True
            return [c["type"] for c in latest["status"]["conditions"]], refused.value.status
        finally:
            await kube.close()

    try:
        types, status = asyncio.run(run())
        assert status == 409
        assert types == ["Ready", "Other"]
    finally:
        k8s_cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
