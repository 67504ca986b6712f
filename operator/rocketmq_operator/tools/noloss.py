"""The no-loss check every test shares: every acknowledged key is read back.

Contract:

* :func:`missing_acknowledged` is the set of acknowledged keys not among the keys read. Keys read more than once
  (duplicates) and keys read that were never acknowledged (a send that failed after its retries but was stored
  anyway, a send in flight at Ctrl-C, another producer's message) are allowed: only a missing acknowledged key
  is a loss. Counts are never compared: a lost message hidden behind a failed-but-stored one would balance them.
* :func:`no_loss_failure` is None when nothing is missing, else one line: how many of how many acknowledged keys
  were not read back, and the first :data:`SHOWN` of them in natural order (``k-9`` before ``k-10``).
* :func:`acknowledged_keys` / :func:`read_keys` take the JSON reports of ``rocketmq-operator produce --json
  --report-keys`` / ``consume --json --report-keys``; a report printed without ``--report-keys`` raises
  :class:`ValueError` (a check that silently compared nothing would pass). :func:`reports_no_loss_failure` is
  :func:`no_loss_failure` over such reports.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

SHOWN = 10
_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")


def missing_acknowledged(acknowledged: Iterable[str], read: Iterable[str]) -> set[str]:
    """The acknowledged keys that were not read back (duplicates and extra keys read are allowed)."""
    return set(acknowledged) - set(read)


def _natural(key: str) -> tuple[str, int, str]:
    match = _TRAILING_NUMBER.match(key)
    return (match.group(1), int(match.group(2)), key) if match else (key, -1, key)


def loss_line(missing: Collection[str], acknowledged: int) -> str:
    """One line naming the missing keys: the count and the first :data:`SHOWN`."""
    shown = sorted(missing, key=_natural)[:SHOWN]
    more = f" and {len(missing) - len(shown)} more" if len(missing) > len(shown) else ""
    return f"{len(missing)} of {acknowledged} acknowledged messages not read back (lost): {', '.join(shown)}{more}"


def no_loss_failure(acknowledged: Iterable[str], read: Iterable[str]) -> str | None:
    """None when every acknowledged key was read back, else the one-line failure of :func:`loss_line`."""
    acked = set(acknowledged)
    missing = missing_acknowledged(acked, read)
    return loss_line(missing, len(acked)) if missing else None


def _keys(report: Mapping[str, Any], field: str, tool: str) -> list[str]:
    keys = report.get(field)
    if not isinstance(keys, list):
        raise ValueError(
            f"the {tool} report has no {field!r} list: run `rocketmq-operator {tool}` with --json --report-keys"
        )
    return [str(k) for k in keys]


def acknowledged_keys(*produced: Mapping[str, Any]) -> set[str]:
    """The acknowledged keys of ``produce --json --report-keys`` reports (interrupted ones too)."""
    return {key for report in produced for key in _keys(report, "acknowledged_keys", "produce")}


def read_keys(consumed: Mapping[str, Any]) -> set[str]:
    """The keys a ``consume --json --report-keys`` report read."""
    return set(_keys(consumed, "keys", "consume"))


def reports_no_loss_failure(produced: Iterable[Mapping[str, Any]], consumed: Mapping[str, Any]) -> str | None:
    """:func:`no_loss_failure` of the produce reports' acknowledged keys against the consume report's keys."""
    return no_loss_failure(acknowledged_keys(*produced), read_keys(consumed))
