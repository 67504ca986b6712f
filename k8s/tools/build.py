#!/usr/bin/env python3
"""Build pinned Kubernetes test binaries from the Go module proxy (stdlib only).

Binaries: kube-apiserver, kube-controller-manager, kubectl, and for the node kube-scheduler, kubelet and
kube-proxy (k8s.io/kubernetes), etcd (go.etcd.io/etcd/server/v3) from the module in this directory; helm
and CoreDNS from the nested modules ./helm and ./coredns (kept separate so their newer dependencies never
change the Kubernetes build graph); the node's sandbox program from ./pause (our own source, no deps);
kube-router, the multi-node cluster's NetworkPolicy agent, from the nested module ./kube-router. Prometheus's
promtool (the chart's alert tests) is not built: it is taken from Debian's `prometheus` package (`PROMTOOL_DEB`),
19 MB fetched in seconds where its Go build took 253 s of CPU warm and 1,024 s beside the e2e tests of a cold run.

The pins live in go.mod / go.sum (and helm/go.mod / helm/go.sum). Output goes to
``$ROCKETMQ_OPERATOR_CACHE/k8s/<k8s-version>/bin`` (default cache ``~/.cache/rocketmq-operator``).
Every binary has a stamp file holding a hash of everything that went into it, so a warm run is a
few stat calls and an interrupted cold run resumes with the binaries still missing.

Subcommands:
  build        build whatever is missing or stale (default)
  bin-dir      print the output directory
  versions     print the pinned versions
  sync-gomod   regenerate go.mod for another Kubernetes patch/minor (maintainers only), e.g.
               ``build.py sync-gomod v1.37.1`` then ``build.py build``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

TOOLS_DIR = Path(__file__).resolve().parent
HELM_DIR = TOOLS_DIR / "helm"
COREDNS_DIR = TOOLS_DIR / "coredns"
PAUSE_DIR = TOOLS_DIR / "pause"
KUBE_ROUTER_DIR = TOOLS_DIR / "kube-router"
BINARIES = (
    "kube-apiserver",
    "kube-controller-manager",
    "kubectl",
    "etcd",
    "helm",
    "kube-scheduler",
    "kubelet",
    "kube-proxy",
    "coredns",
    "pause",
    "promtool",
    "kube-router",
)
# What the nodes and their e2e tests need: all but promtool, which only the chart's alert tests use (fetched beside
# the e2e tests by `make test`, `make k8s-promtool`).
NODE_BINARIES = tuple(b for b in BINARIES if b != "promtool")
# The binaries a control plane without a node needs (harness.py checks these; the node needs NODE_BINARIES).
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kubectl")

# Kubernetes' own release build (hack/lib/golang.sh) uses these tags for non-debug builds and
# links kube-apiserver/kube-controller-manager/kubectl statically.
KUBE_TAGS = "selinux,notest,grpcnotrace"


def cache_root() -> Path:
    env = os.environ.get("ROCKETMQ_OPERATOR_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "rocketmq-operator"


def _require(gomod: Path, module: str) -> str:
    m = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", gomod.read_text(), re.M)
    if not m:
        raise SystemExit(f"{module} is not required in {gomod}")
    return m.group(1)


@dataclass(frozen=True)
class Versions:
    kubernetes: str
    etcd: str
    helm: str
    coredns: str
    kube_router: str

    @classmethod
    def load(cls) -> Versions:
        return cls(
            kubernetes=_require(TOOLS_DIR / "go.mod", "k8s.io/kubernetes"),
            etcd=_require(TOOLS_DIR / "go.mod", "go.etcd.io/etcd/server/v3"),
            helm=_require(HELM_DIR / "go.mod", "helm.sh/helm/v4"),
            coredns=_require(COREDNS_DIR / "go.mod", "github.com/coredns/coredns"),
            kube_router=_require(KUBE_ROUTER_DIR / "go.mod", "github.com/cloudnativelabs/kube-router/v2"),
        )


def bin_dir(versions: Versions | None = None) -> Path:
    v = versions or Versions.load()
    return cache_root() / "k8s" / v.kubernetes / "bin"


def _proxy() -> str:
    for entry in re.split(r"[,|]", os.environ.get("GOPROXY") or _go_env("GOPROXY")):
        if entry.startswith(("http://", "https://")):
            return entry.rstrip("/")
    return "https://proxy.golang.org"


def _go_env(name: str) -> str:
    return subprocess.run(["go", "env", name], capture_output=True, text=True, check=True).stdout.strip()


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as resp:
        return resp.read()


def _release_time(module: str, version: str) -> str:
    """The tag's commit time from the proxy's .info (deterministic build date)."""
    gomodcache = Path(os.environ.get("GOMODCACHE") or _go_env("GOMODCACHE"))
    info = gomodcache / "cache" / "download" / module / "@v" / f"{version}.info"
    raw = info.read_bytes() if info.exists() else _fetch(f"{_proxy()}/{module}/@v/{version}.info")
    stamp = json.loads(raw)["Time"]
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))


@dataclass(frozen=True)
class Target:
    name: str
    package: str
    module_dir: Path
    tags: str
    ldflags: tuple[str, ...]


def targets(v: Versions, dated: bool = True) -> list[Target]:
    """What to build. ``dated=False`` skips looking up the release date (enough for staleness checks)."""
    major, minor = v.kubernetes.lstrip("v").split(".")[:2]
    build_date = _release_time("k8s.io/kubernetes", v.kubernetes) if dated else ""
    # hack/lib/version.sh stamps both packages. The git commit is not served by the module proxy,
    # so gitCommit/gitTreeState keep their defaults, as upstream does when KUBE_GIT_COMMIT is unset.
    # buildDate is the release tag's time from the proxy, so rebuilds are reproducible.
    kube_ld = []
    for key, val in (
        ("gitVersion", v.kubernetes),
        ("gitMajor", major),
        ("gitMinor", minor),
        ("buildDate", build_date),
    ):
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
            kube_ld.append(f"-X={pkg}.{key}={val}")
    # helm's Makefile stamps internal/version.version; without it `helm version` says "v4.3".
    helm_ld = (f"-X=helm.sh/helm/v4/internal/version.version={v.helm}",)
    # etcd's version is a constant in go.etcd.io/etcd/api/v3/version; only GitSHA stays "Not provided".
    etcd_ld: tuple[str, ...] = ()
    kube = tuple(kube_ld)
    return [
        Target("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", TOOLS_DIR, KUBE_TAGS, kube),
        Target(
            "kube-controller-manager",
            "k8s.io/kubernetes/cmd/kube-controller-manager",
            TOOLS_DIR,
            KUBE_TAGS,
            kube,
        ),
        Target("kubectl", "k8s.io/kubernetes/cmd/kubectl", TOOLS_DIR, KUBE_TAGS, kube),
        Target("etcd", "go.etcd.io/etcd/server/v3", TOOLS_DIR, "", etcd_ld),
        Target("helm", "helm.sh/helm/v4/cmd/helm", HELM_DIR, "", helm_ld),
        # The node (docs/node.md): same module, same tags and stamping. Upstream links kube-scheduler and
        # kube-proxy statically; the kubelet is also built with CGO_ENABLED=0 here (it needs no cgo on Linux).
        Target("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler", TOOLS_DIR, KUBE_TAGS, kube),
        Target("kubelet", "k8s.io/kubernetes/cmd/kubelet", TOOLS_DIR, KUBE_TAGS, kube),
        Target("kube-proxy", "k8s.io/kubernetes/cmd/kube-proxy", TOOLS_DIR, KUBE_TAGS, kube),
        # CoreDNS's server with only the plugins the node's Corefile uses (coredns/main.go); its version is a
        # constant in coremain.
        Target("coredns", "rocketmq-operator.dev/k8s-tools/coredns", COREDNS_DIR, "", ()),
        # Our own sandbox program (pause/main.go), packed into the sandbox image by k8s/node.py.
        Target("pause", "rocketmq-operator.dev/k8s-tools/pause", PAUSE_DIR, "", ()),
        # kube-router's NetworkPolicy controller (iptables + ipset), the multi-node cluster's policy agent.
        Target(
            "kube-router",
            "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router",
            KUBE_ROUTER_DIR,
            "",
            (f"-X=github.com/cloudnativelabs/kube-router/v2/pkg/version.Version={v.kube_router}",),
        ),
    ]


def build_env() -> dict[str, str]:
    env = dict(os.environ)
    flags = env.get("GOFLAGS", "").split()
    flags = [f for f in flags if not f.startswith("-mod=")] + ["-mod=mod"]
    if not any(f.startswith("-buildvcs") for f in flags):
        flags.append("-buildvcs=false")
    env["GOFLAGS"] = " ".join(flags)
    env["CGO_ENABLED"] = "0"
    return env


def _go_version(env: dict[str, str]) -> str:
    return subprocess.run(
        ["go", "env", "GOVERSION"], cwd=TOOLS_DIR, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def _stamp(out: Path, name: str) -> Path:
    return out / f".{name}.stamp"


def _cheap_key(t: Target) -> str:
    """Hash of the pins only (no `go` call): lets a warm run finish without starting Go."""
    h = hashlib.sha256()
    for f in ("go.mod", "go.sum", *sorted(p.name for p in t.module_dir.glob("*.go"))):
        path = t.module_dir / f
        h.update(path.read_bytes() if path.is_file() else b"")
    h.update(json.dumps([t.package, t.tags]).encode())
    return h.hexdigest()


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _up_to_date(out: Path, t: Target) -> bool:
    stamp = _stamp(out, t.name)
    if not (out / t.name).is_file() or not stamp.is_file():
        return False
    try:
        data = json.loads(stamp.read_text())
    except ValueError:
        return False
    return data.get("pins") == _cheap_key(t) and _comparable(data.get("ldflags", [])) == _comparable(t.ldflags)


def _comparable(ldflags: list[str] | tuple[str, ...]) -> list[str]:
    return [f for f in ldflags if ".buildDate=" not in f]


def build(parallel: int = 2, quiet: bool = False, only: Sequence[str] = ()) -> Path:
    """Build what is missing; ``only`` limits it to those binaries (`make test` needs no node binaries)."""
    v = Versions.load()
    out = bin_dir(v)
    unknown = sorted(set(only) - set(BINARIES))
    if unknown:
        raise SystemExit(f"error: --only {','.join(unknown)}: not one of {', '.join(BINARIES)}")

    def wanted(name: str) -> bool:
        return not only or name in only

    promtool_wanted = wanted("promtool")
    if all(_up_to_date(out, t) for t in targets(v, dated=False) if wanted(t.name)) and (
        not promtool_wanted or _promtool_up_to_date(out)
    ):
        if not quiet:
            print(f"k8s tools up to date in {out}")
        return out
    with _lock(out.parent / ".build.lock"):
        out.mkdir(parents=True, exist_ok=True)
        if promtool_wanted and not _promtool_up_to_date(out):
            _fetch_promtool(out)
        ts = targets(v)
        env = build_env()
        go_version = _go_version(env)
        for t in ts:
            if not wanted(t.name) or _up_to_date(out, t):
                continue
            tmp = Path(tempfile.mkdtemp(prefix=f".{t.name}.", dir=out))
            # No DWARF from the compiler either (the linker's -w drops it anyway): measured 10% less CPU for a
            # cold helm build (218 -> 195 s user); the binaries are the same code, so the stamps do not change.
            cmd = ["go", "build", f"-p={parallel}", "-trimpath", "-gcflags=all=-dwarf=false"]
            if t.tags:
                cmd.append(f"-tags={t.tags}")
            cmd += ["-ldflags=" + " ".join(["-s", "-w", *(_x(f) for f in t.ldflags)])]
            cmd += ["-o", str(tmp / t.name), t.package]
            print(f"building {t.name} ({t.package}) ...", flush=True)
            started = time.monotonic()
            try:
                subprocess.run(cmd, cwd=t.module_dir, env=env, check=True)
                os.replace(tmp / t.name, out / t.name)
            except subprocess.CalledProcessError as exc:
                raise SystemExit(f"build of {t.name} failed (exit {exc.returncode}): {' '.join(cmd)}") from exc
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            _stamp(out, t.name).write_text(
                json.dumps(
                    {
                        "pins": _cheap_key(t),
                        "ldflags": list(t.ldflags),
                        "go": go_version,
                        "seconds": round(time.monotonic() - started, 1),
                    }
                )
            )
            print(f"built {t.name} in {time.monotonic() - started:.0f}s", flush=True)
        (out.parent / "versions.json").write_text(json.dumps(v.__dict__, indent=2) + "\n")
    if not quiet:
        print(f"k8s tools ready in {out}")
    return out


PROMTOOL_DEB = ("prometheus", "2.42.0+ds-5+deb12u1", "81d59a24fce84f7fbe97a45a4f2914b6a5881b5cd1db2a6a0e129e515e1a5f55")
"""Debian's package that ships promtool: name, pinned version, SHA-256 of the .deb (bookworm, 2026-12-02)."""
PROMTOOL_IN_DEB = "./usr/bin/promtool"
APT_LOCK = Path("/var/lock/rocketmq-operator-apt.lock")  # every apt-get of the project: k8s/node.py, the Makefile


