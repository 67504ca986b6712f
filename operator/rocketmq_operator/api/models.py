"""The BrokerGroup, ControllerGroup, Topic and ConsumerGroup API (group `rocketmq-operator.dev`, version `v1alpha1`).

These pydantic models are the contract: field names (camelCase on the wire) are what manifests, examples, the
CRD schema and external checks rely on. The models only check *shape* (types, unknown fields); every semantic
rule lives in `api.rules`, once in Python and once as CEL, so that both give the same message.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

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
    size: str = Field(default="10Gi", description="PersistentVolumeClaim size per replica (a quantity).")
    storage_class_name: str | None = None
    reclaim_policy: str = Field(
        default=ReclaimPolicy.RETAIN.value,
        description="Retain keeps the PVCs when the group is deleted; Delete removes them.",
    )


class SlaveReadSpec(Model):
    enabled: bool = Field(default=False, description="slaveReadEnable: lagging consumers are sent to slaves.")
    memory_ratio: int | None = Field(
        default=None,
        description="accessMessageInMemoryMaxRatio (0-100, RocketMQ default 40): backlog share of memory "
        "above which a consumer is sent to a slave.",
    )


class JvmSpec(Model):
    heap: str | None = Field(default=None, description="JVM heap (-Xms/-Xmx), a quantity such as 2Gi.")
    direct_memory: str | None = Field(default=None, description="-XX:MaxDirectMemorySize, a quantity.")
    extra_options: list[str] = Field(default_factory=list, description="Appended after the rendered options.")


DEFAULT_DETECTION_SECONDS = 4.0


class FailoverSpec(Model):
    allow_unclean: bool = Field(
        default=False,
        description="Allow electing a master outside the SyncStateSet (may lose acknowledged messages).",
    )
    detection_seconds: float = Field(
        default=DEFAULT_DETECTION_SECONDS,
        description="Seconds the master may go without answering the operator before it is fenced (its process "
        "killed, or its pod deleted with grace period 0) and the controller is asked to elect; the controller "
        "alone would wait controllerHeartBeatTimeoutMills (10 s). Lower is faster failover; a stop-the-world "
        "pause longer than this causes a needless failover. 1 to 60.",
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


class UpgradeSpec(Model):
    strategy: str = Field(default=UpgradeStrategy.SWITCHOVER.value, description="switchover | restart | supervised")


class ResourceRequirements(Model):
    requests: dict[str, str | int] = Field(default_factory=dict)
    limits: dict[str, str | int] = Field(default_factory=dict)


# RocketMQ reads every value as text; the CRD types values as int-or-string (CEL needs a typed map), so booleans
# and fractions are written quoted ("true", "0.5"). A YAML `true` is refused here with that fix, not coerced.
BrokerConfigValue = str | int


def _scalar_config(values: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(values, dict):
        return values
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            shown = str(value).lower() if isinstance(value, bool) else str(value)
            raise ValueError(
                f"{key}: {value!r} is not a string or an integer; RocketMQ reads config values as text; "
                f'fix: quote it, e.g. {key}: "{shown}"'
            )
    return values


class BrokerGroupSpec(Model):
    version: str = Field(default=DEFAULT_ROCKETMQ_VERSION, description="RocketMQ version; selects the image.")
    image: str | None = Field(default=None, description="Broker image override.")
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    cluster_name: str = Field(default="DefaultCluster", description="brokerClusterName.")
    replicas: int = Field(default=3, description="Brokers in the group (totalReplicas).")
    # Enums are plain strings here so that a bad value reaches the rule with its own message (api.rules).
    ha_mode: str = Field(default=HAMode.CONTROLLER.value, description="controller | slaveActingMaster | sync | async")
    controller_ref: ControllerRef | None = Field(
        default=None,
        description="The ControllerGroup whose controllers elect masters (controller mode) and whose name "
        "servers the brokers register with.",
    )
    name_servers: list[str] = Field(
        default_factory=list,
        description="Explicit name-server host:port list, instead of the ControllerGroup's (non-controller modes).",
    )
    quorum: QuorumSpec = Field(default_factory=QuorumSpec)
    storage: StorageSpec = Field(default_factory=StorageSpec)
    slave_read: SlaveReadSpec = Field(default_factory=SlaveReadSpec)
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    jvm: JvmSpec = Field(default_factory=JvmSpec)
    broker_config: dict[str, BrokerConfigValue] = Field(
        default_factory=dict, description="Extra broker.conf keys (validated against RocketMQ's real keys)."
    )
    failover: FailoverSpec = Field(default_factory=FailoverSpec)
    auto_create: AutoCreateSpec = Field(default_factory=AutoCreateSpec)

    _broker_config_scalars = field_validator("broker_config", mode="before")(_scalar_config)

    upgrade: UpgradeSpec = Field(default_factory=UpgradeSpec)
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    affinity: dict[str, Any] = Field(default_factory=dict)
    priority_class_name: str | None = None


class NameServerSpec(Model):
    replicas: int | None = Field(
        default=None, description="Name servers when standalone (default: as many as controllers)."
    )


class ControllerGroupSpec(Model):
    version: str = Field(default=DEFAULT_ROCKETMQ_VERSION)
    image: str | None = None
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
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
    name_servers: NameServerSpec = Field(default_factory=NameServerSpec)
    storage: StorageSpec = Field(default_factory=lambda: StorageSpec(size="1Gi"))
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    jvm: JvmSpec = Field(default_factory=JvmSpec)
    controller_config: dict[str, BrokerConfigValue] = Field(
        default_factory=dict, description="Extra controller/name-server keys."
    )
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[dict[str, Any]] = Field(default_factory=list)
    affinity: dict[str, Any] = Field(default_factory=dict)

    _controller_config_scalars = field_validator("controller_config", mode="before")(_scalar_config)


# --- status (one model for both platforms) ---


class Condition(Model):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: int | None = None


class MasterStatus(Model):
    broker_id: int | None = None
    replica: str | None = Field(default=None, description="Pod (or local replica) name of the master.")
    address: str | None = None
    epoch: int | None = None


class SyncStateSetStatus(Model):
    members: list[int] = Field(default_factory=list)
    epoch: int | None = None


class ReplicaStatus(Model):
    name: str
    broker_id: int | None = None
    role: Literal["master", "slave", "unknown"] = "unknown"
    alive: bool = False
    in_sync: bool = False
    max_offset: int | None = None
    lag_bytes: int | None = None
    version: str | None = None
    pid: int | None = None
    address: str | None = None


class MasterChange(Model):
    time: str
    from_broker_id: int | None = None
    to_broker_id: int | None = None
    epoch: int | None = None
    reason: str = ""
    duration_seconds: float | None = None


class RolloutStatus(Model):
    """A rolling restart in progress or finished (resumable: the roll continues from here after a restart)."""

    target_revision: str = Field(default="", description="Digest of every replica's desired revision.")
    phase: str = Field(default="Rolling", description="Rolling | Waiting | Paused | Blocked | Complete")
    replicas_done: list[str] = Field(default_factory=list, description="Replicas running the target revision.")
    current_step: str = ""
    reason: str = ""
    message: str = ""
    started: str | None = None
    last_transition: str | None = None
    finished: str | None = None
    restarts: int = 0
    switchovers: int = 0
    last_restarted: str | None = Field(default=None, description="The replica the roll waits for, if any.")
    switched_from: str | None = Field(default=None, description="The old master after the roll's switchover.")
    waiting_since: float | None = Field(default=None, description="Start of the current wait (epoch seconds).")
    removed_broker_ids: list[int] = Field(
        default_factory=list,
        description="Broker ids of replicas a scale-in removed that the controller has not forgotten yet.",
    )


class BrokerGroupStatus(Model):
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list)
    master: MasterStatus | None = None
    sync_state_set: SyncStateSetStatus | None = None
    replicas: list[ReplicaStatus] = Field(default_factory=list)
    need_acks: int | None = None
    writable: bool | None = None
    history: list[MasterChange] = Field(default_factory=list)
    phase: str | None = None
    rollout: RolloutStatus | None = None


class ControllerGroupStatus(Model):
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list)
    leader: str | None = None
    name_servers: list[str] = Field(default_factory=list)
    controllers: list[str] = Field(default_factory=list)
    ready_replicas: int | None = None
    phase: str | None = None


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
    broker_group: str
    master: str | None = Field(default=None, description="The master the topic was read from.")
    exists: bool = False
    read_queue_nums: int | None = None
    write_queue_nums: int | None = None
    perm: int | None = None
    message_type: str | None = None
    max_offsets: int | None = Field(default=None, description="Messages stored: sum of the queues' max offsets.")


class TopicStatus(Model):
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list)
    topic_name: str | None = None
    placements: list[TopicPlacementStatus] = Field(default_factory=list)
    broker_groups: list[str] = Field(default_factory=list, description="Groups whose master has the topic.")
    read_queue_nums: int | None = None
    write_queue_nums: int | None = None
    ready: bool | None = None
    last_asserted: str | None = None


class ConsumerGroupPlacementStatus(Model):
    broker_group: str
    master: str | None = None
    exists: bool = False
    lag: int | None = None


class ConsumerGroupStatus(Model):
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list)
    group_name: str | None = None
    placements: list[ConsumerGroupPlacementStatus] = Field(default_factory=list)
    broker_groups: list[str] = Field(default_factory=list)
    lag: int | None = Field(default=None, description="Sum over queues of max offset - committed offset.")
    ready: bool | None = None


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


AnyResource = BrokerGroup | ControllerGroup | Topic | ConsumerGroup
