"""The CRD's CEL rules and the Python rules agree on every case of the validation table.

CEL is evaluated with cel-python on the object as the API server sees it (schema defaults applied). The
Kubernetes `join` string extension is supplied here; everything else is standard CEL. The real API server
judges the same table in tests/k8s.
"""

from __future__ import annotations

from typing import Any

import celpy
import pytest

from rocketmq_operator.api.crd import all_crds
from rocketmq_operator.api.rules import Rule, rules_for
from rocketmq_operator.api.validation import parse_resource
from validation_cases import CASES, Case


def _format(template: Any, args: Any) -> celpy.celtypes.StringType:
    """Kubernetes' strings-extension `format` for the `%s` and `%%` verbs the rules use."""
    out, values = "", iter(args)
    parts = str(template).split("%%")
    rendered = []
    for part in parts:
        pieces = part.split("%s")
        text = pieces[0]
        for piece in pieces[1:]:
            value = next(values)
            text += ("true" if value else "false") if isinstance(value, bool) else str(value)
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
    for kind in ("BrokerGroup", "ControllerGroup", "Topic", "ConsumerGroup"):
        root = crds[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        in_crd = {v["rule"] for v in root["x-kubernetes-validations"]}
        in_crd |= {v["rule"] for v in root["properties"]["spec"]["x-kubernetes-validations"]}
        rules: tuple[Rule, ...] = rules_for(kind)  # type: ignore[arg-type]
        assert {r.cel for r in rules} == in_crd
