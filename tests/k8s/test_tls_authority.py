"""The namespace's TLS authority made against the real kube-apiserver by several passes at once.

examples/tls.yaml creates a ControllerGroup and a BrokerGroup together; both passes look for the namespace's
authority and find none. Before the fix each made one and applied it, the second overwrote the first, and the
controllers were restarted 20 s later for a certificate "no longer from the current authority" (a CI run lost
its name server under a client). Here several passes race on the real API server: exactly one authority is
stored, every pass uses it, and an apply at a stale resourceVersion is refused (the precondition the expiry
replacement relies on).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from rocketmq_operator.platforms.kubernetes.auth import secret_data
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError
from rocketmq_operator.platforms.kubernetes.tls import AUTHORITY_SECRET, authority

NS = "tls-authority-race"


def test_passes_racing_for_the_namespace_authority_store_one_and_all_use_it(
    k8s_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(k8s_cluster.kubeconfig))
    k8s_cluster.kubectl("create", "namespace", NS)

    async def race() -> tuple[set[str], dict[str, Any], int]:
        kube = await KubeClient.connect()
        try:
            now = time.time()
            pairs = await asyncio.gather(*(authority(kube, NS, now) for _ in range(6)))
            stored = await kube.get("Secret", NS, AUTHORITY_SECRET)
            assert stored is not None
            stale = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": AUTHORITY_SECRET, "namespace": NS, "resourceVersion": "1"},
                "data": {},
            }
            with pytest.raises(KubeError) as refused:
                await kube.apply(stale)
            return {p.cert_pem for p in pairs}, stored, refused.value.status
        finally:
            await kube.close()

    try:
        used, stored, status = asyncio.run(race())
        assert used == {secret_data(stored)["ca.crt"]}, f"{len(used)} authorities used"
        assert status == 409
    finally:
        k8s_cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)
