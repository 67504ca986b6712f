"""A simulated RocketMQ for `bench operator-scale`: controllers, name servers and brokers of many broker groups,
answered over the real remoting protocol from one asyncio process on loopback.

Contract:

* `SimulatedRocketMQ(groups, ...)` holds, per group, a master and two slaves (broker ids 1, 2, 3) that are all in
  the SyncStateSet, with commit-log offsets that grow at ``offset_rate`` bytes per second (the slaves a little
  behind), a broker config store (what UPDATE_BROKER_CONFIG writes, GET_BROKER_CONFIG reads back), and a
  controller quorum of ``controllers`` nodes (n0 leads) hosted with the name servers, as a ControllerGroup
  without ``standalone`` runs them. `start()` listens on every simulated address, all of them in 127.0.0.0/8:
  one asyncio server per port (brokers 10911, name servers 9876, controllers 9878), one socket per address; a
  request is answered as the node whose address the connection reached (its socket's local address).
* Answers are what a RocketMQ 5.x node answers (`reference/rocketmq-facts.md` §4): GET_BROKER_RUNTIME_INFO,
  GET_BROKER_HA_STATUS, GET_BROKER_CONFIG / UPDATE_BROKER_CONFIG, EXCHANGE_BROKER_HA_INFO (both forms),
  GET_ALL_TOPIC_CONFIG / UPDATE_AND_CREATE_TOPIC / DELETE_TOPIC_IN_BROKER (a broker's system topics from its
  start), GET_ALL_SUBSCRIPTIONGROUP_CONFIG (its system groups), GET_ALL_CONSUMER_OFFSET (nothing consumed),
  GET_BROKER_CLUSTER_INFO (every group, fastjson's bare integer keys), GET_BROKER_MEMBER_GROUP (one group's
  brokerAddrs, the same keys), CONTROLLER_GET_METADATA_INFO,
  CONTROLLER_GET_SYNC_STATE_DATA (the batch form, only the groups asked), CONTROLLER_GET_REPLICA_INFO and
  CONTROLLER_ELECT_MASTER. Anything else gets REQUEST_CODE_NOT_SUPPORTED (3), as RocketMQ answers an unknown
  code, and is counted by name (`unsupported`): a bench that reports some has an operator asking for what the
  simulation does not have.
* `elect(group)` is the simulated change: the controller elects the next in-sync slave (master epoch and
  SyncStateSet epoch + 1); at once the old master answers as that slave's peer (a slave of the new master) and
  every name server lists the new master, as they would once the brokers re-registered. It returns the new
  master's broker id and the time of the change.
* `requests` counts every request by code name; `sync_state_reads[group]` counts the SyncStateSet reads that
  named the group (one per observation pass of it), and `first_read_after(group, t)` is when the first of them
  came after ``t``.
* Whole passes: every request to one of a group's brokers, and every controller or name-server request naming
  the group, is also counted for that group, and each SyncStateSet read of it (the first request of a pass)
  marks where a pass begins. `whole_pass_requests(group, first, end)` counts the group's requests of its
  passes ``first`` to ``end - 1`` (0-based, by SyncStateSet read), each from its SyncStateSet read to the next
  one: counters read at two instants would cut the passes in flight at either end.

Only the frame codec (`remoting.codec`) and the properties format (`remoting.broker.format_properties_text`) are
the project's; the answers are built here. No disk, no replication, no messages: the brokers are their answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rocketmq_operator.remoting.broker import format_properties_text, parse_properties_text
from rocketmq_operator.remoting.codec import FrameDecoder, RemotingCommand, encode_command
from rocketmq_operator.remoting.codes import RequestCode, request_code_name
from rocketmq_operator.render.config import BROKER_PORT, CONTROLLER_PORT, NAMESRV_PORT

REQUEST_CODE_NOT_SUPPORTED = 3
SYSTEM_ERROR = 1
CONTROLLER_BROKER_METADATA_NOT_EXIST = 2008
CONTROLLER_ELECT_MASTER_FAILED = 2012
FIRST_BROKER_NETWORK = ipaddress.IPv4Address("127.77.0.1")
FIRST_CONTROLLER_ADDRESS = ipaddress.IPv4Address("127.76.0.1")
REPLICAS = 3
SLAVE_BEHIND_BYTES = 1024
"""How far a slave's commit log trails its master's: in sync, as a healthy replica is between two HA transfers."""
VERSION_DESC = "V5_5_0"
SYSTEM_TOPICS = (
    "TBW102",
    "SCHEDULE_TOPIC_XXXX",
    "BenchmarkTest",
    "OFFSET_MOVED_EVENT",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "rmq_sys_REVIVE_LOG_DefaultCluster",
)
"""Topics a RocketMQ 5 broker has from its start (besides its cluster's and its own name's)."""
SYSTEM_GROUPS = (
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_RMQ_SYS_TRANS",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
)
"""Subscription groups a RocketMQ 5 broker has from its start."""


def broker_host(group_index: int, replica: int) -> str:
    """The loopback address of replica ``replica`` of the ``group_index``-th group (127.77.0.1 onwards)."""
    return str(FIRST_BROKER_NETWORK + group_index * REPLICAS + replica)


def controller_host(ordinal: int) -> str:
    """The loopback address of the ``ordinal``-th controller (and the name server hosted with it)."""
    return str(FIRST_CONTROLLER_ADDRESS + ordinal)


@dataclass(frozen=True)
class SimPorts:
    """The ports every simulated node listens on: RocketMQ's defaults, which the operator renders and dials."""

    broker: int = BROKER_PORT
    name_server: int = NAMESRV_PORT
    controller: int = CONTROLLER_PORT


