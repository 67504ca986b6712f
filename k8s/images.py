#!/usr/bin/env python3
"""Build the project's container images here, with no image registry (docs/node.md, "Images").

Python 3.11 stdlib only; needs root, debootstrap and buildah (Debian packages, `images.py deps`).

1. Base images from Debian's packages (debootstrap --variant=minbase), one per role, committed into a buildah
   store under ``$ROCKETMQ_OPERATOR_CACHE/images/storage``:
     localhost/rocketmq-operator/base-jre:bookworm      openjdk-17-jre-headless      (runtime of broker/controller)
     localhost/rocketmq-operator/base-jdk:bookworm      openjdk-17-jdk-headless, maven (their build stage)
     localhost/rocketmq-operator/base-python:bookworm   python3, python3-pip         (operator image, both stages)
     localhost/rocketmq-operator/base-jre-python:bookworm  both                      (the Spark example's image)
2. The images, built by buildah from the project's own Dockerfiles with the bases passed as build args
   (BASE_IMAGE / BUILD_IMAGE; the Dockerfiles' defaults are the public images a user with a registry gets):
     ghcr.io/rocketmq-operator/rocketmq-broker:<rocketmq>       broker_image/Dockerfile
     ghcr.io/rocketmq-operator/rocketmq-controller:<rocketmq>   controller_image/Dockerfile
     ghcr.io/rocketmq-operator/rocketmq-operator:<version>      operator/Dockerfile
     ghcr.io/rocketmq-operator/rocketmq-spark:<version>         examples/spark/Dockerfile
   They carry the names the operator and the chart default to, so the node runs them without a pull.
3. ``load``: each image is saved as a docker-archive under ``.../images/archives`` and imported into the
   node's containerd (namespace k8s.io).

    images.py build [--only broker,controller,operator,spark]   # bases + images (each step skipped when up to date)
    images.py load  [--state-dir .k8s]                     # into the running node
    images.py list
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = "bookworm"
MIRROR = os.environ.get("DEBIAN_MIRROR", "http://deb.debian.org/debian")
REPO = "localhost/rocketmq-operator"
BASES = {
    "jre": ["openjdk-17-jre-headless"],
    "jdk": ["openjdk-17-jdk-headless", "maven"],
    "python": ["python3", "python3-pip", "python-is-python3"],  # `python`, as in python:3.11-slim
    "jre-python": ["openjdk-17-jre-headless", "python3", "python3-pip", "python-is-python3"],  # Spark
}
ROLES = ("broker", "controller", "operator", "spark")
NICE = ["nice", "-n", "19"]  # the machine is shared: builds yield the CPU


class ImageError(RuntimeError):
    pass


def cache_root() -> Path:
    env = os.environ.get("ROCKETMQ_OPERATOR_CACHE")
    return (Path(env).expanduser() if env else Path.home() / ".cache" / "rocketmq-operator") / "images"


def _versions() -> dict[str, str]:
    pom = (ROOT / "rocketmq" / "dist" / "pom.xml").read_text()
    m = re.search(r"<rocketmq\.version>([^<]+)</rocketmq\.version>", pom)
    py = (ROOT / "pyproject.toml").read_text()
    v = re.search(r'^version\s*=\s*"([^"]+)"', py, re.M)
    if not (m and v):
        raise ImageError("cannot read rocketmq.version from rocketmq/dist/pom.xml or version from pyproject.toml")
    return {"rocketmq": m.group(1), "operator": v.group(1)}


def images() -> dict[str, dict[str, object]]:
    v = _versions()
    return {
        "broker": {
            "name": f"ghcr.io/rocketmq-operator/rocketmq-broker:{v['rocketmq']}",
            "dockerfile": "broker_image/Dockerfile",
            "args": {"BUILD_IMAGE": f"{REPO}/base-jdk:{SUITE}", "BASE_IMAGE": f"{REPO}/base-jre:{SUITE}"},
            "inputs": ["broker_image", "rocketmq/dist/pom.xml"],
        },
        "controller": {
            "name": f"ghcr.io/rocketmq-operator/rocketmq-controller:{v['rocketmq']}",
            "dockerfile": "controller_image/Dockerfile",
            "args": {"BUILD_IMAGE": f"{REPO}/base-jdk:{SUITE}", "BASE_IMAGE": f"{REPO}/base-jre:{SUITE}"},
            "inputs": ["controller_image", "broker_image/rocketmq-entrypoint.sh", "rocketmq/dist/pom.xml"],
        },
        "operator": {
            "name": f"ghcr.io/rocketmq-operator/rocketmq-operator:{v['operator']}",
            "dockerfile": "operator/Dockerfile",
            "args": {"BUILD_IMAGE": f"{REPO}/base-python:{SUITE}", "BASE_IMAGE": f"{REPO}/base-python:{SUITE}"},
            "inputs": ["operator/Dockerfile", "operator/rocketmq_operator", "pyproject.toml"],
        },
        "spark": {
            "name": f"ghcr.io/rocketmq-operator/rocketmq-spark:{v['operator']}",
            "dockerfile": "examples/spark/Dockerfile",
            "args": {"BASE_IMAGE": f"{REPO}/base-jre-python:{SUITE}"},
            "inputs": ["examples/spark/Dockerfile", "examples/spark/consumer_job.py", "examples/spark/entrypoint.py",
                       "operator/rocketmq_operator", "pyproject.toml"],
        },
    }


def _buildah(*args: str, nice: bool = False, capture: bool = True, **kw) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    store = cache_root() / "storage"
    argv = [*(NICE if nice else []), "buildah", "--root", str(store), "--runroot", str(cache_root() / "run"), *args]
    res = subprocess.run(argv, text=True, capture_output=capture, **kw)
    if res.returncode != 0:
        err = (res.stderr or "").strip().splitlines()[-5:] if capture else []
        raise ImageError(f"buildah {' '.join(args[:3])} ... failed (exit {res.returncode}): {' | '.join(err)}")
    return res


def _image_id(name: str) -> str | None:
    """The ID of the image tagged ``name`` in the store, or None."""
    try:
        ids = _buildah("images", "--quiet", "--noheading", "--no-trunc", name).stdout.split()
    except ImageError:
        return None  # no such image yet
    return ids[0].removeprefix("sha256:") if ids else None


def _stamp_path(name: str) -> Path:
    return cache_root() / "stamps" / f"{name}.json"


def _fresh(name: str, key: str, image: str) -> bool:
    try:
        data = json.loads(_stamp_path(name).read_text())
    except (OSError, ValueError):
        return False
    if data.get("key") != key:
        return False
    res = subprocess.run(
        [
            "buildah",
            "--root",
            str(cache_root() / "storage"),
            "--runroot",
            str(cache_root() / "run"),
            "inspect",
            "--type",
            "image",
            image,
        ],
        capture_output=True,
    )
    return res.returncode == 0


def _write_stamp(name: str, key: str, **extra: object) -> None:
    p = _stamp_path(name)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({"key": key, **extra}, indent=2) + "\n")


def _hash_inputs(paths: list[str], extra: object) -> str:
    h = hashlib.sha256(json.dumps(extra, sort_keys=True).encode())
    for rel in paths:
        p = ROOT / rel
        files = sorted(f for f in p.rglob("*") if f.is_file() and "__pycache__" not in f.parts) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def _base_key(name: str) -> str:
    return hashlib.sha256(json.dumps([SUITE, MIRROR, BASES[name], _BASE_RECIPE]).encode()).hexdigest()


def base_is_fresh(name: str) -> bool:
    return _fresh(f"base-{name}", _base_key(name), f"{REPO}/base-{name}:{SUITE}")


def build_base(name: str) -> str:
    packages = BASES[name]
    image = f"{REPO}/base-{name}:{SUITE}"
    key = _base_key(name)
    if _fresh(f"base-{name}", key, image):
        return image
    if not shutil.which("debootstrap"):
        raise ImageError("debootstrap is missing (apt-get install debootstrap, or `python3 k8s/images.py deps`)")
    cache_root().mkdir(parents=True, exist_ok=True)  # a fresh machine has no cache yet
    work = Path(tempfile.mkdtemp(prefix=f"rootfs-{name}-", dir=cache_root()))
    started = time.monotonic()
    print(f"debootstrap {SUITE} (minbase) + {' '.join(packages)} ...", flush=True)
    try:
        rootfs = work / "rootfs"
        # Not niced: a base is built only on a cold machine (or a new recipe), where the bases are the longest
        # chain of the build (bases, then the images) and the build is `make test`'s critical path. Niced 19 beside
        # the Go builds and the no-cluster tests, the four took 29 min in a cold `make test` (2026-11-27), of
        # which about 3.5 min are downloads (`debootstrap --download-only` of all their packages at once).
        res = subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", SUITE, str(rootfs), MIRROR],
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            raise ImageError(
                f"debootstrap failed (exit {res.returncode}): "
                f"{res.stdout.strip().splitlines()[-1:]} {res.stderr.strip()[-300:]}"
            )
        # Smaller and deterministic enough: no apt lists, caches or logs in the image.
        for sub in ("var/cache/apt/archives", "var/lib/apt/lists", "var/log", "tmp"):
            d = rootfs / sub
            if d.is_dir():
                for child in d.iterdir():
                    if child.is_file() or child.is_symlink():
                        child.unlink()
                    elif child.is_dir() and child.name != "partial":
                        shutil.rmtree(child)
        # An image's Python belongs to the image (as in python:3.11-slim): pip installs into it directly.
        for marker in rootfs.glob("usr/lib/python3*/EXTERNALLY-MANAGED"):
            marker.unlink()
        pkgs = subprocess.run(
            ["chroot", str(rootfs), "dpkg-query", "-W", "-f", "${Package}=${Version}\n"], capture_output=True, text=True
        ).stdout
        ctr = _buildah("from", "scratch").stdout.strip()
        try:
            mnt = _buildah("mount", ctr).stdout.strip()
            subprocess.run(f"tar -C {rootfs} -cf - . | tar -C {mnt} -xf -", shell=True, check=True)
            _buildah("umount", ctr)
            _buildah("config", "--env", "LANG=C.UTF-8", "--cmd", "/bin/sh", ctr)
            _buildah("commit", "--rm", ctr, image)
        except BaseException:
            subprocess.run(
                ["buildah", "--root", str(cache_root() / "storage"), "--runroot", str(cache_root() / "run"), "rm", ctr],
                capture_output=True,
            )
            raise
        (cache_root() / "stamps").mkdir(parents=True, exist_ok=True)
        (cache_root() / "stamps" / f"base-{name}.packages.txt").write_text(pkgs)
        _write_stamp(f"base-{name}", key, seconds=round(time.monotonic() - started, 1), packages=len(pkgs.splitlines()))
        print(
            f"base image {image} in {time.monotonic() - started:.0f}s ({len(pkgs.splitlines())} packages)", flush=True
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return image


_BASE_RECIPE = "minbase;rm-apt-lists;rm-EXTERNALLY-MANAGED;env LANG=C.UTF-8;v1"


def bases_of(role: str) -> list[str]:
    args: dict[str, str] = images()[role]["args"]  # type: ignore[assignment]
    return sorted({a.rsplit("base-", 1)[1].split(":")[0] for a in args.values()})


def build_bases(names: list[str]) -> None:
    """Build stale bases concurrently: debootstrap mostly waits on downloads and dpkg, not on the CPU."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
        for future in [pool.submit(build_base, n) for n in names]:
            future.result()


