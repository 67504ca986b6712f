"""ACL 2.0 users and their ACLs: what one broker must be told, decided from plain data.

Contract: `plan_auth(wanted, observed)` takes the users a BrokerGroup declares (names, passwords, types, ACL
entries) and what one broker holds now (GET_USER and GET_ACL answers, None where it has none), and returns the
actions that make the broker hold exactly what is declared for those users: create or update a user, upsert ACL
entries (RocketMQ's UPDATE_ACL merges entries by resource), delete an entry whose resource is no longer declared.
It never does I/O and never deletes a user or an entry of a user the group does not declare (an administrator's
own users stay). `plan_removal(name, observed)` deletes a user the operator put there (a User resource deleted,
or no longer placed on the group) and its ACL (RocketMQ's DELETE_USER removes both).

Every broker keeps its users in its own store (LocalAuthenticationMetadataProvider: RocksDB under the store
root), nothing replicates them, so the executor runs this against every replica: a slave that becomes master then
already has them.

`users_for_group(group, inline, declared, admin)` decides which User resources a group holds: the group's admin,
a name of its own spec.auth.users, or one given by an older User resource wins; the others are refused with one
line each.

Passwords pass through here as plain strings (they are compared with what the broker returns); nothing in this
module formats them into a message.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

CUSTOM_POLICY = "Custom"


@dataclass(frozen=True, slots=True)
class AclEntry:
    """One entry of a user's Custom policy: ``resource`` as RocketMQ writes it (``Topic:orders``, ``Group:g*``,
    ``*``), its actions (sorted, RocketMQ's names), decision and source IPs (sorted)."""

    resource: str
    actions: tuple[str, ...]
    decision: str = "Allow"
    source_ips: tuple[str, ...] = ()

    @classmethod
    def of(
        cls, resource: str, actions: Sequence[str], decision: str = "Allow", source_ips: Sequence[str] = ()
    ) -> AclEntry:
        return cls(resource, tuple(sorted(set(actions))), decision, tuple(sorted(set(source_ips))))

    def to_json(self) -> dict[str, object]:
        return {
            "resource": self.resource,
            "actions": list(self.actions),
            "sourceIps": list(self.source_ips),
            "decision": self.decision,
        }


@dataclass(frozen=True, slots=True)
class WantedUser:
    name: str
    password: str = field(repr=False)
    user_type: str = "Normal"
    entries: tuple[AclEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class ObservedUser:
    """What GET_USER and GET_ACL answered for one name on one broker."""

    name: str
    password: str | None = field(default=None, repr=False)  # None: the broker has no such user
    user_type: str | None = None
    status: str | None = None
    entries: tuple[AclEntry, ...] = ()  # the Custom policy's entries; empty: no ACL


class AuthActionKind(StrEnum):
    CREATE_USER = "create-user"
    UPDATE_USER = "update-user"
    UPSERT_ACL = "upsert-acl"  # CREATE_ACL when the broker has none for the user, else UPDATE_ACL (merge)
    DELETE_ACL_ENTRY = "delete-acl-entry"
    DELETE_USER = "delete-user"  # the user and its ACL


@dataclass(frozen=True, slots=True)
class AuthAction:
    kind: AuthActionKind
    user: str
    entries: tuple[AclEntry, ...] = ()  # UPSERT_ACL: the entries to write; DELETE_ACL_ENTRY: the one to remove
    create: bool = False  # UPSERT_ACL: the broker holds no ACL for the user yet

    def describe(self) -> str:
        if self.kind is AuthActionKind.UPSERT_ACL:
            return f"{self.kind} {self.user}: {', '.join(e.resource for e in self.entries)}"
        if self.kind is AuthActionKind.DELETE_ACL_ENTRY:
            return f"{self.kind} {self.user}: {self.entries[0].resource}"
        return f"{self.kind} {self.user}"


def subject(user: str) -> str:
    """RocketMQ's subject key of a user."""
    return f"User:{user}"


def plan_user(wanted: WantedUser, observed: ObservedUser | None) -> list[AuthAction]:
    """The actions that make one broker hold ``wanted`` (its user, then its ACL entries)."""
    actions: list[AuthAction] = []
    if observed is None or observed.password is None:
        actions.append(AuthAction(AuthActionKind.CREATE_USER, wanted.name))
        have: dict[str, AclEntry] = {}
    else:
        if (
            observed.password != wanted.password
            or (observed.user_type or "Normal") != wanted.user_type
            or (observed.status or "enable").lower() != "enable"
        ):
            actions.append(AuthAction(AuthActionKind.UPDATE_USER, wanted.name))
        have = {e.resource: e for e in observed.entries}
    want = {e.resource: e for e in wanted.entries}
    changed = tuple(e for r, e in sorted(want.items()) if have.get(r) != e)
    if changed:
        actions.append(AuthAction(AuthActionKind.UPSERT_ACL, wanted.name, changed, create=not have))
    for resource in sorted(set(have) - set(want)):
        actions.append(AuthAction(AuthActionKind.DELETE_ACL_ENTRY, wanted.name, (have[resource],)))
    return actions


def plan_auth(wanted: Sequence[WantedUser], observed: Mapping[str, ObservedUser | None]) -> list[AuthAction]:
    """Every action one broker needs, users in name order (each user's creation before its ACL)."""
    return [a for user in sorted(wanted, key=lambda u: u.name) for a in plan_user(user, observed.get(user.name))]


def plan_removal(name: str, observed: ObservedUser | None) -> list[AuthAction]:
    """Delete ``name`` from one broker if it holds it; nothing when it does not (the removal is confirmed)."""
    if observed is None or observed.password is None:
        return []
    return [AuthAction(AuthActionKind.DELETE_USER, name)]


@dataclass(frozen=True, slots=True)
class DeclaredUser:
    """A User resource placed on a group: its resource name, when it was created (who wins a name), and the
    user as wanted (None while its password cannot be read)."""

    resource: str
    user_name: str
    created: str
    wanted: WantedUser | None


def users_for_group(
    group: str, inline: Sequence[str], declared: Sequence[DeclaredUser], admin: str | Collection[str] | None = None
) -> tuple[list[DeclaredUser], dict[str, str]]:
    """(the User resources the group holds, resource -> why not for the others). The group's admin and the names
    of its own spec.auth.users win over a User resource (a User named as the admin would change the password the
    brokers and the operator sign with); among User resources, the oldest (then the first by name)."""
    # During an admin rotation both the admin signed as and the one coming are the group's (core.admin_rotation).
    admins = {admin} if isinstance(admin, str) else set(admin or ())
    taken = set(inline)
    held: list[DeclaredUser] = []
    refused: dict[str, str] = {}
    owner: dict[str, str] = {}
    for user in sorted(declared, key=lambda u: (u.created, u.resource)):
        if user.user_name in admins:
            refused[user.resource] = (
                f"'{user.user_name}' is the admin of BrokerGroup '{group}' (spec.auth.adminSecret); rule: the admin "
                "is the group's own; fix: set another spec.userName"
            )
        elif user.user_name in taken and user.user_name not in owner:
            refused[user.resource] = (
                f"BrokerGroup '{group}' declares user '{user.user_name}' in spec.auth.users; rule: a user name has "
                "one source per group; fix: remove it there, or set another spec.userName"
            )
        elif user.user_name in owner:
            refused[user.resource] = (
                f"User/{owner[user.user_name]} gives BrokerGroup '{group}' user '{user.user_name}' already; rule: a "
                "user name has one source per group; fix: set another spec.userName"
            )
        else:
            owner[user.user_name] = user.resource
            taken.add(user.user_name)
            held.append(user)
    return held, refused
