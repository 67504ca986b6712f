"""Taking a broker group out of its cluster without losing a message: the drain before removal. Pure.

A group is drained when the user asks for it (`spec.draining: true`) and whenever it is being removed (Kubernetes:
the BrokerGroup deleted; local: `local apply` of manifests without it). Draining is done with RocketMQ's own
means, on the group's master:

* **write off**: `brokerPermission=4` (read only). The broker registers again at once, every topic's queues on it
  read-only (`BrokerController.registerBrokerAll` masks each topic's perm with the broker's); producers take only
  writable queues into their routes, so they leave the group at their next route refresh (`pollNameServerInterval`,
  30 s in RocketMQ's clients), while consumers go on reading it (pulls need read permission only). A producer with
  a cached route is still acknowledged until then (the permission is checked on a send only for ordered topics).
* **the door shut**, only once the group is to be removed and nothing is left to consume: the send door
  (`startAcceptSendRequestTimeStamp`, the fence's) refuses every send, so a producer with a stale route is refused
  (and its client retries on another group) instead of acknowledged by a group that is going away. The lag is
  read again after the door is shut; a message that slipped in before it is consumed first.
* **the lag**: per consumer group, the messages on the group's master past the group's committed offset, or past
  the queue's min offset where it committed none, over every queue of each topic it reads there: the topics it
  committed offsets for (`GET_ALL_CONSUMER_OFFSET`) and the ones its ConsumerGroup declares (`spec.topics`),
  retry topics included, the broker's own system groups not (`lag_pairs`, `lag_by_group`).

`plan_group_drain(facts)` decides from one observation; it acts only on a master that answers and no fence holds
(a fence's keys are its owner's: `control.fence.hot_changes_past_fence`):

* neither draining nor removed: `WRITE_ON` (and `OPEN_DOOR`) where a drain recorded in status left the master
  read-only (or its door shut: a local removal refused after it), the user having taken the drain back;
  nothing otherwise;
* draining: `WRITE_OFF` until the master reads back read-only; `drained` once it has been read-only for a route
  refresh (`since`) and every lag is 0;
* removed: the same, then `SHUT_DOOR` once every lag is 0, and `remove` once the door is shut and every lag is
  still 0. Otherwise held, with the reason and the fix (wait for the consumers; or force it, which says what is
  lost), until `spec.drainDeadlineSeconds` (0: none) have passed since the master went read-only: then removed,
  naming the lag it drops. A group none of whose replicas answers has nothing that could be drained: removed,
  said so (its volumes keep the store as its reclaimPolicy says). A forced removal goes at once and names the lag
  it drops.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

PERM_READ_ONLY = 4
PERM_READ_WRITE = 6
ROUTE_REFRESH_S = 30.0
"""RocketMQ clients' `pollNameServerInterval` (ms 30000): a producer's route is at most this old."""
SYSTEM_CONSUMER_GROUP_PREFIXES = ("CID_RMQ_SYS_", "CID_SYS_RMQ_")
"""The broker's own consumer groups (pop revive, transaction checks): their offsets are no user's backlog."""
CONDITION = "Drained"
FORCE_ANNOTATION = "rocketmq-operator.dev/force-delete"


class GroupDrainAction(StrEnum):
    WRITE_OFF = "write-off"  # brokerPermission=4 on the master
    WRITE_ON = "write-on"  # brokerPermission=6 on the master: a drain taken back
    SHUT_DOOR = "shut-door"  # the send door shut for good: the group is being removed
    OPEN_DOOR = "open-door"  # a removal taken back (locally: refused) after the door shut


@dataclass(frozen=True)
class GroupDrainFacts:
    """One observation of a group, as the drain needs it."""

    draining: bool  # spec.draining
    removing: bool  # the group is being removed
    forced: bool = False  # removal forced by the user
    master_reachable: bool = False  # a master answered, with its config
    any_reachable: bool = False  # some replica of the group answered
    permission: int | None = None  # the master's live brokerPermission
    fence_held: bool = False  # a fence holds the master's keys (the user's, a switchover's, a lease agent's)
    door_shut: bool = False  # the master's send door is shut for good (the drain's or a user's fence)
    lag: Mapping[str, int] | None = None  # consumer group -> unconsumed messages on the master; None: unread
    recorded_since: float | None = None  # when status first saw the master read-only for this drain (epoch s)
    recorded: bool = False  # status records a drain of this group
    deadline_s: float = 0.0  # spec.drainDeadlineSeconds: a removal goes this long after write off at the latest
    now: float = 0.0


@dataclass(frozen=True)
class GroupDrainPlan:
    actions: tuple[GroupDrainAction, ...] = ()
    active: bool = False  # a drain is under way (status.drain kept)
    since: float | None = None  # status.drain.since once the master reads back read-only
    drained: bool = False  # nothing left to consume and producers gone (draining) / door shut (removing)
    remove: bool = False  # the group's workloads may go now
    held: bool = False  # a removal waits
    message: str = ""  # one line for the condition, the hold and the CLI
    lost: Mapping[str, int] = field(default_factory=dict)  # forced: the lag dropped


def is_system_consumer_group(name: str) -> bool:
    return name.startswith(SYSTEM_CONSUMER_GROUP_PREFIXES)


def lag_pairs(
    offset_table: Mapping[str, Mapping[str, int]], declared: Iterable[tuple[str, str]] = ()
) -> set[tuple[str, str]]:
    """The (topic, consumer group) pairs whose lag counts: every pair with a committed offset on the broker
    (``"topic@group"`` keys of `GET_ALL_CONSUMER_OFFSET`), and every pair declared (a ConsumerGroup's
    `spec.topics`, with its retry topic), so that a group that never read this broker group is not taken for one
    with nothing left to read. The broker's own system groups are left out."""
    pairs = set()
    for key in offset_table:
        topic, sep, group = key.rpartition("@")
        if sep:
            pairs.add((topic, group))
    for topic, group in declared:
        pairs.update({(topic, group), (f"%RETRY%{group}", group)})
    return {(t, g) for t, g in pairs if not is_system_consumer_group(g)}


