"""Closed forms for paper B (Alcalde, Bungert, Riedl, Roith): low-temperature concentration.

Notation (NOTES.md, section B): ``B = Q^T K``, value matrix ``V``, ``M = V B^T`` (symmetric under
Assumption A2), ``E`` the top eigenspace of ``M`` with eigenvalue ``mu_1`` and gap
``gamma = mu_1 - mu_2``, ``Pi(x) = P_E x / |P_E x|`` (eq. 4). ``F`` is the top eigenspace of ``V``
and ``F^abs`` the eigenspace of ``V`` of largest modulus (Conjecture 1).

The zero-temperature flow (eq. 3) ``x' = P_x M x / |B^T x|`` moves every token on its own. Up to
the time change ``tau' = 1 / |B^T x|`` it is the normalised linear flow ``x = N(e^{tau M} x0)``,
which :func:`zero_temperature_exact` uses as an independent solution of eq. (3).
"""
from __future__ import annotations

import dataclasses
import math

import torch

from .._validate import as_tokens, check_matrix, check_positive
from ..metrics import project_to_subspace

__all__ = [
    "TopEigenspace",
    "attention_value_matrix",
    "top_eigenspace",
    "top_eigenspace_abs",
    "check_assumption_1",
    "pi_projection",
    "pi_distance",
    "wasserstein_to_pi",
    "concentration_rate",
    "stability_bound",
    "lyapunov_vp",
    "corollary2_rate",
    "corollary2_bound",
    "max_admissible_p",
    "zero_temperature_exact",
]


@dataclasses.dataclass(frozen=True)
class TopEigenspace:
    """An eigenspace of a symmetric matrix.

    Attributes
    ----------
    value : the eigenvalue; basis : (d, k) orthonormal columns; gap : distance from ``value`` to the
        nearest other eigenvalue (``inf`` when k = d).
    """

    value: float
    basis: torch.Tensor
    gap: float

    @property
    def dim(self) -> int:
        return int(self.basis.shape[1])


def _square(M, name: str) -> torch.Tensor:
    M = torch.as_tensor(M)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"{name} must be a square (d, d) matrix, got shape {tuple(M.shape)}")
    if not M.is_floating_point():
        M = M.to(torch.float64)
    return check_matrix(M, M.shape[0], name)


def _check_symmetric(M: torch.Tensor, name: str, tol: float) -> None:
    err = (M - M.T).abs().max().item()
    if err > tol * max(1.0, M.abs().max().item()):
        raise ValueError(f"{name} must be symmetric (Assumption A2), max |{name} - {name}^T| = {err:.3g}")


def attention_value_matrix(B, V) -> torch.Tensor:
    """``M = V B^T``, the matrix that drives the zero-temperature flow. B, V: (d, d) -> (d, d).

    Examples
    --------
    >>> attention_value_matrix(torch.diag(torch.tensor([-1.0, -1.0, 1.0])), torch.diag(torch.tensor([-1.0, 1.0, -2.0])))
    tensor([[ 1.,  0.,  0.],
            [ 0., -1.,  0.],
            [ 0.,  0., -2.]])
    """
    B = _square(B, "B")
    V = check_matrix(_square(V, "V"), B.shape[0], "V", like=B)
    return V @ B.T


def _eigenspace(M: torch.Tensor, key: torch.Tensor, tol: float) -> TopEigenspace:
    lam, U = torch.linalg.eigh(M)
    k_best = int(torch.argmax(key))
    scale = max(1.0, lam.abs().max().item())
    same = (lam - lam[k_best]).abs() <= tol * scale
    others = lam[~same]
    gap = math.inf if others.numel() == 0 else float((others - lam[k_best]).abs().min())
    return TopEigenspace(float(lam[k_best]), U[:, same], gap)


