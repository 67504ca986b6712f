"""`rocketmq-operator bench …` subcommands.

While a bench runs, a terminal on stderr shows a spinner with the elapsed time and the bench's phase
(`bench.phase`); elsewhere nothing more is printed. Ctrl-C (exit 130) says what is left: a bench takes its local
cluster down on the way out (unless --keep); the message then says so, or, when that teardown was interrupted
too, what still runs from the state directory and how to stop it. SIGTERM (a CI timeout, `kill`) takes the same
path as Ctrl-C.

`bench failover`, `switchover` and `upgrade` print their JSON result on stdout; when a check fails they exit 1
and say on stderr, one line per failed check, which one and with what figures (`bench.verdict`). With `--load N`
they run under N busy processes (`bench.load`), started before the local cluster and stopped when the run ends."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console

from rocketmq_operator.api.models import DEFAULT_ROCKETMQ_VERSION
from rocketmq_operator.bench import verdict
from rocketmq_operator.bench.load import CpuLoad
from rocketmq_operator.bench.phase import listening
from rocketmq_operator.cli import bench_spark

if TYPE_CHECKING:
    from rocketmq_operator.bench.chaos import Campaign
from rocketmq_operator.cli.arguments import positive_float, positive_int
from rocketmq_operator.platforms.console import EXIT_INTERRUPTED, Ticker, stderr_terminal
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.lifecycle import our_pids

T = TypeVar("T")


class Interrupted(Exception):
    """Ctrl-C during a bench: ``message`` says what is left running."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def left_running(state_dir: Path, keep: bool) -> str:
    """After a Ctrl-C: what still runs from ``state_dir`` (looked up by process, not assumed) and how to stop it."""
    pids = our_pids(StateLayout(state_dir))
    down = f"rocketmq-operator local down --state-dir {state_dir}"
    if not pids:
        return f"the bench took its local cluster down; nothing runs from {state_dir}"
    why = "--keep" if keep else "the teardown was interrupted"
    return f"still running ({why}): {len(pids)} processes from {state_dir}; stop them: {down}"


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While a bench runs, SIGTERM is a Ctrl-C: asyncio cancels the bench, which heals its faults and takes its
    cluster down. A background job starts with SIGINT ignored, so Python's own handler is put back meanwhile."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda signum, frame: signal.raise_signal(signal.SIGINT))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])


def run_live(name: str, state_dir: Path, keep: bool, main: Coroutine[Any, Any, T], console: Console | None) -> T:
    """``asyncio.run(main)`` with a spinner (elapsed time, phase) on ``console``; Ctrl-C or SIGTERM raises
    `Interrupted` after ``main`` has run its own clean-up."""
    try:
        with (
            terminate_as_interrupt(),
            Ticker(console, f"{name}: starting", elapsed=True) as ticker,
            listening(lambda text: ticker.update(f"{name}: {text}")),
        ):
            return asyncio.run(main)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted: {left_running(state_dir, keep)}") from None


def _run(name: str, state_dir: Path, keep: bool, main: Coroutine[Any, Any, T]) -> T:
    return run_live(name, state_dir, keep, main, stderr_terminal())


def _interrupted(exc: Interrupted) -> int:
    print(exc.message, file=sys.stderr)
    return EXIT_INTERRUPTED


def _load_error(load: int) -> str | None:
    if load < 0:
        return f"error: --load {load}: the number of busy processes must be 0 or more; fix: e.g. --load 2"
    return None


def _verdict(name: str, reasons: list[str]) -> int:
    """One stderr line per failed check; the exit code."""
    for reason in reasons:
        print(f"{name}: FAILED: {reason}", file=sys.stderr)
    return 1 if reasons else 0


def cmd_failover(args: argparse.Namespace) -> int:
    from rocketmq_operator.bench.failover import run_bench

    state_dir = Path(args.state_dir or ".bench-state/failover").resolve()
    if error := _load_error(args.load):
        print(error, file=sys.stderr)
        return 2
    try:
        with CpuLoad(args.load) as load:
            doc = _run(
                "bench failover",
                state_dir,
                args.keep,
                run_bench(
                    args.files,
                    state_dir,
                    args.trials,
                    args.rate,
                    args.observe_interval,
                    args.keep,
                    fault=args.fault,
                    detection_s=args.detection_seconds,
                    after_leader_change=args.after_leader_change,
                ),
            )
    except Interrupted as exc:
        return _interrupted(exc)
    doc.update(load.record())
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(json.dumps({k: v for k, v in doc.items() if k != "per_trial"}, indent=2))
    return _verdict("bench failover", verdict.failover_failures(doc))


