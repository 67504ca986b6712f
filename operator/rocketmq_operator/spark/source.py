"""The ``rocketmq`` data source on Spark's Python Data Source API (pyspark >= 4.2).

Contract:

* :class:`RocketMQDataSource` (short name ``rocketmq``) serves ``spark.read.format("rocketmq")`` and
  ``spark.readStream.format("rocketmq")`` with the fixed schema of :mod:`.schema`; options are those of
  :mod:`.options` (bad ones fail the query with a message naming the option). A user-given schema must be
  the same schema.
* Batch: the driver resolves start (``startingTimestamp`` > ``startingOffsets``, default earliest) and end
  (``endingOffsets``, default latest = the masters' max offsets, i.e. committed data, see :mod:`.metadata`)
  and plans one input partition per message queue, split for ``minPartitions`` (:mod:`.planning`).
* Streaming: offsets are ``{"topic": {"brokerName/queueId": nextOffset}}`` (:mod:`.offsets`) and live in
  Spark's checkpoint only: ``initialOffset`` resolves ``startingOffsets``/``startingTimestamp`` once for a
  new query; ``latestOffset(start, limit)`` reads the masters' max offsets (queues of topics that appear
  later, e.g. through ``topicPattern``, start at earliest), caps them with the engine's read limit
  (``ReadMaxRows`` from ``maxMessagesPerTrigger``, see ``getDefaultReadLimit``) and, after
  ``prepareForTriggerAvailableNow``, at the offsets seen then; ``commit`` commits nothing to RocketMQ.
  A queue whose max offset went below the checkpointed offset fails the query with
  :class:`.errors.DataLossError` when ``failOnDataLoss=true`` (else it is re-read from earliest, with a
  warning). Replaying a batch reads the same offset ranges, hence the same messages: with an idempotent or
  transactional sink (the file sink, or ``foreachBatch`` writing per-batch-id output) a killed and restarted
  query delivers every message exactly once.
* Executors (:mod:`.executor`) pull their range with the stdlib remoting client and yield Arrow record
  batches; nothing here imports kopf or kubernetes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .errors import DataLossError
from .executor import ReadSettings, read_partition
from .metadata import Driver, log
from .offsets import Offsets, QueueRef, offsets_from_json, offsets_to_json
from .options import OptionError, SourceOptions, parse_options
from .planning import cap_offsets, plan_partitions
from .schema import COLUMN_NAMES, spark_schema

try:
    from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError as exc:  # pragma: no cover - depends on the installed pyspark
    raise ImportError(
        "the rocketmq Spark source needs pyspark >= 4.2 (Python data source streaming with admission control); "
        f"fix: pip install 'rocketmq-operator[spark]' ({exc})"
    ) from exc

SHORT_NAME = "rocketmq"


def _check_schema(schema: Any) -> None:
    names = tuple(getattr(schema, "fieldNames", lambda: ())())
    if names != COLUMN_NAMES:
        raise OptionError(
            f"schema: the rocketmq source has a fixed schema ({', '.join(COLUMN_NAMES)}); do not pass another "
            f"one with .schema(...) (got {', '.join(names) or 'none'})"
        )


def _partitions(ranges: Sequence[Any]) -> list[InputPartition]:
    return [InputPartition(r) for r in ranges]


class RocketMQDataSource(DataSource):
    """``format("rocketmq")``: batch and streaming reads of RocketMQ 5 broker groups."""

    @classmethod
    def name(cls) -> str:
        return SHORT_NAME

    def schema(self) -> Any:
        return spark_schema()

    def reader(self, schema: Any) -> DataSourceReader:
        _check_schema(schema)
        return RocketMQBatchReader(parse_options(self.options, streaming=False))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        _check_schema(schema)
        return RocketMQStreamReader(parse_options(self.options, streaming=True))


class RocketMQBatchReader(DataSourceReader):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.settings = ReadSettings.of(opts)

    def partitions(self) -> Sequence[InputPartition]:
        driver = Driver(self.opts)
        try:
            start = driver.position(
                self.opts.starting,
                option="startingOffsets",
                timestamp_ms=self.opts.starting_timestamp,
                default="min",
            )
            end = driver.position(self.opts.ending, option="endingOffsets", default="max")
        finally:
            driver.close()
        return _partitions(plan_partitions(start, end, self.opts.min_partitions, streaming=False))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        yield from read_partition(getattr(partition, "value", None), self.settings)


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.settings = ReadSettings.of(opts)
        self._driver = Driver(opts)
        self._target: Offsets | None = None
        self._latest: Offsets | None = None

    def initialOffset(self) -> dict[str, Any]:
        start = self._driver.position(
            self.opts.starting,
            option="startingOffsets",
            timestamp_ms=self.opts.starting_timestamp,
            default="min",
        )
        return offsets_to_json(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_messages_per_trigger is not None:
            return ReadMaxRows(self.opts.max_messages_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        _, self._target = self._driver.bounds("max")
        log.info("rocketmq source: Trigger.AvailableNow stops at %s", offsets_to_json(self._target))

    def _check_backwards(self, begin: Offsets, available: Offsets) -> None:
        for queue in sorted(available):
            was = begin.get(queue)
            if was is not None and available[queue] < was:
                detail = (
                    f"topic {queue.topic!r} queue {queue.key}: the master's max offset {available[queue]} is below "
                    f"the checkpointed offset {was} (the queue was reset, e.g. deleted and recreated, or the "
                    "broker lost data)"
                )
                if self.opts.fail_on_data_loss:
                    raise DataLossError(detail + "; set failOnDataLoss=false to re-read it from earliest")
                log.warning("rocketmq source: %s; failOnDataLoss=false, re-reading it from earliest", detail)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = offsets_from_json(start, "checkpointed offsets")
        _, available = self._driver.bounds("max")
        self._latest = dict(available)
        self._check_backwards(begin, available)
        if self._target is not None:
            target = self._target
            available = {q: min(v, target[q]) for q, v in available.items() if q in target}
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end: dict[QueueRef, int] = dict(begin)  # queues that left the route keep their offsets
        end.update(cap_offsets(begin, available, max_rows))
        return offsets_to_json(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return offsets_to_json(self._latest) if self._latest is not None else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        ranges = plan_partitions(
            offsets_from_json(start, "start offsets"),
            offsets_from_json(end, "end offsets"),
            self.opts.min_partitions,
        )
        return _partitions(ranges)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        yield from read_partition(getattr(partition, "value", None), self.settings)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: offsets live in Spark's checkpoint, nothing is committed to RocketMQ."""
        del end

    def stop(self) -> None:
        self._driver.close()
