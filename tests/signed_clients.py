"""The produce and consume tools as an integration test calls them, signed as one ACL 2.0 user (or unsigned):
shared by the auth and User tests so both judge a user by the same client."""

from __future__ import annotations

import asyncio

from rocketmq_operator.remoting import RemotingException
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.tools.consume import consume
from rocketmq_operator.tools.produce import ProduceReport, produce


def signed_send(
    namesrv: str, topic: str, count: int, credentials: SessionCredentials | None, retries: int = 1
) -> ProduceReport:
    """``count`` keyed sends to an existing topic; the producer's report (acknowledged, failed)."""
    return asyncio.run(produce(namesrv, topic, count, create_topic=False, retries=retries, credentials=credentials))


def signed_read(namesrv: str, topic: str, group: str, credentials: SessionCredentials | None) -> set[str]:
    """Every key of the topic read from the masters to the queues' ends; nothing when the reader is refused."""
    try:
        report = asyncio.run(
            consume(
                namesrv, topic, group=group, idle_timeout=1.5, read_from="master", credentials=credentials,
                to_end=True,
            )
        )  # fmt: skip
    except RemotingException:
        return set()
    return set(report.keys)
