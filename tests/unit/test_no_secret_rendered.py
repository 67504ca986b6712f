"""No password from a Secret that spec.auth names reaches what the operator renders or reports.

Inputs: every example under examples/ with a BrokerGroup that sets spec.auth, read with the Secret documents
given beside it (a User's spec.passwordSecret counted among the passwords), plus a synthetic manifest with
distinctive passwords (admin and users, one Secret holding two users' keys). The passwords are the values of the
keys spec.auth points at (adminSecret's `password`, each user's passwordSecret key); user names and Secret names
are not secret and are allowed to appear.

What is checked, and only that:

* Kubernetes renderer (`render_all`): it is handed the typed resources only, never a Secret's data, so this pins
  that interface rather than inspecting an internal leak. Every rendered object — ConfigMap data, StatefulSet env
  and annotations included — is searched whole, with spec.auth.enabled as written (true: the StatefulSet mounts
  the `<group>-auth-config` Secret by name) and flipped to false.
* Local platform: the conf/<replica>.conf texts (`render_configs`, what a ConfigMap holds on Kubernetes), the
  state document (`desired_state(...).to_json()`) and the manifest copy it writes are searched. As a control, the
  admin password does reach the one place meant for it: `run_config_keys` (the broker's run config, 0600), and
  secrets.json is written 0600.
* Status and Events: `core.status.build_broker_status` on plain state, and on Kubernetes a reconcile and two
  group passes (a master change between them, so a MasterChanged Event is posted) against the in-memory API
  (kube_fake.FakeApi) holding the Secrets: every object the passes wrote (the Secrets themselves excepted), every
  Event and every log record are searched. As a control, the admin password does reach the one object meant for
  it: the `<group>-auth-config` Secret the operator writes for the brokers to mount.

Not checked here: the broker processes' own logs (the auth integration test greps them), the remoting client's
wire traffic, and the broker's copy of its config on its data volume, which holds the admin password by design
(as the local run config does).
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_fake import FakeApi

from rocketmq_operator.api.models import BrokerGroup, User
from rocketmq_operator.api.validation import validate_document
from rocketmq_operator.control.auth import AuthReport, needed_secrets
from rocketmq_operator.control.policy import PolicyOutcome
from rocketmq_operator.core.auth import plan_auth
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.core.status import build_broker_status
from rocketmq_operator.platforms.kubernetes import group_pass
from rocketmq_operator.platforms.kubernetes import users as kubernetes_users
from rocketmq_operator.platforms.kubernetes.group_memory import GroupMemory
from rocketmq_operator.platforms.kubernetes.metrics import OperatorMetrics
from rocketmq_operator.platforms.kubernetes.reconcile import reconcile
from rocketmq_operator.platforms.local.auth import run_config_keys, select_secrets, store_secrets
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import port_needs, render_configs
from rocketmq_operator.platforms.local.ports import pack
from rocketmq_operator.platforms.local.roll import desired_state
from rocketmq_operator.remoting.connection import ClientPool
from rocketmq_operator.render.kubernetes import render_all
from rocketmq_operator.render.kubernetes.names import LABEL_GROUP

ROOT = Path(__file__).resolve().parents[2]
JSON = dict[str, Any]

SYNTHETIC: list[JSON] = [
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "admin"},
     "stringData": {"username": "ops-admin", "password": "Adm1n-Zq9xW7-secret"}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "apps"},
     "stringData": {"billing": "B1ll-Kp4vR2-secret", "audit": "Aud1t-Tn8yH5-secret"}},
    {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "ControllerGroup", "metadata": {"name": "ctl"},
     "spec": {"replicas": 3}},
    {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "BrokerGroup", "metadata": {"name": "broker-a"},
     "spec": {"replicas": 3, "controllerRef": {"name": "ctl"},
              "auth": {"enabled": True, "adminSecret": "admin", "users": [
                  {"name": "billing", "passwordSecret": {"name": "apps", "key": "billing"},
                   "acls": [{"resource": "Topic:bills", "actions": ["Pub", "Sub"]}]},
                  {"name": "audit", "type": "Super", "passwordSecret": {"name": "apps", "key": "audit"}}]}}},
]  # fmt: skip


def _auth_examples() -> list[Path]:
    out = []
    for path in sorted(ROOT.joinpath("examples").rglob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        if any(d.get("kind") == "BrokerGroup" and "auth" in (d.get("spec") or {}) for d in docs):
            out.append(path)
    return out


AUTH_EXAMPLES = _auth_examples()
CASES: dict[str, list[JSON]] = {
    **{str(p.relative_to(ROOT)): list(yaml.safe_load_all(p.read_text())) for p in AUTH_EXAMPLES},
    "synthetic": SYNTHETIC,
}


def test_the_examples_with_auth_are_found() -> None:
    assert [p.relative_to(ROOT).as_posix() for p in AUTH_EXAMPLES] == ["examples/auth.yaml", "examples/users.yaml"]


class Manifests:
    def __init__(self, docs: list[JSON]) -> None:
        reports = [validate_document(copy.deepcopy(d)) for d in docs if d]
        assert all(r.ok for r in reports), [str(p) for r in reports for p in r.errors]
        self.docs = [d for d in docs if d and d.get("kind") != "Secret"]
        self.secret_docs = [d for d in docs if d and d.get("kind") == "Secret"]
        self.resources = [r.resource for r in reports if r.resource is not None]
        self.secrets = {r.secret.name: r.secret for r in reports if r.secret is not None}
        self.passwords: set[str] = set()
        for bg in (r for r in self.resources if isinstance(r, BrokerGroup)):
            for _, name, keys in needed_secrets(bg):
                self.passwords |= {self.secrets[name].data[k] for k in keys if k != "username"}
        for user in (r for r in self.resources if isinstance(r, User) and r.spec.password_secret is not None):
            self.passwords.add(self.secrets[user.password_ref.name].data[user.password_ref.key])
        assert self.passwords and all(len(p) >= 8 for p in self.passwords)

    def auth_off(self) -> list[Any]:
        out = []
        for r in self.resources:
            if isinstance(r, BrokerGroup):
                r = r.model_copy(deep=True)
                r.spec.auth.enabled = False
            out.append(r)
        return out


def _leaks(text: str, passwords: set[str]) -> list[str]:
    return sorted(p for p in passwords if p in text)


@pytest.fixture(params=sorted(CASES), ids=sorted(CASES))
def manifests(request: pytest.FixtureRequest) -> Manifests:
    return Manifests(CASES[request.param])


# --- Kubernetes renderer ---


def test_kubernetes_render_of_auth_groups_mounts_the_secret_by_name_only(manifests: Manifests) -> None:
    objects = render_all(manifests.resources)
    for obj in objects:
        assert _leaks(json.dumps(obj), manifests.passwords) == [], f"{obj['kind']}/{obj['metadata']['name']}"
    auth_groups = {r.metadata.name for r in manifests.resources if isinstance(r, BrokerGroup) and r.spec.auth.enabled}
    mounted = {
        o["metadata"]["name"]
        for o in objects
        if o["kind"] == "StatefulSet"
        and any(
            (v.get("secret") or {}).get("secretName") == f"{o['metadata']['name']}-auth-config"
            for v in o["spec"]["template"]["spec"]["volumes"]
        )
    }
    assert auth_groups and mounted == auth_groups


def test_kubernetes_render_holds_no_password(manifests: Manifests) -> None:
    objects = render_all(manifests.auth_off())
    kinds = {o["kind"] for o in objects}
    assert {"ConfigMap", "StatefulSet"} <= kinds
    for obj in objects:
        assert _leaks(json.dumps(obj), manifests.passwords) == [], f"{obj['kind']}/{obj['metadata']['name']}"
    # The places a leak would most likely land, named so a failure says where.
    for obj in objects:
        if obj["kind"] == "ConfigMap":
            assert _leaks("\n".join(obj["data"].values()), manifests.passwords) == []
        if obj["kind"] == "StatefulSet":
            pod = obj["spec"]["template"]
            env = json.dumps([c.get("env") for c in pod["spec"]["containers"]])
            assert _leaks(env + json.dumps(pod["metadata"].get("annotations")), manifests.passwords) == []


# --- local platform ---


def test_local_configs_and_state_hold_no_password_and_the_run_config_does(manifests: Manifests, tmp_path: Path) -> None:
    layout = StateLayout(tmp_path / "state")
    resources = manifests.resources
    ports = pack(port_needs(resources), 20000)
    texts = render_configs(resources, ports, layout)
    assert texts
    for replica, text in texts.items():
        assert _leaks(text, manifests.passwords) == [], replica
    state = desired_state(resources, ports, layout, files=["m.yaml"], texts=texts, log=lambda *_: None)
    assert _leaks(json.dumps(state.to_json()), manifests.passwords) == []
    assert _leaks(yaml.safe_dump_all(state.resources), manifests.passwords) == []  # the manifest copy

    # Control: the admin password does reach the broker's run config, and only through run_config_keys.
    layout.ensure()
    store_secrets(layout, select_secrets(resources, manifests.secrets))
    assert stat.S_IMODE(os.stat(layout.secrets).st_mode) == 0o600
    for bg in (r for r in resources if isinstance(r, BrokerGroup)):
        admin = manifests.secrets[bg.spec.auth.admin_secret or ""].data["password"]
        group = state.group(bg.metadata.name)
        assert group is not None
        for replica in group.replicas:
            assert admin in json.dumps(run_config_keys(state, replica))
    controllers = [r.name for r in state.replicas if r.kind == "ControllerGroup"]
    assert controllers and all(run_config_keys(state, name) == {} for name in controllers)


# --- status and Events ---


def _state(master: int) -> GroupState:
    addr = {i: f"10.0.0.{i + 1}:10911" for i in range(3)}
    return GroupState(
        group="broker-a",
        observed_at=time.time(),
        controller_mode=True,
        controller_reachable=True,
        controller_leader="ctl:9878",
        master_broker_id=master + 1,
        master_address=addr[master],
        master_epoch=master + 1,
        sync_state_set=(1, 2, 3),
        replicas=tuple(
            ReplicaObservation(f"broker-a-{i}", addr[i], True, broker_id=i + 1, is_master=i == master, max_offset=10)
            for i in range(3)
        ),
    )


def test_status_documents_hold_no_password() -> None:
    m = Manifests(SYNTHETIC)
    bg = next(r for r in m.resources if isinstance(r, BrokerGroup))
    first = build_broker_status(bg.spec, _state(0), None, "2026-01-01T00:00:00Z", 1)
    second = build_broker_status(bg.spec, _state(1), first, "2026-01-01T00:00:10Z", 1)
    assert second.history  # the master change is recorded
    for status in (first, second):
        assert _leaks(status.model_dump_json(by_alias=True), m.passwords) == []


def test_kubernetes_passes_write_no_password_to_status_events_or_logs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    m = Manifests(SYNTHETIC)
    fake = FakeApi()
    for doc in [*m.secret_docs, *m.docs]:
        fake.put(doc)
    # Two User resources on the group: one with its own Secret, one with the Secret the operator generated.
    user_passwords = {"L3dg-Wq5tB8-secret", "R3p0-Xc7uN2-secret"}
    fake.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ledger-pw", "namespace": "ns"},
              "stringData": {"password": "L3dg-Wq5tB8-secret"}})  # fmt: skip
    fake.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "reports-credentials", "namespace": "ns"},
              "stringData": {"username": "reports", "password": "R3p0-Xc7uN2-secret"}})  # fmt: skip
    for name, extra in (("ledger", {"passwordSecret": {"name": "ledger-pw"}}), ("reports", {})):
        fake.put({"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "User", "metadata": {"name": name},
                  "spec": {"brokerGroups": ["broker-a"], **extra,
                           "acls": [{"resource": f"Topic:{name}", "actions": ["Pub"]}]}})  # fmt: skip
    for i in range(3):
        fake.put({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": f"broker-a-{i}",
                               "labels": {LABEL_GROUP: "broker-a", "app.kubernetes.io/component": "broker"}},
                  "status": {"podIP": f"10.0.0.{i + 1}"}})  # fmt: skip
    observed = {"state": _state(0)}
    events: list[JSON] = []

    async def observe_groups(*_: Any, **__: Any) -> Any:
        return {"broker-a": observed["state"]}

    async def reassert_topics(*_: Any) -> bool:
        return True

    asserted: list[list[str]] = []

    async def assert_users(_client: Any, state: GroupState, wanted: Any, _memory: Any, **_: Any) -> AuthReport:
        # What the real executor reports for a replica that has none of the users yet (plan_auth's lines).
        asserted.append([u.name for u in wanted])
        lines = [a.describe() for a in plan_auth(wanted, {u.name: None for u in wanted})]
        done = [f"{r.name}: {line}" for r in state.replicas for line in lines]
        return AuthReport(state.group, asserted=[r.name for r in state.replicas], done=done)

    async def run_replication_policy(*_: Any, **__: Any) -> PolicyOutcome:
        return PolicyOutcome()

    monkeypatch.setattr(group_pass, "observe_groups", observe_groups)
    monkeypatch.setattr(group_pass, "reassert_topics", reassert_topics)
    monkeypatch.setattr(group_pass, "run_replication_policy", run_replication_policy)
    monkeypatch.setattr(kubernetes_users, "assert_users", assert_users)
    monkeypatch.setattr(group_pass.kopf, "event", lambda *a, **k: events.append(k))

    class Brokers:
        def __init__(self) -> None:
            self.configs: dict[str, dict[str, str]] = {}

        async def get_broker_config(self, addr: str, **_: Any) -> dict[str, str]:
            return dict(self.configs.get(addr, {}))

        async def update_broker_config(self, addr: str, config: dict[str, str], **_: Any) -> None:
            self.configs.setdefault(addr, {}).update(config)

        def with_name_servers(self, *_: Any) -> Any:
            return self

        pool = ClientPool()

    caplog.set_level(logging.DEBUG)
    for kind, name in (("ControllerGroup", "ctl"), ("BrokerGroup", "broker-a")):
        body = asyncio.run(fake.get(kind, "ns", name))
        asyncio.run(reconcile(fake, body))  # type: ignore[arg-type]
    memory = GroupMemory()
    brokers = Brokers()
    for master in (0, 1):
        observed["state"] = _state(master)
        body = asyncio.run(fake.get("BrokerGroup", "ns", "broker-a"))
        logger = logging.getLogger("test")
        asyncio.run(group_pass.observe_pass(fake, brokers, OperatorMetrics(), body, memory, logger))  # type: ignore[arg-type]

    bg = fake.objects[("BrokerGroup", "ns", "broker-a")]
    reconciled = {c["type"]: c for c in bg["status"]["conditions"]}["Reconciled"]
    assert reconciled["status"] == "True", reconciled
    # Control: the admin password is in the Secret the brokers mount, and the operator signs with it.
    admin = fake.objects[("Secret", "ns", "broker-a-auth-config")]
    assert "Adm1n-Zq9xW7-secret" in json.dumps(admin["stringData"])
    assert {c.secret_key for c in brokers.pool.credentials_by_addr.values()} == {"Adm1n-Zq9xW7-secret"}
    assert set(brokers.pool.credentials_by_addr) == {f"10.0.0.{i + 1}:10911" for i in range(3)}
    assert asserted == [["billing", "audit", "ledger", "reports"]] * 2
    users = {n: fake.objects[("User", "ns", n)]["status"] for n in ("ledger", "reports")}
    assert {n: s["secret"] for n, s in users.items()} == {"ledger": "ledger-pw", "reports": "reports-credentials"}
    assert all(s["placements"][0]["asserted"] == 3 for s in users.values()), users
    m.passwords |= user_passwords
    assert any("create-user billing" in r.getMessage() for r in caplog.records), [
        r.getMessage() for r in caplog.records
    ]
    assert any(e.get("reason") == "MasterChanged" for e in events)
    written = [obj for key, obj in fake.objects.items() if key[0] != "Secret"]
    assert _leaks(json.dumps(written), m.passwords) == []
    assert _leaks(json.dumps(events), m.passwords) == []
    assert _leaks("\n".join(r.getMessage() for r in caplog.records), m.passwords) == []
