"""Why a bench failed: one reason per failed check, from its JSON result alone (`cli.bench` prints each on stderr
as `bench NAME: FAILED: REASON` and exits 1 when there is any). No reason: the bench passed."""

from __future__ import annotations

from typing import Any


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _lost(doc: dict[str, Any]) -> list[str]:
    lost = int(doc["lost"])
    if lost == 0:
        return []
    return [
        f"{_count(lost, 'acknowledged message')} not read back afterwards "
        f"(lost={lost} of acknowledged={doc.get('acknowledged')})"
    ]


def _deposed(doc: dict[str, Any], stale_key: str) -> list[str]:
    deposed = int(doc["deposed_acks"])
    if deposed == 0:
        return []
    if deposed < 0:
        return [f"acknowledgements by a deposed master not checked: no master at the end (deposed_acks={deposed})"]
    reason = f"{_count(deposed, 'acknowledgement')} by a deposed master (deposed_acks={deposed})"
    stale = int(doc.get(stale_key) or 0)
    if stale:
        # Said with it: the stale-route client's acknowledgements are the usual source of a deposed one.
        reason += f"; {_count(stale, 'acknowledgement')} through a stale route after the election"
    return [reason]


def _extra(doc: dict[str, Any], per_key: str, unit: str) -> list[str]:
    extra = int(doc.get("extra_elections") or 0)
    if extra == 0:
        return []
    where = [f"{unit} {i} ({p['extra_elections']})" for i, p in enumerate(doc.get(per_key) or [], 1)
             if p.get("extra_elections")]  # fmt: skip
    reason = f"{_count(extra, 'election')} beyond one per {unit} (extra_elections={extra})"
    return [reason + (f" in {', '.join(where)}" if where else "")]


def failover_failures(doc: dict[str, Any]) -> list[str]:
    """`bench failover`: lost messages, deposed acknowledgements, elections beyond one per fault."""
    return _lost(doc) + _deposed(doc, "stale_route_acks") + _extra(doc, "per_trial", "trial")


def proxy_failover_failures(doc: dict[str, Any]) -> list[str]:
    """`bench proxy-failover`: acknowledged messages not read back through the proxies."""
    return _lost(doc)


def proxy_bench_failures(doc: dict[str, Any]) -> list[str]:
    """`bench proxy`: any send that failed (a throughput or latency figure with failures in it is not one)."""
    failed = int(doc.get("failed") or 0)
    if failed == 0:
        return []
    return [f"{failed} of {doc.get('sent')} sends failed ({doc.get('failures')}): the figures do not stand"]


def switchover_failures(doc: dict[str, Any]) -> list[str]:
    """`bench switchover`: lost messages, deposed acknowledgements, elections beyond one per switchover, switchovers
    the operation refused or failed."""
    refused = [p["refused"] for p in doc.get("per_switchover", []) if p.get("refused")]
    count = doc.get("switchovers")
    reasons = [f"{len(refused)} of {count} switchovers failed; the first: {refused[0]}"] if refused else []
    return (
        _lost(doc)
        + _deposed(doc, "stale_route_acks_after_election")
        + _extra(doc, "per_switchover", "switchover")
        + reasons
    )


def group_scale_failures(doc: dict[str, Any]) -> list[str]:
    """`bench group-scale`: lost messages, an added group no send reached, a group removed with a lag."""
    reasons = _lost(doc)
    if not doc.get("sends_to_added_group"):
        reasons.append(f"no send was acknowledged by the added group {doc.get('added')}")
    if doc.get("removed_group_final_lag") not in (0, None):
        reasons.append(f"{doc.get('removed')} was removed with a lag of {doc.get('removed_group_final_lag')}")
    return reasons


def upgrade_failures(doc: dict[str, Any]) -> list[str]:
    """`bench upgrade`: lost messages, a roll that did not complete."""
    reasons = _lost(doc)
    phase = doc.get("phase")
    if phase != "Complete":
        message = doc.get("rollout_message")
        reasons.append(
            f"the roll to {doc.get('to_version')} did not complete (phase={phase}"
            + (f": {message})" if message else ")")
        )
    return reasons
