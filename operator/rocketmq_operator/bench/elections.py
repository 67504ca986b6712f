"""Elections a bench did not cause: `extra_elections` of `bench failover` and `bench switchover`.

A bench samples the controller's answer for its group, (time, master broker id, master epoch), all along the run
(`EpochWatch`) and at the moments that bound its windows (before a fault or a switchover, at a recovery, at the
end). Every election bumps the master epoch, so the rise of the epoch over a window counts the elections in it,
those a poll missed included. A window expects some elections (a switchover: 1; a failover trial's quiet time
after its recovery: 0); any more are extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    at: float  # wall time the read was sent: the answer shows the state at some moment from then ...
    master: int | None
    epoch: int | None
    answered: float | None = None  # ... to when it was answered (None: at once)

    @property
    def until(self) -> float:
        return self.at if self.answered is None else self.answered


def _within(s: Sample, start: float, end: float) -> bool:
    """The whole read lies in [start, end]: a read sent before a window's end and answered after it may show an
    election of the next window (found 2026-11-29: under load, the next fault's own election was counted as an
    extra election of the trial before it, whose next trial's `epoch_before` still showed the old epoch)."""
    return start <= s.at and s.until <= end


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    expected: int  # the elections the bench caused in it


def elections_in(samples: Sequence[Sample], start: float, end: float) -> int:
    """The elections the samples read wholly within [start, end] show: each rise of the master epoch above the highest
    seen so far in the window (a read from a controller that lags behind does not count twice); where an epoch is
    unknown, a change of master."""
    inside = sorted((s for s in samples if _within(s, start, end)), key=lambda s: s.at)
    count = 0
    highest: int | None = None
    previous: Sample | None = None
    for s in inside:
        if s.epoch is not None:
            if highest is not None and s.epoch > highest:
                count += s.epoch - highest
            highest = s.epoch if highest is None else max(highest, s.epoch)
        elif previous is not None and None not in (s.master, previous.master) and s.master != previous.master:
            count += 1
        if s.master is not None:
            previous = s
    return count


def extra_elections(samples: Sequence[Sample], windows: Sequence[Window]) -> list[int]:
    """Per window: the elections beyond the expected ones (never negative: a switchover that elected no one is
    another check's business)."""
    return [max(0, elections_in(samples, w.start, w.end) - w.expected) for w in windows]


def epochs_seen(samples: Sequence[Sample], start: float, end: float) -> list[list[int | None]]:
    """The successive distinct [epoch, master] pairs sampled in [start, end], for the per-trial JSON."""
    out: list[list[int | None]] = []
    for s in sorted((s for s in samples if _within(s, start, end)), key=lambda s: s.at):
        pair = [s.epoch, s.master]
        if not out or out[-1] != pair:
            out.append(pair)
    return out


Reader = Callable[[], Awaitable[tuple[int | None, int | None, int]]]


class EpochWatch:
    """Samples ``read`` (``Group.controller_master``: master, epoch, SyncStateSet size) every ``interval`` seconds
    until stopped; ``sample()`` takes one more at once (the bounds of a window). A failed read (the controller
    leader being killed, a loaded machine) is no sample."""

    def __init__(self, read: Reader, interval: float = 0.5) -> None:
        self.read = read
        self.interval = interval
        self.samples: list[Sample] = []
        self._stop = asyncio.Event()

    async def sample(self) -> Sample | None:
        at = time.time()
        try:
            master, epoch, _ = await self.read()
        except Exception:  # any: a side measurement never ends the bench it watches
            return None
        s = Sample(at, master, epoch, time.time())
        self.samples.append(s)
        return s

    async def run(self) -> None:
        while not self._stop.is_set():
            await self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.interval)

    def stop(self) -> None:
        self._stop.set()


@contextlib.asynccontextmanager
async def watching(watch: EpochWatch) -> AsyncIterator[EpochWatch]:
    """``watch`` runs for the duration of the block, which stops it on any way out."""
    task = asyncio.create_task(watch.run())
    try:
        yield watch
    finally:
        watch.stop()
        await task
