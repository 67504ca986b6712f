"""Topics and consumer groups on Kubernetes: the observer pass's call into the shared `topics` executor.

Contract: `reassert_topics(kube, client, metrics, bg, namespace, state, memory)` runs on every observer pass of a
BrokerGroup, before its status is written: it lists the namespace's Topic and ConsumerGroup resources, asserts
those placed on this group on its master (`topics.assert_group`; a Topic being deleted with deletionPolicy
Delete is deleted from the master instead), writes each resource's status (its placement on this group: master,
exists, queue counts, lag) and the Prometheus gauges, and returns whether the master holds everything declared
(the caller reports the group not writable until it does). Deletion: the kopf delete handler (handlers.py)
keeps the finalizer until every placement reports the topic gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rocketmq_operator.api.models import BrokerGroup, ConsumerGroup, DeletionPolicy, Topic
from rocketmq_operator.control.clock import now_iso
from rocketmq_operator.control.topics import AssertReport, assert_group
from rocketmq_operator.core.conditions import condition
from rocketmq_operator.core.observation import GroupState
from rocketmq_operator.core.topics import wanted_on_groups
from rocketmq_operator.platforms.kubernetes.group_memory import GroupMemory
from rocketmq_operator.platforms.kubernetes.kube import KubeClient
from rocketmq_operator.platforms.kubernetes.metrics import OperatorMetrics
from rocketmq_operator.platforms.kubernetes.resources import validated
from rocketmq_operator.platforms.kubernetes.status_writer import StatusChange, StatusChangeFrom, write_status
from rocketmq_operator.remoting import RemotingClient

JSON = dict[str, Any]


def _valid(items: list[JSON], kind: str) -> list[tuple[JSON, Topic | ConsumerGroup]]:
    out: list[tuple[JSON, Topic | ConsumerGroup]] = []
    for item in items:
        report = validated(item)
        if isinstance(report.resource, Topic | ConsumerGroup) and report.resource.kind == kind:
            out.append((item, report.resource))
    return out


def _deleting(item: JSON, resource: Topic | ConsumerGroup) -> bool:
    return bool(item["metadata"].get("deletionTimestamp")) and (
        resource.spec.deletion_policy == DeletionPolicy.DELETE.value
    )


def _placements(status: JSON, group: str, mine: JSON) -> list[JSON]:
    mine = {k: v for k, v in mine.items() if v is not None}  # as the API server stores it (merge patch drops nulls)
    others = [p for p in status.get("placements") or [] if p.get("brokerGroup") != group]
    return sorted([*others, mine], key=lambda p: str(p.get("brokerGroup")))


async def declared_lag_topics(kube: KubeClient, bg: BrokerGroup, namespace: str) -> dict[str, list[str]]:
    """Consumer group -> the topics it reads, of the ConsumerGroups placed on ``bg`` (what a drain's lag counts
    even where the group never committed an offset: `core.group_drain.lag_pairs`)."""
    groups = _valid(await kube.list("ConsumerGroup", namespace), "ConsumerGroup")
    live = [r for _, r in groups if isinstance(r, ConsumerGroup)]
    return dict(wanted_on_groups([bg], [], live)[bg.metadata.name].lag_topics)


async def reassert_topics(
    kube: KubeClient,
    client: RemotingClient,
    metrics: OperatorMetrics,
    bg: BrokerGroup,
    namespace: str,
    state: GroupState,
    memory: GroupMemory,
) -> bool:
    group = bg.metadata.name
    topics = _valid(await kube.list("Topic", namespace), "Topic")
    groups = _valid(await kube.list("ConsumerGroup", namespace), "ConsumerGroup")
    live_topics = [r for i, r in topics if isinstance(r, Topic) and not _deleting(i, r)]
    live_groups = [r for i, r in groups if isinstance(r, ConsumerGroup) and not _deleting(i, r)]
    wanted = wanted_on_groups([bg], live_topics, live_groups)[group]
    placed = {r.topic_name for _, r in topics if isinstance(r, Topic) and group in _groups_of(r, bg)} | {
        r.group_name for _, r in groups if isinstance(r, ConsumerGroup) and group in _groups_of(r, bg)
    }
    wanted.deleting_topics = [
        r.topic_name for i, r in topics if isinstance(r, Topic) and _deleting(i, r) and r.topic_name in placed
    ]
    wanted.deleting_groups = [
        r.group_name for i, r in groups if isinstance(r, ConsumerGroup) and _deleting(i, r) and r.group_name in placed
    ]
    report = await assert_group(client, state, wanted, memory.topics, measure=True)
    await _write_statuses(kube, metrics, namespace, group, topics, groups, report, bg)
    return report.asserted


def _groups_of(resource: Topic | ConsumerGroup, bg: BrokerGroup) -> list[str]:
    names = list(resource.spec.broker_groups)
    if resource.spec.cluster_name == bg.spec.cluster_name:
        names.append(bg.metadata.name)
    return names


async def _write_statuses(
    kube: KubeClient,
    metrics: OperatorMetrics,
    ns: str,
    group: str,
    topics: list[tuple[JSON, Topic | ConsumerGroup]],
    groups: list[tuple[JSON, Topic | ConsumerGroup]],
    report: AssertReport,
    bg: BrokerGroup,
) -> None:
    now = now_iso()
    for item, resource in topics:
        if not isinstance(resource, Topic) or group not in _groups_of(resource, bg):
            continue
        info = report.topics.get(resource.topic_name)
        mine: JSON = {"brokerGroup": group, "master": report.master, "exists": info is not None}
        if info is not None:
            mine.update(
                readQueueNums=info.read_queue_nums,
                writeQueueNums=info.write_queue_nums,
                perm=info.perm,
                messageType=info.message_type,
            )
            if resource.topic_name in report.topic_max_offsets:
                mine["maxOffsets"] = report.topic_max_offsets[resource.topic_name]
        metrics.topic_present.labels(namespace=ns, topic=resource.topic_name, group=group).set(
            1 if info is not None else 0
        )
        refusals = [r.message for r in report.refusals if r.name == resource.topic_name]
        await write_status(kube, item, _topic_status(resource, group, mine, refusals, now))
    for item, resource in groups:
        if not isinstance(resource, ConsumerGroup) or group not in _groups_of(resource, bg):
            continue
        exists = resource.group_name in report.consumer_groups
        lag_by_topic = report.lag.get(resource.group_name, {})
        lag = sum(lag_by_topic.values()) if lag_by_topic else None
        for topic, value in lag_by_topic.items():
            metrics.consumer_lag.labels(namespace=ns, consumer_group=resource.group_name, topic=topic, group=group).set(
                value
            )
        mine = {"brokerGroup": group, "master": report.master, "exists": exists, "lag": lag}
        await write_status(kube, item, _consumer_group_status(resource, group, mine, now))


def _topic_status(resource: Topic, group: str, mine: JSON, refusals: list[str], now: str) -> StatusChangeFrom:
    """A Topic's status with this BrokerGroup's placement merged into the placements of the status it applies to
    (every BrokerGroup the Topic is placed on writes its own)."""

    def change(status: Mapping[str, Any]) -> StatusChange:
        placements = _placements(dict(status), group, mine)
        on = sorted(str(p["brokerGroup"]) for p in placements if p.get("exists"))
        ready = all(p.get("exists") for p in placements)
        fields: JSON = {
            "topicName": resource.topic_name,
            "placements": placements,
            "brokerGroups": on,
            "readQueueNums": resource.spec.read_queue_nums,
            "writeQueueNums": resource.spec.write_queue_nums,
            "ready": ready,
        }
        ready_condition = condition(
            "Ready",
            "True" if ready and not refusals else "False",
            "Asserted" if ready and not refusals else ("Refused" if refusals else "Missing"),
            "; ".join(refusals) or ("on " + ", ".join(on) if on else "not on any master yet"),
            now,
            previous=_ready(dict(status)),
        )
        return StatusChange(fields=fields, conditions={"Ready": ready_condition})

    return change


def _consumer_group_status(resource: ConsumerGroup, group: str, mine: JSON, now: str) -> StatusChangeFrom:
    """A ConsumerGroup's status with this BrokerGroup's placement merged in (as `_topic_status`)."""

    def change(status: Mapping[str, Any]) -> StatusChange:
        placements = _placements(dict(status), group, mine)
        ready = all(p.get("exists") for p in placements)
        lags = [p["lag"] for p in placements if p.get("lag") is not None]
        fields: JSON = {
            "groupName": resource.group_name,
            "placements": placements,
            "brokerGroups": sorted(str(p["brokerGroup"]) for p in placements if p.get("exists")),
            "lag": sum(lags) if lags else None,
            "ready": ready,
        }
        ready_condition = condition(
            "Ready",
            "True" if ready else "False",
            "Asserted" if ready else "Missing",
            "on every master" if ready else "not on every master yet",
            now,
            previous=_ready(dict(status)),
        )
        return StatusChange(fields=fields, conditions={"Ready": ready_condition})

    return change


def _ready(status: JSON) -> JSON | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
