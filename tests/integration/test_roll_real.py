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
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from real_parts import IN_CI, missing
from rocketmq_operator.bench.upgrade import run_bench
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.tools.consume import consume
from rocketmq_operator.tools.produce import SteadyProducer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"
GROUP = "broker-a"
FROM_VERSION = "5.4.0"
TO_VERSION = "5.5.0"


def _require_from_version() -> None:
    from rocketmq_operator.platforms.local import distribution

    if distribution.is_complete(distribution.dist_dir(FROM_VERSION), FROM_VERSION):
        return
    if not IN_CI:
        missing(f"RocketMQ {FROM_VERSION} is not built (python -c \"...ensure_distribution('{FROM_VERSION}')\")")
    distribution.ensure_distribution(FROM_VERSION)


def _manifest(path: Path, version: str, broker_config: dict[str, str], quorum: dict[str, int] | None = None) -> Path:
    docs = [d for d in yaml.safe_load_all(QUICKSTART.read_text(encoding="utf-8")) if d]
    for doc in docs:
        if doc["kind"] == "BrokerGroup":
            doc["spec"]["version"] = version
            doc["spec"]["brokerConfig"] = dict(broker_config)
            if quorum:
                doc["spec"]["quorum"].update(quorum)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return path


def _rollout(cluster: Any, doc: dict[str, Any] | None = None) -> dict[str, Any]:
    return dict(cluster.group(GROUP, doc).get("rollout") or {})


def _pids(cluster: Any) -> dict[str, int | None]:
    return {p["name"]: p["pid"] for p in cluster.status()["processes"] if p["group"] == GROUP}


def _broker_configs(cluster: Any, key: str) -> dict[str, str | None]:
    addresses = [r["address"] for r in cluster.group(GROUP)["replicas"]]

    async def read() -> dict[str, str | None]:
        async with RemotingClient([], connect_timeout=2.0, request_timeout=5.0) as client:
            return {a: (await client.get_broker_config(a)).get(key) for a in addresses}

    return asyncio.run(read())


def _complete(cluster: Any, started_not: str | None = None) -> Any:
    def done(d: dict[str, Any]) -> bool:
        r = _rollout(cluster, d)
        return r.get("phase") == "Complete" and (started_not is None or r.get("started") != started_not)

    return done


def _loss_report(doc: dict[str, Any], state_dir: Path) -> str:
    """The bench's figures and the supervisor's failover, switchover and fencing lines, in full (a dict in an
    assertion message is cut short)."""
    log = (state_dir / "supervisor.log").read_text(encoding="utf-8", errors="replace").splitlines()
    marks = ("switchover", "failover", "fenc", "elect", "restart", "deposed", "permission")
    lines = [line for line in log if any(m in line.lower() for m in marks)]
    return json.dumps(doc, indent=1, default=str) + "\nsupervisor.log:\n" + "\n".join(lines[-80:])


