"""The `rocketmq-operator` console script: one entry point, one subcommand per task.

Bad input never produces a stack trace: problems are printed as `path: message` lines and the exit code is 2.
Imports are made by the subcommand that needs them: the parser registers only the family of the command given
(`FAMILIES`; every family for `--help` or a command it does not know), and the manifest commands import the API
models when they run. A process of `produce`, `local status` or the lease agent then imports what it uses only:
the whole package took 0.6-0.9 CPU-s per process (measured under load), and the tests start hundreds.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocketmq_operator.api.models import AnyResource
    from rocketmq_operator.api.validation import Report

EXIT_INVALID = 2

FAMILIES: dict[str, str] = {
    "agent": "rocketmq_operator.cli.agent",
    "local": "rocketmq_operator.cli.local",
    "switchover": "rocketmq_operator.cli.local",
    "produce": "rocketmq_operator.cli.tools",
    "consume": "rocketmq_operator.cli.tools",
    "backup": "rocketmq_operator.cli.backup",
    "restore": "rocketmq_operator.cli.backup",
    "chaos": "rocketmq_operator.cli.bench",
    "bench": "rocketmq_operator.cli.bench",
}
"""Each command of a family module, by name: the module's `register(sub)` adds them (in this order)."""


class CliError(Exception):
    """A user-facing failure: printed as one line, exit code 2."""


def _resources_or_fail(
    files: Sequence[str], *, warn: bool = True, together: bool = False
) -> tuple[list[AnyResource], list[Report]]:
    """``warn``: print the warnings on stderr (`explain` prints those of the groups it explains itself);
    ``together``: the files make one set (an object in two of them is refused)."""
    from rocketmq_operator.api.validation import validate_files

    manifests = validate_files(files, together=together)
    for w in manifests.warnings if warn else ():
        print(f"warning: {w}", file=sys.stderr)
    if manifests.errors:
        for e in manifests.errors:
            print(e)
        raise SystemExit(EXIT_INVALID)
    return manifests.resources, manifests.reports


def cmd_crds(args: argparse.Namespace) -> int:
    from rocketmq_operator.api.crd import crds_yaml, dump_yaml

    if args.write:
        from pathlib import Path

        from rocketmq_operator.api.crd import all_crds, crd_file_name

        out = Path(args.write)
        out.mkdir(parents=True, exist_ok=True)
        for crd in all_crds():
            (out / crd_file_name(crd)).write_text(dump_yaml(crd), encoding="utf-8")
        return 0
    sys.stdout.write(crds_yaml())
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from rocketmq_operator.api.validation import validate_files

    manifests = validate_files(args.files)
    for w in manifests.warnings:
        print(f"warning: {w}", file=sys.stderr)
    for e in manifests.errors:
        print(e)
    if manifests.errors:
        return EXIT_INVALID
    if not args.quiet:
        print(f"{len(manifests.reports)} resource(s) valid", file=sys.stderr)
    return 0


