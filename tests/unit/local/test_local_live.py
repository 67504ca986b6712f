"""Live terminal views of the local platform: `local status --watch` redrawn in place on a terminal (appended, as
before, anywhere else), Ctrl-C on `local status --watch` (130, quietly) and on `local up` (what is left running
and how to stop it). No RocketMQ process: the observation and the start are replaced."""

from __future__ import annotations

import asyncio
import io
import itertools
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from rocketmq_operator.platforms.local import lifecycle
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.report import render_table

QUICKSTART = Path(__file__).resolve().parents[3] / "examples" / "quickstart.yaml"


def status_doc(n: int) -> dict[str, Any]:
    return {
        "stateDir": "/s",
        "observedAt": f"2026-01-01T00:00:0{n}Z",
        "supervisor": {"pid": 7, "running": True, "phase": "running"},
        "nameServers": ["127.0.0.1:1"],
        "controllers": ["127.0.0.1:2"],
        "groups": [
            {"name": "g", "master": {"brokerId": 1, "replica": "g-0", "epoch": n}, "needAcks": 2, "writable": True,
             "replicas": [{"name": "g-0", "brokerId": 1, "role": "master", "alive": True, "inSync": True,
                           "maxOffset": 10 * n, "pid": 101, "restarts": 0}],
             "syncStateSet": {"members": [1], "epoch": n}, "conditions": []},
        ],
        "processes": [],
    }  # fmt: skip


