"""Readiness, progress lines and the human table of `local status` (pure, on status documents)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.api.models import BrokerGroupStatus, MasterStatus, SyncStateSetStatus
from rocketmq_operator.api.validation import validate_file
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.platforms.local import lifecycle, report
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.lifecycle import group_ready, progress_line
from rocketmq_operator.platforms.local.placement import build_state, port_needs
from rocketmq_operator.platforms.local.ports import pack
from rocketmq_operator.platforms.local.report import render_table
from rocketmq_operator.platforms.local.state import LocalState, SupervisorInfo, write_json_atomic, write_state
from rocketmq_operator.platforms.local.topics import topics_status_path


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


def test_status_after_down_says_stopped_and_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """After `local down` (no supervisor, no process) with a status of the running group still on disk: the
    observation is what `observe` gets then (nothing answers), the status says stopped and exits 3."""
    quickstart = Path(__file__).resolve().parents[3] / "examples" / "quickstart.yaml"
    resources = [r.resource for r in validate_file(quickstart) if r.resource is not None]
    layout = StateLayout(tmp_path)
    state = build_state(resources, pack(port_needs(resources), 22900), layout, files=[str(quickstart)],
                        distribution="/dist", rocketmq_version="5.5.0")  # fmt: skip
    for r in state.replicas:  # what `local down` leaves
        r.pid = None
    state.supervisor = SupervisorInfo()
    write_state(layout.state_file, state)
    group = next(g for g in state.groups if g.kind == "BrokerGroup")
    first = state.replica(group.replicas[0])
    assert first is not None
    write_json_atomic(
        layout.status(group.name),
        BrokerGroupStatus(
            master=MasterStatus(broker_id=1, replica=first.name, address=first.address, epoch=3),
            sync_state_set=SyncStateSetStatus(members=[1, 2, 3], epoch=4),
            writable=True,
        ).model_dump(mode="json", by_alias=True),
    )

    async def nothing_answers(st: LocalState, client: Any = None, *, timeout: float = 0.0) -> dict[str, GroupState]:
        return {
            g.name: GroupState(
                group=g.name,
                observed_at=0.0,
                controller_mode=g.controller_mode,
                controller_error="controller quorum unreadable: refused",
                replicas=tuple(
                    ReplicaObservation(n, f"127.0.0.1:{st.ports()[f'{n}.listen']}", reachable=False) for n in g.replicas
                ),
            )
            for g in st.groups
            if g.kind == "BrokerGroup"
        }

    # The supervisor's last assertion, from when it ran: the topic and the group existed then.
    topics = topics_status_path(layout, group.name)
    topics.write_text(json.dumps({
        "master": first.address, "asserted": True, "errors": [],
        "topics": [{"name": "orders", "exists": True, "writeQueueNums": 8, "readQueueNums": 8,
                    "messageType": "NORMAL", "maxOffsets": 2000}],
        "consumerGroups": [{"name": "orders-readers", "exists": True, "lag": 0, "lagByTopic": {"orders": 0}}],
    }))  # fmt: skip

    monkeypatch.setattr(report, "observe", nothing_answers)
    lines: list[str] = []
    rc = lifecycle.status(tmp_path, out=lines.append)
    text = "\n".join(lines)
    assert rc == 3, text
    assert f"{group.name}: stopped" in text and "writable=no" in text
    assert f"master={first.name}" not in text
    # Nothing answers to confirm them: their existence is unknown, not "yes".
    rows = [line.split() for line in text.splitlines()]
    assert [group.name, "orders", "-", "8", "8", "NORMAL", "-"] in rows, text
    assert [group.name, "orders-readers", "-", "-"] in rows, text
    hint = capsys.readouterr().err.strip().splitlines()
    assert len(hint) == 1 and "rocketmq-operator local up -f FILE" in hint[0], hint

    lines.clear()
    assert lifecycle.status(tmp_path, as_json=True, out=lines.append) == 3
    doc = json.loads("\n".join(lines))
    g = next(x for x in doc["groups"] if x["name"] == group.name)
    assert doc["stopped"] is True and g["phase"] == "Stopped"
    assert g["writable"] is False and not (g.get("master") or {}).get("replica")
    assert [(t["name"], t["exists"]) for t in g["topics"]] == [("orders", None)]
    assert [(c["name"], c["exists"], c["lag"]) for c in g["consumerGroups"]] == [("orders-readers", None, None)]


def test_render_table_marks_an_unavailable_controller() -> None:
    doc = group(1, [1, 2, 3])
    doc["conditions"] = [{"type": "ControllerUnavailable", "status": "True", "reason": "ControllerQuorumUnreadable",
                          "message": "controller quorum unreadable: refused"}]  # fmt: skip
    text = render_table({"stateDir": "/s", "supervisor": {"pid": 7, "running": True, "phase": "running"},
                         "nameServers": [], "controllers": [], "groups": [doc], "processes": []})  # fmt: skip
    assert "g: needAcks=2 writable=yes master=g-0 (id 1, epoch 1) syncStateSet=[1, 2, 3] (epoch 2) " in text
    assert text.splitlines()[6].endswith(" controller=unavailable")
    assert "  ControllerUnavailable: ControllerQuorumUnreadable: controller quorum unreadable: refused" in text


def _table(groups: list[dict[str, Any]]) -> str:
    return render_table({"stateDir": "/s", "supervisor": {"pid": 7, "running": True, "phase": "running"},
                         "nameServers": [], "controllers": [], "groups": groups, "processes": []})  # fmt: skip


def test_render_table_shows_a_rollout_with_each_replica_version() -> None:
    doc = group(1, [1, 2, 3])
    for r, version in zip(doc["replicas"], ["5.5.0", "5.4.0", "5.4.0"], strict=True):
        r["version"] = version
    doc["rollout"] = {"phase": "Rolling", "reason": "RestartReplica", "currentStep": "SIGTERM to g-1",
                      "message": "", "replicasDone": ["g-0"], "restarts": 1, "switchovers": 0,
                      "started": "2026-01-01T00:00:00Z"}  # fmt: skip
    lines = _table([doc]).splitlines()
    at = lines.index("g: rollout Rolling (RestartReplica): SIGTERM to g-1; 1 restart(s), 0 switchover(s)")
    assert [line.split() for line in lines[at + 1 : at + 5]] == [
        ["GROUP", "REPLICA", "VERSION", "ROLLED"],
        ["g", "g-0", "5.5.0", "yes"],
        ["g", "g-1", "5.4.0", "no"],
        ["g", "g-2", "5.4.0", "no"],
    ]
    doc["rollout"].update(phase="Blocked", reason="NoInSyncTarget", message="no replica in sync; fix: wait")
    assert "g: rollout Blocked (NoInSyncTarget): no replica in sync; fix: wait; 1 restart(s), 0 switchover(s)" in (
        _table([doc])
    )
    doc["rollout"].update(phase="Complete", reason="RolloutComplete", message="every replica runs its revision")
    text = _table([doc])
    assert "g: rollout Complete (RolloutComplete): every replica runs its revision; 1 restart(s)" in text
    assert "VERSION" not in text  # history in one line


def test_render_table_without_a_roll_that_ran_has_no_rollout() -> None:
    doc = group(1, [1, 2, 3])
    assert "rollout" not in _table([doc]) and "VERSION" not in _table([doc])
    # What the supervisor records when there is nothing to roll: the revision, no roll.
    doc["rollout"] = {"phase": "Complete", "targetRevision": "abc", "replicasDone": [], "started": None}
    assert "rollout" not in _table([doc]) and "VERSION" not in _table([doc])
