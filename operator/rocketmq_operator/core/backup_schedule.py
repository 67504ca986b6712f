"""Scheduled metadata backups (a ControllerGroup's spec.backup): when one is due, which Secret it goes into, and
the status that says what is kept. Pure: plain status and times in, a decision or a new status out.

Contract:

* `backup_due(group, spec, status, requested, now)`: a `DueBackup` (why, and the Secret to write) or None. Due when none
  was ever tried, when `spec.every` has passed since the last attempt, `RETRY_S` after a failed one (the next
  scheduled time if that is sooner), or at once when `requested` (the value of the `kubectl rocketmq backup`
  annotation) differs from the last request answered.
* Where: `keep` Secrets named `<group>-metadata-<i>` (i < keep), written in turn: an index no kept backup uses,
  else the oldest kept one's. A fixed ring, so the operator needs only get/create/patch on Secrets by name (no
  list, no delete; docs/auth.md), and the status lists what each holds, newest first. Lowering `keep` leaves the
  Secrets of the higher indexes in place, out of the status (docs/backup.md: delete them by name).
* `after_success(...)` / `after_failure(...)`: the status to write after an attempt; the status alone says when
  the next is due, so an operator restarted between two backups resumes the schedule where it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rocketmq_operator.api.models import KeptBackup, MetadataBackupSpec, MetadataBackupStatus, duration_seconds

RETRY_S = 60.0
"""After a failed attempt (no master for a while, a name server down), the next one comes this much later."""
BACKUP_KEY = "metadata.json"
"""The key of the backup document in its Secret."""
BACKUP_REQUEST_ANNOTATION = "rocketmq-operator.dev/backup-now"
"""Set (to any new value, `kubectl rocketmq backup` writes the time) on a ControllerGroup: a backup at once."""


def secret_name(group: str, index: int) -> str:
    return f"{group}-metadata-{index}"


def _index(group: str, secret: str) -> int | None:
    prefix = f"{group}-metadata-"
    tail = secret.removeprefix(prefix)
    return int(tail) if secret.startswith(prefix) and tail.isdigit() else None


@dataclass(frozen=True, slots=True)
class DueBackup:
    reason: str
    """"first", "scheduled", "retry" or "requested"."""
    secret: str


def iso_seconds(iso: str | None) -> float | None:
    """An RFC 3339 time of the status (``2026-11-29T23:50:02Z``) in Unix seconds; None when absent or unreadable."""
    if not iso:
        return None
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None  # a hand-edited status: treated as never tried


def next_secret(group: str, keep: int, kept: list[KeptBackup]) -> str:
    """The Secret the next backup goes into (see the module doc)."""
    used = {i for k in kept if (i := _index(group, k.secret)) is not None and i < keep}
    free = [i for i in range(keep) if i not in used]
    if free:
        return secret_name(group, free[0])
    oldest = min((k for k in kept if k.secret in {secret_name(group, i) for i in used}), key=lambda k: k.taken_at)
    return oldest.secret


def backup_due(
    group: str,
    spec: MetadataBackupSpec,
    status: MetadataBackupStatus | None,
    requested: str | None,
    now: float,
) -> DueBackup | None:
    status = status or MetadataBackupStatus()
    target = next_secret(group, spec.keep, status.kept)
    if requested and requested != status.last_request:
        return DueBackup("requested", target)
    if iso_seconds(status.last_attempt) is None:
        return DueBackup("first", target)
    if seconds_to_next(spec, status, now) > 0:
        return None
    return DueBackup("retry" if status.last_error is not None else "scheduled", target)


def seconds_to_next(spec: MetadataBackupSpec, status: MetadataBackupStatus | None, now: float) -> float:
    """How long until the next attempt is due by the schedule (0: due now): `spec.every` after the last attempt,
    or `RETRY_S` (at most `every`) after a failed one."""
    last = iso_seconds(status.last_attempt) if status is not None else None
    if last is None:
        return 0.0
    every = float(duration_seconds(spec.every))
    wait = min(RETRY_S, every) if status is not None and status.last_error is not None else every
    return max(0.0, last + wait - now)


def after_success(
    group: str,
    spec: MetadataBackupSpec,
    status: MetadataBackupStatus | None,
    written: KeptBackup,
    attempted_at: str,
    requested: str | None,
) -> MetadataBackupStatus:
    """The status once ``written`` is in its Secret: it first, then the others still in the ring (newest first)."""
    before = status or MetadataBackupStatus()
    others = [
        k
        for k in before.kept
        if k.secret != written.secret and (i := _index(group, k.secret)) is not None and i < spec.keep
    ]
    kept = [written, *sorted(others, key=lambda k: k.taken_at, reverse=True)]
    return MetadataBackupStatus(
        last_attempt=attempted_at,
        last_error=None,
        last_request=requested if requested else before.last_request,
        kept=kept[: spec.keep],
    )


def after_failure(
    status: MetadataBackupStatus | None, error: str, attempted_at: str, requested: str | None
) -> MetadataBackupStatus:
    """The status after a failed attempt: what is kept is unchanged; a request is answered (by its failure)."""
    before = status or MetadataBackupStatus()
    return MetadataBackupStatus(
        last_attempt=attempted_at,
        last_error=error,
        last_request=requested if requested else before.last_request,
        kept=list(before.kept),
    )
