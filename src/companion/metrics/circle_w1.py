r"""W1 on the circle between two empirical measures, exactly: the optimal transport cost with the
geodesic distance, from the difference of the two CDFs and its arc-length-weighted median.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["circle_w1_empirical"]


def circle_w1_empirical(theta: Any, phi: Any) -> np.ndarray:
    r"""W1 on the circle (geodesic cost) between the empirical measures of two sets of angles, per trial.

    .. math::

        W_1(\mu, \nu) = \min_c \int_0^{2\pi} |F_\mu(x) - F_\nu(x) - c|\, dx ,

    exactly: the difference of the CDFs is constant between consecutive points of the union, and the
    best ``c`` is its median weighted by arc length.

    Parameters
    ----------
    theta : (trials, n, 1) angles; phi : (trials, m, 1) angles (arrays or tensors).

    Returns
    -------
    (trials,) array.

    Examples
    --------
    Two equal clusters against the same two points moved by 0.1: W1 = 0.1; one point at 0 against
    a point at pi: pi.

    >>> a = np.array([[[0.0], [0.0], [np.pi], [np.pi]]])
    >>> circle_w1_empirical(a, a + 0.1).round(12).tolist(), circle_w1_empirical([[[0.0]]], [[[np.pi]]]).round(9).tolist()
    ([0.1], [3.141592654])
    """
    theta, phi = (np.asarray(a.detach().cpu() if isinstance(a, torch.Tensor) else a, dtype=np.float64) for a in (theta, phi))
    for name, a in (("theta", theta), ("phi", phi)):
        if a.ndim != 3 or a.shape[-1] != 1:
            raise ValueError(f"{name} must be (trials, n, 1) angles, got {a.shape}")
    if theta.shape[0] != phi.shape[0]:
        raise ValueError(f"theta and phi must have the same number of trials, got {theta.shape[0]} and {phi.shape[0]}")
    n, m = theta.shape[1], phi.shape[1]
    w = np.concatenate([np.full(n, 1.0 / n), np.full(m, -1.0 / m)])
    out = []
    for a, b in zip(theta[..., 0], phi[..., 0]):
        x = np.remainder(np.concatenate([a, b]), 2 * np.pi)
        order = np.argsort(x, kind="stable")
        x, D = x[order], np.cumsum(w[order])  # D: the CDF difference on [x_i, x_{i+1})
        arcs = np.diff(np.append(x, x[0] + 2 * np.pi))
        o = np.argsort(D, kind="stable")
        c = np.cumsum(arcs[o])
        med = D[o][min(int(np.searchsorted(c, 0.5 * c[-1])), len(c) - 1)]
        out.append(float(np.sum(arcs * np.abs(D - med))))
    return np.array(out)
