"""What `local up|down|kill|start|status|env|dist-path` do; `cli` only parses arguments and calls these.

Contract:

* Every function takes the resolved state directory and returns the process exit code: 0 done, 1 failed or
  refused (printed as `error: ...` on stderr), 2 invalid manifests (one `path: message` line per problem on
  stdout, like `rocketmq-operator validate`), 3 nothing runs: the groups are stopped or were never started
  there, with one line on stderr saying how to start them (`status` and `env` print what they know first;
  `kill`, `start`, `local apply` and `switchover` raise or print `not_running`). Progress goes to stdout,
  warnings to stderr.
* `env`: `export NAMESRV_ADDR=<name servers>` (shell-quoted, for `eval "$(rocketmq-operator local env)"`),
  `export ROCKETMQ_PROXY_ENDPOINT=<the first proxy's gRPC host:port>` when the manifests have a Proxy,
  and `export ROCKETMQ_TLS_CA=<the cluster's authority>` when spec.tls is on, from
  state.json; the addresses stay the same across `down` and `up` (the ports are reused).
* `up`: validate (the operator's own validation) → refuse a different manifest while one runs or while its
  data is kept → ensure the distribution and java → reuse the ports in state.json when all are still free, else
  allocate (`ports.allocate`, seeded by the state directory) → render every config into `conf/` → write
  `manifest.yaml` and `state.json` → start the supervisor in its own session → return once every process has
  been started (`--wait`: once every group is ready, see `group_ready`). The same manifest again while it runs
  prints "already running" and succeeds. A User without spec.passwordSecret gets a password generated once into
  secrets.json (`users.with_generated_passwords`); `up` prints, per such User, the Secret's name, the file and a
  command that prints the password (`users.generated_password_lines`), never the password itself (`env` prints
  the cluster's addresses only: a shell `eval`s it, and a password does not belong in every shell's environment).
* `down`: SIGTERM to the supervisor, which stops everything; then any process whose command line names this
  state directory's `data/` (or the supervisor of this directory) is signalled by pid, TERM then KILL.
  `--purge` also removes what the platform wrote (`layout.StateLayout.owned`), nothing else.
* `kill`/`start` are requests to the running supervisor (`commands`), so it knows not to restart a replica
  killed with `--no-restart` and that a SIGSTOPped one is suspended, not dead.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import itertools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from rocketmq_operator.api.models import AnyResource, User
from rocketmq_operator.api.validation import ManifestError, SecretDoc, validate_files
from rocketmq_operator.platforms.console import EXIT_INTERRUPTED, Frames, Ticker
from rocketmq_operator.platforms.local import commands
from rocketmq_operator.platforms.local import roll as local_roll
from rocketmq_operator.platforms.local.auth import (
    AuthSecretError,
    read_secrets,
    record_admins,
    refuse_admin_change,
    select_secrets,
    state_client,
    store_secrets,
)
from rocketmq_operator.platforms.local.distribution import (
    DistributionError,
    ensure_distribution,
    java_executable,
)
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.netfault import NetFaultError, NetFaults, remove_cgroups
from rocketmq_operator.platforms.local.placement import (
    PlacementError,
    check_names,
    manifest_digest,
    port_needs,
    render_configs,
)
from rocketmq_operator.platforms.local.ports import PortError, all_free, allocate, port_answers, port_is_free, seed_for
from rocketmq_operator.platforms.local.report import collect, render_table, supervisor_running
from rocketmq_operator.platforms.local.state import (
    RUNNING,
    LocalState,
    StateError,
    SupervisorInfo,
    argv_of,
    cmdline,
    pid_alive,
    read_state,
    write_state,
)
from rocketmq_operator.platforms.local.supervisor import GRACE_S
from rocketmq_operator.platforms.local.tls import TlsConfigError, check_tls, client_tls, ensure_certificates
from rocketmq_operator.platforms.local.users import generated_password_lines, with_generated_passwords

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INVALID = 2
EXIT_STOPPED = 3

STARTED_TIMEOUT_S = 120.0
DOWN_TIMEOUT_S = 2 * GRACE_S + 30.0
SUPERVISOR_MODULE = "rocketmq_operator.platforms.local.supervisor"

Out = Callable[[str], object]


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _stdout(text: str) -> None:
    print(text, flush=True)


class LocalError(RuntimeError):
    """A refusal or failure explained in one line."""


class NotRunning(LocalError):
    """Nothing runs from the state directory, or nothing was ever started there: exit `EXIT_STOPPED`."""


def not_running(layout: StateLayout, state: LocalState | None) -> NotRunning:
    """What is not running and the `local up` that starts it (with the manifests it ran, when known)."""
    files = [f for f in (state.files if state is not None else []) if f != "-"]
    given = " ".join(f"-f {shlex.quote(f)}" for f in files) or "-f FILE"
    fix = f"fix: `rocketmq-operator local up {given} --state-dir {shlex.quote(str(layout.root))}`"
    if state is None:
        return NotRunning(f"no local cluster runs from {layout.root}: none was started there (no state.json); {fix}")
    return NotRunning(f"the local cluster of {layout.root} is not running (no supervisor); {fix}")


def read_existing(layout: StateLayout) -> LocalState:
    """state.json; `NotRunning` when there is none (`StateError` when it is unreadable)."""
    try:
        return read_state(layout.state_file)
    except StateError:
        if not layout.state_file.exists():
            raise not_running(layout, None) from None
        raise


# ---------------------------------------------------------------------------------------------- helpers


def validate(files: Sequence[str]) -> tuple[list[AnyResource], list[str], list[str], dict[str, SecretDoc]]:
    """Resources, error lines and warning lines, exactly as `rocketmq-operator validate` reports them, and the
    Secrets given with them."""
    manifests = validate_files(files)
    errors = list(manifests.errors)
    return manifests.resources, errors, manifests.warnings, manifests.secrets


def _try_read(layout: StateLayout) -> LocalState | None:
    if not layout.state_file.exists():
        return None
    return read_state(layout.state_file)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def our_pids(layout: StateLayout) -> list[int]:
    """Live processes that belong to this state directory: its supervisor and its java processes."""
    root = str(layout.root)
    data_marker = str(layout.data_root) + os.sep
    me = os.getpid()
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        args = argv_of(int(entry))
        if not args:
            continue
        is_supervisor = SUPERVISOR_MODULE in args and any(
            a == "--state-dir" and b == root for a, b in itertools.pairwise(args)
        )
        if is_supervisor or any(data_marker in a for a in args):
            out.append(int(entry))
    return out


def _wait_gone(pids: Sequence[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    left = list(pids)
    while left and time.monotonic() < deadline:
        left = [p for p in left if _alive(p)]
        if left:
            time.sleep(0.1)
    return left


def _alive(pid: int) -> bool:
    line = cmdline(pid)
    if line is None:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        return stat.rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def stop_leftovers(layout: StateLayout, grace: float = GRACE_S, out: Out = _stdout, keep: Collection[int] = ()) -> int:
    """TERM (and CONT), then KILL after ``grace`` seconds (at once when 0), every process of this state directory
    still alive but those in ``keep``; how many there were."""
    pids = [p for p in our_pids(layout) if p not in keep]
    if not pids:
        return 0
    out(f"stopping {len(pids)} leftover process(es) of {layout.root}: {', '.join(map(str, pids))}")
    if grace > 0:
        for pid in pids:
            _signal(pid, signal.SIGTERM)
            _signal(pid, signal.SIGCONT)
    for pid in _wait_gone(pids, grace) if grace > 0 else pids:
        _signal(pid, signal.SIGKILL)
    _wait_gone(pids, 10.0)
    return len(pids)


@contextlib.contextmanager
def locked(layout: StateLayout) -> Iterator[None]:
    """Exclusive use of the state directory by one `local up`/`local down` at a time."""
    layout.root.mkdir(parents=True, exist_ok=True)
    with layout.lock_file.open("a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LocalError(f"another `local up` or `local down` is working on {layout.root}; wait for it") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def java_available() -> bool:
    exe = java_executable()
    return Path(exe).is_file() or shutil.which(exe) is not None


# ---------------------------------------------------------------------------------------------- up


def group_ready(group: dict[str, Any]) -> bool:
    """Controller mode: a live master and a SyncStateSet of every replica; classic modes: every broker answers.
    Either way, with declared topics (or automatic creation on), the master holds them (`topicsAsserted`)."""
    replicas = group.get("replicas") or []
    if not replicas or not all(r.get("alive") for r in replicas):
        return False
    if group.get("topicsAsserted") is False:
        return False
    sss = group.get("syncStateSet")
    master = group.get("master") or {}
    if sss is not None:
        return master.get("brokerId") is not None and len(sss.get("members") or []) == len(replicas)
    return True


def proxy_progress_lines(proxies: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """(Proxy, line) per Proxy: how many of its proxies answer, and their gRPC endpoints."""
    by_proxy: dict[str, list[dict[str, Any]]] = {}
    for p in proxies:
        by_proxy.setdefault(str(p["proxy"]), []).append(p)
    return [
        (
            name,
            f"{name}: {sum(1 for p in ps if p['ready'])}/{len(ps)} proxies answer (gRPC "
            + ";".join(str(p["endpoint"]) for p in ps)
            + ")",
        )
        for name, ps in by_proxy.items()
    ]


def progress_line(group: dict[str, Any]) -> str:
    replicas = group.get("replicas") or []
    alive = sum(1 for r in replicas if r.get("alive"))
    master = group.get("master") or {}
    text = f"{group['name']}: {alive}/{len(replicas)} brokers answer"
    if master.get("brokerId") is not None:
        text += f", master {master.get('replica') or master.get('address')} (id {master['brokerId']}, "
        text += f"epoch {master.get('epoch')})"
    else:
        text += ", no master yet"
    sss = group.get("syncStateSet")
    if sss is not None:
        text += f", SyncStateSet {sss.get('members')} ({len(sss.get('members') or [])}/{len(replicas)})"
    if group.get("topicsAsserted") is not None:
        text += ", topics " + ("asserted" if group["topicsAsserted"] else "not yet asserted")
    restarts = sum(int(r.get("restarts") or 0) for r in replicas)
    if restarts:
        text += f", {restarts} restart(s)"
    return text


async def name_servers_serve_routes(state: LocalState) -> bool:
    """Every name server answers route lookups: past its needWaitForService window (render.config), in which it
    answers every client "name server not ready" and a client's first send would find no route."""
    async with state_client(state, request_timeout=1.0) as client:
        return await client.name_servers_serve_routes(timeout=1.0)


