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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rocketmq_operator.api.models import BrokerGroup, Proxy, User
from rocketmq_operator.api.validation import SecretDoc
from rocketmq_operator.control.auth import AuthMemory, admin_credentials, assert_users, needed_secrets, wanted_users
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


def refuse_admin_change(
    running: Sequence[object],
    resources: Sequence[object],
    stored: Mapping[str, Mapping[str, str]],
    given: Mapping[str, Mapping[str, str]],
) -> None:
    """AuthSecretError when `local apply` would change the admin of a running group with auth on: its brokers
    read it at start only (docs/auth.md, "Rotating the admin"), so the supervisor, signing with the new one at
    once, would be refused by every broker. The Kubernetes operator rotates it in place; locally it is not built."""
    before = {r.metadata.name: r for r in running if isinstance(r, BrokerGroup) and r.spec.auth.enabled}
    for bg in resources:
        if not isinstance(bg, BrokerGroup) or not bg.spec.auth.enabled or bg.metadata.name not in before:
            continue
        old, new = admin_credentials(before[bg.metadata.name], stored), admin_credentials(bg, given)
        if old is not None and new is not None and old != new:
            raise AuthSecretError(
                f"BrokerGroup/{bg.metadata.name}: spec.auth.adminSecret {bg.spec.auth.admin_secret!r}: the admin "
                f"changes from '{old.access_key}' on a running local cluster; rule: brokers read their admin at start "
                "only, and the local platform does not rotate it yet (the Kubernetes operator does: docs/auth.md); "
                "fix: keep the admin Secret as it was, or `rocketmq-operator local down`, then `local up` with it"
            )


def group_credentials(state: LocalState) -> dict[str, SessionCredentials]:
    """Each group with auth on → its admin credentials (from the state directory's secrets.json)."""
    groups = _auth_groups(state)
    if not groups:
        return {}
    secrets = read_secrets(StateLayout(Path(state.state_dir)))
    return {bg.metadata.name: c for bg in groups if (c := admin_credentials(bg, secrets)) is not None}


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
    secrets: dict[str, dict[str, str]] | None = None
    for proxy in load_resources(state):
        if isinstance(proxy, Proxy) and proxy.metadata.name == process.group and proxy.spec.auth.enabled:
            secrets = read_secrets(StateLayout(Path(state.state_dir))) if secrets is None else secrets
            admin = admin_credentials(proxy, secrets)
            if admin is not None:
                return auth_secret_keys(admin.access_key, admin.secret_key)
    return {}


class AuthPolicy:
    def __init__(self, state: LocalState, layout: StateLayout) -> None:
        self.layout = layout
        secrets = read_secrets(layout)
        resources = load_resources(state)
        groups = [r for r in resources if isinstance(r, BrokerGroup) and r.spec.auth.enabled]
        users = [r for r in resources if isinstance(r, User)]
        self.credentials = {bg.metadata.name: c for bg in groups if (c := admin_credentials(bg, secrets)) is not None}
        self.wanted: dict[str, list[WantedUser]] = {}
        held: dict[str, dict[str, str]] = {}
        protected: dict[str, list[str]] = {}
        for bg in groups:
            name = bg.metadata.name
            admin = self.credentials.get(name)
            placed = users_on_group(bg, users, secrets, admin.access_key if admin is not None else None)
            self.wanted[name] = [*wanted_users(bg, secrets), *placed.wanted]
            held[name] = placed.policies
            protected[name] = [u.name for u in bg.spec.auth.users] + ([admin.access_key] if admin is not None else [])
            for line in placed.refusals:  # once per start or apply: the manifests are what changes them
                log.warning("%s: auth: %s", name, line)
        self.record: UsersRecord = next_users_record(read_users_record(layout), held, protected)
        write_users_record(layout, self.record)
        for name, removing in self.record.removing.items():
            log.info("%s: auth: to delete from every replica: %s", name, ", ".join(removing))
        self.memory: dict[str, AuthMemory] = {}

    async def run(self, client: RemotingClient, states: Mapping[str, GroupState]) -> None:
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
