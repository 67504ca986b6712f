"""User resources on the local platform: their passwords, the users each BrokerGroup holds, and the removals still
owed to its replicas.

Contract:

* `with_generated_passwords(resources, given, stored)`: the Secrets to store in secrets.json: those given with the
  manifests (`auth.select_secrets`), plus, for every User without spec.passwordSecret, its Secret
  `User.password_ref.name` (keys username and password). A password stored there before is kept (never made
  again: the clients hold it); otherwise one is made with `secrets.token_urlsafe(24)`. A Secret of that name given
  in the manifests is used as given (as an existing Secret is on Kubernetes). Also returns the Users whose password
  was made now. A User's generated Secret goes when the User leaves the manifests (on Kubernetes it is owned by
  the User and garbage-collected with it).
* `generated_password_lines(users, layout)`: what `local up` (every such User) and `local apply` (those made now)
  print so that the user can read a generated password: the Secret's name, the file and a command printing it.
  The password itself is never printed, nor logged.
* `users_on_group(bg, users, secrets, admin)`: the User resources placed on one BrokerGroup (spec.brokerGroups or
  spec.clusterName, same namespace), as `core.auth.users_for_group` decides (the admin and the group's own
  spec.auth.users win a name): the users to assert, each held user's deletion policy, and one line per refusal.
* `UsersRecord` is `users.json` in the state directory: per group, the users last held (name → deletionPolicy as
  last applied) and the names still to delete from some replica. `next_users_record(old, held, protected)` is the
  record after an apply (or a supervisor start): a held user with deletionPolicy Delete that is held no more is
  pending removal, one with Keep is forgotten; a name held (or protected: the group's admin and inline users)
  again is no longer pending; a group gone (or with auth off) drops its record. `removal_confirmed(record, group,
  removing, left)` drops the names every replica has confirmed without. Read and written atomically
  (`read_users_record`, `write_users_record`): the supervisor resumes a removal after a restart.
* `describe_user_changes(old, new)`: one line per User added, changed or removed, for `local apply`'s summary.

Everything but the two file functions is pure.
"""

from __future__ import annotations

import json
import secrets
import shlex
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocketmq_operator.api.models import BrokerGroup, User, UserDeletionPolicy
from rocketmq_operator.core.auth import AclEntry, DeclaredUser, WantedUser, users_for_group
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.state import write_json_atomic

GENERATED_PASSWORD_BYTES = 24  # 32 URL-safe characters, as on Kubernetes


def _token() -> str:
    return secrets.token_urlsafe(GENERATED_PASSWORD_BYTES)


def _users(resources: Sequence[Any]) -> list[User]:
    return [r for r in resources if isinstance(r, User)]


def with_generated_passwords(
    resources: Sequence[Any],
    given: Mapping[str, Mapping[str, str]],
    stored: Mapping[str, Mapping[str, str]],
    *,
    token: Callable[[], str] = _token,
) -> tuple[dict[str, dict[str, str]], list[User]]:
    """(every Secret to store, the Users whose password was made now)."""
    out = {name: dict(data) for name, data in given.items()}
    made: list[User] = []
    for user in _users(resources):
        name = user.password_ref.name
        if user.spec.password_secret is not None or name in given:
            continue
        password = (stored.get(name) or {}).get("password")
        if not password:
            password = token()
            made.append(user)
        out[name] = {"username": user.user_name, "password": password}
    return out, made


def generated_password_lines(users: Sequence[User], layout: StateLayout) -> list[str]:
    """Where each generated password is, and a command that prints it (never the password)."""
    lines: list[str] = []
    for user in users:
        if user.spec.password_secret is not None:
            continue
        secret = user.password_ref.name
        command = (
            "python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]][\"password\"])' "
            f"{shlex.quote(str(layout.secrets))} {shlex.quote(secret)}"
        )
        lines.append(
            f"User/{user.metadata.name}: user '{user.user_name}', password generated into Secret '{secret}' "
            f"(keys username, password) in {layout.secrets} (mode 0600); print it: {command}"
        )
    return lines


@dataclass
class GroupUsers:
    """What one BrokerGroup holds of the User resources."""

    wanted: list[WantedUser] = field(default_factory=list)  # asserted on every replica
    policies: dict[str, str] = field(default_factory=dict)  # user name -> deletionPolicy, of every held User
    refusals: list[str] = field(default_factory=list)


