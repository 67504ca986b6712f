"""Chaos campaigns, the pure half: the seeded fault schedule, target resolution and the checker.

Contract: no I/O and no clock. `plan_campaign` returns the faults of a campaign in order (the same seed gives the
same schedule); `resolve_targets` turns a fault's target kind into the process names to fault, given the
replicas and the master at that moment; `check_campaign` reads what the producer saw, when each fault was held
and what a consumer read back afterwards, and returns the JSON document `rocketmq-operator chaos` prints.

The families and targets are those RocketMQ's own OpenChaos campaign used for the controller (RIP-44): kill -9,
SIGSTOP (a hung process), 80% packet loss and a network partition, on a random broker, the master, a minority,
a majority or all of the controllers, or a broker and a controller at once. One fault is held at a time, so a
"random broker" fault always leaves the other replicas alive.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from rocketmq_operator.tools.noloss import missing_acknowledged

# p50/p99/max, rounded: the same summary the tools give latencies (here of seconds)
from rocketmq_operator.tools.stats import latency_summary, recovery_windows

FAMILIES = ("kill", "suspend", "loss", "partition")
"""The families both platforms inject."""
KUBERNETES_FAMILIES = (*FAMILIES, "pod-delete")
"""On Kubernetes also the deletion of a pod (grace period 0), which only a platform with pods has."""
BROKER_ONLY_FAMILIES = frozenset({"pod-delete"})
"""Families planned on brokers only where the controllers host the name servers: a deleted pod comes back at
another address, and the campaign's producer addresses the name servers by theirs (bench.chaos_kubernetes). With
standalone controllers nothing addresses a controller's pod but the brokers, by name, so none is broker-only."""
OPERATOR_PROCESS = "operator"
"""The process name a MASTER_AND_OPERATOR fault gives the operator: the platform resolves it (its pods)."""
LOSS_PROBABILITY = 0.8  # OpenChaos's packet-loss fault


class Target(StrEnum):
    BROKER = "broker"
    MASTER = "master"
    CONTROLLERS_MINORITY = "controllers-minority"
    CONTROLLERS_MAJORITY = "controllers-majority"
    CONTROLLERS_ALL = "controllers-all"
    BROKER_AND_CONTROLLER = "broker+controller"
    MASTER_AND_OPERATOR = "master+operator"
    """The master faulted and the operator's pod deleted at once: the failover happens while the operator starts
    again, and must be finished from what status holds (Kubernetes only)."""


CONTROLLER_ONLY = frozenset({Target.CONTROLLERS_MINORITY, Target.CONTROLLERS_MAJORITY, Target.CONTROLLERS_ALL})


class ChaosPlanError(ValueError):
    """A campaign that cannot be planned; the message names the option, the value, the rule and the fix."""


@dataclass(frozen=True)
class PlannedFault:
    index: int
    family: str
    target: Target
    pick: int  # the seeded choice among the candidates, resolved when the fault is injected


BROKER_TARGETS = frozenset({Target.BROKER, Target.MASTER, Target.MASTER_AND_OPERATOR})


def targets_for(controllers: int, operator: bool = False) -> list[Target]:
    """The target kinds a group with ``controllers`` controllers offers: a minority needs at least 3; the operator
    only where the platform runs it as something a fault can hit (``operator``)."""
    out = [Target.BROKER, Target.MASTER]
    if controllers >= 3:
        out += [Target.CONTROLLERS_MINORITY, Target.CONTROLLERS_MAJORITY]
    if controllers >= 1:
        out += [Target.CONTROLLERS_ALL, Target.BROKER_AND_CONTROLLER]
    if operator:
        out.append(Target.MASTER_AND_OPERATOR)
    return out