def _promtool_up_to_date(out: Path) -> bool:
    stamp = _stamp(out, "promtool")
    if not (out / "promtool").is_file() or not stamp.is_file():
        return False
    try:
        return json.loads(stamp.read_text()).get("pins") == "=".join(PROMTOOL_DEB[:2])
    except ValueError:
        return False


def _apt_download(spec: str, into: Path) -> subprocess.CompletedProcess[str]:
    # Into a directory apt's sandbox user may write (else apt warns and downloads as root).
    into.chmod(0o777)
    return subprocess.run(["apt-get", "download", "-q", spec], cwd=into, capture_output=True, text=True)


def _fetch_promtool(out: Path) -> None:
    """promtool from Debian's package: the pinned version, checked against its SHA-256. Debian's point releases
    retire superseded versions from the mirror; then the candidate apt offers is taken (apt checks it against
    its signed index) and a line says so, rather than failing every alert test on a fresh machine."""
    name, version, sha256 = PROMTOOL_DEB
    print(f"fetching promtool from Debian's {name} {version} ...", flush=True)
    with tempfile.TemporaryDirectory(prefix=".promtool.", dir=out) as tmp_name:
        tmp = Path(tmp_name)
        got = _apt_download(f"{name}={version}", tmp)
        if got.returncode != 0:
            with _lock(APT_LOCK):  # a fresh machine may have no package lists yet
                subprocess.run(["apt-get", "update", "-qq"], capture_output=True, text=True)
            got = _apt_download(f"{name}={version}", tmp)
        pinned = got.returncode == 0
        if not pinned:
            got = _apt_download(name, tmp)
            if got.returncode != 0:
                raise SystemExit(f"apt-get download {name} failed: {(got.stderr or got.stdout).strip()}")
        debs = sorted(tmp.glob(f"{name}_*.deb"))
        if len(debs) != 1:
            raise SystemExit(f"apt-get download {name} left {len(debs)} packages in {tmp}")
        digest = hashlib.sha256(debs[0].read_bytes()).hexdigest()
        if pinned and digest != sha256:
            raise SystemExit(f"{debs[0].name}: SHA-256 {digest}, pinned {sha256} (k8s/tools/build.py PROMTOOL_DEB)")
        if not pinned:
            print(
                f"note: Debian no longer serves {name} {version}; using {debs[0].name} (checked by apt's signed "
                "index, not by the pin in k8s/tools/build.py PROMTOOL_DEB)",
                flush=True,
            )
        unpacked = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(debs[0])], capture_output=True, check=True)
        with tarfile.open(fileobj=io.BytesIO(unpacked.stdout)) as tar:
            member = tar.getmember(PROMTOOL_IN_DEB)
            source = tar.extractfile(member)
            if source is None:
                raise SystemExit(f"{debs[0].name} has no {PROMTOOL_IN_DEB}")
            (tmp / "promtool").write_bytes(source.read())
        (tmp / "promtool").chmod(0o755)
        os.replace(tmp / "promtool", out / "promtool")
    _stamp(out, "promtool").write_text(json.dumps({"pins": f"{name}={version}", "deb": debs[0].name, "sha256": digest}))
    print(f"promtool ready from {debs[0].name}", flush=True)


