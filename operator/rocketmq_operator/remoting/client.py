"""High-level async RocketMQ admin/producer/consumer calls over :class:`ClientPool`.

Contract:

* Every call takes the target address explicitly (namesrv calls fall back over the client's
  ``namesrv_addrs`` in order on connection errors and timeouts). Per-call ``timeout`` overrides the
  pool's default.
* Results are frozen dataclasses with snake_case fields, parsed from RocketMQ's headers and (fastjson,
  possibly non-standard) JSON bodies. A success response that cannot be parsed raises
  :class:`ResponseFormatError`.
* A response code the call does not accept raises :class:`RemotingError` (code, code name, remark,
  and the raw response). Exceptions: :meth:`RemotingClient.send` never raises on a broker status - its
  :class:`SendResult` says whether the message was stored (see :func:`codes.put_status`);
  :meth:`RemotingClient.pull` maps PULL_NOT_FOUND / PULL_RETRY_IMMEDIATELY / PULL_OFFSET_MOVED to a
  status; :meth:`RemotingClient.query_consumer_offset` returns ``None`` for QUERY_NOT_FOUND.
* Connection problems raise :class:`RemotingConnectionError`, missing responses
  :class:`RemotingTimeout`. Nothing is retried against the same address.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import socket
import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from .codec import RemotingCommand, loads_json
from .codes import (
    PERM_READ,
    PERM_WRITE,
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    RequestCode,
    ResponseCode,
    put_status,
    request_code_name,
)
from .connection import ClientPool
from .errors import (
    NoControllerLeader,
    RemotingConnectionError,
    RemotingError,
    RemotingException,
    RemotingTimeout,
    ResponseFormatError,
)
from .message import (
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    Message,
    decode_messages,
    format_properties,
)

DEFAULT_PRODUCER_GROUP = "rocketmq-operator-producer"
DEFAULT_CONSUMER_GROUP = "rocketmq-operator-consumer"
DEFAULT_TOPIC = "TBW102"

# ------------------------------------------------------------------------------------------ results


@dataclass(frozen=True, slots=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @property
    def readable(self) -> bool:
        return bool(self.perm & PERM_READ)

    @property
    def writable(self) -> bool:
        return bool(self.perm & PERM_WRITE)


@dataclass(frozen=True, slots=True)
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: Mapping[int, str]
    """broker id -> ``"ip:port"``; id 0 is the master."""
    zone_name: str | None = None
    enable_acting_master: bool = False

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(0)


@dataclass(frozen=True, slots=True)
class TopicRoute:
    topic: str
    queue_datas: tuple[QueueData, ...]
    broker_datas: tuple[BrokerData, ...]
    order_topic_conf: str | None = None

    def broker(self, broker_name: str) -> BrokerData | None:
        return next((b for b in self.broker_datas if b.broker_name == broker_name), None)


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    broker_addr_table: Mapping[str, BrokerData]
    """brokerName -> BrokerData."""
    cluster_addr_table: Mapping[str, tuple[str, ...]]
    """cluster -> brokerNames (sorted)."""


@dataclass(frozen=True, slots=True)
class ControllerMetadata:
    addr: str
    """The controller that answered."""
    group: str | None
    leader_id: str | None
    leader_address: str | None
    is_leader: bool
    peers: Mapping[str, str]
    """DLedger peer id -> ``"host:port"`` (parsed from ``"n0:host:port;n1:host:port"``)."""


@dataclass(frozen=True, slots=True)
class ReplicaIdentity:
    broker_name: str
    broker_id: int
    broker_address: str
    alive: bool


@dataclass(frozen=True, slots=True)
class SyncStateInfo:
    """The controller leader's view of one replica group (CONTROLLER_GET_SYNC_STATE_DATA)."""

    broker_name: str
    master_broker_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set_epoch: int
    in_sync_replicas: tuple[ReplicaIdentity, ...]
    not_in_sync_replicas: tuple[ReplicaIdentity, ...]

    @property
    def sync_state_set(self) -> frozenset[int]:
        return frozenset(r.broker_id for r in self.in_sync_replicas)


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """CONTROLLER_GET_REPLICA_INFO for one broker name."""

    master_broker_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set: frozenset[int]
    sync_state_set_epoch: int


@dataclass(frozen=True, slots=True)
class ElectMasterResult:
    master_broker_id: int | None
    master_address: str | None
    master_epoch: int
    sync_state_set_epoch: int
    sync_state_set: frozenset[int]
    broker_addrs: Mapping[int, str]
    cluster: str | None = None
    broker_name: str | None = None


