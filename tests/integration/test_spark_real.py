"""The ``rocketmq`` Spark source against real RocketMQ processes (local platform) and pyspark in local mode.

One cluster for the module (``local_platform.shared``): a single controller hosted in a name server and a
two-replica controller-mode group with ``allAckInSyncStateSet`` and ``slaveRead: {enabled: true,
memoryRatio: 0}`` (every pull counts as lagging, so the master suggests a slave). Checks:

* a batch read returns exactly what ``tools.produce`` wrote (count, per-queue offsets, (key, body) digest),
  also split with ``minPartitions``, selected by ``topicPattern``, and bounded by ``startingTimestamp``;
* a streaming query (file sink, ``maxMessagesPerTrigger``) running in its own process is SIGKILLed after a few
  micro-batches while messages keep arriving; a new query on the same checkpoint with
  ``Trigger.AvailableNow`` finishes, and the sink holds every message exactly once;
* ``readFrom=auto`` is served by the slave (``servedByBrokerId`` = its controller id, after the first pull of
  each queue on the master), ``readFrom=master`` only by id 0;
* on a second, one-broker group with tiny store files, messages the broker really deleted (manual commitlog and
  consume-queue clean-up) make a read planned from offset 0 fail under ``failOnDataLoss=true`` and skip to
  the min offset under ``false``.

Needs JDK 17, the pinned RocketMQ distribution and pyspark (the spark extra). Outside CI anything missing
skips; under ``CI=true`` it fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from spark_local import local_spark, require_pyspark

from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.tools import ProduceReport, produce
from rocketmq_operator.tools.digest import Digest

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.timeout(600)]

GROUP = "spark-it-bg"
MANIFEST = f"""\
apiVersion: rocketmq-operator.dev/v1alpha1
kind: ControllerGroup
metadata:
  name: spark-it-ctl
spec:
  replicas: 1
  jvm:
    heap: 256Mi
---
apiVersion: rocketmq-operator.dev/v1alpha1
kind: BrokerGroup
metadata:
  name: {GROUP}
spec:
  replicas: 2
  haMode: controller
  controllerRef:
    name: spark-it-ctl
  quorum:
    allAckInSyncStateSet: true
  slaveRead:
    enabled: true
    memoryRatio: 0
  # Spark executors pull as consumer group spark-rocketmq-source (and the checks as the client's default group).
  autoCreate:
    subscriptionGroups: true
  jvm:
    heap: 384Mi
