"""RemotingClient calls against canned fake-server answers shaped like RocketMQ 5.x's."""

from __future__ import annotations

import json
import socket
from collections.abc import Awaitable, Callable

import pytest
from remoting_fakes import FakeServer, Handler, serve_codes

from rocketmq_operator.remoting import (
    Message,
    NoControllerLeader,
    RemotingClient,
    RemotingCommand,
    RemotingConnectionError,
    RemotingError,
    ResponseFormatError,
    encode_message,
    format_properties_text,
    is_name_server_not_ready,
    parse_properties_text,
)
from rocketmq_operator.remoting.codes import RequestCode as R

Start = Callable[[Handler], Awaitable[FakeServer]]
Reply = tuple[int, dict[str, str], bytes, str | None]


def ok(ext: dict[str, str] | None = None, body: bytes | str = b"", remark: str | None = None) -> Reply:
    return 0, ext or {}, body.encode() if isinstance(body, str) else body, remark


def dead_addr() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


ROUTE = {
    "orderTopicConf": None,
    "queueDatas": [{"brokerName": "bg-a", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6, "topicSysFlag": 0}],
    "brokerDatas": [
        {
            "cluster": "c1",
            "brokerName": "bg-a",
            "brokerAddrs": {"0": "127.0.0.1:10911", "2": "127.0.0.1:10921"},
            "enableActingMaster": False,
        }
    ],
    "filterServerTable": {},
}

CLUSTER_INFO = (
    '{"brokerAddrTable":{"bg-a":{"brokerAddrs":{0:"127.0.0.1:10911",2:"127.0.0.1:10921"},'
    '"brokerName":"bg-a","cluster":"c1","enableActingMaster":false}},'
    '"clusterAddrTable":{"c1":["bg-b","bg-a"]}}'
)

SYNC_STATE = {
    "replicasInfoTable": {
        "bg-a": {
            "masterBrokerId": 1,
            "masterAddress": "127.0.0.1:10911",
            "masterEpoch": 3,
            "syncStateSetEpoch": 5,
            "inSyncReplicas": [
                {"brokerName": "bg-a", "brokerId": 1, "brokerAddress": "127.0.0.1:10911", "alive": True},
                {"brokerName": "bg-a", "brokerId": 2, "brokerAddress": "127.0.0.1:10921", "alive": True},
            ],
            "notInSyncReplicas": [
                {"brokerName": "bg-a", "brokerId": 3, "brokerAddress": "127.0.0.1:10931", "alive": False}
            ],
        }
    }
}


async def test_namesrv_route_and_cluster_info_with_failover(fake_server: Start) -> None:
    seen: list[RemotingCommand] = []
    server = await fake_server(
        serve_codes(
            {
                R.GET_ROUTEINFO_BY_TOPIC: lambda r: (
                    ok(body=json.dumps(ROUTE))
                    if r.ext_fields["topic"] == "t1"
                    else (17, {}, b"", "No topic route info in name server for the topic: x")
                ),
                R.GET_BROKER_CLUSTER_INFO: lambda r: ok(body=CLUSTER_INFO),
            },
            seen,
        )
    )
    async with RemotingClient([dead_addr(), server.addr], connect_timeout=1) as client:
        route = await client.get_route("t1")
        assert route.queue_datas[0].write_queue_nums == 4 and route.queue_datas[0].writable
        broker = route.broker("bg-a")
        assert broker is not None and broker.master_addr == "127.0.0.1:10911"
        assert dict(broker.broker_addrs) == {0: "127.0.0.1:10911", 2: "127.0.0.1:10921"}
        assert seen[0].version >= 401 and seen[0].ext_fields["acceptStandardJsonOnly"] == "true"

        info = await client.get_cluster_info()
        assert info.cluster_addr_table == {"c1": ("bg-a", "bg-b")}
        assert dict(info.broker_addr_table["bg-a"].broker_addrs) == {
            0: "127.0.0.1:10911",
            2: "127.0.0.1:10921",
        }

        with pytest.raises(RemotingError) as err:
            await client.get_route("x")
        assert err.value.code == 17 and err.value.code_name == "TOPIC_NOT_EXIST"
        assert "No topic route info" in str(err.value)


