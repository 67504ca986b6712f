"""state.json: lossless round trip, atomic writes, refusal of other formats, pid ownership checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocketmq_operator.platforms.local.state import (
    FORMAT,
    GroupInfo,
    LocalState,
    ReplicaProcess,
    StateError,
    SupervisorInfo,
    argv_of,
    pid_alive,
    read_state,
    write_state,
)


def sample() -> LocalState:
    replica = ReplicaProcess(
        name="broker-a-0", role="broker", group="broker-a", kind="BrokerGroup", ordinal=0, phase=1,
        address="127.0.0.1:22904", ports={"listen": 22904, "vip": 22902, "ha": 22905},
        argv=["java", "-c", "/s/data/broker-a-0/conf/broker-a-0.conf"], config="/s/conf/broker-a-0.conf",
        run_config="/s/data/broker-a-0/conf/broker-a-0.conf", data_dir="/s/data/broker-a-0",
        log="/s/logs/broker-a-0.log", pid=1234, restarts=2, starts=3, started_at=1.5, last_exit_at=1.0,
        last_exit_code=-9, suspended=True, failures=2, next_start_at=None, desired="stopped",
    )  # fmt: skip
    return LocalState(
        state_dir="/s",
        manifest_digest="abc",
        files=["/x/quickstart.yaml"],
        resources=[{"kind": "BrokerGroup", "metadata": {"name": "broker-a"}}],
        rocketmq_version="5.5.0",
        distribution="/dist",
        groups=[
            GroupInfo("rocketmq-ctl", "ControllerGroup", ["rocketmq-ctl-0"], ["127.0.0.1:1"], ["127.0.0.1:2"]),
            GroupInfo(
                "broker-a", "BrokerGroup", ["broker-a-0"], ["127.0.0.1:1"], ["127.0.0.1:2"], "rocketmq-ctl", True
            ),
        ],
        replicas=[replica],
        supervisor=SupervisorInfo(pid=99, phase="running", started_at=0.5),
        updated_at=2.0,
    )


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_state(path, sample())
    assert read_state(path) == sample()
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT
    assert data["nameServers"] == ["127.0.0.1:1"] and data["controllers"] == ["127.0.0.1:2"]
    assert data["replicas"][0]["runConfig"] == "/s/data/broker-a-0/conf/broker-a-0.conf"  # camelCase keys
    assert data["replicas"][0]["lastExitCode"] == -9
    assert data["groups"][1]["controllerMode"] is True


def test_write_is_atomic_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    write_state(path, sample())
    state = sample()
    state.replicas[0].restarts = 7
    write_state(path, state)
    assert read_state(path).replicas[0].restarts == 7
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_unknown_keys_are_ignored_for_forward_compatibility(tmp_path: Path) -> None:
    data = sample().to_json()
    data["replicas"][0]["somethingNew"] = 1
    data["groups"][0]["alsoNew"] = True
    assert LocalState.from_json(data) == sample()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist"),
        ("{not json", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"format": 99}', "format 99"),
        (json.dumps({"format": FORMAT}), "malformed"),
    ],
)
def test_bad_files(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "state.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(StateError, match=message):
        read_state(path)


def test_pid_alive_checks_the_command_line(tmp_path: Path) -> None:
    marker = str(tmp_path / "marker-arg")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        # Right after exec the kernel may not have published the new argv yet (/proc/<pid>/cmdline is empty).
        deadline = time.monotonic() + 5
        while not argv_of(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pid_alive(proc.pid, marker)
        assert not pid_alive(proc.pid, str(tmp_path / "someone-else"))
        assert (argv_of(proc.pid) or [])[-1] == marker
    finally:
        proc.kill()
        proc.wait()
    assert not pid_alive(proc.pid, marker)
    assert not pid_alive(None, marker)
    assert not pid_alive(0, marker)
    assert pid_alive(os.getpid(), "") or argv_of(os.getpid()) is not None
