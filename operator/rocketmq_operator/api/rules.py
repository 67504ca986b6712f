"""Validation rules, each written once for Python and once as CEL, with one message template.

A rule has a condition in Python (on the parsed model) and in CEL (on the defaulted JSON the API server sees),
and a message template whose `{placeholders}` are filled from Python values or CEL expressions. The CRD
generator turns every rule into an `x-kubernetes-validations` entry (with `messageExpression` and `fieldPath`),
so `kubectl apply` refuses what `rocketmq-operator validate` refuses, with the same text; a test evaluates both
sides on a table of cases. Every message names the value, the rule and the fix; the path names the field.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rocketmq_operator.api.broker_config_keys import BROKER_CONFIG_KEYS, CONTROLLER_CONFIG_KEYS, PROXY_CONFIG_KEYS
from rocketmq_operator.api.models import (
    AUTH_NAME_PATTERN,
    BACKUP_MAX_KEEP,
    BACKUP_MIN_EVERY_S,
    DEFAULT_PROXY_MIN_READY_SECONDS,
    MAX_PROXY_MIN_READY_SECONDS,
    PROXY_SERVICE_TYPES,
    AnyResource,
    BrokerGroup,
    ConsumeMode,
    DeletionPolicy,
    HAMode,
    MessageType,
    ReclaimPolicy,
    TopicPermission,
    UpgradeStrategy,
    UserDeletionPolicy,
    duration_seconds,
)
from rocketmq_operator.api.modes import (
    CEL_IN_SYNC_REPLICAS,
    CEL_MIN_IN_SYNC_REPLICAS,
    in_sync_replicas,
    min_in_sync_replicas,
)
from rocketmq_operator.api.names import GROUP_NAME_MAX, TOPIC_NAME_MAX, TOPIC_NAME_PATTERN
from rocketmq_operator.api.quantity import QUANTITY_PATTERN, is_quantity

Kind = Literal["BrokerGroup", "ControllerGroup", "Topic", "ConsumerGroup", "Proxy", "User"]

NAME_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
NAME_MAX = 45  # leaves room for "-headless", "-connection" and the StatefulSet pod ordinal within 63
VERSION_PATTERN = r"^5\.[0-9]+\.[0-9]+$"
HOST_PORT_PATTERN = r"^[A-Za-z0-9]([-.A-Za-z0-9]*[A-Za-z0-9])?:[0-9]{1,5}$"
MAX_BROKER_REPLICAS = 16
MAX_CONFIG_KEYS = 128

# RocketMQ's TopicValidator refuses the system topics (the names' pattern and lengths: api.names).
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
SYSTEM_TOPICS: tuple[str, ...] = (
    "TBW102",
    "SCHEDULE_TOPIC_XXXX",
    "SCHEDULE_TOPIC_XXXX_V2",
    "BenchmarkTest",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
)
MAX_QUEUES = 1024
MAX_PLACEMENTS = 64
# TopicAttributes other than message.type (which is spec.messageType).
TOPIC_ATTRIBUTE_KEYS: tuple[str, ...] = ("cleanup.policy", "queue.type", "reserve.time")

# broker.conf keys the operator renders itself, and the spec field a user sets instead.
# ACL 2.0 keys a BrokerGroup's and a Proxy's spec.auth own (both read them into RocketMQ's AuthConfig).
_AUTH_OWNED_KEYS: dict[str, str] = {
    "authenticationEnabled": "spec.auth.enabled",
    "authorizationEnabled": "spec.auth.enabled",
    "authenticationProvider": "spec.auth.enabled",
    "authenticationMetadataProvider": "spec.auth.enabled",
    "authorizationProvider": "spec.auth.enabled",
    "authorizationMetadataProvider": "spec.auth.enabled",
    "innerClientAuthenticationCredentials": "spec.auth.adminSecret",
}

OPERATOR_OWNED_BROKER_KEYS: dict[str, str] = {
    "brokerClusterName": "spec.clusterName",
    "brokerName": "metadata.name",
    "brokerId": "(assigned per replica)",
    "brokerRole": "spec.haMode",
    "listenPort": "(fixed per platform)",
    "haListenPort": "(fixed per platform)",
    "namesrvAddr": "spec.controllerRef or spec.nameServers",
    "brokerIP1": "(the pod address)",
    "brokerIP2": "(the pod address)",
    "storePathRootDir": "spec.storage",
    "storePathCommitLog": "spec.storage",
    "storePathEpochFile": "spec.storage",
    "storePathBrokerIdentity": "spec.storage",
    "enableControllerMode": "spec.haMode",
    "enableSlaveActingMaster": "spec.haMode",
    "enableDLegerCommitLog": "spec.haMode",
    "controllerAddr": "spec.controllerRef",
    "fetchControllerAddrByDnsLookup": "spec.controllerRef",
    "totalReplicas": "spec.replicas",
    "inSyncReplicas": "spec.quorum.inSyncReplicas",
    "minInSyncReplicas": "spec.quorum.minInSyncReplicas",
    "enableAutoInSyncReplicas": "spec.quorum.autoDegrade",
    "allAckInSyncStateSet": "spec.quorum.allAckInSyncStateSet",
    "haMaxGapNotInSync": "spec.quorum.maxGapNotInSync",
    "slaveReadEnable": "spec.slaveRead.enabled",
    "autoCreateTopicEnable": "spec.autoCreate.topics",
    "autoCreateSubscriptionGroup": "spec.autoCreate.subscriptionGroups",
    "accessMessageInMemoryMaxRatio": "spec.slaveRead.memoryRatio",
    "rocketmqHome": "(the image)",
    **_AUTH_OWNED_KEYS,
    "authenticationWhitelist": "spec.auth.enabled",
    "authorizationWhitelist": "spec.auth.enabled",
    "initAuthenticationUser": "spec.auth.adminSecret",
}

OPERATOR_OWNED_CONTROLLER_KEYS: dict[str, str] = {
    "listenPort": "(fixed per platform)",
    "enableControllerInNamesrv": "spec.standalone",
    "controllerType": "spec.type",
    "jRaftGroupId": "metadata.name",
    "jRaftServerId": "(assigned per replica)",
    "jRaftInitConf": "spec.replicas",
    "jRaftControllerRPCAddr": "spec.replicas",
    "controllerDLegerGroup": "metadata.name",
    "controllerDLegerPeers": "spec.replicas",
    "controllerDLegerSelfId": "(assigned per replica)",
    "controllerStorePath": "spec.storage",
    "configStorePath": "spec.storage",
    "rocketmqHome": "(the image)",
    "kvConfigPath": "spec.storage",
    "enableElectUncleanMaster": "BrokerGroup spec.failover.allowUnclean",
}


OPERATOR_OWNED_PROXY_KEYS: dict[str, str] = {
    "rocketMQClusterName": "spec.clusterName",
    "proxyMode": "(cluster mode: the operator runs proxies apart from the brokers)",
    "namesrvAddr": "spec.controllerRef or spec.nameServers",
    "grpcServerPort": "(fixed per platform)",
    "remotingListenPort": "(fixed per platform)",
    "topicRouteServiceCacheRefreshSeconds": "spec.routeRefreshSeconds",
    "useEndpointPortFromRequest": "(on: routes name the port the client dialled, a node port or a load balancer's)",
    "metricsExporterType": "spec.metrics.enabled",
    "metricsPromExporterPort": "spec.metrics.port",
    "rocketmqHome": "(the image)",
    **_AUTH_OWNED_KEYS,
    "enableAclRpcHookForClusterMode": "spec.auth.enabled",
    # The gRPC server's certificate: RocketMQ's self-signed test certificate unless spec.tls is on, then the
    # mounted (or locally issued) one, whose key is unencrypted PKCS#8.
    "tlsTestModeEnable": "spec.tls.enabled",
    "tlsCertPath": "spec.tls (the certificate the operator mounts)",
    "tlsKeyPath": "spec.tls (the certificate the operator mounts)",
    "tlsKeyPassword": "spec.tls (the operator's keys are unencrypted PKCS#8)",
}
MAX_PROXY_REPLICAS = 32
NODE_PORT_MIN, NODE_PORT_MAX = 30000, 32767  # the API server's default --service-node-port-range


@dataclass(frozen=True)
class Placeholder:
    """A value shown in a message: a CEL expression for the API server, a function for Python.

    `cel` None means the API server cannot afford to compute it; its message then says `cel_text` where the CLI
    names the value. A list (the offending keys of a map) is computed by a `filter` inside the `format` call:
    `format` is priced by its format string and its arguments' own cost, whereas `join` on the filtered keys
    is priced as unbounded (a map key has no maxLength). The CLI shows a list as `a, b`; the API server as CEL's
    `%s` prints it, `["a", "b"]`.
    """

    cel: str | None
    python: Callable[[Any], object]
    cel_text: str = ""


@dataclass(frozen=True)
class Rule:
    id: str
    kind: Kind
    scope: Literal["", "spec"]  # where the CEL rule sits: the object root or its spec
    field_path: str  # relative to scope, e.g. ".quorum.minInSyncReplicas"; "" for the scope itself
    problem: str  # template, e.g. "{value} is greater than inSyncReplicas ({inSync})"
    rule: str
    fix: str  # template
    cel: str  # true when valid; `self` is the scope object, defaults applied
    valid: Callable[[Any], bool]  # Python: the parsed resource → valid?
    values: dict[str, Placeholder] = field(default_factory=dict)
    hint: Callable[[Any], str | None] | None = None  # Python-only suffix (did-you-mean); never in CEL
    choices: tuple[str, ...] = ()  # the only values the field takes (a string field checked against a list)

    @property
    def path(self) -> str:
        head = "spec" if self.scope == "spec" else ""
        return (head + self.field_path).lstrip(".")

    def reads(self, message: bool = True) -> frozenset[str]:
        """The document paths the rule reads, e.g. 'spec.replicas': those of its condition and, with `message`,
        of its message's values. Taken from the CEL, which a test holds to the same meaning as the Python."""
        texts = [self.cel, *(ph.cel for ph in self.values.values() if message and ph.cel is not None)]
        head = "spec." if self.scope == "spec" else ""
        return frozenset(head + path for text in texts for path in _self_paths(text))

    def template(self) -> str:
        return f"{self.problem}; rule: {self.rule}; fix: {self.fix}"

    def python_message(self, resource: Any, with_hint: bool = True, as_api_server: bool = False) -> str:
        """The CLI's message; `as_api_server` gives what the CRD's CEL rule says for the same input."""
        values = {
            name: (
                ph.cel_text
                if as_api_server and ph.cel is None
                else (_cel_show(ph.python(resource)) if as_api_server else _show(ph.python(resource)))
            )
            for name, ph in self.values.items()
        }
        text = self.template().format(**values)
        if with_hint and self.hint is not None:
            extra = self.hint(resource)
            if extra:
                text += f" ({extra})"
        return text

    def cel_message_expression(self) -> str:
        """The same template as one CEL `format` call (string concatenation of converted ints is priced as
        unbounded by the API server's cost estimator; `format` is not)."""
        fmt = ""
        args: list[str] = []
        for literal, name, _, _ in _FORMATTER.parse(self.template()):
            fmt += literal.replace("%", "%%")
            if name:
                ph = self.values[name]
                if ph.cel is None:
                    fmt += ph.cel_text.replace("%", "%%")
                else:
                    fmt += "%s"
                    args.append(ph.cel)
        if not args:
            return _cel_string(fmt.replace("%%", "%"))
        return f"{_cel_string(fmt)}.format([{', '.join(args)}])"


