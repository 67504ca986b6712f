"""Faults between and in local processes, for real: a partition or packet loss of one process (iptables), and a
slow process (a CPU quota).

Contract: with fault injection on (`local up --fault-injection`), the supervisor starts every process in a
cgroup v2 directory of its own, `<cgroup2 mount>/rocketmq-operator/<state id>/<replica>` (`cgroup_preexec` runs
in the child before exec, so every socket the process opens belongs to that cgroup). `NetFaults` drops that
cgroup's outgoing packets — all of them (a partition) or a random share (packet loss) — with iptables' cgroup and
statistic matches, in a chain of its own jumped to from OUTPUT, and deletes the chain on `close()`, so nothing is
left behind. `check()` names what is missing: root, a cgroup v2 mount, iptables, or the matches. `CpuQuota`
puts one running process under a CFS quota (the cgroup v1 `cpu` controller: this machine's v2 hierarchy has no
cpu controller) and lifts it on close; it needs no `--fault-injection`.

Why cgroups rather than a network namespace per process: every address stays the loopback one the rendered
configs and the state already hold, and a process's traffic is matched whichever peer it talks to. Dropping
everything a process sends stops every TCP exchange with it in both directions (its peers never get an
acknowledgement or an answer), which is a partition of that process. This kernel has no sch_netem: loss is
iptables' random statistic match instead of a qdisc.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

CGROUP_PARENT = "rocketmq-operator"


class NetFaultError(RuntimeError):
    """Network faults cannot be injected here; the message says what is missing and how to get it."""


def _mount_point(mounts: str | None, matches: Callable[[str, list[str]], bool]) -> Path | None:
    """The first mount (of ``/proc/mounts`` unless given) whose type and options ``matches``."""
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text(encoding="utf-8")
        except OSError:
            return None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) >= 4 and matches(parts[2], parts[3].split(",")):
            return Path(parts[1])
    return None


def cgroup2_root(mounts: str | None = None) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup`` or, in hybrid mode, ``.../unified``)."""
    return _mount_point(mounts, lambda kind, _options: kind == "cgroup2")


def state_cgroup(state_dir: Path) -> str:
    """The cgroup (relative to the v2 root) holding one local cluster's processes, one child per replica."""
    digest = hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:10]
    return f"{CGROUP_PARENT}/{digest}"


def replica_cgroup(state_dir: Path, replica: str) -> str:
    return f"{state_cgroup(state_dir)}/{replica}"


def cgroup_preexec(state_dir: Path, replica: str) -> Callable[[], None]:
    """For `subprocess.Popen(preexec_fn=...)`: creates the replica's cgroup (in the parent) and moves the child
    into it before exec."""
    root = cgroup2_root()
    if root is None:
        raise NetFaultError("fault injection needs a cgroup v2 mount (none in /proc/mounts)")
    directory = root / replica_cgroup(state_dir, replica)
    directory.mkdir(parents=True, exist_ok=True)
    procs = directory / "cgroup.procs"

    def move_self() -> None:
        procs.write_text(str(os.getpid()), encoding="ascii")

    return move_self


def remove_cgroups(state_dir: Path) -> None:
    """Remove the cluster's (empty) cgroups once its processes are gone; a busy one is left for the next down."""
    root = cgroup2_root()
    if root is None:
        return
    base = root / state_cgroup(state_dir)
    if not base.is_dir():
        return
    for child in base.iterdir():
        if child.is_dir():
            with contextlib.suppress(OSError):
                child.rmdir()
    with contextlib.suppress(OSError):
        base.rmdir()
    with contextlib.suppress(OSError):
        base.parent.rmdir()  # only when no other cluster uses it


def _chain(state_dir: Path) -> str:
    return "RMQOP-" + state_cgroup(state_dir).rsplit("/", 1)[1]  # iptables chain names: at most 28 characters


