"""Prometheus metrics of the operator, on their own registry (one per operator instance, not global)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server


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

    def serve(self, port: int) -> None:
        start_http_server(port, registry=self.registry)
