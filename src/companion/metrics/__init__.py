"""Observables of token configurations. Every function takes ``X : (trials, n, d)`` (a (n, d) input
is treated as one trial) and returns one value per trial unless stated otherwise.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .._validate import as_state, check_beta, check_count, check_matrix, check_on_sphere, check_positive, check_real, check_real_tensor
from ..attention import DEFAULT_BLOCK_ELEMENTS

__all__ = [
    "wasserstein",
    "EXACT_LIMIT",
    "rho_min",
    "SOLVERS",
    "CLUSTER_CRITERIA",
    "cluster_labels",
    "cluster_count",
    "cluster_centres",
    "modal_masses",
    "project_to_subspace",
    "distance_to_subspace",
    "interaction_energy",
]

# Above this many tokens per measure, solver="auto" switches from exact OT to sliced OT.
EXACT_LIMIT = 3000
SOLVERS = ("auto", "exact", "sliced")
_COSTS = ("euclidean", "chordal", "geodesic")
# Pairwise quantities (rho_min, the linkage clusters) hold at most this many pairs at once: memory
# stays linear in n (32 MiB of float64 a block) where the whole n x n matrix is 3.2 GB at n = 20,000.
_BLOCK_ELEMENTS = DEFAULT_BLOCK_ELEMENTS


def _pair_blocks(trials: int, n: int, limit: int) -> list[tuple[slice, slice]]:
    """(trials, rows) slices covering a (trials, n, n) pair matrix, each block at most ``limit`` pairs
    (one row at least). Whole trials are grouped first, so a small problem is one block: the same
    operations as the dense computation."""
    if n * n <= limit:
        tb = max(1, limit // (n * n))
        return [(slice(t, min(t + tb, trials)), slice(0, n)) for t in range(0, trials, tb)]
    b = max(1, limit // n)
    return [(slice(t, t + 1), slice(a, min(a + b, n))) for t in range(trials) for a in range(0, n, b)]


def _cost_matrix(x: np.ndarray, y: np.ndarray, cost: str, p: float) -> np.ndarray:
    if cost == "geodesic":
        g = np.clip(x @ y.T, -1.0, 1.0)
        dist = np.arccos(g)
    else:  # chordal is the Euclidean distance of the embedding
        # One coordinate at a time: no (n, m, d) temporary (4x faster at n = m = 256, d = 8)
        sq = np.zeros((len(x), len(y)))
        for k in range(x.shape[1]):
            diff = np.subtract.outer(x[:, k], y[:, k])
            sq += diff * diff
        if p == 2:
            return sq
        dist = np.sqrt(sq)
    return dist**p


def wasserstein(
    X: torch.Tensor,
    Y: torch.Tensor,
    p: float = 2,
    *,
    cost: str = "euclidean",
    solver: str = "auto",
    n_projections: int = 256,
    seed: int = 0,
) -> torch.Tensor:
    """Wasserstein distance W_p between the empirical measures of X and Y, trial by trial (POT).

    ``solver="exact"`` solves the optimal transport problem (``ot.emd2``, exact, O(n^3)), used by
    ``"auto"`` while both measures have at most :data:`EXACT_LIMIT` tokens; ``"sliced"`` uses the
    sliced Wasserstein distance (``ot.sliced_wasserstein_distance`` with ``n_projections`` random
    directions drawn from ``seed``), an upper-bounded proxy, not W_p itself: it is a lower bound
    up to Monte Carlo error and defined for the Euclidean (= chordal) cost only.

    Parameters
    ----------
    X : (trials, n, d); Y : (trials, m, d) (or one (m, d) measure shared by every trial).
    p : order, >= 1.
    cost : ``"euclidean"``, ``"chordal"`` (the same, for points on a sphere) or ``"geodesic"``
        (arc length on the unit sphere; tokens must be unit vectors).
    solver : ``"auto"``, ``"exact"`` or ``"sliced"`` (above); the integrator's choice is called
        ``method``, the kernel's ``backend``.

    Returns
    -------
    (trials,) float64 tensor on the CPU.

    Examples
    --------
    >>> X = torch.tensor([[[0.0, 0.0], [1.0, 0.0]]]); Y = X + torch.tensor([0.0, 3.0])
    >>> wasserstein(X, Y).item()
    3.0
    """
    import ot

    X = as_state(X, "X")
    Y = as_state(Y, "Y")
    if X.shape[-1] != Y.shape[-1]:
        raise ValueError(f"X and Y must have the same dimension d, got {X.shape[-1]} and {Y.shape[-1]}")
    if Y.shape[0] not in (1, X.shape[0]):
        raise ValueError(f"Y has {Y.shape[0]} trials but X has {X.shape[0]}")
    p = check_positive(check_real(p, "p"), "p")
    if p < 1:
        raise ValueError(f"p must be >= 1, got {p}")
    if cost not in _COSTS:
        raise ValueError(f"cost must be one of {_COSTS}, got {cost!r}")
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    if solver == "auto":
        solver = "exact" if max(X.shape[1], Y.shape[1]) <= EXACT_LIMIT else "sliced"
    if solver == "sliced" and cost == "geodesic":
        raise ValueError("solver='sliced' supports the euclidean/chordal cost only; use solver='exact' for cost='geodesic'")
    if cost == "geodesic":  # arccos of a clipped <x, y> would hide the radius: W(2X, X) = 0
        check_on_sphere(X, "X (cost='geodesic')")
        check_on_sphere(Y, "Y (cost='geodesic')")
    n_projections = check_count(n_projections, "n_projections")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__} {seed!r}")
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must lie in [0, 2**32) (numpy's seeds), got {seed}")
    Xn = X.detach().cpu().double().numpy()
    Yn = Y.detach().cpu().double().numpy()
    out = []
    for t in range(Xn.shape[0]):
        x, y = Xn[t], Yn[t if Yn.shape[0] > 1 else 0]
        if solver == "exact":
            a = np.full(len(x), 1.0 / len(x))
            b = np.full(len(y), 1.0 / len(y))
            C = _cost_matrix(x, y, cost, p)
            # POT answers an infinite cost with a warning and 0: refuse before
            val = float(ot.emd2(a, b, C, numItermax=10_000_000)) ** (1.0 / p) if np.isfinite(C).all() else math.inf
        else:
            val = float(ot.sliced_wasserstein_distance(x, y, n_projections=n_projections, p=p, seed=seed))
        if not math.isfinite(val):
            raise ValueError(f"W_p of X and Y overflows float64 (trial {t}: max |x_i| = {np.abs(x).max():.3g}, "
                             f"max |y_j| = {np.abs(y).max():.3g}, p = {p:g}): rescale both, W_p(sX, sY) = s W_p(X, Y)")
        out.append(val)
    return torch.tensor(out, dtype=torch.float64)


def rho_min(X: torch.Tensor) -> torch.Tensor:
    """``min_{i != j} <x_i, x_j>``, the smallest pairwise inner product (n >= 2).

    Examples
    --------
    >>> rho_min(torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]))
    tensor([-1.])
    >>> rho_min(torch.tensor([[3e38, 3e38], [-3e38, 3e38]]))   # finite tokens whose inner products overflow
    Traceback (most recent call last):
    ...
    ValueError: X: an inner product of its tokens overflows torch.float32 (largest entry 3e+38); rescale the tokens or use float64
    """
    X = as_state(X, "X")
    T, n = X.shape[:2]
    if n < 2:
        raise ValueError("X needs at least two tokens for rho_min")
    out = torch.full((T,), math.inf, dtype=X.dtype, device=X.device)
    cols = torch.arange(n, device=X.device)
    for ts, rows in _pair_blocks(T, n, _BLOCK_ELEMENTS):
        G = X[ts, rows] @ X[ts].transpose(-1, -2)  # (tb, r, n)
        diagonal = cols[rows, None] == cols  # pair (i, i) of this block of rows
        out[ts] = torch.minimum(out[ts], G.masked_fill(diagonal, math.inf).amin(dim=(-1, -2)))
    if not torch.isfinite(out).all():  # finite tokens (as_state checked them), so the products overflowed
        raise ValueError(f"X: an inner product of its tokens overflows {X.dtype} (largest entry "
                         f"{X.abs().max().item():.0e}); rescale the tokens or use float64")
    return out


def cluster_labels(X: torch.Tensor, tol: float) -> torch.Tensor:
    """Single-linkage clusters: tokens closer than ``tol`` (Euclidean) are linked, clusters are the
    connected components. Labels are the smallest token index in each cluster.

    Returns
    -------
    (trials, n) int64 labels.

    Examples
    --------
    >>> X = torch.tensor([[0.0, 0.0], [0.05, 0.0], [1.0, 0.0]])
    >>> cluster_labels(X, 0.1)
    tensor([[0, 0, 2]])
    """
    X = as_state(X, "X")
    tol = check_positive(check_real(tol, "tol"), "tol")
    T, n = X.shape[:2]
    labels = torch.arange(n, device=X.device).expand(T, n).clone()
    big = torch.tensor(n, device=X.device)
    blocks = _pair_blocks(T, n, _BLOCK_ELEMENTS)
    # Min-label propagation over blocks of the adjacency (recomputed each round, never held whole).
    # Each token takes the least label among its neighbours and hooks its own label's token onto it
    # as well; pointer jumping then shortens the chains. Labels only decrease and stay inside their
    # component, so the fixed point is the smallest index of each component, whatever the blocks.
    while True:
        new = labels.clone()
        for ts, rows in blocks:
            adj = torch.cdist(X[ts, rows], X[ts]) < tol  # (tb, r, n)
            nb = torch.where(adj, labels[ts, None, :], big).amin(dim=-1)  # (tb, r)
            new[ts, rows] = torch.minimum(new[ts, rows], nb)
            new[ts].scatter_reduce_(1, labels[ts, rows], nb, reduce="amin")
        while True:
            jumped = new.gather(1, new)
            if torch.equal(jumped, new):
                break
            new = jumped
        if torch.equal(new, labels):
            return labels
        labels = new


CLUSTER_CRITERIA = ("linkage", "density")


def _cluster_args(X, tol, criterion, bins, level, min_mass) -> tuple[torch.Tensor, dict]:
    """Checked tokens and the criterion's parameters (a parameter of the other criterion is refused)."""
    if criterion not in CLUSTER_CRITERIA:
        raise ValueError(f"criterion must be one of {CLUSTER_CRITERIA}, got {criterion!r}")
    X = as_state(X, "X")
    if criterion == "linkage":
        if tol is None:
            raise ValueError("criterion='linkage' needs tol, the linking distance")
        given = [k for k, v in (("bins", bins), ("level", level), ("min_mass", min_mass)) if v is not None]
        if given:
            raise ValueError(f"{', '.join(given)} apply to criterion='density' only")
        return X, {"tol": check_positive(check_real(tol, "tol"), "tol")}
    if tol is not None:
        raise ValueError("tol applies to criterion='linkage' only; criterion='density' takes bins, level and min_mass")
    if X.shape[-1] != 1:
        raise ValueError(f"criterion='density' counts clusters of angles on the circle: X must be (trials, n, 1), got {tuple(X.shape)}")
    bins = check_count(256 if bins is None else bins, "bins")
    if bins < 3:
        raise ValueError(f"bins must be an integer >= 3, got {bins!r}")
    return X, {"bins": bins, "level": check_positive(check_real(4.0 if level is None else level, "level"), "level"),
               "min_mass": check_positive(check_real(0.02 if min_mass is None else min_mass, "min_mass"), "min_mass", strict=False)}


