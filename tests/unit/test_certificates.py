"""control.certificates: the issued certificates verify in a real TLS handshake (Python's ssl on both ends),
and only for the addresses they name, and only against their own authority."""

from __future__ import annotations

import asyncio
import hashlib
import ssl
import time
from pathlib import Path

import pytest

from rocketmq_operator.control.certificates import (
    CertificateError,
    CertificateInfo,
    IssuedPair,
    cross_sign,
    issue,
    new_authority,
    pem_certificates,
    signed_by,
    trust_bundle,
)
from rocketmq_operator.platforms.local.state import write_text_atomic
from rocketmq_operator.remoting import ClientTls, Connection, RemotingConnectionError
from rocketmq_operator.render.jvm import tls_flags

NOW = time.time()
HOUR = 3600


def _server_context(pair: IssuedPair, tmp: Path) -> ssl.SSLContext:
    (tmp / "s.crt").write_text(pair.cert_pem)
    (tmp / "s.key").write_text(pair.key_pem)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp / "s.crt", tmp / "s.key")
    return ctx


async def _handshake(server_pair: IssuedPair, ca_pem: str, host: str, tmp: Path) -> None:
    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0, ssl=_server_context(server_pair, tmp))
    port = server.sockets[0].getsockname()[1]
    (tmp / "ca.crt").write_text(ca_pem)
    try:
        conn = await Connection.open(f"{host}:{port}", connect_timeout=5, tls=ClientTls(str(tmp / "ca.crt")))
        await conn.close()
    finally:
        server.close()


def test_issued_certificate_verifies_for_its_address(tmp_path: Path) -> None:
    ca = new_authority("test CA", 10 * HOUR, NOW)
    pair = issue(ca, "bg-0", ["localhost"], ["127.0.0.1"], HOUR, NOW)
    asyncio.run(_handshake(pair, ca.cert_pem, "127.0.0.1", tmp_path))
    asyncio.run(_handshake(pair, ca.cert_pem, "localhost", tmp_path))
    info = CertificateInfo.of(pair.cert_pem)
    assert info.ip_addresses == ("127.0.0.1",) and info.dns_names == ("localhost",)
    assert abs(info.not_after - (NOW + HOUR)) < 2
    assert "BEGIN PRIVATE KEY" in pair.key_pem  # PKCS#8, as Netty reads it
    assert signed_by(pair.cert_pem, ca.cert_pem)


