"""core.backup_schedule: when a scheduled metadata backup is due, which Secret it goes into, and the status after
it, as tables on plain data."""

from __future__ import annotations

import pytest

from rocketmq_operator.api.models import KeptBackup, MetadataBackupSpec, MetadataBackupStatus
from rocketmq_operator.core.backup_schedule import (
    RETRY_S,
    after_failure,
    after_success,
    backup_due,
    next_secret,
    seconds_to_next,
)

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
ISO0 = "2027-01-15T08:00:00Z"
SPEC = MetadataBackupSpec(every="1h", keep=3)


def kept(index: int, at: str) -> KeptBackup:
    return KeptBackup(secret=f"ctl-metadata-{index}", taken_at=at, cluster="DefaultCluster")


@pytest.mark.parametrize(
    ("status", "requested", "now", "expected"),
    [
        (None, None, T0, ("first", "ctl-metadata-0")),
        (MetadataBackupStatus(last_attempt=ISO0, kept=[kept(0, ISO0)]), None, T0 + 3599, None),
        (
            MetadataBackupStatus(last_attempt=ISO0, kept=[kept(0, ISO0)]),
            None,
            T0 + 3600,
            ("scheduled", "ctl-metadata-1"),
        ),
        # a failure is tried again a minute later, not an hour
        (MetadataBackupStatus(last_attempt=ISO0, last_error="no master"), None, T0 + RETRY_S - 1, None),
        (
            MetadataBackupStatus(last_attempt=ISO0, last_error="no master"),
            None,
            T0 + RETRY_S,
            ("retry", "ctl-metadata-0"),
        ),
        # a request is answered once, at once
        (MetadataBackupStatus(last_attempt=ISO0), "2027-01-15T08:10:00Z", T0 + 1, ("requested", "ctl-metadata-0")),
        (MetadataBackupStatus(last_attempt=ISO0, last_request="r1"), "r1", T0 + 1, None),
        # a status edited by hand into nonsense: treated as never tried
        (MetadataBackupStatus(last_attempt="yesterday"), None, T0, ("first", "ctl-metadata-0")),
    ],
)
def test_when_a_backup_is_due(
    status: MetadataBackupStatus | None, requested: str | None, now: float, expected: tuple[str, str] | None
) -> None:
    due = backup_due("ctl", SPEC, status, requested, now)
    assert (None if due is None else (due.reason, due.secret)) == expected


@pytest.mark.parametrize(
    ("keep", "kept_now", "expected"),
    [
        (3, [], "ctl-metadata-0"),
        (3, [kept(0, "2027-01-15T08:00:00Z")], "ctl-metadata-1"),
        (3, [kept(2, "2027-01-15T10:00:00Z"), kept(0, "2027-01-15T08:00:00Z")], "ctl-metadata-1"),
        # the ring is full: the oldest is overwritten
        (
            3,
            [kept(1, "2027-01-15T10:00:00Z"), kept(2, "2027-01-15T09:00:00Z"), kept(0, "2027-01-15T11:00:00Z")],
            "ctl-metadata-2",
        ),
        # keep lowered to 1: index 0 is the ring; index 2 is outside it
        (1, [kept(2, "2027-01-15T10:00:00Z"), kept(0, "2027-01-15T08:00:00Z")], "ctl-metadata-0"),
        (1, [kept(2, "2027-01-15T10:00:00Z")], "ctl-metadata-0"),
    ],
)
def test_the_ring_of_secrets(keep: int, kept_now: list[KeptBackup], expected: str) -> None:
    assert next_secret("ctl", keep, kept_now) == expected


def test_the_status_after_a_success_lists_the_ring_newest_first() -> None:
    before = MetadataBackupStatus(
        last_attempt=ISO0,
        last_error="no master",
        kept=[kept(1, "2027-01-15T07:00:00Z"), kept(0, "2027-01-15T06:00:00Z"), kept(5, "2027-01-15T05:00:00Z")],
    )
    written = kept(0, "2027-01-15T09:00:00Z")
    after = after_success("ctl", SPEC, before, written, "2027-01-15T09:00:00Z", "req-1")
    assert [k.secret for k in after.kept] == ["ctl-metadata-0", "ctl-metadata-1"]  # index 5 is outside keep 3
    assert (after.last_error, after.last_request, after.last_attempt) == (None, "req-1", "2027-01-15T09:00:00Z")
    again = after_success("ctl", SPEC, after, kept(2, "2027-01-15T10:00:00Z"), "2027-01-15T10:00:00Z", None)
    assert [k.secret for k in again.kept] == ["ctl-metadata-2", "ctl-metadata-0", "ctl-metadata-1"]
    assert again.last_request == "req-1"  # kept: no new request was answered


def test_a_failure_keeps_what_is_kept_and_answers_the_request() -> None:
    before = MetadataBackupStatus(last_attempt=ISO0, kept=[kept(0, ISO0)])
    after = after_failure(before, "broker-a: no master", "2027-01-15T09:00:00Z", "req-2")
    assert after.kept == before.kept and after.last_error == "broker-a: no master" and after.last_request == "req-2"
    assert backup_due("ctl", SPEC, after, "req-2", T0 + 3600 + 1) is None  # answered; the retry waits a minute


@pytest.mark.parametrize(
    ("status", "now", "expected"),
    [
        (None, T0, 0.0),
        (MetadataBackupStatus(last_attempt=ISO0), T0 + 600, 3000.0),
        (MetadataBackupStatus(last_attempt=ISO0, last_error="x"), T0 + 10, RETRY_S - 10),
        (MetadataBackupStatus(last_attempt=ISO0), T0 + 7200, 0.0),
    ],
)
def test_seconds_to_the_next_attempt(status: MetadataBackupStatus | None, now: float, expected: float) -> None:
    assert seconds_to_next(SPEC, status, now) == pytest.approx(expected)
