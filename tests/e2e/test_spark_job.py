"""The Spark example as a user runs it on the cluster: examples/spark/consumer-job.yaml, a Job whose pod runs
consumer_job.py in Spark local mode, finds the name servers in the operator's connection ConfigMap and reads the
quickstart's topic into Parquet. Its row count must equal what a plain consumer reads from the masters."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from e2e.e2e_node import wait_for_image

# For a run on two pytest workers sharing one node (`-n 2 --dist loadgroup`): the quickstart's tests on one worker,
# in file order, since they share its group; the other examples each in a namespace of their own. `make test` runs
# the e2e tests in one process (docs/testing.md, stage 2).
pytestmark = pytest.mark.xdist_group("quickstart")

ROOT = Path(__file__).resolve().parents[2]


def test_spark_job_reads_every_message_of_the_topic(quickstart: Any) -> None:
    group = quickstart
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