def plan_campaign(
    faults: int,
    seed: int,
    families: Sequence[str],
    controllers: int,
    offered: Sequence[str] = FAMILIES,
    *,
    broker_only: frozenset[str] = BROKER_ONLY_FAMILIES,
    operator: bool = False,
) -> list[PlannedFault]:
    """``faults`` faults: the families in a seeded order that repeats every family once per round (a short
    campaign covers each), each with a seeded target among those the group offers. ``offered``: the families the
    platform can inject; ``broker_only``: those it injects on brokers only; ``operator``: whether it can fault the
    operator (:func:`targets_for`)."""
    if faults < 1:
        raise ChaosPlanError(f"--faults {faults}: must be at least 1; fix: --faults 12")
    unknown = [f for f in families if f not in offered]
    if unknown or not families:
        raise ChaosPlanError(
            f"--families {','.join(families) or '(none)'}: each must be one of {', '.join(offered)} on this "
            f"platform; fix: --families {','.join(offered)}"
        )
    rng = random.Random(seed)
    targets = targets_for(controllers, operator)
    plan: list[PlannedFault] = []
    order: list[str] = []
    for index in range(faults):
        if not order:
            order = list(dict.fromkeys(families))
            rng.shuffle(order)
        family = order.pop()
        candidates = [t for t in targets if t in BROKER_TARGETS] if family in broker_only else targets
        plan.append(PlannedFault(index, family, rng.choice(candidates), rng.randrange(1 << 16)))
    return plan