import string as _string  # noqa: E402  (kept next to its single use)

_FORMATTER = _string.Formatter()


_SELF_PATH = re.compile(r"\bself((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def _self_paths(cel: str) -> list[str]:
    """'quorum.inSyncReplicas' for each `self.quorum.inSyncReplicas` of a CEL text; a trailing method call
    (`self.version.matches(...)`, `self.auth.users.all(...)`) is not a field."""
    paths: list[str] = []
    for m in _SELF_PATH.finditer(cel):
        parts = m.group(1).lstrip(".").split(".")
        if cel[m.end() : m.end() + 1] == "(":
            parts = parts[:-1]
        if parts:
            paths.append(".".join(parts))
    return paths


def _cel_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ", ".join(_show(v) for v in value)
    return str(value)


def _cel_show(value: object) -> str:
    """What CEL's `format` prints for `%s` (cel-go ext strings): a list as `["a", "b"]`, strings in it quoted."""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_cel_quote(v) if isinstance(v, str) else _cel_show(v) for v in value) + "]"
    return _show(value)


def _cel_quote(text: str) -> str:
    """Go's %q for the printable ASCII of keys."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _cel_list(items: Sequence[str]) -> str:
    return "[" + ", ".join(_cel_string(i) for i in items) + "]"


def did_you_mean(key: str, known: Sequence[str]) -> str | None:
    """ "did you mean 'x'?" for a name that differs from a known one only in case or by a typo, else None.
    Shared by the brokerConfig/controllerConfig key rules and the unknown-field messages (api.validation)."""
    lowered = {k.lower(): k for k in known}
    if key.lower() in lowered:
        return f"did you mean {lowered[key.lower()]!r}?"
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.75)
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return None


def _in_sync_of(bg: BrokerGroup) -> int:
    return in_sync_replicas(bg.spec)


def _min_in_sync_of(bg: BrokerGroup) -> int:
    return min_in_sync_replicas(bg.spec)


def _unknown_keys(config: dict[str, object], known: frozenset[str], owned: dict[str, str]) -> list[str]:
    return [k for k in config if k not in known and k not in owned]


def _name_rules(kind: Kind) -> list[Rule]:
    return [
        Rule(
            id=f"{kind}.name.format",
            kind=kind,
            scope="",
            field_path="",
            problem="metadata.name '{name}' is not a DNS label",
            rule="lower-case letters, digits and '-', starting with a letter and ending with a letter or digit",
            fix="rename the resource, e.g. 'broker-a'",
            cel=f"self.metadata.name.matches({_cel_string(NAME_PATTERN)})",
            valid=lambda r: bool(_re(NAME_PATTERN).match(r.metadata.name)),
            values={"name": Placeholder("self.metadata.name", lambda r: r.metadata.name)},
        ),
        Rule(
            id=f"{kind}.name.length",
            kind=kind,
            scope="",
            field_path="",
            problem="metadata.name '{name}' is longer than " + str(NAME_MAX) + " characters",
            rule=f"names are at most {NAME_MAX} characters (Service and pod names derive from them)",
            fix="choose a shorter name",
            cel=f"size(self.metadata.name) <= {NAME_MAX}",
            valid=lambda r: len(r.metadata.name) <= NAME_MAX,
            values={"name": Placeholder("self.metadata.name", lambda r: r.metadata.name)},
        ),
    ]


def _version_rule(kind: Kind) -> Rule:
    return Rule(
        id=f"{kind}.version",
        kind=kind,
        scope="spec",
        field_path=".version",
        problem="'{value}' is not a RocketMQ 5 release version",
        rule="version is MAJOR.MINOR.PATCH of RocketMQ 5.x",
        fix="set version to a release such as '5.5.0', or omit it for the operator's default",
        cel=f"self.version.matches({_cel_string(VERSION_PATTERN)})",
        valid=lambda r: bool(_re(VERSION_PATTERN).match(r.spec.version)),
        values={"value": Placeholder("self.version", lambda r: r.spec.version)},
    )


def _quantity_rule(kind: Kind, rid: str, field_path: str, get: Callable[[Any], str | None], example: str) -> Rule:
    # field_path like ".storage.size"; CEL needs has() on every optional step.
    steps = field_path.strip(".").split(".")
    guards = " && ".join(f"has(self.{'.'.join(steps[: i + 1])})" for i in range(len(steps)))
    return Rule(
        id=f"{kind}.{rid}",
        kind=kind,
        scope="spec",
        field_path=field_path,
        problem="'{value}' is not a quantity",
        rule="a size such as 512Mi, 2Gi or 1073741824 (binary suffixes Ki Mi Gi Ti; decimal k M G T)",
        fix=f"write it like '{example}'",
        cel=f"!({guards}) || self.{'.'.join(steps)}.matches({_cel_string(QUANTITY_PATTERN)})",
        valid=lambda r: get(r) is None or is_quantity(str(get(r))),
        values={"value": Placeholder(f"self.{'.'.join(steps)}", lambda r: get(r))},
    )


_RE_CACHE: dict[str, Any] = {}


def _re(pattern: str) -> Any:
    if pattern not in _RE_CACHE:
        _RE_CACHE[pattern] = re.compile(pattern)
    return _RE_CACHE[pattern]


def _config_key_rules(
    kind: Kind,
    field: str,
    get: Callable[[Any], dict[str, object]],
    known: frozenset[str],
    owned: dict[str, str],
    what: str,
    classes: str,
    see: str,
) -> list[Rule]:
    """The two rules of an extra-config map: no operator-owned keys, and only keys RocketMQ really reads."""
    known_sorted, owned_sorted = sorted(known), sorted(owned)
    guard = f"!has(self.{field}) || self.{field}.all(k, "

    def owned_keys(r: Any) -> list[str]:
        return [key for key in get(r) if key in owned]

    def unknown(r: Any) -> list[str]:
        return _unknown_keys(get(r), known, owned)

    return [
        Rule(
            id=f"{kind}.{field}.owned",
            kind=kind,
            scope="spec",
            field_path=f".{field}",
            problem="sets {keys}, which the operator renders from the spec",
            rule=f"{field} may not set keys the operator owns",
            fix=f"remove those keys and use the spec fields instead{see}",
            cel=f"{guard}!(k in {_cel_list(owned_sorted)}))",
            valid=lambda r: not owned_keys(r),
            values={"keys": Placeholder(f"self.{field}.filter(k, k in {_cel_list(owned_sorted)})", owned_keys)},
            hint=lambda r: "; ".join(f"{key} → {owned[key]}" for key in owned_keys(r)),
        ),
        Rule(
            id=f"{kind}.{field}.known",
            kind=kind,
            scope="spec",
            field_path=f".{field}",
            problem="{keys} is not " + what,
            rule=f"{field} keys must be {classes} (RocketMQ silently ignores unknown keys)",
            fix="correct the spelling or remove the key",
            cel=f"{guard}k in {_cel_list(known_sorted)} || k in {_cel_list(owned_sorted)})",
            valid=lambda r: not unknown(r),
            values={
                "keys": Placeholder(
                    f"self.{field}.filter(k, !(k in {_cel_list(known_sorted)}) && !(k in {_cel_list(owned_sorted)}))",
                    unknown,
                )
            },
            hint=lambda r: "; ".join(
                f"{key}: {hint}" for key in unknown(r) if (hint := did_you_mean(key, known_sorted))
            ),
        ),
    ]


def _peer_is_whole(peer: Any) -> bool:
    if peer.ip_block is not None:
        return peer.pod_selector is None and peer.namespace_selector is None
    return peer.pod_selector is not None or peer.namespace_selector is not None


def _selector_values_ok(selector: Any) -> bool:
    return selector is None or all(
        (len(e.values) > 0) == (e.operator in ("In", "NotIn")) for e in selector.match_expressions
    )


def _at(field: str, indexes: list[int]) -> str | None:
    return ", ".join(f"{field}[{i}]" for i in indexes) or None


def _network_peer_rules(kind: Kind, field: str, get: Callable[[Any], list[Any]]) -> list[Rule]:
    """The two rules of a list of NetworkPolicy peers (spec.networkPolicy.<field>): what the API server would
    refuse in the rendered NetworkPolicy, refused here on the group instead, with the field that says it."""
    path = f"self.networkPolicy.{field}"
    guard = f"!has({path}) || {path}.all(p, "

    def expressions_ok(sel: str) -> str:
        return (
            f"(!has(p.{sel}) || !has(p.{sel}.matchExpressions) || p.{sel}.matchExpressions.all(e, "
            "e.operator in ['In', 'NotIn'] ? (has(e.values) && size(e.values) > 0) "
            ": (!has(e.values) || size(e.values) == 0)))"
        )

    return [
        Rule(
            id=f"{kind}.networkPolicy.{field}.peer",
            kind=kind,
            scope="spec",
            field_path=f".networkPolicy.{field}",
            problem="a peer sets ipBlock together with a selector, or sets none of podSelector, namespaceSelector "
            "and ipBlock",
            rule=f"each peer of networkPolicy.{field} is podSelector and/or namespaceSelector, or ipBlock alone "
            "(as in a Kubernetes NetworkPolicy)",
            fix="split an ipBlock and a selector into two peers; write podSelector: {{}} for every pod of the "
            "namespace",
            cel=guard + "has(p.ipBlock) ? (!has(p.podSelector) && !has(p.namespaceSelector)) "
            ": (has(p.podSelector) || has(p.namespaceSelector)))",
            valid=lambda r: all(_peer_is_whole(peer) for peer in get(r)),
            hint=lambda r: _at(field, [i for i, peer in enumerate(get(r)) if not _peer_is_whole(peer)]),
        ),
        Rule(
            id=f"{kind}.networkPolicy.{field}.values",
            kind=kind,
            scope="spec",
            field_path=f".networkPolicy.{field}",
            problem="a matchExpressions entry has values that do not fit its operator",
            rule="In and NotIn take at least one value; Exists and DoesNotExist take none",
            fix="add the values an In or NotIn compares with, or remove the values of an Exists or DoesNotExist",
            cel=guard + expressions_ok("podSelector") + " && " + expressions_ok("namespaceSelector") + ")",
            valid=lambda r: all(
                _selector_values_ok(peer.pod_selector) and _selector_values_ok(peer.namespace_selector)
                for peer in get(r)
            ),
            hint=lambda r: _at(
                field,
                [
                    i
                    for i, peer in enumerate(get(r))
                    if not (_selector_values_ok(peer.pod_selector) and _selector_values_ok(peer.namespace_selector))
                ],
            ),
        ),
    ]


def _name_server_rules(kind: Kind, problem: str, values: dict[str, Placeholder]) -> list[Rule]:
    """A kind that talks to name servers names them: its ControllerGroup's, or a host:port list."""
    return [
        Rule(
            id=f"{kind}.nameServers.required",
            kind=kind,
            scope="spec",
            field_path=".nameServers",
            problem=problem,
            rule=f"a {kind} needs controllerRef (its name servers) or nameServers",
            fix="set spec.controllerRef.name, or list spec.nameServers as host:port",
            cel="has(self.controllerRef) || (has(self.nameServers) && size(self.nameServers) > 0)",
            valid=lambda r: r.spec.controller_ref is not None or bool(r.spec.name_servers),
            values=values,
        ),
        Rule(
            id=f"{kind}.nameServers.format",
            kind=kind,
            scope="spec",
            field_path=".nameServers",
            problem="name server addresses must be host:port",
            rule="each entry of nameServers is host:port",
            fix="write entries like 'rocketmq-ns-0.rocketmq-ns-headless:9876'",
            cel=f"!has(self.nameServers) || self.nameServers.all(a, a.matches({_cel_string(HOST_PORT_PATTERN)}))",
            valid=lambda r: all(_re(HOST_PORT_PATTERN).match(a) for a in r.spec.name_servers),
        ),
    ]


