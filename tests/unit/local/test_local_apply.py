"""`local apply -f` on a running quickstart, as a user sees it: what it prints, what it hands the supervisor, and
what the supervisor's topic policy then declares. No process: the state directory is the one `local up` writes,
the supervisor's request is captured, and the distribution is not fetched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.cli import main
from rocketmq_operator.platforms.local import apply as local_apply
from rocketmq_operator.platforms.local import lifecycle, roll
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import port_needs, render_configs
from rocketmq_operator.platforms.local.ports import pack
from rocketmq_operator.platforms.local.state import read_state, write_state
from rocketmq_operator.platforms.local.topics import TopicPolicy
from validation_cases import NEW_TOPIC

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"


@pytest.fixture
def running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[StateLayout, list[dict[str, Any]]]:
    return running_from(QUICKSTART, tmp_path, monkeypatch)


def running_from(
    manifest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[StateLayout, list[dict[str, Any]]]:
    """The manifest (the quickstart) as `local up` leaves it (configs, state.json), a supervisor said to run, and
    the requests `local apply` sends it (answered ok)."""
    monkeypatch.setattr(roll, "ensure_distribution", lambda version, log=None: Path(f"/dist/{version}"))
    monkeypatch.setattr(local_apply, "supervisor_running", lambda state: True)
    layout = StateLayout(tmp_path / "state")
    resources, errors, _, _ = lifecycle.validate([str(manifest)])
    assert not errors
    ports = pack(port_needs(resources), 22900)
    texts = render_configs(resources, ports, layout)
    state = roll.desired_state(resources, ports, layout, files=[str(manifest)], texts=texts)
    layout.ensure()
    roll.write_configs(layout, state, texts, None)
    for r in state.replicas:  # what each process runs
        Path(r.run_config).parent.mkdir(parents=True, exist_ok=True)
        Path(r.run_config).write_text(texts[r.name], encoding="utf-8")
    write_state(layout.state_file, state)
    sent: list[dict[str, Any]] = []

    async def request(layout: StateLayout, op: str, **body: Any) -> dict[str, Any]:
        sent.append({"op": op, **body})
        return {"ok": True, "message": "applied"}

    monkeypatch.setattr(lifecycle, "request", request)
    return layout, sent


def _apply(layout: StateLayout, path: Path) -> int:
    return main(["local", "apply", "-f", str(path), "--state-dir", str(layout.root)])


def _variant(tmp_path: Path, replace: tuple[str, str] | None = None, append: str = "") -> Path:
    text = QUICKSTART.read_text()
    if replace is not None:
        assert replace[0] in text
        text = text.replace(*replace)
    path = tmp_path / "new.yaml"
    path.write_text(text + append)
    return path


def test_apply_adds_topics_and_the_supervisor_asserts_them(
    tmp_path: Path, running: tuple[StateLayout, list[dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    layout, sent = running
    assert _apply(layout, QUICKSTART) == 0
    assert capsys.readouterr().out.splitlines() == ["broker-a: no change", "rocketmq-ctl: no change"]

    assert _apply(layout, _variant(tmp_path, append=NEW_TOPIC)) == 0
    assert capsys.readouterr().out.splitlines() == [
        "broker-a: no change",
        "rocketmq-ctl: no change",
        "topic payments: added",
        "consumer group payments-readers: added",
    ]
    # The supervisor's side: the request replaces the resources of the state it holds, and the topic policy it
    # made at start (from the old resources) now declares the new topic and group on broker-a.
    supervisor_state = read_state(layout.state_file)
    policy = TopicPolicy(supervisor_state, layout)
    assert [t.name for t in policy.wanted["broker-a"].topics] == ["orders"]
    answer = roll.handle_apply(supervisor_state, sent[-1])
    assert answer["ok"] and answer["pending"] == []
    assert [t.name for t in policy.wanted["broker-a"].topics] == ["orders", "payments"]
    assert [g.name for g in policy.wanted["broker-a"].consumer_groups] == ["orders-readers", "payments-readers"]
    assert "payments" in layout.manifest.read_text()  # what runs now
    write_state(layout.state_file, supervisor_state)  # as the supervisor saves it

    # Removing them: said, and no longer declared (the local platform deletes nothing from the brokers).
    assert _apply(layout, QUICKSTART) == 0
    assert capsys.readouterr().out.splitlines()[2:] == [
        "topic payments: removed (no longer asserted; it stays on the brokers)",
        "consumer group payments-readers: removed (no longer asserted; it stays on the brokers)",
    ]
    roll.handle_apply(supervisor_state, sent[-1])
    assert [t.name for t in policy.wanted["broker-a"].topics] == ["orders"]


def test_apply_of_a_heap_change_says_it_is_not_applied(
    tmp_path: Path, running: tuple[StateLayout, list[dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    layout, sent = running
    assert _apply(layout, _variant(tmp_path, replace=("    heap: 1Gi", "    heap: 2Gi"))) == 0
    assert capsys.readouterr().out.splitlines() == [
        "broker-a: no change",
        "broker-a: heap: not applied on the local platform (local JVMs run -Xmx256m)",
        "rocketmq-ctl: no change",
    ]
    assert all(r["revision"] for r in sent[-1]["replicas"].values())


def test_apply_of_a_downgrade_warns_once(
    tmp_path: Path, running: tuple[StateLayout, list[dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    layout, _ = running
    new = _variant(tmp_path, replace=("  haMode: controller", "  haMode: controller\n  version: 5.4.0"))
    assert _apply(layout, new) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0].startswith("broker-a: rolling restart of 3 replicas, one switchover (version")
    assert [line for line in captured.err.splitlines() if "is a downgrade" in line] == [
        "warning: BrokerGroup/broker-a: spec.version 5.5.0 -> 5.4.0 is a downgrade: RocketMQ does not promise "
        "that an older version reads the stores a newer one wrote; back up the data, or keep the newer version"
    ]


def test_the_topic_policy_takes_the_resources_an_apply_request_brings(
    tmp_path: Path, running: tuple[StateLayout, list[dict[str, Any]]]
) -> None:
    """The supervisor makes its topic policy once, at start; an `apply` request replaces the state's resources
    under it, and the next pass must assert what they declare."""
    layout, _ = running
    state = read_state(layout.state_file)
    policy = TopicPolicy(state, layout)
    assert [t.name for t in policy.wanted["broker-a"].topics] == ["orders"]
    resources, _, _, _ = lifecycle.validate([str(_variant(tmp_path, append=NEW_TOPIC))])
    body = {
        "resources": [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in resources],
        "manifestDigest": "d2",
        "files": [],
        "replicas": {r.name: {"argv": r.argv, "revision": r.revision} for r in state.replicas},
    }
    assert roll.handle_apply(state, body)["ok"]
    assert [t.name for t in policy.wanted["broker-a"].topics] == ["orders", "payments"]
    assert [g.name for g in policy.wanted["broker-a"].consumer_groups] == ["orders-readers", "payments-readers"]
