"""The BrokerGroup, ControllerGroup, Topic and ConsumerGroup API (group `rocketmq-operator.dev`, version `v1alpha1`).

These pydantic models are the contract: field names (camelCase on the wire) are what manifests, examples, the
CRD schema and external checks rely on. The models only check *shape* (types, unknown fields); every semantic
rule lives in `api.rules`, once in Python and once as CEL, so that both give the same message.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

API_GROUP = "rocketmq-operator.dev"
API_VERSION = "v1alpha1"
API_GROUP_VERSION = f"{API_GROUP}/{API_VERSION}"

# The RocketMQ release the operator is tested against; a spec without `version` gets it.
DEFAULT_ROCKETMQ_VERSION = "5.5.0"
DEFAULT_IMAGE_REPOSITORY = "ghcr.io/rocketmq-operator"


class Model(BaseModel):
    """Base: camelCase on the wire, unknown fields refused (they are typos, not extensions)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        use_enum_values=False,
    )


class HAMode(StrEnum):
    CONTROLLER = "controller"
    SLAVE_ACTING_MASTER = "slaveActingMaster"
    SYNC = "sync"
    ASYNC = "async"


class ReclaimPolicy(StrEnum):
    RETAIN = "Retain"
    DELETE = "Delete"


class UpgradeStrategy(StrEnum):
    SWITCHOVER = "switchover"
    RESTART = "restart"
    SUPERVISED = "supervised"