def users_on_group(
    bg: BrokerGroup,
    users: Sequence[User],
    secrets: Mapping[str, Mapping[str, str]],
    admin: str | Collection[str] | None,
) -> GroupUsers:
    group = bg.metadata.name
    declared: list[DeclaredUser] = []
    for user in users:
        if not user.is_placed_on(bg):
            continue
        ref = user.password_ref
        password = (secrets.get(ref.name) or {}).get(ref.key)
        entries = tuple(AclEntry.of(a.resource, a.actions, a.decision, a.source_ips) for a in user.spec.acls)
        wanted = WantedUser(user.user_name, password, user.spec.type, entries) if password else None
        # No creation time locally: the manifests name each user once per group (validation), so the order
        # only matters against the admin and inline names, which win anyway.
        declared.append(DeclaredUser(user.metadata.name, user.user_name, "", wanted))
    held, refused = users_for_group(group, [u.name for u in bg.spec.auth.users], declared, admin)
    out = GroupUsers(refusals=[f"User/{name}: {line}" for name, line in sorted(refused.items())])
    by_resource = {u.metadata.name: u for u in users}
    for d in held:
        out.policies[d.user_name] = by_resource[d.resource].spec.deletion_policy
        if d.wanted is not None:
            out.wanted.append(d.wanted)
        else:  # select_secrets checks the Secrets given; a hand-edited secrets.json can still lack one
            ref = by_resource[d.resource].password_ref
            out.refusals.append(
                f"User/{d.resource}: Secret {ref.name!r} has no key {ref.key!r} in secrets.json; rule: the password "
                "is read from it; fix: `local apply -f` the manifests with that Secret"
            )
    return out


@dataclass(frozen=True)
class UsersRecord:
    held: dict[str, dict[str, str]] = field(default_factory=dict)  # group -> user name -> deletionPolicy
    removing: dict[str, list[str]] = field(default_factory=dict)  # group -> user names some replica may hold

    def to_json(self) -> dict[str, Any]:
        return {"held": self.held, "removing": self.removing}

    @classmethod
    def from_json(cls, doc: Any) -> UsersRecord:
        if not isinstance(doc, dict):
            return cls()
        held: dict[str, Any] = doc.get("held") or {}
        removing: dict[str, Any] = doc.get("removing") or {}
        if not isinstance(held, dict) or not isinstance(removing, dict):
            return cls()
        return cls(
            {str(g): {str(n): str(p) for n, p in u.items()} for g, u in held.items() if isinstance(u, dict)},
            {str(g): sorted(str(n) for n in names) for g, names in removing.items() if isinstance(names, list)},
        )


def next_users_record(
    old: UsersRecord, held: Mapping[str, Mapping[str, str]], protected: Mapping[str, Collection[str]]
) -> UsersRecord:
    """``held``: every BrokerGroup with auth on → the users it holds now (name → deletionPolicy); ``protected``:
    per group the names the platform must never delete for a User (its admin, its spec.auth.users)."""
    removing: dict[str, list[str]] = {}
    for group, names in held.items():
        pending = set(old.removing.get(group, ()))
        pending |= {
            name
            for name, policy in old.held.get(group, {}).items()
            if name not in names and policy == UserDeletionPolicy.DELETE.value
        }
        pending -= set(names) | set(protected.get(group, ()))
        if pending:
            removing[group] = sorted(pending)
    return UsersRecord({g: dict(sorted(n.items())) for g, n in sorted(held.items()) if n}, removing)


def removal_confirmed(
    record: UsersRecord, group: str, removing: Sequence[str], left: Mapping[str, Sequence[str]]
) -> UsersRecord:
    """The record once ``assert_users(..., removing=removing)`` reported ``left`` (user → replicas not confirmed)."""
    still = [name for name in record.removing.get(group, []) if name not in removing or left.get(name)]
    others = {g: names for g, names in record.removing.items() if g != group}
    return UsersRecord(record.held, {**others, **({group: still} if still else {})})


def read_users_record(layout: StateLayout) -> UsersRecord:
    try:
        return UsersRecord.from_json(json.loads(layout.users.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return UsersRecord()


def write_users_record(layout: StateLayout, record: UsersRecord) -> None:
    if record == UsersRecord() and not layout.users.exists():
        return
    write_json_atomic(layout.users, record.to_json())


def describe_user_changes(old: Sequence[Any], new: Sequence[Any]) -> list[str]:
    """`local apply`'s lines for the User resources: added, changed (a new rule or placement is asserted on the next
    pass, no restart), removed (per its deletionPolicy as last applied)."""
    before = {u.metadata.name: u for u in _users(old)}
    after = {u.metadata.name: u for u in _users(new)}
    lines: list[str] = []
    for name in sorted(set(before) | set(after)):
        was, now = before.get(name), after.get(name)
        if was is None:
            lines.append(f"User/{name}: added (created on every replica of its groups, no restart)")
        elif now is None:
            if was.spec.deletion_policy == UserDeletionPolicy.DELETE.value:
                lines.append(f"User/{name}: removed (deletionPolicy Delete: deleted from every replica)")
            else:
                lines.append(f"User/{name}: removed (deletionPolicy Keep: it stays on the brokers)")
        elif was.spec != now.spec:
            lines.append(f"User/{name}: changed (asserted on every replica, no restart)")
    return lines
