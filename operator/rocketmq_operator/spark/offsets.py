"""Queue offsets of the ``rocketmq`` Spark source and their JSON form (pure Python: no pyspark, no network).

Contract:

* A message queue is ``(topic, brokerName, queueId)`` (:class:`QueueRef`). An offset is a RocketMQ
  consume-queue offset and always means *the next message to read* ("1 + the last offset read"), like Kafka's
  source offsets. A range ``[start, end)`` holds the messages with ``start <= queueOffset < end``.
* JSON form (used by the ``startingOffsets`` / ``endingOffsets`` options and by Spark's checkpoint, where it is
  what ``initialOffset``/``latestOffset`` return)::

      {"<topic>": {"<brokerName>/<queueId>": <offset>, ...}, ...}

  e.g. ``{"orders": {"broker-a/0": 42, "broker-a/1": 40}}``. In the options ``-2`` means *earliest* (the
  master's min offset) and ``-1`` *latest* (the master's max offset); checkpointed offsets are always >= 0.
* :func:`offsets_to_json` is canonical: topics sorted, queues sorted by (brokerName, queueId). The streaming
  engine compares offsets as JSON text, so the same offsets always give the same text; a dict read back with
  :func:`offsets_from_json` and written again is unchanged (round trip).
* Malformed JSON raises :class:`OffsetFormatError` naming the option (or ``what``) and the bad entry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

EARLIEST = -2
LATEST = -1


class OffsetFormatError(ValueError):
    """An offset document that is not ``{"topic": {"brokerName/queueId": offset}}``."""


@dataclass(frozen=True, order=True, slots=True)
class QueueRef:
    """One message queue: ``topic``, broker group ``broker_name`` and ``queue_id``."""

    topic: str
    broker_name: str
    queue_id: int

    @property
    def key(self) -> str:
        """``"<brokerName>/<queueId>"``, the inner key of the JSON form."""
        return f"{self.broker_name}/{self.queue_id}"

    def __str__(self) -> str:
        return f"{self.topic}@{self.broker_name}/{self.queue_id}"


Offsets = dict[QueueRef, int]
"""Queue -> offset (the next message to read)."""


def parse_queue_key(topic: str, key: str, what: str = "offsets") -> QueueRef:
    """``"broker-a/3"`` of ``topic`` -> ``QueueRef(topic, "broker-a", 3)``."""
    broker, sep, queue = key.rpartition("/")
    if not sep or not broker or not queue.isdigit():
        raise OffsetFormatError(
            f'{what}: queue key {key!r} of topic {topic!r} is not "<brokerName>/<queueId>" (e.g. "broker-a/0")'
        )
    return QueueRef(topic, broker, int(queue))


def offsets_to_json(offsets: Mapping[QueueRef, int]) -> dict[str, dict[str, int]]:
    """The canonical nested dict (sorted topics, queues sorted by broker name then queue id)."""
    out: dict[str, dict[str, int]] = {}
    for queue in sorted(offsets):
        out.setdefault(queue.topic, {})[queue.key] = int(offsets[queue])
    return out


def offsets_from_json(doc: Any, what: str = "offsets", *, allow_special: bool = False) -> Offsets:
    """Parse the nested dict. ``allow_special`` admits -2 (earliest) and -1 (latest) besides offsets >= 0."""
    if not isinstance(doc, Mapping):
        raise OffsetFormatError(
            f'{what}: expected a JSON object {{"topic": {{"brokerName/queueId": offset}}}}, got {type(doc).__name__}'
        )
    out: Offsets = {}
    for topic, queues in doc.items():
        if not isinstance(topic, str) or not topic:
            raise OffsetFormatError(f"{what}: topic names must be non-empty strings, got {topic!r}")
        if not isinstance(queues, Mapping):
            raise OffsetFormatError(
                f'{what}: topic {topic!r} must map to {{"brokerName/queueId": offset}}, got {type(queues).__name__}'
            )
        for key, value in queues.items():
            queue = parse_queue_key(topic, str(key), what)
            if isinstance(value, bool) or not isinstance(value, int):
                raise OffsetFormatError(f"{what}: offset of {queue} must be an integer, got {value!r}")
            lowest = EARLIEST if allow_special else 0
            if value < lowest:
                allowed = "-2 (earliest), -1 (latest) or >= 0" if allow_special else ">= 0"
                raise OffsetFormatError(f"{what}: offset of {queue} is {value}; allowed: {allowed}")
            out[queue] = value
    return out


def dumps_offsets(offsets: Mapping[QueueRef, int]) -> str:
    """Canonical JSON text."""
    return json.dumps(offsets_to_json(offsets), separators=(",", ":"))


def loads_offsets(text: str, what: str = "offsets", *, allow_special: bool = False) -> Offsets:
    """Parse JSON text (see :func:`offsets_from_json`)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise OffsetFormatError(f"{what}: not valid JSON ({exc.args[0]}): {text!r:.200}") from None
    return offsets_from_json(doc, what, allow_special=allow_special)
