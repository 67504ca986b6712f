"""Assert declared topics and consumer groups on a group's master(s): the executor both platforms call.

Contract: `assert_group(client, state, wanted, memory)` reads the master's topic and subscription-group tables
(GET_ALL_TOPIC_CONFIG, GET_ALL_SUBSCRIPTIONGROUP_CONFIG), asks `core.topics` what to change, carries the actions
out (UPDATE_AND_CREATE_TOPIC, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_TOPIC_IN_BROKER,
DELETE_SUBSCRIPTIONGROUP) and reports what the master has afterwards. It never raises for an unreachable broker:
the error is in the report and `asserted` stays False, so the platform reports the group not writable yet.
In the classic modes every reachable slave is asserted too (a slave acts as master while the master is away).
`GroupTopicMemory` holds, per group, every topic seen on any of its masters (re-created on a new master whoever
created it: automatic creation, mqadmin, the produce tool; forgotten when deleted on the same master) and the
master last asserted; the platform keeps one per group for as long as it runs.

On a new master after one this memory asserted (an election the operator did not plan, so no carry-over ran before
it) `assert_group` also asks the client's name servers for the topics they still route to the group that neither
the new master nor the memory knows (`core.topics.route_candidates`, `recovered_from_routes`): a topic made on the
old master a moment before it died, whose acknowledged messages the new master holds but cannot serve until the
topic exists. It costs a topic list and a route read per topic the new master lacks (every other group's among
them), at each failover only: not on the first pass of a restarted operator, which would pay it for every group.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from rocketmq_operator.core.observation import GroupState
from rocketmq_operator.core.topics import (
    ActionKind,
    ConsumerGroupFacts,
    Refusal,
    RoutedQueues,
    TopicConfigFacts,
    WantedOnGroup,
    is_internal_topic,
    plan_carry_over,
    plan_consumer_groups,
    plan_topics,
    recovered_from_routes,
    route_candidates,
    update_observed,
    wanted_topics,
)
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.remoting.admin import SubscriptionGroupInfo, TopicAdmin, TopicConfigInfo

ADMIN_TIMEOUT_S = 3.0
ROUTE_READS_AT_ONCE = 16  # a new master's route reads, in parallel (one per topic it lacks)


@dataclass
class GroupTopicMemory:
    observed: dict[str, TopicConfigFacts] = field(default_factory=dict)
    asserted_master: str | None = None
    asserted_epoch: int | None = None


@dataclass
class AssertReport:
    group: str
    master: str | None
    asserted: bool = False  # the master holds every wanted topic and group (nothing failed)
    new_master: bool = False  # first assertion on this master
    done: list[str] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    topics: dict[str, TopicConfigInfo] = field(default_factory=dict)
    consumer_groups: dict[str, SubscriptionGroupInfo] = field(default_factory=dict)
    topic_max_offsets: dict[str, int] = field(default_factory=dict)
    lag: dict[str, dict[str, int]] = field(default_factory=dict)  # group -> topic -> lag


def _facts(info: TopicConfigInfo) -> TopicConfigFacts:
    return TopicConfigFacts(info.topic_name, info.read_queue_nums, info.write_queue_nums, info.perm, info.attributes)


def _group_facts(info: SubscriptionGroupInfo) -> ConsumerGroupFacts:
    return ConsumerGroupFacts(
        info.group_name,
        info.consume_enable,
        info.consume_from_min_enable,
        info.consume_broadcast_enable,
        info.consume_message_orderly,
        info.retry_queue_nums,
        info.retry_max_times,
    )


def _config(t: TopicConfigFacts) -> TopicConfigInfo:
    return TopicConfigInfo(t.name, t.read_queue_nums, t.write_queue_nums, t.perm, attributes=dict(t.attributes))


def _group_config(g: ConsumerGroupFacts) -> SubscriptionGroupInfo:
    return SubscriptionGroupInfo(
        g.name,
        g.consume_enable,
        g.consume_from_min_enable,
        g.consume_broadcast_enable,
        g.consume_message_orderly,
        g.retry_queue_nums,
        g.retry_max_times,
    )


async def carry_over(admin: TopicAdmin, master: str, target: str, *, timeout: float = ADMIN_TIMEOUT_S) -> list[str]:
    """Create on ``target`` what ``master`` has and it lacks (`core.topics.plan_carry_over`); the steps done.
    Raises `RemotingException`/`OSError` when either table cannot be read or a create fails: the caller decides."""
    (m_topics, t_topics), (m_groups, t_groups) = await asyncio.gather(
        asyncio.gather(admin.topics(master, timeout=timeout), admin.topics(target, timeout=timeout)),
        asyncio.gather(
            admin.subscription_groups(master, timeout=timeout), admin.subscription_groups(target, timeout=timeout)
        ),
    )
    plan = plan_carry_over(
        {n: _facts(i) for n, i in m_topics.items()},
        {n: _facts(i) for n, i in t_topics.items()},
        {n: _group_facts(g) for n, g in m_groups.items()},
        {n: _group_facts(g) for n, g in t_groups.items()},
    )
    done: list[str] = []
    for action in plan.actions:
        if action.topic is not None:
            await admin.create_topic(target, _config(action.topic), timeout=timeout)
            done.append(f"{action.kind.value} topic {action.name} on {target}: {action.reason}")
        elif action.group is not None:
            await admin.create_subscription_group(target, _group_config(action.group), timeout=timeout)
            done.append(f"{action.kind.value} consumer group {action.name} on {target}: {action.reason}")
    return done


def master_address(state: GroupState) -> str | None:
    """The master to assert on: the one the controller names (controller mode) or ordinal 0 (classic modes)."""
    master = state.master
    if master is None or not master.reachable:
        return None
    if state.controller_mode and master.is_master is False:
        return None  # named but not yet serving as master: assert once it is
    return master.address


def target_addresses(state: GroupState) -> list[str]:
    """Where topics must be: the master; in the classic modes also every reachable slave, because a slave acts
    as master for reads while the master is away (slaveActingMaster), and the name servers route consumers to it
    before it has synchronized the master's topic table."""
    master = master_address(state)
    out = [master] if master is not None else []
    if not state.controller_mode:
        out.extend(r.address for r in state.replicas if r.reachable and r.address not in out)
    return out


