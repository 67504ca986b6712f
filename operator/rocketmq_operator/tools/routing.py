"""Topic routes for the client tools: writable queues, round-robin selection, refresh, topic creation.

Contract:

* :func:`writable_queues` lists the queues a producer may send to, as the Java client's
  ``topicRouteData2TopicPublishInfo`` does: for every writable queue-data entry (sorted by broker name)
  whose broker has a master (``brokerAddrs`` id 0), queue ids ``0 .. writeQueueNums-1`` on that master.
* :class:`QueueSelector` is the producer's round-robin: one shared counter over that list; on a retry it
  skips queues of the broker that just failed when another broker has queues (like
  ``selectOneMessageQueue(tpInfo, lastBrokerName)``), otherwise it takes the next queue.
* :class:`TopicRouter` caches one topic's route. :meth:`TopicRouter.refresh` asks namesrv again; callers
  pass the route generation they saw, so concurrent failures cause one lookup, not one each. A failed lookup
  (namesrv down or not serving routes yet, TOPIC_NOT_EXIST) keeps the previous route and is counted in
  ``lookup_failures``. Routes older than ``refresh_interval`` are refreshed on the next pick (the Java client
  polls every 30 s).
* :func:`ensure_topic` returns the route, creating the topic when namesrv does not know it and ``create``
  is true: on every master of the cluster (``cluster`` or the only cluster), ``read_queues``/``write_queues``
  each, then waits until namesrv routes to every one of them. Problems raise :class:`ToolError`.
* The client is anything with the :class:`RouteClient` methods (a :class:`RemotingClient`, or a test double).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rocketmq_operator.remoting import (
    BrokerData,
    ClusterInfo,
    RemotingError,
    RemotingException,
    ResponseCode,
    TopicRoute,
    is_name_server_not_ready,
)

DEFAULT_QUEUES = 4
DEFAULT_ROUTE_REFRESH_S = 30.0
DEFAULT_ROUTE_WAIT_S = 30.0


class ToolError(Exception):
    """A setup problem the tools report as one line (no route, no cluster, bad arguments)."""


class RouteClient(Protocol):
    async def get_route(self, topic: str, *, timeout: float | None = None) -> TopicRoute: ...

    async def get_cluster_info(self, *, timeout: float | None = None) -> ClusterInfo: ...

    async def create_topic(
        self, addr: str, topic: str, read_queues: int, write_queues: int, *, timeout: float | None = None
    ) -> None: ...


def is_topic_not_exist(exc: BaseException) -> bool:
    return isinstance(exc, RemotingError) and exc.code == ResponseCode.TOPIC_NOT_EXIST


@dataclass(frozen=True, slots=True)
class WriteQueue:
    broker_name: str
    queue_id: int
    addr: str
    """The master's address."""


def writable_queues(route: TopicRoute | None) -> tuple[WriteQueue, ...]:
    if route is None:
        return ()
    out: list[WriteQueue] = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if not qd.writable:
            continue
        broker = route.broker(qd.broker_name)
        master = broker.master_addr if broker is not None else None
        if not master:
            continue
        out.extend(WriteQueue(qd.broker_name, i, master) for i in range(qd.write_queue_nums))
    return tuple(out)


class QueueSelector:
    """Round-robin over writable queues, avoiding the last failed broker when possible."""

    def __init__(self, start: int = 0) -> None:
        self._counter = itertools.count(start)

    def select(self, queues: Sequence[WriteQueue], avoid_broker: str | None = None) -> WriteQueue | None:
        if not queues:
            return None
        index = next(self._counter)
        n = len(queues)
        if avoid_broker is not None:
            for step in range(n):
                candidate = queues[(index + step) % n]
                if candidate.broker_name != avoid_broker:
                    return candidate
        return queues[index % n]


