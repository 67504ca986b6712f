"""`rocketmq-operator run`: start kopf with our registry and the CLI's namespace/liveness options.

Credentials are checked before kopf starts: without them kopf's startup handler would fail with a traceback
and retry every minute; `run` instead prints one line (what is missing, the fix) and exits 2.
"""

from __future__ import annotations

import argparse
import logging
import sys

import kopf

from rocketmq_operator.platforms.kubernetes.handlers import build_registry
from rocketmq_operator.platforms.kubernetes.kube import CredentialsError, check_credentials

EXIT_NO_CREDENTIALS = 2


def run_operator(args: argparse.Namespace) -> int:
    try:
        check_credentials()
    except CredentialsError as exc:
        print(f"error: rocketmq-operator run: {exc}", file=sys.stderr)
        return EXIT_NO_CREDENTIALS
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