async def wait_ready(layout: StateLayout, timeout: float, out: Out = _stdout, console: Console | None = None) -> int:
    """Poll until every group is ready. Each group's progress line is printed when it changes; with ``console``
    (a terminal) it is one line updated in place instead, the elapsed time ticking."""
    started = time.monotonic()
    last: dict[str, str] = {}
    doc: dict[str, Any] | None = None
    with Ticker(console, "waiting for the groups ...") as ticker:
        while True:
            state = read_state(layout.state_file)
            if not supervisor_running(state):
                _stderr(f"error: the supervisor is not running; see {layout.supervisor_log}")
                return EXIT_FAILED
            doc = await collect(state, layout)
            phase0 = [r for r in state.replicas if r.phase == 0 and r.desired == RUNNING]
            answers = await asyncio.gather(*(port_answers(f"127.0.0.1:{p}") for r in phase0 for p in r.ports.values()))
            elapsed = time.monotonic() - started
            named = [(group["name"], progress_line(group)) for group in doc["groups"]]
            named += proxy_progress_lines(doc.get("proxies") or [])
            if ticker.live:
                ticker.update(f"[{elapsed:6.1f}s] " + "; ".join(line for _, line in named))
            else:
                for name, line in named:
                    if last.get(name) != line:
                        out(f"[{elapsed:6.1f}s] {line}")
                        last[name] = line
            proxies_ready = all(p["ready"] for p in doc.get("proxies") or [])
            if all(answers) and proxies_ready and all(group_ready(g) for g in doc["groups"]):
                if await name_servers_serve_routes(state):
                    break
                line = "name servers: not serving routes yet (the first waitSecondsForService after their start)"
                if not ticker.live and last.get("name servers") != line:
                    out(f"[{elapsed:6.1f}s] {line}")
                    last["name servers"] = line
            if elapsed > timeout:
                ticker.__exit__(None, None, None)
                out(render_table(doc))
                _stderr(f"error: not ready after {timeout:g}s; process output is in {layout.logs_dir}")
                return EXIT_FAILED
            await asyncio.sleep(1.0)
    if console is not None:  # the updating line was transient: its last state stays on the screen
        out(ticker.text)
    out(f"ready after {elapsed:.1f}s")
    return EXIT_OK


