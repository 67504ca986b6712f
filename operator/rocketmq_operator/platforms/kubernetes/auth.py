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
* The admin rotation (`core.admin_rotation`): a BrokerGroup's *configured* admin is what its `<name>-auth-config`
  holds (what its brokers start with), read back by `configured_admin`; `read_group_auth` plans the rotation
  from it, the admin Secret and `status.auth` (`GroupAuth.plan`), and the operator signs as the plan says (the
  configured admin until the declared one is on every replica). The reconciler writes the plan's `config`, never
  the Secret's values straight through. A Proxy's copy follows its cluster's BrokerGroups: the declared admin once
  every one of them has switched to it (`proxy_admin`), and its pod template names that admin
  (`ANNOTATION_ADMIN_USER`), so the proxies roll onto it.
* The group pass asserts the users with `users.assert_group_users` (the User resources too).
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rocketmq_operator.api.models import AuthStatus, BrokerGroup, Proxy, RetiringAdminStatus
from rocketmq_operator.control.admin_rotation import RotationOutcome
from rocketmq_operator.control.auth import admin_credentials, needed_secrets, wanted_users
from rocketmq_operator.core.admin_rotation import AdminCredential, AdminFacts, AdminPlan, RetiringAdmin, plan_admin
from rocketmq_operator.core.auth import WantedUser
from rocketmq_operator.core.observation import ReplicaEndpoint
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError
from rocketmq_operator.platforms.kubernetes.resources import validated
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.remoting.broker import parse_java_properties
from rocketmq_operator.render.kubernetes.broker_group import auth_config_secret
from rocketmq_operator.render.kubernetes.names import auth_config_secret_name
from rocketmq_operator.render.kubernetes.proxy import PROXY_SECRET_CONFIG_FILE, proxy_auth_config_secret

BROKER_AUTH_CONFIG_KEY = "auth.properties"
ANNOTATION_ADMIN_USER = "rocketmq-operator.dev/admin-user"
PROXY_PODS = "app.kubernetes.io/component=proxy"
"""On a Proxy's pod template: the admin its proxies sign as (a name, never a password); a new one rolls them."""

JSON = dict[str, Any]


@dataclass
class GroupAuth:
    admin: SessionCredentials | None = None
    """Who the operator signs as (a BrokerGroup: the rotation plan's `sign_as`)."""
    users: list[WantedUser] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    declared: AdminCredential | None = None
    configured: AdminCredential | None = None
    retiring: tuple[RetiringAdmin, ...] = ()
    plan: AdminPlan | None = None


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


async def read_group_auth(
    kube: KubeClient, bg: BrokerGroup | Proxy, namespace: str, status: Mapping[str, Any] | None = None
) -> GroupAuth:
    """The Secrets of a BrokerGroup's spec.auth, or of a Proxy's (its admin only); a BrokerGroup's admin
    rotation planned from them, its `<name>-auth-config` and ``status`` (its status.auth)."""
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
    if auth.admin is not None:
        auth.declared = AdminCredential(auth.admin.access_key, auth.admin.secret_key)
    if isinstance(bg, BrokerGroup):
        auth.users = wanted_users(bg, secrets)
        auth.configured = await configured_admin(kube, bg, namespace)
        auth.retiring = retiring_of(status)
        auth.plan = plan_admin(AdminFacts(auth.declared, auth.configured, auth.retiring), time.time())
        sign = auth.plan.sign_as
        auth.admin = None if sign is None else SessionCredentials(sign.user, sign.password)
    return auth


def _credential(raw: object) -> AdminCredential | None:
    """innerClientAuthenticationCredentials' value (a JSON object as text) as a credential."""
    try:
        value = json.loads(str(raw))
        user, password = str(value["accessKey"]), str(value["secretKey"])
    except (ValueError, KeyError, TypeError):
        return None
    return AdminCredential(user, password) if user and password else None


def admin_in_config(secret: JSON | None, *, proxy: bool = False) -> AdminCredential | None:
    """The admin a `<name>-auth-config` Secret holds (a BrokerGroup's properties, a Proxy's JSON), or None."""
    if secret is None:
        return None
    data = secret_data(secret)
    if proxy:
        try:
            doc = json.loads(data.get(PROXY_SECRET_CONFIG_FILE, ""))
        except ValueError:
            return None
        return _credential(doc.get("innerClientAuthenticationCredentials")) if isinstance(doc, dict) else None
    text = data.get(BROKER_AUTH_CONFIG_KEY, "")
    return _credential(parse_java_properties(text).get("innerClientAuthenticationCredentials"))


async def configured_admin(kube: KubeClient, resource: BrokerGroup | Proxy, namespace: str) -> AdminCredential | None:
    secret = await kube.get("Secret", namespace, auth_config_secret_name(resource.metadata.name))
    return admin_in_config(secret, proxy=isinstance(resource, Proxy))


