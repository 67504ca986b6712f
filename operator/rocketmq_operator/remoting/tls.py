"""TLS for the remoting client: what to trust, as plain data a Spark executor can receive pickled.

Contract: `ClientTls(ca_file)` verifies the server's certificate chain against ``ca_file`` (PEM; None: the
system's trust store) and its name or IP address against the address dialled (`ssl.create_default_context`
semantics: TLS 1.2+, hostname checked). `context()` builds the `ssl.SSLContext` (once per `ClientTls`, cached).
A RocketMQ server with `tls.server.mode=enforcing` closes a plain-text connection at its first bytes; one with
`permissive` takes both.
"""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ClientTls:
    ca_file: str | None = None
    """PEM file of the certificate authorities to trust; None: the system's."""

    def context(self) -> ssl.SSLContext:
        return _context(self.ca_file)


@functools.cache
def _context(ca_file: str | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=ca_file)
