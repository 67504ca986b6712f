"""Consumer tool: read every queue of a topic once, count, find duplicates, digest (a read tool).

Contract:

* Queues: every readable queue-data entry of the route, queue ids ``0 .. readQueueNums-1`` of each broker
  group. Each queue starts at the master's min offset (``start="earliest"``, GET_MIN_OFFSET) or max offset
  (``"latest"``), falling back to the lowest-id replica when the route has no master.
* Pulls (PULL_MESSAGE with the SUBSCRIPTION bit, ``batch_size`` at a time) go to the master with
  ``read_from="master"``. With ``"auto"`` each queue follows the broker's ``suggest_which_broker_id``: the
  suggested id is looked up in the route's ``brokerAddrs`` (exact id, then id+1, as the Java client does);
  else the master is used (and the lowest id present when there is no master). FOUND advances to ``next_begin_offset``;
  NO_MATCHED_MSG skips ahead; NO_NEW_MSG marks the queue caught up and polls again after ``poll_interval``;
  RETRY (e.g. a slave sending a caught-up consumer back) pulls again; OFFSET_ILLEGAL restarts the queue from
  the min offset (re-reading shows up as duplicates). A failed pull (connection, timeout, refusal such as
  SYSTEM_BUSY from a slave without ``slaveReadEnable``) is counted in ``errors``, sends the queue back to
  the master, refreshes the route and retries after a back-off.
* The run stops when ``max_messages`` messages were read, or when no new message arrived for
  ``idle_timeout`` seconds and every queue is caught up (reached its max offset) or has been failing for
  ``idle_timeout`` seconds without a successful pull in between.
* ``to_end=True`` (the CLI's ``--to-end``) reads what the topic held when the read started and stops as soon as
  every queue reached that end, instead of waiting ``idle_timeout`` for more: for a read-back after the
  producers have finished. Each queue's end is its master's max offset (GET_MAX_OFFSET), read once the master
  reports ``dispatchBehindBytes`` 0 (GET_BROKER_RUNTIME_INFO): RocketMQ indexes the commit log into the consume
  queues asynchronously, up to its confirm offset, and an acknowledged put is confirmed (controller mode: the
  put waited for the acks the confirm offset is computed from), so every message acknowledged before the read
  started lies below the end read after the index caught up. A broker whose end cannot be read (no master in
  the route, a refusal, an index still behind after ``max(idle_timeout, timeout)``) leaves its queues to the
  idle rule; ``per_queue[...]["end_offset"]`` is then null.
* Message identity is its ``KEYS`` property (keys joined by a space); messages without keys use their
  ``msg_id`` and are counted in ``without_key``. ``duplicates`` = ``count - unique`` (deliveries of a key
  already seen). ``digest`` is the :mod:`.digest` of the distinct (key, body) pairs read, comparable with the
  producer's ``acknowledged_digest``. ``body_mismatches`` counts messages whose body is not
  ``body_for(key, len(body))`` (meaningful for topics written by the produce tool).
* Consumer offsets are not committed unless ``commit=True``: then, at the end, each queue's next offset is
  written to its master with UPDATE_CONSUMER_OFFSET for ``group``.
* With a :class:`RemotingClient`, ``group`` is first created on every master that lacks it
  (:func:`ensure_consumer_group`); a master where that could not be done is one line of ``group_errors``.
  ``pulls`` counts the pulls a broker answered (any status). :meth:`ConsumeReport.pull_failure` is the one line
  saying why a run in which no pull was answered read nothing (the error kinds and counts, and a hint), or
  None when some pull was answered or none failed; the CLI prints it and exits 1.
* :meth:`ConsumeReport.to_json` is the CLI's ``--json`` document: ``count``, ``unique``, ``duplicates``,
  ``digest``, ``per_queue`` (``"<brokerName>:<queueId>"`` -> counts and offsets), ``served_by``
  (``"<brokerName>/<brokerId>"`` -> messages), ``elapsed_s`` and the other fields of the report;
  ``to_json(keys=True)`` (the CLI's ``--report-keys``) adds ``keys``, every distinct identity read, sorted.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from rocketmq_operator.remoting import (
    Message,
    PullResult,
    RemotingClient,
    RemotingConnectionError,
    RemotingError,
    RemotingException,
    RemotingTimeout,
    TopicRoute,
)
from rocketmq_operator.remoting.admin import SubscriptionGroupInfo, TopicAdmin
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.remoting.tls import ClientTls

from .digest import Digest, body_matches
from .routing import RouteClient, ToolError, TopicRouter, broker_address, is_topic_not_exist

DEFAULT_CONSUMER_GROUP = "rocketmq-operator-consume"
DEFAULT_IDLE_TIMEOUT_S = 3.0
DEFAULT_BATCH = 32
ERROR_BACKOFF_S = 0.2
INDEX_POLL_S = 0.02

Start = Literal["earliest", "latest"]
ReadFrom = Literal["auto", "master"]


class PullSource(Protocol):
    """What reading a queue needs of a client (this tool and the Spark source's executors)."""

    async def pull(
        self,
        addr: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_nums: int = ...,
        consumer_group: str = ...,
        *,
        subscription: str = ...,
        timeout: float | None = None,
    ) -> PullResult: ...

    async def get_min_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int: ...


class ConsumeClient(RouteClient, PullSource, Protocol):
    async def get_max_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int: ...

    async def update_consumer_offset(
        self, addr: str, consumer_group: str, topic: str, queue_id: int, offset: int, *, timeout: float | None = None
    ) -> None: ...

    async def get_runtime_info(self, addr: str, *, timeout: float | None = None) -> dict[str, str]: ...


def error_kind(exc: BaseException) -> str:
    if isinstance(exc, RemotingTimeout):
        return "TIMEOUT"
    if isinstance(exc, RemotingConnectionError):
        return "CONNECTION_ERROR"
    if isinstance(exc, RemotingError):
        return exc.code_name
    return "BAD_RESPONSE"


def message_identity(message: Message) -> tuple[str, bool]:
    """(identity, has_key): the KEYS joined by a space, else the message id."""
    keys = message.keys
    if keys:
        return " ".join(keys), True
    return message.msg_id or message.offset_msg_id, False


@dataclass(slots=True)
class QueueProgress:
    broker_name: str
    queue_id: int
    start_offset: int | None = None
    next_offset: int | None = None
    max_offset: int | None = None
    end_offset: int | None = None
    """With ``to_end``: the offset the read stops at (the queue's end when the read started); None: idle rule."""
    count: int = 0
    caught_up: bool = False
    failing_since: float | None = None
    offset_resets: int = 0
    errors: int = 0
    suggested_id: int = 0

    @property
    def name(self) -> str:
        return f"{self.broker_name}:{self.queue_id}"

    def mark_failing(self) -> None:
        if self.failing_since is None:
            self.failing_since = time.monotonic()

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "start_offset": self.start_offset,
            "next_offset": self.next_offset,
            "max_offset": self.max_offset,
            "end_offset": self.end_offset,
            "caught_up": self.caught_up,
            "failing": self.failing_since is not None,
            "offset_resets": self.offset_resets,
            "errors": self.errors,
        }


