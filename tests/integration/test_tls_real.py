"""TLS on real processes (local platform, examples/tls.yaml), measured as the client sees it:

- a plain-text client is refused by the name server and by the master;
- `produce` and `consume` over TLS, verifying the servers against the cluster's authority, send and read back
  every message; so does the Spark source (option tlsCaFile);
- RocketMQ 5's gRPC client (rocketmq-python-client) through the example's Proxy (spec.tls): a plain-text client
  is refused, so is a TLS client that does not trust the cluster's authority (the proxy's certificate is
  verified, chain and name), and one that trusts it (`ROCKETMQ_TLS_CA` from `local env`, given to gRPC as
  GRPC_DEFAULT_SSL_ROOTS_FILE_PATH) has every send acknowledged and reads every acknowledged key back;
- every process's certificate, replaced by one that expires within the group's renewBefore, is renewed by the
  supervisor while a producer sends: brokers, the name server and the proxy load the renewed certificate without
  a restart (RocketMQ's file watch), the controller hosted in the name server is restarted, and no send fails;
- the authority itself rotated (`local rotate-ca`) while a producer sends: every process serves a certificate of
  the new authority, verified through the bridge by fresh handshakes that trust only the old one all the while
  (none refused), no broker or proxy restarts, no send fails and none of its handshakes was refused, and the old
  authority stays trusted while the processes started before the rotation run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shlex
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from polling import until
from spark_local import local_spark

from rocketmq_operator.control.certificates import CertificateInfo, IssuedPair, issue, pem_certificates, signed_by
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.state import read_state, write_text_atomic
from rocketmq_operator.remoting import ClientTls, RemotingClient, RemotingConnectionError
from rocketmq_operator.tools.consume import consume
from rocketmq_operator.tools.grpc_client import GrpcSend, receive_keys_trusting, send_keys, send_keys_trusting
from rocketmq_operator.tools.noloss import missing_acknowledged
from rocketmq_operator.tools.produce import DEFAULT_RETRIES, ProduceReport, produce
from tls_probe import HandshakeProbe, route_refusal, served_chain

ROOT = Path(__file__).resolve().parents[2]
TLS = ROOT / "examples" / "tls.yaml"
GROUP = "broker-tls"
TOPIC = "orders"
READERS = "orders-readers"
PROXY = "proxy-tls-0"
COUNT = 200
GRPC_COUNT = 100
NEAR_EXPIRY_S = 3600  # well inside the example's renewBefore (720h)
RENEWAL_SENDS = 1500
RENEWAL_RATE = 50.0


def _serving(cluster: Any, doc: dict[str, Any]) -> bool:
    g = cluster.group(GROUP, doc)
    return bool((g.get("master") or {}).get("address")) and g.get("writable") is True


def _served(address: str, ca: Path) -> tuple[str, float] | None:
    """(SHA-256 of the certificate the server presents, its expiry), verified against ``ca``; None while the
    server does not answer (a restart)."""
    host, _, port = address.rpartition(":")
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.set_alpn_protocols(["h2"])  # what a gRPC client offers (the proxy's gRPC port); remoting servers ignore it
    try:
        with (
            socket.create_connection((host, int(port)), timeout=5) as raw,
            ctx.wrap_socket(raw, server_hostname=host) as s,
        ):
            der = s.getpeercert(binary_form=True)
            peer = s.getpeercert()
    except OSError:
        return None
    assert der is not None and peer is not None
    return hashlib.sha256(der).hexdigest(), float(ssl.cert_time_to_seconds(str(peer["notAfter"])))


async def _plain_route(namesrv: str) -> None:
    async with RemotingClient(namesrv, connect_timeout=3.0, request_timeout=3.0) as client:
        await client.get_route(TOPIC, timeout=3.0)


def _routes_answered(namesrv: str, tls: ClientTls) -> bool:
    """Whether the name server answers a route lookup over TLS (after a restart it says "not ready" for a while)."""
    return route_refusal(namesrv, tls, TOPIC, timeout=3.0) is None


async def _plain_send(namesrv: str, broker: str) -> None:
    async with RemotingClient(namesrv, connect_timeout=3.0, request_timeout=3.0) as client:
        await client.send(broker, TOPIC, b"plain", 0, keys="plain", timeout=3.0)


def _env(cluster: Any) -> dict[str, str]:
    """`local env`, parsed as the shell's eval would."""
    out: dict[str, str] = {}
    for line in cluster.cli("env").stdout.splitlines():
        name, _, value = shlex.split(line)[1].partition("=")
        out[name] = value
    return out


def _refused(send: Any) -> list[GrpcSend] | str:
    """The sends of one gRPC client, or why it could not even start (its route lookup refused)."""
    try:
        sends: list[GrpcSend] = send()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return sends


