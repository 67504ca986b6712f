"""The drain of a broker group before its removal, written once for both platforms (`core.group_drain` decides).

Contract: `run_group_drain(client, state, ...)` reads what the plan needs from the group's master (its live
config: permission, fence, send door; its committed offsets and the max offset of each queue they name), asks
`core.group_drain.plan_group_drain`, carries out the plan's actions on the master (write permission off or back
on, the send door shut) and returns the plan with what was done. It never raises for a broker that does not
answer: what could not be read is a fact of the plan (held), what could not be done a line of the outcome, tried
again on the next pass. The platform keeps `GroupDrainPlan.since` in the group's status and passes it back, and
removes the group's workloads only when the plan says `remove`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocketmq_operator.api.models import GroupDrainStatus
from rocketmq_operator.control.fence import FENCE_DOOR_KEY, FENCE_FOREVER_MS, door_shut_until_ms, is_fenced
from rocketmq_operator.core.conditions import condition
from rocketmq_operator.core.group_drain import (
    CONDITION,
    PERM_READ_ONLY,
    PERM_READ_WRITE,
    GroupDrainAction,
    GroupDrainFacts,
    GroupDrainPlan,
    lag_by_group,
    lag_pairs,
    plan_group_drain,
)
from rocketmq_operator.core.observation import GroupState
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.remoting.admin import TopicAdmin

ACTION_CONFIG: dict[GroupDrainAction, dict[str, str]] = {
    GroupDrainAction.WRITE_OFF: {"brokerPermission": str(PERM_READ_ONLY)},
    GroupDrainAction.WRITE_ON: {"brokerPermission": str(PERM_READ_WRITE)},
    GroupDrainAction.SHUT_DOOR: {FENCE_DOOR_KEY: str(FENCE_FOREVER_MS)},
    GroupDrainAction.OPEN_DOOR: {FENCE_DOOR_KEY: "0"},
}


@dataclass
class GroupDrainOutcome:
    plan: GroupDrainPlan
    lag: dict[str, int] | None
    steps: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def status(self) -> GroupDrainStatus | None:
        """status.drain: None once no drain is under way."""
        if not self.plan.active:
            return None
        lag = self.lag or {}
        return GroupDrainStatus(
            since=self.plan.since,
            drained=self.plan.drained,
            lag_total=None if self.lag is None else sum(lag.values()),
            lag={g: n for g, n in sorted(lag.items()) if n > 0},
            message=self.plan.message,
        )


async def read_lag(
    client: RemotingClient, addr: str, declared: Iterable[tuple[str, str]] = (), *, timeout: float
) -> dict[str, int]:
    """Lag per consumer group on the broker at ``addr`` (`core.group_drain.lag_pairs`, `lag_by_group`): its
    committed offsets and topic table, then the max and min offset of each queue that counts."""
    raw = await client.get_all_consumer_offsets(addr, timeout=timeout)
    offsets = {
        str(key): {str(q): int(o) for q, o in queues.items()} for key, queues in raw.items() if isinstance(queues, dict)
    }
    pairs = lag_pairs(offsets, declared)
    topics = await TopicAdmin(client).topics(addr, timeout=timeout)
    queue_nums = {name: t.read_queue_nums for name, t in topics.items() if name in {p[0] for p in pairs}}
    highs: dict[tuple[str, int], int] = {}
    lows: dict[tuple[str, int], int] = {}
    for topic, count in queue_nums.items():
        for queue in range(count):
            try:
                highs[(topic, queue)] = await client.get_max_offset(addr, topic, queue, timeout=timeout)
                lows[(topic, queue)] = await client.get_min_offset(addr, topic, queue, timeout=timeout)
            except RemotingException:
                continue  # deleted meanwhile: nothing of it is left to consume
    return lag_by_group(offsets, pairs, queue_nums, highs, lows)


async def run_group_drain(
    client: RemotingClient,
    state: GroupState,
    *,
    draining: bool,
    removing: bool,
    forced: bool = False,
    recorded: GroupDrainStatus | None = None,
    declared: Iterable[tuple[str, str]] = (),
    deadline_s: float = 0.0,
    timeout: float = 3.0,
    dry_run: bool = False,
) -> GroupDrainOutcome:
    """One drain step over one observation (module doc); ``declared``: the (topic, consumer group) pairs the
    declared ConsumerGroups placed on this group read (`declared_lag_pairs`); ``dry_run``: decide only (what a
    removal would meet)."""
    master = state.master
    config: dict[str, str] | None = None
    lag: dict[str, int] | None = None
    problems: list[str] = []
    if master is not None and master.reachable and (draining or removing or recorded is not None):
        try:
            config = await client.get_broker_config(master.address, timeout=timeout)
        except (RemotingException, OSError) as exc:
            problems.append(f"{master.name}: config not read: {exc or type(exc).__name__}")
        if config is not None and (draining or removing):
            try:
                lag = await read_lag(client, master.address, declared, timeout=timeout)
            except (RemotingException, OSError, ValueError) as exc:
                problems.append(f"{master.name}: consumer offsets not read: {exc or type(exc).__name__}")
    now = time.time()
    door_until = door_shut_until_ms(config or {})
    facts = GroupDrainFacts(
        draining=draining,
        removing=removing,
        forced=forced,
        master_reachable=config is not None,
        any_reachable=any(r.reachable for r in state.replicas),
        permission=_int(config.get("brokerPermission")) if config is not None else None,
        fence_held=config is not None and (is_fenced(config) or (now * 1000 < door_until < FENCE_FOREVER_MS)),
        door_shut=door_until >= FENCE_FOREVER_MS,
        lag=lag,
        recorded_since=recorded.since if recorded is not None else None,
        recorded=recorded is not None,
        deadline_s=deadline_s,
        now=now,
    )
    plan = plan_group_drain(facts, group=state.group)
    outcome = GroupDrainOutcome(plan=plan, lag=lag, problems=problems)
    for action in () if dry_run else plan.actions:
        assert master is not None  # an action is planned only on a master that answered
        values = ACTION_CONFIG[action]
        try:
            await client.update_broker_config(master.address, values, timeout=timeout)
        except (RemotingException, OSError) as exc:
            outcome.problems.append(f"{master.name}: {action} not done, tried again next pass: {exc}")
            continue
        outcome.steps.append(f"{master.name}: {action} ({', '.join(f'{k}={v}' for k, v in values.items())})")
    return outcome


def declared_lag_pairs(wanted_lag_topics: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """(topic, consumer group) pairs from a group's `WantedOnGroup.lag_topics` (consumer group -> its topics)."""
    return [(topic, group) for group, topics in wanted_lag_topics.items() for topic in topics]


def drain_condition(
    drain: GroupDrainStatus | None, now: str, generation: int | None, previous: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The `Drained` condition of status.drain: True once drained, False while draining, none without a drain."""
    if drain is None:
        return None
    if drain.drained:
        return condition(CONDITION, "True", "Drained", drain.message, now, generation, previous=previous)
    return condition(CONDITION, "False", "Draining", drain.message, now, generation, previous=previous)


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.strip().isdigit() else None
