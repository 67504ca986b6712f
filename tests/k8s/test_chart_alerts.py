"""The chart's alerts through Prometheus's own promtool (from Debian's prometheus package, k8s/tools/build.py):
the rule file and the PrometheusRule the chart renders pass `promtool check rules`, and `promtool test rules`
plays series through two alerts to show when they fire and when they must not."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import k8s_scripts
from real_parts import missing

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "charts" / "rocketmq-operator" / "rules" / "rocketmq-alerts.yaml"
build_tools = k8s_scripts.load("harness").build_tools


@pytest.fixture(scope="module")
def promtool() -> Path:
    try:
        path = build_tools.build(quiet=True, only=("promtool",)) / "promtool"
    except (SystemExit, OSError, subprocess.CalledProcessError) as exc:
        missing(f"fetching promtool (make k8s-promtool) failed: {exc}")
    if not path.is_file():
        missing(f"promtool is not in {path.parent} (make k8s-promtool)")
    return path


def _run(promtool: Path, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(promtool), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_the_rule_file_and_the_rendered_prometheus_rule_pass_promtool(
    promtool: Path, k8s_cluster: Any, tmp_path: Path
) -> None:
    res = _run(promtool, "check", "rules", RULES)
    assert res.returncode == 0, res.stdout + res.stderr
    chart = ROOT / "charts" / "rocketmq-operator"
    out = k8s_cluster.helm("template", "rmq", chart, "--set", "metrics.prometheusRule.enabled=true").stdout
    rule = next(d for d in yaml.safe_load_all(out) if d and d.get("kind") == "PrometheusRule")
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}), encoding="utf-8")
    res = _run(promtool, "check", "rules", rendered)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS" in res.stdout


ALERT_TESTS = {
    "evaluation_interval": "30s",
    "tests": [
        {
            "interval": "30s",
            "input_series": [
                # writable for a minute, then not: the alert fires after `for: 1m`, not before
                {"series": 'rocketmq_operator_writable{namespace="rmq",group="broker-a"}', "values": "1 1 0 0 0 0 0"},
                # a SyncStateSet of 1 against minInSyncReplicas 2 ...
                {"series": 'rocketmq_operator_sync_state_set_size{namespace="rmq",group="broker-a"}', "values": "1x8"},
                {"series": 'rocketmq_operator_min_in_sync_replicas{namespace="rmq",group="broker-a"}', "values": "2x8"},
                # ... and the same for broker-b, whose controller cannot be read: that alert stays silent there
                {"series": 'rocketmq_operator_sync_state_set_size{namespace="rmq",group="broker-b"}', "values": "1x8"},
                {"series": 'rocketmq_operator_min_in_sync_replicas{namespace="rmq",group="broker-b"}', "values": "2x8"},
                {
                    "series": 'rocketmq_operator_broker_group_condition{namespace="rmq",group="broker-b",'
                    'condition="ControllerUnavailable"}',
                    "values": "1x8",
                },
            ],
            "alert_rule_test": [
                {"eval_time": "1m30s", "alertname": "RocketMQBrokerGroupNotWritable", "exp_alerts": []},
                {
                    "eval_time": "2m30s",
                    "alertname": "RocketMQBrokerGroupNotWritable",
                    "exp_alerts": [{"exp_labels": {"severity": "critical", "namespace": "rmq", "group": "broker-a"}}],
                },
                {
                    "eval_time": "2m",
                    "alertname": "RocketMQSyncStateSetBelowMinInSyncReplicas",
                    "exp_alerts": [{"exp_labels": {"severity": "critical", "namespace": "rmq", "group": "broker-a"}}],
                },
            ],
        }
    ],
}


def test_promtool_plays_series_through_the_alerts(promtool: Path, tmp_path: Path) -> None:
    # Annotations are prose for people; the test checks what fires, when, and with which labels.
    doc = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    for group in doc["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(doc), encoding="utf-8")
    tests = tmp_path / "tests.yaml"
    tests.write_text(yaml.safe_dump({"rule_files": [str(rules)], **ALERT_TESTS}), encoding="utf-8")
    res = _run(promtool, "test", "rules", tests)
    assert res.returncode == 0, res.stdout + res.stderr
