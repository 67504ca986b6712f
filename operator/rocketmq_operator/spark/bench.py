"""``rocketmq-operator bench spark``: the Spark source's read throughput against the raw pull client, in one run.

Contract (:func:`run_bench`):

1. Produce ``messages`` messages of ``size`` bytes (default 1 KiB) to a fresh topic with :func:`tools.produce`.
2. A ``local[2]`` SparkSession is started and warmed up (untimed: the same query over the first
   :data:`WARMUP_FRACTION` of every queue, which starts the Python workers and lets the JVM compile the
   query's code paths, as a JMH warm-up iteration does).
3. ``rounds`` rounds (default :data:`DEFAULT_ROUNDS`), each a raw read then a Spark read of the whole topic;
   each side's fastest read gives its rate (every time is in the document):

   * Raw: :func:`tools.consume` (``read_from``, default ``auto``: the stdlib remoting client pulling every
     queue concurrently on one asyncio loop, following suggestWhichBrokerId, checking and digesting every
     body), stopping at ``messages``; its own ``elapsed_s`` is the time.
   * Spark: ``spark.read.format("rocketmq")`` over the topic computes the (key, body) digest per message on
     the executors (:data:`DIGEST_SQL`, the definition of :mod:`tools.digest`) and aggregates count and
     digest sum there (:func:`digest_aggregates`, as a real job would rather than collecting every row to
     the driver); the time runs from building the DataFrame (planning, offset lookups included) to the
     aggregate received.
   * Java (when a ``java_reads`` runner is given; the CLI runs ``java/LitePullRate.java`` on the pinned
     distribution's jars): the Java client's ``DefaultLitePullConsumer`` draining the topic, ``rounds`` times
     in one JVM after the other two, digesting every message the same way: the physical limit of a reader on
     this machine. ``spark_to_java`` is Spark / Java.
4. ``count_ok`` is true when every read's count equals ``messages`` and its digest equals the producer's
   acknowledged digest. Spark sums the digests of all rows, :mod:`tools.digest` those of distinct pairs: with
   the count equal to ``messages`` the two agree exactly when the rows are the acknowledged messages, each
   once (up to a 2^-256 coincidence).

The JSON document has at least ``spark_msgs_per_s``, ``raw_msgs_per_s``, ``ratio`` (Spark / raw),
``count_ok``, plus ``spark_mb_per_s``/``raw_mb_per_s`` (bodies only, MB = 10^6 bytes), counts, elapsed
times, digests, the produce rate and the machine (``nproc``, memory GiB, CPU model, 1-minute load average
when the run ended: other work on the machine skews the numbers). pyspark is imported only
inside :class:`SparkReader`.
"""

from __future__ import annotations

import asyncio
import os
import platform
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rocketmq_operator.tools import consume, produce
from rocketmq_operator.tools.digest import format_digest

DEFAULT_MESSAGES = 20_000
DEFAULT_SIZE = 1024
DEFAULT_MASTER = "local[2]"
DEFAULT_ROUNDS = 3
"""Rounds of (raw read, Spark read); each side's fastest read counts (the machine is shared and noisy)."""
JavaReads = Callable[[str, str, int, int], list[dict[str, Any]]]
"""(namesrv, topic, messages, rounds) -> one ``{"count", "elapsed_s", "digest"}`` per round of the Java reader."""
WARMUP_FRACTION = 0.1
"""The share of every queue the untimed warm-up query reads (at least one message per queue)."""


def machine_info() -> dict[str, Any]:
    """``nproc``, total memory (GiB, as ``free -g``) and the CPU model from /proc/cpuinfo."""
    mem_gib: int | None = None
    model: str | None = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = int(line.split()[1]) // (1024 * 1024)
                break
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "mem_total_gib": mem_gib,
        "cpu_model": model or platform.processor() or None,
        "python": platform.python_version(),
        "load_avg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }


DIGEST_SQL = "sha2(concat(encode(coalesce(keys, ''), 'UTF-8'), X'00', body), 256)"
""":func:`tools.digest.message_digest` in Spark SQL: sha256(key UTF-8 + NUL + body), computed on the executors
(JVM side, so the benchmark needs no pandas)."""

DIGEST_CHUNK_HEX = 8
"""The 256-bit digest is summed in Spark as 8 columns of 32-bit chunks: each column's sum fits a bigint for
up to 2^31 rows, and :func:`combine_chunk_sums` carries them into the sum modulo 2^256."""


