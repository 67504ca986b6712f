"""Consumer offsets a slave must be given so that a new master resumes every consumer group where it was.

Why the operator copies them: a slave takes its master's consumer offsets every 10 s (`SlaveSynchronize`), and
in RocketMQ 5.5.0 that copy fails on every slave as soon as any client has pulled from the master
(apache/rocketmq#10284: the master's answer carries `pullOffsetTable`, whose integer keys fastjson2 writes
unquoted and then refuses to skip; seen on every slave of the e2e cluster). A slave promoted then serves stale
offsets, or none: consumers re-read from older positions or, with CONSUME_FROM_LAST_OFFSET and no offset, skip
to the end. The operator reads both tables (our JSON reader accepts the bare keys) and writes the difference.

Contract: `plan_offset_copy(master, slave)` takes two offset tables, keyed `(topic, group, queue id)` as
`OffsetKey`, and returns the writes that make the slave's entries equal the master's for every key the master
has: the master's value wins in either direction, as RocketMQ's own copy replaces the slave's table (a consumer
may reset its offset backwards). Keys only the slave has are left alone (RocketMQ would drop them; the
operator never deletes consumer state). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple


class OffsetKey(NamedTuple):
    topic: str
    group: str
    queue_id: int


@dataclass(frozen=True)
class OffsetWrite:
    key: OffsetKey
    offset: int
    was: int | None  # the slave's value before, None when it had none


def plan_offset_copy(master: Mapping[OffsetKey, int], slave: Mapping[OffsetKey, int]) -> list[OffsetWrite]:
    """The writes that make ``slave`` hold the master's offset for every key ``master`` has, in key order."""
    return [
        OffsetWrite(key, offset, slave.get(key))
        for key, offset in sorted(master.items())
        if slave.get(key) != offset and offset >= 0
    ]


def offset_table(raw: Mapping[str, Mapping[int | str, int | str]]) -> dict[OffsetKey, int]:
    """A broker's `offsetTable` (``"topic@group" -> {queue id: offset}``) as `OffsetKey`s; entries that are not
    ``topic@group`` with integer queue ids and offsets are left out (never guessed)."""
    table: dict[OffsetKey, int] = {}
    for name, queues in raw.items():
        topic, sep, group = name.rpartition("@")
        if not sep or not topic or not group or not isinstance(queues, Mapping):
            continue
        for queue, offset in queues.items():
            try:
                table[OffsetKey(topic, group, int(queue))] = int(offset)
            except (TypeError, ValueError):
                continue
    return table
