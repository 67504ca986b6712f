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


def test_make_test_runs_every_marker_once_stage_1_whole_and_the_node_faults_before_the_other_e2e_tests() -> None:
    """Stage 1 runs every test of its marker filter (no file moved elsewhere); the node faults and the chaos
    campaign run beside it on the line that brings the e2e cluster up; the other e2e tests run after both, on that
    cluster, with the node faults excluded: every marker runs once and nothing is left out."""
    script = (ROOT / "scripts" / "run-tests.sh").read_text(encoding="utf-8")
    assert 'NO_CLUSTER=(-m "not k8s and not e2e and not chaos")' in script
    assert re.search(
        r'^"\$\{PYTEST\[@\]\}" -n "\$STAGE1_WORKERS" --dist loadfile --no-loadscope-reorder "\$\{NO_CLUSTER\[@\]\}" '
        r"tests \|\| rc=\$\?$",
        script,
        re.M,
    ), script
    faults = script.index(
        'step faults env ROCKETMQ_OPERATOR_E2E_NODE="$e2e_state" "${PYTEST[@]}" -m "e2e and node_fault" tests'
    )
    chaos = script.index('step chaos "${PYTEST[@]}" -m chaos tests')
    node_line = script.index("node_line=$!")
    assert faults < chaos < node_line, "the node faults, then chaos, on the line started beside stage 1"
    waited = script.index('wait "$node_line"')
    others = script.index('-m "e2e and not node_fault and not soak" tests')
    assert node_line < waited < others, "the other e2e tests start once the node faults are done"
