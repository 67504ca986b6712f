"""Driver-side lookups with a fake name server and master: topic selection, bounds, JSON positions, retries,
and the additive remoting calls (GET_ALL_TOPIC_LIST_FROM_NAMESERVER, SEARCH_OFFSET_BY_TIMESTAMP)."""

from __future__ import annotations

import json

import pytest

from rocketmq_operator.remoting import (
    BrokerData,
    QueueData,
    RemotingClient,
    RemotingCommand,
    RemotingConnectionError,
    RemotingError,
    RequestCode,
    TopicRoute,
)
from rocketmq_operator.spark.errors import RocketMQSourceError
from rocketmq_operator.spark.metadata import Driver
from rocketmq_operator.spark.offsets import QueueRef
from rocketmq_operator.spark.options import parse_options

MASTER = "10.0.0.1:10911"


class FakeCluster:
    def __init__(self) -> None:
        self.topics = {"orders-eu": 2, "orders-us": 1, "payments": 2}
        self.master: str | None = MASTER
        self.failures = 0
        self.calls: list[str] = []

    def _maybe_fail(self) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise RemotingConnectionError("connection refused", "ns:9876")

    async def get_all_topics(self, *, namesrv: str | None = None, timeout: float | None = None) -> tuple[str, ...]:
        self.calls.append("topics")
        return ("TBW102", "DefaultCluster", *sorted(self.topics))

    async def get_route(self, topic: str, *, namesrv: str | None = None, timeout: float | None = None) -> TopicRoute:
        self.calls.append(f"route:{topic}")
        self._maybe_fail()
        if topic not in self.topics:
            raise RemotingError(17, "No topic route info", addr="ns:9876", request="GET_ROUTEINFO_BY_TOPIC")
        addrs = {0: self.master, 2: "10.0.0.2:10911"} if self.master else {2: "10.0.0.2:10911"}
        return TopicRoute(
            topic,
            (QueueData("bg", self.topics[topic], self.topics[topic], 6), QueueData("bg-ro", 4, 4, 2)),
            (BrokerData("c", "bg", addrs), BrokerData("c", "bg-ro", {0: "10.0.0.9:10911"})),
        )

    async def get_min_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int:
        assert addr == MASTER
        return 10 * queue_id

    async def get_max_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int:
        assert addr == MASTER
        return 100 + queue_id

    async def search_offset(
        self, addr: str, topic: str, queue_id: int, timestamp_ms: int, *, timeout: float | None = None
    ) -> int:
        return 50 + queue_id if timestamp_ms > 0 else 10 * queue_id


def driver(cluster: FakeCluster, **options: str) -> Driver:
    opts = parse_options({"nameServers": "ns:9876", "fetchOffsetRetryIntervalMs": "0", **options}, streaming=True)
    return Driver(opts, client_factory=lambda: cluster)


def test_topics_queues_and_bounds() -> None:
    cluster = FakeCluster()
    d = driver(cluster, topicPattern="orders-.*")
    queues, latest = d.bounds("max")
    # Only readable queue data (bg-ro has perm 2 = write only), only full matches of the pattern.
    assert sorted(queues) == [
        QueueRef("orders-eu", "bg", 0),
        QueueRef("orders-eu", "bg", 1),
        QueueRef("orders-us", "bg", 0),
    ]
    assert set(queues.values()) == {MASTER}
    assert latest == {q: 100 + q.queue_id for q in queues}
    assert d.position("earliest", option="startingOffsets")[QueueRef("orders-eu", "bg", 1)] == 10
    d.close()


def test_json_positions_and_timestamps() -> None:
    cluster = FakeCluster()
    d = driver(cluster, topic="orders-eu")
    start = {QueueRef("orders-eu", "bg", 0): 7}
    assert d.position(start, option="startingOffsets") == {
        QueueRef("orders-eu", "bg", 0): 7,
        QueueRef("orders-eu", "bg", 1): 10,  # not in the JSON: earliest
    }
    special = {QueueRef("orders-eu", "bg", 0): -1, QueueRef("orders-eu", "bg", 1): -2}
    assert d.position(special, option="startingOffsets") == {
        QueueRef("orders-eu", "bg", 0): 100,
        QueueRef("orders-eu", "bg", 1): 10,
    }
    assert d.position(start, option="endingOffsets", default="max")[QueueRef("orders-eu", "bg", 1)] == 101
    stamped = d.position("latest", option="startingOffsets", timestamp_ms=1_700_000_000_000)
    assert stamped == {QueueRef("orders-eu", "bg", 0): 50, QueueRef("orders-eu", "bg", 1): 51}
    with pytest.raises(RocketMQSourceError, match=r"startingOffsets: orders-eu@bg/7 not readable in the route"):
        d.position({QueueRef("orders-eu", "bg", 7): 1}, option="startingOffsets")


def test_missing_topic_and_retries() -> None:
    cluster = FakeCluster()
    with pytest.raises(RocketMQSourceError, match="topic 'nope' does not exist"):
        driver(cluster, topic="nope").bounds("max")
    cluster.failures = 2
    assert len(driver(cluster, topic="payments").bounds("max")[1]) == 2  # two failures, three attempts
    cluster.failures = 10
    with pytest.raises(RocketMQSourceError, match=r"max offset lookup failed after 4 attempt\(s\): connection"):
        driver(cluster, topic="payments").bounds("max")
    cluster.failures = 0
    cluster.master = None
    with pytest.raises(RocketMQSourceError, match="broker group bg has no master in the route"):
        driver(cluster, topic="payments", fetchOffsetNumRetries="1").bounds("max")


def test_driver_pickles_without_its_loop() -> None:
    import pickle

    d = Driver(parse_options({"nameServers": "ns:9876", "topic": "t"}, streaming=True))
    d._ensure()
    again = pickle.loads(pickle.dumps(d))
    assert again.opts == d.opts and again._loop is None and again._client is None
    d.close()


async def test_remoting_additions(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[RemotingCommand] = []

    async def invoke(
        addr: str,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,
    ) -> RemotingCommand:
        seen.append(RemotingCommand(code=code, ext_fields=dict(ext_fields or {})))
        if code == RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER:
            return RemotingCommand(code=0, body=json.dumps({"topicList": ["b", "a", "b"]}).encode())
        if code == RequestCode.SEARCH_OFFSET_BY_TIMESTAMP:
            return RemotingCommand(code=0, ext_fields={"offset": "42"})
        return RemotingCommand(code=1, remark="unexpected")

    async with RemotingClient("ns:9876") as client:
        monkeypatch.setattr(client, "invoke", invoke)
        assert await client.get_all_topics() == ("a", "b")
        assert await client.search_offset("b:10911", "t", 3, 1_700_000_000_000) == 42
    assert seen[1].ext_fields == {"topic": "t", "queueId": "3", "timestamp": "1700000000000"}