MAX_DRAIN_DEADLINE_S = 30 * 24 * 3600


def _broker_rules() -> list[Rule]:
    k: Kind = "BrokerGroup"
    modes = [m.value for m in HAMode]
    strategies = [s.value for s in UpgradeStrategy]
    policies = [p.value for p in ReclaimPolicy]
    return [
        *_name_rules(k),
        _version_rule(k),
        _range_rule(
            k,
            "replicas",
            "replicas",
            1,
            MAX_BROKER_REPLICAS,
            "replicas",
            "use 3 for a quorum group (2 for slaveActingMaster pairs, 1 for a test)",
        ),
        _range_rule(
            k,
            "drainDeadlineSeconds",
            "drain_deadline_seconds",
            0,
            MAX_DRAIN_DEADLINE_S,
            "seconds",
            "use 0 (wait until the consumers have read it) or the longest you accept to wait, e.g. 3600",
            "at most 30 days",
        ),
        Rule(
            id="BrokerGroup.haMode.enum",
            kind=k,
            scope="spec",
            field_path=".haMode",
            problem="'{value}' is not an HA mode",
            rule="haMode is one of " + ", ".join(modes),
            fix="use 'controller' (elections by the RocketMQ controller) unless you need a classic mode",
            cel=f"self.haMode in {_cel_list(modes)}",
            valid=lambda r: r.spec.ha_mode in modes,
            values={"value": Placeholder("self.haMode", lambda r: r.spec.ha_mode)},
            choices=tuple(modes),
        ),
        Rule(
            id="BrokerGroup.controllerRef.required",
            kind=k,
            scope="spec",
            field_path=".controllerRef",
            problem="controller mode needs a ControllerGroup and none is named",
            rule="haMode controller requires controllerRef.name",
            fix="set spec.controllerRef.name to a ControllerGroup in this namespace",
            cel="self.haMode != 'controller' || has(self.controllerRef)",
            valid=lambda r: r.spec.ha_mode != HAMode.CONTROLLER or r.spec.controller_ref is not None,
        ),
        *_name_server_rules(
            k,
            "mode '{mode}' has no name servers to register with",
            {"mode": Placeholder("self.haMode", lambda r: r.spec.ha_mode)},
        ),
        Rule(
            id="BrokerGroup.slaveActingMaster.replicas",
            kind=k,
            scope="spec",
            field_path=".replicas",
            problem="slaveActingMaster with {value} replica has no slave to act as master",
            rule="haMode slaveActingMaster needs replicas >= 2",
            fix="set replicas to 2 or more, or use haMode sync/async",
            cel="self.haMode != 'slaveActingMaster' || self.replicas >= 2",
            valid=lambda r: r.spec.ha_mode != HAMode.SLAVE_ACTING_MASTER or r.spec.replicas >= 2,
            values={"value": Placeholder("self.replicas", lambda r: r.spec.replicas)},
        ),
        Rule(
            id="BrokerGroup.quorum.inSyncReplicas.range",
            kind=k,
            scope="spec",
            field_path=".quorum.inSyncReplicas",
            problem="{value} is outside 1..replicas ({replicas})",
            rule="1 <= inSyncReplicas <= replicas (acks are counted with the master included)",
            fix="set inSyncReplicas between 1 and {replicas}",
            cel=f"{CEL_IN_SYNC_REPLICAS} >= 1 && {CEL_IN_SYNC_REPLICAS} <= self.replicas",
            valid=lambda r: 1 <= in_sync_replicas(r.spec) <= r.spec.replicas,
            values={
                "value": Placeholder(CEL_IN_SYNC_REPLICAS, _in_sync_of),
                "replicas": Placeholder("self.replicas", lambda r: r.spec.replicas),
            },
        ),
        Rule(
            id="BrokerGroup.quorum.minInSyncReplicas.range",
            kind=k,
            scope="spec",
            field_path=".quorum.minInSyncReplicas",
            problem="{value} is less than 1",
            rule="minInSyncReplicas >= 1",
            fix="set minInSyncReplicas to 1 or more",
            cel=f"{CEL_MIN_IN_SYNC_REPLICAS} >= 1",
            valid=lambda r: min_in_sync_replicas(r.spec) >= 1,
            values={"value": Placeholder(CEL_MIN_IN_SYNC_REPLICAS, _min_in_sync_of)},
        ),
        Rule(
            id="BrokerGroup.quorum.minInSyncReplicas.order",
            kind=k,
            scope="spec",
            field_path=".quorum.minInSyncReplicas",
            problem="{value} is greater than inSyncReplicas ({inSync})",
            rule="minInSyncReplicas <= inSyncReplicas <= replicas",
            fix="set minInSyncReplicas to at most {inSync}, or raise inSyncReplicas",
            cel=f"{CEL_MIN_IN_SYNC_REPLICAS} <= {CEL_IN_SYNC_REPLICAS}",
            valid=lambda r: min_in_sync_replicas(r.spec) <= in_sync_replicas(r.spec),
            values={
                "value": Placeholder(CEL_MIN_IN_SYNC_REPLICAS, _min_in_sync_of),
                "inSync": Placeholder(CEL_IN_SYNC_REPLICAS, _in_sync_of),
            },
        ),
        _quantity_rule(
            k,
            "quorum.maxGapNotInSync",
            ".quorum.maxGapNotInSync",
            lambda r: r.spec.quorum.max_gap_not_in_sync,
            "256Mi",
        ),
        _quantity_rule(k, "storage.size", ".storage.size", lambda r: r.spec.storage.size, "10Gi"),
        Rule(
            id="BrokerGroup.storage.reclaimPolicy",
            kind=k,
            scope="spec",
            field_path=".storage.reclaimPolicy",
            problem="'{value}' is not a reclaim policy",
            rule="reclaimPolicy is Retain or Delete",
            fix="use Retain (keep the data when the group is deleted) or Delete",
            cel=f"self.storage.reclaimPolicy in {_cel_list(policies)}",
            valid=lambda r: r.spec.storage.reclaim_policy in policies,
            values={"value": Placeholder("self.storage.reclaimPolicy", lambda r: r.spec.storage.reclaim_policy)},
            choices=tuple(policies),
        ),
        Rule(
            id="BrokerGroup.failover.detectionSeconds",
            kind=k,
            scope="spec",
            field_path=".failover.detectionSeconds",
            problem="{value} is outside 1..60",
            rule="detectionSeconds is how long the master may not answer before it is fenced and replaced",
            fix="set detectionSeconds between 1 (fast, but a long GC pause fails over) and 60",
            cel="!has(self.failover) || !has(self.failover.detectionSeconds) || "
            "(self.failover.detectionSeconds >= 1.0 && self.failover.detectionSeconds <= 60.0)",
            valid=lambda r: 1 <= r.spec.failover.detection_seconds <= 60,
            values={
                "value": Placeholder(
                    "string(self.failover.detectionSeconds)", lambda r: r.spec.failover.detection_seconds
                )
            },
        ),
        Rule(
            id="BrokerGroup.slaveRead.memoryRatio",
            kind=k,
            scope="spec",
            field_path=".slaveRead.memoryRatio",
            problem="{value} is outside 0..100",
            rule="memoryRatio (accessMessageInMemoryMaxRatio) is a percentage, 0 to 100",
            fix="set memoryRatio between 0 and 100 (RocketMQ's default is 40)",
            cel="!has(self.slaveRead.memoryRatio) || (self.slaveRead.memoryRatio >= 0 && "
            "self.slaveRead.memoryRatio <= 100)",
            valid=lambda r: r.spec.slave_read.memory_ratio is None or 0 <= r.spec.slave_read.memory_ratio <= 100,
            values={"value": Placeholder("self.slaveRead.memoryRatio", lambda r: r.spec.slave_read.memory_ratio)},
        ),
        _quantity_rule(k, "jvm.heap", ".jvm.heap", lambda r: r.spec.jvm.heap, "2Gi"),
        _quantity_rule(k, "jvm.directMemory", ".jvm.directMemory", lambda r: r.spec.jvm.direct_memory, "1Gi"),
        _tls_renew_rule(k),
        Rule(
            id="BrokerGroup.upgrade.strategy",
            kind=k,
            scope="spec",
            field_path=".upgrade.strategy",
            problem="'{value}' is not an upgrade strategy",
            rule="upgrade.strategy is one of " + ", ".join(strategies),
            fix="use 'switchover' (move the master away before restarting it)",
            cel=f"self.upgrade.strategy in {_cel_list(strategies)}",
            valid=lambda r: r.spec.upgrade.strategy in strategies,
            values={"value": Placeholder("self.upgrade.strategy", lambda r: r.spec.upgrade.strategy)},
            choices=tuple(strategies),
        ),
        _admin_secret_rule(
            k,
            "the Super user the brokers and the operator use",
            "create a Secret with keys username and password and set spec.auth.adminSecret to its name",
        ),
        Rule(
            id="BrokerGroup.auth.users.unique",
            kind=k,
            scope="spec",
            field_path=".auth.users",
            problem="user names repeat",
            rule="each user of auth.users has its own name",
            fix="merge the entries of the same name into one",
            cel="!has(self.auth.users) || self.auth.users.all(u, self.auth.users.exists_one(v, v.name == u.name))",
            valid=lambda r: len({u.name for u in r.spec.auth.users}) == len(r.spec.auth.users),
        ),
        *_config_key_rules(
            k,
            "brokerConfig",
            lambda r: r.spec.broker_config,
            BROKER_CONFIG_KEYS,
            OPERATOR_OWNED_BROKER_KEYS,
            "a RocketMQ broker key",
            "BrokerConfig, MessageStoreConfig or NettyServerConfig keys",
            " (see `rocketmq-operator explain`)",
        ),
        *_network_peer_rules(k, "clients", lambda r: r.spec.network_policy.clients),
        *_network_peer_rules(k, "metrics", lambda r: r.spec.network_policy.metrics),
    ]


