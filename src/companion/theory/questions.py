"""Closed forms derived for the open questions of the chapter "beyond" (no paper states them).

Pure functions, no simulation; each docstring states its derivation, and the experiments of
:mod:`companion.experiments.beyond` check them against the simulator where they must hold:

* Question 1 (paper A, Thm. 4.2), anisotropic random adapters: :func:`aniso_level`, the stationary
  level at ``eta_L = sqrt(L)`` direction by direction;
* Question 2 (papers A and D), ``V = I + eps E`` in paper D's metastable dynamics:
  :func:`lora_direction` (the rank-1 unit adapter), :func:`traceless_part`, :func:`lora_rates`,
  :func:`lora_frequency`, :func:`lora_forcing`, :func:`lora_merge_rate`, :func:`lora_switch_share`
  and :func:`lora_switch_eps`;
* Question 3 (paper B, Conjecture 1): :func:`terminal_prediction`, the linear stability of the two
  candidate end states, and :func:`translation_rate` in the terminal map's family;
* Question 4 (paper C, Sec. 7.3): :func:`split_prediction`, the block criterion per sign split;
* Question 5 (paper A, Sec. 4.2), weights that vary along depth: :func:`tracking_lag`,
  :func:`turning_rate`, :func:`ramp_depths` (with :func:`ramp_area`) and :func:`gap_closing_angle`.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.special
import torch

from .._validate import check_normalization
from . import metastable as th_meta
from . import spectral as th_spec

__all__ = [
    "aniso_level",
    "lora_direction", "traceless_part", "lora_rates", "lora_frequency", "lora_forcing", "lora_merge_rate",
    "lora_switch_share", "lora_switch_eps",
    "terminal_prediction", "translation_rate",
    "split_prediction",
    "tracking_lag", "turning_rate", "ramp_depths", "ramp_area", "gap_closing_angle",
]


# =============================================================================== Question 1
def aniso_level(eigvals, weights, kappa: float, n: int) -> float:
    r"""Stationary ``E sum_i (1 - <x_i, u_1>^2)`` at ``eta_L = sqrt(L)`` for anisotropic adapters
    (derived, leading order near consensus).

    The adapter is ``s u v^T`` with ``u ~ N(0, diag(w))`` (``sum w = 1``, eigenbasis of V),
    ``v ~ N(0, I/d)`` and ``s = d sqrt(kappa)``, so that ``w = 1/d`` is paper A's isotropic case
    with noise magnitude kappa. Per unit time the noise ``G x`` has covariance ``diag(k)``,
    ``k_j = d kappa w_j``. Expanding the normalised layer map to second order in the tangential
    coordinates ``xi_i = <x, e_i>`` (Itô) gives, for each ``i >= 2``,

    .. math::

        \frac{d}{dt} E\xi_i^2 = k_i - \bigl(2(\lambda_1 - \lambda_i) + 4(k_i - k_1) + K\bigr) E\xi_i^2,
        \qquad K = \sum_j k_j = d\kappa,

    hence the level ``n sum_{i>=2} k_i / (2(lambda_1 - lambda_i) + 4(k_i - k_1) + K)``. With
    ``w = 1/d`` it is eq. (21) exactly; noise along ``u_1`` (``k_1``) lowers the damping.

    Parameters
    ----------
    eigvals : (d,) eigenvalues of V = A, lambda_1 first and simple.
    weights : (d,) non-negative, summing to 1: the covariance of u in V's eigenbasis.
    kappa : isotropic-equivalent noise magnitude (> 0); n : tokens.

    Returns
    -------
    float, the predicted level (the sum over the n tokens).

    Examples
    --------
    >>> from companion.theory.lora_depth import stationary_deviation
    >>> lam = [1.0, 0.5, 0.25]
    >>> round(aniso_level(lam, [1 / 3] * 3, 0.05, 8), 6) == round(stationary_deviation(lam, 0.05, 8), 6)
    True
    >>> round(aniso_level(lam, [0.2, 0.8, 0.0], 0.01, 1) / aniso_level(lam, [0.2, 0.0, 0.8], 0.01, 1), 3)
    1.454
    """
    lam = np.asarray(eigvals, dtype=float).reshape(-1)
    w = np.asarray(weights, dtype=float).reshape(-1)
    if lam.size < 2 or not np.all(lam[1:] < lam[0]):
        raise ValueError(f"eigvals must start with a simple top eigenvalue, got {lam.tolist()}")
    if w.shape != lam.shape or np.any(w < 0) or not math.isclose(w.sum(), 1.0, rel_tol=1e-9):
        raise ValueError(f"weights must be {lam.size} non-negative numbers summing to 1, got {w.tolist()}")
    if not (kappa > 0 and math.isfinite(kappa)):
        raise ValueError(f"kappa must be a positive number, got {kappa!r}")
    d = lam.size
    k = d * kappa * w
    denom = 2 * (lam[0] - lam[1:]) + 4 * (k[1:] - k[0]) + d * kappa
    if np.any(denom <= 0):
        raise ValueError(f"no localised stationary law: the damping 2 gap + 4 (k_i - k_1) + K is {denom.tolist()}")
    return float(n * np.sum(k[1:] / denom))



# =============================================================================== Question 2
def lora_direction(angle: float, d: int) -> np.ndarray:
    """The rank-1 unit adapter ``E = u v^T`` with ``u = e_1`` and ``v = cos(angle) e_1 + sin(angle) e_2``
    (angle in degrees), in dimension d: ``tr E = cos(angle)``, ``||E|| = 1``.

    Examples
    --------
    >>> lora_direction(0.0, 2).tolist(), lora_direction(90.0, 3)[0].round(12).tolist()
    ([[1.0, 0.0], [0.0, 0.0]], [0.0, 1.0, 0.0])
    """
    if int(d) != d or d < 2:
        raise ValueError(f"d must be an integer >= 2, got {d!r}")
    if not math.isfinite(angle):
        raise ValueError(f"angle must be a finite number of degrees, got {angle!r}")
    u, v = np.zeros(int(d)), np.zeros(int(d))
    u[0] = 1.0
    v[0], v[1] = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    return np.outer(u, v)


def _adapter(E) -> np.ndarray:
    E = np.asarray(E, dtype=float)
    if E.ndim != 2 or E.shape[0] != E.shape[1] or E.shape[0] < 2 or not np.all(np.isfinite(E)):
        raise ValueError(f"E must be a finite (d, d) matrix with d >= 2, got shape {E.shape}")
    return E


def traceless_part(E) -> np.ndarray:
    r"""``S_0``, the traceless symmetric part of an adapter direction E (the part that forces degree 2,
    :func:`lora_forcing`).

    .. math:: S_0 = \tfrac12 (E + E^\top) - \frac{\operatorname{tr} E}{d}\, I .

    Parameters
    ----------
    E : (d, d) finite matrix, d >= 2.

    Returns
    -------
    (d, d) ndarray.

    Examples
    --------
    >>> traceless_part(lora_direction(0.0, 2)).tolist()
    [[0.5, 0.0], [0.0, -0.5]]
    """
    E = _adapter(E)
    d = E.shape[0]
    return (E + E.T) / 2 - np.trace(E) / d * np.eye(d)


def _circle_parts(E) -> tuple[float, float, float, float]:
    """On the circle, ``E = e0 I + w J + S0`` with ``S0 = a [[cos 2 alpha, sin 2 alpha], [sin 2 alpha, -cos 2 alpha]]``:
    returns (e0, w, a, alpha); alpha is the axis S0 stretches (its eigenvalue +a)."""
    E = _adapter(E)
    if E.shape != (2, 2):
        raise ValueError(f"E must be 2 x 2 on the circle, got shape {E.shape}")
    S = traceless_part(E)
    return float(np.trace(E) / 2), float((E[1, 0] - E[0, 1]) / 2), float(math.hypot(S[0, 0], S[0, 1])), \
        0.5 * math.atan2(S[0, 1], S[0, 0])


def lora_rates(l: Any, beta: float, E, eps: float, normalization: str = "softmax") -> np.ndarray:
    r"""Linear growth rates around the uniform law with ``V = I + eps E`` (``Q = K = I``), to first
    order in eps: the mean over the degree-l multiplet (derived; on the circle every mode k >= 2).

    Linearising paper D's mean-field equation at the uniform law (as it does for V = I) with
    ``E = (tr E / d) I + W + S_0`` (W antisymmetric, S_0 traceless symmetric): the isotropic part
    scales the field, hence every rate; W couples a degree to itself through a Hermitian operator
    (rotations: imaginary shifts, :func:`lora_frequency`); S_0 couples degree l to l +- 2 and, in
    d >= 3, to itself through a traceless block (a rank-2 tensor operator, Wigner-Eckart), so it
    splits a multiplet without moving its mean. On the circle the only degenerate pair is k = +-1.

    .. math::

        \bar\gamma_l(\varepsilon) = \Big(1 + \varepsilon\,\frac{\operatorname{tr} E}{d}\Big)\gamma_l + O(\varepsilon^2),

    with :math:`\gamma_l` paper D's rate (:func:`companion.theory.metastable.growth_rate`). The
    selected degree argmax of these rates is k_max for small eps: the factor is the same for all l.

    Parameters
    ----------
    l : int or array of degrees >= 1; beta : inverse temperature; E : (d, d) adapter direction
    (d = 2: the circle, 3: S^2); eps : its size; normalization : "softmax" (SA) or "usa".

    Returns
    -------
    ndarray of the shape of l.

    Examples
    --------
    >>> [round(float(lora_rates(2, 2.0, lora_direction(a, 2), 0.1)), 4) for a in (0.0, 90.0)]
    [0.6347, 0.6045]
    """
    E = _adapter(E)
    d = E.shape[0]
    return (1 + eps * np.trace(E) / d) * th_meta.growth_rate(l, beta, d, normalization)


def lora_frequency(k: Any, beta: float, E, eps: float, normalization: str = "softmax") -> np.ndarray:
    r"""Rotation frequency of Fourier mode k on the circle with ``V = I + eps E`` (derived, first
    order): the antisymmetric part ``w J`` of E turns the empirical moment
    ``m_k = (1/n) sum_j e^{i k theta_j}`` as ``e^{(gamma_k + i Omega_k) t}``.

    The antisymmetric part adds ``eps w <x, (1/Z) int e^{beta <x,y>} y dmu(y)>`` to the angular
    velocity; linearised at the uniform law (``I_n = I_n(beta)``, ``I_k' = (I_{k-1} + I_{k+1})/2``):

    .. math::

        \Omega_k^{\rm SA} = k\,\varepsilon w\Big(\frac{I_1 + I_k'}{I_0} - \frac{I_1 I_k}{I_0^2}\Big),
        \qquad \Omega_k^{\rm USA} = k\,\varepsilon w\,(I_1 + I_k').

    The first term is the rigid rotation of the uniform law, the others the pattern's own drift.

    Examples
    --------
    >>> round(float(lora_frequency(2, 2.0, lora_direction(90.0, 2), 0.05)), 5)  # E = e1 e2^T: w = -1/2, clockwise
    -0.04412
    >>> float(lora_frequency(3, 2.0, lora_direction(0.0, 2), 0.05))  # symmetric E: no rotation
    0.0
    """
    _, w, _, _ = _circle_parts(E)
    normalization = check_normalization(normalization)
    k = np.asarray(k)
    iv = lambda n: scipy.special.ive(n, beta)  # noqa: E731  (the common factor e^-beta cancels for SA)
    I0, I1, Ik, Ikp = iv(0), iv(1), iv(k), (iv(k - 1) + iv(k + 1)) / 2
    if normalization == "softmax":
        return k * eps * w * ((I1 + Ikp) / I0 - I1 * Ik / I0**2)
    return k * eps * w * (I1 + Ikp) * math.exp(beta)


def lora_forcing(t: Any, beta: float, E, eps: float, normalization: str = "softmax") -> np.ndarray:
    r"""Expected ``<x^T S_0 x>`` over the tokens at time t, from the uniform law with ``V = I + eps E``
    (derived, first order): the traceless symmetric part S_0 makes the uniform law move.

    At the uniform law the field is ``(c_1/c_0) eps P_x E x`` (:math:`c_1 x = \int e^{\beta\langle
    x,y\rangle} y\,d\sigma`, :math:`c_0` the normaliser; ``c_1/c_0 = beta gamma_1 / (d - 1)``), whose
    divergence on the sphere is ``tr E - d x^T E x``: degree 2 is forced along ``q = x^T S_0 x``, with
    :math:`\int q^2 d\sigma = 2\operatorname{tr}S_0^2/(d(d+2))`, and grows at gamma_2:

    .. math::

        \mathbb E\langle q\rangle_t = \varepsilon\,\frac{\beta\gamma_1}{d - 1}\,\frac{2\operatorname{tr}S_0^2}{d + 2}\,
        \frac{e^{\gamma_2 t} - 1}{\gamma_2}.

    Examples
    --------
    >>> round(float(lora_forcing(2.0, 2.0, lora_direction(0.0, 2), 0.01)), 6)
    0.006781
    """
    E = _adapter(E)
    d = E.shape[0]
    g1, g2 = (float(th_meta.growth_rate(j, beta, d, normalization)) for j in (1, 2))
    S0 = traceless_part(E)
    return eps * beta * g1 / (d - 1) * 2 * float(np.sum(S0**2)) / (d + 2) * np.expm1(g2 * np.asarray(t, float)) / g2


def lora_merge_rate(beta: float, E, eps: float, normalization: str = "softmax") -> dict[str, float]:
    r"""Two antipodal clusters of equal mass on the circle with ``V = I + eps E``: where they settle
    and how fast they merge (derived, exact for point clusters to first order in the displacement).

    With the pair's axis at angle ``alpha + psi`` (alpha: the axis S_0 stretches) and ``x`` its
    departure from antipodal, the cluster equations give
    ``psi' = eps (w - a sin 2 psi) tanh(beta)`` (SA; times cosh(beta) for USA), so the pair settles
    at ``sin 2 psi* = w / a``, and

    .. math::

        x' = \lambda x,\qquad \lambda = \frac{(1 + \varepsilon e_0)e^{-\beta} - \varepsilon\sqrt{a^2 - w^2}\,e^{\beta}}{\cosh\beta}
        \quad(\text{SA; USA without } \cosh\beta),

    ``e0 = tr E / 2``. For ``eps = 0`` it is paper D's ``e^{-beta}`` (:func:`companion.theory.metastable.
    cluster_instability_rate`). The merging mode is damped beyond

    .. math:: \varepsilon^* = \frac{e^{-\beta}}{\sqrt{a^2 - w^2}\,e^{\beta} - e_0 e^{-\beta}}:

    above it the two-cluster plateau does not end. For ``E = u v^T`` (unit vectors at angle theta)
    ``sqrt(a^2 - w^2) = |cos theta| / 2``: an adapter with v orthogonal to u never stabilises it.

    Returns
    -------
    dict with ``rate``, ``orientation`` (the axis angle alpha + psi*, radians; nan if the pair keeps
    turning, |w| > a) and ``threshold`` (eps*, inf when there is none).

    Examples
    --------
    >>> r = lora_merge_rate(2.0, lora_direction(0.0, 2), 0.0)
    >>> round(r["rate"], 6) == round(math.exp(-2.0) / math.cosh(2.0), 6), round(r["threshold"], 4)
    (True, 0.0373)
    >>> round(lora_merge_rate(2.0, lora_direction(60.0, 2), 0.0)["threshold"], 4)  # |cos 60| = 1/2: about twice
    0.0746
    """
    normalization = check_normalization(normalization)
    e0, w, a, alpha = _circle_parts(E)
    if abs(w) > a:
        return {"rate": math.nan, "orientation": math.nan, "threshold": math.inf}
    c = math.sqrt(max(a * a - w * w, 0.0))
    psi = 0.5 * math.asin(w / a) if a > 0 else 0.0
    scale = math.cosh(beta) if normalization == "softmax" else 1.0
    rate = ((1 + eps * e0) * math.exp(-beta) - eps * c * math.exp(beta)) / scale
    den = c * math.exp(beta) - e0 * math.exp(-beta)
    return {"rate": rate, "orientation": alpha + psi, "threshold": math.exp(-beta) / den if den > 0 else math.inf}


def _switch_parts(n: int, beta: float, E, level: float, normalization: str) -> tuple[float, int, float, float, float]:
    """(a, k_max, gamma_1, gamma_2, gamma_kmax) for the mode switch, arguments checked."""
    _, _, a, _ = _circle_parts(E)
    k = th_meta.k_max(beta)
    if k == 2:
        raise ValueError(f"beta = {beta:g} selects k_max = 2 already: there is no switch to 2")
    if not (0 < level < 1) or int(n) != n or n < 2 or level * math.sqrt(n) <= 1:
        raise ValueError(f"need 0 < level < 1, an integer n >= 2 and level sqrt(n) > 1 (the modes start below the level); "
                         f"got level {level!r}, n {n!r}")
    if a == 0:
        raise ValueError("E has no traceless symmetric part: nothing forces degree 2")
    g1, g2, gk = (float(th_meta.growth_rate(j, beta, 2, normalization)) for j in (1, 2, k))
    return a, k, g1, g2, gk


def lora_switch_share(eps: float, n: int, beta: float, E, level: float, normalization: str = "softmax") -> float:
    r"""Share of runs of n uniform tokens on the circle whose linear phase selects degree 2 rather than
    k_max, with ``V = I + eps E`` (derived, leading order, ignoring every mode but k_max and the
    forced 2).

    Mode k_max starts at ``R n^{-1/2}`` (``R^2`` exponential with mean 1) and grows at gamma_k; the
    forced mode 2 is ``|eps| a beta gamma_1 (e^{gamma_2 t} - 1) / gamma_2`` (a: the eigenvalue of
    S_0; :func:`lora_forcing`). Degree 2 reaches the level first when

    .. math::

        R < \ell\sqrt n\,(1 + 1/x)^{-\gamma_k/\gamma_2}, \qquad x = \frac{|\varepsilon| a\beta\gamma_1}{\ell\gamma_2},
        \qquad\text{share} = 1 - \exp\!\big(-\ell^2 n\,(1 + 1/x)^{-2\gamma_k/\gamma_2}\big).

    Examples
    --------
    >>> [round(lora_switch_share(e, 400, 5.0, lora_direction(0.0, 2), 0.2), 3) for e in (0.0, 0.05, 0.5)]
    [0.0, 0.152, 0.997]
    """
    a, _, g1, g2, gk = _switch_parts(n, beta, E, level, normalization)
    x = abs(eps) * a * beta * g1 / (level * g2)
    return 0.0 if x == 0 else float(1 - math.exp(-level**2 * n * (1 + 1 / x) ** (-2 * gk / g2)))


def lora_switch_eps(n: int, beta: float, E, level: float, normalization: str = "softmax") -> float:
    r"""The adapter size at which a typical (R = 1) k_max mode and the forced degree 2 reach the level
    together (:func:`lora_switch_share` = 1 - 1/e there):

    .. math::

        \varepsilon_{\rm sel} = \frac{\ell\,\gamma_2}{a\,\beta\gamma_1\,\big((\ell\sqrt n)^{\gamma_2/\gamma_{k}} - 1\big)},
        \qquad k = k_{\max},

    which falls like ``n^{-gamma_2 / (2 gamma_k)}``: the more tokens, the smaller the adapter that
    moves the selected mode to 2.

    Examples
    --------
    >>> e = lora_switch_eps(400, 5.0, lora_direction(0.0, 2), 0.2)
    >>> round(e, 3), round(lora_switch_share(e, 400, 5.0, lora_direction(0.0, 2), 0.2), 4) == round(1 - math.exp(-1), 4)
    (0.125, True)
    """
    a, _, g1, g2, gk = _switch_parts(n, beta, E, level, normalization)
    return level * g2 / (a * beta * g1 * ((level * math.sqrt(n)) ** (g2 / gk) - 1))



# =============================================================================== Question 3
def terminal_prediction(v_eigs, b_eigs, beta: float) -> dict[str, Any]:
    r"""Which end states of paper B's dynamics are linearly stable, for diagonal V and B (derived).

    Candidates (paper B, App. B): the consensus ``delta_v`` on the top eigenvector of V (F), and the
    balanced bipolar state ``(delta_v + delta_{-v})/2`` on the eigenvector of largest |eigenvalue|
    (F^abs). With ``mu = <v, V v>``, ``alpha = tanh(beta <v, B v>)`` and another eigenpair
    ``(lambda_k, e_k)``, a first-order perturbation leaves the attention weights unchanged, and:

    .. math::

        \text{one token: } -\mu\alpha, \qquad
        \text{both groups along } e_k\text{: } \lambda_k - \mu\alpha, \qquad
        \text{groups opposite: } (\lambda_k - \mu)\alpha .

    Consensus (``alpha = 1``) is stable iff ``mu > 0`` and ``lambda_k < mu``; the bipolar state
    on F^abs (``mu < 0``) iff ``<v, B v> < 0`` and every ``lambda_k < |mu| tanh(beta |<v, B v>|)``.

    Parameters
    ----------
    v_eigs, b_eigs : (d,) diagonals of V and B; beta : inverse temperature.

    Returns
    -------
    dict with ``F``, ``Fabs`` (indices), ``F_stable``, ``Fabs_stable`` (bool) and ``label``: one of
    ``"F"``, ``"both"``, ``"Fabs"``, ``"neither"``.

    Examples
    --------
    >>> terminal_prediction([-1.0, 1.0, -2.0], [-1.0, -1.0, 1.0], 100.0)["label"]  # paper B, Fig. 3
    'F'
    >>> terminal_prediction([-1.0, 1.0, -3.0], [-2.0, -1.0, -0.1], 30.0)["label"]  # tanh(3) * 3 > 1
    'both'
    """
    v = np.asarray(v_eigs, float).reshape(-1)
    b = np.asarray(b_eigs, float).reshape(-1)
    if v.shape != b.shape or v.size < 2:
        raise ValueError(f"v_eigs and b_eigs must be two diagonals of one length >= 2, got {v.tolist()} and {b.tolist()}")
    if not (beta > 0 and math.isfinite(beta)):
        raise ValueError(f"beta must be a positive number, got {beta!r}")
    F, A = int(np.argmax(v)), int(np.argmax(np.abs(v)))
    others = lambda i: np.delete(v, i)  # noqa: E731
    F_stable = bool(v[F] > 0 and np.all(others(F) < v[F]))
    mu, alpha = v[A], math.tanh(beta * b[A])
    Fabs_stable = bool(mu < 0 and mu * alpha > 0 and np.all(others(A) - mu * alpha < 0) and np.all((others(A) - mu) * alpha < 0))
    label = {(True, True): "both", (True, False): "F", (False, True): "Fabs", (False, False): "neither"}[(F_stable, Fabs_stable)]
    return {"F": F, "Fabs": A, "F_stable": F_stable, "Fabs_stable": Fabs_stable, "label": label}


def translation_rate(rho: float, x: float) -> float:
    """Growth rate of the mode moving both groups of the bipolar state on F^abs along F, in the map's
    family (``mu = -1``, ``lambda_F = rho``, ``beta <v, B v> = -x``): ``rho - tanh(x)`` (derived,
    :func:`terminal_prediction`).

    Examples
    --------
    >>> round(translation_rate(0.5, 1.0), 4)
    -0.2616
    """
    return float(rho - math.tanh(x))



# =============================================================================== Question 4
def split_prediction(lambdas, beta: float, n: int) -> dict[int, dict[str, bool]]:
    """For each split ``n_+ = 1 .. n-1`` of n tokens on +-e_p (p the most negative eigenvalue of V):
    stable by the block criterion (Thm. 5.2 with the singleton correction,
    :func:`companion.theory.spectral.sign_split_stable_blocks`) and by Thm. 5.2 as stated.

    Returns
    -------
    dict ``n_plus -> {"blocks": bool, "theorem": bool}``.

    Examples
    --------
    >>> p = split_prediction((-0.5, -1.0, -1.5), 0.25, 4)  # |ln 3| > 2 beta 1.5: only the balanced split
    >>> [(k, v["blocks"], v["theorem"]) for k, v in sorted(p.items())]
    [(1, False, False), (2, True, True), (3, False, False)]
    >>> [k for k, v in split_prediction((-0.5, -1.0, -1.5), 0.1, 3).items() if v["blocks"]]  # no stable split
    []
    """
    lam = torch.as_tensor(lambdas, dtype=torch.float64)
    if not bool((lam < 0).all()):
        raise ValueError(f"lambdas must be negative (V negative definite), got {lam.tolist()}")
    if int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    p = int(torch.argmin(lam))
    return {k: {"blocks": th_spec.sign_split_stable_blocks(lam, p, beta, k, n - k),
                "theorem": th_spec.sign_split_stable_theorem(lam, p, beta, k, n - k)} for k in range(1, n)}



# =============================================================================== Question 5
def tracking_lag(omega: float, gap: float) -> float:
    r"""Steady lag (radians) of a cluster behind the top eigenvector of a value matrix turning at
    angular speed ``omega`` in the plane of its top two eigenvectors (derived); nan when
    ``omega > gap / 2``, where no steady lag exists.

    For a consensus (every token at x) the attention weights sum to one whatever A and beta, so
    paper A's eq. (8) reduces to ``x' = P_x V(t) x``. With ``V(t) = R(omega t) diag(lambda) R(omega t)^T``
    and x in the plane at angle phi, the angle ``psi = phi - omega t`` to the top eigenvector obeys
    Adler's equation

    .. math::

        \dot\psi = -\omega - \frac{g}{2}\sin 2\psi, \qquad g = \lambda_1 - \lambda_2,

    whose stable fixed point :math:`\psi^* = -\tfrac12 \arcsin(2\omega / g)` (the cluster lags
    behind) exists iff :math:`\omega \le g/2`. To first order the lag is :math:`\omega / g`: the
    adiabatic answer (the top eigenvector of the current V) is exact only in the slow limit.

    Parameters
    ----------
    omega : angular speed of the eigenvectors (>= 0); gap : ``lambda_1 - lambda_2`` (> 0).

    Returns
    -------
    float, ``|psi*|``, or nan above ``gap / 2``.

    Examples
    --------
    >>> round(tracking_lag(0.025, 0.5), 5), tracking_lag(0.3, 0.5)
    (0.05008, nan)
    """
    if not (gap > 0 and math.isfinite(gap)):
        raise ValueError(f"gap must be a positive number, got {gap!r}")
    if not (omega >= 0 and math.isfinite(omega)):
        raise ValueError(f"omega must be a non-negative number, got {omega!r}")
    return 0.5 * math.asin(2 * omega / gap) if 2 * omega <= gap else math.nan


def turning_rate(omega: float, gap: float) -> float:
    r"""Mean angular speed of the cluster following eigenvectors that turn at ``omega`` (derived from
    the equation of :func:`tracking_lag`).

    Locked (``omega <= g/2``) it turns with them. Above, psi slips by pi in every period
    :math:`2\pi / \sqrt{4\omega^2 - g^2}`, so the cluster turns at

    .. math::

        \bar\Omega = \omega - \sqrt{\omega^2 - g^2/4} \qquad (\omega > g/2),

    which falls to 0 as omega grows: a fast path leaves the tokens behind.

    Parameters
    ----------
    omega : angular speed of the eigenvectors (>= 0); gap : ``lambda_1 - lambda_2`` (> 0).

    Returns
    -------
    float, the mean angular speed of the cluster.

    Examples
    --------
    >>> turning_rate(0.2, 0.5), round(turning_rate(0.5, 0.5), 5)
    (0.2, 0.06699)
    """
    tracking_lag(omega, gap)  # the argument checks
    return float(omega) if 2 * omega <= gap else float(omega - math.sqrt(omega * omega - gap * gap / 4))


def ramp_depths(S: float, eps: float, tau: float) -> tuple[float, float]:
    r"""Bifurcation depth of paper A's Sec. 4.2 setting (Q = K = I) under a ramp
    ``V(t) = diag(1, 1 - eps(t))``, ``eps(t) = eps min(t / tau, 1)``, read from the frozen formula in
    two ways (derived).

    With V frozen, a base cluster leaves when ``eps t`` reaches ``S``
    (:func:`companion.theory.lora_depth.switch_time` is ``S / eps``, ``S = switch_time(C, 1)``):
    the logits of the rescaled tokens carry :math:`e^{-2\varepsilon t}` on the second coordinate.
    With a diagonal path the flow map is :math:`\exp\int_0^t V`, so they carry
    :math:`e^{-2E(t)}`, :math:`E(t) = \int_0^t \varepsilon(s)\,ds`, and the same argument gives

    .. math::

        \text{pointwise (frozen formula at the current } V(t)\text{): } \varepsilon(t)\,t = S, \qquad
        \text{accumulated: } \int_0^t \varepsilon(s)\,ds = S ,

    the second exact in the hard-argmax limit. For the ramp: pointwise ``S/eps`` if ``S/eps <= tau``,
    else ``sqrt(S tau / eps)``; accumulated ``S/eps + tau/2`` if ``S/eps >= tau/2``, else
    ``sqrt(2 S tau / eps)``. On a slow ramp their ratio is sqrt(2), however slow.

    Parameters
    ----------
    S : the frozen formula's constant (``switch_time(C, 1)``, >= 0, inf for no switch); eps : the
        ramp's end value (> 0); tau : its duration (>= 0; 0 is the frozen ``diag(1, 1 - eps)``).

    Returns
    -------
    (pointwise, accumulated) depths.

    Examples
    --------
    >>> ramp_depths(0.5, 0.02, 0.0)  # a constant path: the frozen switch time, both ways
    (25.0, 25.0)
    >>> [round(t, 3) for t in ramp_depths(0.5, 0.02, 400.0)]  # a slow ramp: sqrt(2) apart
    [100.0, 141.421]
    """
    if not (S >= 0):
        raise ValueError(f"S must be a non-negative number (inf: no switch), got {S!r}")
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"eps must be a positive number, got {eps!r}")
    if not (tau >= 0 and math.isfinite(tau)):
        raise ValueError(f"tau must be a non-negative number, got {tau!r}")
    if math.isinf(S):
        return math.inf, math.inf
    frozen = S / eps
    point = frozen if frozen >= tau else math.sqrt(S * tau / eps)
    accum = frozen + tau / 2 if frozen >= tau / 2 else math.sqrt(2 * S * tau / eps)
    return float(point), float(accum)


def ramp_area(eps: float, tau: float, t) -> np.ndarray:
    r"""The accumulated gap of the ramp of :func:`ramp_depths`, at the times t (tau = 0: ``eps t``):

    .. math:: E(t) = \int_0^t \varepsilon \min(s / \tau, 1)\, ds .

    Parameters
    ----------
    eps : the ramp's end value; tau : its duration (>= 0); t : times, any shape.

    Returns
    -------
    ndarray of the shape of t.

    Examples
    --------
    >>> ramp_area(0.02, 10.0, [5.0, 10.0, 30.0]).tolist()
    [0.025, 0.1, 0.5]
    """
    t = np.asarray(t, float)
    if tau == 0:
        return eps * t
    return np.where(t <= tau, eps * t * t / (2 * tau), eps * (t - tau / 2))


def gap_closing_angle(phi0: float, gap: float, tau: float, t) -> np.ndarray:
    r"""Angle from e_1 of a consensus in the (e_1, e_2) plane when the top two eigenvalues of a
    diagonal V swap along the straight path ``V(s) = (1 - s) V0 + s V1``, ``s = min(t / tau, 1)``
    (derived); the gap ``g (1 - 2s)`` closes at ``s = 1/2``.

    ``x' = P_x V x`` with V diagonal gives :math:`(x_2 / x_1)' = (V_{22} - V_{11})\, x_2 / x_1`, and
    :math:`V_{11} - V_{22} = g(1 - 2s)`, so

    .. math::

        \tan\phi(t) = \tan\phi_0\, e^{-g\,(t - t^2/\tau)} \quad (t \le \tau), \qquad
        \tan\phi(t) = \tan\phi_0\, e^{g\,(t - \tau)} \quad (t \ge \tau).

    At the end of the path :math:`\tan\phi(\tau) = \tan\phi_0` whatever tau: the cluster is back
    where it started, not on the new top eigenvector e_2 (the pointwise adiabatic answer from
    s = 1/2 on); it reaches e_2 only after the path, at rate g.

    Parameters
    ----------
    phi0 : initial angle in (0, pi/2); gap : ``lambda_1 - lambda_2`` of V0 (> 0); tau : the path's
        duration (> 0); t : times (>= 0).

    Returns
    -------
    (len(t),) angles in radians.

    Examples
    --------
    >>> np.round(gap_closing_angle(0.2, 0.5, 40.0, [0.0, 20.0, 40.0]), 6)
    array([0.2     , 0.001366, 0.2     ])
    """
    if not 0 < phi0 < math.pi / 2:
        raise ValueError(f"phi0 must lie in (0, pi/2), got {phi0!r}")
    if not (gap > 0 and tau > 0 and math.isfinite(tau)):
        raise ValueError(f"gap and tau must be positive numbers, got gap = {gap!r}, tau = {tau!r}")
    t = np.asarray(t, float).reshape(-1)
    expo = np.where(t <= tau, -gap * (t - t * t / tau), gap * (t - tau))
    return np.arctan(math.tan(phi0) * np.exp(expo))