class ObjectMeta(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = ""
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    generation: int | None = None
    uid: str | None = None


class ControllerRef(Model):
    name: str = Field(description="Name of a ControllerGroup in the same namespace.")


class QuorumSpec(Model):
    in_sync_replicas: int | None = Field(
        default=None,
        description="Acks a put waits for, the master included (broker key inSyncReplicas). "
        "Default: a majority of replicas. 1 means asynchronous replication.",
    )
    min_in_sync_replicas: int | None = Field(
        default=None,
        description="controller mode: puts are refused while the SyncStateSet is smaller than this; "
        "slaveActingMaster with autoDegrade: the floor the ack count degrades to. Default: inSyncReplicas.",
    )
    auto_degrade: bool | None = Field(
        default=None,
        description="slaveActingMaster only (enableAutoInSyncReplicas): lower the ack count to the replicas "
        "in sync, never below minInSyncReplicas.",
    )
    max_gap_not_in_sync: str | None = Field(
        default=None,
        description="slaveActingMaster only (haMaxGapNotInSync): how far behind a slave may be and still count "
        "as in sync. A quantity; RocketMQ's default is 256Mi.",
    )
    all_ack_in_sync_state_set: bool | None = Field(
        default=None,
        description="controller mode only: wait for every SyncStateSet member; inSyncReplicas is then ignored.",
    )


class StorageSpec(Model):
    size: str = Field(
        default="10Gi",
        description="PersistentVolumeClaim size per replica (a quantity such as 10Gi; default 10Gi for a "
        "BrokerGroup, 1Gi for a ControllerGroup). A larger size grows the claims in place where the StorageClass "
        "allows volume expansion; a smaller one is refused (a claim never shrinks).",
    )
    storage_class_name: str | None = Field(
        default=None,
        description="StorageClass of the PersistentVolumeClaims; unset: the cluster's default StorageClass.",
    )
    reclaim_policy: str = Field(
        default=ReclaimPolicy.RETAIN.value,
        description="Retain (default) keeps the PVCs when the group is deleted or scaled in; Delete removes them "
        "(the StatefulSet's persistentVolumeClaimRetentionPolicy).",
    )


class SlaveReadSpec(Model):
    enabled: bool = Field(default=False, description="slaveReadEnable: lagging consumers are sent to slaves.")
    memory_ratio: int | None = Field(
        default=None,
        description="accessMessageInMemoryMaxRatio (0-100, RocketMQ default 40): backlog share of memory "
        "above which a consumer is sent to a slave.",
    )


class JvmSpec(Model):
    heap: str | None = Field(
        default=None,
        description="JVM heap (-Xms and -Xmx): a quantity such as 2Gi, or a JVM size such as 2g. Default 1Gi for "
        "brokers, 512Mi for controllers and name servers.",
    )
    direct_memory: str | None = Field(
        default=None,
        description="-XX:MaxDirectMemorySize, a quantity. Brokers default to the heap size; controllers and name "
        "servers get the JVM's own default when unset.",
    )
    extra_options: list[str] = Field(
        default_factory=list,
        description="Extra JVM flags, appended after the rendered ones (a later flag overrides an earlier one).",
    )


DEFAULT_DETECTION_SECONDS = 4.0


SPREAD_DESCRIPTION = (
    "topologySpreadConstraints of the {pods} pods (Kubernetes TopologySpreadConstraint objects). Unset: the "
    "operator spreads the replicas over nodes (kubernetes.io/hostname) and zones (topology.kubernetes.io/zone), "
    "maxSkew 1, whenUnsatisfiable ScheduleAnyway. A list replaces them; [] renders none. DoNotSchedule on the "
    "host name keeps a replacement Pending while a dead node still counts as a domain."
)


class FailoverSpec(Model):
    allow_unclean: bool = Field(
        default=False,
        description="Allow electing a master outside the SyncStateSet (may lose acknowledged messages).",
    )
    detection_seconds: float = Field(
        default=DEFAULT_DETECTION_SECONDS,
        description="Seconds the master may go without answering the operator before it is fenced (its process "
        "killed, or its pod deleted) and the controller is asked to elect; the controller "
        "alone would wait controllerHeartBeatTimeoutMills (10 s). Lower is faster failover; a stop-the-world "
        "pause longer than this causes a needless failover. 1 to 60.",
    )
    node_loss: Literal["Report", "DeletePods"] = Field(
        default="Report",
        description="When the node under a replica is lost (deleted, or Ready False or Unknown): Report (the "
        "NodeLost condition, an Event and a metric; the pod is left alone) or DeletePods (also force-delete the "
        "pod, but only once the node is confirmed off: the Node deleted, or tainted "
        "node.kubernetes.io/out-of-service). Never on NotReady alone: a partitioned node looks the same and its "
        "broker may still run. The controller elects a new master either way.",
    )


class AutoCreateSpec(Model):
    topics: bool = Field(
        default=False,
        description="autoCreateTopicEnable: a send to an unknown topic creates it on the master only, in its "
        "memory and topic table; on failover the new master does not have it and its messages cannot be read "
        "(the operator re-asserts topics it has observed, but declare them as Topic resources instead).",
    )
    subscription_groups: bool = Field(
        default=False,
        description="autoCreateSubscriptionGroup: a consumer of an unknown group creates it on the master only.",
    )


# RocketMQ's default metricsPromExporterPort (BrokerConfig, 5.5.0).
DEFAULT_BROKER_METRICS_PORT = 5557


class MetricsSpec(Model):
    enabled: bool = Field(
        default=True,
        description="RocketMQ's own Prometheus exporter on every broker (metricsExporterType=PROM): an HTTP server "
        "with /metrics (messages and bytes in and out, consumer lag, storage), exposed as the container port named "
        "metrics for a PodMonitor (the chart's metrics.podMonitor). false: metricsExporterType=DISABLE and no port. "
        "Changing it restarts the brokers (a roll).",
    )
    port: int = Field(
        default=DEFAULT_BROKER_METRICS_PORT,
        description=f"metricsPromExporterPort on Kubernetes (default {DEFAULT_BROKER_METRICS_PORT}, RocketMQ's); "
        "must differ from the broker ports 10909, 10911 and 10912. The local platform ignores it and gives each "
        "broker a port of its own (its listen port minus 1), so brokers on one host do not collide.",
    )


class UpgradeSpec(Model):
    strategy: str = Field(
        default=UpgradeStrategy.SWITCHOVER.value,
        description="What a roll does with the master, which it restarts last: switchover (default) first moves "
        "the master to an in-sync slave already on the new revision; restart restarts it in place (writes pause "
        "until the controller elects); supervised waits for the annotation "
        "rocketmq-operator.dev/rollout-approve-master: <revision> (or true).",
    )


class ResourceRequirements(Model):
    requests: dict[str, str | int] = Field(
        default_factory=dict,
        description="Resources the scheduler reserves for each container, e.g. cpu: 1, memory: 4Gi (Kubernetes "
        "quantities). Unset: none.",
    )
    limits: dict[str, str | int] = Field(
        default_factory=dict,
        description="The most each container may use, e.g. memory: 4Gi; a memory limit must hold the JVM heap plus "
        "its direct memory. Unset: none.",
    )


# RocketMQ reads every value as text; the CRD types values as int-or-string (CEL needs a typed map), so booleans
# and fractions are written quoted ("true", "0.5"). A YAML `true` is refused here with that fix, not coerced.
BrokerConfigValue = str | int


def _scalar_config(values: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(values, dict):
        return values
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            problem = f"{key}: {'an empty value' if value is None else repr(value)} is not a string or an integer"
            rule = "rule: config values are strings or integers (RocketMQ reads them as text)"
            if isinstance(value, bool | float):
                shown = str(value).lower() if isinstance(value, bool) else str(value)
                raise ValueError(f'{problem}; {rule}; fix: quote it, e.g. {key}: "{shown}"')
            raise ValueError(f"{problem}; {rule}; fix: give {key} one value, quoted unless it is a whole number")
    return values


ACL_RESOURCE_PATTERN = r"^(\*|(Cluster|Namespace|Topic|Group):([%|A-Za-z0-9_-]*\*?))$"
AUTH_NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
SECRET_NAME_PATTERN = r"^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$"


class SecretKeyRef(Model):
    name: str = Field(
        pattern=SECRET_NAME_PATTERN, max_length=253, description="Name of a Secret in the group's namespace."
    )
    key: str = Field(default="password", max_length=253, description="The key of the Secret that holds the value.")


class AclRuleSpec(Model):
    resource: str = Field(
        pattern=ACL_RESOURCE_PATTERN,
        max_length=300,
        description="What the rule covers, as RocketMQ writes it: Topic:orders, Group:billing, Topic:orders-* "
        "(a prefix), Topic:* (every topic) or * (everything).",
    )
    actions: list[Literal["All", "Pub", "Sub", "Create", "Update", "Delete", "Get", "List"]] = Field(
        min_length=1,
        max_length=8,
        description="RocketMQ's actions: Pub, Sub, Create, Update, Delete, Get, List, or All.",
    )
    decision: Literal["Allow", "Deny"] = Field(default="Allow", description="Allow or Deny (Deny wins).")
    source_ips: list[str] = Field(
        default_factory=list,
        max_length=32,
        description="Client addresses or CIDRs the rule is limited to; empty: any.",
    )


class UserSpec(Model):
    name: str = Field(pattern=AUTH_NAME_PATTERN, max_length=64, description="The user name (the client's accessKey).")
    password_secret: SecretKeyRef = Field(
        description="The Secret key holding the password (the client's secretKey); never copied into a "
        "ConfigMap, the status, an Event or a log line."
    )
    type: Literal["Normal", "Super"] = Field(
        default="Normal", description="Normal (allowed what its ACL allows) or Super (allowed everything)."
    )
    acls: list[AclRuleSpec] = Field(default_factory=list, max_length=64, description="The user's ACL 2.0 rules.")


def _admin_secret_field(description: str) -> Any:
    """spec.auth.adminSecret of a BrokerGroup or a Proxy: the name of a Secret in the resource's namespace."""
    return Field(default=None, pattern=SECRET_NAME_PATTERN, max_length=253, description=description)


class AuthSpec(Model):
    enabled: bool = Field(
        default=False,
        description="ACL 2.0 (RocketMQ 5.3+): every request to a broker is authenticated (signed by a user) and "
        "authorized by that user's ACL. The controllers' role notifications are exempt (they cannot sign).",
    )
    admin_secret: str | None = _admin_secret_field(
        "Secret with keys username and password: a Super user the brokers create at start "
        "(innerClientAuthenticationCredentials, used between brokers) and the operator signs with."
    )
    users: list[UserSpec] = Field(
        default_factory=list,
        max_length=64,
        description="Users the operator creates on every replica (each broker keeps its own), with their ACLs; "
        "re-asserted after every master change and restart. Users it does not declare are left alone.",
    )


class ProxyAuthSpec(Model):
    enabled: bool = Field(
        default=False,
        description="ACL 2.0 through the proxies: every gRPC and remoting client is authenticated and authorized by "
        "the proxy against the cluster's users (read from its brokers, spec.auth.users of the BrokerGroups), and the "
        "proxy signs its own requests to the brokers as the admin. Required in front of brokers with spec.auth on.",
    )
    admin_secret: str | None = _admin_secret_field(
        "Secret with keys username and password: the brokers' admin (their spec.auth.adminSecret), "
        "which the proxies sign with (innerClientAuthenticationCredentials)."
    )


TLS_DURATION_PATTERN = r"^[1-9][0-9]{0,6}(h|m|s)$"


def duration_seconds(text: str) -> int:
    """A TLS duration ("8760h", "30m", "90s": a number and one unit, as in cert-manager) in seconds."""
    return int(text[:-1]) * {"h": 3600, "m": 60, "s": 1}[text[-1]]


class TlsSpec(Model):
    enabled: bool = Field(
        default=False,
        description="TLS on every RocketMQ listener of the group (tls.server.mode=enforcing: a plain-text "
        "connection is refused) and on the group's own connections to name servers, controllers and brokers, "
        "which verify the peer's certificate. Brokers and their ControllerGroup must agree. Not covered: the "
        "HA replication port and the controllers' Raft peers (RocketMQ 5.5 uses plain TCP there); the "
        "NetworkPolicy keeps those ports to the group's own pods.",
    )
    secret_name: str | None = Field(
        default=None,
        pattern=SECRET_NAME_PATTERN,
        max_length=253,
        description="A kubernetes.io/tls Secret (tls.crt, tls.key, ca.crt; what a cert-manager Certificate "
        "writes) used instead of certificates from the operator's own CA. Its issuer renews it; brokers and "
        "name servers load a renewed one without a restart. Kubernetes only.",
    )
    duration: str = Field(
        default="8760h",
        pattern=TLS_DURATION_PATTERN,
        description="Lifetime of each certificate the operator issues: a number and a unit, h, m or s "
        "(cert-manager's notation).",
    )
    renew_before: str = Field(
        default="720h",
        pattern=TLS_DURATION_PATTERN,
        description="Issue a new certificate this long before the old one expires (shorter than duration). "
        "Brokers and name servers load it without a restart; standalone controllers are restarted one at a time.",
    )
    client_auth: Literal["None", "Required"] = Field(
        default="None",
        description="Required: every listener of the group also verifies its clients' certificates "
        "(tls.server.need.client.auth=require) and every process presents its own as a client: mutual TLS. A "
        "client without a certificate from the group's authority is refused at the handshake. Brokers and their "
        "ControllerGroup must agree. RocketMQ's JVMs read their client certificate at start, so with Required a "
        "renewal restarts each process one at a time (on Kubernetes brokers and proxies by their roll). On a "
        "Proxy: set it as its groups have it; the proxy then presents its certificate to them, and asks none of "
        "its own gRPC clients (RocketMQ 5's gRPC clients present none).",
    )

    @property
    def mutual(self) -> bool:
        """Mutual TLS: TLS on, and clients' certificates verified."""
        return self.enabled and self.client_auth == "Required"


# An IPv4 or IPv6 address block in CIDR notation (what a NetworkPolicy's ipBlock takes).
CIDR_PATTERN = (
    r"^(([0-9]{1,3}\.){3}[0-9]{1,3}/([0-9]|[12][0-9]|3[0-2])"
    r"|[0-9A-Fa-f]{0,4}(:[0-9A-Fa-f]{0,4}){2,7}/([0-9]|[1-9][0-9]|1[01][0-9]|12[0-8]))$"
)
MAX_NETWORK_PEERS = 32


class LabelSelectorRequirement(Model):
    key: str = Field(max_length=317, description="The label key the requirement applies to.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(
        description="In or NotIn (the label's value is, or is not, one of values), Exists or DoesNotExist."
    )
    values: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="The label values: at least one for In and NotIn, none for Exists and DoesNotExist.",
    )


class LabelSelector(Model):
    match_labels: dict[str, str] = Field(
        default_factory=dict, description="Labels a pod or namespace must have, each with this exact value."
    )
    match_expressions: list[LabelSelectorRequirement] = Field(
        default_factory=list, max_length=16, description="Further requirements on labels; all must hold."
    )


class IPBlock(Model):
    cidr: str = Field(pattern=CIDR_PATTERN, max_length=43, description="An address block, e.g. 10.0.0.0/8 or fd00::/8.")
    except_: list[Annotated[str, Field(pattern=CIDR_PATTERN, max_length=43)]] = Field(
        default_factory=list,
        alias="except",
        max_length=16,
        description="Address blocks inside cidr that are not allowed.",
    )


class NetworkPeer(Model):
    """A Kubernetes NetworkPolicyPeer: podSelector and/or namespaceSelector, or an ipBlock alone."""

    pod_selector: LabelSelector | None = Field(
        default=None,
        description="Pods allowed (in this namespace, or in the namespaces namespaceSelector picks); {} is every pod.",
    )
    namespace_selector: LabelSelector | None = Field(
        default=None, description="Namespaces whose pods are allowed (all of them unless podSelector narrows it)."
    )
    ip_block: IPBlock | None = Field(
        default=None, description="Addresses allowed (outside the cluster, typically); not with a selector."
    )


class BrokerNetworkPolicySpec(Model):
    enabled: bool = Field(
        default=True,
        description="A NetworkPolicy for the broker pods (a policy-enforcing CNI is needed for it to take effect): "
        "the client ports 10911 and 10909 from clients; the HA port 10912 only from the group's own pods; the "
        "metrics port from metrics. false: no policy (an existing one is deleted).",
    )
    clients: list[NetworkPeer] = Field(
        default_factory=list,
        max_length=MAX_NETWORK_PEERS,
        description="Who may reach the client ports 10911 and 10909 (producers, consumers, admin tools); empty "
        "(default): anyone. When set, the operator's pods, the namespace's broker pods and the group's "
        "controllers are allowed as well.",
    )
    metrics: list[NetworkPeer] = Field(
        default_factory=list,
        max_length=MAX_NETWORK_PEERS,
        description="Who may scrape the metrics port (e.g. Prometheus' namespace); empty (default): anyone.",
    )


class ControllerNetworkPolicySpec(Model):
    enabled: bool = Field(
        default=True,
        description="NetworkPolicies for the controller and name-server pods (a policy-enforcing CNI is needed for "
        "them to take effect): the name-server port 9876 from clients; the controller port 9878 only from this "
        "namespace's broker pods, the operator's pods and the other controllers; the JRaft port 9880 only "
        "between the controllers. false: no policies (existing ones are deleted).",
    )
    clients: list[NetworkPeer] = Field(
        default_factory=list,
        max_length=MAX_NETWORK_PEERS,
        description="Who may reach the name-server port 9876 (clients looking up routes, brokers registering "
        "from other namespaces); empty (default): anyone. When set, the operator's pods and the namespace's "
        "broker pods are allowed as well.",
    )


class BrokerGroupSpec(Model):
    version: str = Field(
        default=DEFAULT_ROCKETMQ_VERSION,
        description=f"RocketMQ version (default {DEFAULT_ROCKETMQ_VERSION}, the tested release); selects the "
        f"default image {DEFAULT_IMAGE_REPOSITORY}/rocketmq-broker:<version>. A change is rolled one replica at "
        "a time, the master last.",
    )
    image: str | None = Field(
        default=None,
        description=f"Broker image, instead of {DEFAULT_IMAGE_REPOSITORY}/rocketmq-broker:<version>.",
    )
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = Field(
        default=None,
        description="imagePullPolicy of the broker containers; unset: Kubernetes' default for the image's tag.",
    )
    cluster_name: str = Field(
        default="DefaultCluster",
        description="brokerClusterName: the RocketMQ cluster the group registers in (default DefaultCluster); "
        "a Topic or ConsumerGroup can be placed on every group of a cluster.",
    )
    replicas: int = Field(
        default=3,
        description="Brokers in the group, the master included (totalReplicas); default 3, at most 16.",
    )
    # Enums are plain strings here so that a bad value reaches the rule with its own message (api.rules).
    ha_mode: str = Field(
        default=HAMode.CONTROLLER.value,
        description="How the group replicates and elects its master: controller (default; the RocketMQ controller "
        "elects from the SyncStateSet, enableControllerMode), slaveActingMaster (a slave serves for a dead master, "
        "enableSlaveActingMaster), sync (SYNC_MASTER and slaves) or async (ASYNC_MASTER and slaves).",
    )
    controller_ref: ControllerRef | None = Field(
        default=None,
        description="The ControllerGroup whose controllers elect masters (controller mode) and whose name "
        "servers the brokers register with.",
    )
    name_servers: list[str] = Field(
        default_factory=list,
        description="Explicit name-server host:port list, instead of the ControllerGroup's (non-controller modes).",
    )
    quorum: QuorumSpec = Field(
        default_factory=QuorumSpec,
        description="Quorum writes: how many replicas must have a message before a put is acknowledged, and when "
        "puts are refused. What each field means depends on haMode (`rocketmq-operator explain` prints it).",
    )
    storage: StorageSpec = Field(
        default_factory=StorageSpec,
        description="Each broker's PersistentVolumeClaim, which holds its store (storePathRootDir: commit log, "
        "consume queues, indexes).",
    )
    slave_read: SlaveReadSpec = Field(
        default_factory=SlaveReadSpec,
        description="Reads from slaves for consumers whose backlog is no longer in the master's memory.",
    )
    resources: ResourceRequirements = Field(
        default_factory=ResourceRequirements, description="Requests and limits of each broker container."
    )
    jvm: JvmSpec = Field(default_factory=JvmSpec, description="The brokers' JVM: heap, direct memory, extra flags.")
    broker_config: dict[str, BrokerConfigValue] = Field(
        default_factory=dict,
        description="Extra broker.conf keys and values (text or integers; quote booleans and fractions), checked "
        "against RocketMQ's BrokerConfig, MessageStoreConfig and NettyServerConfig keys. A key the operator sets "
        "from another field (totalReplicas, inSyncReplicas, storePathRootDir, ...) is refused with that field.",
    )
    failover: FailoverSpec = Field(
        default_factory=FailoverSpec,
        description="What the operator does when the master stops answering (controller mode): fence it after "
        "detectionSeconds, then have the controller elect an in-sync replica.",
    )
    auto_create: AutoCreateSpec = Field(
        default_factory=AutoCreateSpec,
        description="Creation of topics and subscription groups by the clients that use them; off by default "
        "(declare Topic and ConsumerGroup resources instead).",
    )

    _broker_config_scalars = field_validator("broker_config", mode="before")(_scalar_config)

    upgrade: UpgradeSpec = Field(
        default_factory=UpgradeSpec,
        description="How a rolling restart (version, image, JVM or restart-only keys) treats the master.",
    )
    node_selector: dict[str, str] = Field(
        default_factory=dict, description="Node labels the broker pods' nodes must have (pod nodeSelector)."
    )
    tolerations: list[dict[str, Any]] = Field(
        default_factory=list, description="Tolerations of the broker pods (Kubernetes Toleration objects)."
    )
    affinity: dict[str, Any] = Field(
        default_factory=dict,
        description="Affinity of the broker pods (a Kubernetes Affinity). Without a podAntiAffinity the operator "
        "adds a preferred one that spreads the replicas over nodes.",
    )
    topology_spread_constraints: list[dict[str, Any]] | None = Field(
        default=None,
        description=SPREAD_DESCRIPTION.format(pods="broker"),
    )
    priority_class_name: str | None = Field(default=None, description="priorityClassName of the broker pods.")
    metrics: MetricsSpec = Field(
        default_factory=MetricsSpec,
        description="Prometheus metrics of the brokers themselves (RocketMQ's exporter); on by default.",
    )
    auth: AuthSpec = Field(
        default_factory=AuthSpec, description="Authentication and authorization (ACL 2.0); off by default."
    )
    tls: TlsSpec = Field(default_factory=TlsSpec, description="TLS between clients and brokers; off by default.")
    draining: bool = Field(
        default=False,
        description="Take the group out of service before removing it: its master turns write permission off "
        "(brokerPermission 4), so producers leave it at their next route refresh (30 s) while consumers read what "
        "it holds; status.drain reports the lag left per consumer group and the Drained condition when nothing is "
        "left. Deleting a BrokerGroup drains it the same way, and waits until every consumer group's lag on it "
        "is 0 (annotation rocketmq-operator.dev/force-delete=true drops what is left). false gives write back.",
    )
    drain_deadline_seconds: int = Field(
        default=0,
        description="How long the removal of this group waits for its consumers, from the moment its master went "
        "read-only; then it is removed with whatever is still unread (said in an Event and the removal's output). "
        "0 (default): no deadline, it waits until every consumer group's lag on it is 0.",
    )
    network_policy: BrokerNetworkPolicySpec = Field(
        default_factory=BrokerNetworkPolicySpec,
        description="The NetworkPolicy the operator renders for the broker pods (on by default; clients and "
        "metrics from anyone unless narrowed).",
    )


class NameServerSpec(Model):
    replicas: int | None = Field(
        default=None, description="Name servers when standalone (default: as many as controllers)."
    )


BACKUP_EVERY_PATTERN = r"^[1-9][0-9]{0,5}(h|m)$"
BACKUP_MIN_EVERY_S = 300
BACKUP_MAX_KEEP = 30


class MetadataBackupSpec(Model):
    every: str = Field(
        pattern=BACKUP_EVERY_PATTERN,
        description="How often to back up: a number and a unit, h or m (e.g. 6h; at least 5m). The first backup "
        "is taken when the field is set; `kubectl rocketmq backup CONTROLLERGROUP` takes one at once.",
    )
    keep: int = Field(
        default=7,
        description="Backups kept: Secrets <name>-metadata-0 .. <name>-metadata-<keep-1>, written in turn (the "
        "oldest is overwritten). They have no owner, so they outlive the ControllerGroup.",
    )
    cluster_name: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_-]{1,64}$",
        description="The RocketMQ cluster to back up when these name servers serve several (default: the only one).",
    )


