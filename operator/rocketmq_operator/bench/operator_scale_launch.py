"""The operator process of `bench operator-scale`: `rocketmq-operator run --standalone -n NAMESPACE`, unchanged,
with the cluster DNS simulated.

    python -m rocketmq_operator.bench.operator_scale_launch --hosts HOSTS.json --namespace NS

Contract: ``HOSTS.json`` maps host names to IPv4 addresses (the pod DNS names of the simulated controllers and
name servers, `<cg>-<i>.<cg>-headless.<ns>.svc`, to their 127.76.0.x addresses), as a cluster's DNS answers a
headless Service's pod names with the pods' IPs. `socket.getaddrinfo` answers those names, and only those, with
their address; every other name is resolved as before. The process's open-file limit is raised to its hard
limit (one connection per simulated broker). Then the operator runs as `rocketmq-operator run` runs it
(`platforms.kubernetes.runner.run_operator`): no metrics port, no liveness endpoint (nothing listens beyond
loopback), credentials from KUBECONFIG.
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def install_hosts(hosts: Mapping[str, str]) -> Callable[..., Any]:
    """Make `socket.getaddrinfo` answer the names of ``hosts`` with their address; returns the original."""
    original: Callable[..., Any] = socket.getaddrinfo
    table = {name.rstrip(".").lower(): address for name, address in hosts.items()}

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, bytes):
            host = host.decode("ascii", errors="replace")
        if isinstance(host, str):
            host = table.get(host.rstrip(".").lower(), host)
        return original(host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo
    return original


def raise_open_files() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="operator_scale_launch")
    parser.add_argument("--hosts", required=True, type=Path)
    parser.add_argument("--namespace", required=True)
    args = parser.parse_args(argv)
    hosts = json.loads(args.hosts.read_text(encoding="utf-8"))
    if not isinstance(hosts, dict) or not all(isinstance(v, str) for v in hosts.values()):
        print(f"error: {args.hosts}: expected a JSON object of host name -> IPv4 address", file=sys.stderr)
        return 2
    raise_open_files()
    install_hosts(hosts)
    from rocketmq_operator.platforms.kubernetes.runner import run_operator

    run_args = argparse.Namespace(
        namespace=[args.namespace], liveness=None, metrics_port=None, standalone=True, verbose=False
    )
    return run_operator(run_args)


if __name__ == "__main__":
    raise SystemExit(main())
