"""User resources on Kubernetes: their generated Secrets, the users each BrokerGroup's pass asserts or removes,
and their status.

Contract:

* `ensure_credentials(kube, body)` (the User's create/resume handler): a User without spec.passwordSecret gets the
  Secret `<name>-credentials` (keys username and password, a random password made once), owned by the User so
  that it goes with it; an existing one is never rewritten (its password is the clients'). Returns the Secret's
  name.
* `placed_users(kube, bg, namespace, admin_name)` lists the namespace's User resources and returns, for one
  BrokerGroup: the users it must hold (`core.auth.users_for_group`: its own spec.auth.users and admin win a
  name), the names it must remove from every replica (a User with deletionPolicy Delete that is being deleted or
  no longer placed here, while its status says a replica may still hold it), and a line per User it cannot
  hold yet (its Secret missing, a name taken, the group without auth).
* `write_user_statuses(kube, bg, placed, report, replicas)` merges this group's placement into each User's status
  (every group a User is on writes its own, as Topics do) and its Ready condition. A removal's placement is
  dropped once no replica may hold the user.
* The delete handler (handlers.py) keeps a Delete-policy User's finalizer until no placement on an existing
  BrokerGroup reports the user present.

A password is read from its Secret and handed to `control.auth`; it is never logged, written to status or put
in an Event.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocketmq_operator.api.models import USER_CREDENTIALS_SUFFIX, BrokerGroup, User, UserDeletionPolicy
from rocketmq_operator.control.auth import AuthReport, assert_users
from rocketmq_operator.control.clock import now_iso
from rocketmq_operator.core.auth import AclEntry, DeclaredUser, WantedUser, users_for_group
from rocketmq_operator.core.conditions import condition
from rocketmq_operator.core.observation import GroupState
from rocketmq_operator.platforms.kubernetes.auth import GroupAuth, secret_data
from rocketmq_operator.platforms.kubernetes.group_memory import GroupMemory
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError
from rocketmq_operator.platforms.kubernetes.resources import validated
from rocketmq_operator.platforms.kubernetes.status_writer import StatusChange, StatusChangeFrom, write_status
from rocketmq_operator.remoting import RemotingClient

JSON = dict[str, Any]
GENERATED_PASSWORD_BYTES = 24  # 32 URL-safe characters


def credentials_secret(body: JSON, user: User, password: str) -> JSON:
    """The generated Secret of a User: its user name and password, owned by the User (garbage-collected with it)."""
    meta = body["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": meta["name"] + USER_CREDENTIALS_SUFFIX,
            "namespace": meta["namespace"],
            "labels": {"app.kubernetes.io/managed-by": "rocketmq-operator", "rocketmq-operator.dev/user": meta["name"]},
            "ownerReferences": [
                {
                    "apiVersion": body["apiVersion"],
                    "kind": "User",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "stringData": {"username": user.user_name, "password": password},
    }


async def ensure_credentials(kube: KubeClient, body: JSON) -> str | None:
    """The Secret that holds the User's password: spec.passwordSecret's, or the generated one (made if absent).
    None when the body is no valid User."""
    user = validated(body).resource
    if not isinstance(user, User):
        return None
    ref = user.password_ref
    if user.spec.password_secret is None and await kube.get("Secret", body["metadata"]["namespace"], ref.name) is None:
        # create, not apply: a concurrent pass that made it first keeps its password (create returns None then).
        await kube.create(credentials_secret(body, user, secrets.token_urlsafe(GENERATED_PASSWORD_BYTES)))
    return ref.name


@dataclass
class PlacedUsers:
    """What one BrokerGroup's pass does with the namespace's User resources."""

    users: list[tuple[JSON, User]] = field(default_factory=list)  # every valid User of the namespace
    held: list[WantedUser] = field(default_factory=list)  # asserted on every replica
    held_by: dict[str, str] = field(default_factory=dict)  # user name -> User resource holding it here
    removing: dict[str, str] = field(default_factory=dict)  # user name -> User resource it is removed for
    problems: dict[str, str] = field(default_factory=dict)  # User resource -> why this group does not hold it


def _deleting(item: JSON) -> bool:
    return bool(item["metadata"].get("deletionTimestamp"))


def _placement(item: JSON, group: str) -> JSON | None:
    return next((p for p in (item.get("status") or {}).get("placements") or [] if p.get("brokerGroup") == group), None)


async def placed_users(
    kube: KubeClient, bg: BrokerGroup, namespace: str, admin_name: str | Collection[str] | None
) -> PlacedUsers:
    out = PlacedUsers()
    group = bg.metadata.name
    try:
        items = await kube.list("User", namespace)
    except KubeError as exc:
        if exc.status != 404:
            raise
        # The User CRD is not installed (Helm installs crds/ only on a first install): no User resources.
        return out
    for item in items:
        user = validated(item).resource
        if isinstance(user, User):
            out.users.append((item, user))
    declared: list[DeclaredUser] = []
    for item, user in out.users:
        name = item["metadata"]["name"]
        placed = user.is_placed_on(bg)
        held_before = bool((_placement(item, group) or {}).get("exists"))
        if not placed or _deleting(item):
            if held_before and user.spec.deletion_policy == UserDeletionPolicy.DELETE.value:
                out.removing[user.user_name] = name
            continue
        if not bg.spec.auth.enabled:
            out.problems[name] = (
                f"BrokerGroup '{group}' has spec.auth.enabled false; rule: users live on groups with ACL 2.0 on; "
                f"fix: turn spec.auth on for {group}, or place the User elsewhere"
            )
            continue
        ref = user.password_ref
        try:
            secret = await kube.get("Secret", namespace, ref.name)
        except KubeError as exc:
            out.problems[name] = f"Secret {ref.name!r} cannot be read ({exc}); fix: grant get on secrets here"
            continue
        password = secret_data(secret).get(ref.key) if secret is not None else None
        if not password:
            made = "made by the operator at creation" if user.spec.password_secret is None else "spec.passwordSecret"
            out.problems[name] = (
                f"Secret {ref.name!r} ({made}) has no key {ref.key!r} yet; rule: the password is read from it; "
                f"fix: kubectl create secret generic {ref.name} -n {namespace} --from-literal={ref.key}=…"
            )
            continue
        entries = tuple(AclEntry.of(a.resource, a.actions, a.decision, a.source_ips) for a in user.spec.acls)
        wanted = WantedUser(user.user_name, password, user.spec.type, entries)
        created = str(item["metadata"].get("creationTimestamp") or "")
        declared.append(DeclaredUser(name, user.user_name, created, wanted))
    inline = [u.name for u in bg.spec.auth.users]
    held, refused = users_for_group(group, inline, declared, admin_name)
    out.problems.update(refused)
    for d in held:
        if d.wanted is not None:
            out.held.append(d.wanted)
            out.held_by[d.user_name] = d.resource
    return out


async def write_user_statuses(
    kube: KubeClient, bg: BrokerGroup, placed: PlacedUsers, report: AuthReport | None, replicas: int
) -> None:
    """Each User placed on this group, or being removed from it, gets this group's placement in its status."""
    group = bg.metadata.name
    now = now_iso()
    asserted = len(report.asserted) if report is not None else 0
    for item, user in placed.users:
        name = item["metadata"]["name"]
        mine: JSON | None
        if placed.held_by.get(user.user_name) == name:
            mine = {"brokerGroup": group, "replicas": replicas, "asserted": asserted, "exists": True}
        elif name in placed.problems:
            before = _placement(item, group) or {}
            mine = {"brokerGroup": group, "replicas": replicas, "asserted": 0, "exists": bool(before.get("exists"))}
            mine["message"] = placed.problems[name]
        elif placed.removing.get(user.user_name) == name:
            if report is None:  # not asked: the group's admin cannot be read, so nothing is confirmed
                left, why = ["every replica"], "waiting for the group's admin credentials to remove it"
            else:
                left = report.removal_left.get(user.user_name) or []
                why = f"removing from {', '.join(left)}"
            mine = None
            if left:
                mine = {"brokerGroup": group, "replicas": replicas, "asserted": 0, "exists": True, "message": why}
        elif _placement(item, group) is not None and (not user.is_placed_on(bg) or _deleting(item)):
            mine = None  # Keep policy, or never held: forgotten here
        else:
            continue
        if mine is None and _placement(item, group) is None:
            continue
        await write_status(kube, item, _user_status(user, group, mine, now))