def _through_the_tls_proxy(cluster: Any, layout: StateLayout) -> None:
    """RocketMQ 5's gRPC client through the TLS proxy, configured from `local env` as a user's application is."""
    env = _env(cluster)
    endpoint, ca = env["ROCKETMQ_PROXY_ENDPOINT"], env["ROCKETMQ_TLS_CA"]
    assert ca == str(layout.tls_ca), env
    plain = _refused(lambda: send_keys(endpoint, TOPIC, ["grpc-plain-0"]))
    assert isinstance(plain, str) or not any(s.ok for s in plain), plain
    # This process's gRPC trusts only the system's authorities: the proxy's certificate must not pass.
    untrusted = _refused(lambda: send_keys(endpoint, TOPIC, ["grpc-untrusted-0"], tls=True))
    assert isinstance(untrusted, str) or not any(s.ok for s in untrusted), untrusted
    keys = [f"grpc-tls-{i}" for i in range(GRPC_COUNT)]
    sent = send_keys_trusting(ca, endpoint, TOPIC, keys)
    assert all(s.ok for s in sent), [(s.key, s.status, s.error) for s in sent if not s.ok][:3]
    got = receive_keys_trusting(ca, endpoint, READERS, TOPIC, keys, idle_s=20)
    assert not missing_acknowledged(set(keys), got), sorted(set(keys) - got)[:10]
    print(f"\ngRPC over TLS through {endpoint}: {len(sent)} acknowledged, {len(got & set(keys))} read back; "
          f"plain text: {plain if isinstance(plain, str) else plain[0].status}; "
          f"untrusted: {untrusted if isinstance(untrusted, str) else untrusted[0].status}")  # fmt: skip


def test_tls_everywhere_and_renewal_under_load(local_platform: Any) -> None:
    with local_platform.up(TLS, name="tls") as cluster:
        doc = cluster.wait_for(
            "a writable master and the proxy ready",
            lambda d: _serving(cluster, d) and all(p["ready"] for p in d.get("proxies") or [{"ready": False}]),
            timeout=180,
        )
        namesrv = ";".join(doc["nameServers"])
        layout = StateLayout(Path(cluster.state_dir))
        tls = ClientTls(str(layout.tls_ca))
        master = cluster.group(GROUP, doc)["master"]["address"]

        with pytest.raises(RemotingConnectionError):
            asyncio.run(_plain_route(namesrv))
        with pytest.raises(RemotingConnectionError):
            asyncio.run(_plain_send(namesrv, master))

        report = asyncio.run(produce(namesrv, TOPIC, COUNT, create_topic=False, retries=DEFAULT_RETRIES, tls=tls))
        assert report.ok, report.failures
        acknowledged = {r.key for r in report.records if r.stored}
        read = asyncio.run(consume(namesrv, TOPIC, idle_timeout=2.0, tls=tls, to_end=True))
        assert acknowledged <= set(read.keys)

        with local_spark("rocketmq-tls-it", cores=1) as session:
            reader = session.read.format("rocketmq").option("nameServers", namesrv).option("topic", TOPIC)
            reader = reader.option("tlsCaFile", str(layout.tls_ca)).option("pullTimeoutMs", "20000")
            spark_keys = {row["keys"] for row in reader.load().select("keys").collect()}
        assert acknowledged <= spark_keys, f"the Spark source read {len(spark_keys & acknowledged)} of {COUNT}"

        _through_the_tls_proxy(cluster, layout)

        # Renewal under load: every certificate is replaced by one that expires within renewBefore.
        state = read_state(layout.state_file)
        reloading = {r.name: r.address for r in state.replicas if r.role == "broker"}
        reloading[state.replicas[0].name] = doc["nameServers"][0]  # the name server (hosts the controller)
        reloading[PROXY] = next(r.address for r in state.replicas if r.name == PROXY)  # its gRPC port
        results: list[ProduceReport] = []
        sender = threading.Thread(
            target=lambda: results.append(
                asyncio.run(
                    produce(
                        namesrv,
                        TOPIC,
                        RENEWAL_SENDS,
                        rate=RENEWAL_RATE,
                        create_topic=False,
                        retries=DEFAULT_RETRIES,
                        tls=tls,
                    )
                )
            )
        )
        sender.start()
        time.sleep(3.0)
        restarts_before = {
            r.name: r.restarts for r in read_state(layout.state_file).replicas if r.role in ("broker", "proxy")
        }
        authority = IssuedPair(layout.tls_ca.read_text(), layout.tls_ca_key.read_text())
        near: dict[str, str] = {}
        for r in state.replicas:
            pair = issue(authority, r.name, ["localhost"], ["127.0.0.1"], NEAR_EXPIRY_S, time.time())
            write_text_atomic(layout.tls_cert(r.name), pair.cert_pem, 0o644)
            write_text_atomic(layout.tls_key(r.name), pair.key_pem)
            near[r.name] = pair.cert_pem
        log = layout.supervisor_log
        until(
            "the supervisor to renew every certificate",
            lambda: all(f"tls: issue {name}: expires in" in log.read_text() for name in near),
            timeout=180,
        )
        for name, address in reloading.items():
            # The renewed certificate itself, not merely a long-lived one: a process that never loaded the near one
            # (the proxy reads its files every tlsCertWatchIntervalMs, 10 s) still serves its first, long-lived
            # certificate until its next read (seen under load, 2026-11-29).
            renewed = hashlib.sha256(ssl.PEM_cert_to_DER_cert(layout.tls_cert(name).read_text())).hexdigest()
            until(
                f"{name} to serve its renewed certificate (SHA-256 {renewed[:12]}...)",
                lambda a=address, r=renewed: (
                    (s := _served(a, layout.tls_ca)) is not None and s[0] == r and s[1] > time.time() + 300 * 86400
                ),
                timeout=180,
            )
        controller = state.replicas[0].name
        until("the controller's restart", lambda: f"tls: restart {controller}" in log.read_text(), timeout=180)
        sender.join(timeout=RENEWAL_SENDS / RENEWAL_RATE + 120)
        assert results, "the producer did not finish"
        during = results[0]
        assert during.acknowledged == during.sent == RENEWAL_SENDS, (during.statuses, during.failures)
        # Counted from the renewal on: a broker restarted earlier (a fence on a loaded machine) is not renewal's.
        restarted = [
            r.name
            for r in read_state(layout.state_file).replicas
            if r.role in ("broker", "proxy") and r.restarts != restarts_before[r.name]
        ]
        assert restarted == [], "a broker or the proxy was restarted during the renewal\n" + cluster.log_tails()
        assert "tls: restart broker" not in log.read_text() and "tls: restart proxy" not in log.read_text()

        _authority_rotated_under_load(cluster, layout, namesrv, reloading)


