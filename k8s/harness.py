#!/usr/bin/env python3
"""A real, local Kubernetes control plane for tests: etcd + kube-apiserver + kube-controller-manager.

Python 3.11 stdlib only; certificates come from the ``openssl`` CLI. The binaries are built from the
Go module proxy by ``k8s/tools/build.py`` (see mk/k8s.mk). There is no kubelet: pods stay Pending.

    harness.py up   [--state-dir .k8s] [--port 0] [--no-build]
    harness.py down [--state-dir .k8s]
    harness.py status [--state-dir .k8s]
    harness.py env  [--state-dir .k8s]        # shell exports for KUBECONFIG and PATH

State dir layout: ``kubeconfig`` (cluster-admin), ``bin/kubectl``, ``bin/helm``, ``pki/``, ``etcd-data/``,
``logs/<component>.log``, ``<component>.pid``, ``cluster.json``. ``up`` is idempotent: a healthy
running cluster is reused; stale state from a killed run (dead pids, leftover data) is cleaned first.
Every process started here carries the state dir in its command line, which lets ``down`` find
strays of a previous run even when the pid files are gone.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager")  # start order; stop in reverse
SERVICE_CIDR = "10.0.0.0/24"
SERVICE_IP = "10.0.0.1"
ADMIN_USER = "rocketmq-operator-admin"


def _load_build() -> object:
    spec = importlib.util.spec_from_file_location("rocketmq_operator_k8s_build", HERE / "tools" / "build.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


build_tools = _load_build()


class HarnessError(RuntimeError):
    pass


@dataclass
class Cluster:
    state_dir: str
    bin_dir: str
    kubernetes_version: str
    api_port: int
    etcd_port: int
    etcd_peer_port: int
    kcm_port: int
    server: str
    pids: dict[str, int]

    @property
    def kubeconfig(self) -> Path:
        return Path(self.state_dir) / "kubeconfig"

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        return cluster_env(Path(self.state_dir), base)


def cluster_env(state: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["KUBECONFIG"] = str(state / "kubeconfig")
    env["PATH"] = f"{state / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    # Keep kubectl's discovery cache and helm's dirs out of the user's home.
    env["KUBECACHEDIR"] = str(state / "cache" / "kube")
    for name in ("CACHE", "CONFIG", "DATA"):
        env[f"HELM_{name}_HOME"] = str(state / "helm" / name.lower())
    return env


# ---------------------------------------------------------------- processes


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [p.decode(errors="replace") for p in raw.split(b"\0") if p]


def _is_ours(pid: int, state: Path) -> bool:
    """True if pid is alive and was started by this harness for this state dir."""
    if pid <= 0:
        return False
    child = _CHILDREN.get(pid)
    if child is not None:
        return child.poll() is None
    for _ in range(20):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":  # zombie: already dead
            return False
        args = _cmdline(pid)
        if args:  # empty while an exec is in progress
            return _names_state(args, state)
        time.sleep(0.05)
    return False


def _names_state(args: list[str], state: Path) -> bool:
    prefix = f"{state}{os.sep}"
    return any(prefix in arg or arg == str(state) or arg.endswith(f"={state}") for arg in args)


def _strays(state: Path) -> list[int]:
    """Processes whose command line names this state dir (from a run whose pid files were lost)."""
    found = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != me:
            args = _cmdline(int(entry.name))
            if args and Path(args[0]).name in COMPONENTS and _names_state(args, state):
                found.append(int(entry.name))
    return found


def _stop_pid(pid: int, state: Path, timeout: float = 15.0) -> None:
    if not _is_ours(pid, state):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if not _is_ours(pid, state):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    for _ in range(50):
        _reap(pid)
        if not _is_ours(pid, state):
            return
        time.sleep(0.1)


def _reap(pid: int) -> None:
    child = _CHILDREN.get(pid)
    if child is not None:
        child.poll()
        return
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _read_pid(state: Path, name: str) -> int:
    try:
        return int((state / f"{name}.pid").read_text().strip())
    except (OSError, ValueError):
        return 0


def _stop_all(state: Path) -> None:
    for name in reversed(COMPONENTS):
        _stop_pid(_read_pid(state, name), state)
    watchdog = _read_pid(state, "watchdog")
    if watchdog and watchdog != os.getpid() and _is_ours(watchdog, state):
        with contextlib.suppress(ProcessLookupError):
            os.kill(watchdog, signal.SIGTERM)
    for pid in _strays(state):
        _stop_pid(pid, state)


# Processes started by this interpreter. Right after exec, /proc/<pid>/cmdline can still read empty, so
# liveness of our own children is judged by Popen.poll(), never by the command line.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def _spawn(state: Path, name: str, argv: list[str]) -> int:
    log = (state / "logs" / f"{name}.log").open("ab")
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=state,
        start_new_session=True,  # survives `harness.py up` exiting and the terminal's Ctrl-C
        close_fds=True,
    )
    log.close()
    (state / f"{name}.pid").write_text(f"{proc.pid}\n")
    _CHILDREN[proc.pid] = proc
    return proc.pid


@contextlib.contextmanager
def _locked(state: Path) -> Iterator[None]:
    """Serialise up/down per state dir. The lock lives outside the state dir, which `down` deletes."""
    locks = build_tools.cache_root() / "k8s" / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(str(state).encode()).hexdigest()[:16]
    with (locks / f"{name}.lock").open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# ---------------------------------------------------------------- ports, certs, config


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _openssl(*args: str, cwd: Path) -> None:
    res = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if res.returncode != 0:
        raise HarnessError(f"openssl {' '.join(args)} failed: {res.stderr.strip()}")


def _make_pki(pki: Path, extra_sans: tuple[str, ...] = (), extra_certs: dict[str, str] | None = None) -> None:
    """CA, apiserver serving cert, admin and controller-manager client certs, service-account keys.

    ``extra_sans`` go into the apiserver's certificate; ``extra_certs`` maps more client cert names to
    subjects (the node's components, k8s/node.py)."""
    if not shutil.which("openssl"):
        raise HarnessError("the openssl CLI is required to generate certificates (apt-get install openssl)")
    pki.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
        "-subj", "/CN=rocketmq-operator-test-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
        cwd=pki,
    )  # fmt: skip
    sans = ",".join(
        [
            "IP:127.0.0.1",
            f"IP:{SERVICE_IP}",
            "DNS:localhost",
            "DNS:kubernetes",
            "DNS:kubernetes.default",
            "DNS:kubernetes.default.svc",
            "DNS:kubernetes.default.svc.cluster.local",
            *extra_sans,
        ]
    )
    certs = {
        "apiserver": ("/CN=kube-apiserver", "serverAuth", sans),
        "admin": (f"/O=system:masters/CN={ADMIN_USER}", "clientAuth", ""),
        "controller-manager": ("/CN=system:kube-controller-manager", "clientAuth", ""),
        **{name: (subject, "clientAuth", "") for name, subject in (extra_certs or {}).items()},
    }
    for name, (subject, usage, san) in certs.items():
        _openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=pki)
        # SEC1 ("EC PRIVATE KEY"), not openssl's PKCS#8: the fabric8 client of Java tools (spark-submit --master
        # k8s://) reads an EC key from a kubeconfig only in this form ("Invalid DER: object is not integer");
        # Go and Python read both.
        _openssl("ec", "-in", f"{name}.key", "-out", f"{name}.sec1.key", cwd=pki)
        (pki / f"{name}.sec1.key").replace(pki / f"{name}.key")
        ext = [
            "basicConstraints=critical,CA:FALSE",
            "keyUsage=critical,digitalSignature,keyEncipherment",
            f"extendedKeyUsage={usage}",
        ]
        if san:
            ext.append(f"subjectAltName={san}")
        (pki / f"{name}.ext").write_text("\n".join(ext) + "\n")
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.crt", "-days", "3650", "-sha256", "-extfile", f"{name}.ext",
            cwd=pki,
        )  # fmt: skip
    _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key", cwd=pki)
    _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)
    for key in pki.glob("*.key"):
        key.chmod(0o600)


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _write_kubeconfig(path: Path, server: str, pki: Path, user: str, cert: str) -> None:
    # JSON is valid YAML; kubectl and kubernetes clients accept it. Certs are embedded: self-contained.
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "rocketmq-operator-test",
                "cluster": {"server": server, "certificate-authority-data": _b64(pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": _b64(pki / f"{cert}.crt"),
                    "client-key-data": _b64(pki / f"{cert}.key"),
                },
            }
        ],
        "contexts": [
            {"name": "rocketmq-operator-test", "context": {"cluster": "rocketmq-operator-test", "user": user}}
        ],
        "current-context": "rocketmq-operator-test",
        "preferences": {},
    }
    path.write_text(json.dumps(cfg, indent=2) + "\n")
    path.chmod(0o600)


