"""`local apply` refuses to change the admin of a running group with auth on (its brokers read it at start only;
the local platform does not rotate it: docs/auth.md), in one line naming the field, the rule and the fix."""

from __future__ import annotations

import pytest

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.platforms.local.auth import AuthSecretError, refuse_admin_change


def _group(auth: bool = True) -> BrokerGroup:
    return BrokerGroup.model_validate(
        {
            "kind": "BrokerGroup",
            "metadata": {"name": "broker-a"},
            "spec": {
                "replicas": 2,
                "haMode": "sync",
                "nameServers": ["n:9876"],
                "auth": {"enabled": auth, "adminSecret": "admin"},
            },
        }
    )


OLD = {"admin": {"username": "root", "password": "pw"}}


@pytest.mark.parametrize(
    "given",
    [{"admin": {"username": "root", "password": "other"}}, {"admin": {"username": "root-2", "password": "pw"}}],
    ids=["password", "username"],
)
def test_a_changed_admin_of_a_running_group_is_refused(given: dict[str, dict[str, str]]) -> None:
    with pytest.raises(AuthSecretError) as refused:
        refuse_admin_change([_group()], [_group()], OLD, given)
    line = str(refused.value)
    assert "\n" not in line and line.startswith("BrokerGroup/broker-a: spec.auth.adminSecret 'admin': ")
    assert "rule:" in line and "fix:" in line and "pw" not in line.replace("password", "")


def test_the_same_admin_a_new_group_or_auth_off_pass() -> None:
    refuse_admin_change([_group()], [_group()], OLD, OLD)
    refuse_admin_change([], [_group()], {}, OLD)
    refuse_admin_change([_group(auth=False)], [_group()], {}, OLD)