def top_eigenspace(M, *, tol: float = 1e-9) -> TopEigenspace:
    """Largest eigenvalue of a symmetric matrix, its eigenspace and the gap ``gamma = mu_1 - mu_2``.

    Eigenvalues within ``tol`` (relative) of the largest count as equal (multiplicity k).

    Examples
    --------
    >>> top = top_eigenspace(torch.diag(torch.tensor([1.0, -1.0, -2.0], dtype=torch.float64)))
    >>> top.value, top.basis.abs().T, top.gap
    (1.0, tensor([[1., 0., 0.]], dtype=torch.float64), 2.0)
    """
    M = _square(M, "M")
    _check_symmetric(M, "M", 1e-9 if M.dtype == torch.float64 else 1e-5)
    lam = torch.linalg.eigvalsh(M)
    return _eigenspace(M, lam, tol)


def top_eigenspace_abs(V, *, tol: float = 1e-9) -> TopEigenspace:
    """``F^abs``: the eigenspace of a symmetric V for an eigenvalue of largest modulus.

    When ``+lambda`` and ``-lambda`` are both of largest modulus the positive one is returned.
    ``gap`` is the distance to the nearest other eigenvalue.

    Examples
    --------
    >>> f = top_eigenspace_abs(torch.diag(torch.tensor([-1.0, 1.0, -3.0], dtype=torch.float64)))
    >>> f.value, f.basis.abs().T
    (-3.0, tensor([[0., 0., 1.]], dtype=torch.float64))
    """
    V = _square(V, "V")
    _check_symmetric(V, "V", 1e-9 if V.dtype == torch.float64 else 1e-5)
    lam = torch.linalg.eigvalsh(V)
    return _eigenspace(V, lam.abs() + 1e-12 * lam.sign(), tol)


def check_assumption_1(B, V, *, tol: float = 1e-9) -> TopEigenspace:
    """Check Assumption 1 (A1: B invertible; A2: ``M = V B^T`` symmetric with a spectral gap) and
    return the top eigenspace E of M. Raises ValueError naming the failing part.

    Examples
    --------
    >>> D = lambda *a: torch.diag(torch.tensor(a, dtype=torch.float64))
    >>> check_assumption_1(D(-1, -1, 1), D(-1, 1, -2)).gap
    2.0
    >>> check_assumption_1(D(1, 0, 1), D(1, 1, 1))
    Traceback (most recent call last):
    ...
    ValueError: B must be invertible (Assumption A1), smallest singular value 0
    """
    B = _square(B, "B")
    smin = torch.linalg.svdvals(B).min().item()
    if smin <= tol * max(1.0, B.abs().max().item()):
        raise ValueError(f"B must be invertible (Assumption A1), smallest singular value {smin:.3g}")
    M = attention_value_matrix(B, V)
    top = top_eigenspace(M, tol=tol)
    if not top.gap > 0:
        raise ValueError("M = V B^T needs a spectral gap mu_1 - mu_2 > 0 (Assumption A2)")
    return top


def pi_projection(X, B, V) -> torch.Tensor:
    """``Pi(x) = P_E x / |P_E x|`` for every token (eq. 4), E the top eigenspace of ``V B^T``.

    X: (trials, n, d) or (n, d) -> (trials, n, d). ValueError if a token is orthogonal to E.

    Examples
    --------
    >>> D = lambda *a: torch.diag(torch.tensor(a, dtype=torch.float64))
    >>> pi_projection(torch.tensor([[-0.6, 0.8, 0.0]], dtype=torch.float64), D(-1, -1, 1), D(-1, 1, -2))
    tensor([[[-1.,  0.,  0.]]], dtype=torch.float64)
    """
    X = as_tokens(X)
    top = check_assumption_1(torch.as_tensor(B).to(X), torch.as_tensor(V).to(X))
    return project_to_subspace(X, top.basis)


