"""`state.json`: what the local platform runs, where, and how it is doing.

Contract:

* `LocalState` ↔ JSON (`to_json`/`from_json`) is a lossless round trip; keys are camelCase like the API.
  `FORMAT` is bumped on incompatible changes; `from_json` refuses other formats with `StateError`.
* `write_state` is atomic (temporary file in the same directory, fsync, `os.replace`): a reader sees the old
  or the new file, never half of one. `read_state` raises `StateError` for a missing or unreadable file.
* Writers: `local up` writes the first version before it starts the supervisor; from then on only the
  supervisor writes it, until it exits. `local down` writes it only after the supervisor is gone.
* `pid_alive(pid, needle)` is true only for a live process whose command line contains `needle` (the state
  directory, a config path): a recycled pid never counts as ours.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

FORMAT = 1

# desired states of a replica
RUNNING = "running"
STOPPED = "stopped"

# supervisor phases
STARTING = "starting"
SUPERVISING = "running"
STOPPING = "stopping"
EXITED = "stopped"


class StateError(RuntimeError):
    """state.json is missing, unreadable or of another format."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


@dataclass
class ReplicaProcess:
    """One supervised java process (a "pod")."""

    name: str
    role: str  # namesrv | controller | broker (the java_command role)
    group: str  # owning ControllerGroup or BrokerGroup
    kind: str  # ControllerGroup | BrokerGroup
    ordinal: int
    phase: int  # 0: name servers and controllers, started first; 1: brokers
    address: str  # host:port that answers when it is up (namesrv port, DLedger peer port, broker listenPort)
    ports: dict[str, int]
    argv: list[str]
    config: str  # rendered config (the "ConfigMap" copy)
    run_config: str  # the copy the process reads (-c); re-copied from `config` at every start
    data_dir: str
    log: str
    desired: str = RUNNING
    pid: int | None = None
    restarts: int = 0
    starts: int = 0
    started_at: float | None = None
    last_exit_at: float | None = None
    last_exit_code: int | None = None
    suspended: bool = False
    failures: int = 0  # consecutive failures, for the back-off
    next_start_at: float | None = None
    # Rolling restarts (see platforms.local.roll): the revision the process runs, the one it should run, the
    # argv of that one, and whether the roll asked for the next start to take it.
    revision: str = ""
    target_revision: str = ""
    target_argv: list[str] | None = None
    roll_requested: bool = False
    removing: bool = False  # a scale-in removes it: stopped for good, then forgotten
    removed_broker_id: int | None = None  # its controller-assigned id, for the controller to forget it

    def to_json(self) -> dict[str, Any]:
        return {_camel(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReplicaProcess:
        known = {f.name for f in fields(cls)}
        values = {_snake(k): v for k, v in data.items()}
        return cls(**{k: v for k, v in values.items() if k in known})


@dataclass
class GroupInfo:
    """Connection facts of one group: a ControllerGroup's endpoints, or a BrokerGroup's replicas."""

    name: str
    kind: str
    replicas: list[str]
    name_servers: list[str] = field(default_factory=list)
    controllers: list[str] = field(default_factory=list)
    controller_group: str | None = None
    controller_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        return {_camel(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GroupInfo:
        known = {f.name for f in fields(cls)}
        values = {_snake(k): v for k, v in data.items()}
        return cls(**{k: v for k, v in values.items() if k in known})


@dataclass
class SupervisorInfo:
    pid: int | None = None
    phase: str = EXITED
    started_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {_camel(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SupervisorInfo:
        known = {f.name for f in fields(cls)}
        values = {_snake(k): v for k, v in data.items()}
        return cls(**{k: v for k, v in values.items() if k in known})


@dataclass
class LocalState:
    state_dir: str
    manifest_digest: str
    files: list[str]
    resources: list[dict[str, Any]]
    rocketmq_version: str
    distribution: str
    groups: list[GroupInfo]
    replicas: list[ReplicaProcess]
    supervisor: SupervisorInfo = field(default_factory=SupervisorInfo)
    updated_at: float | None = None
    fault_injection: bool = False  # each process in a cgroup of its own, for network faults (netfault.py)

    @property
    def name_servers(self) -> list[str]:
        return [a for g in self.groups if g.kind == "ControllerGroup" for a in g.name_servers]

    @property
    def controllers(self) -> list[str]:
        return [a for g in self.groups if g.kind == "ControllerGroup" for a in g.controllers]

    @property
    def proxy_endpoints(self) -> list[str]:
        """The gRPC `host:port` of every proxy, in start order (what `local env` exports)."""
        return [r.address for r in self.replicas if r.role == "proxy"]

    def replica(self, name: str) -> ReplicaProcess | None:
        return next((r for r in self.replicas if r.name == name), None)

    def group(self, name: str) -> GroupInfo | None:
        return next((g for g in self.groups if g.name == name), None)

    def ports(self) -> dict[str, int]:
        """Every allocated port by `<replica>.<port name>`: the allocation `local up` reuses."""
        return {f"{r.name}.{key}": port for r in self.replicas for key, port in r.ports.items()}

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "stateDir": self.state_dir,
            "manifestDigest": self.manifest_digest,
            "files": list(self.files),
            "rocketmqVersion": self.rocketmq_version,
            "distribution": self.distribution,
            "nameServers": self.name_servers,
            "controllers": self.controllers,
            "supervisor": self.supervisor.to_json(),
            "updatedAt": self.updated_at,
            "faultInjection": self.fault_injection,
            "groups": [g.to_json() for g in self.groups],
            "replicas": [r.to_json() for r in self.replicas],
            "resources": self.resources,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LocalState:
        if data.get("format") != FORMAT:
            raise StateError(f"state.json has format {data.get('format')!r}; this version reads format {FORMAT}")
        try:
            return cls(
                state_dir=str(data["stateDir"]),
                manifest_digest=str(data["manifestDigest"]),
                files=list(data["files"]),
                resources=list(data["resources"]),
                rocketmq_version=str(data["rocketmqVersion"]),
                distribution=str(data["distribution"]),
                groups=[GroupInfo.from_json(g) for g in data["groups"]],
                replicas=[ReplicaProcess.from_json(r) for r in data["replicas"]],
                supervisor=SupervisorInfo.from_json(data.get("supervisor") or {}),
                updated_at=data.get("updatedAt"),
                fault_injection=bool(data.get("faultInjection", False)),
            )
        except (KeyError, TypeError) as exc:
            raise StateError(f"state.json is malformed: {exc!r}") from None


def write_text_atomic(path: Path, text: str, mode: int = 0o600) -> None:
    """Replace ``path`` with ``text`` in one rename (a reader sees the old file or the new one, never half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode != 0o600:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: object) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def write_state(path: Path, state: LocalState) -> None:
    write_json_atomic(path, state.to_json())


def read_state(path: Path) -> LocalState:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StateError(f"{path} does not exist") from None
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StateError(f"{path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise StateError(f"{path} does not hold a JSON object")
    return LocalState.from_json(data)


def argv_of(pid: int) -> list[str] | None:
    """The argv of a live process (from /proc), None when it is gone or unreadable."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode("utf-8", errors="replace") for part in raw.split(b"\0")[:-1]] if raw else []


def cmdline(pid: int) -> str | None:
    args = argv_of(pid)
    return None if args is None else " ".join(args)


def pid_alive(pid: int | None, needle: str) -> bool:
    """A live (not zombie) process whose command line contains `needle`."""
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        if stat.rpartition(")")[2].split()[0] == "Z":
            return False
    except (OSError, IndexError):
        pass
    line = cmdline(pid)
    return line is not None and needle in line


def signal_if_ours(pid: int | None, needle: str, sig: signal.Signals) -> bool:
    """Send `sig` to `pid` only if it is still the process we think it is."""
    if not pid_alive(pid, needle):
        return False
    assert pid is not None
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True
