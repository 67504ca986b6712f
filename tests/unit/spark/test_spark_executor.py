"""Executor reads against a fake broker group: exact ranges, suggestWhichBrokerId, retries, data loss, Arrow."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest
from spark_helpers import require

from rocketmq_operator.remoting import (
    BrokerData,
    Message,
    PullResult,
    QueueData,
    RemotingConnectionError,
    RemotingError,
    TopicRoute,
)
from rocketmq_operator.spark.errors import DataLossError, RocketMQSourceError
from rocketmq_operator.spark.executor import ReadSettings, pick_broker, read_partition
from rocketmq_operator.spark.offsets import QueueRef
from rocketmq_operator.spark.planning import OffsetRange

TOPIC = "orders"
BROKER = "broker-a"
ADDRS = {0: "10.0.0.1:10911", 2: "10.0.0.2:10911", 3: "10.0.0.3:10911"}
Q = QueueRef(TOPIC, BROKER, 1)


def java_hash(text: str) -> int:
    """Java's String.hashCode, what a consume queue stores as a message's tags code."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def message(offset: int, tag: str = "tA") -> Message:
    return Message(
        topic=TOPIC,
        queue_id=1,
        queue_offset=offset,
        physical_offset=offset * 100,
        sys_flag=0,
        born_timestamp=1_700_000_000_000 + offset,
        store_timestamp=1_700_000_000_500 + offset,
        born_host="10.1.0.1:5000",
        store_host="10.0.0.1:10911",
        body=f"body-{offset}".encode(),
        properties={"KEYS": f"k{offset}", "TAGS": tag, "UNIQ_KEY": f"ID{offset}"},
        msg_id=f"ID{offset}",
    )


class FakeGroup:
    """One queue with offsets [min_offset, max_offset); pull behaviour scripted per address."""

    def __init__(self, min_offset: int = 0, max_offset: int = 100, suggest: int = 0) -> None:
        self.min_offset = min_offset
        self.max_offset = max_offset
        self.suggest = suggest
        self.batch_cap = 8
        self.pulls: list[tuple[str, int, int]] = []
        self.failures: dict[str, int] = {}
        self.script: list[str] = []
        self.closed = False
        self.tag_of: Callable[[int], str] = lambda offset: "tA"
        self.route_lookups = 0
        self.routes_without_master = 0  # the next N route lookups name no master (read during a failover)
        self.subscriptions: list[str] = []

    async def get_route(self, topic: str, *, namesrv: str | None = None, timeout: float | None = None) -> TopicRoute:
        self.route_lookups += 1
        addrs = {i: a for i, a in ADDRS.items() if i != 0} if self.routes_without_master > 0 else dict(ADDRS)
        self.routes_without_master -= 1
        return TopicRoute(topic, (QueueData(BROKER, 4, 4, 6),), (BrokerData("c", BROKER, addrs),))

    async def get_min_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int:
        assert addr == ADDRS[0] or self.routes_without_master >= 0  # the master's, unless the route had none
        return self.min_offset

    async def pull(
        self,
        addr: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_nums: int = 32,
        consumer_group: str = "g",
        *,
        subscription: str = "*",
        timeout: float | None = None,
    ) -> PullResult:
        self.pulls.append((addr, offset, max_nums))
        self.subscriptions.append(subscription)
        if self.failures.get(addr, 0) > 0:
            self.failures[addr] -= 1
            raise RemotingConnectionError("refused", addr)
        step = self.script.pop(0) if self.script else "found"
        if step == "retry-to-master":
            return PullResult("RETRY", 20, "OFFSET_FOUND_NULL", offset, self.min_offset, self.max_offset, 0)
        if step == "no-new":
            return PullResult("NO_NEW_MSG", 19, None, offset, self.min_offset, self.max_offset, self.suggest)
        if offset < self.min_offset:
            return PullResult("OFFSET_ILLEGAL", 21, None, self.min_offset, self.min_offset, self.max_offset, 0)
        count = min(max_nums, self.batch_cap, self.max_offset - offset)
        if count <= 0:
            return PullResult("NO_NEW_MSG", 19, None, offset, self.min_offset, self.max_offset, self.suggest)
        if subscription != "*":
            # As a broker does: match the consume queue's tags codes (hash codes), scanning past what does not.
            codes = {java_hash(t.strip()) for t in subscription.split("||")}
            matched = [o for o in range(offset, self.max_offset) if java_hash(self.tag_of(o)) in codes][:count]
            scanned = matched[-1] + 1 if len(matched) == count else self.max_offset
            if not matched:
                return PullResult("NO_MATCHED_MSG", 20, "NO_MATCHED_MESSAGE", scanned, self.min_offset,
                                  self.max_offset, self.suggest)  # fmt: skip
            msgs = tuple(message(o, self.tag_of(o)) for o in matched)
            return PullResult("FOUND", 0, None, scanned, self.min_offset, self.max_offset, self.suggest, msgs)
        msgs = tuple(message(o, self.tag_of(o)) for o in range(offset, offset + count))
        return PullResult("FOUND", 0, None, offset + count, self.min_offset, self.max_offset, self.suggest, msgs)

    async def close(self) -> None:
        self.closed = True