def _tls_renew_rule(kind: Kind) -> Rule:
    return Rule(
        id=f"{kind}.tls.renewBefore",
        kind=kind,
        scope="spec",
        field_path=".tls.renewBefore",
        problem="renewBefore {renew} is not shorter than duration {duration}",
        rule="a certificate is renewed before it expires: tls.renewBefore < tls.duration",
        fix="shorten renewBefore (e.g. a tenth of duration) or lengthen duration",
        cel="!has(self.tls) || duration(self.tls.renewBefore) < duration(self.tls.duration)",
        valid=lambda r: duration_seconds(r.spec.tls.renew_before) < duration_seconds(r.spec.tls.duration),
        values={
            "renew": Placeholder("self.tls.renewBefore", lambda r: r.spec.tls.renew_before),
            "duration": Placeholder("self.tls.duration", lambda r: r.spec.tls.duration),
        },
    )


def _controller_rules() -> list[Rule]:
    k: Kind = "ControllerGroup"
    return [
        *_name_rules(k),
        _version_rule(k),
        Rule(
            id="ControllerGroup.replicas.odd",
            kind=k,
            scope="spec",
            field_path=".replicas",
            problem="{value} controllers cannot form a useful Raft quorum",
            rule="replicas is 1, 3 or 5 (an even count adds no fault tolerance)",
            fix="use 3 (tolerates one failure) or 1 for a test",
            cel="self.replicas in [1, 3, 5]",
            valid=lambda r: r.spec.replicas in (1, 3, 5),
            values={"value": Placeholder("self.replicas", lambda r: r.spec.replicas)},
        ),
        Rule(
            id="ControllerGroup.nameServers.replicas",
            kind=k,
            scope="spec",
            field_path=".nameServers.replicas",
            problem="{value} name servers is out of range",
            rule="1 <= nameServers.replicas <= 5",
            fix="use 2 or 3 name servers",
            cel="!has(self.nameServers.replicas) || (self.nameServers.replicas >= 1 && self.nameServers.replicas <= 5)",
            valid=lambda r: r.spec.name_servers.replicas is None or 1 <= r.spec.name_servers.replicas <= 5,
            values={"value": Placeholder("self.nameServers.replicas", lambda r: r.spec.name_servers.replicas)},
        ),
        _quantity_rule(k, "storage.size", ".storage.size", lambda r: r.spec.storage.size, "1Gi"),
        _quantity_rule(k, "jvm.heap", ".jvm.heap", lambda r: r.spec.jvm.heap, "512Mi"),
        _tls_renew_rule(k),
        *_config_key_rules(
            k,
            "controllerConfig",
            lambda r: r.spec.controller_config,
            CONTROLLER_CONFIG_KEYS,
            OPERATOR_OWNED_CONTROLLER_KEYS,
            "a RocketMQ controller or name-server key",
            "ControllerConfig, NamesrvConfig or NettyServerConfig keys",
            "",
        ),
        *_network_peer_rules(k, "clients", lambda r: r.spec.network_policy.clients),
        *_backup_rules(k),
    ]


