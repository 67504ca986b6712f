"""The listing calls a metadata backup needs: AUTH_LIST_USER / AUTH_LIST_ACL (bodies as RocketMQ 5.4/5.5's
AdminBrokerProcessor answers them, captured from a local broker of examples/auth.yaml) and the subscription-group
table with every field kept, sent back as it was."""

from __future__ import annotations

import json

import pytest

from rocketmq_operator.remoting import RemotingCommand, ResponseFormatError
from rocketmq_operator.remoting.admin import TopicAdmin
from rocketmq_operator.remoting.auth_admin import AuthAdmin

USERS = (
    b'[{"password":"orders-app-password","userStatus":"enable","userType":"Normal","username":"orders-app"},'
    b'{"password":"change-me-admin","userStatus":"enable","userType":"Super","username":"rocketmq-admin"}]'
)
ACLS = (
    b'[{"policies":[{"entries":[{"actions":["Get","Sub","Update"],"decision":"Allow","resource":"Group:orders-readers"}'
    b'],"policyType":"Custom"}],"subject":"User:orders-app"}]'
)
GROUPS = (
    b'{"dataVersion":{"counter":1},"forbiddenTable":{},"subscriptionGroupTable":{"orders-readers":{"attributes":{},'
    b'"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,'
    b'"consumeMessageOrderly":false,"consumeTimeoutMinute":15,"groupName":"orders-readers","groupRetryPolicy":'
    b'{"type":"CUSTOMIZED"},"groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,'
    b'"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}}}'
)


class _Recorder:
    def __init__(self, answers: dict[int, bytes]) -> None:
        self.sent: list[tuple[int, dict[str, str], bytes]] = []
        self.answers = answers

    async def _call(
        self, addr: str, code: int, ext_fields: dict[str, str] | None = None, body: bytes = b"", **_: object
    ) -> RemotingCommand:
        self.sent.append((int(code), dict(ext_fields or {}), body))
        return RemotingCommand(code=0, body=self.answers.get(int(code), b""))


async def test_list_users_and_acls() -> None:
    rec = _Recorder({3005: USERS, 3010: ACLS})
    admin = AuthAdmin(rec)  # type: ignore[arg-type]
    users = await admin.list_users("b:1")
    assert [u["username"] for u in users] == ["orders-app", "rocketmq-admin"] and users[1]["userType"] == "Super"
    acls = await admin.list_acls("b:1", subject_filter="User:orders-app")
    assert acls[0]["policies"][0]["entries"][0]["resource"] == "Group:orders-readers"
    await admin.list_users("b:1", name_filter="orders")
    assert [(code, fields) for code, fields, _ in rec.sent] == [
        (3005, {}),
        (3010, {"subjectFilter": "User:orders-app"}),
        (3005, {"filter": "orders"}),
    ]


async def test_an_empty_store_answers_no_body() -> None:
    admin = AuthAdmin(_Recorder({}))  # type: ignore[arg-type]
    assert await admin.list_users("b:1") == [] and await admin.list_acls("b:1") == []


async def test_a_malformed_user_list_never_quotes_the_body() -> None:
    admin = AuthAdmin(_Recorder({3005: b'{"password":"leaked"}'}))  # type: ignore[arg-type]
    with pytest.raises(ResponseFormatError) as caught:
        await admin.list_users("b:1")
    assert "leaked" not in str(caught.value)


async def test_subscription_group_configs_keep_every_field_and_go_back_as_they_came() -> None:
    rec = _Recorder({201: GROUPS})
    admin = TopicAdmin(rec)  # type: ignore[arg-type]
    table = await admin.subscription_group_configs("b:1")
    config = table["orders-readers"]
    assert config["consumeTimeoutMinute"] == 15 and config["groupRetryPolicy"] == {"type": "CUSTOMIZED"}
    await admin.put_subscription_group_config("b:1", config)
    code, fields, body = rec.sent[-1]
    assert (code, fields) == (200, {}) and json.loads(body) == config