"""


@pytest.fixture(scope="module")
def cluster(local_platform: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    require_pyspark()
    manifest = tmp_path_factory.mktemp("spark-manifest") / "spark-it.yaml"
    manifest.write_text(MANIFEST)
    return local_platform.shared(manifest, name="spark")


@pytest.fixture(scope="module")
def namesrv(cluster: Any) -> str:
    return ";".join(cluster.status()["nameServers"])


@pytest.fixture(scope="module")
def spark(cluster: Any) -> Iterator[Any]:
    with local_spark("rocketmq-spark-it") as session:
        yield session


def _produce(namesrv: str, topic: str, count: int, prefix: str, tags: str | None = None) -> ProduceReport:
    report = asyncio.run(
        produce(namesrv, topic, count, size=1024, concurrency=16, key_prefix=prefix, tags=tags, timeout=5)
    )
    assert report.ok and report.acknowledged == count, report.to_json()
    return report


def _digest(rows: list[Any]) -> Digest:
    return Digest((row["keys"], bytes(row["body"])) for row in rows)


def _read(spark: Any, namesrv: str, **options: str) -> Any:
    reader = spark.read.format("rocketmq").option("nameServers", namesrv)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_batch_read_returns_exactly_what_was_produced(spark: Any, namesrv: str) -> None:
    topic = "spark-it-batch"
    report = _produce(namesrv, topic, 1000, "batch-")
    df = _read(spark, namesrv, topic=topic)
    rows = df.select("topic", "brokerName", "queueId", "queueOffset", "keys", "body", "msgId").collect()
    assert len(rows) == 1000
    assert _digest(rows).hexdigest() == report.acknowledged_digest
    assert len({r["msgId"] for r in rows}) == 1000
    per_queue: dict[int, list[int]] = {}
    for r in rows:
        assert r["topic"] == topic and r["brokerName"] == GROUP
        per_queue.setdefault(r["queueId"], []).append(r["queueOffset"])
    assert sorted(per_queue) == [0, 1, 2, 3]
    assert all(sorted(v) == list(range(len(v))) for v in per_queue.values())

    split = _read(spark, namesrv, topic=topic, minPartitions="10", readFrom="master")
    assert split.rdd.getNumPartitions() == 10
    assert _digest(split.select("keys", "body").collect()).hexdigest() == report.acknowledged_digest

    other = _produce(namesrv, "spark-it-batch2", 40, "batch2-")
    both = _read(spark, namesrv, topicPattern="spark-it-batch.*").select("topic", "keys", "body").collect()
    assert Counter(r["topic"] for r in both) == {topic: 1000, "spark-it-batch2": 40}
    assert _digest([r for r in both if r["topic"] == "spark-it-batch2"]).hexdigest() == other.acknowledged_digest

    future = str(int(time.time() * 1000) + 3_600_000)
    assert _read(spark, namesrv, topic=topic, startingTimestamp=future).count() == 0
    assert _read(spark, namesrv, topic=topic, startingTimestamp="0").count() == 1000


def test_tag_filter_reads_exactly_the_tags_asked_for(spark: Any, namesrv: str) -> None:
    """subExpression as a consumer subscribes: the broker filters by hash code, the source by the exact tag.
    "Aa" and "BB" share Java's hash code, so only the source's own check keeps "BB" out."""
    topic = "spark-it-tags"
    reports = {tag: _produce(namesrv, topic, 60, f"{tag}-", tags=tag) for tag in ("Aa", "BB", "other")}
    got = _read(spark, namesrv, topic=topic, subExpression="Aa || other").select("keys", "body", "tags").collect()
    assert Counter(r["tags"] for r in got) == {"Aa": 60, "other": 60}
    wanted = [r for r in got if r["tags"] == "Aa"]
    assert _digest(wanted).hexdigest() == reports["Aa"].acknowledged_digest
    assert _read(spark, namesrv, topic=topic, subExpression="BB").count() == 60
    assert _read(spark, namesrv, topic=topic).count() == 180


def test_bench_spark_java_column_reads_what_was_acknowledged(namesrv: str) -> None:
    """`bench spark`'s third column: the Java client's DefaultLitePullConsumer (LitePullRate.java on the pinned
    jars) drains a topic; its count and digest are checked against the producer's (its rate is only recorded)."""
    from rocketmq_operator.cli.bench_spark import java_reads

    report = _produce(namesrv, "spark-it-litepull", 400, "litepull-")
    rounds = java_reads(namesrv, "spark-it-litepull", 400, 1)
    assert [(r["count"], r["digest"]) for r in rounds] == [(400, report.acknowledged_digest)]
    assert rounds[0]["elapsed_s"] > 0


STREAM_JOB = """
import os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
from rocketmq_operator.spark import register

namesrv, topic, out, checkpoint = sys.argv[1:5]
spark = (SparkSession.builder.master("local[2]").appName("rocketmq-spark-it-stream")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
register(spark)
df = (spark.readStream.format("rocketmq").option("nameServers", namesrv).option("topic", topic)
      .option("startingOffsets", "earliest").option("maxMessagesPerTrigger", "60").load())
query = (df.select("topic", "queueId", "queueOffset", "keys", "body", "servedByBrokerId").writeStream
         .format("parquet").option("path", out).option("checkpointLocation", checkpoint)
         .trigger(processingTime="500 milliseconds").start())
print("started", flush=True)
query.awaitTermination()
"""