def _backup_rules(k: Kind) -> list[Rule]:
    """spec.backup of a ControllerGroup: not more often than every 5 minutes, and 1..30 kept."""
    return [
        Rule(
            id=f"{k}.backup.every",
            kind=k,
            scope="spec",
            field_path=".backup.every",
            problem="a backup every {value} is too often",
            rule=f"backup.every is at least {BACKUP_MIN_EVERY_S // 60}m (each backup reads every master's metadata)",
            fix="use e.g. 6h, or `kubectl rocketmq backup CONTROLLERGROUP` for one now",
            cel=f"!has(self.backup) || duration(self.backup.every) >= duration('{BACKUP_MIN_EVERY_S}s')",
            valid=lambda r: r.spec.backup is None or duration_seconds(r.spec.backup.every) >= BACKUP_MIN_EVERY_S,
            values={"value": Placeholder("self.backup.every", lambda r: r.spec.backup.every if r.spec.backup else "")},
        ),
        Rule(
            id=f"{k}.backup.keep.range",
            kind=k,
            scope="spec",
            field_path=".backup.keep",
            problem="keeping {value} backups is out of range",
            rule=f"1 <= backup.keep <= {BACKUP_MAX_KEEP} (one Secret each)",
            fix="use e.g. 7",
            cel=f"!has(self.backup) || !has(self.backup.keep) || (self.backup.keep >= 1 && self.backup.keep <= "
            f"{BACKUP_MAX_KEEP})",
            valid=lambda r: r.spec.backup is None or 1 <= r.spec.backup.keep <= BACKUP_MAX_KEEP,
            values={"value": Placeholder("self.backup.keep", lambda r: r.spec.backup.keep if r.spec.backup else 0)},
        ),
    ]


