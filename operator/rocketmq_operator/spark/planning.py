"""Partition planning and admission control for the ``rocketmq`` Spark source (pure Python, deterministic).

Contract:

* :func:`plan_ranges` turns (start, end) offsets into :class:`OffsetRange` s, one per queue with data. A
  queue present in ``end`` but not in ``start`` (a queue or topic that appeared since the last batch) starts
  at earliest: ``start=0`` with ``from_earliest=True`` (the executor moves it up to the broker's min offset
  without calling it data loss). A queue whose end is *below* its start (the queue was reset, e.g. deleted
  and recreated) is read from earliest to ``end`` the same way; the driver has already failed the query for
  it when ``failOnDataLoss=true``; in a batch read (``streaming=False``) it raises :class:`PlanError`.
  Queues only in ``start`` are not read. Same inputs, same output: Spark
  may plan a batch again after a restart and must get the same ranges.
* :func:`split_ranges` honours ``minPartitions``: when there are fewer ranges than ``min_partitions``, the
  ranges are split into contiguous offset sub-ranges, giving each queue a share of ``min_partitions``
  proportional to its size (largest remainders, at least one part per queue, never more parts than messages;
  sub-ranges of one queue differ in size by at most one). With ``min_partitions`` unset or already reached,
  the ranges are returned unchanged: one Spark partition per message queue.
* :func:`cap_offsets` is ``maxMessagesPerTrigger`` (``ReadMaxRows``): when the backlog between ``start`` and
  ``available`` exceeds ``max_rows``, exactly ``max_rows`` messages are admitted, shared over the queues in
  proportion to their backlog (largest remainders, ties by queue order), never past ``available``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import RocketMQSourceError
from .offsets import Offsets, QueueRef


class PlanError(RocketMQSourceError):
    """Offsets that cannot be planned (a batch whose end is before its start)."""


@dataclass(frozen=True, order=True, slots=True)
class OffsetRange:
    """Messages ``start <= queueOffset < end`` of one queue; one Spark input partition."""

    queue: QueueRef
    start: int
    end: int
    from_earliest: bool = False
    """``start`` is a lower bound only: begin at the broker's min offset if that is higher (no data loss)."""

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def plan_ranges(
    start: Mapping[QueueRef, int], end: Mapping[QueueRef, int], *, streaming: bool = True
) -> list[OffsetRange]:
    """One range per queue of ``end`` with messages to read, sorted by queue. An end below its start is a
    reset queue when ``streaming`` (read from earliest), and an error for a batch read."""
    out: list[OffsetRange] = []
    for queue in sorted(end):
        stop = end[queue]
        begin = start.get(queue)
        if begin is not None and stop < begin and not streaming:
            raise PlanError(f"{queue}: the ending offset {stop} is before the starting offset {begin}")
        if begin is None or stop < begin:
            rng = OffsetRange(queue, 0, stop, from_earliest=True)
        else:
            rng = OffsetRange(queue, begin, stop)
        if rng.size > 0:
            out.append(rng)
    return out


def _largest_remainder(weights: Sequence[int], total: int, minimum: Sequence[int], maximum: Sequence[int]) -> list[int]:
    """Integers ``n_i`` with ``minimum_i <= n_i <= maximum_i`` and sum ``total`` (if reachable), close to
    ``total * w_i / sum(w)``; leftovers go to the largest fractional parts, ties to the lower index."""
    weight_sum = sum(weights)
    if weight_sum <= 0:
        return list(minimum)
    exact = [total * w / weight_sum for w in weights]
    parts = [min(max(math.floor(x), lo), hi) for x, lo, hi in zip(exact, minimum, maximum, strict=True)]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - math.floor(exact[i])), i))
    remaining = total - sum(parts)
    while remaining > 0:
        progressed = False
        for i in order:
            if remaining == 0:
                break
            if parts[i] < maximum[i]:
                parts[i] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            break
    return parts


def split_ranges(ranges: Sequence[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Split ranges into at least ``min_partitions`` contiguous sub-ranges (when the messages allow it)."""
    ranges = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(ranges) >= min_partitions or not ranges:
        return list(ranges)
    sizes = [r.size for r in ranges]
    parts = _largest_remainder(sizes, min_partitions, [1] * len(ranges), sizes)
    out: list[OffsetRange] = []
    for rng, count in zip(ranges, parts, strict=True):
        base, extra = divmod(rng.size, count)
        begin = rng.start
        for index in range(count):
            stop = begin + base + (1 if index < extra else 0)
            # Only the first piece may begin below the broker's min offset.
            out.append(OffsetRange(rng.queue, begin, stop, rng.from_earliest and index == 0))
            begin = stop
    return out


def plan_partitions(
    start: Mapping[QueueRef, int], end: Mapping[QueueRef, int], min_partitions: int | None, *, streaming: bool = True
) -> list[OffsetRange]:
    """:func:`plan_ranges` then :func:`split_ranges`."""
    return split_ranges(plan_ranges(start, end, streaming=streaming), min_partitions)


def cap_offsets(start: Mapping[QueueRef, int], available: Mapping[QueueRef, int], max_rows: int | None) -> Offsets:
    """End offsets admitting at most ``max_rows`` messages (all of ``available`` when ``max_rows`` is None).
    Queues not in ``start`` count from 0 (they are read from earliest)."""
    result: Offsets = dict(available)
    if max_rows is None:
        return result
    queues = sorted(available)
    begins = [start.get(q, 0) for q in queues]
    backlog = [max(0, available[q] - b) for q, b in zip(queues, begins, strict=True)]
    if sum(backlog) <= max_rows:
        return result
    shares = _largest_remainder(backlog, max_rows, [0] * len(queues), backlog)
    for queue, begin, share, lag in zip(queues, begins, shares, backlog, strict=True):
        if lag > 0:
            result[queue] = begin + share
    return result
