"""`rocketmq-operator local ...` argument handling and refusals that need no java."""

from __future__ import annotations

from pathlib import Path

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


@pytest.mark.parametrize("command", [["status"], ["status", "--json"], ["kill", "broker-a-0"], ["start", "x"]])
def test_commands_without_state(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    assert main(["local", *command, "--state-dir", str(tmp_path / "none")]) == 1
    assert "error:" in capsys.readouterr().err


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
    assert main(["local", "status"]) == 1
    assert str(tmp_path / "from-env") in capsys.readouterr().err


def test_state_dir_lock_is_exclusive(tmp_path: Path) -> None:
    from rocketmq_operator.platforms.local.control import LocalError, locked
    from rocketmq_operator.platforms.local.layout import StateLayout

    layout = StateLayout(tmp_path / "s")
    with locked(layout), pytest.raises(LocalError, match="another `local up` or `local down`"), locked(layout):
        pass
    with locked(layout):  # released
        pass