def _resource_name_rules(kind: Kind, what: str, field: str, max_len: int, system: bool) -> list[Rule]:
    """The RocketMQ name of a Topic or ConsumerGroup (spec.<field>, default metadata.name)."""
    name_cel = f"(has(self.spec.{field}) ? self.spec.{field} : self.metadata.name)"
    attr = "topic_name" if kind == "Topic" else "group_name"

    def name(r: Any) -> str:
        return str(getattr(r, attr))

    value = {"name": Placeholder(name_cel, name)}
    rules = [
        Rule(
            id=f"{kind}.name.chars",
            kind=kind,
            scope="",
            field_path=f".spec.{field}",
            problem=f"{what} name '{{name}}' has characters RocketMQ refuses",
            rule=f"{what} names match {TOPIC_NAME_PATTERN} (letters, digits, '%', '|', '_', '-')",
            fix=f"set spec.{field} to a name such as 'orders_v1' (metadata.name is the default and may not fit)",
            cel=f"{name_cel}.matches({_cel_string(TOPIC_NAME_PATTERN)})",
            valid=lambda r: bool(_re(TOPIC_NAME_PATTERN).match(name(r))),
            values=value,
        ),
        Rule(
            id=f"{kind}.name.length",
            kind=kind,
            scope="",
            field_path=f".spec.{field}",
            problem=f"{what} name '{{name}}' is longer than {max_len} characters",
            rule=f"RocketMQ refuses {what} names longer than {max_len} characters",
            fix=f"choose a shorter spec.{field}",
            cel=f"size({name_cel}) <= {max_len}",
            valid=lambda r: len(name(r)) <= max_len,
            values=value,
        ),
    ]
    if system:
        rules.append(
            Rule(
                id=f"{kind}.name.system",
                kind=kind,
                scope="",
                field_path=f".spec.{field}",
                problem=f"'{{name}}' is a RocketMQ system {what}",
                rule=f"system topics ({', '.join(SYSTEM_TOPICS)} and names starting with {SYSTEM_TOPIC_PREFIX}) "
                "are the broker's own",
                fix=f"choose another spec.{field}",
                cel=f"!({name_cel} in {_cel_list(SYSTEM_TOPICS)}) && !{name_cel}.startsWith("
                f"{_cel_string(SYSTEM_TOPIC_PREFIX)})",
                valid=lambda r: name(r) not in SYSTEM_TOPICS and not name(r).startswith(SYSTEM_TOPIC_PREFIX),
                values=value,
            )
        )
    return rules


def _placement_rule(kind: Kind) -> Rule:
    return Rule(
        id=f"{kind}.placement.required",
        kind=kind,
        scope="spec",
        field_path=".brokerGroups",
        problem=f"the {kind} names no broker group to live on",
        rule="brokerGroups lists at least one BrokerGroup, or clusterName names their cluster",
        fix="set spec.brokerGroups: [broker-a] (or spec.clusterName: DefaultCluster)",
        cel="(has(self.brokerGroups) && size(self.brokerGroups) > 0) || has(self.clusterName)",
        valid=lambda r: bool(r.spec.broker_groups) or r.spec.cluster_name is not None,
    )


def _range_rule(kind: Kind, field: str, attr: str, low: int, high: int, unit: str, fix: str, why: str = "") -> Rule:
    """An integer spec field (``field``, ``attr`` in the model) within [low, high], in Python and in CEL."""
    return Rule(
        id=f"{kind}.{field}.range",
        kind=kind,
        scope="spec",
        field_path=f".{field}",
        problem=f"{{value}} {unit} is out of range",
        rule=f"{low} <= {field} <= {high}" + (f" ({why})" if why else ""),
        fix=fix,
        cel=f"self.{field} >= {low} && self.{field} <= {high}",
        valid=lambda r: low <= _spec_attr(r, attr) <= high,
        values={"value": Placeholder(f"self.{field}", lambda r: _spec_attr(r, attr))},
    )


def _node_port_rules(kind: Kind, field: str, attr: str, what: str, range_fix: str, type_fix: str) -> list[Rule]:
    """A Proxy's spec.service.<field> node port: in the API server's range, and only on a Service that has node
    ports (NodePort, LoadBalancer)."""

    def port(r: Any) -> int | None:
        value: int | None = getattr(r.spec.service, attr)
        return value

    return [
        Rule(
            id=f"Proxy.service.{field}.range",
            kind=kind,
            scope="spec",
            field_path=f".service.{field}",
            problem="node port {value} is out of range",
            rule=f"{NODE_PORT_MIN} <= service.{field} <= {NODE_PORT_MAX} (the API server's node port range)",
            fix=range_fix,
            cel=f"!has(self.service.{field}) || (self.service.{field} >= {NODE_PORT_MIN} && "
            f"self.service.{field} <= {NODE_PORT_MAX})",
            valid=lambda r: (value := port(r)) is None or NODE_PORT_MIN <= value <= NODE_PORT_MAX,
            values={"value": Placeholder(f"self.service.{field}", port)},
        ),
        Rule(
            id=f"Proxy.service.{field}.type",
            kind=kind,
            scope="spec",
            field_path=f".service.{field}",
            problem=what + " is set on a {type} Service",
            rule=f"service.{field} needs service.type NodePort or LoadBalancer",
            fix=type_fix,
            cel=f"!has(self.service.{field}) || self.service.type in ['NodePort', 'LoadBalancer']",
            valid=lambda r: port(r) is None or r.spec.service.type in ("NodePort", "LoadBalancer"),
            values={"type": Placeholder("self.service.type", lambda r: r.spec.service.type)},
        ),
    ]


