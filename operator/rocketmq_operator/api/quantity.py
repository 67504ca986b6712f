"""Kubernetes resource quantities, as far as this operator needs them.

Only the binary/decimal suffix forms users write for sizes (`256Mi`, `10Gi`, `500M`, `1048576`) are accepted;
the same pattern is used by the CRD's CEL rules, so the CLI and the API server agree on what is a quantity.
"""

from __future__ import annotations

import re

# Kept in one place: the CRD's CEL rules embed this exact pattern.
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"
_QUANTITY = re.compile(QUANTITY_PATTERN)

_MULTIPLIERS: dict[str, int] = {
    "": 1,
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
    "k": 1000,
    "M": 1000**2,
    "G": 1000**3,
    "T": 1000**4,
    "P": 1000**5,
    "E": 1000**6,
}


class QuantityError(ValueError):
    """A string that is not a byte quantity."""


def is_quantity(text: str) -> bool:
    return bool(_QUANTITY.match(text))


def parse_bytes(text: str | int) -> int:
    """`256Mi` → 268435456. Fractions are allowed when they land on a whole byte count."""
    if isinstance(text, int):
        return text
    match = _QUANTITY.match(text.strip())
    if not match:
        raise QuantityError(f"{text!r} is not a quantity such as 512Mi or 10Gi")
    suffix = match.group(2) or ""
    number = text.strip()[: len(text.strip()) - len(suffix)]
    whole, _, frac = number.partition(".")
    multiplier = _MULTIPLIERS[suffix]
    value = int(whole) * multiplier
    if frac:
        numerator = int(frac) * multiplier
        denominator = 10 ** len(frac)
        if numerator % denominator:
            raise QuantityError(f"{text!r} is not a whole number of bytes")
        value += numerator // denominator
    return value


def jvm_size(text: str) -> str:
    """A quantity as a JVM size flag value: `512Mi` → `512m`, `2Gi` → `2g`, otherwise bytes."""
    n = parse_bytes(text)
    if n % (1024**3) == 0:
        return f"{n // 1024**3}g"
    if n % (1024**2) == 0:
        return f"{n // 1024**2}m"
    if n % 1024 == 0:
        return f"{n // 1024}k"
    return str(n)