def digest_aggregates(column: str = "d") -> list[str]:
    """Spark SQL aggregates: ``n`` (the row count) and ``c0``..``c7``, the sums of the digest's 32-bit chunks
    (most significant first) over the hex digest ``column``."""
    chunks = [
        f"sum(cast(conv(substr({column}, {1 + i * DIGEST_CHUNK_HEX}, {DIGEST_CHUNK_HEX}), 16, 10) AS bigint)) AS c{i}"
        for i in range(64 // DIGEST_CHUNK_HEX)
    ]
    return ["count(*) AS n", *chunks]


def combine_chunk_sums(sums: Sequence[int | None]) -> str:
    """The :mod:`tools.digest` hex digest (sum modulo 2^256) from the chunk sums of :func:`digest_aggregates`."""
    bits = DIGEST_CHUNK_HEX * 4
    total = sum(int(value or 0) << (bits * (len(sums) - 1 - i)) for i, value in enumerate(sums))
    return format_digest(total)


@dataclass
class SparkRead:
    count: int
    digest: str
    elapsed_s: float
    partitions: int


class SparkReader:
    """One ``local[N]`` SparkSession for the whole bench: started and warmed up once, then timed reads."""

    def __init__(self, namesrv: str, topic: str, *, master: str = DEFAULT_MASTER, read_from: str = "auto") -> None:
        self.namesrv = namesrv
        self.topic = topic
        self.master = master
        self.read_from = read_from
        self.startup_s = 0.0
        self.version = ""
        self._spark: Any = None

    def __enter__(self) -> SparkReader:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        from . import register

        began = time.perf_counter()
        self._spark = (
            SparkSession.builder.master(self.master)
            .appName("rocketmq-bench-spark")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.host", "127.0.0.1")
            .getOrCreate()
        )
        self._spark.sparkContext.setLogLevel("ERROR")
        register(self._spark)
        self.version = str(self._spark.version)
        # Warm-up: the JVM (its JIT compiles the digest and aggregation paths), the planner and the Python
        # workers (reused afterwards).
        self._summarize(self._frame(endingOffsets=_prefix_per_queue(self.namesrv, self.topic, WARMUP_FRACTION)))
        self.startup_s = time.perf_counter() - began
        return self

    def __exit__(self, *exc: object) -> None:
        if self._spark is not None:
            self._spark.stop()
            self._spark = None

    def _frame(self, **extra: str) -> Any:
        reader = self._spark.read.format("rocketmq").option("nameServers", self.namesrv).option("topic", self.topic)
        for key, value in {"readFrom": self.read_from, **extra}.items():
            reader = reader.option(key, value)
        return reader.load()

    @staticmethod
    def _summarize(df: Any) -> Any:
        return df.selectExpr(f"{DIGEST_SQL} AS d").selectExpr(*digest_aggregates()).collect()[0]

    def read(self) -> SparkRead:
        """Time a full batch read of the topic: planning, offset lookups, reading and the digest aggregate."""
        t0 = time.perf_counter()
        df = self._frame()
        summary = self._summarize(df)
        elapsed = time.perf_counter() - t0
        digest = combine_chunk_sums([summary[f"c{i}"] for i in range(64 // DIGEST_CHUNK_HEX)])
        return SparkRead(int(summary["n"]), digest, elapsed, df.rdd.getNumPartitions())

    def served_by(self) -> dict[str, int]:
        """Messages per serving broker id (untimed)."""
        rows = self._frame().groupBy("servedByBrokerId").count().collect()
        return {str(row["servedByBrokerId"]): int(row["count"]) for row in rows}


def _prefix_per_queue(namesrv: str, topic: str, fraction: float) -> str:
    """endingOffsets JSON reading the first ``fraction`` (at least one message) of each queue: the warm-up."""
    from .metadata import Driver
    from .offsets import dumps_offsets
    from .options import parse_options

    driver = Driver(parse_options({"nameServers": namesrv, "topic": topic}, streaming=False))
    try:
        low = driver.position("earliest", option="startingOffsets")
        high = driver.position("latest", option="endingOffsets")
    finally:
        driver.close()
    return dumps_offsets({q: v + max(1, int((high.get(q, v) - v) * fraction)) for q, v in low.items()})


def _java_columns(javas: list[dict[str, Any]], spark_rate: float) -> dict[str, Any]:
    """The Java reader's columns from its fastest read, and the Spark source's rate as a ratio of it."""
    if not javas:
        return {}
    fastest = min(javas, key=lambda r: float(r["elapsed_s"]))
    java_rate = int(fastest["count"]) / float(fastest["elapsed_s"]) if float(fastest["elapsed_s"]) > 0 else 0.0
    return {
        "java_msgs_per_s": round(java_rate, 1),
        "java_elapsed_s": float(fastest["elapsed_s"]),
        "java_elapsed_s_all": [float(r["elapsed_s"]) for r in javas],
        "java_count": int(fastest["count"]),
        "java_digest": fastest["digest"],
        "spark_to_java": round(spark_rate / java_rate, 3) if java_rate > 0 else None,
    }


def run_bench(
    namesrv: str,
    messages: int = DEFAULT_MESSAGES,
    *,
    size: int = DEFAULT_SIZE,
    topic: str | None = None,
    master: str = DEFAULT_MASTER,
    read_from: str = "auto",
    rounds: int = DEFAULT_ROUNDS,
    java_reads: JavaReads | None = None,
) -> dict[str, Any]:
    """Produce, then ``rounds`` rounds of (raw read, Spark read); the JSON document described in the module
    docstring, rates from the fastest read of each side."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    topic = topic or f"bench-spark-{secrets.token_hex(4)}"
    produced = asyncio.run(produce(namesrv, topic, messages, size=size, concurrency=32, keep_records=False))
    raw_mode: Literal["auto", "master"] = "auto" if read_from == "auto" else "master"
    raws: list[Any] = []
    sparks: list[SparkRead] = []
    with SparkReader(namesrv, topic, master=master, read_from=read_from) as reader:
        for _ in range(rounds):
            raws.append(asyncio.run(consume(namesrv, topic, read_from=raw_mode, max_messages=messages)))
            sparks.append(reader.read())
        spark_served = reader.served_by()
    javas = java_reads(namesrv, topic, messages, rounds) if java_reads is not None else []
    raw = min(raws, key=lambda r: r.elapsed_s)
    spark = min(sparks, key=lambda r: r.elapsed_s)
    mb = messages * size / 1e6
    spark_rate = spark.count / spark.elapsed_s if spark.elapsed_s > 0 else 0.0
    raw_rate = raw.count / raw.elapsed_s if raw.elapsed_s > 0 else 0.0
    count_ok = produced.acknowledged == messages and all(
        r.count == messages and r.digest == produced.acknowledged_digest for r in [*raws, *sparks]
    )
    java = _java_columns(javas, spark_rate)
    count_ok = count_ok and all(
        int(r["count"]) == messages and r["digest"] == produced.acknowledged_digest for r in javas
    )
    return {
        "topic": topic,
        "namesrv": namesrv,
        "messages": messages,
        "size": size,
        "read_from": read_from,
        "spark_master": master,
        "spark_version": reader.version,
        "rounds": rounds,
        "produce_msgs_per_s": produced.msgs_per_s,
        "spark_msgs_per_s": round(spark_rate, 1),
        "spark_mb_per_s": round(mb / spark.elapsed_s, 2) if spark.elapsed_s > 0 else 0.0,
        "spark_elapsed_s": round(spark.elapsed_s, 3),
        "spark_elapsed_s_all": [round(r.elapsed_s, 3) for r in sparks],
        "spark_startup_s": round(reader.startup_s, 3),
        "spark_partitions": spark.partitions,
        "spark_served_by": spark_served,
        "raw_msgs_per_s": round(raw_rate, 1),
        "raw_mb_per_s": round(mb / raw.elapsed_s, 2) if raw.elapsed_s > 0 else 0.0,
        "raw_elapsed_s": raw.elapsed_s,
        "raw_elapsed_s_all": [r.elapsed_s for r in raws],
        "raw_served_by": raw.served_by,
        "ratio": round(spark_rate / raw_rate, 3) if raw_rate > 0 else None,
        **java,
        "spark_count": spark.count,
        "raw_count": raw.count,
        "produced": produced.acknowledged,
        "count_ok": count_ok,
        "produced_digest": produced.acknowledged_digest,
        "spark_digest": spark.digest,
        "raw_digest": raw.digest,
        "machine": machine_info(),
    }