# ---------------------------------------------------------------- health


def _https_get(url: str, pki: Path, cert: str | None = "admin", timeout: float = 5.0) -> tuple[int, str]:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    if cert:
        ctx.load_cert_chain(str(pki / f"{cert}.crt"), str(pki / f"{cert}.key"))
    else:  # controller-manager serves a self-signed cert
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=timeout) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def _wait(what: str, check, timeout: float, state: Path, component: str | None) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if component and not _is_ours(_read_pid(state, component), state):
            raise HarnessError(f"{component} exited while waiting for {what}; see {_log_tail(state, component)}")
        try:
            ok, last = check()
            if ok:
                return
        except (OSError, ssl.SSLError) as exc:
            last = str(exc)
        time.sleep(0.25)
    raise HarnessError(
        f"timed out after {timeout:.0f}s waiting for {what} (last: {last[:300]}); {_log_tail(state, component)}"
    )


def _log_tail(state: Path, component: str | None, lines: int = 15) -> str:
    if not component:
        return ""
    log = state / "logs" / f"{component}.log"
    try:
        tail = log.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return f"no log at {log}"
    return f"log {log}:\n" + "\n".join(tail)


def _healthy(cluster: Cluster) -> bool:
    state = Path(cluster.state_dir)
    if not all(_is_ours(_read_pid(state, c), state) for c in COMPONENTS):
        return False
    try:
        status, _ = _https_get(f"{cluster.server}/readyz", state / "pki", timeout=3)
    except (OSError, ssl.SSLError):
        return False
    return status == 200


