"""Hot vs restart-only broker keys, revisions, and what `explain --diff` says."""

from __future__ import annotations

import pytest

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.core.config_change import classify, describe_change, revision
from rocketmq_operator.render.diff import describe_manifests


def test_classify_splits_hot_and_restart_only() -> None:
    change = classify(
        {"fileReservedTime": "72", "listenPort": "10911", "gone": "x"},
        {"fileReservedTime": "48", "listenPort": "10921", "slaveReadEnable": "true"},
    )
    assert change.hot == {"fileReservedTime": "48", "slaveReadEnable": "true"}
    assert change.restart == ("gone", "listenPort")


def test_revision_ignores_hot_keys_only() -> None:
    base = {"fileReservedTime": "72", "flushDiskType": "ASYNC_FLUSH"}
    assert revision(base, "5.5.0") == revision({**base, "fileReservedTime": "48"}, "5.5.0")
    assert revision(base, "5.5.0") != revision({**base, "flushDiskType": "SYNC_FLUSH"}, "5.5.0")
    assert revision(base, "5.5.0") != revision(base, "5.4.0")


@pytest.mark.parametrize(
    ("old", "new", "versions", "strategy", "expected"),
    [
        ({"a": "1"}, {"a": "1"}, ("5.5.0", "5.5.0"), "switchover", "no change"),
        (
            {"slaveTimeout": "3000"},
            {"slaveTimeout": "4000"},
            ("5.5.0", "5.5.0"),
            "switchover",
            "hot: slaveTimeout=4000",
        ),
        ({}, {}, ("5.4.0", "5.5.0"), "switchover", "rolling restart of 2 replicas, one switchover (version 5.4.0"),
        (
            {"x": "1"},
            {"x": "2"},
            ("5.5.0", "5.5.0"),
            "restart",
            "no switchover (strategy restart) (restart-only keys x",
        ),
    ],
)
def test_describe_change(
    old: dict[str, str], new: dict[str, str], versions: tuple[str, str], strategy: str, expected: str
) -> None:
    assert expected in describe_change(versions[0], versions[1], [old, old], [new, new], strategy=strategy)


def _bg(**spec: object) -> BrokerGroup:
    return BrokerGroup.model_validate(
        {"metadata": {"name": "broker-a"}, "spec": {"controllerRef": {"name": "ctl"}, **spec}}
    )


def test_describe_manifests() -> None:
    old = [_bg(version="5.4.0")]
    assert describe_manifests(old, [_bg(version="5.4.0", brokerConfig={"fileReservedTime": "48"})]) == [
        "BrokerGroup/broker-a: hot: fileReservedTime=48 (no restart)"
    ]
    assert describe_manifests(old, [_bg(version="5.5.0")]) == [
        "BrokerGroup/broker-a: rolling restart of 3 replicas, one switchover (version 5.4.0 -> 5.5.0)"
    ]
    assert "jvm options" in describe_manifests(old, [_bg(version="5.4.0", jvm={"heap": "2Gi"})])[0]
    assert "scale from 3 to 5" in describe_manifests(old, [_bg(version="5.4.0", replicas=5)])[0]