def cmd_proxy_failover(args: argparse.Namespace) -> int:
    from rocketmq_operator.bench.proxy import run_proxy_failover

    state_dir = Path(args.state_dir or ".bench-state/proxy-failover").resolve()
    try:
        doc = _run(
            "bench proxy-failover",
            state_dir,
            args.keep,
            run_proxy_failover(args.files, state_dir, args.trials, args.rate, args.keep, args.fault),
        )
    except Interrupted as exc:
        return _interrupted(exc)
    print(json.dumps(doc if args.json else {k: v for k, v in doc.items() if k != "per_trial"}, indent=2))
    return _verdict("bench proxy-failover", verdict.proxy_failover_failures(doc))


def cmd_proxy(args: argparse.Namespace) -> int:
    from rocketmq_operator.bench.proxy import run_proxy_bench

    state_dir = Path(args.state_dir or ".bench-state/proxy").resolve()
    bench = run_proxy_bench(
        args.files,
        state_dir,
        count=args.count,
        concurrency=args.concurrency,
        rate=args.rate,
        seconds=args.seconds,
        rounds=args.rounds,
        size=args.size,
        grpc_count=args.grpc_count,
        keep=args.keep,
    )
    try:
        doc = _run("bench proxy", state_dir, args.keep, bench)
    except Interrupted as exc:
        return _interrupted(exc)
    print(json.dumps(doc, indent=2))
    return _verdict("bench proxy", verdict.proxy_bench_failures(doc))


def cmd_routes(args: argparse.Namespace) -> int:
    from rocketmq_operator.bench.routes import run_bench

    state_dir = Path(args.state_dir or ".bench-state/routes").resolve()
    try:
        doc = _run("bench routes", state_dir, args.keep, run_bench(args.files, state_dir, args.trials, args.keep))
    except Interrupted as exc:
        return _interrupted(exc)
    print(json.dumps(doc if args.json else {k: v for k, v in doc.items() if k != "per_trial"}, indent=2))
    return 0


def cmd_upgrade(args: argparse.Namespace) -> int:
    from rocketmq_operator.bench.upgrade import run_bench

    state_dir = Path(args.state_dir or ".bench-state/upgrade").resolve()
    if error := _load_error(args.load):
        print(error, file=sys.stderr)
        return 2
    try:
        with CpuLoad(args.load) as load:
            main = run_bench(args.files, state_dir, args.to_version, args.rate, args.keep)
            doc = _run("bench upgrade", state_dir, args.keep, main)
    except Interrupted as exc:
        return _interrupted(exc)
    doc.update(load.record())
    print(json.dumps(doc, indent=2 if args.json else None))
    return _verdict("bench upgrade", verdict.upgrade_failures(doc))


def cmd_group_scale(args: argparse.Namespace) -> int:
    from rocketmq_operator.bench.group_scale import GroupScaleError, run_bench

    state_dir = Path(args.state_dir or ".bench-state/group-scale").resolve()
    try:
        main = run_bench(args.files, state_dir, args.rate, args.keep, args.added_name)
        doc = _run("bench group-scale", state_dir, args.keep, main)
    except Interrupted as exc:
        return _interrupted(exc)
    except (GroupScaleError, TimeoutError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(doc, indent=2 if args.json else None))
    return _verdict("bench group-scale", verdict.group_scale_failures(doc))


def cmd_switchover(args: argparse.Namespace) -> int:
    from rocketmq_operator.bench.switchover import run_bench

    state_dir = Path(args.state_dir or ".bench-state/switchover").resolve()
    if error := _load_error(args.load):
        print(error, file=sys.stderr)
        return 2
    try:
        with CpuLoad(args.load) as load:
            main = run_bench(args.files, state_dir, args.switchovers, args.rate, args.keep)
            doc = _run("bench switchover", state_dir, args.keep, main)
    except Interrupted as exc:
        return _interrupted(exc)
    doc.update(load.record())
    print(json.dumps(doc if args.json else {k: v for k, v in doc.items() if k != "per_switchover"}, indent=2))
    return _verdict("bench switchover", verdict.switchover_failures(doc))


