"""Every metric the Helm chart's alert rules and Grafana dashboard may query, and where each one comes from.

A rule or a panel that names a series nobody exports is silently empty (an alert that can never fire), so the
chart's static test parses every expression and checks each selected series against `KNOWN_SERIES`. Three sources:

* The operator's own metrics (`platforms.kubernetes.metrics.OperatorMetrics`, prometheus-client, served on
  `run --metrics-port`). The same test checks this table against that registry: name, type and labels.
* RocketMQ's broker exporter (BrokerGroup spec.metrics: metricsExporterType=PROM), as RocketMQ 5.5.0 registers the
  instruments (broker: org/apache/rocketmq/broker/metrics/BrokerMetricsConstant.java and BrokerMetricsManager.java;
  store: org/apache/rocketmq/store/metrics/DefaultStoreMetricsConstant.java and DefaultStoreMetricsManager.java),
  under the names its Prometheus exporter gives them (opentelemetry-exporter-prometheus 1.44.1-alpha, the version
  in RocketMQ 5.5.0's lib/: Otel2PrometheusConverter.convertMetadata appends an instrument's unit, so the gauge
  `rocketmq_storage_size` with unit "bytes" is served as `rocketmq_storage_size_bytes`; a counter keeps its
  `_total`; a histogram is served as `_bucket`, `_sum` and `_count`). Every broker series carries RocketMQ's labels
  `cluster` (brokerClusterName), `node_type` ("broker") and `node_id` (brokerName, the same on every replica of a
  group), and the exporter's `otel_scope_name` ("broker-meter"); the chart's PodMonitor adds `namespace`, `pod` and
  `group` (the BrokerGroup). Served on /metrics of the pod's port named `metrics`.
* The kubelet's volume stats (Kubernetes pkg/kubelet/metrics/collectors/volume_stats.go, labels `namespace` and
  `persistentvolumeclaim`), for how full a broker's PersistentVolumeClaim (`data-<pod>`) is: RocketMQ exports the
  bytes its store uses, not the volume's size.

There are no HA or SyncStateSet metrics in RocketMQ's exporter: the SyncStateSet, writability and replica lag come
from the operator, which reads them with GET_SYNC_STATE_DATA and GET_BROKER_HA_STATUS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MetricKind = Literal["counter", "gauge", "histogram"]

OPERATOR_SOURCE = "rocketmq_operator/platforms/kubernetes/metrics.py (OperatorMetrics)"
BROKER_SOURCE = "RocketMQ 5.5.0 broker/src/main/java/org/apache/rocketmq/broker/metrics/BrokerMetricsConstant.java"
STORE_SOURCE = "RocketMQ 5.5.0 store/src/main/java/org/apache/rocketmq/store/metrics/DefaultStoreMetricsConstant.java"
KUBELET_SOURCE = "Kubernetes pkg/kubelet/metrics/collectors/volume_stats.go (kubelet /metrics)"

BROKER_BASE_LABELS: tuple[str, ...] = ("cluster", "node_type", "node_id")
"""Labels on every broker series (BrokerMetricsManager.init: LABEL_CLUSTER_NAME, LABEL_NODE_TYPE, LABEL_NODE_ID)."""
STORE_LABELS: tuple[str, ...] = (*BROKER_BASE_LABELS, "storage_type", "storage_medium")
"""DefaultStoreMetricsManager.newAttributesBuilder: storage_type="local", storage_medium="disk"."""
POD_MONITOR_LABELS: tuple[str, ...] = ("namespace", "pod", "group")
"""Target labels the chart's PodMonitor gives every broker series (prometheus-operator's namespace and pod, and the
BrokerGroup's name from the pod label rocketmq-operator.dev/group)."""


