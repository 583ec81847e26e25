"""The one unit rule for sizes people read and type, as the relay and the shims apply it
(src/services/human-size.ts): binary units, powers of 1024 (KiB, MiB, GiB, TiB, PiB). Checked
against test/human-size-cases.json with the other implementations."""
from __future__ import annotations

import math
import re
from typing import Optional, Union

_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")
_SIZE = re.compile(r"^([0-9]+) *(?:([kmgt])(?:i?b)?|b)?$", re.I)


def human_size(size: Union[int, float]) -> str:
    """A byte count for people: ``999 B``, ``1.5 KiB``, ``42 MiB``. One decimal below 10 of the
    unit, whole numbers from 10 up (halves rounded up), the next unit once it would reach 1024."""
    if size < 1024:
        return "%d B" % math.floor(size + 0.5)
    value = float(size)
    for i, unit in enumerate(_UNITS):
        value /= 1024
        tenths = math.floor(value * 10 + 0.5)
        if tenths < 100:
            return "%d.%d %s" % (tenths // 10, tenths % 10, unit)
        whole = math.floor(value + 0.5)
        if whole < 1024 or i == len(_UNITS) - 1:
            return "%d %s" % (whole, unit)
    raise AssertionError("unreachable")


def parse_size(text: str) -> Optional[int]:
    """A size people type: a whole number, optionally K, M, G or T, read as powers of 1024
    however it is spelled (``10M``, ``10 MiB``, ``10mb`` are all 10 MiB), or ``B``. None unless
    it is a positive number of bytes below 2**53."""
    match = _SIZE.match(text.strip())
    if not match:
        return None
    value = int(match.group(1)) * 1024 ** "_kmgt".find((match.group(2) or "_").lower())
    return value if 0 < value <= 2**53 - 1 else None
