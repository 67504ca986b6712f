"""broker.conf, controller/name-server config and rmq-proxy.json rendering, the same for every platform.

A platform only says *where* things are (a `Placement`: addresses, ports, paths, platform tuning); the keys
that carry the user's intent (quorum values per HA mode, roles, ids) are decided here once. Output is an
ordered mapping of RocketMQ key → string, and `properties_text` turns it into the file RocketMQ reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rocketmq_operator.api.models import (
    DEFAULT_BROKER_METRICS_PORT,
    BrokerGroup,
    ControllerGroup,
    HAMode,
    MetricsSpec,
    Proxy,
)
from rocketmq_operator.core.quorum import config_text, effective_quorum, quorum_keys

NAMESRV_PORT = 9876
CONTROLLER_PORT = 9878
RAFT_PORT = 9880  # JRaft controllers: the Raft peer port (RocketMQ's documented default)
BROKER_PORT = 10911


CONTROLLER_MODE_TIMINGS: Mapping[str, str] = {
    # A slave that handshakes with a master it is already level with reports its offset only on new data or
    # once this interval has passed since its last write (AutoSwitchHAClient.transferFromMaster, checked before
    # a 1 s select), and the master sends nothing until that first report (AutoSwitchHAConnection): after every
    # election or switchover the slaves are out of the SyncStateSet for 1-5 s, and with minInSyncReplicas > 1
    # every put is refused meanwhile. 0: the slave reports right after the handshake (the set regrows within
    # tens of ms), and an idle master sends an empty header about every 100 ms per slave (its write loop's
    # wait), answered with a 12-byte report: no CPU difference measured (docs/benchmarks.md, Switchover).
    "haSendHeartbeatInterval": "0",
    # A broker's request to the controller leader that times out (a partitioned or suspended leader) makes its
    # Netty client close that connection (NettyRemotingClient.invokeSync). The controller reads the close as the
    # broker going away (DefaultBrokerHeartbeatManager.onBrokerChannelClose drops it from its live table), and a
    # controller that leads again after the heal elects a new master away from a master that never stopped
    # serving, by the offsets its stale table holds: acknowledged writes were truncated (docs/chaos.md, a
    # partition of a controller majority). Kept open, the connection resumes after the heal; a controller that
    # is really gone closes it from its end (its process exits), and a dead broker's own connections still close.
    "clientCloseSocketIfTimeout": "false",
}
"""Failover timings rendered for controller mode (docs/benchmarks.md, Failover); `brokerConfig` overrides them."""

BROKER_START_SPIN_FIX: Mapping[str, str] = {
    # RocketMQ 5.x up to 5.5.0 (apache/rocketmq#10515, fixed upstream by #10517): TransactionMetricsFlushService
    # waits only after its first flush, so from the broker's start until one flush interval has passed (10 s by
    # default) its loop spins a whole core, on every broker start, transactions used or not (read in 5.4.0's and
    # 5.5.0's bytecode). Measured (docs/benchmarks.md, "A broker's start"): a quickstart's three brokers used
    # 23.7 CPU-s in their first 35 s, 15.8 of them in that thread; 9.0 CPU-s with 1 s. At 1 s it spins at most 1 s
    # and then writes its small metrics file once a second instead of every 10 s.
    "transactionMetricFlushInterval": "1000",
}
"""Rendered for every broker, every HA mode; `brokerConfig` overrides it."""


@dataclass(frozen=True)
class ReplicaPlacement:
    """Where one process lives. `address` None means: filled in at start (the pod IP). `metrics_port` None means:
    the group's `spec.metrics.port` (a pod has its own network namespace); a platform that runs several brokers on
    one host gives each its own."""

    listen_port: int
    store_root: str
    address: str | None = None
    metrics_port: int | None = None


@dataclass(frozen=True)
class BrokerPlacement:
    name_servers: Sequence[str]
    controllers: Sequence[str]
    replicas: Sequence[ReplicaPlacement]
    # Platform tuning applied before the user's brokerConfig (the user's keys win).
    platform_defaults: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ControllerPlacement:
    """Controller peers (`host:port` each controller answers brokers on, in ordinal order: DLedger's peer address
    too), and, for JRaft, the Raft peer addresses (a port of their own); and each process's place."""

    peers: Sequence[str]
    replicas: Sequence[ReplicaPlacement]
    raft_peers: Sequence[str] = ()
    name_server_replicas: Sequence[ReplicaPlacement] = ()
    platform_defaults: Mapping[str, str] = field(default_factory=dict)