def load(state_dir: Path) -> Cluster | None:
    try:
        return Cluster(**json.loads((state_dir / "cluster.json").read_text()))
    except (OSError, ValueError, TypeError):
        return None


# ---------------------------------------------------------------- up / down


def up(
    state_dir: Path,
    *,
    port: int = 0,
    build: bool = True,
    bin_dir: Path | None = None,
    timeout: float = 180.0,
    quiet: bool = False,
    address: str = "127.0.0.1",
    apiserver_flags: tuple[str, ...] = (),
    extra_certs: dict[str, str] | None = None,
) -> Cluster:
    """Start (or reuse) the control plane. The node (k8s/node.py) passes ``address`` (its node IP, which
    pods can reach), more apiserver flags (replacing flags of the same name) and more client certs."""
    state = state_dir.resolve()
    say = (lambda *_: None) if quiet else (lambda msg: print(msg, flush=True))
    if bin_dir is None:
        bin_dir = build_tools.build(quiet=True, only=build_tools.CONTROL_PLANE) if build else build_tools.bin_dir()
    missing = [
        b for b in ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl") if not (bin_dir / b).is_file()
    ]
    if missing:
        raise HarnessError(f"missing binaries in {bin_dir}: {', '.join(missing)} (run `make k8s-tools`)")
    with _locked(state):
        state.mkdir(parents=True, exist_ok=True)
        existing = load(state)
        if existing and _healthy(existing) and (port in (0, existing.api_port)):
            say(f"already up: {existing.server} (kubeconfig {existing.kubeconfig})")
            return existing
        # Stale or partial state (killed run, crashed component): clean everything but the lock.
        _stop_all(state)
        for child in state.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        try:
            return _start(state, bin_dir, port, timeout, say, address, apiserver_flags, extra_certs)
        except BaseException:
            _stop_all(state)
            raise


