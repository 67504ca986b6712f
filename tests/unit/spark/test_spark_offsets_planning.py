"""Offset JSON round trip, partition planning (minPartitions splitting) and maxMessagesPerTrigger proration."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_operator.spark.offsets import (
    OffsetFormatError,
    QueueRef,
    dumps_offsets,
    loads_offsets,
    offsets_from_json,
    offsets_to_json,
)
from rocketmq_operator.spark.planning import OffsetRange, PlanError, cap_offsets, plan_ranges, split_ranges

A0 = QueueRef("orders", "broker-a", 0)
A1 = QueueRef("orders", "broker-a", 1)
A10 = QueueRef("orders", "broker-a", 10)
B0 = QueueRef("orders", "broker-b", 0)
P0 = QueueRef("payments", "broker-a", 0)

queue_refs = st.builds(
    QueueRef,
    st.sampled_from(["orders", "payments", "t_1", "%RETRY%g"]),
    st.sampled_from(["broker-a", "broker-b", "bg/with/slash"]),
    st.integers(0, 63),
)


def test_json_form_is_canonical_and_documented() -> None:
    offsets = {B0: 7, A10: 3, P0: 0, A1: 5, A0: 42}
    doc = offsets_to_json(offsets)
    assert doc == {
        "orders": {"broker-a/0": 42, "broker-a/1": 5, "broker-a/10": 3, "broker-b/0": 7},
        "payments": {"broker-a/0": 0},
    }
    # Key order is part of the text Spark compares: queue ids sort numerically, topics alphabetically.
    assert list(doc["orders"]) == ["broker-a/0", "broker-a/1", "broker-a/10", "broker-b/0"]
    assert json.dumps(offsets_to_json(dict(reversed(list(offsets.items()))))) == json.dumps(doc)
    assert offsets_from_json(doc) == offsets
    assert loads_offsets(dumps_offsets(offsets)) == offsets


@given(st.dictionaries(queue_refs, st.integers(0, 2**62)))
def test_round_trip(offsets: dict[QueueRef, int]) -> None:
    doc = offsets_to_json(offsets)
    again = offsets_from_json(json.loads(json.dumps(doc)))
    assert again == offsets
    assert json.dumps(offsets_to_json(again)) == json.dumps(doc)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1]", "expected a JSON object"),
        ('{"t": 3}', "topic 't' must map to"),
        ('{"t": {"broker-a": 3}}', 'is not "<brokerName>/<queueId>"'),
        ('{"t": {"broker-a/x": 3}}', 'is not "<brokerName>/<queueId>"'),
        ('{"t": {"broker-a/0": "3"}}', "must be an integer"),
        ('{"t": {"broker-a/0": true}}', "must be an integer"),
        ('{"t": {"broker-a/0": -1}}', "allowed: >= 0"),
        ("{not json", "not valid JSON"),
    ],
)
def test_bad_offsets_name_the_option(text: str, message: str) -> None:
    with pytest.raises(OffsetFormatError, match=r"^startingOffsets: ") as info:
        loads_offsets(text, "startingOffsets")
    assert message in str(info.value)


def test_special_offsets_only_where_allowed() -> None:
    assert loads_offsets('{"t": {"b/0": -2, "b/1": -1}}', allow_special=True) == {
        QueueRef("t", "b", 0): -2,
        QueueRef("t", "b", 1): -1,
    }
    with pytest.raises(OffsetFormatError, match=r"allowed: -2 \(earliest\), -1 \(latest\) or >= 0"):
        loads_offsets('{"t": {"b/0": -3}}', allow_special=True)


def test_plan_one_range_per_queue() -> None:
    start = {A0: 10, A1: 5, B0: 7}
    end = {A0: 30, A1: 5, B0: 9, P0: 4}
    assert plan_ranges(start, end) == [
        OffsetRange(A0, 10, 30),
        OffsetRange(B0, 7, 9),
        OffsetRange(P0, 0, 4, from_earliest=True),  # new queue: from earliest
    ]


def test_plan_backwards_queue() -> None:
    assert plan_ranges({A0: 50}, {A0: 20}) == [OffsetRange(A0, 0, 20, from_earliest=True)]
    with pytest.raises(PlanError, match="orders@broker-a/0: the ending offset 20 is before the starting offset 50"):
        plan_ranges({A0: 50}, {A0: 20}, streaming=False)


def test_min_partitions_splits_proportionally() -> None:
    ranges = [OffsetRange(A0, 0, 900), OffsetRange(A1, 100, 200)]
    assert split_ranges(ranges, None) == ranges
    assert split_ranges(ranges, 2) == ranges  # already enough
    parts = split_ranges(ranges, 10)
    assert len(parts) == 10
    assert [p for p in parts if p.queue == A0] == [OffsetRange(A0, i * 100, (i + 1) * 100) for i in range(9)]
    assert [p for p in parts if p.queue == A1] == [OffsetRange(A1, 100, 200)]
    uneven = split_ranges([OffsetRange(A0, 0, 10), OffsetRange(B0, 0, 1)], 4)
    assert uneven == [OffsetRange(A0, 0, 4), OffsetRange(A0, 4, 7), OffsetRange(A0, 7, 10), OffsetRange(B0, 0, 1)]
    # Never more parts than messages; only the first piece keeps the from-earliest flag.
    tiny = split_ranges([OffsetRange(A0, 0, 2, from_earliest=True)], 5)
    assert tiny == [OffsetRange(A0, 0, 1, from_earliest=True), OffsetRange(A0, 1, 2)]


@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(1, 5000)), min_size=1, max_size=8),
    st.integers(1, 64),
)
def test_split_covers_every_offset_once(spec: list[tuple[int, int]], min_partitions: int) -> None:
    ranges = [OffsetRange(QueueRef("t", "b", i), start, start + size) for i, (start, size) in enumerate(spec)]
    parts = split_ranges(ranges, min_partitions)
    total = sum(r.size for r in ranges)
    assert len(parts) >= min(min_partitions, total)
    for rng in ranges:
        mine = [p for p in parts if p.queue == rng.queue]
        assert mine[0].start == rng.start and mine[-1].end == rng.end
        assert all(a.end == b.start for a, b in itertools.pairwise(mine))
        assert all(p.size > 0 for p in mine)
        assert max(p.size for p in mine) - min(p.size for p in mine) <= 1


def test_cap_offsets_prorates_by_backlog() -> None:
    start = {A0: 0, A1: 100, B0: 50}
    available = {A0: 600, A1: 400, B0: 51}
    assert cap_offsets(start, available, None) == available
    assert cap_offsets(start, available, 10_000) == available
    capped = cap_offsets(start, available, 100)
    assert sum(capped[q] - start[q] for q in start) == 100
    assert capped[A0] - start[A0] == 67 and capped[A1] - start[A1] == 33 and capped[B0] == 50
    # A tiny limit still moves forward, and never past what is available.
    one = cap_offsets(start, available, 1)
    assert sum(one[q] - start[q] for q in start) == 1 and all(one[q] <= available[q] for q in one)


@given(
    st.lists(st.tuples(st.integers(0, 100), st.integers(0, 300)), min_size=1, max_size=6),
    st.integers(1, 500),
)
def test_cap_never_exceeds_limit(spec: list[tuple[int, int]], limit: int) -> None:
    start = {QueueRef("t", "b", i): s for i, (s, _) in enumerate(spec)}
    available = {QueueRef("t", "b", i): s + lag for i, (s, lag) in enumerate(spec)}
    capped = cap_offsets(start, available, limit)
    admitted = sum(capped[q] - start[q] for q in start)
    assert admitted == min(limit, sum(lag for _, lag in spec))
    assert all(start[q] <= capped[q] <= available[q] for q in start)
