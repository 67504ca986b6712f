"""The remoting client against real RocketMQ processes on 127.0.0.1.

The shared ``controller-2-allack.yaml`` cluster, brought up by the ``local_platform`` fixture: one namesrv
hosting the DLedger controller and a two-replica controller-mode broker group (facts §1.5 (a), §6). Checks
route, cluster info, controller metadata, sync state data, replica info, broker admin calls, and a send
(PUT_OK) / pull round trip. Addresses come from ``local status --json``.

Needs JDK 17 and the pinned distribution: outside CI a missing one skips, under ``CI=true`` it fails.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from rocketmq_operator.remoting import (
    RemotingClient,
    RemotingException,
    SyncStateInfo,
)

pytestmark = pytest.mark.integration

MANIFEST = Path(__file__).resolve().parent / "manifests" / "controller-2-allack.yaml"
CONTROLLER_GROUP = "it-ctl"  # the ControllerGroup's name is the DLedger group
CLUSTER = "it-cluster"
GROUP = "it-bg"
STARTUP_TIMEOUT = 150.0

T = TypeVar("T")


@pytest.fixture(scope="module")
def cluster(local_platform: Any) -> Any:
    """The session's shared cluster (this test restores what it changes)."""
    return local_platform.shared(MANIFEST, name="controller-2-allack")


async def _eventually(what: str, probe: Callable[[], Awaitable[T]], check: Callable[[T], bool], cluster: Any) -> T:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    last: object = None
    while time.monotonic() < deadline:
        try:
            value = await probe()
            if check(value):
                return value
            last = value
        except RemotingException as exc:
            last = exc
        await asyncio.sleep(0.5)
    pytest.fail(f"{what}: not reached; last answer: {last!r}\n{cluster.log_tails()}")