def broker_config(bg: BrokerGroup, ordinal: int, placement: BrokerPlacement) -> dict[str, str]:
    """The broker.conf of replica `ordinal` (0-based)."""
    spec = bg.spec
    q = effective_quorum(spec)
    mode = q.mode
    where = placement.replicas[ordinal]
    conf: dict[str, str] = {
        "brokerClusterName": spec.cluster_name,
        "brokerName": bg.metadata.name,
        "listenPort": str(where.listen_port),
        "haListenPort": str(where.listen_port + 1),
        "namesrvAddr": ";".join(placement.name_servers),
        "storePathRootDir": where.store_root,
        "storePathCommitLog": f"{where.store_root}/commitlog",
    }
    if where.address is not None:
        conf["brokerIP1"] = where.address
        conf["brokerIP2"] = where.address
    conf["totalReplicas"] = str(q.total_replicas)
    if mode is HAMode.CONTROLLER:
        # The controller assigns ids and roles; -1/SLAVE is how every replica starts (facts §1.5a).
        conf.update(
            brokerId="-1",
            brokerRole="SLAVE",
            enableControllerMode="true",
            controllerAddr=";".join(placement.controllers),
        )
        conf.update(quorum_keys(q))
        conf.update(CONTROLLER_MODE_TIMINGS)
    else:
        role = "SLAVE"
        if ordinal == 0:
            role = "ASYNC_MASTER" if mode is HAMode.ASYNC else "SYNC_MASTER"
        conf.update(brokerId=str(ordinal), brokerRole=role)
        conf.update(quorum_keys(q))
        if mode is HAMode.SLAVE_ACTING_MASTER:
            conf.update(
                enableSlaveActingMaster="true",
                brokerHeartbeatInterval="1000",
                brokerNotActiveTimeoutMillis="10000",
            )
    conf.update(BROKER_START_SPIN_FIX)
    conf.update(BROKER_REGISTRATION_KEYS)
    # Off unless asked for: an auto-created topic or group exists only on the master that created it and is
    # missing after a failover (api.validation warns when spec.autoCreate switches it on).
    conf["autoCreateTopicEnable"] = config_text(spec.auto_create.topics)
    conf["autoCreateSubscriptionGroup"] = config_text(spec.auto_create.subscription_groups)
    conf["slaveReadEnable"] = config_text(spec.slave_read.enabled)
    if spec.slave_read.memory_ratio is not None:
        conf["accessMessageInMemoryMaxRatio"] = str(spec.slave_read.memory_ratio)
    conf.update(metrics_keys(spec.metrics, where))
    if spec.auth.enabled:
        conf.update(AUTH_KEYS)
    for key, value in placement.platform_defaults.items():
        conf.setdefault(key, value)
    for key, user_value in spec.broker_config.items():
        conf[key] = config_text(user_value)
    return conf


_AUTHN = "org.apache.rocketmq.auth.authentication.provider."
_AUTHZ = "org.apache.rocketmq.auth.authorization.provider."
# ACL 2.0 with users and ACLs in each broker's own store (RocksDB under storePathRootDir/config). Exempt:
# NOTIFY_BROKER_ROLE_CHANGED (1008), which the controllers send and cannot sign (they have no credentials);
# without it a broker would learn of its election only from its next poll of the controller.
AUTH_KEYS: Mapping[str, str] = {
    "authenticationEnabled": "true",
    "authenticationProvider": _AUTHN + "DefaultAuthenticationProvider",
    "authenticationMetadataProvider": _AUTHN + "LocalAuthenticationMetadataProvider",
    "authenticationWhitelist": "1008",
    "authorizationEnabled": "true",
    "authorizationProvider": _AUTHZ + "DefaultAuthorizationProvider",
    "authorizationMetadataProvider": _AUTHZ + "LocalAuthorizationMetadataProvider",
    "authorizationWhitelist": "1008",
}


