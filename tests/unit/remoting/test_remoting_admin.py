"""remoting.admin: the topic / subscription-group admin requests' headers and bodies, and parsing the answers."""

from __future__ import annotations

import json

import pytest

from rocketmq_operator.remoting import RemotingCommand, ResponseFormatError
from rocketmq_operator.remoting.admin import (
    SubscriptionGroupInfo,
    TopicAdmin,
    TopicConfigInfo,
    create_topic_fields,
    format_attributes,
    parse_subscription_group_table,
    parse_topic_table,
)

# As a RocketMQ 5.5.0 broker answers GET_ALL_TOPIC_CONFIG (captured from a local broker, trimmed).
TOPIC_TABLE = (
    b'{"dataVersion":{"counter":2,"stateVersion":1,"timestamp":1795424648458},"mappingDataVersion":{"counter":0,'
    b'"stateVersion":0,"timestamp":1795424615201},"topicConfigTable":{"SELF_TEST_TOPIC":{"attributes":{},'
    b'"order":false,"perm":6,"readQueueNums":1,"topicFilterType":"SINGLE_TAG","topicName":"SELF_TEST_TOPIC",'
    b'"topicSysFlag":0,"writeQueueNums":1},"probe_t":{"attributes":{"message.type":"FIFO"},"order":false,"perm":6,'
    b'"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"probe_t","topicSysFlag":0,"writeQueueNums":4}}}'
)


def test_parse_topic_table() -> None:
    table = parse_topic_table(json.loads(TOPIC_TABLE))
    assert sorted(table) == ["SELF_TEST_TOPIC", "probe_t"]
    probe = table["probe_t"]
    assert (probe.read_queue_nums, probe.write_queue_nums, probe.perm) == (4, 4, 6)
    assert probe.message_type == "FIFO" and table["SELF_TEST_TOPIC"].message_type is None


def test_parse_topic_table_refuses_garbage() -> None:
    with pytest.raises(ResponseFormatError):
        parse_topic_table({"topicConfigTable": {"t": {"readQueueNums": "many"}}})
    with pytest.raises(ResponseFormatError):
        parse_topic_table({"topicConfigTable": []})


def test_attributes_string_is_rocketmqs() -> None:
    assert format_attributes({"message.type": "FIFO", "queue.type": "SimpleCQ"}) == (
        "+message.type=FIFO,+queue.type=SimpleCQ"
    )
    assert format_attributes({}, ("reserve.time",)) == "-reserve.time"


def test_create_topic_header() -> None:
    fields = create_topic_fields(TopicConfigInfo("orders", 8, 4, 6, attributes={"message.type": "DELAY"}))
    assert fields == {
        "topic": "orders",
        "defaultTopic": "TBW102",
        "readQueueNums": "8",
        "writeQueueNums": "4",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
        "attributes": "+message.type=DELAY",
    }
    assert "attributes" not in create_topic_fields(TopicConfigInfo("plain", 1, 1))


def test_subscription_group_round_trip() -> None:
    group = SubscriptionGroupInfo("readers", consume_message_orderly=True, retry_max_times=3)
    body = {"subscriptionGroupTable": {"readers": {**group.to_json(), "brokerId": 0, "groupRetryPolicy": {}}}}
    assert parse_subscription_group_table(body) == {"readers": group}


class _Recorder:
    """Stands in for RemotingClient._call: records what is sent, answers from a table."""

    def __init__(self, answers: dict[int, bytes]) -> None:
        self.sent: list[tuple[int, dict[str, str], bytes]] = []
        self.answers = answers

    async def _call(
        self, addr: str, code: int, ext_fields: dict[str, str] | None = None, body: bytes = b"", **_: object
    ) -> RemotingCommand:
        self.sent.append((int(code), dict(ext_fields or {}), body))
        return RemotingCommand(code=0, body=self.answers.get(int(code), b""))


async def test_admin_requests_codes_and_payloads() -> None:
    rec = _Recorder({21: TOPIC_TABLE, 201: b'{"subscriptionGroupTable":{}}'})
    admin = TopicAdmin(rec)  # type: ignore[arg-type]
    assert "probe_t" in await admin.topics("b:1")
    await admin.create_subscription_group("b:1", SubscriptionGroupInfo("g1"))
    await admin.delete_topic("b:1", "old")
    await admin.delete_subscription_group("b:1", "g0", clean_offset=True)
    assert await admin.subscription_groups("b:1") == {}
    codes = [code for code, _, _ in rec.sent]
    assert codes == [21, 200, 215, 207, 201]
    assert json.loads(rec.sent[1][2])["groupName"] == "g1"
    assert rec.sent[2][1] == {"topic": "old"}
    assert rec.sent[3][1] == {"groupName": "g0", "cleanOffset": "true"}
