"""The Spark example as a user runs it on the cluster: examples/spark/consumer-job.yaml, a Job whose pod runs
consumer_job.py in Spark local mode, finds the name servers in the operator's connection ConfigMap and reads the
quickstart's topic into Parquet. Its row count must equal what a plain consumer reads from the masters."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import SECOND_QUICKSTART_NS, retire_when_done
from e2e.e2e_helpers import operator_version
from e2e.e2e_node import node_count, wait_for_image
from real_parts import missing

# `make test` runs these on one of two workers sharing the cluster (docs/testing.md "Stage 2"), on the second
# quickstart group (namespace rocketmq-b), while the other worker's tests fail over and fence the first.

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def second_quickstart_retired_after(operator: Any, request: pytest.FixtureRequest) -> Iterator[None]:
    """The second quickstart's namespace retired after this file: the last of its worker group in `make test`
    (the image roll, then these; tests/conftest.py E2E_WORKER_GROUPS), and in one process the node faults and the
    roll that use it run before it."""
    yield
    retire_when_done(operator, SECOND_QUICKSTART_NS, request.session)


def test_spark_job_reads_every_message_of_the_topic(second_quickstart: Any) -> None:
    group = second_quickstart
    group.wait_healthy()
    produced = group.produce("produce-for-spark", 2_000)
    assert produced is not None and produced["acknowledged"] == 2_000, produced
    expected = group.consume_all("consume-before-spark")["count"]
    wait_for_image(group.node.state_dir, "spark")  # imported in the background while the other tests ran

    group.node.kubectl("-n", group.ns, "apply", "-f", ROOT / "examples" / "spark" / "consumer-job.yaml")

    def finished() -> bool:
        status = group.node.json("-n", group.ns, "get", "job", "orders-to-parquet").get("status") or {}
        return bool(status.get("succeeded") or status.get("failed"))

    seconds = group.node.wait_for("the Spark job to finish", finished, timeout=900, interval=2)
    logs = group.node.kubectl("-n", group.ns, "logs", "job/orders-to-parquet")
    status = group.node.json("-n", group.ns, "get", "job", "orders-to-parquet")["status"]
    assert status.get("succeeded") == 1, logs[-3000:]
    rows = re.findall(r"^rows (\d+)$", logs, re.M)
    assert rows and int(rows[-1]) == expected, (rows, expected, logs[-3000:])
    print(f"Spark job on the node: {rows[-1]} rows in {seconds:.0f}s")


def _spark_submit(group: Any, app: str, *conf: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`spark-submit --master k8s://… --deploy-mode cluster` from the host, as a user runs it against a cluster: the
    venv's pyspark, the cluster's kubeconfig, the example's pod templates and image."""
    node = group.node
    server = json.loads((node.state_dir / "kubeconfig").read_text())["clusters"][0]["cluster"]["server"]
    image = f"ghcr.io/rocketmq-operator/rocketmq-spark:{operator_version()}"
    argv = [
        str(Path(sys.executable).parent / "spark-submit"), "--master", f"k8s://{server}", "--deploy-mode", "cluster",
        "--name", app,
        "--conf", f"spark.kubernetes.namespace={group.ns}",
        "--conf", f"spark.kubernetes.container.image={image}",
        "--conf", "spark.kubernetes.container.image.pullPolicy=Never",  # built here: no registry to pull from
        "--conf", "spark.kubernetes.authenticate.driver.serviceAccountName=spark",
        "--conf", f"spark.kubernetes.driver.pod.name={app}-driver",
        "--conf", f"spark.kubernetes.driver.podTemplateFile={ROOT / 'examples/spark/driver-pod-template.yaml'}",
        "--conf", f"spark.kubernetes.executor.podTemplateFile={ROOT / 'examples/spark/executor-pod-template.yaml'}",
        "--conf", "spark.executor.instances=2",
        # Small requests, three JVMs beside the quickstart on two cores (a user sizes these for the data), but the
        # brokers' own (examples/quickstart.yaml, 250m): a request is also the CPU weight under contention, and at
        # 100m the streaming test took 340 s instead of 119 s once the brokers requested 250m (2026-11-29).
        "--conf", "spark.kubernetes.driver.request.cores=250m",
        "--conf", "spark.kubernetes.executor.request.cores=250m",
        "--conf", "spark.driver.memory=512m", "--conf", "spark.executor.memory=512m",
        "--conf", "spark.kubernetes.executor.deleteOnTermination=false",  # the test reads where they ran
        *conf,
        "local:///opt/spark/work-dir/consumer_job.py", *args,
    ]  # fmt: skip
    import pyspark

    # SPARK_HOME: pip's spark-submit finds its home by asking `python`, which need not be the venv's.
    env = {
        **os.environ,
        "KUBECONFIG": str(node.state_dir / "kubeconfig"),
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
    }
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)


