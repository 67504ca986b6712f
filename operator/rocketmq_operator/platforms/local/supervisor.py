"""The supervisor: one detached process per state directory that runs the java processes like pods.

Run as `python -m rocketmq_operator.platforms.local.supervisor --state-dir DIR` (`local up` does that, in a new
session, with stdout/stderr in `<state>/supervisor.log`).

Contract:

* Reads `state.json` once at start and is then its only writer (atomic writes, after every change).
* Start order: every phase-0 process (name servers, controllers) first; brokers (phase 1) once every phase-0
  port answers on 127.0.0.1, or after `GATE_TIMEOUT_S` whatever happens (brokers retry their controllers).
* Each start copies the rendered `conf/<replica>.conf` to `data/<replica>/conf/<replica>.conf` (as the image
  entrypoint copies the ConfigMap to the volume), appends a header to `logs/<replica>.log` and runs the
  recorded argv there, in `data/<replica>/`.
* A process that exits while its desired state is `running` is started again after `backoff.BackoffPolicy`
  (1 s doubling to 10 s, reset after 60 s of running). A stopped (SIGSTOP) process has not exited and is left
  alone. Desired state `stopped` (`local kill --no-restart`) keeps it down until a `start` request.
* Requests (`commands`): `signal` and `start`, answered in order every tick (`TICK_S`).
* Replication policy (what the Kubernetes observer does for pods): once brokers may start, every
  `ROCKETMQ_OPERATOR_OBSERVE_SECONDS` (default 0.5) it observes the controller-mode groups and runs
  `control.policy.run_replication_policy`, the same pass the operator runs: a deposed master that could still
  acknowledge a write is fenced (SIGKILL: the supervisor owns the process, as STONITH does; it restarts as a
  slave), a master that does not answer for `spec.failover.detectionSeconds` is fenced and replaced, slaves are
  pointed at the confirmed master (one not connected to it for a grace period is restarted with SIGTERM, as a
  pod would be deleted), and a name server that lost the master's route gets it again at once. The same pass
  runs one step of every group's roll, and then of every Proxy's (`proxy_roll`: one proxy at a time, the next
  only once it serves again). Failures are logged and retried on the next pass; nothing else is decided here.
* SIGTERM/SIGINT/SIGHUP: stop brokers, then name servers/controllers: SIGTERM (plus SIGCONT for suspended
  ones), SIGKILL after `GRACE_S`; record that nothing runs; exit 0. A second signal skips the grace period.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.control.clock import iso_time
from rocketmq_operator.control.group_drain import declared_lag_pairs, run_group_drain
from rocketmq_operator.control.group_pass import run_group_pass
from rocketmq_operator.control.lease_agent import LeaseAgent
from rocketmq_operator.control.policy import (
    PolicyMemory,
    PolicySettings,
    policy_settings,
    run_replication_policy,
)
from rocketmq_operator.core.failover import ProcessState
from rocketmq_operator.core.lease import lease_agent_enabled
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.platforms.local import commands
from rocketmq_operator.platforms.local.adopt import AdoptedProcess
from rocketmq_operator.platforms.local.auth import AuthPolicy, credentials_by_addr, run_config_keys, state_client
from rocketmq_operator.platforms.local.backoff import DEFAULT_BACKOFF, BackoffPolicy
from rocketmq_operator.platforms.local.group_drain import read_drain_record, write_drain_record
from rocketmq_operator.platforms.local.group_states import observe
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.netfault import cgroup_preexec
from rocketmq_operator.platforms.local.placement import load_resources
from rocketmq_operator.platforms.local.ports import port_answers, ports_answer
from rocketmq_operator.platforms.local.proxy_roll import LocalProxyRoll
from rocketmq_operator.platforms.local.roll import LocalRoll, handle_apply, promote_target
from rocketmq_operator.platforms.local.state import (
    EXITED,
    RUNNING,
    STARTING,
    STOPPED,
    STOPPING,
    SUPERVISING,
    LocalState,
    ReplicaProcess,
    SupervisorInfo,
    pid_alive,
    read_state,
    write_state,
)
from rocketmq_operator.platforms.local.tls import TlsPolicy
from rocketmq_operator.platforms.local.topics import TopicPolicy
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.render.config import properties_text, proxy_config_text

TICK_S = 0.1
GATE_TIMEOUT_S = 60.0
# Brokers measured 7-12 s from SIGTERM to exit (docs/notes/local-start.md); a SIGKILL before that makes the
# next start recover the commitlog as after a crash.
GRACE_S = 15.0
STALE_REPLY_S = 300.0

log = logging.getLogger("rocketmq_operator.local.supervisor")

SIGNALS: dict[str, signal.Signals] = {
    "KILL": signal.SIGKILL,
    "TERM": signal.SIGTERM,
    "STOP": signal.SIGSTOP,
    "CONT": signal.SIGCONT,
}


class Supervisor:
    def __init__(self, layout: StateLayout, policy: BackoffPolicy = DEFAULT_BACKOFF) -> None:
        self.layout = layout
        self.policy = policy
        self.state: LocalState = read_state(layout.state_file)
        self.procs: dict[str, subprocess.Popen[bytes] | AdoptedProcess] = {}
        self.stop_requested = asyncio.Event()
        self.signals_received = 0
        self.gate_open = False  # phase-1 processes may start
        self.open_phase = 0  # the highest start phase allowed so far
        self.dirty = True
        self.policy_interval_s = float(os.environ.get("ROCKETMQ_OPERATOR_OBSERVE_SECONDS", "0.5"))
        self.policy_memory: dict[str, PolicyMemory] = {}  # per group, for the replication policy
        self.topic_policy = TopicPolicy(self.state, layout)  # declared topics/groups, re-asserted on every master
        self.auth_policy = AuthPolicy(self.state, layout)  # declared users and ACLs, asserted on every replica
        self.tls_policy = TlsPolicy(self.state, layout)  # spec.tls: certificates renewed before they expire
        self.roll = LocalRoll(self)  # rolling restarts, one step per policy pass
        self.proxy_roll = LocalProxyRoll(self)  # a changed Proxy's processes, one at a time

    # ------------------------------------------------------------------ bookkeeping

    def save(self) -> None:
        self.state.updated_at = time.time()
        write_state(self.layout.state_file, self.state)
        self.dirty = False

    def _on_signal(self, signum: int) -> None:
        self.signals_received += 1
        log.info("received %s (%d)", signal.Signals(signum).name, self.signals_received)
        self.stop_requested.set()

    def _adopt_leftovers(self) -> None:
        """Processes of a previous supervisor that died without stopping them (`local up` kept their pids only
        for the same manifest, see `roll.carry_over`): adopted, so a roll in progress resumes without
        restarting every broker."""
        for r in self.state.replicas:
            if r.pid is not None and pid_alive(r.pid, r.run_config):
                log.warning("adopting %s (pid %d), left running by an earlier supervisor", r.name, r.pid)
                self.procs[r.name] = AdoptedProcess(r.pid, r.run_config)
                continue
            r.pid = None
            r.suspended = False

    # ------------------------------------------------------------------ processes

    def _start(self, r: ReplicaProcess, now: float) -> None:
        promote_target(r, self.layout)
        data = Path(r.data_dir)
        run_config = Path(r.run_config)
        run_config.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(r.config, run_config)
        secret_keys = run_config_keys(self.state, r.name)
        if secret_keys:
            # The admin Secret goes into the copy the process reads only (as a Secret volume would on Kubernetes):
            # a broker's properties, a proxy's rmq-proxy.json (JSON: the keys join its object).
            run_config.chmod(0o600)
            if r.role == "proxy":
                merged = {**json.loads(run_config.read_text(encoding="utf-8")), **secret_keys}
                run_config.write_text(proxy_config_text(merged), encoding="utf-8")
            else:
                with run_config.open("a", encoding="utf-8") as conf:
                    conf.write(properties_text(secret_keys))
        log_path = Path(r.log)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        handle: IO[bytes]
        with log_path.open("ab") as handle:
            attempt = r.starts + 1
            handle.write(f"\n=== {iso_time(now)} rocketmq-operator local: start #{attempt} of {r.name}\n".encode())
            handle.flush()
            try:
                proc = subprocess.Popen(
                    r.argv,
                    cwd=data,
                    stdin=subprocess.DEVNULL,
                    stdout=handle,
                    stderr=subprocess.STDOUT,
                    close_fds=True,
                    # Network faults drop a process's packets by its cgroup: it must be in it before any socket.
                    preexec_fn=cgroup_preexec(self.layout.root, r.name) if self.state.fault_injection else None,
                )
            except OSError as exc:
                handle.write(f"=== cannot start: {exc}\n".encode())
                log.error("cannot start %s: %s", r.name, exc)
                r.last_exit_code = 127
                r.last_exit_at = now
                r.failures = self.policy.failures_after_exit(r.failures, 0.0)
                r.next_start_at = now + self.policy.delay(r.failures)
                self.dirty = True
                return
        self.procs[r.name] = proc
        if r.starts > 0:
            r.restarts += 1
        r.starts += 1
        r.pid = proc.pid
        r.started_at = now
        r.next_start_at = None
        r.suspended = False
        self.dirty = True
        log.info("started %s (pid %d)", r.name, proc.pid)

    def _reap(self, now: float) -> None:
        for name, proc in list(self.procs.items()):
            code = proc.poll()
            if code is None:
                continue
            del self.procs[name]
            r = self.state.replica(name)
            if r is None:
                continue
            uptime = now - (r.started_at or now)
            r.pid = None
            if r.removing and self.state.group(r.group) is None:
                self.state.replicas.remove(r)  # its group was removed (`_stop_removed_groups`)
                log.info("%s exited (%s); removed with its group %s", name, _exit_text(code), r.group)
                self.dirty = True
                continue
            r.suspended = False
            r.last_exit_code = code
            r.last_exit_at = now
            if r.desired == RUNNING and not self.stop_requested.is_set():
                r.failures = self.policy.failures_after_exit(r.failures, uptime)
                delay = self.policy.delay(r.failures)
                r.next_start_at = now + delay
                log.info("%s exited (%s) after %.1fs; restart in %.0fs", name, _exit_text(code), uptime, delay)
            else:
                r.next_start_at = None
                log.info("%s exited (%s); desired state %s", name, _exit_text(code), r.desired)
            self.dirty = True

    def _start_due(self, now: float) -> None:
        for r in self.state.replicas:
            if r.desired != RUNNING or r.pid is not None or r.next_start_at is None:
                continue
            if r.phase > self.open_phase:
                continue
            if r.next_start_at <= now:
                self._start(r, now)

    async def _phase0_ready(self) -> bool:
        return await self._phases_ready(0)

    async def _phases_ready(self, upto: int) -> bool:
        """Every process of phases ≤ `upto` that should run answers on its ports."""
        wanted = [
            f"127.0.0.1:{port}"
            for r in self.state.replicas
            if r.phase <= upto and r.desired == RUNNING
            for port in r.ports.values()
        ]
        if not wanted:
            return True
        answers = await asyncio.gather(*(port_answers(a) for a in wanted))
        return all(answers)

    # ------------------------------------------------------------------ requests

    def _handle(self, body: dict[str, Any], now: float) -> dict[str, Any]:
        op = body.get("op")
        if op == "apply":
            self.dirty = True
            answer = handle_apply(self.state, body)
            if answer.get("ok"):
                self._stop_removed_groups(now)
            self.auth_policy = AuthPolicy(self.state, self.layout)
            self.tls_policy = TlsPolicy(self.state, self.layout)
            return answer
        name = str(body.get("replica", ""))
        r = self.state.replica(name)
        if r is None:
            known = ", ".join(x.name for x in self.state.replicas)
            return {"ok": False, "message": f"no replica '{name}'; replicas: {known}"}
        if op == "signal":
            return self._signal(r, str(body.get("signal", "KILL")).upper(), bool(body.get("noRestart")), now)
        if op == "start":
            return self._start_request(r, now)
        return {"ok": False, "message": f"unknown request {op!r}"}

    def _stop_removed_groups(self, now: float) -> None:
        """Replicas of a BrokerGroup the applied manifests no longer have (`local apply` drained it first:
        `platforms.local.group_drain.remove_groups`): stopped, and forgotten once down (`_reap`). Their data is
        kept."""
        groups = {g.name for g in self.state.groups}
        for r in list(self.state.replicas):
            if r.removing and r.group not in groups:
                self._signal(r, "TERM", no_restart=True, now=now)
                if r.pid is None:
                    self.state.replicas.remove(r)
                    log.info("%s removed with its group %s", r.name, r.group)

    def _signal(self, r: ReplicaProcess, sig_name: str, no_restart: bool, now: float) -> dict[str, Any]:
        sig = SIGNALS.get(sig_name)
        if sig is None:
            return {"ok": False, "message": f"signal {sig_name} is not one of {', '.join(SIGNALS)}"}
        if no_restart and r.desired != STOPPED:
            r.desired = STOPPED
            r.next_start_at = None
            self.dirty = True
        proc = self.procs.get(r.name)
        if proc is None or proc.poll() is not None:
            if no_restart:
                return {"ok": True, "message": f"{r.name} is not running; it stays down", "pid": None}
            return {"ok": False, "message": f"{r.name} is not running (desired state {r.desired})", "pid": None}
        proc.send_signal(sig)
        signalled_at = time.time()
        if sig is signal.SIGSTOP:
            r.suspended = True
        elif sig is signal.SIGCONT:
            r.suspended = False
        elif r.suspended:
            proc.send_signal(signal.SIGCONT)  # a stopped process must run to act on TERM (KILL works anyway)
        self.dirty = True
        log.info("sent SIG%s to %s (pid %d)%s", sig_name, r.name, proc.pid, " (no restart)" if no_restart else "")
        return {
            "ok": True,
            "message": f"sent SIG{sig_name} to {r.name}",
            "pid": proc.pid,
            "desired": r.desired,
            "signalledAt": signalled_at,
        }

    def _start_request(self, r: ReplicaProcess, now: float) -> dict[str, Any]:
        proc = self.procs.get(r.name)
        r.desired = RUNNING
        self.dirty = True
        if proc is not None and proc.poll() is None:
            if r.suspended:
                proc.send_signal(signal.SIGCONT)
                r.suspended = False
                return {"ok": True, "message": f"{r.name} resumed (SIGCONT)", "pid": proc.pid}
            return {"ok": True, "message": f"{r.name} is already running", "pid": proc.pid}
        r.failures = 0
        r.next_start_at = now
        self._start(r, now)
        if r.pid is None:
            return {"ok": False, "message": f"{r.name} could not be started; see {r.log}", "pid": None}
        return {"ok": True, "message": f"started {r.name}", "pid": r.pid}

    def _handle_requests(self, now: float) -> None:
        directory = self.layout.commands_dir
        for ident, body in commands.pending(directory):
            try:
                answer = self._handle(body, now)
            except Exception as exc:  # a bad request must not take the supervisor down
                log.exception("request %s failed", ident)
                answer = {"ok": False, "message": f"request failed: {exc}"}
            if self.dirty:
                self.save()  # a client that reads state.json after the reply sees the change
            commands.reply(directory, ident, answer)
        for path in directory.glob(f"*{commands.REPLY_SUFFIX}"):
            try:
                if now - path.stat().st_mtime > STALE_REPLY_S:
                    path.unlink(missing_ok=True)
            except OSError:
                pass

    # ------------------------------------------------------------------ main loop

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self._on_signal, sig)
        now = time.time()
        self.state.supervisor = SupervisorInfo(pid=os.getpid(), phase=STARTING, started_at=now)
        self._adopt_leftovers()
        for r in self.state.replicas:
            r.failures = 0
            r.next_start_at = now if r.desired == RUNNING and r.pid is None else None
        self.layout.ensure()
        self.save()
        log.info("supervising %d processes in %s", len(self.state.replicas), self.layout.root)
        gate_deadline = time.monotonic() + GATE_TIMEOUT_S
        policy = asyncio.create_task(self._policy_loop(), name="replication-policy")
        agents = asyncio.create_task(self._lease_agents(), name="lease-agents")
        try:
            await self._supervise(gate_deadline)
        finally:
            for task in (policy, agents):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.shutdown()
        return 0

    async def _supervise(self, gate_deadline: float) -> None:
        while not self.stop_requested.is_set():
            now = time.time()
            self._reap(now)
            self._handle_requests(now)
            if not self.gate_open and (await self._phase0_ready() or time.monotonic() > gate_deadline):
                self.gate_open = True
                self.open_phase = 1
                log.info("name servers and controllers answer: starting brokers")
            last_phase = max((r.phase for r in self.state.replicas), default=0)
            if (
                self.gate_open
                and self.open_phase < last_phase
                and (await self._phases_ready(self.open_phase) or time.monotonic() > gate_deadline)
            ):
                self.open_phase += 1
                log.info("start phase %d open", self.open_phase)
            self._start_due(now)
            if self.gate_open and self.state.supervisor.phase == STARTING:
                self.state.supervisor.phase = SUPERVISING
                self.dirty = True
            if self.dirty:
                self.save()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop_requested.wait(), TICK_S)

    async def restart(self, replica: ReplicaObservation) -> None:
        r = self.state.replica(replica.name)
        if r is not None:
            await self.restart_process(r)

    async def restart_process(self, r: ReplicaProcess) -> None:
        """SIGTERM; the back-off starts it again (with what is now on file: config, certificate)."""
        self._signal(r, "TERM", no_restart=False, now=time.time())

    async def proxy_serves(self, r: ReplicaProcess) -> bool:
        """The process this supervisor runs for the proxy is up (not exited, not SIGSTOPped) and its gRPC and
        remoting ports accept a connection (`local status`'s `ready`)."""
        proc = self.procs.get(r.name)
        if proc is None or proc.poll() is not None or r.suspended:
            return False
        return await ports_answer(r.ports.values())

    async def freeze(self, replica: ReplicaObservation) -> bool:
        """SIGSTOP: the process keeps its sockets and sends nothing; the fence's SIGKILL follows."""
        r = self.state.replica(replica.name)
        if r is None or r.pid is None:
            return False
        return bool(self._signal(r, "STOP", no_restart=False, now=time.time()).get("ok"))

    async def fence(self, replica: ReplicaObservation, *, started_before: float | None) -> str:
        """SIGKILL (works on a stopped process too); the back-off restarts it and it registers as the controller
        says. Only the process that was running before ``started_before`` (the deposed master's), never its
        restarted successor."""
        r = self.state.replica(replica.name)
        if r is None or r.pid is None:
            return ""
        if started_before is not None and (r.started_at is None or r.started_at >= started_before):
            return ""
        r.failures = 0  # a fence is not a crash: the restart comes after the first back-off step, not a longer one
        answer = self._signal(r, "KILL", no_restart=False, now=time.time())
        if self.dirty:
            self.save()
        return f"SIGKILL to {r.name} (pid {answer.get('pid')})" if answer.get("ok") else ""

    async def process_state(self, replica: ReplicaObservation) -> ProcessState:
        """What the supervisor sees of the process it owns: gone, stopped (SIGSTOP, by a request or the kernel's
        `T` state), or running."""
        r = self.state.replica(replica.name)
        proc = self.procs.get(replica.name)
        if r is None or proc is None or proc.poll() is not None:
            return ProcessState.GONE
        if r.suspended:
            return ProcessState.STOPPED
        return kernel_process_state(proc.pid)

    def _policy_settings(self) -> dict[str, PolicySettings]:
        return {
            r.metadata.name: policy_settings(r, self.state.name_servers)
            for r in load_resources(self.state)
            if isinstance(r, BrokerGroup)
        }

    async def _policy_loop(self) -> None:
        if self.policy_interval_s <= 0 or not (
            any(g.controller_mode for g in self.state.groups)
            or self.topic_policy.wanted
            or self.auth_policy.wanted
            or self.tls_policy.wanted
            or any(g.kind == "Proxy" for g in self.state.groups)
        ):
            return
        settings = self._policy_settings()
        # A hung broker must not stall the pass (and with it the detection of the hang) for long.
        timeout = min(1.0, max(0.3, min(s.detection_s for s in settings.values()) / 3)) if settings else 1.0
        async with state_client(
            self.state, connect_timeout=timeout, request_timeout=timeout, by_group=self.auth_policy.credentials
        ) as client:
            while not self.stop_requested.is_set():
                await asyncio.sleep(self.policy_interval_s)
                if not self.gate_open:
                    continue
                try:
                    client.pool.credentials_by_addr = credentials_by_addr(self.state, self.auth_policy.credentials)
                    states = await observe(self.state, client, timeout=timeout)
                    for name, group in states.items():
                        steps = LocalPassSteps(self, client, name, group, settings.get(name), timeout)
                        await run_group_pass(steps, controller_mode=steps.controller_mode, blocked=False)
                    # Once per pass, for every group: a certificate renewal restarts processes.
                    await self.tls_policy.run(self.restart_process)
                except Exception:  # a pass must never take the supervisor down; the next one retries
                    log.exception("replication policy pass failed")
                try:  # apart from the groups' pass: an unreadable group must not hold a Proxy's roll
                    for line in await self.proxy_roll.run():
                        log.info("%s", line)
                except Exception:
                    log.exception("proxy roll step failed")

    async def _lease_agents(self) -> None:
        """One lease agent per broker of a controller-mode group, as a pod runs one beside its broker
        (`control.lease_agent`; the same code). Here it shares the supervisor's process, not the broker's network:
        a fault that cuts one broker off (its cgroup's packets dropped) leaves its agent connected, so locally the
        agent acts on a deposed master at once rather than on its lease (docs/fencing.md, "The lease agent")."""
        if self.policy_interval_s <= 0:
            return
        running: dict[str, asyncio.Task[None]] = {}
        async with state_client(
            self.state, connect_timeout=0.5, request_timeout=0.5, by_group=self.auth_policy.credentials
        ) as client:
            try:
                while not self.stop_requested.is_set():
                    if self.gate_open:
                        client.pool.credentials_by_addr = credentials_by_addr(self.state, self.auth_policy.credentials)
                        opted = {  # read from the recorded documents: no model validation every second
                            str((doc.get("metadata") or {}).get("name"))
                            for doc in self.state.resources
                            if doc.get("kind") == "BrokerGroup"
                            and lease_agent_enabled((doc.get("metadata") or {}).get("annotations"))
                        }
                        modes = {g.name: g.controller_mode and g.name in opted for g in self.state.groups}
                        wanted = {
                            r.name: r.address for r in self.state.replicas if r.role == "broker" and modes.get(r.group)
                        }
                        for name in set(running) - set(wanted):
                            running.pop(name).cancel()
                        for name, address in wanted.items():
                            if name not in running:
                                agent = LeaseAgent(client, address, name=name)
                                running[name] = asyncio.create_task(
                                    agent.run(self.stop_requested), name=f"lease-{name}"
                                )
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.stop_requested.wait(), 1.0)
            finally:
                for task in running.values():
                    task.cancel()
                await asyncio.gather(*running.values(), return_exceptions=True)

    async def shutdown(self) -> None:
        self.state.supervisor.phase = STOPPING
        self.save()
        for phase in sorted({r.phase for r in self.state.replicas}, reverse=True):
            await self._stop_phase(phase)
        for r in self.state.replicas:
            r.pid = None
            r.suspended = False
            r.next_start_at = None
        for ident, _ in commands.pending(self.layout.commands_dir):
            commands.reply(self.layout.commands_dir, ident, {"ok": False, "message": "the supervisor is stopping"})
        self.state.supervisor = SupervisorInfo(pid=None, phase=EXITED, started_at=None)
        self.save()
        log.info("stopped")

    async def _stop_phase(self, phase: int) -> None:
        names = [r.name for r in self.state.replicas if r.phase == phase and r.name in self.procs]
        if not names:
            return
        signals_before = self.signals_received
        for name in names:
            proc = self.procs[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.send_signal(signal.SIGCONT)
        log.info("sent SIGTERM to %s", ", ".join(names))
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline and self.signals_received <= max(signals_before, 1):
            self._reap(time.time())
            if not any(n in self.procs for n in names):
                break
            if self.dirty:
                self.save()
            await asyncio.sleep(TICK_S)
        for name in names:
            left = self.procs.get(name)
            if left is not None and left.poll() is None:
                log.warning("%s did not exit after SIGTERM: SIGKILL", name)
                left.kill()
        for name in names:
            left = self.procs.get(name)
            if left is not None:
                left.wait()
        self._reap(time.time())


@dataclass
class LocalPassSteps:
    """The steps of `control.group_pass` on the local platform, for one group in one pass. The local platform
    has no user fence, and its switchover is run by `local switchover` itself, not asked of a pass; hot keys are
    sent by `local apply`; the status is what `local status` observes, and the topic policy writes its own
    file: what a pass publishes is its log lines."""

    supervisor: Supervisor
    client: RemotingClient
    name: str
    group: GroupState
    settings: PolicySettings | None
    timeout: float

    @property
    def controller_mode(self) -> bool:
        return self.group.controller_mode and self.settings is not None

    async def user_fences(self) -> frozenset[str]:
        return frozenset()

    def switchover_asked(self) -> bool:
        return False

    async def planned_switchover(self, fenced: frozenset[str]) -> bool:
        return False

    async def replication_policy(self) -> bool:
        if self.settings is None:  # not a controller-mode group: run_group_pass never asks
            return False
        outcome = await run_replication_policy(
            self.client,
            self.group,
            self.settings,
            self.supervisor.policy_memory.setdefault(self.name, PolicyMemory()),
            self.supervisor,
            timeout=self.timeout,
        )
        for line in (*outcome.notes, *outcome.steps):
            log.info("%s: %s", self.name, line)
        return outcome.acted

    async def drain(self) -> bool:
        return False  # no nodes to drain

    async def converge(self, fenced: frozenset[str]) -> None:
        rolled = await self.supervisor.roll.run(self.client, self.name, self.group)
        if rolled:
            log.info("%s: %s", self.name, rolled)

    async def users_and_topics(self) -> bool:
        # After the fence (a deposed master must not wait on a hung broker's timeouts); a master elected in this
        # pass is observed, and gets its users and topics, in the next one.
        await self.supervisor.auth_policy.run(self.client, {self.name: self.group})
        await self.supervisor.topic_policy.run(self.client, {self.name: self.group})
        return True

    async def group_drain(self) -> None:
        """`spec.draining` (and a drain taken back); the record, `status/<group>.drain.json`, is `local status`'s."""
        layout = self.supervisor.layout
        recorded = read_drain_record(layout, self.name)
        bg = next(
            (
                r
                for r in load_resources(self.supervisor.state)
                if isinstance(r, BrokerGroup) and r.metadata.name == self.name
            ),
            None,
        )
        draining = bg is not None and bg.spec.draining
        if not draining and recorded is None:
            return
        wanted = self.supervisor.topic_policy.wanted.get(self.name)
        outcome = await run_group_drain(
            self.client,
            self.group,
            draining=draining,
            removing=False,
            recorded=recorded,
            declared=declared_lag_pairs(wanted.lag_topics if wanted is not None else {}),
            timeout=self.timeout,
        )
        for line in (*outcome.steps, *outcome.problems):
            log.info("%s: %s", self.name, line)
        after = outcome.status()
        if after != recorded:
            write_drain_record(layout, self.name, after)

    async def publish(self, topics_asserted: bool) -> None:
        return None

    async def platform(self) -> None:
        return None


def kernel_process_state(pid: int) -> ProcessState:
    """The kernel's view of a process (/proc/PID/stat, its third field): `T`/`t` stopped, gone when it cannot be
    read (exited), running otherwise (asleep or on a CPU: able to answer, however slowly)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return ProcessState.GONE
    # The command name (field 2) is in parentheses and may hold spaces: the state follows the last ')'.
    fields = stat[stat.rfind(")") + 1 :].split()
    if not fields or fields[0] in ("Z", "X"):
        return ProcessState.GONE
    return ProcessState.STOPPED if fields[0] in ("T", "t") else ProcessState.RUNNING


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rocketmq_operator.platforms.local.supervisor")
    parser.add_argument("--state-dir", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    layout = StateLayout(Path(args.state_dir).resolve())
    supervisor = Supervisor(layout)
    return asyncio.run(supervisor.run())


if __name__ == "__main__":
    raise SystemExit(main())
