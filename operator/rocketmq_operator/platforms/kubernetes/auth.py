"""ACL 2.0 on Kubernetes: a BrokerGroup's Secrets read from the API, the brokers' admin Secret, and the group
pass's call into `control.auth`.

Contract:

* `read_group_auth(kube, bg, namespace)` reads every Secret that spec.auth names (`control.auth.needed_secrets`)
  and returns a `GroupAuth`: the admin's credentials (None when its Secret or a key is missing), the declared
  users whose passwords were found, and one line per missing Secret or key (field, Secret, rule, fix). A
  Secret's values are never logged, written to status or put in an Event; the lines name Secrets and keys only.
* `admin_config_objects(kube, resource, namespace)` (the reconciler): the Secret `<name>-auth-config` the brokers
  of a BrokerGroup (`render.kubernetes.broker_group.auth_config_secret`) or the proxies of a Proxy
  (`render.kubernetes.proxy.proxy_auth_config_secret`) mount, or a blocked reason and message when the admin
  Secret cannot be read. A resource without auth needs nothing.
* `sign_for_group(client, admin, endpoints)` makes the operator's one client sign every request to the group's
  brokers as its admin (pod addresses; refreshed on every pass, so a pod's new IP is signed for at once).
* The group pass asserts the users with `users.assert_group_users` (the User resources too).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rocketmq_operator.api.models import BrokerGroup, Proxy
from rocketmq_operator.control.auth import admin_credentials, needed_secrets, wanted_users
from rocketmq_operator.core.auth import WantedUser
from rocketmq_operator.core.observation import ReplicaEndpoint
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.render.kubernetes.broker_group import auth_config_secret
from rocketmq_operator.render.kubernetes.proxy import proxy_auth_config_secret

JSON = dict[str, Any]


@dataclass
class GroupAuth:
    admin: SessionCredentials | None = None
    users: list[WantedUser] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def secret_data(secret: JSON) -> dict[str, str]:
    """A Secret's values, decoded (the API returns `data` base64-encoded; `stringData` only on write)."""
    out: dict[str, str] = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            out[key] = base64.b64decode(str(value), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            continue  # not a text value: treated as missing, and named as such
    for key, value in (secret.get("stringData") or {}).items():
        out[key] = str(value)
    return out


async def read_group_auth(kube: KubeClient, bg: BrokerGroup | Proxy, namespace: str) -> GroupAuth:
    """The Secrets of a BrokerGroup's spec.auth, or of a Proxy's (its admin only)."""
    auth = GroupAuth()
    if not bg.spec.auth.enabled:
        return auth
    kind = bg.kind
    secrets: dict[str, dict[str, str]] = {}
    for path, name, keys in needed_secrets(bg):
        if name not in secrets:
            try:
                secret = await kube.get("Secret", namespace, name)
            except KubeError as exc:
                auth.problems.append(
                    f"{kind}/{bg.metadata.name}: {path}: Secret {name!r} cannot be read ({exc}); rule: the "
                    "operator reads the Secrets spec.auth names; fix: grant its service account get on secrets "
                    "in this namespace (the chart's RBAC does)"
                )
                continue
            if secret is None:
                auth.problems.append(
                    f"{kind}/{bg.metadata.name}: {path}: Secret {name!r} not found in namespace "
                    f"{namespace!r}; rule: spec.auth names Secrets of the resource's namespace; fix: kubectl create "
                    f"secret generic {name} -n {namespace} " + " ".join(f"--from-literal={k}=…" for k in keys)
                )
                continue
            secrets[name] = secret_data(secret)
        missing = [k for k in keys if not secrets.get(name, {}).get(k)]
        if name in secrets and missing:
            auth.problems.append(
                f"{kind}/{bg.metadata.name}: {path}: Secret {name!r} has no {', '.join(missing)}; rule: the "
                f"Secret holds {', '.join(keys)} (text values); fix: kubectl patch secret {name} -n {namespace} "
                "with the missing keys"
            )
    auth.admin = admin_credentials(bg, secrets)
    if isinstance(bg, BrokerGroup):
        auth.users = wanted_users(bg, secrets)
    return auth


async def admin_config_objects(
    kube: KubeClient, bg: BrokerGroup | Proxy, namespace: str
) -> tuple[list[JSON], tuple[str, str] | None]:
    """The objects to apply before the StatefulSet (a Proxy: its Deployment), or (reason, message) when the pods
    cannot start yet: the copy of the admin Secret they mount."""
    if not bg.spec.auth.enabled:
        return [], None
    auth = await read_group_auth(kube, bg, namespace)
    if auth.admin is None:
        message = "; ".join(p for p in auth.problems if "spec.auth.adminSecret" in p) or (
            f"{bg.kind}/{bg.metadata.name}: spec.auth.adminSecret: not set; rule: spec.auth.enabled needs an admin "
            "Secret; fix: set spec.auth.adminSecret to a Secret with keys username and password"
        )
        return [], ("AuthSecretMissing", message)
    if isinstance(bg, Proxy):
        return [proxy_auth_config_secret(bg, auth.admin.access_key, auth.admin.secret_key)], None
    return [auth_config_secret(bg, auth.admin.access_key, auth.admin.secret_key)], None


def sign_for_group(client: RemotingClient, admin: SessionCredentials, endpoints: Sequence[ReplicaEndpoint]) -> None:
    for endpoint in endpoints:
        client.pool.credentials_by_addr[endpoint.address] = admin
