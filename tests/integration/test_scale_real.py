"""Scaling a running group on real brokers (local platform), under a steady producer: 3 -> 5 -> 3 replicas.

Split from test_roll_real.py so the two longest integration tests run on separate pytest workers.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rolls import GROUP, TO_VERSION, broker_configs, manifest, rollout_of

from rocketmq_operator.tools.consume import consume
from rocketmq_operator.tools.noloss import missing_acknowledged
from rocketmq_operator.tools.produce import SteadyProducer

pytestmark = pytest.mark.integration

REMOVED = ("broker-a-3", "broker-a-4")
KEPT = ["broker-a-0", "broker-a-1", "broker-a-2"]


class Load:
    """A steady producer (3 s timeout, 2 retries) in a thread of its own while the block runs; then `lost`."""

    def __init__(self, name_servers: list[str], rate: float = 100.0) -> None:
        self.name_servers = name_servers
        self.rate = rate
        self.topic = f"roll-scale-{int(time.time())}"
        self.stop = threading.Event()
        self.acked: set[str] = set()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        producer = SteadyProducer(self.topic, self.rate, namesrv=self.name_servers, size=256, timeout=3.0, retries=2)
        await producer.start()
        while not self.stop.is_set():
            await asyncio.sleep(0.2)
        await producer.stop()
        self.acked = {r.key for r in producer.records if r.ok}

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=60)

    def lost(self) -> int:
        got = asyncio.run(consume(self.name_servers, self.topic, idle_timeout=5.0, read_from="master", to_end=True))
        return len(missing_acknowledged(self.acked, got.keys))


def _master(cluster: Any, doc: dict[str, Any]) -> str:
    return next(r["name"] for r in cluster.group(GROUP, doc)["replicas"] if r["role"] == "master")


def _switchover_to(cluster: Any, replica: str) -> None:
    broker_id = next(r["brokerId"] for r in cluster.group(GROUP)["replicas"] if r["name"] == replica)
    argv = [sys.executable, "-m", "rocketmq_operator.cli", "switchover", GROUP, "--to", str(broker_id)]
    res = subprocess.run([*argv, "--state-dir", str(cluster.state_dir)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_scale_three_five_three_under_load(local_platform: Any, tmp_path: Path) -> None:
    """Out: new replicas join as slaves and enter the SyncStateSet, the others roll for totalReplicas=5. In, with
    the master on a removed ordinal: a switchover to a kept replica first, the removed replicas stopped one at a
    time and forgotten by the controller, the kept ones rolled for totalReplicas=3. 0 lost throughout, as the
    producer's acknowledgements and a consumer's read-back see it."""
    three = manifest(tmp_path / "three.yaml", TO_VERSION, {})
    five = tmp_path / "five.yaml"
    five.write_text(three.read_text(encoding="utf-8").replace("replicas: 3", "replicas: 5"), encoding="utf-8")
    with local_platform.up(three, name="scale") as cluster:
        with Load(cluster.status()["nameServers"]) as load:
            res = cluster.cli("apply", "-f", str(five))
            assert "scale out: start broker-a-3, broker-a-4" in res.stdout, res.stdout
            doc = cluster.wait_for(
                "five replicas in the SyncStateSet and the roll complete",
                lambda d: (
                    len(cluster.group(GROUP, d)["syncStateSet"]["members"]) == 5
                    and rollout_of(cluster, d).get("phase") == "Complete"
                    and len(rollout_of(cluster, d).get("replicasDone") or []) == 5
                ),
                timeout=600,
            )
            assert sum(1 for r in cluster.group(GROUP, doc)["replicas"] if r["role"] == "master") == 1
            assert set(broker_configs(cluster, "totalReplicas").values()) == {"5"}

            # In, with the master on the highest ordinal: it is switched over first, never removed as master. The
            # roll to totalReplicas=5 may itself have left the master there (its master-last switchover picks the
            # best slave); a switchover to the master is refused (AlreadyMaster), so ask only when it is elsewhere.
            if _master(cluster, doc) != REMOVED[-1]:
                _switchover_to(cluster, REMOVED[-1])
            res = cluster.cli("apply", "-f", str(three))
            assert f"scale in: remove {', '.join(REMOVED)}" in res.stdout, res.stdout
            doc = cluster.wait_for(
                "three replicas, all in the SyncStateSet, and the roll complete",
                lambda d: (
                    sorted(r["name"] for r in cluster.group(GROUP, d)["replicas"]) == KEPT
                    and len(cluster.group(GROUP, d)["syncStateSet"]["members"]) == 3
                    and rollout_of(cluster, d).get("phase") == "Complete"
                ),
                timeout=600,
            )
            masters = [r["name"] for r in cluster.group(GROUP, doc)["replicas"] if r["role"] == "master"]
            assert len(masters) == 1 and masters[0] in KEPT, masters
            assert set(broker_configs(cluster, "totalReplicas").values()) == {"3"}
            assert not [p for p in cluster.status()["processes"] if p["name"] in REMOVED]
            # No fence left behind by the switchover off the removed master: every kept broker takes writes.
            assert set(broker_configs(cluster, "brokerPermission").values()) == {"6"}
        assert load.acked
        assert load.lost() == 0