def broker_address(broker: BrokerData | None, wanted_id: int) -> tuple[str, int] | None:
    """(address, id) to pull from for a suggested broker id, as the Java client looks it up
    (``MQClientInstance.findBrokerAddressInSubscribe``): the exact id; for a slave id, id+1 (controller-mode ids
    are shifted: the master shows as 0 and keeps its own id out of the route); else the master; else the lowest."""
    if broker is None or not broker.broker_addrs:
        return None
    addrs = broker.broker_addrs
    if wanted_id in addrs:
        return addrs[wanted_id], wanted_id
    if wanted_id != 0 and wanted_id + 1 in addrs:
        return addrs[wanted_id + 1], wanted_id + 1
    if 0 in addrs:
        return addrs[0], 0
    first = min(addrs)
    return addrs[first], first


class TopicRouter:
    """One topic's cached route, refreshed on demand and periodically."""

    def __init__(
        self,
        client: RouteClient,
        topic: str,
        *,
        timeout: float | None = None,
        refresh_interval: float = DEFAULT_ROUTE_REFRESH_S,
        route: TopicRoute | None = None,
    ) -> None:
        self.client = client
        self.topic = topic
        self.timeout = timeout
        self.refresh_interval = refresh_interval
        self.route: TopicRoute | None = None
        self.queues: tuple[WriteQueue, ...] = ()
        self.generation = 0
        self.lookups = 0
        self.lookup_failures = 0
        self.last_error: str | None = None
        self.selector = QueueSelector()
        self._refreshed_at = float("-inf")
        self._lock = asyncio.Lock()
        if route is not None:
            self._install(route)

    def _install(self, route: TopicRoute) -> None:
        self.route = route
        self.queues = writable_queues(route)
        self.generation += 1
        self._refreshed_at = time.monotonic()

    async def refresh(self, seen_generation: int | None = None) -> bool:
        """Look the route up again unless someone did since ``seen_generation``; ``True`` if a route is
        installed afterwards."""
        async with self._lock:
            if seen_generation is not None and seen_generation != self.generation:
                return self.route is not None
            self.lookups += 1
            try:
                route = await self.client.get_route(self.topic, timeout=self.timeout)
            except RemotingException as exc:
                self.lookup_failures += 1
                self.last_error = str(exc)
                # Do not hammer namesrv: a failed lookup also counts as "fresh" for the periodic refresh.
                self._refreshed_at = time.monotonic()
                return self.route is not None
            self._install(route)
            return True

    async def pick(self, avoid_broker: str | None = None) -> tuple[WriteQueue | None, int]:
        """A queue to send to (``None`` if no writable queue is known) and the route generation it came from."""
        if time.monotonic() - self._refreshed_at >= self.refresh_interval:
            await self.refresh(self.generation)
        return self.selector.select(self.queues, avoid_broker), self.generation

    def broker(self, broker_name: str) -> BrokerData | None:
        return self.route.broker(broker_name) if self.route is not None else None


def _routes_to_all(route: TopicRoute, broker_names: Sequence[str]) -> bool:
    names = {q.broker_name for q in writable_queues(route)}
    return all(name in names for name in broker_names)


