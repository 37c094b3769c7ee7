"""Paper A, Section 4: the norm and depth phase transitions (Theorems 4.2 / D.4 and 4.6).

Pure closed forms, no simulation:

* random value adapters (Assumption 4.1): the noise magnitude ``kappa = sum_a s_a^2 / d^2``, the
  effective magnitude ``c^2 kappa L^(2 alpha - 1)`` when ``eta_L = c L^alpha`` (derived), the
  stationary deviation of prediction (21) and of Theorem D.4 (which sums from i = 1), and the exact
  stationary value of the synchronised limit, a Bingham law on S^2 (derived, see
  :func:`bingham_deviation`);
* the depth transition: the gap of Assumption 4.5, the constants of Theorem 4.6 (``c11, C_sub, a*,
  p*, T_dom``) and its exit-time bound, plus the hard-argmax switch time of the rescaled dynamics (derived), a second prediction
  of the exit time.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch
from scipy import integrate, special

from .._validate import check_positive

__all__ = [
    "noise_magnitude",
    "effective_kappa",
    "stationary_deviation",
    "bingham_deviation",
    "DepthBound",
    "dominance_gap",
    "depth_bound",
    "tube_bound",
    "exit_time_bound",
    "switch_time",
]


def _eigs(eigvals) -> np.ndarray:
    lam = np.asarray(torch.as_tensor(eigvals, dtype=torch.float64).cpu(), dtype=float).reshape(-1)
    if lam.size < 2 or not np.all(np.isfinite(lam)):
        raise ValueError(f"eigvals must hold at least 2 finite numbers, got {lam.tolist()}")
    if not np.all(lam[1:] < lam[0]):
        raise ValueError(f"eigvals must start with a simple top eigenvalue lambda_1 > lambda_i, got {lam.tolist()}")
    return lam


def noise_magnitude(s, d: int) -> float:
    r"""``kappa = sum_a s_a^2 / d^2`` (paper A, Theorem 4.2).

    .. math::

        \kappa = \frac{1}{d^2} \sum_{a=1}^r s_a^2 .

    Parameters
    ----------
    s : scalar or (r,) positive adapter weights; d : dimension.

    Examples
    --------
    >>> noise_magnitude([1.0, 2.0], 5)
    0.2
    """
    s = np.asarray(s, dtype=float).reshape(-1)
    if s.size == 0 or np.any(~np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"s must be positive finite numbers, got {s.tolist()}")
    if int(d) < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    return float(np.sum(s**2) / d**2)


def effective_kappa(kappa: float, c: float, alpha: float, L: int) -> float:
    r"""Diffusion strength seen in macroscopic time when ``eta_L = c L^alpha`` (derived).

    .. math::

        \kappa_{\rm eff} = c^2 \kappa\, L^{2\alpha - 1} .

    A layer adds ``(1/L) eta_L G x`` with ``E (Gx)(Gx)^T = kappa I`` for |x| = 1, so over ``t L``
    layers the variance is ``t c^2 kappa L^(2 alpha - 1)``: the critical scaling alpha = 1/2 gives
    kappa itself, alpha < 1/2 a strength decaying like ``L^(2 alpha - 1)`` (not 1/L unless alpha = 0).

    Examples
    --------
    >>> effective_kappa(0.1, 1.0, 0.5, 64), effective_kappa(0.1, 2.0, 0.0, 4)
    (0.1, 0.1)
    """
    check_positive(kappa, "kappa", strict=False)
    check_positive(c, "c", strict=False)
    if int(L) < 1:
        raise ValueError(f"L must be >= 1, got {L}")
    return float(c**2 * kappa * float(L) ** (2 * alpha - 1))


def stationary_deviation(eigvals, kappa: float, n: int, *, form: str = "eq21") -> float:
    r"""Predicted ``sum_i E |x_i - u_1|^2`` in the critical regime (paper A).

    .. math::

        \text{(21)}: \ n \sum_{i \ge 2} \frac{\kappa}{2(\lambda_1 - \lambda_i) + d\kappa}, \qquad
        \text{(D.4)}: \ n \sum_{i \ge 1} \frac{\kappa}{2(\lambda_1 + d\kappa/2 - \lambda_i)} .

    ``form="eq21"``: ``n sum_{i>=2} kappa / (2(lambda_1 - lambda_i) + d kappa)`` (eq. 21, Lemma D.7);
    ``form="D4"``: ``n sum_{i>=1} kappa / (2(lambda_1 + d kappa / 2 - lambda_i))`` (Theorem D.4), whose
    i = 1 term adds ``n / d`` for any kappa > 0.

    Parameters
    ----------
    eigvals : (d,) eigenvalues of V = A, lambda_1 first and simple; kappa : noise magnitude; n : tokens.

    Examples
    --------
    >>> round(stationary_deviation([1.0, 0.5], 0.1, 2), 6)  # 2 * 0.1 / (2 * 0.5 + 2 * 0.1)
    0.166667
    >>> round(stationary_deviation([1.0, 0.5], 0.1, 2, form="D4"), 6)  # + n / d = 1
    1.166667
    """
    lam = _eigs(eigvals)
    check_positive(kappa, "kappa", strict=False)
    if int(n) < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    d = lam.size
    if form == "eq21":
        terms = kappa / (2 * (lam[0] - lam[1:]) + d * kappa)
    elif form == "D4":
        if kappa == 0:
            return 0.0
        terms = kappa / (2 * (lam[0] + d * kappa / 2 - lam))
    else:
        raise ValueError(f"form must be 'eq21' or 'D4', got {form!r}")
    return float(n * np.sum(terms))


def bingham_deviation(eigvals, kappa: float, n: int = 1) -> float:
    r"""Exact stationary ``n E[1 - <y, u_1>^2]`` of the synchronised critical limit on S^2 (derived).

    .. math::

        n\, \mathbb E\big[1 - \langle y, u_1\rangle^2\big], \qquad
        y \sim \frac{1}{Z} e^{\langle y, V y\rangle / \kappa} \ \text{on } \mathbb S^2 \ \text{(Bingham)} .

    When the n tokens have merged into one point y (the noise is common to all tokens, so they
    synchronise), the depth limit of (18) with ``eta_L = sqrt(L)`` is Brownian motion on the sphere
    with diffusivity kappa (generator ``kappa/2 Laplacian``) plus the gradient drift ``P_y V y`` of
    ``<y, V y>/2``. Its invariant law is the Bingham law with density ``exp(<y, V y>/kappa)``.
    Integrating out the azimuth leaves one integral in ``u = <y, u_1>``:
    ``w(u) ∝ exp(a1 u^2 + (a2 + a3)(1 - u^2)/2) I0((a2 - a3)(1 - u^2)/2)``, ``a_k = lambda_k / kappa``.
    Its small-kappa expansion is ``n sum_{i>=2} kappa / (2(lambda_1 - lambda_i)) + O(kappa^2)``.

    Parameters
    ----------
    eigvals : (3,) eigenvalues of V (d = 3 only), lambda_1 first and simple; kappa > 0; n : tokens.

    Examples
    --------
    >>> round(bingham_deviation([1.0, 0.0, 0.0], 1e-3), 5)  # small kappa: 2 * kappa / 2
    0.001
    """
    lam = _eigs(eigvals)
    if lam.size != 3:
        raise ValueError(f"bingham_deviation is implemented for d = 3, got {lam.size} eigenvalues")
    check_positive(kappa, "kappa")
    a1, a2, a3 = lam / kappa

    def logw(u):
        s = 1.0 - u * u
        z = 0.5 * abs(a2 - a3) * s
        # log of exp(a1 u^2 + (a2+a3) s/2) I0(z), shifted by a1 so the peak at u = 1 is O(1)
        return a1 * (u * u - 1.0) + 0.5 * (a2 + a3) * s + z + np.log(special.i0e(z))

    # the law is even in u: integrate on [0, 1], splitting near u = 1 where it concentrates
    width = min(1.0, 10.0 * math.sqrt(kappa / max(lam[0] - lam[1], 1e-12)))
    pts = [1.0 - width] if width < 1.0 else None
    num, _ = integrate.quad(lambda u: (1 - u * u) * np.exp(logw(u)), 0.0, 1.0, points=pts, limit=200, epsabs=0, epsrel=1e-11)
    den, _ = integrate.quad(lambda u: np.exp(logw(u)), 0.0, 1.0, points=pts, limit=200, epsabs=0, epsrel=1e-11)
    return float(n * num / den)


@dataclasses.dataclass(frozen=True)
class DepthBound:
    """The constants of Theorem 4.6 for one choice of ``ell = +-phi_1^*`` and of ``c_-``.

    ``T_dom`` is the larger of ``log(4 C_sub / a*) / gap`` and ``log((2/a*) log(n/p*)) / (2 lambda_1)``;
    ``slack = 16 |ell| delta / (lambda_1 D_-)``. ``plus`` and ``minus`` index the clusters c_+, c_-.
    """

    c11: float
    C_sub: float
    M: float
    m_star: float
    D_plus: float
    D_minus: float
    a_star: float
    p_star: float
    gap: float
    lambda1: float
    ell_norm: float
    T_dom: float
    slack: float
    plus: int
    minus: int
    sign: int


def dominance_gap(eigvals) -> float:
    r"""Assumption 4.5's gap of a real spectrum, ``lambda_1`` its largest value.

    .. math:: {\rm gap} = \lambda_1 - \max_{k \ge 2} |\lambda_k| ,

    rounded to 15 decimals (so that a double eigenvalue gives exactly 0).

    Parameters
    ----------
    eigvals : (d,) real eigenvalues, d >= 2, in any order.

    Examples
    --------
    >>> dominance_gap([1.0, 0.99]), dominance_gap([1.0, 1.0]), dominance_gap([1.0, -1.0])
    (0.01, 0.0, 0.0)
    """
    lam = np.sort(np.asarray(eigvals, dtype=float))[::-1]
    if lam.size < 2:
        raise ValueError(f"eigvals needs at least two eigenvalues, got {lam.tolist()}")
    return float(round(lam[0] - np.abs(lam[1:]).max(), 15))


def depth_bound(clusters, Q, K, V_tilde, *, n: int, delta: float, M: float) -> DepthBound:
    r"""Theorem 4.6 (paper A): the constants of the exit-time bound, for the tightest valid choice.

    The theorem holds for either sign of the left eigenvector ``ell = phi_1^*`` and any occupied
    non-maximal cluster ``c_-`` with ``ell(c_-) > 0``; this returns the choice with the smallest
    ``T_dom + slack``. The eigenvectors ``phi_p`` of ``V_tilde`` are normalised to unit length and
    ``phi_p^*`` is the dual basis (rows of the inverse eigenvector matrix). With
    :math:`c_{pq} = \langle Q\phi_p, K\phi_q\rangle`, the eigenvalues
    :math:`\lambda_1 > \max_{k\ge2}|\lambda_k|` of :math:`\widetilde V` and
    :math:`c_+ = \arg\max_c \ell(c)`:

    .. math::

        T_{\rm dom} = \max\Big(\frac{1}{\rm gap}\log\frac{4C_{\rm sub}}{a^*},\;
            \frac{1}{2\lambda_1}\log\Big(\frac{2}{a^*}\log\frac{n}{p^*}\Big)\Big),
        \qquad {\rm slack} = \frac{16\lVert\ell\rVert\,\delta}{\lambda_1 D_-},

        a^* = \frac{c_{11}\, m^* D_+}{4}, \quad p^* = \frac{D_-}{2(D_- + 4M)}, \quad
        C_{\rm sub} = M^2\Big(\sum_{p,q}|c_{pq}| - |c_{11}|\Big), \quad
        {\rm gap} = \lambda_1 - \max_{k\ge2}|\lambda_k|,

        D_+ = \ell(c_+) - \max_{c\ne c_+}\ell(c), \quad D_- = \ell(c_+) - \ell(c_-), \quad m^* = \ell(c_-).

    Parameters
    ----------
    clusters : (k, d) tensor
        The occupied limiting clusters of the base dynamics, k >= 2.
    Q, K, V_tilde : (d, d) tensors
        The perturbed weights; ``V_tilde`` with a real spectrum and a simple dominant eigenvalue.
    n : int
        Number of tokens.
    delta : float
        Cluster radius (> 0).
    M : float
        A bound on ``|phi_p^*(z_i)|`` in the 2 delta tube (> 0).

    Returns
    -------
    DepthBound
        The constants above for the tightest choice of ``ell`` and ``c_-``.

    Examples
    --------
    >>> C = torch.tensor([[2.0, 0.0], [1.0, 1.0], [-1.0, 0.0]])
    >>> b = depth_bound(C, torch.eye(2), torch.eye(2), torch.diag(torch.tensor([1.0, 0.9])), n=3, delta=0.1, M=3.0)
    >>> round(b.T_dom, 3), round(b.slack, 3)
    (49.698, 1.6)
    """
    C = np.asarray(torch.as_tensor(clusters, dtype=torch.float64).cpu(), dtype=float)
    if C.ndim != 2 or C.shape[0] < 2:
        raise ValueError(f"clusters must be (k, d) with k >= 2, got shape {C.shape}")
    d = C.shape[1]
    mats = []
    for name, X in (("Q", Q), ("K", K), ("V_tilde", V_tilde)):
        X = np.asarray(torch.as_tensor(X, dtype=torch.float64).cpu(), dtype=float)
        if X.shape != (d, d):
            raise ValueError(f"{name} must be ({d}, {d}) to match the clusters, got {X.shape}")
        mats.append(X)
    Qm, Km, Vt = mats
    check_positive(delta, "delta")
    check_positive(M, "M")
    if int(n) < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    w, P = np.linalg.eig(Vt)
    if np.max(np.abs(np.imag(w))) > 1e-12:
        raise ValueError(f"V_tilde must have a real spectrum (Assumption 4.5), got {w.tolist()}")
    w, P = np.real(w), np.real(P)
    order = np.argsort(-w)
    w, P = w[order], P[:, order]
    P = P / np.linalg.norm(P, axis=0, keepdims=True)
    lam1, rest = w[0], np.abs(w[1:])
    gap = lam1 - rest.max()
    if gap <= 0:
        raise ValueError(f"V_tilde needs a simple dominant eigenvalue lambda_1 > |lambda_2| (Assumption 4.5), got {w.tolist()}")
    Pstar = np.linalg.inv(P)  # rows: dual basis phi_p^*
    Cqk = (Qm @ P).T @ (Km @ P)  # c_pq = <Q phi_p, K phi_q>
    c11 = Cqk[0, 0]
    if c11 <= 0:
        raise ValueError(f"Assumption 4.5.1 fails: c11 = <Q phi_1, K phi_1> = {c11} <= 0")
    C_sub = M**2 * (np.abs(Cqk).sum() - abs(c11))
    best = None
    for sign in (1, -1):
        ell = sign * Pstar[0]
        proj = C @ ell
        plus = int(np.argmax(proj))
        others = np.delete(proj, plus)
        D_plus = proj[plus] - others.max()
        if D_plus <= 0:
            continue
        for minus in range(C.shape[0]):
            if minus == plus or proj[minus] <= 0:
                continue
            m_star, D_minus = proj[minus], proj[plus] - proj[minus]
            a_star = c11 * m_star * D_plus / 4
            p_star = D_minus / (2 * (D_minus + 4 * M))
            T_dom = max(math.log(4 * C_sub / a_star) / gap if C_sub > 0 else -math.inf,
                        math.log(2 / a_star * math.log(n / p_star)) / (2 * lam1))
            slack = 16 * np.linalg.norm(ell) * delta / (lam1 * D_minus)
            b = DepthBound(float(c11), float(C_sub), float(M), float(m_star), float(D_plus), float(D_minus),
                           float(a_star), float(p_star), float(gap), float(lam1), float(np.linalg.norm(ell)),
                           float(T_dom), float(slack), plus, minus, sign)
            if best is None or b.T_dom + b.slack < best.T_dom + best.slack:
                best = b
    if best is None:
        raise ValueError("Assumption 4.5 fails: no occupied non-maximal cluster c_- with ell(c_-) > 0 for either sign of ell")
    return best


def tube_bound(clusters, Q, K, V_tilde, *, n: int, delta: float) -> DepthBound | None:
    r""":func:`depth_bound` with ``M`` read from the 2 delta tube around the clusters, or None where
    Assumption 4.5 fails.

    .. math:: M = \max_{c \in \mathcal C,\ p} |c_p| + 2\delta ,

    a bound on ``|phi_p^*(z)|`` within ``2 delta`` of a cluster when the dual eigenvectors
    ``phi_p^*`` of ``V_tilde`` are the coordinates (``V_tilde`` diagonal, as in App. E.1.1 / E.3.1).

    Parameters
    ----------
    clusters : (k, d); Q, K, V_tilde : (d, d); n : tokens; delta : cluster radius.

    Returns
    -------
    DepthBound or None
        The constants of :func:`depth_bound`; None when it refuses the configuration (no simple
        dominant eigenvalue, ``c11 <= 0``, no cluster ``c_-``).

    Examples
    --------
    >>> C = torch.tensor([[2.0, 0.0], [1.0, 1.0], [-1.0, 0.0]])
    >>> round(tube_bound(C, torch.eye(2), torch.eye(2), torch.diag(torch.tensor([1.0, 0.9])), n=3, delta=0.1).M, 3)
    2.2
    >>> tube_bound(C, torch.eye(2), torch.eye(2), torch.eye(2), n=3, delta=0.1) is None  # a double eigenvalue
    True
    """
    M = float(np.abs(np.asarray(torch.as_tensor(clusters, dtype=torch.float64).cpu())).max() + 2 * delta)
    try:
        return depth_bound(torch.as_tensor(clusters), Q, K, V_tilde, n=n, delta=delta, M=M)
    except ValueError:
        return None  # Assumption 4.5 fails for this configuration


def exit_time_bound(T_delta: float, bound: DepthBound) -> float:
    r"""Theorem 4.6 part 2: ``T*(delta) <= max(T_delta, T_dom(delta)) + 16 |ell| delta / (lambda_1 D_-)``.

    .. math::

        T^*(\delta) \le \max\big(T_\delta, T_{\rm dom}(\delta)\big) + \frac{16 \lVert \ell\rVert \delta}{\lambda_1 D_-} .

    Examples
    --------
    >>> C = torch.tensor([[2.0, 0.0], [1.0, 1.0], [-1.0, 0.0]])
    >>> b = depth_bound(C, torch.eye(2), torch.eye(2), torch.diag(torch.tensor([1.0, 0.9])), n=3, delta=0.1, M=3.0)
    >>> round(exit_time_bound(60.0, b), 3)
    61.6
    """
    check_positive(T_delta, "T_delta", strict=False)
    return float(max(T_delta, bound.T_dom) + bound.slack)


def switch_time(clusters, eps: float) -> float:
    r"""First time a base cluster prefers another cluster under ``V~ = diag(1, 1 - eps)``, Q = K = I (derived).

    .. math::

        t_{ab} = \frac{1}{2\varepsilon} \log \frac{a_2 (a_2 - b_2)}{a_1 (b_1 - a_1)}, \qquad
        t_{\rm switch} = \min_{a \ne b} t_{ab} .

    Rescaled tokens ``z = e^{-t V~} x`` carry the logits ``<e^{t V~} z_a, e^{t V~} z_b>
    = e^{2t}(a_1 b_1 + e^{-2 eps t} a_2 b_2)``, so for t of order one the softmax is a hard argmax.
    A stationary base cluster ``a`` attends to itself; it starts moving towards ``b`` once
    ``a_1 (b_1 - a_1) + e^{-2 eps t} a_2 (b_2 - a_2) > 0``, i.e. at
    ``t_ab = log(a_2 (a_2 - b_2) / (a_1 (b_1 - a_1))) / (2 eps)``. Returns the minimum over pairs
    (``inf`` if no pair ever switches). The exit time is this plus the short time to travel 2 delta.

    Parameters
    ----------
    clusters : (k, 2) base clusters (rescaled coordinates); eps > 0.

    Examples
    --------
    >>> C = torch.tensor([[2.0, 0.0], [1.0, 1.0], [-1.0, 0.0]])
    >>> round(switch_time(C, 0.1), 4)  # pair (1,1) -> (2,0): log(1 / 1) / 0.2
    0.0
    >>> round(switch_time(torch.tensor([[2.0, 0.0], [1.0, 3.0]]), 0.01), 3)  # log(9 / 1) / 0.02
    109.861
    """
    C = np.asarray(torch.as_tensor(clusters, dtype=torch.float64).cpu(), dtype=float)
    if C.ndim != 2 or C.shape[1] != 2:
        raise ValueError(f"clusters must be (k, 2), got shape {C.shape}")
    check_positive(eps, "eps")
    best = math.inf
    for a in C:
        for b in C:
            gain1, loss2 = a[0] * (b[0] - a[0]), a[1] * (a[1] - b[1])
            if gain1 > 0 and loss2 > 0:
                best = min(best, max(0.0, math.log(loss2 / gain1)) / (2 * eps))
            elif gain1 > 0 >= loss2:
                best = 0.0
    return float(best)
