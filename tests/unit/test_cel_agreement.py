"""The CRD's CEL rules and the Python rules agree on every case of the validation table.

CEL is evaluated with cel-python on the object as the API server sees it (schema defaults applied). The
Kubernetes `join` string extension is supplied here; everything else is standard CEL. The real API server
judges the same table in tests/k8s.
"""

from __future__ import annotations

import copy
from typing import Any

import celpy
import pytest

from rocketmq_operator.api.crd import all_crds
from rocketmq_operator.api.rules import Rule, rules_for
from rocketmq_operator.api.validation import parse_resource
from validation_cases import BASE_BROKER, BASE_CONTROLLER, BASE_TOPIC, CASES, Case


def _format_value(value: Any) -> str:
    """`%s` as cel-go's ext strings prints it: a bool as true/false, a list as `[1, "a"]` (strings quoted, Go %q)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_go_quote(v) if isinstance(v, str) else _format_value(v) for v in value) + "]"
    return str(value)


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _format(template: Any, args: Any) -> celpy.celtypes.StringType:
    """Kubernetes' strings-extension `format` for the `%s` and `%%` verbs the rules use."""
    out, values = "", iter(args)
    parts = str(template).split("%%")
    rendered = []
    for part in parts:
        pieces = part.split("%s")
        text = pieces[0]
        for piece in pieces[1:]:
            text += _format_value(next(values))
            text += piece
        rendered.append(text)
    out = "%".join(rendered)
    return celpy.celtypes.StringType(out)


def _evaluate(expr: str, scope_obj: dict[str, Any]) -> Any:
    env = celpy.Environment()
    program = env.program(env.compile(expr), functions={"format": _format})
    return program.evaluate({"self": celpy.json_to_cel(scope_obj)})


def _defaulted(doc: dict[str, Any]) -> dict[str, Any]:
    resource, problems = parse_resource(doc)
    assert resource is not None, problems
    return resource.model_dump(mode="json", by_alias=True, exclude_none=True)


def _cel_verdicts(doc: dict[str, Any]) -> dict[str, str]:
    obj = _defaulted(doc)
    broken: dict[str, str] = {}
    for rule in rules_for(obj["kind"]):
        scope = obj if rule.scope == "" else obj["spec"]
        if not bool(_evaluate(rule.cel, scope)):
            broken[rule.id] = str(_evaluate(rule.cel_message_expression(), scope))
    return broken


def _python_verdicts(doc: dict[str, Any]) -> dict[str, str]:
    resource, _ = parse_resource(doc)
    assert resource is not None
    out: dict[str, str] = {}
    for rule in rules_for(resource.kind):
        if not rule.valid(resource):
            # The did-you-mean hint and map-key names are Python-only (CEL cannot afford them).
            out[rule.id] = rule.python_message(resource, with_hint=False, as_api_server=True)
    return out


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_python_and_cel_agree(case: Case) -> None:
    python = _python_verdicts(case.doc)
    cel = _cel_verdicts(case.doc)
    assert python == cel


def test_every_rule_is_in_the_crd() -> None:
    crds = {c["spec"]["names"]["kind"]: c for c in all_crds()}
    for kind in ("BrokerGroup", "ControllerGroup", "Topic", "ConsumerGroup", "Proxy"):
        root = crds[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        in_crd = {v["rule"] for v in root["x-kubernetes-validations"]}
        in_crd |= {v["rule"] for v in root["properties"]["spec"]["x-kubernetes-validations"]}
        rules: tuple[Rule, ...] = rules_for(kind)  # type: ignore[arg-type]
        assert {r.cel for r in rules} == in_crd


def _broker(config: dict[str, Any], kind: str = "BrokerGroup", field: str = "brokerConfig") -> dict[str, Any]:
    doc = copy.deepcopy(BASE_BROKER if kind == "BrokerGroup" else BASE_CONTROLLER)
    doc["spec"][field] = config
    return doc


@pytest.mark.parametrize(
    ("doc", "rule_id", "api_server_says"),
    [
        (
            _broker({"flushDiskTypo": "SYNC_FLUSH"}),
            "BrokerGroup.brokerConfig.known",
            '["flushDiskTypo"] is not a RocketMQ broker key; rule: brokerConfig keys must be BrokerConfig, '
            "MessageStoreConfig or NettyServerConfig keys (RocketMQ silently ignores unknown keys); fix: correct the "
            "spelling or remove the key",
        ),
        (
            _broker({"flushDiskType": "SYNC_FLUSH", "fileReservedTimes": 48, "brokerPermision": 6}),
            "BrokerGroup.brokerConfig.known",
            '["fileReservedTimes", "brokerPermision"] is not a RocketMQ broker key',
        ),
        (
            _broker({"totalReplicas": 5}),
            "BrokerGroup.brokerConfig.owned",
            '["totalReplicas"], which the operator renders from the spec',
        ),
        (
            _broker({"controllerStorPath": "/x"}, "ControllerGroup", "controllerConfig"),
            "ControllerGroup.controllerConfig.known",
            '["controllerStorPath"] is not',
        ),
        (
            _broker({"listenPort": 9876}, "ControllerGroup", "controllerConfig"),
            "ControllerGroup.controllerConfig.owned",
            'sets ["listenPort"]',
        ),
    ],
)
def test_the_api_server_names_the_offending_config_keys(
    doc: dict[str, Any], rule_id: str, api_server_says: str
) -> None:
    """An unknown or operator-owned brokerConfig/controllerConfig key: the CRD's messageExpression names it (and
    says the fix), as the CLI does; before, the API server said only "a key is not a RocketMQ broker key"."""
    cel = _cel_verdicts(doc)
    assert rule_id in cel, cel
    assert api_server_says in cel[rule_id], cel[rule_id]
    assert "; fix: " in cel[rule_id]
    assert cel[rule_id] == _python_verdicts(doc)[rule_id]


def test_the_api_server_names_an_unknown_topic_attribute() -> None:
    doc = copy.deepcopy(BASE_TOPIC)
    doc["spec"]["attributes"] = {"queue.type": "BatchCQ", "retention.ms": "1"}
    cel = _cel_verdicts(doc)
    assert cel["Topic.attributes.known"].startswith('["retention.ms"] is not a topic attribute the operator sets')
    assert cel == _python_verdicts(doc)


def test_every_config_key_message_expression_names_the_keys() -> None:
    """No map-key rule falls back to a message that names no key (the old "a key")."""
    for kind in ("BrokerGroup", "ControllerGroup", "Topic"):
        for rule in rules_for(kind):  # type: ignore[arg-type]
            if rule.id.endswith((".known", ".owned")) and "keys" in rule.values:
                expression = rule.cel_message_expression()
                assert ".filter(k, " in expression and "a key" not in expression, (rule.id, expression)
                # `join` on map keys is priced as unbounded by the API server's cost estimator: the CRD is refused.
                assert ".join(" not in expression, (rule.id, expression)