def cmd_chaos(args: argparse.Namespace) -> int:
    from rocketmq_operator.bench.chaos_plan import ChaosPlanError
    from rocketmq_operator.platforms.local.netfault import NetFaultError

    families = [f.strip() for f in args.families.split(",") if f.strip()]
    if args.platform == "kubernetes":
        return _chaos_kubernetes(args, families)
    from rocketmq_operator.bench.chaos import run_chaos

    if not args.files:
        return _refused(
            "chaos --platform local needs -f FILE (the manifests to bring up); fix: -f examples/chaos/dledger.yaml"
        )
    state_dir = Path(args.state_dir or ".bench-state/chaos").resolve()
    plot = Path(args.plot).resolve() if args.plot else state_dir.parent / f"chaos-{args.seed}.svg"
    campaign = _campaign(args, families, plot)
    try:
        doc = _run("chaos", state_dir, args.keep, run_chaos(args.files, state_dir, campaign, keep=args.keep))
    except (ChaosPlanError, NetFaultError) as exc:
        return _refused(str(exc))
    except Interrupted:
        print(
            f"interrupted: every fault was healed; the faults so far are in {campaign.journal}; "
            f"{left_running(state_dir, args.keep)}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return _chaos_verdict(doc, args.json)


def _refused(message: str) -> int:
    """A campaign refused before it began: one line on stderr, exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    return 2


def _campaign(args: argparse.Namespace, families: list[str], plot: Path) -> Campaign:
    from rocketmq_operator.bench.chaos import Campaign

    journal = Path(args.journal).resolve() if args.journal else plot.with_suffix(".journal.jsonl")
    return Campaign(
        args.faults,
        args.seed,
        tuple(families),
        args.hold,
        args.recover,
        args.rate,
        plot,
        args.spare_operator,
        journal=journal,
    )


def _chaos_verdict(doc: dict[str, Any], full: bool) -> int:
    print(json.dumps(doc if full else {k: v for k, v in doc.items() if k != "per_fault"}, indent=2))
    return 0 if doc["lost"] == 0 and doc["deposed_acks"] == 0 else 1


def _chaos_kubernetes(args: argparse.Namespace, families: list[str]) -> int:
    """The campaign on a BrokerGroup already running in a cluster (bench.chaos_kubernetes); nothing to bring up or
    take down, every fault healed on an error or Ctrl-C."""
    from rocketmq_operator.bench.chaos_kubernetes import ChaosTargetError, run_chaos_kubernetes
    from rocketmq_operator.bench.chaos_plan import ChaosPlanError
    from rocketmq_operator.platforms.kubernetes.kube import CredentialsError, KubeError

    if not args.group:
        return _refused(
            "chaos --platform kubernetes needs --group NAME (a controller-mode BrokerGroup); fix: --group broker-a"
        )
    if args.files:
        return _refused(
            "-f FILE is for --platform local; on Kubernetes apply the manifests first (kubectl apply -f FILE) "
            "and name the group with --group"
        )
    plot = Path(args.plot).resolve() if args.plot else Path(f"chaos-k8s-{args.seed}.svg").resolve()
    campaign = _campaign(args, families, plot)
    try:
        doc = asyncio.run(run_chaos_kubernetes(args.namespace, args.group, campaign))
    except (ChaosPlanError, ChaosTargetError, CredentialsError, KubeError) as exc:
        return _refused(str(exc))
    except KeyboardInterrupt:
        print(
            f"interrupted: every fault was healed; the faults so far are in {campaign.journal}; BrokerGroup "
            f"{args.namespace}/{args.group} still runs (the campaign never brings a group up or down on Kubernetes)",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return _chaos_verdict(doc, args.json)


def cmd_controller_restart(args: argparse.Namespace) -> int:
    """Every controller pod deleted at once, N rounds, on a cluster (bench.controller_restart); nothing brought up
    or taken down."""
    from rocketmq_operator.bench.chaos_kubernetes import ChaosTargetError
    from rocketmq_operator.bench.controller_restart import run_controller_restart
    from rocketmq_operator.platforms.kubernetes.kube import CredentialsError, KubeError

    try:
        doc = asyncio.run(run_controller_restart(args.namespace, args.controller_group, args.rounds))
    except (ChaosTargetError, CredentialsError, KubeError, TimeoutError) as exc:
        return _refused(str(exc))
    except KeyboardInterrupt:
        print(
            f"interrupted: ControllerGroup {args.namespace}/{args.controller_group} and its BrokerGroups still run "
            "(the bench never brings a group up or down); a round cut short may have left controller pods starting",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    print(json.dumps(doc if args.json else {k: v for k, v in doc.items() if k != "rounds"}, indent=2))
    return 0


def _key_values(pairs: list[str]) -> dict[str, str] | str:
    """`KEY=VALUE` arguments as a mapping, or the one-line error for the first malformed one."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            return (
                f"error: --compare {pair!r}: expected a brokerConfig KEY=VALUE; "
                "fix: e.g. --compare transactionMetricFlushInterval=10000"
            )
        out[key.strip()] = value.strip()
    return out


