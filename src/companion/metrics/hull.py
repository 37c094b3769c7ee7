"""Whether tokens stay in the box of their initial coordinates (paper A, Lemma B.7 / Cor. B.8)."""
from __future__ import annotations

from typing import Any

import torch

__all__ = ["hull_excess"]


def hull_excess(xs: Any) -> float:
    r"""How far any coordinate of any token leaves its initial range at a later saved time.

    .. math::

        \max_{t, k, i} \max\Big(z_{ik}(t) - \max_j z_{jk}(0),\ \min_j z_{jk}(0) - z_{ik}(t)\Big),

    the maximum also over trials: <= 0 while every coordinate stays within
    ``[min_j z_jk(0), max_j z_jk(0)]``. Lemma B.7 gives 0 when V is diagonal with eigenvalues >= 0,
    the coordinates then being the dual eigenvectors ``phi_k^*``.

    Parameters
    ----------
    xs : (T, trials, n, d)
        Saved states, ``xs[0]`` the initial one (a tensor or an array).

    Returns
    -------
    float
        The largest excess over times, trials, tokens and coordinates.

    Examples
    --------
    >>> z = torch.tensor([[[[0.0, 1.0], [1.0, 0.0]]], [[[0.5, 0.5], [0.5, 1.5]]]])  # (2, 1, 2, 2)
    >>> hull_excess(z)
    0.5
    >>> hull_excess(z[:1])  # the initial state alone: on the boundary of its own box
    0.0
    """
    xs = torch.as_tensor(xs)
    hi0, lo0 = xs[0].amax(dim=-2), xs[0].amin(dim=-2)  # (trials, d)
    up = (xs.amax(dim=-2) - hi0).amax()
    down = (lo0 - xs.amin(dim=-2)).amax()
    return float(torch.maximum(up, down))
