"""Class-data sharing flags of the local JVMs (platforms/local/cds.py): which archive a role maps, none without
one, the training flag, and an archive keyed by the java that made it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketmq_operator.platforms.local import distribution as dist
from rocketmq_operator.platforms.local.cds import TRAIN_ENV, archive_dir, archive_flags, java_key


@pytest.fixture
def java(tmp_path: Path) -> str:
    exe = tmp_path / "jdk" / "bin" / "java"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n", encoding="utf-8")
    exe.chmod(0o755)
    return str(exe)


def _archives(home: Path, java: str, *names: str) -> Path:
    target = archive_dir(home, java)
    target.mkdir(parents=True)
    for name in names:
        (target / name).write_bytes(b"archive")
    return target


@pytest.mark.parametrize(
    ("role", "archive"),
    [("broker", "broker.jsa"), ("namesrv", "namesrv.jsa"), ("controller", "namesrv.jsa"), ("tools", None)],
)
def test_each_server_role_maps_its_archive_and_tools_none(
    tmp_path: Path, java: str, role: str, archive: str | None
) -> None:
    target = _archives(tmp_path, java, "broker.jsa", "namesrv.jsa")
    flags = archive_flags(role, tmp_path, java, tmp_path / "x.conf", {})
    assert flags == ([f"-XX:SharedArchiveFile={target / archive}"] if archive else [])


def test_no_archive_no_flag(tmp_path: Path, java: str) -> None:
    _archives(tmp_path, java, "namesrv.jsa")  # the broker's is missing: a broker starts as it always did
    assert archive_flags("broker", tmp_path, java, tmp_path / "b.conf", {}) == []


def test_training_writes_one_archive_per_process_named_after_its_config(tmp_path: Path, java: str) -> None:
    _archives(tmp_path, java, "broker.jsa")
    env = {TRAIN_ENV: str(tmp_path / "out")}
    flags = archive_flags("broker", tmp_path, java, tmp_path / "conf" / "broker-a-0.conf", env)
    assert flags == [f"-XX:ArchiveClassesAtExit={tmp_path / 'out' / 'broker-a-0.jsa'}"]
    assert archive_flags("tools", tmp_path, java, None, env) == []


def test_an_archive_belongs_to_the_java_that_made_it(tmp_path: Path, java: str) -> None:
    before = java_key(java)
    assert java_key(java) == before
    stat = os.stat(java)
    os.utime(java, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # another JDK build in its place
    assert java_key(java) != before
    assert java_key(str(tmp_path / "no-such-java")) == "unknown-java"


def test_java_command_maps_the_archive_before_the_users_flags(
    tmp_path: Path, java: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(Path(java).parents[1]))
    monkeypatch.setenv(dist.JAVA_OPTS_ENV, "-Xshare:off")  # a user's way out: later flags win
    target = _archives(tmp_path, java, "broker.jsa", "namesrv.jsa")
    argv = dist.java_command("broker", tmp_path / "b.conf", home=tmp_path)
    flag = f"-XX:SharedArchiveFile={target / 'broker.jsa'}"
    assert argv[0] == java and flag in argv and argv.index(flag) < argv.index("-Xshare:off") < argv.index("-cp")
