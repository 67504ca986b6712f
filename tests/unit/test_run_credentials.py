"""`rocketmq-operator run` without usable Kubernetes credentials: one line on stderr and exit 2, before kopf starts.

Before, kopf started anyway, its startup handler failed with a traceback and retried every 60 s (rc 0 on SIGTERM).
No cluster is needed: every case is a kubeconfig (or its absence) in a temporary directory.
"""

from __future__ import annotations

import argparse
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.platforms.kubernetes import kube, runner

CONTEXT = "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
USER = "users: [{name: u, user: {token: t}}]\n"

# (case, kubeconfig text or None for "no KUBECONFIG, no ~/.kube/config", words the one line must contain)
CASES: list[tuple[str, str | None, list[str]]] = [
    ("absent", None, ["not in a cluster", "no kubeconfig", "KUBECONFIG", "service account"]),
    ("missing file", "<missing>", ["does not exist", "(from KUBECONFIG)", "fix: set KUBECONFIG"]),
    ("a directory", "<dir>", ["does not exist or is not a file", "fix: set KUBECONFIG"]),
    ("not YAML", "clusters: {{{\n", ["is not valid YAML", "fix: repair it"]),
    ("not a mapping", "- just\n- a list\n", ["is not a kubeconfig", "fix: repair it"]),
    ("no current-context", "apiVersion: v1\nkind: Config\n", ["sets no current-context", "fix:"]),
    ("undefined context", "current-context: nowhere\ncontexts: []\n", ["refers to 'nowhere'", "fix:"]),
    ("unnamed entry", "current-context: c\ncontexts: [{context: {}}]\n", ["without a name", "fix:"]),
    (
        "no server",
        CONTEXT + "clusters: [{name: k, cluster: {}}]\n" + USER,
        ["cluster has no server", "fix:"],
    ),
    (
        "bad certificate authority",
        CONTEXT + 'clusters: [{name: k, cluster: {server: "https://x", certificate-authority-data: "bm90"}}]\n' + USER,
        ["certificates of kubeconfig", "cannot be loaded", "fix: check certificate-authority"],
    ),
]

GOOD = CONTEXT + 'clusters: [{name: k, cluster: {server: "https://127.0.0.1:1"}}]\n' + USER


def _args() -> argparse.Namespace:
    return argparse.Namespace(verbose=False, namespace=[], metrics_port=0, liveness=None, standalone=True)


