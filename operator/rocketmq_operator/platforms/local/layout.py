"""Where the local platform keeps things: the state directory and the paths inside it.

Contract:

* `resolve_state_dir(arg, env, cwd)`: `--state-dir` wins, then `$ROCKETMQ_OPERATOR_STATE`, then
  `.local-state/` in the working directory. Always absolute (resolved), so the path the supervisor, the java
  processes and later commands see is the same whatever directory they run from.
* `StateLayout(root)` names every path; nothing here creates or reads files except `ensure()` (mkdir).

Layout of a state directory::

    state.json            desired state, ports, pids, restart counts (written atomically; see `state`)
    manifest.yaml         the validated resources that were brought up
    secrets.json          the Secrets named by spec.auth and the Users, and the Users' generated passwords (mode
                          0600; what Secret volumes hold on Kubernetes)
    admins.json           per BrokerGroup with auth on: the admin its brokers start with, and the old admins the
                          rotation retires (mode 0600; `auth.AdminRecord`, the supervisor's)
    users.json            per BrokerGroup: the User resources last held and the users still to delete from a
                          replica (`users.UsersRecord`, the supervisor's)
    supervisor.log        the supervisor's own log
    conf/<replica>.conf   rendered configs (what a ConfigMap holds on Kubernetes)
    data/<replica>/       one "volume" per replica: store, controller Raft log, conf/<replica>.conf (the copy
                          the process reads and RocketMQ may rewrite), logs/rocketmqlogs/ (user.home)
    logs/<replica>.log    stdout+stderr of the java process, appended across restarts
    status/<group>.json   the previous BrokerGroupStatus (history and lastTransitionTime survive commands)
    commands/             CLI → supervisor requests (<id>.json) and replies (<id>.reply)
    .lock                 held (flock) by `local up` and `local down` while they work
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

STATE_ENV = "ROCKETMQ_OPERATOR_STATE"
DEFAULT_STATE_DIR = ".local-state"


def resolve_state_dir(
    arg: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Path:
    environ = os.environ if env is None else env
    base = Path(cwd) if cwd is not None else Path.cwd()
    if arg:
        chosen = Path(arg)
    elif environ.get(STATE_ENV):
        chosen = Path(environ[STATE_ENV])
    else:
        chosen = Path(DEFAULT_STATE_DIR)
    chosen = chosen.expanduser()
    if not chosen.is_absolute():
        chosen = base / chosen
    return chosen.resolve()


@dataclass(frozen=True)
class StateLayout:
    root: Path

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.yaml"

    @property
    def secrets(self) -> Path:
        """The Secrets the groups name (spec.auth), as given with the manifests: mode 0600, never printed."""
        return self.root / "secrets.json"

    @property
    def admins(self) -> Path:
        """Per BrokerGroup with auth on: the admin its brokers start with and the supervisor signs as, and the old
        admins it retires (the admin rotation; mode 0600, never printed)."""
        return self.root / "admins.json"

    @property
    def users(self) -> Path:
        """The User resources each group held as last applied, and the removals not yet confirmed."""
        return self.root / "users.json"

    @property
    def tls_dir(self) -> Path:
        """spec.tls: the authority (ca.crt, ca.key) and each process's certificate and key; keys mode 0600."""
        return self.root / "tls"

    @property
    def tls_ca(self) -> Path:
        return self.tls_dir / "ca.crt"

    @property
    def tls_ca_key(self) -> Path:
        return self.tls_dir / "ca.key"

    @property
    def tls_bridge(self) -> Path:
        """The signer certified by its predecessor, while a rotation's overlap is open (core.tls.plan_authority)."""
        return self.tls_dir / "bridge.crt"

    @property
    def tls_rotation(self) -> Path:
        """The authority's rotation record (mode 0600: a rotation cut off is resumed from it, key included)."""
        return self.tls_dir / "rotation.json"

    @property
    def tls_client_cert(self) -> Path:
        """The certificate every client of the cluster presents (the supervisor, `local env`'s tools) where a group
        requires client certificates (spec.tls.clientAuth: Required); its key is `tls_client_key`."""
        return self.tls_dir / "client.crt"

    @property
    def tls_client_key(self) -> Path:
        return self.tls_dir / "client.key"

    def tls_cert(self, replica: str) -> Path:
        return self.tls_dir / f"{replica}.crt"

    def tls_key(self, replica: str) -> Path:
        return self.tls_dir / f"{replica}.key"

    @property
    def supervisor_log(self) -> Path:
        return self.root / "supervisor.log"

    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    @property
    def data_root(self) -> Path:
        return self.root / "data"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def status_dir(self) -> Path:
        return self.root / "status"

    @property
    def commands_dir(self) -> Path:
        return self.root / "commands"

    @property
    def lock_file(self) -> Path:
        return self.root / ".lock"

    def config(self, replica: str) -> Path:
        return self.conf_dir / f"{replica}.conf"

    def data(self, replica: str) -> Path:
        return self.data_root / replica

    def run_config(self, replica: str) -> Path:
        """The copy of the config the process is started with (RocketMQ may rewrite it at runtime)."""
        return self.data(replica) / "conf" / f"{replica}.conf"

    def log(self, replica: str) -> Path:
        return self.logs_dir / f"{replica}.log"

    def status(self, group: str) -> Path:
        return self.status_dir / f"{group}.json"

    # Everything `local down --purge` removes; the directory itself goes only if nothing else is left in it.
    def owned(self) -> tuple[Path, ...]:
        return (
            self.state_file,
            self.manifest,
            self.secrets,
            self.admins,
            self.users,
            self.supervisor_log,
            self.conf_dir,
            self.data_root,
            self.logs_dir,
            self.status_dir,
            self.commands_dir,
            self.lock_file,
        )

    def ensure(self) -> None:
        for path in (self.root, self.conf_dir, self.data_root, self.logs_dir, self.status_dir, self.commands_dir):
            path.mkdir(parents=True, exist_ok=True)
