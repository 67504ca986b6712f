"""Client tools for users and for the project's own checks: produce, consume, digest.

Contract: this package imports only :mod:`rocketmq_operator.remoting` and the standard library, so it runs
on Spark executors and in CI without kopf or pydantic. :func:`produce` / :class:`SteadyProducer`
(:mod:`.produce`) and :func:`consume` (:mod:`.consume`) are the library API; :mod:`.cli` wraps them as the
``rocketmq-operator produce`` / ``consume`` subcommands. Producer and consumer share one order-independent
digest over (key, body) (:mod:`.digest`), so equal digests mean the same set of messages.
"""

from .consume import ConsumeReport, QueueProgress, consume
from .digest import Digest, body_for, body_matches, digest_of, message_digest
from .produce import (
    RETRYABLE_CODES,
    STORED_STATUSES,
    Decision,
    ProduceReport,
    Sender,
    SendRecord,
    SteadyProducer,
    classify_exception,
    classify_result,
    produce,
)
from .routing import QueueSelector, ToolError, TopicRouter, WriteQueue, ensure_topic, writable_queues
from .stats import RecoveryWindow, recovery_windows

__all__ = [
    "RETRYABLE_CODES",
    "STORED_STATUSES",
    "ConsumeReport",
    "Decision",
    "Digest",
    "ProduceReport",
    "QueueProgress",
    "QueueSelector",
    "RecoveryWindow",
    "SendRecord",
    "Sender",
    "SteadyProducer",
    "ToolError",
    "TopicRouter",
    "WriteQueue",
    "body_for",
    "body_matches",
    "classify_exception",
    "classify_result",
    "consume",
    "digest_of",
    "ensure_topic",
    "message_digest",
    "produce",
    "recovery_windows",
    "writable_queues",
]