class ControllerGroupSpec(Model):
    version: str = Field(
        default=DEFAULT_ROCKETMQ_VERSION,
        description=f"RocketMQ version of the controllers and name servers (default {DEFAULT_ROCKETMQ_VERSION}); "
        f"selects the default image {DEFAULT_IMAGE_REPOSITORY}/rocketmq-controller:<version>.",
    )
    image: str | None = Field(
        default=None,
        description=f"Controller and name-server image, instead of "
        f"{DEFAULT_IMAGE_REPOSITORY}/rocketmq-controller:<version>.",
    )
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = Field(
        default=None,
        description="imagePullPolicy of the controller and name-server containers; unset: Kubernetes' default.",
    )
    replicas: int = Field(default=3, description="Controllers in the quorum: 1, 3 or 5.")
    type: Literal["dledger", "jraft"] = Field(
        default="dledger",
        description=(
            "The controllers' consensus: DLedger (RocketMQ's default) or JRaft (5.2+). Fixed at creation: RocketMQ "
            "cannot move a controller's store from one to the other."
        ),
    )
    standalone: bool = Field(
        default=False,
        description="Run controllers apart from the name servers (default: controllers inside the name servers).",
    )
    name_servers: NameServerSpec = Field(
        default_factory=NameServerSpec, description="The name servers' own StatefulSet (standalone: true only)."
    )
    storage: StorageSpec = Field(
        default_factory=lambda: StorageSpec(size="1Gi"),
        description="Each controller's (and standalone name server's) PersistentVolumeClaim: the controller's "
        "DLedger or JRaft store (controllerStorePath) and the name server's kvConfig. Default size 1Gi.",
    )
    resources: ResourceRequirements = Field(
        default_factory=ResourceRequirements,
        description="Requests and limits of each controller (and standalone name-server) container.",
    )
    jvm: JvmSpec = Field(
        default_factory=JvmSpec, description="The controllers' and name servers' JVM: heap, direct memory, flags."
    )
    controller_config: dict[str, BrokerConfigValue] = Field(
        default_factory=dict,
        description="Extra keys for the controllers' and name servers' config files (ControllerConfig and "
        "NamesrvConfig keys; text or integers). A key the operator sets from another field is refused.",
    )
    node_selector: dict[str, str] = Field(
        default_factory=dict, description="Node labels the controller and name-server pods' nodes must have."
    )
    tolerations: list[dict[str, Any]] = Field(
        default_factory=list, description="Tolerations of the controller and name-server pods."
    )
    affinity: dict[str, Any] = Field(
        default_factory=dict,
        description="Affinity of the controller and name-server pods. Without a podAntiAffinity the operator adds "
        "a preferred one that spreads the replicas over nodes.",
    )
    topology_spread_constraints: list[dict[str, Any]] | None = Field(
        default=None,
        description=SPREAD_DESCRIPTION.format(pods="controller and name-server"),
    )

    tls: TlsSpec = Field(
        default_factory=TlsSpec,
        description="TLS on the name servers and controllers (their BrokerGroups must agree); off by default.",
    )
    network_policy: ControllerNetworkPolicySpec = Field(
        default_factory=ControllerNetworkPolicySpec,
        description="The NetworkPolicies the operator renders for the controller and name-server pods (on by "
        "default; name-server clients from anyone unless narrowed).",
    )
    backup: MetadataBackupSpec | None = Field(
        default=None,
        description="Scheduled metadata backups of the cluster these name servers serve (topics, subscription "
        "groups, ACL users and rules; never messages): each into a Secret of its own. Kubernetes only.",
    )

    _controller_config_scalars = field_validator("controller_config", mode="before")(_scalar_config)


