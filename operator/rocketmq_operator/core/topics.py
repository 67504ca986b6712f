"""Topic and consumer-group re-assertion: what a group's master must be told, decided from plain data.

Contract: `plan_topics` and `plan_consumer_groups` take what is wanted (declared resources, plus topics observed
on any master of the group where automatic creation is on) and what the master has now, and return actions
(create / update / delete) and refusals; they never do I/O. A master that lacks a wanted topic gets it created
(this is the re-assertion after a master change); one whose topic differs gets it updated, except changes
RocketMQ refuses or that would strand messages, which are refused with the field, the values and the fix.
Deletion happens only for names the caller passes in `deleting` (resources deleted with deletionPolicy Delete).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from rocketmq_operator.api.models import (
    BrokerGroup,
    ConsumeMode,
    ConsumerGroup,
    MessageType,
    Topic,
    TopicPermission,
)
from rocketmq_operator.api.rules import SYSTEM_TOPIC_PREFIX, SYSTEM_TOPICS

PERM_READ = 4
PERM_WRITE = 2
PERMS: Mapping[str, int] = {
    TopicPermission.READ_WRITE.value: PERM_READ | PERM_WRITE,
    TopicPermission.READ_ONLY.value: PERM_READ,
    TopicPermission.WRITE_ONLY.value: PERM_WRITE,
}
MESSAGE_TYPE_ATTRIBUTE = "message.type"
# TopicAttributes RocketMQ refuses to change on an existing topic (EnumAttribute changeable=false).
UNCHANGEABLE_ATTRIBUTES = ("queue.type", "cleanup.policy")
# Topics the broker makes for itself or for consumer groups: never re-asserted from observation.
INTERNAL_TOPIC_PREFIXES = (SYSTEM_TOPIC_PREFIX, "RMQ_SYS_", "%RETRY%", "%DLQ%")


@dataclass(frozen=True)
class TopicConfigFacts:
    """A topic as wanted or as a master has it (the fields of RocketMQ's TopicConfig the operator manages)."""

    name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int = PERM_READ | PERM_WRITE
    attributes: Mapping[str, str] = field(default_factory=dict)
    source: str = "declared"  # declared (a Topic resource) or observed (seen on a master; automatic creation)

    @property
    def message_type(self) -> str:
        return self.attributes.get(MESSAGE_TYPE_ATTRIBUTE, MessageType.NORMAL.value)


@dataclass(frozen=True)
class ConsumerGroupFacts:
    name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16


class ActionKind(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True)
class TopicAction:
    kind: ActionKind
    name: str
    reason: str
    topic: TopicConfigFacts | None = None
    group: ConsumerGroupFacts | None = None


@dataclass(frozen=True)
class Refusal:
    name: str
    message: str


@dataclass(frozen=True)
class Plan:
    actions: tuple[TopicAction, ...] = ()
    refusals: tuple[Refusal, ...] = ()

    @property
    def creates(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.actions if a.kind is ActionKind.CREATE)


def is_internal_topic(name: str, own_names: Iterable[str] = ()) -> bool:
    """System topics, retry/dead-letter topics, and the broker's own brokerName/clusterName topics."""
    own = set(own_names)
    return (
        name in SYSTEM_TOPICS
        or name.startswith(INTERNAL_TOPIC_PREFIXES)
        or name in own
        or any(name == f"{n}_REPLY_TOPIC" for n in own)  # the cluster's request-reply topic
    )


def topic_facts(topic: Topic) -> TopicConfigFacts:
    s = topic.spec
    attributes = dict(s.attributes)
    attributes[MESSAGE_TYPE_ATTRIBUTE] = s.message_type
    return TopicConfigFacts(
        name=topic.topic_name,
        read_queue_nums=s.read_queue_nums,
        write_queue_nums=s.write_queue_nums,
        perm=PERMS.get(s.permission, PERM_READ | PERM_WRITE),
        attributes=attributes,
    )


def consumer_group_facts(group: ConsumerGroup) -> ConsumerGroupFacts:
    s = group.spec
    return ConsumerGroupFacts(
        name=group.group_name,
        consume_enable=s.consume_enable,
        consume_from_min_enable=s.consume_from_min_enable,
        consume_broadcast_enable=s.broadcast,
        consume_message_orderly=s.consume_mode == ConsumeMode.ORDERLY.value,
        retry_queue_nums=s.retry_queue_nums,
        retry_max_times=s.retry_max_times,
    )


def wanted_topics(
    declared: Sequence[TopicConfigFacts],
    observed: Mapping[str, TopicConfigFacts],
    auto_create: bool,
    own_names: Iterable[str] = (),
) -> list[TopicConfigFacts]:
    """Declared topics, plus (automatic creation on) every non-internal topic seen on a master of the group."""
    out = {t.name: t for t in declared}
    if auto_create:
        own = set(own_names)
        for name, seen in sorted(observed.items()):
            if name not in out and not is_internal_topic(name, own):
                out[name] = TopicConfigFacts(
                    name, seen.read_queue_nums, seen.write_queue_nums, seen.perm, dict(seen.attributes), "observed"
                )
    return list(out.values())


def update_observed(
    observed: Mapping[str, TopicConfigFacts],
    on_master: Mapping[str, TopicConfigFacts],
    same_master: bool,
    own_names: Iterable[str] = (),
) -> dict[str, TopicConfigFacts]:
    """Topics seen on the group's masters, whoever created them (a send with automatic creation, mqadmin, the
    produce tool): each lives in one master's topic table and is missing on the next master until re-created.
    On the master asserted last time, a topic that has gone was deleted on purpose and is forgotten; a new
    master's table only adds (it lacks what the old master had: that is what re-assertion is for)."""
    own = set(own_names)
    out = {n: t for n, t in observed.items() if not same_master or n in on_master}
    for name, facts in sorted(on_master.items()):
        if name not in out and not is_internal_topic(name, own):
            out[name] = TopicConfigFacts(
                name, facts.read_queue_nums, facts.write_queue_nums, facts.perm, dict(facts.attributes), "observed"
            )
    return out


@dataclass(frozen=True)
class RoutedQueues:
    """What a name server's route of a topic says of one brokerName: its queue counts and permission."""

    read_queue_nums: int
    write_queue_nums: int
    perm: int


def route_candidates(
    listed: Iterable[str], on_master: Iterable[str], known: Iterable[str], own_names: Iterable[str] = ()
) -> list[str]:
    """The topics a new master must be asked about at the name servers: listed there, not on the new master, not
    already known to the group (declared, or seen on an earlier master), and not internal."""
    skip = set(on_master) | set(known)
    own = set(own_names)
    return sorted(t for t in set(listed) if t not in skip and not is_internal_topic(t, own))


def recovered_from_routes(routed: Mapping[str, RoutedQueues]) -> dict[str, TopicConfigFacts]:
    """Topics the name servers still route to the group's brokerName though its new master lacks them: made on the
    old master too recently for any observation (a slave copies its master's topics every 10 s, the operator
    reads them every pass), and kept by the name servers, which drop a brokerName's topics only when no replica
    of it is registered (`RouteInfoManager.cleanTopicByUnRegisterRequests`). Their messages are on the new
    master's commit log (replicated before they were acknowledged), unreadable until the topic exists again.
    Recovered read-write: while the brokerName had no master the name servers wiped the write bit of its routes,
    so the route's permission is not the topic's; its attributes are not in a route either (NORMAL)."""
    return {
        name: TopicConfigFacts(
            name, q.read_queue_nums, q.write_queue_nums, q.perm | PERM_READ | PERM_WRITE, {}, "observed"
        )
        for name, q in sorted(routed.items())
        if q.read_queue_nums > 0 and q.write_queue_nums > 0
    }


def _topic_refusal(want: TopicConfigFacts, have: TopicConfigFacts) -> str | None:
    for key in UNCHANGEABLE_ATTRIBUTES:
        if key in want.attributes and want.attributes.get(key) != have.attributes.get(key, want.attributes[key]):
            return (
                f"attributes.{key}: the master has '{have.attributes.get(key)}', the Topic asks for "
                f"'{want.attributes[key]}'; rule: RocketMQ does not change {key} on an existing topic; "
                "fix: keep the old value, or declare a new topic"
            )
    if want.read_queue_nums < have.read_queue_nums and want.read_queue_nums < have.write_queue_nums:
        return (
            f"readQueueNums: {have.read_queue_nums} -> {want.read_queue_nums} while the master writes to "
            f"{have.write_queue_nums} queues; rule: queues still written must stay readable (their messages would "
            f"never be consumed); fix: lower writeQueueNums to {want.read_queue_nums} first, then readQueueNums "
            "once consumers have drained the other queues"
        )
    return None


def _differs(want: TopicConfigFacts, have: TopicConfigFacts) -> list[str]:
    out: list[str] = []
    if want.read_queue_nums != have.read_queue_nums:
        out.append(f"readQueueNums {have.read_queue_nums} -> {want.read_queue_nums}")
    if want.write_queue_nums != have.write_queue_nums:
        out.append(f"writeQueueNums {have.write_queue_nums} -> {want.write_queue_nums}")
    if want.perm & (PERM_READ | PERM_WRITE) != have.perm & (PERM_READ | PERM_WRITE):
        out.append(f"perm {have.perm} -> {want.perm}")
    for key, value in sorted(want.attributes.items()):
        current = have.attributes.get(key)
        if key == MESSAGE_TYPE_ATTRIBUTE and current is None:
            current = MessageType.NORMAL.value  # RocketMQ's default for a topic without the attribute
        if current != value:
            out.append(f"{key} {current} -> {value}")
    return out


def plan_topics(
    wanted: Sequence[TopicConfigFacts],
    on_master: Mapping[str, TopicConfigFacts],
    deleting: Iterable[str] = (),
) -> Plan:
    """What one master must be told so that it has every wanted topic, and none of `deleting`."""
    actions: list[TopicAction] = []
    refusals: list[Refusal] = []
    wanted_names = set()
    for want in wanted:
        wanted_names.add(want.name)
        if is_internal_topic(want.name):
            refusals.append(
                Refusal(want.name, f"'{want.name}' is a RocketMQ system topic; rule: the operator never changes it")
            )
            continue
        have = on_master.get(want.name)
        if have is None:
            why = "missing on the master" + (" (observed on an earlier master)" if want.source == "observed" else "")
            actions.append(TopicAction(ActionKind.CREATE, want.name, why, topic=want))
            continue
        if want.source == "observed":
            continue  # the master has it; an observed topic is only ever re-created, never changed
        refusal = _topic_refusal(want, have)
        if refusal is not None:
            refusals.append(Refusal(want.name, refusal))
            continue
        changes = _differs(want, have)
        if changes:
            actions.append(TopicAction(ActionKind.UPDATE, want.name, "; ".join(changes), topic=want))
    for name in sorted(set(deleting)):
        if name in wanted_names:
            refusals.append(
                Refusal(name, f"'{name}' is both declared and being deleted; rule: a declared topic is kept")
            )
        elif name in on_master:
            actions.append(TopicAction(ActionKind.DELETE, name, "deletionPolicy Delete"))
    return Plan(tuple(actions), tuple(refusals))


def plan_consumer_groups(
    wanted: Sequence[ConsumerGroupFacts],
    on_master: Mapping[str, ConsumerGroupFacts],
    deleting: Iterable[str] = (),
) -> Plan:
    """What one master must be told so that it has every declared consumer group, and none of `deleting`."""
    actions: list[TopicAction] = []
    refusals: list[Refusal] = []
    names = set()
    for want in wanted:
        names.add(want.name)
        have = on_master.get(want.name)
        if have is None:
            actions.append(TopicAction(ActionKind.CREATE, want.name, "missing on the master", group=want))
        elif have != want:
            changed = [
                f"{f} {getattr(have, f)} -> {getattr(want, f)}"
                for f in ConsumerGroupFacts.__dataclass_fields__
                if getattr(have, f) != getattr(want, f)
            ]
            actions.append(TopicAction(ActionKind.UPDATE, want.name, "; ".join(changed), group=want))
    for name in sorted(set(deleting)):
        if name in names:
            refusals.append(
                Refusal(name, f"'{name}' is both declared and being deleted; rule: a declared group is kept")
            )
        elif name in on_master:
            actions.append(TopicAction(ActionKind.DELETE, name, "deletionPolicy Delete"))
    return Plan(tuple(actions), tuple(refusals))


def plan_carry_over(
    master_topics: Mapping[str, TopicConfigFacts],
    target_topics: Mapping[str, TopicConfigFacts],
    master_groups: Mapping[str, ConsumerGroupFacts],
    target_groups: Mapping[str, ConsumerGroupFacts],
) -> Plan:
    """Before a switchover's election: what the replica about to be master must be told so that it holds every
    topic and subscription group the master holds, however they were made (declared, created automatically by a
    producer, by mqadmin). A slave copies them from its master only every 10 s (RocketMQ's `SlaveSynchronize`), so
    a topic made just before is missing on the new master and unroutable until someone creates it again. Only
    creates and updates, never deletes; RocketMQ's own system topics exist on every broker and are left alone."""
    actions: list[TopicAction] = []
    for name, topic in sorted(master_topics.items()):
        if name in SYSTEM_TOPICS or name.startswith(SYSTEM_TOPIC_PREFIX):
            continue
        have = target_topics.get(name)
        if have is None:
            actions.append(TopicAction(ActionKind.CREATE, name, "on the master, not yet on the new master", topic))
        elif changes := _differs(topic, have):
            actions.append(TopicAction(ActionKind.UPDATE, name, "; ".join(changes), topic))
    for name, group in sorted(master_groups.items()):
        if name not in target_groups:
            actions.append(
                TopicAction(ActionKind.CREATE, name, "on the master, not yet on the new master", group=group)
            )
        elif target_groups[name] != group:
            actions.append(TopicAction(ActionKind.UPDATE, name, "differs from the master", group=group))
    return Plan(tuple(actions))


@dataclass
class WantedOnGroup:
    """What one BrokerGroup's master must hold."""

    topics: list[TopicConfigFacts] = field(default_factory=list)
    consumer_groups: list[ConsumerGroupFacts] = field(default_factory=list)
    deleting_topics: list[str] = field(default_factory=list)
    deleting_groups: list[str] = field(default_factory=list)
    auto_create_topics: bool = False
    own_names: list[str] = field(default_factory=list)  # brokerName and clusterName: the broker's own topics
    lag_topics: dict[str, list[str]] = field(default_factory=dict)  # consumer group -> topics to sum lag over


def wanted_on_groups(
    brokers: Sequence[BrokerGroup],
    topics: Sequence[Topic],
    consumer_groups: Sequence[ConsumerGroup],
) -> dict[str, WantedOnGroup]:
    """Per BrokerGroup name: the topics and consumer groups its master must hold (from the declared resources)."""
    clusters = {b.metadata.name: b.spec.cluster_name for b in brokers}
    out = {
        b.metadata.name: WantedOnGroup(
            auto_create_topics=b.spec.auto_create.topics, own_names=[b.metadata.name, b.spec.cluster_name]
        )
        for b in brokers
    }
    for topic in topics:
        for name in placement_groups(topic.spec.broker_groups, topic.spec.cluster_name, clusters):
            out[name].topics.append(topic_facts(topic))
    for group in consumer_groups:
        for name in placement_groups(group.spec.broker_groups, group.spec.cluster_name, clusters):
            out[name].consumer_groups.append(consumer_group_facts(group))
            if group.spec.topics:
                out[name].lag_topics[group.group_name] = list(group.spec.topics)
    return out


def placement_groups(broker_groups: Sequence[str], cluster_name: str | None, groups: Mapping[str, str]) -> list[str]:
    """The BrokerGroups a Topic/ConsumerGroup lives on: those named, plus those of `cluster_name`.
    `groups` maps each known BrokerGroup to its clusterName."""
    out = [g for g in broker_groups if g in groups]
    if cluster_name is not None:
        out.extend(g for g, c in sorted(groups.items()) if c == cluster_name and g not in out)
    return out