def cmd_start(args: argparse.Namespace) -> int:
    from rocketmq_operator.bench.start import run_start_bench

    state_dir = Path(args.state_dir or ".bench-state/start").resolve()
    compare = _key_values(args.compare or [])
    if isinstance(compare, str):
        print(compare, file=sys.stderr)
        return 2
    try:
        doc = _run(
            "bench start", state_dir, False, run_start_bench(args.files, state_dir, args.rounds, args.seconds, compare)
        )
    except Interrupted as exc:
        return _interrupted(exc)
    print(json.dumps(doc if args.json else {k: v for k, v in doc.items() if k != "per_round"}, indent=2))
    return 0


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def cmd_quorum(args: argparse.Namespace) -> int:
    from rocketmq_operator.bench.quorum import run_quorum
    from rocketmq_operator.bench.quorum_plan import QuorumBenchError, quorum_svg
    from rocketmq_operator.platforms.local.netfault import NetFaultError

    state_dir = Path(args.state_dir or ".bench-state/quorum").resolve()
    try:
        replicas = [int(n) for n in _csv(args.replicas)]
    except ValueError:
        print(f"error: --replicas {args.replicas!r} must be comma-separated integers, e.g. 3,5", file=sys.stderr)
        return 2
    try:
        doc = _run(
            "bench quorum",
            state_dir,
            args.keep,
            run_quorum(
                state_dir,
                replicas=replicas,
                modes=_csv(args.modes),
                conditions=_csv(args.conditions),
                seconds=args.seconds,
                rate=args.rate,
                slow_share=args.slow_share,
                keep=args.keep,
            ),
        )
    except (QuorumBenchError, NetFaultError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Interrupted:
        left = (
            f"its local clusters are still running under {state_dir} (--keep): rocketmq-operator local down "
            "--state-dir DIR for each"
            if args.keep
            else "no quota or stall is left and its local cluster was taken down"
        )
        print(f"interrupted: {left}", file=sys.stderr)
        return 130
    if args.plot:
        Path(args.plot).write_text(quorum_svg(doc["cells"]), encoding="utf-8")
        doc["plot"] = str(Path(args.plot).resolve())
    print(json.dumps(doc, indent=2 if args.json else None))
    return 0 if doc["explain_agrees"] else 1


def cmd_operator_scale(args: argparse.Namespace) -> int:
    from rocketmq_operator.bench.operator_scale import ScaleSettings, run_operator_scale, summary_lines
    from rocketmq_operator.bench.operator_scale_plan import ScaleBenchError, check_passes, parse_group_sizes

    try:
        settings = ScaleSettings(
            sizes=parse_group_sizes(args.groups),
            passes=check_passes(args.passes),
            changes=args.changes,
            seed=args.seed,
            kubeconfig=Path(args.kubeconfig).resolve() if args.kubeconfig else None,
            state_dir=Path(args.state_dir or ".bench-state/operator-scale").resolve(),
        )
        if args.changes < 1:
            raise ScaleBenchError(
                f"--changes {args.changes}: the observation lag needs at least 1 simulated election; fix: e.g. "
                "--changes 12"
            )
    except ScaleBenchError as exc:
        return _refused(str(exc))
    try:
        with (
            terminate_as_interrupt(),
            Ticker(stderr_terminal(), "bench operator-scale", elapsed=True) as ticker,
            listening(lambda text: ticker.update(f"bench operator-scale: {text}")),
        ):
            doc = asyncio.run(run_operator_scale(settings))
    except ScaleBenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "interrupted: the operator was stopped, the bench's namespace deleted and its control plane (if it started "
            f"one) taken down; the sizes done so far are in {settings.state_dir}/size-N.json",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print("\n".join(summary_lines(doc)))
    return 0


def register(sub: Any) -> None:
    c = sub.add_parser(
        "chaos",
        help="a seeded campaign of kill, suspend, packet-loss, partition (and pod-delete) faults under a producer "
        "(root; local processes, or a group on Kubernetes)",
    )
    c.add_argument("-f", "--file", dest="files", action="append", metavar="FILE", help="--platform local: manifests")
    c.add_argument(
        "--platform",
        choices=("local", "kubernetes"),
        default="local",
        help="local (default): bring -f up as local processes; kubernetes: a BrokerGroup already running (--group)",
    )
    c.add_argument("--group", help="--platform kubernetes: the controller-mode BrokerGroup")
    c.add_argument(
        "-n", "--namespace", default="default", help="--platform kubernetes: its namespace (default: default)"
    )
    c.add_argument("--faults", type=int, default=12, help="how many faults (default 12)")
    c.add_argument("--seed", type=int, default=1, help="the schedule's seed (default 1)")
    c.add_argument(
        "--families",
        default="kill,suspend,loss,partition",
        help="comma-separated fault families; pod-delete too on --platform kubernetes",
    )
    c.add_argument("--hold", type=float, default=5.0, metavar="S", help="each fault is held S seconds (default 5)")
    c.add_argument(
        "--recover", type=float, default=5.0, metavar="S", help="steady traffic after the group is healthy again"
    )
    c.add_argument("--rate", type=float, default=200.0, help="producer messages per second")
    c.add_argument(
        "--spare-operator",
        action="store_true",
        help="--platform kubernetes: never delete the operator's pod (no master+operator faults)",
    )
    c.add_argument("--plot", metavar="FILE", help="the timeline SVG (default: chaos-SEED.svg next to the state dir)")
    c.add_argument(
        "--journal",
        metavar="FILE",
        help="the record as it goes, a JSON line per fault once its window closed (default: the plot's name with "
        ".journal.jsonl): an interrupted campaign leaves its faults on record. To end a campaign early and still "
        "check every acknowledged key, create the journal's name with .stop instead of .jsonl (touch it)",
    )
    c.add_argument("--state-dir", help="default: .bench-state/chaos")
    c.add_argument("--keep", action="store_true", help="leave the local cluster running afterwards")
    c.add_argument("--json", action="store_true", help="include every fault")
    c.set_defaults(func=cmd_chaos)
    bench = sub.add_parser(
        "bench",
        help="benchmarks that print JSON (failover, proxy, proxy-failover, routes, upgrade, switchover, start, quorum, "
        "operator-scale, spark)",
    )
    bsub = bench.add_subparsers(dest="bench", required=True, metavar="BENCH")
    p = bsub.add_parser("failover", help="SIGKILL or SIGSTOP the master N times under load on the local platform")
    p.add_argument("-f", "--file", dest="files", action="append", required=True, metavar="FILE")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--rate", type=float, default=200.0, help="producer messages per second")
    p.add_argument("--observe-interval", type=float, default=0.25, help="status poll interval, seconds")
    p.add_argument(
        "--fault",
        choices=("kill", "stop"),
        default="kill",
        help="kill: SIGKILL the master; stop: SIGSTOP it (a hung master) until another is elected, then SIGCONT",
    )
    p.add_argument("--detection-seconds", type=float, help="set spec.failover.detectionSeconds on every BrokerGroup")
    p.add_argument(
        "--after-leader-change",
        action="store_true",
        help="SIGKILL the controller leader (3+ controllers) right before each master fault",
    )
    p.add_argument(
        "--load", type=int, default=0, metavar="N", help="run under N busy processes (a CPU hog) for the whole run"
    )
    p.add_argument("--state-dir", help="default: .bench-state/failover")
    p.add_argument("--keep", action="store_true", help="leave the local cluster running afterwards")
    p.add_argument("--json", action="store_true", help="include every trial")
    p.set_defaults(func=cmd_failover)
    pf = bsub.add_parser(
        "proxy-failover",
        help="SIGKILL or SIGSTOP the master N times under a default gRPC client sending through the proxies (local "
        "platform)",
    )
    pf.add_argument("-f", "--file", dest="files", action="append", required=True, metavar="FILE")
    pf.add_argument("--trials", type=int, default=10)
    pf.add_argument(
        "--fault",
        choices=("kill", "stop"),
        default="kill",
        help="kill: SIGKILL (restarted by the supervisor); stop: SIGSTOP, a hung master, SIGCONT once writes recover",
    )
    pf.add_argument("--rate", type=float, default=50.0, help="at most this many synchronous sends per second")
    pf.add_argument("--state-dir", help="default: .bench-state/proxy-failover")
    pf.add_argument("--keep", action="store_true", help="leave the local cluster running afterwards")
    pf.add_argument("--json", action="store_true", help="include every trial")
    pf.set_defaults(func=cmd_proxy_failover)
    px = bsub.add_parser(
        "proxy",
        help="throughput and send latency through the proxy against straight to the brokers (local platform)",
    )
    px.add_argument("-f", "--file", dest="files", action="append", required=True, metavar="FILE")
    px.add_argument("--count", type=positive_int, default=20000, help="messages per saturated run (default 20000)")
    px.add_argument("--concurrency", type=positive_int, default=32, help="sends in flight (default 32)")
    px.add_argument("--rate", type=positive_float, default=1000.0, help="the fixed-rate load, messages/s")
    px.add_argument("--seconds", type=positive_float, default=10.0, help="each fixed-rate run's length (default 10)")
    px.add_argument("--rounds", type=positive_int, default=3, help="rounds, paths alternating (default 3)")
    px.add_argument("--size", type=positive_int, default=1024, help="message body bytes (default 1024)")
    px.add_argument(
        "--grpc-count", type=int, default=500, help="synchronous gRPC-client sends through the proxy (0: none)"
    )
    px.add_argument("--state-dir", help="default: .bench-state/proxy")
    px.add_argument("--keep", action="store_true", help="leave the local cluster running afterwards")
    px.set_defaults(func=cmd_proxy)
    r = bsub.add_parser("routes", help="restart every name server N times; time until the master's route is back")
    r.add_argument("-f", "--file", dest="files", action="append", required=True, metavar="FILE")
    r.add_argument("--trials", type=int, default=5)
    r.add_argument("--state-dir", help="default: .bench-state/routes")
    r.add_argument("--keep", action="store_true", help="leave the local cluster running afterwards")
    r.add_argument("--json", action="store_true", help="include every trial")
    r.set_defaults(func=cmd_routes)
    u = bsub.add_parser("upgrade", help="a rolling version upgrade under a steady producer on the local platform")
    u.add_argument("-f", "--file", dest="files", action="append", required=True, metavar="FILE")
    u.add_argument("--to-version", default=DEFAULT_ROCKETMQ_VERSION, help="the version to roll to")
    u.add_argument("--rate", type=float, default=200.0, help="producer messages per second")
    u.add_argument(
        "--load", type=int, default=0, metavar="N", help="run under N busy processes (a CPU hog) for the whole run"
    )
    u.add_argument("--state-dir", help="default: .bench-state/upgrade")
    u.add_argument("--keep", action="store_true", help="leave the local cluster running afterwards")
    u.add_argument("--json", action="store_true", help="indented JSON")
    u.set_defaults(func=cmd_upgrade)
    g = bsub.add_parser(
        "group-scale",
        help="add a broker group, then drain and remove another, under a producer and a consumer group (local)",
    )
    g.add_argument("-f", "--file", dest="files", action="append", required=True, metavar="FILE")
    g.add_argument("--rate", type=float, default=100.0, help="producer messages per second")
    g.add_argument("--added-name", default="bench-added", help="the name of the BrokerGroup added")
    g.add_argument("--state-dir", help="default: .bench-state/group-scale")
    g.add_argument("--keep", action="store_true", help="leave the local cluster running afterwards")
    g.add_argument("--json", action="store_true", help="indented JSON")
    g.set_defaults(func=cmd_group_scale)
    cr = bsub.add_parser(
        "controller-restart",
        help="every controller pod deleted at once, N rounds (Kubernetes): how soon the new leader hears each broker",
    )
    cr.add_argument("--controller-group", required=True, help="the ControllerGroup whose pods are deleted")
    cr.add_argument("-n", "--namespace", default="default", help="its namespace (default: default)")
    cr.add_argument("--rounds", type=positive_int, default=5, help="rounds (default 5)")
    cr.add_argument("--json", action="store_true", help="include every round")
    cr.set_defaults(func=cmd_controller_restart)
    w = bsub.add_parser("switchover", help="N planned switchovers under a steady producer on the local platform")
    w.add_argument("-f", "--file", dest="files", action="append", required=True, metavar="FILE")
    w.add_argument("--switchovers", type=int, default=10)
    w.add_argument("--rate", type=float, default=200.0, help="producer messages per second")
    w.add_argument(
        "--load", type=int, default=0, metavar="N", help="run under N busy processes (a CPU hog) for the whole run"
    )
    w.add_argument("--state-dir", help="default: .bench-state/switchover")
    w.add_argument("--keep", action="store_true", help="leave the local cluster running afterwards")
    w.add_argument("--json", action="store_true", help="include every switchover")
    w.set_defaults(func=cmd_switchover)
    st = bsub.add_parser(
        "start",
        help="the CPU a group's processes use from their start, rounds alternating with --compare brokerConfig keys",
    )
    st.add_argument("-f", "--file", dest="files", action="append", required=True, metavar="FILE")
    st.add_argument("--rounds", type=positive_int, default=3, help="rounds per variant (default 3)")
    st.add_argument(
        "--seconds", type=positive_float, default=35.0, help="CPU read this long after each up began (default 35)"
    )
    st.add_argument(
        "--compare",
        action="append",
        metavar="KEY=VALUE",
        help="a brokerConfig key set on every BrokerGroup in the compared rounds (repeatable), e.g. "
        "transactionMetricFlushInterval=10000, RocketMQ's own default",
    )
    st.add_argument("--state-dir", help="default: .bench-state/start (one directory per round)")
    st.add_argument("--json", action="store_true", help="include every round")
    st.set_defaults(func=cmd_start)
    q = bsub.add_parser(
        "quorum",
        help="send latency and statuses per replica count, quorum mode and condition (healthy, stalled, slow slave)",
    )
    q.add_argument("--replicas", default="3,5", help="comma-separated replica counts (default 3,5)")
    q.add_argument(
        "--modes", default="async,allSync,quorum,autoDegrade,allAck", help="comma-separated modes (default: all)"
    )
    q.add_argument("--conditions", default="healthy,stalled,slow", help="comma-separated conditions (default: all)")
    q.add_argument("--seconds", type=float, default=15.0, help="measured seconds per cell (default 15)")
    q.add_argument("--rate", type=float, default=200.0, help="producer messages per second (default 200)")
    q.add_argument(
        "--slow-share", type=float, default=0.05, help="the slow slave's CPU quota, share of one CPU (default 0.05)"
    )
    q.add_argument("--plot", metavar="FILE", help="write an SVG chart of every cell's p50/p99")
    q.add_argument("--state-dir", help="default: .bench-state/quorum (one local cluster per replica count and mode)")
    q.add_argument("--keep", action="store_true", help="leave the local clusters running afterwards")
    q.add_argument("--json", action="store_true", help="indented JSON")
    q.set_defaults(func=cmd_quorum)
    os_ = bsub.add_parser(
        "operator-scale",
        help="the operator's CPU, memory, API-server and remoting requests per pass and its observation lag, per "
        "number of BrokerGroups (simulated brokers, the real API server)",
    )
    os_.add_argument(
        "--groups", default="10,50,200", help="comma-separated numbers of BrokerGroups (default 10,50,200)"
    )
    os_.add_argument(
        "--passes", type=int, default=15, help="observation passes of every group per measured window (default 15)"
    )
    os_.add_argument("--changes", type=int, default=12, help="simulated elections timed per size (default 12)")
    os_.add_argument("--seed", type=int, default=1, help="which groups the elections pick (default 1)")
    os_.add_argument(
        "--kubeconfig", help="an API server with no nodes (default: the bench starts one with k8s/harness.py)"
    )
    os_.add_argument("--state-dir", help="default: .bench-state/operator-scale (operator logs, the control plane)")
    os_.add_argument("--json", action="store_true", help="the whole JSON document (default: a summary table)")
    os_.set_defaults(func=cmd_operator_scale)
    bench_spark.register_bench(bsub)
