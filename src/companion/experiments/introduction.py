"""Experiments of the introduction: the classic clustering picture and the consensus manifold.

* :func:`clustering`: tokens on S^2 with Q = K = V = I, beta = 1, n = 64, from uniform initial
  positions, collapse into clusters and then into one.
* :func:`consensus`: on the consensus manifold (all tokens at one point) the simulator against the
  closed form of paper C, Sec. 4.1 (:mod:`companion.theory.consensus`).
"""
from __future__ import annotations

from typing import Any

import torch

from ..init import uniform_sphere
from ..integrate import simulate
from ..metrics import cluster_count, modal_masses, rho_min
from ..models import Sphere
from ..theory.consensus import consensus_modal_masses, consensus_solution
from . import experiment

__all__ = ["clustering", "plot_clustering", "consensus", "plot_consensus", "SIZES"]

# Per profile: trials of the clustering ensemble (fast = CI and `make book`; full = a GPU's worth).
SIZES = {"fast": {"trials": 16}, "full": {"trials": 1024}}


def _sizes(profile: str) -> dict[str, int]:
    if profile not in SIZES:
        raise ValueError(f"profile must be one of {tuple(SIZES)}, got {profile!r}")
    return SIZES[profile]


def plot_clustering(result: dict[str, Any], axes=None):
    """3-D scatter of trial 0 at the snapshot times (one panel each); returns the axes.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> r = clustering(trials=1, n=8, t1=1.0, snapshots=(0.0, 1.0))
    >>> len(plot_clustering(r))
    2
    """
    import matplotlib.pyplot as plt

    import math

    snaps, ts = result["snapshots"], result["times"]
    if axes is None:
        fig = plt.figure(figsize=(2.6 * len(ts), 2.9))
        axes = [fig.add_subplot(1, len(ts), k + 1, projection="3d") for k in range(len(ts))]
        fig.subplots_adjust(left=0.0, right=1.0, bottom=0.0, top=0.86, wspace=0.0)
    # Look at the sphere from where the tokens end up, so the clusters face the reader.
    c = snaps[-1].mean(dim=0)
    c = c / c.norm() if c.norm() > 0 else torch.tensor([0.0, 0.0, 1.0])
    elev, azim = math.degrees(math.asin(float(c[2].clamp(-1, 1)))), math.degrees(math.atan2(float(c[1]), float(c[0])))
    u, v = torch.meshgrid(torch.linspace(0, 2 * torch.pi, 37), torch.linspace(0, torch.pi, 19), indexing="ij")
    for ax, t, X in zip(axes, ts, snaps):
        ax.plot_wireframe(torch.cos(u) * torch.sin(v), torch.sin(u) * torch.sin(v), torch.cos(v), color="0.82", linewidth=0.3)
        front = (X @ c) >= 0
        ax.scatter(X[front, 0], X[front, 1], X[front, 2], s=16, color="#c62828", depthshade=False, zorder=3)
        ax.scatter(X[~front, 0], X[~front, 1], X[~front, 2], s=10, color="#ef9a9a", depthshade=False)
        ax.view_init(elev=elev, azim=azim)
        ax.set_title(f"t = {t:g}", fontsize=10, y=0.95)
        ax.set_box_aspect((1, 1, 1), zoom=1.3)
        ax.set_axis_off()
    return axes


@experiment("intro-clustering", chapter="introduction", plot=plot_clustering)
def clustering(
    profile: str = "fast",
    device: str | torch.device = "cpu",
    *,
    trials: int | None = None,
    n: int = 64,
    d: int = 3,
    beta: float = 1.0,
    t1: float = 30.0,
    dt: float = 0.1,
    snapshots: tuple[float, ...] = (0.0, 3.0, 6.0, 9.0, 30.0),
    tol: float = 1e-2,
    seed: int = 0,
) -> dict[str, Any]:
    """Tokens on S^{d-1} with Q = K = V = I (paper D's SA model): clusters form, then merge into one.

    Parameters
    ----------
    profile : ``"fast"`` or ``"full"``: the number of trials when ``trials`` is None.
    trials, n, d, beta : ensemble size, tokens, dimension, inverse temperature.
    t1, dt : horizon and RK4 step.
    snapshots : times kept for the figure (must include 0 and lie in [0, t1]).
    tol : distance below which tokens belong to one cluster (single linkage).

    Returns
    -------
    dict with ``times`` (S,), ``snapshots`` (S, n, d) of trial 0, ``clusters`` (S, trials) int,
    ``rho_min`` (S, trials), ``one_cluster_fraction`` (at t1) and the config.

    Examples
    --------
    >>> r = clustering(trials=2, n=8, t1=40.0, snapshots=(0.0, 40.0))
    >>> r["clusters"][0].tolist(), r["one_cluster_fraction"]
    ([8, 8], 1.0)
    """
    trials = _sizes(profile)["trials"] if trials is None else trials
    g = torch.Generator().manual_seed(seed)  # drawn on the CPU: a seed gives the same tokens on every device
    x0 = uniform_sphere(trials, n, d, generator=g).to(device)
    sol = simulate(Sphere(beta=beta), x0, t1, method="rk4", dt=dt, save_at=list(snapshots))
    clusters = torch.stack([cluster_count(X, tol) for X in sol.xs])
    rho = torch.stack([rho_min(X) for X in sol.xs])
    return {
        "times": sol.ts.tolist(),
        "snapshots": sol.xs[:, 0].cpu(),
        "clusters": clusters.cpu(),
        "rho_min": rho.cpu(),
        "one_cluster_fraction": float((clusters[-1] == 1).double().mean()),
        "config": {"trials": trials, "n": n, "d": d, "beta": beta, "t1": t1, "dt": dt, "tol": tol, "seed": seed, "method": "rk4"},
    }