# --- status (one model for both platforms) ---


class Condition(Model):
    type: str = Field(description="The condition's type, e.g. Ready, Available, Degraded.")
    status: Literal["True", "False", "Unknown"] = Field(description="True, False or Unknown.")
    reason: str = Field(default="", description="Why, in one CamelCase word (e.g. NotAllInSync).")
    message: str = Field(default="", description="Details for people; says the fix when something is refused.")
    last_transition_time: str | None = Field(default=None, description="When status last changed (RFC 3339).")
    observed_generation: int | None = Field(
        default=None, description="The metadata.generation the condition was computed for."
    )


class MasterStatus(Model):
    broker_id: int | None = Field(
        default=None, description="The master's broker id (assigned by the RocketMQ controller in controller mode)."
    )
    replica: str | None = Field(default=None, description="Pod (or local replica) name of the master.")
    address: str | None = Field(default=None, description="The master's broker address (host:port).")
    epoch: int | None = Field(
        default=None, description="The master epoch (controller mode): one more with every election."
    )


class SyncStateSetStatus(Model):
    members: list[int] = Field(
        default_factory=list,
        description="Broker ids the controller counts as in sync: the replicas a master may be elected from.",
    )
    epoch: int | None = Field(default=None, description="The SyncStateSet epoch: one more with every change of it.")