def cmd_diff(files: Sequence[str]) -> int:
    """`render --diff OLD NEW` / `explain --diff OLD NEW`: what applying NEW over OLD needs, per BrokerGroup (and
    what the local platform does not apply of it), and the Topics and ConsumerGroups it adds, changes or removes."""
    from rocketmq_operator.platforms.local.placement import jvm_not_applied
    from rocketmq_operator.render.diff import describe_manifests, diff_warnings

    if len(files) != 2:
        raise CliError(f"--diff takes two files, OLD and NEW; got {len(files)}; fix: --diff old.yaml new.yaml")
    old, _ = _resources_or_fail(files[:1])
    new, _ = _resources_or_fail(files[1:])
    for w in diff_warnings(old, new):
        print(f"warning: {w}", file=sys.stderr)
    print("\n".join(describe_manifests(old, new, jvm_not_applied)) or "no BrokerGroup in NEW")
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    from rocketmq_operator.api.crd import dump_yaml
    from rocketmq_operator.render.kubernetes import RenderError, render_all

    if args.diff:
        return cmd_diff(args.files)
    resources, _ = _resources_or_fail(args.files, together=True)  # one stream of objects to apply
    try:
        objects = render_all(resources)
    except RenderError as exc:
        raise CliError(str(exc)) from None
    sys.stdout.write("---\n".join(dump_yaml(o) for o in objects))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from rocketmq_operator.api.models import BrokerGroup, ControllerGroup
    from rocketmq_operator.core.explain import explain_broker_group, explain_controller_group

    if args.diff:
        return cmd_diff(args.files)
    # Each group's warnings are part of its explanation: printed there once, not also on stderr.
    _, reports = _resources_or_fail(args.files, warn=False)
    blocks: list[str] = []
    for report in reports:
        r = report.resource
        if isinstance(r, BrokerGroup):
            blocks.append(explain_broker_group(r, report.warnings))
        elif isinstance(r, ControllerGroup):
            blocks.append(explain_controller_group(r, report.warnings))
        else:  # nothing explains a Topic or ConsumerGroup: its warnings go to stderr, as `validate` prints them
            for w in report.warnings:
                print(f"warning: {report.prefixed(w)}", file=sys.stderr)
    print("\n\n".join(blocks))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    try:
        from rocketmq_operator.platforms.kubernetes.runner import run_operator
    except ImportError as exc:  # kopf is an extra
        raise CliError(
            f"the Kubernetes operator needs the 'kubernetes' extra ({exc.name} is missing); "
            "fix: pip install 'rocketmq-operator[kubernetes]'"
        ) from None
    return run_operator(args)


def package_version() -> str:
    """The installed distribution's version (pyproject.toml's, as pip recorded it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rocketmq-operator")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "unknown (not installed; pip install -e . records it)"


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv``, only the family of its command is registered (see the module doc)."""
    parser = argparse.ArgumentParser(
        prog="rocketmq-operator",
        description="Run Apache RocketMQ 5 broker replica groups with quorum writes, on Kubernetes or locally.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("crds", help="print the CustomResourceDefinitions (multi-document YAML)")
    p.add_argument("--write", metavar="DIR", help="write one file per CRD into DIR instead")
    p.set_defaults(func=cmd_crds)

    p = sub.add_parser("validate", help="check manifests; exit 2 with one 'path: message' line per problem")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("render", help="print every Kubernetes object the operator would create")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--diff", action="store_true", help="FILES are OLD NEW: say what the change needs (hot or roll)")
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("explain", help="what each group's quorum settings mean: acks needed and put outcomes")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--diff", action="store_true", help="FILES are OLD NEW: say what the change needs (hot or roll)")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("run", help="run the Kubernetes operator (kopf)")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", action="append", default=[], help="watch these namespaces")
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="watch every namespace (default)")
    p.add_argument("--liveness", default="http://0.0.0.0:8080/healthz", help="liveness endpoint URL")
    p.add_argument("--metrics-port", type=int, default=9090)
    p.add_argument("--standalone", action="store_true", help="no peering (single operator instance)")
    p.add_argument("--verbose", action="store_true")
    p.set_defaults(func=cmd_run)

    command = _command(argv)
    if command in sub.choices:  # one of the commands above
        families: list[str] = []
    elif command in FAMILIES:
        families = [FAMILIES[command]]
    else:
        families = list(dict.fromkeys(FAMILIES.values()))
    for family in families:
        importlib.import_module(family).register(sub)
    return parser


def _command(argv: Sequence[str] | None) -> str | None:
    """The command word of ``argv`` (its first word that is not an option), None when there is none or no argv."""
    if argv is None:
        return None
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words)
    args = parser.parse_args(words)
    try:
        code = int(args.func(args))
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except ValueError as exc:
        validation = sys.modules.get("rocketmq_operator.api.validation")
        if validation is None or not isinstance(exc, validation.ManifestError):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    raise SystemExit(main())