@dataclass(frozen=True, slots=True)
class SendResult:
    status: str
    """``PUT_OK``, ``FLUSH_SLAVE_TIMEOUT``, ``IN_SYNC_REPLICAS_NOT_ENOUGH``, ... (see codes.put_status)."""
    stored: bool
    code: int
    remark: str | None
    msg_id: str
    """The client-side unique id (UNIQ_KEY property), as the Java SendResult.msgId."""
    offset_msg_id: str | None
    queue_id: int
    queue_offset: int
    """-1 when not stored."""
    transaction_id: str | None = None
    addr: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "PUT_OK"


@dataclass(frozen=True, slots=True)
class PullResult:
    status: str
    """``FOUND``, ``NO_NEW_MSG``, ``NO_MATCHED_MSG``, ``OFFSET_ILLEGAL`` or ``RETRY``."""
    code: int
    remark: str | None
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int
    messages: tuple[Message, ...] = ()


@dataclass(frozen=True, slots=True)
class HaConnection:
    addr: str
    slave_ack_offset: int
    diff: int
    in_sync: bool
    transferred_byte_in_second: int
    transfer_from_where: int


@dataclass(frozen=True, slots=True)
class HaClient:
    master_addr: str | None
    transferred_byte_in_second: int
    max_offset: int
    last_read_timestamp: int
    last_write_timestamp: int
    master_flush_offset: int
    activated: bool


@dataclass(frozen=True, slots=True)
class HaStatus:
    """GET_BROKER_HA_STATUS (HARuntimeInfo)."""

    master: bool
    master_commit_log_max_offset: int
    in_sync_slave_nums: int
    connections: tuple[HaConnection, ...] = ()
    client: HaClient | None = None


@dataclass(frozen=True, slots=True)
class HaInfo:
    """EXCHANGE_BROKER_HA_INFO's answer from a master: where slaves replicate from."""

    master_ha_address: str | None
    master_address: str | None
    master_flush_offset: int | None


@dataclass(frozen=True, slots=True)
class BrokerConfigResult:
    config: Mapping[str, str]
    data_version: str | None = field(default=None)


# ---------------------------------------------------------------------------------------- parsing


