"""User resources on the local platform, on plain data: the Secrets checked and the generated passwords (made once,
kept across applies, never printed), which users a group holds, which removals are pending after an apply and when
they are done, and the supervisor's AuthPolicy asserting and removing them (its executor replaced), resumed by a
new policy as after a supervisor restart. No process runs."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_local_apply import running_from

from rocketmq_operator.api.models import BrokerGroup, User
from rocketmq_operator.api.validation import SecretDoc
from rocketmq_operator.cli import main
from rocketmq_operator.control.auth import AuthMemory, AuthReport
from rocketmq_operator.core.auth import WantedUser
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.platforms.local import auth as local_auth
from rocketmq_operator.platforms.local import roll
from rocketmq_operator.platforms.local.auth import AuthPolicy, AuthSecretError, read_secrets, select_secrets
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import load_resources
from rocketmq_operator.platforms.local.state import read_state, write_state
from rocketmq_operator.platforms.local.users import (
    UsersRecord,
    describe_user_changes,
    generated_password_lines,
    next_users_record,
    read_users_record,
    removal_confirmed,
    users_on_group,
    with_generated_passwords,
    write_users_record,
)

ROOT = Path(__file__).resolve().parents[3]
USERS = ROOT / "examples" / "users.yaml"
API = "rocketmq-operator.dev/v1alpha1"


def _user(name: str, **spec: Any) -> User:
    return User.model_validate({"apiVersion": API, "kind": "User", "metadata": {"name": name}, "spec": spec})


def _group(name: str = "broker-a", users: Sequence[str] = (), cluster: str = "DefaultCluster") -> BrokerGroup:
    inline = [{"name": u, "passwordSecret": {"name": u}} for u in users]
    return BrokerGroup.model_validate(
        {
            "apiVersion": API,
            "kind": "BrokerGroup",
            "metadata": {"name": name},
            "spec": {
                "replicas": 3,
                "clusterName": cluster,
                "auth": {"enabled": True, "adminSecret": "admin", "users": inline},
            },
        }
    )


def _tokens() -> Any:
    made = iter(f"made-password-{i}" for i in range(100))
    return lambda: next(made)


# --- passwords ---


def test_a_generated_password_is_made_once_and_kept() -> None:
    billing = _user("billing", brokerGroups=["broker-a"])
    given = {"admin": {"username": "admin", "password": "admin-pw"}}
    first, made = with_generated_passwords([billing], given, {}, token=_tokens())
    assert first == {**given, "billing-credentials": {"username": "billing", "password": "made-password-0"}}
    assert made == [billing]
    # `local apply` again, a `local up` after `local down`: the stored password is kept, nothing is made.
    again, made = with_generated_passwords([billing], given, first, token=_tokens())
    assert again == first and made == []
    # A new userName keeps the password (the clients' secretKey), with the new name beside it.
    renamed = _user("billing", brokerGroups=["broker-a"], userName="billing-app")
    after, _ = with_generated_passwords([renamed], given, first, token=_tokens())
    assert after["billing-credentials"] == {"username": "billing-app", "password": "made-password-0"}
    # The User gone: its generated Secret goes with it (as its owned Secret on Kubernetes).
    assert with_generated_passwords([], given, first, token=_tokens())[0] == given


def test_no_password_is_made_for_a_user_with_its_secret_or_one_given_under_the_generated_name() -> None:
    own = _user("orders-service", passwordSecret={"name": "orders-service"})
    preset = _user("billing")
    given = {"orders-service": {"password": "theirs"}, "billing-credentials": {"password": "preset"}}
    stored, made = with_generated_passwords([own, preset], given, {}, token=_tokens())
    assert stored == given and made == []


def test_the_lines_say_where_a_generated_password_is_and_never_hold_it(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path / "my state")
    billing = _user("billing", brokerGroups=["broker-a"])
    own = _user("orders-service", passwordSecret={"name": "orders-service"})
    stored, _ = with_generated_passwords([billing, own], {}, {}, token=_tokens())
    (line,) = generated_password_lines([billing, own], layout)
    assert line.startswith("User/billing: user 'billing', password generated into Secret 'billing-credentials'")
    assert "made-password" not in line
    # The command it prints does print the password.
    layout.ensure()
    local_auth.store_secrets(layout, stored)
    command = line.split("print it: ", 1)[1]
    printed = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True)
    assert printed.stdout == "made-password-0\n"


def _secrets(**data: dict[str, str]) -> dict[str, SecretDoc]:
    return {name: SecretDoc(name, None, values) for name, values in data.items()}


def test_a_users_secret_missing_or_without_its_key_is_refused_in_one_line() -> None:
    own = _user("orders-service", brokerGroups=["broker-a"], passwordSecret={"name": "orders-pw", "key": "secret"})
    with pytest.raises(AuthSecretError) as missing:
        select_secrets([own], {})
    assert str(missing.value).startswith(
        "User/orders-service: spec.passwordSecret: Secret 'orders-pw' is not in the manifests; rule: the local "
        "platform reads Secrets from the manifests it is given; fix: add a document"
    )
    with pytest.raises(AuthSecretError) as keyless:
        select_secrets([own], _secrets(**{"orders-pw": {"password": "x"}}))
    assert str(keyless.value) == (
        "User/orders-service: spec.passwordSecret: Secret 'orders-pw' has no secret; rule: the Secret holds secret; "
        "fix: add secret to its stringData"
    )
    assert select_secrets([own], _secrets(**{"orders-pw": {"secret": "s3"}, "unused": {"a": "b"}})) == {
        "orders-pw": {"secret": "s3"}
    }
    # Without spec.passwordSecret nothing is needed from the manifests; a Secret of the generated name is taken.
    assert select_secrets([_user("billing")], {}) == {}
    taken = select_secrets([_user("billing")], _secrets(**{"billing-credentials": {"password": "p"}}))
    assert taken == {"billing-credentials": {"password": "p"}}


# --- which users a group holds ---


def test_users_on_a_group_by_name_or_cluster_the_admin_and_inline_names_win() -> None:
    bg = _group(users=["orders-app"])
    users = [
        _user("by-name", brokerGroups=["broker-a"], acls=[{"resource": "Topic:orders", "actions": ["Pub"]}]),
        _user("by-cluster", clusterName="DefaultCluster", deletionPolicy="Keep"),
        _user("elsewhere", brokerGroups=["broker-b"]),
        _user("as-admin", brokerGroups=["broker-a"], userName="admin"),
        _user("as-inline", brokerGroups=["broker-a"], userName="orders-app"),
    ]
    secrets = {f"{u.metadata.name}-credentials": {"password": f"pw-{u.metadata.name}"} for u in users}
    placed = users_on_group(bg, users, secrets, "admin")
    assert [(u.name, u.user_type, [e.resource for e in u.entries]) for u in placed.wanted] == [
        ("by-cluster", "Normal", []),
        ("by-name", "Normal", ["Topic:orders"]),
    ]
    assert placed.policies == {"by-cluster": "Keep", "by-name": "Delete"}
    assert [line.split(":", 1)[0] for line in placed.refusals] == ["User/as-admin", "User/as-inline"]
    assert "is the admin of BrokerGroup 'broker-a'" in placed.refusals[0]
    assert all("pw-" not in line for line in placed.refusals)


# --- removals ---


def test_a_delete_user_held_no_more_is_pending_a_keep_user_is_forgotten() -> None:
    old = UsersRecord(held={"broker-a": {"billing": "Delete", "audit": "Keep", "ledger": "Delete"}})
    now = {"broker-a": {"ledger": "Delete"}}
    assert next_users_record(old, now, {}) == UsersRecord(
        held={"broker-a": {"ledger": "Delete"}}, removing={"broker-a": ["billing"]}
    )


def test_pending_removals_stay_until_confirmed_and_go_when_the_name_is_held_again() -> None:
    pending = UsersRecord(held={}, removing={"broker-a": ["billing", "reports"]})
    # Another apply (or a supervisor start) keeps what is still owed.
    assert next_users_record(pending, {"broker-a": {}}, {}).removing == {"broker-a": ["billing", "reports"]}
    # A User giving the name again, or the group's own spec.auth.users or admin taking it: not deleted.
    again = next_users_record(pending, {"broker-a": {"billing": "Keep"}}, {"broker-a": ["reports"]})
    assert again == UsersRecord(held={"broker-a": {"billing": "Keep"}}, removing={})
    # A group gone (or its auth off): nothing left to delete from.
    assert next_users_record(pending, {}, {}) == UsersRecord()


def test_a_user_moved_to_another_group_is_removed_from_the_old_one() -> None:
    old = UsersRecord(held={"broker-a": {"billing": "Delete"}})
    moved = next_users_record(old, {"broker-a": {}, "broker-b": {"billing": "Delete"}}, {})
    assert moved == UsersRecord(held={"broker-b": {"billing": "Delete"}}, removing={"broker-a": ["billing"]})


def test_a_removal_is_done_once_no_replica_is_left_unconfirmed() -> None:
    record = UsersRecord(held={}, removing={"broker-a": ["billing", "reports"], "broker-b": ["billing"]})
    left = {"reports": ["broker-a-2"]}
    after = removal_confirmed(record, "broker-a", ["billing", "reports"], left)
    assert after.removing == {"broker-a": ["reports"], "broker-b": ["billing"]}
    assert removal_confirmed(after, "broker-a", ["reports"], {}).removing == {"broker-b": ["billing"]}


def test_the_record_file_round_trips_and_a_broken_one_reads_empty(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path)
    write_users_record(layout, UsersRecord())
    assert not layout.users.exists()  # nothing to remember: no file
    record = UsersRecord(held={"broker-a": {"billing": "Delete"}}, removing={"broker-b": ["audit"]})
    write_users_record(layout, record)
    assert read_users_record(layout) == record
    assert layout.users in layout.owned()  # `local down --purge` removes it
    layout.users.write_text("{not json", encoding="utf-8")
    assert read_users_record(layout) == UsersRecord()
    layout.users.write_text(json.dumps({"held": [], "removing": {"g": "x"}}), encoding="utf-8")
    assert read_users_record(layout) == UsersRecord()


def test_apply_lines_for_users() -> None:
    old = [_user("a"), _user("b", deletionPolicy="Keep"), _user("c"), _user("d")]
    new = [_user("c", acls=[{"resource": "Topic:t", "actions": ["Sub"]}]), _user("d"), _user("e")]
    assert describe_user_changes(old, new) == [
        "User/a: removed (deletionPolicy Delete: deleted from every replica)",
        "User/b: removed (deletionPolicy Keep: it stays on the brokers)",
        "User/c: changed (asserted on every replica, no restart)",
        "User/e: added (created on every replica of its groups, no restart)",
    ]


# --- `local apply` and the supervisor's AuthPolicy ---


def _running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[StateLayout, list[dict[str, Any]]]:
    """examples/users.yaml as `local up` leaves it, a supervisor said to run and its requests captured."""
    return running_from(USERS, tmp_path, monkeypatch)


def _without(tmp_path: Path, user: str) -> Path:
    docs = [d for d in yaml.safe_load_all(USERS.read_text()) if d]
    kept = [d for d in docs if not (d["kind"] == "User" and d["metadata"]["name"] == user)]
    path = tmp_path / f"without-{user}.yaml"
    path.write_text(yaml.safe_dump_all(kept))
    return path


def _group_state() -> GroupState:
    return GroupState(
        group="broker-a",
        observed_at=0.0,
        controller_mode=True,
        replicas=tuple(ReplicaObservation(f"broker-a-{i}", f"127.0.0.1:{30911 + i}", True) for i in range(3)),
    )


def test_apply_keeps_the_generated_password_and_the_supervisor_deletes_a_removed_user_until_confirmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    layout, sent = _running(tmp_path, monkeypatch)
    assert main(["local", "apply", "-f", str(USERS), "--state-dir", str(layout.root)]) == 0
    out = capsys.readouterr().out
    assert "User/billing: user 'billing', password generated into Secret 'billing-credentials'" in out
    secrets = read_secrets(layout)
    password = secrets["billing-credentials"]["password"]
    assert len(password) == 32 and password not in out
    assert stat.S_IMODE(os.stat(layout.secrets).st_mode) == 0o600

    calls: list[tuple[list[str], list[str]]] = []
    unconfirmed: dict[str, list[str]] = {}

    async def assert_users(
        _client: Any,
        state: GroupState,
        wanted: Sequence[WantedUser],
        _memory: AuthMemory,
        *,
        removing: Sequence[str] = (),
    ) -> AuthReport:
        calls.append((sorted(u.name for u in wanted), sorted(removing)))
        return AuthReport(state.group, removal_left={n: unconfirmed[n] for n in removing if n in unconfirmed})

    monkeypatch.setattr(local_auth, "assert_users", assert_users)
    supervisor_state = read_state(layout.state_file)
    assert roll.handle_apply(supervisor_state, sent[-1])["ok"]
    policy = AuthPolicy(supervisor_state, layout)
    by_name = {u.name: u for u in policy.wanted["broker-a"]}
    assert sorted(by_name) == ["billing", "orders-service"]
    assert by_name["billing"].password == password
    assert by_name["orders-service"].password == "orders-service-password"
    assert read_users_record(layout).held == {"broker-a": {"billing": "Delete", "orders-service": "Delete"}}
    asyncio.run(policy.run(None, {"broker-a": _group_state()}))  # type: ignore[arg-type]
    assert calls[-1] == (["billing", "orders-service"], [])

    # orders-service leaves the manifests: said by `local apply`; pending in users.json; billing's password kept.
    assert (
        main(["local", "apply", "-f", str(_without(tmp_path, "orders-service")), "--state-dir", str(layout.root)]) == 0
    )
    out = capsys.readouterr().out
    assert "User/orders-service: removed (deletionPolicy Delete: deleted from every replica)" in out
    assert "password generated" not in out
    assert read_secrets(layout)["billing-credentials"]["password"] == password
    assert roll.handle_apply(supervisor_state, sent[-1])["ok"]
    policy = AuthPolicy(supervisor_state, layout)
    assert [u.name for u in policy.wanted["broker-a"]] == ["billing"]
    assert read_users_record(layout).removing == {"broker-a": ["orders-service"]}

    # A replica down: the removal is not confirmed, and a new supervisor (a restart) still owes it.
    unconfirmed["orders-service"] = ["broker-a-2"]
    asyncio.run(policy.run(None, {"broker-a": _group_state()}))  # type: ignore[arg-type]
    assert calls[-1] == (["billing"], ["orders-service"])
    write_state(layout.state_file, supervisor_state)  # as the supervisor saves it
    restarted = AuthPolicy(read_state(layout.state_file), layout)
    assert restarted.record.removing == {"broker-a": ["orders-service"]}
    unconfirmed.clear()
    asyncio.run(restarted.run(None, {"broker-a": _group_state()}))  # type: ignore[arg-type]
    assert calls[-1] == (["billing"], ["orders-service"])
    assert read_users_record(layout).removing == {}
    asyncio.run(restarted.run(None, {"broker-a": _group_state()}))  # type: ignore[arg-type]
    assert calls[-1] == (["billing"], [])
    # The state records the User documents; load_resources types them.
    assert [r.metadata.name for r in load_resources(supervisor_state) if isinstance(r, User)] == ["billing"]


def test_a_password_changed_in_its_secret_reaches_the_supervisors_users_at_the_next_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rotation on the local platform: the Secret given with the manifests changed, `local apply` stores it and
    the supervisor's policy asserts the new password (no restart; docs/auth.md says there is no overlap)."""
    layout, sent = _running(tmp_path, monkeypatch)
    assert main(["local", "apply", "-f", str(USERS), "--state-dir", str(layout.root)]) == 0
    rotated = tmp_path / "rotated.yaml"
    rotated.write_text(USERS.read_text().replace("orders-service-password", "orders-service-rotated"))
    assert rotated.read_text() != USERS.read_text()
    before = len(sent)
    assert main(["local", "apply", "-f", str(rotated), "--state-dir", str(layout.root)]) == 0
    assert "orders-service-rotated" not in capsys.readouterr().out
    assert len(sent) == before + 1, "the supervisor was not asked to apply the changed Secret"
    supervisor_state = read_state(layout.state_file)
    assert roll.handle_apply(supervisor_state, sent[-1])["ok"]
    by_name = {u.name: u for u in AuthPolicy(supervisor_state, layout).wanted["broker-a"]}
    assert by_name["orders-service"].password == "orders-service-rotated"
