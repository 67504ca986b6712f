"""State directory resolution and the paths inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_operator.platforms.local.layout import STATE_ENV, StateLayout, resolve_state_dir


@pytest.mark.parametrize(
    ("arg", "env", "expected"),
    [
        (None, {}, "/work/.local-state"),
        (None, {STATE_ENV: "/elsewhere/s"}, "/elsewhere/s"),
        (None, {STATE_ENV: "rel"}, "/work/rel"),
        ("given", {STATE_ENV: "/elsewhere/s"}, "/work/given"),
        ("/abs/dir", {}, "/abs/dir"),
        ("", {STATE_ENV: ""}, "/work/.local-state"),
    ],
)
def test_resolve_state_dir(arg: str | None, env: dict[str, str], expected: str) -> None:
    assert resolve_state_dir(arg, env, "/work") == Path(expected)


def test_layout_paths(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path)
    assert layout.state_file == tmp_path / "state.json"
    assert layout.log("broker-a-0") == tmp_path / "logs" / "broker-a-0.log"
    assert layout.data("broker-a-0") == tmp_path / "data" / "broker-a-0"
    assert layout.run_config("broker-a-0") == tmp_path / "data" / "broker-a-0" / "conf" / "broker-a-0.conf"
    assert layout.config("broker-a-0") == tmp_path / "conf" / "broker-a-0.conf"
    assert layout.status("broker-a") == tmp_path / "status" / "broker-a.json"
    layout.ensure()
    assert all(p.is_dir() for p in (layout.conf_dir, layout.data_root, layout.logs_dir, layout.commands_dir))
    assert all(p.parent == tmp_path for p in layout.owned())
