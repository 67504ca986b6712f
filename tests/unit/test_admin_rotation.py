"""core.admin_rotation: the admin rotation's decisions, table-tested with its refusals."""

from __future__ import annotations

import pytest

from rocketmq_operator.core.admin_rotation import (
    AdminCredential,
    AdminFacts,
    AdminPhase,
    RetiringAdmin,
    plan_admin,
    settle_retiring,
)

OLD = AdminCredential("admin", "old-secret")
NEW = AdminCredential("admin-2", "new-secret")
SAME_NAME_NEW_PASSWORD = AdminCredential("admin", "changed")
RETIRING = (RetiringAdmin("admin-0", 100.0),)


@pytest.mark.parametrize(
    ("facts", "phase", "sign", "config", "assert_admin", "keep", "remove"),
    [
        # Nothing known yet: nothing to sign with.
        (AdminFacts(None, None), AdminPhase.NONE, None, None, None, (), ()),
        # The Secret went missing: the brokers' admin stays in use.
        (AdminFacts(None, OLD), AdminPhase.STEADY, OLD, OLD, None, (), ()),
        # First pass: the declared admin is written and used.
        (AdminFacts(NEW, None), AdminPhase.STEADY, NEW, NEW, None, (), ()),
        (AdminFacts(OLD, OLD), AdminPhase.STEADY, OLD, OLD, None, (), ()),
        # A new name: created on every replica, signed as the configured admin, which is kept.
        (AdminFacts(NEW, OLD), AdminPhase.ROTATING, OLD, OLD, NEW, ("admin",), ()),
        # ... until every replica holds it: switched.
        (AdminFacts(NEW, OLD, declared_everywhere=True), AdminPhase.SWITCHED, NEW, NEW, NEW, ("admin",), ()),
        # Retiring: kept while a process started before the switch runs, deleted once none does.
        (
            AdminFacts(OLD, OLD, RETIRING, started_before={"admin-0": 2}),
            AdminPhase.STEADY, OLD, OLD, None, ("admin-0",), (),
        ),
        (
            AdminFacts(OLD, OLD, RETIRING, started_before={"admin-0": 0}),
            AdminPhase.STEADY, OLD, OLD, None, (), ("admin-0",),
        ),
        # Not counted (no pod list): kept, never deleted on a guess.
        (AdminFacts(OLD, OLD, RETIRING), AdminPhase.STEADY, OLD, OLD, None, ("admin-0",), ()),
    ],
)  # fmt: skip
def test_plan_admin(
    facts: AdminFacts,
    phase: AdminPhase,
    sign: AdminCredential | None,
    config: AdminCredential | None,
    assert_admin: AdminCredential | None,
    keep: tuple[str, ...],
    remove: tuple[str, ...],
) -> None:
    plan = plan_admin(facts, now=200.0)
    assert plan.phase is phase
    assert (plan.sign_as, plan.config, plan.assert_admin) == (sign, config, assert_admin)
    assert (plan.keep, plan.remove) == (keep, remove)
    assert plan.refusal is None


def test_the_switch_records_the_old_admin_as_retiring_from_now() -> None:
    plan = plan_admin(AdminFacts(NEW, OLD, RETIRING, declared_everywhere=True), now=250.0)
    assert plan.retiring == (*RETIRING, RetiringAdmin("admin", 250.0))
    assert "'admin-2'" in plan.message and "'admin' stays" in plan.message
    assert "new-secret" not in plan.message and "old-secret" not in plan.message


def test_a_new_password_under_the_same_name_is_refused_and_the_old_one_stays_in_use() -> None:
    plan = plan_admin(AdminFacts(SAME_NAME_NEW_PASSWORD, OLD), now=1.0)
    assert plan.phase is AdminPhase.REFUSED
    assert (plan.sign_as, plan.config, plan.assert_admin) == (OLD, OLD, None)
    assert plan.refusal is not None
    assert plan.refusal.startswith("spec.auth.adminSecret: the password of admin 'admin' changed; rule: ")
    assert "fix: put a new username" in plan.refusal
    assert "changed'" not in plan.refusal and "old-secret" not in plan.refusal


def test_a_return_to_a_retiring_name_is_refused() -> None:
    plan = plan_admin(AdminFacts(AdminCredential("admin-0", "x"), OLD, RETIRING), now=1.0)
    assert plan.phase is AdminPhase.REFUSED and plan.sign_as == OLD
    assert plan.refusal is not None and "'admin-0' is a retiring admin" in plan.refusal
    assert plan.keep == ("admin-0",)  # still kept: processes may sign as it


def test_settle_retiring_drops_only_what_every_replica_confirmed() -> None:
    record = (RetiringAdmin("a", 1.0), RetiringAdmin("b", 2.0))
    assert settle_retiring(record, ["a"]) == (RetiringAdmin("b", 2.0),)
    assert settle_retiring(record, []) == record
