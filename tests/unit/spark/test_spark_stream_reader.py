"""The pyspark-facing readers with a fake driver: initial/latest offsets, ReadMaxRows, Trigger.AvailableNow,
data loss when a queue goes backwards, canonical offsets (AvailableNow ends when latest == start)."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from spark_helpers import require

from rocketmq_operator.spark.errors import DataLossError
from rocketmq_operator.spark.offsets import Offsets, QueueRef, offsets_to_json
from rocketmq_operator.spark.options import OptionError, parse_options
from rocketmq_operator.spark.planning import OffsetRange

A0, A1 = QueueRef("orders", "bg", 0), QueueRef("orders", "bg", 1)


class FakeDriver:
    def __init__(self, latest: Offsets, earliest: Offsets | None = None) -> None:
        self.latest = dict(latest)
        self.earliest = dict(earliest or {q: 0 for q in latest})
        self.closed = False

    def bounds(self, bound: str) -> tuple[dict[QueueRef, str], Offsets]:
        values = self.earliest if bound == "min" else self.latest
        return {q: "m:1" for q in values}, dict(values)

    def position(self, position: Any, *, option: str, timestamp_ms: int | None = None, default: str = "min") -> Offsets:
        if position == "latest":
            return dict(self.latest)
        if position == "earliest":
            return dict(self.earliest)
        return {**(self.earliest if default == "min" else self.latest), **position}

    def close(self) -> None:
        self.closed = True


def stream_reader(driver: FakeDriver, **options: str) -> Any:
    require("pyspark")
    from rocketmq_operator.spark.source import RocketMQStreamReader

    reader = RocketMQStreamReader(parse_options({"nameServers": "ns:1", "topic": "orders", **options}, streaming=True))
    reader._driver = driver  # type: ignore[assignment]
    return reader


def test_initial_and_latest_offsets() -> None:
    from_json = stream_reader(FakeDriver({A0: 10, A1: 20}), startingOffsets="earliest")
    start = from_json.initialOffset()
    assert start == {"orders": {"bg/0": 0, "bg/1": 0}}
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    assert isinstance(from_json.getDefaultReadLimit(), ReadAllAvailable)
    assert from_json.latestOffset(start, ReadAllAvailable()) == {"orders": {"bg/0": 10, "bg/1": 20}}
    assert from_json.reportLatestOffset() == {"orders": {"bg/0": 10, "bg/1": 20}}

    capped = stream_reader(FakeDriver({A0: 10, A1: 20}), startingOffsets="earliest", maxMessagesPerTrigger="6")
    assert capped.getDefaultReadLimit() == ReadMaxRows(6)
    assert capped.latestOffset(start, ReadMaxRows(6)) == {"orders": {"bg/0": 2, "bg/1": 4}}
    # The engine may still ask for everything (e.g. a final batch): ReadAllAvailable wins over the option.
    assert capped.latestOffset(start, ReadAllAvailable()) == {"orders": {"bg/0": 10, "bg/1": 20}}


def test_available_now_stops_at_the_prepared_offsets() -> None:
    from pyspark.sql.streaming.datasource import ReadMaxRows, SupportsTriggerAvailableNow

    driver = FakeDriver({A0: 10, A1: 10})
    reader = stream_reader(driver, startingOffsets="earliest", maxMessagesPerTrigger="8")
    assert issubclass(type(reader), SupportsTriggerAvailableNow)
    reader.prepareForTriggerAvailableNow()
    driver.latest = {A0: 50, A1: 50, QueueRef("orders", "bg", 2): 5}  # arrives later: not part of this run
    offset = reader.initialOffset()
    batches = 0
    while True:
        nxt = reader.latestOffset(offset, ReadMaxRows(8))
        # Spark compares offsets as JSON text: equal content must give identical text to end the run.
        if json.dumps(nxt) == json.dumps(offset):
            break
        assert reader.partitions(offset, nxt)
        offset, batches = json.loads(json.dumps(nxt)), batches + 1
    assert offset == {"orders": {"bg/0": 10, "bg/1": 10}} and batches == 3


def test_queue_going_backwards() -> None:
    reader = stream_reader(FakeDriver({A0: 5, A1: 20}))
    with pytest.raises(
        DataLossError, match=r"queue bg/0: the master's max offset 5 is below the checkpointed offset 9"
    ):
        reader.latestOffset({"orders": {"bg/0": 9, "bg/1": 3}}, None)
    lenient = stream_reader(FakeDriver({A0: 5, A1: 20}), failOnDataLoss="false")
    end = lenient.latestOffset({"orders": {"bg/0": 9, "bg/1": 3}}, None)
    assert end == {"orders": {"bg/0": 5, "bg/1": 20}}
    parts = lenient.partitions({"orders": {"bg/0": 9, "bg/1": 3}}, end)
    assert [p.value for p in parts] == [OffsetRange(A0, 0, 5, from_earliest=True), OffsetRange(A1, 3, 20)]


def test_partitions_pickle_and_queues_that_leave_keep_their_offset() -> None:
    reader = stream_reader(FakeDriver({A1: 30}), minPartitions="3")
    end = reader.latestOffset({"orders": {"bg/0": 7, "bg/1": 0}}, None)
    assert end == {"orders": {"bg/0": 7, "bg/1": 30}}
    parts = reader.partitions({"orders": {"bg/0": 7, "bg/1": 0}}, end)
    assert [p.value for p in parts] == [OffsetRange(A1, 0, 10), OffsetRange(A1, 10, 20), OffsetRange(A1, 20, 30)]
    clone = pickle.loads(pickle.dumps(reader))  # what Spark ships to executors
    assert clone.settings == reader.settings
    reader.stop()
    assert reader._driver.closed


def test_data_source_and_batch_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    require("pyspark")
    from rocketmq_operator.spark import RocketMQDataSource, source
    from rocketmq_operator.spark.schema import spark_schema

    assert RocketMQDataSource.name() == "rocketmq"
    ds = RocketMQDataSource({"nameservers": "ns:1", "topic": "orders", "minpartitions": "4"})
    assert ds.schema() == spark_schema()
    fake = FakeDriver({A0: 8, A1: 0}, earliest={A0: 2, A1: 0})
    monkeypatch.setattr(source, "Driver", lambda opts: fake)
    parts = ds.reader(spark_schema()).partitions()
    assert [(p.value.start, p.value.end) for p in parts] == [(2, 4), (4, 6), (6, 7), (7, 8)]
    assert fake.closed
    with pytest.raises(OptionError, match=r"^schema: the rocketmq source has a fixed schema"):
        from pyspark.sql.types import StringType, StructField, StructType

        ds.reader(StructType([StructField("value", StringType())]))
    with pytest.raises(OptionError, match=r"^endingOffsets: only for batch"):
        RocketMQDataSource({"nameservers": "ns:1", "topic": "t", "endingoffsets": "latest"}).streamReader(
            spark_schema()
        )
    assert offsets_to_json({}) == {}