class ReplicaStatus(Model):
    name: str = Field(description="Pod (or local replica) name.")
    broker_id: int | None = Field(
        default=None, description="Broker id (assigned by the RocketMQ controller in controller mode)."
    )
    role: Literal["master", "slave", "unknown"] = Field(
        default="unknown", description="master, slave, or unknown (the broker did not answer)."
    )
    alive: bool = Field(default=False, description="The broker answered the last observation.")
    in_sync: bool = Field(
        default=False,
        description="In the SyncStateSet (controller mode), or counted in sync by the master (other modes).",
    )
    max_offset: int | None = Field(default=None, description="End of the replica's commit log, in bytes.")
    lag_bytes: int | None = Field(default=None, description="How far its commit log is behind the master's, in bytes.")
    version: str | None = Field(default=None, description="RocketMQ version the broker reports.")
    pid: int | None = Field(default=None, description="Process id (local platform only).")
    address: str | None = Field(default=None, description="Broker address (host:port).")


class MasterChange(Model):
    time: str = Field(description="When the change was observed (RFC 3339).")
    from_broker_id: int | None = Field(default=None, description="Broker id of the previous master.")
    to_broker_id: int | None = Field(default=None, description="Broker id of the new master.")
    epoch: int | None = Field(default=None, description="The new master epoch.")
    reason: str = Field(default="", description="Why the master changed, e.g. elected by the RocketMQ controller.")
    duration_seconds: float | None = Field(
        default=None, description="Reserved for the change's duration in seconds (not written by this version)."
    )


class RolloutStatus(Model):
    """A rolling restart in progress or finished (resumable: the roll continues from here after a restart)."""

    target_revision: str = Field(default="", description="Digest of every replica's desired revision.")
    phase: str = Field(default="Rolling", description="Rolling | Waiting | Paused | Blocked | Complete")
    replicas_done: list[str] = Field(default_factory=list, description="Replicas running the target revision.")
    current_step: str = Field(default="", description="What the roll does, or waits for, now.")
    reason: str = Field(default="", description="Why the roll is in its phase, in one CamelCase word.")
    message: str = Field(default="", description="Details of the phase; says the fix when Blocked.")
    started: str | None = Field(default=None, description="When the roll began (RFC 3339).")
    last_transition: str | None = Field(default=None, description="When the phase last changed (RFC 3339).")
    finished: str | None = Field(default=None, description="When the roll completed (RFC 3339).")
    restarts: int = Field(default=0, description="Replicas this roll has restarted.")
    switchovers: int = Field(default=0, description="Switchovers this roll has made.")
    last_restarted: str | None = Field(default=None, description="The replica the roll waits for, if any.")
    switched_from: str | None = Field(default=None, description="The old master after the roll's switchover.")
    waiting_since: float | None = Field(default=None, description="Start of the current wait (epoch seconds).")
    serving_since: float | None = Field(
        default=None,
        description="When the process the roll restarted last was first seen serving on its new revision (epoch "
        "seconds; a Proxy's roll waits spec.minReadySeconds from it).",
    )
    removed_broker_ids: list[int] = Field(
        default_factory=list,
        description="Broker ids of replicas a scale-in removed that the controller has not forgotten yet.",
    )


class RetiringAdminStatus(Model):
    user: str = Field(description="An old admin (spec.auth.adminSecret's username before a rotation).")
    since: float = Field(description="When the operator switched away from it (Unix time, s).")


class AuthStatus(Model):
    """The admin rotation (docs/auth.md, "Rotating the admin"): resumed from here after a restart."""

    admin: str | None = Field(default=None, description="The admin the brokers start with and the operator signs as.")
    phase: str | None = Field(default=None, description="Steady | Rotating | Switched | Refused")
    message: str | None = Field(default=None, description="What the rotation does or waits for; the fix if Refused.")
    retiring_admins: list[RetiringAdminStatus] = Field(
        default_factory=list,
        description="Old admins kept on every replica until nothing started before the switch runs, then deleted.",
    )


_OBSERVED_GENERATION = "The metadata.generation of the spec this status was computed from."


class GroupDrainStatus(Model):
    since: float | None = Field(
        default=None, description="When the master was first seen read-only for this drain (Unix time, s)."
    )
    drained: bool = Field(default=False, description="Nothing is left to consume and producers have left it.")
    lag_total: int | None = Field(
        default=None, description="Messages on the master past the consumer groups' offsets (None: unread)."
    )
    lag: dict[str, int] = Field(
        default_factory=dict, description="Consumer group -> messages left to consume on this group (lag > 0 only)."
    )
    message: str = Field(default="", description="Where the drain stands, in one line.")