def auth_secret_keys(username: str, password: str) -> dict[str, str]:
    """The broker.conf keys that hold the admin Secret: the Super user every broker creates at start and signs
    its requests to other brokers with. Never part of a rendered ConfigMap: the platform adds them where only
    the broker reads them (a 0600 file locally, a Secret volume on Kubernetes)."""
    return {
        "innerClientAuthenticationCredentials": json.dumps(
            {"accessKey": username, "secretKey": password}, separators=(",", ":")
        )
    }


def metrics_keys(metrics: MetricsSpec, where: ReplicaPlacement) -> dict[str, str]:
    """RocketMQ's own Prometheus exporter (BrokerMetricsManager: an HTTP server answering /metrics on
    metricsPromExporterHost:metricsPromExporterPort). A blank host would bind brokerIP1 only; a pod binds every
    address of its own network namespace (the pod IP for Prometheus, localhost for `kubectl port-forward`); a
    local broker binds its placement address (loopback), on the port its placement checked was free."""
    if not metrics.enabled:
        return {"metricsExporterType": "DISABLE"}
    return {
        "metricsExporterType": "PROM",
        "metricsPromExporterHost": where.address or "0.0.0.0",
        "metricsPromExporterPort": str(where.metrics_port if where.metrics_port is not None else metrics.port),
    }


def prometheus_port(conf: Mapping[str, str]) -> int | None:
    """The port a rendered broker.conf's Prometheus exporter listens on, None when it runs none (the user's
    brokerConfig may have changed either key; RocketMQ reads PROM by name or as its number 2)."""
    if conf.get("metricsExporterType", "DISABLE").strip() not in ("PROM", "2"):
        return None
    try:
        return int(conf.get("metricsPromExporterPort", str(DEFAULT_BROKER_METRICS_PORT)))
    except ValueError:
        return None


JRAFT_SCAN_WAIT_MS = 15_000


def dledger_peers(peers: Sequence[str]) -> str:
    """`n0-host:port;n1-host:port;…` (ids n0…n{k-1} in ordinal order)."""
    return ";".join(f"n{i}-{addr}" for i, addr in enumerate(peers))


def controller_config(cg: ControllerGroup, ordinal: int, placement: ControllerPlacement) -> dict[str, str]:
    """Config of controller `ordinal`: a name server hosting a controller, or a standalone controller."""
    where = placement.replicas[ordinal]
    conf: dict[str, str] = {}
    if not cg.spec.standalone:
        conf.update(listenPort=str(where.listen_port), enableControllerInNamesrv="true")
        conf.update(_namesrv_keys(), kvConfigPath=f"{where.store_root}/kvConfig.json")
    if cg.spec.type == "jraft":
        # JRaftController: Raft between the jRaftInitConf addresses, brokers served on the jRaftControllerRPCAddr
        # one of the same index (ControllerStartup/NamesrvStartup read these keys into JraftConfig).
        conf.update(
            controllerType="jRaft",
            jRaftGroupId=cg.metadata.name,
            jRaftServerId=placement.raft_peers[ordinal],
            jRaftInitConf=",".join(placement.raft_peers),
            jRaftControllerRPCAddr=",".join(placement.peers),
            # JRaft replicates each broker's last heartbeat time through Raft, so controllers restarted together
            # replay stale ones; the leader's first scan for inactive brokers comes only this long after the
            # node's first heartbeat (default 1 s, counted even for one refused while no leader existed) and
            # elected a new master while the old one was alive and acknowledging (docs/chaos.md, finding 7).
            # Longer than a broker's heartbeat timeout (10 s) plus its heartbeats' interval: every live broker is
            # heard through the new leader before anyone is declared inactive.
            jRaftScanWaitTimeoutMs=str(JRAFT_SCAN_WAIT_MS),
        )
    else:
        conf.update(
            controllerType="DLedger",
            controllerDLegerGroup=cg.metadata.name,
            controllerDLegerPeers=dledger_peers(placement.peers),
            controllerDLegerSelfId=f"n{ordinal}",
        )
    conf.update(
        controllerStorePath=f"{where.store_root}/controller",
        configStorePath=f"{where.store_root}/controller.properties",
        enableElectUncleanMaster="false",
        notifyBrokerRoleChanged="true",
    )
    for key, value in placement.platform_defaults.items():
        conf.setdefault(key, value)
    for key, user_value in cg.spec.controller_config.items():
        conf[key] = config_text(user_value)
    return conf


