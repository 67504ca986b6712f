"""core.tls.plan_tls: which certificates are issued, and which one process restarts to load its new one."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rocketmq_operator.core.tls import HeldCertificate, TlsAction, TlsActionKind, plan_tls

NOW = 1_000_000.0
DAY = 86400.0
RENEW = 30 * DAY
SETTLE = 20.0

BROKER = HeldCertificate(
    replica="bg-0",
    not_after=NOW + 300 * DAY,
    issued_at=NOW - 65 * DAY,
    current_authority=True,
    names_address=True,
    reloads=True,
    running=True,
    started_at=NOW - 60 * DAY,
    renew_before_s=RENEW,
)
CONTROLLER = replace(BROKER, replica="ctl-0", reloads=False)


def issue(replica: str, reason: str) -> TlsAction:
    return TlsAction(TlsActionKind.ISSUE, replica, reason)


def restart(replica: str) -> TlsAction:
    return TlsAction(TlsActionKind.RESTART, replica, "started before its certificate was issued")


CASES: list[tuple[str, list[HeldCertificate], list[TlsAction]]] = [
    ("valid: nothing", [BROKER, CONTROLLER], []),
    (
        "missing",
        [replace(BROKER, not_after=None, issued_at=None, current_authority=False, names_address=False)],
        [issue("bg-0", "no certificate")],
    ),
    (
        "due within renewBefore",
        [replace(BROKER, not_after=NOW + 10 * DAY)],
        [issue("bg-0", f"expires in {10 * DAY:.0f} s (renewBefore {RENEW:.0f} s)")],
    ),
    ("expired", [replace(BROKER, not_after=NOW - 1)], [issue("bg-0", "expired")]),
    ("another authority", [replace(BROKER, current_authority=False)], [issue("bg-0", "signed by another authority")]),
    (
        "address not named (ports moved to another loopback address)",
        [replace(BROKER, names_address=False)],
        [issue("bg-0", "does not name the replica's address")],
    ),
    (
        "a broker reloads its renewed certificate: no restart",
        [replace(BROKER, issued_at=NOW - 60, started_at=NOW - DAY)],
        [],
    ),
    (
        "a controller started before its certificate: restarted",
        [replace(CONTROLLER, issued_at=NOW - 60, started_at=NOW - DAY)],
        [restart("ctl-0")],
    ),
    (
        "refused: one restart at a time",
        [
            replace(CONTROLLER, replica="ctl-0", issued_at=NOW - 60, started_at=NOW - DAY),
            replace(CONTROLLER, replica="ctl-1", issued_at=NOW - 60, started_at=NOW - DAY),
        ],
        [restart("ctl-0")],
    ),
    (
        "refused: another controller is down",
        [
            replace(CONTROLLER, replica="ctl-0", issued_at=NOW - 60, started_at=NOW - DAY),
            replace(CONTROLLER, replica="ctl-1", running=False, started_at=None),
        ],
        [],
    ),
    (
        "refused: another controller has just come back (not settled)",
        [
            replace(CONTROLLER, replica="ctl-0", issued_at=NOW - 60, started_at=NOW - DAY),
            replace(CONTROLLER, replica="ctl-1", issued_at=NOW - 60, started_at=NOW - 5),
        ],
        [],
    ),
    (
        "issued now: restarted on a later pass, once on file",
        [replace(CONTROLLER, not_after=NOW + DAY)],
        [issue("ctl-0", f"expires in {DAY:.0f} s (renewBefore {RENEW:.0f} s)")],
    ),
]


@pytest.mark.parametrize(("held", "expected"), [(h, e) for _, h, e in CASES], ids=[c[0] for c in CASES])
def test_plan_tls(held: list[HeldCertificate], expected: list[TlsAction]) -> None:
    assert plan_tls(held, NOW, settle_s=SETTLE) == expected


# core.tls.plan_authority: when the authority itself is replaced, and when its predecessor leaves.

from rocketmq_operator.core.tls import (  # noqa: E402
    AuthorityAction,
    AuthorityActionKind,
    AuthorityFacts,
    plan_authority,
)

YEAR = 365 * DAY
STEADY = AuthorityFacts(
    not_after=NOW + 5 * YEAR,
    request_pending=False,
    predecessor_not_after=None,
    rotation_started_at=None,
    overlap_s=DAY,
)
OVERLAP = replace(
    STEADY, predecessor_not_after=NOW + 2 * YEAR, rotation_started_at=NOW - 2 * DAY, trusting_only_predecessor=()
)

AUTHORITY_CASES: list[tuple[str, AuthorityFacts, AuthorityActionKind, str]] = [
    ("valid, nothing asked: keep", STEADY, AuthorityActionKind.KEEP, "no rotation asked for"),
    ("asked for: rotate", replace(STEADY, request_pending=True), AuthorityActionKind.ROTATE, "asked for"),
    ("in its last year: rotate", replace(STEADY, not_after=NOW + 300 * DAY), AuthorityActionKind.ROTATE, "expires in"),
    (
        "overlap running: wait, even when asked again",
        replace(OVERLAP, rotation_started_at=NOW - 3600, request_pending=True),
        AuthorityActionKind.WAIT,
        "for 82800 s more (the overlap) (a rotation asked for now waits",
    ),
    (
        "overlap over, processes not read: wait",
        replace(OVERLAP, trusting_only_predecessor=None),
        AuthorityActionKind.WAIT,
        "not read yet",
    ),
    (
        "overlap over, pods started before it: wait, naming them",
        replace(OVERLAP, trusting_only_predecessor=("bg-0", "ctl-1")),
        AuthorityActionKind.WAIT,
        "2 started before the rotation and trust only the previous authority: bg-0, ctl-1 (restart them",
    ),
    (
        "overlap over, everything restarted since: retire",
        OVERLAP,
        AuthorityActionKind.RETIRE,
        "every process trusts the new authority",
    ),
    (
        "the predecessor expired: retire, whoever still trusts it",
        replace(OVERLAP, predecessor_not_after=NOW - 1, trusting_only_predecessor=("bg-0",)),
        AuthorityActionKind.RETIRE,
        "has expired",
    ),
    (
        "an overlap of 0 s: retire as soon as nothing trusts only the predecessor",
        replace(OVERLAP, overlap_s=0.0, rotation_started_at=NOW),
        AuthorityActionKind.RETIRE,
        "overlap is over",
    ),
]


@pytest.mark.parametrize(
    ("facts", "kind", "reason"), [c[1:] for c in AUTHORITY_CASES], ids=[c[0] for c in AUTHORITY_CASES]
)
def test_plan_authority(facts: AuthorityFacts, kind: AuthorityActionKind, reason: str) -> None:
    action = plan_authority(facts, NOW)
    assert action.kind is kind and reason in action.reason, action
    assert isinstance(action, AuthorityAction) and action.describe().startswith(f"authority: {kind.value}: ")
