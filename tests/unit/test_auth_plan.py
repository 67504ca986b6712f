"""core.auth: what one broker is told about the declared users and their ACL entries (table)."""

from __future__ import annotations

import pytest

from rocketmq_operator.core.auth import AclEntry, AuthActionKind, ObservedUser, WantedUser, plan_auth

PUB = AclEntry.of("Topic:orders", ["Pub"])
SUB = AclEntry.of("Group:billing", ["Sub"])
APP = WantedUser("app", "s3cret", "Normal", (PUB, SUB))

CASES = [
    ("absent: created, then its ACL created", None,
     [("create-user", ()), ("upsert-acl", ("Group:billing", "Topic:orders"))]),
    ("in step: nothing", ObservedUser("app", "s3cret", "Normal", "enable", (PUB, SUB)), []),
    ("password changed", ObservedUser("app", "old", "Normal", "enable", (PUB, SUB)), [("update-user", ())]),
    ("type changed", ObservedUser("app", "s3cret", "Super", "enable", (PUB, SUB)), [("update-user", ())]),
    ("disabled by someone: enabled again", ObservedUser("app", "s3cret", "Normal", "disable", (PUB, SUB)),
     [("update-user", ())]),
    ("user without an ACL", ObservedUser("app", "s3cret", "Normal", "enable", ()),
     [("upsert-acl", ("Group:billing", "Topic:orders"))]),
    ("an entry's actions differ: that entry only", ObservedUser(
        "app", "s3cret", "Normal", "enable", (AclEntry.of("Topic:orders", ["Pub", "Sub"]), SUB)),
     [("upsert-acl", ("Topic:orders",))]),
    ("an entry no longer declared: deleted", ObservedUser(
        "app", "s3cret", "Normal", "enable", (PUB, SUB, AclEntry.of("Topic:*", ["Sub"]))),
     [("delete-acl-entry", ("Topic:*",))]),
]  # fmt: skip


@pytest.mark.parametrize(("observed", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_plan_user(observed: ObservedUser | None, expected: list[tuple[str, tuple[str, ...]]]) -> None:
    actions = plan_auth([APP], {"app": observed})
    assert [(a.kind.value, tuple(e.resource for e in a.entries)) for a in actions] == expected


def test_acl_create_or_update_follows_what_the_broker_has() -> None:
    (create,) = [a for a in plan_auth([APP], {}) if a.kind is AuthActionKind.UPSERT_ACL]
    assert create.create
    observed = ObservedUser("app", "s3cret", "Normal", "enable", (SUB,))
    (update,) = plan_auth([APP], {"app": observed})
    assert update.kind is AuthActionKind.UPSERT_ACL and not update.create


def test_users_not_declared_are_left_alone_and_order_is_by_name() -> None:
    other = WantedUser("zed", "p")
    actions = plan_auth([other, APP], {"admin": ObservedUser("admin", "x", "Super")})
    assert [a.user for a in actions] == ["app", "app", "zed"]


def test_entry_order_and_duplicates_do_not_matter() -> None:
    assert AclEntry.of("Topic:a", ["Sub", "Pub", "Pub"]) == AclEntry.of("Topic:a", ["Pub", "Sub"])


def test_no_password_in_repr() -> None:
    assert "s3cret" not in repr(APP) and "s3cret" not in repr(ObservedUser("app", "s3cret"))