@dataclass(frozen=True, slots=True)
class ConsumeReport:
    topic: str
    count: int
    unique: int
    duplicates: int
    digest: str
    per_queue: dict[str, QueueProgress]
    served_by: dict[str, int]
    elapsed_s: float
    without_key: int = 0
    body_mismatches: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    committed: bool = False
    keys: frozenset[str] = field(default=frozenset(), repr=False, compare=False)
    group: str = DEFAULT_CONSUMER_GROUP
    pulls: int = 0
    """Pulls a broker answered (FOUND, NO_NEW_MSG, ...); failed pulls are in ``errors``."""
    group_errors: tuple[str, ...] = ()
    """One line per master where ``group`` could not be looked up or created through the admin path."""

    def pull_failure(self) -> str | None:
        """Why nothing could be read, in one line, when no pull was answered and some request failed; else None."""
        failed = {kind: n for kind, n in self.errors.items() if not kind.startswith("COMMIT_")}
        if self.pulls or not failed:
            return None
        ranked = sorted(failed.items(), key=lambda item: (-item[1], item[0]))
        counts = ", ".join(f"{kind}={n}" for kind, n in ranked)
        hint = _failure_hint(ranked[0][0], self.topic, self.group)
        return f"every pull failed: {counts}" + (f" ({hint})" if hint else "")

    def to_json(self, *, keys: bool = False) -> dict[str, Any]:
        """The report as JSON; ``keys`` adds ``keys``, the sorted identities of the distinct messages read."""
        doc: dict[str, Any] = {
            "topic": self.topic,
            "count": self.count,
            "unique": self.unique,
            "duplicates": self.duplicates,
            "digest": self.digest,
            "per_queue": {name: q.to_json() for name, q in sorted(self.per_queue.items())},
            "served_by": dict(sorted(self.served_by.items())),
            "elapsed_s": self.elapsed_s,
            "without_key": self.without_key,
            "body_mismatches": self.body_mismatches,
            "errors": dict(sorted(self.errors.items())),
            "committed": self.committed,
            "group": self.group,
            "pulls": self.pulls,
            "group_errors": list(self.group_errors),
        }
        if keys:
            doc["keys"] = sorted(self.keys)
        return doc


