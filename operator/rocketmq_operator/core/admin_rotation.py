"""Rotating a running group's admin (spec.auth.adminSecret) without the operator or the brokers losing access:
decided from plain data, run by both platforms.

RocketMQ reads a broker's admin (`innerClientAuthenticationCredentials`) once, at its start: it creates that user
as Super if its store lacks it and signs its own requests to the other brokers with it (a slave's metadata sync
from the master, the proxies' every request) until it stops. A user has exactly one password, so a new password
for the same name would lock out every process still signing with the old one, and the operator too. A rotation
is therefore a new admin *name*:

1. the Secret gets a new username and password (the *declared* admin); the brokers and the operator go on with
   the *configured* one (what the brokers' credentials file holds: what they start with);
2. the operator, signed as the configured admin, creates the declared one as Super on every replica;
3. once every replica holds it, the credentials file gets the declared admin (a broker or proxy started from
   now on signs as it) and the operator signs as it: *switched*. The old admin is *retiring*: kept on every
   replica while any process started before the switch may still sign as it;
4. once none is left (every broker pod and proxy re-created since: the next roll, or `kubectl rocketmq restart`),
   the old admin is deleted from every replica, and its password stops working.

A new password under the same name is refused (one line: field, rule, fix) and the configured admin stays in
use, so the operator never locks itself out; so is a return to a retiring name (its password is not known).

Contract: `plan_admin(facts, now)` returns an `AdminPlan`: who the operator signs as, what the credentials file
holds after this pass, which admin to assert on every replica, which retiring admins to keep and which to delete,
the retiring record after the pass, and one line for the status and the log. `settle_retiring(record, removed)`
drops the admins confirmed deleted everywhere. No I/O; passwords are only compared, never formatted into a line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum


@dataclass(frozen=True, slots=True)
class AdminCredential:
    user: str
    password: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class RetiringAdmin:
    """An old admin kept on the replicas since ``since`` (epoch seconds of the switch away from it)."""

    user: str
    since: float


class AdminPhase(StrEnum):
    NONE = "None"  # no admin known yet
    STEADY = "Steady"  # the declared admin is the configured one
    ROTATING = "Rotating"  # the declared admin is being created on every replica
    SWITCHED = "Switched"  # this pass moved the credentials file and the operator to the declared admin
    REFUSED = "Refused"  # the declared admin cannot be rotated to: the configured one stays


@dataclass(frozen=True)
class AdminFacts:
    declared: AdminCredential | None
    """The admin Secret now (None: missing or incomplete)."""
    configured: AdminCredential | None
    """What the brokers' credentials file holds (None: not written yet)."""
    retiring: tuple[RetiringAdmin, ...] = ()
    declared_everywhere: bool = False
    """The declared admin was confirmed on every replica in this pass (as Super, with its password)."""
    started_before: Mapping[str, int] = field(default_factory=dict)
    """Per retiring admin: the processes (broker pods, proxies) started before its switch, still running."""


@dataclass(frozen=True)
class AdminPlan:
    phase: AdminPhase
    sign_as: AdminCredential | None
    config: AdminCredential | None
    """What the credentials file must hold after this pass."""
    assert_admin: AdminCredential | None
    """The admin to hold on every replica (as Super) besides the group's users: the declared one while rotating."""
    keep: tuple[str, ...]
    """Admins on the replicas that are not declared but must stay (the configured one while rotating, the
    retiring ones)."""
    remove: tuple[str, ...]
    """Retiring admins to delete from every replica now."""
    retiring: tuple[RetiringAdmin, ...]
    """The retiring record after this pass (an admin leaves it once its deletion is confirmed everywhere)."""
    message: str = ""
    refusal: str | None = None


def _retire(facts: AdminFacts) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(kept, to delete now) among the retiring admins."""
    keep = tuple(r.user for r in facts.retiring if facts.started_before.get(r.user, 1) > 0)
    remove = tuple(r.user for r in facts.retiring if facts.started_before.get(r.user, 1) == 0)
    return keep, remove


def _retiring_line(facts: AdminFacts, keep: Sequence[str], remove: Sequence[str]) -> str:
    parts = [
        f"old admin '{user}' kept on the replicas: {facts.started_before.get(user, 1)} process(es) started before "
        "the switch may still sign as it (retired once they restart: the next roll, or kubectl rocketmq restart)"
        for user in keep
    ]
    parts += [
        f"old admin '{user}' deleted from every replica: nothing started before the switch runs" for user in remove
    ]
    return "; ".join(parts)


def plan_admin(facts: AdminFacts, now: float) -> AdminPlan:
    declared, configured = facts.declared, facts.configured
    keep, remove = _retire(facts)
    if declared is None:
        # The Secret is missing (reported elsewhere): go on with what the brokers have.
        phase = AdminPhase.NONE if configured is None else AdminPhase.STEADY
        return AdminPlan(phase, configured, configured, None, keep, (), facts.retiring)
    if configured is None:
        return AdminPlan(AdminPhase.STEADY, declared, declared, None, keep, remove, facts.retiring)
    retiring_names = {r.user for r in facts.retiring}
    if declared.user in retiring_names:
        refusal = (
            f"spec.auth.adminSecret: username '{declared.user}' is a retiring admin; rule: a rotation goes to a new "
            f"name (the retiring admin's password is not known); fix: put another username in the Secret, or "
            f"'{configured.user}' and its password back"
        )
        return AdminPlan(
            AdminPhase.REFUSED, configured, configured, None, keep, remove, facts.retiring, refusal, refusal
        )
    if declared.user == configured.user:
        if declared.password != configured.password:
            refusal = (
                f"spec.auth.adminSecret: the password of admin '{declared.user}' changed; rule: RocketMQ reads its "
                "admin at start only and a user has one password, so a new password under the same name would lock "
                "the running brokers and the operator out; fix: put a new username with the new password in the "
                f"Secret (the operator creates that admin on every replica, switches to it and deletes "
                f"'{declared.user}' once every broker has restarted), or the old password back"
            )
            return AdminPlan(
                AdminPhase.REFUSED, configured, configured, None, keep, remove, facts.retiring, refusal, refusal
            )
        return AdminPlan(
            AdminPhase.STEADY, declared, declared, None, keep, remove, facts.retiring,
            _retiring_line(facts, keep, remove),
        )  # fmt: skip
    if not facts.declared_everywhere:
        return AdminPlan(
            AdminPhase.ROTATING, configured, configured, declared, (*keep, configured.user), (), facts.retiring,
            f"rotating the admin: creating '{declared.user}' on every replica, signed as '{configured.user}'",
        )  # fmt: skip
    retiring = (*(r for r in facts.retiring if r.user != configured.user), RetiringAdmin(configured.user, now))
    return AdminPlan(
        AdminPhase.SWITCHED, declared, declared, declared, (*keep, configured.user), (), retiring,
        f"admin switched to '{declared.user}' (on every replica): the operator signs as it and brokers started from "
        f"now on use it; '{configured.user}' stays on the replicas until every process started before now has "
        "restarted (the next roll, or kubectl rocketmq restart)",
    )  # fmt: skip


def settle_retiring(record: Sequence[RetiringAdmin], removed: Sequence[str]) -> tuple[RetiringAdmin, ...]:
    """The retiring record without the admins whose deletion every replica confirmed."""
    gone = set(removed)
    return tuple(r for r in record if r.user not in gone)