class BrokerGroupStatus(Model):
    observed_generation: int | None = Field(default=None, description=_OBSERVED_GENERATION)
    conditions: list[Condition] = Field(
        default_factory=list,
        description="Ready, Available, Degraded, QuorumAtRisk, ControllerUnavailable, NoEligibleMaster, and the "
        "operations' own (Switchover, DrainSwitchover, ...).",
    )
    master: MasterStatus | None = Field(default=None, description="The current master.")
    sync_state_set: SyncStateSetStatus | None = Field(
        default=None, description="The SyncStateSet the RocketMQ controller holds (controller mode)."
    )
    replicas: list[ReplicaStatus] = Field(default_factory=list, description="Every replica as last observed.")
    need_acks: int | None = Field(
        default=None, description="Acks a put needs now, the master included, given the replicas in sync."
    )
    writable: bool | None = Field(
        default=None, description="A put would be stored now: the master is alive and enough replicas are in sync."
    )
    history: list[MasterChange] = Field(default_factory=list, description="The last 10 master changes, newest last.")
    phase: str | None = Field(
        default=None,
        description="Ready (every replica alive and in sync), Available (writable) or Unavailable.",
    )
    rollout: RolloutStatus | None = Field(
        default=None, description="The current or last rolling restart (resumed from here after a restart)."
    )
    fenced: list[str] | None = Field(
        default=None,
        description="Replicas (pod names) fenced at the user's request (annotation rocketmq-operator.dev/fence): "
        "they refuse every put until unfenced; the operator fences them again after a restart.",
    )
    drain: GroupDrainStatus | None = Field(
        default=None, description="The drain under way (spec.draining, or the group being deleted)."
    )
    auth: AuthStatus | None = Field(default=None, description="The admin in use and its rotation (spec.auth).")


class KeptBackup(Model):
    secret: str = Field(description="The Secret holding it (key metadata.json).")
    taken_at: str = Field(description="When it was read from the masters (RFC 3339).")
    cluster: str = Field(description="The RocketMQ cluster it holds.")
    topics: int = Field(default=0, description="Topics in it (counted once per broker group that has them).")
    subscription_groups: int = Field(default=0, description="Subscription groups in it (likewise).")
    users: int = Field(default=0, description="ACL 2.0 users in it (likewise).")


class MetadataBackupStatus(Model):
    last_attempt: str | None = Field(default=None, description="When the last backup was tried (RFC 3339).")
    last_error: str | None = Field(
        default=None, description="Why the last attempt failed (unset when it succeeded), with the fix."
    )
    last_request: str | None = Field(
        default=None, description="The last `kubectl rocketmq backup` request answered (its annotation's value)."
    )
    kept: list[KeptBackup] = Field(default_factory=list, description="The backups kept, newest first.")


class ControllerGroupStatus(Model):
    observed_generation: int | None = Field(default=None, description=_OBSERVED_GENERATION)
    conditions: list[Condition] = Field(
        default_factory=list, description="Ready: a leader and a ready majority of the controllers."
    )
    leader: str | None = Field(
        default=None, description="The leading controller: its pod name (<group>-<ordinal>), else its address."
    )
    name_servers: list[str] = Field(
        default_factory=list, description="Name-server addresses (host:port) for brokers and clients."
    )
    controllers: list[str] = Field(default_factory=list, description="Controller addresses (host:port).")
    ready_replicas: int | None = Field(default=None, description="Controller pods that are Ready.")
    phase: str | None = Field(default=None, description="Running, Degraded, NoLeader or Pending.")
    backup: MetadataBackupStatus | None = Field(
        default=None, description="Scheduled metadata backups (spec.backup): the last attempt and those kept."
    )


class BrokerGroup(Model):
    api_version: str = API_GROUP_VERSION
    kind: Literal["BrokerGroup"] = "BrokerGroup"
    metadata: ObjectMeta
    spec: BrokerGroupSpec
    status: BrokerGroupStatus | None = None


class ControllerGroup(Model):
    api_version: str = API_GROUP_VERSION
    kind: Literal["ControllerGroup"] = "ControllerGroup"
    metadata: ObjectMeta
    spec: ControllerGroupSpec
    status: ControllerGroupStatus | None = None


Resource = BrokerGroup | ControllerGroup


# --- Topic and ConsumerGroup (declared on the masters of broker groups; RocketMQ's TopicConfig and
# SubscriptionGroupConfig, created with UPDATE_AND_CREATE_TOPIC / UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) ---


class MessageType(StrEnum):
    """The topic attribute `message.type` (RocketMQ `TopicMessageType`) a producer's messages must match."""

    NORMAL = "NORMAL"
    FIFO = "FIFO"
    DELAY = "DELAY"
    TRANSACTION = "TRANSACTION"


class TopicPermission(StrEnum):
    """TopicConfig.perm: READ 4, WRITE 2 (PermName)."""

    READ_WRITE = "ReadWrite"
    READ_ONLY = "ReadOnly"
    WRITE_ONLY = "WriteOnly"


class DeletionPolicy(StrEnum):
    """What deleting the resource does on the brokers: Keep the topic/group (and its data), or Delete it."""

    KEEP = "Keep"
    DELETE = "Delete"


class ConsumeMode(StrEnum):
    """SubscriptionGroupConfig.consumeMessageOrderly: Orderly consumes each queue in order."""

    CONCURRENTLY = "Concurrently"
    ORDERLY = "Orderly"


class TopicSpec(Model):
    topic_name: str | None = Field(
        default=None,
        description="The RocketMQ topic name (default: metadata.name). Up to 127 characters of "
        "letters, digits, '%', '|', '_' and '-'.",
    )
    broker_groups: list[str] = Field(
        default_factory=list,
        description="BrokerGroups (in this namespace) whose masters hold the topic.",
    )
    cluster_name: str | None = Field(
        default=None,
        description="Alternatively, every BrokerGroup with this spec.clusterName holds the topic.",
    )
    read_queue_nums: int = Field(default=8, description="Read queues per broker group (readQueueNums).")
    write_queue_nums: int = Field(default=8, description="Write queues per broker group (writeQueueNums).")
    permission: str = Field(
        default=TopicPermission.READ_WRITE.value, description="ReadWrite | ReadOnly | WriteOnly (TopicConfig.perm)."
    )
    message_type: str = Field(
        default=MessageType.NORMAL.value,
        description="NORMAL | FIFO | DELAY | TRANSACTION (the topic attribute message.type).",
    )
    attributes: dict[str, str] = Field(
        default_factory=dict,
        description="Other topic attributes: queue.type, cleanup.policy, reserve.time (message.type is messageType).",
    )
    deletion_policy: str = Field(
        default=DeletionPolicy.KEEP.value,
        description="Keep (default): deleting the resource leaves the topic and its messages on the brokers; "
        "Delete: the topic is deleted from every master.",
    )


class ConsumerGroupSpec(Model):
    group_name: str | None = Field(
        default=None, description="The RocketMQ consumer group name (default: metadata.name)."
    )
    broker_groups: list[str] = Field(
        default_factory=list, description="BrokerGroups (in this namespace) whose masters hold the group."
    )
    cluster_name: str | None = Field(
        default=None, description="Alternatively, every BrokerGroup with this spec.clusterName holds the group."
    )
    topics: list[str] = Field(
        default_factory=list, description="Topics the group consumes: status reports its lag on them."
    )
    consume_enable: bool = Field(default=True, description="consumeEnable: false stops every consumer of the group.")
    consume_mode: str = Field(
        default=ConsumeMode.CONCURRENTLY.value, description="Concurrently | Orderly (consumeMessageOrderly)."
    )
    broadcast: bool = Field(
        default=True, description="consumeBroadcastEnable: broadcasting consumers of this group are allowed."
    )
    consume_from_min_enable: bool = Field(default=True, description="consumeFromMinEnable.")
    retry_max_times: int = Field(default=16, description="retryMaxTimes: redeliveries before the dead-letter queue.")
    retry_queue_nums: int = Field(default=1, description="retryQueueNums of the group's retry topic.")
    deletion_policy: str = Field(
        default=DeletionPolicy.KEEP.value,
        description="Keep (default): deleting the resource leaves the group and its offsets; Delete removes them.",
    )