def resolve_targets(
    fault: PlannedFault, brokers: Sequence[str], controllers: Sequence[str], master: str | None
) -> tuple[str, ...]:
    """The processes a fault hits. ``brokers`` and ``controllers`` in a stable order; ``master`` the replica the
    controller names now (a MASTER fault without one hits a seeded broker instead, as a real outage would)."""
    pick = fault.pick
    if fault.target is Target.BROKER or (fault.target is Target.MASTER and master is None):
        return (brokers[pick % len(brokers)],)
    if fault.target is Target.MASTER:
        assert master is not None
        return (master,)
    if fault.target is Target.MASTER_AND_OPERATOR:
        return (master if master is not None else brokers[pick % len(brokers)], OPERATOR_PROCESS)
    n = len(controllers)
    rotated = [controllers[(pick + i) % n] for i in range(n)]
    if fault.target is Target.CONTROLLERS_MINORITY:
        return tuple(rotated[: (n - 1) // 2])
    if fault.target is Target.CONTROLLERS_MAJORITY:
        return tuple(rotated[: n // 2 + 1])
    if fault.target is Target.CONTROLLERS_ALL:
        return tuple(rotated)
    return (brokers[pick % len(brokers)], rotated[0])


# ---------------------------------------------------------------------------------------------------- checker


@dataclass(frozen=True)
class Send:
    """One message as the producer saw it (all its attempts)."""

    key: str
    start: float
    end: float
    ok: bool
    status: str
    where: str = ""  # broker/queue@offset of the acknowledgement


@dataclass(frozen=True)
class HeldFault:
    """A fault as it was injected: held from ``start`` to ``healed``; its window runs until the next fault."""

    index: int
    family: str
    target: str
    processes: tuple[str, ...]
    start: float
    healed: float
    notes: tuple[str, ...] = field(default=())
    master: str | None = None  # the replica the controller named master when the fault started


def failed_statuses(sends: Sequence[Send], start: float, end: float) -> dict[str, int]:
    """What the failed sends of one window ended with (NO_ROUTE, IN_SYNC_REPLICAS_NOT_ENOUGH, ...)."""
    return dict(sorted(Counter(s.status for s in sends if start <= s.end < end and not s.ok).items()))


def fault_rto(sends: Sequence[Send], start: float, end: float) -> tuple[float, int, bool]:
    """Client-visible recovery for one fault window [start, end), with the window's failed sends counted: the
    longest of its OpenChaos recovery windows (:func:`recovery_windows`, as ``bench failover`` measures), each
    from the start of a failed send to the next acknowledgement. 0 when no send failed. A window still open at
    ``end`` (no acknowledgement followed) counts up to ``end`` and the fault is unrecovered."""
    window = [s for s in sends if start <= s.end < end]
    failed = sum(1 for s in window if not s.ok)
    outages = recovery_windows(window)
    if not outages:
        return 0.0, failed, True
    worst = max((w.end if w.end is not None else end) - w.start for w in outages)
    return round(worst, 3), failed, outages[-1].end is not None


def last_sends(sends: Sequence[Send], start: float, end: float, count: int = 12) -> list[dict[str, Any]]:
    """The window's last ``count`` answers in answer order, times in seconds from the window's start."""
    window = sorted((s for s in sends if start <= s.end < end), key=lambda s: s.end)[-count:]
    return [
        {
            "key": s.key,
            "sent_s": round(s.start - start, 3),
            "answered_s": round(s.end - start, 3),
            "status": s.status,
            "where": s.where,
        }
        for s in window
    ]


def unrecovered(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The campaign record's faults the client never saw recovered from (for a failure message)."""
    return [f for f in doc["per_fault"] if not f["recovered"]]


def fault_entry(fault: HeldFault, sends: Sequence[Send], end: float) -> dict[str, Any]:
    """One fault's line of the record: what was faulted, and the client's view of its window [start, ``end``)
    (``end``: where the next fault starts, or the campaign's end). The campaign's journal writes the same line as
    soon as the window is closed."""
    rto, failed, recovered = fault_rto(sends, fault.start, end)
    entry: dict[str, Any] = {
        "index": fault.index,
        "family": fault.family,
        "target": fault.target,
        "processes": list(fault.processes),
        "master": fault.master,
        "start": round(fault.start, 3),
        "window_s": round(end - fault.start, 3),
        "held_s": round(fault.healed - fault.start, 3),
        "rto_s": rto,
        "failed_sends": failed,
        "failed_statuses": failed_statuses(sends, fault.start, end),
        "recovered": recovered,
        "notes": list(fault.notes),
    }
    if not recovered:  # what the client saw last, so that the finding can be traced from the record alone
        entry["last_sends"] = last_sends(sends, fault.start, end)
    return entry


def _fault_at(faults: Sequence[HeldFault], t: float) -> int | None:
    """The index of the fault whose window holds ``t`` (None before the first)."""
    index = None
    for fault in faults:
        if fault.start <= t:
            index = fault.index
    return index


def check_campaign(
    sends: Sequence[Send],
    faults: Sequence[HeldFault],
    consumed: Iterable[str],
    ended: float,
    deposed_acks: int,
    duplicates: int = 0,
) -> dict[str, Any]:
    """The checker: acknowledged messages lost (never read back; ``consumed`` holds the keys read), duplicates
    (as the consumer counted them: a retried send the broker had stored, at-least-once), RTO per fault and per
    family, and the failed sends while only controllers were faulted (RocketMQ claims brokers keep serving).
    ``deposed_acks`` is the executor's count of acknowledgements whose queue offset holds another message on the
    final master. A window ends where the next fault starts (or at ``ended``)."""
    read = set(consumed)
    acked = {s.key for s in sends if s.ok}
    lost = sorted(missing_acknowledged(acked, read))
    ordered = sorted(faults, key=lambda f: f.start)
    per_fault = [
        fault_entry(fault, sends, ordered[i + 1].start if i + 1 < len(ordered) else ended)
        for i, fault in enumerate(ordered)
    ]
    by_family: dict[str, dict[str, Any]] = {}
    for family in [*FAMILIES, *sorted({f["family"] for f in per_fault} - set(FAMILIES))]:
        mine = [f for f in per_fault if f["family"] == family]
        by_family[family] = {
            "faults": len(mine),
            "rto_s": latency_summary([f["rto_s"] for f in mine]),
            "failed_sends": sum(f["failed_sends"] for f in mine),
        }
    statuses = Counter(s.status for s in sends)
    return {
        "faults": len(per_fault),
        "sent": len(sends),
        "acknowledged": len(acked),
        "consumed": len(read),
        "lost": len(lost),
        "lost_sends": [
            {"key": s.key, "start": s.start, "end": s.end, "where": s.where, "fault": _fault_at(ordered, s.end)}
            for s in sends
            if s.ok and s.key in set(lost[:20])
        ],
        "duplicates": duplicates,
        "deposed_acks": deposed_acks,
        "unrecovered_faults": sum(1 for f in per_fault if not f["recovered"]),
        "rto_s": latency_summary([f["rto_s"] for f in per_fault]),
        "rto_s_broker_kill_and_partition": latency_summary(
            [
                f["rto_s"]
                for f in per_fault
                if f["family"] in ("kill", "partition") and f["target"] not in {t.value for t in CONTROLLER_ONLY}
            ]
        ),
        "by_family": by_family,
        "controller_only_failed_sends": sum(
            f["failed_sends"] for f in per_fault if f["target"] in {t.value for t in CONTROLLER_ONLY}
        ),
        "statuses": dict(sorted(statuses.items())),
        "per_fault": per_fault,
    }


# ---------------------------------------------------------------------------------------------------- timeline

FAMILY_COLOURS = {
    "kill": "#d62728",
    "suspend": "#9467bd",
    "loss": "#ff7f0e",
    "partition": "#1f77b4",
    "pod-delete": "#8c564b",
}


def timeline_svg(sends: Sequence[Send], faults: Sequence[HeldFault], began: float, ended: float) -> str:
    """The campaign as an SVG: each fault a band (coloured by family, from injection to heal), and per second
    the acknowledged sends (green) and the failed ones (red) by the time their answer came."""
    width, height, left, top, bottom = 1200, 320, 50, 20, 40
    span = max(ended - began, 1.0)
    plot_w, plot_h = width - left - 10, height - top - bottom
    seconds = int(span) + 1
    ok_per_s, failed_per_s = [0] * seconds, [0] * seconds
    for s in sends:
        second = min(seconds - 1, max(0, int(s.end - began)))
        (ok_per_s if s.ok else failed_per_s)[second] += 1
    peak = max([*ok_per_s, *failed_per_s, 1])

    def x(t: float) -> float:
        return left + (t - began) / span * plot_w

    def y(count: int) -> float:
        return top + plot_h - count / peak * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="11">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
    ]
    for f in faults:
        colour = FAMILY_COLOURS.get(f.family, "#7f7f7f")
        parts.append(
            f'<rect x="{x(f.start):.1f}" y="{top}" width="{max(1.0, x(f.healed) - x(f.start)):.1f}" '
            f'height="{plot_h}" fill="{colour}" fill-opacity="0.25"><title>#{f.index} {f.family} {f.target}: '
            f"{' '.join(f.processes)}</title></rect>"
        )
    for series, colour in ((ok_per_s, "#2ca02c"), (failed_per_s, "#d62728")):
        points = " ".join(f"{x(began + i + 0.5):.1f},{y(n):.1f}" for i, n in enumerate(series))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.2"/>')
    parts.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="black"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>')
    parts.append(f'<text x="4" y="{top + 10}">{peak}/s</text><text x="4" y="{top + plot_h}">0</text>')
    parts.append(f'<text x="{left}" y="{height - 22}">0 s</text>')
    parts.append(f'<text x="{left + plot_w - 40}" y="{height - 22}">{span:.0f} s</text>')
    legend = [("acknowledged/s", "#2ca02c"), ("failed/s", "#d62728")]
    present = {f.family for f in faults}
    legend += [(f"{family} fault", colour) for family, colour in FAMILY_COLOURS.items() if family in present]
    for i, (label, colour) in enumerate(legend):
        lx = left + 10 + i * 150
        parts.append(f'<rect x="{lx}" y="{height - 14}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{lx + 14}" y="{height - 5}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