def _spawn_supervisor(layout: StateLayout) -> subprocess.Popen[bytes]:
    with layout.supervisor_log.open("ab") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", SUPERVISOR_MODULE, "--state-dir", str(layout.root)],
            cwd=layout.root,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )


def _wait_started(layout: StateLayout, proc: subprocess.Popen[bytes]) -> LocalState:
    deadline = time.monotonic() + STARTED_TIMEOUT_S
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            raise LocalError(f"the supervisor exited ({code}):\n{_tail(layout.supervisor_log)}")
        try:
            state = read_state(layout.state_file)
        except StateError:
            state = None
        if (
            state is not None
            and state.supervisor.pid == proc.pid
            and all(r.pid is not None for r in state.replicas if r.desired == RUNNING)
        ):
            return state
        time.sleep(0.1)
    raise LocalError(f"not every process started within {STARTED_TIMEOUT_S:g}s; see {layout.supervisor_log}")


def up(
    files: Sequence[str],
    state_dir: Path,
    *,
    wait: bool = False,
    timeout: float = 180.0,
    fault_injection: bool = False,
    out: Out = _stdout,
    console: Console | None = None,
) -> int:
    """``console`` (stderr's, when stdout and stderr are terminals): the distribution's preparation and the
    `--wait` show their progress as one updating line on it. Ctrl-C says what is left running (exit 130)."""
    layout = StateLayout(state_dir)
    try:
        return _up_command(files, layout, wait=wait, timeout=timeout, fault_injection=fault_injection, out=out,
                           console=console)  # fmt: skip
    except KeyboardInterrupt:
        _stderr(interrupted_message(layout))
        return EXIT_INTERRUPTED