# The ReadWriteMany claim of SPARK_SETUP on the driver and the executors, at /data.
VOLUMES = [
    arg
    for role in ("driver", "executor")
    for key in ("options.claimName=rocketmq-consumer-data", "mount.path=/data")
    for arg in ("--conf", f"spark.kubernetes.{role}.volumes.persistentVolumeClaim.data.{key}")
]


def _report(logs: str) -> dict[str, str]:
    """What consumer_job.py --report printed: rows, distinct-keys, keys-sha256."""
    return dict(re.findall(r"^(rows|distinct-keys|keys-sha256) (\S+)$", logs, re.M))


def _run_to_report(group: Any, app: str, output: str) -> tuple[dict[str, Any], dict[str, str]]:
    """consumer_job.py --available-now --report in cluster mode over ``output``; the driver pod and the report."""
    node = group.node
    res = _spark_submit(
        group, app, *VOLUMES,
        args=["--topic", "orders", "--available-now", "--report",
              "--output", f"/data/{output}", "--checkpoint", f"/data/checkpoints/{output}"],
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    driver = node.json("-n", group.ns, "get", "pod", f"{app}-driver")
    logs = node.kubectl("-n", group.ns, "logs", f"{app}-driver", check=False)
    assert driver["status"]["phase"] == "Succeeded", (res.stderr[-3000:], logs[-3000:])
    return driver, _report(logs)


def test_spark_submit_in_cluster_mode_streams_through_a_lost_executor_and_writes_each_message_once(
    second_quickstart: Any,
) -> None:
    """examples/spark/README.md's spark-submit as a user runs it against a cluster: the driver and two executors
    in pods of the Spark image, the checkpoint and output on a ReadWriteMany claim. consumer_job.py runs as a
    streaming query (from the topic's end, 2 s micro-batches of at most 500 rows, the README's file sink and
    checkpoint) while a producer sends 3,000 keys; one executor pod is deleted in the middle of it and Spark starts
    another and goes on. Then the query is stopped (its driver pod deleted) and run again to the end in batch
    (--available-now, the same checkpoint) with its executors on two nodes: the output holds each message the topic
    received exactly once (rows equal what a plain consumer counts, keys and their digest equal the producer's).
    One test for both modes: each spark-submit starts three JVMs in pods, the suite's slowest step."""
    if node_count() < 3:
        missing("executors on several nodes need the three-node cluster (ROCKETMQ_OPERATOR_E2E_NODES)")
    group = second_quickstart
    node = group.node
    group.wait_healthy()
    wait_for_image(node.state_dir, "spark")
    node.kubectl("-n", group.ns, "apply", "-f", "-", input=SPARK_SETUP.format(ns=group.ns))
    app, producer, count = "orders-stream", "produce-during-stream", 3_000
    try:
        res = _spark_submit(
            group, app, *VOLUMES, "--conf", "spark.kubernetes.submission.waitAppCompletion=false",
            args=["--topic", "orders", "--starting-offsets", "latest", "--trigger-seconds", "2",
                  "--max-messages-per-trigger", "500",
                  "--output", "/data/stream", "--checkpoint", "/data/checkpoints/stream"],
        )  # fmt: skip
        assert res.returncode == 0, res.stderr[-3000:]

        def logs() -> str:
            return node.pod_log(group.ns, f"{app}-driver")

        def executors() -> list[dict[str, Any]]:
            driver = node.json("-n", group.ns, "get", "pod", f"{app}-driver")
            selector = f"spark-role=executor,spark-app-selector={driver['metadata']['labels']['spark-app-selector']}"
            return list(node.json("-n", group.ns, "get", "pods", "-l", selector)["items"])

        # The query has fixed its starting offsets (the topic's end) once it reports its first batch or idles.
        node.wait_for(
            "the query started", lambda: any(m in logs() for m in ('"batchId" : 0', "waiting for new data")),
            timeout=600, interval=2,
        )  # fmt: skip
        # What the topic holds before the producer: its count after, minus this, is what the stream must write once
        # (a send that timed out but was stored, then retried, is in the topic twice: a duplicate of the producer's,
        # not of Spark's).
        stored_before = group.consume_all("consume-before-stream")["count"]
        group.produce(producer, count, "--rate", "300", wait=False)
        node.wait_for("the query's second micro-batch", lambda: '"batchId" : 1' in logs(), timeout=600, interval=1)
        running = [p for p in executors() if (p.get("status") or {}).get("phase") == "Running"]
        assert running, executors()
        victim = running[0]["metadata"]["name"]
        node.kubectl("-n", group.ns, "delete", "pod", victim, "--wait=false")
        produced = group.tool_result(producer)
        assert produced["acknowledged"] == count, produced
        node.wait_for(
            "another executor registered",
            lambda: len(re.findall(r"Registered executor .* with ID", logs())) >= 3,
            timeout=600,
            interval=2,
        )
        # Caught up: Spark says the query is idle (every 10 s while the source has nothing new) after the producer
        # finished and the replacement executor registered.
        mark = len(logs())
        node.wait_for(
            "the query idle after the last messages",
            lambda: "has been idle and waiting for new data" in logs()[mark:],
            timeout=600,
            interval=2,
        )
        batches = max(int(b) for b in re.findall(r'"batchId" : (\d+)', logs()))
        print(f"streaming query: {batches + 1} micro-batches, executor {victim} deleted after batch 1")
    finally:
        node.kubectl("-n", group.ns, "delete", "pod", f"{app}-driver", "--wait=true", "--timeout=120s", check=False)
    stored = group.consume_all("consume-after-stream")["count"] - stored_before
    try:
        driver, report = _run_to_report(group, "orders-stream-report", "stream")
        selector = f"spark-role=executor,spark-app-selector={driver['metadata']['labels']['spark-app-selector']}"
        placed = {
            p["metadata"]["name"]: p["spec"]["nodeName"]
            for p in node.json("-n", group.ns, "get", "pods", "-l", selector)["items"]
        }
        print(f"spark-submit cluster mode: driver on {driver['spec']['nodeName']}, executors {placed}")
        assert len(placed) == 2 and len(set(placed.values())) == 2, placed  # the executor template's spread
    finally:
        node.kubectl("-n", group.ns, "delete", "pod", "orders-stream-report-driver", "--wait=false", check=False)
    keys = sorted(f"{producer}-{seq}" for seq in range(count))
    expected = {"rows": str(stored), "distinct-keys": str(count),
                "keys-sha256": hashlib.sha256("\n".join(keys).encode()).hexdigest()}  # fmt: skip
    print(f"streaming query output: {report['rows']} rows; the topic got {stored} messages for {count} keys")
    assert report == expected, (report, stored)  # each stored message once: none twice, none missing


SPARK_SETUP = """
apiVersion: v1
kind: ServiceAccount
metadata: {{name: spark, namespace: {ns}}}
---
# The driver creates, watches and deletes its executor pods, their Service and ConfigMap.
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: spark-edit, namespace: {ns}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}}
subjects: [{{kind: ServiceAccount, name: spark, namespace: {ns}}}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: rocketmq-consumer-data, namespace: {ns}}}
spec:
  accessModes: [ReadWriteMany]
  resources: {{requests: {{storage: 1Gi}}}}
"""
