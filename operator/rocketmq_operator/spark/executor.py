"""Executor side of the ``rocketmq`` Spark source: read one offset range with pulls, yield Arrow record batches.

Contract (:func:`read_partition`, called from Spark's synchronous ``read(partition)``):

* One asyncio event loop and one :class:`RemotingClient` per partition read, both closed when the iterator
  ends or is abandoned. The route comes from namesrv (refreshed after any failed pull).
* Start: the master's min offset is fetched first. Below it, a range flagged ``from_earliest`` silently
  starts at the min offset; otherwise ``failOnDataLoss=true`` raises :class:`DataLossError` naming topic,
  queue, wanted offset and min offset, and ``false`` logs a warning and skips to the min offset. A gap found
  later (a pull whose first message is past the offset asked for, or OFFSET_ILLEGAL below the min offset) is
  handled the same way.
* Pulls: PULL_MESSAGE (no consumer offset commit) of ``min(pullBatchSize, end - offset)`` messages.
  ``readFrom=auto``: the first pull goes to the master, every later one to the broker id the previous answer
  suggested (``suggestWhichBrokerId``), looked up in the route's ``brokerAddrs`` as the Java client does:
  that id, else id+1 (for a slave id), else the master (else the lowest id present). ``readFrom=master``:
  always the master. ``servedByBrokerId`` is the id the message was pulled from.
* Exactly the messages ``start <= queueOffset < end`` are produced, in offset order, each once. FOUND
  advances past the last message; NO_MATCHED_MSG advances to ``nextBeginOffset``; RETRY (a slave sending the
  reader back) pulls again where suggested; NO_NEW_MSG and OFFSET_ILLEGAL above the data go back to the master
  and retry - the planned end is committed data, so it must arrive. A failed pull from a slave (connection,
  timeout, or a refusal such as TOPIC_NOT_EXIST while the slave has not yet synced a new topic) sends the
  reader to the master for :data:`SLAVE_COOLDOWN_S`; failures on the master retry with back-off and a fresh
  route. Without progress for ``pullTimeoutMs`` the read fails with
  :class:`RocketMQSourceError`.
* Record batches follow :func:`.schema.arrow_schema` exactly; at most :data:`BATCH_ROWS` rows or about
  :data:`BATCH_BYTES` of bodies each.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rocketmq_operator.remoting import (
    BrokerData,
    Message,
    PullResult,
    RemotingClient,
    RemotingError,
    RemotingException,
    ResponseCode,
    TopicRoute,
)
from rocketmq_operator.remoting.admin import SubscriptionGroupInfo, TopicAdmin
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.remoting.message import KEY_SEPARATOR, PROPERTY_KEYS, PROPERTY_TAGS
from rocketmq_operator.remoting.tls import ClientTls
from rocketmq_operator.tools.consume import PullSource
from rocketmq_operator.tools.routing import broker_address

from .errors import DataLossError, RocketMQSourceError
from .options import ReadFrom, SourceOptions, sub_expression
from .planning import OffsetRange

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger("rocketmq_operator.spark")

BATCH_ROWS = 8192
BATCH_BYTES = 16 * 1024 * 1024
BACKOFF_START_S = 0.05
BACKOFF_MAX_S = 2.0
POLL_S = 0.05
SLAVE_COOLDOWN_S = 3.0
"""After a failed pull from a slave (e.g. TOPIC_NOT_EXIST: slaves learn new topics from the master a few
seconds late), pull from the master for this long before following suggestions again."""


class PullClient(PullSource, Protocol):
    async def get_route(
        self, topic: str, *, namesrv: str | None = None, timeout: float | None = None
    ) -> TopicRoute: ...

    async def close(self) -> None: ...


def credentials_of(access_key: str | None, secret_key: str | None) -> SessionCredentials | None:
    """The ACL 2.0 user the source signs as (the options require both or neither)."""
    return SessionCredentials(access_key, secret_key) if access_key and secret_key else None


def tls_of(opts: SourceOptions) -> ClientTls | None:
    """What the source's connections trust and present (options ``tls``/``tlsCaFile``/``tlsCheckHostname``,
    ``tlsCertFile``/``tlsKeyFile``); None: plain text."""
    if not opts.tls:
        return None
    return ClientTls(opts.tls_ca_file, opts.tls_check_hostname, opts.tls_cert_file, opts.tls_key_file)


@dataclass(frozen=True, slots=True)
class ReadSettings:
    """What an executor needs from the options (small and picklable)."""

    name_servers: tuple[str, ...]
    read_from: ReadFrom = "auto"
    fail_on_data_loss: bool = True
    include_properties: bool = True
    consumer_group: str = "spark-rocketmq-source"
    pull_batch_size: int = 32
    pull_timeout_ms: int = 120_000
    request_timeout_ms: int = 10_000
    tags: frozenset[str] = frozenset()
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    tls: ClientTls | None = None

    @classmethod
    def of(cls, opts: SourceOptions) -> ReadSettings:
        return cls(
            name_servers=opts.name_servers,
            read_from=opts.read_from,
            fail_on_data_loss=opts.fail_on_data_loss,
            include_properties=opts.include_properties,
            consumer_group=opts.consumer_group,
            pull_batch_size=opts.pull_batch_size,
            pull_timeout_ms=opts.pull_timeout_ms,
            request_timeout_ms=opts.request_timeout_ms,
            tags=opts.tags,
            access_key=opts.access_key,
            secret_key=opts.secret_key,
            tls=tls_of(opts),
        )

    @property
    def timeout(self) -> float:
        return self.request_timeout_ms / 1000.0

    @property
    def credentials(self) -> SessionCredentials | None:
        return credentials_of(self.access_key, self.secret_key)


def pick_broker(broker: BrokerData | None, wanted_id: int) -> tuple[str, int] | None:
    """(address, id) to pull from for a suggested id: the same lookup as the consume tool."""
    return broker_address(broker, wanted_id)


class _QueueReader:
    """Pulls one range; yields (messages, served broker id) per successful pull."""

    def __init__(self, client: PullClient, rng: OffsetRange, settings: ReadSettings) -> None:
        self.client = client
        self.rng = rng
        self.queue = rng.queue
        self.s = settings
        self.route: TopicRoute | None = None
        self.backoff = BACKOFF_START_S
        self.last_progress = time.monotonic()
        self.last_problem = "no answer yet"
        self.slave_cooldown_until = 0.0
        self._prefetch: tuple[tuple[str, int, int], asyncio.Future[PullResult]] | None = None

    async def _refresh_route(self) -> None:
        try:
            self.route = await self.client.get_route(self.queue.topic, timeout=self.s.timeout)
        except RemotingError as exc:
            if exc.code == ResponseCode.TOPIC_NOT_EXIST:
                self._data_loss(f"topic {self.queue.topic!r} no longer exists", skip_to=None)
                raise _QueueGone from exc
            self.last_problem = f"route lookup: {exc}"
        except RemotingException as exc:
            self.last_problem = f"route lookup: {exc}"

    def _broker(self) -> BrokerData | None:
        return self.route.broker(self.queue.broker_name) if self.route is not None else None

    def _data_loss(self, detail: str, skip_to: int | None) -> None:
        where = f"topic {self.queue.topic!r} queue {self.queue.key}"
        if self.s.fail_on_data_loss:
            raise DataLossError(
                f"{where}: {detail}; some messages of the planned range [{self.rng.start}, {self.rng.end}) can no "
                "longer be read. Set failOnDataLoss=false to skip them (with a warning) and continue."
            )
        action = f"skipping to offset {skip_to}" if skip_to is not None else "skipping the queue"
        log.warning("rocketmq source: %s: %s; failOnDataLoss=false, %s", where, detail, action)

    def _check_deadline(self) -> None:
        waited = time.monotonic() - self.last_progress
        if waited * 1000.0 > self.s.pull_timeout_ms:
            raise RocketMQSourceError(
                f"topic {self.queue.topic!r} queue {self.queue.key}: no progress for {waited:.0f}s reading "
                f"[{self.rng.start}, {self.rng.end}) (pullTimeoutMs={self.s.pull_timeout_ms}); last problem: "
                f"{self.last_problem}"
            )

    async def _pause(self) -> None:
        await asyncio.sleep(self.backoff)
        self.backoff = min(BACKOFF_MAX_S, self.backoff * 2)

    async def _pause_and_refresh(self) -> bool:
        """Back off, then look the route up again; False when the topic is gone (nothing more to read)."""
        await self._pause()
        try:
            await self._refresh_route()
        except _QueueGone:
            return False
        return True

    async def _min_offset(self) -> int:
        while True:
            self._check_deadline()
            target = pick_broker(self._broker(), 0)
            if target is not None:
                try:
                    return await self.client.get_min_offset(
                        target[0], self.queue.topic, self.queue.queue_id, timeout=self.s.timeout
                    )
                except RemotingException as exc:
                    self.last_problem = f"min offset from {target[0]}: {exc}"
            else:
                self.last_problem = f"broker group {self.queue.broker_name} is not in the route"
            await self._pause()
            await self._refresh_route()

    def _start_offset(self, min_offset: int) -> int:
        offset = self.rng.start
        if offset < min_offset:
            if not self.rng.from_earliest:
                self._data_loss(
                    f"offset {offset} is below the broker's min offset {min_offset} (messages {offset}.."
                    f"{min_offset - 1} were deleted, e.g. by retention)",
                    skip_to=min_offset,
                )
            offset = min_offset
        return offset

    def _target(self, wanted: int) -> tuple[str, int] | None:
        """(address, broker id) to pull from: the suggested id under ``readFrom=auto`` outside a slave
        cool-down, else the master."""
        if self.s.read_from != "auto" or time.monotonic() < self.slave_cooldown_until:
            wanted = 0
        return pick_broker(self._broker(), wanted)

    async def _pull(self, addr: str, offset: int, count: int) -> PullResult:
        """Pull ``count`` messages at ``offset`` from ``addr``: the prefetched answer when it asked exactly
        that, otherwise a new request (a prefetch that no longer fits is cancelled)."""
        prefetch, self._prefetch = self._prefetch, None
        if prefetch is not None:
            if prefetch[0] == (addr, offset, count):
                return await prefetch[1]
            await _cancel(prefetch[1])
        return await self._request(addr, offset, count)

    def _request(self, addr: str, offset: int, count: int) -> Coroutine[Any, Any, PullResult]:
        """One PULL_MESSAGE of this queue, with the read's group and subscription (tag filter)."""
        return self.client.pull(
            addr,
            self.queue.topic,
            self.queue.queue_id,
            offset,
            count,
            self.s.consumer_group,
            subscription=sub_expression(self.s.tags),
            timeout=self.s.timeout,
        )

    async def _create_group_if_missing(self, exc: RemotingException, addr: str) -> None:
        """Brokers run with autoCreateSubscriptionGroup=false: a group the driver created on one master is
        missing on a master elected later unless it is declared (a ConsumerGroup). Create it where the pull was
        refused, then retry; a broker that cannot be asked is left to the pull's own retries."""
        missing = isinstance(exc, RemotingError) and exc.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        if missing and isinstance(self.client, RemotingClient):
            with contextlib.suppress(RemotingException, OSError):
                admin = TopicAdmin(self.client)
                info = SubscriptionGroupInfo(self.s.consumer_group)
                await admin.create_subscription_group(addr, info, timeout=self.s.timeout)
                log.info("rocketmq source: created consumer group %s on %s", self.s.consumer_group, addr)

    def _prefetch_next(self, wanted: int, offset: int, end: int) -> None:
        """Send the next pull before handing the current messages to Spark, so the broker serves it while
        this thread builds Arrow batches (one request ahead; speculative, :meth:`_pull` checks it fits)."""
        target = self._target(wanted)
        if offset >= end or target is None:
            return
        count = min(self.s.pull_batch_size, end - offset)
        task = asyncio.ensure_future(self._request(target[0], offset, count))
        self._prefetch = ((target[0], offset, count), task)

    async def messages(self) -> AsyncGenerator[tuple[Sequence[Message], int], None]:
        try:
            async for item in self._messages():
                yield item
        finally:
            if self._prefetch is not None:
                await _cancel(self._prefetch[1])
                self._prefetch = None

    async def _messages(self) -> AsyncGenerator[tuple[Sequence[Message], int], None]:
        try:
            await self._refresh_route()
            offset = self._start_offset(await self._min_offset())
        except _QueueGone:
            return
        end = self.rng.end
        wanted = 0
        while offset < end:
            self._check_deadline()
            target = self._target(wanted)
            if target is None:
                self.last_problem = f"broker group {self.queue.broker_name} is not in the route"
                wanted = 0
                if not await self._pause_and_refresh():
                    return
                continue
            addr, broker_id = target
            try:
                result = await self._pull(addr, offset, min(self.s.pull_batch_size, end - offset))
            except RemotingException as exc:
                self.last_problem = f"pull from {addr} (id {broker_id}): {exc}"
                wanted = 0
                await self._create_group_if_missing(exc, addr)
                broker = self._broker()
                if broker_id != 0 and broker is not None and 0 in broker.broker_addrs:
                    log.info("rocketmq source: %s; reading from the master for a while", self.last_problem)
                    self.slave_cooldown_until = time.monotonic() + SLAVE_COOLDOWN_S
                    continue
                # The master failed, or the route names no master (read during a failover) and a slave stood in
                # for it: back off and look the route up again, or the reader would stay on that slave.
                if not await self._pause_and_refresh():
                    return
                continue
            suggested = result.suggest_which_broker_id if self.s.read_from == "auto" else 0
            if result.status == "FOUND":
                found = [m for m in result.messages if offset <= m.queue_offset < end]
                if self.s.tags:
                    # The broker matched tag hash codes and skipped what did not match: a gap is no data loss
                    # unless the broker's min offset passed us. Keep only the exact tags (hash collisions).
                    if offset < result.min_offset:
                        self._data_loss(
                            f"offset {offset} is below the broker's min offset {result.min_offset}",
                            skip_to=result.min_offset,
                        )
                    scanned_to = max(found[-1].queue_offset + 1 if found else offset, result.next_begin_offset)
                    found = [m for m in found if m.tags in self.s.tags]
                    if scanned_to > offset:
                        offset = min(scanned_to, end)
                        self._progress()
                        wanted = suggested
                        self._prefetch_next(wanted, offset, end)
                        if found:
                            yield found, broker_id
                        continue
                if found and found[0].queue_offset > offset:
                    self._data_loss(
                        f"offsets {offset}..{found[0].queue_offset - 1} are missing (the broker's min offset is "
                        f"{result.min_offset})",
                        skip_to=found[0].queue_offset,
                    )
                if found:
                    offset = found[-1].queue_offset + 1
                    self._progress()
                    wanted = suggested
                    self._prefetch_next(wanted, offset, end)
                    yield found, broker_id
                elif result.next_begin_offset > offset:
                    offset = min(result.next_begin_offset, end)
                    self._progress()
                else:
                    self.last_problem = f"{addr} (id {broker_id}) answered FOUND without messages at {offset}"
                    await self._pause()
                wanted = suggested
            elif result.status == "NO_MATCHED_MSG" and result.next_begin_offset > offset:
                offset = min(result.next_begin_offset, end)
                self._progress()
                wanted = suggested
            elif result.status == "OFFSET_ILLEGAL" and offset < result.min_offset:
                self._data_loss(
                    f"offset {offset} is below the broker's min offset {result.min_offset} (deleted, e.g. by "
                    "retention, while reading)",
                    skip_to=result.min_offset,
                )
                offset = min(result.min_offset, end)
                self._progress()
                wanted = 0
            elif result.status == "RETRY" and (suggested != broker_id or broker_id != 0):
                # A slave sending us elsewhere (usually back to the master): follow at once.
                self.last_problem = f"{addr} (id {broker_id}) answered {result.remark or 'RETRY'}"
                wanted = suggested if suggested != broker_id else 0
                await asyncio.sleep(0)
            else:
                # NO_NEW_MSG / OFFSET_ILLEGAL above the data / RETRY from the master: the planned end is
                # committed data on the master, so wait for it there.
                self.last_problem = (
                    f"{addr} (id {broker_id}) answered {result.status} at offset {offset} "
                    f"(its max offset {result.max_offset}, planned end {end})"
                )
                wanted = 0
                await asyncio.sleep(POLL_S)

    def _progress(self) -> None:
        self.last_progress = time.monotonic()
        self.backoff = BACKOFF_START_S


