"""TLS on the real node: examples/tls.yaml applied as a user would, in a namespace of its own, before the
quickstart (file order) and removed after. The operator issues both groups' certificate Secrets from the
namespace's authority and observes the group over TLS (status turns writable only if it can).

Measured as the client sees it, from pods of the operator image: a plain-text send is refused; a send that
trusts the authority (the ca.crt of the group's Secret, mounted into the pod; the chain verified, not the pod IP
it is dialled at, as RocketMQ's Java clients do) is acknowledged and read back.

The namespace's authority rotated under a producer (`kubectl rocketmq rotate-ca`, docs/tls.md "Rotating the
authority"): every certificate Secret reissued with both authorities trusted and the bridge, the brokers serving
their new certificates with no restart, the controller restarted by the operator; from the host, fresh handshakes
all the while with a client that trusts only the old authority (as every JVM that started before does): none
refused; the old authority kept while pods started before it run, retired once they were restarted, and refused
from then on. The producer, which read its trust at its start, never had a handshake refused and lost nothing.

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
from e2e.e2e_helpers import kubectl_rocketmq, wait_proxy_ready
from rocketmq_operator.control.certificates import CertificateInfo, pem_certificates
from rocketmq_operator.remoting import ClientTls
from rocketmq_operator.tools.grpc_client import receive_keys_trusting, send_keys, send_keys_trusting
from rocketmq_operator.tools.noloss import missing_acknowledged, reports_no_loss_failure
from tls_probe import HandshakeProbe, route_refusal, served_chain

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tls.yaml"
NS = "rocketmq-tls"
CA = {"broker-tls-tls": "/tls"}
PROXY = "proxy-tls"
AUTHORITY = "rocketmq-operator-tls-ca"
CERT_SECRETS = ("tls-ctl-tls", "broker-tls-tls", f"{PROXY}-tls")
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


def _secret_text(node: Any, name: str, key: str) -> str:
    data = node.json("-n", NS, "get", "secret", name).get("data") or {}
    return base64.b64decode(data.get(key, "")).decode()


def _authority_state(node: Any) -> str:
    annotations = node.json("-n", NS, "get", "secret", AUTHORITY)["metadata"].get("annotations") or {}
    return str(annotations.get("rocketmq-operator.dev/authority-state", ""))


def _authority_rotated(group: Any, node: Any, tmp_path: Path) -> None:
    old = tmp_path / "old-ca.crt"
    old.write_text(_secret_text(node, "broker-tls-tls", "ca.crt"), encoding="utf-8")
    assert len(pem_certificates(old.read_text())) == 1
    brokers = {name: f"{p['status']['podIP']}:10911" for name, p in group.pods().items()}
    controller = next(p for p in node.json("-n", NS, "get", "pods", "-l", "rocketmq-operator.dev/group=tls-ctl")[
        "items"] if p["metadata"]["name"] == "tls-ctl-0")  # fmt: skip
    addresses = [*brokers.values(), f"{controller['status']['podIP']}:9876"]
    jvms = {pod: group.jvm_pid(pod)[0] for pod in brokers}
    producer = "tls-through-rotation"
    group.produce(producer, 40_000, "--rate", "50", "--timeout", "3", "--retries", "2", "--report-keys",
                  "--tls-ca", "/tls/ca.crt", "--tls-chain-only", wait=False, secret_mounts=CA)  # fmt: skip
    with group.interrupted_on_failure(producer), HandshakeProbe(addresses, old) as probe:
        asked = kubectl_rocketmq(node, NS, "rotate-ca", "--overlap", "0s", "--wait", "180")
        assert asked.returncode == 0, asked.stderr
        assert "TLS authority rotated" in asked.stdout, asked.stdout
        trust = pem_certificates(_secret_text(node, AUTHORITY, "ca.crt"))
        assert len(trust) == 2 and trust[1] == old.read_text() and _secret_text(node, AUTHORITY, "bridge.crt")

        def reissued(name: str) -> bool:
            chain = pem_certificates(_secret_text(node, name, "tls.crt"))
            return _secret_text(node, name, "ca.crt") == "".join(trust) and len(chain) == 2

        node.wait_for("every certificate Secret reissued with both authorities and the bridge",
                      lambda: all(reissued(n) for n in CERT_SECRETS), 300, 2)  # fmt: skip
        leaf = pem_certificates(_secret_text(node, "broker-tls-tls", "tls.crt"))[0]

        def serving_new(address: str) -> bool:
            served, _ = served_chain(address, old)
            return served is not None and CertificateInfo.of(served).fingerprint == CertificateInfo.of(leaf).fingerprint

        # kubelet updates the mounted files in place; each broker's FileWatchService reloads them (cert and key).
        node.wait_for("each broker serving its new certificate, verified through the bridge by the old trust",
                      lambda: all(serving_new(a) for a in brokers.values()), 300, 2)  # fmt: skip
        # The controller cannot reload: the operator restarts it once its certificate was issued again.
        _wait_controller_restarted(node, "the controller restarted onto its new certificate")
        group.wait_healthy()
        assert {pod: group.jvm_pid(pod)[0] for pod in brokers} == jvms, "a broker JVM restarted for the rotation"
        node.wait_for("the old authority kept for the pods started before the rotation",
                      lambda: "started before the rotation" in _authority_state(node), 120, 2)  # fmt: skip
        state = _authority_state(node)
        assert all(name in state for name in brokers), state
    group.interrupt(producer)
    during = group.tool_result(producer)
    print(f"{producer}: sent {during['sent']}, acknowledged {during['acknowledged']}, attempt failures "
          f"{during['attempt_failures']}; probe: {probe.handshakes} handshakes trusting only the old authority, "
          f"{len(probe.refused)} refused, {probe.unreachable} unreachable")  # fmt: skip
    assert probe.handshakes > 0 and not probe.refused, probe.refused[:5]
    assert "TLS_HANDSHAKE" not in during["attempt_failures"], during["attempt_failures"]
    both = tmp_path / "both-ca.crt"
    both.write_text("".join(trust), encoding="utf-8")
    node.wait_for("the name server answering routes after its restart (it says \"not ready\" for a while)",
                  lambda: _routes_answered(node, both), 120, 1)  # fmt: skip
    read = group.tool(
        "tls-rotation-read", "consume", "--namesrv", group.name_servers(), "--topic", "orders", "--group",
        "tls-readers", "--from", "earliest", "--read-from", "master", "--idle-timeout", "15", "--to-end",
        "--tls-ca", "/tls/ca.crt", "--tls-chain-only", "--report-keys", secret_mounts=CA,
    )  # fmt: skip
    loss = reports_no_loss_failure([during], read)
    assert loss is None, loss

    # The pods started before the rotation restarted (the brokers by the operator's roll, the proxy by its
    # Deployment): the old authority leaves, every certificate is issued again without the bridge.
    restart = kubectl_rocketmq(node, NS, "restart", "broker-tls", "--wait", "900")
    assert restart.returncode == 0, restart.stderr
    node.kubectl("-n", NS, "rollout", "restart", f"deployment/{PROXY}")
    node.wait_for("the old authority retired", lambda: len(pem_certificates(_secret_text(node, AUTHORITY, "ca.crt")))
                  == 1, 900, 2, detail=lambda: _authority_state(node))  # fmt: skip
    new_only = tmp_path / "new-ca.crt"
    new_only.write_text(trust[0], encoding="utf-8")

    def reissued_alone(name: str) -> bool:
        chain = pem_certificates(_secret_text(node, name, "tls.crt"))
        return _secret_text(node, name, "ca.crt") == trust[0] and len(chain) == 1

    node.wait_for("every certificate Secret issued again without the bridge",
                  lambda: all(reissued_alone(n) for n in CERT_SECRETS), 300, 2)  # fmt: skip
    group.wait_healthy()
    addresses = [f"{p['status']['podIP']}:10911" for p in group.pods().values()]

    def old_refused_new_accepted() -> bool:
        return all(served_chain(a, old)[0] is None and served_chain(a, new_only)[0] is not None for a in addresses)

    node.wait_for("the old authority refused and the new one accepted by every broker", old_refused_new_accepted,
                  300, 2)  # fmt: skip
    # The retirement issued the controller's certificate again, and the operator restarted it: its name server
    # says "not ready" for a while after its start.
    _wait_controller_restarted(node, "the controller restarted onto its certificate without the bridge")
    node.wait_for("the name server answering routes, trusting the new authority alone",
                  lambda: _routes_answered(node, new_only), 120, 1)  # fmt: skip
    group.wait_healthy()  # the brokers registered with the restarted name server, a master writable again
    after = group.produce("tls-after-rotation", 20, "--tls-ca", "/tls/ca.crt", "--tls-chain-only", secret_mounts=CA)
    assert after is not None and after["acknowledged"] == 20, (after or {}).get("failures")


def _wait_controller_restarted(node: Any, what: str) -> None:
    """Until tls-ctl-0 is a pod created after its Secret was last issued, and Ready."""
    issued = float(node.json("-n", NS, "get", "secret", "tls-ctl-tls")["metadata"]["annotations"][
        "rocketmq-operator.dev/issued-at"])  # fmt: skip

    def restarted() -> bool:
        pods = node.json("-n", NS, "get", "pods", "-l", "rocketmq-operator.dev/group=tls-ctl")["items"]
        pod = next((p for p in pods if p["metadata"]["name"] == "tls-ctl-0"), {})
        created = (pod.get("metadata") or {}).get("creationTimestamp")
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (pod.get("status") or {}).get("conditions") or [])  # fmt: skip
        return bool(created) and ready and _epoch(str(created)) >= issued

    node.wait_for(what, restarted, 600, 2)


def _routes_answered(node: Any, trust: Path) -> bool:
    pods = node.json("-n", NS, "get", "pods", "-l", "rocketmq-operator.dev/group=tls-ctl")["items"]
    address = next((f"{p['status']['podIP']}:9876" for p in pods if (p.get("status") or {}).get("podIP")), None)
    return (
        address is not None and route_refusal(address, ClientTls(str(trust), check_hostname=False), timeout=3.0) is None
    )


def _epoch(stamp: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


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
        _authority_rotated(group, node, tmp_path)
    finally:
        node.delete_namespace(NS)


MTLS_NS = NS
"""The TLS example's namespace again (emptied by the test before): one the chart's operator watches."""
MTLS_EXAMPLE = ROOT / "examples" / "tls-mutual.yaml"
MTLS_MOUNT = {"broker-mtls-tls": "/tls"}


def test_mutual_tls_example_refuses_a_client_without_a_certificate(
    group_in: Callable[..., Any], tmp_path: Path
) -> None:
    """examples/tls-mutual.yaml on the real cluster: the operator observes the group over mutual TLS (presenting the
    group's certificate); from the host, a route lookup that presents no certificate is refused while one that
    presents the group's is answered; a producer pod that presents it has every send acknowledged and read back."""
    group = group_in(MTLS_NS, name="broker-mtls", replicas=2, controller_group="mtls-ctl")
    node = group.node
    node.ensure_namespaces(MTLS_NS)
    try:
        apply_example(node, MTLS_NS, MTLS_EXAMPLE)
        seconds = group.wait_healthy(timeout=900)
        print(f"mutual tls example apply -> healthy (observed over mutual TLS) in {seconds:.0f}s")
        data = node.json("-n", MTLS_NS, "get", "secret", "broker-mtls-tls")["data"]
        for key in ("ca.crt", "tls.crt", "tls.key"):
            (tmp_path / key).write_text(base64.b64decode(data[key]).decode(), encoding="utf-8")
        pods = node.json("-n", MTLS_NS, "get", "pods", "-l", "rocketmq-operator.dev/group=mtls-ctl")["items"]
        namesrv = f"{pods[0]['status']['podIP']}:9876"
        bare = ClientTls(str(tmp_path / "ca.crt"), check_hostname=False)
        presenting = ClientTls(str(tmp_path / "ca.crt"), check_hostname=False, cert_file=str(tmp_path / "tls.crt"),
                               key_file=str(tmp_path / "tls.key"))  # fmt: skip
        node.wait_for("a route lookup presenting the group's certificate answered",
                      lambda: route_refusal(namesrv, presenting) is None, 120, 1)  # fmt: skip
        why = route_refusal(namesrv, bare)
        assert why is not None, "a client without a certificate was answered by a name server requiring one"
        print(f"without a certificate: {why}")
        presented = ("--tls-ca", "/tls/ca.crt", "--tls-chain-only", "--tls-cert", "/tls/tls.crt", "--tls-key",
                     "/tls/tls.key")  # fmt: skip
        sent = group.produce("mtls-send", 100, *presented, "--report-keys", secret_mounts=MTLS_MOUNT)
        assert sent is not None and sent["acknowledged"] == 100, sent
        read = group.tool(
            "mtls-read", "consume", "--namesrv", group.name_servers(), "--topic", "orders", "--group", "mtls-readers",
            "--from", "earliest", "--read-from", "master", "--idle-timeout", "15", "--to-end", *presented,
            "--report-keys", secret_mounts=MTLS_MOUNT,
        )  # fmt: skip
        loss = reports_no_loss_failure([sent], read)
        assert loss is None, loss
    finally:
        node.delete_namespace(MTLS_NS)
