"""The validation table: invalid (and tricky valid) manifests with the field and rule each must trip.

Shared by the Python rule tests, the CEL agreement test and the API-server test, so all three judge the
same cases.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

BASE_BROKER: dict[str, Any] = {
    "apiVersion": "rocketmq-operator.dev/v1alpha1",
    "kind": "BrokerGroup",
    "metadata": {"name": "broker-a"},
    "spec": {
        "replicas": 3,
        "controllerRef": {"name": "ctl"},
        "quorum": {"inSyncReplicas": 2, "minInSyncReplicas": 2},
    },
}
BASE_CONTROLLER: dict[str, Any] = {
    "apiVersion": "rocketmq-operator.dev/v1alpha1",
    "kind": "ControllerGroup",
    "metadata": {"name": "ctl"},
    "spec": {"replicas": 3},
}


BASE_TOPIC: dict[str, Any] = {
    "apiVersion": "rocketmq-operator.dev/v1alpha1",
    "kind": "Topic",
    "metadata": {"name": "orders"},
    "spec": {"brokerGroups": ["broker-a"], "readQueueNums": 8, "writeQueueNums": 8},
}
BASE_CONSUMER_GROUP: dict[str, Any] = {
    "apiVersion": "rocketmq-operator.dev/v1alpha1",
    "kind": "ConsumerGroup",
    "metadata": {"name": "orders-readers"},
    "spec": {"brokerGroups": ["broker-a"], "topics": ["orders"]},
}
BASE_USER: dict[str, Any] = {
    "apiVersion": "rocketmq-operator.dev/v1alpha1",
    "kind": "User",
    "metadata": {"name": "orders-app"},
    "spec": {"brokerGroups": ["broker-a"], "acls": [{"resource": "Topic:orders", "actions": ["Pub", "Sub"]}]},
}
BASE_PROXY: dict[str, Any] = {
    "apiVersion": "rocketmq-operator.dev/v1alpha1",
    "kind": "Proxy",
    "metadata": {"name": "proxy"},
    "spec": {"controllerRef": {"name": "ctl"}},
}


@dataclass(frozen=True)
class Case:
    id: str
    doc: dict[str, Any]
    rule_id: str | None  # None: valid
    path: str = ""
    contains: str = ""  # a piece of the message the user must see


def _with(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(base)
    cur = doc
    parts = path.split(".")
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    if value is _DELETE:
        cur.pop(parts[-1], None)
    else:
        cur[parts[-1]] = value
    return doc


_DELETE = object()


def b(path: str, value: Any) -> dict[str, Any]:
    return _with(BASE_BROKER, path, value)


def c(path: str, value: Any) -> dict[str, Any]:
    return _with(BASE_CONTROLLER, path, value)


def t(path: str, value: Any) -> dict[str, Any]:
    return _with(BASE_TOPIC, path, value)


def g(path: str, value: Any) -> dict[str, Any]:
    return _with(BASE_CONSUMER_GROUP, path, value)


def u(path: str, value: Any) -> dict[str, Any]:
    return _with(BASE_USER, path, value)


def px(path: str, value: Any) -> dict[str, Any]:
    return _with(BASE_PROXY, path, value)


CASES: list[Case] = [
    Case("broker-valid", BASE_BROKER, None),
    Case("controller-valid", BASE_CONTROLLER, None),
    Case(
        "name-uppercase",
        b("metadata.name", "Broker_A"),
        "BrokerGroup.name.format",
        "",
        "metadata.name 'Broker_A'",
    ),
    Case("name-too-long", b("metadata.name", "b" * 50), "BrokerGroup.name.length", "", "longer than 45"),
    Case("version-4", b("spec.version", "4.9.7"), "BrokerGroup.version", "spec.version", "'4.9.7'"),
    Case("replicas-zero", b("spec.replicas", 0), "BrokerGroup.replicas.range", "spec.replicas", "0 replicas"),
    Case(
        "replicas-huge",
        _with(b("spec.replicas", 40), "spec.quorum.inSyncReplicas", 2),
        "BrokerGroup.replicas.range",
        "spec.replicas",
        "40 replicas",
    ),
    Case(
        "drain-deadline-negative",
        b("spec.drainDeadlineSeconds", -1),
        "BrokerGroup.drainDeadlineSeconds.range",
        "spec.drainDeadlineSeconds",
        "-1 seconds",
    ),
    Case("mode-unknown", b("spec.haMode", "quorum"), "BrokerGroup.haMode.enum", "spec.haMode", "'quorum'"),
    Case(
        "controller-without-ref",
        b("spec.controllerRef", _DELETE),
        "BrokerGroup.controllerRef.required",
        "spec.controllerRef",
        "controllerRef.name",
    ),
    Case(
        "sync-without-nameservers",
        _with(b("spec.controllerRef", _DELETE), "spec.haMode", "sync"),
        "BrokerGroup.nameServers.required",
        "spec.nameServers",
        "no name servers",
    ),
    Case(
        "nameserver-bad",
        _with(_with(b("spec.controllerRef", _DELETE), "spec.haMode", "sync"), "spec.nameServers", ["ns-0"]),
        "BrokerGroup.nameServers.format",
        "spec.nameServers",
        "host:port",
    ),
    Case(
        "sam-one-replica",
        _with(
            _with(b("spec.haMode", "slaveActingMaster"), "spec.replicas", 1),
            "spec.quorum",
            {"inSyncReplicas": 1, "minInSyncReplicas": 1},
        ),
        "BrokerGroup.slaveActingMaster.replicas",
        "spec.replicas",
        "replicas >= 2",
    ),
    Case(
        "insync-above-replicas",
        b("spec.quorum", {"inSyncReplicas": 4, "minInSyncReplicas": 2}),
        "BrokerGroup.quorum.inSyncReplicas.range",
        "spec.quorum.inSyncReplicas",
        "4 is outside 1..replicas (3)",
    ),
    Case(
        "insync-zero",
        b("spec.quorum", {"inSyncReplicas": 0, "minInSyncReplicas": 0}),
        "BrokerGroup.quorum.inSyncReplicas.range",
        "spec.quorum.inSyncReplicas",
        "0 is outside",
    ),
    Case(
        "min-zero",
        b("spec.quorum", {"inSyncReplicas": 2, "minInSyncReplicas": 0}),
        "BrokerGroup.quorum.minInSyncReplicas.range",
        "spec.quorum.minInSyncReplicas",
        "0 is less than 1",
    ),
    Case(
        "min-above-insync",
        b("spec.quorum", {"inSyncReplicas": 2, "minInSyncReplicas": 3}),
        "BrokerGroup.quorum.minInSyncReplicas.order",
        "spec.quorum.minInSyncReplicas",
        "3 is greater than inSyncReplicas (2)",
    ),
    Case(
        "min-above-default-insync",
        _with(b("spec.quorum", {"minInSyncReplicas": 3}), "spec.replicas", 3),
        "BrokerGroup.quorum.minInSyncReplicas.order",
        "spec.quorum.minInSyncReplicas",
        "3 is greater than inSyncReplicas (2)",
    ),
    Case(
        "gap-not-quantity",
        b("spec.quorum.maxGapNotInSync", "256K"),
        "BrokerGroup.quorum.maxGapNotInSync",
        "spec.quorum.maxGapNotInSync",
        "'256K' is not a quantity",
    ),
    Case(
        "storage-not-quantity",
        b("spec.storage", {"size": "ten gigs"}),
        "BrokerGroup.storage.size",
        "spec.storage.size",
        "'ten gigs'",
    ),
    Case(
        "reclaim-unknown",
        b("spec.storage", {"reclaimPolicy": "Recycle"}),
        "BrokerGroup.storage.reclaimPolicy",
        "spec.storage.reclaimPolicy",
        "'Recycle'",
    ),
    Case(
        "detection-too-short",
        b("spec.failover", {"detectionSeconds": 0.5}),
        "BrokerGroup.failover.detectionSeconds",
        "spec.failover.detectionSeconds",
        "0.5 is outside 1..60",
    ),
    Case(
        "memory-ratio-high",
        b("spec.slaveRead", {"enabled": True, "memoryRatio": 140}),
        "BrokerGroup.slaveRead.memoryRatio",
        "spec.slaveRead.memoryRatio",
        "140 is outside 0..100",
    ),
    Case("heap-not-quantity", b("spec.jvm", {"heap": "2GB"}), "BrokerGroup.jvm.heap", "spec.jvm.heap", "'2GB'"),
    Case(
        "auth-without-admin-secret",
        b("spec.auth", {"enabled": True}),
        "BrokerGroup.auth.adminSecret.required",
        "spec.auth.adminSecret",
        "no admin Secret is named",
    ),
    Case(
        "auth-user-twice",
        b("spec.auth", {"users": [{"name": "app", "passwordSecret": {"name": "s"}}] * 2}),
        "BrokerGroup.auth.users.unique",
        "spec.auth.users",
        "user names repeat",
    ),
    Case(
        "auth-ok",
        b(
            "spec.auth",
            {
                "enabled": True,
                "adminSecret": "rocketmq-admin",
                "users": [
                    {
                        "name": "app",
                        "passwordSecret": {"name": "app-password"},
                        "acls": [{"resource": "Topic:orders", "actions": ["Pub"]}],
                    }
                ],
            },
        ),
        None,
        "",
        "",
    ),
    Case(
        "upgrade-unknown",
        b("spec.upgrade", {"strategy": "yolo"}),
        "BrokerGroup.upgrade.strategy",
        "spec.upgrade.strategy",
        "'yolo'",
    ),
    Case(
        "brokerconfig-owned",
        b("spec.brokerConfig", {"inSyncReplicas": 3}),
        "BrokerGroup.brokerConfig.owned",
        "spec.brokerConfig",
        "sets inSyncReplicas",
    ),
    Case(
        "brokerconfig-typo",
        b("spec.brokerConfig", {"flushDiskTypo": "SYNC_FLUSH"}),
        "BrokerGroup.brokerConfig.known",
        "spec.brokerConfig",
        "flushDiskTypo is not a RocketMQ broker key",
    ),
    Case("brokerconfig-known", b("spec.brokerConfig", {"flushDiskType": "SYNC_FLUSH"}), None),
    Case(
        "tls-renew-after-expiry",
        b("spec.tls", {"enabled": True, "duration": "24h", "renewBefore": "48h"}),
        "BrokerGroup.tls.renewBefore",
        "spec.tls.renewBefore",
        "renewBefore 48h is not shorter than duration 24h",
    ),
    Case(
        "tls-renew-units",
        c("spec.tls", {"duration": "90m", "renewBefore": "5400s"}),
        "ControllerGroup.tls.renewBefore",
        "spec.tls.renewBefore",
        "renewBefore 5400s is not shorter than duration 90m",
    ),
    Case(
        "backup-too-often",
        c("spec.backup", {"every": "1m"}),
        "ControllerGroup.backup.every",
        "spec.backup.every",
        "a backup every 1m is too often",
    ),
    Case(
        "backup-keep-zero",
        c("spec.backup", {"every": "6h", "keep": 0}),
        "ControllerGroup.backup.keep.range",
        "spec.backup.keep",
        "keeping 0 backups",
    ),
    Case(
        "controller-even",
        c("spec.replicas", 2),
        "ControllerGroup.replicas.odd",
        "spec.replicas",
        "2 controllers",
    ),
    Case("controller-name", c("metadata.name", "-ctl"), "ControllerGroup.name.format", "", "'-ctl'"),
    Case(
        "controller-ns-replicas",
        _with(c("spec.standalone", True), "spec.nameServers", {"replicas": 9}),
        "ControllerGroup.nameServers.replicas",
        "spec.nameServers.replicas",
        "9 name servers",
    ),
    Case(
        "controller-owned",
        c("spec.controllerConfig", {"controllerDLegerPeers": "x"}),
        "ControllerGroup.controllerConfig.owned",
        "spec.controllerConfig",
        "sets controllerDLegerPeers",
    ),
    Case(
        "controller-typo",
        c("spec.controllerConfig", {"scanNotActiveBrokerIntervall": 1000}),
        "ControllerGroup.controllerConfig.known",
        "spec.controllerConfig",
        "scanNotActiveBrokerIntervall",
    ),
    Case("topic-valid", BASE_TOPIC, None),
    Case("topic-valid-cluster", _with(t("spec.brokerGroups", _DELETE), "spec.clusterName", "DefaultCluster"), None),
    Case("topic-valid-fifo-name", _with(t("spec.topicName", "Orders%v1|x"), "spec.messageType", "FIFO"), None),
    Case("consumer-group-valid", BASE_CONSUMER_GROUP, None),
    Case(
        "topic-zero-write-queues",
        t("spec.writeQueueNums", 0),
        "Topic.writeQueueNums.range",
        "spec.writeQueueNums",
        "0 write queues",
    ),
    Case(
        "topic-zero-read-queues",
        t("spec.readQueueNums", 0),
        "Topic.readQueueNums.range",
        "spec.readQueueNums",
        "0 read queues",
    ),
    Case(
        "topic-unknown-message-type",
        t("spec.messageType", "ORDERED"),
        "Topic.messageType.enum",
        "spec.messageType",
        "'ORDERED' is not a RocketMQ message type",
    ),
    Case(
        "topic-bad-chars",
        t("spec.topicName", "orders.v1"),
        "Topic.name.chars",
        "spec.topicName",
        "'orders.v1' has characters RocketMQ refuses",
    ),
    Case(
        "topic-metadata-name-dots",
        t("metadata.name", "orders.v1"),
        "Topic.name.chars",
        "spec.topicName",
        "'orders.v1'",
    ),
    Case(
        "topic-too-long",
        t("spec.topicName", "t" * 128),
        "Topic.name.length",
        "spec.topicName",
        "longer than 127",
    ),
    Case(
        "topic-system",
        t("spec.topicName", "SCHEDULE_TOPIC_XXXX"),
        "Topic.name.system",
        "spec.topicName",
        "'SCHEDULE_TOPIC_XXXX' is a RocketMQ system topic",
    ),
    Case(
        "topic-system-prefix",
        t("spec.topicName", "rmq_sys_mine"),
        "Topic.name.system",
        "spec.topicName",
        "system topic",
    ),
    Case(
        "topic-no-placement",
        t("spec.brokerGroups", _DELETE),
        "Topic.placement.required",
        "spec.brokerGroups",
        "names no broker group",
    ),
    Case("topic-perm", t("spec.permission", "rw"), "Topic.permission.enum", "spec.permission", "'rw'"),
    Case("user-valid", BASE_USER, None),
    Case("user-bad-chars", u("spec.userName", "orders.app"), "User.name.chars", "spec.userName", "'orders.app'"),
    Case("user-too-long", u("spec.userName", "a" * 65), "User.name.chars", "spec.userName", "1 to 64"),
    Case(
        "user-no-placement",
        u("spec.brokerGroups", _DELETE),
        "User.placement.required",
        "spec.brokerGroups",
        "names no broker group",
    ),
    Case(
        "user-deletion-policy",
        u("spec.deletionPolicy", "Retain"),
        "User.deletionPolicy.enum",
        "spec.deletionPolicy",
        "'Retain' is not a deletion policy",
    ),
    Case(
        "topic-deletion-policy",
        t("spec.deletionPolicy", "Retain"),
        "Topic.deletionPolicy.enum",
        "spec.deletionPolicy",
        "'Retain' is not a deletion policy",
    ),
    Case(
        "topic-attribute-message-type",
        t("spec.attributes", {"message.type": "FIFO"}),
        "Topic.attributes.known",
        "spec.attributes",
        "message.type is not a topic attribute",
    ),
    Case(
        "group-bad-chars",
        g("spec.groupName", "readers group"),
        "ConsumerGroup.name.chars",
        "spec.groupName",
        "'readers group'",
    ),
    Case(
        "group-too-long",
        g("spec.groupName", "g" * 256),
        "ConsumerGroup.name.length",
        "spec.groupName",
        "longer than 255",
    ),
    Case(
        "group-no-placement",
        g("spec.brokerGroups", []),
        "ConsumerGroup.placement.required",
        "spec.brokerGroups",
        "names no broker group",
    ),
    Case(
        "group-consume-mode",
        g("spec.consumeMode", "Parallel"),
        "ConsumerGroup.consumeMode.enum",
        "spec.consumeMode",
        "'Parallel' is not a consume mode",
    ),
    Case(
        "group-deletion-policy",
        g("spec.deletionPolicy", "delete"),
        "ConsumerGroup.deletionPolicy.enum",
        "spec.deletionPolicy",
        "'delete'",
    ),
    Case(
        "group-retries",
        g("spec.retryMaxTimes", -1),
        "ConsumerGroup.retryMaxTimes.range",
        "spec.retryMaxTimes",
        "-1 retries",
    ),
    Case(
        "group-retry-queues",
        g("spec.retryQueueNums", 2000),
        "ConsumerGroup.retryQueueNums.range",
        "spec.retryQueueNums",
        "2000 retry queues",
    ),
    Case(
        "group-topics",
        g("spec.topics", ["orders v1"]),
        "ConsumerGroup.topics.format",
        "spec.topics",
        "topics lists a name",
    ),
    Case(
        "network-policy-peers-ok",
        b(
            "spec.networkPolicy",
            {
                "clients": [
                    {"podSelector": {}},
                    {
                        "namespaceSelector": {"matchLabels": {"team": "orders"}},
                        "podSelector": {"matchLabels": {"app": "x"}},
                    },
                    {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
                    {"ipBlock": {"cidr": "fd00::/8"}},
                ],
                "metrics": [{"namespaceSelector": {"matchExpressions": [{"key": "monitoring", "operator": "Exists"}]}}],
            },
        ),
        None,
    ),
    Case(
        "network-policy-ipblock-with-selector",
        b("spec.networkPolicy.clients", [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]),
        "BrokerGroup.networkPolicy.clients.peer",
        "spec.networkPolicy.clients",
        "a peer sets ipBlock together with a selector",
    ),
    Case(
        "network-policy-empty-peer",
        b("spec.networkPolicy.metrics", [{}]),
        "BrokerGroup.networkPolicy.metrics.peer",
        "spec.networkPolicy.metrics",
        "fix: split an ipBlock and a selector into two peers; write podSelector: {}",
    ),
    Case(
        "network-policy-in-without-values",
        b("spec.networkPolicy.clients", [{"podSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}]),
        "BrokerGroup.networkPolicy.clients.values",
        "spec.networkPolicy.clients",
        "rule: In and NotIn take at least one value",
    ),
    Case(
        "network-policy-exists-with-values",
        b(
            "spec.networkPolicy.metrics",
            [{"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}}],
        ),
        "BrokerGroup.networkPolicy.metrics.values",
        "spec.networkPolicy.metrics",
        "Exists and DoesNotExist take none",
    ),
    Case(
        "controller-network-policy-empty-peer",
        c("spec.networkPolicy", {"clients": [{}]}),
        "ControllerGroup.networkPolicy.clients.peer",
        "spec.networkPolicy.clients",
        "each peer of networkPolicy.clients is podSelector and/or namespaceSelector, or ipBlock alone",
    ),
    Case(
        "controller-network-policy-notin-without-values",
        c(
            "spec.networkPolicy.clients",
            [{"namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "NotIn"}]}}],
        ),
        "ControllerGroup.networkPolicy.clients.values",
        "spec.networkPolicy.clients",
        "a matchExpressions entry has values that do not fit its operator",
    ),
    Case("proxy-valid", BASE_PROXY, None),
    Case("proxy-valid-nodeport", px("spec.service", {"type": "NodePort", "grpcNodePort": 30081}), None),
    Case(
        "proxy-valid-remoting-nodeport",
        px("spec.service", {"type": "NodePort", "remotingNodePort": 30080, "advertisedHost": "10.213.0.11"}),
        None,
    ),
    Case("proxy-replicas-zero", px("spec.replicas", 0), "Proxy.replicas.range", "spec.replicas", "0 proxies"),
    Case(
        "proxy-no-name-servers",
        px("spec.controllerRef", _DELETE),
        "Proxy.nameServers.required",
        "spec.nameServers",
        "no name servers to read routes from",
    ),
    Case(
        "proxy-name-server-format",
        px("spec.nameServers", ["ns-0"]),
        "Proxy.nameServers.format",
        "spec.nameServers",
        "must be host:port",
    ),
    Case(
        "proxy-route-refresh-zero",
        px("spec.routeRefreshSeconds", 0),
        "Proxy.routeRefreshSeconds.range",
        "spec.routeRefreshSeconds",
        "0 s is out of range",
    ),
    Case(
        "proxy-min-ready-negative",
        px("spec.minReadySeconds", -1),
        "Proxy.minReadySeconds.range",
        "spec.minReadySeconds",
        "-1 s is out of range",
    ),
    Case(
        "proxy-min-ready-too-long",
        px("spec.minReadySeconds", 601),
        "Proxy.minReadySeconds.range",
        "spec.minReadySeconds",
        "601 s is out of range",
    ),
    Case(
        "proxy-service-type",
        px("spec.service", {"type": "Ingress"}),
        "Proxy.service.type.enum",
        "spec.service.type",
        "'Ingress' is not a Service type",
    ),
    Case(
        "proxy-node-port-range",
        px("spec.service", {"type": "NodePort", "grpcNodePort": 8081}),
        "Proxy.service.grpcNodePort.range",
        "spec.service.grpcNodePort",
        "node port 8081 is out of range",
    ),
    Case(
        "proxy-remoting-node-port-range",
        px("spec.service", {"type": "NodePort", "remotingNodePort": 8080, "advertisedHost": "10.0.0.1"}),
        "Proxy.service.remotingNodePort.range",
        "spec.service.remotingNodePort",
        "node port 8080 is out of range",
    ),
    Case(
        "proxy-remoting-node-port-on-cluster-ip",
        px("spec.service", {"remotingNodePort": 30080, "advertisedHost": "10.0.0.1"}),
        "Proxy.service.remotingNodePort.type",
        "spec.service.remotingNodePort",
        "a remoting node port is set on a ClusterIP Service",
    ),
    Case(
        "proxy-remoting-node-port-without-host",
        px("spec.service", {"type": "NodePort", "remotingNodePort": 30080}),
        "Proxy.service.remotingNodePort.advertisedHost",
        "spec.service",
        "remotingNodePort and advertisedHost are set one without the other",
    ),
    Case(
        "proxy-advertised-host-without-port",
        px("spec.service", {"type": "LoadBalancer", "advertisedHost": "mq.example.com"}),
        "Proxy.service.remotingNodePort.advertisedHost",
        "spec.service",
        "remotingNodePort and advertisedHost are set one without the other",
    ),
    Case(
        "proxy-advertised-host-with-port",
        px("spec.service", {"type": "NodePort", "remotingNodePort": 30080, "advertisedHost": "10.0.0.1:30080"}),
        "Proxy.service.advertisedHost.host",
        "spec.service.advertisedHost",
        "advertised host 10.0.0.1:30080 is not a host name or IPv4 address",
    ),
    Case(
        "proxy-remoting-node-port-same-as-grpc",
        px(
            "spec.service",
            {"type": "NodePort", "grpcNodePort": 30081, "remotingNodePort": 30081, "advertisedHost": "a"},
        ),
        "Proxy.service.remotingNodePort.distinct",
        "spec.service.remotingNodePort",
        "node port 30081 is the gRPC one too",
    ),
    Case(
        "proxy-node-port-on-cluster-ip",
        px("spec.service", {"grpcNodePort": 30081}),
        "Proxy.service.grpcNodePort.type",
        "spec.service.grpcNodePort",
        "a node port is set on a ClusterIP Service",
    ),
    Case(
        "proxy-source-ranges-on-node-port",
        px("spec.service", {"type": "NodePort", "loadBalancerSourceRanges": ["10.0.0.0/8"]}),
        "Proxy.service.loadBalancerSourceRanges.type",
        "spec.service.loadBalancerSourceRanges",
        "source ranges are set on a NodePort Service",
    ),
    Case(
        "proxy-config-owned",
        px("spec.proxyConfig", {"namesrvAddr": "ns:9876"}),
        "Proxy.proxyConfig.owned",
        "spec.proxyConfig",
        "which the operator renders from the spec",
    ),
    Case(
        "proxy-config-unknown",
        px("spec.proxyConfig", {"grpcServerPrt": 1}),
        "Proxy.proxyConfig.known",
        "spec.proxyConfig",
        "is not a RocketMQ proxy key",
    ),
    Case(
        "proxy-tls-renew-after-expiry",
        px("spec.tls", {"enabled": True, "duration": "24h", "renewBefore": "48h"}),
        "Proxy.tls.renewBefore",
        "spec.tls.renewBefore",
        "renewBefore 48h is not shorter than duration 24h",
    ),
    Case(
        "proxy-config-owned-tls",
        px("spec.proxyConfig", {"tlsTestModeEnable": "true"}),
        "Proxy.proxyConfig.owned",
        "spec.proxyConfig",
        "sets tlsTestModeEnable, which the operator renders from the spec",
    ),
]


# Shape problems: what pydantic refuses before any rule runs, in the same `field: value; rule: ...; fix: ...` form
# (never pydantic's own wording), with a did-you-mean for a misspelt field or value. Not judged by CEL: the API
# server refuses these by its schema (unknown fields are dropped or refused by strict field validation).
SHAPE_CASES: list[Case] = [
    Case("unknown-spec-field", b("spec.replica", 3), "shape.unknown-field", "spec.replica",
         "unknown field 'replica'; rule: spec has only the fields of the BrokerGroup schema; fix: correct the "
         "spelling or remove the field (replica: did you mean 'replicas'?)"),
    Case("unknown-nested-field", b("spec.quorum.minInSyncReplica", 2), "shape.unknown-field",
         "spec.quorum.minInSyncReplica", "did you mean 'minInSyncReplicas' or 'inSyncReplicas'?"),
    Case("unknown-field-case", b("spec.HAMode", "sync"), "shape.unknown-field", "spec.HAMode",
         "did you mean 'haMode'?"),
    Case("unknown-field-no-match", b("spec.zzz", 1), "shape.unknown-field", "spec.zzz",
         "rule: spec has only the fields of the BrokerGroup schema: affinity, auth, autoCreate, brokerConfig"),
    Case("unknown-top-level-field", {**BASE_BROKER, "specs": {}}, "shape.unknown-field", "specs",
         "did you mean 'spec'?"),
    Case("unknown-storage-field", b("spec.storage.sizee", "1Gi"), "shape.unknown-field", "spec.storage.sizee",
         "did you mean 'size'?"),
    Case("unknown-controller-field", c("spec.nameServer", {}), "shape.unknown-field", "spec.nameServer",
         "rule: spec has only the fields of the ControllerGroup schema; fix: correct the spelling or remove the "
         "field (nameServer: did you mean 'nameServers'?)"),
    Case("unknown-topic-field", t("spec.brokerGroup", ["broker-a"]), "shape.unknown-field", "spec.brokerGroup",
         "did you mean 'brokerGroups'?"),
    Case("unknown-consumer-group-field", g("spec.topic", ["orders"]), "shape.unknown-field", "spec.topic",
         "did you mean 'topics'?"),
    Case("enum-value-case", b("spec.imagePullPolicy", "always"), "shape.enum", "spec.imagePullPolicy",
         "'always' is not allowed; rule: spec.imagePullPolicy is one of: Always, IfNotPresent, Never; fix: use one "
         "of: Always, IfNotPresent, Never (did you mean 'Always'?)"),
    Case("enum-value-typo", c("spec.type", "raft"), "shape.enum", "spec.type", "(did you mean 'jraft'?)"),
    Case("not-an-integer", b("spec.replicas", "three"), "shape.int_parsing", "spec.replicas",
         "'three' is not a whole number; rule: spec.replicas is a whole number; fix: write a number"),
    Case("a-fraction", b("spec.quorum.inSyncReplicas", 2.5), "shape.int_from_float", "spec.quorum.inSyncReplicas",
         "2.5 is not a whole number"),
    Case("not-a-number", b("spec.failover.detectionSeconds", "soon"), "shape.float_parsing",
         "spec.failover.detectionSeconds", "'soon' is not a number; rule: spec.failover.detectionSeconds is a number"),
    Case("not-a-boolean", b("spec.autoCreate.topics", "maybe"), "shape.bool_parsing", "spec.autoCreate.topics",
         "'maybe' is not true or false"),
    Case("not-a-mapping", b("spec.controllerRef", "ctl"), "shape.model_type", "spec.controllerRef",
         "'ctl' is not a mapping; rule: spec.controllerRef is a mapping; fix: write key: value pairs"),
    Case("not-a-list", b("spec.jvm.extraOptions", "-Xss1m"), "shape.list_type", "spec.jvm.extraOptions",
         "'-Xss1m' is not a list"),
    Case("string-or-integer", b("spec.resources.requests", {"cpu": [1]}), "shape.string_type",
         "spec.resources.requests.cpu", "[1] is not a string or a whole number"),
    Case("acl-resource-pattern", b("spec.auth.users", [{"name": "app", "passwordSecret": {"name": "s"},
         "acls": [{"resource": "Topics:orders", "actions": ["Pub"]}]}]), "shape.pattern",
         "spec.auth.users[0].acls[0].resource", "'Topics:orders' is not an ACL resource; rule: "
         "spec.auth.users[0].acls[0].resource is an ACL resource; fix: write Type:name with Type one of Cluster"),
    Case("acl-action-typo", b("spec.auth.users", [{"name": "app", "passwordSecret": {"name": "s"},
         "acls": [{"resource": "Topic:orders", "actions": ["sub"]}]}]), "shape.enum",
         "spec.auth.users[0].acls[0].actions[0]", "(did you mean 'Sub'?)"),
    Case("acl-no-actions", b("spec.auth.users", [{"name": "app", "passwordSecret": {"name": "s"},
         "acls": [{"resource": "Topic:orders", "actions": []}]}]), "shape.too_short",
         "spec.auth.users[0].acls[0].actions", "rule: spec.auth.users[0].acls[0].actions has at least 1 item;"),
    Case("user-name-pattern", b("spec.auth.users", [{"name": "app user", "passwordSecret": {"name": "s"}}]),
         "shape.pattern", "spec.auth.users[0].name", "'app user' is not a user name"),
    Case("cidr-pattern", b("spec.networkPolicy.clients", [{"ipBlock": {"cidr": "10.0.0.0"}}]), "shape.pattern",
         "spec.networkPolicy.clients[0].ipBlock.cidr", "'10.0.0.0' is not an address block (CIDR); rule: "
         "spec.networkPolicy.clients[0].ipBlock.cidr is an address block (CIDR); fix: write an address and a prefix"),
    Case("cidr-except-pattern", c("spec.networkPolicy.clients", [{"ipBlock": {"cidr": "10.0.0.0/8",
         "except": ["10.1/16"]}}]), "shape.pattern", "spec.networkPolicy.clients[0].ipBlock.except[0]",
         "'10.1/16' is not an address block (CIDR)"),
    Case("selector-operator-typo", b("spec.networkPolicy.metrics", [{"podSelector": {"matchExpressions": [
         {"key": "a", "operator": "exists"}]}}]), "shape.enum",
         "spec.networkPolicy.metrics[0].podSelector.matchExpressions[0].operator", "(did you mean 'Exists'?)"),
    Case("config-value-empty", b("spec.brokerConfig", {"flushDiskType": None}), "shape.value", "spec.brokerConfig",
         "flushDiskType: an empty value is not a string or an integer; rule: config values are strings or integers"),
]  # fmt: skip


# A Topic and a ConsumerGroup added to the quickstart (what `local apply` and `explain --diff` see added).
NEW_TOPIC = """---
apiVersion: rocketmq-operator.dev/v1alpha1
kind: Topic
metadata:
  name: payments
spec:
  brokerGroups: [broker-a]
---
apiVersion: rocketmq-operator.dev/v1alpha1
kind: ConsumerGroup
metadata:
  name: payments-readers
spec:
  brokerGroups: [broker-a]
  topics: [payments]
"""
