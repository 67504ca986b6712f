"""The local platform's ACL 2.0: the Secrets given with the manifests, and the supervisor's call into
`control.auth`.

Contract:

* `select_secrets(resources, secrets)` checks that every Secret and key a BrokerGroup's or Proxy's spec.auth, or a
  User's spec.passwordSecret, names was given (a v1 Secret document in the manifests) and returns those, and only
  those (plus a given Secret named as a User's generated one, `User.password_ref`); a missing one raises
  `AuthSecretError` with one line naming the field, the Secret, the rule and the fix. `store_secrets` writes them,
  with the Users' generated passwords (`users.with_generated_passwords`), to `secrets.json` (mode 0600).
* `state_client(state)`: a client of the cluster that signs as each auth group's admin towards its brokers, for
  every client the platform opens (`local status`, the supervisor, switchover, roll); `credentials_by_addr(state)`:
  each broker address of a group with auth on → its admin credentials,
  for every client the platform opens (`local status`, the supervisor, switchover, roll).
* `run_config_keys(state, replica)`: the secret keys added to a broker's or a proxy's run config when it
  starts (the rendered conf/<replica>.conf, like a ConfigMap, never holds them).
* `AuthPolicy(state, layout)` (made at the supervisor's start and on every `local apply`): per group with auth on,
  its spec.auth.users plus the User resources placed on it (`users.users_on_group`, each refusal logged once at
  warning), and the users.json record brought up to date (`users.next_users_record`: a User with deletionPolicy
  Delete held no more is pending removal). `AuthPolicy.run(client, states)`: `control.auth.assert_users` for every
  group with auth on, with its pending removals, logging what it changed (user names and resources only); a
  removal every replica has confirmed leaves the record (written at once, so a restarted supervisor resumes the
  others).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rocketmq_operator.api.models import BrokerGroup, Proxy, User
from rocketmq_operator.api.validation import SecretDoc
from rocketmq_operator.control.admin_rotation import rotate_admin
from rocketmq_operator.control.auth import AuthMemory, admin_credentials, assert_users, needed_secrets, wanted_users
from rocketmq_operator.core.admin_rotation import AdminCredential, AdminFacts, AdminPhase, RetiringAdmin, plan_admin
from rocketmq_operator.core.auth import WantedUser
from rocketmq_operator.core.observation import GroupState
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import load_resources
from rocketmq_operator.platforms.local.state import LocalState, write_json_atomic
from rocketmq_operator.platforms.local.tls import client_tls
from rocketmq_operator.platforms.local.users import (
    UsersRecord,
    next_users_record,
    read_users_record,
    removal_confirmed,
    users_on_group,
    write_users_record,
)
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.render.config import auth_secret_keys

log = logging.getLogger("rocketmq_operator.local.auth")


class AuthSecretError(ValueError):
    """A Secret that spec.auth or a User names is not among the manifests (one line: field, Secret, rule, fix)."""


def _given(owner: str, path: str, name: str, keys: Sequence[str], secrets: Mapping[str, SecretDoc]) -> dict[str, str]:
    secret = secrets.get(name)
    if secret is None:
        raise AuthSecretError(
            f"{owner}: {path}: Secret {name!r} is not in the manifests; rule: the "
            f"local platform reads Secrets from the manifests it is given; fix: add a document `apiVersion: "
            f"v1, kind: Secret, metadata: {{name: {name}}}, stringData: {{{', '.join(keys)}}}` to a file of -f"
        )
    missing = [k for k in keys if not secret.data.get(k)]
    if missing:
        raise AuthSecretError(
            f"{owner}: {path}: Secret {name!r} has no {', '.join(missing)}; rule: the "
            f"Secret holds {', '.join(keys)}; fix: add {', '.join(missing)} to its stringData"
        )
    return secret.data


def select_secrets(resources: Sequence[Any], secrets: Mapping[str, SecretDoc]) -> dict[str, dict[str, str]]:
    """The data of every Secret the groups and Users name (raises AuthSecretError for one missing or lacking a
    key)."""
    kept: dict[str, dict[str, str]] = {}
    for bg in (r for r in resources if isinstance(r, BrokerGroup | Proxy)):
        for path, name, keys in needed_secrets(bg):
            kept[name] = _given(f"{bg.kind}/{bg.metadata.name}", path, name, keys, secrets)
    for user in (r for r in resources if isinstance(r, User)):
        ref = user.password_ref
        owner = f"User/{user.metadata.name}"
        if user.spec.password_secret is not None:
            kept[ref.name] = _given(owner, "spec.passwordSecret", ref.name, (ref.key,), secrets)
        elif ref.name in secrets:  # given under the generated Secret's name: used as given, never generated
            path = "spec.passwordSecret (absent: the generated Secret's name)"
            kept[ref.name] = _given(owner, path, ref.name, (ref.key,), secrets)
    return kept


def store_secrets(layout: StateLayout, kept: Mapping[str, Mapping[str, str]]) -> None:
    if kept:
        write_json_atomic(layout.secrets, kept)  # mkstemp: mode 0600
    else:
        layout.secrets.unlink(missing_ok=True)


def read_secrets(layout: StateLayout) -> dict[str, dict[str, str]]:
    try:
        data = json.loads(layout.secrets.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _auth_groups(state: LocalState) -> list[BrokerGroup]:
    return [r for r in load_resources(state) if isinstance(r, BrokerGroup) and r.spec.auth.enabled]


def read_admins(layout: StateLayout) -> dict[str, dict[str, Any]]:
    """admins.json: group -> {username, password, retiring: [{user, since}]} (what its brokers start with)."""
    try:
        data = json.loads(layout.admins.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


def write_admins(layout: StateLayout, admins: Mapping[str, Mapping[str, Any]]) -> None:
    if admins:
        write_json_atomic(layout.admins, dict(admins))  # mkstemp: mode 0600
    else:
        layout.admins.unlink(missing_ok=True)


def configured_admin(entry: Mapping[str, Any] | None) -> AdminCredential | None:
    if not entry or not entry.get("username") or not entry.get("password"):
        return None
    return AdminCredential(str(entry["username"]), str(entry["password"]))


def retiring_admins(entry: Mapping[str, Any] | None) -> tuple[RetiringAdmin, ...]:
    out: list[RetiringAdmin] = []
    for item in (entry or {}).get("retiring") or []:
        try:
            out.append(RetiringAdmin(str(item["user"]), float(item["since"])))
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(out)


def admin_entry(admin: AdminCredential, retiring: Sequence[RetiringAdmin]) -> dict[str, Any]:
    return {
        "username": admin.user,
        "password": admin.password,
        "retiring": [{"user": r.user, "since": r.since} for r in retiring],
    }


def _declared(bg: BrokerGroup, secrets: Mapping[str, Mapping[str, str]]) -> AdminCredential | None:
    admin = admin_credentials(bg, secrets)
    return None if admin is None else AdminCredential(admin.access_key, admin.secret_key)


def record_admins(
    layout: StateLayout,
    resources: Sequence[object],
    secrets: Mapping[str, Mapping[str, str]],
    *,
    starting: bool = False,
    now: float | None = None,
) -> None:
    """Every BrokerGroup with auth on gets an admins.json entry if it has none: the admin in ``secrets``, which
    is what its brokers start with (`local apply` calls it before it stores new Secrets, so that a running group's
    entry is the admin its brokers run with). ``starting`` (`local up`, nothing running): a new admin name replaces
    the entry and the old one is retiring (the stores kept by `down` still hold it; every process starts after
    now, so the supervisor deletes it once the group is up)."""
    admins = read_admins(layout)
    changed = False
    for bg in resources:
        if not isinstance(bg, BrokerGroup) or not bg.spec.auth.enabled:
            continue
        declared = _declared(bg, secrets)
        entry = admins.get(bg.metadata.name)
        configured = configured_admin(entry)
        if declared is None or configured == declared:
            continue
        if configured is None:
            admins[bg.metadata.name] = admin_entry(declared, ())
        elif starting and configured.user != declared.user:
            retiring = (*retiring_admins(entry), RetiringAdmin(configured.user, time.time() if now is None else now))
            admins[bg.metadata.name] = admin_entry(declared, tuple(r for r in retiring if r.user != declared.user))
        else:
            continue
        changed = True
    if changed:
        write_admins(layout, admins)


def refuse_admin_change(
    layout: StateLayout, resources: Sequence[object], given: Mapping[str, Mapping[str, str]]
) -> None:
    """AuthSecretError (the rotation's refusal, `core.admin_rotation`) when `local apply` gives a running group
    with auth on a new password under its admin's name, or a retiring admin's name: its brokers read their admin
    at start only, so the supervisor would lock itself out. A new admin name is rotated to by the supervisor."""
    admins = read_admins(layout)
    for bg in resources:
        if not isinstance(bg, BrokerGroup) or not bg.spec.auth.enabled or bg.metadata.name not in admins:
            continue
        entry = admins[bg.metadata.name]
        facts = AdminFacts(_declared(bg, given), configured_admin(entry), retiring_admins(entry))
        plan = plan_admin(facts, time.time())
        if plan.refusal is not None:
            raise AuthSecretError(f"BrokerGroup/{bg.metadata.name}: {plan.refusal}")


def group_credentials(state: LocalState) -> dict[str, SessionCredentials]:
    """Each group with auth on → the admin its brokers run with (admins.json; a state directory from before the
    rotation: its secrets.json)."""
    groups = _auth_groups(state)
    if not groups:
        return {}
    layout = StateLayout(Path(state.state_dir))
    secrets, admins = read_secrets(layout), read_admins(layout)
    out: dict[str, SessionCredentials] = {}
    for bg in groups:
        admin = configured_admin(admins.get(bg.metadata.name)) or _declared(bg, secrets)
        if admin is not None:
            out[bg.metadata.name] = SessionCredentials(admin.user, admin.password)
    return out


def credentials_by_addr(
    state: LocalState, by_group: Mapping[str, SessionCredentials] | None = None
) -> dict[str, SessionCredentials]:
    """Each broker address of a group with auth on → that group's admin credentials."""
    by_group = group_credentials(state) if by_group is None else by_group
    out: dict[str, SessionCredentials] = {}
    for name, credentials in by_group.items():
        info = state.group(name)
        for replica_name in info.replicas if info is not None else ():
            replica = state.replica(replica_name)
            if replica is not None:
                out[replica.address] = credentials
    return out


def state_client(
    state: LocalState,
    *,
    connect_timeout: float = 1.0,
    request_timeout: float = 3.0,
    by_group: Mapping[str, SessionCredentials] | None = None,
) -> RemotingClient:
    """A client of this local cluster: its name servers, signing as each auth group's admin towards its brokers,
    over TLS trusting the cluster's authority when spec.tls is on."""
    return RemotingClient(
        state.name_servers,
        connect_timeout=connect_timeout,
        request_timeout=request_timeout,
        credentials_by_addr=credentials_by_addr(state, by_group),
        tls=client_tls(state),
    )


def run_config_keys(state: LocalState, replica: str) -> dict[str, str]:
    """The secret keys of a broker's or a proxy's run config: its group's admin (a proxy: its Proxy's)."""
    for name, credentials in group_credentials(state).items():
        info = state.group(name)
        if info is not None and replica in info.replicas:
            return auth_secret_keys(credentials.access_key, credentials.secret_key)
    process = state.replica(replica)
    if process is None or process.role != "proxy":
        return {}
    resources = load_resources(state)
    for proxy in resources:
        if isinstance(proxy, Proxy) and proxy.metadata.name == process.group and proxy.spec.auth.enabled:
            admin = proxy_admin(state, proxy, resources)
            if admin is not None:
                return auth_secret_keys(admin.access_key, admin.secret_key)
    return {}


def proxy_admin(state: LocalState, proxy: Proxy, resources: Sequence[object]) -> SessionCredentials | None:
    """The admin a proxy starts with: its Proxy's once every BrokerGroup of its cluster with auth on runs with it
    (a proxy signing as an admin some replica lacks would be refused there), else theirs."""
    admin = admin_credentials(proxy, read_secrets(StateLayout(Path(state.state_dir))))
    running = group_credentials(state)
    for bg in resources:
        if isinstance(bg, BrokerGroup) and bg.spec.cluster_name == proxy.spec.cluster_name:
            held = running.get(bg.metadata.name)
            if held is not None and held != admin:
                return held
    return admin


class AuthPolicy:
    def __init__(self, state: LocalState, layout: StateLayout) -> None:
        self.layout = layout
        secrets = read_secrets(layout)
        resources = load_resources(state)
        groups = [r for r in resources if isinstance(r, BrokerGroup) and r.spec.auth.enabled]
        users = [r for r in resources if isinstance(r, User)]
        self.state = state
        self.declared = {bg.metadata.name: _declared(bg, secrets) for bg in groups}
        self.credentials = group_credentials(state)  # what the brokers run with: the supervisor signs as it
        self.said_rotation: dict[str, str] = {}
        self.wanted: dict[str, list[WantedUser]] = {}
        held: dict[str, dict[str, str]] = {}
        protected: dict[str, list[str]] = {}
        for bg in groups:
            name = bg.metadata.name
            admin = self.credentials.get(name)
            coming = self.declared.get(name)
            names = [n for n in (admin.access_key if admin else None, coming.user if coming else None) if n]
            placed = users_on_group(bg, users, secrets, names)
            self.wanted[name] = [*wanted_users(bg, secrets), *placed.wanted]
            held[name] = placed.policies
            declared = self.declared.get(name)
            admins = {a for a in (admin.access_key if admin else None, declared.user if declared else None) if a}
            protected[name] = [u.name for u in bg.spec.auth.users] + sorted(admins)
            for line in placed.refusals:  # once per start or apply: the manifests are what changes them
                log.warning("%s: auth: %s", name, line)
        self.record: UsersRecord = next_users_record(read_users_record(layout), held, protected)
        write_users_record(layout, self.record)
        for name, removing in self.record.removing.items():
            log.info("%s: auth: to delete from every replica: %s", name, ", ".join(removing))
        self.memory: dict[str, AuthMemory] = {}

    async def rotate(self, client: RemotingClient, name: str, state: GroupState) -> None:
        """One pass of the admin rotation (`control.admin_rotation`) for group ``name``: admins.json and the
        client's signature follow it; what moved is logged (names only)."""
        admins = read_admins(self.layout)
        entry = admins.get(name)
        configured, retiring = configured_admin(entry), retiring_admins(entry)
        if configured is None and self.declared.get(name) is None:
            return
        info = self.state.group(name)
        replicas = len(info.replicas) if info is not None else len(state.replicas)
        rotation = LocalRotation(self, name)
        outcome = await rotate_admin(
            client, state, self.declared.get(name), configured, retiring, rotation, time.time(), replicas
        )
        for line in outcome.lines:
            log.info("%s: admin rotation: %s", name, line)
        for line in outcome.problems:
            log.warning("%s: admin rotation: %s; retried next pass", name, line)
        plan = outcome.plan
        if plan.message and self.said_rotation.get(name) != plan.message:
            self.said_rotation[name] = plan.message
            (log.warning if plan.phase is AdminPhase.REFUSED else log.info)("%s: %s", name, plan.message)
        if plan.config is not None:
            wanted = admin_entry(plan.config, outcome.retiring)
            if read_admins(self.layout).get(name) != wanted:
                admins = read_admins(self.layout)
                admins[name] = wanted
                write_admins(self.layout, admins)
        signs = outcome.sign_as
        if signs is not None and self.credentials.get(name) != SessionCredentials(signs.user, signs.password):
            self.credentials[name] = SessionCredentials(signs.user, signs.password)
            client.pool.credentials_by_addr.update(credentials_by_addr(self.state, {name: self.credentials[name]}))

    async def run(self, client: RemotingClient, states: Mapping[str, GroupState]) -> None:
        for name in self.declared:
            state = states.get(name)
            if state is not None:
                await self.rotate(client, name, state)
        for name, wanted in self.wanted.items():
            state = states.get(name)
            removing = self.record.removing.get(name, [])
            if state is None or not (wanted or removing):
                continue
            report = await assert_users(
                client, state, wanted, self.memory.setdefault(name, AuthMemory()), removing=removing
            )
            for line in report.done:
                log.info("%s: auth: %s", name, line)
            for line in report.errors:
                log.warning("%s: auth: %s; retried next pass", name, line)
            if removing:
                record = removal_confirmed(self.record, name, removing, report.removal_left)
                if record != self.record:
                    gone = sorted(set(removing) - set(record.removing.get(name, [])))
                    log.info("%s: auth: every replica confirmed without %s", name, ", ".join(gone))
                    self.record = record
                    write_users_record(self.layout, record)


class LocalRotation:
    """`control.admin_rotation.RotationPlatform` on the local platform: a process reads its admin when the
    supervisor starts it (`run_config_keys`), so one started before a switch may sign as the old admin until its
    next start."""

    def __init__(self, policy: AuthPolicy, group: str) -> None:
        self.policy, self.group = policy, group

    async def write_config(self, admin: AdminCredential) -> None:
        admins = read_admins(self.policy.layout)
        retiring = retiring_admins(admins.get(self.group))
        admins[self.group] = admin_entry(admin, retiring)
        write_admins(self.policy.layout, admins)

    async def started_before(self, since: float) -> int:
        state = self.policy.state
        info = state.group(self.group)
        names = list(info.replicas) if info is not None else []
        names += [r.name for r in state.replicas if r.role == "proxy"]
        return sum(
            1
            for name in names
            if (r := state.replica(name)) is not None and r.pid is not None and (r.started_at or 0.0) < since
        )
