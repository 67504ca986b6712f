"""Topic and subscription-group admin requests to one broker (standard library only).

Contract:

* :class:`TopicAdmin` wraps a :class:`~.client.RemotingClient`; every call takes the broker address.
* UPDATE_AND_CREATE_TOPIC (17) sends ``CreateTopicRequestHeader`` fields; topic attributes travel as one
  string ``+key=value,+key=value`` (RocketMQ's ``AttributeParser``), ``-key`` removes one on an update.
* GET_ALL_TOPIC_CONFIG (21) answers a ``TopicConfigSerializeWrapper``: ``{"topicConfigTable": {name:
  TopicConfig}, "dataVersion": ...}``; GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) a ``SubscriptionGroupWrapper``:
  ``{"subscriptionGroupTable": {name: SubscriptionGroupConfig}, ...}``. Both are parsed into frozen dataclasses;
  a malformed body raises :class:`ResponseFormatError`.
* UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) sends a ``SubscriptionGroupConfig`` JSON body (fields left out keep
  RocketMQ's defaults); DELETE_TOPIC_IN_BROKER (215) takes ``topic``, DELETE_SUBSCRIPTIONGROUP (207)
  ``groupName`` and ``cleanOffset``.
* :meth:`TopicAdmin.subscription_group_configs` answers the same table as JSON objects, every field the broker
  sent kept (what a metadata backup needs: RocketMQ has more fields than the operator manages), and
  :meth:`TopicAdmin.put_subscription_group_config` sends such an object back as UPDATE_AND_CREATE_SUBSCRIPTIONGROUP's
  body.
* :meth:`TopicAdmin.consumer_lag` sums ``max offset - committed offset`` over a topic's queues (a queue
  without a committed offset counts from its min offset, as a new consumer starting at the earliest would).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .client import RemotingClient
from .codes import DEFAULT_TOPIC, PERM_READ, PERM_WRITE, RequestCode
from .parsing import _body_json, _bool, _fields, _int, _obj

MESSAGE_TYPE_ATTRIBUTE = "message.type"


@dataclass(frozen=True, slots=True)
class TopicConfigInfo:
    """One entry of a broker's topic table (RocketMQ ``TopicConfig``)."""

    topic_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int = PERM_READ | PERM_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: Mapping[str, str] = field(default_factory=dict)

    @property
    def message_type(self) -> str | None:
        return self.attributes.get(MESSAGE_TYPE_ATTRIBUTE)


