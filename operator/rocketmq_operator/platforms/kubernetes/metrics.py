"""Prometheus metrics of the operator, on their own registry (one per operator instance, not global).

The chart's alert rules and dashboard query these by name: `render.kubernetes.metric_names.OPERATOR_METRICS` lists
them (a unit test compares it with this registry), next to the brokers' own metrics (spec.metrics).
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from rocketmq_operator.api.models import BrokerGroupSpec, BrokerGroupStatus, HAMode, MetadataBackupStatus
from rocketmq_operator.core.backup_schedule import iso_seconds
from rocketmq_operator.core.quorum import effective_quorum


class OperatorMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.reconcile_seconds = Histogram(
            "rocketmq_operator_reconcile_seconds",
            "Duration of one reconcile pass",
            ["kind"],
            registry=self.registry,
        )
        self.reconcile_errors = Counter(
            "rocketmq_operator_reconcile_errors_total",
            "Reconcile passes that raised",
            ["kind"],
            registry=self.registry,
        )
        self.api_writes = Counter(
            "rocketmq_operator_api_writes_total",
            "Writes the reconciler sent to the Kubernetes API",
            ["kind"],
            registry=self.registry,
        )
        self.master_changes = Counter(
            "rocketmq_operator_master_changes_total",
            "Master changes observed",
            ["namespace", "group"],
            registry=self.registry,
        )
        self.sync_state_set_size = Gauge(
            "rocketmq_operator_sync_state_set_size",
            "SyncStateSet members",
            ["namespace", "group"],
            registry=self.registry,
        )

        labels = ["namespace", "group"]
        self.in_sync = Gauge("rocketmq_operator_in_sync_replicas", "Replicas in sync", labels, registry=self.registry)
        self.need_acks = Gauge("rocketmq_operator_need_acks", "Acks a put needs now", labels, registry=self.registry)
        self.writable = Gauge(
            "rocketmq_operator_writable", "1 if a put would be stored now", labels, registry=self.registry
        )
        # Controller mode: puts are refused (IN_SYNC_REPLICAS_NOT_ENOUGH) while the SyncStateSet is smaller.
        self.min_in_sync_replicas = Gauge(
            "rocketmq_operator_min_in_sync_replicas",
            "minInSyncReplicas the brokers run with (controller mode only)",
            labels,
            registry=self.registry,
        )
        self.condition = Gauge(
            "rocketmq_operator_broker_group_condition",
            "1 while the BrokerGroup's status condition of this type is True",
            [*labels, "condition"],
            registry=self.registry,
        )
        self.lag_bytes = Gauge(
            "rocketmq_operator_replica_lag_bytes",
            "Bytes behind the master",
            [*labels, "replica"],
            registry=self.registry,
        )

        self.topic_present = Gauge(
            "rocketmq_operator_topic_present",
            "1 if the group's master has the declared topic",
            ["namespace", "topic", "group"],
            registry=self.registry,
        )
        self.consumer_lag = Gauge(
            "rocketmq_operator_consumer_group_lag",
            "Messages not yet consumed: sum over the topic's queues of max offset - committed offset",
            ["namespace", "consumer_group", "topic", "group"],
            registry=self.registry,
        )

        self.drain_lag = Gauge(
            "rocketmq_operator_group_drain_lag",
            "A draining BrokerGroup's messages its consumer group has not read yet (spec.draining or a deletion)",
            ["namespace", "group", "consumer_group"],
            registry=self.registry,
        )
        self._drain_labels: dict[tuple[str, str], set[str]] = {}
        self.backup_last_success = Gauge(
            "rocketmq_operator_metadata_backup_last_success_timestamp_seconds",
            "When the newest kept scheduled metadata backup of a ControllerGroup was taken (Unix time)",
            ["namespace", "group"],
            registry=self.registry,
        )
        self.backup_failing = Gauge(
            "rocketmq_operator_metadata_backup_failing",
            "1 when the last scheduled metadata backup of a ControllerGroup failed (status.backup.lastError)",
            ["namespace", "group"],
            registry=self.registry,
        )

    def record_backup(self, namespace: str, group: str, status: MetadataBackupStatus) -> None:
        """A ControllerGroup's scheduled backups (spec.backup): the newest kept one's time, and whether the last
        attempt failed."""
        self.backup_failing.labels(namespace=namespace, group=group).set(1 if status.last_error else 0)
        taken = iso_seconds(status.kept[0].taken_at) if status.kept else None
        if taken is not None:
            self.backup_last_success.labels(namespace=namespace, group=group).set(taken)

    def record_drain(self, namespace: str, group: str, lag: Mapping[str, int] | None, drained: bool | None) -> None:
        """The drain's lag per consumer group and the `Drained` condition (None: no drain, the series removed)."""
        key = (namespace, group)
        for consumer_group in self._drain_labels.pop(key, set()) - set(lag or {}):
            self.drain_lag.remove(namespace, group, consumer_group)
        if drained is None:
            self.condition.labels(namespace=namespace, group=group, condition="Drained").set(0)
            return
        for consumer_group, left in (lag or {}).items():
            self.drain_lag.labels(namespace=namespace, group=group, consumer_group=consumer_group).set(left)
        self._drain_labels[key] = set(lag or {})
        self.condition.labels(namespace=namespace, group=group, condition="Drained").set(1 if drained else 0)

    def record_quorum_and_conditions(
        self, namespace: str, group: str, spec: BrokerGroupSpec, status: BrokerGroupStatus
    ) -> None:
        """What the alerts compare besides the SyncStateSet: the minInSyncReplicas the brokers run with (controller
        mode, where a smaller SyncStateSet refuses puts; other modes have no SyncStateSet and no such gauge), and
        every status condition of the group as 1 (True) or 0."""
        quorum = effective_quorum(spec)
        if quorum.mode is HAMode.CONTROLLER:
            self.min_in_sync_replicas.labels(namespace=namespace, group=group).set(quorum.min_in_sync_replicas)
        for c in status.conditions:
            self.condition.labels(namespace=namespace, group=group, condition=c.type).set(
                1 if c.status == "True" else 0
            )

    def serve(self, port: int) -> None:
        start_http_server(port, registry=self.registry)
