"""Helpers of the Spark unit tests (imported by name: tests have no packages).

pyarrow/pyspark are required under CI=true: missing ones fail there and skip elsewhere.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from real_parts import missing


def require(module: str) -> ModuleType:
    """Import ``module``; outside CI a missing module skips, under CI=true it fails."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing(f"{module} is missing ({exc}); install the spark extra: pip install -e '.[spark]'")