def _merged(status: Mapping[str, Any], group: str, mine: JSON | None) -> list[JSON]:
    others = [p for p in status.get("placements") or [] if p.get("brokerGroup") != group]
    if mine is not None:
        others.append({k: v for k, v in mine.items() if v is not None})
    return sorted(others, key=lambda p: str(p.get("brokerGroup")))


def _user_status(user: User, group: str, mine: JSON | None, now: str) -> StatusChangeFrom:
    def change(status: Mapping[str, Any]) -> StatusChange:
        placements = _merged(status, group, mine)
        full = [p for p in placements if p.get("replicas") and p.get("asserted") == p.get("replicas")]
        problems = [f"{p['brokerGroup']}: {p['message']}" for p in placements if p.get("message")]
        ready = bool(placements) and len(full) == len(placements) and not problems
        previous = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
        reason = "Asserted" if ready else ("Refused" if problems else "Pending")
        message = "; ".join(problems) or (
            "on every replica of " + ", ".join(sorted(str(p["brokerGroup"]) for p in full))
            if ready
            else "not yet on every replica of the groups it is placed on"
        )
        fields: JSON = {
            "userName": user.user_name,
            "secret": user.password_ref.name,
            "placements": placements,
            "brokerGroups": sorted(str(p["brokerGroup"]) for p in full),
            "ready": ready,
        }
        ready_condition = condition("Ready", "True" if ready else "False", reason, message, now, previous=previous)
        return StatusChange(fields=fields, conditions={"Ready": ready_condition})

    return change