def settings(**kw: object) -> ReadSettings:
    return ReadSettings(name_servers=("ns:9876",), request_timeout_ms=500, **kw)  # type: ignore[arg-type]


def batches(group: FakeGroup, rng: OffsetRange, **kw: object) -> Iterator[object]:
    return read_partition(rng, settings(**kw), client_factory=lambda: group)


def rows(group: FakeGroup, rng: OffsetRange, **kw: object) -> list[dict[str, object]]:
    require("pyarrow")
    out: list[dict[str, object]] = []
    for batch in batches(group, rng, **kw):
        out.extend(batch.to_pylist())  # type: ignore[attr-defined]
    return out


def test_pick_broker_like_the_java_client() -> None:
    broker = BrokerData("c", BROKER, dict(ADDRS))
    assert pick_broker(broker, 0) == (ADDRS[0], 0)
    assert pick_broker(broker, 2) == (ADDRS[2], 2)
    assert pick_broker(broker, 1) == (ADDRS[2], 2)  # id+1 (the default whichBrokerWhenConsumeSlowly=1)
    assert pick_broker(broker, 7) == (ADDRS[0], 0)  # unknown id: the master
    assert pick_broker(BrokerData("c", BROKER, {3: "x:1"}), 0) == ("x:1", 3)  # no master: lowest id
    assert pick_broker(None, 0) is None


def test_reads_exactly_the_range_from_the_master() -> None:
    group = FakeGroup()
    got = rows(group, OffsetRange(Q, 10, 30), pull_batch_size=32)
    assert [r["queueOffset"] for r in got] == list(range(10, 30))
    assert {r["servedByBrokerId"] for r in got} == {0}
    assert [p[2] for p in group.pulls] == [20, 12, 4]  # never asks past the end
    first = got[0]
    assert first["topic"] == TOPIC and first["brokerName"] == BROKER and first["queueId"] == 1
    assert first["msgId"] == "ID10" and first["keys"] == "k10" and first["tags"] == "tA" and first["body"] == b"body-10"
    assert dict(first["properties"])["UNIQ_KEY"] == "ID10"  # type: ignore[call-overload]
    assert int(first["bornTimestamp"].timestamp() * 1000) == 1_700_000_000_010  # type: ignore[attr-defined]
    assert group.closed


def test_follows_suggestion_and_records_the_server() -> None:
    group = FakeGroup(suggest=1)
    got = rows(group, OffsetRange(Q, 0, 24))
    served = [r["servedByBrokerId"] for r in got]
    assert served == [0] * 8 + [2] * 16  # first pull on the master, then the suggested slave (1 -> id+1 = 2)
    assert [p[0] for p in group.pulls] == [ADDRS[0], ADDRS[2], ADDRS[2]]
    master_only = FakeGroup(suggest=1)
    assert {r["servedByBrokerId"] for r in rows(master_only, OffsetRange(Q, 0, 24), read_from="master")} == {0}


def test_slave_retry_goes_back_to_master_and_errors_back_off() -> None:
    group = FakeGroup(suggest=3)
    group.script = ["found", "retry-to-master", "found", "found"]
    group.failures[ADDRS[3]] = 0
    got = rows(group, OffsetRange(Q, 0, 24))
    assert [r["queueOffset"] for r in got] == list(range(24))
    assert [p[0] for p in group.pulls][:3] == [ADDRS[0], ADDRS[3], ADDRS[0]]

    flaky = FakeGroup(suggest=2)
    flaky.failures[ADDRS[2]] = 1
    got = rows(flaky, OffsetRange(Q, 0, 32))
    assert [r["queueOffset"] for r in got] == list(range(32))
    # A failed slave pull sends the reader to the master, which it keeps for a cool-down (SLAVE_COOLDOWN_S).
    assert [p[0] for p in flaky.pulls] == [ADDRS[0], ADDRS[2], ADDRS[0], ADDRS[0], ADDRS[0]]


def test_waits_for_planned_data_then_times_out() -> None:
    group = FakeGroup()
    group.script = ["no-new", "no-new"]
    assert len(rows(group, OffsetRange(Q, 0, 8))) == 8
    stuck = FakeGroup(max_offset=4)
    with pytest.raises(
        RocketMQSourceError,
        match=r"orders' queue broker-a/1: no progress .*\(pullTimeoutMs=300\).*answered NO_NEW_MSG at offset 4",
    ):
        rows(stuck, OffsetRange(Q, 0, 8), pull_timeout_ms=300)


