"""TLS for the remoting client: what to trust, as plain data a Spark executor can receive pickled.

Contract: `ClientTls(ca_file)` verifies the server's certificate chain against ``ca_file`` (PEM; None: the
system's trust store) and its name or IP address against the address dialled (`ssl.create_default_context`
semantics: TLS 1.2+, hostname checked). With ``check_hostname=False`` only the chain is verified, as RocketMQ's
own Java clients do (Netty's handler is made without a peer host): on Kubernetes brokers register their pod IPs,
which no certificate issued before the pod started can name. `context()` builds the `ssl.SSLContext`, cached
while the file is unchanged: a trust file replaced in place (an authority's rotation adds its successor, then
drops the predecessor; kubelet updates a mounted Secret) is read again by the next connection, so a long-running
client follows it (docs/tls.md "Rotating the authority").
With ``cert_file`` and ``key_file`` (PEM chain, PEM key) the client presents that certificate when the server asks
for one: a server with `tls.server.need.client.auth=require` (spec.tls.clientAuth: Required) refuses a
connection without one.
A RocketMQ server with `tls.server.mode=enforcing` closes a plain-text connection at its first bytes; one with
`permissive` takes both.
"""

from __future__ import annotations

import functools
import os
import ssl
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ClientTls:
    ca_file: str | None = None
    """PEM file of the certificate authorities to trust; None: the system's."""
    check_hostname: bool = True
    """False: the chain is verified, the name or address it is issued to is not."""

    cert_file: str | None = None
    """The client's own certificate (PEM, chain), presented when the server asks (mutual TLS); None: none."""
    key_file: str | None = None
    """Its unencrypted PEM key."""

    def context(self) -> ssl.SSLContext:
        versions = (_version(self.ca_file), _version(self.cert_file), _version(self.key_file))
        return _context(self.ca_file, self.check_hostname, self.cert_file, self.key_file, versions)


def _version(ca_file: str | None) -> tuple[int, int, int] | None:
    """What tells one content of the trust file from the next (its inode, size and modification time; a rename
    over it, or a symlink swapped by kubelet, changes them)."""
    if ca_file is None:
        return None
    try:
        st = os.stat(ca_file)
    except OSError:
        return None  # the context's own load reports it
    return st.st_ino, st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=64)
def _context(
    ca_file: str | None,
    check_hostname: bool,
    cert_file: str | None,
    key_file: str | None,
    versions: tuple[tuple[int, int, int] | None, ...],
) -> ssl.SSLContext:
    del versions  # part of the cache key only: a file replaced in place makes a new context
    context = ssl.create_default_context(cafile=ca_file)
    if not check_hostname:
        context.check_hostname = False  # verify_mode stays CERT_REQUIRED: the chain is still checked
    if cert_file is not None:
        context.load_cert_chain(cert_file, key_file)
    return context