def _failure_hint(kind: str, topic: str, group: str) -> str:
    """What the most frequent failure of a run that read nothing usually means, and what to do."""
    hints = {
        "NO_PERMISSION": f"the user needs Sub on Topic:{topic} and on Group:{group} (ACL 2.0)",
        "SUBSCRIPTION_GROUP_NOT_EXIST": f"consumer group {group!r} does not exist on the brokers and could not be "
        "created: declare a ConsumerGroup for it, or read as a user allowed to create groups",
        "CONNECTION_ERROR": "no broker of the route could be reached from here",
        "TIMEOUT": "the brokers did not answer within --timeout",
        "NO_ROUTE": "the route lists no broker address for the topic's queues",
    }
    return hints.get(kind, "")


class _Run:
    """Shared state of one consume run."""

    def __init__(
        self,
        client: ConsumeClient,
        router: TopicRouter,
        *,
        group: str,
        start: Start,
        read_from: ReadFrom,
        max_messages: int | None,
        batch_size: int,
        timeout: float,
        poll_interval: float,
    ) -> None:
        self.client = client
        self.router = router
        self.topic = router.topic
        self.group = group
        self.start = start
        self.read_from = read_from
        self.max_messages = max_messages
        self.batch_size = batch_size
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.count = 0
        self.without_key = 0
        self.body_mismatches = 0
        self.seen: set[str] = set()
        self.digest = Digest()
        self.served_by: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.pulls = 0
        self.last_message = time.monotonic()
        self.done = asyncio.Event()

    def target(self, queue: QueueProgress, wanted_id: int) -> tuple[str, int] | None:
        return broker_address(self.router.broker(queue.broker_name), wanted_id)

    def _accept(self, queue: QueueProgress, message: Message, served: str) -> None:
        identity, has_key = message_identity(message)
        self.count += 1
        queue.count += 1
        self.served_by[served] += 1
        if not has_key:
            self.without_key += 1
        elif not body_matches(identity, message.body):
            self.body_mismatches += 1
        self.seen.add(identity)
        self.digest.add(identity, message.body)

    async def _fail(self, queue: QueueProgress, exc: RemotingException) -> None:
        self.errors[error_kind(exc)] += 1
        queue.errors += 1
        queue.mark_failing()
        queue.suggested_id = 0
        await self.router.refresh(self.router.generation)
        await asyncio.sleep(ERROR_BACKOFF_S)

    async def _initial_offset(self, queue: QueueProgress) -> bool:
        target = self.target(queue, 0)
        if target is None:
            queue.mark_failing()
            self.errors["NO_ROUTE"] += 1
            await asyncio.sleep(ERROR_BACKOFF_S)
            await self.router.refresh(self.router.generation)
            return False
        addr = target[0]
        try:
            if self.start == "earliest":
                offset = await self.client.get_min_offset(addr, self.topic, queue.queue_id, timeout=self.timeout)
            else:
                offset = await self.client.get_max_offset(addr, self.topic, queue.queue_id, timeout=self.timeout)
        except RemotingException as exc:
            await self._fail(queue, exc)
            return False
        queue.start_offset = queue.next_offset = offset
        return True

    async def _min_offset(self, queue: QueueProgress, fallback: int) -> int:
        target = self.target(queue, 0)
        if target is not None:
            try:
                return await self.client.get_min_offset(target[0], self.topic, queue.queue_id, timeout=self.timeout)
            except RemotingException as exc:
                self.errors[error_kind(exc)] += 1
        return fallback

    async def read(self, queue: QueueProgress) -> None:
        while not self.done.is_set():
            if queue.next_offset is None and not await self._initial_offset(queue):
                continue
            offset = queue.next_offset
            assert offset is not None
            wanted = queue.suggested_id if self.read_from == "auto" else 0
            target = self.target(queue, wanted)
            if target is None:
                queue.mark_failing()
                self.errors["NO_ROUTE"] += 1
                await asyncio.sleep(ERROR_BACKOFF_S)
                await self.router.refresh(self.router.generation)
                continue
            addr, broker_id = target
            try:
                result = await self.client.pull(
                    addr, self.topic, queue.queue_id, offset, self.batch_size, self.group, timeout=self.timeout
                )
            except RemotingException as exc:
                await self._fail(queue, exc)
                continue
            self.pulls += 1
            queue.failing_since = None
            queue.max_offset = result.max_offset
            if self.read_from == "auto":
                queue.suggested_id = result.suggest_which_broker_id
            if result.status == "FOUND":
                served = f"{queue.broker_name}/{broker_id}"
                next_offset = result.next_begin_offset
                for message in result.messages:
                    if self.done.is_set():  # max_messages reached (possibly by another queue)
                        next_offset = message.queue_offset
                        break
                    self._accept(queue, message, served)
                    if self.max_messages is not None and self.count >= self.max_messages:
                        self.done.set()
                queue.next_offset = next_offset
                queue.caught_up = queue.next_offset >= result.max_offset
                if result.messages:
                    self.last_message = time.monotonic()
            elif result.status == "NO_NEW_MSG":
                queue.caught_up = True
                await asyncio.sleep(self.poll_interval)
            elif result.status == "NO_MATCHED_MSG":
                queue.next_offset = result.next_begin_offset
            elif result.status == "OFFSET_ILLEGAL":
                queue.offset_resets += 1
                queue.next_offset = await self._min_offset(queue, result.min_offset)
                queue.suggested_id = 0
            else:  # RETRY
                await asyncio.sleep(0 if broker_id != queue.suggested_id else self.poll_interval)

    @staticmethod
    def reached_end(queues: Sequence[QueueProgress]) -> bool:
        """``to_end``: every queue has an end and has been read up to it."""
        return bool(queues) and all(
            q.end_offset is not None and q.next_offset is not None and q.next_offset >= q.end_offset for q in queues
        )

    def idle(self, queues: Sequence[QueueProgress], idle_timeout: float) -> bool:
        now = time.monotonic()
        if now - self.last_message < idle_timeout:
            return False
        return all(
            q.caught_up or (q.failing_since is not None and now - q.failing_since >= idle_timeout) for q in queues
        )


