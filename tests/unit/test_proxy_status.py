"""A Proxy's status from its Deployment (`platforms.kubernetes.proxy_pass.proxy_status`): ready proxies, the
in-cluster gRPC endpoint, and Ready True only while at least one proxy is Ready."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_operator.platforms.kubernetes.proxy_pass import proxy_status

BODY = {"metadata": {"name": "proxy", "namespace": "payments"}, "spec": {"replicas": 3}}


@pytest.mark.parametrize(
    ("deployment", "ready", "condition"),
    [
        (None, 0, ("False", "NotApplied", "Deployment proxy does not exist yet")),
        ({"status": {}}, 0, ("False", "NoProxyReady", "0/3 proxies Ready")),
        ({"status": {"readyReplicas": 1}}, 1, ("True", "ProxiesReady", "1/3 proxies Ready")),
        ({"status": {"readyReplicas": 3}}, 3, ("True", "ProxiesReady", "3/3 proxies Ready")),
    ],
)
def test_proxy_status(deployment: dict[str, Any] | None, ready: int, condition: tuple[str, str, str]) -> None:
    assert proxy_status(BODY, deployment) == (ready, "proxy.payments.svc:8081", condition)