def test_rolling_changes_on_real_brokers(local_platform: Any, tmp_path: Path) -> None:
    _require_from_version()
    old = _manifest(tmp_path / "v540.yaml", FROM_VERSION, {})
    with local_platform.up(old, name="roll") as cluster:
        # 1. Version upgrade under load (the bench finds the cluster up and keeps it).
        doc = asyncio.run(run_bench([str(old)], cluster.state_dir, TO_VERSION, 200.0, True))
        assert doc["phase"] == "Complete", doc
        assert doc["lost"] == 0, _loss_report(doc, cluster.state_dir)
        # One planned switchover; a failover by the policy mid-roll (a loaded machine) can hand the master to a
        # replica not rolled yet, which then takes another. The invariant is the next line's.
        assert doc["replicas_restarted"] == 3 and doc["switchovers"] >= 1, doc
        assert doc["master_restarted_last"] and doc["restarted_while_master"] == 0, doc
        versions = {r["name"]: r["version"] for r in cluster.group(GROUP)["replicas"]}
        assert set(versions.values()) == {"V5_5_0"}, versions

        # 2. A hot key: applied everywhere and read back, nothing restarted.
        pids = _pids(cluster)
        hot = _manifest(tmp_path / "hot.yaml", TO_VERSION, {"fileReservedTime": "48"})
        res = cluster.cli("apply", "-f", str(hot))
        assert "hot: fileReservedTime=48 (no restart)" in res.stdout, res.stdout
        assert res.stdout.count("applied and read back") == 3, res.stdout
        assert set(_broker_configs(cluster, "fileReservedTime").values()) == {"48"}
        assert _rollout(cluster)["phase"] == "Complete"
        assert _pids(cluster) == pids

        # 3. Refused: restarting any replica would leave 2 < minInSyncReplicas 3 in the SyncStateSet.
        strict = _manifest(
            tmp_path / "strict.yaml",
            TO_VERSION,
            {"fileReservedTime": "48", "sendMessageThreadPoolNums": "8"},
            quorum={"inSyncReplicas": 3, "minInSyncReplicas": 3},
        )
        log_size = len((cluster.state_dir / "supervisor.log").read_text(encoding="utf-8"))
        res = cluster.cli("apply", "-f", str(strict))
        assert "rolling restart of 3 replicas" in res.stdout, res.stdout
        doc = cluster.wait_for("RolloutBlocked", lambda d: _rollout(cluster, d).get("phase") == "Blocked")
        blocked = next(c for c in cluster.group(GROUP, doc)["conditions"] if c["type"] == "RolloutBlocked")
        assert blocked["reason"] == "BelowMinInSyncReplicas"
        assert "replica broker-a-" in blocked["message"] and "minInSyncReplicas 3" in blocked["message"]
        assert "fix: lower spec.quorum.minInSyncReplicas" in blocked["message"]
        # No in-sync replica was restarted (one that does not answer may be: that cannot shrink the set).
        log = (cluster.state_dir / "supervisor.log").read_text(encoding="utf-8")[log_size:]
        assert "restarting in-sync slave" not in log and "restarting master" not in log, log

        # 4. Back to minInSyncReplicas 2: the restart-only key rolls; the supervisor dies mid-roll and resumes.
        new = _manifest(
            tmp_path / "restart.yaml", TO_VERSION, {"fileReservedTime": "48", "sendMessageThreadPoolNums": "8"}
        )
        cluster.cli("apply", "-f", str(new))
        doc = cluster.wait_for("the first restart", lambda d: int(_rollout(cluster, d).get("restarts") or 0) >= 1)
        started = _rollout(cluster, doc)["started"]
        status = cluster.status()
        controller_pid = next(p["pid"] for p in status["processes"] if p["group"] != GROUP)
        os.kill(int(status["supervisor"]["pid"]), signal.SIGKILL)
        cluster.cli("up", "-f", str(new), timeout=300)
        after = cluster.status()
        # Adopted, not restarted: the controller (never rolled) still runs the same process, on the same ports.
        assert next(p["pid"] for p in after["processes"] if p["group"] != GROUP) == controller_pid
        assert after["nameServers"] == status["nameServers"] and after["controllers"] == status["controllers"]
        doc = cluster.wait_for("the roll completes after the supervisor restart", _complete(cluster), timeout=600)
        rollout = _rollout(cluster, doc)
        assert rollout["started"] == started, rollout  # the same roll, resumed
        assert sorted(rollout["replicasDone"]) == ["broker-a-0", "broker-a-1", "broker-a-2"]
        cluster.wait_for(
            "every replica back in the SyncStateSet",
            lambda d: len(cluster.group(GROUP, d)["syncStateSet"]["members"]) == 3,
            timeout=120,
        )
        assert set(_broker_configs(cluster, "sendMessageThreadPoolNums").values()) == {"8"}


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
        got = asyncio.run(consume(self.name_servers, self.topic, idle_timeout=5.0, read_from="master"))
        return len(self.acked - set(got.keys))


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
    three = _manifest(tmp_path / "three.yaml", TO_VERSION, {})
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
                    and _rollout(cluster, d).get("phase") == "Complete"
                    and len(_rollout(cluster, d).get("replicasDone") or []) == 5
                ),
                timeout=600,
            )
            assert sum(1 for r in cluster.group(GROUP, doc)["replicas"] if r["role"] == "master") == 1
            assert set(_broker_configs(cluster, "totalReplicas").values()) == {"5"}

            # In, with the master on the highest ordinal: it is switched over first, never removed as master.
            _switchover_to(cluster, REMOVED[-1])
            res = cluster.cli("apply", "-f", str(three))
            assert f"scale in: remove {', '.join(REMOVED)}" in res.stdout, res.stdout
            doc = cluster.wait_for(
                "three replicas, all in the SyncStateSet, and the roll complete",
                lambda d: (
                    sorted(r["name"] for r in cluster.group(GROUP, d)["replicas"]) == KEPT
                    and len(cluster.group(GROUP, d)["syncStateSet"]["members"]) == 3
                    and _rollout(cluster, d).get("phase") == "Complete"
                ),
                timeout=600,
            )
            masters = [r["name"] for r in cluster.group(GROUP, doc)["replicas"] if r["role"] == "master"]
            assert len(masters) == 1 and masters[0] in KEPT, masters
            assert set(_broker_configs(cluster, "totalReplicas").values()) == {"3"}
            assert not [p for p in cluster.status()["processes"] if p["name"] in REMOVED]
            # No fence left behind by the switchover off the removed master: every kept broker takes writes.
            assert set(_broker_configs(cluster, "brokerPermission").values()) == {"6"}
        assert load.acked
        assert load.lost() == 0


REMOVED = ("broker-a-3", "broker-a-4")
KEPT = ["broker-a-0", "broker-a-1", "broker-a-2"]