def lag_by_group(
    offset_table: Mapping[str, Mapping[str, int]],
    pairs: Iterable[tuple[str, str]],
    queue_nums: Mapping[str, int],
    max_offsets: Mapping[tuple[str, int], int],
    min_offsets: Mapping[tuple[str, int], int],
) -> dict[str, int]:
    """Lag per consumer group on one master: over each pair's queues there (``queue_nums``: a topic's read queues
    on this broker; a topic it does not hold counts nothing), max offset minus the committed offset, or minus the
    min offset where the group committed none (everything still stored is unread)."""
    lag: dict[str, int] = {}
    for topic, group in sorted(pairs):
        total = lag.setdefault(group, 0)
        committed = offset_table.get(f"{topic}@{group}", {})
        for queue in range(queue_nums.get(topic, 0)):
            high = max_offsets.get((topic, queue))
            if high is None:
                continue
            start = committed.get(str(queue))
            low = int(start) if start is not None else min_offsets.get((topic, queue), high)
            total += max(0, high - low)
        lag[group] = total
    return lag


def show_lag(lag: Mapping[str, int]) -> str:
    """``orders-consumer 1,200, audit 34`` (the groups with a lag, largest first)."""
    left = sorted(((n, g) for g, n in lag.items() if n > 0), key=lambda x: (-x[0], x[1]))
    return ", ".join(f"{g} {n:,}" for n, g in left)


