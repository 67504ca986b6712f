"""Field and body parsing shared by the role modules: typed reads of headers and fastjson bodies."""

from __future__ import annotations

from typing import Any

from .codec import RemotingCommand, loads_json
from .errors import (
    ResponseFormatError,
)


def _opt_int(value: Any, what: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ResponseFormatError(f"{what} is a boolean, expected an integer")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ResponseFormatError(f"{what} is not an integer: {value!r:.80}") from None


def _int(value: Any, what: str, default: int | None = None) -> int:
    parsed = _opt_int(value, what)
    if parsed is None:
        if default is None:
            raise ResponseFormatError(f"{what} is missing")
        return default
    return parsed


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def _opt_str(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return str(value)


def _obj(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ResponseFormatError(f"{what} is not a JSON object: {value!r:.80}")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ResponseFormatError(f"{what} is not a JSON array: {value!r:.80}")
    return value


def _body_json(response: RemotingCommand, what: str) -> Any:
    if not response.body:
        raise ResponseFormatError(f"{what}: empty response body")
    try:
        return loads_json(response.body)
    except (ValueError, RecursionError) as exc:
        raise ResponseFormatError(f"{what}: response body is not JSON: {exc}") from exc


def _fields(**values: object) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in values.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out
