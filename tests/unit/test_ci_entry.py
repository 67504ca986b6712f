"""`.ci/run`, the CI entry point: it sets CI=true itself (a missing real part then fails instead of skipping,
tests/real_parts.py) and runs `make test`, whatever its caller's environment says."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / ".ci" / "run"


@pytest.mark.parametrize("caller_ci", [None, "", "false"])
def test_ci_run_exports_ci_true_and_runs_make_test(tmp_path: Path, caller_ci: str | None) -> None:
    # A copy of the script in a scratch clone, and a `make` on PATH that reports what it was given.
    (tmp_path / ".ci").mkdir()
    shutil.copy2(ENTRY, tmp_path / ".ci" / "run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake_make = bin_dir / "make"
    fake_make.write_text('#!/bin/sh\nprintf "CI=%s cwd=%s args=%s\\n" "${CI-unset}" "$PWD" "$*"\n')
    fake_make.chmod(fake_make.stat().st_mode | stat.S_IXUSR)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    if caller_ci is not None:
        env["CI"] = caller_ci
    proc = subprocess.run(
        [str(tmp_path / ".ci" / "run")], cwd=tmp_path / "bin", env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"CI=true cwd={tmp_path} args=test"


def test_ci_run_is_executable() -> None:
    assert os.access(ENTRY, os.X_OK), "chmod +x .ci/run"
