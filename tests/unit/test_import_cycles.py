"""scripts/import_cycles.py: the strongly connected groups it reports, on plain graphs, and the package has none."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "scripts" / "import_cycles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CASES = [
    pytest.param({"a": {"b"}, "b": set()}, [], id="a-chain"),
    pytest.param({"a": {"b"}, "b": {"a"}}, [["a", "b"]], id="two-modules"),
    pytest.param(
        {"c": {"r"}, "r": {"p", "c"}, "p": {"r"}, "s": {"r"}, "x": set()},
        [["c", "p", "r"]],
        id="the-local-platform-shape",
    ),
    pytest.param({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b"], ["c", "d"]], id="two-cycles"),
    pytest.param({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]], id="a-ring-and-an-importer"),
]


@pytest.mark.parametrize(("graph", "expected"), CASES)
def test_cycles(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert sorted(_script().cycles(graph)) == expected


def test_the_package_has_no_import_cycle() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_cycles.py")], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
