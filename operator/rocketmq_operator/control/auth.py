"""Assert a group's declared ACL 2.0 users and ACLs on every replica: the executor both platforms call.

Contract: `needed_secrets(bg)` names every Secret key a BrokerGroup's spec.auth needs (field path, Secret, keys);
`admin_credentials(bg, secrets)` and `wanted_users(bg, secrets)` read them from Secret data (name → key → value),
however the platform got it (the manifests locally, the API on Kubernetes): a missing one is left out.

`assert_users(client, state, wanted, memory)` reads, on every reachable replica, each declared user
(AUTH_GET_USER) and its ACL (AUTH_GET_ACL), asks `core.auth.plan_auth` what to change, and carries it out
(AUTH_CREATE_USER / AUTH_UPDATE_USER, AUTH_CREATE_ACL / AUTH_UPDATE_ACL, AUTH_DELETE_ACL). Each broker keeps its
own users (nothing replicates them), so a slave is asserted like the master: when it is elected it already
authenticates the same clients. The client must sign with the group's admin (a Super user).

`assert_users(..., removing=names)` also deletes those users (a User resource deleted, or placed elsewhere now)
from every replica that holds one, and reports per name the replicas not yet confirmed without it (unreachable
or failed): the caller keeps asking until none is left, so a slave that was down cannot later be elected
holding a deleted user.

`AuthMemory` keeps, per replica address, when it was last asserted in full and what the broker answered as
(its master/slave role and reachability): a replica is read again when it comes back, changes role, the wanted
users change, or `REASSERT_EVERY_S` has passed (a user deleted by hand comes back). Never raises for a broker
that does not answer or refuses: the error is in the report and the next pass tries again. No password is
ever written into a report line.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocketmq_operator.api.models import BrokerGroup, Proxy
from rocketmq_operator.core.auth import (
    CUSTOM_POLICY,
    AclEntry,
    AuthAction,
    AuthActionKind,
    ObservedUser,
    WantedUser,
    plan_auth,
    plan_removal,
    subject,
)
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.remoting.auth_admin import AuthAdmin

ADMIN_TIMEOUT_S = 3.0
REASSERT_EVERY_S = 30.0


@dataclass
class AuthMemory:
    asserted_at: dict[str, float] = field(default_factory=dict)  # replica address -> last full assertion
    seen_as: dict[str, tuple[bool, bool | None]] = field(default_factory=dict)  # address -> (reachable, master)
    wanted_digest: str = ""


@dataclass
class AuthReport:
    group: str
    asserted: list[str] = field(default_factory=list)  # replicas that hold every declared user and ACL now
    done: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    removal_left: dict[str, list[str]] = field(default_factory=dict)  # user -> replicas that may still hold it


ADMIN_KEYS = ("username", "password")
"""The keys of spec.auth.adminSecret."""


def needed_secrets(resource: BrokerGroup | Proxy) -> list[tuple[str, str, tuple[str, ...]]]:
    """(field path, Secret name, keys) that a BrokerGroup's or a Proxy's spec.auth needs (a Proxy: its admin)."""
    auth = resource.spec.auth
    if not auth.enabled:
        return []
    out: list[tuple[str, str, tuple[str, ...]]] = []
    if auth.admin_secret is not None:
        out.append(("spec.auth.adminSecret", auth.admin_secret, ADMIN_KEYS))
    if not isinstance(resource, BrokerGroup):
        return out
    for i, user in enumerate(resource.spec.auth.users):
        out.append((f"spec.auth.users[{i}].passwordSecret", user.password_secret.name, (user.password_secret.key,)))
    return out


def admin_credentials(
    resource: BrokerGroup | Proxy, secrets: Mapping[str, Mapping[str, str]]
) -> SessionCredentials | None:
    data = secrets.get(resource.spec.auth.admin_secret or "")
    if not data or not data.get("username") or not data.get("password"):
        return None
    return SessionCredentials(data["username"], data["password"])


def wanted_users(bg: BrokerGroup, secrets: Mapping[str, Mapping[str, str]]) -> list[WantedUser]:
    out: list[WantedUser] = []
    for user in bg.spec.auth.users:
        password = secrets.get(user.password_secret.name, {}).get(user.password_secret.key)
        if not password:
            continue
        entries = tuple(AclEntry.of(a.resource, a.actions, a.decision, a.source_ips) for a in user.acls)
        out.append(WantedUser(user.name, password, user.type, entries))
    return out


def wanted_digest(wanted: Sequence[WantedUser]) -> str:
    """Changes whenever a declared user, its password or an ACL entry changes (the password only hashed)."""
    doc = [
        [u.name, hashlib.sha256(u.password.encode()).hexdigest(), u.user_type, [e.to_json() for e in u.entries]]
        for u in sorted(wanted, key=lambda u: u.name)
    ]
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def observed_user(name: str, user: dict[str, Any] | None, acl: dict[str, Any] | None) -> ObservedUser | None:
    """A broker's GET_USER and GET_ACL answers for one name (None: no such user)."""
    if user is None:
        return None
    entries: list[AclEntry] = []
    for policy in (acl or {}).get("policies") or []:
        if str(policy.get("policyType") or CUSTOM_POLICY).lower() != CUSTOM_POLICY.lower():
            continue
        for entry in policy.get("entries") or []:
            entries.append(
                AclEntry.of(
                    str(entry.get("resource")),
                    [str(a) for a in entry.get("actions") or []],
                    str(entry.get("decision") or "Allow"),
                    [str(ip) for ip in entry.get("sourceIps") or []],
                )
            )
    return ObservedUser(
        name,
        user.get("password"),
        user.get("userType"),
        user.get("userStatus"),
        tuple(entries),
    )


