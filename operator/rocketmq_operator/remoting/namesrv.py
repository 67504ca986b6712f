"""The name server role: topic routes, cluster info, and one broker group's members."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .caller import Caller
from .codes import (
    PERM_READ,
    PERM_WRITE,
    RequestCode,
)
from .errors import RemotingError, RemotingException, is_name_server_not_ready
from .parsing import _body_json, _bool, _fields, _int, _list, _obj, _opt_str


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
class BrokerMemberGroup:
    """One broker group as one name server has it registered (GET_BROKER_MEMBER_GROUP)."""

    cluster: str
    """The cluster name the request gave: the name server finds the group by its brokerName alone and echoes it."""
    broker_name: str
    broker_addrs: Mapping[int, str]
    """broker id -> ``"ip:port"``; id 0 is the master. Empty when the name server has no broker of the group."""

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(0)


def _broker_addrs(raw: Any, what: str) -> dict[int, str]:
    # fastjson (fastjson2 in 5.5.0) writes the Map<Long, String> keys bare ({0:"ip:port"}); loads_json quoted them.
    addrs = {_int(k, f"{what} key"): str(v) for k, v in _obj(raw, what).items()}
    return dict(sorted(addrs.items()))


def _broker_data(raw: Any, what: str) -> BrokerData:
    data = _obj(raw, what)
    return BrokerData(
        cluster=str(data.get("cluster", "")),
        broker_name=str(data.get("brokerName", "")),
        broker_addrs=_broker_addrs(data.get("brokerAddrs"), f"{what}.brokerAddrs"),
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


def parse_broker_member_group(body: Any) -> BrokerMemberGroup:
    """A GetBrokerMemberGroupResponseBody: ``{"brokerMemberGroup":{"brokerAddrs":{0:"ip:port",2:...},
    "brokerName":...,"cluster":...}}``."""
    data = _obj(_obj(body, "GetBrokerMemberGroupResponseBody").get("brokerMemberGroup"), "brokerMemberGroup")
    return BrokerMemberGroup(
        cluster=str(data.get("cluster", "")),
        broker_name=str(data.get("brokerName", "")),
        broker_addrs=_broker_addrs(data.get("brokerAddrs"), "brokerMemberGroup.brokerAddrs"),
    )


ROUTE_PROBE_TOPIC = "TBW102"  # asked only to see whether a name server serves routes: any answer but "not ready"


class NameServerCalls(Caller):
    """Name server requests: routes, cluster info, a group's members, topic list."""

    async def get_route(self, topic: str, *, namesrv: str | None = None, timeout: float | None = None) -> TopicRoute:
        """GET_ROUTEINFO_BY_TOPIC (105). TOPIC_NOT_EXIST raises :class:`RemotingError`."""
        _, response = await self._namesrv_call(
            RequestCode.GET_ROUTEINFO_BY_TOPIC,
            _fields(topic=topic, acceptStandardJsonOnly=True),
            namesrv,
            timeout,
        )
        return parse_topic_route(topic, _body_json(response, "GET_ROUTEINFO_BY_TOPIC"))

    async def serves_routes(self, namesrv: str, *, timeout: float | None = None) -> bool:
        """Whether ``namesrv`` answers route lookups: up, and past its needWaitForService window, in which it
        answers every lookup SYSTEM_ERROR "name server not ready". Any other answer, TOPIC_NOT_EXIST included,
        is serving."""
        try:
            await self.get_route(ROUTE_PROBE_TOPIC, namesrv=namesrv, timeout=timeout)
        except RemotingError as exc:
            return not is_name_server_not_ready(exc)
        except (RemotingException, OSError):
            return False
        return True

    async def name_servers_serve_routes(self, *, timeout: float | None = None) -> bool:
        """Every name server of ``namesrv_addrs`` serves routes (:meth:`serves_routes`)."""
        return all([await self.serves_routes(addr, timeout=timeout) for addr in self.namesrv_addrs])

    async def get_cluster_info(self, *, namesrv: str | None = None, timeout: float | None = None) -> ClusterInfo:
        """GET_BROKER_CLUSTER_INFO (106)."""
        _, response = await self._namesrv_call(RequestCode.GET_BROKER_CLUSTER_INFO, None, namesrv, timeout)
        return parse_cluster_info(_body_json(response, "GET_BROKER_CLUSTER_INFO"))

    async def get_broker_member_group(
        self, cluster: str, broker_name: str, *, namesrv: str | None = None, timeout: float | None = None
    ) -> BrokerMemberGroup:
        """GET_BROKER_MEMBER_GROUP (901): the brokers a name server has registered for one group, copied from the
        table GET_BROKER_CLUSTER_INFO lists whole (`RouteInfoManager.getBrokerMemberGroup`): its answer does not
        grow with the cluster's other groups. Both fields are sent, as a broker sends them
        (`BrokerOuterAPI.getBrokerMemberGroup`): the header declares them `@CFNotNull`, though RocketMQ 5.5.0's
        decode only logs a missing one. The name server finds the group by ``broker_name`` alone and echoes
        ``cluster``; a group it has no broker of is an empty `broker_addrs`."""
        _, response = await self._namesrv_call(
            RequestCode.GET_BROKER_MEMBER_GROUP,
            _fields(clusterName=cluster, brokerName=broker_name),
            namesrv,
            timeout,
        )
        return parse_broker_member_group(_body_json(response, "GET_BROKER_MEMBER_GROUP"))

    async def unregister_broker(
        self,
        namesrv: str,
        *,
        cluster: str,
        broker_name: str,
        broker_addr: str,
        broker_id: int,
        timeout: float | None = None,
    ) -> None:
        """UNREGISTER_BROKER (104) on one name server: it forgets ``broker_addr`` (its routes and its live entry)
        until the broker registers again (on a role change, or every `registerNameServerPeriod`). The name
        server applies it asynchronously (`BatchUnregistrationService`), right after answering."""
        await self._call(
            namesrv,
            RequestCode.UNREGISTER_BROKER,
            _fields(brokerName=broker_name, brokerAddr=broker_addr, clusterName=cluster, brokerId=broker_id),
            timeout=timeout,
        )

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
