"""Shared integration fixtures: bring manifests up as real RocketMQ processes with the local platform.

`local_platform` (session scope) runs the real CLI (`python -m rocketmq_operator.cli local ...`) in tmp state
directories and guarantees, on a 2-core machine, that **at most one cluster runs at a time**:

* `with local_platform.up(path, ...) as cluster:` - a fresh cluster (`local up --wait`), always brought down
  (`local down --purge`) at the end, leftovers killed by pid;
* `local_platform.shared(path, ...)` - a cluster kept up for the session and reused by every test asking for
  the same files (only for tests that leave it healthy, or that take it down when done); asking for other files
  or `up()` brings it down first; `with local_platform.down_on_failure():` around a test's steps on it takes it
  down when they fail.

`LocalCluster` has `cli(...)`, `status()` (the `local status --json` document), `group(name)`,
`wait_for(what, predicate)` and `log_tails()` for failure messages.

Needs JDK 17 and the pinned distribution. Outside CI a missing java or an unbuilt distribution skips; under
`CI=true` the distribution is built if missing and anything missing FAILS.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from jvm_flags import TEST_JVM_FLAGS
from real_parts import IN_CI, missing

UP_TIMEOUT_S = 420.0  # a bound for a stuck start, not a figure: JVMs start in minutes when the machine is loaded


def require_local_runtime() -> Path:
    """The distribution directory, after checking java; skips (or fails under CI) when either is missing."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        missing("no java on PATH and JAVA_HOME unset (JDK 17 needed)")
    from rocketmq_operator.platforms.local import distribution

    home = distribution.dist_dir()
    if not distribution.is_complete(home):
        if not IN_CI:
            missing(f"RocketMQ distribution not built at {home} (run `rocketmq-operator local dist-path`)")
        try:
            home = distribution.ensure_distribution()
        except (distribution.DistributionError, OSError) as exc:
            pytest.fail(f"CI=true and the RocketMQ distribution cannot be built: {exc}")
    return home


def cli_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "rocketmq_operator.cli", *args]


