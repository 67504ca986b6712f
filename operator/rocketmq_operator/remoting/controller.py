"""The controller role: controller metadata and leader, SyncStateSets, replica info, elections."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .caller import Caller
from .codes import (
    RequestCode,
)
from .errors import (
    NoControllerLeader,
    RemotingException,
)
from .parsing import _body_json, _bool, _fields, _int, _list, _obj, _opt_int, _opt_str


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


class ControllerCalls(Caller):
    """Controller requests: metadata, leader, SyncStateSet, replicas, elections."""

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

    async def clean_broker_data(
        self,
        leader: str,
        cluster: str,
        broker_name: str,
        broker_ids: Sequence[int],
        *,
        timeout: float | None = None,
    ) -> None:
        """CLEAN_BROKER_DATA (1011): forget replicas of a group (``mqadmin cleanBrokerMetadata``), after a scale-in.
        The controller refuses while one of them is still alive in its heartbeat table. Always sent with
        ``isCleanLivingBroker=false``: with true, RocketMQ ignores the id list and forgets the whole group
        (`ReplicasInfoManager.cleanBrokerData` builds the id set only in the not-living branch; seen on 5.5.0)."""
        fields = _fields(
            clusterName=cluster,
            brokerName=broker_name,
            brokerControllerIdsToClean=";".join(str(i) for i in broker_ids),
            isCleanLivingBroker=False,
            invokeTime=int(time.time() * 1000),
        )
        await self._call(leader, RequestCode.CLEAN_BROKER_DATA, fields, timeout=timeout)
