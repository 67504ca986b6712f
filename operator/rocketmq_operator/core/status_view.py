"""The human view of BrokerGroup status documents, shared by `local status` and `kubectl rocketmq status`. Pure:
documents in, lines out.

Contract: a group document is a `BrokerGroupStatus` dumped by alias (camelCase) plus `name`, and optionally
`topics` and `consumerGroups` (as `local status` adds them). Each platform adds its own columns to the replica
table (`extra_headers`, `extra_cells`: the local pid and restarts; a pod's phase, readiness and restarts) and its
own decoration of a replica's role (`role_text`); everything else is written here once:

* `replica_table`: one row per replica: group, replica, brokerId, role, alive, inSync, maxOffset, then the
  platform's columns;
* `group_lines`: per group a line with needAcks, writable, master (id, epoch) and SyncStateSet
  (`controller=unavailable` when the controller could not be asked), or `stopped`, then one line per problem
  condition (`PROBLEM_CONDITIONS` True, `PROBLEM_FALSE_CONDITIONS` False, and the caller's `more_problems`);
* `topic_tables`: the topics and consumer groups of each group, when the documents have them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

Doc = Mapping[str, Any]
ReplicaCells = Callable[[Doc, Doc], Sequence[str]]
"""(group document, replica document) -> the platform's cells of that replica's row."""
RoleText = Callable[[Doc, Doc], str]
"""(group document, replica document) -> what the ROLE column says."""

# Conditions whose True status is a problem worth a line in the human output.
PROBLEM_CONDITIONS = ("ControllerUnavailable", "NoEligibleMaster", "Degraded", "QuorumAtRisk")
PROBLEM_FALSE_CONDITIONS = ("Available", "TopicsAsserted")
# The phase of a group none of whose processes runs.
STOPPED = "Stopped"

REPLICA_HEADERS = ("GROUP", "REPLICA", "BROKERID", "ROLE", "ALIVE", "INSYNC", "MAXOFFSET")


def cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns two spaces apart; the first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in rows]


def _role(group: Doc, replica: Doc) -> str:
    del group
    return str(replica["role"])


def replica_table(
    groups: Sequence[Doc],
    *,
    extra_headers: Sequence[str] = (),
    extra_cells: ReplicaCells | None = None,
    role_text: RoleText = _role,
) -> list[str]:
    """One row per replica of every group; no lines at all when no group has a replica."""
    rows: list[list[str]] = [[*REPLICA_HEADERS, *extra_headers]]
    for g in groups:
        for r in g.get("replicas") or []:
            rows.append(
                [
                    str(g["name"]),
                    str(r["name"]),
                    cell(r.get("brokerId")),
                    role_text(g, r),
                    cell(r.get("alive")),
                    cell(r.get("inSync")),
                    cell(r.get("maxOffset")),
                    *(extra_cells(g, r) if extra_cells is not None else ()),
                ]
            )
    return table(rows) if len(rows) > 1 else []


def is_problem(c: Doc, more_problems: Mapping[str, str] | None = None) -> bool:
    """A condition worth a line: a problem type with its problem status."""
    if c["type"] in PROBLEM_CONDITIONS and c["status"] == "True":
        return True
    if c["type"] in PROBLEM_FALSE_CONDITIONS and c["status"] == "False":
        return True
    return more_problems is not None and more_problems.get(str(c["type"])) == c["status"]


def condition_line(c: Doc) -> str:
    return f"{c['type']}: {c.get('reason', '')}: {c.get('message', '')}".rstrip(": ")


def group_lines(groups: Sequence[Doc], *, more_problems: Mapping[str, str] | None = None) -> list[str]:
    """Per group: its summary line, then one indented line per problem condition."""
    lines: list[str] = []
    for g in groups:
        if g.get("phase") == STOPPED:
            lines.append(f"{g['name']}: stopped (no process runs): master=- writable=no")
            continue
        master = g.get("master") or {}
        sss = g.get("syncStateSet") or {}
        text = (
            f"{g['name']}: needAcks={cell(g.get('needAcks'))} writable={cell(g.get('writable'))} "
            f"master={cell(master.get('replica'))} (id {cell(master.get('brokerId'))}, epoch "
            f"{cell(master.get('epoch'))})"
        )
        if sss:
            text += f" syncStateSet={sss.get('members')} (epoch {cell(sss.get('epoch'))})"
        conditions = g.get("conditions") or []
        if any(c["type"] == "ControllerUnavailable" and c["status"] == "True" for c in conditions):
            text += " controller=unavailable"
        lines.append(text)
        lines.extend(f"  {condition_line(c)}" for c in conditions if is_problem(c, more_problems))
        drain = g.get("drain") or {}
        if drain:  # status.drain: spec.draining or a removal under way
            lines.append(f"  drain: {drain.get('message') or ('drained' if drain.get('drained') else 'draining')}")
        auth = g.get("auth") or {}
        if auth.get("phase") not in (None, "Steady") or auth.get("retiringAdmins"):  # status.auth: a rotation
            retiring = ", ".join(str(r.get("user")) for r in auth.get("retiringAdmins") or [])
            line = f"  admin: {cell(auth.get('admin'))} ({auth.get('phase')})"
            line += f", retiring {retiring}" if retiring else ""
            lines.append(line + (f": {auth['message']}" if auth.get("message") else ""))
    return lines


def topic_tables(groups: Sequence[Doc]) -> list[str]:
    """The topics, then the consumer groups, of every group that lists them."""
    lines: list[str] = []
    rows = [["GROUP", "TOPIC", "EXISTS", "WRITE", "READ", "TYPE", "MESSAGES"]]
    for g in groups:
        for t in g.get("topics") or []:
            rows.append(
                [
                    str(g["name"]),
                    str(t["name"]),
                    cell(t.get("exists")),
                    cell(t.get("writeQueueNums")),
                    cell(t.get("readQueueNums")),
                    cell(t.get("messageType")),
                    cell(t.get("maxOffsets")),
                ]
            )
    if len(rows) > 1:
        lines.extend(table(rows))
    rows = [["GROUP", "CONSUMERGROUP", "EXISTS", "LAG"]]
    for g in groups:
        for c in g.get("consumerGroups") or []:
            rows.append([str(g["name"]), str(c["name"]), cell(c.get("exists")), cell(c.get("lag"))])
    if len(rows) > 1:
        lines.extend(table(rows))
    return lines
