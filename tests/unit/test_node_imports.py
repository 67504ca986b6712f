"""The e2e node's background image imports (k8s/node.py): `wait_for_images` returns once every archive's import
left its `.done` marker, and raises naming the archive whose import failed, with the importer's output."""

from __future__ import annotations

from pathlib import Path

import pytest

import k8s_scripts

node = k8s_scripts.load("node")


def _mark(state: Path, name: str, *suffixes: str, log: str = "") -> Path:
    marks = state / node.IMPORTS_DIR
    marks.mkdir(parents=True, exist_ok=True)
    for suffix in suffixes:
        Path(f"{marks / name}{suffix}").write_text("", encoding="utf-8")
    if log:
        Path(f"{marks / name}.log").write_text(log, encoding="utf-8")
    return state / name


def test_waits_for_every_archive_and_says_how_long_each_took(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archives = [
        _mark(tmp_path, "broker-1.tar", ".started", ".done"),
        _mark(tmp_path, "operator-2.tar", ".started", ".done"),
    ]
    node.wait_for_images(tmp_path, archives, timeout=5)
    out = capsys.readouterr().out + capsys.readouterr().err
    assert "imported broker-1.tar in" in out and "imported operator-2.tar in" in out


def test_a_failed_import_is_named_with_its_output(tmp_path: Path) -> None:
    archives = [
        _mark(tmp_path, "broker-1.tar", ".started", ".done"),
        _mark(tmp_path, "spark-3.tar", ".started", ".failed", log="ctr: no space left on device"),
    ]
    with pytest.raises(node.HarnessError, match=r"spark-3\.tar.*no space left on device"):
        node.wait_for_images(tmp_path, archives, timeout=5)


def test_an_import_that_never_ends_is_named_at_the_deadline(tmp_path: Path) -> None:
    archives = [_mark(tmp_path, "spark-3.tar", ".started")]
    with pytest.raises(node.HarnessError, match=r"spark-3\.tar .*did not finish"):
        node.wait_for_images(tmp_path, archives, timeout=0)


def test_later_archives_start_only_after_every_first_one_ended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real detached shell with a `ctr` that logs its start and end: the Spark archive's import starts after
    the three the tests need at once have ended (one of them failing does not hold it back)."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    events = tmp_path / "events"
    ctr = fake_bin / "ctr"
    ctr.write_text(
        '#!/bin/sh\nfor a; do last=$a; done\nname=$(basename "$last")\necho "start $name" >>"$EVENTS"\n'
        'sleep 0.2\necho "end $name" >>"$EVENTS"\ncase "$name" in bad*) exit 1;; esac\n',
        encoding="utf-8",
    )
    ctr.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}:{Path('/usr/bin')}:{Path('/bin')}")
    monkeypatch.setenv("EVENTS", str(events))
    archives = []
    for name in ("broker-1.tar", "bad-2.tar", "operator-3.tar", "spark-4.tar"):
        (tmp_path / name).write_bytes(b"")
        archives.append(tmp_path / name)
    state = tmp_path / "state"
    node.import_images_in_background(state, archives[:3], later=archives[3:])
    with pytest.raises(node.HarnessError, match=r"bad-2\.tar"):
        node.wait_for_images(state, archives[:3], timeout=30)
    node.wait_for_images(state, archives[3:], timeout=30)
    lines = events.read_text(encoding="utf-8").splitlines()
    spark_start = lines.index("start spark-4.tar")
    assert {f"end {a.name}" for a in archives[:3]} <= set(lines[:spark_start]), lines
