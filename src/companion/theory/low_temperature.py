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

from .._validate import as_tokens, check_matrix, check_positive, check_real
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
    "uniform_vp",
    "corollary2_rate",
    "corollary2_bound",
    "max_admissible_p",
    "zero_temperature_exact",
    "maximiser",
    "vmf_mean_length",
    "vmf_mixture_density",
    "vmf_mixture_density_floor",
    "vmf_mixture_softmax_mean",
    "capped_uniform_density",
    "capped_uniform_softmax_error",
    "softmax_mean_quadrature",
    "laplace_leading_error",
    "log_energy",
    "log_two_pole_energy",
    "consensus_growth_rates",
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
    r"""``M = V B^T``, the matrix that drives the zero-temperature flow. B, V: (d, d) -> (d, d).

    .. math::

        M = V B^\top, \qquad \dot x = \frac{\mathbf P_x M x}{\lVert B^\top x\rVert} \ \text{(eq. 3)} .

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
    r"""Largest eigenvalue of a symmetric matrix, its eigenspace and the gap ``gamma = mu_1 - mu_2``.

    .. math::

        E = \ker(M - \mu_1 I), \qquad \gamma = \mu_1 - \mu_2,

    with :math:`\mu_1 > \mu_2` the two largest distinct eigenvalues of M.

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
    r"""``F^abs``: the eigenspace of a symmetric V for an eigenvalue of largest modulus.

    When ``+lambda`` and ``-lambda`` are both of largest modulus the positive one is returned.
    ``gap`` is the distance to the nearest other eigenvalue.

    .. math::

        F^{\rm abs} = \ker(V - \lambda^* I), \qquad |\lambda^*| = \max_k |\lambda_k(V)|,
        \qquad \mathrm{gap} = \min_{\lambda_k \ne \lambda^*} |\lambda_k - \lambda^*| .

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
    r"""Check Assumption 1 (A1: B invertible; A2: ``M = V B^T`` symmetric with a spectral gap) and
    return the top eigenspace E of M. Raises ValueError naming the failing part.

    .. math::

        \text{(A1)}\ \det B \ne 0, \qquad \text{(A2)}\ M = V B^\top = M^\top, \qquad
        \gamma = \mu_1 - \mu_2 > 0, \qquad E = \ker(M - \mu_1 I).

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
    r"""``Pi(x) = P_E x / |P_E x|`` for every token (eq. 4), E the top eigenspace of ``V B^T``.

    .. math::

        \Pi(x) = \frac{P_E x}{\lVert P_E x\rVert}, \qquad E = \text{top eigenspace of } M = V B^\top .

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
    r"""``(mean_i |x_i - Pi(x0_i)|^2)^{1/2}`` per trial, the cost of the coupling ``x_i <-> Pi(x0_i)``.

    .. math::

        \Big(\frac1n \sum_{i=1}^n \lVert x_i - \Pi(x_i^0)\rVert^2\Big)^{1/2}
        \ \ge\ W_2(\mu_X, \Pi_\sharp \mu_{X_0}) .

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
    r"""Exact ``W_p(mu_X, Pi_# mu_X0)`` (Euclidean cost) when E = span(v) is one-dimensional.

    .. math::

        W_p\Big(\mu_X,\ \frac{n_+}{n}\delta_v + \frac{n_-}{n}\delta_{-v}\Big), \qquad
        n_+ = \#\{i : \langle x_i^0, v\rangle > 0\}, \quad n_- = n - n_+ .

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
    r"""The rate of Theorem 1 / Proposition 6: ``sqrt(log(beta + 1) / beta)``.

    .. math::

        r(\beta) = \sqrt{\frac{\log(\beta + 1)}{\beta}} .

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
    r"""Proposition 6: ``W_2(rho_t^beta, rho_t) <= 2 sqrt(log(beta+1)/beta) (e^{C1 t} - e^{C0 t})``.

    .. math::

        W_2(\rho_t^\beta, \rho_t) \le 2 \sqrt{\frac{\log(\beta + 1)}{\beta}}\, \big(e^{C_1 t} - e^{C_0 t}\big) .

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
    r"""Assumption 2's functional ``V_p(mu) = mean_i (|(I - P_E) x_i|^2 / |P_E x_i|^2)^p``, (trials,).

    .. math::

        V_p(\mu) = \frac1n \sum_{i=1}^n \bigg(\frac{\lVert (I - P_E) x_i\rVert^2}{\lVert P_E x_i\rVert^2}\bigg)^p .

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
    r"""Corollary 2's exponential rate ``p gamma / sigma_max(B)``.

    .. math::

        \text{rate} = \frac{p\, \gamma}{\sigma_{\max}(B)}, \qquad \gamma = \mu_1 - \mu_2 \ \text{of } M = V B^\top .

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
    r"""Corollary 2: ``W_2(rho_t, Pi_# rho_0) <= sqrt(2 V_p(rho_0)) exp(-p gamma t / sigma_max(B))``.

    .. math::

        W_2(\rho_t, \Pi_\sharp \rho_0) \le \sqrt{2 V_p(\rho_0)}\, e^{-p \gamma t / \sigma_{\max}(B)} .

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
    r"""Assumption 2 holds for a continuous positive density iff ``k = dim E > 2p``: the supremum of
    admissible p in (0, 1] is ``min(1, k / 2)`` (attained only when k > 2).

    .. math::

        \sup\{p \in (0, 1] : \mathcal V_p(\rho_0) < \infty\} = \min\big(1, \tfrac{k}{2}\big), \qquad k = \dim E .

    Examples
    --------
    >>> max_admissible_p(1), max_admissible_p(3)
    (0.5, 1.0)
    """
    if int(k) != k or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return min(1.0, k / 2)


def uniform_vp(d: int, k: int, p: float) -> float:
    r"""Assumption 2's :math:`\mathcal V_p` of the uniform law on :math:`S^{d-1}` with ``k = dim E``:
    finite iff ``k > 2p`` (paper B's Section 2 example), ``inf`` otherwise.

    For uniform x, :math:`s = |P_E x|^2 \sim \mathrm{Beta}(k/2, (d-k)/2)`, so

    .. math::

        \mathcal V_p = \mathbb E\Big[\Big(\frac{1-s}{s}\Big)^p\Big]
        = \frac{B\big(\tfrac k2 - p,\ \tfrac{d-k}2 + p\big)}{B\big(\tfrac k2,\ \tfrac{d-k}2\big)},

    whose first argument reaches the pole of :math:`\Gamma` at ``k = 2p``. ``k = d`` gives 0 (every
    token lies in E).

    Examples
    --------
    >>> round(uniform_vp(4, 3, 1.0), 12)   # E[1/s] - 1 = (a + b - 1)/(a - 1) - 1 for s ~ Beta(3/2, 1/2)
    1.0
    >>> uniform_vp(3, 1, 0.5), uniform_vp(4, 2, 1.0), uniform_vp(4, 4, 1.0)
    (inf, inf, 0.0)
    """
    if int(d) != d or int(k) != k or not 1 <= k <= d or d < 2:
        raise ValueError(f"need integers 1 <= k <= d with d >= 2, got d = {d!r}, k = {k!r}")
    p = check_positive(p, "p")
    if p > 1:
        raise ValueError(f"p must lie in (0, 1], got {p}")
    if k == d:
        return 0.0
    if k <= 2 * p:
        return math.inf
    a, b = k / 2, (d - k) / 2
    lbeta = lambda x, y: math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)
    return math.exp(lbeta(a - p, b + p) - lbeta(a, b))


