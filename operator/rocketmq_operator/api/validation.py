"""Validate manifests: shape (pydantic), rules (api.rules, shared with CEL) and mode warnings.

`validate_document(doc)` never raises on bad input: it returns a `Report` of problems, each naming the field,
the value, the rule and the fix. Warnings are for fields the chosen mode ignores and for settings that silently
mean something else in RocketMQ (inSyncReplicas=1 makes a SYNC_MASTER asynchronous).
"""

from __future__ import annotations

import base64
import binascii
import copy
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError

from rocketmq_operator.api.models import (
    ACL_RESOURCE_PATTERN,
    API_GROUP_VERSION,
    AUTH_NAME_PATTERN,
    CIDR_PATTERN,
    SECRET_NAME_PATTERN,
    AnyResource,
    BrokerGroup,
    ConsumerGroup,
    ControllerGroup,
    HAMode,
    Proxy,
    ResourceRequirements,
    Topic,
    User,
)
from rocketmq_operator.api.modes import (
    ALL_ACK_IN_SYNC_STATE_SET,
    AUTO_IN_SYNC_REPLICAS,
    HA_MAX_GAP_NOT_IN_SYNC,
    IN_SYNC_REPLICAS,
    MIN_IN_SYNC_REPLICAS,
    MODES,
    QUORUM_FIELDS,
    in_sync_replicas,
    waits_for_in_sync_replicas,
)
from rocketmq_operator.api.rules import check_rules, choices_at, did_you_mean, overlaps

ResourceModel = type[BrokerGroup] | type[ControllerGroup] | type[Topic] | type[ConsumerGroup] | type[Proxy] | type[User]
KINDS: dict[str, ResourceModel] = {
    "BrokerGroup": BrokerGroup,
    "ControllerGroup": ControllerGroup,
    "Topic": Topic,
    "ConsumerGroup": ConsumerGroup,
    "Proxy": Proxy,
    "User": User,
}


@dataclass(frozen=True)
class Problem:
    path: str
    message: str
    rule_id: str = ""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass(frozen=True)
class SecretDoc:
    """A Kubernetes v1 Secret given with the manifests (the local platform reads passwords from these; on
    Kubernetes they are applied like any Secret). ``data`` holds decoded values and is never shown."""

    name: str
    namespace: str | None
    data: dict[str, str] = field(repr=False)


# What names one object: two documents with the same kind, namespace and name are one object given twice.
ResourceKey = tuple[str, str | None, str]


@dataclass
class Report:
    source: str
    resource: AnyResource | None = None
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    secret: SecretDoc | None = None
    key: ResourceKey | None = None  # read from the document, so a document with errors has one too
    document: str = ""  # `file.yaml#3`

    @property
    def ok(self) -> bool:
        return not self.errors and (self.resource is not None or self.secret is not None)

    def prefixed(self, problem: Problem) -> str:
        return f"{self.source}: {problem}"


class ManifestError(ValueError):
    """A file that cannot be read as YAML manifests at all."""


def load_documents(path: str | Path) -> list[dict[str, Any]]:
    """All non-empty YAML documents of a file ('-' = stdin), as dicts."""
    import sys

    try:
        text = sys.stdin.read() if str(path) == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ManifestError(f"{path}:{where}: not valid YAML: {problem}") from None
    out: list[dict[str, Any]] = []
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise ManifestError(f"{path}: document {i + 1} is a {type(doc).__name__}, not a mapping")
        out.append(doc)
    return out