@dataclass
class SimReplica:
    name: str
    broker_id: int
    host: str
    port: int = BROKER_PORT
    config: dict[str, str] = field(default_factory=dict)
    topics: dict[str, dict[str, object]] = field(default_factory=dict)
    ha_master: str | None = None  # a slave's HA client target (its master's host:port + 1)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def ha_address(self) -> str:
        return f"{self.host}:{self.port + 1}"  # haListenPort = listenPort + 1, as rendered


@dataclass
class SimGroup:
    name: str
    cluster: str
    replicas: list[SimReplica]
    master_id: int = 1
    master_epoch: int = 1
    sync_state_set_epoch: int = 1
    started_at: float = 0.0

    def replica(self, broker_id: int) -> SimReplica:
        return next(r for r in self.replicas if r.broker_id == broker_id)

    @property
    def master(self) -> SimReplica:
        return self.replica(self.master_id)


class SimulatedRocketMQ:
    """See the module docstring."""

    def __init__(
        self,
        groups: Sequence[str],
        *,
        cluster: str = "DefaultCluster",
        controllers: int = 3,
        offset_rate: float = 1_000_000.0,
        ports: SimPorts | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if controllers < 1:
            raise ValueError(f"controllers {controllers}: a quorum has at least one controller")
        self.cluster = cluster
        self.offset_rate = offset_rate
        self.clock = clock
        """The wall clock the offsets grow by (a test passes one it advances itself)."""
        self.ports = ports or SimPorts()
        self.groups: dict[str, SimGroup] = {}
        self._by_address: dict[str, tuple[SimGroup, SimReplica]] = {}
        for index, name in enumerate(groups):
            replicas = [
                SimReplica(f"{name}-{r}", r + 1, broker_host(index, r), self.ports.broker) for r in range(REPLICAS)
            ]
            for replica in replicas:
                replica.topics = {t: _topic_config(t, 8) for t in (*SYSTEM_TOPICS, cluster, name)}
            group = SimGroup(name, cluster, replicas, started_at=clock())
            self.groups[name] = group
            for replica in replicas:
                self._by_address[replica.address] = (group, replica)
                if replica.broker_id != group.master_id:
                    replica.ha_master = group.master.ha_address
        self.controller_hosts = [controller_host(i) for i in range(controllers)]
        self.requests: Counter[str] = Counter()
        self.unsupported: Counter[str] = Counter()
        self.sync_state_reads: Counter[str] = Counter()
        self._read_times: dict[str, list[float]] = {}
        self._group_requests: dict[str, Counter[str]] = {name: Counter() for name in self.groups}
        # _pass_marks[group][k]: the group's counts just before its k-th SyncStateSet read (0-based).
        self._pass_marks: dict[str, list[Counter[str]]] = {name: [] for name in self.groups}
        self._topology = 0  # + 1 at every election: the name servers' cached answer is built again
        self._cluster_info: tuple[int, bytes] | None = None
        self._servers: list[asyncio.Server] = []
        self._connections: set[asyncio.Task[None]] = set()

    # --- addresses

    def pod_ip(self, pod: str) -> str | None:
        """The simulated address of a broker pod (``<group>-<ordinal>``), or None for a pod it does not simulate."""
        group_name, _, ordinal = pod.rpartition("-")
        group = self.groups.get(group_name)
        if group is None or not ordinal.isdigit() or int(ordinal) >= REPLICAS:
            return None
        return group.replicas[int(ordinal)].host

    @property
    def controller_addresses(self) -> list[str]:
        return [f"{h}:{self.ports.controller}" for h in self.controller_hosts]

    @property
    def name_server_addresses(self) -> list[str]:
        return [f"{h}:{self.ports.name_server}" for h in self.controller_hosts]

    # --- lifecycle

    async def start(self) -> None:
        """Listen on every simulated address (OSError, naming the address, when one is taken)."""
        broker_hosts = [r.host for g in self.groups.values() for r in g.replicas]
        for hosts, port in (
            (broker_hosts, self.ports.broker),
            (self.controller_hosts, self.ports.name_server),
            (self.controller_hosts, self.ports.controller),
        ):
            if not hosts:
                continue
            try:
                server = await asyncio.start_server(self._serve, host=hosts, port=port, reuse_address=True)
            except OSError as exc:
                await self.stop()
                raise OSError(exc.errno, f"cannot listen on {hosts[0]}…:{port} ({exc.strerror})") from None
            self._servers.append(server)

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)
        self._servers = []

    async def __aenter__(self) -> SimulatedRocketMQ:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        host, port = writer.get_extra_info("sockname")[:2]
        local = f"{host}:{port}"
        decoder = FrameDecoder()
        try:
            while data := await reader.read(65536):
                for request in decoder.feed(data):
                    response = self.answer(local, request)
                    if response is not None:
                        writer.write(encode_command(response))
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:  # a malformed frame: drop the connection, as a RocketMQ server does
            pass
        finally:
            if task is not None:
                self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    # --- the simulated change

    def elect(self, group_name: str, now: float | None = None) -> tuple[int, float]:
        """The controller elects the next in-sync slave of ``group_name``; its broker id and the change's time."""
        group = self.groups[group_name]
        new_id = group.master_id % REPLICAS + 1
        group.master_id = new_id
        self._topology += 1
        group.master_epoch += 1
        group.sync_state_set_epoch += 1
        for replica in group.replicas:
            replica.ha_master = None if replica.broker_id == new_id else group.master.ha_address
        return new_id, self.clock() if now is None else now

    def first_read_after(self, group: str, since: float) -> float | None:
        return next((t for t in self._read_times.get(group, []) if t >= since), None)

    def whole_pass_requests(self, group: str, first: int, end: int) -> Counter[str] | None:
        """The group's requests by code name in its passes ``first`` .. ``end - 1``; None until pass ``end`` began."""
        marks = self._pass_marks[group]
        if end >= len(marks) or not 0 <= first <= end:
            return None
        return marks[end] - marks[first]

    # --- answers

    def offset(self, group: SimGroup, replica: SimReplica, now: float | None = None) -> int:
        master = int(((self.clock() if now is None else now) - group.started_at) * self.offset_rate)
        return master if replica.broker_id == group.master_id else max(0, master - SLAVE_BEHIND_BYTES)

    def answer(self, local: str, request: RemotingCommand) -> RemotingCommand | None:
        """The response of the node at ``local`` (host:port) to ``request``; None for a oneway request."""
        name = request_code_name(request.code)
        self.requests[name] += 1
        if request.is_oneway:
            return None
        port = int(local.rpartition(":")[2])
        if local in self._by_address:
            group, replica = self._by_address[local]
            self._group_requests[group.name][name] += 1
            result = self._broker(group, replica, request)
        elif port == self.ports.controller:
            result = self._controller(local, request)
        elif port == self.ports.name_server:
            result = self._name_server(request)
        else:
            result = None
        if result is None:
            self.unsupported[name] += 1
            return _response(request, REQUEST_CODE_NOT_SUPPORTED, remark=f"request code {request.code} not supported")
        return result

    def _broker(self, group: SimGroup, replica: SimReplica, request: RemotingCommand) -> RemotingCommand | None:
        code = request.code
        is_master = replica.broker_id == group.master_id
        if code == RequestCode.GET_BROKER_RUNTIME_INFO:
            offset = self.offset(group, replica)
            table = {
                "brokerVersionDesc": VERSION_DESC,
                "brokerVersion": "505",
                "brokerActive": "true",
                "commitLogMinOffset": "0",
                "commitLogMaxOffset": str(offset),
                "dispatchBehindBytes": "0",
                "putTps": "0.0 0.0 0.0",
                "commitLogDiskRatio": "0.01",
            }
            return _json(request, {"table": table})
        if code == RequestCode.GET_BROKER_HA_STATUS:
            return _json(request, self._ha_status(group, replica))
        if code == RequestCode.GET_BROKER_CONFIG:
            version = {"stateVersion": 0, "timestamp": int(group.started_at * 1000), "counter": 1}
            return _response(
                request,
                0,
                ext_fields={"version": json.dumps(version)},
                body=format_properties_text(replica.config).encode("ascii"),
            )
        if code == RequestCode.UPDATE_BROKER_CONFIG:
            replica.config.update(parse_properties_text(request.body.decode("latin-1")))
            return _response(request, 0)
        if code == RequestCode.GET_ALL_TOPIC_CONFIG:
            version = {"stateVersion": 0, "timestamp": int(group.started_at * 1000), "counter": len(replica.topics)}
            return _json(request, {"topicConfigTable": replica.topics, "dataVersion": version})
        if code == RequestCode.UPDATE_AND_CREATE_TOPIC:
            fields = request.ext_fields
            topic = fields.get("topic", "")
            replica.topics[topic] = {
                **_topic_config(topic, int(fields.get("writeQueueNums", "8") or 8)),
                "readQueueNums": int(fields.get("readQueueNums", "8") or 8),
                "perm": int(fields.get("perm", "6") or 6),
                "order": fields.get("order", "false") == "true",
            }
            return _response(request, 0)
        if code == RequestCode.DELETE_TOPIC_IN_BROKER:
            replica.topics.pop(request.ext_fields.get("topic", ""), None)
            return _response(request, 0)
        if code == RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG:
            subscriptions = {
                g: {"groupName": g, "consumeEnable": True, "retryQueueNums": 1, "retryMaxTimes": 16}
                for g in SYSTEM_GROUPS
            }
            return _json(
                request, {"subscriptionGroupTable": subscriptions, "dataVersion": {"counter": len(subscriptions)}}
            )
        if code == RequestCode.GET_ALL_CONSUMER_OFFSET:
            return _json(request, {"offsetTable": {}})  # nobody consumes from the simulated brokers
        if code == RequestCode.EXCHANGE_BROKER_HA_INFO:
            given = request.ext_fields.get("masterHaAddress")
            if given:
                if not is_master:
                    replica.ha_master = given
                return _response(request, 0)
            if not is_master:
                return _response(request, 0)
            fields = {
                "masterHaAddress": replica.ha_address,
                "masterAddress": replica.address,
                "masterFlushOffset": str(self.offset(group, replica)),
            }
            return _response(request, 0, ext_fields=fields)
        return None

    def _ha_status(self, group: SimGroup, replica: SimReplica) -> dict[str, object]:
        now = self.clock()
        master_offset = self.offset(group, group.master, now)
        if replica.broker_id == group.master_id:
            connections = [
                {
                    "addr": f"{r.host}:{40000 + r.broker_id}",  # a slave's HA client port, not its broker address
                    "slaveAckOffset": self.offset(group, r, now),
                    "diff": master_offset - self.offset(group, r, now),
                    "inSync": True,
                    "transferredByteInSecond": int(self.offset_rate),
                    "transferFromWhere": self.offset(group, r, now),
                }
                for r in group.replicas
                if r.broker_id != group.master_id
            ]
            return {
                "master": True,
                "masterCommitLogMaxOffset": master_offset,
                "inSyncSlaveNums": len(connections),
                "haConnectionInfo": connections,
            }
        ms = int(now * 1000)
        return {
            "master": False,
            "masterCommitLogMaxOffset": 0,
            "inSyncSlaveNums": 0,
            "haConnectionInfo": [],
            "haClientRuntimeInfo": {
                "masterAddr": replica.ha_master or "",
                "transferredByteInSecond": int(self.offset_rate),
                "maxOffset": self.offset(group, replica, now),
                "lastReadTimestamp": ms,
                "lastWriteTimestamp": ms,
                "masterFlushOffset": master_offset,
                "isActivated": True,
            },
        }

    def _controller(self, local: str, request: RemotingCommand) -> RemotingCommand | None:
        code = request.code
        leader = self.controller_addresses[0]
        named = self._group_requests.get(request.ext_fields.get("brokerName", ""))
        if named is not None and code in (RequestCode.CONTROLLER_GET_REPLICA_INFO, RequestCode.CONTROLLER_ELECT_MASTER):
            named[request_code_name(code)] += 1
        if code == RequestCode.CONTROLLER_GET_METADATA_INFO:
            peers = "".join(f"n{i}:{a};" for i, a in enumerate(self.controller_addresses))
            fields = {
                "group": "sim-controllers",
                "controllerLeaderId": "n0",
                "controllerLeaderAddress": leader,
                "isLeader": str(local == leader).lower(),
                "peers": peers,
                "isRaftMode": "false",
            }
            return _response(request, 0, ext_fields=fields)
        if local != leader and code in (
            RequestCode.CONTROLLER_GET_SYNC_STATE_DATA,
            RequestCode.CONTROLLER_GET_REPLICA_INFO,
            RequestCode.CONTROLLER_ELECT_MASTER,
        ):
            return _response(request, 2007, remark="The controller is not in leader state")  # CONTROLLER_NOT_LEADER
        if code == RequestCode.CONTROLLER_GET_SYNC_STATE_DATA:
            try:
                names = [str(n) for n in json.loads(request.body or b"[]")]
            except ValueError:
                return _response(request, SYSTEM_ERROR, remark="the body is not a JSON array of broker names")
            now = self.clock()
            table: dict[str, object] = {}
            for name in names:
                group = self.groups.get(name)
                if group is None:
                    continue
                self._pass_marks[name].append(self._group_requests[name].copy())
                self._group_requests[name][request_code_name(code)] += 1
                self.sync_state_reads[name] += 1
                self._read_times.setdefault(name, []).append(now)
                table[name] = self._replicas_info(group)
            return _json(request, {"replicasInfoTable": table})
        if code == RequestCode.CONTROLLER_GET_REPLICA_INFO:
            group = self.groups.get(request.ext_fields.get("brokerName", ""))
            if group is None:
                return _response(request, CONTROLLER_BROKER_METADATA_NOT_EXIST, remark="broker metadata not exist")
            return _response(
                request,
                0,
                ext_fields=self._master_fields(group),
                body=json.dumps(
                    {
                        "syncStateSet": [r.broker_id for r in group.replicas],
                        "syncStateSetEpoch": group.sync_state_set_epoch,
                    }
                ).encode(),
            )
        if code == RequestCode.CONTROLLER_ELECT_MASTER:
            return self._elect_master(request)
        return None

    def _master_fields(self, group: SimGroup) -> dict[str, str]:
        return {
            "masterBrokerId": str(group.master_id),
            "masterAddress": group.master.address,
            "masterEpoch": str(group.master_epoch),
            "syncStateSetEpoch": str(group.sync_state_set_epoch),
        }

    def _elect_master(self, request: RemotingCommand) -> RemotingCommand:
        group = self.groups.get(request.ext_fields.get("brokerName", ""))
        if group is None:
            return _response(request, CONTROLLER_BROKER_METADATA_NOT_EXIST, remark="broker metadata not exist")
        wanted = int(request.ext_fields.get("brokerId", "-1") or -1)
        if wanted not in (-1, *(r.broker_id for r in group.replicas)):
            return _response(request, CONTROLLER_ELECT_MASTER_FAILED, remark=f"broker {wanted} is not in the group")
        if wanted != -1 and wanted != group.master_id:
            while group.master_id != wanted:
                self.elect(group.name)
        addrs = ",".join(f"{r.broker_id}:{json.dumps(r.address)}" for r in group.replicas)
        member_group = (
            f'{{"cluster":{json.dumps(group.cluster)},"brokerName":{json.dumps(group.name)},"brokerAddrs":{{{addrs}}}}}'
        )
        members = json.dumps([r.broker_id for r in group.replicas])
        body = f'{{"brokerMemberGroup":{member_group},"syncStateSet":{members}}}'.encode()
        return _response(request, 0, ext_fields=self._master_fields(group), body=body)

    def _replicas_info(self, group: SimGroup) -> dict[str, object]:
        return {
            "masterBrokerId": group.master_id,
            "masterAddress": group.master.address,
            "masterEpoch": group.master_epoch,
            "syncStateSetEpoch": group.sync_state_set_epoch,
            "inSyncReplicas": [
                {"brokerName": group.name, "brokerId": r.broker_id, "brokerAddress": r.address, "alive": True}
                for r in group.replicas
            ],
            "notInSyncReplicas": [],
        }

    def _name_server(self, request: RemotingCommand) -> RemotingCommand | None:
        if request.code == RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER:
            # What a name server lists: the topics the groups' masters registered (asked after an election).
            names = sorted({t for g in self.groups.values() for t in g.master.topics})
            return _json(request, {"topicList": names})
        if request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            topic = request.ext_fields.get("topic", "")
            holders = [g for g in self.groups.values() if topic in g.master.topics]
            if not holders:
                return _response(request, 17, remark=f"No topic route info in name server for the topic: {topic}")
            queues = [
                {"brokerName": g.name, "readQueueNums": g.master.topics[topic].get("readQueueNums", 8),
                 "writeQueueNums": g.master.topics[topic].get("writeQueueNums", 8),
                 "perm": g.master.topics[topic].get("perm", 6), "topicSysFlag": 0}
                for g in holders
            ]  # fmt: skip
            brokers = [
                {"cluster": g.cluster, "brokerName": g.name, "brokerAddrs": {"0": g.master.address}} for g in holders
            ]
            return _json(request, {"queueDatas": queues, "brokerDatas": brokers})
        if request.code == RequestCode.GET_BROKER_MEMBER_GROUP:
            return self._member_group(request)
        if request.code != RequestCode.GET_BROKER_CLUSTER_INFO:
            return None
        # Built once per topology (a name server serves it from its route table): the simulator's own cost must
        # not grow with the groups where a name server's does not.
        if self._cluster_info is None or self._cluster_info[0] != self._topology:
            self._cluster_info = (self._topology, self._cluster_info_body())
        return _response(request, 0, body=self._cluster_info[1])

    def _member_group(self, request: RemotingCommand) -> RemotingCommand:
        # As RocketMQ 5.5.0's name server answers (pinned by tests/integration/test_failover_real.py): the group
        # found by brokerName alone, the cluster asked echoed; a field not sent is left out of the answer (its
        # @CFNotNull is only logged by the header's decode), an unknown group has no address.
        cluster, name = request.ext_fields.get("clusterName"), request.ext_fields.get("brokerName")
        group = self.groups.get(name) if name is not None else None
        if group is not None:
            self._group_requests[group.name][request_code_name(request.code)] += 1
        fields = [f'"brokerAddrs":{{{_broker_addrs_json(group) if group is not None else ""}}}']
        fields += [f'"brokerName":{json.dumps(name)}'] if name is not None else []
        fields += [f'"cluster":{json.dumps(cluster)}'] if cluster is not None else []
        return _response(request, 0, body=f'{{"brokerMemberGroup":{{{",".join(fields)}}}}}'.encode())

    def _cluster_info_body(self) -> bytes:
        brokers = []
        for group in self.groups.values():
            brokers.append(
                f'{json.dumps(group.name)}:{{"cluster":{json.dumps(group.cluster)},'
                f'"brokerName":{json.dumps(group.name)},"brokerAddrs":{{{_broker_addrs_json(group)}}},'
                '"enableActingMaster":false}'
            )
        clusters = {self.cluster: list(self.groups)}
        return f'{{"brokerAddrTable":{{{",".join(brokers)}}},"clusterAddrTable":{json.dumps(clusters)}}}'.encode()


def _broker_addrs_json(group: SimGroup) -> str:
    """A name server's brokerAddrs of ``group`` without its braces: the master at id 0, each slave at its id, the
    keys bare as fastjson writes Map<Long, String> (facts §4.2)."""
    addrs = [f"0:{json.dumps(group.master.address)}"]
    addrs += [f"{r.broker_id}:{json.dumps(r.address)}" for r in group.replicas if r.broker_id != group.master_id]
    return ",".join(addrs)


def _response(
    request: RemotingCommand,
    code: int,
    *,
    remark: str | None = None,
    ext_fields: dict[str, str] | None = None,
    body: bytes = b"",
) -> RemotingCommand:
    return request.response_to(code, remark=remark, ext_fields=ext_fields, body=body)


def _topic_config(name: str, queues: int) -> dict[str, object]:
    return {
        "topicName": name,
        "readQueueNums": queues,
        "writeQueueNums": queues,
        "perm": 6,
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": 0,
        "order": False,
        "attributes": {},
    }


def _json(request: RemotingCommand, body: object) -> RemotingCommand:
    return _response(request, 0, body=json.dumps(body, separators=(",", ":")).encode())
