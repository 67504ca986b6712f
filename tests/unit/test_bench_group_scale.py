"""`bench group-scale`'s choice of topic and consumer group, and its verdict (plain data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_operator.api.validation import load_documents
from rocketmq_operator.bench.group_scale import GroupScaleError, cluster_topic
from rocketmq_operator.bench.verdict import group_scale_failures

ROOT = Path(__file__).resolve().parents[2]


def test_the_example_has_a_cluster_topic_and_its_readers() -> None:
    docs = [d for d in load_documents(str(ROOT / "examples" / "two-groups.yaml")) if d]
    assert cluster_topic(docs) == ("orders", "orders-readers")


def test_a_topic_on_named_groups_only_is_refused_with_the_fix() -> None:
    docs = [d for d in load_documents(str(ROOT / "examples" / "quickstart.yaml")) if d]
    with pytest.raises(GroupScaleError, match=r"placed by spec\.clusterName.*fix: use examples/two-groups\.yaml"):
        cluster_topic(docs)


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ({"lost": 0, "sends_to_added_group": 5, "removed_group_final_lag": 0}, []),
        ({"lost": 2, "acknowledged": 9, "sends_to_added_group": 5, "removed_group_final_lag": 0}, ["2 acknowledged"]),
        ({"lost": 0, "sends_to_added_group": 0, "added": "c", "removed_group_final_lag": 0}, ["no send", "c"]),
        ({"lost": 0, "sends_to_added_group": 1, "removed": "a", "removed_group_final_lag": 3}, ["a was removed", "3"]),
    ],
)
def test_verdict(doc: dict[str, object], words: list[str]) -> None:
    reasons = group_scale_failures(doc)
    assert bool(reasons) == bool(words)
    for w in words:
        assert any(w in r for r in reasons), reasons
