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
import torch

from .._validate import check_beta, check_normalization

__all__ = ["growth_rate", "gamma_k", "k_max", "linear_time", "predicted_centres", "hminus1_mean_square",
           "dominant_mode_quantiles", "neighbour_exponent", "cluster_instability_rate", "plateau_slope"]


def growth_rate(l: Any, beta: float, d: int = 2, normalization: str = "usa") -> np.ndarray:
    r"""Linear growth rate of degree-``l`` spherical harmonics around the uniform law on S^{d-1}.

    .. math::

        \gamma_l^{\rm USA} = \frac{l(l + d - 2)}{\beta}\, \Gamma\big(\tfrac d2\big)
        \Big(\frac{2}{\beta}\Big)^{d/2 - 1} I_{l + d/2 - 1}(\beta), \qquad
        \gamma_l^{\rm SA} = \frac{l(l + d - 2)}{\beta}\, \frac{I_{l + d/2 - 1}(\beta)}{I_{d/2 - 1}(\beta)},

    with :math:`I_\nu` the modified Bessel functions of the first kind.

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
    r"""Growth rate of Fourier mode k on the circle: k^2 I_k(beta) / beta (USA), / I_0(beta) for SA.

    .. math::

        \gamma_k^{\rm USA} = \frac{k^2 I_k(\beta)}{\beta}, \qquad
        \gamma_k^{\rm SA} = \frac{k^2 I_k(\beta)}{\beta\, I_0(\beta)} .

    Examples
    --------
    >>> round(float(gamma_k(3, 5.0)), 3)
    18.596
    """
    return growth_rate(k, beta, 2, normalization)


def k_max(beta: float, d: int = 2) -> int:
    r"""The fastest-growing mode (degree) argmax_{l >= 1} gamma_l; the same for SA and USA.

    .. math::

        k_{\max} = \operatorname*{arg\,max}_{l \ge 1} \gamma_l
        \quad (\text{SA and USA differ by a factor independent of } l).

    Examples
    --------
    >>> [k_max(b) for b in (1, 5, 100)]
    [1, 3, 14]
    """
    beta = check_beta(beta)
    ls = np.arange(1, int(4 * math.sqrt(beta) + 2 * d + 10))
    return int(ls[np.argmax(growth_rate(ls, beta, d, "softmax"))])


def linear_time(n: Any, beta: float, normalization: str = "usa", d: int = 2) -> np.ndarray:
    r"""End of the linear phase t* = ln n / (2 gamma_kmax): an O(n^{-1/2}) mode reaches O(1).

    .. math::

        t^* = \frac{\ln n}{2\, \gamma_{k_{\max}}}, \qquad n^{-1/2} e^{\gamma_{k_{\max}} t^*} = 1 .

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
    r"""Cluster centres (2 pi j - arg mu_k) / k mod 2 pi, j = 0..k-1, mu_k = mean_j e^{-i k theta_j(0)}.

    .. math::

        c_j = \frac{2\pi j - \arg \hat\mu_k}{k} \bmod 2\pi, \quad j = 0, \dots, k - 1, \qquad
        \hat\mu_k = \frac1n \sum_{m=1}^n e^{-ik\theta_m(0)} .

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


def dominant_mode_quantiles(m_k: Any, k: int, M: int) -> torch.Tensor:
    r"""``M`` angles at the quantiles of the dominant mode of an initial empirical measure.

    The dominant mode keeps only the Fourier coefficient ``m_k = (1/N) sum_j e^{i k theta_j(0)}`` of the
    empirical measure (and its conjugate):

    .. math::

        f_0(\theta) = \frac{1}{2\pi}\Big(1 + 2\,\mathrm{Re}\big(\overline{m_k}\, e^{ik\theta}\big)\Big),
        \qquad F_0(\theta) = \frac{\theta}{2\pi} + \frac{|m_k|}{\pi k}\big(\sin(k\theta - \arg m_k) + \sin \arg m_k\big),

    so that :math:`\int e^{ik\theta} f_0 = m_k`. The angles solve :math:`F_0(\theta_j) = (j + \tfrac12)/M`
    (Newton's method from the uniform quantiles; the density is positive for ``|m_k| < 1/2``). Started
    from them, particles follow the solution of the mean-field equation from :math:`f_0` up to
    :math:`O(1/M)`, and keep its k-fold symmetry when ``k`` divides ``M``.

    Parameters
    ----------
    m_k : (trials,) complex array or tensor, |m_k| < 1/2.
    k : int >= 1, the mode.
    M : int >= 1, angles per trial.

    Returns
    -------
    (trials, M, 1) float64 tensor of angles in [0, 2 pi) (on m_k's device when it is a tensor).

    Examples
    --------
    >>> th = dominant_mode_quantiles(np.array([0.1j]), 2, 4000)
    >>> m = torch.exp(2j * th[0, :, 0]).mean()
    >>> round(abs(float(m.real)), 6), round(float(m.imag), 6)
    (0.0, 0.1)
    """
    if int(k) != k or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k}")
    if int(M) != M or M < 1:
        raise ValueError(f"M must be an integer >= 1, got {M}")
    m = torch.as_tensor(m_k).to(torch.complex128).reshape(-1)
    a, arg = m.abs()[:, None], torch.angle(m)[:, None]
    if not bool((a < 0.5).all()):
        raise ValueError(f"|m_k| must be < 1/2 for a positive density, got max {float(a.max()):.3g}")
    q = (torch.arange(M, dtype=torch.float64, device=m.device) + 0.5) / M
    th = (2 * math.pi * q).expand(m.numel(), M).clone()
    for _ in range(50):  # |F'' / F'| <= 2 k a / (1 - 2 a): quadratic convergence from the uniform quantiles
        F = th / (2 * math.pi) + a / (math.pi * k) * (torch.sin(k * th - arg) + torch.sin(arg))
        step = (F - q) / ((1 + 2 * a * torch.cos(k * th - arg)) / (2 * math.pi))
        th = th - step
        if float(step.abs().max()) < 1e-15:
            break
    return torch.remainder(th, 2 * math.pi)[..., None]


def neighbour_exponent(beta: float, normalization: str = "usa") -> float:
    r"""How fast the modes next to k_max fade relative to it, as a power of N: :math:`(1 - \rho)/2`,
    :math:`\rho = \max_{j \ne k_{\max}} \gamma_j / \gamma_{k_{\max}}`.

    .. math::

        e(\beta) = \frac{1 - \rho}{2}, \qquad
        \rho = \max_{j \ne k_{\max}} \frac{\gamma_j(\beta)}{\gamma_{k_{\max}}(\beta)},

    with the growth rates :math:`\gamma_j` of :func:`growth_rate` on the circle (``normalization``
    ``"usa"`` or ``"sa"``).

    Every mode starts at :math:`O(N^{-1/2})`; when :math:`m_{k_{\max}}` reaches an O(1) level, at
    :math:`t \approx \ln N / (2\gamma_{k_{\max}})`, mode j is :math:`N^{-1/2} e^{\gamma_j t} =
    N^{-(1 - \gamma_j/\gamma_{k_{\max}})/2}`. A derived heuristic (not a statement of paper D) for the rate
    at which the remainder and the distance to the cluster measure can shrink with N.

    Examples
    --------
    >>> round(neighbour_exponent(2.0), 4), round(neighbour_exponent(5.0), 4)
    (0.1526, 0.0605)
    """
    k = k_max(beta)
    js = np.arange(1, 4 * k + 8)
    g = growth_rate(js, beta, 2, normalization)
    rho = float(np.max(g[js != k]) / g[k - 1])
    return (1.0 - rho) / 2.0


def cluster_instability_rate(beta: float, k: int, normalization: str = "usa") -> float:
    r"""Growth rate of the fastest perturbation of k equal point clusters equally spaced on the circle.

    With cluster angles :math:`\varphi_c` of mass 1/k, :math:`\dot\varphi_c = -\frac1k \sum_{c'}
    w(\varphi_c - \varphi_{c'})`, :math:`w(x) = e^{\beta\cos x}\sin x` (USA; SA divides by the weight
    sum :math:`\frac1k\sum_{c'} e^{\beta\cos(\varphi_c - \varphi_{c'})}`, the same for every cluster of
    the symmetric state). The linearisation is circulant, with eigenvalues

    .. math::

        \lambda_q = -\frac1k \sum_{m=1}^{k-1} w'\Big(\frac{2\pi m}{k}\Big)\Big(1 - \cos\frac{2\pi q m}{k}\Big),
        \qquad w'(x) = e^{\beta\cos x}(\cos x - \beta \sin^2 x),

    :math:`q = 0` the neutral common rotation; this returns :math:`\max_q \lambda_q`. For k = 2 (two
    antipodal clusters) it is :math:`e^{-\beta}`. A perturbation of size :math:`\delta` needs about
    :math:`\ln(1/\delta)/\lambda` to make two clusters merge: with :math:`\delta \propto N^{-a}`
    (:func:`neighbour_exponent`), the plateau grows like :math:`(a/\lambda) \ln N` (a derived heuristic).

    Parameters
    ----------
    beta : float > 0; k : int >= 2, the number of clusters; normalization : {"usa", "softmax"}.

    Returns
    -------
    float (> 0: the symmetric state is unstable).

    Examples
    --------
    >>> round(cluster_instability_rate(2.0, 2), 6) == round(math.exp(-2.0), 6)
    True
    >>> round(cluster_instability_rate(5.0, 3), 4)
    0.3489
    """
    beta = check_beta(beta)
    normalization = check_normalization(normalization)
    if int(k) != k or k < 2:
        raise ValueError(f"k must be an integer >= 2 (clusters that can merge), got {k}")
    m = np.arange(1, int(k))
    x = 2 * np.pi * m / k
    dw = np.exp(beta * np.cos(x)) * (np.cos(x) - beta * np.sin(x) ** 2)
    lam = [float(-(dw * (1 - np.cos(2 * np.pi * q * m / k))).sum() / k) for q in range(1, int(k))]
    rate = max(lam)
    if normalization == "softmax":
        rate /= float((math.exp(beta) + np.exp(beta * np.cos(x)).sum()) / k)  # the self-weight e^beta included
    return rate


def plateau_slope(beta: float, normalization: str = "usa") -> float:
    r"""The derived slope of the k_max-cluster plateau against ln N: the neighbouring modes' exponent
    over the instability rate of the k_max-cluster state (nan when k_max = 1: nothing to merge).

    .. math::

        \frac{d\,(\text{plateau})}{d \ln N} \approx \frac{e(\beta)}{\lambda(\beta, k_{\max})},

    with :math:`e` of :func:`neighbour_exponent` (an asymmetry of size :math:`N^{-e}` when the clusters
    form) and :math:`\lambda` of :func:`cluster_instability_rate` (the rate at which it grows until two
    clusters merge). A derived heuristic, not a statement of paper D.

    Examples
    --------
    >>> round(plateau_slope(2.0), 2), math.isnan(plateau_slope(1.0))
    (1.13, True)
    """
    k = k_max(beta)
    return neighbour_exponent(beta, normalization) / cluster_instability_rate(beta, k, normalization) if k >= 2 else math.nan
