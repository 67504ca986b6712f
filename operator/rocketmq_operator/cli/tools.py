"""`rocketmq-operator produce` and `rocketmq-operator consume`: the client tools as CLI subcommands.

Contract: :func:`register` adds both subcommands to an argparse subparsers object. ``--json`` prints the
report's ``to_json()`` document on stdout; otherwise a short summary table. ``produce`` exits 0 when every
message was acknowledged and 1 otherwise (saying so on stderr); ``consume`` exits 0 when it read what it
could, 1 when no pull was answered (one ``error: every pull failed: KIND=N (hint)`` line) or a ``--commit``
failed, and says in one ``warning:`` line when ``--group`` could not be created through the admin path. A
``--topic`` or ``--group`` RocketMQ refuses (``api.rules``: ``^[%|a-zA-Z0-9_-]+$``, at most 127 / 255
characters) is one ``error:`` line and exit 2, before any request; so is ``--report-keys`` without ``--json``
(it adds the key lists of a no-loss check to the JSON report: ``acknowledged_keys`` and ``failed_keys`` for
``produce``, ``keys`` for ``consume``). A setup problem (no route, no cluster,
unreachable namesrv, bad argument value) prints one ``error:`` line on stderr and exits 1. No stack traces
for expected failures.
Ctrl-C during ``produce`` prints the partial report (the answers so far; ``"interrupted": true`` in the JSON)
and exits 130. While ``produce`` runs with stderr a terminal, one progress line there (sent, acknowledged,
failed, the rate of the last interval) is rewritten in place about once a second and erased before the
report; with stderr not a terminal (pipes, tests) nothing is printed while it runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import ssl
import sys
import time
from collections.abc import Coroutine, Mapping
from typing import Any, TextIO, TypeVar

from rocketmq_operator.api.names import GROUP_NAME_MAX, TOPIC_NAME_MAX, TOPIC_NAME_PATTERN
from rocketmq_operator.remoting import RemotingException
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.remoting.tls import ClientTls
from rocketmq_operator.tools.consume import (
    DEFAULT_BATCH,
    DEFAULT_CONSUMER_GROUP,
    DEFAULT_IDLE_TIMEOUT_S,
    ConsumeReport,
    consume,
)
from rocketmq_operator.tools.produce import (
    DEFAULT_CONCURRENCY,
    DEFAULT_PRODUCER_GROUP,
    DEFAULT_RETRIES,
    DEFAULT_SIZE,
    DEFAULT_TIMEOUT_S,
    ProduceProgress,
    ProduceReport,
    produce,
)
from rocketmq_operator.tools.routing import ToolError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_INTERRUPTED = 130
PROGRESS_INTERVAL_S = 1.0
T = TypeVar("T")


def name_problem(option: str, value: str, what: str, max_len: int) -> str | None:
    """Why RocketMQ would refuse ``value`` as a topic or group name (the rule of the Topic and ConsumerGroup
    resources, api.rules), as one line; None when it is a valid name."""
    rule = f"RocketMQ {what} names match {TOPIC_NAME_PATTERN} and have at most {max_len} characters"
    if not re.fullmatch(TOPIC_NAME_PATTERN, value):  # fullmatch: `$` alone would accept a trailing newline
        return f"{option} {value!r}: {rule}; fix: use only letters, digits, '%', '|', '_' and '-' (e.g. orders_v1)"
    if len(value) > max_len:
        return f"{option} {value[:20]!r}... is {len(value)} characters long: {rule}; fix: choose a shorter name"
    return None


def _invalid_names(args: argparse.Namespace, group_what: str) -> int | None:
    """Exit 2 with one line for the first --topic / --group RocketMQ refuses; None when both are valid."""
    for problem in (
        name_problem("--topic", args.topic, "topic", TOPIC_NAME_MAX),
        name_problem("--group", args.group, group_what, GROUP_NAME_MAX),
    ):
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return EXIT_INVALID
    return None


def _keys_without_json(args: argparse.Namespace, tool: str) -> int | None:
    """Exit 2 with one line when --report-keys is given without --json (the key lists are JSON only)."""
    if args.report_keys and not args.json:
        print(
            f"error: --report-keys is given without --json; rule: the key lists are fields of the JSON report; "
            f"fix: add --json (`rocketmq-operator {tool} ... --json --report-keys`)",
            file=sys.stderr,
        )
        return EXIT_INVALID
    return None


def _counts(values: Mapping[str, int]) -> str:
    return "  ".join(f"{k}={v}" for k, v in values.items()) or "-"


def _table(rows: list[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def format_produce(report: ProduceReport) -> str:
    lat = report.latency_ms
    pct = 100.0 * report.acknowledged / report.sent if report.sent else 100.0
    latency = "-" if lat["p50"] is None else f"p50 {lat['p50']:.1f}  p99 {lat['p99']:.1f}  max {lat['max']:.1f}"
    return _table(
        [
            ("topic", report.topic),
            ("sent", f"{report.sent} x {report.size} B (keys {report.key_prefix}<seq>)"),
            ("acknowledged", f"{report.acknowledged} ({pct:.1f}%)"),
            ("statuses", _counts(report.statuses)),
            ("failures", _counts(report.failures)),
            ("attempt failures", _counts(report.attempt_failures)),
            ("latency ms", latency),
            ("elapsed", f"{report.elapsed_s:.3f} s  ({report.msgs_per_s:.1f} msgs/s)"),
            ("digest", report.acknowledged_digest),
        ]
    )


def format_consume(report: ConsumeReport) -> str:
    caught = sum(1 for q in report.per_queue.values() if q.caught_up)
    return _table(
        [
            ("topic", report.topic),
            ("messages", f"{report.count} ({report.unique} unique, {report.duplicates} duplicates)"),
            ("queues", f"{len(report.per_queue)} ({caught} caught up)"),
            ("served by", _counts(report.served_by)),
            ("errors", _counts(report.errors)),
            ("body mismatches", str(report.body_mismatches)),
            ("elapsed", f"{report.elapsed_s:.3f} s"),
            ("digest", report.digest),
        ]
    )


def _print_json(document: Mapping[str, Any]) -> None:
    print(json.dumps(document, indent=2, sort_keys=False))


def _fail(message: str, args: argparse.Namespace | None = None) -> int:
    if args is not None and "peer closed the connection" in message and not (args.tls or args.tls_ca):
        message += (
            f"; a server with spec.tls on closes plain-text connections: add --tls-ca FILE (or ${TLS_CA_ENV}; "
            "`rocketmq-operator local env` prints a local cluster's)"
        )
    print(f"error: {message}", file=sys.stderr)
    return EXIT_FAILED


ACCESS_KEY_ENV = "ROCKETMQ_ACCESS_KEY"
SECRET_KEY_ENV = "ROCKETMQ_SECRET_KEY"


def add_credentials_arguments(parser: Any) -> None:
    parser.add_argument(
        "--access-key",
        default=None,
        metavar="USER",
        help=f"ACL 2.0 user the requests are signed as (default: ${ACCESS_KEY_ENV}; none: unsigned)",
    )
    parser.add_argument(
        "--secret-key-env",
        default=SECRET_KEY_ENV,
        metavar="VAR",
        help="environment variable holding the user's password (default %(default)s; never on the command line, "
        "where ps shows it)",
    )


TLS_CA_ENV = "ROCKETMQ_TLS_CA"
TLS_CERT_ENV = "ROCKETMQ_TLS_CERT"
TLS_KEY_ENV = "ROCKETMQ_TLS_KEY"


def add_tls_arguments(parser: Any) -> None:
    parser.add_argument(
        "--tls",
        action="store_true",
        help="connect over TLS, trusting the system's certificate authorities (servers with spec.tls on)",
    )
    parser.add_argument(
        "--tls-ca",
        default=None,
        metavar="FILE",
        help=f"connect over TLS, trusting the authority in this PEM file (default: ${TLS_CA_ENV}; "
        "`local env` prints the local cluster's)",
    )
    parser.add_argument(
        "--tls-cert",
        default=None,
        metavar="FILE",
        help=f"present this certificate (PEM) to servers that require one (spec.tls.clientAuth: Required; default: "
        f"${TLS_CERT_ENV}; `local env` prints the local cluster's)",
    )
    parser.add_argument(
        "--tls-key",
        default=None,
        metavar="FILE",
        help=f"the key (PEM) of --tls-cert (default: ${TLS_KEY_ENV})",
    )
    parser.add_argument(
        "--tls-chain-only",
        action="store_true",
        help="verify the servers' certificate chain but not the name or address it is issued to, as RocketMQ's "
        "Java clients do: on Kubernetes brokers are dialled by pod IP, which their certificates do not name",
    )


def tls_from(args: argparse.Namespace) -> ClientTls | None:
    """TLS as --tls / --tls-ca (or $ROCKETMQ_TLS_CA) ask; None: plain text."""
    ca = args.tls_ca or os.environ.get(TLS_CA_ENV) or None
    if ca is not None:
        try:
            ssl.create_default_context(cafile=ca)
        except (OSError, ssl.SSLError) as exc:
            raise ToolError(
                f"--tls-ca {ca}: cannot be read as PEM certificates ({exc}); rule: the file holds the authority "
                "that signed the servers' certificates; fix: name the cluster's ca.crt (`local env` prints it)"
            ) from None
    chain_only = bool(getattr(args, "tls_chain_only", False))
    cert = getattr(args, "tls_cert", None) or os.environ.get(TLS_CERT_ENV) or None
    key = getattr(args, "tls_key", None) or os.environ.get(TLS_KEY_ENV) or None
    if (cert is None) != (key is None):
        raise ToolError(
            f"--tls-cert {cert or '(none)'} and --tls-key {key or '(none)'}: one without the other; rule: a client "
            "certificate is presented with its key; fix: give both (or neither)"
        )
    if cert is not None and key is not None:
        try:
            ssl.create_default_context().load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as exc:
            raise ToolError(
                f"--tls-cert {cert} / --tls-key {key}: cannot be loaded ({exc}); rule: a PEM certificate and its "
                "unencrypted PEM key; fix: name the cluster's client certificate (`local env` prints it)"
            ) from None
    if ca is not None or cert is not None:
        return ClientTls(ca_file=ca, check_hostname=not chain_only, cert_file=cert, key_file=key)
    return ClientTls(check_hostname=not chain_only) if args.tls or chain_only else None


def credentials_from(args: argparse.Namespace) -> SessionCredentials | None:
    """The user to sign as: --access-key (or $ROCKETMQ_ACCESS_KEY) with its password from the environment."""
    access_key = args.access_key or os.environ.get(ACCESS_KEY_ENV)
    if not access_key:
        return None
    secret_key = os.environ.get(args.secret_key_env)
    if not secret_key:
        raise ToolError(
            f"--access-key {access_key}: ${args.secret_key_env} is empty; rule: a signed request needs the user's "
            f"password; fix: export {args.secret_key_env}=<password> (or name another variable with --secret-key-env)"
        )
    return SessionCredentials(access_key, secret_key)


class ProgressLine:
    """The running `produce`'s one line on a terminal: rewritten in place, erased at the end."""

    def __init__(self, progress: ProduceProgress, count: int, stream: TextIO) -> None:
        self.progress = progress
        self.count = count
        self.stream = stream
        self.seen = 0  # records counted so far: each update looks only at the new ones
        self.acknowledged = 0
        self.shown = False
        self._last: tuple[float, int] | None = None  # (time, acknowledged) of the previous update

    def text(self, now: float) -> str | None:
        """The line at ``now`` (``time.perf_counter()``); None while no send has started (topic setup)."""
        if self.progress.started is None:
            return None
        records = self.progress.records
        new = records[self.seen :]
        self.seen += len(new)
        self.acknowledged += sum(1 for r in new if r.ok)
        since, before = self._last if self._last is not None else (self.progress.started, 0)
        self._last = (now, self.acknowledged)
        rate = (self.acknowledged - before) / (now - since) if now > since else 0.0
        failed = self.seen - self.acknowledged
        return (
            f"produce: {self.seen}/{self.count} sent  {self.acknowledged} acknowledged  {failed} failed  "
            f"{rate:.1f} msgs/s"
        )

    def update(self) -> None:
        text = self.text(time.perf_counter())
        if text is not None:
            # \r: back to the line's start; ESC[K: erase what a longer previous line left
            self.stream.write(f"\r{text}\x1b[K")
            self.stream.flush()
            self.shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False


