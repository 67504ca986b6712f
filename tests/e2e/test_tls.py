"""TLS on the real node: examples/tls.yaml applied as a user would, in a namespace of its own, before the
quickstart (file order) and removed after. The operator issues both groups' certificate Secrets from the
namespace's authority and observes the group over TLS (status turns writable only if it can).

Measured as the client sees it, from pods of the operator image: a plain-text send is refused; a send that
trusts the authority (the ca.crt of the group's Secret, mounted into the pod; the chain verified, not the pod IP
it is dialled at, as RocketMQ's Java clients do) is acknowledged and read back.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketmq_operator.control.certificates import CertificateInfo
from rocketmq_operator.tools.noloss import reports_no_loss_failure

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tls.yaml"
NS = "rocketmq-tls"
CA = {"broker-tls-tls": "/tls"}


def test_tls_example_refuses_plain_text_and_serves_clients_that_trust_its_authority(
    group_in: Callable[..., Any],
) -> None:
    group = group_in(NS, name="broker-tls", replicas=2, controller_group="tls-ctl")
    node = group.node
    node.kubectl("create", "namespace", NS)
    try:
        node.kubectl("-n", NS, "apply", "-f", EXAMPLE)
        seconds = group.wait_healthy(timeout=900)
        print(f"tls example apply -> healthy in {seconds:.0f}s")

        for name in ("tls-ctl-tls", "broker-tls-tls"):
            secret = node.json("-n", NS, "get", "secret", name)
            assert {"tls.crt", "tls.key", "ca.crt"} <= set(secret["data"]), name
        crt = node.kubectl("-n", NS, "get", "secret", "broker-tls-tls", "-o", "jsonpath={.data.tls\\.crt}")
        info = CertificateInfo.of(base64.b64decode(crt).decode())
        assert f"*.broker-tls-headless.{NS}.svc.cluster.local" in info.dns_names

        plain = group.tool_output(
            "tls-plain", "produce", "--namesrv", group.name_servers(), "--topic", "orders", "--count", "5",
            "--no-create-topic", "--retries", "0", "--timeout", "3",
        )  # fmt: skip
        # Refused at the name server, and told why in one line.
        assert "a server with spec.tls on closes plain-text connections: add --tls-ca FILE" in plain, plain
        assert "Traceback" not in plain, plain
        sent = group.produce(
            "tls-send", 200, "--tls-ca", "/tls/ca.crt", "--tls-chain-only", "--report-keys", secret_mounts=CA
        )
        assert sent is not None and sent["acknowledged"] == 200, sent
        read = group.tool(
            "tls-read", "consume", "--namesrv", group.name_servers(), "--topic", "orders", "--group", "tls-readers",
            "--from", "earliest", "--read-from", "master", "--idle-timeout", "15", "--to-end",
            "--tls-ca", "/tls/ca.crt", "--tls-chain-only", "--report-keys", secret_mounts=CA,
        )  # fmt: skip
        assert read is not None and read["body_mismatches"] == 0 and read["unique"] >= 200, read
        loss = reports_no_loss_failure([sent], read)  # by key: every acknowledged key read back
        assert loss is None, loss
    finally:
        node.delete_namespace(NS)