def removal_left(status: Mapping[str, Any], existing_groups: Sequence[str]) -> list[str]:
    """The groups (that still exist) on which a deleted User may still be held: its finalizer stays meanwhile."""
    return sorted(
        str(p.get("brokerGroup"))
        for p in status.get("placements") or []
        if p.get("exists") and p.get("brokerGroup") in existing_groups
    )


async def assert_group_users(
    kube: KubeClient,
    client: RemotingClient,
    bg: BrokerGroup,
    namespace: str,
    state: GroupState,
    auth: GroupAuth,
    memory: GroupMemory,
    logger: Any,
) -> None:
    """The group pass's ACL step: its own spec.auth.users and the User resources placed on it asserted on every
    replica (`control.auth.assert_users`, its memory kept in the group's), removed users deleted, and each User's
    status written. Problems are logged when they change, not on every pass."""
    # The admin signed as and, during a rotation, the one coming and the one going: all the group's own.
    signed = auth.admin.access_key if auth.admin is not None else None
    names = {n for n in (signed, *(a.user for a in (auth.declared, auth.configured) if a is not None)) if n}
    placed = await placed_users(kube, bg, namespace, sorted(names))
    problems = [*auth.problems, *(f"User/{name}: {line}" for name, line in sorted(placed.problems.items()))]
    if memory.said_auth_problems != problems:
        memory.said_auth_problems = list(problems)
        for problem in problems:
            logger.warning("auth: %s", problem)
    report: AuthReport | None = None
    if auth.admin is not None and (auth.users or placed.held or placed.removing):
        wanted = [*auth.users, *placed.held]
        report = await assert_users(client, state, wanted, memory.auth, removing=list(placed.removing))
        for line in report.done:
            logger.info("%s: auth: %s", bg.metadata.name, line)
        for line in report.errors:
            logger.warning("%s: auth: %s; retried next pass", bg.metadata.name, line)
    await write_user_statuses(kube, bg, placed, report, len(state.replicas))
