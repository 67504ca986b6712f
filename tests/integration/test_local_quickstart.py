"""examples/quickstart.yaml on the local platform: up --wait, status, failover after SIGKILL of the master, down.

One namesrv hosting the DLedger controller and a 3-replica controller-mode group, as real java processes.
Default RocketMQ timings (controllerHeartBeatTimeoutMills etc. untouched). The measured times are printed
(`pytest -s`) and attached as test properties. One cluster start for everything (2 cores: it is the slow part).
The fixtures (`local_platform`, `LocalCluster`) are in tests/integration/conftest.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.lifecycle import our_pids

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"
GROUP = "broker-a"


def _pids_rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def _healthy(g: dict[str, Any]) -> bool:
    master = g.get("master") or {}
    sss = g.get("syncStateSet") or {}
    return (
        master.get("brokerId") is not None
        and len(sss.get("members") or []) == 3
        and all(r["alive"] and r["inSync"] for r in g["replicas"])
    )


def test_quickstart_failover(local_platform: Any, record_property: Any) -> None:
    with local_platform.up(QUICKSTART, name="quickstart") as cluster:
        _check_up(cluster, record_property)
        _check_idempotent_and_refusals(cluster)
        _check_failover(cluster, record_property)
        _check_down(cluster, record_property)


def _check_up(cluster: Any, record_property: Any) -> None:
    record_property("up_wait_seconds", round(cluster.up_seconds, 1))
    print(f"\nlocal up --wait: {cluster.up_seconds:.1f}s")
    doc = cluster.status()
    assert doc["supervisor"]["running"]
    assert len(doc["nameServers"]) == 1 and len(doc["controllers"]) == 1
    assert doc["nameServers"][0].startswith("127.0.0.1:") and doc["controllers"][0].startswith("127.0.0.1:")
    assert doc["nameServers"] != doc["controllers"]  # controller calls go to the DLedger peer port
    g = cluster.group(GROUP, doc)
    assert _healthy(g), g
    master = g["master"]
    assert master["replica"] in {f"{GROUP}-{i}" for i in range(3)}
    assert master["epoch"] >= 1 and master["address"].startswith("127.0.0.1:")
    assert sorted(g["syncStateSet"]["members"]) == sorted(r["brokerId"] for r in g["replicas"])
    roles = sorted(r["role"] for r in g["replicas"])
    assert roles == ["master", "slave", "slave"]
    assert all(isinstance(r["pid"], int) for r in g["replicas"])
    assert g["needAcks"] == 2 and g["writable"] is True
    conditions = {c["type"]: c["status"] for c in g["conditions"]}
    assert conditions["Ready"] == "True" and conditions["Available"] == "True"
    pids = [p["pid"] for p in doc["processes"] if p["pid"]] + [doc["supervisor"]["pid"]]
    rss_mib = _pids_rss_kib(pids) / 1024
    record_property("rss_mib", round(rss_mib))
    print(f"RSS of the quickstart (supervisor + {len(pids) - 1} java processes): {rss_mib:.0f} MiB")

    human = cluster.cli("status").stdout
    assert "GROUP" in human and "needAcks=2" in human and master["replica"] in human


def _check_idempotent_and_refusals(cluster: Any) -> None:
    again = cluster.cli("up", "-f", str(QUICKSTART))
    assert "already running" in again.stdout
    other = cluster.cli("up", "-f", str(ROOT / "examples" / "five-replicas.yaml"), check=False)
    assert other.returncode == 1 and "local down" in other.stderr
    unknown = cluster.cli("kill", "no-such-replica", check=False)
    assert unknown.returncode == 1 and f"{GROUP}-0" in unknown.stderr


def _check_failover(cluster: Any, record_property: Any) -> None:
    before = cluster.group(GROUP)
    old = before["master"]
    old_replica = old["replica"]
    old_pid = next(r["pid"] for r in before["replicas"] if r["name"] == old_replica)

    killed_at = time.monotonic()
    cluster.cli("kill", old_replica, "--signal", "KILL")

    def new_master(doc: dict[str, Any]) -> bool:
        m = cluster.group(GROUP, doc)["master"] or {}
        return m.get("brokerId") not in (None, old["brokerId"]) and (m.get("epoch") or 0) > old["epoch"]

    doc = cluster.wait_for("a new master elected by the controller", new_master, timeout=120)
    election_s = time.monotonic() - killed_at
    g = cluster.group(GROUP, doc)
    record_property("election_seconds", round(election_s, 2))
    print(f"SIGKILL of {old_replica} (id {old['brokerId']}) → new master {g['master']['replica']} "
          f"(id {g['master']['brokerId']}, epoch {g['master']['epoch']}) seen after {election_s:.2f}s")  # fmt: skip
    assert g["master"]["replica"] != old_replica

    def back_as_slave(doc: dict[str, Any]) -> bool:
        r = next(x for x in cluster.group(GROUP, doc)["replicas"] if x["name"] == old_replica)
        return bool(r["alive"] and r["role"] == "slave" and r["pid"] not in (None, old_pid))

    doc = cluster.wait_for("the old master back as a slave", back_as_slave, timeout=180)
    back_s = time.monotonic() - killed_at
    g = cluster.group(GROUP, doc)
    returned = next(r for r in g["replicas"] if r["name"] == old_replica)
    assert returned["restarts"] >= 1
    assert g["master"]["brokerId"] != old["brokerId"]
    assert any(h["fromBrokerId"] == old["brokerId"] and h["toBrokerId"] == g["master"]["brokerId"]
               for h in g["history"]), g["history"]  # fmt: skip
    record_property("old_master_back_as_slave_seconds", round(back_s, 1))
    print(f"{old_replica} back as slave (restarted by the supervisor) after {back_s:.1f}s")


def _check_down(cluster: Any, record_property: Any) -> None:
    """`local down` stops the supervisor and every java process; the data stays (the fixture purges later)."""
    layout = StateLayout(cluster.state_dir)
    assert our_pids(layout)
    began = time.monotonic()
    down = cluster.cli("down")
    record_property("down_seconds", round(time.monotonic() - began, 1))
    assert "data kept" in down.stdout
    assert our_pids(layout) == []
    assert (cluster.state_dir / "data" / f"{GROUP}-0" / "store").is_dir()
    stopped = cluster.cli("status", "--json", check=False)
    assert stopped.returncode == 3 and "local up -f FILE" in stopped.stderr, stopped
    doc = json.loads(stopped.stdout)
    assert doc["stopped"] and not doc["supervisor"]["running"]
    assert all(p["pid"] is None and not p["running"] for p in doc["processes"])
    assert all(g["phase"] == "Stopped" and not g["writable"] for g in doc["groups"])