def plan_group_drain(facts: GroupDrainFacts, *, group: str) -> GroupDrainPlan:
    """See the module doc. ``group``: the BrokerGroup's name, for the messages."""
    f = facts
    if not f.draining and not f.removing:
        if f.recorded and f.master_reachable and not f.fence_held:
            back = [GroupDrainAction.WRITE_ON] if f.permission == PERM_READ_ONLY else []
            back += [GroupDrainAction.OPEN_DOOR] if f.door_shut else []
            if back:
                return GroupDrainPlan(actions=tuple(back), message=f"{group}: drain taken back")
        return GroupDrainPlan(active=f.recorded and not f.master_reachable)  # given back once it answers
    lag_total = None if f.lag is None else sum(f.lag.values())
    if f.removing and f.forced:
        lost, what = _dropped(f.lag)
        return GroupDrainPlan(
            active=True, remove=True, lost=lost, message=f"{group}: removal forced" + (f": {what}" if what else "")
        )
    if f.removing and not f.any_reachable:
        return GroupDrainPlan(
            active=True,
            remove=True,
            message=f"{group}: no replica answers, nothing can be drained: removed (its volumes keep the store as "
            "spec.storage.reclaimPolicy says)",
        )
    if not f.master_reachable:
        return GroupDrainPlan(
            active=True,
            held=f.removing,
            since=f.recorded_since,
            message=f"{group}: draining, no master answers: the lag cannot be read (the failover elects one); "
            + _removal_fix(group, f.removing, None),
        )
    actions: list[GroupDrainAction] = []
    read_only = f.permission == PERM_READ_ONLY
    if not read_only and not f.fence_held:
        actions.append(GroupDrainAction.WRITE_OFF)
    since = f.recorded_since if read_only and f.recorded_since is not None else (f.now if read_only else None)
    if f.removing and f.deadline_s > 0 and since is not None and f.now - since >= f.deadline_s:
        lost, what = _dropped(f.lag)
        return GroupDrainPlan(
            active=True,
            since=since,
            remove=True,
            lost=lost,
            message=f"{group}: drain deadline of {f.deadline_s:.0f} s (spec.drainDeadlineSeconds) passed: removed"
            + (f"; {what}" if what else ""),
        )
    if f.lag is None:
        return GroupDrainPlan(
            actions=tuple(actions),
            active=True,
            held=f.removing,
            since=since,
            message=f"{group}: draining, its consumer offsets could not be read; "
            + _removal_fix(group, f.removing, _route_wait(since, f.now)),
        )
    if lag_total:
        return GroupDrainPlan(
            actions=tuple(actions),
            active=True,
            held=f.removing,
            since=since,
            message=f"{group}: draining, {lag_total:,} messages left to consume ({show_lag(f.lag)}); "
            + _removal_fix(group, f.removing, _route_wait(since, f.now)),
        )
    if f.removing:
        if not f.door_shut:
            if f.fence_held:
                return GroupDrainPlan(
                    actions=tuple(actions),
                    active=True,
                    held=True,
                    since=since,
                    message=f"{group}: nothing left to consume; its removal waits for the fence on its master (a "
                    "switchover's or the lease agent's) to be given back",
                )
            actions.append(GroupDrainAction.SHUT_DOOR)
            return GroupDrainPlan(
                actions=tuple(actions),
                active=True,
                held=True,
                since=since,
                message=f"{group}: nothing left to consume; sends refused from now on, the lag is read once more "
                "before it is removed",
            )
        return GroupDrainPlan(
            active=True,
            since=since,
            drained=True,
            remove=True,
            message=f"{group}: drained (sends refused, every consumer group's lag 0): removed",
        )
    wait = _route_wait(since, f.now)
    if wait is not None:
        return GroupDrainPlan(
            actions=tuple(actions),
            active=True,
            since=since,
            message=f"{group}: draining, nothing left to consume; producers may send to it for {wait:.0f} s more "
            "(their route refresh)",
        )
    return GroupDrainPlan(
        active=True,
        since=since,
        drained=True,
        message=f"{group}: drained: read-only for more than a route refresh and every consumer group's lag 0; "
        "safe to remove",
    )


def _dropped(lag: Mapping[str, int] | None) -> tuple[dict[str, int], str]:
    """What a removal that does not wait drops: the lag per consumer group, and it said in words."""
    lost = {g: n for g, n in (lag or {}).items() if n > 0}
    if lost:
        return lost, f"{sum(lost.values()):,} unconsumed messages are dropped ({show_lag(lost)})"
    return lost, "its lag could not be read: whatever it held unconsumed is dropped" if lag is None else ""


def _route_wait(since: float | None, now: float) -> float | None:
    """Seconds until every producer's route has dropped the group (None: it has)."""
    if since is None:
        return ROUTE_REFRESH_S
    left = ROUTE_REFRESH_S - (now - since)
    return left if left > 0 else None


def _removal_fix(group: str, removing: bool, route_wait: float | None) -> str:
    if removing:
        return (
            f"its removal waits; fix: let the consumers read it, or force the removal (annotation "
            f"{FORCE_ANNOTATION}=true, or --force locally), which drops what is left"
        )
    if route_wait is not None:
        return f"producers leave it within {route_wait:.0f} s (their route refresh); the consumers read what is left"
    return "producers have left it; the consumers are reading what is left"
