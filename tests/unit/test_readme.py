"""The README a new user follows (issue #13): every command of its tour is one the CLI accepts, in an order that
works, and what it says about the output is what the CLI prints."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from rocketmq_operator.cli import main
from rocketmq_operator.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else len(README)]


def _code_block(section: str) -> list[str]:
    start = section.index("```sh\n") + len("```sh\n")
    return section[start : section.index("```", start)].splitlines()


def _cli_commands(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(line, argv) of every `rocketmq-operator ...` the lines run, `$(rocketmq-operator ...)` included."""
    found: list[tuple[str, list[str]]] = []
    for line in lines:
        texts = re.findall(r"\$\((rocketmq-operator [^|)]*)\)", line)
        if line.startswith("rocketmq-operator "):
            texts.insert(0, line)
        for text in texts:
            argv = shlex.split(text, comments=True)
            found.append((line, argv[1:]))
    return found


TOUR = _code_block(_section("Five-minute tour"))


def test_set_up_is_exactly_make_run_and_make_test() -> None:
    commands = [line.split("#")[0].strip() for line in _code_block(_section("Set up on a fresh machine"))]
    assert [c for c in commands if c] == ["make run", "make test"]


def test_no_link_outside_the_repository() -> None:
    assert "../shared" not in README and "/work/shared" not in README


@pytest.mark.parametrize(("line", "argv"), _cli_commands(TOUR), ids=[" ".join(a[:2]) for _, a in _cli_commands(TOUR)])
def test_every_tour_command_is_one_the_cli_accepts(line: str, argv: list[str]) -> None:
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"the CLI refuses a README tour line (exit {exc.code}): {line}")


def test_the_tour_gets_the_name_servers_from_local_env() -> None:
    assert any(argv[:2] == ["local", "env"] for _, argv in _cli_commands(TOUR))
    assert "python3 -c" not in "\n".join(TOUR)  # no JSON digging for an address


def test_the_tour_switches_over_while_the_cluster_runs() -> None:
    """Nothing runs after `local down`: a `switchover` (or kill, apply, status) there can only fail."""
    running = False
    for line, argv in _cli_commands(TOUR):
        if argv[:2] == ["local", "up"]:
            running = True
        elif argv[:2] == ["local", "down"]:
            running = False
        elif argv[:1] == ["switchover"] or argv[:2] in (["local", "kill"], ["local", "apply"], ["local", "env"]):
            assert running, f"runs after `local down`: {line}"


def test_no_example_names_a_controller_assigned_broker_id() -> None:
    """The ids are the controller's (registration order): a new user cannot know them; replica names they can."""
    assert not re.search(r"--to[ =]\d", README), "a --to example names a broker id"
    assert not re.search(r"switchover-to=\d", README), "a switchover-to example names a broker id"


def test_what_the_readme_says_explain_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(ROOT / "examples" / "quickstart.yaml")]) == 0
    out = capsys.readouterr().out
    assert "broker keys: " in out and "acks needed" in out and "outcome of a put" in out
    assert "in SyncStateSet" in out and "alive" in out
    assert "prints\nthis table" not in README and "prints this table" not in README  # it prints no mode table
