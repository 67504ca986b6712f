"""The pinned Apache RocketMQ distribution for the local platform, and the java command lines that run it.

Contract:

* `ROCKETMQ_VERSION` is the pinned release. `rocketmq/dist/pom.xml` (shipped as package data in
  `data/pom.xml`, an identical copy) pins the same value; Maven is always called with
  `-Drocketmq.version=<version>`, so this constant is what gets built.
* `dist_dir(version)` is `<cache>/dist/rocketmq-<version>/`, `<cache>` being `$ROCKETMQ_OPERATOR_CACHE` or
  `~/.cache/rocketmq-operator`. A complete distribution holds:
  - `lib/`: every jar of rocketmq-broker, -namesrv, -controller, -proxy, -tools, -client and their runtime
    dependencies, as resolved from Maven Central;
  - `conf/`: `rmq.<role>.logback.xml` for broker, namesrv, controller, tools and proxy, extracted unchanged
    from the module jars (they log to `${user.home}/logs/rocketmqlogs`, and `java_command` sets `user.home`);
  - `SHA256SUMS`: `sha256sum -c` manifest of `lib/`;
  - `.complete`: the marker, written last, holding the version.
* `ensure_distribution()` returns the directory, building it only when the marker is missing. It runs
  `mvn -q -B -C` (strict checksums: Maven fails on a jar that does not match the `.sha1` Central publishes),
  with the Maven local repository (`$ROCKETMQ_OPERATOR_M2_REPO` or `~/.m2/repository`) as download cache,
  then checks every jar again against that `.sha1` (fetched from Central when the local repository lacks it).
  It builds in a temporary sibling directory and renames it into place, under a file lock: interrupting it
  leaves no half-built distribution, and concurrent callers build once. Raises `DistributionError`.
* `java_command(role, config_file, ...)` is the full argv for `namesrv`, `broker`, `controller` or `tools`:
  java, `render.jvm.jvm_options` (heap, direct memory, GC, the JDK 17 module flags), for servers
  `-Dtls.server.mode=disabled` unless `tls=True` or the role is a proxy (RocketMQ's permissive default: TLS and
  plain-text gRPC clients both; see `render.jvm.TLS_DISABLED_FLAGS`), caller extras, then
  the class-data sharing flags (`cds.archive_flags`: the role's archive when one was made), the flags of
  `$ROCKETMQ_OPERATOR_JAVA_OPTS` (shell words; `make test` sets its JIT flags: see `JAVA_OPTS_ENV`),
  `-Djava.library.path` (RocksDB's JNI library, extracted once: `rocksdb_library_dir`), `-Drocketmq.home.dir`,
  `-Drmq.logback.configurationFile`, `-Duser.home` (default: the config file's
  directory, so logs and default store paths stay out of `~`), `-cp lib/*:conf`, the main class, `-c <file>`
  for servers, then `args`. It builds nothing (it extracts RocksDB's JNI library once per distribution).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path

from rocketmq_operator.platforms.local.cds import archive_flags
from rocketmq_operator.render.jvm import (
    JDK17_FLAGS,
    MAIN_CLASSES,
    ROLES,
    TLS_DISABLED_FLAGS,
    jdk17_module_flags,
    jvm_options,
)

__all__ = [
    "JDK17_FLAGS",
    "LOGBACK_CONFIGS",
    "MAIN_CLASSES",
    "MARKER",
    "ROCKETMQ_MODULES",
    "ROCKETMQ_VERSION",
    "TLS_DISABLED_FLAGS",
    "DistributionError",
    "cache_root",
    "check_published_sha1",
    "dist_dir",
    "ensure_distribution",
    "is_complete",
    "java_command",
    "jdk17_module_flags",
    "maven_package",
    "maven_repo",
    "verify_distribution",
]

ROCKETMQ_VERSION = "5.5.0"

GROUP_ID = "org.apache.rocketmq"
ROCKETMQ_MODULES: tuple[str, ...] = (
    "rocketmq-broker",
    "rocketmq-namesrv",
    "rocketmq-controller",
    "rocketmq-proxy",
    "rocketmq-tools",
    "rocketmq-client",
)
# conf/<file> ← the module jar it is a resource of
LOGBACK_CONFIGS: dict[str, str] = {
    "rmq.broker.logback.xml": "rocketmq-broker",
    "rmq.namesrv.logback.xml": "rocketmq-namesrv",
    "rmq.controller.logback.xml": "rocketmq-controller",
    "rmq.tools.logback.xml": "rocketmq-tools",
    "rmq.proxy.logback.xml": "rocketmq-proxy",
}
MARKER = ".complete"
SHA256SUMS = "SHA256SUMS"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
MAVEN_TIMEOUT_SECONDS = 1800

Log = Callable[[str], object]


class DistributionError(RuntimeError):
    """The RocketMQ distribution could not be built or is not intact."""


def cache_root() -> Path:
    """`$ROCKETMQ_OPERATOR_CACHE`, or `~/.cache/rocketmq-operator`."""
    env = os.environ.get("ROCKETMQ_OPERATOR_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "rocketmq-operator"


def dist_dir(version: str = ROCKETMQ_VERSION) -> Path:
    return cache_root() / "dist" / f"rocketmq-{version}"


def maven_repo() -> Path:
    env = os.environ.get("ROCKETMQ_OPERATOR_M2_REPO")
    return Path(env).expanduser() if env else Path.home() / ".m2" / "repository"


def is_complete(path: Path, version: str = ROCKETMQ_VERSION) -> bool:
    marker = path / MARKER
    try:
        return marker.read_text(encoding="utf-8").strip() == version
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------- building


@contextlib.contextmanager
def _pom_file() -> Iterator[Path]:
    """The repository's rocketmq/dist/pom.xml when running from a checkout, else the packaged copy."""
    checkout = Path(__file__).resolve().parents[4] / "rocketmq" / "dist" / "pom.xml"
    if checkout.is_file():
        yield checkout
        return
    packaged = resources.files(__package__ or "rocketmq_operator.platforms.local").joinpath("data/pom.xml")
    with resources.as_file(packaged) as path:
        if not path.is_file():
            raise DistributionError("no pom.xml: neither rocketmq/dist/pom.xml nor the packaged data/pom.xml")
        yield path


