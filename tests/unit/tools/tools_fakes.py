"""A plain in-memory stand-in for RemotingClient, for the produce/consume tool tests.

Brokers are addresses in routes; replicas of one broker name share one store (perfect replication).
Scripted outcomes (``send_outcomes``, ``pull_script``) are consumed before the default behaviour.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rocketmq_operator.remoting import (
    BrokerData,
    ClusterInfo,
    Message,
    PullResult,
    QueueData,
    RemotingConnectionError,
    RemotingError,
    RemotingException,
    ResponseCode,
    SendResult,
    TopicRoute,
    put_status,
)

RW = 6  # PERM_READ | PERM_WRITE


def make_route(
    topic: str,
    brokers: Mapping[str, Mapping[int, str]],
    *,
    queues: int = 4,
    perm: int = RW,
    cluster: str = "c1",
) -> TopicRoute:
    return TopicRoute(
        topic,
        tuple(QueueData(name, queues, queues, perm) for name in brokers),
        tuple(BrokerData(cluster, name, dict(addrs)) for name, addrs in brokers.items()),
    )


def make_message(topic: str, queue_id: int, offset: int, key: str | None, body: bytes, host: str) -> Message:
    properties = {"KEYS": key} if key is not None else {}
    return Message(
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        physical_offset=offset,
        sys_flag=0,
        born_timestamp=0,
        store_timestamp=0,
        born_host="127.0.0.1:1",
        store_host=host,
        body=body,
        properties=properties,
        msg_id=f"ID-{queue_id}-{offset}",
    )


@dataclass
class SendCall:
    addr: str
    broker_name: str | None
    queue_id: int
    key: str | None
    body: bytes


@dataclass
class PullCall:
    addr: str
    queue_id: int
    offset: int


Outcome = int | tuple[int, str] | RemotingException


@dataclass
class FakeClient:
    routes: dict[str, TopicRoute] = field(default_factory=dict)
    cluster: ClusterInfo | None = None
    send_outcomes: deque[Outcome] = field(default_factory=deque)
    """Next send answers: a response code, (code, remark), or an exception to raise. Empty: PUT_OK."""
    down: set[str] = field(default_factory=set)
    """Addresses that refuse connections."""
    route_errors: int = 0
    """The next N get_route calls fail with a connection error."""
    routes_not_ready: int = 0
    """Then the next N answer SYSTEM_ERROR "name server not ready" (every name server just started)."""
    suggestions: dict[str, int] = field(default_factory=dict)
    """suggest_which_broker_id answered by the broker at an address (default 0)."""
    pull_script: dict[tuple[str, int], deque[PullResult | RemotingException]] = field(default_factory=dict)
    min_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    """(broker name, queue id) -> min offset (messages below it are gone)."""
    on_send: Callable[[SendCall], None] | None = None
    stores: dict[tuple[str, int], list[Message]] = field(default_factory=lambda: defaultdict(list))
    sends: list[SendCall] = field(default_factory=list)
    pulls: list[PullCall] = field(default_factory=list)
    created: list[tuple[str, str, int, int]] = field(default_factory=list)
    committed: list[tuple[str, str, int, int]] = field(default_factory=list)
    route_lookups: int = 0
    dispatch_behind: dict[str, deque[int]] = field(default_factory=dict)
    """Address -> the dispatchBehindBytes its next runtime-info answers report (then 0)."""

    # -- helpers

    def _broker_of(self, addr: str) -> tuple[str, int]:
        for route in self.routes.values():
            for broker in route.broker_datas:
                for broker_id, a in broker.broker_addrs.items():
                    if a == addr:
                        return broker.broker_name, broker_id
        if self.cluster is not None:
            for broker in self.cluster.broker_addr_table.values():
                for broker_id, a in broker.broker_addrs.items():
                    if a == addr:
                        return broker.broker_name, broker_id
        raise RemotingConnectionError(f"unknown address {addr}", addr)

    def _check_up(self, addr: str) -> None:
        if addr in self.down:
            raise RemotingConnectionError(f"connect to {addr} refused", addr)

    def put(self, topic: str, broker_name: str, queue_id: int, key: str | None, body: bytes) -> Message:
        store = self.stores[(broker_name, queue_id)]
        message = make_message(topic, queue_id, len(store), key, body, f"{broker_name}-store")
        store.append(message)
        return message

    # -- RemotingClient surface used by the tools

    async def get_route(self, topic: str, *, timeout: float | None = None) -> TopicRoute:
        self.route_lookups += 1
        if self.route_errors > 0:
            self.route_errors -= 1
            raise RemotingConnectionError("namesrv down", "ns")
        if self.routes_not_ready > 0:
            self.routes_not_ready -= 1
            raise RemotingError(ResponseCode.SYSTEM_ERROR, "name server not ready")
        if topic not in self.routes:
            raise RemotingError(ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for {topic}")
        return self.routes[topic]

    async def get_cluster_info(self, *, timeout: float | None = None) -> ClusterInfo:
        if self.cluster is None:
            raise RemotingConnectionError("namesrv down", "ns")
        return self.cluster

    async def create_topic(
        self, addr: str, topic: str, read_queues: int, write_queues: int, *, timeout: float | None = None
    ) -> None:
        self._check_up(addr)
        self.created.append((addr, topic, read_queues, write_queues))
        assert self.cluster is not None
        name, _ = self._broker_of(addr)
        existing = self.routes.get(topic)
        queue_datas = [*(existing.queue_datas if existing else ()), QueueData(name, read_queues, write_queues, RW)]
        broker_datas = [*(existing.broker_datas if existing else ()), self.cluster.broker_addr_table[name]]
        self.routes[topic] = TopicRoute(topic, tuple(queue_datas), tuple(broker_datas))

    async def send(
        self,
        addr: str,
        topic: str,
        body: bytes,
        queue_id: int,
        *,
        keys: str | None = None,
        tags: str | None = None,
        producer_group: str = "g",
        broker_name: str | None = None,
        timeout: float | None = None,
    ) -> SendResult:
        call = SendCall(addr, broker_name, queue_id, keys, body)
        self.sends.append(call)
        if self.on_send is not None:
            self.on_send(call)
        self._check_up(addr)
        outcome: Outcome = self.send_outcomes.popleft() if self.send_outcomes else 0
        if isinstance(outcome, RemotingException):
            raise outcome
        code, remark = outcome if isinstance(outcome, tuple) else (outcome, None)
        status = put_status(code, remark)
        offset = -1
        if status.stored:
            name, _ = self._broker_of(addr)
            offset = self.put(topic, name, queue_id, keys, body).queue_offset
        return SendResult(status.name, status.stored, code, remark, f"U{len(self.sends)}", None, queue_id, offset)

    async def pull(
        self,
        addr: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_nums: int = 32,
        consumer_group: str = "g",
        *,
        subscription: str = "*",
        timeout: float | None = None,
    ) -> PullResult:
        self.pulls.append(PullCall(addr, queue_id, offset))
        self._check_up(addr)
        script = self.pull_script.get((addr, queue_id))
        if script:
            item = script.popleft()
            if isinstance(item, RemotingException):
                raise item
            return item
        name, _ = self._broker_of(addr)
        store = self.stores[(name, queue_id)]
        low = self.min_offsets.get((name, queue_id), 0)
        high = len(store)
        suggest = self.suggestions.get(addr, 0)

        def result(status: str, code: int, next_offset: int, messages: tuple[Message, ...] = ()) -> PullResult:
            return PullResult(status, code, None, next_offset, low, high, suggest, messages)

        if offset < low or offset > high:
            return result("OFFSET_ILLEGAL", ResponseCode.PULL_OFFSET_MOVED, low)
        if offset == high:
            return result("NO_NEW_MSG", ResponseCode.PULL_NOT_FOUND, offset)
        batch = tuple(store[offset : offset + max_nums])
        return result("FOUND", ResponseCode.SUCCESS, offset + len(batch), batch)

    async def get_min_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int:
        self._check_up(addr)
        name, _ = self._broker_of(addr)
        return self.min_offsets.get((name, queue_id), 0)

    async def get_max_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int:
        self._check_up(addr)
        name, _ = self._broker_of(addr)
        return len(self.stores[(name, queue_id)])

    async def update_consumer_offset(
        self, addr: str, consumer_group: str, topic: str, queue_id: int, offset: int, *, timeout: float | None = None
    ) -> None:
        self._check_up(addr)
        self.committed.append((addr, consumer_group, queue_id, offset))

    async def get_runtime_info(self, addr: str, *, timeout: float | None = None) -> dict[str, str]:
        self._check_up(addr)
        behind = self.dispatch_behind.get(addr)
        return {"dispatchBehindBytes": str(behind.popleft() if behind else 0)}