async def assert_group(
    client: RemotingClient,
    state: GroupState,
    wanted: WantedOnGroup,
    memory: GroupTopicMemory,
    *,
    measure: bool = False,
    timeout: float = ADMIN_TIMEOUT_S,
) -> AssertReport:
    """Bring the group's master (and acting masters) in line with `wanted`; `measure` also reads max offsets
    and consumer lag on the master."""
    addr = master_address(state)
    report = AssertReport(state.group, addr)
    targets = target_addresses(state)
    if addr is None:
        report.errors.append("no reachable master")
    if not targets:
        return report
    report.new_master = (addr, state.master_epoch) != (memory.asserted_master, memory.asserted_epoch)
    admin = TopicAdmin(client)
    failover = memory.asserted_master is not None and report.new_master
    if failover and addr is not None and state.controller_mode and client.namesrv_addrs:
        await _recover_routed_topics(client, admin, state.group, addr, wanted, memory, report, timeout)
    for target in targets:
        table, groups = await _assert_on(
            admin, target, wanted, memory, report, timeout, target == addr, state.master_epoch
        )
        if target == addr or (addr is None and target == targets[0]):
            report.topics, report.consumer_groups = table, groups
    report.asserted = addr is not None and not report.errors
    if report.asserted:
        memory.asserted_master, memory.asserted_epoch = addr, state.master_epoch
    if measure and addr is not None:
        await _measure(admin, addr, wanted, report.topics, set(memory.observed), report, timeout)
    return report


async def _recover_routed_topics(
    client: RemotingClient,
    admin: TopicAdmin,
    group: str,
    master: str,
    wanted: WantedOnGroup,
    memory: GroupTopicMemory,
    report: AssertReport,
    timeout: float,
) -> None:
    """Add to the memory the topics the name servers route to ``group`` that its new master lacks (created on it
    by the assertion that follows). A failure is reported, so the group is not asserted on this master and the
    next pass asks again."""
    try:
        listed, table = await asyncio.gather(
            client.get_all_topics(timeout=timeout), admin.topics(master, timeout=timeout)
        )
    except (RemotingException, OSError) as exc:
        report.errors.append(f"cannot list the name servers' topics for the new master {master}: {exc}")
        return
    known = [t.name for t in wanted.topics] + list(memory.observed)
    candidates = route_candidates(listed, table, known, wanted.own_names)
    gate = asyncio.Semaphore(ROUTE_READS_AT_ONCE)

    async def routed(topic: str) -> tuple[str, RoutedQueues | None]:
        async with gate:
            try:
                route = await client.get_route(topic, timeout=timeout)
            except (RemotingException, OSError):
                return topic, None  # deleted meanwhile, or a name server hiccup: not this group's to recover
        mine = next((q for q in route.queue_datas if q.broker_name == group), None)
        return topic, None if mine is None else RoutedQueues(mine.read_queue_nums, mine.write_queue_nums, mine.perm)

    found = {t: q for t, q in await asyncio.gather(*(routed(t) for t in candidates)) if q is not None}
    for name, facts in recovered_from_routes(found).items():
        memory.observed[name] = facts
        report.done.append(f"topic {name}: routed to {group} by the name servers, missing on the new master {master}")


