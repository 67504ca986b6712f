"""Rolling restarts on real brokers (local platform), one cluster through every kind of change:

1. version upgrade 5.4.0 → 5.5.0 under a steady producer (the bench): 0 lost, the master restarted last (after a
   switchover, never while master), one switchover, every broker reports 5.5.0;
2. a hot key (`fileReservedTime`): no process restarts, every broker reads it back;
3. a roll that would drop the SyncStateSet below minInSyncReplicas (3 of 3) is refused: `RolloutBlocked` names
   the replica and the rule, nothing is restarted;
4. a restart-only key (`sendMessageThreadPoolNums`) rolls; the supervisor is SIGKILLed mid-roll, `local up`
   brings it back, it adopts the processes still running, and the same roll (same `started`) completes; every
   broker reads the key back.

Outcomes only: figures (write pause, duration) are the bench's, in docs/benchmarks.md.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from rolls import (
    FROM_VERSION,
    GROUP,
    TO_VERSION,
    broker_configs,
    complete,
    loss_report,
    manifest,
    replica_pids,
    require_from_version,
    rollout_of,
)

from rocketmq_operator.bench.upgrade import run_bench

pytestmark = pytest.mark.integration


def test_rolling_changes_on_real_brokers(local_platform: Any, tmp_path: Path) -> None:
    require_from_version()
    old = manifest(tmp_path / "v540.yaml", FROM_VERSION, {})
    with local_platform.up(old, name="roll") as cluster:
        # 1. Version upgrade under load (the bench finds the cluster up and keeps it).
        doc = asyncio.run(run_bench([str(old)], cluster.state_dir, TO_VERSION, 200.0, True))
        assert doc["phase"] == "Complete", doc
        assert doc["lost"] == 0, loss_report(doc, cluster.state_dir)
        # One planned switchover; a failover by the policy mid-roll (a loaded machine) can hand the master to a
        # replica not rolled yet, which then takes another. The invariant is the next line's.
        assert doc["replicas_restarted"] == 3 and doc["switchovers"] >= 1, doc
        assert doc["master_restarted_last"] and doc["restarted_while_master"] == 0, doc
        versions = {r["name"]: r["version"] for r in cluster.group(GROUP)["replicas"]}
        assert set(versions.values()) == {"V5_5_0"}, versions

        # 2. A hot key: applied everywhere and read back, nothing restarted.
        pids = replica_pids(cluster)
        hot = manifest(tmp_path / "hot.yaml", TO_VERSION, {"fileReservedTime": "48"})
        res = cluster.cli("apply", "-f", str(hot))
        assert "hot: fileReservedTime=48 (no restart)" in res.stdout, res.stdout
        assert res.stdout.count("applied and read back") == 3, res.stdout
        assert set(broker_configs(cluster, "fileReservedTime").values()) == {"48"}
        assert rollout_of(cluster)["phase"] == "Complete"
        assert replica_pids(cluster) == pids

        # 3. Refused: restarting any replica would leave 2 < minInSyncReplicas 3 in the SyncStateSet.
        strict = manifest(
            tmp_path / "strict.yaml",
            TO_VERSION,
            {"fileReservedTime": "48", "sendMessageThreadPoolNums": "8"},
            quorum={"inSyncReplicas": 3, "minInSyncReplicas": 3},
        )
        log_size = len((cluster.state_dir / "supervisor.log").read_text(encoding="utf-8"))
        res = cluster.cli("apply", "-f", str(strict))
        assert "rolling restart of 3 replicas" in res.stdout, res.stdout
        doc = cluster.wait_for("RolloutBlocked", lambda d: rollout_of(cluster, d).get("phase") == "Blocked")
        blocked = next(c for c in cluster.group(GROUP, doc)["conditions"] if c["type"] == "RolloutBlocked")
        assert blocked["reason"] == "BelowMinInSyncReplicas"
        assert "replica broker-a-" in blocked["message"] and "minInSyncReplicas 3" in blocked["message"]
        assert "fix: lower spec.quorum.minInSyncReplicas" in blocked["message"]
        # No in-sync replica was restarted (one that does not answer may be: that cannot shrink the set).
        log = (cluster.state_dir / "supervisor.log").read_text(encoding="utf-8")[log_size:]
        assert "restarting in-sync slave" not in log and "restarting master" not in log, log

        # 4. Back to minInSyncReplicas 2: the restart-only key rolls; the supervisor dies mid-roll and resumes.
        new = manifest(
            tmp_path / "restart.yaml", TO_VERSION, {"fileReservedTime": "48", "sendMessageThreadPoolNums": "8"}
        )
        cluster.cli("apply", "-f", str(new))
        doc = cluster.wait_for("the first restart", lambda d: int(rollout_of(cluster, d).get("restarts") or 0) >= 1)
        started = rollout_of(cluster, doc)["started"]
        status = cluster.status()
        controller_pid = next(p["pid"] for p in status["processes"] if p["group"] != GROUP)
        os.kill(int(status["supervisor"]["pid"]), signal.SIGKILL)
        cluster.cli("up", "-f", str(new), timeout=300)
        after = cluster.status()
        # Adopted, not restarted: the controller (never rolled) still runs the same process, on the same ports.
        assert next(p["pid"] for p in after["processes"] if p["group"] != GROUP) == controller_pid
        assert after["nameServers"] == status["nameServers"] and after["controllers"] == status["controllers"]
        doc = cluster.wait_for("the roll completes after the supervisor restart", complete(cluster), timeout=600)
        rollout = rollout_of(cluster, doc)
        assert rollout["started"] == started, rollout  # the same roll, resumed
        assert sorted(rollout["replicasDone"]) == ["broker-a-0", "broker-a-1", "broker-a-2"]
        cluster.wait_for(
            "every replica back in the SyncStateSet",
            lambda d: len(cluster.group(GROUP, d)["syncStateSet"]["members"]) == 3,
            timeout=120,
        )
        assert set(broker_configs(cluster, "sendMessageThreadPoolNums").values()) == {"8"}