def interrupted_message(layout: StateLayout) -> str:
    """What a Ctrl-C leaves behind in ``layout``: its processes still running and how to stop them, or nothing."""
    pids = our_pids(layout)
    if not pids:
        return f"interrupted: nothing runs from {layout.root}"
    return (
        f"interrupted: still running: {len(pids)} processes from {layout.root}; "
        f"stop them: rocketmq-operator local down --state-dir {layout.root}"
    )


def _up_command(
    files: Sequence[str],
    layout: StateLayout,
    *,
    wait: bool,
    timeout: float,
    fault_injection: bool,
    out: Out,
    console: Console | None,
) -> int:
    try:
        resources, errors, warnings, secrets = validate(files)
    except ManifestError as exc:
        _stderr(f"error: {exc}")
        return EXIT_INVALID
    for w in warnings:
        _stderr(f"warning: {w}")
    if errors:
        for e in errors:
            out(e)
        return EXIT_INVALID
    try:
        check_names(resources)
        auth_secrets = select_secrets(resources, secrets)
        check_tls(resources)
        with locked(layout):
            if fault_injection:
                NetFaults(layout.root).check()
            code = _up(
                resources,
                files,
                layout,
                secrets=auth_secrets,
                fault_injection=fault_injection,
                out=out,
                console=console,
            )
        if code == EXIT_OK and wait:
            return asyncio.run(wait_ready(layout, timeout, out, console))
        return code
    except PlacementError as exc:
        out(str(exc))
        return EXIT_INVALID
    except (AuthSecretError, TlsConfigError) as exc:
        out(str(exc))
        return EXIT_INVALID
    except (LocalError, StateError, DistributionError, PortError, commands.CommandError, NetFaultError) as exc:
        _stderr(f"error: {exc}")
        return EXIT_FAILED