# What a RocketMQ 5.5.0 name server writes (`GetBrokerMemberGroupResponseBody.encode()`, fastjson2's defaults: fields
# by name, no null one, the Map<Long, String> keys bare; seen in tests/integration/test_failover_real.py): the master
# at id 0, each slave at the id its controller gave it.
MEMBER_GROUP = (
    '{"brokerMemberGroup":{"brokerAddrs":{0:"127.0.0.1:10911",2:"127.0.0.1:10921",3:"127.0.0.1:10931"},'
    '"brokerName":"bg-a","cluster":"c1"}}'
)
# A group the name server has no broker of: it still answers SUCCESS, with the names asked and no address.
NO_MEMBERS = '{"brokerMemberGroup":{"brokerAddrs":{},"brokerName":"bg-gone","cluster":"c1"}}'


async def test_namesrv_broker_member_group(fake_server: Start) -> None:
    seen: list[RemotingCommand] = []

    def member_group(r: RemotingCommand) -> Reply:
        if r.ext_fields["brokerName"] == "bg-a":
            return ok(body=MEMBER_GROUP)
        if r.ext_fields["brokerName"] == "bg-bad":
            return ok(body='{"brokerMemberGroup":{"brokerAddrs":{"master":"127.0.0.1:10911"}}}')
        return ok(body=NO_MEMBERS)

    server = await fake_server(serve_codes({R.GET_BROKER_MEMBER_GROUP: member_group}, seen))
    async with RemotingClient([dead_addr(), server.addr], connect_timeout=1) as client:
        group = await client.get_broker_member_group("c1", "bg-a")
        assert (group.cluster, group.broker_name, group.master_addr) == ("c1", "bg-a", "127.0.0.1:10911")
        assert dict(group.broker_addrs) == {0: "127.0.0.1:10911", 2: "127.0.0.1:10921", 3: "127.0.0.1:10931"}
        # Both header fields are sent, as a broker sends them (the header declares both @CFNotNull).
        assert seen[0].code == 901 and seen[0].ext_fields == {"clusterName": "c1", "brokerName": "bg-a"}

        gone = await client.get_broker_member_group("c1", "bg-gone", namesrv=server.addr)
        assert gone.broker_addrs == {} and gone.master_addr is None and gone.broker_name == "bg-gone"

        with pytest.raises(ResponseFormatError, match=r"brokerMemberGroup\.brokerAddrs key"):
            await client.get_broker_member_group("c1", "bg-bad", namesrv=server.addr)


async def test_namesrv_not_ready_asks_the_next_one(fake_server: Start) -> None:
    """A name server in its first waitSecondsForService answers SYSTEM_ERROR "name server not ready": the client
    asks the next one instead of failing the lookup; when every one is not ready, the error says so."""
    not_ready: Reply = (1, {}, b"", "name server not ready")
    starting = await fake_server(serve_codes({R.GET_ROUTEINFO_BY_TOPIC: lambda r: not_ready}, []))
    serving = await fake_server(serve_codes({R.GET_ROUTEINFO_BY_TOPIC: lambda r: ok(body=json.dumps(ROUTE))}, []))
    async with RemotingClient([starting.addr, serving.addr], connect_timeout=1) as client:
        route = await client.get_route("t1")
        broker = route.broker("bg-a")
        assert broker is not None and broker.master_addr == "127.0.0.1:10911"
        assert not await client.serves_routes(starting.addr) and await client.serves_routes(serving.addr)
        assert not await client.name_servers_serve_routes()
    async with RemotingClient([serving.addr, dead_addr()], connect_timeout=1) as client:
        assert await client.serves_routes(serving.addr) and not await client.serves_routes(dead_addr())
    async with RemotingClient([starting.addr], connect_timeout=1) as client:
        with pytest.raises(RemotingError) as err:
            await client.get_route("t1")
        assert is_name_server_not_ready(err.value)
    other = RemotingError(1, "in-sync replicas not enough")
    assert not is_name_server_not_ready(other) and not is_name_server_not_ready(RemotingError(17, "x"))


async def test_no_namesrv_configured() -> None:
    async with RemotingClient() as client:
        with pytest.raises(RemotingConnectionError, match="no name server"):
            await client.get_cluster_info()


def metadata(is_leader: bool, leader: str) -> Callable[[RemotingCommand], Reply]:
    return lambda r: ok(
        {
            "group": "g1",
            "controllerLeaderId": "n0",
            "controllerLeaderAddress": leader,
            "isLeader": "true" if is_leader else "false",
            "peers": "n0:127.0.0.1:9878;n1:127.0.0.1:9879;",
        }
    )