def retiring_of(status: Mapping[str, Any] | None) -> tuple[RetiringAdmin, ...]:
    """status.auth.retiringAdmins as the rotation's record."""
    out: list[RetiringAdmin] = []
    for item in ((status or {}).get("auth") or {}).get("retiringAdmins") or []:
        try:
            out.append(RetiringAdmin(str(item["user"]), float(item["since"])))
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(out)


async def proxy_admin(kube: KubeClient, proxy: Proxy, namespace: str, declared: AdminCredential) -> AdminCredential:
    """The admin a Proxy's proxies sign as: the declared one once every BrokerGroup of its cluster with auth on
    has switched to it (a proxy signing as an admin some replica lacks would be refused there), else what its
    copy holds now (the declared one when it has none)."""
    for raw in await kube.list("BrokerGroup", namespace):
        report = validated(raw)
        bg = report.resource
        if (
            not isinstance(bg, BrokerGroup)
            or bg.spec.cluster_name != proxy.spec.cluster_name
            or not bg.spec.auth.enabled
        ):
            continue
        if await configured_admin(kube, bg, namespace) != declared:
            return await configured_admin(kube, proxy, namespace) or declared
    return declared


async def admin_config_objects(
    kube: KubeClient, bg: BrokerGroup | Proxy, namespace: str, status: Mapping[str, Any] | None = None
) -> tuple[list[JSON], tuple[str, str] | None]:
    """The objects to apply before the StatefulSet (a Proxy: its Deployment), or (reason, message) when the pods
    cannot start yet: the copy of the admin they mount (a BrokerGroup: the rotation plan's `config`)."""
    if not bg.spec.auth.enabled:
        return [], None
    auth = await read_group_auth(kube, bg, namespace, status)
    if isinstance(bg, BrokerGroup) and auth.plan is not None and auth.plan.config is not None:
        if auth.configured is not None:
            # Once written, only the group pass moves it (the rotation's switch): a reconcile that read it before
            # a switch and applied after would put the old admin back.
            return [], None
        config = auth.plan.config
        return [auth_config_secret(bg, config.user, config.password)], None
    if auth.admin is None:
        message = "; ".join(p for p in auth.problems if "spec.auth.adminSecret" in p) or (
            f"{bg.kind}/{bg.metadata.name}: spec.auth.adminSecret: not set; rule: spec.auth.enabled needs an admin "
            "Secret; fix: set spec.auth.adminSecret to a Secret with keys username and password"
        )
        return [], ("AuthSecretMissing", message)
    if isinstance(bg, Proxy):
        signs = await proxy_admin(kube, bg, namespace, AdminCredential(auth.admin.access_key, auth.admin.secret_key))
        return [proxy_auth_config_secret(bg, signs.user, signs.password)], None
    return [auth_config_secret(bg, auth.admin.access_key, auth.admin.secret_key)], None


def sign_for_group(client: RemotingClient, admin: SessionCredentials, endpoints: Sequence[ReplicaEndpoint]) -> None:
    for endpoint in endpoints:
        client.pool.credentials_by_addr[endpoint.address] = admin


def _created_at(obj: JSON) -> float | None:
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    if not created:
        return None
    try:
        return datetime.fromisoformat(str(created).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _mounts_auth_config(pod: JSON) -> bool:
    volumes = (pod.get("spec") or {}).get("volumes") or []
    return any(str((v.get("secret") or {}).get("secretName") or "").endswith("-auth-config") for v in volumes)


class PodRotation:
    """`control.admin_rotation.RotationPlatform` on Kubernetes. The brokers read `<group>-auth-config` when their
    pod is created (a container restarted in place may still read an older copy of the volume), so a broker pod
    created before a switch may sign as the old admin until it is re-created; a proxy signs as the admin its pod
    template names (`ANNOTATION_ADMIN_USER`)."""

    def __init__(self, kube: KubeClient, bg: BrokerGroup, namespace: str, pods: Sequence[JSON], admin: str) -> None:
        self.kube, self.bg, self.namespace, self.pods, self.admin = kube, bg, namespace, pods, admin

    async def write_config(self, admin: AdminCredential) -> None:
        await self.kube.apply(auth_config_secret(self.bg, admin.user, admin.password))

    async def started_before(self, since: float) -> int:
        brokers = sum(
            1
            for pod in self.pods
            if not (pod.get("metadata") or {}).get("deletionTimestamp") and (_created_at(pod) or 0.0) < since
        )
        proxies = await self.kube.list("Pod", self.namespace, label_selector=PROXY_PODS)
        old_proxies = sum(
            1
            for pod in proxies
            if _mounts_auth_config(pod)
            and ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_ADMIN_USER) != self.admin
        )
        return brokers + old_proxies


def auth_status(outcome: RotationOutcome) -> JSON:
    """status.auth after a rotation pass."""
    plan = outcome.plan
    doc = AuthStatus(
        admin=None if plan.config is None else plan.config.user,
        phase=str(plan.phase),
        message=plan.message or None,
        retiring_admins=[RetiringAdminStatus(user=r.user, since=r.since) for r in outcome.retiring],
    )
    return doc.model_dump(mode="json", by_alias=True, exclude_none=True)
