"""Argument types shared by the CLI's subcommands: argparse turns their ArgumentTypeError into one line naming the
option, the value and the rule (`error: argument --count: must be >= 1, got 0`), never a stack trace."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def positive_float(text: str) -> float:
    """A number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value:g}")
    return value


def add_overlap_argument(parser: argparse.ArgumentParser) -> None:
    """`--overlap DURATION` of `rotate-ca` (kubectl plugin and `local`): how long both authorities are trusted."""

    def overlap(text: str) -> str:
        from rocketmq_operator.api.models import duration_seconds

        try:
            duration_seconds(text)
        except (ValueError, KeyError, IndexError):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a duration; rule: a number with a unit, such as 24h, 90m or 0s (how long both "
                "authorities are trusted at least); fix: e.g. --overlap 24h"
            ) from None
        return text

    parser.add_argument(
        "--overlap",
        type=overlap,
        default="24h",
        metavar="DURATION",
        help="both authorities are trusted at least this long (default 24h: clients re-read ca.crt meanwhile)",
    )