def _up(
    resources: list[AnyResource],
    files: Sequence[str],
    layout: StateLayout,
    *,
    secrets: Mapping[str, Mapping[str, str]] | None = None,
    fault_injection: bool = False,
    out: Out,
    console: Console | None = None,
) -> int:
    digest = manifest_digest(resources)
    existing = _try_read(layout)
    down_hint = f"rocketmq-operator local down --state-dir {layout.root}"
    if existing is not None:
        if supervisor_running(existing):
            if existing.manifest_digest != digest:
                raise LocalError(
                    f"{layout.root} already runs other manifests ({', '.join(existing.files)}); "
                    f"fix: `{down_hint}` first, or use another --state-dir"
                )
            if fault_injection and not existing.fault_injection:
                raise LocalError(
                    f"{layout.root} already runs without --fault-injection (its processes are in no cgroup of "
                    f"their own); fix: `{down_hint}` first, then `local up --fault-injection`"
                )
            out(f"already running in {layout.root} (supervisor pid {existing.supervisor.pid}); nothing to do")
            return EXIT_OK
        if existing.manifest_digest != digest:
            raise LocalError(
                f"{layout.root} holds the data of other manifests ({', '.join(existing.files)}); "
                f"fix: `{down_hint} --purge` to drop it, or use another --state-dir"
            )
    # A supervisor killed -9 leaves its java processes behind: those of the same manifest are adopted by the
    # next supervisor (a roll in progress resumes), any other is stopped.
    adopted = local_roll.adoptable(existing, digest)
    stop_leftovers(layout, out=out, keep=adopted)

    prepare_distribution(console)
    if not java_available():
        raise LocalError("no java: install a JDK 17 (java on PATH) or set JAVA_HOME")

    needs = port_needs(resources)
    if existing is not None and (adopted or all_free(needs, existing.ports(), port_is_free)):
        # Adopted processes keep serving on their ports: the same allocation, whatever is busy.
        ports = {n.key: existing.ports()[n.key] for n in needs}
    else:
        ports = allocate(needs, seed_for(str(layout.root)), port_is_free)

    texts = render_configs(resources, ports, layout)
    files_abs = [str(Path(f).resolve()) if f != "-" else "-" for f in files]
    state = local_roll.desired_state(resources, ports, layout, files=files_abs, texts=texts, log=_stderr)
    local_roll.carry_over(existing, state)  # a roll interrupted with the supervisor goes on
    layout.ensure()
    # The Users' generated passwords are kept from an earlier `up` (its data kept by `down`): clients hold them.
    stored, _ = with_generated_passwords(resources, secrets or {}, read_secrets(layout))
    refuse_admin_change(layout, resources, stored)  # the stores of data kept by `down` hold the admin they had
    store_secrets(layout, stored)
    record_admins(layout, resources, stored, starting=True)
    ensure_certificates(layout, state)
    local_roll.write_configs(layout, state, texts, existing)
    layout.manifest.write_text(
        yaml.safe_dump_all(state.resources, sort_keys=False, default_flow_style=False), encoding="utf-8"
    )
    for stale in layout.commands_dir.iterdir():
        stale.unlink(missing_ok=True)
    state.supervisor = SupervisorInfo()
    state.fault_injection = fault_injection
    write_state(layout.state_file, state)

    began = time.monotonic()
    proc = _spawn_supervisor(layout)
    started = _wait_started(layout, proc)
    out(f"started {len(started.replicas)} processes in {time.monotonic() - began:.1f}s (supervisor pid {proc.pid})")
    for r in started.replicas:
        ports_text = " ".join(f"{k}=127.0.0.1:{v}" for k, v in r.ports.items())
        out(f"  {r.name:<24} {r.role:<10} pid {r.pid}  {ports_text}")
    out(f"nameServers {';'.join(started.name_servers)}  controllers {';'.join(started.controllers) or '-'}")
    out(f"logs in {layout.logs_dir}; `rocketmq-operator local status --state-dir {layout.root}`")
    for line in generated_password_lines([r for r in resources if isinstance(r, User)], layout):
        out(line)
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- down