def test_refused_for_another_authority_or_address(tmp_path: Path) -> None:
    ca, other = new_authority("test CA", 10 * HOUR, NOW), new_authority("other CA", 10 * HOUR, NOW)
    pair = issue(ca, "bg-0", [], ["127.0.0.2"], HOUR, NOW)
    assert not signed_by(pair.cert_pem, other.cert_pem)
    with pytest.raises(RemotingConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        asyncio.run(_handshake(pair, other.cert_pem, "127.0.0.1", tmp_path))
    # Signed by the right authority, but for 127.0.0.2: dialled as 127.0.0.1 it is refused.
    with pytest.raises(RemotingConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        asyncio.run(_handshake(pair, ca.cert_pem, "127.0.0.1", tmp_path))


def test_never_outlives_its_authority() -> None:
    ca = new_authority("short CA", HOUR, NOW)
    pair = issue(ca, "bg-0", ["localhost"], [], 100 * HOUR, NOW)
    assert CertificateInfo.of(pair.cert_pem).not_after == CertificateInfo.of(ca.cert_pem).not_after


def test_not_a_certificate() -> None:
    with pytest.raises(CertificateError, match="not a PEM certificate"):
        CertificateInfo.of("hello")


def test_jvm_flags_of_mutual_tls_require_and_present_client_certificates() -> None:
    flags = tls_flags("/t/bg-0.crt", "/t/bg-0.key", "/t/ca.crt", require_clients=True, present=True)
    assert "-Dtls.server.need.client.auth=require" in flags
    assert "-Dtls.server.authClient=true" in flags  # else Netty accepts any client certificate
    assert "-Dtls.client.certPath=/t/bg-0.crt" in flags and "-Dtls.client.keyPath=/t/bg-0.key" in flags
    proxy = tls_flags("/t/p.crt", "/t/p.key", "/t/ca.crt", present=True)  # presents, asks its clients for none
    assert "-Dtls.server.need.client.auth=none" in proxy and "-Dtls.client.certPath=/t/p.crt" in proxy
    assert not [f for f in tls_flags("/t/a", "/t/b", "/t/c") if "client.certPath" in f or "authClient" in f]


def test_jvm_flags_enforce_and_verify() -> None:
    flags = tls_flags("/t/bg-0.crt", "/t/bg-0.key", "/t/ca.crt")
    assert "-Dtls.server.mode=enforcing" in flags and "-Dtls.test.mode.enable=false" in flags
    assert "-Dtls.enable=true" in flags and "-Dtls.client.authServer=true" in flags
    assert "-Dtls.client.trustCertPath=/t/ca.crt" in flags and "-Dtls.server.keyPath=/t/bg-0.key" in flags


def _handshake_chain(chain_pem: str, key_pem: str, trust_pem: str, tmp: Path) -> None:
    where = tmp / hashlib.sha256((chain_pem + trust_pem).encode()).hexdigest()[:12]  # a client context per trust file
    where.mkdir()
    asyncio.run(_handshake(IssuedPair(chain_pem, key_pem), trust_pem, "127.0.0.1", where))


def test_a_successors_leaf_served_with_its_bridge_verifies_for_every_trust_of_a_rotation(tmp_path: Path) -> None:
    """The rotation's premise, in real handshakes: a client that read only the old authority at its start, one
    with the new alone and one with both all accept a leaf of the successor served with the bridge; a stranger's
    trust does not. (Java's PKIX does the same: checked with JDK 17 on 2026-12-04, docs/tls.md.)"""
    old = new_authority("test CA", 10 * HOUR, NOW - 60)
    new = new_authority("test CA", 20 * HOUR, NOW)
    assert CertificateInfo.of(old.cert_pem).subject != CertificateInfo.of(new.cert_pem).subject
    bridge = cross_sign(new, old, NOW)
    bridge_info = CertificateInfo.of(bridge)
    assert bridge_info.subject == CertificateInfo.of(new.cert_pem).subject
    assert bridge_info.issuer == CertificateInfo.of(old.cert_pem).subject and signed_by(bridge, old.cert_pem)
    assert bridge_info.not_after <= CertificateInfo.of(old.cert_pem).not_after  # never outlives its signer
    leaf = issue(new, "bg-0", [], ["127.0.0.1"], HOUR, NOW)
    chain = leaf.cert_pem + bridge
    for trust in (old.cert_pem, new.cert_pem, trust_bundle(new.cert_pem, old.cert_pem)):
        _handshake_chain(chain, leaf.key_pem, trust, tmp_path)
    stranger = new_authority("other CA", HOUR, NOW)
    with pytest.raises(RemotingConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        _handshake_chain(chain, leaf.key_pem, stranger.cert_pem, tmp_path)
    # Without the bridge, a client that trusts only the old authority refuses the successor's leaf.
    with pytest.raises(RemotingConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        _handshake_chain(leaf.cert_pem, leaf.key_pem, old.cert_pem, tmp_path)


def test_pem_certificates_splits_a_bundle_and_a_chain() -> None:
    a, b = new_authority("a", HOUR, NOW), new_authority("b", HOUR, NOW)
    bundle = trust_bundle(a.cert_pem, b.cert_pem)
    assert pem_certificates(bundle) == [a.cert_pem, b.cert_pem]
    assert trust_bundle(bundle) == bundle and pem_certificates("") == []


def test_a_client_reads_a_trust_file_replaced_in_place_again(tmp_path: Path) -> None:
    """A long-running client (the supervisor, the operator, a producer) follows a rotation's trust file: the
    successor added, then the predecessor dropped."""
    old, new = new_authority("old CA", HOUR, NOW), new_authority("new CA", HOUR, NOW)
    trust = tmp_path / "ca.crt"
    trust.write_text(old.cert_pem)
    tls = ClientTls(str(trust), check_hostname=False)
    first = tls.context()
    assert tls.context() is first  # unchanged: the one context
    write_text_atomic(trust, trust_bundle(new.cert_pem, old.cert_pem), 0o644)
    assert tls.context() is not first
    leaf = issue(new, "bg-0", [], ["127.0.0.1"], HOUR, NOW)

    async def connect() -> None:
        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.close()

        server = await asyncio.start_server(on_connect, "127.0.0.1", 0, ssl=_server_context(leaf, tmp_path))
        try:
            port = server.sockets[0].getsockname()[1]
            conn = await Connection.open(f"127.0.0.1:{port}", connect_timeout=5, tls=tls)
            await conn.close()
        finally:
            server.close()

    asyncio.run(connect())  # the new authority's leaf, trusted through the re-read file
