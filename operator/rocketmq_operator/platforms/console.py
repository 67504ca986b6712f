"""Live terminal views for the CLI: a frame redrawn in place, an updating progress line, a spinner.

Contract:

* Everything here takes a ``rich`` console, or ``None`` for "not a terminal": `terminal(stream)` gives a console
  only when ``stream`` is a TTY, so pipes, files and tests keep the plain appended lines the callers print
  themselves. The text shown comes from the callers (``core.status_view`` for the tables): nothing is rendered
  twice.
* `Frames`: each `show(header, body)` replaces the previous frame on a terminal (``rich.live.Live``); without a
  console it prints ``header`` (when not empty) and ``body`` through ``out``, one after the other, as before.
* `Ticker`: one updating line (a spinner and the text) on a terminal, on stderr by default; without a console it
  does nothing, or prints each new text through ``out`` when one is given (the lines `local up --wait` prints).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

Out = Callable[[str], object]

EXIT_INTERRUPTED = 130


def terminal(stream: TextIO | None = None) -> Console | None:
    """A console writing to ``stream`` (default stdout) when it is a terminal; None otherwise."""
    stream = sys.stdout if stream is None else stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return None
    return Console(file=stream) if tty else None


def stderr_terminal() -> Console | None:
    return terminal(sys.stderr)


def progress_console() -> Console | None:
    """Stderr's console when stdout is a terminal too: progress replaces lines that would go to stdout."""
    return stderr_terminal() if terminal() is not None else None


def _text(value: str) -> Text:
    return Text(value, no_wrap=True, overflow="crop")


class _LiveView:
    """A ``rich.live.Live`` while the view is entered on a terminal (`_start`), stopped on the way out."""

    _live: Live | None = None

    def _start(self, live: Live) -> None:
        self._live = live
        live.__enter__()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._live is not None:
            self._live.__exit__(kind, exc, tb)
            self._live = None

    @property
    def live(self) -> bool:
        return self._live is not None


class Frames(_LiveView):
    """Frames of a `--watch`: redrawn in place on a terminal, appended otherwise."""

    def __init__(self, console: Console | None, out: Out) -> None:
        self.console = console
        self.out = out

    def __enter__(self) -> Frames:
        if self.console is not None:
            self._start(Live(console=self.console, auto_refresh=False, transient=False, redirect_stdout=False))
        return self

    def show(self, header: str, body: str) -> None:
        if self._live is None:
            if header:
                self.out(header)
            self.out(body)
            return
        parts = [_text(header)] if header else []
        parts.append(_text(body))
        self._live.update(Group(*parts), refresh=True)


class _Line:
    """The spinner and the text, with the time since ``started`` in front when given (ticking on each refresh)."""

    def __init__(self, text: str, started: float | None) -> None:
        self.text = text
        self.started = started
        self.spinner = Spinner("dots")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = self.text if self.started is None else f"[{time.monotonic() - self.started:6.1f}s] {self.text}"
        self.spinner.update(text=_text(text))
        yield self.spinner


class Ticker(_LiveView):
    """One updating line (spinner + text) on a terminal; silent, or plain lines through ``out``, otherwise.
    ``elapsed``: the time since the start precedes the text."""

    def __init__(
        self, console: Console | None, text: str = "", out: Out | None = None, *, elapsed: bool = False
    ) -> None:
        self.console = console
        self.out = out
        self.text = text
        self._line = _Line(text, time.monotonic() if elapsed else None)
        self._spinner = self._line.spinner

    def __enter__(self) -> Ticker:
        if self.console is not None:
            self._start(
                Live(self._line, console=self.console, refresh_per_second=8, transient=True, redirect_stdout=False)
            )
        elif self.out is not None and self.text:
            self.out(self.text)
        return self

    def update(self, text: str) -> None:
        if text == self.text:
            return
        self.text = text
        if self._live is not None:
            self._line.text = text
            self._live.refresh()
        elif self.out is not None:
            self.out(text)

    def print(self, text: str) -> None:
        """A line that stays (above the updating one on a terminal; through ``out`` otherwise)."""
        if self._live is not None and self.console is not None:
            self.console.print(_text(text))
        elif self.out is not None:
            self.out(text)
