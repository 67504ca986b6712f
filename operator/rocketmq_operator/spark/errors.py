"""Exceptions of the ``rocketmq`` Spark source (raised on the driver or in executor tasks; Spark shows the message).

Contract: every deliberate failure is a :class:`RocketMQSourceError` whose message names the topic and queue
(``topic@brokerName/queueId``) when one is concerned. :class:`DataLossError` is raised only when
``failOnDataLoss=true`` and names the offset that was wanted and the broker's min (or max) offset.
"""

from __future__ import annotations


class RocketMQSourceError(RuntimeError):
    """The source cannot do what was asked (no route, no master, unreachable brokers, ...)."""


class DataLossError(RocketMQSourceError):
    """Messages the query should read no longer exist (retention, a deleted or reset queue)."""
