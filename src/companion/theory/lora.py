"""Paper A (Koubbi, Hernandez, Boussard), Section 3: stability of attention dynamics under
perturbations of (Q, K, V). Pure closed-form functions; no simulation here.

* :func:`prop31_bound`: the constants ``L_t, C_t, D_t, R_t`` of Proposition 3.1 and the bound (14)
  ``W2(mu_t, nu_t)^2 <= L_t exp(2 C_t e^{3 D_t})``, kept in log space because it grows doubly
  exponentially (it overflows float64 for t of order 2 with unit norms).
* :func:`spectral_perturbation`: the quantities of Proposition 3.3 / Lemma C.14 for a symmetric
  ``V`` and symmetric update ``dV``: ``a = u1^T dV u1``, ``b = P_perp dV u1``,
  ``E = P_perp dV P_perp``, condition (15) ``gap + a > 2|b| + |E|_op``, the right side of
  bound (16) ``(2|b| + |E|_op) / (gap + a)`` and the exact drift ``|u1 - u1~|`` of the top
  eigenvector of ``V~ = V + dV``.
* :func:`condition15_margin`, :func:`bound16`: the scalar formulas on their own.
* :func:`remark34_prediction`: eq. (17), ``sum_{j: e_j != 0} (alpha_j / (lambda_1 - lambda_j - e_j))^2``
  for an update whose orthogonal block ``E`` commutes with ``Lambda``; :func:`commuting_coefficients`
  reads ``alpha_j`` and ``e_j`` off ``(V, dV)``.
* :func:`orthogonal_projection_update`: the mitigation of Section 3.2, ``P_perp dV P_perp`` rescaled
  to the norm of ``dV``.
* Appendix C: :func:`field_bounds` (the right sides of Lemmas C.1-C.4, as printed and with the
  sharper constants derived there), :func:`c2_constant` (eq. 43) with :func:`dirac_pair_ratio` and
  :func:`c43_threshold` (where two Dirac measures violate it), :func:`bound_crossing_time` (the window
  of Remark C.6) and :func:`davis_kahan_drift_bound` (Lemma C.14 with an explicit constant).

Reading of ``u1~``. The sentence before Prop. 3.3 calls ``u1~`` "the leading eigenvector of dV";
Lemma C.14 (the proof) defines it as the leading eigenvector of ``V~ = V + dV``, and Lemma C.13
applied to ``V~`` (the perturbed dynamics is driven by ``V~``) can only produce that one. This module
uses ``V + dV``; the chapter checks numerically which vector the perturbed tokens reach.

Two readings of the constants of (14). ``variant="main"`` is (14) as printed in Section 3.1:
``L_t = 6 max(|dV|^2, |dA| |V|)``, ``D_t = 2 |A||V| M0^2 e^{2|V|t} t``, ``R_t = M0 e^{max(|V|,|V~|) t}``,
``C_t = 4 |V|^2 |A|^2 R_t^2 (1 + e^{2 R_t |A|})^2 t``. ``variant="appendix"`` follows the proof:
eq. (85) has ``L_t = 6 R_t^3 max(...)`` and (43), (54) give ``C_t = t C_2(R_t)^2`` with
``C_2(R) = 2 R^2 |V||A| (1 + e^{2 R^2 |A|})``; ``D_t`` is the same (``K_t t`` of (55), (65)).
Norms are operator norms; ``A = K^T Q`` carries the inverse temperature (beta = 1 in the paper).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from .._validate import check_positive

__all__ = [
    "op_norm",
    "Prop31Bound",
    "prop31_bound",
    "SpectralPerturbation",
    "spectral_perturbation",
    "condition15_margin",
    "bound16",
    "top_eigenvector",
    "commuting_coefficients",
    "remark34_prediction",
    "orthogonal_projection_update",
    "cone_collapse_bound",
    "c2_constant",
    "dirac_pair_ratio",
    "c43_threshold",
    "FieldBounds",
    "field_bounds",
    "bound_crossing_time",
    "DAVIS_KAHAN_CONSTANT",
    "davis_kahan_drift_bound",
]

_LN10 = math.log(10.0)


def _as_matrix(M: Any, name: str, d: int | None = None) -> torch.Tensor:
    if not isinstance(M, torch.Tensor):
        try:
            M = torch.as_tensor(M, dtype=torch.float64)
        except Exception:
            raise TypeError(f"{name} must be a (d, d) tensor or array, got {type(M).__name__}") from None
    if not M.is_floating_point():
        M = M.to(torch.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be a square (d, d) matrix, got shape {tuple(M.shape)}")
    if d is not None and M.shape[0] != d:
        raise ValueError(f"{name} must be ({d}, {d}) to match the other matrices, got {tuple(M.shape)}")
    if not torch.isfinite(M).all():
        raise ValueError(f"{name} has non-finite entries (NaN or inf)")
    return M


def op_norm(M: Any) -> float:
    r"""Operator (spectral) norm ``|M|_op``, the largest singular value.

    .. math::

        \lVert M\rVert_{\rm op} = \max_{\lVert x\rVert = 1} \lVert M x\rVert = \sigma_{\max}(M) .

    Examples
    --------
    >>> op_norm(torch.tensor([[3.0, 0.0], [0.0, -4.0]]))
    4.0
    """
    M = _as_matrix(M, "M")
    return float(torch.linalg.matrix_norm(M.to(torch.float64), ord=2))


# ----------------------------------------------------------------------------- Proposition 3.1


@dataclasses.dataclass(frozen=True)
class Prop31Bound:
    """Constants and bound (14) of Proposition 3.1 at the times ``t`` (all (T,) float64 tensors).

    Attributes
    ----------
    t, L, C, D, R : the times and the constants ``L_t, C_t, D_t, R_t``.
    log_log_excess : ``ln(2 C_t) + 3 D_t = ln ln(bound / L_t)``, always finite for t > 0 (-inf at t = 0).
    log10_sq_bound : ``log10(L_t exp(2 C_t e^{3 D_t}))``, the bound on ``W2^2``; ``inf`` once it
        exceeds the float64 range (the bound is then larger than any representable number).
    log10_w2_bound : ``log10_sq_bound / 2``, the bound on ``W2``.
    variant : ``"main"`` or ``"appendix"``.
    """

    t: torch.Tensor
    L: torch.Tensor
    C: torch.Tensor
    D: torch.Tensor
    R: torch.Tensor
    log_log_excess: torch.Tensor
    log10_sq_bound: torch.Tensor
    log10_w2_bound: torch.Tensor
    variant: str


def prop31_bound(A: Any, V: Any, dA: Any, dV: Any, M0: float, t: Any, *, variant: str = "main") -> Prop31Bound:
    r"""Bound (14) of Proposition 3.1 for base ``(A, V)``, perturbation ``(dA, dV)`` and tokens in B(0, M0).

    ``W2(mu_t, nu_t)^2 <= L_t exp(2 C_t e^{3 D_t})`` with the constants of the module docstring.

    .. math::

        W_2(\mu_t, \nu_t)^2 \le L_t \exp\big(2 C_t e^{3 D_t}\big), \qquad
        D_t = 2 \lVert A\rVert \lVert V\rVert M_0^2 e^{2\lVert V\rVert t} t, \qquad
        R_t = M_0 e^{\max(\lVert V\rVert, \lVert \tilde V\rVert) t},

    and, as printed (``"main"``), :math:`L_t = 6 \max(\lVert dV\rVert^2, \lVert dA\rVert \lVert V\rVert)`,
    :math:`C_t = 4 \lVert V\rVert^2 \lVert A\rVert^2 R_t^2 (1 + e^{2 R_t \lVert A\rVert})^2 t`;
    from the proof (``"appendix"``), :math:`L_t = 6 R_t^3 \max(\dots)` and :math:`C_t = t\, C_2(R_t)^2`,
    :math:`C_2(R) = 2 R^2 \lVert V\rVert \lVert A\rVert (1 + e^{2 R^2 \lVert A\rVert})`.

    Parameters
    ----------
    A, V : (d, d) base score matrix ``A = K^T Q`` and value matrix.
    dA, dV : (d, d) perturbations (``A~ = A + dA``, ``V~ = V + dV``).
    M0 : radius of a ball around 0 holding the initial tokens (> 0).
    t : scalar or (T,) times (>= 0).
    variant : ``"main"`` (eq. 14 as printed) or ``"appendix"`` (eqs. 43, 54-56, 85).

    Returns
    -------
    :class:`Prop31Bound` with (T,) tensors.

    Examples
    --------
    At t = 0 the bound is ``L_0 = 6 max(|dV|^2, |dA| |V|)``:

    >>> I = torch.eye(2, dtype=torch.float64)
    >>> b = prop31_bound(I, I, 0 * I, 0.1 * I, 1.0, 0.0)
    >>> round(b.L.item(), 6), round(10 ** b.log10_sq_bound.item(), 6)
    (0.06, 0.06)
    """
    if variant not in ("main", "appendix"):
        raise ValueError(f"variant must be 'main' or 'appendix', got {variant!r}")
    A = _as_matrix(A, "A")
    d = A.shape[0]
    V = _as_matrix(V, "V", d)
    dA = _as_matrix(dA, "dA", d)
    dV = _as_matrix(dV, "dV", d)
    M0 = check_positive(M0, "M0")
    ts = torch.as_tensor(t, dtype=torch.float64).reshape(-1)
    if not torch.isfinite(ts).all() or (ts < 0).any():
        raise ValueError("t must hold finite times >= 0")
    nA, nV, ndA, ndV = op_norm(A), op_norm(V), op_norm(dA), op_norm(dV)
    nVt = op_norm(V.to(torch.float64) + dV.to(torch.float64))
    L0 = 6.0 * max(ndV**2, ndA * nV)
    R = M0 * torch.exp(max(nV, nVt) * ts)
    D = 2.0 * nA * nV * M0**2 * torch.exp(2.0 * nV * ts) * ts
    with torch.no_grad():
        if variant == "main":
            L = torch.full_like(ts, L0)
            # ln C = ln 4 + 2 ln|V| + 2 ln|A| + 2 ln R + 2 ln(1 + e^{2 R |A|}) + ln t (log space: no overflow)
            lnC = (
                math.log(4.0)
                + 2 * _safe_log(nV)
                + 2 * _safe_log(nA)
                + 2 * torch.log(R)
                + 2 * torch.logaddexp(torch.zeros_like(R), 2 * R * nA)
                + torch.log(ts)
            )
        else:
            L = L0 * R**3
            # C = t C_2(R)^2, C_2(R) = 2 R^2 |V||A| (1 + e^{2 R^2 |A|})
            lnC = (
                2 * (math.log(2.0) + 2 * torch.log(R) + _safe_log(nV) + _safe_log(nA) + torch.logaddexp(torch.zeros_like(R), 2 * R**2 * nA))
                + torch.log(ts)
            )
        C = torch.exp(lnC)
        lle = math.log(2.0) + lnC + 3.0 * D
        log10_sq = torch.log10(L) + torch.exp(lle) / _LN10  # exp overflows to inf: the honest value
    return Prop31Bound(ts, L, C, D, R, lle, log10_sq, log10_sq / 2, variant)


def _safe_log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


# ----------------------------------------------------------------------------- Proposition 3.3


def top_eigenvector(M: Any, reference: Any | None = None) -> tuple[float, torch.Tensor]:
    r"""Largest eigenvalue and unit eigenvector of a symmetric matrix, signed so ``<v, reference> >= 0``.

    .. math::

        M v = \lambda_{\max} v, \qquad \lVert v\rVert = 1, \qquad \langle v, \text{reference}\rangle \ge 0 .

    Examples
    --------
    >>> lam, v = top_eigenvector(torch.diag(torch.tensor([1.0, 3.0], dtype=torch.float64)), torch.tensor([0.0, -1.0]))
    >>> lam, v.tolist()
    (3.0, [-0.0, -1.0])
    """
    M = _as_matrix(M, "M").to(torch.float64)
    if not torch.allclose(M, M.T, atol=1e-10 * max(1.0, float(M.abs().max()))):
        raise ValueError("M must be symmetric")
    w, U = torch.linalg.eigh((M + M.T) / 2)
    v = U[:, -1]
    if reference is not None:
        r = torch.as_tensor(reference, dtype=torch.float64).reshape(-1)
        if float(v @ r) < 0:
            v = -v
    return float(w[-1]), v


def condition15_margin(gap: float, a: float, b_norm: float, E_norm: float) -> float:
    r"""``gap + a - (2 |b| + |E|_op)``: condition (15) of Prop. 3.3 holds iff this is > 0.

    .. math::

        \text{margin} = \lambda_1 - \lambda_2 + a - \big(2 \lVert b\rVert + \lVert E\rVert_{\rm op}\big) .

    Examples
    --------
    >>> condition15_margin(1.0, 0.5, 0.25, 0.5)
    0.5
    """
    return float(gap) + float(a) - (2.0 * float(b_norm) + float(E_norm))


def bound16(gap: float, a: float, b_norm: float, E_norm: float) -> float:
    r"""Right side of (16), ``(2 |b| + |E|_op) / (gap + a)``; ``inf`` when ``gap + a <= 0``.

    .. math::

        \frac{2 \lVert b\rVert + \lVert E\rVert_{\rm op}}{\lambda_1 - \lambda_2 + a},

    which (16) multiplies by a constant to bound the drift :math:`\lVert u_1 - \tilde u_1\rVert`.

    Examples
    --------
    >>> bound16(1.0, 0.5, 0.25, 0.5)
    0.6666666666666666
    """
    den = float(gap) + float(a)
    if den <= 0:
        return math.inf
    return (2.0 * float(b_norm) + float(E_norm)) / den


@dataclasses.dataclass(frozen=True)
class SpectralPerturbation:
    """Everything Prop. 3.3 / Lemma C.14 compute from ``(V, dV)``.

    Attributes
    ----------
    lambdas : (d,) eigenvalues of V, decreasing; U : (d, d) eigenvectors (columns, same order).
    u1 : (d,) top eigenvector of V; gap : ``lambda_1 - lambda_2``.
    a : ``u1^T dV u1``; b : (d,) ``P_perp dV u1``; b_norm : ``|b|``.
    E : (d, d) ``P_perp dV P_perp``; E_norm : ``|E|_op``.
    margin : ``gap + a - 2|b| - |E|_op`` (condition (15) iff > 0); holds : ``margin > 0`` beyond
        rounding (> 1e-12 relative).
    bound : right side of (16).
    u1_tilde : (d,) top eigenvector of ``V + dV`` with ``<u1, u1~> >= 0``; drift : ``|u1 - u1~|``.
    tilde_gap : ``lambda_1(V~) - lambda_2(V~)``.
    """

    lambdas: torch.Tensor
    U: torch.Tensor
    u1: torch.Tensor
    gap: float
    a: float
    b: torch.Tensor
    b_norm: float
    E: torch.Tensor
    E_norm: float
    margin: float
    holds: bool
    bound: float
    u1_tilde: torch.Tensor
    drift: float
    tilde_gap: float


def spectral_perturbation(V: Any, dV: Any, *, reference: Any | None = None) -> SpectralPerturbation:
    r"""The decomposition ``dV = a u1 u1^T + u1 b^T + b u1^T + E`` of Lemma C.14 and the exact drift.

    .. math::

        dV = a\, u_1 u_1^\top + u_1 b^\top + b\, u_1^\top + E, \qquad
        a = u_1^\top dV u_1, \quad b = P_\perp dV u_1, \quad E = P_\perp dV P_\perp, \quad
        P_\perp = I - u_1 u_1^\top .

    Parameters
    ----------
    V : (d, d) symmetric with a simple top eigenvalue; dV : (d, d) symmetric.
    reference : optional (d,) vector; ``u1`` is signed so ``<u1, reference> >= 0`` (an eigenvector's
        sign is arbitrary; the tokens' cone fixes it), and ``u1~`` so ``<u1, u1~> >= 0``.

    Returns
    -------
    :class:`SpectralPerturbation`.

    Examples
    --------
    A pure in-span update ``dV = a u1 u1^T`` never moves the top eigenvector while ``gap + a > 0``:

    >>> V = torch.diag(torch.tensor([2.0, 1.0], dtype=torch.float64))
    >>> s = spectral_perturbation(V, torch.diag(torch.tensor([-0.5, 0.0], dtype=torch.float64)))
    >>> s.a, s.b_norm, s.E_norm, s.holds, s.drift
    (-0.5, 0.0, 0.0, True, 0.0)
    """
    V = _as_matrix(V, "V").to(torch.float64)
    d = V.shape[0]
    dV = _as_matrix(dV, "dV", d).to(torch.float64)
    for name, M in (("V", V), ("dV", dV)):
        if not torch.allclose(M, M.T, atol=1e-10 * max(1.0, float(M.abs().max()))):
            raise ValueError(f"{name} must be symmetric (Prop. 3.3 assumes V and dV in Sym(d))")
    if d < 2:
        raise ValueError("V must be at least 2 x 2 (a spectral gap needs two eigenvalues)")
    w, U = torch.linalg.eigh((V + V.T) / 2)
    w, U = w.flip(0), U.flip(1)
    gap = float(w[0] - w[1])
    if gap <= 1e-12 * max(1.0, float(w.abs().max())):
        raise ValueError(f"V must have a simple top eigenvalue (gap = {gap:.3g})")
    u1 = U[:, 0]
    if reference is not None and float(u1 @ torch.as_tensor(reference, dtype=torch.float64).reshape(-1)) < 0:
        u1 = -u1
    P = torch.eye(d, dtype=torch.float64) - torch.outer(u1, u1)
    a = float(u1 @ dV @ u1)
    b = P @ dV @ u1
    E = P @ dV @ P
    b_norm = float(b.norm())
    E_norm = op_norm(E)
    Vt = V + dV
    wt = torch.linalg.eigvalsh((Vt + Vt.T) / 2)
    _, ut = top_eigenvector(Vt, u1)
    margin = condition15_margin(gap, a, b_norm, E_norm)
    return SpectralPerturbation(
        lambdas=w,
        U=U,
        u1=u1,
        gap=gap,
        a=a,
        b=b,
        b_norm=b_norm,
        E=E,
        E_norm=E_norm,
        margin=margin,
        # a margin at rounding level (a grid point on the boundary) counts as "fails"
        holds=margin > 1e-12 * max(1.0, float(w.abs().max())),
        bound=bound16(gap, a, b_norm, E_norm),
        u1_tilde=ut,
        drift=float((u1 - ut).norm()),
        tilde_gap=float(wt[-1] - wt[-2]),
    )


def cone_collapse_bound(phi0: float, gap: float, t: Any) -> torch.Tensor:
    r"""Lemma C.13's rate: ``max_i |x_i(t) - u1| <= sqrt(2 (1 - phi(t)))`` with
    ``phi(t) = phi0 / sqrt(phi0^2 + (1 - phi0^2) e^{-2 gap t})``, ``phi0 = min_i <x_i(0), u1> > 0``.

    .. math::

        \max_i \lVert x_i(t) - u_1\rVert \le \sqrt{2 (1 - \varphi(t))}, \qquad
        \varphi(t) = \frac{\varphi_0}{\sqrt{\varphi_0^2 + (1 - \varphi_0^2)\, e^{-2 (\lambda_1 - \lambda_2) t}}} .

    Valid for the post-LayerNorm dynamics with ``A = V`` symmetric, simple top eigenvalue and
    ``|lambda_j| <= lambda_2`` for j >= 2 (e.g. V positive semi-definite). Computed without
    cancellation as ``1 - phi = q / (s (s + phi0))``, ``q = (1 - phi0^2) e^{-2 gap t}``, ``s = sqrt(phi0^2 + q)``.

    Examples
    --------
    >>> cone_collapse_bound(1.0, 0.5, 3.0).item()  # already at u1
    0.0
    >>> round(cone_collapse_bound(0.6, 1.0, 0.0).item(), 6)  # sqrt(2 (1 - 0.6))
    0.894427
    """
    phi0 = float(phi0)
    if not 0.0 < phi0 <= 1.0:
        raise ValueError(f"phi0 = min_i <x_i(0), u1> must lie in (0, 1] for Lemma C.13, got {phi0}")
    gap = check_positive(gap, "gap")
    ts = torch.as_tensor(t, dtype=torch.float64)
    q = (1.0 - phi0**2) * torch.exp(-2.0 * gap * ts)
    s = torch.sqrt(phi0**2 + q)
    return torch.sqrt(2.0 * q / (s * (s + phi0)))


# ----------------------------------------------------------------------------- Remark 3.4


def commuting_coefficients(V: Any, dV: Any, *, tol: float = 1e-9) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""``(lambdas, alpha, e)`` of Remark 3.4 in V's eigenbasis ``u_1..u_d`` (decreasing eigenvalues).

    .. math::

        \alpha_j = \langle dV u_1, u_j\rangle, \qquad e_j = \langle u_j, dV u_j\rangle \qquad (j \ge 2) .

    ``alpha_j = <dV u1, u_j>`` and ``e_j = <u_j, dV u_j>`` (j >= 2; ``alpha_1 = e_1 = 0``), the
    eigenvalues of ``E`` when it commutes with ``Lambda``. Raises ValueError when ``E`` is not
    diagonal in that basis (off-diagonal entries above ``tol``), i.e. E and Lambda do not commute
    (V has distinct eigenvalues, so commuting means sharing the eigenbasis).

    Examples
    --------
    >>> V = torch.diag(torch.tensor([2.0, 1.0, 0.5], dtype=torch.float64))
    >>> dV = torch.tensor([[0.0, 0.1, 0.0], [0.1, 0.3, 0.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    >>> lam, alpha, e = commuting_coefficients(V, dV)
    >>> lam.tolist(), alpha.tolist(), e.tolist()
    ([2.0, 1.0, 0.5], [0.0, 0.1, 0.0], [0.0, 0.3, 0.0])
    """
    s = spectral_perturbation(V, dV)
    dV = torch.as_tensor(dV, dtype=torch.float64)
    U = s.U.clone()
    # orient each eigenvector deterministically (largest-magnitude entry positive): alpha_j's sign is
    # a convention, only alpha_j^2 enters (17)
    idx = U.abs().argmax(dim=0)
    U = U * torch.sign(U[idx, torch.arange(U.shape[1])])
    M = U.T @ dV @ U
    Eb = M[1:, 1:]
    off = Eb - torch.diag(torch.diagonal(Eb))
    if off.abs().max() > tol * max(1.0, float(M.abs().max())):
        raise ValueError(f"E does not commute with Lambda: off-diagonal entries up to {float(off.abs().max()):.3g} in V's eigenbasis")
    alpha = torch.cat([torch.zeros(1, dtype=torch.float64), M[1:, 0]])
    e = torch.cat([torch.zeros(1, dtype=torch.float64), torch.diagonal(Eb)])
    return s.lambdas, alpha, e


def remark34_prediction(lambdas: Any, alpha: Any, e: Any, *, a: float = 0.0, all_terms: bool = False) -> float:
    r"""Eq. (17): ``sum_{j >= 2, e_j != 0} (alpha_j / (lambda_1 + a - lambda_j - e_j))^2``.

    .. math::

        \sum_{j \ge 2,\ e_j \ne 0} \bigg(\frac{\alpha_j}{\lambda_1 + a - \lambda_j - e_j}\bigg)^2 .

    With ``a = 0`` and ``all_terms=False`` this is (17) as printed. ``a = u1^T dV u1`` restores the
    shift of the top eigenvalue that first-order perturbation theory also gives (the printed
    formula drops it), and ``all_terms=True`` keeps the terms with ``e_j = 0`` (also first order).

    Parameters
    ----------
    lambdas : (d,) eigenvalues of V, ``lambdas[0]`` the largest; alpha, e : (d,) as in
        :func:`commuting_coefficients` (entry 0 ignored).

    Examples
    --------
    >>> round(remark34_prediction([2.0, 1.0, 0.5], [0.0, 0.1, 0.2], [0.0, 0.5, 0.0]), 12)  # (0.1 / 0.5)^2
    0.04
    >>> round(remark34_prediction([2.0, 1.0, 0.5], [0.0, 0.1, 0.2], [0.0, 0.5, 0.0], all_terms=True), 6)
    0.057778
    """
    lam = torch.as_tensor(lambdas, dtype=torch.float64).reshape(-1)
    al = torch.as_tensor(alpha, dtype=torch.float64).reshape(-1)
    ee = torch.as_tensor(e, dtype=torch.float64).reshape(-1)
    if not (lam.shape == al.shape == ee.shape) or lam.numel() < 2:
        raise ValueError(f"lambdas, alpha and e must be (d,) with the same d >= 2, got {tuple(lam.shape)}, {tuple(al.shape)}, {tuple(ee.shape)}")
    keep = torch.ones_like(ee, dtype=torch.bool) if all_terms else ee != 0
    keep[0] = False
    den = lam[0] + float(a) - lam - ee
    if (den[keep] <= 0).any():
        raise ValueError("a denominator lambda_1 + a - lambda_j - e_j is <= 0: the update crosses the top eigenvalue")
    return float(((al[keep] / den[keep]) ** 2).sum())


# ----------------------------------------------------------------------------- mitigation


def orthogonal_projection_update(dV: Any, u1: Any, *, keep_norm: str | None = "fro") -> torch.Tensor:
    r"""``P_perp dV P_perp`` (``P_perp = I - u1 u1^T``), rescaled to dV's norm when ``keep_norm`` is
    ``"fro"`` or ``"op"`` (None: no rescaling). The projected update has ``a = 0`` and ``b = 0``.

    .. math::

        dV_\perp = \frac{\lVert dV\rVert}{\lVert P_\perp dV P_\perp\rVert}\, P_\perp dV P_\perp,
        \qquad P_\perp = I - u_1 u_1^\top .

    Examples
    --------
    >>> dV = torch.tensor([[1.0, 1.0], [1.0, 0.0]], dtype=torch.float64)
    >>> orthogonal_projection_update(dV, torch.tensor([1.0, 0.0]), keep_norm=None)
    tensor([[0., 0.],
            [0., 0.]], dtype=torch.float64)
    """
    dV = _as_matrix(dV, "dV").to(torch.float64)
    u = torch.as_tensor(u1, dtype=torch.float64).reshape(-1)
    if u.numel() != dV.shape[0] or not math.isclose(float(u.norm()), 1.0, rel_tol=1e-8):
        raise ValueError("u1 must be a unit vector of length d")
    if keep_norm not in (None, "fro", "op"):
        raise ValueError(f"keep_norm must be None, 'fro' or 'op', got {keep_norm!r}")
    P = torch.eye(dV.shape[0], dtype=torch.float64) - torch.outer(u, u)
    out = P @ dV @ P
    if keep_norm is None:
        return out
    nrm = (lambda M: float(torch.linalg.matrix_norm(M, ord="fro"))) if keep_norm == "fro" else op_norm
    n_out = nrm(out)
    if n_out == 0:
        return out
    return out * (nrm(dV) / n_out)


# ----------------------------------------------------------------------------- Appendix C.1-C.3


def c2_constant(R: float, norm_A: float, norm_V: float) -> float:
    """Eq. (43): the W2-Lipschitz constant of the field in the measure, as printed.

    .. math:: C_2(R) = 2 R^2 \\|V\\|_{op} \\|A\\|_{op} \\left(1 + e^{2 R^2 \\|A\\|_{op}}\\right)

    Parameters
    ----------
    R : float
        Radius of the ball holding both measures (> 0).
    norm_A, norm_V : float
        Operator norms of ``A = K^T Q`` and ``V`` (>= 0).

    Returns
    -------
    float
        ``C_2(R)``; 0 when ``A = 0``, although the field ``V (mean of mu)`` still depends on the
        measure then (see :func:`dirac_pair_ratio`).

    Examples
    --------
    >>> round(c2_constant(1.0, 1.0, 1.0), 4)  # 2 (1 + e^2)
    16.7781
    >>> c2_constant(1.0, 0.0, 1.0)
    0.0
    """
    R = check_positive(R, "R")
    norm_A = check_positive(norm_A, "norm_A", strict=False)
    norm_V = check_positive(norm_V, "norm_V", strict=False)
    return float(2.0 * R**2 * norm_V * norm_A * (1.0 + math.exp(2.0 * R**2 * norm_A)))


def dirac_pair_ratio(z: float) -> float:
    """Two Dirac measures against (42) with the constant (43), ``V = |V| I`` (derived).

    For ``mu = delta_y`` and ``nu = delta_y'`` the field is ``V y`` whatever ``A``, so
    ``|X[mu] - X[nu]| = |V| |y - y'| = |V| W2(mu, nu)`` and the ratio to ``C_2(R) W2`` is

    .. math:: \\frac{1}{2 z (1 + e^{2 z})}, \\qquad z = R^2 \\|A\\|_{op},

    above 1 (inequality (42) with (43) violated) for ``z`` below :func:`c43_threshold`.

    Parameters
    ----------
    z : float
        ``R^2 |A|_op`` (> 0).

    Returns
    -------
    float
        The ratio.

    Examples
    --------
    >>> round(dirac_pair_ratio(0.05), 4), round(dirac_pair_ratio(1.0), 4)
    (4.7502, 0.0596)
    """
    z = check_positive(z, "z")
    return float(1.0 / (2.0 * z * (1.0 + math.exp(2.0 * z))))


def c43_threshold() -> float:
    r"""The ``z = R^2 |A|_op`` below which two Dirac measures violate (42) with constant (43):
    the root of ``2 z (1 + e^{2 z}) = 1`` (derived, see :func:`dirac_pair_ratio`),

    .. math:: z^* > 0: \quad 2 z^* \big(1 + e^{2 z^*}\big) = 1 .

    Returns
    -------
    float
        The threshold, about 0.2.

    Examples
    --------
    >>> round(c43_threshold(), 4)
    0.2005
    """
    from scipy.optimize import brentq

    return float(brentq(lambda z: 2.0 * z * (1.0 + math.exp(2.0 * z)) - 1.0, 1e-6, 1.0, xtol=1e-14))


@dataclasses.dataclass(frozen=True)
class FieldBounds:
    """The right sides of Lemmas C.1-C.4 at one radius, as printed and as derived here.

    Attributes
    ----------
    field : ``|V| R`` (40).
    jacobian : ``2 |A| |V| R^2`` (41); jacobian_sharp : ``|A| |V| R^2`` (derived).
    c2 : eq. (43).
    value : ``|dV| R`` (44) at ``mu = nu``.
    qk : ``4 R^3 |V| |dA|`` (45) at ``mu = nu``; qk_sharp : ``R^3 |V| |dA|`` (derived).
    general : ``2 R^3 min(|V|, |V~|) |dA| + |dV| R`` (49) at ``mu = nu``;
    general_sharp : ``R^3 min(|V|, |V~|) |dA| + |dV| R`` (derived).

    Examples
    --------
    >>> b = field_bounds(2.0, torch.eye(2, dtype=torch.float64), torch.eye(2, dtype=torch.float64),
    ...                  torch.zeros(2, 2, dtype=torch.float64), torch.zeros(2, 2, dtype=torch.float64))
    >>> b.field, b.jacobian, b.qk
    (2.0, 8.0, 0.0)
    """

    field: float
    jacobian: float
    jacobian_sharp: float
    c2: float
    value: float
    qk: float
    qk_sharp: float
    general: float
    general_sharp: float


def field_bounds(R: float, A: Any, V: Any, dA: Any, dV: Any) -> FieldBounds:
    """The bounds (40), (41), (43), (44), (45), (49) of paper A's Lemmas C.1-C.4, and sharper ones.

    The field is ``X[mu](x) = int softmax(<A x, y>) V y dmu(y) = V m_A[mu](x)`` with ``A = K^T Q``.
    The derived constants come from two facts valid for any weights ``w`` on ``B(0, R)``: the
    weighted covariance has ``|Cov_w(y)|_op <= R^2``, and ``|Cov_w(y, s)| <= R |dA| R^2`` for the
    score ``s = <dA x, y>`` with ``|x| <= R``. Since ``grad_x m_A = Cov_w(y) A`` and
    ``d/ds m_{A + s dA} = Cov_{w_s}(y, <dA x, y>)``,

    .. math:: \\|\\nabla_x \\mathcal X\\| \\le \\|A\\|\\|V\\| R^2, \\qquad
              \\|\\mathcal X[\\mu] - \\tilde{\\mathcal X}[\\mu]\\| \\le \\|V - \\tilde V\\| R
              + R^3 \\min(\\|V\\|, \\|\\tilde V\\|)\\, \\|A - \\tilde A\\| \\quad (|x| \\le R),

    half of (41) and of (49)'s first term, a quarter of (45). A two-point measure ``+-R e`` attains
    the first (``x`` with ``<A x, e> = 0``) and the second as ``|dA| -> 0``.

    Parameters
    ----------
    R : float
        Radius of the ball holding the measures (> 0).
    A, V : (d, d)
        Base score matrix ``A = K^T Q`` and value matrix.
    dA, dV : (d, d)
        Perturbations (``A~ = A + dA``, ``V~ = V + dV``).

    Returns
    -------
    FieldBounds

    Examples
    --------
    >>> I = torch.eye(2, dtype=torch.float64)
    >>> b = field_bounds(1.0, I, I, 0.1 * I, 0.2 * I)
    >>> b.field, b.jacobian, b.jacobian_sharp, round(b.qk, 6), round(b.general, 6), round(b.general_sharp, 6)
    (1.0, 2.0, 1.0, 0.4, 0.4, 0.3)
    """
    R = check_positive(R, "R")
    A = _as_matrix(A, "A")
    d = A.shape[0]
    V, dA, dV = (_as_matrix(M, name, d) for M, name in ((V, "V"), (dA, "dA"), (dV, "dV")))
    nA, nV, ndA, ndV = op_norm(A), op_norm(V), op_norm(dA), op_norm(dV)
    nmin = min(nV, op_norm(V.to(torch.float64) + dV.to(torch.float64)))
    return FieldBounds(
        field=nV * R,
        jacobian=2.0 * nA * nV * R**2,
        jacobian_sharp=nA * nV * R**2,
        c2=c2_constant(R, nA, nV),
        value=ndV * R,
        qk=4.0 * R**3 * nV * ndA,
        qk_sharp=R**3 * nV * ndA,
        general=2.0 * R**3 * nmin * ndA + ndV * R,
        general_sharp=R**3 * nmin * ndA + ndV * R,
    )


def bound_crossing_time(A: Any, V: Any, dA: Any, dV: Any, M0: float, level: float, *, t_max: float = 10.0,
                        variant: str = "main") -> float:
    r"""The first time bound (14) of Prop. 3.1 on ``W2`` reaches ``level``: the window of closeness
    the bound guarantees (Remark C.6), found by bisection (the bound increases with t).

    .. math::

        t^* = \min\big\{t \in [0, t_{\max}] : L_t \exp\big(2 C_t e^{3 D_t}\big) \ge {\rm level}^2\big\},

    with :math:`L_t, C_t, D_t` as in :func:`prop31_bound` (:math:`t_{\max}` when the set is empty).

    Parameters
    ----------
    A, V, dA, dV, M0, variant
        As in :func:`prop31_bound`.
    level : float
        The distance at which the two dynamics count as apart (> 0).
    t_max : float
        Search horizon (> 0); ``t_max`` is returned if the bound is still below ``level`` there.

    Returns
    -------
    float
        The crossing time, 0 if the bound already exceeds ``level`` at t = 0.

    Examples
    --------
    >>> I = torch.eye(2, dtype=torch.float64)
    >>> t1, t2 = (bound_crossing_time(I, I, 0 * I, e * I, 1.0, 0.1) for e in (1e-3, 1e-6))
    >>> 0 < t1 < t2 < 0.3
    True
    """
    level = check_positive(level, "level")
    t_max = check_positive(t_max, "t_max")

    def above(t: float) -> bool:
        return float(prop31_bound(A, V, dA, dV, M0, t, variant=variant).log10_w2_bound[0]) >= math.log10(level)

    if above(0.0):
        return 0.0
    if not above(t_max):
        return float(t_max)
    lo, hi = 0.0, float(t_max)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if above(mid) else (mid, hi)
    return float(hi)


# ----------------------------------------------------------------------------- Appendix C.4


#: Constant of a Davis-Kahan bound with an explicit constant (Yu, Wang and Samworth 2015, Thm 1):
#: ``sin(theta) <= 2 |R|_op / delta_A``, with ``|u1 - u1~| <= sqrt(2) sin(theta)`` as in Lemma C.14.
DAVIS_KAHAN_CONSTANT = 2.0 * math.sqrt(2.0)


def davis_kahan_drift_bound(gap: float, a: float, b_norm: float, E_norm: float) -> float:
    r"""An explicit form of Lemma C.14: ``|u1 - u1~| <= 2 sqrt(2) (|b| + |E|_op) / (gap + a)`` (derived).

    .. math::

        \lVert u_1 - \tilde u_1\rVert \le \frac{2\sqrt 2\,(\lVert b\rVert + \lVert E\rVert_{\rm op})}{\mathrm{gap} + a} .

    Lemma C.14 writes ``V~ = A + R`` with ``A = V + a u1 u1^T`` (top eigenvector u1, gap
    ``delta_A = gap + a``) and ``R = u1 b^T + b u1^T + E``; since ``b`` is orthogonal to ``u1``,
    ``u1 b^T + b u1^T`` has eigenvalues ``+-|b|``, so ``|R|_op <= |b| + |E|_op`` (the lemma uses
    ``2|b| + |E|``). The Davis-Kahan variant of Yu, Wang and Samworth, ``sin(theta) <= 2 |R| / delta_A``,
    and ``|u1 - u1~| = 2 sin(theta / 2) <= sqrt(2) sin(theta)`` (theta <= pi/2) give the bound, so the
    ratio of the drift to the right side of (16) never exceeds :data:`DAVIS_KAHAN_CONSTANT`.

    Parameters
    ----------
    gap, a, b_norm, E_norm : float
        As in :class:`SpectralPerturbation`.

    Returns
    -------
    float
        The bound; ``inf`` when ``gap + a <= 0``.

    Examples
    --------
    >>> round(davis_kahan_drift_bound(1.0, 0.0, 0.1, 0.0), 6)  # 2 sqrt(2) 0.1
    0.282843
    """
    den = float(gap) + float(a)
    if den <= 0:
        return math.inf
    return DAVIS_KAHAN_CONSTANT * (float(b_norm) + float(E_norm)) / den
