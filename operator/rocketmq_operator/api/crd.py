"""CustomResourceDefinitions generated from the pydantic models and the shared rules.

The OpenAPI schema is structural (no $ref, a type on every node), declares every status field (so the API
server never prunes what the operator writes), carries the models' defaults (object defaults included, so CEL
sees the same defaulted object the Python side validates), and holds every `api.rules` rule as an
`x-kubernetes-validations` entry. Every property has a description (`kubectl explain`; a test walks them).
`crds/*.yaml` and the chart's copies are this module's output, checked by tests.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml
from pydantic import BaseModel

from rocketmq_operator.api.models import (
    API_GROUP,
    API_VERSION,
    BrokerGroupSpec,
    BrokerGroupStatus,
    ConsumerGroupSpec,
    ConsumerGroupStatus,
    ControllerGroupSpec,
    ControllerGroupStatus,
    ProxySpec,
    ProxyStatus,
    TopicSpec,
    TopicStatus,
    UserResourceSpec,
    UserStatus,
)
from rocketmq_operator.api.rules import MAX_CONFIG_KEYS, MAX_PLACEMENTS, Kind, Rule, rules_for

JSON = dict[str, Any]

# Bounds that keep the CEL cost estimate within the API server's budget.
_STRING_BOUNDS: dict[str, int] = {
    "version": 32,
    "size": 32,
    "heap": 32,
    "directMemory": 32,
    "maxGapNotInSync": 32,
    "topicName": 512,
    "groupName": 512,
    "clusterName": 253,
    "permission": 32,
    "messageType": 32,
    "deletionPolicy": 32,
    "consumeMode": 32,
}


def _resolve(node: JSON, defs: JSON) -> JSON:
    if "$ref" in node:
        target = defs[node["$ref"].split("/")[-1]]
        merged = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
        return merged
    return node


def _convert(node: JSON, defs: JSON, name: str = "") -> JSON:
    node = _resolve(node, defs)
    out: JSON = {}
    if "description" in node:
        out["description"] = node["description"]
    if "anyOf" in node:
        options = [_resolve(o, defs) for o in node["anyOf"] if o.get("type") != "null"]
        if len(options) == 1:
            inner = _convert(options[0], defs, name)
            inner.update({k: v for k, v in out.items() if k not in inner})
            if "default" in node and node["default"] is not None:
                inner["default"] = node["default"]
            return inner
        types = {o.get("type") for o in options}
        if types <= {"string", "integer"}:
            out["x-kubernetes-int-or-string"] = True
        else:
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out
    typ = node.get("type")
    if typ is None:
        if "const" in node or "enum" in node:
            out["type"] = "string"
            out["enum"] = node.get("enum", [node.get("const")])
            return out
        out["x-kubernetes-preserve-unknown-fields"] = True
        return out
    out["type"] = typ
    if typ == "object":
        props = node.get("properties")
        if props:
            out["properties"] = {k: _convert(v, defs, k) for k, v in props.items()}
            if node.get("required"):
                out["required"] = list(node["required"])
        additional = node.get("additionalProperties")
        if isinstance(additional, dict) and additional:
            out["additionalProperties"] = _convert(additional, defs)
        elif not props:
            out["x-kubernetes-preserve-unknown-fields"] = True
    elif typ == "array":
        items = node.get("items", {})
        converted = _convert(items, defs) if items else {}
        if not converted.get("type") and not converted.get("x-kubernetes-int-or-string"):
            converted = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        out["items"] = converted
    if "enum" in node:
        out["enum"] = node["enum"]
    if "default" in node and node["default"] is not None and node["default"] != [] and node["default"] != {}:
        out["default"] = node["default"]
    if typ == "string" and "pattern" in node:
        out["pattern"] = node["pattern"]
    for bound in ("minItems", "maxItems", "maxLength"):
        if bound in node:
            out[bound] = node[bound]
    if typ == "string" and name in _STRING_BOUNDS:
        out["maxLength"] = _STRING_BOUNDS[name]
    return out


def _factory_defaults(model: type[BaseModel], schema: JSON) -> None:
    """Object-valued fields built by default_factory get their dumped value as the schema default."""
    props = schema.get("properties", {})
    for field_name, info in model.model_fields.items():
        alias = info.alias or field_name
        prop = props.get(alias)
        if prop is None:
            continue
        annotation = info.annotation
        nested = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
        if nested is not None:
            if info.default_factory is not None:
                value = info.default_factory()  # type: ignore[call-arg]
                assert isinstance(value, BaseModel)
                prop["default"] = value.model_dump(mode="json", by_alias=True, exclude_defaults=True)
            _factory_defaults(nested, prop)


def model_schema(model: type[BaseModel]) -> JSON:
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.pop("$defs", {})
    schema = _convert(raw, defs)
    _factory_defaults(model, schema)
    return schema


def _cel_validations(rules: tuple[Rule, ...], scope: str) -> list[JSON]:
    out: list[JSON] = []
    for rule in rules:
        if rule.scope != scope:
            continue
        entry: JSON = {"rule": rule.cel, "messageExpression": rule.cel_message_expression()}
        if rule.field_path:
            entry["fieldPath"] = rule.field_path
            entry["reason"] = "FieldValueInvalid"
        out.append(entry)
    return out


def _bound_config_maps(spec_schema: JSON) -> None:
    for key in ("brokerConfig", "controllerConfig", "proxyConfig"):
        prop = spec_schema.get("properties", {}).get(key)
        if prop is not None:
            prop["maxProperties"] = MAX_CONFIG_KEYS
    attributes = spec_schema.get("properties", {}).get("attributes")
    if attributes is not None:
        attributes["maxProperties"] = 16
        attributes["additionalProperties"]["maxLength"] = 253
    for key in ("brokerGroups", "topics"):
        names = spec_schema.get("properties", {}).get(key)
        if names is not None and names.get("type") == "array":
            names["maxItems"] = MAX_PLACEMENTS
            names["items"]["maxLength"] = 253
    ns = spec_schema.get("properties", {}).get("nameServers")
    if ns is not None and ns.get("type") == "array":
        ns["maxItems"] = 16
        ns["items"]["maxLength"] = 253


_BROKER_COLUMNS: list[JSON] = [
    {"name": "Mode", "type": "string", "jsonPath": ".spec.haMode"},
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Master", "type": "string", "jsonPath": ".status.master.replica"},
    {"name": "Epoch", "type": "integer", "jsonPath": ".status.master.epoch"},
    {"name": "SyncStateSet", "type": "string", "jsonPath": ".status.syncStateSet.members"},
    {"name": "NeedAcks", "type": "integer", "jsonPath": ".status.needAcks"},
    {"name": "Writable", "type": "boolean", "jsonPath": ".status.writable"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Rollout", "type": "string", "jsonPath": ".status.rollout.phase"},
    {"name": "Step", "type": "string", "jsonPath": ".status.rollout.currentStep", "priority": 1},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]

_TOPIC_COLUMNS: list[JSON] = [
    {"name": "Topic", "type": "string", "jsonPath": ".status.topicName"},
    {"name": "Type", "type": "string", "jsonPath": ".spec.messageType"},
    {"name": "Write", "type": "integer", "jsonPath": ".spec.writeQueueNums"},
    {"name": "Read", "type": "integer", "jsonPath": ".spec.readQueueNums"},
    {"name": "On", "type": "string", "jsonPath": ".status.brokerGroups"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]

_CONSUMER_GROUP_COLUMNS: list[JSON] = [
    {"name": "Group", "type": "string", "jsonPath": ".status.groupName"},
    {"name": "Mode", "type": "string", "jsonPath": ".spec.consumeMode"},
    {"name": "Lag", "type": "integer", "jsonPath": ".status.lag"},
    {"name": "On", "type": "string", "jsonPath": ".status.brokerGroups"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]

_USER_COLUMNS: list[JSON] = [
    {"name": "User", "type": "string", "jsonPath": ".status.userName"},
    {"name": "Type", "type": "string", "jsonPath": ".spec.type"},
    {"name": "Secret", "type": "string", "jsonPath": ".status.secret"},
    {"name": "On", "type": "string", "jsonPath": ".status.brokerGroups"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]

_PROXY_COLUMNS: list[JSON] = [
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
    {"name": "Service", "type": "string", "jsonPath": ".spec.service.type"},
    {"name": "Endpoint", "type": "string", "jsonPath": ".status.endpoint"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]
_CONTROLLER_COLUMNS: list[JSON] = [
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Standalone", "type": "boolean", "jsonPath": ".spec.standalone"},
    {"name": "Leader", "type": "string", "jsonPath": ".status.leader"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def _fixed_at_creation(prop: JSON, message: str) -> None:
    """A CEL transition rule on one property: an update may not change it (checked when it is on both sides)."""
    prop["x-kubernetes-validations"] = [{"rule": "self == oldSelf", "message": message}]


def _crd(
    kind: Kind,
    plural: str,
    short: str,
    spec: type[BaseModel],
    status: type[BaseModel],
    columns: list[JSON],
    description: str,
) -> JSON:
    spec_schema = model_schema(spec)
    _bound_config_maps(spec_schema)
    rules = rules_for(kind)
    spec_schema["x-kubernetes-validations"] = _cel_validations(rules, "spec")
    properties = spec_schema.get("properties", {})
    if kind == "ControllerGroup" and "type" in properties:
        # RocketMQ cannot move a controller store between DLedger and JRaft (docs/cn/controller/deploy.md).
        _fixed_at_creation(
            properties["type"],
            "spec.type is fixed at creation (RocketMQ cannot convert a DLedger controller store to JRaft or back); "
            "fix: create a new ControllerGroup with the other type",
        )
    tls_enabled = properties.get("tls", {}).get("properties", {}).get("enabled")
    if tls_enabled is not None and kind != "Proxy":
        # Defaulted to false, so present on both sides of every update. A rolling switch would leave TLS and
        # plain-text pods (and the group's ControllerGroup) unable to reach each other mid-roll; the local
        # platform refuses the same change (platforms/local/roll.py). Not a Proxy's: it keeps no state and must
        # match its brokers, so the fix of a mismatch is this very edit (recreating it would also replace its
        # Service and a load balancer's address).
        _fixed_at_creation(
            tls_enabled,
            "spec.tls.enabled is fixed at creation (a rolling switch would leave TLS and plain-text processes "
            f"unable to reach each other); fix: create a new {kind} with the other setting and move clients to it",
        )
    client_auth = properties.get("tls", {}).get("properties", {}).get("clientAuth")
    if client_auth is not None and kind != "Proxy":
        # The same reason: mid-roll, pods that require client certificates would refuse those that present none.
        _fixed_at_creation(
            client_auth,
            "spec.tls.clientAuth is fixed at creation (a rolling switch would leave pods that require client "
            "certificates refusing those that present none); fix: create a new "
            f"{kind} with the other setting and move clients to it",
        )
    spec_schema["description"] = f"The desired {kind}: what the operator makes run."
    status_schema = model_schema(status)
    status_schema["description"] = f"The {kind} as last observed, written by the operator (not to be edited)."
    root: JSON = {
        "type": "object",
        "description": description,
        "properties": {
            "apiVersion": {"type": "string", "description": f"{API_GROUP}/{API_VERSION}"},
            "kind": {"type": "string", "description": kind},
            # Nothing but the type: the API server refuses a CRD whose metadata schema says more ("must not
            # specify anything other than name and generateName"); it describes ObjectMeta itself.
            "metadata": {"type": "object"},
            "spec": spec_schema,
            "status": status_schema,
        },
        "required": ["spec"],
        "x-kubernetes-validations": _cel_validations(rules, ""),
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{API_GROUP}",
            "labels": {
                "app.kubernetes.io/name": "rocketmq-operator",
                "app.kubernetes.io/part-of": "rocketmq",
            },
        },
        "spec": {
            "group": API_GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": [short],
                "categories": ["rocketmq", "all"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": API_VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": root},
                }
            ],
        },
    }


def all_crds() -> list[JSON]:
    return [
        _crd(
            "BrokerGroup",
            "brokergroups",
            "bg",
            BrokerGroupSpec,
            BrokerGroupStatus,
            _BROKER_COLUMNS,
            "A RocketMQ 5 broker replica group (one brokerName) with quorum-write settings.",
        ),
        _crd(
            "ControllerGroup",
            "controllergroups",
            "cg",
            ControllerGroupSpec,
            ControllerGroupStatus,
            _CONTROLLER_COLUMNS,
            "RocketMQ controllers (DLedger quorum) and the name servers hosted with them.",
        ),
        _crd(
            "Topic",
            "topics",
            "rmqtopic",
            TopicSpec,
            TopicStatus,
            _TOPIC_COLUMNS,
            "A RocketMQ topic declared on the masters of broker groups, re-asserted after every master change.",
        ),
        _crd(
            "ConsumerGroup",
            "consumergroups",
            "rmqcg",
            ConsumerGroupSpec,
            ConsumerGroupStatus,
            _CONSUMER_GROUP_COLUMNS,
            "A RocketMQ consumer (subscription) group declared on the masters of broker groups.",
        ),
        _crd(
            "Proxy",
            "proxies",
            "rmqproxy",
            ProxySpec,
            ProxyStatus,
            _PROXY_COLUMNS,
            "RocketMQ 5 proxies in cluster mode: the gRPC front door of a RocketMQ cluster, behind one Service.",
        ),
        _crd(
            "User",
            "users",
            "rmquser",
            UserResourceSpec,
            UserStatus,
            _USER_COLUMNS,
            "An ACL 2.0 user and its ACL on every replica of broker groups, re-asserted after every restart and "
            "master change; its password from a Secret, or generated into one.",
        ),
    ]


def crd_file_name(crd: JSON) -> str:
    return f"{crd['spec']['names']['plural']}.yaml"


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (config files in ConfigMaps) as literal blocks, so they read like the files."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(doc: JSON) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=1000, allow_unicode=True)


def crds_yaml() -> str:
    return "---\n".join(dump_yaml(c) for c in all_crds())