class TopicPlacementStatus(Model):
    broker_group: str = Field(description="The BrokerGroup.")
    master: str | None = Field(default=None, description="The master the topic was read from.")
    exists: bool = Field(default=False, description="That master has the topic.")
    read_queue_nums: int | None = Field(default=None, description="readQueueNums on that master.")
    write_queue_nums: int | None = Field(default=None, description="writeQueueNums on that master.")
    perm: int | None = Field(
        default=None, description="TopicConfig.perm on that master: 6 read-write, 4 read-only, 2 write-only."
    )
    message_type: str | None = Field(default=None, description="The message.type attribute on that master.")
    max_offsets: int | None = Field(default=None, description="Messages stored: sum of the queues' max offsets.")


class TopicStatus(Model):
    observed_generation: int | None = Field(default=None, description=_OBSERVED_GENERATION)
    conditions: list[Condition] = Field(
        default_factory=list, description="Ready: the topic is on the master of every BrokerGroup it names."
    )
    topic_name: str | None = Field(default=None, description="The RocketMQ topic name.")
    placements: list[TopicPlacementStatus] = Field(
        default_factory=list, description="Per BrokerGroup: what its master holds."
    )
    broker_groups: list[str] = Field(default_factory=list, description="Groups whose master has the topic.")
    read_queue_nums: int | None = Field(default=None, description="The readQueueNums asserted (the spec's).")
    write_queue_nums: int | None = Field(default=None, description="The writeQueueNums asserted (the spec's).")
    ready: bool | None = Field(default=None, description="Every BrokerGroup's master has the topic.")
    last_asserted: str | None = Field(
        default=None, description="Reserved for when the topic was last asserted (not written by this version)."
    )


class ConsumerGroupPlacementStatus(Model):
    broker_group: str = Field(description="The BrokerGroup.")
    master: str | None = Field(default=None, description="The master the group was read from.")
    exists: bool = Field(default=False, description="That master has the subscription group.")
    lag: int | None = Field(
        default=None, description="Messages not yet consumed from spec.topics on that master (max - committed)."
    )


class ConsumerGroupStatus(Model):
    observed_generation: int | None = Field(default=None, description=_OBSERVED_GENERATION)
    conditions: list[Condition] = Field(
        default_factory=list, description="Ready: the group is on the master of every BrokerGroup it names."
    )
    group_name: str | None = Field(default=None, description="The RocketMQ consumer group name.")
    placements: list[ConsumerGroupPlacementStatus] = Field(
        default_factory=list, description="Per BrokerGroup: what its master holds."
    )
    broker_groups: list[str] = Field(default_factory=list, description="Groups whose master has the group.")
    lag: int | None = Field(default=None, description="Sum over queues of max offset - committed offset.")
    ready: bool | None = Field(default=None, description="Every BrokerGroup's master has the group.")


class Topic(Model):
    api_version: str = API_GROUP_VERSION
    kind: Literal["Topic"] = "Topic"
    metadata: ObjectMeta
    spec: TopicSpec
    status: TopicStatus | None = None

    @property
    def topic_name(self) -> str:
        return self.spec.topic_name or self.metadata.name


class ConsumerGroup(Model):
    api_version: str = API_GROUP_VERSION
    kind: Literal["ConsumerGroup"] = "ConsumerGroup"
    metadata: ObjectMeta
    spec: ConsumerGroupSpec
    status: ConsumerGroupStatus | None = None

    @property
    def group_name(self) -> str:
        return self.spec.group_name or self.metadata.name


# --- Proxy (RocketMQ 5's gRPC front door, cluster mode: its own processes, routes from the name servers) ---

DEFAULT_PROXY_GRPC_PORT = 8081  # ProxyConfig.grpcServerPort (5.5.0)
DEFAULT_PROXY_REMOTING_PORT = 8080  # ProxyConfig.remotingListenPort
DEFAULT_PROXY_ROUTE_REFRESH_SECONDS = 1
DEFAULT_PROXY_MIN_READY_SECONDS = 15
MAX_PROXY_MIN_READY_SECONDS = 600
PROXY_SERVICE_TYPES = ("ClusterIP", "NodePort", "LoadBalancer")


class ProxyServiceSpec(Model):
    type: str = Field(
        default="ClusterIP",
        description="The proxies' Service type: ClusterIP (inside the cluster), NodePort or LoadBalancer (clients "
        "outside the cluster).",
    )
    grpc_node_port: int | None = Field(
        default=None,
        description="The node port of the gRPC port (NodePort and LoadBalancer only; 30000-32767); unset: "
        "Kubernetes picks one.",
    )
    remoting_node_port: int | None = Field(
        default=None,
        description="Remoting clients outside the cluster (RocketMQ 4.x/5.x remoting SDKs, which take the proxy as "
        "their name server): the port they reach the proxies on (NodePort and LoadBalancer only; 30000-32767; "
        "needs advertisedHost). The proxies then listen for remoting on this port too and name "
        "advertisedHost:remotingNodePort in the routes they answer, because RocketMQ's route holds one host:port "
        "for every client. Unset: remoting on 8080, routes naming the pod's IP (inside the cluster only).",
    )
    advertised_host: str | None = Field(
        default=None,
        max_length=253,
        description="The host remoting clients outside the cluster reach the proxies at (a node's address or a "
        "DNS name of the nodes for NodePort, the load balancer's address or DNS name for LoadBalancer): "
        "the proxies' remotingAccessAddr. Needs remotingNodePort.",
    )
    annotations: dict[str, str] = Field(
        default_factory=dict,
        description="Annotations of the Service (e.g. a cloud load balancer's settings).",
    )
    load_balancer_source_ranges: list[str] = Field(
        default_factory=list,
        description="Client CIDRs a LoadBalancer Service admits (LoadBalancer only); empty: anyone.",
    )