def down(state_dir: Path, *, purge: bool = False, out: Out = _stdout, console: Console | None = None) -> int:
    """``console`` (stderr's terminal): a spinner names the processes being stopped while it waits."""
    layout = StateLayout(state_dir)
    if not layout.root.is_dir():
        out(f"nothing runs from {layout.root}")
        return EXIT_OK
    try:
        with locked(layout):
            return _down(layout, purge=purge, out=out, console=console)
    except LocalError as exc:
        _stderr(f"error: {exc}")
        return EXIT_FAILED


def stopping_text(state: LocalState, supervisor_pid: int) -> str:
    """What `local down` waits for: the supervisor and the processes it runs, by name."""
    names = [r.name for r in state.replicas if r.pid is not None]
    return f"stopping the supervisor (pid {supervisor_pid}) and {len(names)} processes: {', '.join(names) or '-'}"


def _down(layout: StateLayout, *, purge: bool, out: Out, console: Console | None = None) -> int:
    try:
        state = _try_read(layout)
    except StateError as exc:
        _stderr(f"warning: {exc}; stopping whatever runs from {layout.root}")
        state = None
    if state is not None and supervisor_running(state) and purge:
        # The data is deleted next: a graceful stop (7-12 s a broker: flush, unregister) keeps nothing. The
        # supervisor goes first so that it restarts nothing, then everything else at once.
        pid = state.supervisor.pid
        assert pid is not None
        out(f"stopping the supervisor (pid {pid}) and its processes at once (--purge: nothing is kept) ...")
        began = time.monotonic()
        _signal(pid, signal.SIGKILL)
        _wait_gone([pid], 10.0)
        # The recorded processes (by pid, checked against their run config) and any other of this directory.
        recorded = [r.pid for r in state.replicas if r.pid is not None and pid_alive(r.pid, r.run_config)]
        for replica_pid in recorded:
            _signal(replica_pid, signal.SIGKILL)
        _wait_gone(recorded, 10.0)
        stop_leftovers(layout, grace=0.0, out=lambda _: None)
        out(f"stopped in {time.monotonic() - began:.1f}s")
    elif state is not None and supervisor_running(state):
        pid = state.supervisor.pid
        assert pid is not None
        out(f"stopping the supervisor (pid {pid}) and its processes ...")
        began = time.monotonic()
        _signal(pid, signal.SIGTERM)
        with Ticker(console, stopping_text(state, pid)):
            gone = not _wait_gone([pid], DOWN_TIMEOUT_S)
        if not gone:
            _stderr(f"warning: the supervisor did not exit within {DOWN_TIMEOUT_S:g}s: SIGKILL")
            _signal(pid, signal.SIGKILL)
            _wait_gone([pid], 10.0)
        out(f"stopped in {time.monotonic() - began:.1f}s")
    leftovers = stop_leftovers(layout, out=out)
    remove_cgroups(layout.root)
    if state is not None and not purge:
        with contextlib.suppress(StateError):
            state = read_state(layout.state_file)  # the supervisor's last word
        for r in state.replicas:
            r.pid = None
            r.suspended = False
            r.next_start_at = None
        state.supervisor = SupervisorInfo()
        write_state(layout.state_file, state)
    if purge:
        for path in layout.owned():
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            layout.root.rmdir()
        out(f"purged {layout.root}")
    elif state is None and not leftovers:
        out(f"nothing runs from {layout.root}")
    elif state is not None:
        out(f"data kept in {layout.data_root} (`local up` again resumes it; `local down --purge` drops it)")
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- kill / start


async def request(layout: StateLayout, op: str, **arguments: Any) -> dict[str, Any]:
    """Send one request to the running supervisor and wait for its answer."""
    state = read_existing(layout)
    if not supervisor_running(state):
        raise not_running(layout, state)
    return await commands.send_request(layout.commands_dir, op, alive=lambda: supervisor_running(state), **arguments)