def _x(flag: str) -> str:
    # "-X=pkg.var=value" -> "-X pkg.var=value" (no spaces in our values, so no quoting needed)
    return "-X " + flag.removeprefix("-X=")


def sync_gomod(k8s_version: str) -> None:
    """Rewrite go.mod for another Kubernetes version, deriving the staging replaces mechanically."""
    mod = _fetch(f"{_proxy()}/k8s.io/kubernetes/@v/{k8s_version}.mod").decode()
    minor = ".".join(k8s_version.lstrip("v").split(".")[1:])
    staging = sorted(set(re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", mod, re.M)))
    if not staging:
        raise SystemExit("no staging replaces found; the layout changed")
    go_line = re.search(r"^go\s+(\S+)", mod, re.M)
    godebug = re.search(r"^godebug\s+(.+)$", mod, re.M)
    etcd = re.search(r"go\.etcd\.io/etcd/server/v3\s+(v\S+)", mod)
    if not (go_line and etcd):
        raise SystemExit("could not find the go line or the etcd server version")
    lines = [
        "// Generated by build.py sync-gomod; pins the Kubernetes test binaries. Do not edit by hand.",
        "module rocketmq-operator.dev/k8s-tools",
        "",
        f"go {go_line.group(1)}",
        "",
    ]
    if godebug:
        lines += [f"godebug {godebug.group(1)}", ""]
    lines += [
        "tool (",
        "\tgo.etcd.io/etcd/server/v3",
        "\tk8s.io/kubernetes/cmd/kube-apiserver",
        "\tk8s.io/kubernetes/cmd/kube-controller-manager",
        "\tk8s.io/kubernetes/cmd/kube-proxy",
        "\tk8s.io/kubernetes/cmd/kube-scheduler",
        "\tk8s.io/kubernetes/cmd/kubectl",
        "\tk8s.io/kubernetes/cmd/kubelet",
        ")",
        "",
        "require (",
        f"\tgo.etcd.io/etcd/server/v3 {etcd.group(1)}",
        f"\tk8s.io/kubernetes {k8s_version}",
        ")",
        "",
        "replace (",
        *(f"\t{m} => {m} v0.{minor}" for m in staging),
        ")",
        "",
    ]
    (TOOLS_DIR / "go.mod").write_text("\n".join(lines))
    env = build_env()
    subprocess.run(["go", "mod", "tidy"], cwd=TOOLS_DIR, env=env, check=True)
    print(f"go.mod now pins Kubernetes {k8s_version}, etcd {etcd.group(1)} ({len(staging)} staging replaces)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd")
    b = sub.add_parser("build")
    b.add_argument("-p", type=int, default=int(os.environ.get("K8S_BUILD_PARALLEL", "2")))
    b.add_argument("-q", "--quiet", action="store_true")
    b.add_argument("--only", default="", help="comma-separated binaries to build (default: all)")
    sub.add_parser("bin-dir")
    sub.add_parser("versions")
    s = sub.add_parser("sync-gomod")
    s.add_argument("kubernetes_version")
    args = ap.parse_args(argv)
    if args.cmd in (None, "build"):
        only = [n for n in getattr(args, "only", "").split(",") if n]
        build(parallel=getattr(args, "p", 2), quiet=getattr(args, "quiet", False), only=only)
    elif args.cmd == "bin-dir":
        print(bin_dir())
    elif args.cmd == "versions":
        print(json.dumps(Versions.load().__dict__))
    elif args.cmd == "sync-gomod":
        sync_gomod(args.kubernetes_version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