class ProxySpec(Model):
    version: str = Field(
        default=DEFAULT_ROCKETMQ_VERSION,
        description=f"RocketMQ version of the proxies (default {DEFAULT_ROCKETMQ_VERSION}); selects the default "
        f"image {DEFAULT_IMAGE_REPOSITORY}/rocketmq-broker:<version> (it holds the whole distribution).",
    )
    image: str | None = Field(
        default=None, description=f"Proxy image, instead of {DEFAULT_IMAGE_REPOSITORY}/rocketmq-broker:<version>."
    )
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = Field(
        default=None, description="imagePullPolicy of the proxy containers; unset: Kubernetes' default."
    )
    controller_ref: ControllerRef | None = Field(
        default=None,
        description="The ControllerGroup whose name servers the proxies read routes from (same namespace).",
    )
    name_servers: list[str] = Field(
        default_factory=list,
        description="Name-server addresses (host:port) instead of a ControllerGroup's.",
    )
    cluster_name: str = Field(
        default="DefaultCluster",
        description="rocketMQClusterName: the RocketMQ cluster the proxies serve (a BrokerGroup's clusterName).",
    )
    replicas: int = Field(
        default=2,
        description="Proxy processes (a Deployment: they are stateless); a change rolls one at a time and never "
        "takes every proxy down. 1 to 32.",
    )
    route_refresh_seconds: int = Field(
        default=DEFAULT_PROXY_ROUTE_REFRESH_SECONDS,
        description="topicRouteServiceCacheRefreshSeconds: how old a topic's route may be before the proxy reads it "
        "again from the name servers (RocketMQ's default 20; a proxy sends to a deposed master until then). "
        "1 to 300.",
    )
    min_ready_seconds: int = Field(
        default=DEFAULT_PROXY_MIN_READY_SECONDS,
        description="How long a restarted proxy serves before a roll restarts the next one: the time clients get "
        "to reconnect to it (the Deployment's minReadySeconds; the local platform waits the same). 0 to 600.",
    )
    service: ProxyServiceSpec = Field(
        default_factory=ProxyServiceSpec, description="The Service clients connect to (the gRPC port)."
    )
    auth: ProxyAuthSpec = Field(
        default_factory=ProxyAuthSpec, description="ACL 2.0: the proxies authenticate and authorize every client."
    )
    tls: TlsSpec = Field(
        default_factory=TlsSpec,
        description="TLS on the proxies' gRPC and remoting ports (tls.server.mode=enforcing: a plain-text client is "
        "refused) with a certificate from the operator's authority or spec.tls.secretName, and on their own "
        "connections to the name servers and brokers. Must match the cluster's BrokerGroups; off by default.",
    )
    resources: ResourceRequirements = Field(
        default_factory=ResourceRequirements, description="Requests and limits of each proxy container."
    )
    jvm: JvmSpec = Field(default_factory=JvmSpec, description="The proxies' JVM: heap, direct memory, flags.")
    metrics: MetricsSpec = Field(
        default_factory=MetricsSpec, description="RocketMQ's own Prometheus exporter on every proxy; on by default."
    )
    proxy_config: dict[str, BrokerConfigValue] = Field(
        default_factory=dict,
        description="Extra keys for rmq-proxy.json (ProxyConfig and AuthConfig keys; text or integers). A key the "
        "operator sets from another field is refused.",
    )
    node_selector: dict[str, str] = Field(
        default_factory=dict, description="Node labels the proxy pods' nodes must have."
    )
    tolerations: list[dict[str, Any]] = Field(default_factory=list, description="Tolerations of the proxy pods.")
    affinity: dict[str, Any] = Field(
        default_factory=dict,
        description="Affinity of the proxy pods. Without a podAntiAffinity the operator adds a preferred one that "
        "spreads them over nodes.",
    )
    topology_spread_constraints: list[dict[str, Any]] | None = Field(
        default=None, description=SPREAD_DESCRIPTION.format(pods="proxy")
    )

    _proxy_config_scalars = field_validator("proxy_config", mode="before")(_scalar_config)


class ProxyStatus(Model):
    observed_generation: int | None = Field(default=None, description=_OBSERVED_GENERATION)
    conditions: list[Condition] = Field(default_factory=list, description="Ready: at least one proxy is Ready.")
    ready_replicas: int | None = Field(default=None, description="Proxy pods that are Ready.")
    endpoint: str | None = Field(
        default=None, description="The gRPC endpoint (host:port) of the proxies' Service inside the cluster."
    )


class Proxy(Model):
    api_version: str = API_GROUP_VERSION
    kind: Literal["Proxy"] = "Proxy"
    metadata: ObjectMeta
    spec: ProxySpec
    status: ProxyStatus | None = None


# --- User (an ACL 2.0 user as a resource of its own: Strimzi's KafkaUser, CloudNativePG's managed roles) ---

USER_CREDENTIALS_SUFFIX = "-credentials"


class UserDeletionPolicy(StrEnum):
    """What deleting a User resource does on the brokers: Delete the user and its ACL (the default: a deleted
    resource no longer authenticates anyone), or Keep them."""

    DELETE = "Delete"
    KEEP = "Keep"


class UserResourceSpec(Model):
    user_name: str | None = Field(
        default=None,
        description="The RocketMQ user name, the clients' accessKey (default: metadata.name). Up to 64 letters, "
        "digits, '_' and '-'.",
    )
    broker_groups: list[str] = Field(
        default_factory=list,
        description="BrokerGroups (in this namespace, with spec.auth.enabled) whose every replica holds the user.",
    )
    cluster_name: str | None = Field(
        default=None, description="Alternatively, every BrokerGroup with this spec.clusterName holds the user."
    )
    type: Literal["Normal", "Super"] = Field(
        default="Normal", description="Normal (allowed what its ACL allows) or Super (allowed everything)."
    )
    password_secret: SecretKeyRef | None = Field(
        default=None,
        description="The Secret key holding the password (the clients' secretKey). Absent: the operator generates "
        "one into the Secret <metadata.name>-credentials (keys username and password), owned by this User.",
    )
    acls: list[AclRuleSpec] = Field(default_factory=list, max_length=64, description="The user's ACL 2.0 rules.")
    deletion_policy: str = Field(
        default=UserDeletionPolicy.DELETE.value,
        description="Delete (default): deleting the resource deletes the user and its ACL from every replica; "
        "Keep: they stay on the brokers.",
    )


class UserPlacementStatus(Model):
    broker_group: str = Field(description="The BrokerGroup.")
    replicas: int | None = Field(default=None, description="The group's replicas.")
    asserted: int | None = Field(default=None, description="Replicas that hold the user and its ACL as declared.")
    exists: bool = Field(
        default=False, description="Some replica may hold the user (false once every replica has confirmed not)."
    )
    message: str | None = Field(default=None, description="Why the group does not hold the user as declared.")


class UserStatus(Model):
    observed_generation: int | None = Field(default=None, description=_OBSERVED_GENERATION)
    conditions: list[Condition] = Field(
        default_factory=list,
        description="Ready: every replica of every BrokerGroup the user is placed on holds it as declared.",
    )
    user_name: str | None = Field(default=None, description="The RocketMQ user name.")
    secret: str | None = Field(default=None, description="The Secret that holds the password (and key).")
    placements: list[UserPlacementStatus] = Field(
        default_factory=list, description="Per BrokerGroup: how many of its replicas hold the user."
    )
    broker_groups: list[str] = Field(default_factory=list, description="Groups whose every replica holds the user.")
    ready: bool | None = Field(default=None, description="Every placement holds the user on every replica.")


class User(Model):
    api_version: str = API_GROUP_VERSION
    kind: Literal["User"] = "User"
    metadata: ObjectMeta
    spec: UserResourceSpec
    status: UserStatus | None = None

    @property
    def user_name(self) -> str:
        return self.spec.user_name or self.metadata.name

    def is_placed_on(self, bg: BrokerGroup) -> bool:
        """Whether this User lives on ``bg``: named in spec.brokerGroups, or of spec.clusterName, same namespace."""
        return self.metadata.namespace == bg.metadata.namespace and (
            bg.metadata.name in self.spec.broker_groups or self.spec.cluster_name == bg.spec.cluster_name
        )

    @property
    def password_ref(self) -> SecretKeyRef:
        """Where the password is: spec.passwordSecret, or the Secret the operator generates."""
        if self.spec.password_secret is not None:
            return self.spec.password_secret
        return SecretKeyRef(name=self.metadata.name + USER_CREDENTIALS_SUFFIX, key="password")


AnyResource = BrokerGroup | ControllerGroup | Topic | ConsumerGroup | Proxy | User
