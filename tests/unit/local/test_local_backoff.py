"""Restart back-off: 1 s doubling to 10 s, reset after 60 s of healthy running (table-driven)."""

from __future__ import annotations

import pytest

from rocketmq_operator.platforms.local.backoff import DEFAULT_BACKOFF, BackoffPolicy


@pytest.mark.parametrize(
    ("failures", "delay"),
    [(0, 0.0), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (6, 10.0), (1000, 10.0)],
)
def test_delay(failures: int, delay: float) -> None:
    assert DEFAULT_BACKOFF.delay(failures) == delay


@pytest.mark.parametrize(
    ("previous", "uptime", "failures"),
    [
        (0, 0.5, 1),  # first crash
        (1, 3.0, 2),  # crash loop: grows
        (4, 59.9, 5),
        (4, 60.0, 1),  # ran 60 s: healthy, back to the first step
        (7, 3600.0, 1),
        (-3, 1.0, 1),  # nonsense previous counts are clamped
    ],
)
def test_failures_after_exit(previous: int, uptime: float, failures: int) -> None:
    assert DEFAULT_BACKOFF.failures_after_exit(previous, uptime) == failures


def test_sequence_of_crashes_then_a_healthy_run() -> None:
    policy = DEFAULT_BACKOFF
    failures = 0
    delays = []
    for uptime in (2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 120.0, 2.0):
        failures = policy.failures_after_exit(failures, uptime)
        delays.append(policy.delay(failures))
    assert delays == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 1.0, 2.0]


def test_custom_policy() -> None:
    policy = BackoffPolicy(initial=0.1, factor=3.0, maximum=1.0, reset_after=5.0)
    assert [policy.delay(n) for n in range(1, 5)] == pytest.approx([0.1, 0.3, 0.9, 1.0])
    assert policy.failures_after_exit(3, 5.0) == 1
