"""Experiments of the introduction: the classic clustering picture and the consensus manifold.

* :func:`clustering`: tokens on S^2 with Q = K = V = I, beta = 1, n = 64, from uniform initial
  positions, collapse into clusters and then into one.
* :func:`consensus`: on the consensus manifold (all tokens at one point) the simulator against the
  closed form of paper C, Sec. 4.1 (:mod:`companion.theory.consensus`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from .. import ledger
from ..fits import fraction_interval
from ..init import random_orthogonal, uniform_sphere
from ..integrate import simulate
from ..metrics import cluster_count, modal_masses, rho_min
from ..models import Sphere
from ..report import below
from ..theory.consensus import consensus_modal_masses, consensus_solution
from ..registry import PaperScale, claims_for, experiment

__all__ = ["ClusteringConfig", "clustering", "plot_clustering", "clustering_claims",
           "ConsensusConfig", "consensus", "plot_consensus", "consensus_claims"]

# The simulator must match the closed form to integration accuracy (dopri5 at rtol 1e-10).
TOL_EXACT = 1e-8
# d/dt log(p_k/p_1) from the first and last samples: exact up to the integration error, far below 1e-6.
TOL_SLOPE = 1e-6
# Single cluster: every trial should end in one cluster; at least half of them is "partly".
ONE_CLUSTER_PARTLY = 0.5


@dataclasses.dataclass(frozen=True)
class ClusteringConfig:
    """Tokens on S^{d-1}, Q = K = V = I.

    ``trials`` independent ensembles of ``n`` tokens in dimension ``d`` at inverse temperature
    ``beta``, RK4 with step ``dt`` up to ``t1``; ``snapshots`` (including 0, within [0, t1]) are kept
    for the figure; ``tol`` is the single-linkage distance of one cluster.

    Examples
    --------
    >>> ClusteringConfig().trials, ClusteringConfig(trials=1024).n
    (16, 64)
    """

    trials: int = 16
    n: int = 64
    d: int = 3
    beta: float = 1.0
    t1: float = 30.0
    dt: float = 0.1
    snapshots: tuple[float, ...] = (0.0, 3.0, 6.0, 9.0, 30.0)
    tol: float = 1e-2
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class ConsensusConfig:
    """All ``n`` tokens at one point; V symmetric with eigenvalues ``lambdas`` (random eigenvectors),
    an unrelated random A, inverse temperature ``beta``; Dormand-Prince (``rtol``, ``atol``) up to
    ``t1``, sampled at ``samples`` equally spaced times.

    Examples
    --------
    >>> ConsensusConfig().lambdas
    (1.0, 0.5, -0.3)
    """

    n: int = 64
    lambdas: tuple[float, ...] = (1.0, 0.5, -0.3)
    beta: float = 1.0
    t1: float = 5.0
    samples: int = 21
    rtol: float = 1e-10
    atol: float = 1e-12
    seed: int = 1


def plot_clustering(result: dict[str, Any], axes=None):
    """3-D scatter of trial 0 at the snapshot times (one panel each); returns the axes.

    Parameters
    ----------
    result : dict
        What :func:`clustering` returns.
    axes : sequence of 3-D matplotlib.axes.Axes, optional
        One panel per snapshot time (``result["times"]``); None opens a new figure with them.

    Returns
    -------
    axes : list of 3-D matplotlib.axes.Axes
        The panels drawn on: ``axes`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> r = clustering(trials=1, n=8, t1=1.0, snapshots=(0.0, 1.0))
    >>> len(plot_clustering(r))
    2
    """
    import matplotlib.pyplot as plt

    snaps, ts = np.asarray(result["snapshots"]), result["times"]
    if axes is None:
        fig = plt.figure(figsize=(2.6 * len(ts), 2.9))
        axes = [fig.add_subplot(1, len(ts), k + 1, projection="3d") for k in range(len(ts))]
        fig.subplots_adjust(left=0.0, right=1.0, bottom=0.0, top=0.86, wspace=0.0)
    # Look at the sphere from where the tokens end up, so the clusters face the reader.
    c = snaps[-1].mean(axis=0)
    c = c / np.linalg.norm(c) if np.linalg.norm(c) > 0 else np.array([0.0, 0.0, 1.0])
    elev, azim = math.degrees(math.asin(float(np.clip(c[2], -1, 1)))), math.degrees(math.atan2(float(c[1]), float(c[0])))
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 37), np.linspace(0, np.pi, 19), indexing="ij")
    for ax, t, X in zip(axes, ts, snaps):
        ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.82", linewidth=0.3)
        front = (X @ c) >= 0
        ax.scatter(X[front, 0], X[front, 1], X[front, 2], s=16, color="#c62828", depthshade=False, zorder=3)
        ax.scatter(X[~front, 0], X[~front, 1], X[~front, 2], s=10, color="#ef9a9a", depthshade=False)
        ax.view_init(elev=elev, azim=azim)
        ax.set_title(f"t = {t:g}", fontsize=10, y=0.95)
        ax.set_box_aspect((1, 1, 1), zoom=1.3)
        ax.set_axis_off()
    return axes


@experiment("intro-clustering", chapter="introduction", plot=plot_clustering,
            profiles={"fast": ClusteringConfig(), "full": ClusteringConfig(trials=1024)},
            paper=PaperScale(note="An illustration, not a figure of the four papers: no paper sizes. n = 64 tokens on "
                                  "S^2 at beta = 1, RK4 at step 0.1 (paper A's integrator, App. E.1), 1024 ensembles "
                                  "for the one-cluster fraction."))
def clustering(cfg: ClusteringConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Tokens on S^{d-1} with Q = K = V = I (paper D's SA model): clusters form, then merge into one.

    Profiles: ``fast`` 16 trials, ``full`` 1024 trials (the other parameters as in the chapter:
    n = 64, d = 3, beta = 1, t1 = 30, RK4 at dt = 0.1); see :class:`ClusteringConfig`.

    Returns
    -------
    dict with ``times`` (S,), ``snapshots`` (S, n, d) of trial 0, ``clusters`` (S, trials) int,
    ``rho_min`` (S, trials) and ``one_cluster_fraction`` (at t1).

    Examples
    --------
    >>> r = clustering(trials=2, n=8, t1=40.0, snapshots=(0.0, 40.0))
    >>> r["clusters"][0].tolist(), r["one_cluster_fraction"]
    ([8, 8], 1.0)
    """
    x0 = uniform_sphere(cfg.trials, cfg.n, cfg.d, generator=generator).to(device)  # drawn on the CPU
    sol = simulate(Sphere(beta=cfg.beta), x0, cfg.t1, method="rk4", dt=cfg.dt, save_at=list(cfg.snapshots))
    clusters = torch.stack([cluster_count(X, cfg.tol) for X in sol.xs])
    return {
        "times": sol.ts.tolist(),
        "snapshots": sol.xs[:, 0],
        "clusters": clusters,
        "rho_min": torch.stack([rho_min(X) for X in sol.xs]),
        "one_cluster_fraction": float((clusters[-1] == 1).double().mean()),
    }


@claims_for("intro-clustering")
def clustering_claims(result: dict[str, Any], cfg: ClusteringConfig) -> list[ledger.Claim]:
    """The single-cluster claim: the fraction of trials in one cluster at t1 (1 expected; at least
    :data:`ONE_CLUSTER_PARTLY` is partly).

    Examples
    --------
    >>> [c.status for c in clustering_claims({"one_cluster_fraction": 0.25}, ClusteringConfig())]
    ['not-reproduced']
    """
    frac = float(result["one_cluster_fraction"])
    lo, hi = fraction_interval(round(frac * cfg.trials), cfg.trials)
    return [ledger.Claim(
        id="D-background-single-cluster", paper="D", where="Background: the collapse metastability delays (review answer Q1; proved by Geshkovski et al. 2023, cited there)",
        statement=f"With Q = K = V = I, tokens on S^{cfg.d - 1} (beta = {cfg.beta:g}, n = {cfg.n}) eventually collapse into a "
                  "single cluster; metastability only delays it.",
        verdict=ledger.verdict(frac, 1.0, partly=ONE_CLUSTER_PARTLY, better="higher"),
        measured=frac, expected=1.0, tolerance=0.0, uncertainty=f"95% [{lo:.2f}, {hi:.2f}] of {cfg.trials} trials")]


def plot_consensus(result: dict[str, Any], ax=None):
    """Modal masses p_k(t): closed form (lines) against the simulator (markers); returns the axes.

    Parameters
    ----------
    result : dict
        What :func:`consensus` returns.
    ax : matplotlib.axes.Axes, optional
        Where to draw; None opens a new figure.

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes drawn on.

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


@experiment("intro-consensus", chapter="introduction", plot=plot_consensus,
            profiles={"fast": ConsensusConfig(), "full": ConsensusConfig()},
            paper=PaperScale(note="Paper C's consensus closed form (Sec. 4.1) comes with no numerical setting; the "
                                  "check is exact at any size, so full = fast."))
def consensus(cfg: ConsensusConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """All n tokens start at one point x0: the simulator against the consensus closed form.

    The model is paper C's (2.2) generalised: ``Sphere(A, V, beta)`` with a symmetric V of the given
    eigenvalues (random eigenvectors) and an unrelated random A, since on the consensus manifold the
    attention weights are uniform whatever A and beta are. Both profiles are the same: the check is
    exact, and its size does not change it.

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
    d = len(cfg.lambdas)
    kw = {"dtype": torch.float64, "generator": generator}  # drawn on the CPU: one problem on every device
    E = random_orthogonal(d, generator=generator)  # eigenvectors (columns)
    lam = torch.tensor(cfg.lambdas, dtype=torch.float64)
    V = E @ torch.diag(lam) @ E.T
    A = torch.randn(d, d, **kw)
    x = torch.randn(d, **kw)
    E, lam, V, A, x0 = (T.to(device) for T in (E, lam, V, A, x / x.norm()))
    X0 = x0.expand(1, cfg.n, d).clone()
    ts = torch.linspace(0.0, cfg.t1, cfg.samples, dtype=torch.float64)
    sol = simulate(Sphere(A=A, V=V, beta=cfg.beta), X0, cfg.t1, method="dopri5", rtol=cfg.rtol, atol=cfg.atol,
                   save_at=ts.tolist())
    xs = sol.xs[:, 0]  # (T, n, d)
    p_sim = modal_masses(xs, E)  # (T, d): averaged over tokens (all equal on the manifold)
    p_theory = consensus_modal_masses((E.T @ x0) ** 2, lam, ts.to(device))
    exact = consensus_solution(x0, V, ts.to(device))  # (T, d)
    log_ratio = torch.log(p_sim[:, 1:] / p_sim[:, :1])
    slopes = (log_ratio[-1] - log_ratio[0]) / (ts[-1] - ts[0]).item()
    return {
        "times": ts.tolist(),
        "lambdas": list(cfg.lambdas),
        "p_sim": p_sim,
        "p_theory": p_theory,
        "max_mass_error": float((p_sim - p_theory).abs().max()),
        "max_state_error": float((xs - exact[:, None, :]).norm(dim=-1).max()),
        "max_spread": float((xs - xs[:, :1]).norm(dim=-1).max()),
        "log_ratio_slopes": slopes.cpu().tolist(),
        "slopes_theory": [2 * (lk - cfg.lambdas[0]) for lk in cfg.lambdas[1:]],
        "stats": dict(sol.stats),
    }


@claims_for("intro-consensus")
def consensus_claims(result: dict[str, Any], cfg: ConsensusConfig) -> list[ledger.Claim]:
    """Paper C, Sec. 4.1: the closed form of the modal masses (within :data:`TOL_EXACT`, tokens kept
    together) and the log-ratio slopes 2 (lambda_k - lambda_1) (within :data:`TOL_SLOPE`).

    Examples
    --------
    >>> r = consensus(n=4, t1=1.0)
    >>> [c.status for c in consensus_claims(r, ConsensusConfig())]
    ['reproduced', 'reproduced']
    >>> r["log_ratio_slopes"] = [s + 1e-3 for s in r["log_ratio_slopes"]]  # a slope off by 1e-3
    >>> [c.status for c in consensus_claims(r, ConsensusConfig())]
    ['reproduced', 'not-reproduced']
    """
    err = max(float(result["max_mass_error"]), float(result["max_spread"]))
    slopes = [float(s) for s in result["log_ratio_slopes"]]
    slope_err = max(abs(a - float(b)) for a, b in zip(slopes, result["slopes_theory"]))
    return [
        ledger.Claim(
            id="C-4.1-consensus-closed-form", paper="C", where="Sec. 4.1, eq. (4.4)",
            statement="On the consensus manifold the modal masses follow p_k(t) = p_k(0) e^{2 lambda_k t} / sum_l p_l(0) e^{2 lambda_l t}.",
            verdict=ledger.verdict(err, TOL_EXACT), measured=below(err), expected=0.0, tolerance=TOL_EXACT),
        ledger.Claim(
            id="C-4.1-log-ratio-slopes", paper="C", where="Sec. 4.1",
            statement="d/dt log(p_k / p_m) = 2 (lambda_k - lambda_m): only the largest eigenvalue on the initial support survives.",
            verdict=ledger.verdict(slope_err, TOL_SLOPE), measured=[round(s, 6) for s in slopes],
            expected=list(result["slopes_theory"]), tolerance=TOL_SLOPE),
    ]