def _density_clusters(theta: np.ndarray, bins: int, level: float, min_mass: float) -> tuple[np.ndarray, np.ndarray]:
    """Runs of dense histogram bins of one configuration of angles (n,): sorted centres (k,), masses (k,)."""
    t = np.remainder(theta, 2 * np.pi)
    idx = np.minimum((t * (bins / (2 * np.pi))).astype(np.int64), bins - 1)
    counts = np.bincount(idx, minlength=bins)
    dense = counts > level * t.size / bins
    if dense.all():
        runs = [np.arange(bins)]
    elif not dense.any():
        runs = []
    else:
        start = int(np.nonzero(~dense)[0][0])  # roll so that no run wraps around
        order = np.roll(np.arange(bins), -start)
        d = dense[order]
        edges = np.diff(np.concatenate([[0], d.astype(np.int8), [0]]))
        runs = [order[a:b] for a, b in zip(np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0])]
    centres, masses = [], []
    for r in runs:
        members = np.isin(idx, r)
        w = members.mean()
        if w < min_mass:
            continue
        centres.append(np.remainder(np.angle(np.exp(1j * t[members]).mean()), 2 * np.pi))
        masses.append(w)
    order = np.argsort(centres)
    return np.asarray(centres, dtype=np.float64)[order], np.asarray(masses, dtype=np.float64)[order]


