"""`rocketmq-operator agent`: the lease agent next to one broker (`control.lease_agent`), until SIGTERM or Ctrl-C.

Contract: `register(sub)` adds the subcommand. It runs in every controller-mode broker pod as the `lease-agent`
container (`render.kubernetes.broker_group`), on the pod's loopback. ``--credentials-file``: a properties file
with the broker's `innerClientAuthenticationCredentials` (the Secret a group with auth mounts), signing every
request as the group's admin; ``--tls-ca``: the authority to trust when the group speaks TLS (the address's name
is not checked: loopback and pod IPs are not in the certificate). A missing or unreadable file is one `error:`
line and exit 2. Logs one line per change of the lease's verdict on stderr; exit 0 on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from rocketmq_operator.control.lease_agent import LeaseAgent
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.remoting.broker import parse_java_properties
from rocketmq_operator.remoting.tls import ClientTls

EXIT_USAGE = 2


def register(sub: Any) -> None:
    p = sub.add_parser(
        "agent",
        help="hold one broker's mastership as a lease: fence it when no controller confirms it (runs in its pod)",
    )
    p.add_argument("--broker", default="127.0.0.1:10911", metavar="HOST:PORT", help="the broker to watch")
    p.add_argument("--credentials-file", type=Path, help="properties file with innerClientAuthenticationCredentials")
    p.add_argument("--tls-ca", type=Path, help="PEM authority to trust (the group speaks TLS)")
    p.add_argument("--tls-cert", type=Path, help="PEM certificate to present (the group requires client certificates)")
    p.add_argument("--tls-key", type=Path, help="the key of --tls-cert")
    p.set_defaults(func=cmd_agent)


def read_credentials(path: Path) -> SessionCredentials:
    """The admin's credentials from the broker's auth properties (`render.config.auth_secret_keys`)."""
    text = path.read_text(encoding="utf-8")
    raw = parse_java_properties(text).get("innerClientAuthenticationCredentials")
    if raw is None:
        raise ValueError("it has no innerClientAuthenticationCredentials key")
    value = json.loads(raw)
    return SessionCredentials(access_key=str(value["accessKey"]), secret_key=str(value["secretKey"]))


def cmd_agent(args: argparse.Namespace) -> int:
    credentials = None
    if args.credentials_file is not None:
        try:
            credentials = read_credentials(args.credentials_file)
        except (OSError, ValueError, KeyError) as exc:
            print(
                f"error: --credentials-file {args.credentials_file}: cannot be read ({exc}); fix: mount the group's "
                "auth Secret there",
                file=sys.stderr,
            )
            return EXIT_USAGE
    if args.tls_ca is not None and not args.tls_ca.is_file():
        print(f"error: --tls-ca {args.tls_ca}: no such file; fix: mount the group's TLS Secret there", file=sys.stderr)
        return EXIT_USAGE
    cert, key = (str(args.tls_cert), str(args.tls_key)) if args.tls_cert and args.tls_key else (None, None)
    tls = (
        ClientTls(ca_file=str(args.tls_ca), check_hostname=False, cert_file=cert, key_file=key)
        if args.tls_ca is not None
        else None
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    asyncio.run(_run(args.broker, credentials, tls))
    return 0


async def _run(broker: str, credentials: SessionCredentials | None, tls: ClientTls | None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with RemotingClient(connect_timeout=0.5, request_timeout=0.5, credentials=credentials, tls=tls) as client:
        logging.getLogger("rocketmq_operator.lease_agent").info("lease agent for the broker at %s", broker)
        await LeaseAgent(client, broker).run(stop)