@dataclass(frozen=True, slots=True)
class SubscriptionGroupInfo:
    """The fields of RocketMQ's ``SubscriptionGroupConfig`` the operator manages."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16

    def to_json(self) -> dict[str, Any]:
        return {
            "groupName": self.group_name,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "consumeMessageOrderly": self.consume_message_orderly,
            "retryQueueNums": self.retry_queue_nums,
            "retryMaxTimes": self.retry_max_times,
        }


def format_attributes(attributes: Mapping[str, str], removed: tuple[str, ...] = ()) -> str:
    """``{"message.type": "FIFO"}`` -> ``"+message.type=FIFO"`` (sorted; removals as ``-key``)."""
    parts = [f"+{k}={v}" for k, v in sorted(attributes.items())]
    parts.extend(f"-{k}" for k in sorted(removed))
    return ",".join(parts)


def parse_topic_config(name: str, raw: Any) -> TopicConfigInfo:
    data = _obj(raw, f"topicConfigTable[{name}]")
    attributes = _obj(data.get("attributes"), f"topicConfigTable[{name}].attributes")
    return TopicConfigInfo(
        topic_name=str(data.get("topicName") or name),
        read_queue_nums=_int(data.get("readQueueNums"), "readQueueNums", 16),
        write_queue_nums=_int(data.get("writeQueueNums"), "writeQueueNums", 16),
        perm=_int(data.get("perm"), "perm", PERM_READ | PERM_WRITE),
        topic_filter_type=str(data.get("topicFilterType") or "SINGLE_TAG"),
        topic_sys_flag=_int(data.get("topicSysFlag"), "topicSysFlag", 0),
        order=_bool(data.get("order", False)),
        attributes={str(k): str(v) for k, v in attributes.items()},
    )


def parse_topic_table(body: Any) -> dict[str, TopicConfigInfo]:
    table = _obj(_obj(body, "TopicConfigSerializeWrapper").get("topicConfigTable"), "topicConfigTable")
    return {str(name): parse_topic_config(str(name), raw) for name, raw in table.items()}


def parse_subscription_group(name: str, raw: Any) -> SubscriptionGroupInfo:
    data = _obj(raw, f"subscriptionGroupTable[{name}]")
    return SubscriptionGroupInfo(
        group_name=str(data.get("groupName") or name),
        consume_enable=_bool(data.get("consumeEnable", True)),
        consume_from_min_enable=_bool(data.get("consumeFromMinEnable", True)),
        consume_broadcast_enable=_bool(data.get("consumeBroadcastEnable", True)),
        consume_message_orderly=_bool(data.get("consumeMessageOrderly", False)),
        retry_queue_nums=_int(data.get("retryQueueNums"), "retryQueueNums", 1),
        retry_max_times=_int(data.get("retryMaxTimes"), "retryMaxTimes", 16),
    )


def parse_subscription_group_table(body: Any) -> dict[str, SubscriptionGroupInfo]:
    wrapper = _obj(body, "SubscriptionGroupWrapper")
    table = _obj(wrapper.get("subscriptionGroupTable"), "subscriptionGroupTable")
    return {str(name): parse_subscription_group(str(name), raw) for name, raw in table.items()}


def create_topic_fields(config: TopicConfigInfo, removed_attributes: tuple[str, ...] = ()) -> dict[str, str]:
    """The UPDATE_AND_CREATE_TOPIC header for ``config``."""
    attributes = format_attributes(config.attributes, removed_attributes)
    return _fields(
        topic=config.topic_name,
        defaultTopic=DEFAULT_TOPIC,
        readQueueNums=config.read_queue_nums,
        writeQueueNums=config.write_queue_nums,
        perm=config.perm,
        topicFilterType=config.topic_filter_type,
        topicSysFlag=config.topic_sys_flag,
        order=config.order,
        attributes=attributes or None,
    )


class TopicAdmin:
    """Topic and subscription-group admin calls on brokers, through a shared :class:`RemotingClient`."""

    def __init__(self, client: RemotingClient) -> None:
        self.client = client

    async def topics(self, addr: str, *, timeout: float | None = None) -> dict[str, TopicConfigInfo]:
        """GET_ALL_TOPIC_CONFIG (21): the broker's whole topic table (system topics included)."""
        response = await self.client._call(addr, RequestCode.GET_ALL_TOPIC_CONFIG, timeout=timeout)
        return parse_topic_table(_body_json(response, "GET_ALL_TOPIC_CONFIG"))

    async def create_topic(
        self,
        addr: str,
        config: TopicConfigInfo,
        *,
        removed_attributes: tuple[str, ...] = (),
        timeout: float | None = None,
    ) -> None:
        """UPDATE_AND_CREATE_TOPIC (17): create or update one topic on one broker (it registers it with namesrv)."""
        fields = create_topic_fields(config, removed_attributes)
        await self.client._call(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, fields, timeout=timeout)

    async def delete_topic(self, addr: str, topic: str, *, timeout: float | None = None) -> None:
        """DELETE_TOPIC_IN_BROKER (215): the topic's config and its consume queues on this broker."""
        await self.client._call(addr, RequestCode.DELETE_TOPIC_IN_BROKER, _fields(topic=topic), timeout=timeout)

    async def subscription_groups(self, addr: str, *, timeout: float | None = None) -> dict[str, SubscriptionGroupInfo]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201)."""
        response = await self.client._call(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, timeout=timeout)
        return parse_subscription_group_table(_body_json(response, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG"))

    async def create_subscription_group(
        self, addr: str, config: SubscriptionGroupInfo, *, timeout: float | None = None
    ) -> None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), the config as the JSON body."""
        body = json.dumps(config.to_json(), separators=(",", ":")).encode("utf-8")
        await self.client._call(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body, timeout=timeout)

    async def subscription_group_configs(self, addr: str, *, timeout: float | None = None) -> dict[str, dict[str, Any]]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201): name -> the broker's ``SubscriptionGroupConfig`` JSON, as sent."""
        response = await self.client._call(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, timeout=timeout)
        wrapper = _obj(_body_json(response, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG"), "SubscriptionGroupWrapper")
        table = _obj(wrapper.get("subscriptionGroupTable"), "subscriptionGroupTable")
        return {str(name): _obj(raw, f"subscriptionGroupTable[{name}]") for name, raw in table.items()}

    async def put_subscription_group_config(
        self, addr: str, config: Mapping[str, Any], *, timeout: float | None = None
    ) -> None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) with ``config`` (a ``SubscriptionGroupConfig`` JSON object,
        ``groupName`` included) as the body: fields left out keep RocketMQ's defaults."""
        body = json.dumps(dict(config), separators=(",", ":")).encode("utf-8")
        await self.client._call(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body, timeout=timeout)

    async def delete_subscription_group(
        self, addr: str, group: str, *, clean_offset: bool = False, timeout: float | None = None
    ) -> None:
        """DELETE_SUBSCRIPTIONGROUP (207)."""
        await self.client._call(
            addr,
            RequestCode.DELETE_SUBSCRIPTIONGROUP,
            _fields(groupName=group, cleanOffset=clean_offset),
            timeout=timeout,
        )

    async def consumer_lag(
        self, addr: str, group: str, topic: str, queues: int, *, timeout: float | None = None
    ) -> int:
        """Sum over queues 0..queues-1 of max offset - committed offset (min offset when none is committed)."""
        lag = 0
        for queue_id in range(queues):
            high = await self.client.get_max_offset(addr, topic, queue_id, timeout=timeout)
            committed = await self.client.query_consumer_offset(addr, group, topic, queue_id, timeout=timeout)
            if committed is None:
                committed = await self.client.get_min_offset(addr, topic, queue_id, timeout=timeout)
            lag += max(0, high - committed)
        return lag


__all__ = [
    "MESSAGE_TYPE_ATTRIBUTE",
    "SubscriptionGroupInfo",
    "TopicAdmin",
    "TopicConfigInfo",
    "create_topic_fields",
    "format_attributes",
    "parse_subscription_group_table",
    "parse_topic_table",
]
