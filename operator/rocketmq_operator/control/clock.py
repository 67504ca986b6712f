"""Wall-clock time as Kubernetes spells it (RFC 3339, seconds, UTC): the one place the platforms read it for
status timestamps. The core takes time as an argument."""

from __future__ import annotations

import time
from datetime import UTC, datetime

ISO_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def iso_time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime(ISO_FORMAT)


def now_iso() -> str:
    return iso_time(time.time())