def cluster_centres(X: torch.Tensor, tol: float | None = None, *, criterion: str = "linkage", bins: int | None = None,
                    level: float | None = None, min_mass: float | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """The clusters of each trial: their centres and the fraction of the tokens each holds.

    Two criteria define a cluster:

    * ``"linkage"`` (tokens in any dimension): single linkage at distance ``tol``, the connected
      components of :func:`cluster_labels`; a centre is the mean of its tokens, clusters in the
      order of their smallest token index.
    * ``"density"`` (angles on the circle, X : (trials, n, 1)): a maximal circular run of the
      ``bins`` equal histogram bins of [0, 2 pi) whose density exceeds ``level`` times the uniform
      density 1 / (2 pi) and that holds at least ``min_mass`` of the tokens (defaults 256, 4 and
      0.02); a centre is the circular mean of its tokens in [0, 2 pi), clusters sorted by centre.
      A uniform cloud has none, whatever n; a token outside every run belongs to no cluster.

    Parameters
    ----------
    X : (trials, n, d) tokens, or (n, d) for one trial.
    tol : linking distance (criterion ``"linkage"`` only, where it is required).
    criterion : ``"linkage"`` or ``"density"``; bins, level, min_mass : for ``"density"`` only.

    Returns
    -------
    list over trials of ``(centres (k, d), masses (k,))`` float64 numpy arrays.

    Examples
    --------
    >>> X = torch.tensor([[0.0, 0.0], [0.0, 0.1], [2.0, 0.0]], dtype=torch.float64)
    >>> [c.tolist() for c in cluster_centres(X, 0.5)[0]]
    [[[0.0, 0.05], [2.0, 0.0]], [0.6666666666666666, 0.3333333333333333]]
    >>> th = torch.tensor([[0.0], [0.01], [3.0], [3.02], [6.28]], dtype=torch.float64)
    >>> c, w = cluster_centres(th, criterion="density")[0]
    >>> c.round(2).tolist(), w.tolist()
    ([[0.0], [3.01]], [0.6, 0.4])
    """
    X, kw = _cluster_args(X, tol, criterion, bins, level, min_mass)
    out = []
    if criterion == "density":
        for t in X[..., 0].detach().cpu().double().numpy():
            c, w = _density_clusters(t, **kw)
            out.append((c[:, None], w))
        return out
    lab = cluster_labels(X, kw["tol"])
    n = X.shape[1]
    for tr in range(X.shape[0]):
        members = [lab[tr] == u for u in torch.unique(lab[tr])]
        centres = np.stack([X[tr, m].mean(0).cpu().numpy() for m in members])
        out.append((centres, np.array([int(m.sum()) / n for m in members], dtype=np.float64)))
    return out


def cluster_count(X: torch.Tensor, tol: float | None = None, *, criterion: str = "linkage", bins: int | None = None,
                  level: float | None = None, min_mass: float | None = None) -> torch.Tensor:
    """Number of clusters per trial, (trials,) int64 on X's device; the criteria are those of
    :func:`cluster_centres` (single linkage at distance ``tol`` by default).

    Examples
    --------
    >>> cluster_count(torch.tensor([[0.0, 0.0], [0.05, 0.0], [1.0, 0.0]]), 0.1)
    tensor([2])
    >>> th = torch.tensor([[0.0], [0.01], [2.0], [2.01], [4.0], [4.01]], dtype=torch.float64)
    >>> cluster_count(th, criterion="density")
    tensor([3])
    """
    X, kw = _cluster_args(X, tol, criterion, bins, level, min_mass)
    if criterion == "density":
        counts = [_density_clusters(t, **kw)[0].size for t in X[..., 0].detach().cpu().double().numpy()]
        return torch.tensor(counts, dtype=torch.int64, device=X.device)
    lab = cluster_labels(X, kw["tol"])
    n = lab.shape[1]
    return (lab == torch.arange(n, device=lab.device)).sum(dim=-1)


def modal_masses(X: torch.Tensor, eigvecs: torch.Tensor) -> torch.Tensor:
    """Averaged modal masses ``m_k = (1/n) sum_i <x_i, e_k>^2`` (paper C).

    Parameters
    ----------
    eigvecs : (d, d) orthonormal columns e_k (e.g. from ``torch.linalg.eigh(V)``); ValueError, with
        the measured ``max |E^T E - I|``, beyond 1e-6 (float64) or 1e-4 (lower precision).

    Returns
    -------
    (trials, d); rows sum to 1 for unit tokens.

    Examples
    --------
    >>> modal_masses(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.eye(2))
    tensor([[0.5000, 0.5000]])
    """
    X = as_state(X, "X")
    check_real_tensor(eigvecs, "eigvecs")
    E = check_matrix(eigvecs, X.shape[-1], "eigvecs", like=X)
    eye = torch.eye(E.shape[-1], dtype=E.dtype, device=E.device)
    departure = float((E.transpose(-1, -2) @ E - eye).abs().max())
    if departure > (1e-6 if E.dtype == torch.float64 else 1e-4):
        raise ValueError(f"eigvecs must have orthonormal columns (masses of another basis do not sum to the "
                         f"tokens' norms): max |E^T E - I| = {departure:.3g}")
    return ((X @ E) ** 2).mean(dim=1)


def _basis(basis: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    check_real_tensor(basis, "basis")
    B = torch.as_tensor(basis).to(X)
    if B.ndim == 1:
        B = B[:, None]
    if B.ndim != 2 or B.shape[0] != X.shape[-1]:
        raise ValueError(f"basis must have shape (d, k) with d = {X.shape[-1]}, got {tuple(B.shape)}")
    if not torch.allclose(B.T @ B, torch.eye(B.shape[1], dtype=B.dtype, device=B.device), atol=1e-6):
        raise ValueError("basis must have orthonormal columns")
    return B


def project_to_subspace(X: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """``Pi(x) = P_E x / |P_E x|``, the projection of paper B (E spanned by ``basis``, (d, k)).

    Raises ValueError when a token is orthogonal to E (Pi undefined there).

    Examples
    --------
    >>> project_to_subspace(torch.tensor([[0.6, 0.8]]), torch.tensor([1.0, 0.0]))
    tensor([[[1., 0.]]])
    """
    X = as_state(X, "X")
    B = _basis(basis, X)
    P = (X @ B) @ B.T
    nrm = P.norm(dim=-1, keepdim=True)
    if (nrm < 1e-12).any():
        raise ValueError("X has a token orthogonal to the subspace, where Pi(x) = P_E x / |P_E x| is undefined")
    return P / nrm


def distance_to_subspace(X: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """Euclidean distance ``|x_i - P_E x_i|`` of each token to the subspace E, (trials, n).

    Examples
    --------
    >>> distance_to_subspace(torch.tensor([[0.6, 0.8]]), torch.tensor([1.0, 0.0]))
    tensor([[0.8000]])
    """
    X = as_state(X, "X")
    B = _basis(basis, X)
    return (X - (X @ B) @ B.T).norm(dim=-1)


def interaction_energy(X: torch.Tensor, V: torch.Tensor, beta: float, *, log: bool = False) -> torch.Tensor:
    """Paper C's energy ``E_beta(X) = (1 / 2 beta) sum_{i,j} exp(beta <x_i, V x_j>)``, (trials,).

    With ``log=True`` returns ``log E_beta`` (computed by log-sum-exp, finite for any beta).

    Examples
    --------
    >>> X = torch.tensor([[1.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    >>> round(interaction_energy(X, torch.eye(2), 1.0).item(), 6)  # 4 e / 2
    5.436564
    """
    X = as_state(X, "X")
    beta = check_beta(check_real(beta, "beta"))
    check_real_tensor(V, "V")
    Vm = check_matrix(V, X.shape[-1], "V", like=X)
    S = beta * (X @ Vm @ X.transpose(-1, -2))
    logE = torch.logsumexp(S.flatten(1), dim=-1) - math.log(2 * beta)
    if not torch.isfinite(logE).all():
        raise ValueError(f"the scores beta <x_i, V x_j> overflow {X.dtype} (beta = {beta:g}, max |V| = {float(Vm.abs().max()):.3g}, "
                         f"max |x_i| = {float(X.norm(dim=-1).max()):.3g}): rescale V or X, or use float64")
    if not log and bool((logE > math.log(torch.finfo(X.dtype).max)).any()):
        raise ValueError(f"E_beta = e^{float(logE.max()):.4g} overflows {X.dtype}: pass log=True for log E_beta")
    return logE if log else torch.exp(logE)


# Observables in files of their own (imported last: they may build on the functions above).
from .circle_w1 import circle_w1_empirical  # noqa: E402
from .cluster_history import count_history  # noqa: E402
from .harmonics import harmonic_energy  # noqa: E402
from .hminus1 import hminus1_distance, hminus1_norm  # noqa: E402
from .hull import hull_excess  # noqa: E402

__all__ += ["circle_w1_empirical", "count_history", "harmonic_energy", "hminus1_distance", "hminus1_norm", "hull_excess"]