@pytest.fixture
def three_frames(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """`status --watch` observes status_doc(1), (2), (3); the third sleep is a Ctrl-C."""
    docs = iter([status_doc(1), status_doc(2), status_doc(3)])
    sleeps: list[float] = []

    async def collect(state: Any, layout: Any) -> dict[str, Any]:
        return next(docs)

    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        if threading.current_thread() is not threading.main_thread():  # patched process-wide: other threads sleep too
            real_sleep(seconds)
            return
        sleeps.append(seconds)
        if len(sleeps) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(lifecycle, "read_state", lambda path: object())
    monkeypatch.setattr(lifecycle, "collect", collect)
    monkeypatch.setattr(lifecycle.time, "sleep", sleep)
    return sleeps


def test_watch_not_on_a_terminal_appends_every_observation_as_before(
    tmp_path: Path, three_frames: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    lines: list[str] = []
    code = lifecycle.status(tmp_path, watch=2.0, out=lines.append)
    expected: list[str] = []
    for n in (1, 2, 3):
        expected += [f"--- 2026-01-01T00:00:0{n}Z", render_table(status_doc(n))]
    assert lines == expected
    assert code == 130 and three_frames == [2.0, 2.0, 2.0]
    assert capsys.readouterr().err == ""  # Ctrl-C: nothing runs because of a watch, nothing to say


def test_watch_on_a_terminal_redraws_in_place(tmp_path: Path, three_frames: list[float]) -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=200, height=50)
    lines: list[str] = []
    code = lifecycle.status(tmp_path, watch=2.0, out=lines.append, console=console)
    assert code == 130 and lines == []  # nothing appended through out
    text = screen.getvalue()
    # Every frame but the first moves the cursor back up over the previous one (rich's Live) and erases it.
    assert text.count("\x1b[2K") >= 2 * len(render_table(status_doc(1)).splitlines())
    assert "\x1b[1A" in text
    assert "--- 2026-01-01T00:00:03Z  (every 2s; Ctrl-C to stop)" in text
    for line in render_table(status_doc(3)).splitlines():  # the table is core.status_view's, unchanged
        assert line.rstrip() in text


def test_status_once_ignores_the_console(tmp_path: Path, three_frames: list[float]) -> None:
    screen = io.StringIO()
    lines: list[str] = []
    code = lifecycle.status(tmp_path, out=lines.append, console=Console(file=screen, force_terminal=True))
    assert code == 0 and lines == [render_table(status_doc(1))] and screen.getvalue() == ""


@pytest.fixture
def up_stubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    """`local up` with valid (empty) manifests whose start is `_up`'s stub: no distribution, no process."""
    monkeypatch.setattr(lifecycle, "validate", lambda files: ([], [], [], {}))
    monkeypatch.setattr(lifecycle, "check_names", lambda resources: None)
    monkeypatch.setattr(lifecycle, "_up", lambda *a, **k: 0)


def test_ctrl_c_during_up_wait_says_what_is_still_running_and_how_to_stop_it(
    tmp_path: Path, up_stubbed: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def interrupted(*args: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(lifecycle, "wait_ready", interrupted)
    monkeypatch.setattr(lifecycle, "our_pids", lambda layout: [101, 102, 103, 104])
    code = lifecycle.up([str(QUICKSTART)], tmp_path, wait=True, out=lambda text: None)
    assert code == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"interrupted: still running: 4 processes from {tmp_path}; "
        f"stop them: rocketmq-operator local down --state-dir {tmp_path}"
    ]


def test_ctrl_c_before_anything_started_says_nothing_runs(
    tmp_path: Path, up_stubbed: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(lifecycle, "_up", interrupted)
    monkeypatch.setattr(lifecycle, "our_pids", lambda layout: [])
    assert lifecycle.up([str(QUICKSTART)], tmp_path, out=lambda text: None) == 130
    assert capsys.readouterr().err.strip() == f"interrupted: nothing runs from {tmp_path}"


def ready_after_two_polls(monkeypatch: pytest.MonkeyPatch, routes_served: Sequence[bool] = (True,)) -> None:
    """`wait_ready` sees the group half there, then ready; nothing answers on a port (no phase-0 replica). Once
    the group is ready, the name servers serve routes as ``routes_served`` says, poll by poll."""
    docs_seen: list[dict[str, Any]] = []
    half = status_doc(1)
    half["groups"][0]["master"] = {}
    half["groups"][0]["syncStateSet"] = {"members": []}
    docs = itertools.chain([half], itertools.repeat(status_doc(2)))
    served = iter(routes_served)

    async def serve_routes(state: Any) -> bool:
        return next(served)

    class State:
        replicas: list[Any] = []

    async def collect(state: Any, layout: Any) -> dict[str, Any]:
        doc = next(docs)
        docs_seen.append(doc)
        return doc

    async def no_sleep(seconds: float) -> None:
        return None

    monkeypatch.setattr(lifecycle, "read_state", lambda path: State())
    monkeypatch.setattr(lifecycle, "supervisor_running", lambda state: True)
    monkeypatch.setattr(lifecycle, "collect", collect)
    monkeypatch.setattr(lifecycle, "name_servers_serve_routes", serve_routes)
    monkeypatch.setattr(lifecycle.asyncio, "sleep", no_sleep)


def test_wait_ready_not_on_a_terminal_prints_each_new_progress_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ready_after_two_polls(monkeypatch)
    lines: list[str] = []
    assert asyncio.run(lifecycle.wait_ready(StateLayout(tmp_path), 60.0, lines.append)) == 0
    assert [line.split("] ", 1)[1] for line in lines[:2]] == [
        "g: 1/1 brokers answer, no master yet, SyncStateSet [] (0/1)",
        "g: 1/1 brokers answer, master g-0 (id 1, epoch 2), SyncStateSet [1] (1/1)",
    ]
    assert len(lines) == 3 and lines[2].startswith("ready after ")


def test_wait_ready_waits_for_the_name_servers_to_serve_routes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A group ready within its name servers' needWaitForService window: not ready until they serve routes (a
    client's first lookup would be refused), said once."""
    ready_after_two_polls(monkeypatch, routes_served=(False, False, True))
    lines: list[str] = []
    assert asyncio.run(lifecycle.wait_ready(StateLayout(tmp_path), 60.0, lines.append)) == 0
    waits = [line for line in lines if "name servers: not serving routes yet" in line]
    assert len(waits) == 1 and lines[-1].startswith("ready after ")


def test_wait_ready_on_a_terminal_is_one_updating_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ready_after_two_polls(monkeypatch)
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=200)
    lines: list[str] = []
    assert asyncio.run(lifecycle.wait_ready(StateLayout(tmp_path), 60.0, lines.append, console)) == 0
    # stdout keeps only the last state and the verdict; the progress went to the terminal's updating line
    assert len(lines) == 2 and lines[0].endswith("SyncStateSet [1] (1/1)") and lines[1].startswith("ready after ")
    assert "no master yet" in screen.getvalue()


def fake_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ensure_distribution` as a build from nothing: its phases, then its one kept log line."""

    def ensure(log: Any = print, phase: Any = None) -> Path:
        if phase is not None:
            phase("downloading RocketMQ 5.5.0 from Maven Central")
            time.sleep(0.3)
            phase("verifying the jars against Maven Central's .sha1")
            time.sleep(0.3)
        log("rocketmq-operator: RocketMQ 5.5.0 ready in /dist (120 jars)")
        return Path("/dist")

    monkeypatch.setattr(lifecycle, "ensure_distribution", ensure)


def test_prepare_shows_the_download_and_verification_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_build(monkeypatch)
    screen = io.StringIO()
    assert lifecycle.prepare_distribution(Console(file=screen, force_terminal=True, width=200)) == Path("/dist")
    text = screen.getvalue()
    assert "downloading RocketMQ 5.5.0 from Maven Central" in text
    assert "verifying the jars against Maven Central's .sha1" in text
    assert "RocketMQ 5.5.0 ready in /dist (120 jars)" in text  # the kept line stays, above the spinner


def test_prepare_not_on_a_terminal_prints_only_its_log_lines(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_build(monkeypatch)
    lines: list[str] = []
    assert lifecycle.dist_path(out=lines.append) == 0 and lines == ["/dist"]
    assert capsys.readouterr().err == "rocketmq-operator: RocketMQ 5.5.0 ready in /dist (120 jars)\n"


def test_down_names_the_processes_it_stops() -> None:
    class Replica:
        def __init__(self, name: str, pid: int | None) -> None:
            self.name, self.pid = name, pid

    class State:
        replicas = [Replica("ctl-0", 11), Replica("broker-a-0", 12), Replica("broker-a-1", None)]

    assert lifecycle.stopping_text(State(), 10) == (  # type: ignore[arg-type]
        "stopping the supervisor (pid 10) and 2 processes: ctl-0, broker-a-0"
    )
