"""ACL 2.0 on the real node: examples/auth.yaml applied as a user would (its Secrets, a controller and three
brokers with spec.auth on), in a namespace of its own, before the quickstart (file order) and removed after.

Measured as the client sees it, from pods of the operator image: an unsigned send and a send with a wrong password
are refused; the declared user's sends are acknowledged and read back; after a SIGKILL of the master's JVM the new
master accepts the same user (the operator created the users on every replica, and signs its own requests as the
group's admin, or it could not observe the group at all). The ConfigMap holds no password; the brokers mount the
operator's copy of the admin Secret. The example's Proxy (spec.auth) holds RocketMQ 5's gRPC client to the same
users, reached from the host at its pod's address.

Then a User resource (issue 33) on the same group, as a team would add one with kubectl: its generated Secret
signs sends; its password changed in that Secret is taken at once on every replica (RocketMQ keeps one password
per user: the old one refused from then, docs/auth.md); its rules changed refuse what they no longer allow;
deleted, its credentials are refused and no replica holds it; no broker JVM restarted meanwhile.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from e2e.conftest import apply_example
from e2e.e2e_helpers import kubectl_rocketmq, pod_ready, wait_proxy_ready
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.remoting.auth_admin import AuthAdmin
from rocketmq_operator.tools.digest import body_for
from rocketmq_operator.tools.grpc_client import GrpcProducer, receive_keys, send_keys
from rocketmq_operator.tools.noloss import missing_acknowledged, no_loss_failure, read_keys, reports_no_loss_failure

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "auth.yaml"
NS = "rocketmq-auth"
PROXY_PODS = "app.kubernetes.io/component=proxy,app.kubernetes.io/instance=proxy"


def _passwords() -> dict[str, str]:
    docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text(encoding="utf-8")) if d and d.get("kind") == "Secret"]
    return {d["metadata"]["name"]: d["stringData"]["password"] for d in docs}


PASSWORDS = _passwords()
APP = {"ROCKETMQ_ACCESS_KEY": "orders-app", "ROCKETMQ_SECRET_KEY": PASSWORDS["orders-app"]}


def _accepted(group: Any, pod: str, count: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Sends as orders-app (or as ``env`` says) until one batch is fully acknowledged: the operator creates the
    users once the brokers answer, so the first sends after the group turns writable may still be refused."""
    deadline = time.monotonic() + 300
    attempt = 0
    while True:
        attempt += 1
        report = group.produce(f"{pod}-{attempt}", count, "--report-keys", env=env or APP)
        assert report is not None
        if report["acknowledged"] == count:
            return report
        assert time.monotonic() < deadline, f"orders-app was never accepted: {report}"
        time.sleep(2)


def _refused(group: Any, pod: str, env: dict[str, str], what: str) -> None:
    """One send at a time, no retries, until one is refused: what the operator applies at its next pass."""
    deadline = time.monotonic() + 120
    attempt = 0
    while True:
        attempt += 1
        report = group.produce(f"{pod}-{attempt}", 1, "--retries", "0", env=env)
        assert report is not None
        if report["acknowledged"] == 0:
            return
        assert time.monotonic() < deadline, f"{what}: still accepted after 120 s: {report}"
        time.sleep(1)


LEDGER = "ledger-app"
LEDGER_USER = f"""
apiVersion: rocketmq-operator.dev/v1alpha1
kind: User
metadata: {{name: {LEDGER}}}
spec:
  brokerGroups: [broker-a]
  acls:
    - {{resource: "Topic:orders", actions: [Pub, Sub, Get]}}
    - {{resource: "Group:orders-readers", actions: [Sub, Get]}}
"""


def _held_by(group: Any, admin: SessionCredentials, user: str) -> dict[str, bool]:
    """Each replica's answer to AUTH_GET_USER for ``user``, asked from the host as the group's admin."""
    addresses = {n: f"{p['status']['podIP']}:10911" for n, p in group.pods().items()}

    async def ask() -> dict[str, bool]:
        client = RemotingClient(credentials_by_addr=dict.fromkeys(addresses.values(), admin))
        try:
            admin_calls = AuthAdmin(client)
            return {n: await admin_calls.get_user(a, user, timeout=5.0) is not None for n, a in addresses.items()}
        finally:
            await client.close()

    return asyncio.run(ask())