def _commits(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.is_dir() else 0


def test_stream_killed_and_restarted_delivers_exactly_once(spark: Any, namesrv: str, tmp_path: Path) -> None:
    topic = "spark-it-stream"
    out, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"
    first = _produce(namesrv, topic, 600, "stream-a-")
    script = tmp_path / "stream_job.py"
    script.write_text(textwrap.dedent(STREAM_JOB))
    log = (tmp_path / "stream_job.log").open("wb")
    job = subprocess.Popen(
        [sys.executable, str(script), namesrv, topic, str(out), str(checkpoint)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        second = _produce(namesrv, topic, 600, "stream-b-")  # arrives while the query runs
        deadline = time.monotonic() + 360  # a bound for a stuck job; a loaded machine takes minutes
        while _commits(checkpoint) < 3:
            if job.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streaming job did not commit 3 batches:\n{(tmp_path / 'stream_job.log').read_text()}")
            time.sleep(0.2)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)  # the driver and its JVM: no clean shutdown
        job.wait(timeout=30)
        log.close()
    done_before = _commits(checkpoint)
    assert 3 <= done_before < 20, "the first run must stop mid-way (1200 messages at 60 per batch = 20 batches)"

    query = (
        spark.readStream.format("rocketmq")
        .option("nameServers", namesrv)
        .option("topic", topic)
        .option("startingOffsets", "latest")  # ignored: the checkpoint wins
        .option("maxMessagesPerTrigger", "60")
        .load()
        .select("topic", "queueId", "queueOffset", "keys", "body", "servedByBrokerId")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180), "Trigger.AvailableNow did not finish"
    assert query.exception() is None
    assert _commits(checkpoint) > done_before

    rows = spark.read.parquet(str(out)).collect()
    keys = Counter(r["keys"] for r in rows)
    assert len(rows) == 1200 and len(keys) == 1200, f"{len(rows)} rows, duplicates: {keys.most_common(3)}"
    expected = Digest.of_digests([*(r.digest for r in first.records), *(r.digest for r in second.records)])
    assert _digest(rows) == expected

    offsets_dir = checkpoint / "offsets"
    last = max((p for p in offsets_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    doc = json.loads(last.read_text().splitlines()[-1])
    # The checkpoint ends at each queue's end as read. Not 300 each: a send retried after a timeout goes to
    # the next queue, so the producer's round robin may leave 301 and 299.
    ends: dict[str, int] = {}
    for r in rows:
        key = f"{GROUP}/{r['queueId']}"
        ends[key] = max(ends.get(key, 0), r["queueOffset"] + 1)
    assert sum(ends.values()) == 1200 and len(ends) == 4
    assert doc == {topic: ends}


async def _wait_slave_knows(addr: str, topic: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    last: object = None
    async with RemotingClient(request_timeout=5) as client:
        while time.monotonic() < deadline:
            try:
                last = await client.pull(addr, topic, 0, 0, 1)
                return
            except RemotingException as exc:
                last = exc
            await asyncio.sleep(0.5)
    pytest.fail(f"slave {addr} does not serve topic {topic} after {timeout:g}s: {last}")


def test_slave_read_follows_suggestion(spark: Any, namesrv: str, cluster: Any) -> None:
    topic = "spark-it-slave"
    report = _produce(namesrv, topic, 800, "slave-")
    group = cluster.group(GROUP)
    slaves = {r["brokerId"] for r in group["replicas"] if r["role"] == "slave"}
    assert len(slaves) == 1, group
    # A slave learns new topics from its master a few seconds late (until then it answers TOPIC_NOT_EXIST and
    # the reader stays on the master): wait for that, as a long-lived topic would have it.
    slave_addr = next(r["address"] for r in group["replicas"] if r["role"] == "slave")
    asyncio.run(_wait_slave_knows(slave_addr, topic))

    auto = _read(spark, namesrv, topic=topic, pullBatchSize="32").select("keys", "body", "servedByBrokerId").collect()
    served = Counter(r["servedByBrokerId"] for r in auto)
    assert _digest(auto).hexdigest() == report.acknowledged_digest and len(auto) == 800
    # memoryRatio 0: the master suggests whichBrokerWhenConsumeSlowly (1), i.e. the slave (id 1, else id 2).
    # The first pull of each of the 4 queues is on the master (8 messages each: every read counts as "from
    # disk"); on a quiet machine the slave serves the other ~96%. A slave that is momentarily behind answers
    # RETRY (one pull back on the master), and a failed slave pull (e.g. SYSTEM_BUSY on an overloaded 2-core
    # machine) keeps the reader on the master for 3 s - hence only "a large share" here.
    print(f"\nservedByBrokerId with readFrom=auto: {dict(served)}")
    assert set(served) == {0, *slaves}, served
    assert sum(served[s] for s in slaves) >= 0.25 * 800, served

    master = _read(spark, namesrv, topic=topic, readFrom="master").select("keys", "body", "servedByBrokerId")
    rows = master.collect()
    assert Counter(r["servedByBrokerId"] for r in rows) == {0: 800}
    assert _digest(rows).hexdigest() == report.acknowledged_digest


RETENTION_MANIFEST = """\
apiVersion: rocketmq-operator.dev/v1alpha1
kind: ControllerGroup
metadata: {name: spark-ret-ctl}
spec: {replicas: 1, jvm: {heap: 256Mi}}
---
apiVersion: rocketmq-operator.dev/v1alpha1
kind: BrokerGroup
metadata: {name: spark-ret-bg}
spec:
  replicas: 1
  controllerRef: {name: spark-ret-ctl}
  quorum: {inSyncReplicas: 1, minInSyncReplicas: 1}
  autoCreate: {subscriptionGroups: true}  # the Spark executors' consumer group
  jvm: {heap: 384Mi}
  # Small files and no reserved time, so a manual clean-up deletes data within the test. Every hour is a
  # deleteWhen hour (RocketMQ's default, 04, made a run at 04:55 fail where others passed): the broker's own
  # clean-up also runs, every second, whenever the test does.
  brokerConfig:
    mappedFileSizeCommitLog: 1048576
    mappedFileSizeConsumeQueue: 6000
    fileReservedTime: 0
    cleanResourceInterval: 1000
    deleteCommitLogFilesInterval: 0
    deleteWhen: "00;01;02;03;04;05;06;07;08;09;10;11;12;13;14;15;16;17;18;19;20;21;22;23"
"""


def test_offsets_below_retention_fail_or_skip(spark: Any, local_platform: Any, tmp_path: Path) -> None:
    """Messages really deleted by the broker (commitlog + consume-queue clean-up): a read planned from offset
    0 fails with the topic, queue and min offset under ``failOnDataLoss=true`` (the default), and with
    ``false`` reads exactly what is left."""
    manifest = tmp_path / "retention.yaml"
    manifest.write_text(RETENTION_MANIFEST)
    topic = "spark-retention"
    with local_platform.up(manifest, name="spark-retention") as ret:
        doc = ret.wait_for("a master", lambda d: (ret.group("spark-ret-bg", d).get("master") or {}).get("address"))
        ns = ";".join(doc["nameServers"])
        master = ret.group("spark-ret-bg", doc)["master"]["address"]
        _produce(ns, topic, 3000, "ret-")  # ~3.6 MB: four 1 MiB commitlog files, three consume-queue files a queue

        async def delete_and_wait() -> dict[int, tuple[int, int]]:
            async with RemotingClient() as client:
                deadline = time.monotonic() + 90
                previous: dict[int, tuple[int, int]] | None = None
                while time.monotonic() < deadline:
                    await client.delete_expired_commitlog(master)
                    await client.clean_expired_consume_queue(master)
                    bounds = {
                        q: (
                            await client.get_min_offset(master, topic, q),
                            await client.get_max_offset(master, topic, q),
                        )
                        for q in range(4)
                    }
                    # Done when every queue lost its head AND a further round deleted nothing: the broker deletes
                    # a few files a call, and what it deletes after the read below would shrink what is left
                    # under the reader (a run saw 500 rows where 2,166 had been left a moment before).
                    if all(low > 0 for low, _ in bounds.values()) and bounds == previous:
                        return bounds
                    previous = bounds
                    await asyncio.sleep(1.0)
                pytest.fail(f"the broker deleted nothing within 90 s: {bounds}")

        bounds = asyncio.run(delete_and_wait())
        starting = json.dumps({topic: {f"spark-ret-bg/{q}": 0 for q in range(4)}})

        def frame(**options: str) -> Any:
            reader = spark.read.format("rocketmq").option("nameServers", ns).option("topic", topic)
            for key, value in {"startingOffsets": starting, **options}.items():
                reader = reader.option(key, value)
            return reader.load()

        with pytest.raises(Exception) as failed:
            frame().count()
        text = str(failed.value)
        assert "is below the broker's min offset" in text and f"topic {topic!r}" in text
        assert "failOnDataLoss=false" in text

        rows = frame(failOnDataLoss="false").select("queueId", "queueOffset").collect()
        assert len(rows) == sum(high - low for low, high in bounds.values())
        for q, (low, _) in bounds.items():
            assert min(r["queueOffset"] for r in rows if r["queueId"] == q) == low
