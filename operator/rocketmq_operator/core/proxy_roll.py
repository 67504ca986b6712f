"""The Proxy roll planner: which proxy process to restart next, so that a change never takes every proxy down. Pure.

On Kubernetes a Proxy is a Deployment (`maxUnavailable: 0, maxSurge: 1`); the local platform has no surge, so it
restarts one proxy at a time and only while every other proxy serves.

Contract: `plan_proxy_roll(facts)` looks at the proxies of one Proxy (`ProxyProcess`: the revision each runs, the
one it should run, whether it serves) plus what the roll remembers, and returns one `core.roll.RollStep`:

* `Restart(name)`: restart that proxy onto its desired revision. A pending proxy that does not serve goes first
  (restarting it takes nothing away); a serving one only while every other proxy serves. With one replica the
  restart is unavoidable and the step says so.
* `Wait(reason)`: the proxy restarted last does not serve on its new revision yet, or another proxy does not
  serve (restarting one more now could leave none serving). A wait longer than `timeout_s` becomes
  `Blocked(reason, fix)`: still nothing restarted, and the fix is shown.
* `Wait("ProxySettling")`: the proxy restarted last serves, but for less than `settle_s` (the Proxy's
  `spec.minReadySeconds`, counted from `serving_since`): its clients have not all reconnected to it yet, so the
  next restart waits, as a Deployment with `minReadySeconds` does. Bounded by `settle_s`, never Blocked.
* `Done`: every proxy runs its desired revision (and the one restarted last serves).

The facts are what `status`/`state` keep (revisions per process, the rollout's `last_restarted`, `waiting_since`
and `serving_since`), so a supervisor restarted mid-roll resumes from them.

`proxy_config_keys(text)` flattens a rendered `rmq-proxy.json` into key -> JSON value (for revisions and
diffs); `describe_proxy_change(...)` says in one line what a changed Proxy needs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rocketmq_operator.core.roll import DEFAULT_TIMEOUT_S, RollStep, StepKind


@dataclass(frozen=True)
class ProxyProcess:
    name: str
    current_revision: str  # what its running process was started from
    desired_revision: str
    ready: bool  # running, and its gRPC and remoting ports accept a connection

    @property
    def pending(self) -> bool:
        return self.current_revision != self.desired_revision


@dataclass(frozen=True)
class ProxyRollFacts:
    processes: tuple[ProxyProcess, ...]  # in ordinal order
    now: float
    last_restarted: str | None = None  # the proxy the previous step restarted
    waiting_since: float | None = None  # when the current run of Wait steps began
    timeout_s: float = DEFAULT_TIMEOUT_S
    serving_since: float | None = None  # when `last_restarted` was first seen serving on its new revision
    settle_s: float = 0.0  # how long it serves before the next restart (spec.minReadySeconds)


def _wait(facts: ProxyRollFacts, reason: str, message: str, fix: str) -> RollStep:
    since = facts.waiting_since if facts.waiting_since is not None else facts.now
    waited = facts.now - since
    if waited > facts.timeout_s:
        return RollStep(StepKind.BLOCKED, reason=reason, message=f"{message} (waited {waited:.0f}s)", fix=fix)
    return RollStep(StepKind.WAIT, reason=reason, message=message)


def plan_proxy_roll(facts: ProxyRollFacts) -> RollStep:
    """The next step of one Proxy's roll (see the module doc)."""
    procs = facts.processes
    awaited = next((p for p in procs if p.name == facts.last_restarted), None)
    if awaited is not None and (awaited.pending or not awaited.ready):
        where = "is not on" if awaited.pending else "does not serve on"
        return _wait(
            facts,
            "ProxyNotServing",
            f"{awaited.name} was restarted and {where} revision {awaited.desired_revision} yet (its gRPC and "
            "remoting ports must accept connections); the next proxy waits for it",
            f"see {awaited.name}'s log for why it does not start; correct the Proxy and apply it again (the roll "
            f"then restarts {awaited.name} first)",
        )
    pending = [p for p in procs if p.pending]
    if not pending:
        # Each proxy has a revision of its own (its rmq-proxy.json names its own ports).
        return RollStep(StepKind.DONE, reason="RolloutComplete", message="every proxy runs its desired revision")
    if awaited is not None and facts.settle_s > 0:
        served = facts.now - (facts.serving_since if facts.serving_since is not None else facts.now)
        if served < facts.settle_s:
            return RollStep(
                StepKind.WAIT,
                reason="ProxySettling",
                message=f"{awaited.name} serves on revision {awaited.desired_revision} for {served:.0f}s of "
                f"spec.minReadySeconds {facts.settle_s:.0f}s (time for its clients to reconnect to it); the next "
                "proxy waits",
            )
    down_pending = next((p for p in pending if not p.ready), None)
    if down_pending is not None:
        return RollStep(
            StepKind.RESTART,
            replica=down_pending.name,
            reason="ProxyNotServing",
            message=f"{down_pending.name} does not serve: restarting it onto revision "
            f"{down_pending.desired_revision} takes no serving proxy away",
        )
    down = [p.name for p in procs if not p.ready]
    if down:
        candidate = pending[0].name
        return _wait(
            facts,
            "ProxyNotServing",
            f"{', '.join(down)} does not serve; restarting {candidate} now could leave no proxy serving",
            f"see why {down[0]} is down in its log; one stopped by `local kill --no-restart` starts again with "
            f"`rocketmq-operator local start {down[0]}`",
        )
    nxt = pending[0]
    if len(procs) == 1:
        return RollStep(
            StepKind.RESTART,
            replica=nxt.name,
            reason="OnlyProxy",
            message=f"{nxt.name} onto revision {nxt.desired_revision}: the only proxy (spec.replicas 1), so no "
            "proxy serves until it is back",
        )
    return RollStep(
        StepKind.RESTART,
        replica=nxt.name,
        reason="RollingUpdate",
        message=f"{nxt.name} onto revision {nxt.desired_revision}; {len(procs) - 1} other proxies serve meanwhile",
    )


def proxy_config_keys(text: str) -> dict[str, str]:
    """A rendered rmq-proxy.json as key -> the value's JSON text (a flat mapping, like a broker's properties)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(doc, dict):
        return {}
    return {str(k): json.dumps(v, sort_keys=True) for k, v in doc.items()}


def describe_proxy_change(
    old_version: str,
    new_version: str,
    old_confs: Sequence[Mapping[str, str]],
    new_confs: Sequence[Mapping[str, str]],
    old_argv: Sequence[str],
    new_argv: Sequence[str],
) -> str:
    """'no change', or 'rolling restart of N proxies, one at a time ... (why)' for one Proxy's processes (the
    argv are compared only within one version: another version is another distribution path)."""
    if len(old_confs) != len(new_confs):
        return f"scale from {len(old_confs)} to {len(new_confs)} proxies (not a roll)"
    why: list[str] = []
    if old_version != new_version:
        why.append(f"version {old_version} -> {new_version}")
    elif list(old_argv) != list(new_argv):
        why.append("jvm options")
    keys = sorted(
        {k for o, n in zip(old_confs, new_confs, strict=True) for k in set(o) | set(n) if o.get(k) != n.get(k)}
    )
    if keys:
        why.append("rmq-proxy.json keys " + ", ".join(keys))
    if not why:
        return "no change"
    n = len(new_confs)
    order = (
        "one at a time, each serving again before the next"
        if n > 1
        else "its only proxy: no proxy serves until it is back"
    )
    return f"rolling restart of {n} {'proxies' if n > 1 else 'proxy'}, {order} ({'; '.join(why)})"