async def ensure_topic(
    client: RouteClient,
    topic: str,
    *,
    create: bool = True,
    cluster: str | None = None,
    read_queues: int = DEFAULT_QUEUES,
    write_queues: int = DEFAULT_QUEUES,
    timeout: float | None = None,
    wait_s: float = DEFAULT_ROUTE_WAIT_S,
    poll_s: float = 0.2,
    retry_s: float = 0.0,
) -> TopicRoute:
    """The topic's route, creating the topic on every master of the cluster if namesrv does not know it.

    With ``create`` off, a missing route is waited for up to ``wait_s``, as a client's producer keeps looking
    routes up: a name server that restarted knows a topic again only once its brokers re-register (every 30 s).
    A lookup that fails otherwise (a timeout, a refused connection) is tried again for ``retry_s``: a name server
    that answers late on a loaded machine is not a missing one (a Java producer keeps looking up as well)."""
    started = time.monotonic()
    deadline = started + wait_s
    while True:
        try:
            return await client.get_route(topic, timeout=timeout)
        except RemotingException as exc:
            if is_name_server_not_ready(exc):
                # Every name server has just started (needWaitForService): they serve routes once their brokers
                # had the time to register, as a client's producer keeps looking up meanwhile.
                if time.monotonic() >= deadline:
                    raise ToolError(
                        f"route lookup for topic {topic!r}: every name server answered 'name server not ready' for "
                        f"{wait_s:g}s (a name server serves routes only waitSecondsForService after its start); "
                        "fix: wait until the cluster is up (rocketmq-operator local status, kubectl get brokergroups)"
                    ) from exc
                await asyncio.sleep(poll_s)
                continue
            if not is_topic_not_exist(exc):
                if time.monotonic() - started < retry_s:
                    await asyncio.sleep(poll_s)
                    continue
                tried = f" (tried for {retry_s:g}s)" if retry_s > 0 else ""
                raise ToolError(f"route lookup for topic {topic!r} failed{tried}: {exc}") from exc
            if create:
                break
            if time.monotonic() >= deadline:
                raise ToolError(
                    f"topic {topic!r} does not exist: namesrv had no route for it for {wait_s:g}s and topic "
                    "creation is off; fix: drop --no-create-topic (the tool then creates it), or declare a Topic "
                    "for it (kind: Topic)"
                ) from exc
        await asyncio.sleep(poll_s)
    try:
        info = await client.get_cluster_info(timeout=timeout)
    except RemotingException as exc:
        raise ToolError(f"cannot create topic {topic!r}: cluster info lookup failed: {exc}") from exc
    if cluster is None:
        clusters = sorted(info.cluster_addr_table)
        if len(clusters) != 1:
            raise ToolError(
                f"cannot create topic {topic!r}: {len(clusters)} clusters known to namesrv "
                f"({', '.join(clusters) or 'none'}); choose one with --cluster"
            )
        cluster = clusters[0]
    names = info.cluster_addr_table.get(cluster)
    if names is None:
        known = ", ".join(sorted(info.cluster_addr_table)) or "none"
        raise ToolError(f"cannot create topic {topic!r}: cluster {cluster!r} unknown to namesrv (known: {known})")
    masters: list[tuple[str, str]] = []
    for name in names:
        broker = info.broker_addr_table.get(name)
        if broker is not None and broker.master_addr:
            masters.append((name, broker.master_addr))
    if not masters:
        raise ToolError(f"cannot create topic {topic!r}: cluster {cluster!r} has no master broker")
    for name, addr in masters:
        try:
            await client.create_topic(addr, topic, read_queues, write_queues, timeout=timeout)
        except RemotingException as exc:
            raise ToolError(f"creating topic {topic!r} on {name} ({addr}) failed: {exc}") from exc
    deadline = time.monotonic() + wait_s
    last: str = "no answer"
    while True:
        try:
            route = await client.get_route(topic, timeout=timeout)
            if _routes_to_all(route, [name for name, _ in masters]):
                return route
            last = "route does not include every master yet"
        except RemotingException as exc:
            last = str(exc)
        if time.monotonic() >= deadline:
            raise ToolError(f"topic {topic!r} created but namesrv has no complete route after {wait_s:g}s: {last}")
        await asyncio.sleep(poll_s)


class PinnedRouter(TopicRouter):
    """A route that never changes: the queues of the master at ``addr`` as ``route`` names them, never looked up
    again. It is the client a failover test needs beside the ordinary one: an application whose cached route still
    names the old master (RocketMQ's Java client polls routes every 30 s by default, and one that lost its name
    servers never does), which keeps sending to that address through a fault, so any acknowledgement a deposed
    master gives reaches a client."""

    def __init__(self, client: RouteClient, topic: str, route: TopicRoute, addr: str, *, timeout: float | None = None):
        super().__init__(client, topic, timeout=timeout, refresh_interval=float("inf"), route=route)
        pinned = tuple(q for q in self.queues if q.addr == addr)
        if not pinned:
            masters = sorted({q.addr for q in self.queues}) or ["none"]
            raise ValueError(
                f"--pin-to {addr} is not the master of a writable queue of topic {topic!r} (its masters: "
                f"{', '.join(masters)}); fix: pin to one of those addresses"
            )
        self.queues = pinned

    async def refresh(self, seen_generation: int | None = None) -> bool:
        del seen_generation
        return True  # pinned: the route read at the start is kept whatever happens