class NetFaults:
    """Drop rules on one local cluster's processes. ``async with`` creates the chain and always deletes it."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.chain = _chain(state_dir)
        self.iptables = shutil.which("iptables") or "iptables"

    async def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = await asyncio.to_thread(
            subprocess.run, [self.iptables, "-w", "-t", "filter", *args], capture_output=True, text=True
        )
        if check and done.returncode != 0:
            raise NetFaultError(f"iptables {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
        return done

    def check(self) -> None:
        if os.geteuid() != 0:
            raise NetFaultError("network faults need root (iptables rules and cgroups); fix: run as root")
        if cgroup2_root() is None:
            raise NetFaultError("network faults need a cgroup v2 mount; fix: mount -t cgroup2 none /sys/fs/cgroup")
        if shutil.which("iptables") is None:
            raise NetFaultError("network faults need iptables; fix: apt-get install iptables")

    def _rule(self, replica: str, probability: float) -> list[str]:
        rule = ["-m", "cgroup", "--path", replica_cgroup(self.state_dir, replica)]
        if probability < 1.0:
            rule += ["-m", "statistic", "--mode", "random", "--probability", f"{probability:.3f}"]
        return [*rule, "-j", "DROP"]

    async def open(self) -> None:
        self.check()
        await self.close()  # a chain an interrupted run left behind
        await self._run("-N", self.chain)
        await self._run("-I", "OUTPUT", "1", "-j", self.chain)

    async def drop(self, replica: str, probability: float = 1.0) -> None:
        """Drop ``probability`` of what ``replica`` sends (1.0: a partition)."""
        await self._run("-A", self.chain, *self._rule(replica, probability))

    async def heal(self, replica: str, probability: float = 1.0) -> None:
        await self._run("-D", self.chain, *self._rule(replica, probability), check=False)

    async def close(self) -> None:
        while (await self._run("-D", "OUTPUT", "-j", self.chain, check=False)).returncode == 0:
            pass
        await self._run("-F", self.chain, check=False)
        await self._run("-X", self.chain, check=False)

    async def __aenter__(self) -> NetFaults:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def cpu_cgroup_root(mounts: str | None = None) -> Path | None:
    """Where the cgroup v1 ``cpu`` controller is mounted (this kind of machine: ``/sys/fs/cgroup/cpu``)."""
    return _mount_point(mounts, lambda kind, options: kind == "cgroup" and "cpu" in options)


class CpuQuota:
    """A slow process, for real: a CFS quota on one process (all its threads) in a cgroup v1 ``cpu`` directory
    of its own, ``<cpu mount>/rocketmq-operator/<state id>/<replica>``. ``async with`` lifts every quota it set and
    removes the directories, also on an error."""

    PERIOD_US = 100_000

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.limited: dict[str, int] = {}  # replica -> pid

    def _root(self) -> Path:
        root = cpu_cgroup_root()
        if root is None:
            raise NetFaultError(
                "a CPU quota needs the cgroup v1 cpu controller (no 'cgroup ... cpu' mount in /proc/mounts); "
                "fix: mount -t cgroup -o cpu cgroup /sys/fs/cgroup/cpu"
            )
        return root

    def check(self) -> None:
        if os.geteuid() != 0:
            raise NetFaultError("a CPU quota needs root (cgroups); fix: run as root")
        self._root()

    async def limit(self, replica: str, pid: int, share: float) -> None:
        """Let ``pid`` run ``share`` of one CPU (0 < share ≤ 1)."""
        if not 0 < share <= 1:
            raise NetFaultError(f"CPU share must be within (0, 1], got {share}")
        directory = self._root() / replica_cgroup(self.state_dir, replica)
        await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
        (directory / "cpu.cfs_period_us").write_text(str(self.PERIOD_US), encoding="ascii")
        (directory / "cpu.cfs_quota_us").write_text(str(max(1000, int(share * self.PERIOD_US))), encoding="ascii")
        (directory / "cgroup.procs").write_text(str(pid), encoding="ascii")  # moves every thread of the JVM
        self.limited[replica] = pid

    async def lift(self, replica: str) -> None:
        pid = self.limited.pop(replica, None)
        root = self._root()
        if pid is not None:
            with contextlib.suppress(OSError):  # the process may be gone
                (root / "cgroup.procs").write_text(str(pid), encoding="ascii")
        directory = root / replica_cgroup(self.state_dir, replica)
        for path in (directory, directory.parent, directory.parent.parent):
            with contextlib.suppress(OSError):  # only empty ones go
                path.rmdir()

    async def close(self) -> None:
        for replica in list(self.limited):
            await self.lift(replica)

    async def __aenter__(self) -> CpuQuota:
        return self  # `check()` is for callers that will set a quota: lifting needs nothing

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
