"""When a process of a group with spec.tls gets a new certificate, and when it must restart to use it.

Contract: `plan_tls(held, now)` takes what each process holds (plain data, read by a
platform from its files or Secrets) and returns the actions, in order:

* ISSUE for every process whose certificate is missing, unreadable, not signed by the current authority, does
  not name the process's address, or expires within its group's ``renew_before_s``. Issuing is harmless to a running
  process: it keeps the certificate it loaded.
* RESTART for one process that cannot reload a certificate (`reloads` false: a controller's remoting server,
  RocketMQ 5.5 watches the files only in brokers and name servers) whose certificate was issued after it
  started, and only when every such process has been running for ``settle_s``: one at a time, as a roll does,
  so that a controller quorum is never lost to renewal.

Brokers and name servers reload the files themselves (RocketMQ's FileWatchService, both cert and key
changed), so renewal restarts none of them and fails no send.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

SETTLE_S = 20.0
"""A restarted controller has this long to rejoin its quorum before the next one is restarted."""


class TlsActionKind(StrEnum):
    ISSUE = "issue"
    RESTART = "restart"


@dataclass(frozen=True, slots=True)
class HeldCertificate:
    replica: str
    not_after: float | None
    """Expiry of the certificate on file (epoch seconds); None: missing or unreadable."""
    issued_at: float | None
    """When that certificate was issued (epoch seconds); None when missing."""
    current_authority: bool
    """Signed by the authority the platform trusts now."""
    names_address: bool
    """Its SANs name the address clients dial."""
    reloads: bool
    """The process loads a new certificate without a restart (brokers, name servers without a controller)."""
    running: bool
    started_at: float | None
    renew_before_s: float
    """Its group's spec.tls.renewBefore, in seconds."""


@dataclass(frozen=True, slots=True)
class TlsAction:
    kind: TlsActionKind
    replica: str
    reason: str

    def describe(self) -> str:
        return f"{self.kind.value} {self.replica}: {self.reason}"


def _issue_reason(h: HeldCertificate, now: float) -> str | None:
    if h.not_after is None:
        return "no certificate"
    if not h.current_authority:
        return "signed by another authority"
    if not h.names_address:
        return "does not name the replica's address"
    if h.not_after - now <= h.renew_before_s:
        left = h.not_after - now
        return "expired" if left <= 0 else f"expires in {left:.0f} s (renewBefore {h.renew_before_s:.0f} s)"
    return None


def plan_tls(held: Sequence[HeldCertificate], now: float, *, settle_s: float = SETTLE_S) -> list[TlsAction]:
    actions: list[TlsAction] = []
    issued: set[str] = set()
    for h in held:
        reason = _issue_reason(h, now)
        if reason is not None:
            actions.append(TlsAction(TlsActionKind.ISSUE, h.replica, reason))
            issued.add(h.replica)
    restartable = [h for h in held if not h.reloads]
    settled = all(h.running and h.started_at is not None and now - h.started_at >= settle_s for h in restartable)
    if not settled:
        return actions  # one down or just back: restarting another could cost the controllers their quorum
    for h in restartable:
        if h.replica in issued:
            continue  # restarted once the new certificate is on file (the next pass)
        if h.issued_at is not None and h.started_at is not None and h.started_at < h.issued_at:
            actions.append(TlsAction(TlsActionKind.RESTART, h.replica, "started before its certificate was issued"))
            break
    return actions
