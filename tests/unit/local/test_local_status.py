"""Readiness, progress lines and the human table of `local status` (pure, on status documents)."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_operator.platforms.local.control import group_ready, progress_line
from rocketmq_operator.platforms.local.report import render_table


def replica(name: str, broker_id: int | None, role: str, alive: bool, in_sync: bool, **extra: Any) -> dict[str, Any]:
    return {"name": name, "brokerId": broker_id, "role": role, "alive": alive, "inSync": in_sync,
            "maxOffset": 0 if alive else None, "pid": 100 + (broker_id or 0), "restarts": 0, **extra}  # fmt: skip


def group(
    master: int | None, members: list[int] | None, alive: tuple[bool, bool, bool] = (True, True, True)
) -> dict[str, Any]:
    replicas = [
        replica(f"g-{i}", i + 1, "master" if master == i + 1 else "slave", alive[i], bool(members and i + 1 in members))
        for i in range(3)
    ]
    doc: dict[str, Any] = {
        "name": "g",
        "master": {"brokerId": master, "replica": f"g-{master - 1}" if master else None, "epoch": 1},
        "replicas": replicas,
        "needAcks": 2,
        "writable": master is not None,
        "conditions": [
            {"type": "Degraded", "status": "True", "reason": "FewerInSync", "message": "1 in sync"},
            {"type": "Ready", "status": "False", "reason": "NotAllInSync", "message": ""},
        ],
    }
    doc["syncStateSet"] = {"members": members, "epoch": 2} if members is not None else None
    return doc


@pytest.mark.parametrize(
    ("doc", "ready"),
    [
        (group(1, [1, 2, 3]), True),
        (group(1, [1, 2]), False),  # SyncStateSet not full yet
        (group(None, [1, 2, 3]), False),  # no master
        (group(1, [1, 2, 3], (True, False, True)), False),  # a broker does not answer
        (group(1, None), True),  # classic mode: every broker answers
        (group(1, None, (True, True, False)), False),
        ({"name": "g", "replicas": []}, False),
    ],
)
def test_group_ready(doc: dict[str, Any], ready: bool) -> None:
    assert group_ready(doc) is ready


def test_progress_line() -> None:
    assert progress_line(group(None, [], (False, False, False))) == (
        "g: 0/3 brokers answer, no master yet, SyncStateSet [] (0/3)"
    )
    assert progress_line(group(2, [2, 3])) == (
        "g: 3/3 brokers answer, master g-1 (id 2, epoch 1), SyncStateSet [2, 3] (2/3)"
    )


def test_render_table() -> None:
    doc = {
        "stateDir": "/s",
        "supervisor": {"pid": 7, "running": True, "phase": "running"},
        "nameServers": ["127.0.0.1:1"],
        "controllers": ["127.0.0.1:2"],
        "groups": [group(2, [2])],
        "processes": [
            {"name": "ctl-0", "role": "namesrv", "pid": 5, "running": True, "suspended": False, "restarts": 0,
             "ports": {"namesrv": 1, "controller": 2}},
            {"name": "g-0", "role": "broker", "pid": 101, "running": True, "suspended": False, "restarts": 0,
             "ports": {"listen": 3}},
        ],
    }  # fmt: skip
    doc["groups"][0]["replicas"][2]["suspended"] = True
    text = render_table(doc)
    lines = text.splitlines()
    assert lines[0] == "state /s  supervisor pid 7 (running)"
    assert lines[2].split() == ["GROUP", "REPLICA", "BROKERID", "ROLE", "ALIVE", "INSYNC", "MAXOFFSET", "PID",
                                "RESTARTS"]  # fmt: skip
    assert lines[4].split() == ["g", "g-1", "2", "master", "yes", "yes", "0", "102", "0"]
    assert "slave (stopped)" in lines[5]
    assert "g: needAcks=2 writable=yes master=g-1 (id 2, epoch 1) syncStateSet=[2] (epoch 2)" in text
    assert "  Degraded: FewerInSync: 1 in sync" in text
    assert "Ready" not in text  # only problem conditions
    assert "ctl-0" in text and "namesrv 127.0.0.1:1;controller 127.0.0.1:2" in text


def test_topics_hold_readiness_and_show_in_the_table(tmp_path: Any) -> None:
    import json

    from rocketmq_operator.platforms.local.layout import StateLayout
    from rocketmq_operator.platforms.local.report import _with_topics
    from rocketmq_operator.platforms.local.topics import topics_status_path

    layout = StateLayout(tmp_path)
    doc = group(2, [1, 2, 3])
    doc["master"]["address"] = "127.0.0.1:20"
    _with_topics(doc, layout, "g", wanted=True)  # the supervisor has written nothing yet
    assert doc["writable"] is False and doc["topicsAsserted"] is False and not group_ready(doc)
    assert progress_line(doc).endswith("topics not yet asserted")
    path = topics_status_path(layout, "g")
    path.parent.mkdir(parents=True)
    found = {
        "master": "127.0.0.1:20",
        "asserted": True,
        "errors": [],
        "topics": [{"name": "orders", "exists": True, "writeQueueNums": 8, "readQueueNums": 8,
                    "messageType": "NORMAL", "maxOffsets": 2000}],
        "consumerGroups": [{"name": "readers", "exists": True, "lag": 120}],
    }  # fmt: skip
    path.write_text(json.dumps(found))
    doc = group(2, [1, 2, 3])
    doc["master"]["address"] = "127.0.0.1:20"
    _with_topics(doc, layout, "g", wanted=True)
    assert doc["writable"] is True and doc["topicsAsserted"] is True and group_ready(doc)
    # A new master: not writable until the supervisor has asserted the topics on it.
    moved = group(3, [1, 2, 3])
    moved["master"]["address"] = "127.0.0.1:30"
    _with_topics(moved, layout, "g", wanted=True)
    assert moved["writable"] is False
    assert any(c["type"] == "TopicsAsserted" and c["status"] == "False" for c in moved["conditions"])
    table = render_table(
        {"stateDir": "/s", "supervisor": {"pid": 7, "running": True, "phase": "running"}, "nameServers": [],
         "controllers": [], "groups": [doc], "processes": []}
    )  # fmt: skip
    assert ["g", "orders", "yes", "8", "8", "NORMAL", "2000"] in [line.split() for line in table.splitlines()]
    assert ["g", "readers", "yes", "120"] in [line.split() for line in table.splitlines()]