def zero_temperature_exact(x0, B, V, ts, *, dt: float = 1e-3) -> torch.Tensor:
    r"""The zero-temperature flow (eq. 3) by its time change: ``x(t) = N(e^{tau(t) M} x0)`` with
    ``tau' = 1 / |B^T N(e^{tau M} x0)|``, a scalar ODE per token solved by RK4 with step ``dt``.

    .. math::

        x(t) = \mathcal N\big(e^{\tau(t) M} x_0\big), \qquad
        \dot\tau = \frac{1}{\lVert B^\top \mathcal N(e^{\tau M} x_0)\rVert}, \quad \tau(0) = 0,
        \qquad \mathcal N(y) = \frac{y}{\lVert y\rVert} .

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


# ----------------------------------------------------------------------------- Lemma 5: the Laplace principle
#
# Lemma 5 (its formula is lost in our copy) bounds |m_{beta,rho}(x) - y*(x)|, the distance between the
# softmax mean of a law rho with a positive density and the maximiser y*(x) of y -> <x, B y> on the
# sphere, by a rate that feeds Prop. 6. The functions below give that mean two ways on S^2: closed
# forms for laws whose tilt is again explicit (von Mises-Fisher mixtures, a uniform law with a cap
# cut out) and a quadrature for any density.


def _unit_tokens(x, name: str = "x") -> torch.Tensor:
    x = torch.as_tensor(x)
    if not x.is_floating_point():
        x = x.to(torch.float64)
    if x.ndim == 1:
        x = x[None]
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"{name} must be one token (d,) or tokens (m, d), got shape {tuple(x.shape)}")
    if not torch.isfinite(x).all() or ((x.norm(dim=-1) - 1).abs() > 1e-9).any():
        raise ValueError(f"{name} must hold finite unit vectors (tokens on the sphere)")
    return x


def maximiser(x, B) -> torch.Tensor:
    r"""``y*(x) = B^T x / |B^T x|``, the maximiser of ``y -> <x, B y>`` on the sphere (eq. 3's softmax limit).

    .. math::

        y^*(x) = \operatorname*{argmax}_{|y| = 1}\ \langle x, B y\rangle = \frac{B^\top x}{|B^\top x|}.

    x: (d,) or (m, d) unit tokens; B: (d, d) invertible. Returns (m, d).

    Examples
    --------
    >>> maximiser(torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64), torch.diag(torch.tensor([-2.0, 1.0, 1.0])))
    tensor([[-1.,  0.,  0.]], dtype=torch.float64)
    """
    x = _unit_tokens(x)
    Bm = check_matrix(_square(B, "B"), x.shape[-1], "B", like=x)
    y = x @ Bm  # rows (B^T x)^T
    norm = y.norm(dim=-1, keepdim=True)
    if (norm < 1e-12).any():
        raise ValueError("B^T x = 0 for a token x: the maximiser y*(x) is undefined there (B must be invertible, A1)")
    return y / norm


def vmf_mean_length(kappa) -> torch.Tensor:
    r"""Mean resultant length of the von Mises-Fisher law on S^2 with concentration ``kappa >= 0``.

    .. math::

        A(\kappa) = \coth\kappa - \frac1\kappa, \qquad 1 - A(\kappa) = \frac1\kappa - \frac{2}{e^{2\kappa} - 1},

    computed from the second form (no cancellation for large kappa) and from its series
    ``kappa/3 - kappa^3/45`` below 1e-3. Returns a float64 tensor of kappa's shape.

    Examples
    --------
    >>> vmf_mean_length(torch.tensor([0.0, 1.0, 1e4], dtype=torch.float64))
    tensor([0.0000, 0.3130, 0.9999], dtype=torch.float64)
    """
    k = torch.as_tensor(kappa, dtype=torch.float64)
    if not torch.isfinite(k).all() or (k < 0).any():
        raise ValueError("kappa must be finite and >= 0")
    small = k < 1e-3
    ks = torch.where(small, torch.ones_like(k), k)
    one_minus = 1 / ks - 2 / torch.expm1(torch.clamp(2 * ks, max=700.0))
    return torch.where(small, k / 3 - k**3 / 45, 1 - one_minus)


def _log_vmf_normaliser(kappa: torch.Tensor) -> torch.Tensor:
    """log c(kappa), c(kappa) = kappa / (4 pi sinh kappa) (the vMF density on S^2); c(0) = 1 / (4 pi)."""
    k = torch.clamp(kappa, min=1e-300)
    big = torch.log(k) - math.log(2 * math.pi) - k - torch.log(-torch.expm1(-2 * k))
    return torch.where(kappa < 1e-8, torch.full_like(kappa, -math.log(4 * math.pi)), big)


def _mixture(weights, centres, kappas, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    w = torch.as_tensor(weights, dtype=like.dtype, device=like.device).reshape(-1)
    mu = torch.as_tensor(centres, dtype=like.dtype, device=like.device).reshape(w.numel(), -1)
    k = torch.as_tensor(kappas, dtype=like.dtype, device=like.device).reshape(-1)
    if w.numel() < 1 or k.numel() != w.numel() or mu.shape[-1] != 3:
        raise ValueError(f"weights, centres and kappas must describe the same K >= 1 components on S^2, got "
                         f"{w.numel()} weights, centres of shape {tuple(mu.shape)}, {k.numel()} kappas")
    if (w <= 0).any() or abs(float(w.sum()) - 1) > 1e-9:
        raise ValueError(f"weights must be > 0 and sum to 1, got {w.tolist()}")
    if not torch.isfinite(k).all() or (k < 0).any():
        raise ValueError(f"kappas must be finite and >= 0, got {k.tolist()}")
    if ((mu.norm(dim=-1) - 1).abs() > 1e-9).any():
        raise ValueError("centres must be unit vectors")
    return w, mu, k


def vmf_mixture_density(Y, weights, centres, kappas) -> torch.Tensor:
    r"""Density (w.r.t. the area of S^2) of ``rho = sum_k w_k vMF(mu_k, kappa_k)``; kappa_k = 0 is the uniform law.

    .. math::

        f(y) = \sum_k w_k\, \frac{\kappa_k}{4\pi\sinh\kappa_k}\, e^{\kappa_k\langle\mu_k, y\rangle},

    positive everywhere (Assumption 3), with minimum at least ``sum_k w_k c(kappa_k) e^{-kappa_k}``.

    Y: (..., 3) points; weights (K,) summing to 1; centres (K, 3) unit; kappas (K,) >= 0. Returns (...).

    Examples
    --------
    >>> e3 = [[0.0, 0.0, 1.0]]
    >>> round(vmf_mixture_density(torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64), [1.0], e3, [0.0]).item() * 4 * math.pi, 12)
    1.0
    """
    Y = torch.as_tensor(Y)
    Y = Y if Y.is_floating_point() else Y.to(torch.float64)
    w, mu, k = _mixture(weights, centres, kappas, Y)
    expo = _log_vmf_normaliser(k) + k * (Y @ mu.T)  # (..., K)
    return (w * torch.exp(expo)).sum(-1)


def vmf_mixture_density_floor(weights, centres, kappas) -> float:
    r"""A lower bound of the density of ``rho = sum_k w_k vMF(mu_k, kappa_k)`` on S^2 (Assumption 3's l_0).

    Each component is smallest at its antipode ``-mu_k``, so

    .. math::

        \min_{y \in S^2} f(y) \;\ge\; \sum_k w_k\, \frac{\kappa_k}{4\pi\sinh\kappa_k}\, e^{-\kappa_k}
        \qquad (\kappa_k = 0: \ \tfrac{1}{4\pi}),

    with equality for one component. Arguments as for :func:`vmf_mixture_density` (checked the same way).

    Examples
    --------
    >>> round(vmf_mixture_density_floor([1.0], [[0.0, 0.0, 1.0]], [0.0]) * 4 * math.pi, 12)  # uniform: 1 / (4 pi)
    1.0
    >>> floor = vmf_mixture_density_floor([0.5, 0.5], [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], [0.0, 4.0])
    >>> Y = torch.nn.functional.normalize(torch.randn(10000, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)), dim=-1)
    >>> bool(vmf_mixture_density(Y, [0.5, 0.5], [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], [0.0, 4.0]).min() >= floor)
    True
    """
    _mixture(weights, centres, kappas, torch.zeros(3, dtype=torch.float64))
    return sum(w * float(vmf_mixture_density(-torch.tensor(c, dtype=torch.float64), [1.0], [c], [k]))
               for w, c, k in zip(weights, centres, kappas))


def vmf_mixture_softmax_mean(x, B, beta: float, weights, centres, kappas) -> torch.Tensor:
    r"""Closed-form softmax mean of a von Mises-Fisher mixture on S^2.

    The tilt of ``vMF(mu, kappa)`` by ``e^{beta <x, B y>} = e^{<beta B^T x, y>}`` is ``vMF(a/|a|, |a|)``
    with ``a = kappa mu + beta B^T x``, so

    .. math::

        m_{\beta,\rho}(x) = \frac{\int y\, e^{\beta\langle x, By\rangle}\,d\rho(y)}{\int e^{\beta\langle x, By\rangle}\,d\rho(y)}
        = \sum_k \pi_k\, A(|a_k|)\,\frac{a_k}{|a_k|}, \qquad
        \pi_k \propto w_k\, \frac{c(\kappa_k)}{c(|a_k|)},

    with ``c(kappa) = kappa / (4 pi sinh kappa)`` and A of :func:`vmf_mean_length` (in logs: no
    overflow for any beta). x: (d,) or (m, 3) unit tokens. Returns (m, 3) float64.

    Examples
    --------
    >>> x = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    >>> m = vmf_mixture_softmax_mean(x, torch.eye(3, dtype=torch.float64), 1.0, [1.0], [[1.0, 0.0, 0.0]], [0.0])
    >>> m  # uniform law: A(1) e3
    tensor([[0.0000, 0.0000, 0.3130]], dtype=torch.float64)
    """
    x = _unit_tokens(x)
    beta = check_positive(beta, "beta")
    w, mu, k = _mixture(weights, centres, kappas, x)
    b = beta * (x @ check_matrix(_square(B, "B"), 3, "B", like=x))  # (m, 3): beta B^T x
    a = k[:, None] * mu[None] + b[:, None, :]  # (m, K, 3)
    na = a.norm(dim=-1)
    logz = torch.log(w) + _log_vmf_normaliser(k) - _log_vmf_normaliser(na)  # (m, K)
    pi = torch.softmax(logz, dim=-1)
    means = vmf_mean_length(na)[..., None] * a / torch.clamp(na, min=1e-300)[..., None]
    return (pi[..., None] * means).sum(-2)


def capped_uniform_density(Y, centre, radius: float) -> torch.Tensor:
    r"""The uniform law on S^2 with the cap of angular radius ``radius`` around ``centre`` removed
    (a law with a hole: it violates Assumption 3). Y: (..., 3). Returns (...).

    .. math::

        f(y) = \frac{\mathbf 1\{\langle y, c\rangle < \cos r\}}{2\pi(1 + \cos r)}.

    Examples
    --------
    >>> Y = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]], dtype=torch.float64)
    >>> (capped_uniform_density(Y, [0.0, 0.0, 1.0], 0.5) * 2 * math.pi * (1 + math.cos(0.5))).round(decimals=12).tolist()
    [0.0, 1.0]
    """
    Y = torch.as_tensor(Y)
    Y = Y if Y.is_floating_point() else Y.to(torch.float64)
    r = check_positive(radius, "radius")
    if r >= math.pi:
        raise ValueError(f"radius must lie in (0, pi), got {r}")
    c = torch.as_tensor(centre, dtype=Y.dtype, device=Y.device).reshape(-1)
    if c.numel() != 3 or abs(float(c.norm()) - 1) > 1e-9:
        raise ValueError("centre must be a unit vector of length 3")
    return (Y @ c < math.cos(r)).to(Y.dtype) / (2 * math.pi * (1 + math.cos(r)))


def capped_uniform_softmax_error(kappa, radius: float) -> torch.Tensor:
    r"""``|m_{beta,rho}(x) - y*(x)|`` for :func:`capped_uniform_density` with the cap centred at
    ``y*(x)``, ``kappa = beta |B^T x|``: the tilt is a truncated exponential in ``u = 1 - cos theta``.

    .. math::

        |m - y^*| = \mathbb E[u] = u_0 + \frac1\kappa - \frac{L}{e^{\kappa L} - 1}, \qquad u_0 = 1 - \cos r,\ L = 2 - u_0,

    which tends to ``u_0 > 0`` as beta grows: without Assumption 3 the softmax mean does not reach
    y*(x). ``radius = 0`` would give the uniform law's ``1 - A(kappa)``. Returns float64.

    Examples
    --------
    >>> capped_uniform_softmax_error(torch.tensor([1e8], dtype=torch.float64), math.pi / 3)  # -> 1 - cos(pi/3)
    tensor([0.5000], dtype=torch.float64)
    """
    k = torch.as_tensor(kappa, dtype=torch.float64)
    if not torch.isfinite(k).all() or (k <= 0).any():
        raise ValueError("kappa must be finite and > 0")
    r = check_positive(radius, "radius")
    if r >= math.pi:
        raise ValueError(f"radius must lie in (0, pi), got {r}")
    u0 = 1 - math.cos(r)
    L = 2 - u0
    return u0 + 1 / k - L / torch.expm1(torch.clamp(k * L, max=700.0))


def softmax_mean_quadrature(x, B, beta: float, density, *, nodes: int = 16, azimuths: int = 64, breaks=()) -> torch.Tensor:
    r"""The softmax mean ``m_{beta,rho}(x)`` of a law with density ``f`` on S^2, by quadrature.

    .. math::

        m_{\beta,\rho}(x) = \frac{\int_{\mathbb S^2} y\, e^{\beta\langle x, By\rangle} f(y)\,d\sigma(y)}
                                 {\int_{\mathbb S^2} e^{\beta\langle x, By\rangle} f(y)\,d\sigma(y)} .

    Polar coordinates about ``y* = B^T x / |B^T x|``: with ``u = 1 - cos theta`` the area element is
    ``du dphi`` and the weight is ``e^{kappa (1 - u)}``, ``kappa = beta |B^T x|`` (the constant
    ``e^kappa`` cancels, so no overflow). In u: composite Gauss-Legendre with ``nodes`` points on
    intervals split at ``2^j / kappa`` (fine where the weight lives) and at ``breaks`` (where f jumps,
    e.g. a cap's edge ``1 - cos r``); in phi: the trapezoid rule with ``azimuths`` points (spectral
    for smooth f). Independent of the closed forms (:func:`vmf_mixture_softmax_mean`,
    :func:`capped_uniform_softmax_error`), which check it.

    Parameters
    ----------
    x : (d,) or (m, 3) unit tokens; B : (3, 3) invertible; beta : > 0.
    density : callable, (..., 3) points -> (...) non-negative values (need not be normalised).
    nodes, azimuths : quadrature sizes; breaks : extra u-breakpoints in (0, 2) for every token.

    Returns
    -------
    (m, 3) float64.

    Examples
    --------
    >>> x = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    >>> uniform = lambda Y: torch.ones(Y.shape[:-1], dtype=Y.dtype)
    >>> m = softmax_mean_quadrature(x, torch.eye(3, dtype=torch.float64), 50.0, uniform)
    >>> round(1 - m[0, 2].item(), 12), round(1 - vmf_mean_length(50.0).item(), 12)  # 1/50: the closed form
    (0.02, 0.02)
    """
    x = _unit_tokens(x)
    beta = check_positive(beta, "beta")
    if x.shape[-1] != 3:
        raise ValueError(f"x must hold tokens on S^2 (d = 3), got d = {x.shape[-1]}")
    if not callable(density):
        raise TypeError(f"density must be a callable (..., 3) -> (...), got {type(density).__name__}")
    nodes = int(nodes)
    azimuths = int(azimuths)
    if nodes < 2 or azimuths < 4:
        raise ValueError(f"need nodes >= 2 and azimuths >= 4, got {nodes} and {azimuths}")
    extra = [float(b) for b in breaks]
    if any(not 0 < b < 2 for b in extra):
        raise ValueError(f"breaks must lie in (0, 2), got {extra}")
    ystar = maximiser(x, B)
    kappas = beta * (x @ check_matrix(_square(B, "B"), 3, "B", like=x)).norm(dim=-1)
    g, gw = (torch.as_tensor(a, dtype=x.dtype) for a in _gauss_legendre(nodes))
    phi = torch.arange(azimuths, dtype=x.dtype) * (2 * math.pi / azimuths)
    cp, sp = torch.cos(phi), torch.sin(phi)
    out = []
    for y0, kappa in zip(ystar, kappas.tolist()):
        # orthonormal tangent basis (e1, e2) at y0
        a = torch.zeros(3, dtype=x.dtype)
        a[int(torch.argmin(y0.abs()))] = 1.0
        e1 = a - (a @ y0) * y0
        e1 = e1 / e1.norm()
        e2 = torch.linalg.cross(y0, e1)
        cuts = {0.0, 2.0, *extra}
        for anchor in (0.0, *extra):  # fine intervals after 0 and after every jump of f
            j = -3
            while anchor + 2.0**j / kappa < 2.0 and j < 60:
                cuts.add(anchor + 2.0**j / kappa)
                j += 1
        cuts = sorted(cuts)
        lo = torch.tensor(cuts[:-1], dtype=x.dtype)
        hi = torch.tensor(cuts[1:], dtype=x.dtype)
        u = ((hi - lo)[:, None] * (g[None] + 1) / 2 + lo[:, None]).reshape(-1)  # (U,)
        s = torch.sqrt(torch.clamp(u * (2 - u), min=0.0))
        Y = ((1 - u)[:, None, None] * y0 + s[:, None, None] * (cp[None, :, None] * e1 + sp[None, :, None] * e2))  # (U, P, 3)
        f = torch.as_tensor(density(Y), dtype=x.dtype)
        if f.shape != Y.shape[:-1] or not torch.isfinite(f).all() or (f < 0).any():
            raise ValueError("density must return finite non-negative values of shape points.shape[:-1]")
        seen = (f > 0).any(-1)
        if not seen.any():
            raise ValueError("the density vanishes at every quadrature node")
        u_first = u[seen].min()  # weights relative to the first u where f > 0: no underflow behind a hole
        wu = ((hi - lo)[:, None] / 2 * gw[None]).reshape(-1) * torch.exp(-kappa * torch.clamp(u - u_first, min=0.0))  # f = 0 below u_first
        w = wu[:, None] * f
        Z = w.sum()
        if not Z > 0:
            raise ValueError("the density integrates to 0 against the softmax weight")
        out.append((w[..., None] * Y).sum((0, 1)) / Z)
    return torch.stack(out)


def _gauss_legendre(n: int):
    import numpy as np

    return np.polynomial.legendre.leggauss(n)


def laplace_leading_error(x, B, beta: float, grad_log_density) -> torch.Tensor:
    r"""The leading term of ``|m_{beta,rho}(x) - y*(x)|`` as beta grows, for a smooth positive density f on S^2.

    Near ``y*`` the tilted law is a Gaussian in the tangent plane with covariance ``I / kappa``
    (``kappa = beta |B^T x|``) shifted by ``grad_S log f(y*) / kappa``, and ``E[1 - cos theta] = 1/kappa``,
    so (derived here, not the paper's)

    .. math::

        |m_{\beta,\rho}(x) - y^*(x)| = \frac{\sqrt{1 + |\nabla_{\mathbb S}\log f(y^*)|^2}}{\beta\,|B^\top x|} + O(\beta^{-2}),

    a rate 1/beta, faster than Lemma 5's ``sqrt(log(beta+1)/beta)``. ``grad_log_density``: (m, 3) the
    ambient gradient of log f at ``y*(x)`` (its tangential part is taken here). Returns (m,).

    Examples
    --------
    >>> x = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    >>> laplace_leading_error(x, torch.eye(3, dtype=torch.float64), 100.0, torch.zeros(1, 3, dtype=torch.float64))
    tensor([0.0100], dtype=torch.float64)
    """
    x = _unit_tokens(x)
    beta = check_positive(beta, "beta")
    ys = maximiser(x, B)
    g = torch.as_tensor(grad_log_density, dtype=x.dtype).reshape(ys.shape)
    gt = g - (g * ys).sum(-1, keepdim=True) * ys
    scale = beta * (x @ check_matrix(_square(B, "B"), x.shape[-1], "B", like=x)).norm(dim=-1)
    return torch.sqrt(1 + (gt**2).sum(-1)) / scale


# ----------------------------------------------------------------------------- App. C.3: the interaction energy


def log_energy(X, B, beta: float) -> torch.Tensor:
    r"""``log E_B(mu_X)`` of App. C.3's interaction energy for the empirical law of X, per trial.

    .. math::

        \mathcal E_B(\mu) = \iint e^{\beta\langle x, B y\rangle}\,d\mu(x)\,d\mu(y), \qquad
        \log\mathcal E_B(\mu_X) = \operatorname{logsumexp}_{i,j}\big(\beta\langle x_i, B x_j\rangle\big) - 2\log n ,

    finite for any beta (log-sum-exp). For ``B = V`` eq. (1) increases it, for ``B = -V`` decreases
    it (the gradient-flow case). X: (trials, n, d) or (n, d); B: (d, d). Returns (trials,).

    Examples
    --------
    >>> X = torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)  # two antipodal tokens
    >>> round(log_energy(X, torch.eye(2, dtype=torch.float64), 2.0).exp().item(), 6)  # (2 e^2 + 2 e^-2) / 4
    3.762196
    """
    X = as_tokens(X)
    beta = check_positive(beta, "beta")
    Bm = check_matrix(_square(B, "B"), X.shape[-1], "B", like=X)
    S = beta * (X @ Bm @ X.transpose(-1, -2))
    return torch.logsumexp(S.flatten(1), dim=-1) - 2 * math.log(X.shape[1])


def log_two_pole_energy(q_plus, lam: float, beta: float) -> torch.Tensor:
    r"""``log E_B`` of ``q_+ delta_v + q_- delta_{-v}`` for an eigenvector v of a symmetric B, ``B v = lam v``.

    .. math::

        \mathcal E_B = (q_+^2 + q_-^2)\, e^{\beta\lambda} + 2 q_+ q_-\, e^{-\beta\lambda}, \qquad q_- = 1 - q_+ .

    ``q_plus = 1`` is one Dirac (``e^{beta lam}``), ``q_plus = 1/2`` the balanced pair
    (``cosh(beta lam)``): App. C.3's optimal states are these for ``lam = lambda_max(B) > 0``
    (maximisation, B positive definite) and ``lam = lambda_min(B) < 0`` (B negative semi-definite).
    Returns a float64 tensor of q_plus's shape.

    Examples
    --------
    >>> log_two_pole_energy(torch.tensor([1.0, 0.5], dtype=torch.float64), 2.0, 1.0).exp()  # e^2, cosh 2
    tensor([7.3891, 3.7622], dtype=torch.float64)
    """
    q = torch.as_tensor(q_plus, dtype=torch.float64)
    if not torch.isfinite(q).all() or (q < 0).any() or (q > 1).any():
        raise ValueError("q_plus must lie in [0, 1]")
    lam = check_real(lam, "lam")
    beta = check_positive(beta, "beta")
    same = torch.log(q**2 + (1 - q) ** 2) + beta * lam  # q^2 + (1-q)^2 >= 1/2: finite
    cross = torch.log(torch.clamp(2 * q * (1 - q), min=1e-300)) - beta * lam
    cross = torch.where(q * (1 - q) > 0, cross, torch.full_like(cross, -math.inf))
    return torch.logaddexp(same, cross)


# ----------------------------------------------------------------------------- App. B: consensus on an eigenvector


def consensus_growth_rates(V, index: int) -> dict[str, object]:
    r"""Linear growth rates of a small perturbation of the consensus ``x_i = v`` of eq. (1), ``v`` the
    eigenvector ``index`` (ascending eigenvalues) of a symmetric V.

    Writing ``x_i = v + eps_i`` with ``eps_i`` tangent at v, the weights are ``1/n + O(eps)`` and sum
    to 1, so to first order (derived here; B and beta enter only at second order)

    .. math::

        \dot\varepsilon_i = \mathbf P_v V\bar\varepsilon - \lambda_v\,\varepsilon_i, \qquad
        \bar\varepsilon = \tfrac1n\textstyle\sum_j\varepsilon_j :

    the spread ``eps_i - eps_bar`` grows at rate ``-lambda_v`` and the mean's component along each
    other eigenvector ``u_k`` at ``lambda_k - lambda_v``. Consensus at v is linearly stable iff
    ``lambda_v > 0`` and ``lambda_v > lambda_k`` for all k != v: only on a top eigenvector of V with a
    positive eigenvalue (App. B, citing Altafini's Theorem 2).

    Returns
    -------
    dict with ``lam`` (the eigenvalues, ascending, float), ``spread`` (float), ``modes`` (list of
    ``(k, rate)`` for the other eigenvectors) and ``stable`` (bool).

    Examples
    --------
    >>> r = consensus_growth_rates(torch.diag(torch.tensor([-1.0, 1.0, -2.0], dtype=torch.float64)), 2)  # v = e2
    >>> r["spread"], r["modes"], r["stable"]
    (-1.0, [(0, -3.0), (1, -2.0)], True)
    """
    Vm = _square(V, "V")
    _check_symmetric(Vm, "V", 1e-9 if Vm.dtype == torch.float64 else 1e-5)
    lam = torch.linalg.eigvalsh(Vm).tolist()
    d = len(lam)
    if isinstance(index, bool) or int(index) != index or not 0 <= index < d:
        raise ValueError(f"index must be an integer in [0, {d}), got {index!r}")
    index = int(index)
    if min(abs(lam[k] - lam[index]) for k in range(d) if k != index) < 1e-9 * max(1.0, max(map(abs, lam))):
        raise ValueError("the eigenvalue of index must be simple (a repeated one has no single eigenvector)")
    modes = [(k, lam[k] - lam[index]) for k in range(d) if k != index]
    spread = -lam[index]
    return {"lam": lam, "spread": spread, "modes": modes, "stable": bool(spread < 0 and all(r < 0 for _, r in modes))}
