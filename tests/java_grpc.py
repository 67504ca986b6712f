"""RocketMQ 5's Java gRPC client (`rocketmq-client-java`, apache/rocketmq-clients) for the tests: resolved once from
Maven Central into the project's cache, each jar checked against the `.sha1` Central publishes, and
`java/GrpcDefaultProduce.java` and `java/GrpcSimpleConsume.java` run with it, as a Java application with the
client's defaults would send and read (a SimpleConsumer that acks each message) through the Proxy.

`client_jar()` builds `<cache>/clients/rocketmq-client-java-<version>/` with `rocketmq/clients/pom.xml` (the
version pinned there and in `JAVA_GRPC_CLIENT_VERSION`; a unit test checks they agree) under a file lock, into a
staging directory renamed into place: an interrupted fetch leaves nothing half-made. Outside CI a missing
`mvn`/`javac` skips; under `CI=true` it fails (`real_parts.missing`).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from real_parts import missing

ROOT = Path(__file__).resolve().parents[1]
POM = ROOT / "rocketmq" / "clients" / "pom.xml"
SOURCES = tuple(
    Path(__file__).resolve().parent / "java" / f"{main}.java" for main in ("GrpcDefaultProduce", "GrpcSimpleConsume")
)
JAVA_GRPC_CLIENT_VERSION = "5.2.0"
ARTIFACT = f"rocketmq-client-java-{JAVA_GRPC_CLIENT_VERSION}"
MARKER = ".complete"


def client_dir() -> Path:
    from rocketmq_operator.platforms.local.distribution import cache_root

    return cache_root() / "clients" / ARTIFACT


def client_jars() -> list[Path]:
    """Every jar of the pinned client (one shaded jar for 5.2.0), fetched first if it is not in the cache."""
    from rocketmq_operator.platforms.local import distribution as dist

    target = client_dir()
    if not (target / MARKER).is_file():
        if shutil.which("mvn") is None:
            missing("no mvn on PATH (Maven fetches RocketMQ's Java gRPC client once)")
        target.parent.mkdir(parents=True, exist_ok=True)
        with dist.file_lock(target.parent / f".{ARTIFACT}.lock"):
            if not (target / MARKER).is_file():
                staging = Path(tempfile.mkdtemp(prefix=f".{ARTIFACT}.tmp-", dir=target.parent))
                try:
                    m2 = dist.maven_repo()
                    properties = {
                        "client.version": JAVA_GRPC_CLIENT_VERSION,
                        "clients.outputDirectory": str(staging / "repo"),
                        "clients.buildDirectory": str(staging / "build"),
                    }
                    dist.maven_package(
                        POM, properties, m2, lambda _line: None, f"rocketmq-client-java {JAVA_GRPC_CLIENT_VERSION}"
                    )
                    (staging / "lib").mkdir()
                    for jar in sorted((staging / "repo").rglob("*.jar")):
                        dist.check_published_sha1(jar, staging / "repo", m2)
                        jar.replace(staging / "lib" / jar.name)
                    shutil.rmtree(staging / "repo")
                    shutil.rmtree(staging / "build", ignore_errors=True)
                    (staging / MARKER).write_text(JAVA_GRPC_CLIENT_VERSION + "\n", encoding="utf-8")
                    shutil.rmtree(target, ignore_errors=True)
                    staging.rename(target)
                except BaseException:
                    shutil.rmtree(staging, ignore_errors=True)
                    raise
    return sorted((target / "lib").glob("*.jar"))


def compile_clients(out: Path) -> str:
    """`GrpcDefaultProduce` and `GrpcSimpleConsume` compiled into ``out``; returns the classpath that runs them."""
    javac = shutil.which("javac")
    if javac is None:
        missing("no javac on PATH (JDK 17 needed)")
    jars = ":".join(str(j) for j in client_jars())
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [javac, "--release", "17", "-cp", jars, "-d", str(out), *map(str, SOURCES)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return f"{out}:{jars}"


@dataclass
class JavaSends:
    acknowledged: set[str]
    failures: list[str]
    output: str


def produce(classpath: str, endpoint: str, topic: str, prefix: str, count: int, timeout: float = 300) -> JavaSends:
    """Runs the Java producer to the end: ``count`` keyed messages through the proxy at ``endpoint``."""
    java = shutil.which("java") or "java"
    proc = subprocess.run(
        [java, "-cp", classpath, "GrpcDefaultProduce", endpoint, topic, prefix, str(count)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = proc.stdout.splitlines()
    acknowledged = {line.split()[1] for line in lines if line.startswith("ok ")}
    failures = [line for line in lines if line.startswith("fail ")]
    if proc.returncode != 0 or "done" not in lines:
        failures.append(f"exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return JavaSends(acknowledged, failures, proc.stdout + proc.stderr)


@dataclass
class JavaReceipts:
    keys: set[str]  # every key received (duplicates folded)
    ack_failures: list[str]
    output: str


def receive(
    classpath: str, endpoint: str, topic: str, group: str, expected: set[str], idle_s: float = 20, timeout: float = 300
) -> JavaReceipts:
    """Runs the Java SimpleConsumer of ``group`` through the proxy at ``endpoint`` until every ``expected`` key was
    received or nothing arrived for ``idle_s``; AssertionError when it did not end with "done"."""
    java = shutil.which("java") or "java"
    with tempfile.NamedTemporaryFile("w", suffix=".keys", encoding="utf-8") as keys:
        keys.write("\n".join(sorted(expected)) + "\n")
        keys.flush()
        proc = subprocess.run(
            [java, "-cp", classpath, "GrpcSimpleConsume", endpoint, topic, group, str(idle_s), keys.name],
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and "done" in lines, (proc.returncode, (proc.stdout + proc.stderr)[-3000:])
    received = {line.split()[1] for line in lines if line.startswith("got ")}
    return JavaReceipts(received, [line for line in lines if line.startswith("ackfail ")], proc.stdout + proc.stderr)
