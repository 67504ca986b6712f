"""core.conditions: the one condition helper (timestamps move only with the status)."""

from __future__ import annotations

from rocketmq_operator.api.models import Condition
from rocketmq_operator.core.conditions import condition, conditions_match, set_condition
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


def test_conditions_match_compares_status_reason_and_message_of_the_wanted_ones() -> None:
    current = [condition("Ready", "True", "Ok", "m", T0), condition("Reconciled", "True", "Applied", "", T0)]
    assert conditions_match(current, [condition("Ready", "True", "Ok", "m", T1)])
    assert not conditions_match(current, [condition("Ready", "True", "Ok", "changed", T1)])
    assert not conditions_match(current, [condition("Switchover", "True", "Switched", "", T1)])


def test_the_status_builder_uses_the_same_timing() -> None:
    previous = [Condition(type="Ready", status="True", reason="Ok", last_transition_time=T0)]
    merged = merge_conditions(previous, [("Ready", "True", "Ok", "new"), ("Writable", "False", "No", "")], T1, 2)
    assert [(c.type, c.last_transition_time, c.observed_generation) for c in merged] == [
        ("Ready", T0, 2),
        ("Writable", T1, 2),
    ]


def test_status_unchanged_needs_the_keys_and_the_conditions() -> None:
    from rocketmq_operator.core.conditions import status_unchanged

    current = {"leader": "a", "conditions": [condition("Ready", "True", "Ok", "m", T1)]}
    flipped = {"leader": "a", "conditions": [condition("Ready", "False", "No", "m", T1)]}
    assert status_unchanged(
        current, {"leader": "a", "conditions": [condition("Ready", "True", "Ok", "m", T0)]}, ["leader"]
    )
    assert not status_unchanged(current, {"leader": "b", "conditions": []}, ["leader"])
    assert not status_unchanged(current, flipped, ["leader"])
