"""metastable-long-run: the cluster count over a long USA run, from the formation of k_max clusters
through their plateau to the first merge."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import fits, ledger
from ...circle import Circle
from ...init import uniform_angles
from ...integrate import simulate
from ...metrics import cluster_count
from ...perf import threads
from ...registry import PaperScale, claims_for, experiment, summary_for
from ...theory.metastable import k_max

__all__ = ["LongRunConfig", "long_run", "plot_long_run", "long_run_claims", "long_run_summary"]


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


@summary_for("metastable-long-run")
def long_run_summary(result: dict[str, Any]) -> dict[str, Any]:
    """Every number the chapter and the row read: how many trials reach k_max clusters, how many of
    them merge by T, the plateau (first merge - first k_max count) and the counts at T.

    Examples
    --------
    >>> s = long_run_summary({"n": 500, "trials": 2, "t1": 10.0, "first_k": np.array([1.0, np.nan]),
    ...                       "first_merge": np.array([5.0, np.nan]), "final_counts": np.array([2, 1])})
    >>> s["reached"], s["merged"], s["plateau_median"], s["all_word"], s["final_counts_text"]
    (1, 1, 4.0, 'All', '1: 1, 2: 1')
    """
    first_k = np.asarray(result["first_k"], dtype=np.float64)
    first_merge = np.asarray(result["first_merge"], dtype=np.float64)
    reached = np.isfinite(first_k)
    merged = reached & np.isfinite(first_merge)
    plateau = (first_merge - first_k)[merged]
    final = np.asarray(result.get("final_counts", []), dtype=int)
    values, counts = np.unique(final, return_counts=True)
    return {"n": int(result["n"]), "trials": int(result["trials"]), "t1": float(result.get("t1", math.nan)),
            "reached": int(reached.sum()), "merged": int(merged.sum()),
            "plateau_median": float(np.median(plateau)) if plateau.size else math.nan,
            "plateau_min": float(plateau.min()) if plateau.size else math.nan,
            "plateau_max": float(plateau.max()) if plateau.size else math.nan,
            "final_counts_text": ", ".join(f"{v}: {c}" for v, c in zip(values.tolist(), counts.tolist())),
            # the chapter's sentence "All ... trials that reach k_max clusters later merge" reads this word
            "all_word": "All" if reached.any() and merged.sum() == reached.sum() else f"{int(merged.sum())} of the"}


QUOTE = "clustering (k_max equally spaced clusters), then eventual merging."


@claims_for("metastable-long-run")
def long_run_claims(result: dict[str, Any], cfg: LongRunConfig) -> list[ledger.Claim]:
    """Merging after the plateau (NOTES D, three phases [reviews]): every trial that reaches k_max
    clusters merges by T (a yes/no check). A trial still at k_max clusters at T has not contradicted
    "eventually": the row is then inconclusive (a longer horizon would decide), and with no trial
    reaching k_max clusters not checkable. (The O(ln N) duration of the plateau needs several N:
    :func:`~companion.experiments.metastable.cluster_limit.cluster_limit_claims` judges it.)

    Examples
    --------
    >>> r = {"n": 500, "trials": 4, "first_k": np.array([1.0, 1.2, 0.9, 1.1]), "first_merge": np.array([5.0, 7.0, 6.0, 9.0])}
    >>> [c.status for c in long_run_claims(r, LongRunConfig())]
    ['reproduced']
    >>> [c.status for c in long_run_claims(dict(r, first_merge=np.array([5.0, np.nan, 6.0, 9.0])), LongRunConfig())]
    ['inconclusive']
    """
    s = long_run_summary(result)
    if not s["reached"]:
        v = ledger.NOT_CHECKABLE
    elif s["merged"] == s["reached"]:
        v = ledger.verdict(True)
    else:
        v = ledger.Verdict("inconclusive")
    return [
        ledger.Claim(
            id="D-merging", paper="D", where="reviews (three phases; NOTES D)",
            statement=r"After the metastable phase with $k_{\max}$ clusters, the clusters eventually merge",
            quote=QUOTE, source=ledger.NOTES, basis="paper",
            test="yes/no: every trial that reaches k_max clusters merges by T; one still at k_max at T leaves it "
                 "inconclusive (censored: a longer horizon is needed, not more trials)",
            verdict=v, measured=[s["reached"], s["merged"]],
            expected=[s["trials"], "all that reached k_max merge by T"], tolerance=0,
            why="" if v.status != "inconclusive" else
                f"{s['reached'] - s['merged']} trials still hold k_max clusters at T; a longer horizon is needed"),
    ]
