"""The operator gauges the chart's alerts compare (charts/rocketmq-operator/rules/rocketmq-alerts.yaml).

* rocketmq_operator_min_in_sync_replicas: set for controller-mode groups only (the SyncStateSet alert compares it
  with rocketmq_operator_sync_state_set_size, which other modes leave at 0).
* rocketmq_operator_broker_group_condition{condition}: 1 while the condition is True, else 0.
"""

from __future__ import annotations

from typing import Any

from rocketmq_operator.api.models import BrokerGroupSpec, BrokerGroupStatus, Condition
from rocketmq_operator.platforms.kubernetes.metrics import OperatorMetrics


def _value(metrics: OperatorMetrics, name: str, **labels: str) -> Any:
    return metrics.registry.get_sample_value(name, labels)


def test_min_in_sync_replicas_is_exported_for_controller_mode_only() -> None:
    metrics = OperatorMetrics()
    status = BrokerGroupStatus()
    controller = BrokerGroupSpec.model_validate({"replicas": 3, "quorum": {"minInSyncReplicas": 2}})
    metrics.record_quorum_and_conditions("mq", "a", controller, status)
    assert _value(metrics, "rocketmq_operator_min_in_sync_replicas", namespace="mq", group="a") == 2
    classic = BrokerGroupSpec.model_validate({"replicas": 2, "haMode": "sync", "nameServers": ["ns:9876"]})
    metrics.record_quorum_and_conditions("mq", "b", classic, status)
    assert _value(metrics, "rocketmq_operator_min_in_sync_replicas", namespace="mq", group="b") is None


def test_conditions_are_one_while_true() -> None:
    metrics = OperatorMetrics()
    status = BrokerGroupStatus(
        conditions=[
            Condition(type="ControllerUnavailable", status="True", reason="ControllerQuorumUnreadable"),
            Condition(type="QuorumAtRisk", status="False", reason="Tolerates"),
            Condition(type="Ready", status="Unknown"),
        ]
    )
    metrics.record_quorum_and_conditions("mq", "a", BrokerGroupSpec(), status)
    name = "rocketmq_operator_broker_group_condition"
    assert _value(metrics, name, namespace="mq", group="a", condition="ControllerUnavailable") == 1
    assert _value(metrics, name, namespace="mq", group="a", condition="QuorumAtRisk") == 0
    assert _value(metrics, name, namespace="mq", group="a", condition="Ready") == 0
    # Cleared when the condition clears.
    status.conditions[0] = Condition(type="ControllerUnavailable", status="False", reason="ControllerReachable")
    metrics.record_quorum_and_conditions("mq", "a", BrokerGroupSpec(), status)
    assert _value(metrics, name, namespace="mq", group="a", condition="ControllerUnavailable") == 0
