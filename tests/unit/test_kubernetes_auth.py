"""ACL 2.0 on Kubernetes (platforms/kubernetes/auth.py) against the in-memory API: the Secrets spec.auth names are
read by name, a missing one blocks the group with one line naming the field, the Secret, the rule and the fix (and
never a value), and the brokers mount the admin Secret's copy, which Java reads back unchanged."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
from typing import Any

import pytest
from kube_fake import FakeApi

from rocketmq_operator.api.models import BrokerGroup, Proxy
from rocketmq_operator.platforms.kubernetes.auth import admin_config_objects, read_group_auth, secret_data
from rocketmq_operator.render.kubernetes import render_broker_group, render_proxy

JSON = dict[str, Any]
GROUP: JSON = {
    "apiVersion": "rocketmq-operator.dev/v1alpha1",
    "kind": "BrokerGroup",
    "metadata": {"name": "broker-a", "namespace": "ns"},
    "spec": {
        "replicas": 2,
        "haMode": "sync",
        "nameServers": ["ns:9876"],
        "auth": {
            "enabled": True,
            "adminSecret": "admin",
            "users": [
                {"name": "app", "passwordSecret": {"name": "apps", "key": "app"}},
                {"name": "ops", "passwordSecret": {"name": "ops", "key": "pw"}},
            ],
        },
    },
}
ADMIN_PASSWORD = 'Adm"in\\pw-7x'  # a quote and a backslash: JSON and java.util.Properties both escape


def _group() -> BrokerGroup:
    return BrokerGroup.model_validate(copy.deepcopy(GROUP))


def _secret(name: str, **values: str) -> JSON:
    data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "ns"}, "data": data}


def _api(*secrets: JSON) -> FakeApi:
    api = FakeApi()
    for secret in secrets:
        api.put(secret)
    return api


def test_secret_data_decodes_data_and_drops_values_that_are_not_text() -> None:
    secret = _secret("s", a="x y")
    secret["data"]["bin"] = base64.b64encode(b"\xff\xfe").decode()
    secret["data"]["junk"] = "%%%"
    assert secret_data(secret) == {"a": "x y"}
    assert secret_data({"stringData": {"k": "v"}}) == {"k": "v"}


def test_every_secret_present_gives_the_admin_and_the_users() -> None:
    api = _api(_secret("admin", username="root", password=ADMIN_PASSWORD), _secret("apps", app="apppw"),
               _secret("ops", pw="opspw"))  # fmt: skip
    auth = asyncio.run(read_group_auth(api, _group(), "ns"))  # type: ignore[arg-type]
    assert auth.problems == []
    assert auth.admin is not None and (auth.admin.access_key, auth.admin.secret_key) == ("root", ADMIN_PASSWORD)
    assert [(u.name, u.password) for u in auth.users] == [("app", "apppw"), ("ops", "opspw")]
    objects, blocked = asyncio.run(admin_config_objects(api, _group(), "ns"))  # type: ignore[arg-type]
    assert blocked is None and [o["metadata"]["name"] for o in objects] == ["broker-a-auth-config"]
    text = objects[0]["stringData"]["auth.properties"]
    # Properties-escaped JSON: java.util.Properties gives back {"accessKey":"root","secretKey":"Adm\"in\\pw-7x"}.
    assert text == 'innerClientAuthenticationCredentials={"accessKey":"root","secretKey":"Adm\\\\"in\\\\\\\\pw-7x"}\n'


@pytest.mark.parametrize(
    ("secrets", "reason", "says"),
    [
        ((), "AuthSecretMissing", ["spec.auth.adminSecret", "Secret 'admin' not found in namespace 'ns'",
                                   "kubectl create secret generic admin -n ns --from-literal=username=… "
                                   "--from-literal=password=…"]),
        ((_secret("admin", username="root"),), "AuthSecretMissing",
         ["spec.auth.adminSecret", "Secret 'admin' has no password", "rule: the Secret holds username, password"]),
        ((_secret("admin", username="root", password=ADMIN_PASSWORD),), None, []),
    ],
    ids=["admin Secret missing", "admin password key missing", "users missing do not block"],
)  # fmt: skip
def test_a_missing_admin_secret_blocks_in_one_line(
    secrets: tuple[JSON, ...], reason: str | None, says: list[str]
) -> None:
    api = _api(*secrets)
    objects, blocked = asyncio.run(admin_config_objects(api, _group(), "ns"))  # type: ignore[arg-type]
    if reason is None:
        assert blocked is None and objects
        return
    assert objects == [] and blocked is not None and blocked[0] == reason
    message = blocked[1]
    assert "\n" not in message and message.startswith("BrokerGroup/broker-a: ")
    for part in [*says, "rule:", "fix:"]:
        assert part in message, message


def test_a_missing_user_secret_leaves_that_user_out_and_says_so() -> None:
    api = _api(_secret("admin", username="root", password="pw"), _secret("apps", other="x"))
    auth = asyncio.run(read_group_auth(api, _group(), "ns"))  # type: ignore[arg-type]
    assert auth.admin is not None and auth.users == []
    assert len(auth.problems) == 2
    assert "spec.auth.users[0].passwordSecret: Secret 'apps' has no app" in auth.problems[0]
    assert "spec.auth.users[1].passwordSecret: Secret 'ops' not found" in auth.problems[1]


def test_a_secret_the_operator_may_not_read_is_named_with_the_rbac_fix() -> None:
    api = _api()
    api.fail_on("get", "Secret", "admin", status=403)
    auth = asyncio.run(read_group_auth(api, _group(), "ns"))  # type: ignore[arg-type]
    assert auth.admin is None
    assert "Secret 'admin' cannot be read (HTTP 403" in auth.problems[0] and "get on secrets" in auth.problems[0]


def test_auth_off_reads_nothing() -> None:
    api = _api()
    api.fail_on("get", "Secret", None, status=500, times=99)
    doc = copy.deepcopy(GROUP)
    doc["spec"]["auth"]["enabled"] = False
    bg = BrokerGroup.model_validate(doc)
    auth = asyncio.run(read_group_auth(api, bg, "ns"))  # type: ignore[arg-type]
    assert auth.admin is None and auth.problems == [] and api.log == []
    assert asyncio.run(admin_config_objects(api, bg, "ns")) == ([], None)  # type: ignore[arg-type]


def test_the_brokers_mount_the_admin_copy_read_only_and_other_groups_do_not() -> None:
    sts = next(o for o in render_broker_group(_group(), None) if o["kind"] == "StatefulSet")
    pod = sts["spec"]["template"]["spec"]
    assert {"name": "secret-config", "secret": {"secretName": "broker-a-auth-config", "defaultMode": 0o440}} in pod[
        "volumes"
    ]
    mounts = pod["containers"][0]["volumeMounts"]
    assert {"name": "secret-config", "mountPath": "/etc/rocketmq-secret", "readOnly": True} in mounts
    doc = copy.deepcopy(GROUP)
    doc["spec"]["auth"] = {"enabled": False}
    plain = next(o for o in render_broker_group(BrokerGroup.model_validate(doc), None) if o["kind"] == "StatefulSet")
    assert all("secret" not in v for v in plain["spec"]["template"]["spec"]["volumes"])


PROXY: JSON = {
    "apiVersion": "rocketmq-operator.dev/v1alpha1",
    "kind": "Proxy",
    "metadata": {"name": "proxy", "namespace": "ns"},
    "spec": {"nameServers": ["ns:9876"], "auth": {"enabled": True, "adminSecret": "admin"}},
}


def test_a_proxy_with_auth_gets_its_admin_as_json_and_mounts_it() -> None:
    """The proxies' copy of the admin: one JSON object (the entrypoint merges it into rmq-proxy.json), never in the
    ConfigMap; their pod mounts it. Only the admin Secret is read (a Proxy declares no users)."""
    proxy = Proxy.model_validate(copy.deepcopy(PROXY))
    api = _api(_secret("admin", username="root", password=ADMIN_PASSWORD))
    objects, blocked = asyncio.run(admin_config_objects(api, proxy, "ns"))  # type: ignore[arg-type]
    assert blocked is None and [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Secret", "proxy-auth-config")
    ]
    member = json.loads(objects[0]["stringData"]["auth.json"])["innerClientAuthenticationCredentials"]
    assert json.loads(member) == {"accessKey": "root", "secretKey": ADMIN_PASSWORD}
    rendered = render_proxy(proxy, None)
    assert ADMIN_PASSWORD not in json.dumps(rendered)
    conf = json.loads(next(o for o in rendered if o["kind"] == "ConfigMap")["data"]["rmq-proxy.json"])
    assert conf["authenticationEnabled"] is True and conf["enableAclRpcHookForClusterMode"] is True
    pod = next(o for o in rendered if o["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert {"name": "secret-config", "secret": {"secretName": "proxy-auth-config", "defaultMode": 0o440}} in pod[
        "volumes"
    ]

    objects, blocked = asyncio.run(admin_config_objects(_api(), proxy, "ns"))  # type: ignore[arg-type]
    assert objects == [] and blocked is not None and blocked[0] == "AuthSecretMissing"
    assert "Proxy/proxy: spec.auth.adminSecret: Secret 'admin' not found in namespace 'ns'" in blocked[1]


def _stored(api: FakeApi, obj: JSON) -> None:
    """A rendered Secret (stringData) stored as the API returns it (data, base64)."""
    data = {k: base64.b64encode(str(v).encode()).decode() for k, v in obj["stringData"].items()}
    api.put({**{k: v for k, v in obj.items() if k != "stringData"}, "data": data})


def test_a_new_admin_name_is_signed_for_only_once_switched_and_the_copy_is_left_to_the_pass() -> None:
    """The admin rotation's reads (core.admin_rotation): the configured admin is what the brokers' copy holds; the
    operator signs as it while the declared one is created, and the reconciler no longer rewrites the copy."""
    api = _api(_secret("admin", username="root", password="pw"))
    first, _ = asyncio.run(admin_config_objects(api, _group(), "ns"))  # type: ignore[arg-type]
    _stored(api, first[0])
    api.put(_secret("admin", username="root-2", password="pw-2"))
    auth = asyncio.run(read_group_auth(api, _group(), "ns"))  # type: ignore[arg-type]
    assert auth.configured is not None and auth.configured.user == "root"
    assert auth.declared is not None and auth.declared.user == "root-2"
    assert auth.plan is not None and str(auth.plan.phase) == "Rotating"
    assert auth.admin is not None and auth.admin.access_key == "root"  # still signed as the configured admin
    assert asyncio.run(admin_config_objects(api, _group(), "ns")) == ([], None)  # type: ignore[arg-type]
    # Switched (the pass wrote the copy; the old admin retiring in status): signed as the new one.
    from rocketmq_operator.render.kubernetes.broker_group import auth_config_secret

    _stored(api, auth_config_secret(_group(), "root-2", "pw-2"))
    status = {"auth": {"retiringAdmins": [{"user": "root", "since": 5.0}]}}
    auth = asyncio.run(read_group_auth(api, _group(), "ns", status))  # type: ignore[arg-type]
    assert auth.admin is not None and auth.admin.access_key == "root-2"
    assert [r.user for r in auth.retiring] == ["root"] and auth.plan is not None and auth.plan.keep == ("root",)


def test_the_admin_copies_read_back_as_written() -> None:
    from rocketmq_operator.platforms.kubernetes.auth import admin_in_config, retiring_of
    from rocketmq_operator.render.kubernetes.broker_group import auth_config_secret
    from rocketmq_operator.render.kubernetes.proxy import proxy_auth_config_secret

    proxy = Proxy.model_validate(
        {"kind": "Proxy", "metadata": {"name": "px", "namespace": "ns"}, "spec": {"nameServers": ["ns:9876"]}}
    )
    for obj, is_proxy in ((auth_config_secret(_group(), "root", ADMIN_PASSWORD), False),
                          (proxy_auth_config_secret(proxy, "root", ADMIN_PASSWORD), True)):  # fmt: skip
        read = admin_in_config(obj, proxy=is_proxy)
        assert read is not None and (read.user, read.password) == ("root", ADMIN_PASSWORD)
    assert admin_in_config(None) is None and admin_in_config(_secret("x", other="y")) is None
    assert [r.user for r in retiring_of({"auth": {"retiringAdmins": [{"user": "a", "since": 1}, {"bad": 1}]}})] == ["a"]
    assert retiring_of(None) == ()


def test_processes_started_before_a_switch_are_counted_brokers_by_creation_and_proxies_by_their_admin() -> None:
    from rocketmq_operator.platforms.kubernetes.auth import ANNOTATION_ADMIN_USER, PodRotation

    def pod(name: str, created: str, **extra: Any) -> JSON:
        return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "creationTimestamp": created, **extra}}

    brokers = [pod("broker-a-0", "2026-12-04T10:00:00Z"), pod("broker-a-1", "2026-12-04T12:00:00Z"),
               pod("broker-a-2", "2026-12-04T09:00:00Z", deletionTimestamp="2026-12-04T12:00:01Z")]  # fmt: skip
    api = FakeApi()
    volumes = {"volumes": [{"name": "secret-config", "secret": {"secretName": "px-auth-config"}}]}
    labels = {"app.kubernetes.io/component": "proxy"}
    api.put({**pod("px-1", "2026-12-04T09:00:00Z", labels=labels, annotations={ANNOTATION_ADMIN_USER: "old"}),
             "spec": volumes})  # fmt: skip
    api.put({**pod("px-2", "2026-12-04T09:00:00Z", labels=labels, annotations={ANNOTATION_ADMIN_USER: "new"}),
             "spec": volumes})  # fmt: skip
    api.put({**pod("px-3", "2026-12-04T09:00:00Z", labels=labels), "spec": {}})  # no auth: not counted
    switch = 1796385600.0  # 2026-12-04T11:00:00Z
    rotation = PodRotation(api, _group(), "ns", brokers, "new")  # type: ignore[arg-type]
    # broker-a-0 (created before) and px-1 (the old admin); not broker-a-1 (after), broker-a-2 (going), px-2, px-3.
    assert asyncio.run(rotation.started_before(switch)) == 2
