"""RocketMQ 5's own gRPC clients through the Proxy, for tests and benchmarks.

What an application on RocketMQ 5 runs: `rocketmq-python-client` (apache/rocketmq-clients, the `grpc` extra),
used here with its defaults (3 send attempts with backoff, 3 s request timeout), never our remoting code: the
point is to measure what such a client sees. That client is synchronous (it runs its own threads), so this module
is too; callers in asyncio code run it in a thread.

Contract:

* `GrpcProducer(endpoints, topic)` is a started producer (`with` closes it); `send(seq, key, body)` returns a
  `GrpcSend`: `ok` when the proxy answered with a receipt (the broker stored it), otherwise `status` is the
  exception's class name and `error` its text. `endpoints` is `host:port[;host:port...]`, as the clients take it.
  With `busy_resends=N`, a send the broker refused as busy (`TooManyRequestsException`: its flow control, e.g. a
  request that waited longer than `waitTimeMillsInSendQueue`; nothing was stored) is sent again after a doubling
  pause, up to N more times, as an application handles "try again later"; `attempts` says how many it took.
* `send_keys(endpoints, topic, keys)`: one message per key through one producer (busy refusals resent, 5 at most),
  every `GrpcSend` in order.
* `SteadyGrpcProducer(endpoints, topic, rate)`: one thread sending one message at a time (synchronously, like an
  application's `send`) at most `rate` per second, from `start()` until `stop()`; `records` in send order. Keys
  are `<prefix><seq>`. Its records fit `tools.stats.recovery_windows`.
* `receive_keys(endpoints, group, topic, expected, idle_s)`: a SimpleConsumer that receives (long polling) and
  acks until every expected key was seen or nothing arrived for `idle_s`; returns every key seen (duplicates
  folded). Each message is acked after it is recorded, so an unacked one (or one whose ack failed) comes back
  after `invisible_s`. A
  failed receive is tried again; `GrpcReceiveError` when the last one before the deadline failed too.
* Each takes `credentials` (a `SessionCredentials`): the ACL 2.0 user every request is signed as, for a proxy
  with spec.auth (none: unsigned), and `tls`: speak TLS to a proxy with spec.tls (the client's own switch,
  `tls_enable`). The client then verifies the proxy's chain and name against gRPC's default roots, which gRPC
  reads once per process from `$GRPC_DEFAULT_SSL_ROOTS_FILE_PATH` (else the system's).
* `send_keys_trusting(ca_file, ...)` / `receive_keys_trusting(ca_file, ...)`: the same over TLS in a fresh Python
  process whose gRPC trusts ``ca_file`` (the cluster's authority, `$ROCKETMQ_TLS_CA`), as an application given
  that variable does; this process's gRPC roots are left alone. `python -m rocketmq_operator.tools.grpc_client
  send|receive` is that process (one JSON document on stdout).
* `GrpcClientMissing` when the `grpc` extra is not installed (one line naming the fix).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.tools.digest import body_for
from rocketmq_operator.tools.produce import default_key_prefix, message_key


class GrpcClientMissing(RuntimeError):
    """rocketmq-python-client is not installed."""


class GrpcReceiveError(RuntimeError):
    """Receiving kept failing until the idle deadline (the last error is in the message)."""


def _client() -> Any:
    try:
        import rocketmq
    except ImportError as exc:  # pragma: no cover - the dev install has it
        raise GrpcClientMissing(
            "RocketMQ's gRPC client is not installed; fix: pip install 'rocketmq-operator[grpc]' "
            "(rocketmq-python-client)"
        ) from exc
    return rocketmq


@dataclass(frozen=True, slots=True)
class GrpcSend:
    """One message sent through the proxy (all of the client's own attempts)."""

    seq: int
    key: str
    start: float
    """Wall clock (epoch seconds) when `send` was called."""
    end: float
    """Wall clock when it returned or raised."""
    ok: bool
    status: str
    error: str | None = None
    message_id: str | None = None
    attempts: int = 1
    """Sends of this message by the caller (more than one after a busy refusal with `busy_resends`)."""

    @property
    def latency_ms(self) -> float:
        return (self.end - self.start) * 1000.0


def _configuration(endpoints: str, request_timeout_s: float | None, signer: SessionCredentials | None = None) -> Any:
    """The client's settings; ``signer``: the ACL 2.0 user it signs every request as (a proxy with spec.auth)."""
    rocketmq = _client()
    credentials = (
        rocketmq.Credentials() if signer is None else rocketmq.Credentials(signer.access_key, signer.secret_key)
    )
    if request_timeout_s is None:
        return rocketmq.ClientConfiguration(endpoints, credentials)
    return rocketmq.ClientConfiguration(endpoints, credentials, request_timeout=request_timeout_s)


BUSY = "TooManyRequestsException"
"""The client's exception for a broker's flow-control refusal (code 42900: nothing was stored)."""
BUSY_FIRST_PAUSE_S = 0.2


class GrpcProducer:
    """A started gRPC producer of one topic; `close()` (or `with`) shuts it down."""

    def __init__(
        self,
        endpoints: str,
        topic: str,
        *,
        request_timeout_s: float | None = None,
        credentials: SessionCredentials | None = None,
        tls: bool = False,
        busy_resends: int = 0,
    ) -> None:
        rocketmq = _client()
        self.topic = topic
        self.busy_resends = busy_resends
        self._rocketmq = rocketmq
        configuration = _configuration(endpoints, request_timeout_s, credentials)
        self._producer = rocketmq.Producer(configuration, (topic,), tls_enable=tls)
        self._producer.startup()

    def send(self, seq: int, key: str, body: bytes) -> GrpcSend:
        start = time.time()
        pause_s = BUSY_FIRST_PAUSE_S
        for attempt in range(1, self.busy_resends + 2):
            sent = self._send_once(seq, key, body, start, attempt)
            if sent.ok or sent.status != BUSY or attempt > self.busy_resends:
                return sent
            time.sleep(pause_s)  # the broker said "busy, try later": nothing to wait for but time
            pause_s *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _send_once(self, seq: int, key: str, body: bytes, start: float, attempt: int) -> GrpcSend:
        message = self._rocketmq.Message()
        message.topic = self.topic
        message.body = body
        message.keys = key
        try:
            receipt = self._producer.send(message)
        except Exception as exc:
            return GrpcSend(seq, key, start, time.time(), False, type(exc).__name__, str(exc)[:300], attempts=attempt)
        return GrpcSend(
            seq, key, start, time.time(), True, "SEND_OK", message_id=str(receipt.message_id), attempts=attempt
        )

    def close(self) -> None:
        self._producer.shutdown()

    def __enter__(self) -> GrpcProducer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class SteadyGrpcProducer:
    """Synchronous sends, one at a time, at most `rate` per second, in a thread of its own."""

    def __init__(
        self,
        endpoints: str,
        topic: str,
        rate: float = 50.0,
        *,
        size: int = 128,
        key_prefix: str | None = None,
        request_timeout_s: float | None = None,
        tls: bool = False,
    ) -> None:
        self.endpoints = endpoints
        self.tls = tls
        self.topic = topic
        self.rate = rate
        self.size = size
        self.key_prefix = key_prefix or default_key_prefix()
        self.request_timeout_s = request_timeout_s
        self._records: list[GrpcSend] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"grpc-producer-{topic}", daemon=True)

    @property
    def records(self) -> tuple[GrpcSend, ...]:
        with self._lock:
            return tuple(self._records)

    def acknowledged(self) -> set[str]:
        return {r.key for r in self.records if r.ok}

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the thread; returns once the producer is started (its routes fetched), or raises why not."""
        self._thread.start()
        if not self._started.wait(timeout_s) or self._error is not None:
            self._stop.set()
            raise RuntimeError(f"the gRPC producer of {self.topic} did not start: {self._error or 'timed out'}")

    def _run(self) -> None:
        try:
            producer = GrpcProducer(self.endpoints, self.topic, request_timeout_s=self.request_timeout_s, tls=self.tls)
        except BaseException as exc:
            self._error = exc
            self._started.set()
            return
        self._started.set()
        interval = 1.0 / self.rate
        seq = 0
        next_at = time.monotonic()
        try:
            while not self._stop.is_set():
                key = message_key(self.key_prefix, seq)
                record = producer.send(seq, key, body_for(key, self.size))
                with self._lock:
                    self._records.append(record)
                seq += 1
                # No burst after a stall: the next send is due one interval after this one at the earliest.
                next_at = max(next_at + interval, time.monotonic())
                self._stop.wait(max(0.0, next_at - time.monotonic()))
        finally:
            producer.close()

    def stop(self) -> tuple[GrpcSend, ...]:
        self._stop.set()
        if self._thread.ident is not None:  # started (a stop before start, or twice, is a no-op)
            self._thread.join(timeout=120)
        return self.records

    def __enter__(self) -> SteadyGrpcProducer:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def send_keys(
    endpoints: str,
    topic: str,
    keys: Iterable[str],
    *,
    credentials: SessionCredentials | None = None,
    tls: bool = False,
    busy_resends: int = 5,
) -> list[GrpcSend]:
    """One message per key (its body the key), in order, through one started producer."""
    with GrpcProducer(endpoints, topic, credentials=credentials, tls=tls, busy_resends=busy_resends) as producer:
        return [producer.send(seq, key, key.encode()) for seq, key in enumerate(keys)]


def receive_keys(
    endpoints: str,
    group: str,
    topic: str,
    expected: Iterable[str] = (),
    *,
    idle_s: float = 10.0,
    invisible_s: int = 20,
    batch: int = 32,
    credentials: SessionCredentials | None = None,
    tls: bool = False,
) -> set[str]:
    """Every key a SimpleConsumer of `group` receives on `topic` (each message acked once seen), until every
    `expected` key was seen or nothing arrived for `idle_s` seconds."""
    rocketmq = _client()
    wanted = set(expected)
    seen: set[str] = set()
    # A long poll shorter than idle_s, so that an idle topic ends the loop on time.
    await_s = max(1, min(20, int(idle_s / 2)))
    consumer = rocketmq.SimpleConsumer(
        _configuration(endpoints, None, credentials),
        group,
        {topic: rocketmq.FilterExpression()},
        await_duration=await_s,
        tls_enable=tls,
    )
    consumer.startup()
    last_error: Exception | None = None
    try:
        last = time.monotonic()
        while not (wanted and wanted <= seen) and time.monotonic() - last < idle_s:
            try:
                messages = consumer.receive(batch, invisible_s) or []  # an empty long poll returns []
            except Exception as exc:  # e.g. right after start-up, before the proxy has the client's settings
                last_error = exc
                time.sleep(0.2)
                continue
            last_error = None
            for message in messages:
                seen.update(k for k in message.keys if k)
                with contextlib.suppress(Exception):
                    # A failed ack (seen right after a failover) only brings the message back after invisible_s: a
                    # duplicate, which a no-loss check allows; its key is already read.
                    consumer.ack(message)
            if messages:
                last = time.monotonic()
    finally:
        consumer.shutdown()
    if last_error is not None and not (wanted and wanted <= seen):
        raise GrpcReceiveError(f"receiving {topic} as {group} through {endpoints} failed: {last_error}")
    return seen


GRPC_ROOTS_ENV = "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH"
"""gRPC core's trusted roots file, read once per process when the first TLS channel is made."""


