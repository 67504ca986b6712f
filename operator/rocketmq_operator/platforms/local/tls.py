"""The local platform's spec.tls: one certificate authority per state directory and a certificate per process,
in files under `tls/`, issued and renewed through `control.certificates` as `core.tls.plan_tls` decides.

Contract:

* `check_tls(resources)`: TLS is all or nothing within one set of manifests, Proxies included (every client the
  platform opens speaks to all of its processes with one setting) and spec.tls.secretName is Kubernetes only;
  otherwise `TlsConfigError`, one line naming the field, the rule and the fix.
* `tls_groups(resources)`: the groups and Proxies with spec.tls on (`placement.build_state` gives their
  processes `render.jvm.tls_flags` over the files of the layout, and a proxy's rmq-proxy.json the same files).
* `client_tls(state)`: what every client of this cluster trusts (the state directory's authority), or None
  when TLS is off; where a group requires client certificates (spec.tls.clientAuth: Required), the cluster's
  client certificate too (`tls/client.crt`, issued and renewed with the others, served with the bridge during a
  rotation). Processes of such a group read their client certificate at start, so a renewal restarts each
  (`plan_tls`, one at a time), brokers and proxies too.
* `TlsPolicy(state, layout).run(restart)`: reads every certificate, plans, issues (certificate then key, each
  replaced in one rename: brokers, name servers and proxies reload when both changed) and restarts, through
  `restart`, the one process `plan_tls` names. `ensure_certificates(layout, state)` is the same issuing at `local up`.
  Never logs a key.
* The authority rotates as on Kubernetes (`core.tls.plan_authority`): `request_rotation(layout, overlap_s)` (what
  `local rotate-ca` does) records a request in `tls/rotation.json`; the policy's next run makes a successor, writes
  ca.crt as both authorities (every process's trust file; the successor first) and `tls/bridge.crt`, and every
  certificate is then issued again with the bridge after it. Once the overlap is over and no running process
  started before the rotation, the predecessor and the bridge leave. Each step is recorded as pending in the
  rotation record before its files are written, and a run finds a cut-off step there and finishes it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from rocketmq_operator.api.models import AnyResource, BrokerGroup, ControllerGroup, Proxy, duration_seconds
from rocketmq_operator.control.certificates import (
    Authority,
    CertificateError,
    CertificateInfo,
    held_or_new_authority,
    issue,
)
from rocketmq_operator.core.tls import (
    DEFAULT_OVERLAP_S,
    SETTLE_S,
    AuthorityActionKind,
    AuthorityFacts,
    HeldCertificate,
    TlsActionKind,
    authority_state,
    overlap_over,
    plan_authority,
    plan_tls,
    state_after_rotation,
)
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
    groups = tls_groups(load_resources(state))
    if not groups:
        return None
    layout = StateLayout(Path(state.state_dir))
    if any(g.spec.tls.mutual for g in groups.values()):
        return ClientTls(str(layout.tls_ca), cert_file=str(layout.tls_client_cert), key_file=str(layout.tls_client_key))
    return ClientTls(ca_file=str(layout.tls_ca))


CLIENT_NAME = "rocketmq-operator-client"
CLIENT_LIFETIME_S = 365 * 86400
CLIENT_RENEW_BEFORE_S = 30 * 86400.0


def _client_certificate(layout: StateLayout, authority: Authority, now: float) -> str | None:
    """The cluster's client certificate issued again when missing, not this authority's, or due: the line saying
    so, or None. The supervisor re-reads it at its next connection (`remoting.tls`)."""
    text = _read(layout.tls_client_cert)
    reason = "no certificate"
    if text is not None and layout.tls_client_key.exists():
        try:
            left = CertificateInfo.of(text).not_after - now
        except CertificateError:
            left = -1.0
        if not authority.serves(text):
            reason = "signed by another authority"
        elif left <= CLIENT_RENEW_BEFORE_S:
            reason = f"expires in {left:.0f} s"
        else:
            return None
    pair = issue(authority.signer, CLIENT_NAME, [CLIENT_NAME], [], CLIENT_LIFETIME_S, now)
    write_text_atomic(layout.tls_client_cert, authority.chain(pair.cert_pem), 0o644)
    write_text_atomic(layout.tls_client_key, pair.key_pem)
    return f"issue {CLIENT_NAME}: {reason}"


def _reloads(replica: ReplicaProcess, groups: dict[str, TlsOwner]) -> bool:
    """Brokers, name servers and proxies watch their certificate files (a proxy every tlsCertWatchIntervalMs);
    a controller's remoting server does not (also the one inside a name server that hosts the controller). With
    client certificates required, none reloads all it uses: the client certificate is read once, at start."""
    group = groups.get(replica.group)
    if group is not None and group.spec.tls.mutual:
        return False
    if replica.role in ("broker", "proxy"):
        return True
    return replica.role == "namesrv" and isinstance(group, ControllerGroup) and group.spec.standalone


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def read_rotation(layout: StateLayout) -> dict[str, Any]:
    """The rotation record ({} when there is none or it does not parse)."""
    text = _read(layout.tls_rotation)
    try:
        doc = json.loads(text) if text else {}
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _write_rotation(layout: StateLayout, doc: dict[str, Any]) -> None:
    write_text_atomic(layout.tls_rotation, json.dumps(doc, indent=2, sort_keys=True) + "\n")


def request_rotation(layout: StateLayout, overlap_s: float, now: float | None = None) -> str:
    """Ask the supervisor to rotate the authority (its next TLS run, within CHECK_EVERY_S): the request's token."""
    token = f"{time.time() if now is None else now:.3f}"
    doc = read_rotation(layout)
    doc.update(request=token, overlap_s=overlap_s)
    _write_rotation(layout, doc)
    return token


