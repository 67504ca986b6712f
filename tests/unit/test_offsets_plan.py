"""`core.offsets`: which consumer offsets a slave is given (the master's value wins either way, nothing is deleted,
no negative offset is written) and how a broker's offsetTable is read, refusals included."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_operator.core.offsets import OffsetKey, OffsetWrite, offset_table, plan_offset_copy

A0, A1, B0 = (
    OffsetKey("orders", "readers", 0),
    OffsetKey("orders", "readers", 1),
    OffsetKey("%RETRY%readers", "readers", 0),
)


@pytest.mark.parametrize(
    ("master", "slave", "writes"),
    [
        ({}, {}, []),
        ({A0: 5}, {A0: 5}, []),
        ({A0: 5}, {}, [OffsetWrite(A0, 5, None)]),
        ({A0: 9}, {A0: 5}, [OffsetWrite(A0, 9, 5)]),
        # a consumer that reset its offset backwards on the master: the slave follows, as RocketMQ's own copy does
        ({A0: 3}, {A0: 5}, [OffsetWrite(A0, 3, 5)]),
        # what only the slave has stays (the operator never deletes consumer state)
        ({A0: 5}, {A0: 5, A1: 7}, []),
        # no negative offset is ever written
        ({A0: -1}, {}, []),
        # in key order
        ({B0: 1, A1: 2, A0: 3}, {}, [OffsetWrite(B0, 1, None), OffsetWrite(A0, 3, None), OffsetWrite(A1, 2, None)]),
    ],
)
def test_plan_offset_copy(master: dict[OffsetKey, int], slave: dict[OffsetKey, int], writes: list[OffsetWrite]) -> None:
    assert plan_offset_copy(master, slave) == writes


@pytest.mark.parametrize(
    ("raw", "table"),
    [
        ({}, {}),
        ({"orders@readers": {"0": 42, "1": "7"}}, {A0: 42, A1: 7}),
        ({"%RETRY%readers@readers": {0: 1}}, {B0: 1}),
        # refused, never guessed: no '@', an empty side, not a table, a queue or offset that is not an integer
        ({"orders": {"0": 1}, "@readers": {"0": 1}, "orders@": {"0": 1}}, {}),
        ({"orders@readers": [1, 2]}, {}),
        ({"orders@readers": {"x": 1, "1": "y", "0": 4}}, {A0: 4}),
    ],
)
def test_offset_table(raw: dict[str, Any], table: dict[OffsetKey, int]) -> None:
    assert offset_table(raw) == table
