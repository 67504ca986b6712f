"""Copy a master's consumer offsets to other replicas (`core.offsets` says why and what): the executor both
platforms run, from the replication policy every `OFFSET_COPY_S` (RocketMQ's own period) and from the
switchover, once the target has caught up under the fence.

Contract: `copy_offsets(client, master, targets)` reads the master's table once (GET_ALL_CONSUMER_OFFSET) and
each target's, writes the differences (UPDATE_CONSUMER_OFFSET, which a slave accepts), and reports how many
writes it made and what it could not do. It never raises for a broker that does not answer or refuses a write
(a group or topic not on that replica yet: the carry-over and the topic pass create them); the next copy
tries again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from rocketmq_operator.core.offsets import OffsetKey, offset_table, plan_offset_copy
from rocketmq_operator.remoting import RemotingClient, RemotingException

OFFSET_COPY_S = 10.0  # SlaveSynchronize's period: a failover loses at most this much consumer progress
OFFSET_TIMEOUT_S = 2.0


@dataclass
class OffsetCopyReport:
    written: dict[str, int] = field(default_factory=dict)  # target address -> offsets written there
    errors: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.written.values())


async def _table(client: RemotingClient, addr: str, timeout: float) -> dict[OffsetKey, int]:
    return offset_table(await client.get_all_consumer_offsets(addr, timeout=timeout))


async def copy_offsets(
    client: RemotingClient, master: str, targets: Sequence[str], *, timeout: float = OFFSET_TIMEOUT_S
) -> OffsetCopyReport:
    """Make every target hold the master's committed offsets (`core.offsets.plan_offset_copy`)."""
    report = OffsetCopyReport()
    try:
        wanted = await _table(client, master, timeout)
    except (RemotingException, OSError) as exc:
        report.errors.append(f"could not read the consumer offsets of master {master}: {exc or type(exc).__name__}")
        return report
    if not wanted:
        return report

    async def copy_to(target: str) -> None:
        try:
            have = await _table(client, target, timeout)
        except (RemotingException, OSError) as exc:
            report.errors.append(f"could not read the consumer offsets of {target}: {exc or type(exc).__name__}")
            return
        written = 0
        for write in plan_offset_copy(wanted, have):
            key = write.key
            try:
                await client.update_consumer_offset(
                    target, key.group, key.topic, key.queue_id, write.offset, timeout=timeout
                )
            except (RemotingException, OSError) as exc:
                report.errors.append(
                    f"could not write {key.topic}@{key.group} queue {key.queue_id} on {target}: "
                    f"{exc or type(exc).__name__}"
                )
                continue
            written += 1
        report.written[target] = written

    await asyncio.gather(*(copy_to(t) for t in targets if t != master))
    return report
