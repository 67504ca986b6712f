"""``rocketmq-operator bench spark``.

Contract:

* :func:`register_bench` adds ``spark`` to the subcommands of ``bench`` (``rocketmq_operator.cli.bench``
  calls it; idempotent). Importing this module imports neither pyspark nor the local platform (the console
  script imports it for every command).
* The group: ``--namesrv host:port[;host:port]`` uses a running cluster as is. Otherwise ``-f FILE`` is
  brought up with the local platform's CLI (``local up -f FILE --wait``, run as a subprocess as any user
  would) unless ``local status --json`` in ``--state-dir`` shows a running
  supervisor; a cluster brought up here is brought down (data kept) at the end unless ``--keep`` (as every
  ``bench`` command spells it; ``--keep-up``, its first name, is still accepted but not shown in the help).
* ``--java`` (default on) also times the Java client's ``DefaultLitePullConsumer`` (:func:`java_reads`).
* Output: ``--json`` prints :func:`.bench.run_bench`'s document; otherwise a short table. Exit 0 when
  ``count_ok``, 1 when not, or with one ``error:`` line on stderr when pyspark is missing or the group cannot
  be reached or brought up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import subprocess
import sys
import tempfile
from typing import Any

from rocketmq_operator.cli.arguments import positive_int
from rocketmq_operator.spark.bench import DEFAULT_MASTER, DEFAULT_MESSAGES, DEFAULT_ROUNDS, DEFAULT_SIZE

EXIT_OK = 0
EXIT_FAILED = 1
PULL_BATCH = 32  # the Java reader's pullBatchSize: the Spark source's default (the Java client's is 10)


class BenchError(Exception):
    """A setup problem, printed as one line."""


def _local(args: argparse.Namespace, *command: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "rocketmq_operator.cli", "local", *command]
    if args.state_dir:
        argv += ["--state-dir", args.state_dir]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def _local_status(args: argparse.Namespace) -> dict[str, Any] | None:
    proc = _local(args, "status", "--json", timeout=120)
    if proc.returncode != 0:
        return None
    try:
        doc: dict[str, Any] = json.loads(proc.stdout)
    except ValueError:
        return None
    return doc if (doc.get("supervisor") or {}).get("running") and doc.get("nameServers") else None


def _ensure_group(args: argparse.Namespace) -> tuple[str, bool]:
    """(name servers, brought up here)."""
    if args.namesrv:
        return args.namesrv, False
    if not args.file:
        raise BenchError("give -f FILE (a manifest for the local platform) or --namesrv host:port")
    doc = _local_status(args)
    started = False
    if doc is None:
        print(f"bringing up {', '.join(args.file)} with the local platform ...", file=sys.stderr)
        files = [a for f in args.file for a in ("-f", f)]
        proc = _local(args, "up", *files, "--wait", timeout=900)
        if proc.returncode != 0:
            raise BenchError(f"`local up` exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-800:]}")
        started = True
        doc = _local_status(args)
        if doc is None:
            raise BenchError("`local up --wait` succeeded but `local status --json` shows no running cluster")
    return ";".join(doc["nameServers"]), started


def format_result(doc: dict[str, Any]) -> str:
    rows = [
        (
            "topic",
            f"{doc['topic']} ({doc['messages']} x {doc['size']} B, produced at {doc['produce_msgs_per_s']} msg/s)",
        ),
        (
            "spark source",
            f"{doc['spark_msgs_per_s']} msg/s  {doc['spark_mb_per_s']} MB/s  ({doc['spark_count']} in "
            f"{doc['spark_elapsed_s']} s, {doc['spark_partitions']} partitions, {doc['spark_master']}, "
            f"Spark {doc['spark_version']})",
        ),
        (
            "raw pull client",
            f"{doc['raw_msgs_per_s']} msg/s  {doc['raw_mb_per_s']} MB/s  "
            f"({doc['raw_count']} in {doc['raw_elapsed_s']} s)",
        ),
        ("ratio", f"{doc['ratio']} (spark / raw)"),
        *(
            [
                (
                    "java LitePullConsumer",
                    f"{doc['java_msgs_per_s']} msg/s  ({doc['java_count']} in {doc['java_elapsed_s']} s; "
                    f"spark / java {doc['spark_to_java']})",
                )
            ]
            if "java_msgs_per_s" in doc
            else []
        ),
        ("count_ok", str(doc["count_ok"])),
        ("machine", ", ".join(f"{k}={v}" for k, v in doc["machine"].items())),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


async def _create_groups(namesrv: str, topic: str, groups: list[str]) -> None:
    """The Java reader's consumer groups (a new one per round, so each starts at the first offset), on every
    master (brokers render autoCreateSubscriptionGroup=false)."""
    from rocketmq_operator.remoting import RemotingClient
    from rocketmq_operator.tools.consume import ensure_consumer_group

    async with RemotingClient(namesrv, connect_timeout=5.0, request_timeout=5.0) as client:
        route = await client.get_route(topic, timeout=5.0)
        for group in groups:
            await ensure_consumer_group(client, route, group, timeout=5.0)


def java_reads(namesrv: str, topic: str, messages: int, rounds: int) -> list[dict[str, Any]]:
    """The Java client's DefaultLitePullConsumer (``spark/java/LitePullRate.java``, run in source-file mode on the
    pinned distribution's jars) draining ``topic``: one result per round."""
    from importlib.resources import files

    from rocketmq_operator.platforms.local.distribution import ensure_distribution, java_executable

    lib = ensure_distribution(log=lambda _text: None) / "lib"
    source = files("rocketmq_operator.spark") / "java" / "LitePullRate.java"
    group = f"bench-litepull-{secrets.token_hex(4)}"
    asyncio.run(_create_groups(namesrv, topic, [f"{group}-{i}" for i in range(rounds)]))
    with tempfile.TemporaryDirectory(prefix="bench-litepull-") as logs:
        argv = [
            java_executable(),
            f"-Drocketmq.client.logRoot={logs}",
            "-cp",
            f"{lib}/*",
            str(source),
            namesrv,
            topic,
            group,
            str(messages),
            str(rounds),
            str(PULL_BATCH),
        ]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=600 * rounds + 120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BenchError(f"the Java LitePullConsumer reader did not finish: {exc}") from None
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or len(results) != rounds:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchError(f"the Java LitePullConsumer reader failed (exit {done.returncode}): {last}")
    return results


