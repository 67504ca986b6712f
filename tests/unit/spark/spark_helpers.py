"""Helpers of the Spark unit tests (imported by name: tests have no packages).

pyarrow/pyspark are required under CI=true: missing ones fail there and skip elsewhere.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def require(module: str) -> ModuleType:
    """Import ``module``; outside CI a missing module skips, under CI=true it fails."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if CI:
            pytest.fail(f"{module} is missing ({exc}); CI=true needs the spark extra: pip install -e '.[spark]'")
        pytest.skip(f"{module} is not installed (the spark extra)")