def _queues(route: TopicRoute) -> list[QueueProgress]:
    out: list[QueueProgress] = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if qd.readable:
            out.extend(QueueProgress(qd.broker_name, i) for i in range(qd.read_queue_nums))
    return out


async def read_ends(
    client: ConsumeClient, route: TopicRoute, queues: Sequence[QueueProgress], *, timeout: float, wait_s: float
) -> None:
    """Set each queue's ``end_offset`` (the ``to_end`` contract above): per master of the route, once it has
    indexed everything it confirmed, the max offset of each of its queues. A master that cannot tell leaves its
    queues' ends unset (the idle rule applies to them)."""
    by_broker: dict[str, list[QueueProgress]] = {}
    for queue in queues:
        by_broker.setdefault(queue.broker_name, []).append(queue)

    async def one(addr: str, own: list[QueueProgress]) -> None:
        deadline = time.monotonic() + wait_s
        while int((await client.get_runtime_info(addr, timeout=timeout)).get("dispatchBehindBytes", "0") or 0) > 0:
            if time.monotonic() > deadline:
                return
            await asyncio.sleep(INDEX_POLL_S)
        ends = [await client.get_max_offset(addr, route.topic, q.queue_id, timeout=timeout) for q in own]
        for queue, end in zip(own, ends, strict=True):
            queue.end_offset = end

    async def guarded(addr: str, own: list[QueueProgress]) -> None:
        with contextlib.suppress(RemotingException, OSError, ValueError):
            await one(addr, own)

    await asyncio.gather(
        *(
            guarded(broker.master_addr, by_broker[broker.broker_name])
            for broker in route.broker_datas
            if broker.master_addr is not None and broker.broker_name in by_broker
        )
    )


