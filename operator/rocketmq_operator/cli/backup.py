"""`rocketmq-operator backup` / `restore`, and the local platform's `local backup` / `local restore`.

Contract:

* `backup --namesrv ADDR --to FILE` writes the cluster's metadata document (`core.backup`: topics with their
  placement per broker group, subscription groups, ACL 2.0 users with their passwords, ACLs) to FILE with mode 0600
  (written to a temporary file beside it, then renamed: a reader never sees half a backup); `--to -` prints it
  on stdout (for a pipe into `kubectl create secret`). Exit 0 written, 1 the cluster could not be read whole
  (nothing is written), 2 bad input.
* `restore --namesrv ADDR --from FILE` creates what is missing on the cluster, prints one line per item created,
  different (kept unless `--overwrite`), overwritten or not restorable, then one line per write that failed and per
  item still missing, then a summary. Exit 0 when everything of the backup is there afterwards, 1 when something
  could not be created, 2 bad input (unreadable file, another format version, a group the target lacks without
  `--onto-every-group`): one `error:` line naming the field, the value, the rule and the fix, never a stack trace.
  `--dry-run` prints the plan and writes nothing.
* Both sign every request as `--access-key` (password from `$ROCKETMQ_SECRET_KEY`, as `produce` does) and speak TLS
  as `--tls`/`--tls-ca` ask. `local backup` / `local restore` find a local cluster's name servers, its groups'
  admin credentials and its TLS authority in the state directory, as every `local` command does (exit 3 when
  nothing runs there).

Nothing heavy is imported at registration: `local status` registers `local backup` too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocketmq_operator.control.backup import RestoreReport
    from rocketmq_operator.core.backup import MetadataBackup
    from rocketmq_operator.remoting import RemotingClient

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_STOPPED = 0, 1, 2, 3
NAMESRV_ENV = "NAMESRV_ADDR"
PASSWORDS_NOTE = "mode 0600: it holds the users' passwords in clear text"
REQUEST_TIMEOUT_S = 5.0


class Refused(Exception):
    """A one-line refusal; `code` is the exit code."""

    def __init__(self, message: str, code: int = EXIT_INVALID) -> None:
        super().__init__(message)
        self.code = code


def _error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def write_private(path: str, text: str) -> None:
    """``text`` into ``path`` with mode 0600, whole or not at all (a temporary file beside it, then renamed)."""
    target = Path(path)
    directory = target.parent
    if not directory.is_dir():
        raise Refused(
            f"--to {path}: the directory {directory} does not exist; rule: the backup is written beside its final "
            f"name; fix: create it (mkdir -p {directory}) or name another file"
        )
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)  # mkstemp: mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o600)  # whatever the umask
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise Refused(f"--to {path}: cannot be written ({exc.strerror or exc}); fix: name a writable file", 1) from None


def read_backup(path: str) -> MetadataBackup:
    """The backup in ``path`` (``-``: stdin), checked; every problem a one-line Refused (exit 2)."""
    from rocketmq_operator.core.backup import BACKUP_RULE, BackupError, load_backup

    fix = "fix: name the file `rocketmq-operator backup --to` wrote"
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise Refused(
            f"--from {path}: cannot be read ({exc.strerror or exc}); rule: a restore reads the file a backup wrote; "
            f"{fix}"
        ) from None
    except UnicodeDecodeError:
        raise Refused(f"--from {path}: not UTF-8 text; {BACKUP_RULE}; {fix}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # Line and column only: the text may hold passwords.
        raise Refused(
            f"--from {path}: not JSON (line {exc.lineno} column {exc.colno}: {exc.msg}); {BACKUP_RULE}; {fix}"
        ) from None
    try:
        return load_backup(data, f"--from {path}")
    except BackupError as exc:
        raise Refused(str(exc)) from None


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def _tool() -> str:
    from rocketmq_operator.cli.main import package_version

    return f"rocketmq-operator {package_version()}"


async def _take(client: RemotingClient, cluster: str | None) -> MetadataBackup:
    from rocketmq_operator.control.backup import take_backup

    async with client:
        return await take_backup(client, cluster=cluster, taken_at=_now(), tool=_tool())


def run_backup(client: RemotingClient, cluster: str | None, to: str) -> int:
    from rocketmq_operator.core.backup import BackupError, BackupInputError, describe_backup

    try:
        backup = asyncio.run(_take(client, cluster))
    except BackupInputError as exc:
        raise Refused(str(exc)) from None
    except BackupError as exc:
        raise Refused(f"{exc}; nothing was written", EXIT_FAILED) from None
    text = backup.to_text()
    if to == "-":
        sys.stdout.write(text)
    else:
        write_private(to, text)
    where = "stdout" if to == "-" else f"{to} ({PASSWORDS_NOTE})"
    print(f"backup of cluster {backup.cluster} written to {where}", file=sys.stderr)
    for line in describe_backup(backup):
        print(f"  {line}", file=sys.stderr)
    return EXIT_OK


async def _restore(client: RemotingClient, backup: MetadataBackup, args: argparse.Namespace) -> RestoreReport:
    from rocketmq_operator.control.backup import restore

    async with client:
        return await restore(
            client,
            backup,
            cluster=args.cluster,
            every_group=args.onto_every_group,
            overwrite=args.overwrite,
            dry_run=args.dry_run,
        )


def print_restore(report: RestoreReport) -> None:
    from rocketmq_operator.core.backup import Outcome, summary

    for step in report.steps:
        if step.outcome is not Outcome.PRESENT:
            print(step.line(written=not report.dry_run))
    for line in report.errors:
        print(f"failed: {line}")
    if not report.dry_run:
        for step in report.missing:
            if step.outcome is not Outcome.REFUSED:  # a refusal was printed above with its reason
                print(f"still missing after the restore: {step.line(verb='not there')}")
    verb = "restore plan for" if report.dry_run else "restored onto"
    print(f"{verb} cluster {report.cluster}: {summary(report.steps, written=not report.dry_run)}")


def run_restore(client: RemotingClient, backup: MetadataBackup, args: argparse.Namespace) -> int:
    from rocketmq_operator.core.backup import BackupError, BackupInputError, Outcome

    try:
        report = asyncio.run(_restore(client, backup, args))
    except BackupInputError as exc:
        raise Refused(str(exc)) from None
    except BackupError as exc:
        raise Refused(str(exc), EXIT_FAILED) from None
    print_restore(report)
    if not report.ok:
        refused = sum(1 for s in report.missing if s.outcome is Outcome.REFUSED)
        print(
            f"error: not everything of the backup is on cluster {report.cluster}: {refused} item(s) not restorable, "
            f"{len(report.missing) - refused} missing after the restore, {len(report.errors)} write(s) failed "
            "(lines above)",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return EXIT_OK


def _client(args: argparse.Namespace) -> RemotingClient:
    from rocketmq_operator.cli.tools import credentials_from, tls_from
    from rocketmq_operator.remoting import RemotingClient
    from rocketmq_operator.tools.routing import ToolError

    namesrv = args.namesrv or os.environ.get(NAMESRV_ENV)
    if not namesrv:
        raise Refused(
            f"--namesrv is not given and ${NAMESRV_ENV} is empty; rule: the cluster is found through its name "
            'servers; fix: --namesrv HOST:PORT[;HOST:PORT] (`eval "$(rocketmq-operator local env)"` sets it for a '
            "local cluster)"
        )
    try:
        credentials, tls = credentials_from(args), tls_from(args)
    except ToolError as exc:
        raise Refused(str(exc)) from None
    return RemotingClient(namesrv, request_timeout=REQUEST_TIMEOUT_S, credentials=credentials, tls=tls)


def _guarded(run: Any) -> int:
    try:
        code: int = run()
    except Refused as exc:
        _error(str(exc))
        return exc.code
    return code


def cmd_backup(args: argparse.Namespace) -> int:
    return _guarded(lambda: run_backup(_client(args), args.cluster, args.to))


def cmd_restore(args: argparse.Namespace) -> int:
    return _guarded(lambda: run_restore(_client(args), read_backup(args.source), args))


# The local platform --------------------------------------------------------------------------------------------


def _local_client(args: argparse.Namespace) -> RemotingClient:
    from rocketmq_operator.platforms.local.auth import state_client
    from rocketmq_operator.platforms.local.layout import StateLayout, resolve_state_dir
    from rocketmq_operator.platforms.local.lifecycle import NotRunning, not_running, read_existing
    from rocketmq_operator.platforms.local.report import nothing_runs
    from rocketmq_operator.platforms.local.state import StateError

    layout = StateLayout(resolve_state_dir(args.state_dir))
    try:
        state = read_existing(layout)
        if nothing_runs(state):
            raise not_running(layout, state)
    except NotRunning as exc:
        raise Refused(str(exc), EXIT_STOPPED) from None
    except StateError as exc:
        raise Refused(f"no local cluster at {layout.root} ({exc}); fix: `rocketmq-operator local up -f FILE`") from None
    if not state.name_servers:
        raise Refused(f"the manifests run from {layout.root} have no ControllerGroup, so no name server")
    # The state's client signs as each auth group's admin towards its brokers and trusts the cluster's authority.
    return state_client(state, request_timeout=REQUEST_TIMEOUT_S)


def cmd_local_backup(args: argparse.Namespace) -> int:
    return _guarded(lambda: run_backup(_local_client(args), args.cluster, args.to))


def cmd_local_restore(args: argparse.Namespace) -> int:
    return _guarded(lambda: run_restore(_local_client(args), read_backup(args.source), args))


# Arguments -----------------------------------------------------------------------------------------------------

BACKUP_DESCRIPTION = (
    "Export the metadata of a RocketMQ cluster, read from every broker group's master: topics (with the groups "
    "that have them, their queues and perm), subscription groups, ACL 2.0 users and ACLs. Messages and consumer "
    "offsets are not part of it (docs/backup.md). The file is written with mode 0600: it holds the users' "
    "passwords in clear text; keep it as a secret."
)
RESTORE_DESCRIPTION = (
    "Create on a cluster what a backup holds and the cluster lacks. Each item is restored on the broker group of "
    "the same name (--onto-every-group: every item on every group); present but different items are listed and "
    "kept unless --overwrite; nothing is ever deleted. Exit 0 when everything of the backup is there afterwards, 1 "
    "when something could not be created, 2 for bad input."
)


def _backup_arguments(p: Any) -> None:
    p.add_argument(
        "--to",
        required=True,
        metavar="FILE",
        help="where to write the backup (mode 0600: it holds the users' passwords); - for stdout",
    )
    p.add_argument("--cluster", default=None, metavar="NAME", help="the cluster to back up (default: the only one)")


def _restore_arguments(p: Any) -> None:
    p.add_argument("--from", dest="source", required=True, metavar="FILE", help="the backup file; - for stdin")
    p.add_argument(
        "--cluster",
        default=None,
        metavar="NAME",
        help="the cluster to restore onto (default: the backup's cluster name)",
    )
    p.add_argument(
        "--onto-every-group",
        action="store_true",
        help="put every backed-up group's items on every group of the target (default: each on the group of the "
        "same name, refused when the target lacks one)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace items the target has with other settings (default: list them and keep them)",
    )
    p.add_argument("--dry-run", action="store_true", help="print what would be done; write nothing")


def register(sub: Any) -> None:
    """Add ``backup`` and ``restore`` (the cluster found through --namesrv)."""
    from rocketmq_operator.cli.tools import add_credentials_arguments, add_tls_arguments

    for name, help_text, description, arguments, func in (
        (
            "backup",
            "export topics, subscription groups, ACL users and rules to a file (mode 0600: it holds passwords)",
            BACKUP_DESCRIPTION,
            _backup_arguments,
            cmd_backup,
        ),
        (
            "restore",
            "create on a cluster what a backup holds and it lacks; list differences (exit 1 if something is missing)",
            RESTORE_DESCRIPTION,
            _restore_arguments,
            cmd_restore,
        ),
    ):
        p = sub.add_parser(name, help=help_text, description=description)
        p.add_argument(
            "--namesrv",
            default=None,
            metavar="ADDR[;ADDR]",
            help=f"the cluster's name servers (default: ${NAMESRV_ENV})",
        )
        arguments(p)
        add_credentials_arguments(p)
        add_tls_arguments(p)
        p.set_defaults(func=func)


def register_local(lsub: Any, state_dir_arg: Any) -> None:
    """Add ``local backup`` and ``local restore`` to the ``local`` subcommands (``state_dir_arg`` adds --state-dir)."""
    p = lsub.add_parser(
        "backup",
        help="export the local cluster's topics, subscription groups, ACL users and rules (mode 0600; exit 3 when "
        "nothing runs)",
        description=BACKUP_DESCRIPTION + " Signs as each auth group's admin, from the state directory.",
    )
    _backup_arguments(p)
    state_dir_arg(p)
    p.set_defaults(func=cmd_local_backup)

    p = lsub.add_parser(
        "restore",
        help="create on the local cluster what a backup holds and it lacks (exit 3 when nothing runs)",
        description=RESTORE_DESCRIPTION,
    )
    _restore_arguments(p)
    state_dir_arg(p)
    p.set_defaults(func=cmd_local_restore)
