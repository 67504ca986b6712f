"""TLS on the real node: examples/tls.yaml applied as a user would, in a namespace of its own, before the
quickstart (file order) and removed after. The operator issues both groups' certificate Secrets from the
namespace's authority and observes the group over TLS (status turns writable only if it can).

Measured as the client sees it, from pods of the operator image: a plain-text send is refused; a send that
trusts the authority (the ca.crt of the group's Secret, mounted into the pod; the chain verified, not the pod IP
it is dialled at, as RocketMQ's Java clients do) is acknowledged and read back.

Through the example's Proxy (spec.tls), from the host over `kubectl port-forward` to its Service (the proxy's
certificate names localhost beside the Service's names, so a client on the host verifies chain and name): RocketMQ
5's gRPC client in plain text is refused; with TLS, trusting the ca.crt of the Secret `proxy-tls-tls`, every send
is acknowledged and every key read back.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import ROCKETMQ_NS, apply_example, retire_when_done
from e2e.e2e_helpers import wait_proxy_ready
from rocketmq_operator.control.certificates import CertificateInfo
from rocketmq_operator.tools.grpc_client import receive_keys_trusting, send_keys, send_keys_trusting
from rocketmq_operator.tools.noloss import missing_acknowledged, reports_no_loss_failure

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tls.yaml"
NS = "rocketmq-tls"
CA = {"broker-tls-tls": "/tls"}
PROXY = "proxy-tls"
GRPC_KEYS = [f"e2e-grpc-tls-{i}" for i in range(40)]


@pytest.fixture(scope="module", autouse=True)
def quickstart_retired(operator: Any, request: pytest.FixtureRequest) -> None:
    """The first quickstart's namespace retired first: this file is the last of its worker group in `make test`
    (tests/conftest.py E2E_WORKER_GROUPS: the quickstart's tests in file order, then this one) and the last e2e
    file in one process, so every test of that group is done."""
    retire_when_done(operator, ROCKETMQ_NS, request.session)


@contextlib.contextmanager
def _port_forward(node: Any, service: str, port: int) -> Iterator[str]:
    """`kubectl port-forward svc/SERVICE LOCAL:PORT` for the block: yields `localhost:LOCAL`."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        local = s.getsockname()[1]
    argv = [str(node.state_dir / "bin" / "kubectl"), "-n", NS, "port-forward", f"svc/{service}", f"{local}:{port}"]
    forward = subprocess.Popen(argv, env=node.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", local), timeout=2):
                break
            said = forward.stdout.read() if forward.poll() is not None and forward.stdout else ""
            assert forward.poll() is None, f"kubectl port-forward exited: {said}"
            assert time.monotonic() < deadline, "kubectl port-forward did not listen within 60 s"
            time.sleep(0.5)
        yield f"localhost:{local}"
    finally:
        forward.terminate()
        forward.wait(timeout=30)


def _through_the_tls_proxy(node: Any, tmp_path: Path) -> None:
    wait_proxy_ready(node, NS, PROXY, 1)
    crt = node.kubectl("-n", NS, "get", "secret", f"{PROXY}-tls", "-o", "jsonpath={.data.tls\\.crt}")
    names = CertificateInfo.of(base64.b64decode(crt).decode()).dns_names
    assert {f"{PROXY}.{NS}.svc", f"{PROXY}.{NS}.svc.cluster.local", "localhost"} <= set(names), names
    ca = tmp_path / "proxy-ca.crt"
    ca_data = node.kubectl("-n", NS, "get", "secret", f"{PROXY}-tls", "-o", "jsonpath={.data.ca\\.crt}")
    ca.write_text(base64.b64decode(ca_data).decode(), encoding="utf-8")
    with _port_forward(node, PROXY, 8081) as endpoint:
        try:
            plain_ok = any(s.ok for s in send_keys(endpoint, "orders", ["e2e-grpc-plain-0"]))
        except Exception:  # the client could not even fetch its route: refused
            plain_ok = False
        assert not plain_ok, "a plain-text gRPC send through the TLS proxy was acknowledged"
        sent = send_keys_trusting(str(ca), endpoint, "orders", GRPC_KEYS)
        assert all(s.ok for s in sent), [(s.key, s.status, s.error) for s in sent if not s.ok][:3]
        got = receive_keys_trusting(str(ca), endpoint, "orders-readers", "orders", GRPC_KEYS, idle_s=20)
        assert not missing_acknowledged(set(GRPC_KEYS), got), sorted(set(GRPC_KEYS) - got)[:10]


def test_tls_example_refuses_plain_text_and_serves_clients_that_trust_its_authority(
    group_in: Callable[..., Any], tmp_path: Path
) -> None:
    group = group_in(NS, name="broker-tls", replicas=2, controller_group="tls-ctl")
    node = group.node
    node.ensure_namespaces(NS)  # made by install_operator too
    try:
        apply_example(node, NS, EXAMPLE)
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
        _through_the_tls_proxy(node, tmp_path)
    finally:
        node.delete_namespace(NS)