@dataclass
class LocalCluster:
    state_dir: Path
    files: tuple[Path, ...]
    up_seconds: float = 0.0
    up_output: str = ""
    timings: dict[str, float] = field(default_factory=dict)

    def cli(self, *args: str, check: bool = True, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        argv = cli_argv("local", *args, "--state-dir", str(self.state_dir))
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            pytest.fail(
                f"`{' '.join(argv[3:])}` exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}\n"
                f"{self.log_tails()}"
            )
        return proc

    def status(self) -> dict[str, Any]:
        """`local status --json`, as a user runs it (a new Python process)."""
        doc: dict[str, Any] = json.loads(self.cli("status", "--json").stdout)
        return doc

    def observe(self) -> dict[str, Any]:
        """The same document as `status`, printed in this process by the function behind `local status --json`
        (`lifecycle.status`). Polling loops use it: a CLI process costs a second or two of CPU in imports, and a
        loop of them every quarter second took a core from the JVMs under test (load average 20 on two cores
        with two test workers)."""
        from rocketmq_operator.platforms.local import lifecycle

        printed: list[str] = []
        code = lifecycle.status(self.state_dir, as_json=True, out=printed.append)
        if code != 0 or not printed:
            pytest.fail(f"`local status --json` exited {code}\n{self.log_tails()}")
        doc: dict[str, Any] = json.loads(printed[-1])
        return doc

    def group(self, name: str, doc: dict[str, Any] | None = None) -> dict[str, Any]:
        doc = doc if doc is not None else self.status()
        found: dict[str, Any] = next(g for g in doc["groups"] if g["name"] == name)
        return found

    def wait_for(
        self, what: str, predicate: Callable[[dict[str, Any]], bool], timeout: float = 120.0, interval: float = 0.5
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        doc: dict[str, Any] = {}
        while time.monotonic() < deadline:
            doc = self.observe()
            if predicate(doc):
                return doc
            time.sleep(interval)
        pytest.fail(
            f"{what}: not reached in {timeout:g}s\nlast status:\n{json.dumps(doc, indent=1)}\n{self.log_tails()}"
        )

    def log_tails(self, lines: int = 25) -> str:
        out = []
        logs = self.state_dir / "logs"
        paths = sorted(logs.glob("*.log")) if logs.is_dir() else []
        for path in [self.state_dir / "supervisor.log", *paths]:
            if path.exists():
                tail = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
                out.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(out)


def _kill_leftovers(state_dir: Path) -> list[int]:
    """SIGKILL, by pid, every process whose command line names this state directory (after `local down`)."""
    from rocketmq_operator.platforms.local.layout import StateLayout
    from rocketmq_operator.platforms.local.lifecycle import our_pids

    pids = our_pids(StateLayout(state_dir))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


class LocalPlatform:
    """One cluster at a time, each in its own state directory under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.current: LocalCluster | None = None
        self.current_shared = False
        self.counter = 0

    def _up(self, files: Sequence[Path], name: str | None, timeout: float, up_args: Sequence[str] = ()) -> LocalCluster:
        self.stop_current()
        self.counter += 1
        state_dir = self.root / f"{name or 'cluster'}-{self.counter}"
        cluster = LocalCluster(state_dir, tuple(Path(f).resolve() for f in files))
        self.current = cluster
        args = [a for f in cluster.files for a in ("-f", str(f))]
        began = time.monotonic()
        proc = cluster.cli(
            "up", *args, *up_args, "--wait", "--timeout", str(timeout), check=False, timeout=timeout + 120
        )
        cluster.up_seconds = time.monotonic() - began
        cluster.up_output = proc.stdout
        if proc.returncode != 0:
            details = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}\n{cluster.log_tails()}"
            self.stop_current()
            pytest.fail(f"`local up --wait` exited {proc.returncode}\n{details}")
        return cluster

    def stop_current(self) -> None:
        cluster, self.current = self.current, None
        self.current_shared = False
        if cluster is None:
            return
        try:
            subprocess.run(
                cli_argv("local", "down", "--purge", "--state-dir", str(cluster.state_dir)),
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        finally:
            _kill_leftovers(cluster.state_dir)

    @contextlib.contextmanager
    def up(
        self, *files: Path, name: str | None = None, timeout: float = UP_TIMEOUT_S, up_args: Sequence[str] = ()
    ) -> Iterator[LocalCluster]:
        cluster = self._up(files, name, timeout, up_args)
        try:
            yield cluster
        finally:
            if self.current is cluster:
                self.stop_current()

    @contextlib.contextmanager
    def down_on_failure(self) -> Iterator[None]:
        """A test's steps on a shared cluster: when they fail, the cluster is taken down, so that the next test
        asking for it starts a fresh one instead of inheriting the fault."""
        try:
            yield
        except BaseException:
            self.stop_current()
            raise

    def shared(self, *files: Path, name: str | None = None, timeout: float = UP_TIMEOUT_S) -> LocalCluster:
        wanted = tuple(Path(f).resolve() for f in files)
        if self.current is not None and self.current_shared and self.current.files == wanted:
            return self.current
        cluster = self._up(files, name, timeout)
        self.current_shared = True
        return cluster


@pytest.fixture(scope="module", autouse=True)
def suite_jit_jvms() -> Iterator[None]:
    """Every local RocketMQ JVM these tests start runs with the suite's JIT flags (`$ROCKETMQ_OPERATOR_JAVA_OPTS` =
    tests/jvm_flags.py `TEST_JVM_FLAGS`: C2 only for the hottest code; `make test` starts some 150 JVMs on two
    cores). RocketMQ's behaviour is the same. Module scope, autouse: set before the modules' cluster fixtures, and
    gone for the unit tests a worker runs next."""
    from rocketmq_operator.platforms.local.distribution import JAVA_OPTS_ENV

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(JAVA_OPTS_ENV, os.environ.get(JAVA_OPTS_ENV, TEST_JVM_FLAGS))
        yield


@pytest.fixture(scope="session")
def local_platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPlatform]:
    require_local_runtime()
    platform = LocalPlatform(tmp_path_factory.mktemp("local-platform"))
    try:
        yield platform
    finally:
        platform.stop_current()
