"""Driver-side lookups of the ``rocketmq`` Spark source: topics, readable queues and their offsets.

Contract:

* Queues (:func:`discover_queues`): the selected topics (``topic``/``topics``, or every namesrv topic whose
  name matches ``topicPattern`` in full), each topic's readable queue-data entries, queue ids
  ``0 .. readQueueNums-1`` per broker group, mapped to the broker group's **master** address (route id 0).
  A listed topic that does not exist is an error; a pattern match that vanished is skipped.
* Bounds come from the master only (GET_MIN_OFFSET / GET_MAX_OFFSET / SEARCH_OFFSET_BY_TIMESTAMP). With
  ``allAckInSyncStateSet=true`` the master dispatches to its consume queues only up to the confirm offset
  (the minimum acked by every SyncStateSet member), so its max offset covers exactly the messages the whole
  group has committed: the source never plans a read of uncommitted data, whichever replica then serves it.
* Lookups that fail with a connection problem, a timeout, or a route without a master (a failover in
  progress) are retried ``fetchOffsetNumRetries`` times, ``fetchOffsetRetryIntervalMs`` apart, with a fresh
  route each time; then :class:`RocketMQSourceError` says which group/queue and why.
* :class:`Driver` runs these coroutines from synchronous Spark callbacks on one private event loop and one
  :class:`RemotingClient` kept for the life of the reader (a stream reader lives as long as its query); it
  pickles without them and recreates them lazily.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol, TypeVar

from rocketmq_operator.remoting import (
    RemotingClient,
    RemotingConnectionError,
    RemotingError,
    RemotingException,
    RemotingTimeout,
    ResponseCode,
    TopicRoute,
)
from rocketmq_operator.tools.consume import ensure_consumer_group

from .errors import RocketMQSourceError
from .executor import credentials_of, tls_of
from .offsets import EARLIEST, LATEST, Offsets, QueueRef
from .options import Position, SourceOptions

log = logging.getLogger("rocketmq_operator.spark")

T = TypeVar("T")
Bound = Literal["min", "max"]
MAX_CONCURRENT_LOOKUPS = 32


class MetadataClient(Protocol):
    async def get_route(
        self, topic: str, *, namesrv: str | None = None, timeout: float | None = None
    ) -> TopicRoute: ...

    async def get_all_topics(self, *, namesrv: str | None = None, timeout: float | None = None) -> tuple[str, ...]: ...

    async def get_min_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int: ...

    async def get_max_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int: ...

    async def search_offset(
        self, addr: str, topic: str, queue_id: int, timestamp_ms: int, *, timeout: float | None = None
    ) -> int: ...


class _Retryable(RocketMQSourceError):
    """A transient condition worth another lookup (no master yet)."""


def _topic_missing(exc: BaseException) -> bool:
    return isinstance(exc, RemotingError) and exc.code == ResponseCode.TOPIC_NOT_EXIST


async def discover_queues(client: MetadataClient, opts: SourceOptions, timeout: float) -> dict[QueueRef, str]:
    """Readable queue -> master address, for every selected topic."""
    if opts.topic_pattern is not None:
        try:
            names = await client.get_all_topics(timeout=timeout)
        except RemotingError as exc:
            raise RocketMQSourceError(f"topicPattern: namesrv refused to list topics: {exc}") from exc
        topics = [t for t in names if opts.topic_matches(t)]
    else:
        topics = list(opts.topics)
    out: dict[QueueRef, str] = {}
    for topic in topics:
        try:
            route = await client.get_route(topic, timeout=timeout)
        except RemotingError as exc:
            if not _topic_missing(exc):
                raise
            if opts.topic_pattern is not None:
                continue
            raise RocketMQSourceError(f"topic {topic!r} does not exist (namesrv has no route for it)") from exc
        if isinstance(client, RemotingClient):  # brokers refuse pulls for an unknown group (autoCreate off)
            await ensure_consumer_group(client, route, opts.consumer_group, timeout=timeout)
        for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
            if not qd.readable or qd.read_queue_nums <= 0:
                continue
            broker = route.broker(qd.broker_name)
            master = broker.master_addr if broker is not None else None
            if not master:
                raise _Retryable(
                    f"topic {topic!r}: broker group {qd.broker_name} has no master in the route "
                    "(committed offsets are read from the master; is a failover in progress?)"
                )
            for queue_id in range(qd.read_queue_nums):
                out[QueueRef(topic, qd.broker_name, queue_id)] = master
    return out


async def _gather(items: list[Awaitable[T]]) -> list[T]:
    semaphore = asyncio.Semaphore(MAX_CONCURRENT_LOOKUPS)

    async def one(item: Awaitable[T]) -> T:
        async with semaphore:
            return await item

    return list(await asyncio.gather(*(one(i) for i in items)))


async def fetch_bounds(client: MetadataClient, queues: Mapping[QueueRef, str], bound: Bound, timeout: float) -> Offsets:
    """The master's min or max offset of every queue."""
    ordered = sorted(queues)
    call = client.get_min_offset if bound == "min" else client.get_max_offset
    values = await _gather([call(queues[q], q.topic, q.queue_id, timeout=timeout) for q in ordered])
    return dict(zip(ordered, values, strict=True))


