"""The supervisor's life cycle with stand-in processes (python instead of java): start order, restart after a
back-off, --no-restart, SIGSTOP is not an exit, start requests, and a clean stop on SIGTERM."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rocketmq_operator.platforms.local import lifecycle
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.state import (
    RUNNING,
    STOPPED,
    GroupInfo,
    LocalState,
    ReplicaProcess,
    pid_alive,
    read_state,
    write_state,
)

SERVER = (
    "import socket, sys, time\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
    "while True: time.sleep(1)\n"
)
SLEEPER = "import time\nwhile True: time.sleep(1)\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def replica(layout: StateLayout, name: str, phase: int, argv: list[str], ports: dict[str, int]) -> ReplicaProcess:
    config = layout.config(name)
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"# {name}\n")
    run_config = layout.run_config(name)
    return ReplicaProcess(
        name=name, role="namesrv" if phase == 0 else "broker", group="g", kind="BrokerGroup", ordinal=0,
        phase=phase, address=f"127.0.0.1:{next(iter(ports.values()), 0)}", ports=ports,
        argv=[*argv, str(run_config)], config=str(config), run_config=str(run_config),
        data_dir=str(layout.data(name)), log=str(layout.log(name)),
    )  # fmt: skip


@pytest.fixture
def supervised(tmp_path: Path) -> Iterator[StateLayout]:
    layout = StateLayout(tmp_path / "state")
    layout.ensure()
    port = free_port()
    state = LocalState(
        state_dir=str(layout.root),
        manifest_digest="d",
        files=[],
        resources=[],
        rocketmq_version="test",
        distribution="/none",
        groups=[GroupInfo("g", "BrokerGroup", ["ns-0", "b-0"])],
        replicas=[
            replica(layout, "ns-0", 0, [sys.executable, "-c", SERVER, str(port)], {"namesrv": port}),
            replica(layout, "b-0", 1, [sys.executable, "-c", SLEEPER], {}),
        ],
    )
    write_state(layout.state_file, state)
    proc = lifecycle._spawn_supervisor(layout)
    try:
        lifecycle._wait_started(layout, proc)
        yield layout
    finally:
        lifecycle.down(layout.root, out=lambda _: None)
        proc.wait(timeout=30)


def wait_for(what: str, check: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def current(layout: StateLayout, name: str) -> ReplicaProcess:
    r = read_state(layout.state_file).replica(name)
    assert r is not None
    return r


def test_life_cycle(supervised: StateLayout) -> None:
    layout = supervised
    state = read_state(layout.state_file)
    assert state.supervisor.pid is not None and pid_alive(state.supervisor.pid, str(layout.root))
    ns, broker = current(layout, "ns-0"), current(layout, "b-0")
    assert ns.started_at is not None and broker.started_at is not None
    assert broker.started_at >= ns.started_at  # brokers only after the name server answers
    assert Path(broker.run_config).read_text() == "# b-0\n"  # the config was copied to the volume
    assert "start #1 of b-0" in Path(broker.log).read_text()

    # SIGKILL: restarted after the first back-off step (1 s)
    old_pid = broker.pid
    assert lifecycle.kill(layout.root, "b-0", sig="KILL", out=lambda _: None) == 0
    wait_for("restart", lambda: current(layout, "b-0").pid not in (None, old_pid))
    broker = current(layout, "b-0")
    assert broker.restarts == 1 and broker.last_exit_code == -9
    assert broker.started_at is not None and broker.last_exit_at is not None
    assert broker.started_at - broker.last_exit_at >= 0.9
    assert pid_alive(broker.pid, broker.run_config)

    # SIGSTOP is a suspension, not an exit; CONT resumes
    assert lifecycle.kill(layout.root, "b-0", sig="STOP", out=lambda _: None) == 0
    time.sleep(1.5)
    stopped = current(layout, "b-0")
    assert stopped.suspended and stopped.pid == broker.pid and stopped.restarts == 1
    assert lifecycle.kill(layout.root, "b-0", sig="CONT", out=lambda _: None) == 0
    wait_for("resume", lambda: not current(layout, "b-0").suspended)

    # --no-restart keeps it down until `start`
    assert lifecycle.kill(layout.root, "b-0", sig="TERM", no_restart=True, out=lambda _: None) == 0
    wait_for("exit", lambda: current(layout, "b-0").pid is None)
    time.sleep(2.5)
    down = current(layout, "b-0")
    assert down.pid is None and down.desired == STOPPED and down.restarts == 1
    lines: list[str] = []
    assert lifecycle.start(layout.root, "b-0", out=lines.append) == 0
    assert lines and lines[0].startswith("started b-0")
    up = current(layout, "b-0")
    assert up.pid is not None and up.desired == RUNNING and up.restarts == 2

    # unknown replica: a clear refusal
    assert lifecycle.kill(layout.root, "nope", out=lambda _: None) == 1


def test_down_stops_everything(supervised: StateLayout) -> None:
    layout = supervised
    state = read_state(layout.state_file)
    pids = [(r.pid, r.run_config) for r in state.replicas]
    assert lifecycle.down(layout.root, out=lambda _: None) == 0
    after = read_state(layout.state_file)
    assert after.supervisor.pid is None
    assert all(r.pid is None for r in after.replicas)
    assert not any(pid_alive(pid, needle) for pid, needle in pids)
    assert lifecycle.kill(layout.root, "b-0", out=lambda _: None) == 3  # nobody to ask any more: not running


def test_down_purge_kills_at_once_and_deletes_everything(supervised: StateLayout) -> None:
    """`local down --purge` deletes the data: a graceful stop (7-12 s a broker) keeps nothing, so the supervisor
    and every process are killed at once; none is left, and neither is the state directory."""
    layout = supervised
    state = read_state(layout.state_file)
    pids = [(r.pid, r.run_config) for r in state.replicas]
    supervisor = state.supervisor.pid
    said: list[str] = []
    assert lifecycle.down(layout.root, purge=True, out=said.append) == 0
    assert any("at once" in line for line in said), said
    assert not any(pid_alive(pid, needle) for pid, needle in pids)
    assert supervisor is not None and not pid_alive(supervisor, str(layout.root))
    assert not layout.root.exists()
