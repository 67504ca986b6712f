"""The local platform's admin record (admins.json) and its refusals: a running group keeps the admin its brokers
started with; a new password under that name, or a retiring name, is refused in one line (field, rule, fix); a new
name is recorded only at `local up` (nothing running) or by the supervisor's rotation."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.core.admin_rotation import AdminCredential, RetiringAdmin
from rocketmq_operator.platforms.local.auth import (
    AuthSecretError,
    configured_admin,
    read_admins,
    record_admins,
    refuse_admin_change,
    retiring_admins,
)
from rocketmq_operator.platforms.local.layout import StateLayout


def _group(auth: bool = True) -> BrokerGroup:
    auth_spec = {"enabled": auth, "adminSecret": "admin"}
    spec = {"replicas": 2, "haMode": "sync", "nameServers": ["n:9876"], "auth": auth_spec}
    return BrokerGroup.model_validate({"kind": "BrokerGroup", "metadata": {"name": "broker-a"}, "spec": spec})


OLD = {"admin": {"username": "root", "password": "pw"}}
NEW_NAME = {"admin": {"username": "root-2", "password": "pw-2"}}


def _layout(tmp_path: Path) -> StateLayout:
    layout = StateLayout(tmp_path)
    record_admins(layout, [_group()], OLD)
    return layout


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"admin": {"username": "root", "password": "other"}}, "the password of admin 'root' changed; rule: "),
    ],
)
def test_a_new_password_under_the_running_admins_name_is_refused(
    tmp_path: Path, given: dict[str, dict[str, str]], says: str
) -> None:
    layout = _layout(tmp_path)
    with pytest.raises(AuthSecretError) as refused:
        refuse_admin_change(layout, [_group()], given)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(f"BrokerGroup/broker-a: spec.auth.adminSecret: {says}")
    assert "fix:" in line and "other" not in line and "'pw'" not in line


def test_the_record_keeps_what_runs_and_is_private(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    assert stat.S_IMODE(layout.admins.stat().st_mode) == 0o600
    refuse_admin_change(layout, [_group()], OLD)  # unchanged
    refuse_admin_change(layout, [_group()], NEW_NAME)  # a new name: the supervisor rotates to it
    record_admins(layout, [_group()], NEW_NAME)  # `local apply`: a running group keeps its entry
    assert configured_admin(read_admins(layout)["broker-a"]) == AdminCredential("root", "pw")
    refuse_admin_change(layout, [_group(auth=False)], {"admin": {"username": "root", "password": "x"}})


def test_local_up_with_a_new_name_retires_the_old_one(tmp_path: Path) -> None:
    layout = _layout(tmp_path)
    record_admins(layout, [_group()], NEW_NAME, starting=True, now=7.0)
    entry = read_admins(layout)["broker-a"]
    assert configured_admin(entry) == AdminCredential("root-2", "pw-2")
    assert retiring_admins(entry) == (RetiringAdmin("root", 7.0),)
    # Back to a retiring name: refused (its password is not known).
    with pytest.raises(AuthSecretError, match="'root' is a retiring admin"):
        refuse_admin_change(layout, [_group()], OLD)
