"""`make check`, the quick loop while working: the checks `make test` starts with (lint, typecheck, import
layers) and the unit tests, with nothing that needs a JVM, a cluster or a build; the README offers it after the
two set-up commands, not as a third."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _commands(target: str) -> list[str]:
    make = shutil.which("make")
    if make is None:
        pytest.fail("no make on PATH: the Makefile's targets cannot be read")
    proc = subprocess.run([make, "-n", "--no-print-directory", target], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_make_check_runs_lint_typecheck_and_the_unit_tests() -> None:
    commands = _commands("check")
    for expected in ("ruff check operator tests", "ruff format --check operator tests", "mypy", "lint-imports"):
        assert any(line.endswith(expected) for line in commands), f"make check does not run {expected}: {commands}"
    tests = [line for line in commands if "pytest" in line]
    assert len(tests) == 1 and tests[0].split()[-1] == "tests/unit", tests
    assert "-n 2" in tests[0] and "not k8s" in tests[0], tests[0]


def test_make_check_needs_no_real_part() -> None:
    text = "\n".join(_commands("check"))
    for part in ("prepare", "run-tests.sh", "dist-path", "k8s", "images", "tests/integration", "tests/e2e"):
        assert part not in text.replace("not k8s", ""), f"make check reaches for {part}"


def test_make_check_is_phony() -> None:
    phony = re.search(r"^\.PHONY:(.*)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    assert phony is not None and "check" in phony.group(1).split()


def test_readme_offers_make_check_after_set_up_not_as_a_set_up_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    set_up = readme[readme.index("## Set up on a fresh machine\n") : readme.index("\n## ", readme.index("## Set up"))]
    block_end = set_up.index("```", set_up.index("```sh\n") + 1)
    assert "make check" not in set_up[:block_end]
    assert "`make check`" in set_up[block_end:]


def test_make_test_still_lints_and_typechecks_beside_stage_1() -> None:
    """`make test` no longer lints before the tests (stage 1 leaves CPU idle; lint uses it), but it lints:
    the script runs `make lint typecheck` as a step whose exit status counts."""
    # Read, not `make -n test`: make runs a recipe line naming $(MAKE) even under -n (the whole suite, recursively).
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^test:[^\n]*\n((?:\t[^\n]*\n)+)", makefile, re.M)
    assert recipe is not None and "scripts/run-tests.sh $(MAKE)" in recipe.group(1), makefile
    script = (ROOT / "scripts" / "run-tests.sh").read_text(encoding="utf-8")
    assert re.search(r'^\s*step lint "\$MAKE_CMD" --no-print-directory lint typecheck$', script, re.M), script
    steps = re.findall(r"^\s*step (\w+) ", script, re.M)
    reported = re.search(r"^for name in ([\w ]+); do$", script, re.M)
    assert reported is not None and reported.group(1).split() == steps, (steps, script)  # every step's status read
    assert '[ "$step_rc" = 0 ] || rc=$step_rc' in script


def test_make_test_runs_the_integration_files_it_moves_out_of_stage_1_beside_the_e2e_tests() -> None:
    """Stage 1 ignores the files of BESIDE_E2E and the side line runs exactly them, with stage 1's marker filter:
    nothing is run twice and nothing is left out."""
    script = (ROOT / "scripts" / "run-tests.sh").read_text(encoding="utf-8")
    listed = re.search(r"^BESIDE_E2E=\(([^)]*)\)$", script, re.M)
    assert listed is not None
    files = listed.group(1).split()
    assert files and all((ROOT / f).is_file() for f in files), files
    assert 'for path in "${BESIDE_E2E[@]}"; do ignore+=(--ignore "$path"); done' in script
    assert '"${NO_CLUSTER[@]}" "${ignore[@]}" tests || rc=$?' in script
    assert re.search(
        r'^\s*step integration "\$\{PYTEST\[@\]\}" "\$\{NO_CLUSTER\[@\]\}" "\$\{BESIDE_E2E\[@\]\}"$', script, re.M
    )