def build_image(role: str, *, nice: bool = True) -> str:
    spec = images()[role]
    args: dict[str, str] = spec["args"]  # type: ignore[assignment]
    for base in bases_of(role):
        build_base(base)
    name = str(spec["name"])
    base_keys = [
        json.loads(_stamp_path(f"base-{b.rsplit('base-', 1)[1].split(':')[0]}").read_text())["key"]
        for b in args.values()
    ]
    key = _hash_inputs(list(spec["inputs"]), [name, args, base_keys])  # type: ignore[arg-type]
    if _fresh(role, key, name):
        print(f"{name} up to date", flush=True)
        return name
    started = time.monotonic()
    print(f"buildah build {spec['dockerfile']} -> {name} ...", flush=True)
    # No --layers: buildah 1.28 reused a cached COPY layer after the copied sources had changed (an operator
    # image without the code it was rebuilt for). A stamp per image already skips builds whose inputs are
    # unchanged; the Maven and pip downloads are kept in cache mounts.
    argv = ["build", "--network", "host", "-f", str(spec["dockerfile"]), "-t", name]
    for k, val in args.items():
        argv += ["--build-arg", f"{k}={val}"]
    # Build steps (pip, Maven) trust what the host trusts: on machines whose egress re-signs TLS with its own CA,
    # the host's bundle has that CA. Mounted read-only while RUN steps execute; never copied into an image.
    for bundle in ("/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/certs/java/cacerts"):
        if Path(bundle).is_file():
            argv += ["--volume", f"{bundle}:{bundle}:ro"]
    replaced = _image_id(name)
    _buildah(*argv, ".", nice=nice, capture=False, cwd=ROOT)
    if replaced and replaced != _image_id(name):
        # The image this build replaced is left untagged and would stay in the store for good: every source
        # change rebuilds the operator and Spark images (1.5 GB together), which filled 16 GB in a day here.
        with contextlib.suppress(ImageError):  # an image still in use stays; the next build retries
            _buildah("rmi", replaced)
    for stale in (cache_root() / "archives").glob(f"{role}-*.tar"):  # archive() saves the new image again
        stale.unlink()
    _write_stamp(role, key, seconds=round(time.monotonic() - started, 1))
    print(f"built {name} in {time.monotonic() - started:.0f}s", flush=True)
    return name


