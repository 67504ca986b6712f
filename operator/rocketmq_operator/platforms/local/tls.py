"""The local platform's spec.tls: one certificate authority per state directory and a certificate per process,
in files under `tls/`, issued and renewed through `control.certificates` as `core.tls.plan_tls` decides.

Contract:

* `check_tls(resources)`: TLS is all or nothing within one set of manifests, Proxies included (every client the
  platform opens speaks to all of its processes with one setting) and spec.tls.secretName is Kubernetes only;
  otherwise `TlsConfigError`, one line naming the field, the rule and the fix.
* `tls_groups(resources)`: the groups and Proxies with spec.tls on (`placement.build_state` gives their
  processes `render.jvm.tls_flags` over the files of the layout, and a proxy's rmq-proxy.json the same files).
* `client_tls(state)`: what every client of this cluster trusts (the state directory's authority), or None
  when TLS is off.
* `TlsPolicy(state, layout).run(restart)`: reads every certificate, plans, issues (certificate then key, each
  replaced in one rename: brokers, name servers and proxies reload when both changed) and restarts, through
  `restart`, the one process `plan_tls` names. `ensure_certificates(layout, state)` is the same issuing at `local up`.
  Never logs a key.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from rocketmq_operator.api.models import AnyResource, BrokerGroup, ControllerGroup, Proxy, duration_seconds
from rocketmq_operator.control.certificates import (
    CertificateError,
    CertificateInfo,
    IssuedPair,
    held_or_new_authority,
    issue,
    signed_by,
)
from rocketmq_operator.core.tls import SETTLE_S, HeldCertificate, TlsActionKind, plan_tls
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import load_resources
from rocketmq_operator.platforms.local.state import LocalState, ReplicaProcess, write_text_atomic
from rocketmq_operator.remoting.tls import ClientTls

log = logging.getLogger("rocketmq_operator.local.tls")

AUTHORITY_NAME = "rocketmq-operator local CA"
CERT_DNS_NAMES = ("localhost",)
CHECK_EVERY_S = 5.0


class TlsConfigError(ValueError):
    """spec.tls that the local platform cannot run (one line: field, rule, fix)."""


TlsOwner = BrokerGroup | ControllerGroup | Proxy
"""What runs processes with spec.tls: a group, or a Proxy."""


def _groups(resources: Sequence[AnyResource]) -> list[TlsOwner]:
    return [r for r in resources if isinstance(r, BrokerGroup | ControllerGroup | Proxy)]


def check_tls(resources: Sequence[AnyResource]) -> None:
    groups = _groups(resources)
    for g in groups:
        if g.spec.tls.secret_name is not None:
            raise TlsConfigError(
                f"{g.kind}/{g.metadata.name}: spec.tls.secretName '{g.spec.tls.secret_name}' names a Kubernetes "
                "Secret; rule: the local platform issues its certificates from its own authority; fix: remove "
                "secretName for `local up` (keep enabled: true)"
            )
    on = sorted(f"{g.kind}/{g.metadata.name}" for g in groups if g.spec.tls.enabled)
    off = sorted(f"{g.kind}/{g.metadata.name}" for g in groups if not g.spec.tls.enabled)
    if on and off:
        raise TlsConfigError(
            f"spec.tls.enabled is true in {', '.join(on)} and false in {', '.join(off)}; rule: one local cluster "
            "speaks TLS everywhere or nowhere (its clients use one setting for every process); fix: set "
            "spec.tls.enabled the same in every group, or run the groups with separate --state-dir"
        )


def tls_groups(resources: Sequence[AnyResource]) -> dict[str, TlsOwner]:
    return {g.metadata.name: g for g in _groups(resources) if g.spec.tls.enabled}


def client_tls(state: LocalState) -> ClientTls | None:
    if not tls_groups(load_resources(state)):
        return None
    return ClientTls(ca_file=str(StateLayout(Path(state.state_dir)).tls_ca))


def _reloads(replica: ReplicaProcess, groups: dict[str, TlsOwner]) -> bool:
    """Brokers, name servers and proxies watch their certificate files (a proxy every tlsCertWatchIntervalMs);
    a controller's remoting server does not (also the one inside a name server that hosts the controller)."""
    if replica.role in ("broker", "proxy"):
        return True
    group = groups.get(replica.group)
    return replica.role == "namesrv" and isinstance(group, ControllerGroup) and group.spec.standalone


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _authority(layout: StateLayout, now: float) -> IssuedPair:
    pair, new = held_or_new_authority(_read(layout.tls_ca), _read(layout.tls_ca_key), AUTHORITY_NAME, now)
    if not new:
        return pair
    write_text_atomic(layout.tls_ca_key, pair.key_pem)
    write_text_atomic(layout.tls_ca, pair.cert_pem, 0o644)
    log.info("issued a new certificate authority %s", layout.tls_ca)
    return pair


