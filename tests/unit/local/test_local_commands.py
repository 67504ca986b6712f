"""The request-file protocol between the CLI and the supervisor."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rocketmq_operator.platforms.local import commands


async def test_request_reply_round_trip(tmp_path: Path) -> None:
    async def supervisor() -> None:
        while True:
            for ident, body in commands.pending(tmp_path):
                commands.reply(tmp_path, ident, {"ok": True, "echo": body})
                return
            await asyncio.sleep(0.01)

    task = asyncio.create_task(supervisor())
    answer = await commands.send_request(tmp_path, "start", alive=lambda: True, replica="b-0")
    await task
    assert answer["ok"] and answer["echo"]["op"] == "start" and answer["echo"]["replica"] == "b-0"
    assert list(tmp_path.iterdir()) == []  # request and reply both cleaned up


async def test_dead_supervisor(tmp_path: Path) -> None:
    with pytest.raises(commands.CommandError, match="exited"):
        await commands.send_request(tmp_path, "start", alive=lambda: False, replica="x")
    assert list(tmp_path.iterdir()) == []


async def test_no_answer(tmp_path: Path) -> None:
    with pytest.raises(commands.CommandError, match="did not answer"):
        await commands.send_request(tmp_path, "start", alive=lambda: True, timeout=0.2, replica="x")
    assert list(tmp_path.iterdir()) == []


def test_pending_order_and_garbage(tmp_path: Path) -> None:
    first = commands.write_request(tmp_path, "signal", replica="a")
    second = commands.write_request(tmp_path, "signal", replica="b")
    (tmp_path / "zzz.json").write_text("{broken")
    (tmp_path / ".hidden.json").write_text("{}")  # a request still being written
    got = commands.pending(tmp_path)
    assert [i for i, _ in got] == [first, second]
    assert (tmp_path / f"zzz{commands.REPLY_SUFFIX}").exists()  # answered with an error, dropped
    assert not (tmp_path / "zzz.json").exists()
    assert commands.pending(tmp_path / "missing") == []