def test_below_min_offset_fails_with_a_clear_message() -> None:
    group = FakeGroup(min_offset=50)
    with pytest.raises(DataLossError) as info:
        rows(group, OffsetRange(Q, 5, 60))
    text = str(info.value)
    assert "topic 'orders' queue broker-a/1" in text
    assert "offset 5 is below the broker's min offset 50" in text and "failOnDataLoss=false" in text


def test_below_min_offset_skips_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    group = FakeGroup(min_offset=50)
    with caplog.at_level(logging.WARNING, logger="rocketmq_operator.spark"):
        got = rows(group, OffsetRange(Q, 5, 60), fail_on_data_loss=False)
    assert [r["queueOffset"] for r in got] == list(range(50, 60))
    assert "offset 5 is below the broker's min offset 50" in caplog.text and "skipping to offset 50" in caplog.text
    # From earliest (a new queue) is not data loss.
    assert len(rows(FakeGroup(min_offset=50), OffsetRange(Q, 0, 60, from_earliest=True))) == 10
    # Entirely deleted range: nothing to read.
    assert rows(FakeGroup(min_offset=80), OffsetRange(Q, 5, 60), fail_on_data_loss=False) == []


def test_retention_during_the_read() -> None:
    group = FakeGroup()
    original = group.pull

    async def moving_min(*args: object, **kw: object) -> PullResult:
        if len(group.pulls) == 1:
            group.min_offset = 20  # retention deleted 8..19 after the first pull
        return await original(*args, **kw)  # type: ignore[arg-type]

    group.pull = moving_min  # type: ignore[method-assign]
    with pytest.raises(DataLossError, match="offset 8 is below the broker's min offset 20"):
        rows(group, OffsetRange(Q, 0, 30))


def test_topic_gone() -> None:
    group = FakeGroup()

    async def gone(topic: str, *, namesrv: str | None = None, timeout: float | None = None) -> TopicRoute:
        raise RemotingError(17, "No topic route info", addr="ns:9876", request="GET_ROUTEINFO_BY_TOPIC")

    group.get_route = gone  # type: ignore[method-assign]
    with pytest.raises(DataLossError, match="topic 'orders' no longer exists"):
        rows(group, OffsetRange(Q, 0, 30))
    assert rows(group, OffsetRange(Q, 0, 30), fail_on_data_loss=False) == []


def test_batches_are_bounded_and_properties_optional(monkeypatch: pytest.MonkeyPatch) -> None:
    require("pyarrow")
    from rocketmq_operator.spark import executor
    from rocketmq_operator.spark.schema import arrow_schema

    monkeypatch.setattr(executor, "BATCH_ROWS", 10)
    out = list(batches(FakeGroup(), OffsetRange(Q, 0, 25), include_properties=False))
    assert [b.num_rows for b in out] == [10 + 6, 9]  # type: ignore[attr-defined]
    assert all(b.schema.equals(arrow_schema()) for b in out)  # type: ignore[attr-defined]
    assert out[0].column("properties").null_count == 16  # type: ignore[attr-defined]
    assert list(read_partition(None, settings())) == []


def test_tag_filter_keeps_exact_tags_and_skips_what_the_broker_filtered() -> None:
    assert java_hash("Aa") == java_hash("BB")  # a real collision: the broker cannot tell them apart
    group = FakeGroup(max_offset=60)
    group.tag_of = lambda o: ("Aa", "BB", "other")[o % 3]
    got = rows(group, OffsetRange(Q, 0, 60), tags=frozenset({"Aa"}))
    assert [r["queueOffset"] for r in got] == list(range(0, 60, 3))
    assert {r["tags"] for r in got} == {"Aa"}
    assert set(group.subscriptions) == {"Aa"}  # the broker was asked to filter


def test_tag_filter_with_nothing_matching_reaches_the_end_without_data_loss() -> None:
    group = FakeGroup(max_offset=40)
    got = rows(group, OffsetRange(Q, 5, 40), tags=frozenset({"nope"}))
    assert got == [] and group.closed


def test_tag_filter_below_the_min_offset_is_still_data_loss() -> None:
    group = FakeGroup(min_offset=10, max_offset=40)
    group.tag_of = lambda o: "A"
    with pytest.raises(DataLossError, match="below the broker's min offset 10"):
        rows(group, OffsetRange(Q, 0, 40), tags=frozenset({"A"}))


def test_a_route_without_a_master_is_looked_up_again_when_its_slave_refuses() -> None:
    """Seen on the real node: the route, read during a failover, named no master; the slave standing in for it
    refused every pull (slaveReadEnable=false: SYSTEM_BUSY) and the reader stayed there until pullTimeoutMs."""
    group = FakeGroup(max_offset=20)
    group.routes_without_master = 1
    group.failures[ADDRS[2]] = 10**6  # the slave refuses everything
    got = rows(group, OffsetRange(Q, 0, 20))
    assert [r["queueOffset"] for r in got] == list(range(20))
    assert group.route_lookups >= 2 and {r["servedByBrokerId"] for r in got} == {0}
