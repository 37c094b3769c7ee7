"""Fits and event times of measured series, one copy each.

* :func:`line_fit`: the least-squares line through points, ordinary or weighted by per-point
  standard errors (then with the slope's standard error), optionally in log-log coordinates (a
  power law);
* :func:`first_time`, :func:`first_crossing`, :func:`settle_time`: the first saved time at which a
  condition holds, the first time a series reaches a level (interpolated between saved times), and
  the time after which it stays at or below a level.

Series are 1-D array-likes (numpy arrays, lists, or torch tensors on any device); results are
Python floats (a dict of them for a fit).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from scipy import stats

__all__ = ["line_fit", "first_time", "first_crossing", "settle_time", "fraction_interval", "mean_interval", "mean_stderr"]


def _series(a: Any, name: str) -> np.ndarray:
    """``a`` as a 1-D float64 numpy array (a tensor is copied to the CPU)."""
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    out = np.asarray(a, dtype=float)
    if out.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {out.shape}")
    return out


def _pair(x: Any, y: Any, least: int) -> tuple[np.ndarray, np.ndarray]:
    x, y = _series(x, "x"), _series(y, "y")
    if x.shape != y.shape or x.size < least:
        raise ValueError(f"x and y need the same length >= {least}, got {x.size} and {y.size}")
    return x, y


def line_fit(x: Any, y: Any, *, se: Any = None, loglog: bool = False) -> dict[str, float]:
    r"""Least-squares line ``y = slope x + intercept`` through the points (x_i, y_i).

    Ordinary least squares (:func:`numpy.polyfit`) when ``se`` is None. Given ``se``, the standard
    errors of the y_i, a weighted fit with weights ``1 / se_i^2`` that also returns the slope's
    standard error: the diagonal of the inverse normal matrix, scaled by the reduced chi-square
    when that exceeds 1 (so points that do not lie on a line widen the error bar instead of
    giving a falsely precise one):

    .. math::

        \mathrm{se}(b) = \sqrt{(X^T W X)^{-1}_{11} \max(1, \chi^2 / (m - 2))},
        \qquad \chi^2 = \sum_i w_i (y_i - a - b x_i)^2.

    Parameters
    ----------
    x, y : (m,) array-likes, m >= 2.
    se : (m,) standard errors of y, > 0; None for an unweighted fit.
    loglog : fit ``log y`` against ``log x`` (a power law ``y ~ x^slope``; x and y must be > 0).
        ``se`` is still the standard error of y; the fit uses ``se / y`` for ``log y`` (delta method).

    Returns
    -------
    dict with ``slope``, ``intercept`` and ``r2`` (coefficient of determination, weighted when ``se``
    is given; 1 when y is constant), plus ``slope_se`` when ``se`` is given.

    Examples
    --------
    >>> {k: round(v, 12) for k, v in line_fit([0, 1, 2], [1, 3, 5]).items()}
    {'slope': 2.0, 'intercept': 1.0, 'r2': 1.0}

    A power law with 1 % errors: on an exact line the slope's error is
    ``sigma / sqrt(sum (log x - mean)^2) = 0.01 / sqrt(5 (log 2)^2) = 0.0065``:

    >>> f = line_fit([1, 2, 4, 8], [1.0, 0.5, 0.25, 0.125], se=[0.01, 0.005, 0.0025, 0.00125], loglog=True)
    >>> round(f["slope"], 6), round(f["slope_se"], 4)
    (-1.0, 0.0065)
    """
    x, y = _pair(x, y, 2)
    sig = None
    if se is not None:
        sig = _series(se, "se")
        if sig.shape != y.shape:
            raise ValueError(f"se must have the length of y, {y.size}, got {sig.size}")
        if not np.all(sig > 0):
            raise ValueError("se must be > 0 (a zero error would give an infinite weight)")
    if loglog:
        if np.any(x <= 0) or np.any(y <= 0):
            raise ValueError("loglog=True needs x > 0 and y > 0")
        if sig is not None:
            sig = sig / y  # delta method: se(log y) = se(y) / y
        x, y = np.log(x), np.log(y)
    if sig is None:
        slope, intercept = np.polyfit(x, y, 1)
        res = y - (slope * x + intercept)
        ss_res = float((res**2).sum())
        ss_tot = float(((y - y.mean()) ** 2).sum())
        r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
        return {"slope": float(slope), "intercept": float(intercept), "r2": r2}
    w = 1.0 / sig**2
    X = np.stack([np.ones_like(x), x], axis=1)
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    coef = cov @ (X.T @ (w * y))
    dof = len(x) - 2
    chi2 = float(np.sum(w * (y - X @ coef) ** 2))
    ss_tot = float(np.sum(w * (y - np.sum(w * y) / np.sum(w)) ** 2))
    scale = max(1.0, chi2 / dof) if dof > 0 else 1.0
    return {"slope": float(coef[1]), "intercept": float(coef[0]), "r2": 1.0 - chi2 / ss_tot if ss_tot > 0 else 1.0,
            "slope_se": float(math.sqrt(cov[1, 1] * scale))}


def first_time(ts: Any, hit: Any, *, never: float = math.nan) -> float:
    """The first saved time at which ``hit`` is true; ``never`` if it never is.

    Parameters
    ----------
    ts : (T,) saved times; hit : (T,) booleans.

    Examples
    --------
    >>> first_time([0.0, 0.5, 1.0], [False, True, True]), first_time([0.0, 1.0], [False, False], never=math.inf)
    (0.5, inf)
    """
    ts = _series(ts, "ts")
    if isinstance(hit, torch.Tensor):
        hit = hit.detach().cpu().numpy()
    hit = np.asarray(hit, dtype=bool)
    if hit.shape != ts.shape:
        raise ValueError(f"hit must have the shape of ts, {ts.shape}, got {hit.shape}")
    idx = np.flatnonzero(hit)
    return float(ts[idx[0]]) if idx.size else float(never)


def first_crossing(ts: Any, y: Any, level: float, *, start: float = -math.inf, interpolate: bool = True,
                   never: float = math.nan) -> float:
    """The first time ``t >= start`` at which the series reaches ``level`` (``y >= level``).

    With ``interpolate``, the time is read off the straight line between the last saved point below
    the level and the first at or above it; without, it is the first saved time at or above it. A
    series already at or above the level at its first saved time in the window crosses there.

    Parameters
    ----------
    ts : (T,) saved times, increasing; y : (T,) values.
    level : the level to reach.
    start : only times ``>= start`` count (e.g. the time of a minimum, for a series that first
        falls and then rises again).
    never : returned when the series never reaches the level (nan; inf for a censored exit time
        that a median should rank last).

    Examples
    --------
    >>> first_crossing([0.0, 1.0, 2.0, 3.0], [1.0, 0.1, 0.3, 0.7], 0.5, start=1.0)
    2.5
    >>> first_crossing([0.0, 1.0, 2.0], [0.0, 0.4, 0.6], 0.5, interpolate=False)
    2.0
    """
    ts, y = _pair(ts, y, 1)
    level = float(level)
    if math.isnan(level):
        raise ValueError("level must be a number, got nan")
    idx = np.flatnonzero((y >= level) & (ts >= start))
    if idx.size == 0:
        return float(never)
    i = int(idx[0])
    if not interpolate or i == 0 or ts[i - 1] < start:
        return float(ts[i])
    a, b = y[i - 1], y[i]
    return float(ts[i - 1] + (level - a) / (b - a) * (ts[i] - ts[i - 1]))


def settle_time(ts: Any, y: Any, level: float) -> float:
    """``inf {T : y(t) <= level for every saved t >= T}``: the time after which the series stays at
    or below ``level``. The first saved time if it never exceeds the level; nan if its last saved
    value still does (it has not settled within the horizon).

    Examples
    --------
    >>> settle_time([0.0, 1.0, 2.0, 3.0], [2.0, 0.5, 1.5, 0.2], 1.0)
    3.0
    >>> settle_time([0.0, 1.0], [0.1, 2.0], 1.0)
    nan
    """
    ts, y = _pair(ts, y, 1)
    bad = np.flatnonzero(y > level)
    if bad.size == 0:
        return float(ts[0])
    last = int(bad[-1])
    return float(ts[last + 1]) if last + 1 < ts.size else math.nan


def fraction_interval(k: int, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a success fraction ``k / n`` at confidence ``level``
    (:meth:`scipy.stats.binomtest`'s ``proportion_ci``).

    Unlike the normal approximation it stays inside [0, 1] and does not collapse to a point at
    ``k = 0`` or ``k = n``, where a handful of trials still leaves real doubt.

    .. math::

        \\frac{\\hat p + \\frac{z^2}{2n} \\pm z \\sqrt{\\frac{\\hat p (1 - \\hat p)}{n} + \\frac{z^2}{4 n^2}}}{1 + \\frac{z^2}{n}},
        \\qquad \\hat p = k / n.

    Examples
    --------
    >>> [round(v, 3) for v in fraction_interval(16, 16)]  # 16 of 16 trials: at least 0.806
    [0.806, 1.0]
    >>> [round(v, 3) for v in fraction_interval(5, 10)]
    [0.237, 0.763]
    """
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if isinstance(k, bool) or int(k) != k or not 0 <= k <= n:
        raise ValueError(f"k must be an integer in [0, n = {n}], got {k!r}")
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return max(0.0, float(ci.low)), min(1.0, float(ci.high))


