"""The pinned RocketMQ distribution builds, is intact, and a namesrv started from it answers on its port.

Needs JDK 17 (java) and, the first time, Maven with access to Maven Central. Without them the tests skip,
except under CI=true, where not getting the distribution is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from real_parts import missing
from rocketmq_operator.platforms.local import distribution as dist
from rocketmq_operator.render.jvm import JDK17_FLAGS, MAIN_CLASSES

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
POM = REPO / "rocketmq" / "dist" / "pom.xml"
PACKAGED_POM = REPO / "operator" / "rocketmq_operator" / "platforms" / "local" / "data" / "pom.xml"


def _unavailable(reason: str) -> None:
    missing(f"the RocketMQ distribution is unavailable: {reason}")


@pytest.fixture(scope="module")
def home() -> Path:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _unavailable("no java (JDK 17) on PATH")
    try:
        return dist.ensure_distribution()
    except (dist.DistributionError, OSError) as exc:
        _unavailable(f"ensure_distribution() failed: {exc}")
        raise  # unreachable: _unavailable raises


def test_version_is_pinned_in_one_place() -> None:
    match = re.search(r"<rocketmq\.version>([^<]+)</rocketmq\.version>", POM.read_text(encoding="utf-8"))
    assert match is not None
    assert match.group(1) == dist.ROCKETMQ_VERSION
    assert PACKAGED_POM.read_bytes() == POM.read_bytes(), "cp rocketmq/dist/pom.xml to the package data"


def test_distribution_layout(home: Path) -> None:
    assert home == dist.dist_dir()
    assert dist.is_complete(home)
    v = dist.ROCKETMQ_VERSION
    for module in dist.ROCKETMQ_MODULES:
        assert (home / "lib" / f"{module}-{v}.jar").is_file()
    assert sorted(p.name for p in (home / "conf").iterdir()) == sorted(dist.LOGBACK_CONFIGS)
    dist.verify_distribution(home)  # every jar matches SHA256SUMS
    assert dist.ensure_distribution() == home  # idempotent: marker present, nothing rebuilt


def test_java_command_shape(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    argv = dist.java_command("broker", conf, heap="128m", home=tmp_path / "rmq", extra=["-Dx=y"])
    assert argv[-3:] == [MAIN_CLASSES["broker"], "-c", str(conf.resolve())]
    assert "-Xmx128m" in argv and "-XX:MaxDirectMemorySize=128m" in argv
    assert f"-Duser.home={tmp_path}" in argv
    assert f"-Drocketmq.home.dir={tmp_path / 'rmq'}" in argv
    assert argv.index("-Dtls.server.mode=disabled") < argv.index("-Dx=y")
    # The jars first: a class-data archive records them as a prefix of the classpath (platforms/local/cds.py).
    assert argv[argv.index("-cp") + 1] == f"{tmp_path / 'rmq' / 'lib' / '*'}{os.pathsep}{tmp_path / 'rmq' / 'conf'}"
    ctl = dist.java_command("controller", conf, home=tmp_path, tls=True)
    assert set(JDK17_FLAGS["controller"]) <= set(ctl)
    assert "-Dtls.server.mode=disabled" not in ctl
    tools = dist.java_command("tools", None, args=["clusterList", "-n", "127.0.0.1:9876"], home=tmp_path)
    assert tools[-4:] == [MAIN_CLASSES["tools"], "clusterList", "-n", "127.0.0.1:9876"]
    # $ROCKETMQ_OPERATOR_JAVA_OPTS comes after the caller's extras, so its flags win.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(dist.JAVA_OPTS_ENV, "-XX:TieredStopAtLevel=1 '-Dy=a b'")
        tuned = dist.java_command("broker", conf, home=tmp_path, extra=["-Dx=y"])
    assert tuned.index("-Dx=y") < tuned.index("-XX:TieredStopAtLevel=1") < tuned.index("-Dy=a b") < tuned.index("-cp")
    assert dist.env_java_options({}) == []
    with pytest.raises(ValueError):
        dist.java_command("broker", None)
    with pytest.raises(ValueError):
        dist.java_command("mystery", conf)
    # A proxy reads rmq-proxy.json from -pc and runs in cluster mode (routes from the name servers).
    proxy = dist.java_command("proxy", conf, home=tmp_path)
    assert proxy[-5:] == [MAIN_CLASSES["proxy"], "-pc", str(conf.resolve()), "-pm", "cluster"]
    # RocketMQ's permissive TLS mode, not disabled: the Java gRPC client speaks TLS by default (docs/proxy.md).
    assert "-c" not in proxy and not any(f.startswith("-Dtls.server.mode=") for f in proxy)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def archives(home: Path) -> Path:
    """The class-data archives `local dist-path` makes (make test's prepare-rocketmq made them already)."""
    from rocketmq_operator.platforms.local.cds_training import train_archives

    assert train_archives(home, dist.ROCKETMQ_VERSION, log=print), "the training run made no archives"
    return home


@pytest.fixture
def namesrv(archives: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, Path]]:
    port = _free_port()
    conf = tmp_path / "namesrv.conf"
    conf.write_text(f"listenPort={port}\n", encoding="utf-8")
    log = tmp_path / "stdout.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            dist.java_command("namesrv", conf, heap="128m", home=archives),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            start_new_session=True,
        )
    try:
        yield proc, port, log
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.timeout(120)
def test_namesrv_starts_and_answers(namesrv: tuple[subprocess.Popen[bytes], int, Path]) -> None:
    proc, port, log = namesrv
    deadline = time.monotonic() + 60
    while not _answers(port):
        if proc.poll() is not None:
            pytest.fail(f"namesrv exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"namesrv did not listen on {port} within 60 s:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)
    user_home = log.parent
    assert (user_home / "logs" / "rocketmqlogs" / "namesrv.log").is_file(), "logs must go under -Duser.home"
    # The name server's classes come from the class-data archive: the JVM has the file mapped, and said nothing
    # about being unable to use it.
    maps = Path(f"/proc/{proc.pid}/maps").read_text(encoding="utf-8")
    assert "namesrv.jsa" in maps, [line for line in maps.splitlines() if ".jsa" in line]
    assert "Unable to use shared archive" not in log.read_text(errors="replace")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) is not None
