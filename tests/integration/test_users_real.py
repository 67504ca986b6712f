"""User resources on real brokers (local platform, examples/users.yaml: one controller, three brokers with spec.auth),
measured as the client sees it, on one cluster through every step:

1. `local up`: orders-service (its password from a Secret of the manifests) sends to and reads the topic, signed;
   billing (no passwordSecret) authenticates with the password the platform generated into secrets.json, which
   `local up` told where to find and did not print;
2. `local apply` of billing with Pub removed from its rules: its send is refused (orders-service still sends);
3. `local apply` without orders-service (deletionPolicy Delete): no replica holds it any more (AUTH_GET_USER, signed
   as the admin, answers nothing on each), its send is refused, the pending removal leaves users.json, and billing,
   still declared, stays on every replica;
4. through all of it, no process restarted: every pid (brokers and controller) is the one `local up` started.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml
from outcomes import LOAD_FAILURES
from polling import until

from rocketmq_operator.platforms.local.auth import read_secrets, state_client
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.state import read_state
from rocketmq_operator.platforms.local.users import read_users_record
from rocketmq_operator.remoting import RemotingException
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.remoting.auth_admin import AuthAdmin
from rocketmq_operator.tools.produce import DEFAULT_RETRIES, ProduceReport
from signed_clients import signed_read, signed_send

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
USERS = ROOT / "examples" / "users.yaml"
GROUP = "broker-a"
TOPIC = "orders"
READERS = "orders-readers"
COUNT = 100


def _documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(USERS.read_text(encoding="utf-8")) if d]


SERVICE = SessionCredentials(
    "orders-service",
    next(d for d in _documents() if d["kind"] == "Secret" and d["metadata"]["name"] == "orders-service")["stringData"][
        "password"
    ],
)


def _edited(path: Path, *, billing_actions: list[str] | None = None, drop: str | None = None) -> Path:
    """examples/users.yaml with billing's rule on the topic given other actions, or a User left out."""
    docs = []
    for doc in _documents():
        if doc["kind"] == "User" and doc["metadata"]["name"] == drop:
            continue
        if doc["kind"] == "User" and doc["metadata"]["name"] == "billing" and billing_actions is not None:
            doc["spec"]["acls"] = [{"resource": f"Topic:{TOPIC}", "actions": billing_actions}]
        docs.append(doc)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return path


def _send(namesrv: str, count: int, credentials: SessionCredentials, retries: int = 1) -> ProduceReport:
    return signed_send(namesrv, TOPIC, count, credentials, retries)


def _read(namesrv: str, credentials: SessionCredentials) -> set[str]:
    return signed_read(namesrv, TOPIC, READERS, credentials)


def _serving(cluster: Any, doc: dict[str, Any]) -> bool:
    g = cluster.group(GROUP, doc)
    return bool((g.get("master") or {}).get("address")) and g.get("writable") is True


def _pids(cluster: Any) -> dict[str, int | None]:
    return {p["name"]: p["pid"] for p in cluster.observe()["processes"]}


def _held_by(state_dir: Path, user: str) -> dict[str, bool | None]:
    """Each replica of the group → whether it holds ``user`` (AUTH_GET_USER signed as the admin; None: no answer)."""
    state = read_state(StateLayout(state_dir).state_file)
    info = state.group(GROUP)
    assert info is not None
    addresses = {name: r.address for name in info.replicas if (r := state.replica(name)) is not None}

    async def ask() -> dict[str, bool | None]:
        out: dict[str, bool | None] = {}
        async with state_client(state, request_timeout=3.0) as client:
            admin = AuthAdmin(client)
            for name, addr in sorted(addresses.items()):
                try:
                    out[name] = await admin.get_user(addr, user, timeout=3.0) is not None
                except (RemotingException, OSError):
                    out[name] = None
        return out

    return asyncio.run(ask())


def _refused(namesrv: str, credentials: SessionCredentials, what: str) -> ProduceReport:
    """One send at a time, no retries, until one is refused: the supervisor applies a change at its next pass."""
    return until(what, lambda: (r := _send(namesrv, 1, credentials)).acknowledged == 0 and r, timeout=90)


