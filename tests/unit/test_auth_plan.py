"""core.auth: what one broker is told about the declared users and their ACL entries (table)."""

from __future__ import annotations

import pytest

from rocketmq_operator.core.auth import (
    AclEntry,
    AuthActionKind,
    DeclaredUser,
    ObservedUser,
    WantedUser,
    plan_auth,
    plan_removal,
    users_for_group,
)

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


# --- User resources: which a group holds, and the removal of one it no longer does ---


def _declared(resource: str, name: str, created: str = "2026-12-03T10:00:00Z") -> DeclaredUser:
    return DeclaredUser(resource, name, created, WantedUser(name, "pw", "Normal", ()))


USER_CASES = [
    ("one User: held", [], None, [_declared("app", "app")], ["app"], {}),
    ("a name the group declares inline: refused", ["app"], None, [_declared("app", "app")], [],
     {"app": "declares user 'app' in spec.auth.users"}),
    ("the admin's name: refused (it would change what the brokers sign with)", [], "app",
     [_declared("app", "app")], [], {"app": "is the admin of BrokerGroup 'broker-a'"}),
    ("two Users, one name: the older holds it", [], None,
     [_declared("new", "app", "2026-12-03T11:00:00Z"), _declared("old", "app", "2026-12-03T09:00:00Z")], ["old"],
     {"new": "User/old gives BrokerGroup 'broker-a' user 'app' already"}),
    ("two Users created at once: the first by name", [], None, [_declared("b", "app"), _declared("a", "app")], ["a"],
     {"b": "User/a gives"}),
    ("different names: both", ["ops"], "admin", [_declared("a", "app"), _declared("b", "reports")], ["a", "b"], {}),
    ("during an admin rotation, the incoming admin's name: refused too", [], ("admin", "admin-2"),
     [_declared("x", "admin-2"), _declared("y", "app")], ["y"], {"x": "is the admin of BrokerGroup 'broker-a'"}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("inline", "admin", "declared", "held", "refused"), [c[1:] for c in USER_CASES], ids=[c[0] for c in USER_CASES]
)
def test_users_for_group(
    inline: list[str],
    admin: str | tuple[str, ...] | None,
    declared: list[DeclaredUser],
    held: list[str],
    refused: dict[str, str],
) -> None:
    got_held, got_refused = users_for_group("broker-a", inline, declared, admin)
    assert [d.resource for d in got_held] == held
    assert sorted(got_refused) == sorted(refused)
    for resource, piece in refused.items():
        assert piece in got_refused[resource] and "fix:" in got_refused[resource], got_refused[resource]


def test_removal_deletes_a_held_user_and_confirms_an_absent_one() -> None:
    held = ObservedUser("app", "pw", "Normal", "enable", (PUB,))
    assert [a.kind for a in plan_removal("app", held)] == [AuthActionKind.DELETE_USER]
    assert plan_removal("app", None) == []
    assert plan_removal("app", ObservedUser("app")) == []  # GET_USER answered nothing: confirmed absent
