"""core.conditions: the one condition helper (timestamps move only with the status)."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_operator.api.models import Condition
from rocketmq_operator.core.conditions import condition, merge_status, set_condition
from rocketmq_operator.core.status import merge_conditions

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"


def test_time_carries_over_unless_the_status_flips() -> None:
    first = condition("Ready", "True", "Ok", "fine", T0)
    assert condition("Ready", "True", "Ok", "other text", T1, previous=first)["lastTransitionTime"] == T0
    assert condition("Ready", "False", "Down", "gone", T1, previous=first)["lastTransitionTime"] == T1
    assert "observedGeneration" not in first
    assert condition("Ready", "True", "Ok", "", T0, 3)["observedGeneration"] == 3


def test_set_condition_keeps_the_others_and_appends_a_new_type() -> None:
    conditions = set_condition([], "Reconciled", "True", "Applied", "ok", T0, 1)
    conditions = set_condition(conditions, "Ready", "Unknown", "Waiting", "", T0, 1)
    again = set_condition(conditions, "Reconciled", "True", "Applied", "ok", T1, 1)
    assert [c["type"] for c in again] == ["Reconciled", "Ready"]
    assert again == conditions


def test_the_status_builder_uses_the_same_timing() -> None:
    previous = [Condition(type="Ready", status="True", reason="Ok", last_transition_time=T0)]
    merged = merge_conditions(previous, [("Ready", "True", "Ok", "new"), ("Writable", "False", "No", "")], T1, 2)
    assert [(c.type, c.last_transition_time, c.observed_generation) for c in merged] == [
        ("Ready", T0, 2),
        ("Writable", T1, 2),
    ]


# --- merge_status: one step's change over a status as read (the Kubernetes status writer sends the result) ---


def _c(type_: str, status: str = "True", reason: str = "R", when: str = T1) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": "", "lastTransitionTime": when}


MERGE_CASES = [
    pytest.param({}, {}, {}, None, id="nothing-asked"),
    pytest.param({"phase": "Running"}, {"phase": "Running"}, {}, None, id="field-already-so"),
    pytest.param({"phase": "Running"}, {"phase": "Degraded"}, {}, {"phase": "Degraded"}, id="field-changed"),
    pytest.param({"fenced": ["a"]}, {"fenced": None}, {}, {"fenced": None}, id="field-removed"),
    pytest.param({}, {"fenced": None}, {}, None, id="absent-field-removed-is-no-change"),
    pytest.param(
        {"conditions": [_c("Reconciled", when=T0)]},
        {},
        {"Fence": _c("Fence")},
        {"conditions": [_c("Reconciled", when=T0), _c("Fence")]},
        id="new-condition-keeps-the-others",
    ),
    pytest.param(
        {"conditions": [_c("Ready", when=T0), _c("Fence", when=T0)]},
        {},
        {"Ready": _c("Ready", reason="Other")},
        {"conditions": [_c("Ready", reason="Other", when=T0), _c("Fence", when=T0)]},
        id="same-status-keeps-its-transition-time",
    ),
    pytest.param(
        {"conditions": [_c("Ready", when=T0)]},
        {},
        {"Ready": _c("Ready", status="False")},
        {"conditions": [_c("Ready", status="False")]},
        id="status-flip-takes-the-new-transition-time",
    ),
    pytest.param(
        {"conditions": [_c("Ready", when=T0), _c("RolloutBlocked", when=T0)]},
        {},
        {"RolloutBlocked": None},
        {"conditions": [_c("Ready", when=T0)]},
        id="condition-removed",
    ),
    pytest.param({"conditions": [_c("Ready", when=T0)]}, {}, {"Fence": None}, None, id="absent-condition-removed"),
    pytest.param(
        {"conditions": [_c("Ready", when=T0)]}, {}, {"Ready": _c("Ready", when=T1)}, None, id="same-condition"
    ),
]


@pytest.mark.parametrize(("current", "fields", "wanted", "patch"), MERGE_CASES)
def test_merge_status(
    current: dict[str, Any], fields: dict[str, Any], wanted: dict[str, Any], patch: dict[str, Any] | None
) -> None:
    assert merge_status(current, fields, wanted) == patch