def _host(address: str) -> str:
    return address.rpartition(":")[0].strip("[]")


def _held(
    layout: StateLayout,
    replica: ReplicaProcess,
    authority: IssuedPair,
    groups: dict[str, TlsOwner],
) -> HeldCertificate:
    text = _read(layout.tls_cert(replica.name))
    info: CertificateInfo | None = None
    if text is not None and layout.tls_key(replica.name).exists():
        try:
            info = CertificateInfo.of(text)
        except CertificateError:
            info = None
    running = replica.pid is not None and not replica.suspended
    reloads = _reloads(replica, groups)
    renew_before = duration_seconds(groups[replica.group].spec.tls.renew_before)
    if text is None or info is None:
        return HeldCertificate(replica.name, None, None, False, False, reloads, running, None, renew_before)
    return HeldCertificate(
        replica=replica.name,
        not_after=info.not_after,
        issued_at=layout.tls_cert(replica.name).stat().st_mtime,
        current_authority=signed_by(text, authority.cert_pem),
        names_address=_host(replica.address) in info.ip_addresses + info.dns_names,
        reloads=reloads,
        running=running,
        started_at=replica.started_at,
        renew_before_s=renew_before,
    )


def _issue(layout: StateLayout, replica: ReplicaProcess, authority: IssuedPair, lifetime_s: int, now: float) -> None:
    host = _host(replica.address)
    pair = issue(authority, replica.name, CERT_DNS_NAMES, [host] if host[:1].isdigit() else [], lifetime_s, now)
    # Certificate first, then key: RocketMQ reloads once both have changed, and never reads a half-written one.
    write_text_atomic(layout.tls_cert(replica.name), pair.cert_pem, 0o644)
    write_text_atomic(layout.tls_key(replica.name), pair.key_pem)


class TlsPolicy:
    def __init__(self, state: LocalState, layout: StateLayout) -> None:
        self.state = state
        self.layout = layout
        self.groups = tls_groups(load_resources(state))
        self.settle_s = SETTLE_S
        self.every_s = CHECK_EVERY_S
        self._last_run = 0.0

    @property
    def wanted(self) -> bool:
        return bool(self.groups)

    def issue_due(self, now: float | None = None) -> list[str]:
        """Issue every certificate that is due (no restart); the lines say which and why."""
        return [line for line, _ in self._plan(now, restarts=False)]

    def _plan(self, now: float | None, *, restarts: bool) -> list[tuple[str, ReplicaProcess | None]]:
        """One reading of every certificate, one plan: issued here; the process to restart, if any, returned."""
        if not self.groups:
            return []
        now = time.time() if now is None else now
        authority = _authority(self.layout, now)
        by_name = {r.name: r for r in self.state.replicas if r.group in self.groups}
        held = [_held(self.layout, r, authority, self.groups) for r in by_name.values()]
        done: list[tuple[str, ReplicaProcess | None]] = []
        for action in plan_tls(held, now, settle_s=self.settle_s):
            replica = by_name[action.replica]
            if action.kind is TlsActionKind.ISSUE:
                lifetime = duration_seconds(self.groups[replica.group].spec.tls.duration)
                _issue(self.layout, replica, authority, lifetime, now)
                done.append((action.describe(), None))
            elif restarts:
                done.append((action.describe(), replica))
        return done

    async def run(self, restart: Callable[[ReplicaProcess], Awaitable[None]], now: float | None = None) -> None:
        if time.monotonic() - self._last_run < self.every_s:
            return
        self._last_run = time.monotonic()
        for line, replica in self._plan(now, restarts=True):
            log.info("tls: %s", line)
            if replica is not None:
                await restart(replica)


def ensure_certificates(layout: StateLayout, state: LocalState) -> list[str]:
    """At `local up`: every process of a TLS group has a valid certificate from this directory's authority."""
    return TlsPolicy(state, layout).issue_due()
