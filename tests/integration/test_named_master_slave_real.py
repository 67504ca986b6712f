"""A master that the controller names but that runs as a slave, on real brokers (local platform).

Seen on Kubernetes (docs/chaos.md, "Controllers that reused an epoch"): three DLedger controllers, all killed at
once, lost their last election (of a broker whose pod was then deleted) and elected another broker with the same
master epoch. That broker had seen the lost election, so it ignored its own (RocketMQ's broker takes a role change
only for a higher epoch) and stayed a slave of an address that was gone: no master, no write, for good.

Here the broker is put in that state as RocketMQ itself would: NOTIFY_BROKER_ROLE_CHANGED (the controller's own
request, which brokers take unsigned) sent to the master, naming another broker at an address nobody serves as
master of a higher epoch. The controller still names the master; the master now answers as a slave of nobody and
refuses sends. The replication policy restarts it after its grace (`core.failover.plan_named_master_as_slave`);
it registers again and takes the controller's view (or the controller elects another member meanwhile), and the
group serves sends again with every replica in sync.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.remoting.codes import RequestCode
from rocketmq_operator.tools.produce import produce

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"
GROUP = "broker-a"
NOBODY = "127.0.0.1:9"  # the discard port: nothing there answers as a broker


async def _forge_demotion(master: str, other_id: int, epoch: int, set_epoch: int) -> None:
    """The controller's role-change notification, naming broker ``other_id`` at NOBODY master of ``epoch``."""
    header = {
        "masterAddress": NOBODY,
        "masterEpoch": str(epoch),
        "syncStateSetEpoch": str(set_epoch),
        "masterBrokerId": str(other_id),
    }
    body = json.dumps({"syncStateSet": [other_id], "syncStateSetEpoch": set_epoch}).encode()
    async with RemotingClient(connect_timeout=2.0, request_timeout=5.0) as client:
        await client._call(master, RequestCode.NOTIFY_BROKER_ROLE_CHANGED, header, body, timeout=5.0)


async def _answers_as_master(address: str) -> bool | None:
    async with RemotingClient(connect_timeout=1.0, request_timeout=3.0) as client:
        try:
            return (await client.get_ha_status(address, timeout=3.0)).master
        except (RemotingException, OSError):
            return None


def test_a_named_master_left_a_slave_is_restarted_and_serves_again(local_platform: Any) -> None:
    with local_platform.up(QUICKSTART, name="named-slave") as cluster:

        def healthy(doc: dict[str, Any]) -> bool:
            g = cluster.group(GROUP, doc)
            return (
                len((g.get("syncStateSet") or {}).get("members") or []) == 3
                and bool(g.get("writable"))
                and all(r["alive"] for r in g["replicas"])
            )

        g = cluster.group(GROUP, cluster.wait_for("a healthy group", healthy, timeout=150))
        master = g["master"]
        other = next(r["brokerId"] for r in g["replicas"] if r["brokerId"] != master["brokerId"])
        set_epoch = int((g.get("syncStateSet") or {}).get("epoch") or 1)
        asyncio.run(_forge_demotion(master["address"], other, int(master["epoch"]) + 10, set_epoch + 10))

        # It answers as a slave at once (its own answer, not the status, which names the controller's master).
        assert asyncio.run(_answers_as_master(master["address"])) is False
        supervisor = cluster.state_dir / "supervisor.log"

        def serving(d: dict[str, Any]) -> bool:
            named = (cluster.group(GROUP, d).get("master") or {}).get("address")
            return healthy(d) and bool(named) and asyncio.run(_answers_as_master(str(named))) is True

        # Restarted, it takes the controller's view; or, if its restart outlasts the controller's heartbeat timeout,
        # the controller elects another member (whose epoch is the controller's next): either way a master serves.
        doc = cluster.wait_for("the named master restarted and a master serving again", serving, timeout=240)
        log = supervisor.read_text(encoding="utf-8", errors="replace")
        assert f"restart {master['replica']}: the controller names broker {master['brokerId']} master" in log, (
            cluster.log_tails()
        )
        print(f"\nserving again: master {cluster.group(GROUP, doc)['master']}")
        report = asyncio.run(produce(list(doc["nameServers"]), "orders", 20))
        assert report.acknowledged == 20, report.failures
