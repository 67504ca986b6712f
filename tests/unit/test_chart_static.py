"""The Helm chart and the GitOps example, checked without a cluster.

* charts/rocketmq-operator/crds/ holds byte-identical copies of crds/ (Helm installs them before templates).
* values.yaml passes values.schema.json, and bad values are refused. The schema is checked with `jsonschema`
  when it is importable and ALWAYS with the small draft-07 subset validator below (the test also pins that
  the schema uses no keyword outside that subset, so the fallback never silently ignores a rule).
* Every YAML file under examples/gitops parses, and the kustomization builds when kubectl is on PATH.
* The RBAC rules grant what the operator calls (read from the templates' rule blocks, without helm).
* When a helm binary is found (PATH or the k8s tools cache), `helm lint --strict` and `helm template` run.
* Monitoring: the PodMonitor selects the broker pods' `metrics` port, the PrometheusRule carries
  rules/rocketmq-alerts.yaml, every alert has a severity, a summary, a description and a `for:`, and every
  expression of the alerts and of the Grafana dashboard parses as PromQL (promql-parser, the Python binding of
  GreptimeDB's Rust parser) and selects only series listed in render.kubernetes.metric_names, whose operator part
  is checked against the operator's own registry.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from real_parts import missing

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "rocketmq-operator"
ALERTS = CHART / "rules" / "rocketmq-alerts.yaml"
DASHBOARD = CHART / "dashboards" / "rocketmq-operator.json"
GITOPS = ROOT / "examples" / "gitops"
SCHEMA = json.loads((CHART / "values.schema.json").read_text())
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())


# --- CRDs -------------------------------------------------------------------------------------------------


def test_chart_crds_are_copies_of_repo_crds() -> None:
    repo = {p.name: p.read_bytes() for p in sorted((ROOT / "crds").glob("*.yaml"))}
    chart = {p.name: p.read_bytes() for p in sorted((CHART / "crds").iterdir())}
    fix = "fix: cp crds/*.yaml charts/rocketmq-operator/crds/ (and remove files no longer in crds/)"
    assert repo, "crds/ is empty"
    assert sorted(chart) == sorted(repo), f"chart crds/ files {sorted(chart)} != crds/ files {sorted(repo)}; {fix}"
    stale = [name for name in repo if chart[name] != repo[name]]
    assert not stale, f"charts/rocketmq-operator/crds/ differs from crds/ for {stale}; {fix}"


# --- values.schema.json -------------------------------------------------------------------------------------

# Keywords the subset validator implements, and annotation keywords it may ignore.
CHECKED = {
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "properties",
    "additionalProperties",
    "required",
    "items",
    "uniqueItems",
    "minItems",
    "$ref",
    "if",
    "then",
}
ANNOTATIONS = {"$schema", "title", "description", "definitions"}
TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "null": lambda v: v is None,
}


def _resolve(ref: str) -> dict[str, Any]:
    assert ref.startswith("#/"), ref
    node: Any = SCHEMA
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def subset_errors(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Draft-07 validation for the keywords in CHECKED: a list of 'path: problem' strings."""
    where = path or "(root)"
    if "$ref" in schema:
        return subset_errors(value, _resolve(schema["$ref"]), path)
    errors: list[str] = []
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](value) for t in types):
            return [f"{where}: {value!r} is not of type {types}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: {value!r} is not {schema['const']!r}")
    if TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: {value} is less than {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where}: {value} is more than {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{where}: {value!r} is too short")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{where}: {value!r} is too long")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{where}: {key!r} is required")
        for key, item in value.items():
            sub = f"{path}.{key}" if path else key
            if key in props:
                errors.extend(subset_errors(item, props[key], sub))
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: unknown key {key!r}")
            elif isinstance(schema.get("additionalProperties"), dict):
                errors.extend(subset_errors(item, schema["additionalProperties"], sub))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{where}: needs at least {schema['minItems']} item(s)")
        if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) != len(value):
            errors.append(f"{where}: items are not unique")
        if "items" in schema:
            for i, item in enumerate(value):
                errors.extend(subset_errors(item, schema["items"], f"{path}[{i}]"))
    if "if" in schema and not subset_errors(value, schema["if"], path) and "then" in schema:
        errors.extend(subset_errors(value, schema["then"], path))
    return errors


def schema_errors(values: dict[str, Any]) -> list[str]:
    """Errors from the subset validator; when `jsonschema` is importable it must agree on valid/invalid."""
    errors = subset_errors(values, SCHEMA)
    try:
        import jsonschema
    except ImportError:
        return errors
    full = [e.message for e in jsonschema.Draft7Validator(SCHEMA).iter_errors(values)]
    assert bool(full) == bool(errors), f"jsonschema says {full}, the subset validator says {errors}"
    return errors