def _request(layout: StateLayout, op: str, **arguments: Any) -> dict[str, Any]:
    return asyncio.run(request(layout, op, **arguments))


def _granted(state_dir: Path, op: str, **arguments: Any) -> dict[str, Any] | int:
    """The supervisor's answer to a request it granted, or the exit code after saying why not on stderr."""
    try:
        answer = _request(StateLayout(state_dir), op, **arguments)
    except NotRunning as exc:
        _stderr(f"error: {exc}")
        return EXIT_STOPPED
    except (LocalError, StateError, commands.CommandError) as exc:
        _stderr(f"error: {exc}")
        return EXIT_FAILED
    if not answer.get("ok"):
        _stderr(f"error: {answer.get('message')}")
        return EXIT_FAILED
    return answer


def kill(state_dir: Path, replica: str, *, sig: str = "KILL", no_restart: bool = False, out: Out = _stdout) -> int:
    answer = _granted(state_dir, "signal", replica=replica, signal=sig.upper(), noRestart=no_restart)
    if isinstance(answer, int):
        return answer
    text = str(answer.get("message"))
    if answer.get("pid"):
        text += f" (pid {answer['pid']})"
    if sig.upper() in ("KILL", "TERM"):
        text += (
            f"; it stays down until `rocketmq-operator local start {replica}`"
            if no_restart
            else "; the supervisor restarts it after a back-off"
        )
    elif sig.upper() == "STOP":
        text += f"; resume it with `--signal CONT` or `local start {replica}`"
    out(text)
    return EXIT_OK


def start(state_dir: Path, replica: str, *, out: Out = _stdout) -> int:
    answer = _granted(state_dir, "start", replica=replica)
    if isinstance(answer, int):
        return answer
    out(str(answer.get("message")) + (f" (pid {answer['pid']})" if answer.get("pid") else ""))
    return EXIT_OK


# ---------------------------------------------------------------------------------------------- status


def status(
    state_dir: Path,
    *,
    as_json: bool = False,
    watch: float | None = None,
    out: Out = _stdout,
    console: Console | None = None,
) -> int:
    """``console`` (a terminal's, see `console.terminal`): `--watch` redraws the table in place on it; without
    one every observation is appended (``--- <observedAt>`` and the table). Ctrl-C ends a watch with 130."""
    from rocketmq_operator.platforms.local.report import dumps

    layout = StateLayout(state_dir)
    frames = Frames(console if watch is not None and not as_json else None, out)
    try:
        with frames:
            while True:
                try:
                    state = read_existing(layout)
                except NotRunning as exc:
                    _stderr(f"error: {exc}")
                    return EXIT_STOPPED  # as documented: 3 when nothing runs, never started included
                except StateError as exc:
                    _stderr(
                        f"error: nothing to show for {layout.root} ({exc}); fix: `rocketmq-operator local up -f FILE`"
                    )
                    return EXIT_FAILED
                doc = asyncio.run(collect(state, layout))
                if as_json:
                    out(dumps(doc, compact=watch is not None))
                else:
                    header = ""
                    if watch is not None:
                        header = f"--- {doc['observedAt']}"
                        if frames.live:
                            header += f"  (every {watch:g}s; Ctrl-C to stop)"
                    frames.show(header, render_table(doc))
                if watch is None:
                    if doc.get("stopped"):
                        _stderr(
                            f"stopped: nothing runs from {layout.root}; start it: `rocketmq-operator local up -f FILE`"
                        )
                        return EXIT_STOPPED
                    return EXIT_OK
                time.sleep(max(watch, 0.2))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def rotate_ca(state_dir: Path, overlap: str, *, wait_s: float = 0.0, out: Out = _stdout) -> int:
    """`local rotate-ca`: ask the supervisor to replace the cluster's authority (docs/tls.md "Rotating the
    authority"); with ``wait_s``, until it has started, printing the state it records."""
    from rocketmq_operator.api.models import duration_seconds
    from rocketmq_operator.platforms.local.tls import read_rotation, request_rotation

    overlap_s = float(duration_seconds(overlap))  # checked by the argument's type
    layout = StateLayout(state_dir)
    state = _existing_or_exit(layout)
    if isinstance(state, int):
        return state
    if client_tls(state) is None:
        _stderr(
            f"error: the manifests run from {layout.root} have no group with spec.tls.enabled, so no authority to "
            "rotate; fix: run manifests with spec.tls (examples/tls.yaml)"
        )
        return EXIT_FAILED
    token = request_rotation(layout, overlap_s)
    if wait_s <= 0:
        out(
            f"rotation of the TLS authority requested (overlap {overlap}): the supervisor starts it within seconds; "
            "every certificate is issued again and no broker restarts; `local rotate-ca --wait 60` says when"
        )
        return EXIT_OK
    deadline = time.monotonic() + wait_s
    while (record := read_rotation(layout)).get("rotated_for") != token:
        if time.monotonic() >= deadline:
            _stderr(f"error: the rotation has not started after {wait_s:g}s (is the supervisor running?); it stands")
            return EXIT_FAILED
        time.sleep(0.2)
    out(f"TLS authority rotated: a new authority signs; {record.get('state', '')}")
    return EXIT_OK


