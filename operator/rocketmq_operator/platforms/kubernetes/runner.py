"""`rocketmq-operator run`: start kopf with our registry and the CLI's namespace/liveness options.

Credentials are checked before kopf starts: without them kopf's startup handler would fail with a traceback
and retry every minute; `run` instead prints one line (what is missing, the fix) and exits 2. So is the API
server, once (GET /version, the cheapest request every server answers): unreachable, refusing the
credentials (HTTP 401) or not an API server (404) is one line naming the server and the error, and exit 2.
Once kopf runs, an API server that goes away is kopf's to retry.
"""

from __future__ import annotations

import argparse
import logging
import ssl
import sys
import warnings
from collections.abc import Callable
from typing import Any

import kopf

from rocketmq_operator.platforms.kubernetes.handlers import build_registry
from rocketmq_operator.platforms.kubernetes.kube import CredentialsError, check_credentials, official_configuration

EXIT_NO_CREDENTIALS = 2
EXIT_NO_API_SERVER = 2
API_CHECK_TIMEOUT_S = (10.0, 30.0)  # (connect, read), as the operator's own requests allow
API_SERVER_FIX = (
    "fix: check the cluster is up and reachable from here (kubectl version), and that the kubeconfig's current "
    "context (or KUBECONFIG) names the right one"
)


class ApiServerError(RuntimeError):
    """The API server cannot be reached (or refuses the credentials); the message is one line."""


def _reason(exc: BaseException) -> str:
    """The innermost cause of a failed request in a few words ("Connection refused", "timed out", ...)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    found: BaseException = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = current
        # urllib3 keeps the cause in .reason (MaxRetryError) or as __cause__ / __context__
        reason = getattr(current, "reason", None)
        current = reason if isinstance(reason, BaseException) else current.__cause__ or current.__context__
    if isinstance(found, ssl.SSLError):
        return found.reason or str(found)
    if isinstance(found, OSError) and found.strerror:
        return found.strerror
    text = str(found).split(": ")[-1].strip()  # urllib3 prefixes the connection's repr
    return text or type(found).__name__


def check_api_server() -> None:
    """One GET /version with the operator's credentials; ApiServerError when it gets no answer or a 401."""
    import urllib3
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    configuration = official_configuration()
    configuration.retries = False  # one attempt: urllib3's retry warnings would be more lines on stderr
    server = configuration.host
    api = client.ApiClient(configuration)
    get_code: Callable[..., Any] = client.VersionApi(api).get_code  # the client carries no annotations
    try:
        with warnings.catch_warnings():
            # insecure-skip-tls-verify: kopf warns about it once running; here it would be two more lines
            warnings.simplefilter("ignore", urllib3.exceptions.InsecureRequestWarning)
            # Not deserialized: whether the server answers is the question, not what its version is.
            get_code(_request_timeout=API_CHECK_TIMEOUT_S, _preload_content=False).release_conn()
    except ApiException as exc:
        if exc.status == 401:
            raise ApiServerError(
                f"the API server at {server} refused the credentials (HTTP 401 {exc.reason or 'Unauthorized'}); "
                "fix: renew the kubeconfig's token or certificate, or use another context"
            ) from None
        if exc.status == 404:  # every Kubernetes API server serves /version: something else answered
            raise ApiServerError(
                f"{server} is not a Kubernetes API server (GET /version: HTTP 404 {exc.reason or 'Not Found'}); "
                f"{API_SERVER_FIX}"
            ) from None
        # Any other answer: the server is there; kopf reports what it refuses.
    except (urllib3.exceptions.HTTPError, OSError) as exc:  # no answer: refused, timed out, TLS, DNS
        raise ApiServerError(f"cannot reach the API server at {server} ({_reason(exc)}); {API_SERVER_FIX}") from None
    finally:
        close: Callable[[], None] = api.close
        close()


def run_operator(args: argparse.Namespace) -> int:
    try:
        check_credentials()
    except CredentialsError as exc:
        print(f"error: rocketmq-operator run: {exc}", file=sys.stderr)
        return EXIT_NO_CREDENTIALS
    try:
        check_api_server()
    except (ApiServerError, CredentialsError) as exc:
        print(f"error: rocketmq-operator run: {exc}", file=sys.stderr)
        return EXIT_NO_API_SERVER
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
