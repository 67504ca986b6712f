"""Fresh TLS handshakes as a client that read its trust once would make them: what the e2e and integration tests of
the authority's rotation measure (docs/tls.md "Rotating the authority")."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from pathlib import Path

from rocketmq_operator.remoting import ClientTls, RemotingClient


def route_refusal(address: str, tls: ClientTls, topic: str = "orders", timeout: float = 5.0) -> str | None:
    """A route lookup at the name server ``address`` over ``tls``: None when answered, else why not (refused in
    the handshake, or "not ready" after a restart: the caller tells which it expects)."""

    async def ask() -> None:
        async with RemotingClient(address, connect_timeout=timeout, request_timeout=timeout, tls=tls) as client:
            await client.get_route(topic, timeout=timeout)

    try:
        asyncio.run(ask())
    except Exception as exc:  # every failure is an answer here
        return str(exc) or type(exc).__name__
    return None


def served_chain(address: str, trust: Path) -> tuple[str | None, str | None]:
    """A fresh TLS handshake with ``address`` trusting only ``trust`` (chain verified, not the pod IP, as RocketMQ's
    clients do): (the served leaf as PEM, None), or (None, why it failed); `ssl` errors are refusals of trust."""
    context = ssl.create_default_context(cafile=str(trust))
    context.check_hostname = False
    context.set_alpn_protocols(["h2"])  # what a gRPC client offers (a proxy's port); remoting servers ignore it
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=5) as raw, context.wrap_socket(raw) as tls:
            der = tls.getpeercert(binary_form=True)
            return (ssl.DER_cert_to_PEM_cert(der) if der else None), None
    except ssl.SSLError as exc:
        return None, f"TLS: {exc}"
    except OSError as exc:
        return None, f"connection: {exc}"


class HandshakeProbe:
    """Fresh handshakes with every address, every half second, trusting only the old authority: counts those
    refused in TLS (a connection refused while a controller restarts is not a handshake, and counted apart)."""

    def __init__(self, addresses: list[str], trust: Path) -> None:
        self.addresses, self.trust = addresses, trust
        self.handshakes = 0
        self.refused: list[str] = []
        self.unreachable = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for address in self.addresses:
                served, why = served_chain(address, self.trust)
                if served is not None:
                    self.handshakes += 1
                elif why is not None and why.startswith("TLS"):
                    self.refused.append(f"{address}: {why}")
                else:
                    self.unreachable += 1
            self._stop.wait(0.5)

    def __enter__(self) -> HandshakeProbe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