def user_body(user: WantedUser) -> dict[str, Any]:
    return {"username": user.name, "password": user.password, "userType": user.user_type, "userStatus": "enable"}


def acl_body(user: str, entries: Sequence[AclEntry]) -> dict[str, Any]:
    return {
        "subject": subject(user),
        "policies": [{"policyType": CUSTOM_POLICY, "entries": [e.to_json() for e in entries]}],
    }


async def _apply(admin: AuthAdmin, addr: str, action: AuthAction, wanted: dict[str, WantedUser]) -> None:
    user = wanted[action.user]
    if action.kind is AuthActionKind.CREATE_USER:
        await admin.create_user(addr, user_body(user), timeout=ADMIN_TIMEOUT_S)
    elif action.kind is AuthActionKind.UPDATE_USER:
        await admin.update_user(addr, user_body(user), timeout=ADMIN_TIMEOUT_S)
    elif action.kind is AuthActionKind.UPSERT_ACL:
        body = acl_body(user.name, action.entries)
        if action.create:
            await admin.create_acl(addr, body, timeout=ADMIN_TIMEOUT_S)
        else:
            await admin.update_acl(addr, body, timeout=ADMIN_TIMEOUT_S)
    else:
        await admin.delete_acl_entry(addr, subject(user.name), action.entries[0].resource, timeout=ADMIN_TIMEOUT_S)


def _due(memory: AuthMemory, replica: ReplicaObservation, now: float) -> bool:
    seen = (replica.reachable, replica.is_master)
    changed = memory.seen_as.get(replica.address) != seen
    memory.seen_as[replica.address] = seen
    last = memory.asserted_at.get(replica.address)
    return changed or last is None or now - last >= REASSERT_EVERY_S


async def assert_replica(client: RemotingClient, addr: str, wanted: Sequence[WantedUser]) -> list[str]:
    """Make one broker hold every wanted user and ACL entry; the lines say what was changed."""
    admin = AuthAdmin(client)
    observed: dict[str, ObservedUser | None] = {}
    for user in wanted:
        info = await admin.get_user(addr, user.name, timeout=ADMIN_TIMEOUT_S)
        acl = await admin.get_acl(addr, subject(user.name), timeout=ADMIN_TIMEOUT_S) if info is not None else None
        observed[user.name] = observed_user(user.name, info, acl)
    by_name = {u.name: u for u in wanted}
    done: list[str] = []
    for action in plan_auth(wanted, observed):
        await _apply(admin, addr, action, by_name)
        done.append(action.describe())
    return done


async def remove_from_replica(client: RemotingClient, addr: str, names: Sequence[str]) -> list[str]:
    """Delete each of ``names`` that one broker holds; the lines say what was deleted."""
    admin = AuthAdmin(client)
    done: list[str] = []
    for name in names:
        info = await admin.get_user(addr, name, timeout=ADMIN_TIMEOUT_S)
        for action in plan_removal(name, observed_user(name, info, None)):
            await admin.delete_user(addr, name, timeout=ADMIN_TIMEOUT_S)
            done.append(action.describe())
    return done


async def assert_users(
    client: RemotingClient,
    state: GroupState,
    wanted: Sequence[WantedUser],
    memory: AuthMemory,
    *,
    removing: Sequence[str] = (),
    now: float | None = None,
) -> AuthReport:
    report = AuthReport(state.group)
    now = time.time() if now is None else now
    digest = wanted_digest(wanted)
    if digest != memory.wanted_digest:
        memory.asserted_at.clear()
        memory.wanted_digest = digest
    removing = sorted(set(removing) - {u.name for u in wanted})
    for replica in state.replicas if removing else ():
        try:
            if not replica.reachable:
                raise OSError("not reachable")
            lines = await remove_from_replica(client, replica.address, removing)
        except (RemotingException, OSError, ValueError) as exc:
            for name in removing:
                report.removal_left.setdefault(name, []).append(replica.name)
            report.errors.append(f"{replica.name}: removing {', '.join(removing)}: {exc}")
            continue
        report.done.extend(f"{replica.name}: {line}" for line in lines)
    if not wanted:
        return report
    for replica in state.replicas:
        if not _due(memory, replica, now):
            report.asserted.append(replica.name)
            continue
        if not replica.reachable:
            memory.asserted_at.pop(replica.address, None)
            continue
        try:
            lines = await assert_replica(client, replica.address, wanted)
        except (RemotingException, OSError, ValueError) as exc:
            memory.asserted_at.pop(replica.address, None)
            memory.seen_as.pop(replica.address, None)  # read again on the next pass
            report.errors.append(f"{replica.name}: {exc}")
            continue
        memory.asserted_at[replica.address] = now
        report.asserted.append(replica.name)
        report.done.extend(f"{replica.name}: {line}" for line in lines)
    return report