async def ensure_consumer_group(client: RemotingClient, route: TopicRoute, group: str, *, timeout: float) -> list[str]:
    """Create ``group`` on every master of the route that lacks it, through the admin path
    (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP): brokers render autoCreateSubscriptionGroup=false, and a pull for an
    unknown group is refused (SUBSCRIPTION_GROUP_NOT_EXIST). A master that cannot be asked is left alone (the
    group may exist already, and the pulls report what it answers); the returned lines say which and why."""
    admin = TopicAdmin(client)
    problems: list[str] = []
    for broker in route.broker_datas:
        addr = broker.master_addr
        if addr is None:
            continue
        try:
            if group not in await admin.subscription_groups(addr, timeout=timeout):
                await admin.create_subscription_group(addr, SubscriptionGroupInfo(group), timeout=timeout)
        except (RemotingException, OSError) as exc:
            # A broker's remark may span lines: the CLI prints these as one line.
            problems.append(f"{broker.broker_name} ({addr}): {' '.join(str(exc).split())}")
    return problems


def _check_arguments(
    start: str,
    read_from: str,
    idle_timeout: float,
    timeout: float,
    batch_size: int,
    poll_interval: float,
    max_messages: int | None,
) -> None:
    if start not in ("earliest", "latest"):
        raise ToolError(f"--from must be earliest or latest, got {start!r}")
    if read_from not in ("auto", "master"):
        raise ToolError(f"--read-from must be auto or master, got {read_from!r}")
    if idle_timeout < 0 or timeout <= 0 or batch_size < 1 or poll_interval < 0:
        raise ToolError("idle timeout and poll interval must be >= 0, timeout > 0 and batch size >= 1")
    if max_messages is not None and max_messages < 0:
        raise ToolError(f"--max-messages must be >= 0, got {max_messages}")


async def _read_queues(
    run: _Run, queues: Sequence[QueueProgress], *, to_end: bool, idle_timeout: float, poll_interval: float
) -> None:
    """Read every queue at once until the run is done, a reader ended, every queue reached its end (``to_end``)
    or the read went idle; a reader's error is raised."""
    tasks = [asyncio.create_task(run.read(q), name=f"consume-{q.name}") for q in queues]
    try:
        while not run.done.is_set():
            if any(t.done() for t in tasks):
                break
            if (to_end and run.reached_end(queues)) or run.idle(queues, idle_timeout):
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run.done.wait(), timeout=min(0.05, max(poll_interval, 0.001)))
    finally:
        run.done.set()
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    for outcome in results:
        if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
            raise outcome


