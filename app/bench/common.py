"""What every bench shares: ratios, medians, shares, the rotation of kinds between rounds, and
the cells of a text report. One definition each, so the reports cannot drift apart."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


def ratio(a: float | None, b: float | None) -> float | None:
    """a ÷ b, or None when either is missing or b is not positive (no figure beats a wrong one)."""
    return a / b if a is not None and b is not None and b > 0 else None


def share(part: int, whole: int) -> float | None:
    """part ÷ whole of a count, or None when there was nothing to count."""
    return part / whole if whole else None


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def rotated(kinds: Sequence[T], shift: int) -> list[T]:
    """``kinds`` rotated by ``shift``: each round starts with the next kind, so a slow patch of
    the machine does not always fall on the same one."""
    shift %= len(kinds)
    return list(kinds[shift:]) + list(kinds[:shift])


def cell(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def times(value: float | None) -> str:
    """A ratio as ``1.23x``, or ``-``."""
    return cell(value, "4.2f", "x")


def short(text: str, width: int) -> str:
    """One line of at most ``width`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def yes(value: bool | None) -> str:
    return "yes" if value else "NO"
