"""``rocketmq-operator bench spark``: the Spark source's read throughput against the raw pull client, in one run.

Contract (:func:`run_bench`):

1. Produce ``messages`` messages of ``size`` bytes (default 1 KiB) to a fresh topic with :func:`tools.produce`.
2. Raw: drain the topic with :func:`tools.consume` (``read_from``, default ``auto``: the stdlib remoting
   client pulling every queue concurrently on one asyncio loop, following suggestWhichBrokerId), stopping at
   ``messages``; its own ``elapsed_s`` is the time.
3. Spark: a ``local[2]`` SparkSession (started and warmed up - one tiny read that also starts the Python
   workers - before timing) runs ``spark.read.format("rocketmq")`` over the topic, computes the (key, body)
   digest per message on the executors (:data:`DIGEST_SQL`, the same definition as :mod:`tools.digest`) and
   collects the digests; the time runs from building the DataFrame (planning, offset lookups included) to
   the last digest received.
4. ``count_ok`` is true when both counts equal ``messages`` and the Spark digest (:mod:`tools.digest`) equals
   the producer's acknowledged digest (and so does the raw consumer's).

The JSON document has at least ``spark_msgs_per_s``, ``raw_msgs_per_s``, ``ratio`` (Spark / raw),
``count_ok``, plus ``spark_mb_per_s``/``raw_mb_per_s`` (bodies only, MB = 10^6 bytes), counts, elapsed
times, digests, the produce rate and the machine (``nproc``, memory GiB, CPU model, 1-minute load average
when the run ended: other work on the machine skews the numbers). pyspark is imported only
inside :func:`spark_read`.
"""

from __future__ import annotations

import asyncio
import os
import platform
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketmq_operator.tools import consume, produce
from rocketmq_operator.tools.digest import Digest

DEFAULT_MESSAGES = 20_000
DEFAULT_SIZE = 1024
DEFAULT_MASTER = "local[2]"


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


@dataclass
class SparkRead:
    count: int
    digest: str
    elapsed_s: float
    partitions: int
    startup_s: float
    spark_version: str
    served_by: dict[str, int] = field(default_factory=dict)


def spark_read(namesrv: str, topic: str, *, master: str = DEFAULT_MASTER, read_from: str = "auto") -> SparkRead:
    """Start a SparkSession, warm it up, then time a full batch read of ``topic`` with a digest per message."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from . import register

    began = time.perf_counter()
    spark = (
        SparkSession.builder.master(master)
        .appName("rocketmq-bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    try:
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)

        def frame(**extra: str) -> Any:
            reader = spark.read.format("rocketmq").option("nameServers", namesrv).option("topic", topic)
            for key, value in {"readFrom": read_from, **extra}.items():
                reader = reader.option(key, value)
            return reader.load()

        # Warm-up: the JVM, the planner and the Python workers (reused afterwards).
        warm = frame(endingOffsets=_first_message_per_queue(namesrv, topic)).select("queueOffset")
        warm.collect()
        startup = time.perf_counter() - began

        t0 = time.perf_counter()
        df = frame()
        digests = df.selectExpr(f"{DIGEST_SQL} AS d").collect()
        elapsed = time.perf_counter() - t0
        partitions = df.rdd.getNumPartitions()
        served = {
            str(row["servedByBrokerId"]): int(row["count"])
            for row in frame().groupBy("servedByBrokerId").count().collect()
        }
        version = str(spark.version)
    finally:
        spark.stop()
    digest = Digest.of_digests(int(row["d"], 16) for row in digests)
    return SparkRead(len(digests), digest.hexdigest(), elapsed, partitions, startup, version, served)


def _first_message_per_queue(namesrv: str, topic: str) -> str:
    """endingOffsets JSON reading one message of each queue (the warm-up read)."""
    from .metadata import Driver
    from .offsets import dumps_offsets
    from .options import parse_options

    driver = Driver(parse_options({"nameServers": namesrv, "topic": topic}, streaming=False))
    try:
        low = driver.position("earliest", option="startingOffsets")
    finally:
        driver.close()
    return dumps_offsets({q: v + 1 for q, v in low.items()})


def run_bench(
    namesrv: str,
    messages: int = DEFAULT_MESSAGES,
    *,
    size: int = DEFAULT_SIZE,
    topic: str | None = None,
    master: str = DEFAULT_MASTER,
    read_from: str = "auto",
) -> dict[str, Any]:
    """Produce, read raw, read with Spark; the JSON document described in the module docstring."""
    topic = topic or f"bench-spark-{secrets.token_hex(4)}"
    produced = asyncio.run(produce(namesrv, topic, messages, size=size, concurrency=32, keep_records=False))
    raw = asyncio.run(
        consume(namesrv, topic, read_from="auto" if read_from == "auto" else "master", max_messages=messages)
    )
    spark = spark_read(namesrv, topic, master=master, read_from=read_from)
    mb = messages * size / 1e6
    spark_rate = spark.count / spark.elapsed_s if spark.elapsed_s > 0 else 0.0
    raw_rate = raw.count / raw.elapsed_s if raw.elapsed_s > 0 else 0.0
    count_ok = (
        produced.acknowledged == messages
        and spark.count == messages
        and raw.count == messages
        and spark.digest == produced.acknowledged_digest
        and raw.digest == produced.acknowledged_digest
    )
    return {
        "topic": topic,
        "namesrv": namesrv,
        "messages": messages,
        "size": size,
        "read_from": read_from,
        "spark_master": master,
        "spark_version": spark.spark_version,
        "produce_msgs_per_s": produced.msgs_per_s,
        "spark_msgs_per_s": round(spark_rate, 1),
        "spark_mb_per_s": round(mb / spark.elapsed_s, 2) if spark.elapsed_s > 0 else 0.0,
        "spark_elapsed_s": round(spark.elapsed_s, 3),
        "spark_startup_s": round(spark.startup_s, 3),
        "spark_partitions": spark.partitions,
        "spark_served_by": spark.served_by,
        "raw_msgs_per_s": round(raw_rate, 1),
        "raw_mb_per_s": round(mb / raw.elapsed_s, 2) if raw.elapsed_s > 0 else 0.0,
        "raw_elapsed_s": raw.elapsed_s,
        "raw_served_by": raw.served_by,
        "ratio": round(spark_rate / raw_rate, 3) if raw_rate > 0 else None,
        "spark_count": spark.count,
        "raw_count": raw.count,
        "produced": produced.acknowledged,
        "count_ok": count_ok,
        "produced_digest": produced.acknowledged_digest,
        "spark_digest": spark.digest,
        "raw_digest": raw.digest,
        "machine": machine_info(),
    }
