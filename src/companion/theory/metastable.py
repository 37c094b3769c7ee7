"""Paper D (Bruno, Pasqualotto, Agazzi), metastable clustering: closed forms of the linear phase.

Linearising the mean-field equation of x_i' = P_{x_i} (1/n) sum_j e^{beta <x_i, x_j>} x_j (USA)
around the uniform law on S^{d-1}, a degree-l spherical harmonic grows at

    gamma_l = l (l + d - 2) / beta * Gamma(d/2) (2/beta)^{d/2 - 1} I_{l + d/2 - 1}(beta)

(the Funk-Hecke eigenvalue of the kernel e^{beta <x, y>} times the Laplacian eigenvalue, over beta).
SA divides the weights by their sum, which at the uniform law is the l = 0 eigenvalue
Gamma(d/2) (2/beta)^{d/2 - 1} I_{d/2 - 1}(beta): the rates are divided by it. On the circle (d = 2)
this is gamma_k = k^2 I_k(beta) / beta (USA), divided by I_0(beta) for SA.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.special

from .._validate import check_beta, check_normalization, check_positive

__all__ = ["growth_rate", "gamma_k", "k_max", "linear_time", "predicted_centres", "hminus1_mean_square"]


def growth_rate(l: Any, beta: float, d: int = 2, normalization: str = "usa") -> np.ndarray:
    """Linear growth rate of degree-``l`` spherical harmonics around the uniform law on S^{d-1}.

    Parameters
    ----------
    l : int or array of ints >= 0
        Harmonic degree (on the circle, the Fourier mode k).
    beta : float
        Inverse temperature, > 0 (USA: <= 700 so that e^beta fits in float64).
    d : int
        Ambient dimension, >= 2.
    normalization : {"usa", "softmax"}

    Returns
    -------
    ndarray of the shape of ``l``.

    Examples
    --------
    >>> round(float(growth_rate(1, 1.0, 2, "usa")), 12) == round(float(scipy.special.iv(1, 1.0)), 12)
    True
    >>> round(float(growth_rate(3, 5.0, 2, "softmax")), 4)
    0.6827
    """
    beta = check_beta(beta)
    normalization = check_normalization(normalization)
    if int(d) != d or d < 2:
        raise ValueError(f"d must be an integer >= 2, got {d}")
    l = np.asarray(l)
    if not np.issubdtype(l.dtype, np.integer) or (l < 0).any():
        raise ValueError(f"l must be integers >= 0, got {l}")
    nu = d / 2 - 1
    lap = l * (l + d - 2) / beta
    if normalization == "softmax":
        return lap * scipy.special.ive(l + nu, beta) / scipy.special.ive(nu, beta)
    if beta > 700:
        raise ValueError(f"beta = {beta:g} too large for USA rates in float64 (e^beta overflows)")
    c = math.gamma(d / 2) * (2 / beta) ** nu
    return lap * c * scipy.special.ive(l + nu, beta) * math.exp(beta)


def gamma_k(k: Any, beta: float, normalization: str = "usa") -> np.ndarray:
    """Growth rate of Fourier mode k on the circle: k^2 I_k(beta) / beta (USA), / I_0(beta) for SA.

    Examples
    --------
    >>> round(float(gamma_k(3, 5.0)), 3)
    18.596
    """
    return growth_rate(k, beta, 2, normalization)


def k_max(beta: float, d: int = 2) -> int:
    """The fastest-growing mode (degree) argmax_{l >= 1} gamma_l; the same for SA and USA.

    Examples
    --------
    >>> [k_max(b) for b in (1, 5, 100)]
    [1, 3, 14]
    """
    beta = check_beta(beta)
    ls = np.arange(1, int(4 * math.sqrt(beta) + 2 * d + 10))
    return int(ls[np.argmax(growth_rate(ls, beta, d, "softmax"))])


def linear_time(n: Any, beta: float, normalization: str = "usa", d: int = 2) -> np.ndarray:
    """End of the linear phase t* = ln n / (2 gamma_kmax): an O(n^{-1/2}) mode reaches O(1).

    Examples
    --------
    >>> round(float(linear_time(20000, 5.0)), 4)
    0.2663
    """
    n = np.asarray(n, dtype=np.float64)
    if (n < 2).any():
        raise ValueError(f"n must be >= 2, got {n}")
    g = growth_rate(k_max(beta, d), beta, d, normalization)
    return np.log(n) / (2 * g)


def predicted_centres(theta0: Any, k: int) -> np.ndarray:
    """Cluster centres (2 pi j - arg mu_k) / k mod 2 pi, j = 0..k-1, mu_k = mean_j e^{-i k theta_j(0)}.

    These are the maxima of the mode-k part Re(mu_k e^{i k theta}) of the initial empirical measure;
    the linear phase amplifies that mode in place (its rate is real).

    Parameters
    ----------
    theta0 : (n,) or (n, 1) initial angles (array or tensor)
    k : int >= 1

    Returns
    -------
    (k,) sorted angles in [0, 2 pi)

    Examples
    --------
    >>> np.round(predicted_centres(np.array([0.5, 0.5 + np.pi]), 2), 6).tolist()
    [0.5, 3.641593]
    """
    if int(k) != k or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k}")
    t = np.asarray(theta0, dtype=np.float64).reshape(-1)
    mu = np.exp(-1j * k * t).mean()
    if abs(mu) == 0:
        raise ValueError("mode k of theta0 vanishes: the centres are undetermined")
    c = (2 * np.pi * np.arange(k) - np.angle(mu)) / k
    return np.sort(np.remainder(c, 2 * np.pi))


def hminus1_mean_square(n: Any) -> np.ndarray:
    r"""Expected squared H^{-1} norm of the empirical measure of n i.i.d. uniform angles minus the uniform law.

    With :math:`\|\rho\|_{H^{-1}}^2 = \sum_{k \ne 0} |m_k|^2 / k^2`, :math:`m_k = \frac1n \sum_j e^{ik\theta_j}`,
    and :math:`E|m_k|^2 = 1/n` for every :math:`k \ne 0`:

    .. math::

        E\,\|\mu_n - \tfrac{1}{2\pi}\|_{H^{-1}}^2 = \frac1n \sum_{k \ne 0} \frac{1}{k^2} = \frac{\pi^2}{3n},

    the scaling :math:`\|\rho_0\|_{H^{-1}} \sim n^{-1/2}` of paper D's Lemma E.3 (as cited in the review
    responses), with its constant.

    Examples
    --------
    >>> round(float(hminus1_mean_square(1)), 6), hminus1_mean_square([10, 100]).round(6).tolist()
    (3.289868, [0.328987, 0.032899])
    """
    n = np.asarray(n, dtype=np.float64)
    if (n < 1).any():
        raise ValueError(f"n must be >= 1, got {n}")
    return np.pi ** 2 / (3 * n)
