"""How a cluster count evolves over a run: the largest count each trial reaches, when, and how long it
lasts, and the same for one count of interest (the episodes of a piecewise-constant series).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["count_history"]


def count_history(ts: Any, counts: Any, k: int) -> dict[str, np.ndarray]:
    """Per trial, the largest cluster count reached, when, and how long it lasts; the same for ``k``.

    Parameters
    ----------
    ts : (S,) saved times; counts : (S, trials) cluster counts at those times; k : the count of interest.

    Returns
    -------
    dict of (trials,) arrays: ``largest``, ``first`` (first saved time with the largest count),
    ``lasts`` (from then to the first saved time with another count: a lower bound, censored at
    ``ts[-1]``, when it never changes), and ``reached_k``, ``first_k``, ``lasts_k`` for the count
    ``k`` (nan where never reached).

    Examples
    --------
    >>> h = count_history([0.0, 0.25, 0.5, 0.75, 1.0], [[0], [4], [4], [3], [3]], 4)
    >>> h["largest"].tolist(), h["first"].tolist(), h["lasts"].tolist(), h["lasts_k"].tolist()
    ([4], [0.25], [0.5], [0.5])
    """
    ts, counts = np.asarray(ts, dtype=np.float64), np.asarray(counts)
    if counts.ndim != 2 or counts.shape[0] != ts.size:
        raise ValueError(f"counts must be (S, trials) with S = len(ts) = {ts.size}, got shape {counts.shape}")

    def episode(c: np.ndarray, value: int) -> tuple[float, float]:
        at = np.flatnonzero(c == value)
        if at.size == 0:
            return math.nan, math.nan
        after = np.flatnonzero((c != value) & (np.arange(c.size) > at[0]))
        end = ts[after[0]] if after.size else ts[-1]
        return float(ts[at[0]]), float(end - ts[at[0]])

    largest = counts.max(axis=0)
    first, lasts = np.array([episode(counts[:, j], largest[j]) for j in range(counts.shape[1])]).T
    first_k, lasts_k = np.array([episode(counts[:, j], k) for j in range(counts.shape[1])]).T
    return {"largest": largest, "first": first, "lasts": lasts, "reached_k": np.isfinite(first_k),
            "first_k": first_k, "lasts_k": lasts_k}