async def with_progress(main: Coroutine[Any, Any, T], line: ProgressLine, interval: float = PROGRESS_INTERVAL_S) -> T:
    """Await ``main``, updating ``line`` every ``interval`` seconds; the line is erased however it ends."""
    task = asyncio.ensure_future(main)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=interval)
            if done:
                return task.result()
            line.update()
    finally:
        line.clear()  # before the report (or Ctrl-C's partial report) is printed
        task.cancel()  # only when interrupted: a finished task ignores it


def cmd_produce(args: argparse.Namespace) -> int:
    invalid = _invalid_names(args, "producer group")
    if invalid is None:
        invalid = _keys_without_json(args, "produce")
    if invalid is not None:
        return invalid
    progress = ProduceProgress()
    try:
        main = produce(
            args.namesrv,
            args.topic,
            args.count,
            size=args.size,
            rate=args.rate,
            concurrency=args.concurrency,
            key_prefix=args.key_prefix,
            tags=args.tag,
            create_topic=args.create_topic,
            cluster=args.cluster,
            timeout=args.timeout,
            retries=args.retries,
            producer_group=args.group,
            keep_records=args.report_keys,  # the records only for the key lists: a long run would hold them all
            progress=progress,
            credentials=credentials_from(args),
            tls=tls_from(args),
            pin_to=args.pin_to,
        )
        if sys.stderr.isatty():
            line = ProgressLine(progress, args.count, sys.stderr)
            report = asyncio.run(with_progress(main, line, PROGRESS_INTERVAL_S))
        else:
            report = asyncio.run(main)
    except (ToolError, RemotingException) as exc:
        return _fail(str(exc), args)
    except KeyboardInterrupt:
        return _interrupted_produce(args, progress.report(args.topic, args.size, keep_records=args.report_keys))
    if args.json:
        _print_json(report.to_json(keys=args.report_keys))
    else:
        print(format_produce(report))
    if not report.ok:
        print(
            f"error: not every message was acknowledged: {report.sent - report.acknowledged} of {report.sent} failed",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


def _interrupted_produce(args: argparse.Namespace, partial: ProduceReport) -> int:
    """Ctrl-C: the report of the answers so far (sent, acknowledged, failures by status, rate); exit 130."""
    print(
        f"interrupted: partial report of {partial.sent} answered sends of {args.count} "
        "(sends in flight when interrupted are not counted)",
        file=sys.stderr,
    )
    if args.json:
        _print_json({**partial.to_json(keys=args.report_keys), "interrupted": True})
    else:
        print(format_produce(partial))
    return EXIT_INTERRUPTED


def cmd_consume(args: argparse.Namespace) -> int:
    invalid = _invalid_names(args, "consumer group")
    if invalid is None:
        invalid = _keys_without_json(args, "consume")
    if invalid is not None:
        return invalid
    try:
        report = asyncio.run(
            consume(
                args.namesrv,
                args.topic,
                start=args.start,
                group=args.group,
                idle_timeout=args.idle_timeout,
                max_messages=args.max_messages,
                read_from=args.read_from,
                commit=args.commit,
                timeout=args.timeout,
                batch_size=args.batch,
                credentials=credentials_from(args),
                tls=tls_from(args),
                to_end=args.to_end,
            )
        )
    except (ToolError, RemotingException) as exc:
        return _fail(str(exc), args)
    if args.json:
        _print_json(report.to_json(keys=args.report_keys))
    else:
        print(format_consume(report))
    if report.group_errors:
        print(
            f"warning: consumer group {report.group!r} could not be looked up or created through the admin path on "
            f"{'; '.join(report.group_errors)}",
            file=sys.stderr,
        )
    failure = report.pull_failure()
    if failure is not None:
        print(f"error: {failure}", file=sys.stderr)
        return EXIT_FAILED
    if args.commit and not report.committed:
        print("error: committing consumer offsets failed for some queues", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def register(sub: Any) -> None:
    """Add ``produce`` and ``consume`` to ``sub`` (``ArgumentParser.add_subparsers()``)."""
    p = sub.add_parser(
        "produce",
        help="send N keyed messages with producer-like retries; report statuses, latency and a digest",
        description="Send COUNT messages (key PREFIX<seq>, body derived from the key) and report per-status "
        "counts, retries, latency and an order-independent digest. Exit 1 unless every message was acknowledged.",
    )
    p.add_argument("--namesrv", required=True, metavar="ADDR[;ADDR]", help="name server address(es)")
    p.add_argument("--topic", required=True)
    p.add_argument("--count", type=int, required=True, metavar="N")
    p.add_argument("--size", type=int, default=DEFAULT_SIZE, metavar="B", help="body bytes (default %(default)s)")
    p.add_argument("--rate", type=float, default=0.0, metavar="R", help="msgs/s overall, 0 = unlimited (default)")
    p.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY, metavar="C", help="default %(default)s")
    p.add_argument("--key-prefix", default=None, metavar="P", help="default: rmqop-<random>-")
    p.add_argument("--tag", default=None, metavar="TAG", help="the TAGS of every message (default: none)")
    p.add_argument(
        "--create-topic",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="create a missing topic on every master of the cluster, 4/4 queues (default: on); with "
        "--no-create-topic a missing topic is looked up again for --timeout x (1 + --retries) seconds, then refused",
    )
    p.add_argument("--cluster", default=None, metavar="NAME", help="cluster for topic creation (default: the only one)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S", help="per attempt, seconds")
    p.add_argument("--retries", type=int, default=DEFAULT_RETRIES, metavar="K", help="default %(default)s")
    p.add_argument("--group", default=DEFAULT_PRODUCER_GROUP, help="producer group (default %(default)s)")
    add_credentials_arguments(p)
    add_tls_arguments(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--report-keys",
        action="store_true",
        help="with --json: add acknowledged_keys (every acknowledged message's key) and failed_keys (key -> final "
        "status of every send that failed; it may still have been stored) to the report",
    )
    p.add_argument(
        "--pin-to",
        metavar="HOST:PORT",
        help="send only to the master at this address, to its queues as the route read at the start names them, "
        "and never look the route up again: an application whose cached route still names the old master, for "
        "failover tests (whatever a deposed master acknowledges reaches this client)",
    )
    p.set_defaults(func=cmd_produce)

    c = sub.add_parser(
        "consume",
        help="read every queue of a topic once; count, detect duplicates, digest",
        description="Pull every queue of TOPIC until idle and report count, duplicates (by key), the "
        "order-independent digest, per-queue progress and which replica served the reads. "
        "Consumer offsets are not committed unless --commit.",
    )
    c.add_argument("--namesrv", required=True, metavar="ADDR[;ADDR]", help="name server address(es)")
    c.add_argument("--topic", required=True)
    c.add_argument("--from", dest="start", choices=("earliest", "latest"), default="earliest")
    c.add_argument("--group", default=DEFAULT_CONSUMER_GROUP, help="consumer group (default %(default)s)")
    c.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT_S,
        metavar="S",
        help="stop when every queue is caught up and nothing new arrived for S seconds (default %(default)s)",
    )
    c.add_argument(
        "--to-end",
        action="store_true",
        help="read what the topic held when the read started and stop once every queue reached that end, without "
        "waiting --idle-timeout for more (a read-back after the producers finished); a queue whose end cannot be "
        "read still stops by --idle-timeout",
    )
    c.add_argument("--max-messages", type=int, default=None, metavar="N")
    c.add_argument(
        "--read-from",
        choices=("auto", "master"),
        default="auto",
        help="auto: follow the broker's suggested replica (slave read); master: always the master",
    )
    c.add_argument("--commit", action="store_true", help="commit the final offsets for --group")
    c.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S", help="per request, seconds")
    c.add_argument("--batch", type=int, default=DEFAULT_BATCH, metavar="N", help="messages per pull")
    add_credentials_arguments(c)
    add_tls_arguments(c)
    c.add_argument("--json", action="store_true", help="print the report as JSON")
    c.add_argument(
        "--report-keys",
        action="store_true",
        help="with --json: add keys (every distinct key read, sorted) to the report",
    )
    c.set_defaults(func=cmd_consume)
