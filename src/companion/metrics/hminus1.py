r"""The H^{-1} norm on the circle, computed exactly: the kernel of :math:`\sum_{k \ne 0} e^{ikx} / k^2`
summed over pairs of points by prefix sums over the sorted angles, O(n log n), no truncated series.
"""
from __future__ import annotations

import math

import torch

__all__ = ["hminus1_norm", "hminus1_distance"]


def hminus1_norm(theta: torch.Tensor) -> torch.Tensor:
    r"""Squared H^{-1} norm of the empirical measure of the angles minus the uniform law, per trial.

    .. math::

        \|\mu_n - \tfrac{1}{2\pi}\|_{H^{-1}}^2 = \sum_{k \ne 0} \frac{|m_k|^2}{k^2}
        = \frac{1}{n^2} \sum_{i, j} G(\theta_i - \theta_j), \qquad G(x) = \frac{\pi^2}{3} - \pi x + \frac{x^2}{2}
        \ (0 \le x \le 2\pi),

    ``G`` being the Fourier series :math:`\sum_{k \ne 0} e^{ikx} / k^2`; with the angles sorted, the
    pair sum is a prefix-sum computation, O(n log n) instead of O(n^2).

    Parameters
    ----------
    theta : (trials, n, 1) angles (any real values; taken mod 2 pi).

    Returns
    -------
    (trials,) tensor, float64, on theta's device.

    Examples
    --------
    Two antipodal tokens: m_k = 1 for even k, 0 for odd k, so the sum is 2 (pi^2 / 24) = pi^2 / 12:

    >>> th = torch.tensor([[[0.0], [math.pi]]], dtype=torch.float64)
    >>> round(float(hminus1_norm(th)[0]), 12) == round(math.pi ** 2 / 12, 12)
    True
    """
    if theta.ndim != 3 or theta.shape[-1] != 1:
        raise ValueError(f"theta must be (trials, n, 1) angles, got {tuple(theta.shape)}")
    x = torch.sort(torch.remainder(theta[..., 0].to(torch.float64), 2 * math.pi), dim=-1).values  # (trials, n)
    n = x.shape[-1]
    j = torch.arange(n, dtype=torch.float64, device=x.device)
    p1 = torch.cumsum(x, -1) - x  # sum of the earlier angles
    p2 = torch.cumsum(x * x, -1) - x * x
    # sum over i < j of G(x_j - x_i), with d = x_j - x_i in [0, 2 pi)
    d1 = j * x - p1  # sum of d
    d2 = j * x * x - 2 * x * p1 + p2  # sum of d^2
    pairs = (math.pi ** 2 / 3) * j - math.pi * d1 + 0.5 * d2
    return (n * math.pi ** 2 / 3 + 2 * pairs.sum(-1)) / n ** 2


def _pair_sum_g(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """sum_{i, j} w_i w_j G(x_i - x_j) per row, G(x) = pi^2/3 - pi x + x^2/2 on [0, 2 pi) (see
    :func:`hminus1_norm`), by prefix sums over the sorted angles. x, w: (B, m) -> (B,)."""
    x = torch.remainder(x.to(torch.float64), 2 * math.pi)
    x, order = torch.sort(x, dim=-1)
    w = torch.gather(w.to(torch.float64), -1, order)
    W = torch.cumsum(w, -1) - w  # sum over the earlier points of w_i, w_i x_i, w_i x_i^2
    P1 = torch.cumsum(w * x, -1) - w * x
    P2 = torch.cumsum(w * x * x, -1) - w * x * x
    pairs = w * ((math.pi ** 2 / 3) * W - math.pi * (x * W - P1) + 0.5 * (x * x * W - 2 * x * P1 + P2))
    return (math.pi ** 2 / 3) * (w * w).sum(-1) + 2 * pairs.sum(-1)


def hminus1_distance(theta: torch.Tensor, phi: torch.Tensor) -> torch.Tensor:
    r"""H^{-1} distance between the empirical measures of two sets of angles, per trial, exactly.

    .. math::

        \|\mu - \nu\|_{H^{-1}}^2 = \sum_{k \ne 0} \frac{|\hat\mu_k - \hat\nu_k|^2}{k^2}
        = \sum_{a, b} w_a w_b\, G(x_a - x_b),

    over the union of the points with weights :math:`1/n` (theta) and :math:`-1/m` (phi), ``G`` the
    kernel of :func:`hminus1_norm`; O((n + m) log(n + m)) by prefix sums, no truncated series.

    Parameters
    ----------
    theta : (trials, n, 1) angles; phi : (trials, m, 1) angles.

    Returns
    -------
    (trials,) float64 tensor.

    Examples
    --------
    Against the uniform law, approximated by a fine grid, it is :func:`hminus1_norm` (pi / sqrt(12)
    for two antipodal tokens):

    >>> th = torch.tensor([[[0.0], [math.pi]]], dtype=torch.float64)
    >>> grid = (torch.arange(20000, dtype=torch.float64) * 2 * math.pi / 20000)[None, :, None]
    >>> round(float(hminus1_distance(th, grid)[0]), 6), round(math.pi / math.sqrt(12), 6)
    (0.9069, 0.9069)
    """
    for name, a in (("theta", theta), ("phi", phi)):
        if a.ndim != 3 or a.shape[-1] != 1:
            raise ValueError(f"{name} must be (trials, n, 1) angles, got {tuple(a.shape)}")
    if theta.shape[0] != phi.shape[0]:
        raise ValueError(f"theta and phi must have the same number of trials, got {theta.shape[0]} and {phi.shape[0]}")
    n, m = theta.shape[1], phi.shape[1]
    x = torch.cat([theta[..., 0], phi[..., 0].to(theta)], dim=-1)
    w = torch.cat([torch.full_like(theta[..., 0], 1.0 / n), torch.full_like(x[:, n:], -1.0 / m)], dim=-1)
    return _pair_sum_g(x, w).clamp_min(0.0).sqrt()
