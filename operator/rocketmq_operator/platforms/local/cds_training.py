"""Making the class-data archives of `cds` once per distribution and java: a real, short run of the local platform.

Contract:

* `train_archives(home, version, log)`: when `cds.archive_dir` lacks an archive, brings up a one-replica group
  in controller mode (a name server hosting a controller, one broker) from `home`'s version with every JVM
  told to write the classes it loaded at exit (`cds.TRAIN_ENV`), sends messages through it (the master's put
  path, the controller's election and heartbeats all run), stops it gracefully (SIGTERM: the JVMs write their
  archives) and moves the archives into place. Under a file lock: concurrent callers train once. Returns True
  when the archives exist afterwards. Any failure leaves no archive, is logged in one line and is never
  raised: the JVMs then start as they always did, only slower.
* The run uses a temporary state directory and free ports, and nothing of it is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from rocketmq_operator.platforms.local import lifecycle
from rocketmq_operator.platforms.local.cds import ARCHIVES, TRAIN_ENV, archive_dir
from rocketmq_operator.platforms.local.distribution import file_lock, java_executable
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.state import read_state
from rocketmq_operator.tools.produce import produce

Log = Callable[[str], object]
CONTROLLERS, BROKERS = "cds-training-ctl", "cds-training"
MESSAGES = 200
TRAINED: dict[str, str] = {"namesrv.jsa": f"{CONTROLLERS}-0.jsa", "broker.jsa": f"{BROKERS}-0.jsa"}
assert set(TRAINED) == set(ARCHIVES.values())


def _manifest(version: str) -> str:
    return f"""apiVersion: rocketmq-operator.dev/v1alpha1
kind: ControllerGroup
metadata:
  name: {CONTROLLERS}
spec:
  replicas: 1
  version: {version}
---
apiVersion: rocketmq-operator.dev/v1alpha1
kind: BrokerGroup
metadata:
  name: {BROKERS}
spec:
  replicas: 1
  version: {version}
  haMode: controller
  controllerRef:
    name: {CONTROLLERS}
"""


@contextlib.contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    """``name=value`` for the processes started inside (the supervisor inherits it), restored afterwards."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def archives_present(home: Path) -> bool:
    target = archive_dir(home, java_executable())
    return all((target / name).is_file() for name in TRAINED)


def train_archives(home: Path, version: str, log: Log) -> bool:
    """See the module docstring."""
    if archives_present(home):
        return True
    target = archive_dir(home, java_executable())
    with file_lock(home / "cds" / ".training.lock"):
        if archives_present(home):
            return True
        with tempfile.TemporaryDirectory(prefix="rocketmq-cds-") as scratch:
            failure = _train(Path(scratch), version)
            made = Path(scratch) / "archives"
            if failure is None and all((made / source).is_file() for source in TRAINED.values()):
                target.mkdir(parents=True, exist_ok=True)
                for name, source in TRAINED.items():
                    staged = target / f".{name}.tmp"
                    shutil.copyfile(made / source, staged)
                    staged.replace(target / name)
                log(f"rocketmq-operator: RocketMQ {version} class-data archives made in {target}")
                return True
            log(
                f"warning: no class-data archives for RocketMQ {version} "
                f"({failure or 'a JVM wrote none at exit'}); its JVMs start without them"
            )
            return False


def _train(scratch: Path, version: str) -> str | None:
    """The training run; what went wrong, or None."""
    manifest = scratch / "training.yaml"
    manifest.write_text(_manifest(version), encoding="utf-8")
    state_dir = scratch / "state"
    (scratch / "archives").mkdir()
    quiet = io.StringIO()
    try:
        with _environment(TRAIN_ENV, str(scratch / "archives")), contextlib.redirect_stderr(quiet):
            code = lifecycle.up([str(manifest)], state_dir, wait=True, timeout=180.0, out=lambda _text: None)
        if code != 0:
            return f"the training group did not come up (exit {code}): {quiet.getvalue().strip()[-300:]}"
        state = read_state(StateLayout(state_dir).state_file)
        report = asyncio.run(produce(state.name_servers, "cds-training", MESSAGES, timeout=5.0))
        if report.acknowledged == 0:
            return f"no message of {MESSAGES} was acknowledged: {sorted(report.failures)}"
        return None
    except Exception as exc:  # a failed training costs speed only, never the caller's command
        return f"{type(exc).__name__}: {exc}"
    finally:
        with contextlib.redirect_stderr(io.StringIO()):
            lifecycle.down(state_dir, purge=False, out=lambda _text: None)
