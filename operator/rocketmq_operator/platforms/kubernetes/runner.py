"""`rocketmq-operator run`: start kopf with our registry and the CLI's namespace/liveness options."""

from __future__ import annotations

import argparse
import logging

import kopf

from rocketmq_operator.platforms.kubernetes.handlers import build_registry


def run_operator(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    namespaces = list(args.namespace or [])
    kopf.run(
        registry=build_registry(args.metrics_port or None),
        clusterwide=not namespaces,
        namespaces=namespaces,
        liveness_endpoint=args.liveness or None,
        standalone=args.standalone,
    )
    return 0
