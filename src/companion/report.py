"""Printing numbers for the book: rounded so nbval comparisons survive last-bit differences."""
from __future__ import annotations

import math
import os
from typing import Any, Mapping

__all__ = ["fmt", "show", "below", "current_profile", "PROFILES"]

PROFILES = ("fast", "full")


def current_profile() -> str:
    """The profile the book runs in: ``$COMPANION_PROFILE`` (``fast`` or ``full``), default ``fast``.

    Examples
    --------
    >>> current_profile() in PROFILES
    True
    """
    p = os.environ.get("COMPANION_PROFILE", "fast")
    if p not in PROFILES:
        raise ValueError(f"COMPANION_PROFILE must be one of {PROFILES}, got {p!r}")
    return p


def fmt(x: Any, sig: int = 3) -> str:
    """Format a number to ``sig`` significant figures (``-0`` printed as ``0``).

    Examples
    --------
    >>> fmt(3.14159), fmt(-1e-12, 2), fmt(12345.6, 2), fmt(True), fmt("a")
    ('3.14', '-1e-12', '1.2e+04', 'True', 'a')
    """
    if isinstance(x, bool) or isinstance(x, str) or x is None:
        return str(x)
    if isinstance(x, int):
        return str(x)
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(v) or math.isinf(v):
        return str(v)
    s = f"{v:.{sig}g}"
    return "0" if s in ("-0", "0", "-0.0") else s


def show(values: Mapping[str, Any], sig: int = 3, title: str | None = None) -> None:
    """Print ``name = value`` lines, numbers rounded to ``sig`` significant figures.

    Examples
    --------
    >>> show({"slope": 1.00012, "n": 3})
    slope = 1
    n = 3
    """
    if title:
        print(title)
    for k, v in values.items():
        if isinstance(v, (list, tuple)):
            print(f"{k} = [" + ", ".join(fmt(x, sig) for x in v) + "]")
        else:
            print(f"{k} = {fmt(v, sig)}")


def below(x: float, floor: float = 1e-10, sig: int = 3) -> str:
    """``x`` rounded, or ``"< floor"`` when it is below ``floor``: rounding noise differs between
    machines in its digits and even its decade, so only its being below the floor is printed.

    Examples
    --------
    >>> below(3e-14), below(2.5e-6), below(0.0, 1e-12)
    ('< 1e-10', '2.5e-06', '< 1e-12')
    """
    return f"< {floor:g}" if x < floor else fmt(x, sig)