def pi_distance(X, X0, basis) -> torch.Tensor:
    """``(mean_i |x_i - Pi(x0_i)|^2)^{1/2}`` per trial, the cost of the coupling ``x_i <-> Pi(x0_i)``.

    An upper bound on ``W_2(mu_X, Pi_# mu_X0)``. When E is one-dimensional and ``Pi(x_i) = Pi(x0_i)``
    (true along the zero-temperature flow, Lemma 9) it is W_2 itself: Pi_# mu is carried by ``+-v``
    and sending each token to its nearer atom is both optimal and mass-preserving.

    X, X0: (trials, n, d); basis: (d, k) orthonormal. Returns (trials,).

    Examples
    --------
    >>> X = torch.tensor([[[0.6, 0.8], [-1.0, 0.0]]], dtype=torch.float64)
    >>> pi_distance(X, X, torch.tensor([1.0, 0.0], dtype=torch.float64))  # sqrt((0.8 + 0) / 2)
    tensor([0.6325], dtype=torch.float64)
    """
    X = as_tokens(X)
    X0 = as_tokens(X0, "X0")
    if X.shape != X0.shape:
        raise ValueError(f"X and X0 must have the same shape, got {tuple(X.shape)} and {tuple(X0.shape)}")
    P = project_to_subspace(X0, basis)
    return ((X - P) ** 2).sum(-1).mean(-1).sqrt()


def wasserstein_to_pi(X, X0, v, p: float = 2) -> torch.Tensor:
    """Exact ``W_p(mu_X, Pi_# mu_X0)`` (Euclidean cost) when E = span(v) is one-dimensional.

    ``Pi_# mu_X0`` is ``(n_+/n) delta_v + (n_-/n) delta_{-v}`` with ``n_+ = #{<x0_i, v> > 0}``. With
    two targets an optimal plan sends to ``v`` the ``n_+`` tokens with the smallest cost difference
    ``|x_i - v|^p - |x_i + v|^p`` (both masses are multiples of 1/n, so the plan is integral); here
    that difference decreases in ``<x_i, v>``, so it is a sort. O(n log n) instead of an OT solve.

    X, X0: (trials, n, d) with the same n; v: (d,) unit vector. Returns (trials,) float64.

    Examples
    --------
    >>> X = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]], dtype=torch.float64)
    >>> X0 = torch.tensor([[[0.6, 0.8], [-0.6, 0.8]]], dtype=torch.float64)  # one token each side
    >>> wasserstein_to_pi(X, X0, torch.tensor([1.0, 0.0], dtype=torch.float64))  # (0,1)->-v, (1,0)->v
    tensor([1.], dtype=torch.float64)
    """
    X = as_tokens(X)
    X0 = as_tokens(X0, "X0")
    if X.shape[1:] != X0.shape[1:] or X0.shape[0] not in (1, X.shape[0]):
        raise ValueError(f"X and X0 must hold the same tokens shape, got {tuple(X.shape)} and {tuple(X0.shape)}")
    p = check_positive(p, "p")
    if p < 1:
        raise ValueError(f"p must be >= 1, got {p}")
    v = torch.as_tensor(v).to(X).reshape(-1)
    if v.numel() != X.shape[-1] or abs(v.norm().item() - 1) > 1e-9:
        raise ValueError(f"v must be a unit vector of length d = {X.shape[-1]}")
    n = X.shape[1]
    n_plus = ((X0 @ v) > 0).sum(-1)  # (trials,)
    n_plus = n_plus.expand(X.shape[0]) if n_plus.numel() == 1 else n_plus
    c_plus = (X - v).norm(dim=-1) ** p
    c_minus = (X + v).norm(dim=-1) ** p
    order = torch.argsort(c_plus - c_minus, dim=-1)
    to_plus = torch.arange(n, device=X.device)[None, :] < n_plus[:, None]  # first n_+ in sorted order
    cost = torch.where(to_plus, torch.gather(c_plus, 1, order), torch.gather(c_minus, 1, order))
    return (cost.mean(-1) ** (1.0 / p)).double().cpu()


def concentration_rate(beta) -> torch.Tensor:
    """The rate of Theorem 1 / Proposition 6: ``sqrt(log(beta + 1) / beta)``.

    Examples
    --------
    >>> concentration_rate(torch.tensor([1.0, 100.0], dtype=torch.float64))
    tensor([0.8326, 0.2148], dtype=torch.float64)
    """
    b = torch.as_tensor(beta, dtype=torch.float64) if not torch.is_tensor(beta) else beta
    if not torch.isfinite(b).all() or (b <= 0).any():
        raise ValueError("beta must be finite and > 0")
    return torch.sqrt(torch.log1p(b) / b)