async def _assert_on(
    admin: TopicAdmin,
    addr: str,
    wanted: WantedOnGroup,
    memory: GroupTopicMemory,
    report: AssertReport,
    timeout: float,
    is_master: bool,
    epoch: int | None,
) -> tuple[dict[str, TopicConfigInfo], dict[str, SubscriptionGroupInfo]]:
    try:
        table = await admin.topics(addr, timeout=timeout)
        groups = await admin.subscription_groups(addr, timeout=timeout)
    except (RemotingException, OSError) as exc:
        report.errors.append(f"cannot read the topic tables of {addr}: {exc or type(exc).__name__}")
        return {}, {}
    have = {name: _facts(info) for name, info in table.items()}
    if is_master:
        same = (addr, epoch) == (memory.asserted_master, memory.asserted_epoch)
        memory.observed = update_observed(memory.observed, have, same, wanted.own_names)
    topics_plan = plan_topics(
        wanted_topics(wanted.topics, memory.observed, True, wanted.own_names),
        have,
        wanted.deleting_topics,
    )
    groups_plan = plan_consumer_groups(
        wanted.consumer_groups, {n: _group_facts(g) for n, g in groups.items()}, wanted.deleting_groups
    )
    report.refusals.extend(r for r in topics_plan.refusals + groups_plan.refusals if r not in report.refusals)
    for action in topics_plan.actions:
        try:
            if action.kind is ActionKind.DELETE:
                await admin.delete_topic(addr, action.name, timeout=timeout)
                memory.observed.pop(action.name, None)
            else:
                assert action.topic is not None
                await admin.create_topic(addr, _config(action.topic), timeout=timeout)
            report.done.append(f"{action.kind.value} topic {action.name} on {addr}: {action.reason}")
        except (RemotingException, OSError) as exc:
            report.errors.append(f"{action.kind.value} topic {action.name} on {addr} failed: {exc}")
    for action in groups_plan.actions:
        try:
            if action.kind is ActionKind.DELETE:
                await admin.delete_subscription_group(addr, action.name, timeout=timeout)
            else:
                assert action.group is not None
                await admin.create_subscription_group(addr, _group_config(action.group), timeout=timeout)
            report.done.append(f"{action.kind.value} consumer group {action.name} on {addr}: {action.reason}")
        except (RemotingException, OSError) as exc:
            report.errors.append(f"{action.kind.value} consumer group {action.name} on {addr} failed: {exc}")
    if topics_plan.actions or groups_plan.actions:
        try:
            table = await admin.topics(addr, timeout=timeout)
            groups = await admin.subscription_groups(addr, timeout=timeout)
        except (RemotingException, OSError) as exc:
            report.errors.append(f"cannot re-read the topic tables of {addr}: {exc or type(exc).__name__}")
    missing = [t.name for t in wanted.topics if t.name not in table]
    missing += [g.name for g in wanted.consumer_groups if g.name not in groups]
    if missing:
        report.errors.append(f"still missing on {addr}: {', '.join(missing)}")
    return table, groups


async def _measure(
    admin: TopicAdmin,
    addr: str,
    wanted: WantedOnGroup,
    table: dict[str, TopicConfigInfo],
    observed: set[str],
    report: AssertReport,
    timeout: float,
) -> None:
    names: Sequence[str] = [t.name for t in wanted.topics] + sorted(
        n
        for n in table
        if n not in {t.name for t in wanted.topics} and n in observed and not is_internal_topic(n, wanted.own_names)
    )
    for name in names:
        info = table.get(name)
        if info is None:
            continue
        try:
            total = 0
            for queue_id in range(info.write_queue_nums):
                total += await admin.client.get_max_offset(addr, name, queue_id, timeout=timeout)
            report.topic_max_offsets[name] = total
        except (RemotingException, OSError) as exc:
            report.errors.append(f"max offsets of {name} on {addr}: {exc}")
    for group, topics in wanted.lag_topics.items():
        for topic in topics:
            info = table.get(topic)
            if info is None:
                continue
            try:
                lag = await admin.consumer_lag(addr, group, topic, info.read_queue_nums, timeout=timeout)
            except (RemotingException, OSError) as exc:
                report.errors.append(f"lag of {group} on {topic} at {addr}: {exc}")
                continue
            report.lag.setdefault(group, {})[topic] = lag