def _users_as_resources(group: Any, node: Any) -> None:
    """The User steps of the module docstring, on the auth example's group (healthy, with a master)."""
    jvms = {pod: group.jvm_pid(pod)[0] for pod in group.pods()}
    node.kubectl("-n", NS, "apply", "-f", "-", input=LEDGER_USER)

    def user_status() -> dict[str, Any]:
        return dict(node.json("-n", NS, "get", "user", LEDGER).get("status") or {})

    node.wait_for(f"User {LEDGER} Ready on every replica", lambda: user_status().get("ready") is True, 300, 1)
    assert user_status()["placements"][0]["asserted"] == group.replicas, user_status()
    secret = node.json("-n", NS, "get", "secret", f"{LEDGER}-credentials")
    password = base64.b64decode(secret["data"]["password"]).decode()
    ledger = {"ROCKETMQ_ACCESS_KEY": LEDGER, "ROCKETMQ_SECRET_KEY": password}
    sent = _accepted(group, "ledger-app", 10, env=ledger)
    assert sent["acknowledged"] == 10, sent

    # The password changed in the Secret, as a rotation job would: the new one accepted, the old refused.
    rotated = {**ledger, "ROCKETMQ_SECRET_KEY": password + "-rotated"}
    node.kubectl("-n", NS, "patch", "secret", f"{LEDGER}-credentials", "--type=merge", "-p",
                 json.dumps({"stringData": {"password": rotated["ROCKETMQ_SECRET_KEY"]}}))  # fmt: skip
    _accepted(group, "ledger-app-rotated", 5, env=rotated)
    _refused(group, "ledger-app-old-password", ledger, "the old password after the rotation")

    # The rules changed: Pub removed from the topic, so a send is refused while the user still authenticates.
    node.kubectl("-n", NS, "patch", "user", LEDGER, "--type=json", "-p",
                 json.dumps([{"op": "replace", "path": "/spec/acls/0/actions", "value": ["Sub", "Get"]}]))  # fmt: skip
    _refused(group, "ledger-app-no-pub", rotated, "a send after Pub was removed from the user's rules")

    # Deleted: the finalizer holds until every replica has confirmed it gone; then its credentials are refused.
    node.kubectl("-n", NS, "delete", "user", LEDGER, "--wait=true", "--timeout=120s")
    admin = SessionCredentials("rocketmq-admin", PASSWORDS["rocketmq-admin"])
    assert _held_by(group, admin, LEDGER) == dict.fromkeys(group.pods(), False)
    _refused(group, "ledger-app-deleted", rotated, "a send by the deleted user")
    assert {pod: group.jvm_pid(pod)[0] for pod in group.pods()} == jvms, "a broker JVM restarted"


ADMIN_SECRET = "rocketmq-admin"
NEW_ADMIN = SessionCredentials("rocketmq-admin-2", "rotated-admin-password")


def _auth_status(group: Any) -> dict[str, Any]:
    return dict(group.status().get("auth") or {})


def _patch_admin(node: Any, username: str, password: str) -> None:
    node.kubectl("-n", NS, "patch", "secret", ADMIN_SECRET, "--type=merge", "-p",
                 json.dumps({"stringData": {"username": username, "password": password}}))  # fmt: skip