@contextlib.contextmanager
def file_lock(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _digest(path: Path, algorithm: str) -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _published_sha1(relative: Path, m2: Path) -> str:
    """The `.sha1` Maven Central publishes for `relative` (a repository-layout path)."""
    local = m2 / relative.parent / (relative.name + ".sha1")
    if local.is_file():
        text = local.read_text(encoding="ascii", errors="replace")
    else:
        url = f"{MAVEN_CENTRAL}/{relative.as_posix()}.sha1"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                text = response.read().decode("ascii", errors="replace")
        except OSError as exc:
            raise DistributionError(f"cannot fetch {url}: {exc}") from exc
    token = text.split()[0].lower() if text.split() else ""
    if len(token) != 40:
        raise DistributionError(f"malformed checksum for {relative}: {text[:80]!r}")
    return token


def _run_maven(pom: Path, version: str, out: Path, build: Path, m2: Path, log: Log) -> None:
    properties = {"rocketmq.version": version, "dist.outputDirectory": str(out), "dist.buildDirectory": str(build)}
    maven_package(pom, properties, m2, log, f"RocketMQ {version}")


def maven_package(pom: Path, properties: Mapping[str, str], m2: Path, log: Log, what: str) -> None:
    """`mvn -q -B -C package` of ``pom`` with ``-Dkey=value`` per property, the local repository ``m2`` as download
    cache (strict checksums: Maven fails on a jar that does not match Central's `.sha1`). ``what`` names it in the
    log lines. Raises DistributionError."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise DistributionError(f"Maven (mvn) is not on PATH; it is needed once to fetch {what}")
    cmd = [mvn, "-q", "-B", "-C", "-Dstyle.color=never", "-f", str(pom), "package"]
    cmd += [f"-D{key}={value}" for key, value in properties.items()]
    cmd.append(f"-Dmaven.repo.local={m2}")
    log(f"rocketmq-operator: resolving {what} from Maven Central (cache {m2}) ...")
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired as exc:
        raise DistributionError(f"Maven did not finish within {MAVEN_TIMEOUT_SECONDS}s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
        raise DistributionError(f"Maven failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    log(f"rocketmq-operator: Maven finished in {time.monotonic() - started:.1f}s")


def check_published_sha1(jar: Path, repo_layout: Path, m2: Path) -> None:
    """``jar`` (under ``repo_layout``, Maven's repository layout) against the `.sha1` Central publishes for it;
    raises DistributionError on a mismatch."""
    relative = jar.relative_to(repo_layout)
    expected = _published_sha1(relative, m2)
    actual = _digest(jar, "sha1")
    if actual != expected:
        raise DistributionError(f"SHA-1 mismatch for {relative}: {actual} != published {expected}")


def _assemble(staging: Path, repo_layout: Path, version: str, m2: Path) -> None:
    """Verify the jars against Central's .sha1, flatten them into lib/, extract conf/, write SHA256SUMS."""
    lib = staging / "lib"
    conf = staging / "conf"
    lib.mkdir()
    conf.mkdir()
    jars = sorted(repo_layout.rglob("*.jar"))
    if not jars:
        raise DistributionError("Maven copied no jars")
    for jar in jars:
        relative = jar.relative_to(repo_layout)
        check_published_sha1(jar, repo_layout, m2)
        target = lib / jar.name
        if target.exists():  # same artifactId and version under two groupIds
            group = ".".join(relative.parts[:-3])
            target = lib / f"{group}.{jar.name}"
        jar.replace(target)
    for module in ROCKETMQ_MODULES:
        if not (lib / f"{module}-{version}.jar").is_file():
            raise DistributionError(f"{GROUP_ID}:{module}:{version} is missing from the resolved jars")
    for name, module in LOGBACK_CONFIGS.items():
        with zipfile.ZipFile(lib / f"{module}-{version}.jar") as zf:
            try:
                data = zf.read(name)
            except KeyError as exc:
                raise DistributionError(f"{name} is not a resource of {module}-{version}.jar") from exc
        (conf / name).write_bytes(data)
    lines = [f"{_digest(p, 'sha256')}  lib/{p.name}" for p in sorted(lib.iterdir())]
    (staging / SHA256SUMS).write_text("\n".join(lines) + "\n", encoding="utf-8")


def verify_distribution(path: Path) -> None:
    """Check `path` against its SHA256SUMS; raises DistributionError on a missing, extra or changed jar."""
    manifest = path / SHA256SUMS
    if not manifest.is_file():
        raise DistributionError(f"{manifest} is missing")
    listed: dict[str, str] = {}
    for line in manifest.read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    present = {f"lib/{p.name}" for p in (path / "lib").iterdir()}
    if present != set(listed):
        raise DistributionError(f"lib/ of {path} does not match {SHA256SUMS}: {sorted(present ^ set(listed))}")
    for name, digest in listed.items():
        if _digest(path / name, "sha256") != digest:
            raise DistributionError(f"{path / name} does not match {SHA256SUMS}")


def ensure_distribution(version: str = ROCKETMQ_VERSION, log: Log = print, phase: Log | None = None) -> Path:
    """Return `dist_dir(version)`, building it first if it is not complete (see the module docstring).
    ``phase`` hears what it is doing now (a progress display's text); ``log`` the lines to keep."""
    say: Log = phase if phase is not None else (lambda text: None)
    target = dist_dir(version)
    if is_complete(target, version):
        return target
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    say(f"waiting for the lock on the RocketMQ {version} cache")
    with file_lock(parent / f".rocketmq-{version}.lock"):
        if is_complete(target, version):  # another process finished it while we waited
            return target
        for stale in parent.glob(f".rocketmq-{version}.tmp-*"):  # left by an interrupted build
            shutil.rmtree(stale, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".rocketmq-{version}.tmp-", dir=parent))
        staging.chmod(0o755)
        try:
            m2 = maven_repo()
            with _pom_file() as pom:
                say(f"downloading RocketMQ {version} from Maven Central (Maven, cache {m2})")
                _run_maven(pom, version, staging / "repo", staging / "build", m2, log)
            say("verifying the jars against Maven Central's .sha1")
            _assemble(staging, staging / "repo", version, m2)
            shutil.rmtree(staging / "repo")
            shutil.rmtree(staging / "build", ignore_errors=True)
            (staging / MARKER).write_text(version + "\n", encoding="utf-8")
            if target.exists():  # incomplete leftover from something else: move it out of the way first
                doomed = parent / f".rocketmq-{version}.tmp-old-{os.getpid()}"
                target.rename(doomed)
                shutil.rmtree(doomed, ignore_errors=True)
            staging.rename(target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    jars = sum(1 for _ in (target / "lib").iterdir())
    log(f"rocketmq-operator: RocketMQ {version} ready in {target} ({jars} jars)")
    return target


# ------------------------------------------------------------------------------------------ command lines


def java_executable() -> str:
    """`$JAVA_HOME/bin/java` when JAVA_HOME is set, else `java` from PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file():
            return str(candidate)
    return shutil.which("java") or "java"


NATIVE_DIR = "native"


def rocksdb_library_dir(home: Path) -> Path | None:
    """``home/native``, holding RocksDB's Linux JNI libraries taken once from the distribution's RocksDB jar, or
    None when they cannot be (no such jar, a read-only home).

    On the java command's `java.library.path`, RocksDB's loader finds its library there (`System.loadLibrary`
    is tried first). Without it, every broker and controller JVM copies the 13 MB library out of the jar into
    `java.io.tmpdir` and deletes it only at a clean exit: the JVMs a test or a fault SIGKILLs left 2,195 copies
    (28 GB) in /tmp on this machine in a day."""
    target = home / NATIVE_DIR
    if target.is_dir() and any(target.glob("librocksdbjni*")):
        return target
    jars = sorted((home / "lib").glob("*rocksdb*.jar"))
    if not jars:
        return None
    try:
        target.mkdir(exist_ok=True)
        with zipfile.ZipFile(jars[0]) as jar:
            for name in jar.namelist():
                if not (name.startswith("librocksdbjni-linux") and name.endswith(".so")):
                    continue
                # Several JVMs may start at once: each writes its own temporary copy and renames it into place.
                with tempfile.NamedTemporaryFile(dir=target, prefix=".extract-", delete=False) as out:
                    shutil.copyfileobj(jar.open(name), out)
                os.replace(out.name, target / name)
    except (OSError, zipfile.BadZipFile):
        return None
    return target if any(target.glob("librocksdbjni*")) else None


JAVA_OPTS_ENV = "ROCKETMQ_OPERATOR_JAVA_OPTS"
"""JVM flags appended to every local RocketMQ process, last (they win). The test suite sets C2's thresholds
ten times higher (tests/jvm_flags.py): a broker's C2 compiler thread burns about 12 CPU-seconds in its first two
minutes, and `make test` starts some 150 JVMs on two cores. Benchmarks and users run without it."""


def env_java_options(environ: Mapping[str, str] | None = None) -> list[str]:
    """The flags of `$ROCKETMQ_OPERATOR_JAVA_OPTS` (shell words), or none."""
    value = (os.environ if environ is None else environ).get(JAVA_OPTS_ENV, "")
    return shlex.split(value)


def java_command(
    role: str,
    config_file: str | os.PathLike[str] | None,
    *,
    heap: str = "256m",
    direct_memory: str | None = None,
    extra: Sequence[str] = (),
    args: Sequence[str] = (),
    user_home: str | os.PathLike[str] | None = None,
    home: str | os.PathLike[str] | None = None,
    version: str = ROCKETMQ_VERSION,
    tls: bool = False,
) -> list[str]:
    """The argv that runs `role` from the distribution `home` (default `dist_dir(version)`).

    `config_file` is passed as `-c` (required for namesrv/broker/controller; `tools` takes none and gets its
    sub-command in `args`). `user_home` (default: the config file's directory; for tools the cache
    directory) becomes `-Duser.home`: RocketMQ puts `logs/rocketmqlogs/` and its default store paths there.
    `extra` are JVM flags appended after the standard ones (later flags win). Unless `tls` is true, server
    roles but the proxy get `TLS_DISABLED_FLAGS` (no self-signed-certificate TLS listener: faster start, less
    memory); a proxy keeps RocketMQ's permissive default, for the gRPC clients that speak TLS by default.
    """
    if role not in ROLES:
        raise ValueError(f"unknown RocketMQ role {role!r}; expected one of {', '.join(ROLES)}")
    rocketmq_home = Path(home) if home is not None else dist_dir(version)
    if role == "tools" and config_file is not None:
        raise ValueError("the tools role takes no config file; pass the mqadmin sub-command in args")
    if role != "tools" and config_file is None:
        raise ValueError(f"role {role!r} needs a config file")
    if user_home is not None:
        user_dir = Path(user_home)
    elif config_file is not None:
        user_dir = Path(config_file).resolve().parent
    else:
        user_dir = cache_root() / "tools-home"
    java = java_executable()
    argv = [
        java,
        *jvm_options(role, heap, direct_memory),
        # Not for a proxy: it keeps RocketMQ's permissive default, as on Kubernetes, because RocketMQ 5's Java client
        # speaks TLS by default (`enableSsl` true) and the Python client plain text; measured: a default Java client
        # got "NotSslRecordException: not an SSL/TLS record" from a proxy with TLS disabled.
        *(TLS_DISABLED_FLAGS if not tls and role not in ("tools", "proxy") else ()),
        *extra,
        *archive_flags(role, rocketmq_home, java, config_file, os.environ),
        *env_java_options(),
        *([f"-Djava.library.path={native}"] if (native := rocksdb_library_dir(rocketmq_home)) else []),
        f"-Drocketmq.home.dir={rocketmq_home}",
        f"-Drmq.logback.configurationFile={rocketmq_home / 'conf' / f'rmq.{role}.logback.xml'}",
        f"-Duser.home={user_dir}",
        "-cp",
        # The jars first: a class-data archive records them as a prefix of the classpath (platforms.local.cds).
        f"{rocketmq_home / 'lib' / '*'}{os.pathsep}{rocketmq_home / 'conf'}",
        MAIN_CLASSES[role],
    ]
    if config_file is not None and role == "proxy":
        # ProxyStartup reads rmq-proxy.json from -pc; cluster mode: routes from the name servers, no broker inside.
        argv += ["-pc", str(Path(config_file).resolve()), "-pm", "cluster"]
    elif config_file is not None:
        argv += ["-c", str(Path(config_file).resolve())]
    argv += list(args)
    return argv
