"""Printing numbers for the book: rounded so nbval comparisons survive last-bit differences."""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["fmt", "show", "below", "wilson"]

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


def wilson(counts: int | Sequence[int], n: int, unit: str = "trials") -> str:
    """95 % Wilson intervals (:func:`companion.fits.fraction_interval`) of ``counts`` successes out of
    ``n``, as the one string a ledger row's uncertainty holds.

    Examples
    --------
    >>> wilson(62, 64, "runs")
    '95% Wilson [0.893, 0.991] (64 runs)'
    >>> wilson([0, 8], 16)
    '95% Wilson [0, 0.194], [0.28, 0.72] (16 trials)'
    """
    from .fits import fraction_interval

    ks = [counts] if isinstance(counts, (int, np.integer)) else list(counts)
    cis = [fraction_interval(int(k), int(n)) for k in ks]
    return "95% Wilson " + ", ".join(f"[{lo:.3g}, {hi:.3g}]" for lo, hi in cis) + f" ({n} {unit})"