def _opt_int(value: Any, what: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ResponseFormatError(f"{what} is a boolean, expected an integer")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ResponseFormatError(f"{what} is not an integer: {value!r:.80}") from None


def _int(value: Any, what: str, default: int | None = None) -> int:
    parsed = _opt_int(value, what)
    if parsed is None:
        if default is None:
            raise ResponseFormatError(f"{what} is missing")
        return default
    return parsed


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def _opt_str(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def _obj(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ResponseFormatError(f"{what} is not a JSON object: {value!r:.80}")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ResponseFormatError(f"{what} is not a JSON array: {value!r:.80}")
    return value


def _body_json(response: RemotingCommand, what: str) -> Any:
    if not response.body:
        raise ResponseFormatError(f"{what}: empty response body")
    try:
        return loads_json(response.body)
    except (ValueError, RecursionError) as exc:
        raise ResponseFormatError(f"{what}: response body is not JSON: {exc}") from exc


def _broker_data(raw: Any, what: str) -> BrokerData:
    data = _obj(raw, what)
    addrs_raw = _obj(data.get("brokerAddrs"), f"{what}.brokerAddrs")
    addrs = {_int(k, f"{what}.brokerAddrs key"): str(v) for k, v in addrs_raw.items()}
    return BrokerData(
        cluster=str(data.get("cluster", "")),
        broker_name=str(data.get("brokerName", "")),
        broker_addrs=dict(sorted(addrs.items())),
        zone_name=_opt_str(data.get("zoneName")),
        enable_acting_master=_bool(data.get("enableActingMaster", False)),
    )


def parse_topic_route(topic: str, body: Any) -> TopicRoute:
    data = _obj(body, "TopicRouteData")
    queues = tuple(
        QueueData(
            broker_name=str(q.get("brokerName", "")),
            read_queue_nums=_int(q.get("readQueueNums"), "queueData.readQueueNums", 0),
            write_queue_nums=_int(q.get("writeQueueNums"), "queueData.writeQueueNums", 0),
            perm=_int(q.get("perm"), "queueData.perm", 0),
            topic_sys_flag=_int(q.get("topicSysFlag"), "queueData.topicSysFlag", 0),
        )
        for q in (_obj(x, "queueData") for x in _list(data.get("queueDatas"), "queueDatas"))
    )
    brokers = tuple(_broker_data(b, "brokerData") for b in _list(data.get("brokerDatas"), "brokerDatas"))
    return TopicRoute(topic, queues, brokers, _opt_str(data.get("orderTopicConf")))


def parse_cluster_info(body: Any) -> ClusterInfo:
    data = _obj(body, "ClusterInfo")
    brokers = {
        str(name): _broker_data(raw, f"brokerAddrTable[{name}]")
        for name, raw in _obj(data.get("brokerAddrTable"), "brokerAddrTable").items()
    }
    clusters = {
        str(name): tuple(sorted(str(n) for n in _list(names, f"clusterAddrTable[{name}]")))
        for name, names in _obj(data.get("clusterAddrTable"), "clusterAddrTable").items()
    }
    return ClusterInfo(brokers, clusters)


def parse_peers(peers: str | None) -> dict[str, str]:
    """``"n0:host:port;n1:host:port;"`` -> ``{"n0": "host:port", ...}``."""
    out: dict[str, str] = {}
    for item in (peers or "").split(";"):
        peer_id, sep, address = item.strip().partition(":")
        if sep and peer_id and address:
            out[peer_id] = address
    return out


def _replica(raw: Any, what: str) -> ReplicaIdentity:
    data = _obj(raw, what)
    return ReplicaIdentity(
        broker_name=str(data.get("brokerName", "")),
        broker_id=_int(data.get("brokerId"), f"{what}.brokerId"),
        broker_address=str(data.get("brokerAddress", "")),
        alive=_bool(data.get("alive", False)),
    )


def parse_sync_state_data(body: Any) -> dict[str, SyncStateInfo]:
    table = _obj(_obj(body, "BrokerReplicasInfo").get("replicasInfoTable"), "replicasInfoTable")
    out: dict[str, SyncStateInfo] = {}
    for name, raw in table.items():
        what = f"replicasInfoTable[{name}]"
        info = _obj(raw, what)
        out[str(name)] = SyncStateInfo(
            broker_name=str(name),
            master_broker_id=_opt_int(info.get("masterBrokerId"), f"{what}.masterBrokerId"),
            master_address=_opt_str(info.get("masterAddress")),
            master_epoch=_int(info.get("masterEpoch"), f"{what}.masterEpoch", 0),
            sync_state_set_epoch=_int(info.get("syncStateSetEpoch"), f"{what}.syncStateSetEpoch", 0),
            in_sync_replicas=tuple(
                _replica(r, f"{what}.inSyncReplicas") for r in _list(info.get("inSyncReplicas"), what)
            ),
            not_in_sync_replicas=tuple(
                _replica(r, f"{what}.notInSyncReplicas") for r in _list(info.get("notInSyncReplicas"), what)
            ),
        )
    return out


def parse_ha_status(body: Any) -> HaStatus:
    data = _obj(body, "HARuntimeInfo")
    connections = tuple(
        HaConnection(
            addr=str(c.get("addr", "")),
            slave_ack_offset=_int(c.get("slaveAckOffset"), "slaveAckOffset", 0),
            diff=_int(c.get("diff"), "diff", 0),
            in_sync=_bool(c.get("inSync", False)),
            transferred_byte_in_second=_int(c.get("transferredByteInSecond"), "transferredByteInSecond", 0),
            transfer_from_where=_int(c.get("transferFromWhere"), "transferFromWhere", 0),
        )
        for c in (_obj(x, "haConnectionInfo") for x in _list(data.get("haConnectionInfo"), "haConnectionInfo"))
    )
    client: HaClient | None = None
    raw_client = data.get("haClientRuntimeInfo")
    if raw_client is not None:
        c = _obj(raw_client, "haClientRuntimeInfo")
        client = HaClient(
            master_addr=_opt_str(c.get("masterAddr")),
            transferred_byte_in_second=_int(c.get("transferredByteInSecond"), "transferredByteInSecond", 0),
            max_offset=_int(c.get("maxOffset"), "maxOffset", 0),
            last_read_timestamp=_int(c.get("lastReadTimestamp"), "lastReadTimestamp", 0),
            last_write_timestamp=_int(c.get("lastWriteTimestamp"), "lastWriteTimestamp", 0),
            master_flush_offset=_int(c.get("masterFlushOffset"), "masterFlushOffset", 0),
            activated=_bool(c.get("activated", c.get("isActivated", False))),
        )
    return HaStatus(
        master=_bool(data.get("master", False)),
        master_commit_log_max_offset=_int(data.get("masterCommitLogMaxOffset"), "masterCommitLogMaxOffset", 0),
        in_sync_slave_nums=_int(data.get("inSyncSlaveNums"), "inSyncSlaveNums", 0),
        connections=connections,
        client=client,
    )


def parse_properties_text(text: str) -> dict[str, str]:
    """Parse GET_BROKER_CONFIG's body: ``key=value`` lines, written by ``MixAll.properties2String``
    without escaping. Blank lines and ``#``/``!`` comments are skipped; the first ``=`` splits."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _escape_properties(text: str, *, key: bool) -> str:
    out: list[str] = []
    for index, char in enumerate(text):
        code = ord(char)
        if char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif char == "\f":
            out.append("\\f")
        elif char in "=:#!" and (key or index == 0):
            out.append("\\" + char)
        elif char == " " and (key or index == 0):
            out.append("\\ ")
        elif code < 0x20 or code > 0x7E:
            # java.util.Properties.load(InputStream) reads ISO-8859-1: escape everything else.
            for unit in struct.unpack(f">{len(char.encode('utf-16-be')) // 2}H", char.encode("utf-16-be")):
                out.append(f"\\u{unit:04x}")
        else:
            out.append(char)
    return "".join(out)


def format_properties_text(config: Mapping[str, object]) -> str:
    """``key=value`` lines escaped for ``java.util.Properties.load`` (UPDATE_BROKER_CONFIG's body)."""
    lines = []
    for key, value in config.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        lines.append(f"{_escape_properties(str(key), key=True)}={_escape_properties(text, key=False)}")
    return "".join(line + "\n" for line in lines)


# ------------------------------------------------------------------------------------ unique ids

_UNIQ_COUNTER = itertools.count(random.randrange(0x10000))


def _local_ip_bytes() -> bytes:
    try:
        return socket.inet_aton(socket.gethostbyname(socket.gethostname()))
    except OSError:
        return bytes([127, 0, 0, 1])


_UNIQ_PREFIX = _local_ip_bytes() + struct.pack(">H", os.getpid() & 0xFFFF) + random.randbytes(4)


def new_message_id() -> str:
    """A 32-hex-digit client message id laid out like the Java client's: ip, pid, random, time since
    the start of the month (ms), counter."""
    now = time.time()
    month_start = time.mktime((*time.localtime(now)[:2], 1, 0, 0, 0, 0, 0, -1))
    elapsed = int((now - month_start) * 1000) & 0x7FFFFFFF
    tail = struct.pack(">iH", elapsed, next(_UNIQ_COUNTER) & 0xFFFF)
    return (_UNIQ_PREFIX + tail).hex().upper()


# ------------------------------------------------------------------------------------------ client


def _fields(**values: object) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in values.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


class RemotingClient:
    """Async client for namesrv, controller and broker calls. Use ``async with`` or :meth:`close`."""

    def __init__(
        self,
        namesrv_addrs: Sequence[str] | str = (),
        *,
        pool: ClientPool | None = None,
        connect_timeout: float = 3.0,
        request_timeout: float = 3.0,
    ) -> None:
        if isinstance(namesrv_addrs, str):
            namesrv_addrs = [a for a in namesrv_addrs.split(";") if a.strip()]
        self.namesrv_addrs: tuple[str, ...] = tuple(a.strip() for a in namesrv_addrs)
        self._own_pool = pool is None
        self.pool = pool or ClientPool(connect_timeout=connect_timeout, request_timeout=request_timeout)

    async def __aenter__(self) -> RemotingClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._own_pool:
            await self.pool.close()

    # -- raw

    async def invoke(
        self,
        addr: str,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,
    ) -> RemotingCommand:
        """Send any request and return the raw response, whatever its code."""
        request = RemotingCommand(code=int(code), ext_fields=dict(ext_fields or {}), body=body)
        return await self.pool.invoke(addr, request, timeout)

    async def _call(
        self,
        addr: str,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,
        accept: Iterable[int] = (ResponseCode.SUCCESS,),
    ) -> RemotingCommand:
        response = await self.invoke(addr, code, ext_fields, body, timeout=timeout)
        if response.code not in set(accept):
            raise RemotingError(
                response.code, response.remark, addr=addr, request=request_code_name(code), response=response
            )
        return response

    async def _namesrv_call(
        self, code: int, ext_fields: Mapping[str, str] | None, namesrv: str | None, timeout: float | None
    ) -> tuple[str, RemotingCommand]:
        addrs = (namesrv,) if namesrv else self.namesrv_addrs
        if not addrs:
            raise RemotingConnectionError("no name server address configured")
        last: RemotingException | None = None
        for addr in addrs:
            try:
                return addr, await self._call(addr, code, ext_fields, timeout=timeout)
            except (RemotingConnectionError, RemotingTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    # -- namesrv

    async def get_route(self, topic: str, *, namesrv: str | None = None, timeout: float | None = None) -> TopicRoute:
        """GET_ROUTEINFO_BY_TOPIC (105). TOPIC_NOT_EXIST raises :class:`RemotingError`."""
        _, response = await self._namesrv_call(
            RequestCode.GET_ROUTEINFO_BY_TOPIC,
            _fields(topic=topic, acceptStandardJsonOnly=True),
            namesrv,
            timeout,
        )
        return parse_topic_route(topic, _body_json(response, "GET_ROUTEINFO_BY_TOPIC"))

    async def get_cluster_info(self, *, namesrv: str | None = None, timeout: float | None = None) -> ClusterInfo:
        """GET_BROKER_CLUSTER_INFO (106)."""
        _, response = await self._namesrv_call(RequestCode.GET_BROKER_CLUSTER_INFO, None, namesrv, timeout)
        return parse_cluster_info(_body_json(response, "GET_BROKER_CLUSTER_INFO"))

    async def get_all_topics(self, *, namesrv: str | None = None, timeout: float | None = None) -> tuple[str, ...]:
        """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): every topic name namesrv knows, sorted. The list also holds
        system topics (``TBW102``, ``RMQ_SYS_*``, ``%RETRY%...``) and, as namesrv registers them, cluster and
        broker names. A name server with ``enableAllTopicList=false`` answers SYSTEM_ERROR
        (:class:`RemotingError`)."""
        _, response = await self._namesrv_call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, None, namesrv, timeout)
        if not response.body:
            return ()
        body = _obj(_body_json(response, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER"), "TopicList")
        return tuple(sorted({str(t) for t in _list(body.get("topicList"), "topicList")}))

    # -- controller

    async def get_controller_metadata(self, addr: str, *, timeout: float | None = None) -> ControllerMetadata:
        """CONTROLLER_GET_METADATA_INFO (1005); any controller answers."""
        response = await self._call(addr, RequestCode.CONTROLLER_GET_METADATA_INFO, timeout=timeout)
        ext = response.ext_fields
        return ControllerMetadata(
            addr=addr,
            group=_opt_str(ext.get("group")),
            leader_id=_opt_str(ext.get("controllerLeaderId")),
            leader_address=_opt_str(ext.get("controllerLeaderAddress")),
            is_leader=_bool(ext.get("isLeader", "false")),
            peers=parse_peers(ext.get("peers")),
        )

    async def find_controller_leader(
        self, addrs: Sequence[str] | str, *, timeout: float | None = None
    ) -> ControllerMetadata:
        """Ask every controller for metadata; return the leader's own answer if reachable, else the
        first answer naming a leader - either way send leader-only calls to ``.leader_address``.
        Raises :class:`NoControllerLeader` with each address's error."""
        if isinstance(addrs, str):
            addrs = [a for a in addrs.split(";") if a.strip()]
        if not addrs:
            raise NoControllerLeader("no controller address given")
        results = await asyncio.gather(
            *(self.get_controller_metadata(a.strip(), timeout=timeout) for a in addrs), return_exceptions=True
        )
        answers: list[ControllerMetadata] = []
        problems: list[str] = []
        for addr, result in zip(addrs, results, strict=True):
            if isinstance(result, ControllerMetadata):
                answers.append(result)
            elif isinstance(result, RemotingException):
                problems.append(f"{addr}: {result}")
            elif isinstance(result, BaseException):
                raise result
        for answer in answers:
            if answer.is_leader:
                return answer
        for answer in answers:
            if answer.leader_address:
                return answer
        detail = "; ".join(problems + [f"{a.addr}: no leader known" for a in answers])
        raise NoControllerLeader(f"no controller leader found among {', '.join(addrs)} ({detail})")

    async def get_sync_state_data(
        self, leader: str, broker_names: Sequence[str], *, timeout: float | None = None
    ) -> dict[str, SyncStateInfo]:
        """CONTROLLER_GET_SYNC_STATE_DATA (1006) for several replica groups in one request (leader only)."""
        body = json.dumps(list(broker_names)).encode()
        response = await self._call(leader, RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=body, timeout=timeout)
        return parse_sync_state_data(_body_json(response, "CONTROLLER_GET_SYNC_STATE_DATA"))

    async def get_replica_info(self, leader: str, broker_name: str, *, timeout: float | None = None) -> ReplicaInfo:
        """CONTROLLER_GET_REPLICA_INFO (1004)."""
        response = await self._call(
            leader, RequestCode.CONTROLLER_GET_REPLICA_INFO, _fields(brokerName=broker_name), timeout=timeout
        )
        ext = response.ext_fields
        members: frozenset[int] = frozenset()
        set_epoch = 0
        if response.body:
            body = _obj(_body_json(response, "CONTROLLER_GET_REPLICA_INFO"), "SyncStateSet")
            members = frozenset(_int(i, "syncStateSet member") for i in _list(body.get("syncStateSet"), "syncStateSet"))
            set_epoch = _int(body.get("syncStateSetEpoch"), "syncStateSetEpoch", 0)
        return ReplicaInfo(
            master_broker_id=_opt_int(ext.get("masterBrokerId"), "masterBrokerId"),
            master_address=_opt_str(ext.get("masterAddress")),
            master_epoch=_int(ext.get("masterEpoch"), "masterEpoch", 0),
            sync_state_set=members,
            sync_state_set_epoch=set_epoch,
        )

    async def elect_master(
        self,
        leader: str,
        cluster: str,
        broker_name: str,
        broker_id: int | None = None,
        designate: bool = False,
        *,
        timeout: float | None = None,
    ) -> ElectMasterResult:
        """CONTROLLER_ELECT_MASTER (1002). ``broker_id=None`` lets the controller pick (-1);
        ``designate=True`` is the admin-triggered form (``mqadmin electMaster``). Refusals such as
        CONTROLLER_MASTER_STILL_EXIST (2011) or CONTROLLER_ELECT_MASTER_FAILED (2012) raise
        :class:`RemotingError`."""
        fields = _fields(
            clusterName=cluster,
            brokerName=broker_name,
            brokerId=-1 if broker_id is None else broker_id,
            designateElect=designate,
            invokeTime=int(time.time() * 1000),
        )
        response = await self._call(leader, RequestCode.CONTROLLER_ELECT_MASTER, fields, timeout=timeout)
        ext = response.ext_fields
        members: frozenset[int] = frozenset()
        addrs: dict[int, str] = {}
        group_cluster = group_name = None
        if response.body:
            body = _obj(_body_json(response, "CONTROLLER_ELECT_MASTER"), "ElectMasterResponseBody")
            members = frozenset(_int(i, "syncStateSet member") for i in _list(body.get("syncStateSet"), "syncStateSet"))
            group = _obj(body.get("brokerMemberGroup"), "brokerMemberGroup")
            addrs = {
                _int(k, "brokerAddrs key"): str(v) for k, v in _obj(group.get("brokerAddrs"), "brokerAddrs").items()
            }
            group_cluster = _opt_str(group.get("cluster"))
            group_name = _opt_str(group.get("brokerName"))
        return ElectMasterResult(
            master_broker_id=_opt_int(ext.get("masterBrokerId"), "masterBrokerId"),
            master_address=_opt_str(ext.get("masterAddress")),
            master_epoch=_int(ext.get("masterEpoch"), "masterEpoch", 0),
            sync_state_set_epoch=_int(ext.get("syncStateSetEpoch"), "syncStateSetEpoch", 0),
            sync_state_set=members,
            broker_addrs=dict(sorted(addrs.items())),
            cluster=group_cluster,
            broker_name=group_name,
        )

    # -- broker admin

    async def get_runtime_info(self, addr: str, *, timeout: float | None = None) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO (28): the KVTable as a dict of strings."""
        response = await self._call(addr, RequestCode.GET_BROKER_RUNTIME_INFO, timeout=timeout)
        table = _obj(_obj(_body_json(response, "GET_BROKER_RUNTIME_INFO"), "KVTable").get("table"), "table")
        return {str(k): str(v) for k, v in table.items()}

    async def get_broker_config(self, addr: str, *, timeout: float | None = None) -> dict[str, str]:
        """GET_BROKER_CONFIG (26): every broker key as strings."""
        return dict((await self.get_broker_config_versioned(addr, timeout=timeout)).config)

    async def get_broker_config_versioned(self, addr: str, *, timeout: float | None = None) -> BrokerConfigResult:
        """GET_BROKER_CONFIG (26) plus the config DataVersion JSON from the response header."""
        response = await self._call(addr, RequestCode.GET_BROKER_CONFIG, timeout=timeout)
        text = response.body.decode("utf-8", errors="replace")
        return BrokerConfigResult(parse_properties_text(text), _opt_str(response.ext_fields.get("version")))

    async def update_broker_config(
        self, addr: str, config: Mapping[str, object], *, timeout: float | None = None
    ) -> None:
        """UPDATE_BROKER_CONFIG (25). The broker rewrites its ``-c`` file; blacklisted keys give
        NO_PERMISSION (:class:`RemotingError`)."""
        body = format_properties_text(config).encode("ascii")
        await self._call(addr, RequestCode.UPDATE_BROKER_CONFIG, body=body, timeout=timeout)

    async def create_topic(
        self,
        addr: str,
        topic: str,
        read_queues: int,
        write_queues: int,
        perm: int = PERM_READ | PERM_WRITE,
        *,
        order: bool = False,
        timeout: float | None = None,
    ) -> None:
        """UPDATE_AND_CREATE_TOPIC (17) on one broker (it then registers the topic with namesrv)."""
        fields = _fields(
            topic=topic,
            defaultTopic=DEFAULT_TOPIC,
            readQueueNums=read_queues,
            writeQueueNums=write_queues,
            perm=perm,
            topicFilterType="SINGLE_TAG",
            topicSysFlag=0,
            order=order,
        )
        await self._call(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, fields, timeout=timeout)

    async def get_ha_status(self, addr: str, *, timeout: float | None = None) -> HaStatus:
        """GET_BROKER_HA_STATUS (907)."""
        response = await self._call(addr, RequestCode.GET_BROKER_HA_STATUS, timeout=timeout)
        return parse_ha_status(_body_json(response, "GET_BROKER_HA_STATUS"))

    async def delete_expired_commitlog(self, addr: str, *, timeout: float | None = None) -> None:
        """DELETE_EXPIRED_COMMITLOG (329): the broker's next clean-up passes delete commitlog files older than
        ``fileReservedTime`` now (not at ``deleteWhen``); never the file being written."""
        await self._call(addr, RequestCode.DELETE_EXPIRED_COMMITLOG, timeout=timeout)

    async def clean_expired_consume_queue(self, addr: str, *, timeout: float | None = None) -> None:
        """CLEAN_EXPIRED_CONSUMEQUEUE (306): drop consume-queue files that point below the commitlog's min offset
        (which moves every queue's min offset up)."""
        await self._call(addr, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, timeout=timeout)

    async def get_ha_info(self, addr: str, *, timeout: float | None = None) -> HaInfo:
        """EXCHANGE_BROKER_HA_INFO (906) without fields: a master answers its HA address, broker address and
        init max offset (a slave answers empty fields)."""
        response = await self._call(addr, RequestCode.EXCHANGE_BROKER_HA_INFO, timeout=timeout)
        f = response.ext_fields
        return HaInfo(
            master_ha_address=f.get("masterHaAddress") or None,
            master_address=f.get("masterAddress") or None,
            master_flush_offset=_opt_int(f.get("masterFlushOffset"), "masterFlushOffset"),
        )

    async def set_ha_master(self, addr: str, info: HaInfo, *, timeout: float | None = None) -> None:
        """EXCHANGE_BROKER_HA_INFO (906) with the master's fields: the slave at ``addr`` points its HA client at
        ``info.master_ha_address`` at once (it otherwise learns it only from a name server registration)."""
        if not info.master_ha_address:
            raise ValueError("set_ha_master needs the master's HA address")
        await self._call(
            addr,
            RequestCode.EXCHANGE_BROKER_HA_INFO,
            _fields(
                masterHaAddress=info.master_ha_address,
                masterAddress=info.master_address,
                masterFlushOffset=info.master_flush_offset,
            ),
            timeout=timeout,
        )

    # -- produce

    async def send(
        self,
        addr: str,
        topic: str,
        body: bytes,
        queue_id: int,
        keys: Sequence[str] | str | None = None,
        tags: str | None = None,
        properties: Mapping[str, str] | None = None,
        producer_group: str = DEFAULT_PRODUCER_GROUP,
        *,
        broker_name: str | None = None,
        flag: int = 0,
        timeout: float | None = None,
    ) -> SendResult:
        """SEND_MESSAGE_V2 (310) to one queue of one broker. Never raises on a broker status: see
        :class:`SendResult`.``status`` / ``stored``. A ``UNIQ_KEY`` is generated unless given."""
        props: dict[str, str] = dict(properties or {})
        if keys:
            props[PROPERTY_KEYS] = keys if isinstance(keys, str) else " ".join(keys)
        if tags:
            props[PROPERTY_TAGS] = tags
        props.setdefault("WAIT", "true")
        msg_id = props.setdefault(PROPERTY_UNIQ_KEY, new_message_id())
        fields = _fields(
            a=producer_group,
            b=topic,
            c=DEFAULT_TOPIC,
            d=4,
            e=queue_id,
            f=0,
            g=int(time.time() * 1000),
            h=flag,
            i=format_properties(props),
            j=0,
            k=False,
            m=False,
            n=broker_name,
        )
        response = await self.invoke(addr, RequestCode.SEND_MESSAGE_V2, fields, body, timeout=timeout)
        status = put_status(response.code, response.remark)
        ext = response.ext_fields
        return SendResult(
            status=status.name,
            stored=status.stored,
            code=response.code,
            remark=response.remark,
            msg_id=msg_id,
            offset_msg_id=_opt_str(ext.get("msgId")),
            queue_id=_int(ext.get("queueId"), "queueId", queue_id),
            queue_offset=_int(ext.get("queueOffset"), "queueOffset", -1) if status.stored else -1,
            transaction_id=_opt_str(ext.get("transactionId")),
            addr=addr,
        )

    # -- consume

    async def pull(
        self,
        addr: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_nums: int = 32,
        consumer_group: str = DEFAULT_CONSUMER_GROUP,
        *,
        subscription: str = "*",
        commit_offset: int | None = None,
        suspend_timeout_ms: int = 0,
        decompress: bool = True,
        timeout: float | None = None,
    ) -> PullResult:
        """PULL_MESSAGE (11) with the SUBSCRIPTION bit, so no heartbeat-registered consumer is needed.

        ``commit_offset`` sets COMMIT_OFFSET (never do that against a slave); ``suspend_timeout_ms > 0``
        long-polls (make ``timeout`` longer). ``suggest_which_broker_id`` is the broker's hint for the
        next pull (slave read). Other codes (e.g. SYSTEM_BUSY from a slave with slaveReadEnable=false)
        raise :class:`RemotingError`."""
        sys_flag = PULL_FLAG_SUBSCRIPTION
        if commit_offset is not None:
            sys_flag |= PULL_FLAG_COMMIT_OFFSET
        if suspend_timeout_ms > 0:
            sys_flag |= PULL_FLAG_SUSPEND
        fields = _fields(
            consumerGroup=consumer_group,
            topic=topic,
            queueId=queue_id,
            queueOffset=offset,
            maxMsgNums=max_nums,
            sysFlag=sys_flag,
            commitOffset=commit_offset or 0,
            suspendTimeoutMillis=suspend_timeout_ms,
            subscription=subscription,
            subVersion=0,
            expressionType="TAG",
        )
        response = await self._call(
            addr,
            RequestCode.PULL_MESSAGE,
            fields,
            timeout=timeout,
            accept=(
                ResponseCode.SUCCESS,
                ResponseCode.PULL_NOT_FOUND,
                ResponseCode.PULL_RETRY_IMMEDIATELY,
                ResponseCode.PULL_OFFSET_MOVED,
            ),
        )
        if response.code == ResponseCode.SUCCESS:
            status = "FOUND"
        elif response.code == ResponseCode.PULL_NOT_FOUND:
            status = "NO_NEW_MSG"
        elif response.code == ResponseCode.PULL_OFFSET_MOVED:
            status = "OFFSET_ILLEGAL"
        elif (response.remark or "") == "NO_MATCHED_MESSAGE":
            status = "NO_MATCHED_MSG"
        else:
            status = "RETRY"
        ext = response.ext_fields
        messages: tuple[Message, ...] = ()
        if status == "FOUND" and response.body:
            messages = tuple(decode_messages(response.body, decompress=decompress))
        return PullResult(
            status=status,
            code=response.code,
            remark=response.remark,
            next_begin_offset=_int(ext.get("nextBeginOffset"), "nextBeginOffset", offset),
            min_offset=_int(ext.get("minOffset"), "minOffset", 0),
            max_offset=_int(ext.get("maxOffset"), "maxOffset", 0),
            suggest_which_broker_id=_int(ext.get("suggestWhichBrokerId"), "suggestWhichBrokerId", 0),
            messages=messages,
        )

    async def get_min_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int:
        """GET_MIN_OFFSET (31): the smallest consume-queue offset still stored."""
        response = await self._call(
            addr, RequestCode.GET_MIN_OFFSET, _fields(topic=topic, queueId=queue_id), timeout=timeout
        )
        return _int(response.ext_fields.get("offset"), "offset")

    async def get_max_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int:
        """GET_MAX_OFFSET (30): the next consume-queue offset to be written."""
        response = await self._call(
            addr,
            RequestCode.GET_MAX_OFFSET,
            _fields(topic=topic, queueId=queue_id, committed=True),
            timeout=timeout,
        )
        return _int(response.ext_fields.get("offset"), "offset")

    async def search_offset(
        self, addr: str, topic: str, queue_id: int, timestamp_ms: int, *, timeout: float | None = None
    ) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP (29): the consume-queue offset of the first message stored at or after
        ``timestamp_ms`` (the broker's default lower boundary). A timestamp later than every stored message
        gives the queue's max offset; an earlier one gives its min offset."""
        response = await self._call(
            addr,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
            _fields(topic=topic, queueId=queue_id, timestamp=int(timestamp_ms)),
            timeout=timeout,
        )
        return _int(response.ext_fields.get("offset"), "offset")

    async def query_consumer_offset(
        self, addr: str, consumer_group: str, topic: str, queue_id: int, *, timeout: float | None = None
    ) -> int | None:
        """QUERY_CONSUMER_OFFSET (14); ``None`` when the group has no offset (QUERY_NOT_FOUND)."""
        response = await self._call(
            addr,
            RequestCode.QUERY_CONSUMER_OFFSET,
            _fields(consumerGroup=consumer_group, topic=topic, queueId=queue_id, setZeroIfNotFound=False),
            timeout=timeout,
            accept=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
        )
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return _int(response.ext_fields.get("offset"), "offset")

    async def update_consumer_offset(
        self,
        addr: str,
        consumer_group: str,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        oneway: bool = False,
        timeout: float | None = None,
    ) -> None:
        """UPDATE_CONSUMER_OFFSET (15); ``oneway=True`` sends it as the Java client does."""
        fields = _fields(consumerGroup=consumer_group, topic=topic, queueId=queue_id, commitOffset=offset)
        if oneway:
            request = RemotingCommand(code=RequestCode.UPDATE_CONSUMER_OFFSET, ext_fields=fields)
            await self.pool.invoke_oneway(addr, request, timeout)
            return
        await self._call(addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields, timeout=timeout)