def plot_consensus(result: dict[str, Any], ax=None):
    """Modal masses p_k(t): closed form (lines) against the simulator (markers); returns the axes.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = plot_consensus(consensus(n=4, t1=1.0))
    >>> len(ax.get_lines())
    6
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.4))
    ts = result["times"]
    for k, lam in enumerate(result["lambdas"]):
        line, = ax.plot(ts, result["p_theory"][:, k], lw=1.6, label=f"$\\lambda_{k + 1} = {lam:g}$")
        ax.plot(ts, result["p_sim"][:, k], "o", ms=4, mfc="none", color=line.get_color())
    ax.set_xlabel("t")
    ax.set_ylabel("modal mass $p_k(t)$")
    ax.legend(fontsize=8, frameon=False)
    return ax


@experiment("intro-consensus", chapter="introduction", plot=plot_consensus)
def consensus(
    profile: str = "fast",
    device: str | torch.device = "cpu",
    *,
    n: int = 64,
    lambdas: tuple[float, ...] = (1.0, 0.5, -0.3),
    beta: float = 1.0,
    t1: float = 5.0,
    samples: int = 21,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    seed: int = 1,
) -> dict[str, Any]:
    """All n tokens start at one point x0: the simulator against the consensus closed form.

    The model is paper C's (2.2) generalised: ``Sphere(A, V, beta)`` with a symmetric V of the given
    eigenvalues (random eigenvectors) and an unrelated random A, since on the consensus manifold the
    attention weights are uniform whatever A and beta are. The profile does not change this check.

    Returns
    -------
    dict with ``times`` (T,), ``p_sim`` and ``p_theory`` (T, d) modal masses, ``max_mass_error``,
    ``max_state_error`` (simulated token vs ``e^{tV} x0 / |e^{tV} x0|``), ``max_spread`` (largest
    distance between two tokens: 0 if the manifold is invariant), ``log_ratio_slopes`` (measured
    d/dt log(p_k / p_1) for k >= 2, from the first and last samples) and ``slopes_theory``
    (2 (lambda_k - lambda_1)).

    Examples
    --------
    >>> r = consensus(n=4, t1=1.0)
    >>> r["max_mass_error"] < 1e-8, r["max_spread"] < 1e-12
    (True, True)
    """
    _sizes(profile)
    d = len(lambdas)
    g = torch.Generator().manual_seed(seed)  # drawn on the CPU: a seed gives the same problem on every device
    kw = {"dtype": torch.float64, "generator": g}
    E, _ = torch.linalg.qr(torch.randn(d, d, **kw))  # eigenvectors (columns)
    lam = torch.tensor(lambdas, dtype=torch.float64)
    V = E @ torch.diag(lam) @ E.T
    A = torch.randn(d, d, **kw)
    x = torch.randn(d, **kw)
    E, lam, V, A, x0 = (T.to(device) for T in (E, lam, V, A, x / x.norm()))
    X0 = x0.expand(1, n, d).clone()
    ts = torch.linspace(0.0, t1, samples, dtype=torch.float64)
    sol = simulate(Sphere(A=A, V=V, beta=beta), X0, t1, method="dopri5", rtol=rtol, atol=atol, save_at=ts.tolist())
    xs = sol.xs[:, 0]  # (T, n, d)
    p_sim = modal_masses(xs, E)  # (T, d): averaged over tokens (all equal on the manifold)
    p_theory = consensus_modal_masses((E.T @ x0) ** 2, lam, ts.to(device))
    exact = consensus_solution(x0, V, ts.to(device))  # (T, d)
    log_ratio = torch.log(p_sim[:, 1:] / p_sim[:, :1])
    slopes = (log_ratio[-1] - log_ratio[0]) / (ts[-1] - ts[0]).item()
    return {
        "times": ts.tolist(),
        "lambdas": list(lambdas),
        "p_sim": p_sim.cpu(),
        "p_theory": p_theory.cpu(),
        "max_mass_error": float((p_sim - p_theory).abs().max()),
        "max_state_error": float((xs - exact[:, None, :]).norm(dim=-1).max()),
        "max_spread": float((xs - xs[:, :1]).norm(dim=-1).max()),
        "log_ratio_slopes": slopes.cpu().tolist(),
        "slopes_theory": [2 * (lk - lambdas[0]) for lk in lambdas[1:]],
        "stats": dict(sol.stats),
        "config": {"n": n, "lambdas": list(lambdas), "beta": beta, "t1": t1, "rtol": rtol, "atol": atol, "seed": seed, "method": "dopri5"},
    }
