"""Every validation rule, its path and its message (table in tests/validation_cases.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_operator.api.rules import (
    BROKER_GROUP_RULES,
    CONSUMER_GROUP_RULES,
    CONTROLLER_GROUP_RULES,
    TOPIC_RULES,
)
from rocketmq_operator.api.validation import validate_document
from validation_cases import CASES, SHAPE_CASES, Case


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case) -> None:
    report = validate_document(case.doc)
    if case.rule_id is None:
        assert report.ok, [str(p) for p in report.errors]
        return
    broken = {p.rule_id: p for p in report.errors}
    assert case.rule_id in broken, [str(p) for p in report.errors]
    problem = broken[case.rule_id]
    assert problem.path == case.path
    assert case.contains in problem.message
    # Every message names the rule and the fix.
    assert "; rule: " in problem.message and "; fix: " in problem.message


def test_every_rule_has_a_case() -> None:
    covered = {c.rule_id for c in CASES}
    missing = [
        r.id
        for r in (*BROKER_GROUP_RULES, *CONTROLLER_GROUP_RULES, *TOPIC_RULES, *CONSUMER_GROUP_RULES)
        if r.id not in covered
    ]
    # Quantity rules share one implementation; one case per kind of quantity is enough.
    missing = [
        m
        for m in missing
        if not m.endswith(
            (
                "jvm.directMemory",
                "ControllerGroup.storage.size",
                "ControllerGroup.jvm.heap",
                "ControllerGroup.version",
                "ControllerGroup.name.length",
            )
        )
    ]
    assert not missing


def test_typo_gets_did_you_mean() -> None:
    doc = {
        "apiVersion": "rocketmq-operator.dev/v1alpha1",
        "kind": "BrokerGroup",
        "metadata": {"name": "b"},
        "spec": {"controllerRef": {"name": "c"}, "brokerConfig": {"flushDiskTypo": "SYNC_FLUSH"}},
    }
    (problem,) = validate_document(doc).errors
    assert "did you mean 'flushDiskType'?" in problem.message


# pydantic's own wording, which must never reach a user (`rocketmq-operator validate`, the Ready condition).
PYDANTIC_WORDING = (
    "Input should be",
    "Extra inputs are not permitted",
    "Field required",
    "Value error",
    "type=",
    "errors.pydantic.dev",
    "For further information",
)


@pytest.mark.parametrize("case", SHAPE_CASES, ids=[c.id for c in SHAPE_CASES])
def test_shape_case(case: Case) -> None:
    report = validate_document(case.doc)
    assert not report.ok
    for problem in report.errors:
        assert not any(w in problem.message for w in PYDANTIC_WORDING), str(problem)
    found = [p for p in report.errors if p.path == case.path]
    assert found, [str(p) for p in report.errors]
    (problem,) = found
    assert problem.rule_id == case.rule_id
    assert case.contains in problem.message, problem.message
    assert "; rule: " in problem.message and "; fix: " in problem.message, problem.message


def test_validate_prints_shape_problems_one_line_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`rocketmq-operator validate FILE`: `FILE#N Kind/name: field: value ...; rule: ...; fix: ...`, one line per
    problem, in our words."""
    import re

    import yaml

    from rocketmq_operator.cli import main

    manifest = tmp_path / "bad.yaml"
    # Each document its own name: the same kind and name twice would add a "given twice" line.
    docs = [{**c.doc, "metadata": {"name": f"{c.doc['metadata']['name']}-{i + 1}"}} for i, c in enumerate(SHAPE_CASES)]
    manifest.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    assert main(["validate", str(manifest)]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(SHAPE_CASES)
    shape = re.compile(rf"^{re.escape(str(manifest))}#(\d+) (\w+)/([a-z0-9-]+): (\S+): .+; rule: .+; fix: .+$")
    for line in lines:
        match = shape.match(line)
        assert match, line
        case = SHAPE_CASES[int(match.group(1)) - 1]
        name = f"{case.doc['metadata']['name']}-{match.group(1)}"
        assert (match.group(2), match.group(3)) == (case.doc["kind"], name)
        assert match.group(4) == case.path and case.contains in line, line
        assert not any(w in line for w in PYDANTIC_WORDING), line


def test_owned_key_names_spec_field() -> None:
    doc = {
        "apiVersion": "rocketmq-operator.dev/v1alpha1",
        "kind": "BrokerGroup",
        "metadata": {"name": "b"},
        "spec": {"controllerRef": {"name": "c"}, "brokerConfig": {"haMaxGapNotInSync": 1}},
    }
    (problem,) = validate_document(doc).errors
    assert "spec.quorum.maxGapNotInSync" in problem.message


@pytest.mark.parametrize(
    ("spec_patch", "path", "text"),
    [
        ({"replicas": "three"}, "spec.replicas", "'three' is not a whole number"),
        ({"quorum": {"inSyncReplica": 2}}, "spec.quorum.inSyncReplica", "unknown field 'inSyncReplica'"),
        ({"storage": "10Gi"}, "spec.storage", "is not a mapping"),
        (
            {"brokerConfig": {"messageIndexEnable": False}},
            "spec.brokerConfig",
            'quote it, e.g. messageIndexEnable: "false"',
        ),
    ],
)
def test_shape_errors_name_the_field(spec_patch: dict[str, object], path: str, text: str) -> None:
    doc = {
        "apiVersion": "rocketmq-operator.dev/v1alpha1",
        "kind": "BrokerGroup",
        "metadata": {"name": "b"},
        "spec": {"controllerRef": {"name": "c"}, **spec_patch},
    }
    report = validate_document(doc)
    assert not report.ok
    assert any(p.path == path and text in p.message for p in report.errors), [str(p) for p in report.errors]


def test_wrong_kind_and_api_version() -> None:
    assert validate_document({"kind": "Pod", "metadata": {"name": "x"}}).errors[0].path == "kind"
    report = validate_document(
        {
            "apiVersion": "v1",
            "kind": "BrokerGroup",
            "metadata": {"name": "x"},
            "spec": {"controllerRef": {"name": "c"}},
        }
    )
    assert report.errors[0].path == "apiVersion"


WARNING_CASES = [
    ({"haMode": "controller", "quorum": {"autoDegrade": True}}, "spec.quorum.autoDegrade", "ignored"),
    (
        {"haMode": "controller", "quorum": {"maxGapNotInSync": "1Gi"}},
        "spec.quorum.maxGapNotInSync",
        "ignored",
    ),
    (
        {"haMode": "sync", "nameServers": ["ns:9876"], "quorum": {"allAckInSyncStateSet": True}},
        "spec.quorum.allAckInSyncStateSet",
        "ignored",
    ),
    ({"quorum": {"inSyncReplicas": 1, "minInSyncReplicas": 1}}, "spec.quorum.inSyncReplicas", "asynchronous"),
    (
        {"haMode": "sync", "nameServers": ["ns:9876"], "quorum": {"inSyncReplicas": 1}},
        "spec.quorum.inSyncReplicas",
        "asynchronous",
    ),
    (
        {"quorum": {"allAckInSyncStateSet": True, "inSyncReplicas": 2}},
        "spec.quorum.inSyncReplicas",
        "allAckInSyncStateSet",
    ),
    (
        {"haMode": "async", "nameServers": ["ns:9876"], "quorum": {"inSyncReplicas": 2}},
        "spec.quorum.inSyncReplicas",
        "ASYNC_MASTER",
    ),
    ({"slaveRead": {"memoryRatio": 10}}, "spec.slaveRead.memoryRatio", "enabled is false"),
    ({"failover": {"allowUnclean": True}}, "spec.failover.allowUnclean", "lost"),
    ({"replicas": 3, "quorum": {"inSyncReplicas": 2}}, "spec.quorum.inSyncReplicas", "crashes can lose"),
    ({"replicas": 3}, "spec.quorum.inSyncReplicas", "is 2 of 3 replicas without allAckInSyncStateSet"),
    ({"replicas": 5, "quorum": {"inSyncReplicas": 3}}, "spec.quorum.inSyncReplicas", "inSyncReplicas: 5"),
    ({"resources": {"requests": {"memory": "2Gi"}}}, "spec.resources.requests.cpu", "the lowest CPU weight"),
]


@pytest.mark.parametrize(
    ("kind", "spec", "warned"),
    [
        ("BrokerGroup", {"controllerRef": {"name": "c"}}, True),
        ("BrokerGroup", {"controllerRef": {"name": "c"}, "resources": {"requests": {"cpu": "250m"}}}, False),
        ("ControllerGroup", {}, True),
        ("ControllerGroup", {"resources": {"requests": {"cpu": 1}}}, False),
    ],
)
def test_a_group_without_a_cpu_request_is_warned(kind: str, spec: dict[str, object], warned: bool) -> None:
    """Kubernetes weighs a container's CPU by its request: a group without one is starved by any neighbour that has
    one (a live master went silent for 24 s beside pods requesting 100m; docs/fencing.md, "Starved, not hung")."""
    doc = {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": kind, "metadata": {"name": "g"}, "spec": spec}
    report = validate_document(doc)
    assert report.ok, [str(e) for e in report.errors]
    found = [str(w) for w in report.warnings if w.rule_id == "warn.no-cpu-request"]
    assert bool(found) is warned, found
    if warned:
        assert found[0].startswith("spec.resources.requests.cpu: is unset") and "cpu: " in found[0]


@pytest.mark.parametrize(
    "spec_patch",
    [
        {"replicas": 3, "quorum": {"allAckInSyncStateSet": True, "minInSyncReplicas": 2}},
        {"replicas": 3, "quorum": {"inSyncReplicas": 3, "minInSyncReplicas": 2}},
        {"replicas": 2, "quorum": {"inSyncReplicas": 2}},
        {"replicas": 3, "haMode": "sync", "nameServers": ["ns:9876"], "quorum": {"inSyncReplicas": 2}},
    ],
)
def test_no_crash_loss_warning_when_every_elected_replica_has_every_ack(spec_patch: dict[str, object]) -> None:
    spec: dict[str, object] = {"controllerRef": {"name": "c"}, **spec_patch}
    if spec.get("haMode") == "sync":
        del spec["controllerRef"]
    doc = {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "BrokerGroup", "metadata": {"name": "b"}}
    report = validate_document({**doc, "spec": spec})
    assert report.ok, [str(e) for e in report.errors]
    assert not [w for w in report.warnings if w.rule_id == "warn.crash-loss"], [str(w) for w in report.warnings]


@pytest.mark.parametrize(("spec_patch", "path", "text"), WARNING_CASES)
def test_warnings(spec_patch: dict[str, object], path: str, text: str) -> None:
    spec: dict[str, object] = {"controllerRef": {"name": "c"}, **spec_patch}
    doc = {
        "apiVersion": "rocketmq-operator.dev/v1alpha1",
        "kind": "BrokerGroup",
        "metadata": {"name": "b"},
        "spec": spec,
    }
    report = validate_document(doc)
    assert report.ok, [str(e) for e in report.errors]
    assert any(w.path == path and text in w.message for w in report.warnings), [str(w) for w in report.warnings]


def test_no_warning_for_all_ack_with_insync_1() -> None:
    doc = {
        "apiVersion": "rocketmq-operator.dev/v1alpha1",
        "kind": "BrokerGroup",
        "metadata": {"name": "b"},
        "spec": {"controllerRef": {"name": "c"}, "quorum": {"allAckInSyncStateSet": True}},
    }
    report = validate_document(doc)
    assert not [w for w in report.warnings if "asynchronous" in w.message]


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n---\n"])
def test_a_manifest_without_resources_is_an_error_not_zero_valid(tmp_path: Path, text: str) -> None:
    from rocketmq_operator.api.validation import validate_files

    empty = tmp_path / "empty.yaml"
    empty.write_text(text, encoding="utf-8")
    manifests = validate_files([empty])
    assert manifests.errors == [
        f"{empty}: holds no resource (empty, or only comments); rule: a manifest holds at least one BrokerGroup, "
        "ControllerGroup, Topic, ConsumerGroup, Proxy or User; fix: add one (see examples/quickstart.yaml)"
    ]