async def test_controller_calls(fake_server: Start) -> None:
    seen: list[RemotingCommand] = []
    elect_body = (
        '{"brokerMemberGroup":{"brokerAddrs":{1:"127.0.0.1:10911",2:"127.0.0.1:10921"},'
        '"brokerName":"bg-a","cluster":"c1"},"syncStateSet":[2]}'
    )
    leader = await fake_server(serve_codes({}))  # handler set below, once its address is known
    leader.handler = serve_codes(
        {
            R.CONTROLLER_GET_METADATA_INFO: metadata(True, leader.addr),
            R.CONTROLLER_GET_SYNC_STATE_DATA: lambda r: ok(body=json.dumps(SYNC_STATE)),
            R.CONTROLLER_GET_REPLICA_INFO: lambda r: ok(
                {"masterBrokerId": "1", "masterAddress": "127.0.0.1:10911", "masterEpoch": "3"},
                '{"syncStateSet":[1,2],"syncStateSetEpoch":5}',
            ),
            R.CONTROLLER_ELECT_MASTER: lambda r: (
                ok(
                    {
                        "masterBrokerId": "2",
                        "masterAddress": "127.0.0.1:10921",
                        "masterEpoch": "4",
                        "syncStateSetEpoch": "6",
                    },
                    elect_body,
                )
                if r.ext_fields["brokerId"] == "2"
                else (2011, {"masterBrokerId": "1"}, b"", "The old master 1 is still alive")
            ),
        },
        seen,
    )
    follower = await fake_server(
        serve_codes(
            {
                R.CONTROLLER_GET_METADATA_INFO: metadata(False, leader.addr),
                R.CONTROLLER_GET_SYNC_STATE_DATA: lambda r: (2007, {}, b"", "The controller is not leader"),
            }
        )
    )
    async with RemotingClient() as client:
        meta = await client.get_controller_metadata(follower.addr)
        assert not meta.is_leader and meta.leader_address == leader.addr
        assert dict(meta.peers) == {"n0": "127.0.0.1:9878", "n1": "127.0.0.1:9879"}

        found = await client.find_controller_leader([dead_addr(), follower.addr, leader.addr])
        assert found.is_leader and found.addr == leader.addr
        found = await client.find_controller_leader(f"{dead_addr()};{follower.addr}")
        assert found.addr == follower.addr and found.leader_address == leader.addr and not found.is_leader
        with pytest.raises(NoControllerLeader, match="no controller leader found"):
            await client.find_controller_leader([dead_addr()])

        state = await client.get_sync_state_data(leader.addr, ["bg-a", "bg-b"])
        request = next(r for r in seen if r.code == R.CONTROLLER_GET_SYNC_STATE_DATA)
        assert json.loads(request.body) == ["bg-a", "bg-b"]
        a = state["bg-a"]
        assert (a.master_broker_id, a.master_address, a.master_epoch, a.sync_state_set_epoch) == (
            1,
            "127.0.0.1:10911",
            3,
            5,
        )
        assert a.sync_state_set == {1, 2}
        assert a.not_in_sync_replicas[0].broker_id == 3 and not a.not_in_sync_replicas[0].alive

        with pytest.raises(RemotingError) as err:
            await client.get_sync_state_data(follower.addr, ["bg-a"])
        assert err.value.code_name == "CONTROLLER_NOT_LEADER" and err.value.remark == "The controller is not leader"

        replica = await client.get_replica_info(leader.addr, "bg-a")
        assert replica.master_broker_id == 1 and replica.sync_state_set == {1, 2}
        assert replica.sync_state_set_epoch == 5

        elected = await client.elect_master(leader.addr, "c1", "bg-a", 2, designate=True)
        assert elected.master_broker_id == 2 and elected.master_epoch == 4
        assert elected.sync_state_set == {2} and dict(elected.broker_addrs)[1] == "127.0.0.1:10911"
        request = next(r for r in seen if r.code == R.CONTROLLER_ELECT_MASTER)
        assert request.ext_fields["designateElect"] == "true" and request.ext_fields["clusterName"] == "c1"
        assert int(request.ext_fields["invokeTime"]) > 0

        with pytest.raises(RemotingError) as err:
            await client.elect_master(leader.addr, "c1", "bg-a", None)
        assert err.value.code_name == "CONTROLLER_MASTER_STILL_EXIST"
        assert err.value.response is not None and err.value.response.ext_fields["masterBrokerId"] == "1"
        assert seen[-1].ext_fields["brokerId"] == "-1" and seen[-1].ext_fields["designateElect"] == "false"