def mean_interval(x: Any, axis: int = 0, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Mean over ``axis`` and the half-width of its two-sided Student t interval at ``level``
    (the quantile from :data:`scipy.stats.t`).

    With one sample the half-width is nan (no spread to measure).

    Examples
    --------
    >>> m, h = mean_interval([1.0, 2.0, 3.0])
    >>> float(m), round(float(h), 3)   # t(2) = 4.303, sd / sqrt(3) = 0.577
    (2.0, 2.484)
    """
    x = np.asarray(x, float)
    n = x.shape[axis]
    m = x.mean(axis=axis)
    if n < 2:
        return m, np.full_like(m, np.nan)
    t = float(stats.t.ppf(0.5 + level / 2, n - 1))
    return m, t * x.std(axis=axis, ddof=1) / math.sqrt(n)


def mean_stderr(x: Any, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean and standard error over ``axis``, non-finite entries left out (the error is nan where
    fewer than two remain, the mean nan where none does). x: (..., T) -> (...), (...).

    .. math::

        \bar x = \frac1k \sum_i x_i, \qquad \mathrm{se} = \sqrt{\frac{1}{k(k-1)} \sum_i (x_i - \bar x)^2}.

    Examples
    --------
    >>> m, se = mean_stderr([[1.0, 2.0, 3.0], [4.0, float("nan"), 4.0]])
    >>> m.tolist(), [round(v, 4) for v in se.tolist()]
    ([2.0, 4.0], [0.5774, 0.0])
    >>> mean_stderr([1.0])[1].item()
    nan
    """
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    ok = np.isfinite(x)
    k = ok.sum(-1)
    mean = np.where(k > 0, np.where(ok, x, 0.0).sum(-1) / np.maximum(k, 1), np.nan)
    var = np.where(ok, (x - mean[..., None]) ** 2, 0.0).sum(-1) / np.maximum(k - 1, 1)
    return mean, np.where(k > 1, np.sqrt(var / np.maximum(k, 1)), np.nan)
