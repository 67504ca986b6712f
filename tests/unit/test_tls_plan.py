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