async def test_broker_admin_calls(fake_server: Start) -> None:
    seen: list[RemotingCommand] = []
    config_text = "brokerName=bg-a\nlistenPort=10911\nstorePathRootDir=/data/store\nbrokerConfigPath=/x=y\n"
    ha = {
        "master": True,
        "masterCommitLogMaxOffset": 1234,
        "inSyncSlaveNums": 1,
        "haConnectionInfo": [
            {
                "addr": "127.0.0.1:40000",
                "slaveAckOffset": 1200,
                "diff": 34,
                "inSync": True,
                "transferredByteInSecond": 10,
                "transferFromWhere": 1000,
            }
        ],
        "haClientRuntimeInfo": {"masterAddr": None, "maxOffset": 0},
    }
    server = await fake_server(
        serve_codes(
            {
                R.GET_BROKER_RUNTIME_INFO: lambda r: ok(
                    body=json.dumps({"table": {"brokerActive": "true", "commitLogMaxOffset": "1234"}})
                ),
                R.GET_BROKER_CONFIG: lambda r: ok({"version": '{"counter":3}'}, config_text),
                R.UPDATE_BROKER_CONFIG: lambda r: (
                    ok() if b"configBlackList" not in r.body else (16, {}, b"", "Can not update config in black list.")
                ),
                R.UPDATE_AND_CREATE_TOPIC: lambda r: ok(),
                R.GET_BROKER_HA_STATUS: lambda r: ok(body=json.dumps(ha)),
                R.EXCHANGE_BROKER_HA_INFO: lambda r: (
                    ok()
                    if "masterHaAddress" in r.ext_fields
                    else ok(
                        {
                            "masterHaAddress": "10.0.0.1:10912",
                            "masterAddress": "10.0.0.1:10911",
                            "masterFlushOffset": "99",
                        }
                    )
                ),
                R.GET_MIN_OFFSET: lambda r: ok({"offset": "0"}),
                R.GET_MAX_OFFSET: lambda r: ok({"offset": "42"}),
                R.QUERY_CONSUMER_OFFSET: lambda r: (
                    ok({"offset": "7"})
                    if r.ext_fields["consumerGroup"] == "g"
                    else (22, {}, b"", "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
                ),
                R.UPDATE_CONSUMER_OFFSET: lambda r: ok(),
                # As a 5.5.0 broker sends it: fastjson's bare integer keys (apache/rocketmq#10284)
                R.GET_ALL_CONSUMER_OFFSET: lambda r: ok(
                    {},
                    b'{"dataVersion":{"counter":0},"offsetTable":{"roll@readers":{0:586,1:574}},'
                    b'"pullOffsetTable":{"orders@spark":{0:6000}}}',
                ),
                R.DELETE_EXPIRED_COMMITLOG: lambda r: ok(),
                R.CLEAN_EXPIRED_CONSUMEQUEUE: lambda r: ok(),
            },
            seen,
        )
    )
    addr = server.addr
    async with RemotingClient() as client:
        assert (await client.get_runtime_info(addr))["commitLogMaxOffset"] == "1234"
        config = await client.get_broker_config(addr)
        assert config["listenPort"] == "10911" and config["brokerConfigPath"] == "/x=y"
        assert (await client.get_broker_config_versioned(addr)).data_version == '{"counter":3}'

        await client.update_broker_config(addr, {"inSyncReplicas": 2, "slaveReadEnable": True, "label": "zé"})
        body = seen[-1].body.decode("ascii")
        assert body == "inSyncReplicas=2\nslaveReadEnable=true\nlabel=z\\u00e9\n"
        with pytest.raises(RemotingError, match="NO_PERMISSION"):
            await client.update_broker_config(addr, {"configBlackList": "x"})

        await client.create_topic(addr, "t1", 8, 8)
        fields = seen[-1].ext_fields
        assert fields["readQueueNums"] == "8" and fields["perm"] == "6"
        assert fields["topicFilterType"] == "SINGLE_TAG" and fields["defaultTopic"] == "TBW102"

        ha_status = await client.get_ha_status(addr)
        assert ha_status.master and ha_status.in_sync_slave_nums == 1
        assert ha_status.connections[0].slave_ack_offset == 1200 and ha_status.connections[0].in_sync
        assert ha_status.client is not None and ha_status.client.master_addr is None

        info = await client.get_ha_info(addr)
        assert (info.master_ha_address, info.master_address, info.master_flush_offset) == (
            "10.0.0.1:10912",
            "10.0.0.1:10911",
            99,
        )
        await client.set_ha_master(addr, info)
        assert seen[-1].ext_fields == {
            "masterHaAddress": "10.0.0.1:10912",
            "masterAddress": "10.0.0.1:10911",
            "masterFlushOffset": "99",
        }

        await client.delete_expired_commitlog(addr)
        await client.clean_expired_consume_queue(addr)
        assert [r.code for r in seen[-2:]] == [R.DELETE_EXPIRED_COMMITLOG, R.CLEAN_EXPIRED_CONSUMEQUEUE]

        assert await client.get_min_offset(addr, "t1", 0) == 0
        assert await client.get_max_offset(addr, "t1", 0) == 42
        assert await client.query_consumer_offset(addr, "g", "t1", 0) == 7
        assert await client.query_consumer_offset(addr, "other", "t1", 0) is None
        assert await client.get_all_consumer_offsets(addr) == {"roll@readers": {"0": 586, "1": 574}}
        await client.update_consumer_offset(addr, "g", "t1", 0, 9)
        await client.update_consumer_offset(addr, "g", "t1", 0, 10, oneway=True)
        await client.get_min_offset(addr, "t1", 0)  # the oneway arrives before this one
        oneway = [r for r in seen if r.code == R.UPDATE_CONSUMER_OFFSET]
        assert [r.ext_fields["commitOffset"] for r in oneway] == ["9", "10"] and oneway[1].is_oneway


async def test_send(fake_server: Start) -> None:
    seen: list[RemotingCommand] = []

    def send(request: RemotingCommand) -> Reply:
        topic = request.ext_fields["b"]
        if topic == "ok":
            return ok({"msgId": "7F00000100002A9F0000000000000000", "queueId": "1", "queueOffset": "5"})
        if topic == "slow":
            return 12, {"msgId": "X", "queueId": "1", "queueOffset": "6"}, b"", None
        return 1, {}, b"", "in-sync replicas not enough"

    server = await fake_server(serve_codes({R.SEND_MESSAGE_V2: send}, seen))
    async with RemotingClient() as client:
        result = await client.send(server.addr, "ok", b"payload", 1, keys=["k1", "k2"], tags="tA")
        assert result.ok and result.stored and result.status == "PUT_OK"
        assert result.queue_offset == 5 and result.offset_msg_id == "7F00000100002A9F0000000000000000"
        fields = seen[-1].ext_fields
        assert fields["a"] == "rocketmq-operator-producer" and fields["b"] == "ok" and fields["e"] == "1"
        assert fields["c"] == "TBW102" and fields["f"] == "0" and int(fields["g"]) > 0
        props = dict(p.split("\x01") for p in fields["i"].split("\x02") if p)
        assert props["KEYS"] == "k1 k2" and props["TAGS"] == "tA" and props["UNIQ_KEY"] == result.msg_id
        assert len(result.msg_id) == 32 and seen[-1].body == b"payload"

        slow = await client.send(server.addr, "slow", b"x", 1, properties={"UNIQ_KEY": "MINE"})
        assert (slow.status, slow.stored, slow.code, slow.queue_offset) == (
            "FLUSH_SLAVE_TIMEOUT",
            True,
            12,
            6,
        )
        assert slow.msg_id == "MINE"

        refused = await client.send(server.addr, "quorum", b"x", 0)
        assert (refused.status, refused.stored, refused.code) == ("IN_SYNC_REPLICAS_NOT_ENOUGH", False, 1)
        assert refused.queue_offset == -1 and refused.remark == "in-sync replicas not enough"


async def test_pull(fake_server: Start) -> None:
    seen: list[RemotingCommand] = []
    record = Message(
        topic="t1",
        queue_id=0,
        queue_offset=3,
        physical_offset=999,
        sys_flag=0,
        born_timestamp=1,
        store_timestamp=2,
        born_host="127.0.0.1:5000",
        store_host="127.0.0.1:10911",
        body=b"hello",
        properties={"UNIQ_KEY": "U1", "KEYS": "a"},
    )
    body = encode_message(record) + encode_message(record, compress=True)

    def pull(request: RemotingCommand) -> Reply:
        offset = int(request.ext_fields["queueOffset"])
        ext = {
            "nextBeginOffset": str(offset + 2),
            "minOffset": "0",
            "maxOffset": "5",
            "suggestWhichBrokerId": "1",
        }
        if offset == 3:
            return 0, ext, body, "FOUND"
        if offset == 5:
            return 19, ext, b"", "OFFSET_OVERFLOW_ONE"
        if offset == 6:
            return 20, ext, b"", "NO_MATCHED_MESSAGE"
        if offset == 7:
            return 20, ext, b"", "OFFSET_FOUND_NULL"
        if offset == 8:
            return 0, ext, b"\x00\x00\x00\x20garbage", "FOUND"
        if offset == 9:
            return 2, {}, b"", "the broker[127.0.0.1:10921] pulling message is forbidden"
        return 21, ext, b"", "OFFSET_OVERFLOW_BADLY"

    server = await fake_server(serve_codes({R.PULL_MESSAGE: pull}, seen))
    async with RemotingClient() as client:
        found = await client.pull(server.addr, "t1", 0, 3, 16, "cg")
        assert found.status == "FOUND" and found.next_begin_offset == 5 and found.suggest_which_broker_id == 1
        assert [m.body for m in found.messages] == [b"hello", b"hello"]
        assert found.messages[0].msg_id == "U1" and found.messages[0].keys == ("a",)
        fields = seen[-1].ext_fields
        assert int(fields["sysFlag"]) & 4 and not int(fields["sysFlag"]) & 1
        assert fields["subscription"] == "*" and fields["consumerGroup"] == "cg" and fields["maxMsgNums"] == "16"

        statuses = [(await client.pull(server.addr, "t1", 0, o)).status for o in (5, 6, 7, 100)]
        assert statuses == ["NO_NEW_MSG", "NO_MATCHED_MSG", "RETRY", "OFFSET_ILLEGAL"]

        await client.pull(server.addr, "t1", 0, 5, commit_offset=4)
        assert int(seen[-1].ext_fields["sysFlag"]) & 1 and seen[-1].ext_fields["commitOffset"] == "4"

        from rocketmq_operator.remoting import MessageDecodeError

        with pytest.raises(MessageDecodeError):
            await client.pull(server.addr, "t1", 0, 8)
        with pytest.raises(RemotingError, match="SYSTEM_BUSY"):
            await client.pull(server.addr, "t1", 0, 9)


async def test_bad_success_bodies_raise_response_format_error(fake_server: Start) -> None:
    server = await fake_server(
        serve_codes(
            {
                R.GET_BROKER_CLUSTER_INFO: lambda r: ok(body="{not json"),
                R.GET_ROUTEINFO_BY_TOPIC: lambda r: ok(body='{"brokerDatas":[{"brokerAddrs":{"x":"a"}}]}'),
                R.GET_BROKER_RUNTIME_INFO: lambda r: ok(),
                R.GET_MAX_OFFSET: lambda r: ok({"offset": "lots"}),
            }
        )
    )
    async with RemotingClient([server.addr]) as client:
        with pytest.raises(ResponseFormatError, match="not JSON"):
            await client.get_cluster_info()
        with pytest.raises(ResponseFormatError, match="brokerAddrs key is not an integer"):
            await client.get_route("t")
        with pytest.raises(ResponseFormatError, match="empty response body"):
            await client.get_runtime_info(server.addr)
        with pytest.raises(ResponseFormatError, match="offset is not an integer"):
            await client.get_max_offset(server.addr, "t", 0)
        with pytest.raises(RemotingError, match="REQUEST_CODE_NOT_SUPPORTED"):
            await client.get_ha_status(server.addr)


def test_properties_text_round_trip() -> None:
    config = {"a": "1", "path": "C:\\data dir", "k=y": " lead", "uni": "ü€😀", "multi": "l1\nl2"}
    text = format_properties_text(config)
    assert text.isascii()
    assert "k\\=y=\\ lead" in text and "\\ud83d\\ude00" in text
    assert parse_properties_text("# comment\n\na=1\nb = two=2\n!x\n") == {"a": "1", "b": "two=2"}


@pytest.mark.parametrize(
    "value", ['Adm"in\\pw-7x', " leading blank", "ünï😀", "a=b:c#!", "ends in \\", "tab\tnew\nline"]
)
def test_java_properties_read_back_what_both_writers_escape(value: str) -> None:
    from rocketmq_operator.remoting.broker import parse_java_properties
    from rocketmq_operator.render.config import properties_value

    assert parse_java_properties(format_properties_text({"k ey=": value})) == {"k ey=": value}
    assert parse_java_properties(f"# comment\n\nkey = {properties_value(value)}\n") == {"key": value}


def test_java_properties_continue_a_line_that_ends_in_one_backslash() -> None:
    from rocketmq_operator.remoting.broker import parse_java_properties

    assert parse_java_properties("a=one \\\n    two\nb:x\\\\\nc\n") == {"a": "one two", "b": "x\\", "c": ""}