async def search_offsets(
    client: MetadataClient, queues: Mapping[QueueRef, str], timestamp_ms: int, timeout: float
) -> Offsets:
    """Per queue, the offset of the first message stored at or after ``timestamp_ms``."""
    ordered = sorted(queues)
    values = await _gather(
        [client.search_offset(queues[q], q.topic, q.queue_id, timestamp_ms, timeout=timeout) for q in ordered]
    )
    return dict(zip(ordered, values, strict=True))


async def resolve_position(
    client: MetadataClient,
    queues: Mapping[QueueRef, str],
    position: Position,
    timeout: float,
    *,
    option: str,
    timestamp_ms: int | None = None,
    default: Bound = "min",
) -> Offsets:
    """Concrete offsets for ``position`` (``earliest``/``latest``/JSON with -2/-1) on ``queues``.
    JSON entries for queues that are not readable in the route are refused; queues missing from the JSON
    take ``default``."""
    if timestamp_ms is not None:
        return await search_offsets(client, queues, timestamp_ms, timeout)
    if position == "earliest":
        return await fetch_bounds(client, queues, "min", timeout)
    if position == "latest":
        return await fetch_bounds(client, queues, "max", timeout)
    assert isinstance(position, dict)
    unknown = sorted(q for q in position if q not in queues)
    if unknown:
        known = ", ".join(str(q) for q in sorted(queues)) or "none"
        raise RocketMQSourceError(
            f"{option}: {', '.join(str(q) for q in unknown)} not readable in the route (readable queues: {known})"
        )
    wants_min = {q for q in queues if position.get(q, EARLIEST if default == "min" else LATEST) == EARLIEST}
    wants_max = {q for q in queues if position.get(q, EARLIEST if default == "min" else LATEST) == LATEST}
    out: Offsets = {q: v for q, v in position.items() if v >= 0}
    if wants_min:
        out.update(await fetch_bounds(client, {q: queues[q] for q in wants_min}, "min", timeout))
    if wants_max:
        out.update(await fetch_bounds(client, {q: queues[q] for q in wants_max}, "max", timeout))
    return out


class Driver:
    """Runs metadata coroutines synchronously, with retries, on a private loop and client."""

    def __init__(self, opts: SourceOptions, client_factory: Callable[[], MetadataClient] | None = None) -> None:
        self.opts = opts
        self._client_factory = client_factory
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: MetadataClient | None = None

    @property
    def timeout(self) -> float:
        return self.opts.request_timeout_ms / 1000.0

    def __getstate__(self) -> dict[str, Any]:
        return {"opts": self.opts, "_client_factory": self._client_factory, "_loop": None, "_client": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _ensure(self) -> tuple[asyncio.AbstractEventLoop, MetadataClient]:
        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
            self._client = None
        if self._client is None:
            if self._client_factory is not None:
                self._client = self._client_factory()
            else:
                self._client = RemotingClient(
                    self.opts.name_servers,
                    connect_timeout=self.timeout,
                    request_timeout=self.timeout,
                    credentials=credentials_of(self.opts.access_key, self.opts.secret_key),
                    tls=tls_of(self.opts),
                )
        return self._loop, self._client

    def run(self, what: str, fn: Callable[[MetadataClient], Awaitable[T]]) -> T:
        """``fn(client)`` with the lookup retries; ``what`` names the lookup in the final error."""
        loop, client = self._ensure()
        attempts = self.opts.fetch_offset_num_retries + 1
        last: BaseException | None = None
        for attempt in range(attempts):
            try:
                return loop.run_until_complete(fn(client))
            except (_Retryable, RemotingConnectionError, RemotingTimeout) as exc:
                last = exc
                if attempt + 1 < attempts:
                    log.warning("rocketmq source: %s failed (%s); retrying", what, exc)
                    time.sleep(self.opts.fetch_offset_retry_interval_ms / 1000.0)
            except RemotingException as exc:
                raise RocketMQSourceError(f"{what} failed: {exc}") from exc
        raise RocketMQSourceError(f"{what} failed after {attempts} attempt(s): {last}") from last

    def close(self) -> None:
        loop, client = self._loop, self._client
        self._loop = self._client = None
        if loop is None or loop.is_closed():
            return
        try:
            if isinstance(client, RemotingClient):
                loop.run_until_complete(client.close())
        finally:
            loop.close()

    # -- the lookups the readers need

    def queues(self) -> dict[QueueRef, str]:
        return self.run("route lookup", lambda c: discover_queues(c, self.opts, self.timeout))

    def bounds(self, bound: Bound) -> tuple[dict[QueueRef, str], Offsets]:
        """Current queues and their ``bound`` offsets, from one fresh route."""

        async def go(client: MetadataClient) -> tuple[dict[QueueRef, str], Offsets]:
            queues = await discover_queues(client, self.opts, self.timeout)
            return queues, await fetch_bounds(client, queues, bound, self.timeout)

        return self.run(f"{bound} offset lookup", go)

    def position(
        self, position: Position, *, option: str, timestamp_ms: int | None = None, default: Bound = "min"
    ) -> Offsets:
        async def go(client: MetadataClient) -> Offsets:
            queues = await discover_queues(client, self.opts, self.timeout)
            return await resolve_position(
                client, queues, position, self.timeout, option=option, timestamp_ms=timestamp_ms, default=default
            )

        return self.run(f"{option} lookup", go)