async def _cancel(task: asyncio.Future[PullResult]) -> None:
    """Cancel a prefetch and consume its outcome (a failed speculative pull is not an error)."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, RemotingException):
        await task


class _QueueGone(Exception):
    """The topic disappeared and failOnDataLoss=false: nothing more to read from this queue."""


def read_range(
    client: PullClient, rng: OffsetRange, settings: ReadSettings
) -> AsyncGenerator[tuple[Sequence[Message], int], None]:
    """The messages of ``rng`` as (messages of one pull, broker id that served them)."""
    return _QueueReader(client, rng, settings).messages()


class BatchBuilder:
    """Collects the messages of one queue, pull by pull, into Arrow record batches (columns built at flush)."""

    def __init__(self, broker_name: str, include_properties: bool) -> None:
        from .schema import arrow_schema

        self.schema = arrow_schema()
        self.broker_name = broker_name
        self.include_properties = include_properties
        self._pulls: list[tuple[Sequence[Message], int]] = []
        self.rows = 0
        self.bytes = 0

    @property
    def full(self) -> bool:
        return self.rows >= BATCH_ROWS or self.bytes >= BATCH_BYTES

    def add_pull(self, messages: Sequence[Message], served_by: int) -> None:
        self._pulls.append((messages, served_by))
        self.rows += len(messages)
        self.bytes += sum(len(m.body) for m in messages)

    def flush(self) -> pa.RecordBatch:
        import pyarrow as pa

        rows = [m for messages, _ in self._pulls for m in messages]
        served = [broker_id for messages, broker_id in self._pulls for _ in messages]
        s = self.schema
        keys = [m.properties.get(PROPERTY_KEYS) or None for m in rows]
        arrays: list[Any] = [
            pa.array([m.topic for m in rows], s.field("topic").type),
            pa.array([self.broker_name] * len(rows), s.field("brokerName").type),
            pa.array([m.queue_id for m in rows], s.field("queueId").type),
            pa.array([m.queue_offset for m in rows], s.field("queueOffset").type),
            pa.array([m.msg_id or m.offset_msg_id for m in rows], s.field("msgId").type),
            pa.array([_join_keys(k) if k else None for k in keys], s.field("keys").type),
            pa.array([m.properties.get(PROPERTY_TAGS) for m in rows], s.field("tags").type),
            pa.array([m.body for m in rows], s.field("body").type),
            pa.array([m.born_timestamp * 1000 for m in rows], s.field("bornTimestamp").type),
            pa.array([m.store_timestamp * 1000 for m in rows], s.field("storeTimestamp").type),
            pa.array(
                [list(m.properties.items()) for m in rows] if self.include_properties else [None] * len(rows),
                s.field("properties").type,
            ),
            pa.array(served, s.field("servedByBrokerId").type),
        ]
        self._pulls = []
        self.rows = 0
        self.bytes = 0
        return pa.RecordBatch.from_arrays(arrays, schema=s)


def _join_keys(raw: str) -> str | None:
    """``Message.keys`` joined by one space (the KEYS property without empty items), ``None`` if none."""
    return " ".join(k for k in raw.split(KEY_SEPARATOR) if k) or None


def read_partition(
    rng: OffsetRange | None,
    settings: ReadSettings,
    *,
    client_factory: Callable[[], PullClient] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Synchronous iterator of record batches for one partition (``None``: an empty plan, nothing to read)."""
    if rng is None or rng.size <= 0:
        return
    loop = asyncio.new_event_loop()
    client: PullClient
    if client_factory is not None:
        client = client_factory()
    else:
        client = RemotingClient(
            settings.name_servers,
            connect_timeout=settings.timeout,
            request_timeout=settings.timeout,
            credentials=settings.credentials,
            tls=settings.tls,
        )
    stream = read_range(client, rng, settings)
    builder = BatchBuilder(rng.queue.broker_name, settings.include_properties)
    try:
        while True:
            try:
                messages, served_by = loop.run_until_complete(anext(stream))
            except StopAsyncIteration:
                break
            builder.add_pull(messages, served_by)
            if builder.full:
                yield builder.flush()
        if builder.rows:
            yield builder.flush()
    finally:
        try:
            loop.run_until_complete(stream.aclose())
            loop.run_until_complete(client.close())
        finally:
            loop.close()
