"""``intro-clustering``: tokens on S^2 with Q = K = V = I, beta = 1, n = 64, from uniform initial
positions, collapse into clusters and then into one (the classic picture; paper D's SA model).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import ledger
from ...fits import fraction_interval
from ...init import uniform_sphere
from ...integrate import simulate
from ...metrics import cluster_count, rho_min
from ...models import Sphere
from ...registry import PaperScale, claims_for, experiment, summary_for

__all__ = ["ClusteringConfig", "clustering", "plot_clustering", "clustering_summary", "clustering_claims"]


@dataclasses.dataclass(frozen=True)
class ClusteringConfig:
    """Tokens on S^{d-1}, Q = K = V = I.

    ``trials`` independent ensembles of ``n`` tokens in dimension ``d`` at inverse temperature
    ``beta``, RK4 with step ``dt`` up to ``t1``; ``save_at`` (including 0, within [0, t1]) are kept
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
    save_at: tuple[float, ...] = (0.0, 3.0, 6.0, 9.0, 30.0)
    tol: float = 1e-2
    seed: int = 0


def plot_clustering(result: dict[str, Any], ax=None):
    """3-D scatter of trial 0 at the snapshot times (one panel each); returns the axes.

    Parameters
    ----------
    result : dict
        What :func:`clustering` returns.
    ax : sequence of 3-D matplotlib.axes.Axes, optional
        One panel per snapshot time (``result["times"]``); None opens a new figure with them.

    Returns
    -------
    ax : list of 3-D matplotlib.axes.Axes
        The panels drawn on: ``ax`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> r = clustering(trials=1, n=8, t1=1.0, save_at=(0.0, 1.0))
    >>> len(plot_clustering(r))
    2
    """
    import matplotlib.pyplot as plt

    snaps, ts = np.asarray(result["snapshots"]), result["times"]
    if ax is None:
        fig = plt.figure(figsize=(2.6 * len(ts), 2.9))
        ax = [fig.add_subplot(1, len(ts), k + 1, projection="3d") for k in range(len(ts))]
        fig.subplots_adjust(left=0.0, right=1.0, bottom=0.0, top=0.86, wspace=0.0)
    # Look at the sphere from where the tokens end up, so the clusters face the reader.
    c = snaps[-1].mean(axis=0)
    c = c / np.linalg.norm(c) if np.linalg.norm(c) > 0 else np.array([0.0, 0.0, 1.0])
    elev, azim = math.degrees(math.asin(float(np.clip(c[2], -1, 1)))), math.degrees(math.atan2(float(c[1]), float(c[0])))
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 37), np.linspace(0, np.pi, 19), indexing="ij")
    for panel, t, X in zip(ax, ts, snaps):
        panel.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.82", linewidth=0.3)
        front = (X @ c) >= 0
        panel.scatter(X[front, 0], X[front, 1], X[front, 2], s=16, color="#c62828", depthshade=False, zorder=3)
        panel.scatter(X[~front, 0], X[~front, 1], X[~front, 2], s=10, color="#ef9a9a", depthshade=False)
        panel.view_init(elev=elev, azim=azim)
        panel.set_title(f"t = {t:g}", fontsize=10, y=0.95)
        panel.set_box_aspect((1, 1, 1), zoom=1.3)
        panel.set_axis_off()
    return ax