def test_user_resources_are_created_changed_and_deleted_on_every_replica_without_a_restart(
    local_platform: Any, tmp_path: Path
) -> None:
    with local_platform.up(USERS, name="users") as cluster:
        doc = cluster.wait_for("a writable master", lambda d: _serving(cluster, d), timeout=180)
        namesrv = ";".join(doc["nameServers"])
        layout = StateLayout(cluster.state_dir)
        started = _pids(cluster)
        assert all(started.values()), started

        # 1. The passwordSecret user sends and reads back, signed.
        until("orders-service to be accepted", lambda: _send(namesrv, 5, SERVICE).acknowledged == 5)
        report = _send(namesrv, COUNT, SERVICE, retries=DEFAULT_RETRIES)
        assert report.acknowledged > COUNT // 2 and set(report.failures) <= LOAD_FAILURES, report.failures
        acknowledged = {r.key for r in report.records if r.stored}
        got = until(
            "orders-service reads back what it sent", lambda: acknowledged <= (g := _read(namesrv, SERVICE)) and g
        )
        assert acknowledged <= got

        # The generated password: in secrets.json, said where by `local up`, never printed.
        generated = read_secrets(layout)["billing-credentials"]
        assert generated["username"] == "billing" and len(generated["password"]) == 32
        assert "User/billing: user 'billing', password generated into Secret 'billing-credentials'" in cluster.up_output
        assert str(layout.secrets) in cluster.up_output
        assert generated["password"] not in cluster.up_output
        assert generated["password"] not in layout.supervisor_log.read_text(encoding="utf-8")
        billing = SessionCredentials("billing", generated["password"])
        until("billing (generated password) to be accepted", lambda: _send(namesrv, 3, billing).acknowledged == 3)
        wrong = _send(namesrv, 2, SessionCredentials("billing", "not-the-password"))
        assert wrong.acknowledged == 0, wrong.statuses

        # 2. billing's rules changed by `local apply`: Pub removed, so its send is refused.
        applied = cluster.cli("apply", "-f", str(_edited(tmp_path / "no-pub.yaml", billing_actions=["Sub"])))
        assert "User/billing: changed (asserted on every replica, no restart)" in applied.stdout, applied.stdout
        assert "password generated" not in applied.stdout  # kept, not made again
        _refused(namesrv, billing, "billing's send refused once Pub is removed")
        assert read_secrets(layout)["billing-credentials"] == generated
        control = until("orders-service still accepted", lambda: (r := _send(namesrv, 3, SERVICE)).ok and r)
        assert control.acknowledged == 3

        # 3. orders-service removed from the manifests (deletionPolicy Delete): deleted from every replica.
        assert all(_held_by(cluster.state_dir, SERVICE.access_key).values())
        without = _edited(tmp_path / "without-service.yaml", billing_actions=["Sub"], drop="orders-service")
        applied = cluster.cli("apply", "-f", str(without))
        assert "User/orders-service: removed (deletionPolicy Delete: deleted from every replica)" in applied.stdout
        held = until(
            "no replica holding orders-service",
            lambda: (
                (h := _held_by(cluster.state_dir, SERVICE.access_key)) and all(v is False for v in h.values()) and h
            ),
            timeout=90,
        )
        assert len(held) == 3, held
        refused = _send(namesrv, 3, SERVICE)
        assert refused.acknowledged == 0, refused.statuses
        until("the removal confirmed in users.json", lambda: read_users_record(layout).removing == {}, timeout=60)
        assert read_users_record(layout).held == {GROUP: {"billing": "Delete"}}
        assert all(v is True for v in _held_by(cluster.state_dir, "billing").values())

        # 4. No restart: every process is the one `local up` started.
        assert _pids(cluster) == started, json.dumps({"before": started, "after": _pids(cluster)})

        _admin_rotated(cluster, layout, without, tmp_path, started)


NEW_ADMIN = {"username": "rocketmq-admin-2", "password": "rotated-admin-password"}


def _with_admin(path: Path, source: Path, admin: dict[str, str]) -> Path:
    docs = [d for d in yaml.safe_load_all(source.read_text(encoding="utf-8")) if d]
    for doc in docs:
        if doc["kind"] == "Secret" and doc["metadata"]["name"] == "rocketmq-admin":
            doc["stringData"] = dict(admin)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return path


def _admin_rotated(cluster: Any, layout: StateLayout, manifests: Path, tmp_path: Path, started: dict[str, Any]) -> None:
    """5. The admin rotation (docs/auth.md, "Rotating the admin"; the Kubernetes e2e test runs the same operation):
    a new password under the admin's name refused by `local apply` in one line; a new name created on every
    replica and switched to by the supervisor with no restart, the old admin kept while brokers started before the
    switch run; each broker SIGKILLed (the supervisor restarts it with the new admin): the old admin deleted from
    every replica."""
    from rocketmq_operator.platforms.local.auth import configured_admin, read_admins, retiring_admins

    old_user = "rocketmq-admin"
    same_name = _with_admin(tmp_path / "same-name.yaml", manifests, {"username": old_user, "password": "changed"})
    refused = cluster.cli("apply", "-f", str(same_name), check=False)
    assert refused.returncode != 0, refused.stdout
    said = [x for x in (refused.stdout + refused.stderr).splitlines() if "spec.auth.adminSecret" in x]
    assert len(said) == 1, refused.stdout + refused.stderr
    assert f"spec.auth.adminSecret: the password of admin '{old_user}' changed; rule:" in said[0], said
    assert "changed'" not in said[0]

    cluster.cli("apply", "-f", str(_with_admin(tmp_path / "new-admin.yaml", manifests, NEW_ADMIN)))

    def switched() -> bool:
        entry = read_admins(layout).get(GROUP)
        admin = configured_admin(entry)
        return admin is not None and admin.user == NEW_ADMIN["username"] and bool(retiring_admins(entry))

    until("the supervisor switched to the new admin", switched, timeout=90)
    assert all(_held_by(cluster.state_dir, NEW_ADMIN["username"]).values())
    assert all(_held_by(cluster.state_dir, old_user).values()), "the old admin deleted while brokers use it"
    assert _pids(cluster) == started, "a process restarted for the rotation"
    doc = cluster.wait_for("a writable master signed as the new admin", lambda d: _serving(cluster, d))
    assert doc

    state = read_state(layout.state_file)
    info = state.group(GROUP)
    assert info is not None
    for name in info.replicas:
        before = _pids(cluster)[name]
        assert before is not None
        os.kill(before, signal.SIGKILL)
        cluster.wait_for(
            f"{name} restarted and the group writable",
            lambda d, n=name, b=before: _pids(cluster).get(n) not in (None, b) and _serving(cluster, d),
            timeout=180,
        )
    until("the old admin retired", lambda: not retiring_admins(read_admins(layout).get(GROUP)), timeout=120)
    held = _held_by(cluster.state_dir, old_user)
    assert held and all(v is False for v in held.values()), held