def stability_bound(beta, t, C0: float, C1: float) -> torch.Tensor:
    """Proposition 6: ``W_2(rho_t^beta, rho_t) <= 2 sqrt(log(beta+1)/beta) (e^{C1 t} - e^{C0 t})``.

    The constants C0 <= C1 are not recovered (NOTES.md); this evaluates the bound for given ones.

    Examples
    --------
    >>> stability_bound(torch.tensor(100.0, dtype=torch.float64), 0.0, 0.0, 1.0).item()
    0.0
    """
    if not C0 <= C1:
        raise ValueError(f"need C0 <= C1, got C0 = {C0}, C1 = {C1}")
    t = torch.as_tensor(t, dtype=torch.float64)
    if (t < 0).any():
        raise ValueError("t must be >= 0")
    return 2 * concentration_rate(beta) * (torch.exp(C1 * t) - torch.exp(C0 * t))


def lyapunov_vp(X, basis, p: float) -> torch.Tensor:
    """Assumption 2's functional ``V_p(mu) = mean_i (|(I - P_E) x_i|^2 / |P_E x_i|^2)^p``, (trials,).

    Lemma 7: ``W_2(mu, Pi_# mu)^2 <= 2 V_p(mu)`` for p in (0, 1].

    Examples
    --------
    >>> X = torch.tensor([[[0.6, 0.8]]], dtype=torch.float64)
    >>> lyapunov_vp(X, torch.tensor([1.0, 0.0], dtype=torch.float64), 1.0)  # (0.8 / 0.6)^2
    tensor([1.7778], dtype=torch.float64)
    """
    X = as_tokens(X)
    p = check_positive(p, "p")
    if p > 1:
        raise ValueError(f"p must lie in (0, 1], got {p}")
    Bs = torch.as_tensor(basis).to(X)
    Bs = Bs[:, None] if Bs.ndim == 1 else Bs
    Px = (X @ Bs) @ Bs.T
    num = ((X - Px) ** 2).sum(-1)
    den = (Px**2).sum(-1)
    if (den < 1e-300).any():
        raise ValueError("X has a token orthogonal to E, where V_p is infinite")
    return ((num / den) ** p).mean(-1)


def corollary2_rate(B, V, p: float) -> float:
    """Corollary 2's exponential rate ``p gamma / sigma_max(B)``.

    Examples
    --------
    >>> D = lambda *a: torch.diag(torch.tensor(a, dtype=torch.float64))
    >>> corollary2_rate(D(-1, -1, 1), D(-1, 1, -2), 0.5)
    1.0
    """
    p = check_positive(p, "p")
    if p > 1:
        raise ValueError(f"p must lie in (0, 1], got {p}")
    top = check_assumption_1(B, V)
    B = _square(B, "B")
    return p * top.gap / torch.linalg.svdvals(B).max().item()


def corollary2_bound(X0, B, V, p: float, t) -> torch.Tensor:
    """Corollary 2: ``W_2(rho_t, Pi_# rho_0) <= sqrt(2 V_p(rho_0)) exp(-p gamma t / sigma_max(B))``.

    X0: (trials, n, d); t: scalar or (T,). Returns (T, trials).

    Examples
    --------
    >>> D = lambda *a: torch.diag(torch.tensor(a, dtype=torch.float64))
    >>> X0 = torch.tensor([[[0.6, 0.8, 0.0]]], dtype=torch.float64)
    >>> corollary2_bound(X0, D(-1, -1, 1), D(-1, 1, -2), 1.0, 0.0)  # sqrt(2 * 16 / 9)
    tensor([[1.8856]], dtype=torch.float64)
    """
    X0 = as_tokens(X0, "X0")
    top = check_assumption_1(torch.as_tensor(B).to(X0), torch.as_tensor(V).to(X0))
    rate = corollary2_rate(B, V, p)
    t = torch.as_tensor(t, dtype=torch.float64).reshape(-1, 1)
    return torch.sqrt(2 * lyapunov_vp(X0, top.basis, p)).cpu()[None, :] * torch.exp(-rate * t)