@experiment("intro-clustering", chapter="introduction", plot=plot_clustering, renamed={"snapshots": "save_at"},
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
    >>> r = clustering(trials=2, n=8, t1=40.0, save_at=(0.0, 40.0))
    >>> r["clusters"][0].tolist(), r["one_cluster_fraction"]
    ([8, 8], 1.0)
    """
    x0 = uniform_sphere(cfg.trials, cfg.n, cfg.d, generator=generator).to(device)  # drawn on the CPU
    sol = simulate(Sphere(beta=cfg.beta), x0, cfg.t1, method="rk4", dt=cfg.dt, save_at=list(cfg.save_at))
    clusters = torch.stack([cluster_count(X, cfg.tol) for X in sol.xs])
    return {
        "times": sol.ts.tolist(),
        "snapshots": sol.xs[:, 0],
        "clusters": clusters,
        "rho_min": torch.stack([rho_min(X) for X in sol.xs]),
        "one_cluster_fraction": float((clusters[-1] == 1).double().mean()),
    }


@summary_for("intro-clustering")
def clustering_summary(result: dict[str, Any]) -> dict[str, Any]:
    """What the chapter and the claims read: the number of trials, how many sit in one cluster at t1
    (``merged``, ``one_cluster_fraction``, ``all_merged``), its exact 95 % interval, the horizon, the
    clusters of trial 0 and the mean number of clusters at each snapshot.

    Examples
    --------
    >>> s = clustering_summary({"times": [0.0, 30.0], "clusters": [[8, 8, 8], [1, 1, 2]]})
    >>> s["trials"], s["merged"], s["all_merged"], s["mean_clusters"]
    (3, 2, False, [8.0, 1.3333333333333333])
    """
    clusters = np.asarray(result["clusters"])
    trials, merged = int(clusters.shape[1]), int((clusters[-1] == 1).sum())
    lo, hi = fraction_interval(merged, trials)
    merged_phrase = (f"every one of the {trials:,} trials ends" if merged == trials else f"{merged:,} of the {trials:,} trials end")
    before = -2 if clusters.shape[0] > 1 else -1
    return dict(trials=trials, merged=merged, one_cluster_fraction=merged / trials, all_merged=merged == trials,
                merged_phrase=merged_phrase, t_before_end=float(result["times"][before]),
                mean_clusters_before_end=float(clusters[before].mean()),
                interval=(float(lo), float(hi)), t1=float(result["times"][-1]), times=[float(t) for t in result["times"]],
                clusters_trial0=[int(c) for c in clusters[:, 0]], mean_clusters=[float(c) for c in clusters.mean(axis=1)])


@claims_for("intro-clustering")
def clustering_claims(result: dict[str, Any], cfg: ClusteringConfig) -> list[ledger.Claim]:
    """The single-cluster claim: "eventually" holds for almost every initial configuration, so every
    trial must merge. Reproduced when every trial is one cluster at t1; a trial not merged by t1 does
    not contradict "eventually": the row is then inconclusive (a longer horizon would decide it).

    Examples
    --------
    >>> r = {"times": [0.0, 30.0], "clusters": [[8, 8], [1, 1]]}
    >>> [c.status for c in clustering_claims(r, ClusteringConfig())]
    ['reproduced']
    >>> c = clustering_claims({"times": [0.0, 30.0], "clusters": [[8, 8], [1, 3]]}, ClusteringConfig())[0]
    >>> c.status, "needed" in c.why
    ('inconclusive', True)
    """
    s = clustering_summary(result)
    lo, hi = s["interval"]
    v = ledger.verdict(True) if s["all_merged"] else ledger.Verdict(
        "inconclusive", why=f"{s['trials'] - s['merged']} of {s['trials']} trials not yet one cluster at t = {s['t1']:g}: "
                            "needed: a longer horizon for them (eventual merging cannot fail at a finite time)")
    return [ledger.Claim(
        id="D-background-single-cluster", paper="D", where="Background: the collapse metastability delays (review answer Q1; proved by Geshkovski et al. 2023, cited there)",
        statement=rf"With $Q = K = V = I$, tokens on $\mathbb{{S}}^{{{cfg.d - 1}}}$ ($\beta = {cfg.beta:g}$, $n = {cfg.n}$) eventually collapse into a "
                  "single cluster; metastability only delays it.",
        quote="clustering (k_max equally spaced clusters), then eventual merging", source="NOTES.md", basis="paper",
        test=f"every one of {s['trials']} uniform trials is one cluster (single linkage at {cfg.tol:g}) at t = {s['t1']:g}; "
             "a trial not merged by then leaves the row inconclusive, not contradicted",
        verdict=v, measured=s["one_cluster_fraction"], expected=1.0, tolerance=0.0,
        uncertainty=f"95% [{lo:.2f}, {hi:.2f}] of {s['trials']} trials")]