def archive(role: str) -> Path:
    name = str(images()[role]["name"])
    key = json.loads(_stamp_path(role).read_text())["key"]
    out = cache_root() / "archives" / f"{role}-{key[:16]}.tar"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        for old in out.parent.glob(f"{role}-*.tar"):
            old.unlink()
        tmp = out.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        _buildah("push", name, f"docker-archive:{tmp}:{name}")
        os.replace(tmp, out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=("build", "base", "load", "list", "deps"))
    ap.add_argument("--only", default=",".join(ROLES))
    ap.add_argument("--state-dir", type=Path, default=Path(".k8s"))
    args = ap.parse_args(argv)
    roles = [r.strip() for r in args.only.split(",") if r.strip()]
    unknown = [r for r in roles if r not in ROLES] if args.cmd != "base" else []
    try:
        if unknown:
            raise ImageError(f"unknown image {', '.join(unknown)}; choose from {', '.join(ROLES)}")
        if args.cmd == "deps":
            need = [p for p, c in (("debootstrap", "debootstrap"), ("buildah", "buildah"), ("runc", "runc")) if not shutil.which(c)]
            if need:
                sys.path.insert(0, str(ROOT / "k8s"))
                import node

                node.apt_install(need)
        elif args.cmd == "build":
            if os.geteuid() != 0:
                raise ImageError("building images needs root (debootstrap, buildah)")
            bases = sorted({b for r in roles for b in bases_of(r)})
            # Niced only when warm (the bases were there): a rebuild after a source change then yields to the tests
            # beside it. On a cold machine the build is the critical path of `make test` and runs at normal priority.
            warm = all(base_is_fresh(b) for b in bases)
            build_bases(bases)
            for role in roles:
                build_image(role, nice=warm)
                # Saved for the node now, in the background build: the e2e node's start would otherwise save the
                # rebuilt operator and Spark images first (394 MB and 1.15 GB), on `make test`'s critical path.
                archive(role)
        elif args.cmd == "base":  # e.g. `images.py base --only jre` (bases are independent: run them in parallel)
            for name in [b.strip() for b in args.only.split(",")]:
                if name not in BASES:
                    raise ImageError(f"unknown base {name}; choose from {', '.join(BASES)}")
                build_base(name)
        elif args.cmd == "load":
            sys.path.insert(0, str(ROOT / "k8s"))
            import node

            node.import_images(args.state_dir, [archive(r) for r in roles])
        elif args.cmd == "list":
            for role, spec in images().items():
                print(f"{role:10} {spec['name']}")
    except (ImageError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; a half-built image is not recorded and is rebuilt next time", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
