"""The local platform's side of a roll: a start takes the pending revision only when the roll asked for it, the
`apply` request, and a roll that survives `local up` after a killed supervisor."""

from __future__ import annotations

import copy
from pathlib import Path

from test_local_state import sample

from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.roll import carry_over, handle_apply, promote_target, target_config
from rocketmq_operator.platforms.local.state import LocalState


def _rolling(tmp_path: Path) -> tuple[LocalState, StateLayout]:
    layout = StateLayout(tmp_path)
    layout.ensure()
    state = sample()
    r = state.replicas[0]
    r.config = str(layout.config(r.name))
    layout.config(r.name).write_text("old", encoding="utf-8")
    target_config(layout, r.name).write_text("new", encoding="utf-8")
    r.argv, r.revision = ["java", "old"], "r1"
    r.target_argv, r.target_revision = ["java", "new"], "r2"
    return state, layout


def test_a_crash_restart_keeps_the_running_revision(tmp_path: Path) -> None:
    state, layout = _rolling(tmp_path)
    r = state.replicas[0]
    promote_target(r, layout)
    assert (r.revision, r.argv, layout.config(r.name).read_text()) == ("r1", ["java", "old"], "old")


def test_a_roll_restart_takes_the_target(tmp_path: Path) -> None:
    state, layout = _rolling(tmp_path)
    r = state.replicas[0]
    r.roll_requested = True
    promote_target(r, layout)
    assert (r.revision, r.argv, r.target_argv, r.roll_requested) == ("r2", ["java", "new"], None, False)
    assert layout.config(r.name).read_text() == "new" and not target_config(layout, r.name).exists()


def test_apply_request_sets_targets_or_argv() -> None:
    state = sample()
    r = state.replicas[0]
    r.revision = r.target_revision = "r1"
    body = {"resources": [], "manifestDigest": "d2", "files": ["/n.yaml"]}
    answer = handle_apply(state, {**body, "replicas": {r.name: {"argv": ["java", "x"], "revision": "r2"}}})
    assert answer["ok"] and answer["pending"] == [r.name]
    assert (r.target_revision, r.target_argv, state.manifest_digest) == ("r2", ["java", "x"], "d2")
    answer = handle_apply(state, {**body, "replicas": {r.name: {"argv": ["java", "y"], "revision": "r1"}}})
    assert answer["pending"] == [] and r.argv == ["java", "y"] and r.target_argv is None
    assert not handle_apply(state, {**body, "replicas": {}})["ok"]


def test_carry_over_keeps_replicas_not_rolled_yet() -> None:
    existing = sample()
    old = existing.replicas[0]
    old.argv, old.revision, old.target_revision = ["java", "old"], "r1", "r2"
    fresh = copy.deepcopy(existing)
    r = fresh.replicas[0]
    r.argv, r.revision, r.target_revision, r.target_argv = ["java", "new"], "r2", "r2", None
    carry_over(existing, fresh)
    assert (r.argv, r.revision, r.target_argv, r.target_revision) == (["java", "old"], "r1", ["java", "new"], "r2")


def test_apply_request_adds_replicas_of_a_scale_out() -> None:
    state = sample()
    r = state.replicas[0]
    r.revision = r.target_revision = "r1"
    new = copy.deepcopy(r)
    new.name, new.pid = "broker-a-1", None
    body = {
        "resources": [],
        "manifestDigest": "d2",
        "files": [],
        "replicas": {r.name: {"argv": r.argv, "revision": "r1"}, new.name: {"argv": new.argv, "revision": "r1"}},
        "added": [new.to_json()],
        "groups": [g.to_json() for g in state.groups],
    }
    assert handle_apply(state, body, now=5.0)["ok"]
    added = state.replica("broker-a-1")
    assert added is not None and added.next_start_at == 5.0 and added.pid is None
