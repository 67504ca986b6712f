#!/usr/bin/env python3
"""Generate operator/rocketmq_operator/api/broker_config_keys.py from the pinned RocketMQ jars.

The broker applies its properties file to BrokerConfig (and its superclass BrokerIdentity),
MessageStoreConfig, NettyServerConfig, NettyClientConfig and AuthConfig; the namesrv/controller file goes to
NamesrvConfig, ControllerConfig, JraftConfig, NettyServerConfig and NettyClientConfig (BrokerStartup,
NamesrvStartup and ControllerStartup call MixAll.properties2Object on each). properties2Object calls every
public `setXxx` with one parameter whose key (`xxx`, first letter lower-cased) is in the file.

This script runs `javap -public` on those classes in the jars of the pinned distribution
(`ensure_distribution()`; it builds the distribution with Maven if needed), follows superclasses up to
java.lang.Object, keeps the non-static public setters with one parameter of type int/long/double/float/boolean
(or their boxes), String or an enum, and writes the sorted key sets with the class(es) each key comes from.

Usage: python scripts/gen_broker_config_keys.py [--check]
    --check: exit 1 if the committed file differs from what would be generated (for CI).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "operator"))

from rocketmq_operator.platforms.local.distribution import (  # noqa: E402
    ROCKETMQ_VERSION,
    ensure_distribution,
)

OUTPUT = REPO / "operator" / "rocketmq_operator" / "api" / "broker_config_keys.py"

BROKER_CLASSES = (
    "org.apache.rocketmq.common.BrokerConfig",
    "org.apache.rocketmq.store.config.MessageStoreConfig",
    "org.apache.rocketmq.remoting.netty.NettyServerConfig",
    "org.apache.rocketmq.remoting.netty.NettyClientConfig",
    "org.apache.rocketmq.auth.config.AuthConfig",
)
CONTROLLER_CLASSES = (
    "org.apache.rocketmq.common.ControllerConfig",
    "org.apache.rocketmq.common.JraftConfig",
    "org.apache.rocketmq.common.namesrv.NamesrvConfig",
    "org.apache.rocketmq.remoting.netty.NettyServerConfig",
    "org.apache.rocketmq.remoting.netty.NettyClientConfig",
)
# rmq-proxy.json: fastjson2 parses the one file into both (proxy Configuration.init), through their setters,
# enums included (metricsExporterType).
PROXY_CLASSES = (
    "org.apache.rocketmq.proxy.config.ProxyConfig",
    "org.apache.rocketmq.auth.config.AuthConfig",
)
SCALARS = {
    "int",
    "long",
    "double",
    "float",
    "boolean",
    "java.lang.Integer",
    "java.lang.Long",
    "java.lang.Double",
    "java.lang.Float",
    "java.lang.Boolean",
    "java.lang.String",
}
_HEADER = re.compile(
    r"^public (?:abstract |final )*class (\S+?)(?:<.*?>)? (?:extends (\S+?)(?:<.*?>)?)?\s*(?:implements .*)?\{$"
)
_SETTER = re.compile(r"^\s+public (?!static )(?:final |synchronized )*\S+ (set\w+)\(([^,()]+)\);$")


def javap(classpath: str, classes: list[str]) -> dict[str, list[str]]:
    """javap -public output per class (the class's own members only)."""
    proc = subprocess.run(["javap", "-public", "-cp", classpath, *classes], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"javap failed:\n{proc.stderr}")
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in proc.stdout.splitlines():
        match = _HEADER.match(line.strip())
        if line.startswith("public ") and match:
            current = out.setdefault(match.group(1), [line])
        elif current is not None:
            current.append(line)
    missing = set(classes) - set(out)
    if missing:
        raise SystemExit(f"javap printed no class for {sorted(missing)}")
    return out


def superclass(lines: list[str]) -> str | None:
    match = _HEADER.match(lines[0].strip())
    parent = match.group(2) if match else None
    return None if parent in (None, "java.lang.Object") else parent


def is_enum(lines: list[str]) -> bool:
    return superclass(lines) == "java.lang.Enum"


def collect(classpath: str, roots: tuple[str, ...]) -> tuple[dict[str, list[str]], set[str]]:
    """(key → simple names of the declaring classes, keys that have an int/…/String setter).

    The classes searched are `roots` and their superclasses.
    """
    todo = list(roots)
    decls: dict[str, list[str]] = {}
    order: list[str] = []
    while todo:
        batch = [c for c in todo if c not in decls]
        todo = []
        for name, lines in javap(classpath, batch).items():
            decls[name] = lines
            order.append(name)
            parent = superclass(lines)
            if parent and parent not in decls:
                todo.append(parent)
    setters: list[tuple[str, str, str]] = []  # (class, key, param type)
    for cls in order:
        for line in decls[cls][1:]:
            match = _SETTER.match(line)
            if match:
                method, param = match.group(1), match.group(2).strip()
                key = method[3].lower() + method[4:]
                setters.append((cls, key, param))
    others = sorted({p for _, _, p in setters if p not in SCALARS and "[" not in p and "." in p})
    enums = {name for name, lines in javap(classpath, others).items() if is_enum(lines)} if others else set()
    keys: dict[str, list[str]] = {}
    scalar_keys: set[str] = set()
    for cls, key, param in setters:
        if param in SCALARS or param in enums:
            simple = cls.rsplit(".", 1)[-1]
            owners = keys.setdefault(key, [])
            if simple not in owners:
                owners.append(simple)
            if param in SCALARS:
                scalar_keys.add(key)
    return keys, scalar_keys


def render(
    broker: dict[str, list[str]], controller: dict[str, list[str]], proxy: dict[str, list[str]], version: str
) -> str:
    def block(name: str, keys: dict[str, list[str]]) -> list[str]:
        lines = [f"{name}: frozenset[str] = frozenset(", "    {"]
        lines += [f'        "{k}",' for k in sorted(keys)]
        lines += ["    }", ")", ""]
        return lines

    def sources(name: str, keys: dict[str, list[str]]) -> list[str]:
        lines = [f"{name}: dict[str, str] = {{"]
        lines += [f'    "{k}": "{",".join(keys[k])}",' for k in sorted(keys)]
        lines += ["}", ""]
        return lines

    head = f'''"""GENERATED by scripts/gen_broker_config_keys.py; do not edit (regenerate by running that script).

The configuration keys Apache RocketMQ {version} (the pinned distribution, ROCKETMQ_VERSION in
rocketmq_operator.platforms.local.distribution) reads from a properties file, taken with `javap -public` from
its jars: every non-static public `setXxx` with one int/long/double/float/boolean (or boxed), String or enum
parameter gives the key `xxx` (MixAll.properties2Object; unknown keys are silently ignored by RocketMQ).

* BROKER_CONFIG_KEYS: BrokerConfig (+ superclass BrokerIdentity), MessageStoreConfig, NettyServerConfig,
  NettyClientConfig, AuthConfig; the objects BrokerStartup applies its `-c` file to.
* CONTROLLER_CONFIG_KEYS: ControllerConfig, JraftConfig, NamesrvConfig, NettyServerConfig, NettyClientConfig;
  the objects NamesrvStartup (with enableControllerInNamesrv=true) and ControllerStartup apply their file to.
* PROXY_CONFIG_KEYS: ProxyConfig, AuthConfig; the objects the proxy parses its rmq-proxy.json into (JSON, by
  fastjson2, through the same setters: enum setters are effective there).
* *_KEY_SOURCES: key -> simple name of the declaring class(es), comma-separated when several declare it
  (e.g. listenPort: BrokerConfig,NettyServerConfig; the file sets both).

Enum-typed setters are listed because the brief asks for them, but properties2Object only converts
int/long/double/float/boolean/String: a key whose only setter takes an enum is ignored by RocketMQ. Every
enum setter in {version} also has a String overload (checked by the generator), so all keys below are effective.
"""

from __future__ import annotations

'''
    lines = [
        *block("BROKER_CONFIG_KEYS", broker),
        *sources("BROKER_CONFIG_KEY_SOURCES", broker),
        *block("CONTROLLER_CONFIG_KEYS", controller),
        *sources("CONTROLLER_CONFIG_KEY_SOURCES", controller),
        *block("PROXY_CONFIG_KEYS", proxy),
        *sources("PROXY_CONFIG_KEY_SOURCES", proxy),
    ]
    return head + "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed file is out of date")
    ns = parser.parse_args()
    if shutil.which("javap") is None:
        raise SystemExit("javap (JDK 17) is not on PATH")
    home = ensure_distribution(ROCKETMQ_VERSION, log=lambda m: print(m, file=sys.stderr))
    classpath = str(home / "lib" / "*")
    broker, broker_scalar = collect(classpath, BROKER_CLASSES)
    controller, controller_scalar = collect(classpath, CONTROLLER_CLASSES)
    proxy, _ = collect(classpath, PROXY_CLASSES)
    for label, keys, scalar in (("broker", broker, broker_scalar), ("controller", controller, controller_scalar)):
        ignored = sorted(set(keys) - scalar)
        if ignored:
            raise SystemExit(f"{label} keys with only an enum setter (RocketMQ would ignore them): {ignored}")
    text = render(broker, controller, proxy, ROCKETMQ_VERSION)
    if ns.check:
        if OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT.relative_to(REPO)} is out of date; run scripts/gen_broker_config_keys.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(
        f"wrote {OUTPUT.relative_to(REPO)}: {len(broker)} broker keys, {len(controller)} controller keys, "
        f"{len(proxy)} proxy keys"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
