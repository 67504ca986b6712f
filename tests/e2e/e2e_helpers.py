"""Small pure helpers shared by the e2e conftest and tests (a module of its own: test modules cannot import
``conftest`` by name, the top-level tests/conftest.py owns that name)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def pod_ready(pod: dict[str, Any]) -> bool:
    conds = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
    return conds.get("Ready") == "True"


def operator_version() -> str:
    m = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert m
    return m.group(1)
