"""CLI → supervisor requests through files in `<state>/commands/` (no socket path-length limits, no ports).

Contract:

* A request is `<id>.json` (`{"id", "op", ...arguments}`), written atomically (temporary name starting with
  `.`, then rename) so the supervisor never reads half of one. Ids sort by creation time.
* The supervisor handles requests in id order, writes `<id>.reply` atomically (`{"ok": bool, "message": str,
  ...}`) and deletes the request. The CLI waits for the reply, deletes it and returns it.
* Ops: `signal` (`replica`, `signal` name KILL|TERM|STOP|CONT, `noRestart` bool) and `start` (`replica`).
  Shutting everything down is not a request: `local down` sends SIGTERM to the supervisor.
* `pending(dir)` / `reply(dir, id, body)` are the supervisor's side; `send_request` is the CLI's. The waiting
  is asyncio (`asyncio.sleep` polling) and gives up with `CommandError` when the supervisor dies or does not
  answer in time.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocketmq_operator.platforms.local.state import write_json_atomic

REQUEST_SUFFIX = ".json"
REPLY_SUFFIX = ".reply"
SIGNALS = ("KILL", "TERM", "STOP", "CONT")


class CommandError(RuntimeError):
    """The supervisor did not take or answer a request."""


def new_id() -> str:
    return f"{time.time_ns():020d}-{os.getpid()}"


def write_request(directory: Path, op: str, **arguments: Any) -> str:
    ident = new_id()
    write_json_atomic(directory / f"{ident}{REQUEST_SUFFIX}", {"id": ident, "op": op, **arguments})
    return ident


def pending(directory: Path) -> list[tuple[str, dict[str, Any]]]:
    """Requests waiting, oldest first; unreadable ones are answered with an error and dropped."""
    out: list[tuple[str, dict[str, Any]]] = []
    try:
        names = sorted(p for p in os.listdir(directory) if p.endswith(REQUEST_SUFFIX) and not p.startswith("."))
    except FileNotFoundError:
        return out
    for name in names:
        ident = name[: -len(REQUEST_SUFFIX)]
        path = directory / name
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except (OSError, ValueError) as exc:
            reply(directory, ident, {"ok": False, "message": f"unreadable request: {exc}"})
            continue
        out.append((ident, body))
    return out


def reply(directory: Path, ident: str, body: dict[str, Any]) -> None:
    write_json_atomic(directory / f"{ident}{REPLY_SUFFIX}", body)
    (directory / f"{ident}{REQUEST_SUFFIX}").unlink(missing_ok=True)


async def send_request(
    directory: Path,
    op: str,
    *,
    alive: Callable[[], bool],
    timeout: float = 20.0,
    **arguments: Any,
) -> dict[str, Any]:
    """Write a request and wait for its reply; `alive()` says whether the supervisor still runs."""
    directory.mkdir(parents=True, exist_ok=True)
    ident = write_request(directory, op, **arguments)
    reply_path = directory / f"{ident}{REPLY_SUFFIX}"
    deadline = time.monotonic() + timeout
    try:
        while True:
            if reply_path.exists():
                try:
                    body = json.loads(reply_path.read_text(encoding="utf-8"))
                except (OSError, ValueError) as exc:
                    raise CommandError(f"unreadable reply from the supervisor: {exc}") from None
                reply_path.unlink(missing_ok=True)
                if not isinstance(body, dict):
                    raise CommandError("the supervisor's reply is not an object")
                return body
            if not alive():
                raise CommandError("the supervisor exited before answering")
            if time.monotonic() > deadline:
                raise CommandError(f"the supervisor did not answer within {timeout:g}s")
            await asyncio.sleep(0.05)
    finally:
        (directory / f"{ident}{REQUEST_SUFFIX}").unlink(missing_ok=True)
