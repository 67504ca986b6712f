"""The user's fence of a replica: which replicas to fence or unfence now, and what status records. Pure.

A user asks for a fence by naming replicas (pod names) in the BrokerGroup annotation `rocketmq-operator.dev/fence`
(`kubectl rocketmq fence REPLICA`); a fenced replica refuses every put (the switchover's fence,
`control.fence.fence_config`). The fence lives in the broker's runtime config only, so a restarted broker
comes back unfenced: each pass reads the live config of every replica asked for and fences again the ones that
lost it. `status.fenced` records the replicas fenced, so that a replica dropped from the annotation is unfenced
even by an operator restarted since (the record is what it unfences, never a fence it did not make).

`plan_fences(wanted, recorded, known, observed)`:

* a wanted replica that answers unfenced is fenced; one that answers fenced stays so;
* a wanted replica that does not answer (or has no address yet) is a problem, fenced as soon as it answers;
  a name that is no replica of the group is a problem naming the replicas;
* a recorded replica no longer wanted is unfenced when it answers fenced, dropped from the record when it
  answers unfenced (restarted since) or is no replica any more (scaled in), and kept while it does not answer.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class FenceFacts:
    """One replica as the pass found it: whether it answered, and whether its live config is fenced."""

    reachable: bool
    fenced: bool = False


@dataclass(frozen=True)
class FencePlan:
    fence: tuple[str, ...]  # apply the fence to these
    unfence: tuple[str, ...]  # give these their values back
    fenced: tuple[str, ...]  # status.fenced once the actions succeed
    problems: tuple[str, ...]  # what cannot be done now, and why


def parse_fence_annotation(value: str | None) -> frozenset[str]:
    """The replica names of the annotation's value: comma-separated, blanks ignored."""
    return frozenset(name.strip() for name in (value or "").split(",") if name.strip())


def plan_fences(
    wanted: Collection[str],
    recorded: Collection[str],
    known: Collection[str],
    observed: Mapping[str, FenceFacts],
    *,
    annotation: str = "rocketmq-operator.dev/fence",
) -> FencePlan:
    """See the module doc. ``known``: the group's replicas (pods); ``observed``: facts of the replicas read."""
    fence: list[str] = []
    unfence: list[str] = []
    fenced: set[str] = set()
    problems: list[str] = []
    for name in sorted(wanted):
        facts = observed.get(name)
        if name not in known and facts is None:
            problems.append(
                f"annotation {annotation}: {name!r} is not a replica of the group (replicas: "
                f"{', '.join(sorted(known)) or 'none'}); fix: name one of its pods"
            )
            continue
        if facts is None or not facts.reachable:
            problems.append(f"{name} does not answer: it is fenced as soon as it does")
            if name in recorded:
                fenced.add(name)
            continue
        if not facts.fenced:
            fence.append(name)
        fenced.add(name)
    for name in sorted(set(recorded) - set(wanted)):
        facts = observed.get(name)
        if facts is None and name not in known:
            continue  # no replica any more (scaled in): nothing to give back
        if facts is None or not facts.reachable:
            problems.append(f"{name} does not answer: it is unfenced as soon as it does")
            fenced.add(name)
            continue
        if facts.fenced:
            unfence.append(name)
    return FencePlan(tuple(fence), tuple(unfence), tuple(sorted(fenced)), tuple(problems))
