"""Producer tool: send N keyed messages (or a steady stream) with Java-producer-like retries, and report.

Contract:

* Message ``seq`` has key ``key_prefix + str(seq)`` (sent as the ``KEYS`` property) and body
  ``digest.body_for(key, size)``. The default prefix is random per run (``rmqop-<8 hex>-``).
* Queue choice: round-robin over the writable queues of master brokers (:mod:`.routing`), sent with
  SEND_MESSAGE_V2 through ``client.send`` to the master's address.
* Retries (like ``DefaultMQProducer`` with ``retryTimesWhenSendFailed=retries``): at most ``1 + retries``
  attempts per message, each with its own ``timeout``. An attempt is retried - on a queue of another broker
  when there is one, otherwise on the next queue, after a route refresh - when it ends in a connection
  error, a timeout, no writable queue in the route, or one of :data:`RETRYABLE_CODES` (the Java client's
  ``retryResponseCodes``: SYSTEM_ERROR 1, which includes IN_SYNC_REPLICAS_NOT_ENOUGH, SYSTEM_BUSY 2,
  SERVICE_NOT_AVAILABLE 14, NO_PERMISSION 16, TOPIC_NOT_EXIST 17, NO_BUYER_ID 204, NOT_IN_CURRENT_UNIT 205).
  A stored status (PUT_OK, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE) is final and never
  retried; any other status or exception fails the message at once. A timed-out attempt may still have been
  stored, so a retry after it can duplicate a message, exactly as with the Java client.
* A message is *acknowledged* when its final status is a stored one. Failure names are the status name
  (``codes.put_status``: ``IN_SYNC_REPLICAS_NOT_ENOUGH``, ``SYSTEM_BUSY``, ...) or one of the exception kinds
  ``TIMEOUT``, ``CONNECTION_ERROR``, ``NO_ROUTE``, ``BAD_RESPONSE``.
* :func:`produce` returns a :class:`ProduceReport` (``to_json()`` is the CLI's ``--json`` document):
  ``statuses`` counts the final status (or failure kind) of every message, ``failures`` those of the
  messages that finally failed, ``attempt_failures`` every failed attempt. ``latency_ms`` is per acknowledged
  message, end to end including retries. ``elapsed_s`` runs from the first send to the last answer (topic
  setup excluded); ``msgs_per_s`` is acknowledged / elapsed. ``digest`` and ``acknowledged_digest`` are the
  same value, the :mod:`.digest` of the acknowledged messages (compare it with the consumer's ``digest``);
  ``sent_digest`` covers every message attempted. ``to_json(keys=True)`` (the CLI's ``--report-keys``) adds
  ``acknowledged_keys`` and ``failed_keys`` (key -> final status), for a no-loss check by key (:mod:`.noloss`).
* :class:`SteadyProducer` sends at a fixed rate (at most ``max_in_flight`` sends outstanding; after a stall it
  resumes the rate without a burst) until stopped, and records per message the wall-clock start and end,
  the final status and the attempts (:class:`SendRecord`). :func:`recovery_windows` computes OpenChaos's
  client-visible unavailability windows from such records.
* Passing ``client`` uses (and does not close) that client; otherwise a :class:`RemotingClient` is made for
  ``namesrv`` and closed. Setup problems raise :class:`ToolError`. With ``create_topic`` off, a topic namesrv
  has no route for is looked up again for ``timeout * (1 + retries)`` seconds, then refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import itertools
import secrets
import ssl
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

from rocketmq_operator.remoting import (
    RemotingClient,
    RemotingConnectionError,
    RemotingException,
    RemotingTimeout,
    ResponseCode,
    SendResult,
    TopicRoute,
)
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.remoting.tls import ClientTls

from .digest import Digest, body_for, message_digest
from .routing import (
    DEFAULT_ROUTE_REFRESH_S,
    DEFAULT_ROUTE_WAIT_S,
    PinnedRouter,
    RouteClient,
    ToolError,
    TopicRouter,
    ensure_topic,
)
from .stats import RecoveryWindow, latency_summary, recovery_windows

DEFAULT_PRODUCER_GROUP = "rocketmq-operator-produce"
DEFAULT_SIZE = 1024
DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT_S = 3.0
DEFAULT_RETRIES = 2

RETRYABLE_CODES: frozenset[int] = frozenset(
    {
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.SYSTEM_BUSY,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.NO_PERMISSION,
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.NO_BUYER_ID,
        ResponseCode.NOT_IN_CURRENT_UNIT,
    }
)
STORED_STATUSES: frozenset[str] = frozenset(
    {"PUT_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"}
)

KIND_TIMEOUT = "TIMEOUT"
KIND_CONNECTION = "CONNECTION_ERROR"
KIND_NO_ROUTE = "NO_ROUTE"
KIND_BAD_RESPONSE = "BAD_RESPONSE"
KIND_TLS = "TLS_HANDSHAKE"
"""A connection refused in its TLS handshake (the peer's certificate not trusted, or ours refused): counted apart
from other connection errors, so that a certificate or authority change is measured as the client sees it."""


class Decision(enum.Enum):
    ACK = "ack"
    RETRY = "retry"
    FAIL = "fail"


def classify_result(result: SendResult) -> Decision:
    """What a producer does with a broker answer: stored -> ACK, retryable code -> RETRY, else FAIL."""
    if result.stored:
        return Decision.ACK
    if result.code in RETRYABLE_CODES:
        return Decision.RETRY
    return Decision.FAIL


def classify_exception(exc: BaseException) -> tuple[str, Decision]:
    """Failure kind and decision for an exception raised by a send attempt."""
    if isinstance(exc, RemotingTimeout):
        return KIND_TIMEOUT, Decision.RETRY
    if isinstance(exc, RemotingConnectionError):
        return (KIND_TLS if isinstance(exc.__cause__, ssl.SSLError) else KIND_CONNECTION), Decision.RETRY
    return KIND_BAD_RESPONSE, Decision.FAIL


class ProduceClient(RouteClient, Protocol):
    async def send(
        self,
        addr: str,
        topic: str,
        body: bytes,
        queue_id: int,
        *,
        keys: str | None = None,
        tags: str | None = None,
        producer_group: str = ...,
        broker_name: str | None = None,
        timeout: float | None = None,
    ) -> SendResult: ...


@dataclass(frozen=True, slots=True)
class SendRecord:
    """The outcome of one message (all attempts)."""

    seq: int
    key: str
    start: float
    """Wall-clock (epoch seconds) when the first attempt started."""
    end: float
    """Wall-clock when the final answer (or failure) arrived."""
    latency_ms: float
    status: str
    """Final status name (``PUT_OK``, ``FLUSH_SLAVE_TIMEOUT``, ...) or failure kind."""
    stored: bool
    attempts: int
    attempt_failures: tuple[str, ...] = ()
    broker_name: str | None = None
    queue_id: int | None = None
    queue_offset: int = -1
    error: str | None = None
    digest: int = field(default=0, repr=False)
    """``digest.message_digest(key, body)`` (the body itself is not kept)."""

    @property
    def ok(self) -> bool:
        """Acknowledged: the final status says the broker stored the message."""
        return self.stored


class Sender:
    """Sends one message with retries over a shared :class:`TopicRouter`."""

    def __init__(
        self,
        client: ProduceClient,
        router: TopicRouter,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        producer_group: str = DEFAULT_PRODUCER_GROUP,
        tags: str | None = None,
    ) -> None:
        self.client = client
        self.router = router
        self.timeout = timeout
        self.retries = retries
        self.producer_group = producer_group
        self.tags = tags

    async def send(self, seq: int, key: str, body: bytes) -> SendRecord:
        wall_start = time.time()
        pair_digest = message_digest(key, body)
        t0 = time.perf_counter()
        failures: list[str] = []
        avoid: str | None = None
        status = KIND_NO_ROUTE
        error: str | None = None
        broker_name: str | None = None
        queue_id: int | None = None

        def record(stored: bool, offset: int = -1) -> SendRecord:
            return SendRecord(
                seq=seq,
                key=key,
                start=wall_start,
                end=time.time(),
                latency_ms=(time.perf_counter() - t0) * 1000.0,
                status=status,
                stored=stored,
                attempts=attempt,
                attempt_failures=tuple(failures),
                broker_name=broker_name,
                queue_id=queue_id,
                queue_offset=offset,
                error=error,
                digest=pair_digest,
            )

        attempt = 0
        while attempt <= self.retries:
            attempt += 1
            queue, generation = await self.router.pick(avoid)
            if queue is None:
                await self.router.refresh(generation)
                queue, generation = await self.router.pick(avoid)
            if queue is None:
                status = KIND_NO_ROUTE
                error = self.router.last_error or f"no writable queue of a master for topic {self.router.topic!r}"
                failures.append(status)
                continue
            broker_name, queue_id = queue.broker_name, queue.queue_id
            try:
                result = await self.client.send(
                    queue.addr,
                    self.router.topic,
                    body,
                    queue.queue_id,
                    keys=key,
                    tags=self.tags,
                    producer_group=self.producer_group,
                    broker_name=queue.broker_name,
                    timeout=self.timeout,
                )
            except RemotingException as exc:
                status, decision = classify_exception(exc)
                error = f"{queue.broker_name}@{queue.addr}: {exc}"
            else:
                status = result.status
                decision = classify_result(result)
                if decision is Decision.ACK:
                    error = None
                    return record(True, result.queue_offset)
                error = f"{queue.broker_name}@{queue.addr}: {result.status} ({result.code}): {result.remark or ''}"
            failures.append(status)
            if decision is Decision.FAIL:
                break
            avoid = queue.broker_name
            await self.router.refresh(generation)
        return record(False)


def default_key_prefix() -> str:
    return f"rmqop-{secrets.token_hex(4)}-"


def message_key(prefix: str, seq: int) -> str:
    return f"{prefix}{seq}"


ACK_GAP_S = 1.0  # at the tools' rates (tens to hundreds per second) a second without an acknowledgement is a pause


def ack_gaps(ends: Iterable[float], at_least_s: float = ACK_GAP_S) -> tuple[tuple[float, float], ...]:
    """The pauses of at least ``at_least_s`` between consecutive acknowledgements (their answer times)."""
    ordered = sorted(ends)
    return tuple((a, b) for a, b in itertools.pairwise(ordered) if b - a >= at_least_s)


@dataclass(frozen=True, slots=True)
class ProduceReport:
    topic: str
    key_prefix: str
    size: int
    sent: int
    acknowledged: int
    statuses: dict[str, int]
    failures: dict[str, int]
    attempt_failures: dict[str, int]
    latency_ms: dict[str, float | None]
    elapsed_s: float
    msgs_per_s: float
    acknowledged_digest: str
    sent_digest: str
    ack_gaps: tuple[tuple[float, float], ...] = ()
    """(last answer before, next answer after) for every pause of at least ``ACK_GAP_S`` between two consecutive
    acknowledgements, in wall-clock seconds: the write pauses as this client saw them (a fault's time to writable)."""
    records: tuple[SendRecord, ...] = field(default=(), repr=False, compare=False)

    @property
    def digest(self) -> str:
        """The digest of the acknowledged messages (same as ``acknowledged_digest``)."""
        return self.acknowledged_digest

    @property
    def ok(self) -> bool:
        return self.acknowledged == self.sent

    @classmethod
    def from_records(
        cls,
        topic: str,
        key_prefix: str,
        size: int,
        records: Iterable[SendRecord],
        elapsed_s: float,
        *,
        keep_records: bool = True,
    ) -> ProduceReport:
        done = sorted(records, key=lambda r: r.seq)
        acked = [r for r in done if r.ok]
        statuses = Counter(r.status for r in done)
        failures = Counter(r.status for r in done if not r.ok)
        attempt_failures = Counter(kind for r in done for kind in r.attempt_failures)
        elapsed = max(elapsed_s, 0.0)
        return cls(
            topic=topic,
            key_prefix=key_prefix,
            size=size,
            sent=len(done),
            acknowledged=len(acked),
            statuses=dict(sorted(statuses.items())),
            failures=dict(sorted(failures.items())),
            attempt_failures=dict(sorted(attempt_failures.items())),
            latency_ms=latency_summary([r.latency_ms for r in acked]),
            elapsed_s=round(elapsed, 3),
            msgs_per_s=round(len(acked) / elapsed, 1) if elapsed > 0 else 0.0,
            acknowledged_digest=Digest.of_digests(r.digest for r in acked).hexdigest(),
            sent_digest=Digest.of_digests(r.digest for r in done).hexdigest(),
            ack_gaps=ack_gaps(r.end for r in acked),
            records=tuple(done) if keep_records else (),
        )

    def to_json(self, *, keys: bool = False) -> dict[str, Any]:
        """The report as JSON; ``keys`` adds ``acknowledged_keys`` (by sequence number) and ``failed_keys`` (key ->
        final status or failure kind), which need the records (``keep_records``)."""
        doc: dict[str, Any] = {
            "topic": self.topic,
            "key_prefix": self.key_prefix,
            "size": self.size,
            "sent": self.sent,
            "acknowledged": self.acknowledged,
            "statuses": dict(self.statuses),
            "failures": dict(self.failures),
            "attempt_failures": dict(self.attempt_failures),
            "latency_ms": dict(self.latency_ms),
            "elapsed_s": self.elapsed_s,
            "msgs_per_s": self.msgs_per_s,
            "digest": self.digest,
            "acknowledged_digest": self.acknowledged_digest,
            "sent_digest": self.sent_digest,
            "ack_gaps": [{"after": a, "until": b, "s": round(b - a, 3)} for a, b in self.ack_gaps],
        }
        if keys:
            if len(self.records) != self.sent:
                raise ValueError("the report's keys need its records: make it with keep_records=True")
            doc["acknowledged_keys"] = [r.key for r in self.records if r.ok]
            # A failed send may still have been stored (a timeout after the broker wrote it): reading one back is
            # no loss, and its key says which send it was.
            doc["failed_keys"] = {r.key: r.status for r in self.records if not r.ok}
        return doc


@dataclass(slots=True)
class ProduceProgress:
    """What a running `produce` has done so far, filled as answers arrive: an interrupted run still reports it."""

    key_prefix: str = ""
    records: list[SendRecord] = field(default_factory=list)
    started: float | None = None
    """``time.perf_counter()`` when the first send started (None: not yet, e.g. still creating the topic)."""

    def report(self, topic: str, size: int, *, keep_records: bool = False) -> ProduceReport:
        """The report of the answers so far (sends still in flight are not in it)."""
        elapsed = time.perf_counter() - self.started if self.started is not None else 0.0
        records = list(self.records)
        return ProduceReport.from_records(topic, self.key_prefix, size, records, elapsed, keep_records=keep_records)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ToolError(message)


def _check_common(size: int, timeout: float, retries: int) -> None:
    _check(size >= 0, f"--size must be >= 0, got {size}")
    _check(timeout > 0, f"--timeout must be > 0, got {timeout}")
    _check(retries >= 0, f"--retries must be >= 0, got {retries}")


def _own_client(
    namesrv: str | Sequence[str] | None,
    timeout: float,
    credentials: SessionCredentials | None = None,
    tls: ClientTls | None = None,
) -> RemotingClient:
    if not namesrv:
        raise ToolError("no name server address given (--namesrv host:port[;host:port])")
    client = RemotingClient(namesrv, connect_timeout=timeout, request_timeout=timeout, credentials=credentials, tls=tls)
    if not client.namesrv_addrs:
        raise ToolError("no name server address given (--namesrv host:port[;host:port])")
    return client


def _pinned(client: ProduceClient, topic: str, route: TopicRoute, addr: str, timeout: float) -> PinnedRouter:
    try:
        return PinnedRouter(client, topic, route, addr, timeout=timeout)
    except ValueError as exc:
        raise ToolError(str(exc)) from None


async def produce(
    namesrv: str | Sequence[str] | None,
    topic: str,
    count: int,
    *,
    size: int = DEFAULT_SIZE,
    rate: float = 0.0,
    concurrency: int = DEFAULT_CONCURRENCY,
    key_prefix: str | None = None,
    tags: str | None = None,
    create_topic: bool = True,
    cluster: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    retries: int = DEFAULT_RETRIES,
    producer_group: str = DEFAULT_PRODUCER_GROUP,
    route_refresh_s: float = DEFAULT_ROUTE_REFRESH_S,
    keep_records: bool = True,
    client: ProduceClient | None = None,
    progress: ProduceProgress | None = None,
    credentials: SessionCredentials | None = None,
    tls: ClientTls | None = None,
    pin_to: str | None = None,
) -> ProduceReport:
    """Send ``count`` messages of ``size`` bytes to ``topic`` (``rate`` msgs/s overall, 0 = unlimited, with
    ``concurrency`` sends in flight), each with the tag ``tags`` when given, and report what the brokers
    answered; every request is signed as ``credentials`` when given (an ACL 2.0 user). ``progress`` sees every
    answer as it arrives (its ``report`` is the partial report of an interrupted run). ``tls``: every connection
    is TLS, verified as it says. ``pin_to``: send only to the master at this address, as the route read at the
    start names its queues, and never look the route up again (:class:`PinnedRouter`)."""
    _check(count >= 0, f"--count must be >= 0, got {count}")
    _check(concurrency >= 1, f"--concurrency must be >= 1, got {concurrency}")
    _check(rate >= 0, f"--rate must be >= 0, got {rate}")
    _check_common(size, timeout, retries)
    prefix = default_key_prefix() if key_prefix is None else key_prefix
    progress = ProduceProgress() if progress is None else progress
    progress.key_prefix = prefix
    own = client is None
    active: ProduceClient = _own_client(namesrv, timeout, credentials, tls) if client is None else client
    try:
        # With creation off, a missing route is waited for as long as one message may take (1 + retries
        # attempts of `timeout`), not ensure_topic's 30 s: `--timeout 3 --retries 0` gives up after 3 s. A topic
        # just created keeps the longer wait for its route to reach every master. A lookup that fails otherwise (a
        # name server answering late on a loaded machine) is tried again for ensure_topic's 30 s at least: a run of
        # `--timeout 1 --retries 0` gave up at its first slow lookup beside a CPU hog (2026-11-28), where a Java
        # producer keeps looking up.
        wait_s = DEFAULT_ROUTE_WAIT_S if create_topic else timeout * (1 + retries)
        route = await ensure_topic(
            active, topic, create=create_topic, cluster=cluster, timeout=timeout, wait_s=wait_s,
            retry_s=max(timeout * (1 + retries), DEFAULT_ROUTE_WAIT_S),
        )  # fmt: skip
        router = (
            TopicRouter(active, topic, timeout=timeout, refresh_interval=route_refresh_s, route=route)
            if pin_to is None
            else _pinned(active, topic, route, pin_to, timeout)
        )
        sender = Sender(active, router, timeout=timeout, retries=retries, producer_group=producer_group, tags=tags)
        records = progress.records
        sequence = iter(range(count))
        t0 = progress.started = time.perf_counter()

        async def worker() -> None:
            for seq in sequence:
                if rate > 0:
                    delay = t0 + seq / rate - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                key = message_key(prefix, seq)
                records.append(await sender.send(seq, key, body_for(key, size)))

        await asyncio.gather(*(worker() for _ in range(min(concurrency, max(count, 1)))))
        elapsed = time.perf_counter() - t0
    finally:
        if own and isinstance(active, RemotingClient):
            await active.close()
    return ProduceReport.from_records(topic, prefix, size, records, elapsed, keep_records=keep_records)


class SteadyProducer:
    """Send at a fixed rate until stopped, recording every message. Use ``async with`` or start/stop."""

    def __init__(
        self,
        topic: str,
        rate: float,
        *,
        namesrv: str | Sequence[str] | None = None,
        client: ProduceClient | None = None,
        size: int = DEFAULT_SIZE,
        key_prefix: str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        max_in_flight: int = 64,
        create_topic: bool = True,
        cluster: str | None = None,
        producer_group: str = DEFAULT_PRODUCER_GROUP,
        route_refresh_s: float = DEFAULT_ROUTE_REFRESH_S,
    ) -> None:
        _check(rate > 0, f"rate must be > 0, got {rate}")
        _check(max_in_flight >= 1, f"max_in_flight must be >= 1, got {max_in_flight}")
        _check_common(size, timeout, retries)
        self.topic = topic
        self.rate = rate
        self.size = size
        self.key_prefix = default_key_prefix() if key_prefix is None else key_prefix
        self.timeout = timeout
        self.retries = retries
        self.max_in_flight = max_in_flight
        self.create_topic = create_topic
        self.cluster = cluster
        self.producer_group = producer_group
        self.route_refresh_s = route_refresh_s
        self._namesrv = namesrv
        self._client = client
        self._own: RemotingClient | None = None
        self._records: list[SendRecord] = []
        self._in_flight: set[asyncio.Task[None]] = set()
        self._loop_task: asyncio.Task[None] | None = None
        self._started_at = 0.0
        self._elapsed = 0.0
        self._stopped = False

    @property
    def records(self) -> tuple[SendRecord, ...]:
        """Completed messages so far, by sequence number."""
        return tuple(sorted(self._records, key=lambda r: r.seq))

    @property
    def answered(self) -> Sequence[SendRecord]:
        """Completed messages so far in the order they were answered, not copied (a long campaign polls it: the
        sorted copy of :attr:`records` costs O(n log n) a call)."""
        return self._records

    @property
    def running(self) -> bool:
        return self._loop_task is not None and not self._stopped

    async def start(self) -> None:
        if self._loop_task is not None:
            raise RuntimeError("SteadyProducer already started")
        if self._client is None:
            self._own = _own_client(self._namesrv, self.timeout)
            self._client = self._own
        client = self._client
        try:
            route = await ensure_topic(
                client, self.topic, create=self.create_topic, cluster=self.cluster, timeout=self.timeout,
                retry_s=self.timeout * (1 + self.retries),
            )  # fmt: skip
        except BaseException:
            await self._close_own()
            raise
        router = TopicRouter(
            client, self.topic, timeout=self.timeout, refresh_interval=self.route_refresh_s, route=route
        )
        sender = Sender(client, router, timeout=self.timeout, retries=self.retries, producer_group=self.producer_group)
        self._started_at = time.perf_counter()
        self._loop_task = asyncio.create_task(self._run(sender), name=f"steady-producer-{self.topic}")

    async def _run(self, sender: Sender) -> None:
        period = 1.0 / self.rate
        slots = asyncio.Semaphore(self.max_in_flight)
        next_at = time.perf_counter()
        seq = 0
        while True:
            delay = next_at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            await slots.acquire()
            key = message_key(self.key_prefix, seq)
            task = asyncio.create_task(self._one(sender, slots, seq, key))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)
            seq += 1
            next_at += period
            now = time.perf_counter()
            if next_at < now - period:
                next_at = now

    async def _one(self, sender: Sender, slots: asyncio.Semaphore, seq: int, key: str) -> None:
        try:
            self._records.append(await sender.send(seq, key, body_for(key, self.size)))
        finally:
            slots.release()

    async def stop(self) -> tuple[SendRecord, ...]:
        """Stop sending, wait for the sends in flight, close an own client; returns :attr:`records`."""
        if self._loop_task is not None and not self._stopped:
            self._stopped = True
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task
            if self._in_flight:
                await asyncio.gather(*self._in_flight, return_exceptions=True)
            self._elapsed = time.perf_counter() - self._started_at
            await self._close_own()
        return self.records

    async def _close_own(self) -> None:
        if self._own is not None:
            await self._own.close()
            self._own = None

    def report(self) -> ProduceReport:
        elapsed = self._elapsed if self._stopped else time.perf_counter() - self._started_at
        return ProduceReport.from_records(self.topic, self.key_prefix, self.size, self._records, elapsed)

    def recovery_windows(self, gap_s: float = 2.0) -> list[RecoveryWindow]:
        return recovery_windows(self._records, gap_s)

    async def __aenter__(self) -> SteadyProducer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