def _is_host(text: str) -> bool:
    """A host name or IPv4 address as the advertisedHost rule's CEL pattern reads it."""
    return re.fullmatch(r"[A-Za-z0-9.-]{1,253}", text) is not None


def _enum_rule(kind: Kind, field: str, attr: str, values: Sequence[str], fix: str, what: str) -> Rule:
    return Rule(
        id=f"{kind}.{field}.enum",
        kind=kind,
        scope="spec",
        field_path=f".{field}",
        problem=f"'{{value}}' is not {what}",
        rule=f"{field} is one of " + ", ".join(values),
        fix=fix,
        cel=f"self.{field} in {_cel_list(values)}",
        valid=lambda r: _spec_attr(r, attr) in values,
        values={"value": Placeholder(f"self.{field}", lambda r: _spec_attr(r, attr))},
        choices=tuple(values),
    )


def _spec_attr(resource: Any, attr: str) -> Any:
    """A spec attribute by its dotted Python path (`service.type`)."""
    value = resource.spec
    for part in attr.split("."):
        value = getattr(value, part)
    return value


def _topic_rules() -> list[Rule]:
    k: Kind = "Topic"
    perms = [p.value for p in TopicPermission]
    types = [t.value for t in MessageType]
    policies = [p.value for p in DeletionPolicy]
    known_attrs = list(TOPIC_ATTRIBUTE_KEYS)

    def unknown_attrs(r: Any) -> list[str]:
        return [key for key in r.spec.attributes if key not in TOPIC_ATTRIBUTE_KEYS]

    def queue_rule(field: str, attr: str) -> Rule:
        return _range_rule(
            k, field, attr, 1, MAX_QUEUES, f"{field.removesuffix('QueueNums')} queues",
            f"set {field} to 8 (RocketMQ's own default is 16)", "a topic without queues can hold no message",
        )  # fmt: skip

    return [
        *_resource_name_rules(k, "topic", "topicName", TOPIC_NAME_MAX, system=True),
        _placement_rule(k),
        queue_rule("readQueueNums", "read_queue_nums"),
        queue_rule("writeQueueNums", "write_queue_nums"),
        _enum_rule(k, "permission", "permission", perms, "use 'ReadWrite'", "a topic permission"),
        _enum_rule(
            k,
            "messageType",
            "message_type",
            types,
            "use NORMAL unless producers send FIFO, DELAY or TRANSACTION messages",
            "a RocketMQ message type",
        ),
        _enum_rule(
            k,
            "deletionPolicy",
            "deletion_policy",
            policies,
            "use 'Keep' (deleting the resource keeps the topic) or 'Delete'",
            "a deletion policy",
        ),
        Rule(
            id="Topic.attributes.known",
            kind=k,
            scope="spec",
            field_path=".attributes",
            problem="{keys} is not a topic attribute the operator sets",
            rule="attributes keys are " + ", ".join(known_attrs) + " (message.type is spec.messageType)",
            fix="remove the key, or set spec.messageType instead of message.type",
            cel=f"!has(self.attributes) || self.attributes.all(k, k in {_cel_list(known_attrs)})",
            valid=lambda r: not unknown_attrs(r),
            values={"keys": Placeholder(f"self.attributes.filter(k, !(k in {_cel_list(known_attrs)}))", unknown_attrs)},
        ),
    ]


def _consumer_group_rules() -> list[Rule]:
    k: Kind = "ConsumerGroup"
    modes = [m.value for m in ConsumeMode]
    policies = [p.value for p in DeletionPolicy]
    return [
        *_resource_name_rules(k, "consumer group", "groupName", GROUP_NAME_MAX, system=False),
        _placement_rule(k),
        _enum_rule(k, "consumeMode", "consume_mode", modes, "use 'Concurrently' or 'Orderly'", "a consume mode"),
        _enum_rule(
            k,
            "deletionPolicy",
            "deletion_policy",
            policies,
            "use 'Keep' (deleting the resource keeps the group and its offsets) or 'Delete'",
            "a deletion policy",
        ),
        _range_rule(k, "retryMaxTimes", "retry_max_times", 0, 1024, "retries", "use 16 (RocketMQ's default)"),
        _range_rule(
            k, "retryQueueNums", "retry_queue_nums", 0, MAX_QUEUES, "retry queues", "use 1 (RocketMQ's default)"
        ),
        Rule(
            id="ConsumerGroup.topics.format",
            kind=k,
            scope="spec",
            field_path=".topics",
            problem="topics lists a name RocketMQ refuses",
            rule=f"each topic matches {TOPIC_NAME_PATTERN} and has at most {TOPIC_NAME_MAX} characters",
            fix="list the Topic names (spec.topicName of each Topic)",
            cel=f"!has(self.topics) || self.topics.all(t, t.matches({_cel_string(TOPIC_NAME_PATTERN)}) "
            f"&& size(t) <= {TOPIC_NAME_MAX})",
            valid=lambda r: all(_re(TOPIC_NAME_PATTERN).match(t) and len(t) <= TOPIC_NAME_MAX for t in r.spec.topics),
        ),
    ]


def _user_rules() -> list[Rule]:
    k: Kind = "User"
    name_cel = "(has(self.spec.userName) ? self.spec.userName : self.metadata.name)"
    value = {"name": Placeholder(name_cel, lambda r: r.user_name)}
    policies = [p.value for p in UserDeletionPolicy]
    return [
        Rule(
            id="User.name.chars",
            kind=k,
            scope="",
            field_path=".spec.userName",
            problem="user name '{name}' has characters RocketMQ's ACL refuses, or more than 64",
            rule="user names match "
            + AUTH_NAME_PATTERN.replace("{", "{{").replace("}", "}}")
            + " (letters, digits, '_', '-'; 1 to 64)",
            fix="set spec.userName to a name such as 'orders_app' (metadata.name is the default and may not fit)",
            cel=f"{name_cel}.matches({_cel_string(AUTH_NAME_PATTERN)})",
            valid=lambda r: bool(_re(AUTH_NAME_PATTERN).match(r.user_name)),
            values=value,
        ),
        _placement_rule(k),
        _enum_rule(
            k,
            "deletionPolicy",
            "deletion_policy",
            policies,
            "use 'Delete' (deleting the resource deletes the user from the brokers) or 'Keep'",
            "a deletion policy",
        ),
    ]


def _admin_secret_rule(k: Kind, what: str, fix: str) -> Rule:
    """spec.auth.enabled needs spec.auth.adminSecret (a BrokerGroup's and a Proxy's)."""
    return Rule(
        id=f"{k}.auth.adminSecret.required",
        kind=k,
        scope="spec",
        field_path=".auth.adminSecret",
        problem="auth is enabled and no admin Secret is named",
        rule=f"auth.enabled requires auth.adminSecret ({what})",
        fix=fix,
        cel="!self.auth.enabled || has(self.auth.adminSecret)",
        valid=lambda r: not r.spec.auth.enabled or r.spec.auth.admin_secret is not None,
    )