def _existing_or_exit(layout: StateLayout) -> LocalState | int:
    """The state of the cluster run from ``layout``, or the exit code after saying in one line why there is none."""
    try:
        return read_existing(layout)
    except NotRunning as exc:
        _stderr(f"error: {exc}")
        return EXIT_STOPPED
    except StateError as exc:
        _stderr(f"error: no local cluster at {layout.root} ({exc}); fix: `rocketmq-operator local up -f FILE`")
        return EXIT_FAILED


def env(state_dir: Path, *, out: Out = _stdout) -> int:
    """`local env`: the name servers' addresses as a shell assignment (what a client's --namesrv wants)."""
    layout = StateLayout(state_dir)
    state = _existing_or_exit(layout)
    if isinstance(state, int):
        return state
    if not state.name_servers:
        _stderr(f"error: the manifests run from {layout.root} have no ControllerGroup, so no name server")
        return EXIT_FAILED
    # Exported: the clients a shell starts after the eval (mqadmin, a producer) read it from their environment.
    out(f"export NAMESRV_ADDR={shlex.quote(';'.join(state.name_servers))}")
    proxies = state.proxy_endpoints
    if proxies:
        # One proxy's gRPC endpoint, as a Service address is on Kubernetes. Not every proxy `;`-joined: nothing
        # balances between local proxies, and rocketmq-python-client 5.1.2 given two proxies' addresses sends a
        # receive to a proxy its settings never reached (the proxy answers a NullPointerException). `local status`
        # lists every proxy's endpoint.
        out(f"export ROCKETMQ_PROXY_ENDPOINT={shlex.quote(proxies[0])}")
    tls = client_tls(state)
    if tls is not None and tls.ca_file is not None:
        out(f"export ROCKETMQ_TLS_CA={shlex.quote(tls.ca_file)}")  # read by produce/consume (--tls-ca)
    if tls is not None and tls.cert_file is not None and tls.key_file is not None:
        out(f"export ROCKETMQ_TLS_CERT={shlex.quote(tls.cert_file)}")  # presented where clients must (--tls-cert)
        out(f"export ROCKETMQ_TLS_KEY={shlex.quote(tls.key_file)}")
    if not supervisor_running(state):
        _stderr(f"stopped: nothing runs from {layout.root}; start it: `rocketmq-operator local up -f FILE`")
        return EXIT_STOPPED
    return EXIT_OK


def prepare_distribution(console: Console | None = None) -> Path:
    """`ensure_distribution`, its progress (download, verification) one updating line on ``console``."""
    if console is None:
        return ensure_distribution(log=_stderr)
    with Ticker(console, "RocketMQ distribution: checking the cache") as ticker:
        return ensure_distribution(log=ticker.print, phase=ticker.update)


def dist_path(out: Out = _stdout, console: Console | None = None) -> int:
    try:
        home = prepare_distribution(console)
    except DistributionError as exc:
        _stderr(f"error: {exc}")
        return EXIT_FAILED
    out(str(home))
    return EXIT_OK
