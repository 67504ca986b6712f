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

`plan_authority(facts, now)` decides the replacement of the authority itself (both platforms hold one), in
two steps with an overlap between them:

* ROTATE when a rotation was asked for (a request token not yet handled) or the authority expires within
  ``renew_before_s``, and no rotation is under way: the platform makes a successor, trusts both (the successor
  first: it signs from now on) and serves every leaf with the bridge (`control.certificates.cross_sign`), so a
  process that read the old trust at its start still verifies every peer. Every leaf is then due (ISSUE above:
  not signed by the current authority), and reissued where it is, restarting only what cannot reload.
* RETIRE the predecessor once the overlap (``overlap_s``, the time applications are given to read the new trust)
  is over and no process still trusts only the predecessor (every one started after the trust it reads held the
  successor), or at once when the predecessor has expired (nothing can verify through it then). Every leaf is
  issued again without the bridge and the trust holds the successor alone.
* WAIT, saying why, while the overlap is open; KEEP otherwise. A request made during an overlap waits for it.

RocketMQ's remoting clients read their trust once, when the JVM makes its client (`NettyRemotingClient`): the
bridge is what lets a rotation restart no broker; the retirement waits for restarts made for other reasons (a
roll, `kubectl rocketmq restart`), and the status says which processes it waits for.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
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


AUTHORITY_RENEW_BEFORE_S = 365 * 86400.0
"""A ten-year authority is replaced in its last year: room for the overlap and the restarts it waits for."""
DEFAULT_OVERLAP_S = 86400.0
"""How long both authorities are trusted at least, unless the request says otherwise: a day for applications
outside the operator (which also read their trust once) to be restarted onto the new trust file."""


class AuthorityActionKind(StrEnum):
    KEEP = "keep"
    ROTATE = "rotate"
    RETIRE = "retire"
    WAIT = "wait"


@dataclass(frozen=True, slots=True)
class AuthorityFacts:
    not_after: float
    """The signing authority's expiry (epoch seconds)."""
    request_pending: bool
    """A rotation was asked for and not yet carried out."""
    predecessor_not_after: float | None
    """The predecessor's expiry while a rotation's overlap is open; None when there is none."""
    rotation_started_at: float | None
    overlap_s: float
    renew_before_s: float = AUTHORITY_RENEW_BEFORE_S
    trusting_only_predecessor: tuple[str, ...] | None = None
    """The processes that read their trust before it held the successor; None when not read."""


@dataclass(frozen=True, slots=True)
class AuthorityAction:
    kind: AuthorityActionKind
    reason: str

    def describe(self) -> str:
        return f"authority: {self.kind.value}: {self.reason}"


def overlap_over(facts: AuthorityFacts, now: float) -> bool:
    """Whether the overlap's minimum has passed (the platform reads its processes only then)."""
    started = facts.rotation_started_at
    return facts.predecessor_not_after is not None and (started is None or now - started >= facts.overlap_s)


def authority_state(action: AuthorityAction, facts: AuthorityFacts, now: float) -> str:
    """The line a platform records for its authority: stable while the overlap runs (its end, not the seconds
    left), so that it is written when it changes and not at every pass."""
    if (
        action.kind is AuthorityActionKind.WAIT
        and facts.rotation_started_at is not None
        and not overlap_over(facts, now)
    ):
        until = dt.datetime.fromtimestamp(facts.rotation_started_at + facts.overlap_s, dt.UTC)
        pending = " (a rotation asked for now waits for this one)" if facts.request_pending else ""
        return f"authority: wait: both authorities trusted until {until.isoformat(timespec='seconds')}{pending}"
    return action.describe()


def state_after_rotation(facts: AuthorityFacts, now: float) -> str:
    """The line recorded when a rotation starts: what it is from then on (the overlap and its end)."""
    after = replace(facts, predecessor_not_after=facts.not_after, rotation_started_at=now, request_pending=False)
    return authority_state(plan_authority(after, now), after, now)


def plan_authority(facts: AuthorityFacts, now: float) -> AuthorityAction:
    if facts.predecessor_not_after is not None:
        waiting = " (a rotation asked for now waits until this one is done)" if facts.request_pending else ""
        if facts.predecessor_not_after <= now:
            return AuthorityAction(AuthorityActionKind.RETIRE, "the previous authority has expired")
        if not overlap_over(facts, now):
            assert facts.rotation_started_at is not None
            left = facts.overlap_s - (now - facts.rotation_started_at)
            return AuthorityAction(
                AuthorityActionKind.WAIT, f"both authorities trusted for {left:.0f} s more (the overlap){waiting}"
            )
        if facts.trusting_only_predecessor is None:
            return AuthorityAction(AuthorityActionKind.WAIT, f"the processes are not read yet{waiting}")
        if facts.trusting_only_predecessor:
            names = sorted(facts.trusting_only_predecessor)
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            return AuthorityAction(
                AuthorityActionKind.WAIT,
                f"{len(names)} started before the rotation and trust only the previous authority: {shown} "
                f"(restart them, e.g. `kubectl rocketmq restart`, or let the next roll){waiting}",
            )
        return AuthorityAction(
            AuthorityActionKind.RETIRE, "the overlap is over and every process trusts the new authority"
        )
    if facts.request_pending:
        return AuthorityAction(AuthorityActionKind.ROTATE, "a rotation was asked for")
    left = facts.not_after - now
    if left <= facts.renew_before_s:
        return AuthorityAction(
            AuthorityActionKind.ROTATE, f"expires in {left:.0f} s (renewed {facts.renew_before_s:.0f} s before)"
        )
    return AuthorityAction(AuthorityActionKind.KEEP, "valid, no rotation asked for")
