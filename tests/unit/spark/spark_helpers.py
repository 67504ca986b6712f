"""Helpers of the Spark unit tests (imported by name: tests have no packages).

pyarrow/pyspark are required under CI=true: missing ones fail there and skip elsewhere.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

from real_parts import missing


def require(module: str) -> ModuleType:
    """Import ``module``; outside CI a missing module skips, under CI=true it fails."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing(f"{module} is missing ({exc}); install the spark extra: pip install -e '.[spark]'")


EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "spark"


def load_example(name: str) -> ModuleType:
    """``examples/spark/<name>.py`` as a fresh module (the examples are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"spark_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