NAME_SERVER_WAIT_FOR_SERVICE_S = 8
"""How long a name server that has just started answers route lookups with SYSTEM_ERROR "name server not ready"
(5.5.0 `needWaitForService`, `waitSecondsForService`; RocketMQ's default is off). A restarted name server knows
only the brokers that registered with it since it started, and each broker registers on its own period: without
the wait it served a route whose group had no master yet, a client installed it, and every send failed with no
route until the master registered (docs/chaos.md, finding 8). A client keeps its old route meanwhile, or asks
another name server (`remoting.caller`). Long enough for the operator's pass to re-register the master with it
(`control.policy`: 1.2 s after the start locally; on Kubernetes at load 14-34 the master-less windows it ended
lasted 3.3 and 5.1 s, docs/chaos.md), and short, because a master that fails inside the window cannot be routed
to through that name server until it ends (7.5 s seen with 15 s); the brokers' own registration
(`BROKER_REGISTRATION_KEYS`, every 10 s) is the fallback when no operator runs."""

BROKER_REGISTRATION_KEYS: Mapping[str, str] = {
    # Every broker registers with every name server this often (RocketMQ's default 30 s; it takes 10-60 s): a
    # restarted name server lists every replica within this period even when no operator re-registers them.
    "registerNameServerPeriod": "10000",
}
"""Rendered for every broker, every HA mode; `brokerConfig` overrides it."""


def _namesrv_keys() -> dict[str, str]:
    # supportActingMaster lets slave-acting-master groups keep a writable route when their master dies.
    return {
        "supportActingMaster": "true",
        "needWaitForService": "true",
        "waitSecondsForService": str(NAME_SERVER_WAIT_FOR_SERVICE_S),
    }


def namesrv_config(cg: ControllerGroup, ordinal: int, placement: ControllerPlacement) -> dict[str, str]:
    """Config of a standalone name server (standalone: true)."""
    where = placement.name_server_replicas[ordinal]
    conf = {
        "listenPort": str(where.listen_port),
        **_namesrv_keys(),
        "kvConfigPath": f"{where.store_root}/kvConfig.json",
    }
    for key, value in cg.spec.controller_config.items():
        conf[key] = config_text(value)
    return conf


def properties_value(value: str) -> str:
    """``value`` as java.util.Properties reads it back unchanged: a backslash escapes (a password or a JSON
    value may hold one), a line break would end the entry, leading blanks would be dropped, and RocketMQ reads
    its -c file as ISO-8859-1 (Properties.load of a stream): anything outside ASCII is a \\uXXXX escape."""
    out = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    if not out.isascii():
        utf16 = out.encode("utf-16-be")
        units = (int.from_bytes(utf16[i : i + 2], "big") for i in range(0, len(utf16), 2))
        out = "".join(chr(u) if u < 0x80 else f"\\u{u:04x}" for u in units)
    # Properties skips blanks before a value up to the first other character; an escaped first blank is one.
    first = {" ": "\\ ", "\t": "\\t", "\f": "\\f"}.get(out[:1])
    return first + out[1:] if first is not None else out


def properties_text(conf: Mapping[str, str], header: str = "") -> str:
    lines = [f"# {line}" for line in header.splitlines()] if header else []
    lines.extend(f"{key}={properties_value(value)}" for key, value in conf.items())
    return "\n".join(lines) + "\n"


