#!/usr/bin/env python3
"""`make chaos-k8s`: a chaos campaign on the real cluster, from nothing to its record, as one command.

    chaos_campaign.py [--faults N] [--seed S] [--example FILE] [--namespace NS] [--families F,...] [--out DIR]
                      [--rate R] [--spare-operator] [--keep]

Brings the test cluster up (k8s/cluster.py, three nodes; the images and the chart's operator, as `make test`'s e2e
line does) unless $ROCKETMQ_OPERATOR_E2E_NODE names one that runs, applies the example in its namespace as a user
would and waits until its group is healthy, runs `rocketmq-operator chaos --platform kubernetes` on its
controller-mode BrokerGroup (bench.chaos_kubernetes: the same campaign, checker and JSON keys as the local one), and
takes the cluster down with its diagnostics (unless --keep). Under DIR (default .bench-state/chaos-k8s): the
campaign's journal (a line per fault, written as it goes), its timeline and its sends; the record is printed as
the last line of standard output (one JSON document). Exit status: 0 nothing lost and nothing acknowledged by a
deposed master, 1 otherwise, 2 a refusal (one line on stderr), 130 interrupted (it says what still runs).
Root, like the e2e tests.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import yaml

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from e2e.conftest import Group  # noqa: E402
from e2e.e2e_node import (  # noqa: E402
    SHARED_NODE_ENV,
    WATCHED_NAMESPACES,
    Node,
    bring_up,
    harness,
    install_operator,
    missing_part,
    tear_down,
)
from jvm_flags import set_timer_slack  # noqa: E402
from rocketmq_operator.bench.chaos import Campaign  # noqa: E402
from rocketmq_operator.bench.chaos_kubernetes import run_chaos_kubernetes  # noqa: E402
from rocketmq_operator.bench.chaos_plan import KUBERNETES_FAMILIES  # noqa: E402

ROOT = TESTS.parent


def controller_mode_group(example: Path) -> tuple[str, int, str]:
    """(name, replicas, ControllerGroup) of the example's first controller-mode BrokerGroup; ValueError (one line)
    when it has none."""
    docs = [d for d in yaml.safe_load_all(example.read_text()) if isinstance(d, dict)]
    for doc in docs:
        spec = doc.get("spec") or {}
        if doc.get("kind") == "BrokerGroup" and (spec.get("controllerRef") or {}).get("name"):
            return doc["metadata"]["name"], int(spec.get("replicas", 3)), spec["controllerRef"]["name"]
    raise ValueError(
        f"--example {example}: no BrokerGroup with spec.controllerRef (a chaos campaign needs a controller-mode "
        "group); fix: use examples/three-controllers.yaml or examples/three-jraft-controllers.yaml"
    )


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="chaos_campaign.py", description=__doc__.split("\n")[1])
    p.add_argument("--faults", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--example", type=Path, default=ROOT / "examples" / "three-controllers.yaml")
    p.add_argument("--namespace", default="chaos")
    p.add_argument("--families", default=",".join(KUBERNETES_FAMILIES))
    p.add_argument("--rate", type=float, default=200.0)
    p.add_argument("--out", type=Path, default=ROOT / ".bench-state" / "chaos-k8s")
    p.add_argument("--spare-operator", action="store_true")
    p.add_argument("--keep", action="store_true", help="leave the cluster running afterwards")
    return p.parse_args(argv)


def refuse(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.faults < 1:
        return refuse(f"--faults {args.faults}: a campaign needs at least one fault; fix: --faults 200")
    example = args.example.resolve()
    if not example.is_file():
        return refuse(f"--example {args.example}: no such file; fix: --example examples/three-controllers.yaml")
    try:
        name, replicas, controllers = controller_mode_group(example)
    except (ValueError, yaml.YAMLError) as exc:
        return refuse(str(exc).splitlines()[0])
    if args.namespace not in WATCHED_NAMESPACES:
        return refuse(
            f"--namespace {args.namespace}: the test cluster's operator watches only {', '.join(WATCHED_NAMESPACES)} "
            "(the chart's namespace scope, tests/e2e/e2e_node.py WATCHED_NAMESPACES); fix: --namespace chaos"
        )
    families = tuple(f.strip() for f in args.families.split(",") if f.strip())
    shared = os.environ.get(SHARED_NODE_ENV)
    if not shared and (lacking := missing_part()):
        return refuse(f"{lacking}; fix: run `make chaos-k8s` as root (it builds what the cluster needs)")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"k8s-{example.stem}-seed{args.seed}-{args.faults}"
    state = Path(shared) if shared else out / "cluster"
    cluster: Node | None = None
    doc: dict[str, Any] = {}
    try:
        if shared:
            cluster = Node(state_dir=state, env=harness.cluster_env(state))
        else:
            set_timer_slack()  # as `make test`'s node has it: every pod inherits it
            began = time.monotonic()
            cluster = bring_up(state)
            install_operator(cluster)
            print(f"cluster up with the operator in {time.monotonic() - began:.0f}s ({state})", file=sys.stderr)
        cluster.ensure_namespaces(args.namespace)
        cluster.kubectl("-n", args.namespace, "apply", "-f", example)
        group = Group(cluster, ns=args.namespace, name=name, replicas=replicas, controller_group=controllers)
        print(f"{example.name} in {args.namespace}: healthy in {group.wait_healthy(timeout=900):.0f}s", file=sys.stderr)
        os.environ["KUBECONFIG"] = cluster.env["KUBECONFIG"]  # the campaign finds the API server as kubectl does
        campaign = Campaign(
            args.faults,
            args.seed,
            families,
            rate=args.rate,
            plot=stem.with_suffix(".svg"),
            spare_operator=args.spare_operator,
            journal=stem.with_suffix(".journal.jsonl"),
        )
        print(
            f"campaign: {args.faults} faults on {args.namespace}/{name}; journal {campaign.journal}; to end it early "
            f"and still check every acknowledged key: touch {campaign.stop_file}",
            file=sys.stderr,
        )
        doc = asyncio.run(run_chaos_kubernetes(args.namespace, name, campaign))
        stem.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
        group.wait_healthy()
    except KeyboardInterrupt:
        kept = cluster is None or args.keep or bool(shared)
        where = "the cluster still runs" if kept else f"the cluster ({state}) is being taken down"
        print(
            f"interrupted: every fault was healed; the faults so far are in {stem}.journal.jsonl; {where}",
            file=sys.stderr,
        )
        return 130
    finally:
        if cluster is not None and not (args.keep or shared):
            tear_down(cluster, out / "diagnostics")
    print(json.dumps(doc, separators=(",", ":")))
    return 0 if doc["lost"] == 0 and doc["deposed_acks"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
