"""Shared test setup: the repo's source root on sys.path for tests that import case tables, and hypothesis
without its per-example deadline (a timed assertion: on a shared 2-core machine one slow example fails a
correct property)."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")