def _start(  # type: ignore[no-untyped-def]
    state: Path,
    bin_dir: Path,
    port: int,
    timeout: float,
    say,
    address: str = "127.0.0.1",
    apiserver_flags: tuple[str, ...] = (),
    extra_certs: dict[str, str] | None = None,
) -> Cluster:
    (state / ".gitignore").write_text("*\n")
    for d in ("logs", "bin", "etcd-data"):
        (state / d).mkdir(parents=True, exist_ok=True)
    (state / "etcd-data").chmod(0o700)
    pki = state / "pki"
    _make_pki(pki, () if address == "127.0.0.1" else (f"IP:{address}",), extra_certs)
    versions = build_tools.Versions.load()

    if port and not _port_free(port):
        raise HarnessError(f"port {port} on 127.0.0.1 is in use")
    api_port = port or _free_port()
    etcd_port, etcd_peer, kcm_port = _free_port(), _free_port(), _free_port()
    while len({api_port, etcd_port, etcd_peer, kcm_port}) < 4:
        etcd_port, etcd_peer, kcm_port = _free_port(), _free_port(), _free_port()
    server = f"https://{address}:{api_port}"
    etcd_url = f"http://127.0.0.1:{etcd_port}"

    say(f"starting etcd {versions.etcd} on {etcd_url}")
    _spawn(
        state,
        "etcd",
        [
            str(bin_dir / "etcd"),
            "--name=default",
            f"--data-dir={state / 'etcd-data'}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-cluster=default=http://127.0.0.1:{etcd_peer}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ],
    )

    def etcd_ok() -> tuple[bool, str]:
        with urllib.request.urlopen(f"{etcd_url}/health", timeout=3) as resp:
            body = resp.read().decode()
        return '"health":"true"' in body.replace(" ", ""), body

    _wait("etcd /health", etcd_ok, 30, state, "etcd")

    say(f"starting kube-apiserver {versions.kubernetes} on {server}")
    _spawn(
        state,
        "kube-apiserver",
        _merge_flags([
            str(bin_dir / "kube-apiserver"),
            f"--etcd-servers={etcd_url}",
            f"--bind-address={address}",
            f"--advertise-address={address}",
            # Since 1.37 a loopback advertise address is refused by the endpoint reconciler, and there
            # are no pods that could use the `kubernetes` Service endpoints anyway.
            "--endpoint-reconciler-type=none",
            f"--secure-port={api_port}",
            f"--cert-dir={pki}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            "--authorization-mode=RBAC",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--allow-privileged=true",
            "--profiling=false",
            "--v=1",
        ], apiserver_flags),
    )  # fmt: skip
    pki_ = pki

    def api_ok() -> tuple[bool, str]:
        status, body = _https_get(f"{server}/readyz", pki_)
        return status == 200, body

    _wait("kube-apiserver /readyz", api_ok, timeout, state, "kube-apiserver")

    _write_kubeconfig(state / "kubeconfig", server, pki, ADMIN_USER, "admin")
    kcm_kubeconfig = state / "controller-manager.kubeconfig"
    _write_kubeconfig(kcm_kubeconfig, server, pki, "system:kube-controller-manager", "controller-manager")

    say("starting kube-controller-manager")
    _spawn(
        state,
        "kube-controller-manager",
        [
            str(bin_dir / "kube-controller-manager"),
            f"--kubeconfig={kcm_kubeconfig}",
            f"--authentication-kubeconfig={kcm_kubeconfig}",
            f"--authorization-kubeconfig={kcm_kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={kcm_port}",
            f"--cert-dir={state / 'kcm-certs'}",
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}",
            f"--cluster-signing-key-file={pki / 'ca.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--v=1",
        ],
    )

    def kcm_ok() -> tuple[bool, str]:
        status, body = _https_get(f"https://127.0.0.1:{kcm_port}/healthz", pki_, cert=None)
        return status == 200, body

    _wait("kube-controller-manager /healthz", kcm_ok, timeout, state, "kube-controller-manager")

    def default_sa() -> tuple[bool, str]:
        status, body = _https_get(f"{server}/api/v1/namespaces/default/serviceaccounts/default", pki_)
        return status == 200, body

    # The ServiceAccount admission plugin rejects pods until the controller has created `default`.
    _wait("the default ServiceAccount", default_sa, 60, state, "kube-controller-manager")

    for tool in ("kubectl", "helm"):
        src, dst = bin_dir / tool, state / "bin" / tool
        if src.is_file():
            try:
                dst.symlink_to(src)
            except OSError:
                shutil.copy2(src, dst)

    cluster = Cluster(
        state_dir=str(state),
        bin_dir=str(bin_dir),
        kubernetes_version=versions.kubernetes,
        api_port=api_port,
        etcd_port=etcd_port,
        etcd_peer_port=etcd_peer,
        kcm_port=kcm_port,
        server=server,
        pids={c: _read_pid(state, c) for c in COMPONENTS},
    )
    (state / "cluster.json").write_text(json.dumps(asdict(cluster), indent=2) + "\n")
    say(f"up: {server}\n  export KUBECONFIG={state / 'kubeconfig'} PATH={state / 'bin'}:$PATH")
    return cluster