def _loc_to_path(loc: Iterable[int | str]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += ("." if path else "") + part
    return path


def _value_at(doc: Any, loc: Iterable[int | str]) -> Any:
    cur = doc
    for part in loc:
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            return None
    return cur


# pydantic's error types → (what the value must be, the fix), in our words: pydantic's own ("Input should be ...",
# "type=...", links to errors.pydantic.dev) never reaches a user.
_EXPECTED: dict[str, tuple[str, str]] = {
    "int_parsing": ("a whole number", "write a number without quotes, e.g. 3"),
    "int_type": ("a whole number", "write a number without quotes, e.g. 3"),
    "int_from_float": ("a whole number", "write a whole number, e.g. 3"),
    "float_parsing": ("a number", "write a number without quotes, e.g. 4 or 2.5"),
    "float_type": ("a number", "write a number without quotes, e.g. 4 or 2.5"),
    "bool_parsing": ("true or false", "write true or false"),
    "bool_type": ("true or false", "write true or false"),
    "string_type": ("a string", "quote the value"),
    "dict_type": ("a mapping", "write key: value pairs"),
    "model_type": ("a mapping", "write key: value pairs"),
    "model_attributes_type": ("a mapping", "write key: value pairs"),
    "list_type": ("a list", "write a YAML list, e.g. [a, b]"),
}
# A pattern of the models → what a matching value is, and the fix (never the regular expression alone).
_PATTERNS: dict[str, tuple[str, str]] = {
    ACL_RESOURCE_PATTERN: (
        "an ACL resource",
        "write Type:name with Type one of Cluster, Namespace, Topic, Group (a trailing * for a prefix, Type:* for "
        "all of a type), or * for everything",
    ),
    AUTH_NAME_PATTERN: ("a user name", "use 1 to 64 letters, digits, '_' or '-'"),
    SECRET_NAME_PATTERN: ("a Secret name", "use the name of a Secret: lower-case letters, digits, '-' or '.'"),
    CIDR_PATTERN: ("an address block (CIDR)", "write an address and a prefix length, e.g. 10.0.0.0/8 or fd00::/8"),
}
# pydantic tags the errors of each member of a union (`str | int`) with the member's type: one problem, not two.
_UNION_TAGS = frozenset({"str", "int", "float", "bool"})


def _model_fields_at(model: type[BaseModel], loc: Sequence[int | str]) -> list[str] | None:
    """The field names (as written in manifests) of the object at ``loc`` in ``model``, if it is a model."""
    current: Any = model
    for part in loc:
        current = _without_none(current)
        if isinstance(part, int):
            args = get_args(current)
            current = args[0] if args else None
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        fields = {info.alias or name: info for name, info in current.model_fields.items()}
        if part not in fields:
            return None
        current = fields[part].annotation
    current = _without_none(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return sorted(info.alias or name for name, info in current.model_fields.items())
    return None


def _without_none(annotation: Any) -> Any:
    """``X`` for ``X | None``."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if type(None) in get_args(annotation) and len(args) == 1:
        return args[0]
    return annotation


def _show_value(value: Any) -> str:
    return "an empty value" if value is None else repr(value)


def _unknown_field(model: type[BaseModel], kind: str, loc: tuple[int | str, ...]) -> Problem:
    name = str(loc[-1])
    parent = _loc_to_path(loc[:-1]) or "the document"
    known = _model_fields_at(model, loc[:-1]) or []
    hint = did_you_mean(name, known) if known else None
    rule = f"{parent} has only the fields of the {kind} schema"
    if hint:
        fix = f"correct the spelling or remove the field ({name}: {hint})"
    elif known:
        rule += f": {', '.join(known)}"
        fix = "remove it, or use one of those fields (`kubectl explain` describes each)"
    else:
        fix = "remove it (`rocketmq-operator crds` shows the schema)"
    return Problem(_loc_to_path(loc), f"unknown field '{name}'; rule: {rule}; fix: {fix}", "shape.unknown-field")


def _choices(expected: str) -> list[str]:
    """['Always', 'IfNotPresent', 'Never'] from pydantic's "'Always', 'IfNotPresent' or 'Never'"."""
    return re.findall(r"'((?:[^'\\]|\\.)*)'", expected)


def _shape_problems(doc: dict[str, Any], model: type[BaseModel], errors: Sequence[Any]) -> list[Problem]:
    kind = str(doc.get("kind"))
    grouped: dict[tuple[int | str, ...], list[Any]] = {}
    for err in errors:
        loc = tuple(err["loc"])
        if len(loc) > 1 and loc[-1] in _UNION_TAGS:
            loc = loc[:-1]
        grouped.setdefault(loc, []).append(err)
    problems: list[Problem] = []
    for loc, errs in grouped.items():
        path = _loc_to_path(loc)
        etypes = [e["type"] for e in errs]
        if "extra_forbidden" in etypes:
            problems.append(_unknown_field(model, kind, loc))
        elif "value_error" in etypes:
            err = errs[etypes.index("value_error")]
            problems.append(Problem(path, str(err.get("msg", "")).removeprefix("Value error, "), "shape.value"))
        elif "missing" in etypes:
            problems.append(Problem(path, "is required; rule: this field must be set; fix: add it", "shape.missing"))
        elif "literal_error" in etypes or "enum" in etypes:
            err = errs[etypes.index("literal_error" if "literal_error" in etypes else "enum")]
            value = _value_at(doc, loc)
            choices = _choices(str((err.get("ctx") or {}).get("expected", "")))
            hint = did_you_mean(str(value), choices) if choices else None
            listed = ", ".join(choices) or "the values `kubectl explain` lists"
            fix = f"use one of: {listed}" + (f" ({hint})" if hint else "")
            message = f"{_show_value(value)} is not allowed; rule: {path} is one of: {listed}; fix: {fix}"
            problems.append(Problem(path, message, "shape.enum"))
        elif "string_pattern_mismatch" in etypes:
            err = errs[etypes.index("string_pattern_mismatch")]
            pattern = str((err.get("ctx") or {}).get("pattern", ""))
            what, fix = _PATTERNS.get(pattern, (f"a string matching {pattern}", "correct the value"))
            message = f"{_show_value(_value_at(doc, loc))} is not {what}; rule: {path} is {what}; fix: {fix}"
            problems.append(Problem(path, message, "shape.pattern"))
        elif etypes[0] in ("too_short", "too_long", "string_too_long"):
            ctx = errs[0].get("ctx") or {}
            value = _value_at(doc, loc)
            if etypes[0] == "too_short":
                bound, fix = f"at least {ctx.get('min_length')}", "add one"
            else:
                bound, fix = f"at most {ctx.get('max_length')}", "shorten it"
            unit = "characters" if etypes[0] == "string_too_long" else "items"
            if bound.endswith(" 1"):
                unit = unit.removesuffix("s")
            count = len(value) if hasattr(value, "__len__") else "?"
            message = f"{_show_value(value)} has {count} {unit}; rule: {path} has {bound} {unit}; fix: {fix}"
            problems.append(Problem(path, message, f"shape.{etypes[0]}"))
        elif "string_type" in etypes and (allowed := choices_at(kind, path)):
            # A field whose rule takes a few names: "quote it" would only trade this error for the rule's.
            listed = ", ".join(allowed)
            message = (
                f"{_show_value(_value_at(doc, loc))} is not allowed; rule: {path} is one of: {listed}; "
                f"fix: use one of: {listed}"
            )
            problems.append(Problem(path, message, "shape.enum"))
        else:
            value = _value_at(doc, loc)
            known = [_EXPECTED[t] for t in etypes if t in _EXPECTED]
            expected = " or ".join(dict.fromkeys(e for e, _ in known)) or f"a valid {path} value"
            fix = known[0][1] if len(known) == 1 else ("correct the value" if not known else f"write {expected}")
            message = f"{_show_value(value)} is not {expected}; rule: {path} is {expected}; fix: {fix}"
            problems.append(Problem(path, message, f"shape.{etypes[0]}"))
    return problems


def parse_resource(doc: dict[str, Any]) -> tuple[AnyResource | None, list[Problem]]:
    """Shape only: the typed resource, or the problems that stop it being one."""
    resource, problems, _ = _parse(doc)
    return (resource if not problems else None), problems


def _parse(doc: dict[str, Any]) -> tuple[AnyResource | None, list[Problem], list[str]]:
    """The shape problems, and the resource as far as it parses: the fields that did not (their paths are
    returned too) hold their defaults, so the rules about the other fields can still be judged."""
    kind = doc.get("kind")
    api_version = doc.get("apiVersion")
    if not isinstance(kind, str) or kind not in KINDS:  # a list or mapping is no kind (and not hashable)
        wrong_kind = Problem(
            "kind",
            f"{kind!r} is not a kind this operator manages; "
            "rule: kind is BrokerGroup, ControllerGroup, Topic, ConsumerGroup, Proxy or User (or a v1 Secret they "
            "name); "
            "fix: set kind, or remove the document",
            "shape.kind",
        )
        return None, [wrong_kind], []
    problems: list[Problem] = []
    if api_version != API_GROUP_VERSION:
        problems.append(
            Problem(
                "apiVersion",
                f"{api_version!r} is not served; rule: apiVersion is {API_GROUP_VERSION}; "
                f"fix: set apiVersion: {API_GROUP_VERSION}",
                "shape.apiVersion",
            )
        )
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        problems.append(
            Problem(
                "metadata.name",
                "is required; rule: every resource has a name; fix: set metadata.name",
                "shape.name",
            )
        )
        return None, problems, []
    model = KINDS[str(kind)]
    try:
        return model.model_validate(doc), problems, []
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    problems.extend(_shape_problems(doc, model, errors))
    resource, unparsed = _parse_without(doc, model, errors)
    return resource, problems, unparsed


_MAX_PRUNES = 8  # each round removes fields; a required field removed makes its parent the next to go


def _parse_without(
    doc: dict[str, Any], model: ResourceModel, errors: Sequence[Any]
) -> tuple[AnyResource | None, list[str]]:
    """``doc`` parsed with the fields of ``errors`` removed, and their paths; None if only the whole document
    would have to go. A field inside a list removes the whole list (the indexes would shift)."""
    pruned = copy.deepcopy(doc)
    unparsed: list[str] = []
    for _ in range(_MAX_PRUNES):
        removed: list[tuple[str, ...]] = []
        for err in errors:
            loc, in_list = _field_loc(tuple(err["loc"]))
            if any(loc[: len(done)] == done for done in removed):
                continue  # another error of this round removed it already (two items of one list)
            if err["type"] == "missing" and not in_list:
                loc = loc[:-1]  # a required field is absent: its parent cannot be parsed either
            if not _remove(pruned, loc):
                return None, unparsed  # only the whole document would go
            removed.append(loc)
            unparsed.append(_loc_to_path(loc))
        try:
            resource: AnyResource = model.model_validate(pruned)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            continue
        return resource, unparsed
    return None, unparsed


def _field_loc(loc: tuple[int | str, ...]) -> tuple[tuple[str, ...], bool]:
    """The field of an error's location (without a union member's tag), up to the first list index; and
    whether it was cut there."""
    if len(loc) > 1 and loc[-1] in _UNION_TAGS:
        loc = loc[:-1]
    out: list[str] = []
    for part in loc:
        if isinstance(part, int):
            return tuple(out), True
        out.append(part)
    return tuple(out), False


def _remove(doc: dict[str, Any], loc: Sequence[str]) -> bool:
    """Remove the field at ``loc``; False if there is none (or ``loc`` is the document itself)."""
    if not loc:
        return False
    parent: Any = doc
    for part in loc[:-1]:
        parent = parent.get(part) if isinstance(parent, dict) else None
    if not isinstance(parent, dict) or loc[-1] not in parent:
        return False
    del parent[loc[-1]]
    return True


def parse_secret(doc: dict[str, Any]) -> tuple[SecretDoc | None, list[Problem]]:
    """A v1 Secret's name and decoded ``data`` and ``stringData`` (the latter wins, as on the API server).
    Problems never quote a value."""
    raw_meta = doc.get("metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    name = str(meta.get("name") or "")
    problems: list[Problem] = []
    if doc.get("apiVersion") != "v1":
        problems.append(
            Problem("apiVersion", f"{doc.get('apiVersion')!r} is not a Secret's; rule: a Secret is apiVersion v1; "
                    "fix: set apiVersion: v1", "secret.apiVersion")
        )  # fmt: skip
    if not name:
        problems.append(Problem("metadata.name", "is required; rule: every Secret has a name; fix: set metadata.name",
                                "secret.name"))  # fmt: skip
    data: dict[str, str] = {}
    sections: dict[str, dict[Any, Any]] = {}
    for section in ("data", "stringData"):
        given = doc.get(section) or {}
        sections[section] = given if isinstance(given, dict) else {}
        if not isinstance(given, dict):
            problems.append(Problem(section, f"is not a mapping; rule: a Secret's {section} maps keys to values; "
                                    "fix: write key: value pairs", f"secret.{section}"))  # fmt: skip
    for key, value in sections["data"].items():
        try:
            data[str(key)] = base64.b64decode(str(value), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            problems.append(
                Problem(f"data.{key}", "is not base64 of UTF-8 text; rule: data values are base64; fix: encode it "
                        "(base64 -w0), or give the plain text under stringData", "secret.data")
            )  # fmt: skip
    for key, value in sections["stringData"].items():
        if not isinstance(value, str):
            problems.append(Problem(f"stringData.{key}", "is not a string; rule: stringData values are strings; "
                                    "fix: quote the value", "secret.stringData"))  # fmt: skip
            continue
        data[str(key)] = value
    if problems:
        return None, problems
    return SecretDoc(name, meta.get("namespace"), data), []


def validate_document(doc: dict[str, Any], source: str = "") -> Report:
    if doc.get("kind") == "Secret":
        secret, secret_problems = parse_secret(doc)
        return Report(source=source, errors=secret_problems, secret=secret)
    resource, problems, unparsed = _parse(doc)
    report = Report(source=source, errors=problems, key=document_key(doc))
    if resource is None:
        return report
    broken = check_rules(resource, unread=unparsed)
    # A broken rule about a field the document does not set, that reads a field another broken rule is about,
    # only follows from that field's value (replicas: 0 puts the default inSyncReplicas out of range): the
    # other rule's message is the one to fix.
    bad = {rule.path for rule, _ in broken if rule.path and _is_set(doc, rule.path)}
    for rule, message in broken:
        if rule.path and not _is_set(doc, rule.path):
            causes = bad - {rule.path}
            if any(overlaps(read, cause) for read in rule.reads(message=False) for cause in causes):
                continue
        report.errors.append(Problem(rule.path, message, rule.id))
    if not report.errors:
        report.resource = resource
        if isinstance(resource, BrokerGroup):
            report.warnings.extend(broker_group_warnings(resource))
        elif isinstance(resource, ControllerGroup):
            report.warnings.extend(controller_group_warnings(resource))
        elif isinstance(resource, Topic):
            report.warnings.extend(topic_warnings(resource))
    return report


def _is_set(doc: dict[str, Any], path: str) -> bool:
    cur: Any = doc
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return False
        cur = cur[part]
    return True


def document_key(doc: dict[str, Any]) -> ResourceKey | None:
    """The kind, namespace and name a document of a managed kind gives, whether or not the rest is valid."""
    meta = doc.get("metadata")
    kind = doc.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return None
    namespace = meta.get("namespace")
    return str(kind), (namespace if isinstance(namespace, str) else None), meta["name"]


def resource_key(resource: AnyResource) -> ResourceKey:
    return resource.kind, resource.metadata.namespace, resource.metadata.name


def repeated(keys: Sequence[ResourceKey | None]) -> list[tuple[int, int, ResourceKey]]:
    """(first, again, key) for each key given again, by index. Shared by validate, render and `local up`:
    applied, the later document would replace the earlier; run locally, both would claim the same processes."""
    first: dict[ResourceKey, int] = {}
    found: list[tuple[int, int, ResourceKey]] = []
    for i, key in enumerate(keys):
        if key is None:
            continue
        if key in first:
            found.append((first[key], i, key))
        else:
            first[key] = i
    return found


def given_twice(key: ResourceKey, first: str = "") -> str:
    """The message for a key `repeated` found; `first` names the earlier document, if there is one."""
    kind, namespace, name = key
    where = f" in namespace {namespace}" if namespace else ""
    also = f" (first in {first})" if first else ""
    return (
        f"{kind}/{name}{where} is given twice{also}; rule: kind, namespace and metadata.name name one object, and "
        "a second document would replace the first; fix: keep one of them, or rename the other"
    )


def validate_file(path: str | Path) -> list[Report]:
    docs = load_documents(path)
    reports = []
    for i, doc in enumerate(docs):
        name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
        label = f"{path}#{i + 1}" + (f" {doc.get('kind')}/{name}" if name else "")
        report = validate_document(doc, label)
        report.document = f"{path}#{i + 1}"
        reports.append(report)
    return reports


@dataclass
class ManifestSet:
    """What a set of manifest files says: one report per document, and the lines a user is shown."""

    reports: list[Report]
    errors: list[str]  # `source: problem` lines, cross-references included
    warnings: list[str]

    @property
    def resources(self) -> list[AnyResource]:
        return [r.resource for r in self.reports if r.resource is not None]

    @property
    def secrets(self) -> dict[str, SecretDoc]:
        """The Secrets given with the manifests, by name."""
        return {r.secret.name: r.secret for r in self.reports if r.secret is not None}


def validate_files(paths: Sequence[str | Path], *, together: bool = False) -> ManifestSet:
    """Every document of every file ('-' = stdin), checked alone and against each other. An object given twice
    is refused within a file, and across the files when they are used `together` (`render` prints them as one
    stream); `validate a.yaml b.yaml` may check alternatives (examples/*.yaml name the same groups)."""
    reports: list[Report] = []
    empty: list[str] = []
    for path in paths:
        found = validate_file(path)
        if not found:
            shown = "stdin" if str(path) == "-" else str(path)
            empty.append(
                f"{shown}: holds no resource (empty, or only comments); rule: a manifest holds at least one "
                "BrokerGroup, ControllerGroup, Topic, ConsumerGroup, Proxy or User; fix: add one (see "
                "examples/quickstart.yaml)"
            )
        if not together:
            _refuse_repeats(found)
        reports.extend(found)
    if together:
        _refuse_repeats(reports)
    errors = [*empty, *(r.prefixed(p) for r in reports for p in r.errors)]
    warnings = [r.prefixed(p) for r in reports for p in r.warnings]
    manifests = ManifestSet(reports, errors, warnings)
    document = {id(r.resource): r for r in reports if r.resource is not None}
    cross = validate_cross_references(manifests.resources)
    # A proxy against the brokers of its cluster, a User against the groups it is placed on: within one file, or
    # across them when they are used together (examples/*.yaml are alternatives that name the same cluster).
    by_file: dict[str, list[AnyResource]] = {}
    for r in reports:
        if r.resource is not None:
            by_file.setdefault("" if together else r.document.rsplit("#", 1)[0], []).append(r.resource)
    for resources in by_file.values():
        cross.extend(proxy_references(resources))
        cross.extend(user_references(resources))
    for resource, problem in cross:
        owner = document.get(id(resource))
        errors.append(owner.prefixed(problem) if owner is not None else str(problem))
    return manifests


def _refuse_repeats(reports: Sequence[Report]) -> None:
    for first, again, key in repeated([r.key for r in reports]):
        reports[again].errors.append(Problem("metadata.name", given_twice(key, reports[first].document), "xref.unique"))
        reports[again].resource = None


def validate_cross_references(resources: Sequence[AnyResource]) -> list[tuple[AnyResource, Problem]]:
    """Within one set of manifests: a controllerRef that names a ControllerGroup in the set, if any is given; a
    Topic's or ConsumerGroup's brokerGroups/clusterName that match a BrokerGroup of the set, if any is given.
    Each problem comes with the resource it is about, so that it is reported with that resource's document."""
    controllers = {(r.metadata.namespace, r.metadata.name) for r in resources if isinstance(r, ControllerGroup)}
    problems: list[tuple[AnyResource, Problem]] = _placement_references(resources)
    if not controllers:
        return problems  # the ControllerGroup may live in the cluster already
    by_key = {(r.metadata.namespace, r.metadata.name): r for r in resources if isinstance(r, ControllerGroup)}
    for r in resources:
        if isinstance(r, BrokerGroup) and r.spec.controller_ref is not None:
            key = (r.metadata.namespace, r.spec.controller_ref.name)
            cg = by_key.get(key)
            if cg is not None and cg.spec.tls.enabled != r.spec.tls.enabled:
                problems.append(
                    (
                        r,
                        Problem(
                            "spec.tls.enabled",
                            f"BrokerGroup/{r.metadata.name}: tls.enabled is {str(r.spec.tls.enabled).lower()} "
                            f"and ControllerGroup/{cg.metadata.name}'s is {str(cg.spec.tls.enabled).lower()}; rule: "
                            "a broker speaks TLS to its name servers and controllers exactly when it serves TLS "
                            "(one JVM-wide switch, tls.enable); fix: set spec.tls.enabled the same on both",
                            "xref.tls",
                        ),
                    )
                )
            if cg is not None and cg.spec.tls.enabled and cg.spec.tls.client_auth != r.spec.tls.client_auth:
                problems.append((r, Problem("spec.tls.clientAuth", client_auth_mismatch(r, cg), "xref.tls")))
            if key not in controllers:
                names = ", ".join(sorted(n for _, n in controllers))
                problems.append(
                    (
                        r,
                        Problem(
                            "spec.controllerRef.name",
                            f"BrokerGroup/{r.metadata.name}: '{r.spec.controller_ref.name}' is not a "
                            f"ControllerGroup in these manifests ({names}); rule: controllerRef names a "
                            f"ControllerGroup in the same namespace; fix: use one of: {names}",
                            "xref.controllerRef",
                        ),
                    )
                )
    return problems


def client_auth_mismatch(bg: BrokerGroup, cg: ControllerGroup) -> str:
    """The one line for a BrokerGroup whose spec.tls.clientAuth differs from its ControllerGroup's (both TLS):
    a broker presents a certificate to its controllers, and they to it, exactly when both require them."""
    return (
        f"BrokerGroup/{bg.metadata.name}: tls.clientAuth is {bg.spec.tls.client_auth} and ControllerGroup/"
        f"{cg.metadata.name}'s is {cg.spec.tls.client_auth}; rule: mutual TLS is one setting for a ControllerGroup "
        "and its BrokerGroups (each side both requires and presents certificates); fix: set spec.tls.clientAuth "
        "the same on both"
    )


def proxy_references(resources: Sequence[AnyResource]) -> list[tuple[AnyResource, Problem]]:
    """A Proxy and the BrokerGroups of its cluster (same namespace and clusterName) in the set: the proxy
    authenticates clients exactly when the brokers do (unsigned, its requests would be refused; signing as the admin
    for unauthenticated clients, it would open the cluster), and speaks TLS exactly when they and its ControllerGroup
    do (`proxy_tls_mismatch`)."""
    problems: list[tuple[AnyResource, Problem]] = []
    for proxy in (r for r in resources if isinstance(r, Proxy)):
        brokers = [
            r
            for r in resources
            if isinstance(r, BrokerGroup)
            and r.metadata.namespace == proxy.metadata.namespace
            and r.spec.cluster_name == proxy.spec.cluster_name
        ]
        with_auth = [b for b in brokers if b.spec.auth.enabled]
        admins = sorted(str(b.spec.auth.admin_secret) for b in with_auth)
        auth = proxy.spec.auth
        cluster = proxy.spec.cluster_name
        found: list[tuple[str, str, str]] = []  # (field, text, code)
        if with_auth and not auth.enabled:
            found.append((
                "spec.auth.enabled",
                f"auth.enabled is false and BrokerGroup/{with_auth[0].metadata.name} of cluster {cluster} has "
                "spec.auth.enabled; rule: a proxy in front of brokers with ACL 2.0 authenticates its clients and "
                f"signs as their admin; fix: set spec.auth.enabled: true and spec.auth.adminSecret: "
                f"{with_auth[0].spec.auth.admin_secret or '<the admin Secret>'} on the Proxy",
                "xref.proxy.auth",
            ))  # fmt: skip
        if auth.enabled and brokers and not with_auth:
            found.append((
                "spec.auth.enabled",
                f"auth.enabled is true and no BrokerGroup of cluster {cluster} "
                f"({', '.join(b.metadata.name for b in brokers)}) has spec.auth.enabled; rule: the proxy reads its "
                "users from the brokers' ACL 2.0 store; fix: enable spec.auth on the BrokerGroups, or set "
                "auth.enabled: false on the Proxy",
                "xref.proxy.auth",
            ))  # fmt: skip
        if auth.enabled and with_auth and auth.admin_secret not in admins:
            found.append((
                "spec.auth.adminSecret",
                f"auth.adminSecret is {auth.admin_secret!r} and the BrokerGroups of cluster {cluster} name "
                f"{', '.join(repr(a) for a in sorted(set(admins)))}; rule: the proxies sign as the brokers' admin (a "
                f"Super user of their store); fix: use {admins[0]}",
                "xref.proxy.auth",
            ))  # fmt: skip
        controller = _proxy_controller_group(proxy, resources)
        tls_mismatch = proxy_tls_mismatch(proxy, brokers, controller)
        if tls_mismatch is not None:
            field = "spec.tls.clientAuth" if tls_mismatch.startswith("tls.clientAuth") else "spec.tls.enabled"
            found.append((field, tls_mismatch, "xref.proxy.tls"))
        problems.extend((proxy, Problem(f, f"Proxy/{proxy.metadata.name}: {text}", code)) for f, text, code in found)
    return problems


def _proxy_controller_group(proxy: Proxy, resources: Sequence[AnyResource]) -> ControllerGroup | None:
    """The ControllerGroup a Proxy reads routes from, when it is in the set (not with spec.nameServers)."""
    if proxy.spec.controller_ref is None or proxy.spec.name_servers:
        return None
    for r in resources:
        if (
            isinstance(r, ControllerGroup)
            and r.metadata.namespace == proxy.metadata.namespace
            and r.metadata.name == proxy.spec.controller_ref.name
        ):
            return r
    return None


def proxy_tls_mismatch(proxy: Proxy, brokers: Sequence[BrokerGroup], controller: ControllerGroup | None) -> str | None:
    """Why a Proxy's spec.tls.enabled disagrees with what it connects to, or None: ``brokers`` are the
    BrokerGroups of its cluster (same namespace and clusterName), ``controller`` its ControllerGroup when known.
    One JVM-wide switch (tls.enable) makes the proxy's own connections to the name servers and brokers TLS, and
    they refuse the other kind (enforcing), so the proxy serves TLS exactly when they do. Shared by `validate`,
    `local up` and the Kubernetes reconciler (which reports it in the Proxy's status)."""
    wanted = proxy.spec.tls.enabled
    peers: list[BrokerGroup | ControllerGroup] = [*brokers, *([controller] if controller is not None else [])]
    other = next((g for g in peers if g.spec.tls.enabled != wanted), None)
    if other is None:
        mutual = proxy.spec.tls.client_auth
        differs = next((g for g in peers if wanted and g.spec.tls.client_auth != mutual), None)
        if differs is None:
            return None
        return (
            f"tls.clientAuth is {mutual} and {differs.kind}/{differs.metadata.name} (cluster "
            f"{proxy.spec.cluster_name}) has tls.clientAuth {differs.spec.tls.client_auth}; rule: a proxy presents "
            "its certificate to its name servers and brokers exactly when they require one (its gRPC clients need "
            f"none); fix: set spec.tls.clientAuth: {differs.spec.tls.client_auth} on the Proxy"
        )

    def said(value: bool) -> str:
        return "true" if value else "false"

    return (
        f"tls.enabled is {said(wanted)} and {other.kind}/{other.metadata.name} "
        f"(cluster {proxy.spec.cluster_name}) has tls.enabled {said(not wanted)}; rule: a proxy speaks TLS to its "
        "name servers and brokers exactly when it serves TLS (one JVM-wide switch, tls.enable), so it matches "
        f"them; fix: set spec.tls.enabled: {said(not wanted)} on the Proxy"
    )


def _placement_references(resources: Sequence[AnyResource]) -> list[tuple[AnyResource, Problem]]:
    brokers = [r for r in resources if isinstance(r, BrokerGroup)]
    if not brokers:
        return []  # the BrokerGroups may live in the cluster already
    names = {(b.metadata.namespace, b.metadata.name) for b in brokers}
    clusters = {(b.metadata.namespace, b.spec.cluster_name) for b in brokers}
    known = ", ".join(sorted(b.metadata.name for b in brokers))
    problems: list[tuple[AnyResource, Problem]] = []
    for r in resources:
        if not isinstance(r, Topic | ConsumerGroup | User):
            continue
        ns = r.metadata.namespace
        for group in r.spec.broker_groups:
            if (ns, group) not in names:
                problems.append(
                    (
                        r,
                        Problem(
                            "spec.brokerGroups",
                            f"{r.kind}/{r.metadata.name}: '{group}' is not a BrokerGroup in these manifests ({known}); "
                            f"rule: brokerGroups names BrokerGroups in the same namespace; fix: use one of: {known}",
                            "xref.brokerGroups",
                        ),
                    )
                )
        if r.spec.cluster_name is not None and (ns, r.spec.cluster_name) not in clusters:
            have = ", ".join(sorted({c for _, c in clusters}))
            problems.append(
                (
                    r,
                    Problem(
                        "spec.clusterName",
                        f"{r.kind}/{r.metadata.name}: no BrokerGroup in these manifests has clusterName "
                        f"'{r.spec.cluster_name}'; rule: clusterName selects BrokerGroups by spec.clusterName; "
                        f"fix: use one of: {have}",
                        "xref.clusterName",
                    ),
                )
            )
    return problems


def user_references(resources: Sequence[AnyResource]) -> list[tuple[AnyResource, Problem]]:
    """A User placed on a BrokerGroup of the set: that group has spec.auth on (the user could not be checked by it
    otherwise), declares no inline user of the same name, and no other User of the set gives it the same name.
    Checked within one set, as `proxy_references` is: alternatives in separate files (examples/*.yaml) name the
    same groups, and a User of one must not be held to another's group of that name."""
    brokers = [r for r in resources if isinstance(r, BrokerGroup)]
    problems: list[tuple[AnyResource, Problem]] = []
    claimed: dict[tuple[str | None, str, str], str] = {}  # (namespace, group, user name) -> the User that has it
    for user in sorted((r for r in resources if isinstance(r, User)), key=lambda u: u.metadata.name):
        ns = user.metadata.namespace
        for bg in brokers:
            if not user.is_placed_on(bg):
                continue
            where = f"User/{user.metadata.name}: BrokerGroup '{bg.metadata.name}'"
            if not bg.spec.auth.enabled:
                problems.append((user, Problem(
                    "spec.brokerGroups",
                    f"{where} has spec.auth.enabled false; rule: users live on groups with ACL 2.0 on; fix: set "
                    f"spec.auth.enabled (and adminSecret) on {bg.metadata.name}, or place the User elsewhere",
                    "xref.user.auth",
                )))  # fmt: skip
            if any(u.name == user.user_name for u in bg.spec.auth.users):
                problems.append((user, Problem(
                    "spec.userName",
                    f"{where} declares user '{user.user_name}' in spec.auth.users too; rule: a user name has one "
                    "source per group; fix: remove it from the BrokerGroup's spec.auth.users, or rename the User",
                    "xref.user.unique",
                )))  # fmt: skip
            key = (ns, bg.metadata.name, user.user_name)
            if key in claimed:
                problems.append((user, Problem(
                    "spec.userName",
                    f"{where} gets user '{user.user_name}' from User/{claimed[key]} too; rule: a user name has one "
                    "source per group; fix: set another spec.userName",
                    "xref.user.unique",
                )))  # fmt: skip
            claimed.setdefault(key, user.metadata.name)
    return problems


# --- warnings: legal but probably not what the user meant ---

AUTO_CREATE_WARNING = (
    "is true: a topic created by a send lives only in the master's topic table; after a failover the new "
    "master does not have it and its acknowledged messages cannot be read (TOPIC_NOT_EXIST) until the topic "
    "is created again. The operator re-asserts every topic it has seen on a master, but a topic created "
    "between two observations can still be missed; declare Topic resources instead"
)


def topic_warnings(topic: Topic) -> list[Problem]:
    s = topic.spec
    w: list[Problem] = []
    if s.read_queue_nums < s.write_queue_nums:
        w.append(
            Problem(
                "spec.readQueueNums",
                f"is {s.read_queue_nums}, fewer than writeQueueNums ({s.write_queue_nums}): messages written to "
                f"queues {s.read_queue_nums}..{s.write_queue_nums - 1} are never read; set readQueueNums >= "
                "writeQueueNums (shrink writeQueueNums first, readQueueNums once those queues are drained)",
                "warn.unread-queues",
            )
        )
    return w


# Why a quorum field is ignored when the mode's broker does not read its key (MODES): key → (why, and in
# controller mode also).
_IGNORED_BECAUSE: dict[str, tuple[str, str]] = {
    AUTO_IN_SYNC_REPLICAS: (
        "enableAutoInSyncReplicas only works with slaveActingMaster",
        " (controller mode degrades only through allAckInSyncStateSet)",
    ),
    HA_MAX_GAP_NOT_IN_SYNC: (
        "haMaxGapNotInSync is read only by the slave-acting-master pre-check",
        " (the SyncStateSet decides in controller mode)",
    ),
    ALL_ACK_IN_SYNC_STATE_SET: ("there is no SyncStateSet outside controller mode", ""),
    MIN_IN_SYNC_REPLICAS: ("only slaveActingMaster and controller modes check it", ""),
    IN_SYNC_REPLICAS: ("an ASYNC_MASTER never waits for slave acks", ""),
}


def _no_cpu_request(resources: ResourceRequirements, role: str, example: str) -> list[Problem]:
    """On Kubernetes a container's CPU request is its CPU weight under contention (cgroup cpu.shares): without one
    the group's pods get the lowest weight (a pod with no request at all is BestEffort), and any neighbour with a
    request starves them (docs/fencing.md, "Starved, not hung")."""
    if "cpu" in resources.requests:
        return []
    problem = Problem(
        "spec.resources.requests.cpu",
        f"is unset: on Kubernetes the {role} pods get the lowest CPU weight, and any neighbour that requests CPU "
        f"starves them (measured: a master silent for 24 s beside pods requesting 100m each); set it, e.g. "
        f"resources: {{requests: {{cpu: {example}}}}} (ignored by the local platform)",
        "warn.no-cpu-request",
    )
    return [problem]


def broker_group_warnings(bg: BrokerGroup) -> list[Problem]:
    s = bg.spec
    q = s.quorum
    mode = HAMode(s.ha_mode)
    w: list[Problem] = []

    def ignored(path: str, why: str) -> None:
        w.append(Problem(path, f"ignored in haMode {mode.value}: {why}", "warn.ignored"))

    set_in_spec = {
        AUTO_IN_SYNC_REPLICAS: bool(q.auto_degrade),
        HA_MAX_GAP_NOT_IN_SYNC: q.max_gap_not_in_sync is not None,
        ALL_ACK_IN_SYNC_STATE_SET: bool(q.all_ack_in_sync_state_set),
        MIN_IN_SYNC_REPLICAS: q.min_in_sync_replicas is not None,
        IN_SYNC_REPLICAS: q.in_sync_replicas is not None,
    }
    for key, (why, in_controller_mode) in _IGNORED_BECAUSE.items():
        if set_in_spec[key] and not MODES[mode].reads(key):
            ignored(QUORUM_FIELDS[key], why + (in_controller_mode if mode is HAMode.CONTROLLER else ""))
    if mode is HAMode.CONTROLLER and q.all_ack_in_sync_state_set and q.in_sync_replicas is not None:
        w.append(
            Problem(
                "spec.quorum.inSyncReplicas",
                "ignored because allAckInSyncStateSet is true: every SyncStateSet member must ack instead",
                "warn.ignored",
            )
        )
    if (
        mode is HAMode.SLAVE_ACTING_MASTER
        and q.auto_degrade
        and q.min_in_sync_replicas is not None
        and q.in_sync_replicas is not None
        and q.min_in_sync_replicas == q.in_sync_replicas
    ):
        w.append(
            Problem(
                "spec.quorum.autoDegrade",
                "has no effect: minInSyncReplicas equals inSyncReplicas, so the ack count cannot degrade",
                "warn.noop",
            )
        )
    if waits_for_in_sync_replicas(s) and in_sync_replicas(s) == 1 and s.replicas > 1:
        w.append(
            Problem(
                "spec.quorum.inSyncReplicas",
                "is 1: a put is acknowledged by the master alone and "
                "replication is asynchronous (RocketMQ returns PUT_OK before any slave has the message); "
                "set it to 2 or more for quorum writes",
                "warn.async-trap",
            )
        )
    acks = in_sync_replicas(s)
    if mode is HAMode.CONTROLLER and waits_for_in_sync_replicas(s) and 2 <= acks < s.replicas:
        w.append(
            Problem(
                "spec.quorum.inSyncReplicas",
                f"is {acks} of {s.replicas} replicas without allAckInSyncStateSet: a master that crashes can lose "
                "acknowledged messages (any slave's ack counts, and the controller elects a SyncStateSet member "
                "by offsets reported up to 1 s earlier, possibly one without them); for no loss set "
                f"quorum.allAckInSyncStateSet: true (RocketMQ's own controller quick start) or inSyncReplicas: "
                f"{s.replicas} (docs/fencing.md, 'A SIGKILL lost an acknowledged message')",
                "warn.crash-loss",
            )
        )
    if s.slave_read.memory_ratio is not None and not s.slave_read.enabled:
        ignored("spec.slaveRead.memoryRatio", "slaveRead.enabled is false, so consumers are never sent to slaves")
    if s.failover.allow_unclean:
        if mode is HAMode.CONTROLLER:
            w.append(
                Problem(
                    "spec.failover.allowUnclean",
                    "is true: a replica outside the SyncStateSet may be made "
                    "master and acknowledged messages can be lost",
                    "warn.unclean",
                )
            )
        else:
            ignored("spec.failover.allowUnclean", "the operator elects only in controller mode")
    if s.replicas == 1:
        w.append(Problem("spec.replicas", "is 1: there is no replica to fail over to", "warn.single"))
    if s.auto_create.topics:
        w.append(Problem("spec.autoCreate.topics", AUTO_CREATE_WARNING, "warn.auto-create"))
    if s.auto_create.subscription_groups:
        w.append(
            Problem(
                "spec.autoCreate.subscriptionGroups",
                "is true: a consumer group created by a consumer lives only in the master's group table and is "
                "missing on the next master; declare ConsumerGroup resources instead",
                "warn.auto-create",
            )
        )
    if mode is not HAMode.CONTROLLER and s.upgrade.strategy == "switchover":
        w.append(
            Problem(
                "spec.upgrade.strategy",
                f"switchover needs controller elections; in haMode {mode.value} "
                "an upgrade restarts the master in place (writes pause)",
                "warn.switchover",
            )
        )
    w.extend(_no_cpu_request(s.resources, "broker", "250m"))
    return w


def controller_group_warnings(cg: ControllerGroup) -> list[Problem]:
    w: list[Problem] = []
    if cg.spec.name_servers.replicas is not None and not cg.spec.standalone:
        w.append(
            Problem(
                "spec.nameServers.replicas",
                "ignored: name servers run inside the controllers unless standalone is true",
                "warn.ignored",
            )
        )
    if cg.spec.replicas == 1:
        w.append(
            Problem(
                "spec.replicas",
                "is 1: no controller failover (brokers keep serving while it is down, but no master can be elected)",
                "warn.single",
            )
        )
    w.extend(_no_cpu_request(cg.spec.resources, "controller", "100m"))
    return w
