"""metastable-long-run: the cluster count over a long USA run, from the formation of k_max clusters
through their plateau to the first merge."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from ... import fits, ledger
from ...circle import Circle
from ...init import uniform_angles
from ...integrate import simulate
from ...metrics import cluster_count
from ...perf import threads
from ...registry import PaperScale, claims_for, experiment
from ...theory.metastable import k_max

__all__ = ["LongRunConfig", "long_run", "plot_long_run", "long_run_claims", "REACHED_FRACTION"]

# Merging: at least half of the trials must reach k_max clusters for the plateau to be observed.
REACHED_FRACTION = 0.5


@dataclasses.dataclass(frozen=True)
class LongRunConfig:
    """A long USA run: ``trials`` ensembles of ``n`` tokens at inverse temperature ``beta`` to ``t1``,
    adaptive Dormand-Prince (``rtol``, ``atol``, first step ``dt``), 80 saved times (20 in [0, 1),
    60 geometric in [1, t1]); ``threads``: torch threads (None: leave).

    Examples
    --------
    >>> LongRunConfig().n, LongRunConfig().t1
    (500, 60.0)
    """

    beta: float = 5.0
    n: int = 500
    trials: int = 8
    t1: float = 60.0
    dt: float = 1e-3
    rtol: float = 1e-7
    atol: float = 1e-9
    threads: int | None = 1
    seed: int = 3


def plot_long_run(result: dict[str, Any], ax=None):
    """Cluster count against time (log scale) for every trial.

    Parameters
    ----------
    result : dict
        What :func:`long_run` returns.
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
    >>> ts = np.array([0.0, 1.0, 2.0])
    >>> plot_long_run({"ts": ts, "counts": np.array([[0, 3, 2], [0, 3, 3]]), "beta": 5.0, "n": 500, "k": 3}).get_xscale()
    'symlog'
    """
    import matplotlib.pyplot as plt

    from ...style import MIN_FONT

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
    for j, c in enumerate(result["counts"]):
        ax.step(result["ts"], c + 0.04 * j, where="post", lw=1)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("$t$", fontsize=MIN_FONT)
    ax.set_ylabel("cluster count", fontsize=MIN_FONT)
    ax.set_title(f"Clusters over time, $\\beta = {result['beta']:g}$, $N = {result['n']}$",
                 fontsize=MIN_FONT + 1)
    ax.tick_params(labelsize=MIN_FONT)
    return ax


@experiment("metastable-long-run", chapter="metastable", plot=plot_long_run,
            profiles={"fast": LongRunConfig(), "full": LongRunConfig(n=5_000, trials=16, t1=200.0)},
            paper=PaperScale(note="No paper run goes past the metastable phase (the three phases: reviews): beta = 5 "
                                  "as the official run, n = 5000, 16 ensembles, T = 200, adaptive Dormand-Prince."))
def long_run(cfg: LongRunConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Cluster count over a long USA run: formation of k_max clusters, the plateau, merging.

    Returns
    -------
    dict with ``ts`` (S,), ``counts`` (trials, S), ``first_k`` and ``first_merge`` (trials,) (first
    time with k_max clusters, first time with fewer after that; nan: never) and ``final_counts``.

    Examples
    --------
    >>> r = long_run(n=100, trials=2, t1=5.0)
    >>> r["k"], r["counts"].shape, float(r["ts"][-1])
    (3, (2, 80), 5.0)
    """
    th0 = uniform_angles(cfg.trials, cfg.n, generator=generator, device=device)
    ts = np.concatenate([np.linspace(0, 1, 21)[:-1], np.geomspace(1, cfg.t1, 60)])
    with threads(cfg.threads):
        sol = simulate(Circle(cfg.beta, "usa"), th0, cfg.t1, method="dopri5", dt=cfg.dt, save_at=ts, rtol=cfg.rtol, atol=cfg.atol)
    counts = cluster_count(sol.xs.flatten(0, 1), criterion="density").reshape(len(ts), cfg.trials).T.cpu().numpy()
    k = k_max(cfg.beta)
    first_k = np.array([fits.first_time(ts, c == k) for c in counts])
    merged = np.array([fits.first_time(ts, (c < k) & (ts > ft)) for c, ft in zip(counts, first_k)])  # ts > nan: never
    return {"beta": cfg.beta, "n": cfg.n, "trials": cfg.trials, "t1": cfg.t1, "k": k, "ts": ts, "counts": counts,
            "first_k": first_k, "first_merge": merged, "final_counts": counts[:, -1], "stats": sol.stats}


@claims_for("metastable-long-run")
def long_run_claims(result: dict[str, Any], cfg: LongRunConfig) -> list[ledger.Claim]:
    """Merging after the plateau: at least :data:`REACHED_FRACTION` of the trials reach k_max clusters
    and every one of them merges by T; partly when some trial merges, not reproduced when none does.
    (The O(ln N) duration of the plateau needs several N:
    :func:`~companion.experiments.metastable.cluster_limit.cluster_limit_claims` judges it.)

    Examples
    --------
    >>> r = {"n": 500, "trials": 4, "first_k": np.array([1.0, 1.2, 0.9, 1.1]), "first_merge": np.array([5.0, 7.0, 6.0, 9.0])}
    >>> [c.status for c in long_run_claims(r, LongRunConfig())]
    ['reproduced']
    >>> [c.status for c in long_run_claims(dict(r, first_merge=np.full(4, np.nan)), LongRunConfig())]
    ['not-reproduced']
    """
    first_k, first_merge = np.asarray(result["first_k"], dtype=np.float64), np.asarray(result["first_merge"], dtype=np.float64)
    reached, merged = np.isfinite(first_k), np.isfinite(first_merge)
    merged_of_reached = float(merged[reached].mean()) if reached.any() else 0.0
    v = ledger.worst(ledger.verdict(float(reached.mean()), REACHED_FRACTION, partly=0.0, better="higher"),
               ledger.verdict(merged_of_reached, 1.0, partly=0.0, better="higher"),
               ledger.verdict(bool(merged.any())))
    return [
        ledger.Claim(
            id="D-merging", paper="D", where="reviews (three phases)",
            statement=r"After the metastable phase with $k_{\max}$ clusters, the clusters eventually merge",
            verdict=v, measured=[int(reached.sum()), int(merged.sum())],
            expected=[int(result["trials"]), "all that reached k_max merge by T"], tolerance=0),
    ]