def _plugin(node: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return kubectl_rocketmq(node, NS, *args)


def _admin_rotated(group: Any, node: Any) -> None:
    """The admin rotation (issue 33, docs/auth.md "Rotating the admin") under a producer signed as orders-app: a new
    password under the same name refused (and the old admin still in use), then a new admin name created on every
    replica and switched to with no broker restart, a master SIGKILL right after handled by the operator, the old
    admin kept while pods started before the switch run, and deleted from every replica once `kubectl rocketmq
    restart` re-created them (and the proxy rolled onto the new admin): its password refused from then on."""
    old = SessionCredentials(ADMIN_SECRET, PASSWORDS[ADMIN_SECRET])
    jvms = {pod: group.jvm_pid(pod)[0] for pod in group.pods()}
    producer = "produce-through-rotation"
    group.produce(producer, 40_000, "--rate", "100", "--timeout", "3", "--retries", "2", "--report-keys",
                  wait=False, env=APP)  # fmt: skip
    with group.interrupted_on_failure(producer):
        _patch_admin(node, old.access_key, "changed-in-place")
        node.wait_for("the in-place password change refused", lambda: _auth_status(group).get("phase") == "Refused",
                      120, 1)  # fmt: skip
        refusal = _auth_status(group)["message"]
        assert refusal.startswith(f"spec.auth.adminSecret: the password of admin '{old.access_key}' changed; rule:")
        assert "changed-in-place" not in json.dumps(group.status()), "a password in the status"
        assert all(_held_by(group, old, old.access_key).values())  # the operator still signs as the old admin
        _patch_admin(node, NEW_ADMIN.access_key, NEW_ADMIN.secret_key)

        def switched() -> bool:
            auth = _auth_status(group)
            return auth.get("admin") == NEW_ADMIN.access_key and bool(auth.get("retiringAdmins"))

        node.wait_for("the admin switched to the new name", switched, 180, 1)
        assert [r["user"] for r in _auth_status(group)["retiringAdmins"]] == [old.access_key]
        assert all(_held_by(group, NEW_ADMIN, NEW_ADMIN.access_key).values())
        assert all(_held_by(group, NEW_ADMIN, old.access_key).values()), "the old admin deleted too early"
        assert {pod: group.jvm_pid(pod)[0] for pod in group.pods()} == jvms, "a broker JVM restarted"
        # Right after: the operator, signing as the new admin, still observes and fails over.
        master = group.master()
        assert master is not None
        group.kill_jvm(master)
        node.wait_for(f"a master other than {master}", lambda: group.master() not in (None, master), 300, 1)
        group.wait_healthy()
        assert _auth_status(group)["retiringAdmins"], "retired while a pod started before the switch runs"
    group.interrupt(producer)
    during = group.tool_result(producer)
    read = group.consume_all("rotation-read", env=APP, report_keys=True)
    loss = reports_no_loss_failure([during], read)
    assert loss is None, loss
    print(f"{producer}: sent {during['sent']}, acknowledged {during['acknowledged']}")

    restart = _plugin(node, "restart", "broker-a")
    assert restart.returncode == 0, restart.stderr
    node.wait_for("the old admin retired", lambda: not _auth_status(group).get("retiringAdmins"), 900, 2)
    group.wait_healthy()
    assert _held_by(group, NEW_ADMIN, old.access_key) == dict.fromkeys(group.pods(), False)
    proxies = node.json("-n", NS, "get", "pods", "-l", PROXY_PODS)["items"]
    assert {p["metadata"]["annotations"].get("rocketmq-operator.dev/admin-user") for p in proxies} == {
        NEW_ADMIN.access_key
    }
    refused = _held_by_or_error(group, old)
    assert refused and all(isinstance(v, str) for v in refused.values()), refused
    group.wait_healthy()
    after = _accepted(group, "auth-app-after-rotation", 10)
    assert after["acknowledged"] == 10


def _held_by_or_error(group: Any, admin: SessionCredentials) -> dict[str, object]:
    """Each replica asked AUTH_GET_USER signed as ``admin``: its answer, or the refusal's text."""
    addresses = {n: f"{p['status']['podIP']}:10911" for n, p in group.pods().items()}

    async def ask() -> dict[str, object]:
        client = RemotingClient(credentials_by_addr=dict.fromkeys(addresses.values(), admin))
        out: dict[str, object] = {}
        try:
            for name, address in addresses.items():
                try:
                    out[name] = await AuthAdmin(client).get_user(address, admin.access_key, timeout=5.0)
                except Exception as exc:  # a refusal: the broker answered, and said no
                    out[name] = str(exc)
            return out
        finally:
            await client.close()

    return asyncio.run(ask())


def _through_the_proxy(node: Any) -> set[str]:
    """The example's Proxy (spec.auth) from the host, at its pod's address, as RocketMQ 5's gRPC client sees it: an
    unsigned send refused, the user's sends acknowledged and received by its SimpleConsumer. Returns the keys the
    proxy acknowledged (read back after the master kill with the rest)."""
    wait_proxy_ready(node, NS, "proxy", 1)
    pods = [p for p in node.json("-n", NS, "get", "pods", "-l", PROXY_PODS)["items"] if pod_ready(p)]
    endpoint = f"{pods[0]['status']['podIP']}:8081"
    anonymous = send_keys(endpoint, "orders", ["auth-grpc-anonymous"])
    assert not any(s.ok for s in anonymous), anonymous
    keys = [f"auth-grpc-{i}" for i in range(20)]
    credentials = SessionCredentials(APP["ROCKETMQ_ACCESS_KEY"], APP["ROCKETMQ_SECRET_KEY"])
    with GrpcProducer(endpoint, "orders", credentials=credentials, busy_resends=5) as producer:
        # The bodies the read-back below checks (`consume` counts a body that is not the key's as a mismatch).
        sent = [producer.send(seq, key, body_for(key, 128)) for seq, key in enumerate(keys)]
    assert all(s.ok for s in sent), [(s.key, s.status, s.error) for s in sent if not s.ok][:3]
    got = receive_keys(endpoint, "orders-readers", "orders", keys, idle_s=30, credentials=credentials)
    assert not missing_acknowledged(set(keys), got), sorted(set(keys) - got)[:10]
    return set(keys)


def test_auth_example_refuses_unsigned_clients_and_serves_its_users(group_in: Callable[..., Any]) -> None:
    group = group_in(NS)
    node = group.node
    node.ensure_namespaces(NS)  # made by install_operator too
    try:
        apply_example(node, NS, EXAMPLE)
        seconds = group.wait_healthy(timeout=900)
        print(f"auth example apply -> healthy in {seconds:.0f}s")

        config = node.json("-n", NS, "get", "configmap", "broker-a-config")
        assert not [p for p in PASSWORDS.values() if p in json.dumps(config)]
        copy = node.json("-n", NS, "get", "secret", "broker-a-auth-config")
        assert [r["kind"] for r in copy["metadata"]["ownerReferences"]] == ["BrokerGroup"]

        first = _accepted(group, "auth-app", 20)
        through_proxy = _through_the_proxy(node)
        anonymous = group.produce("auth-anonymous", 5, "--retries", "0")
        assert anonymous is not None and anonymous["acknowledged"] == 0, anonymous
        wrong = group.produce("auth-wrong", 5, "--retries", "0", env={**APP, "ROCKETMQ_SECRET_KEY": "not-the-password"})
        assert wrong is not None and wrong["acknowledged"] == 0, wrong

        old = group.master()
        assert old is not None
        group.kill_jvm(old)
        node.wait_for(f"a master other than {old}", lambda: group.master() not in (None, old), 300, 1)
        after = _accepted(group, "auth-app-after-kill", 20)

        read = group.consume_all("auth-read", env=APP, report_keys=True)
        assert read["body_mismatches"] == 0
        loss = reports_no_loss_failure([first, after], read)  # by key: every acknowledged key read back
        assert loss is None, loss
        loss = no_loss_failure(through_proxy, read_keys(read))  # the gRPC client's too
        assert loss is None, loss
        acked = first["acknowledged"] + after["acknowledged"]
        assert read["unique"] >= acked, read
        group.wait_healthy()
        _users_as_resources(group, node)
        _admin_rotated(group, node)
    finally:
        node.delete_namespace(NS)