def _authority_rotated_under_load(cluster: Any, layout: StateLayout, namesrv: str, serving: dict[str, str]) -> None:
    old = layout.root / "old-ca.crt"
    old.write_text(layout.tls_ca.read_text(), encoding="utf-8")
    state = read_state(layout.state_file)
    restarts_before = {r.name: r.restarts for r in state.replicas if r.role in ("broker", "proxy")}
    results: list[ProduceReport] = []
    tls = ClientTls(str(layout.tls_ca))  # the cluster's trust file: it holds both authorities during the overlap
    sender = threading.Thread(
        target=lambda: results.append(
            asyncio.run(
                produce(namesrv, TOPIC, RENEWAL_SENDS, rate=RENEWAL_RATE, create_topic=False,
                        retries=DEFAULT_RETRIES, tls=tls, keep_records=True)
            )
        )
    )  # fmt: skip
    controller, log = state.replicas[0].name, layout.supervisor_log
    restarts_logged = log.read_text().count(f"tls: restart {controller}")
    sender.start()
    with HandshakeProbe(list(serving.values()), old) as probe:
        asked = cluster.cli("rotate-ca", "--overlap", "0s", "--wait", "60")
        assert "TLS authority rotated" in asked.stdout, asked.stdout + asked.stderr
        signer = pem_certificates(layout.tls_ca.read_text())[0]

        def new_leaf(name: str, address: str) -> bool:
            leaf, _ = served_chain(address, old)
            return leaf is not None and signed_by(leaf, signer)

        for name, address in serving.items():
            until(f"{name} to serve a certificate of the new authority, verified by the old trust alone",
                  lambda n=name, a=address: new_leaf(n, a), timeout=180)  # fmt: skip
        until("the controller's restart onto its new certificate",
              lambda: log.read_text().count(f"tls: restart {controller}") > restarts_logged, timeout=180)  # fmt: skip
        sender.join(timeout=RENEWAL_SENDS / RENEWAL_RATE + 120)
    assert results, "the producer did not finish"
    during = results[0]
    print(f"authority rotation: {during.acknowledged} of {during.sent} acknowledged, attempt failures "
          f"{during.attempt_failures}; {probe.handshakes} fresh handshakes trusting only the old authority, "
          f"{len(probe.refused)} refused, {probe.unreachable} unreachable")  # fmt: skip
    assert during.acknowledged == during.sent == RENEWAL_SENDS, (during.statuses, during.failures)
    assert "TLS_HANDSHAKE" not in during.attempt_failures, during.attempt_failures
    assert probe.handshakes > 0 and not probe.refused, probe.refused[:5]
    restarted = [
        r.name
        for r in read_state(layout.state_file).replicas
        if r.role in ("broker", "proxy") and r.restarts != restarts_before[r.name]
    ]
    assert restarted == [], "a broker or the proxy restarted for the rotation\n" + cluster.log_tails()
    record = json.loads(layout.tls_rotation.read_text())
    assert "started before the rotation" in record["state"], record["state"]  # the old authority kept for them
    assert len(pem_certificates(layout.tls_ca.read_text())) == 2
    assert CertificateInfo.of(layout.tls_bridge.read_text()).subject == CertificateInfo.of(signer).subject
    until("the name server answering routes after its restart", lambda: _routes_answered(namesrv, tls), timeout=120)
    read = asyncio.run(consume(namesrv, TOPIC, idle_timeout=2.0, tls=tls, to_end=True))
    lost = missing_acknowledged({r.key for r in during.records if r.stored}, set(read.keys))
    assert not lost, sorted(lost)[:10]
