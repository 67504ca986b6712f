"""What a running benchmark is doing now, for a progress display: `announce(text)` tells every listener.

The benches announce their `rocketmq-operator local ...` steps (`failover.run_cli`) and what they wait for
(`failover.wait_for`); `cli.bench` listens while a bench runs (a spinner on a terminal). Nobody listening: no-op.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

Listener = Callable[[str], object]

_listeners: list[Listener] = []


def announce(text: str) -> None:
    for listener in list(_listeners):
        listener(text)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def cli_phase(args: tuple[str, ...]) -> str:
    """The phase a `rocketmq-operator ARGS` step stands for."""
    words = [a for a in args if not a.startswith("-")][:2]
    if words[:2] == ["local", "up"]:
        return "starting the local cluster (local up)"
    if words[:2] == ["local", "down"]:
        return "taking the local cluster down (local down)"
    return "rocketmq-operator " + " ".join(words)