PROXY_CONFIG_FILE = "rmq-proxy.json"
_PROXY_AUTH = "org.apache.rocketmq.proxy.auth."
# ACL 2.0 at the proxy (5.5.0 `AuthConfig`, read from rmq-proxy.json): the proxy authenticates and authorizes each
# client itself, with users and ACLs its metadata providers read from one of the cluster's brokers (cached;
# `ClusterMetadataService`), and signs its own requests to the brokers as the admin (`AclClientRPCHook` over
# innerClientAuthenticationCredentials, only with enableAclRpcHookForClusterMode), which the platform adds where
# only the proxy reads it (`auth_secret_keys`).
PROXY_AUTH_KEYS: Mapping[str, object] = {
    "authenticationEnabled": True,
    "authenticationProvider": _AUTHN + "DefaultAuthenticationProvider",
    "authenticationMetadataProvider": _PROXY_AUTH + "ProxyAuthenticationMetadataProvider",
    "authorizationEnabled": True,
    "authorizationProvider": _AUTHZ + "DefaultAuthorizationProvider",
    "authorizationMetadataProvider": _PROXY_AUTH + "ProxyAuthorizationMetadataProvider",
    "enableAclRpcHookForClusterMode": True,
}


PROXY_TLS_WATCH_MS = 10_000
"""How often a proxy with spec.tls reads its certificate files for a renewal (ProxyConfig tlsCertWatchIntervalMs;
RocketMQ's default is an hour). Two small files hashed every 10 s; a renewed certificate is served within that."""


def proxy_config(
    proxy: Proxy,
    name_servers: Sequence[str],
    grpc_port: int,
    remoting_port: int,
    tls_files: tuple[str, str] | None = None,
    advertised_host: str | None = None,
) -> dict[str, object]:
    """rmq-proxy.json of every proxy of a Proxy (cluster mode: routes from the name servers, sends straight to the
    brokers). fastjson2 reads it into ProxyConfig and AuthConfig (5.5.0 `Configuration.init`); integers stay
    integers. The route cache is refreshed every `routeRefreshSeconds` (RocketMQ's 20 s would keep a proxy
    sending to a deposed master that long).

    With spec.tls, ``tls_files`` is (certificate, key) as the platform places them; they must be the same paths as
    the JVM's -Dtls.server.certPath/keyPath (`render.jvm.tls_flags`): the gRPC server reads ProxyConfig's paths,
    and its file watcher (5.5.0 `TlsCertificateManager`) watches ProxyConfig's paths but reloads only when the
    changed path equals TlsSystemConfig's.

    ``advertised_host`` (Kubernetes: spec.service.advertisedHost) is the host remoting clients are told to reach
    the proxy at."""
    conf: dict[str, object] = {
        "rocketMQClusterName": proxy.spec.cluster_name,
        "proxyMode": "cluster",
        "namesrvAddr": ";".join(name_servers),
        "grpcServerPort": grpc_port,
        "remotingListenPort": remoting_port,
        "topicRouteServiceCacheRefreshSeconds": proxy.spec.route_refresh_seconds,
        # A route names the proxy's endpoint with the port the client dialled, not grpcServerPort: a client outside
        # the cluster reaches a proxy through a node port (30081) or a load balancer, and was refused at 8081.
        "useEndpointPortFromRequest": True,
    }
    if advertised_host is not None:
        # The host of every route a remoting client gets from a proxy (5.5.0 GetTopicRouteActivity: one
        # remotingAccessAddr:remotingListenPort for all brokers); the proxy's own address otherwise.
        conf["remotingAccessAddr"] = advertised_host
    if proxy.spec.auth.enabled:
        conf |= PROXY_AUTH_KEYS
    if proxy.spec.tls.enabled:
        if tls_files is None:
            raise ValueError(f"Proxy/{proxy.metadata.name}: spec.tls is on and no certificate files were placed")
        cert, key = tls_files
        # Without these RocketMQ serves a self-signed certificate it makes at start (tlsTestModeEnable: true).
        conf |= {
            "tlsTestModeEnable": False,
            "tlsCertPath": cert,
            "tlsKeyPath": key,
            "tlsCertWatchIntervalMs": PROXY_TLS_WATCH_MS,
        }
    if proxy.spec.metrics.enabled:
        conf |= {
            "metricsExporterType": "PROM",
            "metricsPromExporterHost": "0.0.0.0",
            "metricsPromExporterPort": proxy.spec.metrics.port,
        }
    else:
        conf["metricsExporterType"] = "DISABLE"
    conf |= dict(sorted(proxy.spec.proxy_config.items()))
    return conf


def proxy_config_text(conf: Mapping[str, object]) -> str:
    return json.dumps(conf, indent=2) + "\n"