async def consume(
    namesrv: str | Sequence[str] | None,
    topic: str,
    *,
    start: Start = "earliest",
    group: str = DEFAULT_CONSUMER_GROUP,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    max_messages: int | None = None,
    read_from: ReadFrom = "auto",
    commit: bool = False,
    timeout: float = 3.0,
    batch_size: int = DEFAULT_BATCH,
    poll_interval: float = 0.1,
    client: ConsumeClient | None = None,
    credentials: SessionCredentials | None = None,
    tls: ClientTls | None = None,
    to_end: bool = False,
) -> ConsumeReport:
    """Read ``topic`` from every queue until idle (or ``max_messages``, or with ``to_end`` up to where each queue
    ended when the read started) and report what was read; requests are signed as ``credentials`` when given (an
    ACL 2.0 user)."""
    _check_arguments(start, read_from, idle_timeout, timeout, batch_size, poll_interval, max_messages)
    own: RemotingClient | None = None
    if client is None:
        if not namesrv:
            raise ToolError("no name server address given (--namesrv host:port[;host:port])")
        own = RemotingClient(
            namesrv, connect_timeout=timeout, request_timeout=timeout, credentials=credentials, tls=tls
        )
        client = own
    t0 = time.perf_counter()
    try:
        try:
            route = await client.get_route(topic, timeout=timeout)
        except RemotingException as exc:
            if is_topic_not_exist(exc):
                raise ToolError(f"topic {topic!r} does not exist") from exc
            raise ToolError(f"route lookup for topic {topic!r} failed: {exc}") from exc
        group_errors: list[str] = []
        if isinstance(client, RemotingClient):
            group_errors = await ensure_consumer_group(client, route, group, timeout=timeout)
        router = TopicRouter(client, topic, timeout=timeout, route=route)
        run = _Run(
            client,
            router,
            group=group,
            start=start,
            read_from=read_from,
            max_messages=max_messages,
            batch_size=batch_size,
            timeout=timeout,
            poll_interval=poll_interval,
        )
        queues = _queues(route)
        if to_end:
            await read_ends(client, route, queues, timeout=timeout, wait_s=max(idle_timeout, timeout))
        if max_messages == 0:
            run.done.set()
        await _read_queues(run, queues, to_end=to_end, idle_timeout=idle_timeout, poll_interval=poll_interval)
        committed = False
        if commit:
            committed = await _commit(run, queues)
        elapsed = time.perf_counter() - t0
    finally:
        if own is not None:
            await own.close()
    return _report(topic, group, run, queues, elapsed, committed, group_errors)


def _report(
    topic: str,
    group: str,
    run: _Run,
    queues: Sequence[QueueProgress],
    elapsed: float,
    committed: bool,
    group_errors: Sequence[str],
) -> ConsumeReport:
    return ConsumeReport(
        topic=topic,
        count=run.count,
        unique=len(run.seen),
        duplicates=run.count - len(run.seen),
        digest=run.digest.hexdigest(),
        per_queue={q.name: q for q in queues},
        served_by=dict(run.served_by),
        elapsed_s=round(elapsed, 3),
        without_key=run.without_key,
        body_mismatches=run.body_mismatches,
        errors=dict(run.errors),
        committed=committed,
        keys=frozenset(run.seen),
        group=group,
        pulls=run.pulls,
        group_errors=tuple(group_errors),
    )


async def _commit(run: _Run, queues: Sequence[QueueProgress]) -> bool:
    ok = True
    for queue in queues:
        if queue.next_offset is None:
            continue
        broker = run.router.broker(queue.broker_name)
        master = broker.master_addr if broker is not None else None
        if master is None:
            run.errors["COMMIT_NO_MASTER"] += 1
            ok = False
            continue
        try:
            await run.client.update_consumer_offset(
                master, run.group, run.topic, queue.queue_id, queue.next_offset, timeout=run.timeout
            )
        except RemotingException as exc:
            run.errors[f"COMMIT_{error_kind(exc)}"] += 1
            ok = False
    return ok
