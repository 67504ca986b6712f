"""`rocketmq-operator local ...` argument handling and refusals that need no java."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.cli import main

ROOT = Path(__file__).resolve().parents[3]

BAD = """apiVersion: rocketmq-operator.dev/v1alpha1
kind: BrokerGroup
metadata:
  name: bad
spec:
  replicas: 3
  haMode: controller
  quorum:
    inSyncReplicas: 5
"""


def test_up_refuses_invalid_manifests_like_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(BAD)
    state = tmp_path / "state"
    assert main(["local", "up", "-f", str(manifest), "--state-dir", str(state)]) == 2
    out = capsys.readouterr().out.strip().splitlines()
    assert out and all(line.startswith(f"{manifest}#1 BrokerGroup/bad: spec.") for line in out)
    assert any("spec.controllerRef" in line for line in out)
    assert any("spec.quorum.inSyncReplicas" in line for line in out)
    assert not state.exists()  # nothing written


def test_up_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "up", "-f", str(tmp_path / "missing.yaml"), "--state-dir", str(tmp_path)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_up_controller_group_missing_from_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "bg.yaml"
    text = (ROOT / "examples" / "quickstart.yaml").read_text()
    manifest.write_text(text.split("---", 1)[1])  # the BrokerGroup only
    assert main(["local", "up", "-f", str(manifest), "--state-dir", str(tmp_path / "s")]) == 2
    assert "spec.controllerRef.name 'rocketmq-ctl' is not a ControllerGroup in these manifests" in (
        capsys.readouterr().out
    )


NEVER_STARTED = [
    ["local", "status"],
    ["local", "status", "--json"],
    ["local", "kill", "broker-a-0"],
    ["local", "start", "x"],
    ["local", "env"],
    ["local", "apply", "-f", str(ROOT / "examples" / "quickstart.yaml")],
    ["switchover", "broker-a", "--to", "broker-a-1"],
]


@pytest.mark.parametrize("command", NEVER_STARTED)
def test_commands_without_state(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    """Never started there: one line saying so and how to start it, exit 3 (as `local status --help` says)."""
    state_dir = tmp_path / "none"
    assert main([*command, "--state-dir", str(state_dir)]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip().splitlines()
    assert err == [
        f"error: no local cluster runs from {state_dir}: none was started there (no state.json); "
        f"fix: `rocketmq-operator local up -f FILE --state-dir {state_dir}`"
    ], err


@pytest.mark.parametrize("command", [c for c in NEVER_STARTED if c[1] != "status" and c[1] != "env"])
def test_commands_on_a_stopped_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """After `local down` (state kept, nothing runs): kill, start, apply and switchover say it is not running and
    how to start it again (with the manifests it ran), exit 3; switchover asks no controller."""
    from rocketmq_operator.platforms.local import switchover

    async def no_controller(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a stopped cluster's controller is not asked")

    monkeypatch.setattr(switchover, "run_switchover", no_controller)
    state = _quickstart_state(tmp_path)
    assert main([*command, "--state-dir", str(tmp_path)]) == 3
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert err == [
        f"error: the local cluster of {tmp_path} is not running (no supervisor); "
        f"fix: `rocketmq-operator local up -f {state.files[0]} --state-dir {tmp_path}`"
    ], err
    assert "does not exist" not in captured.out + captured.err


def test_down_without_state_is_fine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "down", "--state-dir", str(tmp_path / "none")]) == 0
    assert "nothing runs" in capsys.readouterr().out


def test_kill_signal_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["local", "kill", "x", "--signal", "HUP", "--state-dir", str(tmp_path)])
    assert "is not one of KILL, TERM, STOP, CONT" in capsys.readouterr().err


def test_state_dir_from_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROCKETMQ_OPERATOR_STATE", str(tmp_path / "from-env"))
    assert main(["local", "status"]) == 3
    assert str(tmp_path / "from-env") in capsys.readouterr().err


def test_state_dir_lock_is_exclusive(tmp_path: Path) -> None:
    from rocketmq_operator.platforms.local.layout import StateLayout
    from rocketmq_operator.platforms.local.lifecycle import LocalError, locked

    layout = StateLayout(tmp_path / "s")
    with locked(layout), pytest.raises(LocalError, match="another `local up` or `local down`"), locked(layout):
        pass
    with locked(layout):  # released
        pass


# --- `local env` and `switchover --to REPLICA` (issue #13: a new user knows the replica names, not the ids) ---


def _quickstart_state(tmp_path: Path) -> Any:
    """A state directory as `local up` of the quickstart leaves it (nothing running)."""
    from rocketmq_operator.api.validation import validate_file
    from rocketmq_operator.platforms.local.layout import StateLayout
    from rocketmq_operator.platforms.local.placement import build_state, port_needs
    from rocketmq_operator.platforms.local.ports import pack
    from rocketmq_operator.platforms.local.state import write_state

    quickstart = ROOT / "examples" / "quickstart.yaml"
    resources = [r.resource for r in validate_file(quickstart) if r.resource is not None]
    layout = StateLayout(tmp_path)
    state = build_state(resources, pack(port_needs(resources), 22900), layout, files=[str(quickstart)],
                        distribution="/dist", rocketmq_version="5.5.0")  # fmt: skip
    write_state(layout.state_file, state)
    return state


@pytest.mark.parametrize("running", [True, False])
def test_local_env_prints_an_evaluable_namesrv_addr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], running: bool
) -> None:
    import subprocess

    from rocketmq_operator.platforms.local import lifecycle

    state = _quickstart_state(tmp_path)
    assert state.name_servers
    monkeypatch.setattr(lifecycle, "supervisor_running", lambda _: running)
    assert main(["local", "env", "--state-dir", str(tmp_path)]) == (0 if running else 3)
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("export NAMESRV_ADDR="), captured.out
    # What `eval "$(rocketmq-operator local env)"` sets, and a child process of that shell sees (exported).
    shell = subprocess.run(
        ["bash", "-c", 'eval "$1" && bash -c \'printf %s "$NAMESRV_ADDR"\'', "_", captured.out],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shell.stdout == ";".join(state.name_servers)
    if not running:
        assert "rocketmq-operator local up -f FILE" in captured.err


def test_local_env_without_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "env", "--state-dir", str(tmp_path / "none")]) == 3
    captured = capsys.readouterr()
    assert captured.out == "" and "fix: `rocketmq-operator local up -f FILE" in captured.err


def test_switchover_to_a_replica_name_uses_its_controller_assigned_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from types import SimpleNamespace

    from rocketmq_operator.core.observation import GroupState, ReplicaObservation
    from rocketmq_operator.platforms.local import switchover

    state = _quickstart_state(tmp_path)
    monkeypatch.setattr(switchover, "nothing_runs", lambda _: False)
    ids = {"broker-a-0": 2, "broker-a-1": 1, "broker-a-2": 3}  # registration order, not the ordinal
    elected: list[int] = []

    async def observe_group(client: Any, controllers: Any, group: str, endpoints: Any) -> GroupState:
        return GroupState(
            group=group,
            observed_at=0.0,
            controller_mode=True,
            replicas=tuple(ReplicaObservation(e.name, e.address, True, broker_id=ids[e.name]) for e in endpoints),
        )

    async def switchover_group(client: Any, bg: Any, controllers: Any, endpoints: Any, target: int) -> Any:
        elected.append(target)
        return SimpleNamespace(new_master=target, epoch=4, write_pause_s=0.2, steps=[])

    monkeypatch.setattr(switchover, "observe_group", observe_group, raising=False)
    monkeypatch.setattr(switchover, "switchover_group", switchover_group)
    assert state.group("broker-a") is not None
    assert main(["switchover", "broker-a", "--to", "broker-a-2", "--state-dir", str(tmp_path)]) == 0
    assert elected == [3]
    assert "master is now broker 3" in capsys.readouterr().out
    assert main(["switchover", "broker-a", "--to", "1", "--state-dir", str(tmp_path)]) == 0  # an id, as before
    assert elected == [3, 1]
    assert main(["switchover", "broker-a", "--to", "broker-b-0", "--state-dir", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "--to 'broker-b-0': neither a broker id nor a replica of the group" in out and "local status" in out
    assert elected == [3, 1]
