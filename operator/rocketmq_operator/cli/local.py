"""`rocketmq-operator local ...`: the local platform's subcommands (registered by `rocketmq_operator.cli`).

Contract: `register(sub)` adds the `local` command with `up`, `apply`, `status`, `env`, `down`, `kill`, `start`,
`dist-path`, `backup` and `restore` (`cli.backup`), and the `switchover` command; each handler resolves the state
directory (`layout.resolve_state_dir`: `--state-dir`, then `$ROCKETMQ_OPERATOR_STATE`, then `./.local-state`) and
returns `control`'s exit code.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rocketmq_operator.cli.arguments import add_overlap_argument
from rocketmq_operator.platforms.console import progress_console, stderr_terminal, terminal
from rocketmq_operator.platforms.local import lifecycle
from rocketmq_operator.platforms.local.commands import SIGNALS
from rocketmq_operator.platforms.local.layout import DEFAULT_STATE_DIR, STATE_ENV, resolve_state_dir


def _state_dir_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help=f"state directory (default: ${STATE_ENV}, else ./{DEFAULT_STATE_DIR})",
    )


def cmd_up(args: argparse.Namespace) -> int:
    return lifecycle.up(
        args.files,
        resolve_state_dir(args.state_dir),
        wait=args.wait,
        timeout=args.timeout,
        fault_injection=args.fault_injection,
        console=progress_console(),
    )


def cmd_apply(args: argparse.Namespace) -> int:
    from rocketmq_operator.platforms.local.apply import apply

    return apply(args.files, resolve_state_dir(args.state_dir), force=args.force)


def cmd_status(args: argparse.Namespace) -> int:
    console = terminal() if args.watch is not None else None
    return lifecycle.status(resolve_state_dir(args.state_dir), as_json=args.json, watch=args.watch, console=console)


def cmd_env(args: argparse.Namespace) -> int:
    return lifecycle.env(resolve_state_dir(args.state_dir))


def cmd_down(args: argparse.Namespace) -> int:
    return lifecycle.down(resolve_state_dir(args.state_dir), purge=args.purge, console=stderr_terminal())


def cmd_kill(args: argparse.Namespace) -> int:
    return lifecycle.kill(resolve_state_dir(args.state_dir), args.replica, sig=args.signal, no_restart=args.no_restart)


def cmd_start(args: argparse.Namespace) -> int:
    return lifecycle.start(resolve_state_dir(args.state_dir), args.replica)


def cmd_rotate_ca(args: argparse.Namespace) -> int:
    return lifecycle.rotate_ca(resolve_state_dir(args.state_dir), args.overlap, wait_s=args.wait)


def cmd_switchover(args: argparse.Namespace) -> int:
    from rocketmq_operator.platforms.local.switchover import cmd_switchover as run

    return run(resolve_state_dir(args.state_dir), args.group, args.to, args.json)


def cmd_dist_path(args: argparse.Namespace) -> int:
    del args
    code = lifecycle.dist_path(console=stderr_terminal())
    if code == 0:
        # Once per distribution and java (about 20 s): every later start of its JVMs maps their classes.
        from rocketmq_operator.platforms.local.cds_training import train_archives
        from rocketmq_operator.platforms.local.distribution import ROCKETMQ_VERSION, dist_dir

        train_archives(dist_dir(ROCKETMQ_VERSION), ROCKETMQ_VERSION, log=lambda text: print(text, file=sys.stderr))
    return code


def _signal_name(text: str) -> str:
    name = text.upper().removeprefix("SIG")
    if name not in SIGNALS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(SIGNALS)}")
    return name


def register(sub: Any) -> None:
    local = sub.add_parser(
        "local",
        help="run manifests as real RocketMQ processes on this machine (no cluster)",
        description="Run BrokerGroup/ControllerGroup manifests as local RocketMQ processes under a supervisor.",
    )
    lsub = local.add_subparsers(dest="local_command", required=True, metavar="SUBCOMMAND")

    p = lsub.add_parser("up", help="validate, render and start the manifests' processes")
    p.add_argument("-f", "--file", dest="files", action="append", required=True, metavar="FILE")
    _state_dir_arg(p)
    p.add_argument("--wait", action="store_true", help="wait until every group has a master and a full set")
    p.add_argument("--timeout", type=float, default=180.0, metavar="S", help="--wait gives up after S seconds")
    p.add_argument(
        "--fault-injection",
        action="store_true",
        help="start each process in a cgroup of its own, so `chaos` can drop its packets (root, cgroup v2, iptables)",
    )
    p.set_defaults(func=cmd_up)

    p = lsub.add_parser(
        "apply",
        help="change running groups (version, config, topics): hot keys at once, the rest by a rolling restart "
        "(exit 3 when nothing runs)",
    )
    p.add_argument("-f", "--file", dest="files", action="append", required=True, metavar="FILE")
    _state_dir_arg(p)
    p.add_argument(
        "--force",
        action="store_true",
        help="remove a BrokerGroup the manifests no longer have even with messages its consumers have not read "
        "(they are dropped; without it the group is drained first and its removal refused while any are left)",
    )
    p.set_defaults(func=cmd_apply)

    p = lsub.add_parser(
        "status",
        help="observe the groups: master, SyncStateSet, replicas, conditions (exit 3 when nothing runs)",
    )
    p.add_argument("--json", action="store_true", help="print the status document as JSON")
    _state_dir_arg(p)
    p.add_argument("--watch", type=float, metavar="S", help="repeat every S seconds")
    p.set_defaults(func=cmd_status)

    p = lsub.add_parser(
        "env",
        help='print export NAMESRV_ADDR=<name servers> for the shell: eval "$(rocketmq-operator local env)"',
    )
    _state_dir_arg(p)
    p.set_defaults(func=cmd_env)

    p = lsub.add_parser("down", help="stop the supervisor and every process (data is kept)")
    _state_dir_arg(p)
    p.add_argument(
        "--purge",
        action="store_true",
        help="also delete data, logs and state (processes are killed at once: nothing is kept)",
    )
    p.set_defaults(func=cmd_down)

    p = lsub.add_parser(
        "kill",
        help="signal one replica's process (the supervisor restarts it unless told not to; exit 3 when nothing runs)",
    )
    p.add_argument("replica", help="replica name, e.g. broker-a-0 (see `local status`)")
    p.add_argument("--signal", type=_signal_name, default="KILL", help="KILL (default), TERM, STOP or CONT")
    p.add_argument("--no-restart", action="store_true", help="keep it down until `local start REPLICA`")
    _state_dir_arg(p)
    p.set_defaults(func=cmd_kill)

    p = lsub.add_parser(
        "start", help="start (or resume) a replica stopped with `local kill` (exit 3 when nothing runs)"
    )
    p.add_argument("replica")
    _state_dir_arg(p)
    p.set_defaults(func=cmd_start)

    p = lsub.add_parser(
        "rotate-ca",
        help="replace the cluster's TLS authority: both trusted during an overlap, every certificate reissued, no "
        "broker restart (exit 3 when nothing runs)",
    )
    add_overlap_argument(p)
    p.add_argument("--wait", type=float, default=0.0, metavar="S", help="wait until the supervisor has started it")
    _state_dir_arg(p)
    p.set_defaults(func=cmd_rotate_ca)

    p = lsub.add_parser(
        "dist-path",
        help="print the RocketMQ distribution directory (built first if missing, with its JVMs' class-data archives)",
    )
    p.set_defaults(func=cmd_dist_path)

    # `local backup` / `local restore` (cli.backup: its imports are made when they run).
    from rocketmq_operator.cli.backup import register_local as register_backup

    register_backup(lsub, _state_dir_arg)

    p = sub.add_parser(
        "switchover",
        help="move a local group's master to an alive in-sync replica (fence, catch up, elect, unfence; exit 3 when "
        "nothing runs)",
    )
    p.add_argument("group", metavar="GROUP")
    p.add_argument(
        "--to",
        required=True,
        metavar="REPLICA",
        help="the new master: a replica name (e.g. broker-a-2; `local status` lists them) or its broker id",
    )
    p.add_argument("--json", action="store_true")
    _state_dir_arg(p)
    p.set_defaults(func=cmd_switchover)