class GrpcClientProcessError(RuntimeError):
    """The client process failed before it could answer (its stderr's tail is in the message)."""


def _in_trusting_process(ca_file: str, args: Sequence[str], timeout_s: float) -> Any:
    env = {**os.environ, GRPC_ROOTS_ENV: ca_file}
    done = subprocess.run(
        [sys.executable, "-m", "rocketmq_operator.tools.grpc_client", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    # The client library may log to stdout too: the answer is the last line.
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise GrpcClientProcessError(
            f"grpc_client {args[0]} exited {done.returncode}: {done.stderr.strip()[-1500:] or done.stdout[-1500:]}"
        )
    return json.loads(lines[-1])


def send_keys_trusting(
    ca_file: str, endpoints: str, topic: str, keys: Sequence[str], *, timeout_s: float = 300.0
) -> list[GrpcSend]:
    """`send_keys(..., tls=True)` in a process whose gRPC trusts ``ca_file``."""
    answer = _in_trusting_process(
        ca_file, ["send", "--endpoints", endpoints, "--topic", topic, "--keys", ",".join(keys)], timeout_s
    )
    return [GrpcSend(**record) for record in answer["sends"]]


def receive_keys_trusting(
    ca_file: str,
    endpoints: str,
    group: str,
    topic: str,
    expected: Sequence[str],
    *,
    idle_s: float = 20.0,
    timeout_s: float = 600.0,
) -> set[str]:
    """`receive_keys(..., tls=True)` in a process whose gRPC trusts ``ca_file``; `GrpcReceiveError` as there."""
    args = ["receive", "--endpoints", endpoints, "--topic", topic, "--group", group, "--idle-s", str(idle_s)]
    answer = _in_trusting_process(ca_file, [*args, "--keys", ",".join(expected)], timeout_s)
    if answer.get("error"):
        raise GrpcReceiveError(str(answer["error"]))
    return set(answer["keys"])


def main(argv: Sequence[str] | None = None) -> int:
    """The process `send_keys_trusting` and `receive_keys_trusting` run: TLS always (trusting gRPC's roots)."""
    parser = argparse.ArgumentParser(prog="python -m rocketmq_operator.tools.grpc_client")
    parser.add_argument("action", choices=("send", "receive"))
    parser.add_argument("--endpoints", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group")
    parser.add_argument("--keys", default="")
    parser.add_argument("--idle-s", type=float, default=20.0)
    args = parser.parse_args(argv)
    keys = [k for k in args.keys.split(",") if k]
    if args.action == "receive" and not args.group:
        parser.error("receive needs --group (the consumer group)")
    if args.action == "send":
        sends = send_keys(args.endpoints, args.topic, keys, tls=True)
        print(json.dumps({"sends": [dataclasses.asdict(s) for s in sends]}), flush=True)
        return 0
    try:
        seen = receive_keys(args.endpoints, args.group, args.topic, keys, idle_s=args.idle_s, tls=True)
    except GrpcReceiveError as exc:
        print(json.dumps({"keys": [], "error": str(exc)}), flush=True)
        return 0
    print(json.dumps({"keys": sorted(seen)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