def _environment(tmp_path: Path, text: str | None, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """Point HOME and KUBECONFIG at tmp_path (and away from any real service account); the KUBECONFIG value."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    # raising=False: the test must fail on its assertions, not on the constant, where it is absent
    monkeypatch.setattr(kube, "SERVICE_ACCOUNT_TOKEN", str(tmp_path / "no-service-account" / "token"), raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # not in a pod, even when the tests run in one
    if text is None:
        monkeypatch.delenv("KUBECONFIG", raising=False)
        return None
    if text == "<missing>":
        path = tmp_path / "nonexistent"
    elif text == "<dir>":
        path = tmp_path / "a-dir"
        path.mkdir()
    else:
        path = tmp_path / "kubeconfig"
        path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("KUBECONFIG", str(path))
    return str(path)


@pytest.mark.parametrize(("case", "text", "words"), CASES, ids=[c[0] for c in CASES])
def test_run_without_credentials_is_one_line_and_exit_2(
    case: str,
    text: str | None,
    words: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _environment(tmp_path, text, monkeypatch)

    def kopf_must_not_start(**_: Any) -> None:
        raise AssertionError("kopf.run was called without usable credentials")

    monkeypatch.setattr(runner.kopf, "run", kopf_must_not_start)
    assert runner.run_operator(_args()) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("error: rocketmq-operator run: "), line
    assert "Traceback" not in line
    if path is not None:
        assert path in line, line
    for word in words:
        assert word in line, (word, line)


def test_run_with_a_usable_kubeconfig_starts_kopf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _environment(tmp_path, GOOD, monkeypatch)
    started: list[dict[str, Any]] = []
    checked: list[bool] = []
    monkeypatch.setattr(runner, "check_api_server", lambda: checked.append(True))  # GOOD's server is not there
    monkeypatch.setattr(runner.kopf, "run", lambda **kwargs: started.append(kwargs))
    monkeypatch.setattr(runner.logging, "basicConfig", lambda **_: None)
    assert runner.run_operator(_args()) == 0
    assert checked == [True] and len(started) == 1 and started[0]["standalone"] is True


def test_console_script_api_server_unreachable_exits_2_with_one_line(tmp_path: Path) -> None:
    """Before, `run` with a kubeconfig whose server nothing listens on started kopf anyway: a ~110-line traceback
    from its startup handler, retried every 60 s. Now one line naming the server and the error, and exit 2."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(GOOD, encoding="utf-8")  # https://127.0.0.1:1: a port nothing listens on
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    proc = subprocess.run(
        [sys.executable, "-m", "rocketmq_operator.cli", "run", "--standalone"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # a safety net only: with the defect the operator never exits
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(
        "error: rocketmq-operator run: cannot reach the API server at https://127.0.0.1:1 (Connection refused); fix:"
    ), proc.stderr


class _VersionHandler(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        body = b'{"major": "1", "minor": "31", "gitVersion": "v1.31.0"}' if self.status == 200 else b"{}"
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (401, ["the API server at http://127.0.0.1:", "refused the credentials (HTTP 401", "fix: renew"]),
        (404, ["is not a Kubernetes API server (GET /version: HTTP 404", "fix: check the cluster"]),
        (200, []),
        (403, []),  # answered: the server is there, and kopf says what it refuses
    ],
)
def test_run_asks_the_api_server_once_before_kopf_starts(
    status: int,
    words: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    handler = type("Handler", (_VersionHandler,), {"status": status})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        address = f"http://127.0.0.1:{server.server_address[1]}"
        _environment(tmp_path, GOOD.replace("https://127.0.0.1:1", address), monkeypatch)
        started: list[dict[str, Any]] = []
        monkeypatch.setattr(runner.kopf, "run", lambda **kwargs: started.append(kwargs))
        monkeypatch.setattr(runner.logging, "basicConfig", lambda **_: None)
        code = runner.run_operator(_args())
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err
    if not words:
        assert code == 0 and len(started) == 1 and err == ""
        return
    assert code == 2 and started == [], err
    assert err.count("\n") == 1 and err.startswith("error: rocketmq-operator run: "), err
    for word in words:
        assert word in err, (word, err)


def test_login_handler_uses_the_same_look_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _environment(tmp_path, GOOD, monkeypatch)
    info = kube.connection_info()
    assert info.server == "https://127.0.0.1:1" and info.token == "t"


def test_console_script_kubeconfig_missing_exits_2_at_once(tmp_path: Path) -> None:
    # Without KUBERNETES_SERVICE_HOST the look-up is never in-cluster, even when the tests run in a pod.
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "nonexistent"), "HOME": str(tmp_path)}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    proc = subprocess.run(
        [sys.executable, "-m", "rocketmq_operator.cli", "run", "--standalone"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert str(tmp_path / "nonexistent") in proc.stderr and "fix:" in proc.stderr


def test_the_client_loads_the_kubeconfig_the_look_up_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _environment(tmp_path, GOOD, monkeypatch)
    configuration = kube.official_configuration()
    assert configuration.host == "https://127.0.0.1:1"
    assert configuration.auth_settings()["BearerToken"]["value"] == "Bearer t"


def test_in_a_pod_the_client_uses_the_service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _environment(tmp_path, GOOD, monkeypatch)  # a kubeconfig too: the service account comes first
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("pod-token", encoding="utf-8")
    (account / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n", encoding="utf-8")
    monkeypatch.setattr(kube, "SERVICE_ACCOUNT_TOKEN", str(account / "token"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    assert kube.in_cluster()
    configuration = kube.official_configuration()
    assert configuration.host == "https://10.96.0.1:443"
    assert configuration.auth_settings()["BearerToken"]["value"].lower() == "bearer pod-token"
    assert configuration.ssl_ca_cert == str(account / "ca.crt")


def test_a_token_without_the_service_address_is_not_a_pod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _environment(tmp_path, GOOD, monkeypatch)
    token = tmp_path / "token"
    token.write_text("x", encoding="utf-8")
    monkeypatch.setattr(kube, "SERVICE_ACCOUNT_TOKEN", str(token))
    assert not kube.in_cluster()  # as the official client decides: it would not load the service account either