async def test_real_processes_round_trip(cluster: Any) -> None:
    doc = cluster.status()
    namesrv, controller = doc["nameServers"][0], doc["controllers"][0]
    replicas = cluster.group(GROUP, doc)["replicas"]
    brokers = {r["address"] for r in replicas}
    status_master = next(r["address"] for r in replicas if r["role"] == "master")
    status_slave = next(r["address"] for r in replicas if r["role"] == "slave")
    async with RemotingClient([namesrv], request_timeout=5) as client:
        # Controller: the single DLedger node leads; controller metadata names it.
        leader = await _eventually(
            "controller leader",
            lambda: client.find_controller_leader([controller]),
            lambda m: m.is_leader,
            cluster,
        )
        assert leader.leader_address == controller
        assert dict(leader.peers) == {"n0": controller}
        assert leader.group == CONTROLLER_GROUP

        # Both replicas registered: one master (id 0 in namesrv), one slave, and both in sync.
        info = await _eventually(
            "two replicas in namesrv",
            client.get_cluster_info,
            lambda i: GROUP in i.broker_addr_table and len(i.broker_addr_table[GROUP].broker_addrs) == 2,
            cluster,
        )
        assert info.cluster_addr_table[CLUSTER] == (GROUP,)
        addrs = dict(info.broker_addr_table[GROUP].broker_addrs)
        master = addrs[0]
        assert set(addrs.values()) == brokers
        slave_id, slave = next((i, a) for i, a in addrs.items() if i != 0)
        assert (master, slave) == (status_master, status_slave)

        def two_in_sync(state: dict[str, SyncStateInfo]) -> bool:
            group = state.get(GROUP)
            return group is not None and len(group.in_sync_replicas) == 2

        state = await _eventually(
            "SyncStateSet of two",
            lambda: client.get_sync_state_data(leader.addr, [GROUP]),
            two_in_sync,
            cluster,
        )
        group = state[GROUP]
        assert group.master_address == master and group.master_epoch >= 1
        assert group.sync_state_set == {group.master_broker_id, slave_id}
        assert all(r.alive for r in group.in_sync_replicas) and group.not_in_sync_replicas == ()

        replica = await client.get_replica_info(leader.addr, GROUP)
        assert replica.master_address == master and replica.master_broker_id == group.master_broker_id
        assert replica.sync_state_set == group.sync_state_set
        assert replica.sync_state_set_epoch == group.sync_state_set_epoch

        # Broker admin.
        runtime = await client.get_runtime_info(master)
        assert "brokerVersionDesc" in runtime and "commitLogMaxOffset" in runtime
        config = await client.get_broker_config(master)
        assert config["brokerName"] == GROUP and config["enableControllerMode"] == "true"
        assert config["brokerRole"] == "SYNC_MASTER"
        ha = await client.get_ha_status(master)
        assert ha.master and len(ha.connections) == 1 and ha.connections[0].in_sync
        slave_ha = await client.get_ha_status(slave)
        assert not slave_ha.master and slave_ha.client is not None

        # Topic, route, send, pull.
        topic = "remoting-it-topic"
        await client.create_topic(master, topic, 2, 2)
        route = await _eventually(
            "topic route",
            lambda: client.get_route(topic),
            lambda r: any(q.broker_name == GROUP and q.write_queue_nums == 2 for q in r.queue_datas),
            cluster,
        )
        broker_data = route.broker(GROUP)
        assert broker_data is not None and broker_data.master_addr == master

        base = await client.get_max_offset(master, topic, 1)
        sent = await client.send(master, topic, b"hello from python", 1, keys=["k1", "k2"], tags="tA")
        assert sent.status == "PUT_OK" and sent.stored and sent.code == 0, sent
        assert sent.queue_id == 1 and sent.queue_offset == base
        assert sent.offset_msg_id is not None and len(sent.offset_msg_id) == 32

        pulled = await _eventually(
            "pull the message back",
            lambda: client.pull(master, topic, 1, base, 8, "remoting-it-cg"),
            lambda p: p.status == "FOUND",
            cluster,
        )
        message = pulled.messages[0]
        assert message.body == b"hello from python" and message.topic == topic
        assert message.msg_id == sent.msg_id and message.offset_msg_id == sent.offset_msg_id
        assert message.keys == ("k1", "k2") and message.tags == "tA"
        assert message.queue_id == 1 and message.queue_offset == base
        assert message.store_host == master
        assert pulled.next_begin_offset == base + 1

        assert await client.get_max_offset(master, topic, 1) == base + 1
        assert await client.get_min_offset(master, topic, 1) == 0
        nothing = await client.pull(master, topic, 1, base + 1, 8, "remoting-it-cg")
        assert nothing.status == "NO_NEW_MSG"

        assert await client.query_consumer_offset(master, "remoting-it-cg", topic, 1) is None
        await client.update_consumer_offset(master, "remoting-it-cg", topic, 1, base + 1)
        assert await client.query_consumer_offset(master, "remoting-it-cg", topic, 1) == base + 1

        # Facts §2.2/§2.3: in controller mode a SyncStateSet smaller than minInSyncReplicas rejects the put
        # before the append, on the wire as SYSTEM_ERROR (1) "in-sync replicas not enough".
        await client.update_broker_config(master, {"minInSyncReplicas": 3})
        try:
            refused = await client.send(master, topic, b"refused", 1)
        finally:
            await client.update_broker_config(master, {"minInSyncReplicas": 1})
        assert (refused.status, refused.stored, refused.code) == ("IN_SYNC_REPLICAS_NOT_ENOUGH", False, 1)
        assert refused.remark == "in-sync replicas not enough"
        assert await client.get_max_offset(master, topic, 1) == base + 1
        again = await client.send(master, topic, b"accepted", 1)
        assert again.status == "PUT_OK" and again.queue_offset == base + 1

        # A slave refuses writes (observed: SYSTEM_BUSY "[REJECTREQUEST]...", not SERVICE_NOT_AVAILABLE).
        to_slave = await client.send(slave, topic, b"to slave", 0)
        assert not to_slave.stored and to_slave.code in (2, 14), to_slave

        # Controller calls are served on the controller (DLedger peer) port only, not the namesrv port.
        with pytest.raises(RemotingException, match="REQUEST_CODE_NOT_SUPPORTED"):
            await client.get_controller_metadata(namesrv)
