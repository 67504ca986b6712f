"""`bench quorum`'s pure half: cells, manifests, predictions from explain's rules, the cell summary."""

from __future__ import annotations

import pytest

from rocketmq_operator.api.validation import validate_document
from rocketmq_operator.bench.quorum_plan import (
    CONDITIONS,
    MODES,
    CellGroup,
    QuorumBenchError,
    SendOutcome,
    explain_agrees,
    headline,
    manifest,
    plan_groups,
    predicted_statuses,
    quorum_params,
    quorum_svg,
    summarize_cell,
)


def test_every_cell_group_renders_a_valid_manifest() -> None:
    for group in plan_groups((3, 5), MODES, CONDITIONS):
        for doc in manifest(group):
            report = validate_document(doc)
            assert not report.errors, (group, report.errors)


@pytest.mark.parametrize(
    "replicas, modes, conditions, fragment",
    [
        ((3,), ("quorumish",), ("healthy",), "--modes: 'quorumish' is not a mode"),
        ((3,), ("quorum",), ("hot",), "--conditions: 'hot' is not a condition"),
        ((2,), ("quorum",), ("healthy",), "--replicas: 2 leaves no slave"),
        ((), ("quorum",), ("healthy",), "at least one value"),
    ],
)
def test_options_that_name_no_cell_are_refused(
    replicas: tuple[int, ...], modes: tuple[str, ...], conditions: tuple[str, ...], fragment: str
) -> None:
    with pytest.raises(QuorumBenchError, match=fragment.replace("(", r"\(")):
        plan_groups(replicas, modes, conditions)


# (replicas, mode) -> condition -> statuses RocketMQ's rules allow
EXPECTED = {
    (3, "async"): {"healthy": ["PUT_OK"], "stalled": ["PUT_OK"], "slow": ["PUT_OK"]},
    (3, "allSync"): {
        "healthy": ["PUT_OK"],
        "stalled": ["FLUSH_SLAVE_TIMEOUT"],
        "slow": ["FLUSH_SLAVE_TIMEOUT", "PUT_OK"],
    },
    (3, "quorum"): {"healthy": ["PUT_OK"], "stalled": ["PUT_OK"], "slow": ["PUT_OK"]},
    (5, "quorum"): {"healthy": ["PUT_OK"], "stalled": ["PUT_OK"], "slow": ["PUT_OK"]},
    (5, "autoDegrade"): {
        "healthy": ["PUT_OK"],
        "stalled": ["FLUSH_SLAVE_TIMEOUT", "PUT_OK"],
        "slow": ["FLUSH_SLAVE_TIMEOUT", "PUT_OK"],
    },
    (3, "allAck"): {
        "healthy": ["PUT_OK"],
        "stalled": ["FLUSH_SLAVE_TIMEOUT", "PUT_OK"],
        "slow": ["FLUSH_SLAVE_TIMEOUT", "PUT_OK"],
    },
}


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_predictions_follow_explains_rules(key: tuple[int, str]) -> None:
    params = quorum_params(CellGroup(*key))
    assert {c: predicted_statuses(params, c) for c in CONDITIONS} == EXPECTED[key]


def test_a_status_outside_the_prediction_disagrees_and_a_client_timeout_never_agrees() -> None:
    assert explain_agrees({"PUT_OK": 10, "FLUSH_SLAVE_TIMEOUT": 0}, ["PUT_OK"])
    assert not explain_agrees({"PUT_OK": 10, "FLUSH_SLAVE_TIMEOUT": 1}, ["PUT_OK"])
    assert not explain_agrees({"timeout": 1}, ["PUT_OK", "FLUSH_SLAVE_TIMEOUT"])


def test_a_cell_summarizes_latency_throughput_and_statuses() -> None:
    group = CellGroup(3, "allSync")
    sends = [SendOutcome("PUT_OK", float(ms), True) for ms in range(1, 101)]
    sends += [SendOutcome("FLUSH_SLAVE_TIMEOUT", 3000.0, True), SendOutcome("timeout", 5000.0, False)]
    cell = summarize_cell(group, "slow", quorum_params(group), sends, 10.0)
    assert cell["sends"] == 102 and cell["msgs_per_s"] == 10.1
    assert cell["statuses"] == {"FLUSH_SLAVE_TIMEOUT": 1, "PUT_OK": 100, "timeout": 1}
    assert cell["p50_ms"] == 51.0 and cell["p99_ms"] == 3000.0 and cell["p999_ms"] == 5000.0
    assert cell["explain_agrees"] is False  # the client timeout


def test_the_headline_is_the_stalled_over_healthy_p99_ratio() -> None:
    cells = [
        {"replicas": 3, "mode": "quorum", "condition": "healthy", "p99_ms": 10.0},
        {"replicas": 3, "mode": "quorum", "condition": "stalled", "p99_ms": 12.0},
        {"replicas": 3, "mode": "allSync", "condition": "healthy", "p99_ms": 10.0},
        {"replicas": 3, "mode": "allSync", "condition": "stalled", "p99_ms": 3000.0},
    ]
    assert headline(cells) == [
        {"replicas": 3, "quorum_stalled_over_healthy_p99": 1.2, "allSync_stalled_over_healthy_p99": 300.0}
    ]
    svg = quorum_svg([{**c, "p50_ms": 1.0, "explain_agrees": True} for c in cells])
    assert svg.startswith("<svg") and svg.count("<rect") == 8