def _merge_flags(argv: list[str], extra: tuple[str, ...]) -> list[str]:
    """``argv`` + ``extra``; a ``--name=value`` in ``extra`` replaces the same flag in ``argv``."""
    names = {f.split("=", 1)[0] for f in extra}
    return [a for a in argv if a.split("=", 1)[0] not in names] + list(extra)


def down(state_dir: Path, *, quiet: bool = False) -> None:
    state = state_dir.resolve()
    with _locked(state):
        existed = state.exists()
        _stop_all(state)  # also finds strays when the state dir was deleted under running processes
        shutil.rmtree(state, ignore_errors=True)
    if not quiet:
        print(f"stopped and removed {state}" if existed else f"nothing to remove: {state} does not exist")


def watch(state_dir: Path, parent: int, interval: float = 1.0) -> None:
    """Tear the cluster down once `parent` is gone (used by the pytest fixture against leaks)."""
    state = state_dir.resolve()
    (state / "watchdog.pid").write_text(f"{os.getpid()}\n")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            break
        except PermissionError:
            pass
        if not state.exists():
            return
        time.sleep(interval)
    down(state, quiet=True)


def status(state_dir: Path) -> int:
    state = state_dir.resolve()
    cluster = load(state)
    if cluster is None:
        print(f"not running (no {state / 'cluster.json'})")
        return 1
    for c in COMPONENTS:
        pid = _read_pid(state, c)
        print(f"{c:26} pid {pid:<8} {'running' if _is_ours(pid, state) else 'NOT RUNNING'}")
    ok = _healthy(cluster)
    print(f"{cluster.server} readyz: {'ok' if ok else 'NOT READY'}; KUBECONFIG={cluster.kubeconfig}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=("up", "down", "status", "env", "watch"))
    ap.add_argument("--state-dir", type=Path, default=Path(".k8s"))
    ap.add_argument("--port", type=int, default=0, help="kube-apiserver secure port (0: a free one)")
    ap.add_argument("--no-build", action="store_true", help="use the built binaries, never build")
    ap.add_argument("--bin-dir", type=Path, default=None)
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--parent", type=int, default=0, help="watch: the pid whose exit triggers `down`")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "up":
            up(
                args.state_dir,
                port=args.port,
                build=not args.no_build,
                bin_dir=args.bin_dir,
                timeout=args.timeout,
            )
        elif args.cmd == "down":
            down(args.state_dir)
        elif args.cmd == "status":
            return status(args.state_dir)
        elif args.cmd == "env":
            env = cluster_env(args.state_dir.resolve(), {})
            for key in ("KUBECONFIG", "KUBECACHEDIR"):
                print(f"export {key}={env[key]}")
            print(f"export PATH={args.state_dir.resolve() / 'bin'}:$PATH")
        elif args.cmd == "watch":
            watch(args.state_dir, args.parent)
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
