"""Readiness, progress lines and the human table of `local status` (pure, on status documents)."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_operator.platforms.local.control import group_ready, progress_line
from rocketmq_operator.platforms.local.status import render_table


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