def _write_authority(layout: StateLayout, made: Authority) -> None:
    # The key first, then the trust whose first certificate it belongs to: a reader of both between the two would
    # get a mismatched pair only if cut off here, and the pending record redoes the step then.
    write_text_atomic(layout.tls_ca_key, made.signer.key_pem)
    write_text_atomic(layout.tls_ca, made.trust, 0o644)
    if made.bridge is not None:
        write_text_atomic(layout.tls_bridge, made.bridge, 0o644)
    else:
        layout.tls_bridge.unlink(missing_ok=True)


def _authority(layout: StateLayout, now: float) -> Authority:
    record = read_rotation(layout)
    pending = record.pop("pending", None)
    if isinstance(pending, dict):  # a step cut off after its record: finish it
        _write_authority(layout, Authority.held(pending["trust"], pending["key"], pending.get("bridge")))
        _write_rotation(layout, record)
    pair, new = held_or_new_authority(_read(layout.tls_ca), _read(layout.tls_ca_key), AUTHORITY_NAME, now)
    if not new:
        return Authority.held(pair.cert_pem, pair.key_pem, _read(layout.tls_bridge))
    made = Authority(pair, pair.cert_pem, None)
    _write_authority(layout, made)
    if record.get("request"):  # a new authority answers a request made before it
        record["rotated_for"] = record["request"]
        _write_rotation(layout, record)
    log.info("issued a new certificate authority %s", layout.tls_ca)
    return made


def _rotated(layout: StateLayout, held: Authority, running_since: dict[str, float | None], now: float) -> Authority:
    """One step of the authority's rotation, as `core.tls.plan_authority` decides. ``running_since``: each
    running process of a TLS group and when it started (each read the trust file then)."""
    record = read_rotation(layout)
    request = str(record.get("request") or "")
    started = record.get("started_at")
    predecessor = held.predecessor
    facts = AuthorityFacts(
        not_after=CertificateInfo.of(held.signer.cert_pem).not_after,
        request_pending=bool(request) and request != record.get("rotated_for"),
        predecessor_not_after=CertificateInfo.of(predecessor).not_after if predecessor is not None else None,
        rotation_started_at=float(started) if isinstance(started, int | float) else None,
        overlap_s=float(record.get("overlap_s", DEFAULT_OVERLAP_S)),
    )
    if overlap_over(facts, now):
        since = facts.rotation_started_at or 0.0
        old = tuple(sorted(n for n, at in running_since.items() if at is None or at < since))
        facts = dataclasses.replace(facts, trusting_only_predecessor=old)
    action = plan_authority(facts, now)
    if action.kind in (AuthorityActionKind.KEEP, AuthorityActionKind.WAIT):
        state = authority_state(action, facts, now)
        if record.get("state", state) != state or (action.kind is AuthorityActionKind.WAIT and "state" not in record):
            _write_rotation(layout, {**record, "state": state})
        return held
    if action.kind is AuthorityActionKind.ROTATE:
        made = held.rotated(AUTHORITY_NAME, now)
        record.update(rotated_for=request, started_at=now, state=state_after_rotation(facts, now))
    else:
        made = held.retired()
        record.pop("started_at", None)
        record["state"] = action.describe()
    _write_rotation(
        layout, {**record, "pending": {"trust": made.trust, "key": made.signer.key_pem, "bridge": made.bridge}}
    )
    _write_authority(layout, made)
    _write_rotation(layout, record)
    log.info("tls: %s", action.describe())
    return made


def _host(address: str) -> str:
    return address.rpartition(":")[0].strip("[]")


def _held(
    layout: StateLayout,
    replica: ReplicaProcess,
    authority: Authority,
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
        current_authority=authority.serves(text),
        names_address=_host(replica.address) in info.ip_addresses + info.dns_names,
        reloads=reloads,
        running=running,
        started_at=replica.started_at,
        renew_before_s=renew_before,
    )


def _issue(layout: StateLayout, replica: ReplicaProcess, authority: Authority, lifetime_s: int, now: float) -> None:
    host = _host(replica.address)
    pair = issue(authority.signer, replica.name, CERT_DNS_NAMES, [host] if host[:1].isdigit() else [], lifetime_s, now)
    # Certificate first, then key: RocketMQ reloads once both have changed, and never reads a half-written one.
    write_text_atomic(layout.tls_cert(replica.name), authority.chain(pair.cert_pem), 0o644)
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
        by_name = {r.name: r for r in self.state.replicas if r.group in self.groups}
        running_since = {r.name: r.started_at for r in by_name.values() if r.pid is not None}
        authority = _rotated(self.layout, _authority(self.layout, now), running_since, now)
        done: list[tuple[str, ReplicaProcess | None]] = []
        if any(g.spec.tls.mutual for g in self.groups.values()):
            client = _client_certificate(self.layout, authority, now)
            if client is not None:
                done.append((client, None))
        held = [_held(self.layout, r, authority, self.groups) for r in by_name.values()]
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
