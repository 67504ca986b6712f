"""The namespace's TLS authority made against the real kube-apiserver by several passes at once.

examples/tls.yaml creates a ControllerGroup and a BrokerGroup together; both passes look for the namespace's
authority and find none. Before the fix each made one and applied it, the second overwrote the first, and the
controllers were restarted 20 s later for a certificate "no longer from the current authority" (a CI run lost
its name server under a client). Here several passes race on the real API server: exactly one authority is
stored, every pass uses it, and an apply at a stale resourceVersion is refused (the precondition the expiry
replacement relies on). Then a rotation asked for while passes race: one successor made and used by all, the
bridge stored, and at the retirement the bridge removed from the Secret by server-side apply (a field the
operator's manager owned and no longer applies), which the in-memory API of the unit tests does not model.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from rocketmq_operator.control.certificates import pem_certificates
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
            return {p.trust for p in pairs}, stored, refused.value.status
        finally:
            await kube.close()

    try:
        used, stored, status = asyncio.run(race())
        assert used == {secret_data(stored)["ca.crt"]}, f"{len(used)} authorities used"
        assert status == 409
    finally:
        k8s_cluster.kubectl("delete", "namespace", NS, "--wait=false", check=False)


def test_a_rotation_raced_by_passes_makes_one_successor_and_its_retirement_removes_the_bridge(
    k8s_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = "tls-authority-rotation"
    monkeypatch.setenv("KUBECONFIG", str(k8s_cluster.kubeconfig))
    k8s_cluster.kubectl("create", "namespace", ns)

    async def rotate() -> tuple[set[str], dict[str, Any], dict[str, Any]]:
        kube = await KubeClient.connect()
        try:
            now = time.time()
            first = await authority(kube, ns, now)
            await kube.patch("Secret", ns, AUTHORITY_SECRET, {"metadata": {"annotations": {
                "rocketmq-operator.dev/rotate": "t1", "rocketmq-operator.dev/overlap": "1h"}}})  # fmt: skip
            rotated = await asyncio.gather(*(authority(kube, ns, now + 10) for _ in range(4)))
            during = await kube.get("Secret", ns, AUTHORITY_SECRET)
            assert during is not None and first.trust not in {r.trust for r in rotated}
            # The overlap over and no pod trusts only the old one: retired, by passes racing again.
            await asyncio.gather(*(authority(kube, ns, now + 3700) for _ in range(4)))
            after = await kube.get("Secret", ns, AUTHORITY_SECRET)
            assert after is not None
            return {r.trust for r in rotated}, during, after
        finally:
            await kube.close()

    try:
        used, during, after = asyncio.run(rotate())
        assert used == {secret_data(during)["ca.crt"]}, f"{len(used)} successors used"
        assert "bridge.crt" in secret_data(during)
        assert "bridge.crt" not in secret_data(after), sorted(secret_data(after))
        assert secret_data(after)["ca.crt"] == pem_certificates(secret_data(during)["ca.crt"])[0]
        annotations = after["metadata"]["annotations"]  # retired, then (another racing pass) steady
        assert "rocketmq-operator.dev/rotation-started-at" not in annotations, annotations
        assert annotations["rocketmq-operator.dev/rotated-for"] == "t1"
    finally:
        k8s_cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)