def cmd_bench_spark(args: argparse.Namespace) -> int:
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        print(
            f"error: bench spark needs the spark extra ({exc}); pip install 'rocketmq-operator[spark]'", file=sys.stderr
        )
        return EXIT_FAILED
    from rocketmq_operator.spark.bench import run_bench

    started = False
    try:
        namesrv, started = _ensure_group(args)
        doc = run_bench(
            namesrv,
            args.messages,
            size=args.size,
            topic=args.topic,
            master=args.master,
            read_from=args.read_from,
            rounds=args.rounds,
            java_reads=java_reads if args.java else None,
        )
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if started and not args.keep:
            _local(args, "down", timeout=300)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(format_result(doc))
    if not doc["count_ok"]:
        print("error: counts or digests differ (see spark_count, raw_count, *_digest)", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def register_bench(bench_sub: Any) -> None:
    """Add ``spark`` to the subcommands of ``bench`` (``rocketmq_operator.cli.bench`` calls this); idempotent."""
    if "spark" in getattr(bench_sub, "choices", {}):
        return
    p = bench_sub.add_parser(
        "spark",
        help="Spark source vs raw pull client throughput on a local (or given) broker group",
        description="Produce N messages, then time the rocketmq Spark source (batch read on local[2], count + "
        "digest) against the raw remoting pull client draining the same topic.",
    )
    p.add_argument("-f", "--file", action="append", default=[], metavar="FILE", help="manifest for `local up`")
    p.add_argument("--state-dir", metavar="DIR", help="local platform state directory (as for `local up`)")
    p.add_argument("--namesrv", metavar="HOST:PORT[;...]", help="use this running cluster instead of -f")
    p.add_argument("--messages", type=positive_int, default=DEFAULT_MESSAGES, metavar="N")
    p.add_argument("--size", type=positive_int, default=DEFAULT_SIZE, metavar="BYTES", help="body size (1024)")
    p.add_argument("--topic", help="topic to use (default: a fresh bench-spark-<hex>)")
    p.add_argument("--master", default=DEFAULT_MASTER, help="Spark master (local[2])")
    p.add_argument("--read-from", choices=("auto", "master"), default="auto")
    p.add_argument(
        "--rounds",
        type=positive_int,
        default=DEFAULT_ROUNDS,
        metavar="K",
        help=f"rounds of (raw read, Spark read); each side's fastest counts ({DEFAULT_ROUNDS})",
    )
    p.add_argument(
        "--java",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time the Java client's DefaultLitePullConsumer (default: on)",
    )
    p.add_argument("--keep", action="store_true", help="leave a cluster brought up here running")
    # The option's first name: existing scripts keep working, the help shows the one spelling of every command.
    p.add_argument("--keep-up", dest="keep", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print the JSON document")
    p.set_defaults(func=cmd_bench_spark)