@dataclass(frozen=True)
class Metric:
    name: str
    """As Prometheus stores it (a counter with its `_total`; a histogram's base name)."""
    kind: MetricKind
    labels: tuple[str, ...]
    source: str
    help: str

    def series(self) -> tuple[str, ...]:
        """The series names a query can select."""
        if self.kind == "histogram":
            return (f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count")
        return (self.name,)


_GROUP = ("namespace", "group")

OPERATOR_METRICS: tuple[Metric, ...] = (
    Metric("rocketmq_operator_reconcile_seconds", "histogram", ("kind",), OPERATOR_SOURCE, "one reconcile pass"),
    Metric("rocketmq_operator_reconcile_errors_total", "counter", ("kind",), OPERATOR_SOURCE, "passes that raised"),
    Metric("rocketmq_operator_api_writes_total", "counter", ("kind",), OPERATOR_SOURCE, "writes to the API"),
    Metric("rocketmq_operator_master_changes_total", "counter", _GROUP, OPERATOR_SOURCE, "master changes observed"),
    Metric("rocketmq_operator_sync_state_set_size", "gauge", _GROUP, OPERATOR_SOURCE, "SyncStateSet members"),
    Metric(
        "rocketmq_operator_min_in_sync_replicas",
        "gauge",
        _GROUP,
        OPERATOR_SOURCE,
        "minInSyncReplicas the brokers run with (controller mode only)",
    ),
    Metric("rocketmq_operator_in_sync_replicas", "gauge", _GROUP, OPERATOR_SOURCE, "replicas in sync"),
    Metric("rocketmq_operator_need_acks", "gauge", _GROUP, OPERATOR_SOURCE, "acks a put needs now"),
    Metric("rocketmq_operator_writable", "gauge", _GROUP, OPERATOR_SOURCE, "1 if a put would be stored now"),
    Metric(
        "rocketmq_operator_replica_lag_bytes",
        "gauge",
        (*_GROUP, "replica"),
        OPERATOR_SOURCE,
        "bytes a replica's commit log is behind the master's",
    ),
    Metric(
        "rocketmq_operator_broker_group_condition",
        "gauge",
        (*_GROUP, "condition"),
        OPERATOR_SOURCE,
        "1 while the BrokerGroup's status condition of that type is True (ControllerUnavailable, QuorumAtRisk, ...)",
    ),
    Metric(
        "rocketmq_operator_topic_present",
        "gauge",
        ("namespace", "topic", "group"),
        OPERATOR_SOURCE,
        "1 if the group's master has the declared topic",
    ),
    Metric(
        "rocketmq_operator_consumer_group_lag",
        "gauge",
        ("namespace", "consumer_group", "topic", "group"),
        OPERATOR_SOURCE,
        "messages not yet consumed, from the declared ConsumerGroups' offsets",
    ),
    Metric(
        "rocketmq_operator_group_drain_lag",
        "gauge",
        ("namespace", "group", "consumer_group"),
        OPERATOR_SOURCE,
        "a draining BrokerGroup's messages its consumer group has not read yet",
    ),
    Metric(
        "rocketmq_operator_metadata_backup_last_success_timestamp_seconds",
        "gauge",
        ("namespace", "group"),
        OPERATOR_SOURCE,
        "when the newest kept scheduled metadata backup of a ControllerGroup was taken",
    ),
    Metric(
        "rocketmq_operator_metadata_backup_failing",
        "gauge",
        ("namespace", "group"),
        OPERATOR_SOURCE,
        "1 when the last scheduled metadata backup of a ControllerGroup failed",
    ),
)

_IN = (*BROKER_BASE_LABELS, "topic", "message_type", "is_system")  # SendMessageProcessor
_OUT = (*BROKER_BASE_LABELS, "topic", "consumer_group", "is_system")  # DefaultPullMessageResultHandler
_LAG = (*BROKER_BASE_LABELS, "consumer_group", "topic", "is_retry", "is_system")  # buildLagAttributes

BROKER_METRICS: tuple[Metric, ...] = (
    Metric("rocketmq_messages_in_total", "counter", _IN, BROKER_SOURCE, "messages put (COUNTER_MESSAGES_IN_TOTAL)"),
    Metric(
        "rocketmq_messages_out_total", "counter", _OUT, BROKER_SOURCE, "messages pulled (COUNTER_MESSAGES_OUT_TOTAL)"
    ),
    Metric("rocketmq_throughput_in_total", "counter", _IN, BROKER_SOURCE, "bytes put (COUNTER_THROUGHPUT_IN_TOTAL)"),
    Metric(
        "rocketmq_throughput_out_total", "counter", _OUT, BROKER_SOURCE, "bytes pulled (COUNTER_THROUGHPUT_OUT_TOTAL)"
    ),
    Metric(
        "rocketmq_consumer_lag_messages",
        "gauge",
        _LAG,
        BROKER_SOURCE,
        "messages a consumer group has not consumed (GAUGE_CONSUMER_LAG_MESSAGES)",
    ),
    Metric(
        "rocketmq_consumer_lag_latency_milliseconds",
        "gauge",
        _LAG,
        BROKER_SOURCE,
        "age of the oldest unconsumed message (GAUGE_CONSUMER_LAG_LATENCY, unit milliseconds appended)",
    ),
    Metric(
        "rocketmq_consumer_inflight_messages",
        "gauge",
        _LAG,
        BROKER_SOURCE,
        "messages pulled but not acknowledged (GAUGE_CONSUMER_INFLIGHT_MESSAGES)",
    ),
    Metric(
        "rocketmq_send_to_dlq_messages_total",
        "counter",
        (*BROKER_BASE_LABELS, "consumer_group", "topic", "is_system"),  # AbstractSendMessageProcessor
        BROKER_SOURCE,
        "messages moved to a dead-letter queue (COUNTER_CONSUMER_SEND_TO_DLQ_MESSAGES_TOTAL)",
    ),
    Metric(
        "rocketmq_broker_permission",
        "gauge",
        BROKER_BASE_LABELS,
        BROKER_SOURCE,
        "brokerPermission: 6 read-write, 4 read-only, 2 write-only (GAUGE_BROKER_PERMISSION)",
    ),
    Metric(
        "rocketmq_processor_watermark",
        "gauge",
        (*BROKER_BASE_LABELS, "processor"),
        BROKER_SOURCE,
        "requests queued per processor thread pool (GAUGE_PROCESSOR_WATERMARK)",
    ),
    Metric(
        "rocketmq_message_size",
        "histogram",
        _IN,
        BROKER_SOURCE,
        "size of the messages put (HISTOGRAM_MESSAGE_SIZE)",
    ),
    Metric(
        "rocketmq_storage_size_bytes",
        "gauge",
        STORE_LABELS,
        STORE_SOURCE,
        "bytes used on the store's file system (GAUGE_STORAGE_SIZE, unit bytes appended)",
    ),
    Metric(
        "rocketmq_storage_flush_behind_bytes",
        "gauge",
        STORE_LABELS,
        STORE_SOURCE,
        "bytes written but not yet flushed to disk (GAUGE_STORAGE_FLUSH_BEHIND)",
    ),
    Metric(
        "rocketmq_storage_dispatch_behind_bytes",
        "gauge",
        STORE_LABELS,
        STORE_SOURCE,
        "bytes in the commit log not yet dispatched to consume queues (GAUGE_STORAGE_DISPATCH_BEHIND)",
    ),
    Metric(
        "rocketmq_storage_message_reserve_time_milliseconds",
        "gauge",
        STORE_LABELS,
        STORE_SOURCE,
        "age of the oldest message kept (GAUGE_STORAGE_MESSAGE_RESERVE_TIME, unit milliseconds appended)",
    ),
)

KUBELET_METRICS: tuple[Metric, ...] = (
    Metric(
        "kubelet_volume_stats_available_bytes",
        "gauge",
        ("namespace", "persistentvolumeclaim"),
        KUBELET_SOURCE,
        "free bytes on a mounted PersistentVolumeClaim",
    ),
    Metric(
        "kubelet_volume_stats_capacity_bytes",
        "gauge",
        ("namespace", "persistentvolumeclaim"),
        KUBELET_SOURCE,
        "size of a mounted PersistentVolumeClaim",
    ),
)

ALL_METRICS: tuple[Metric, ...] = (*OPERATOR_METRICS, *BROKER_METRICS, *KUBELET_METRICS)
KNOWN_SERIES: frozenset[str] = frozenset(s for m in ALL_METRICS for s in m.series())
"""Every series name an alert or a dashboard panel may select."""


def metric_of_series(series: str) -> Metric | None:
    """The metric that serves `series` (a histogram's `_bucket`, `_sum` or `_count` included), if known."""
    return next((m for m in ALL_METRICS if series in m.series()), None)
