"""The one rule for a missing real part (RocketMQ jars, java, kube-apiserver, Spark, linters) in tests.

Outside CI a missing part skips the test with the reason and the fix; under ``CI`` set to ``1``, ``true`` or
``yes`` it fails: a green run that tested nothing is worse than a red one.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def missing(reason: str) -> NoReturn:
    """Skip with ``reason`` outside CI; fail with it under CI."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: the test environment must be complete)", pytrace=False)
    pytest.skip(reason)