def max_admissible_p(k: int) -> float:
    """Assumption 2 holds for a continuous positive density iff ``k = dim E > 2p``: the supremum of
    admissible p in (0, 1] is ``min(1, k / 2)`` (attained only when k > 2).

    Examples
    --------
    >>> max_admissible_p(1), max_admissible_p(3)
    (0.5, 1.0)
    """
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return min(1.0, k / 2)


def zero_temperature_exact(x0, B, V, ts, *, dt: float = 1e-3) -> torch.Tensor:
    """The zero-temperature flow (eq. 3) by its time change: ``x(t) = N(e^{tau(t) M} x0)`` with
    ``tau' = 1 / |B^T N(e^{tau M} x0)|``, a scalar ODE per token solved by RK4 with step ``dt``.

    Needs symmetric ``M = V B^T`` (eigendecomposition with shifted exponents, so large tau does not
    overflow). Independent of :class:`companion.models.ZeroTemperature`, which it checks.

    Parameters
    ----------
    x0 : (trials, n, d) unit tokens; B, V : (d, d); ts : (T,) non-decreasing times >= 0.

    Returns
    -------
    (T, trials, n, d).

    Examples
    --------
    >>> D = lambda *a: torch.diag(torch.tensor(a, dtype=torch.float64))
    >>> x0 = torch.tensor([[[0.6, 0.8, 0.0]]], dtype=torch.float64)
    >>> x = zero_temperature_exact(x0, D(-1, -1, 1), D(-1, 1, -2), [0.0, 1.0])
    >>> round(x[1, 0, 0, 0].item() / x[1, 0, 0, 1].item(), 6)  # ratio 0.75 e^{2t} at t = 1 (|B^T x| = 1)
    5.541792
    """
    X0 = as_tokens(x0, "x0")
    Bm = check_matrix(torch.as_tensor(B), X0.shape[-1], "B", like=X0)
    Vm = check_matrix(torch.as_tensor(V), X0.shape[-1], "V", like=X0)
    M = Vm @ Bm.T
    _check_symmetric(M, "V B^T", 1e-9 if M.dtype == torch.float64 else 1e-5)
    dt = check_positive(dt, "dt")
    ts = torch.as_tensor(ts, dtype=torch.float64).reshape(-1)
    if (ts < 0).any() or (ts[1:] < ts[:-1]).any():
        raise ValueError("ts must be non-decreasing and >= 0")
    lam, U = torch.linalg.eigh(M)
    c0 = X0 @ U  # coordinates in the eigenbasis

    def state(tau: torch.Tensor) -> torch.Tensor:
        # e^{tau M} x0 with the exponent shifted by its per-token maximum (no overflow)
        expo = tau[..., None] * lam
        expo = expo - torch.where(c0 != 0, expo, torch.full_like(expo, -math.inf)).amax(-1, keepdim=True)
        y = (c0 * torch.exp(expo)) @ U.T
        return y / y.norm(dim=-1, keepdim=True)

    def rhs(tau: torch.Tensor) -> torch.Tensor:
        return 1.0 / (state(tau) @ Bm).norm(dim=-1)

    tau = torch.zeros(X0.shape[:-1], dtype=X0.dtype, device=X0.device)
    t, out = 0.0, []
    for target in ts.tolist():
        m = math.ceil((target - t) / dt - 1e-9) if target > t else 0
        h = (target - t) / m if m else 0.0
        for _ in range(m):  # RK4 on the autonomous scalar ODE tau' = 1 / |B^T x(tau)|
            k1 = rhs(tau)
            k2 = rhs(tau + h / 2 * k1)
            k3 = rhs(tau + h / 2 * k2)
            k4 = rhs(tau + h * k3)
            tau = tau + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = target
        out.append(state(tau))
    return torch.stack(out)
