"""The one-node cluster's machine record: a record whose processes are gone is stale, not a running node.

The record lives in the cache, and the cache outlives processes (a run killed with its machine; a CI cache
restored on a fresh machine). A stale record must not refuse the next `up` (CI once failed every e2e test so).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import k8s_scripts

ROOT = Path(__file__).resolve().parents[2]


node = k8s_scripts.load("node")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ROCKETMQ_OPERATOR_CACHE", str(tmp_path / "cache"))
    return tmp_path


def _record(state: Path) -> None:
    path = node.registry_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"state_dir": str(state), "started": 0.0, "sysctls": {}}))


@pytest.fixture
def kubelet_like(cache: Path) -> Iterator[Path]:
    """A live process that looks like the node's kubelet for a state dir (python, run under that name)."""
    state = cache / "k8s-node0"
    fake = cache / "bin" / "kubelet"
    fake.parent.mkdir()
    fake.symlink_to(sys.executable)
    root_dir = f"--root-dir={state}/node/kubelet"
    proc = subprocess.Popen([str(fake), "-c", "import time; time.sleep(60)", root_dir])
    try:
        # Until the child has exec'd, /proc shows the parent's command line (a failed make test at load 9 read it
        # so): wait for its own, an event, not a time.
        cmdline = Path(f"/proc/{proc.pid}/cmdline")
        while root_dir.encode() not in cmdline.read_bytes():
            assert proc.poll() is None, "the kubelet-like process exited"
        yield state
    finally:
        proc.kill()
        proc.wait()


def test_no_record_is_no_node(cache: Path) -> None:
    assert node.running_node() is None


def test_a_record_whose_processes_are_gone_is_stale(cache: Path) -> None:
    _record(cache / "gone")  # the state dir went with the machine's /tmp
    assert node.running_node() is None
    _record(cache)  # the state dir is there, its processes are not
    assert node.running_node() is None


def test_a_record_with_a_live_node_process_is_a_running_node(kubelet_like: Path) -> None:
    _record(kubelet_like)
    running = node.running_node()
    assert running is not None and running["state_dir"] == str(kubelet_like)