def _proxy_rules() -> list[Rule]:
    k: Kind = "Proxy"
    types = list(PROXY_SERVICE_TYPES)
    return [
        *_name_rules(k),
        _version_rule(k),
        _range_rule(
            k,
            "replicas",
            "replicas",
            1,
            MAX_PROXY_REPLICAS,
            "proxies",
            "use 2 (a roll then never takes every proxy down)",
        ),
        *_name_server_rules(k, "the proxies have no name servers to read routes from", {}),
        _range_rule(
            k,
            "routeRefreshSeconds",
            "route_refresh_seconds",
            1,
            300,
            "s",
            "use 1 (a proxy follows a new master within about a second)",
        ),
        _range_rule(
            k,
            "minReadySeconds",
            "min_ready_seconds",
            0,
            MAX_PROXY_MIN_READY_SECONDS,
            "s",
            f"use {DEFAULT_PROXY_MIN_READY_SECONDS} (time for clients to reconnect to a restarted proxy)",
        ),
        _enum_rule(
            k,
            "service.type",
            "service.type",
            types,
            "use ClusterIP inside the cluster, NodePort or LoadBalancer for clients outside it",
            "a Service type",
        ),
        *_node_port_rules(
            k,
            "grpcNodePort",
            "grpc_node_port",
            "a node port",
            "choose a port in the range, or leave it unset for one Kubernetes picks",
            "set service.type: NodePort, or remove service.grpcNodePort",
        ),
        *_node_port_rules(
            k,
            "remotingNodePort",
            "remoting_node_port",
            "a remoting node port",
            "choose a port in the range",
            "set service.type: NodePort (or LoadBalancer), or remove service.remotingNodePort",
        ),
        Rule(
            id="Proxy.service.remotingNodePort.advertisedHost",
            kind=k,
            scope="spec",
            field_path=".service",
            problem="remotingNodePort and advertisedHost are set one without the other",
            rule="service.remotingNodePort and service.advertisedHost go together: the proxies name "
            "advertisedHost:remotingNodePort in every route they answer a remoting client",
            fix="set both (advertisedHost: a node's address or the load balancer's), or neither",
            cel="has(self.service.remotingNodePort) == has(self.service.advertisedHost)",
            valid=lambda r: (r.spec.service.remoting_node_port is None) == (r.spec.service.advertised_host is None),
        ),
        Rule(
            id="Proxy.service.advertisedHost.host",
            kind=k,
            scope="spec",
            field_path=".service.advertisedHost",
            problem="advertised host {value} is not a host name or IPv4 address",
            rule="service.advertisedHost is a host name or IPv4 address: letters, digits, dots and dashes, no port",
            fix="give the host alone (the port is service.remotingNodePort)",
            cel="!has(self.service.advertisedHost) || self.service.advertisedHost.matches('^[A-Za-z0-9.-]{1,253}$')",
            valid=lambda r: r.spec.service.advertised_host is None or _is_host(r.spec.service.advertised_host),
            values={"value": Placeholder("self.service.advertisedHost", lambda r: r.spec.service.advertised_host)},
        ),
        Rule(
            id="Proxy.service.remotingNodePort.distinct",
            kind=k,
            scope="spec",
            field_path=".service.remotingNodePort",
            problem="node port {value} is the gRPC one too",
            rule="service.remotingNodePort differs from service.grpcNodePort (one node port, one Service port)",
            fix="choose another port for one of them",
            cel="!has(self.service.remotingNodePort) || !has(self.service.grpcNodePort) || "
            "self.service.remotingNodePort != self.service.grpcNodePort",
            valid=lambda r: (
                r.spec.service.remoting_node_port is None
                or r.spec.service.remoting_node_port != r.spec.service.grpc_node_port
            ),
            values={"value": Placeholder("self.service.remotingNodePort", lambda r: r.spec.service.remoting_node_port)},
        ),
        Rule(
            id="Proxy.service.loadBalancerSourceRanges.type",
            kind=k,
            scope="spec",
            field_path=".service.loadBalancerSourceRanges",
            problem="source ranges are set on a {type} Service",
            rule="service.loadBalancerSourceRanges needs service.type LoadBalancer",
            fix="set service.type: LoadBalancer, or remove the ranges",
            cel="!has(self.service.loadBalancerSourceRanges) || size(self.service.loadBalancerSourceRanges) == 0 "
            "|| self.service.type == 'LoadBalancer'",
            valid=lambda r: not r.spec.service.load_balancer_source_ranges or r.spec.service.type == "LoadBalancer",
            values={"type": Placeholder("self.service.type", lambda r: r.spec.service.type)},
        ),
        _admin_secret_rule(
            k,
            "the brokers' admin, which the proxies sign with",
            "set spec.auth.adminSecret to the Secret the BrokerGroups name in spec.auth.adminSecret",
        ),
        _quantity_rule(k, "jvm.heap", ".jvm.heap", lambda r: r.spec.jvm.heap, "512Mi"),
        _tls_renew_rule(k),
        *_config_key_rules(
            k,
            "proxyConfig",
            lambda r: r.spec.proxy_config,
            PROXY_CONFIG_KEYS,
            OPERATOR_OWNED_PROXY_KEYS,
            "a RocketMQ proxy key",
            "ProxyConfig or AuthConfig keys",
            "",
        ),
    ]


BROKER_GROUP_RULES: tuple[Rule, ...] = tuple(_broker_rules())
CONTROLLER_GROUP_RULES: tuple[Rule, ...] = tuple(_controller_rules())
TOPIC_RULES: tuple[Rule, ...] = tuple(_topic_rules())
CONSUMER_GROUP_RULES: tuple[Rule, ...] = tuple(_consumer_group_rules())
PROXY_RULES: tuple[Rule, ...] = tuple(_proxy_rules())
USER_RULES: tuple[Rule, ...] = tuple(_user_rules())

_RULES: dict[str, tuple[Rule, ...]] = {
    "BrokerGroup": BROKER_GROUP_RULES,
    "ControllerGroup": CONTROLLER_GROUP_RULES,
    "Topic": TOPIC_RULES,
    "ConsumerGroup": CONSUMER_GROUP_RULES,
    "Proxy": PROXY_RULES,
    "User": USER_RULES,
}


def rules_for(kind: Kind) -> tuple[Rule, ...]:
    return _RULES[kind]


def choices_at(kind: str, path: str) -> tuple[str, ...]:
    """The values a string field takes (e.g. Topic spec.permission), () if any string may do."""
    for rule in _RULES.get(kind, ()):
        if rule.path == path and rule.choices:
            return rule.choices
    return ()


def check_rules(resource: AnyResource, unread: Collection[str] = ()) -> list[tuple[Rule, str]]:
    """Every rule the resource breaks, with its Python message. Rules that read a path of `unread` (or inside
    it, or around it) are skipped: those fields did not parse, and the resource holds their defaults instead."""
    broken: list[tuple[Rule, str]] = []
    for rule in rules_for(resource.kind):
        if any(overlaps(read, bad) for read in rule.reads() for bad in unread):
            continue
        if not rule.valid(resource):
            broken.append((rule, rule.python_message(resource)))
    return broken


def overlaps(a: str, b: str) -> bool:
    """Is one of two document paths ('spec.quorum', 'spec.quorum.inSyncReplicas') the other or inside it?"""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")
