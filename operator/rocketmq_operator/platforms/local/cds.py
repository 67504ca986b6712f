"""Class-data sharing (AppCDS) for the local RocketMQ JVMs: a process maps the classes it needs from an archive
made once, instead of reading, parsing and verifying them from the distribution's jars at every start.

Why: every failover, roll step and test starts brokers, and on two cores their start is CPU-bound. Measured on
this machine (a broker started to "boot success", `-XX:TieredStopAtLevel=1`, three runs each): 3.0-3.6 CPU-s
and 2.1-2.6 s without an archive; 1.4-2.3 CPU-s and 1.1-1.5 s with one (docs/testing.md).

Contract:

* `archive_dir(home)`: where the archives of the distribution at ``home`` live, keyed by the java that made them
  (its resolved path, size and modification time): an archive only works with the exact JVM build that made it.
* `archive_flags(role, home, config_file)`: the JVM flags for one process. `-XX:SharedArchiveFile=<archive>` when
  the archive of its role exists (`broker.jsa`; `namesrv.jsa` for name servers and controllers: the trained name
  server hosts a controller), none otherwise (the JVM then loads classes as it always did). A JVM that cannot
  use an archive (a changed lib/, another java) logs one warning and starts without it. With
  `$ROCKETMQ_OPERATOR_CDS_TRAIN` set to a directory, `-XX:ArchiveClassesAtExit=<dir>/<config file stem>.jsa`
  instead: the JVM writes the classes it loaded when it exits normally (SIGTERM), which is how
  `cds_training.train_archives` makes them.
* The classpath (`distribution.java_command`) lists lib/* before conf/: an archive records the jars it was made
  from as a prefix of the classpath, and a non-empty directory may not be part of that prefix.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

TRAIN_ENV = "ROCKETMQ_OPERATOR_CDS_TRAIN"
ARCHIVES: dict[str, str] = {"broker": "broker.jsa", "namesrv": "namesrv.jsa", "controller": "namesrv.jsa"}
"""The archive each server role maps (tools, short-lived, get none)."""


def java_key(java: str) -> str:
    """The identity of a java executable, as far as an archive cares: its resolved path, size and mtime."""
    found = shutil.which(java) or java
    try:
        real = Path(found).resolve()
        stat = real.stat()
    except OSError:
        return "unknown-java"
    return hashlib.sha256(f"{real}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]


def archive_dir(home: Path, java: str) -> Path:
    return home / "cds" / java_key(java)


def archive_flags(
    role: str, home: Path, java: str, config_file: str | os.PathLike[str] | None, environ: Mapping[str, str]
) -> list[str]:
    """The class-data sharing flags of one JVM (see the module docstring)."""
    name = ARCHIVES.get(role)
    if name is None:
        return []
    training = environ.get(TRAIN_ENV, "").strip()
    if training:
        if config_file is None:
            return []
        return [f"-XX:ArchiveClassesAtExit={Path(training) / (Path(config_file).stem + '.jsa')}"]
    archive = archive_dir(home, java) / name
    return [f"-XX:SharedArchiveFile={archive}"] if archive.is_file() else []