def _keywords(node: Any, found: set[str], in_properties: bool = False) -> None:
    if isinstance(node, dict):
        for key, sub in node.items():
            if not in_properties:
                found.add(key)
            # Under "properties"/"definitions" the keys are names, not keywords.
            _keywords(sub, found, in_properties=not in_properties and key in ("properties", "definitions"))
    elif isinstance(node, list):
        for item in node:
            _keywords(item, found)


def test_schema_uses_only_keywords_the_fallback_checks() -> None:
    found: set[str] = set()
    _keywords(SCHEMA, found)
    assert found - CHECKED - ANNOTATIONS == set(), "extend subset_errors() for these keywords"


def _strict_objects(node: Any, path: str = "") -> list[str]:
    """Paths of object schemas with declared properties but no additionalProperties: false."""
    bad = []
    if isinstance(node, dict):
        if "properties" in node and node.get("additionalProperties") is not False:
            bad.append(path or "(root)")
        for key, sub in node.items():
            if key not in ("if", "then"):  # conditions, not the shape of the values
                bad.extend(_strict_objects(sub, f"{path}/{key}"))
    return bad


def test_schema_is_strict_at_every_level() -> None:
    assert SCHEMA["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert _strict_objects(SCHEMA) == []


def test_default_values_pass_the_schema() -> None:
    assert schema_errors(VALUES) == []
    # Every key the templates read has a default.
    for key in ("image", "rbac", "serviceAccount", "peering", "health", "metrics", "watchNamespaces"):
        assert key in VALUES
    assert VALUES["rbac"]["scope"] == "namespace" and VALUES["watchNamespaces"] == []  # least privilege
    assert VALUES["metrics"]["port"] == 9090 and VALUES["health"]["port"] == 8080
    assert VALUES["metrics"]["serviceMonitor"]["enabled"] is False


def _with(changes: dict[str, Any]) -> dict[str, Any]:
    """VALUES with dotted-path changes applied (value None deletes the key)."""
    values = copy.deepcopy(VALUES)
    for dotted, new in changes.items():
        *parents, last = dotted.split(".")
        node = values
        for part in parents:
            node = node.setdefault(part, {})
        if new is None:
            node.pop(last, None)
        else:
            node[last] = new
    return values


GOOD = {
    "namespace scope": {"rbac.scope": "namespace", "watchNamespaces": ["team-a", "team-b"]},
    "namespace scope, the release's own namespace": {"rbac.scope": "namespace", "watchNamespaces": []},
    "cluster scope, some namespaces": {"rbac.scope": "cluster", "watchNamespaces": ["rocketmq"]},
    "cluster scope, every namespace": {"rbac.scope": "cluster", "watchNamespaces": []},
    "peering and monitor": {
        "peering.enabled": True,
        "metrics.serviceMonitor.enabled": True,
        "metrics.serviceMonitor.labels": {"release": "prom"},
    },
    "broker metrics and alerts": {
        "metrics.podMonitor.enabled": True,
        "metrics.podMonitor.interval": "15s",
        "metrics.podMonitor.labels": {"release": "prom"},
        "metrics.prometheusRule.enabled": True,
        "metrics.prometheusRule.labels": {"role": "alert-rules"},
        "metrics.grafanaDashboard.enabled": True,
    },
    "pinned image": {"image.tag": "0.1.0", "image.pullPolicy": "Always", "imagePullSecrets": [{"name": "registry"}]},
    "scheduling": {
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "mq", "effect": "NoSchedule"}],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "resources": {"requests": {"cpu": 0.5, "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
    },
    "extras": {"extraArgs": ["--verbose"], "extraEnv": [{"name": "TZ", "value": "UTC"}], "verbose": True},
    "no cluster-wide reads": {
        "rbac.scope": "namespace",
        "watchNamespaces": ["a"],
        "rbac.crdAccess": False,
        "rbac.clusterRead": False,
    },
}

BAD = {
    "scope not an enum value": {"rbac.scope": "global"},
    "zero replicas": {"replicaCount": 0},
    "two replicas (kopf has no leader election)": {"replicaCount": 2},
    "replicas as a string": {"replicaCount": "1"},
    "replicas as a float": {"replicaCount": 1.5},
    "image repository not a string": {"image.repository": 5},
    "image tag not a string": {"image.tag": 1.0},
    "empty image repository": {"image.repository": ""},
    "unknown pull policy": {"image.pullPolicy": "Sometimes"},
    "unknown top-level key": {"replicas": 1},
    "unknown nested key": {"rbac.clusterWide": True},
    "unknown metrics key": {"metrics.serviceMonitor.enable": True},
    "bad namespace name": {"watchNamespaces": ["Team_A"]},
    "duplicate namespace": {"watchNamespaces": ["a", "a"]},
    "port out of range": {"metrics.port": 70000},
    "boolean as string": {"peering.enabled": "yes"},
    "bad quantity": {"resources.limits": {"memory": "lots"}},
    "bad interval": {"metrics.serviceMonitor.interval": "30 seconds"},
    "bad pod monitor interval": {"metrics.podMonitor.interval": "often"},
    "unknown podMonitor key": {"metrics.podMonitor.port": "metrics"},
    "prometheusRule switch as a string": {"metrics.prometheusRule.enabled": "true"},
    "prometheusRule label not a string": {"metrics.prometheusRule.labels": {"release": 1}},
    "bad toleration key": {"tolerations": [{"keys": "x"}]},
    "missing rbac": {"rbac": None},
    "clusterRead not a boolean": {"rbac.clusterRead": "yes"},
    "clusterRead missing": {"rbac.clusterRead": None},
}


@pytest.mark.parametrize("changes", GOOD.values(), ids=list(GOOD))
def test_good_values_accepted(changes: dict[str, Any]) -> None:
    assert schema_errors(_with(changes)) == []


@pytest.mark.parametrize("changes", BAD.values(), ids=list(BAD))
def test_bad_values_refused(changes: dict[str, Any]) -> None:
    assert schema_errors(_with(changes)), f"the schema accepted {changes}"


# --- chart layout -----------------------------------------------------------------------------------------


def test_chart_metadata_and_templates() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "rocketmq-operator" and chart["type"] == "application"
    names = {p.name for p in (CHART / "templates").iterdir()}
    assert {
        "deployment.yaml",
        "rbac.yaml",
        "serviceaccount.yaml",
        "metrics-service.yaml",
        "servicemonitor.yaml",
        "podmonitor.yaml",
        "prometheusrule.yaml",
        "grafana-dashboard.yaml",
        "_helpers.tpl",
    } <= names
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    flags = set(re.findall(r"^- (--[a-z-]+)$", helpers, re.M))
    assert flags == {"--namespace", "--all-namespaces", "--liveness", "--metrics-port", "--standalone", "--verbose"}


@pytest.mark.parametrize(
    "args",
    [
        [
            "run",
            "--all-namespaces",
            "--liveness",
            "http://0.0.0.0:8080/healthz",
            "--metrics-port",
            "9090",
            "--standalone",
        ],
        [
            "run",
            "--namespace",
            "a",
            "--namespace",
            "b",
            "--liveness",
            "http://0.0.0.0:8080/healthz",
            "--metrics-port",
            "9090",
            "--verbose",
        ],
    ],
)
def test_the_cli_accepts_the_chart_arguments(args: list[str]) -> None:
    from rocketmq_operator.cli import build_parser

    parsed = build_parser().parse_args(args)
    assert parsed.liveness == "http://0.0.0.0:8080/healthz" and parsed.metrics_port == 9090
    assert parsed.all_namespaces or parsed.namespace == ["a", "b"]


# --- RBAC rules, read from the templates ---------------------------------------------------------------------


def _rules(define: str) -> list[dict[str, Any]]:
    """The rules of one `{{- define ... }}` block of _helpers.tpl, up to its first template line (the
    conditional peering rules are left out: they are not the operator's own calls)."""
    text = (CHART / "templates" / "_helpers.tpl").read_text()
    body = text.split(f'{{{{- define "{define}" -}}}}\n', 1)[1]
    lines = []
    for line in body.splitlines():
        if line.startswith("{{"):
            break
        lines.append(line)
    rules = yaml.safe_load("\n".join(lines))
    assert isinstance(rules, list), body
    return rules


def _grants(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def test_rbac_grants_what_the_storage_and_drain_passes_call() -> None:
    namespaced = _grants(_rules("rocketmq-operator.namespacedRules"))
    # storage expansion: list the broker PVCs, patch spec.resources.requests.storage
    assert {"list", "patch"} <= namespaced[("", "persistentvolumeclaims")]
    cluster = _grants(_rules("rocketmq-operator.clusterReadRules"))
    # get by name only: a PVC's StorageClass, the Node of a master's pod
    assert cluster == {("storage.k8s.io", "storageclasses"): {"get"}, ("", "nodes"): {"get"}}
    rbac = (CHART / "templates" / "rbac.yaml").read_text()
    # both scopes: in the ClusterRole (cluster), in a ClusterRole of its own (namespace: a Role cannot grant them)
    assert rbac.count('include "rocketmq-operator.clusterReadRules"') == 2
    assert rbac.count("{{- if .Values.rbac.clusterRead }}") == 2


# Where each kind the platform names lives in the API (group, resource).
KIND_RESOURCES = {
    "Pod": ("", "pods"),
    "PersistentVolumeClaim": ("", "persistentvolumeclaims"),
    "Service": ("", "services"),
    "ConfigMap": ("", "configmaps"),
    "Secret": ("", "secrets"),
    "StatefulSet": ("apps", "statefulsets"),
    "Deployment": ("apps", "deployments"),
    "PodDisruptionBudget": ("policy", "poddisruptionbudgets"),
    "NetworkPolicy": ("networking.k8s.io", "networkpolicies"),
}
_CALL = re.compile(r"kube\.(get|list|delete|patch|patch_strategic|patch_status)\(\s*\"(\w+)\"")
_VERB = {"get": "get", "list": "list", "delete": "delete", "patch": "patch", "patch_strategic": "patch"}


def _platform_calls() -> set[tuple[str, str, str]]:
    """(group, resource, verb) of every API call in platforms/kubernetes that names its kind, plus what the
    server-side apply of the rendered objects needs (get to read back, create and patch to apply)."""
    from rocketmq_operator.api.validation import validate_file
    from rocketmq_operator.render.kubernetes import render_all

    calls: set[tuple[str, str, str]] = set()
    for source in (ROOT / "operator" / "rocketmq_operator" / "platforms" / "kubernetes").glob("*.py"):
        for method, kind in _CALL.findall(source.read_text()):
            if kind in KIND_RESOURCES:
                group, resource = KIND_RESOURCES[kind]
                sub = "/status" if method == "patch_status" else ""
                calls.add((group, resource + sub, _VERB.get(method, "patch")))
    manifests = (ROOT / "examples" / "quickstart.yaml", ROOT / "tests" / "golden" / "inputs" / "proxy-service.yaml")
    resources = [r.resource for m in manifests for r in validate_file(m) if r.resource]
    for obj in render_all(resources):
        if obj["kind"] in KIND_RESOURCES:
            group, resource = KIND_RESOURCES[obj["kind"]]
            calls |= {(group, resource, verb) for verb in ("get", "create", "patch")}
    # Not named by a literal: storage expansion lists and patches the broker PVCs (storage.py), the in-sync
    # readiness gate patches pods/status (a strategic patch with sub="status").
    calls |= {("", "persistentvolumeclaims", "list"), ("", "persistentvolumeclaims", "patch")}
    calls.add(("", "pods/status", "patch"))
    # Applied with the rendered objects when spec.auth is on: the admin Secret's copy (auth.admin_config_objects).
    calls |= {("", "secrets", verb) for verb in ("get", "create", "patch")}
    return calls


def test_rbac_grants_the_platforms_calls_and_nothing_more_on_kubernetes_kinds() -> None:
    """Least privilege on the built-in kinds: every verb the code uses is granted, and no verb it never uses
    (the custom resources, events and CRDs are kopf's: it watches, patches and posts them)."""
    granted = {
        (group, resource, verb)
        for (group, resource), verbs in _grants(_rules("rocketmq-operator.namespacedRules")).items()
        for verb in verbs
        if group != "rocketmq-operator.dev" and resource != "events"
    }
    used = _platform_calls()
    assert used - granted == set(), "used but not granted"
    assert granted - used == set(), "granted but never used"


# --- monitoring: PodMonitor, PrometheusRule, Grafana dashboard --------------------------------------------------

SEVERITIES = {"critical", "warning", "info"}
# What issue #13 asks the alerts to cover, by alert name.
REQUIRED_ALERTS = {
    "RocketMQBrokerGroupNotWritable",
    "RocketMQSyncStateSetBelowMinInSyncReplicas",
    "RocketMQReplicaLagging",
    "RocketMQControllerUnavailable",
    "RocketMQConsumerLagRising",
    "RocketMQBrokerDiskNearlyFull",
}


def _static_template(name: str) -> Any:
    """A template read without helm: lines that are only template actions dropped, inline actions replaced by a
    placeholder. Enough to inspect the fixed structure (selectors, ports, paths) of a simple template."""
    lines = []
    for line in (CHART / "templates" / name).read_text().splitlines():
        if re.fullmatch(r"\s*\{\{.*\}\}\s*", line):
            continue
        lines.append(re.sub(r"\{\{.*?\}\}", "TEMPLATED", line))
    return yaml.safe_load("\n".join(lines))


def _alert_rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(ALERTS.read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


def _dashboard_exprs() -> list[tuple[str, str]]:
    """(panel title, expression) of every target of the dashboard."""
    dashboard = json.loads(DASHBOARD.read_text())
    return [(p["title"], t["expr"]) for p in dashboard["panels"] for t in p.get("targets", [])]


def selected_series(expr: str) -> set[str]:
    """The series names a PromQL expression selects; raises ValueError when it does not parse."""
    import promql_parser

    found: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            if node.name:
                found.add(node.name)
            for matcher in node.matchers.matchers:
                if matcher.name == "__name__":
                    found.add(matcher.value)

    promql_parser.walk(promql_parser.parse(expr), visit)
    assert found, f"no series selected by {expr!r}"
    return found


def test_selected_series_sees_every_name_and_refuses_bad_promql() -> None:
    assert selected_series('sum(rate(a_total{x="1"}[5m])) / on (g) b and {__name__="c"}') == {"a_total", "b", "c"}
    assert selected_series('label_replace(max by (pod) (d), "p", "data-$1", "pod", "(.+)")') == {"d"}
    for bad in ("sum(rate(a[5m])", "a >", "max by (x (a)", "rate(a[5m]]"):
        with pytest.raises(ValueError):
            selected_series(bad)


def test_the_exporters_unit_suffix_is_part_of_the_names() -> None:
    from rocketmq_operator.render.kubernetes.metric_names import KNOWN_SERIES

    # RocketMQ registers rocketmq_consumer_lag_latency and rocketmq_storage_size with a unit; the OpenTelemetry
    # Prometheus exporter appends it. The names without the unit are never served.
    assert "rocketmq_consumer_lag_latency" not in KNOWN_SERIES and "rocketmq_storage_size" not in KNOWN_SERIES
    assert {"rocketmq_consumer_lag_latency_milliseconds", "rocketmq_storage_size_bytes"} <= KNOWN_SERIES


def test_operator_metric_table_matches_the_registry() -> None:
    from rocketmq_operator.platforms.kubernetes.metrics import OperatorMetrics
    from rocketmq_operator.render.kubernetes.metric_names import OPERATOR_METRICS

    collectors = [c for c in vars(OperatorMetrics()).values() if hasattr(c, "_labelnames")]
    registered = {}
    for collector in collectors:
        (family,) = collector.describe()
        name = f"{family.name}_total" if family.type == "counter" else family.name
        registered[name] = (family.type, tuple(collector._labelnames))
    listed = {m.name: (m.kind, m.labels) for m in OPERATOR_METRICS}
    assert listed == registered


def test_pod_monitor_selects_the_broker_pods_metrics_port() -> None:
    from rocketmq_operator.render.kubernetes import LABEL_GROUP, labels
    from rocketmq_operator.render.kubernetes.broker_group import METRICS_PORT_NAME

    text = (CHART / "templates" / "podmonitor.yaml").read_text()
    assert text.startswith("{{- if .Values.metrics.podMonitor.enabled }}\n")
    monitor = _static_template("podmonitor.yaml")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1" and monitor["kind"] == "PodMonitor"
    # The labels the renderer puts on every broker pod, and no pod of a ControllerGroup.
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= labels("any-group", "broker").items()
    assert not selector.items() <= labels("any-group", "controller").items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == METRICS_PORT_NAME and endpoint["path"] == "/metrics"  # PrometheusHttpServer's path
    # The BrokerGroup's name becomes the label `group`, as in the operator's metrics.
    meta = "__meta_kubernetes_pod_label_" + re.sub(r"[^A-Za-z0-9_]", "_", LABEL_GROUP)
    assert {"sourceLabels": [meta], "targetLabel": "group"} in endpoint["relabelings"]


def test_service_monitor_keeps_the_operators_namespace_label() -> None:
    (endpoint,) = _static_template("servicemonitor.yaml")["spec"]["endpoints"]
    assert endpoint["honorLabels"] is True


def test_prometheus_rule_carries_the_alert_file() -> None:
    text = (CHART / "templates" / "prometheusrule.yaml").read_text()
    assert text.startswith("{{- if .Values.metrics.prometheusRule.enabled }}\n")
    assert "kind: PrometheusRule" in text and "apiVersion: monitoring.coreos.com/v1" in text
    # Included as a file, not as a template: the rules' {{ $labels.x }} are Prometheus's, not Helm's.
    assert '{{ .Files.Get "rules/rocketmq-alerts.yaml" | indent 2 }}' in text
    assert "tpl" not in text


def test_every_alert_is_complete() -> None:
    from rocketmq_operator.render.kubernetes.metric_names import BROKER_METRICS, POD_MONITOR_LABELS, metric_of_series

    rules = _alert_rules()
    names = [r["alert"] for r in rules]
    assert len(names) == len(set(names)), names
    assert set(names) >= REQUIRED_ALERTS
    for rule in rules:
        where = rule["alert"]
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, where
        assert re.fullmatch(r"[0-9]+[smh]", rule["for"]), where
        assert rule["labels"]["severity"] in SEVERITIES, where
        assert rule["annotations"]["summary"].strip() and rule["annotations"]["description"].strip(), where
        # Prometheus's alert templates: balanced, and only labels the selected series have (a typo is empty).
        metrics = [metric_of_series(s) for s in selected_series(rule["expr"])]
        have = {label for m in metrics if m is not None for label in m.labels}
        if any(m in BROKER_METRICS for m in metrics):
            have |= set(POD_MONITOR_LABELS)
        for text in rule["annotations"].values():
            assert text.count("{{") == text.count("}}"), where
            assert set(re.findall(r"\$labels\.(\w+)", text)) <= have, where


@pytest.mark.parametrize("rule", _alert_rules(), ids=lambda r: r["alert"])
def test_alert_expressions_parse_and_use_known_metrics(rule: dict[str, Any]) -> None:
    from rocketmq_operator.render.kubernetes.metric_names import KNOWN_SERIES

    unknown = selected_series(rule["expr"]) - KNOWN_SERIES
    assert not unknown, f"{rule['alert']}: {sorted(unknown)} are not in render.kubernetes.metric_names"


@pytest.mark.parametrize(("title", "expr"), _dashboard_exprs(), ids=[t for t, _ in _dashboard_exprs()])
def test_dashboard_expressions_parse_and_use_known_metrics(title: str, expr: str) -> None:
    from rocketmq_operator.render.kubernetes.metric_names import KNOWN_SERIES

    unknown = selected_series(expr) - KNOWN_SERIES
    assert not unknown, f"panel {title!r}: {sorted(unknown)} are not in render.kubernetes.metric_names"


def test_dashboard_has_operator_and_broker_panels() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    used = set().union(*(selected_series(expr) for _, expr in _dashboard_exprs()))
    assert {"rocketmq_operator_writable", "rocketmq_operator_sync_state_set_size"} <= used
    broker = {"rocketmq_messages_in_total", "rocketmq_messages_out_total", "rocketmq_consumer_lag_messages"}
    assert broker | {"rocketmq_storage_size_bytes"} <= used
    # Panels do not overlap on Grafana's 24-column grid.
    cells: set[tuple[int, int]] = set()
    for panel in dashboard["panels"]:
        g = panel["gridPos"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert g["x"] + g["w"] <= 24 and not mine & cells, panel["title"]
        cells |= mine


# --- examples/gitops --------------------------------------------------------------------------------------


def _gitops_docs() -> dict[str, list[Any]]:
    files = sorted([*GITOPS.rglob("*.yaml"), *GITOPS.rglob("*.yml")])
    assert files, "examples/gitops has no YAML"
    return {str(p.relative_to(GITOPS)): [d for d in yaml.safe_load_all(p.read_text()) if d] for p in files}


def test_gitops_yaml_parses() -> None:
    for name, docs in _gitops_docs().items():
        assert docs, f"{name} is empty"
        for doc in docs:
            assert isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc, name


def test_gitops_kustomization() -> None:
    kustomization = yaml.safe_load((GITOPS / "kustomization.yaml").read_text())
    assert kustomization["namespace"] == "rocketmq"
    resources = kustomization["resources"]
    assert {
        "namespace.yaml",
        "../../crds/brokergroups.yaml",
        "../../crds/controllergroups.yaml",
        "../quickstart.yaml",
    } <= set(resources)
    for resource in resources:
        assert (GITOPS / resource).is_file(), resource
    namespace = yaml.safe_load((GITOPS / "namespace.yaml").read_text())
    assert namespace["kind"] == "Namespace" and namespace["metadata"]["name"] == "rocketmq"


def test_argocd_application() -> None:
    apps = {d["metadata"]["name"]: d for d in _gitops_docs()["argocd-application.yaml"]}
    app = apps["rocketmq"]
    assert app["apiVersion"] == "argoproj.io/v1alpha1" and app["kind"] == "Application"
    assert app["spec"]["source"]["repoURL"] == "https://example.invalid/your-org/your-gitops-repo.git"
    assert app["spec"]["source"]["path"] == "examples/gitops"
    policy = app["spec"]["syncPolicy"]
    assert policy["automated"] == {"prune": True, "selfHeal": True}
    assert "ServerSideApply=true" in policy["syncOptions"]
    assert "ignoreDifferences" not in app["spec"]
    operator = apps["rocketmq-operator"]["spec"]["source"]
    assert operator["path"] == "charts/rocketmq-operator" and operator["helm"]["skipCrds"] is True
    assert operator["helm"]["valuesObject"] == {"watchNamespaces": ["rocketmq"]}  # least privilege: one namespace


@pytest.mark.k8s  # needs the kubectl that `make test` builds (phase 2 of scripts/run-tests.sh)
def test_gitops_kustomize_build() -> None:
    kubectl = _tool("kubectl")
    proc = subprocess.run(
        [kubectl, "kustomize", "--load-restrictor", "LoadRestrictionsNone", str(GITOPS)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == [
        "BrokerGroup",
        "ConsumerGroup",
        "ControllerGroup",
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "CustomResourceDefinition",
        "Namespace",
        "Topic",
    ]
    for doc in docs:
        if doc["kind"] in ("BrokerGroup", "ControllerGroup", "Topic", "ConsumerGroup"):
            assert doc["metadata"]["namespace"] == "rocketmq"
        else:
            assert "namespace" not in doc["metadata"]
        if doc["kind"] == "CustomResourceDefinition":
            assert doc["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == "Prune=false"
            # Apart from the annotation, exactly the repository's CRD.
            name = doc["spec"]["names"]["plural"]
            original = yaml.safe_load((ROOT / "crds" / f"{name}.yaml").read_text())
            del doc["metadata"]["annotations"]
            assert doc == original


# --- helm, when available ---------------------------------------------------------------------------------


def _tool(name: str) -> str:
    """helm/kubectl from PATH or the project's build cache (`make k8s-tools`); under CI=true a missing one fails."""
    found = shutil.which(name)
    if found:
        return found
    cache = Path(os.environ.get("ROCKETMQ_OPERATOR_CACHE", Path.home() / ".cache" / "rocketmq-operator"))
    candidates = sorted(cache.glob(f"k8s/*/bin/{name}"))
    if candidates:
        return str(candidates[-1])
    missing(f"no {name} binary (PATH or ~/.cache/rocketmq-operator/k8s/*/bin/{name}; run `make k8s-tools`)")


def _template(helm: str, *sets: str) -> subprocess.CompletedProcess[str]:
    args = [helm, "template", "rel", str(CHART), "--namespace", "ops"]
    for s in sets:
        args += ["--set-json", s]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def _objects(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (deploy,) = [o for o in objects if o["kind"] == "Deployment"]
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    return container


@pytest.fixture(scope="module")
def helm() -> str:
    return _tool("helm")


@pytest.mark.k8s
def test_helm_lint(helm: str) -> None:
    for sets in ([], ["--set", "rbac.scope=namespace", "--set", "watchNamespaces={a,b}"]):
        proc = subprocess.run([helm, "lint", "--strict", str(CHART), *sets], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.k8s
def test_helm_template_default_is_least_privilege(helm: str) -> None:
    """Default values: the operator watches its release's namespace only, every namespaced grant (Secrets, Pods,
    ...) is a Role there, and the two ClusterRoles read CRDs, namespaces, StorageClasses and Nodes, nothing else."""
    objects = _objects(_template(helm))
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == [
        "ClusterRole",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterRoleBinding",
        "Deployment",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    (role,) = [o for o in objects if o["kind"] == "Role"]
    assert role["metadata"]["namespace"] == "ops"
    assert {"secrets", "pods"} <= {r for rule in role["rules"] for r in rule["resources"]}
    cluster_wide = {
        (group, resource): set(rule["verbs"])
        for o in objects
        if o["kind"] == "ClusterRole"
        for rule in o["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert cluster_wide == {
        ("apiextensions.k8s.io", "customresourcedefinitions"): {"get", "list", "watch"},
        ("", "namespaces"): {"list", "watch"},
        ("storage.k8s.io", "storageclasses"): {"get"},
        ("", "nodes"): {"get"},
    }
    assert _container(objects)["args"][:3] == ["run", "--namespace", "ops"]


@pytest.mark.k8s
def test_helm_template_cluster_scope(helm: str) -> None:
    objects = _objects(_template(helm, 'rbac={"scope":"cluster"}'))
    kinds = sorted(o["kind"] for o in objects)
    assert kinds == ["ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "ServiceAccount"]
    container = _container(objects)
    assert container["args"] == [
        "run",
        "--all-namespaces",
        "--liveness",
        "http://0.0.0.0:8080/healthz",
        "--metrics-port",
        "9090",
        "--standalone",
    ]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8080}
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": 8080}
    assert {"name": "metrics", "containerPort": 9090, "protocol": "TCP"} in container["ports"]
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["capabilities"]["drop"] == ["ALL"]
    (role,) = [o for o in objects if o["kind"] == "ClusterRole"]
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert {"namespaces", "customresourcedefinitions", "pods/status", "brokergroups/status"} <= resources
    assert {"nodes", "storageclasses"} <= resources
    assert not any("kopf.dev" in rule["apiGroups"] for rule in role["rules"])
    assert not any("leases" in rule["resources"] for rule in role["rules"])


@pytest.mark.k8s
def test_helm_template_namespace_scope(helm: str) -> None:
    objects = _objects(
        _template(
            helm,
            'rbac={"create":true,"scope":"namespace","crdAccess":true}',
            'watchNamespaces=["a","b"]',
            'peering={"enabled":true}',
        )
    )
    roles = [o for o in objects if o["kind"] == "Role"]
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["a", "b"]
    assert len([o for o in objects if o["kind"] == "RoleBinding"]) == 2
    cluster_roles = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"}
    assert sorted(cluster_roles) == ["rel-rocketmq-operator-cluster-read", "rel-rocketmq-operator-crd-read"]
    crd_read = cluster_roles["rel-rocketmq-operator-crd-read"]
    assert [r["resources"] for r in crd_read["rules"]] == [["customresourcedefinitions"], ["namespaces"]]
    cluster_read = cluster_roles["rel-rocketmq-operator-cluster-read"]
    assert [r["resources"] for r in cluster_read["rules"]] == [["storageclasses"], ["nodes"]]
    assert len([o for o in objects if o["kind"] == "ClusterRoleBinding"]) == 2
    assert any(rule["resources"] == ["kopfpeerings"] for rule in roles[0]["rules"])
    args = _container(objects)["args"]
    assert args[:5] == ["run", "--namespace", "a", "--namespace", "b"] and "--standalone" not in args


@pytest.mark.k8s
def test_helm_refuses_bad_values(helm: str) -> None:
    for sets in (
        ['rbac={"create":true,"scope":"global","crdAccess":true}'],
        ["replicaCount=0"],
        ['watchNamespaces=["Team_A"]'],
    ):
        proc = _template(helm, *sets)
        assert proc.returncode != 0, f"helm accepted {sets}"


@pytest.mark.k8s
def test_helm_template_monitoring(helm: str) -> None:
    objects = _objects(
        _template(
            helm,
            'metrics={"port":9090,"service":{"enabled":true},"serviceMonitor":{"enabled":true},'
            '"podMonitor":{"enabled":true,"interval":"15s","labels":{"release":"prom"}},'
            '"prometheusRule":{"enabled":true,"labels":{"release":"prom"}},"grafanaDashboard":{"enabled":true}}',
            'watchNamespaces=["mq"]',
        )
    )
    by_kind = {o["kind"]: o for o in objects}
    monitor = by_kind["PodMonitor"]
    assert monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["mq"]}
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == "metrics" and endpoint["interval"] == "15s"
    rule = by_kind["PrometheusRule"]
    assert rule["metadata"]["labels"]["release"] == "prom"
    assert rule["spec"] == yaml.safe_load(ALERTS.read_text())  # byte for byte the rule file, $labels untouched
    assert by_kind["ServiceMonitor"]["spec"]["endpoints"][0]["honorLabels"] is True
    dashboard = json.loads(by_kind["ConfigMap"]["data"]["rocketmq-operator.json"])
    assert dashboard == json.loads(DASHBOARD.read_text())
    # every namespace in cluster scope when none are listed
    monitor = next(
        o
        for o in _objects(
            _template(
                helm,
                'metrics={"port":9090,"service":{"enabled":true},'
                '"serviceMonitor":{"enabled":false},'
                '"podMonitor":{"enabled":true}}',
                'rbac={"scope":"cluster"}',
            )
        )
        if o["kind"] == "PodMonitor"
    )
    assert monitor["spec"]["namespaceSelector"] == {"any": True}
