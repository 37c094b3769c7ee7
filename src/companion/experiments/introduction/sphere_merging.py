"""``intro-sphere-merging``: tokens on S^2 with Q = K = V = I at beta = 9 gather into several clusters
that persist for a long time and then merge, one at a time (the book's hero animation draws trial 0).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import ledger
from ...init import uniform_sphere
from ...integrate import simulate
from ...metrics import cluster_labels
from ...models import Sphere
from ...registry import PaperScale, claims_for, experiment, summary_for

__all__ = ["SphereMergingConfig", "sphere_merging", "plot_sphere_merging", "sphere_merging_summary",
           "sphere_merging_claims"]


@dataclasses.dataclass(frozen=True)
class SphereMergingConfig:
    """Tokens on S^{d-1}, Q = K = V = I, kept long enough to see clusters merge.

    ``trials`` independent ensembles of ``n`` uniform tokens in dimension ``d`` at inverse temperature
    ``beta``, RK4 with step ``dt`` up to ``t1``; ``save_count`` saved states: t = 0 and ``save_count - 1``
    times geometric in [``t_first``, ``t1``] (even in log t: formation, plateaus and merges each get
    their share); ``tol`` is the single-linkage distance of one cluster.

    Examples
    --------
    >>> SphereMergingConfig().n, SphereMergingConfig(trials=64, n=128).beta
    (32, 9.0)
    """

    trials: int = 4
    n: int = 32
    d: int = 3
    beta: float = 9.0
    t1: float = 40.0
    dt: float = 0.1
    save_count: int = 40
    t_first: float = 1.0
    tol: float = 1e-2
    seed: int = 0


def plot_sphere_merging(result: dict[str, Any], ax=None):
    """The number of clusters against log t: every trial (thin, grey, a little apart), trial 0 (blue,
    the trial the hero animation draws) and the mean over trials (black); returns the axes.

    Parameters
    ----------
    result : dict
        What :func:`sphere_merging` returns.
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
    >>> r = {"times": [0.0, 1.0, 10.0], "clusters": np.array([[8, 8], [5, 6], [3, 4]])}
    >>> plot_sphere_merging(r).get_xscale()
    'log'
    """
    import matplotlib.pyplot as plt

    from ...style import COLORS, FULL_WIDTH, MIN_FONT, log_x

    if ax is None:
        _, ax = plt.subplots(figsize=(FULL_WIDTH, 3.2), layout="constrained")
    ts, clusters = np.asarray(result["times"], dtype=np.float64), np.asarray(result["clusters"])
    keep = ts > 0  # a log axis
    ts, clusters = ts[keep], clusters[keep]
    trials = clusters.shape[1]
    top = 10  # counts above it (tokens still gathering) run off the top
    for j in range(1, trials):
        ax.step(ts, clusters[:, j] + 0.3 * ((j * 0.6180339887) % 1.0 - 0.5), where="post", color=COLORS["reference"],
                lw=0.6, alpha=0.45, label="each other trial" if j == 1 else None)
    ax.step(ts, clusters[:, 0], where="post", color=COLORS["measured"], lw=2.0, label="trial 0 (the animation)")
    ax.plot(ts, clusters.mean(axis=1), color=COLORS["theory"], lw=1.2, ls="--", label=f"mean of {trials} trials")
    log_x(ax)
    ax.set_xlim(ts[0], ts[-1])
    ax.set_ylim(0.5, top + 0.5)
    ax.set_yticks(range(1, top + 1))
    ax.set_xlabel("$t$", fontsize=MIN_FONT)
    ax.set_ylabel("clusters", fontsize=MIN_FONT)
    ax.tick_params(labelsize=MIN_FONT)
    ax.legend(fontsize=MIN_FONT, frameon=False, loc="upper right")
    return ax


@experiment("intro-sphere-merging", chapter="introduction", plot=plot_sphere_merging,
            profiles={"fast": SphereMergingConfig(),
                      "full": SphereMergingConfig(trials=64, n=128, t1=400.0, save_count=200)},
            paper=PaperScale(note="An illustration, not a figure of the four papers: no paper sizes (paper D's theorems are on "
                                  "the circle, N -> infinity). n = 128 tokens on S^2 at beta = 9, RK4 at step 0.1 (paper A's "
                                  "integrator, App. E.1) to t = 400, 64 ensembles, 200 saves geometric from t = 1."))
def sphere_merging(cfg: SphereMergingConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Tokens on S^{d-1} with Q = K = V = I (paper D's SA model) at beta = 9: several clusters form,
    persist, and merge one at a time.

    Profiles: ``fast`` 4 trials of n = 32 to t1 = 40 (40 saves), ``full`` 64 trials of n = 128 to
    t1 = 400 (200 saves); beta = 9, d = 3, RK4 at dt = 0.1 in both; see :class:`SphereMergingConfig`.

    Returns
    -------
    dict with ``times`` (S,), ``trajectory`` (S, n, d) of trial 0, ``labels`` (n,) trial 0's clusters
    at t1 (each token labelled by the smallest index in its cluster), ``clusters`` (S, trials) int and
    ``singletons`` (S, trials) int (clusters of one token: tokens still travelling).

    Examples
    --------
    >>> r = sphere_merging(trials=2, n=8, t1=5.0, save_count=4)
    >>> r["times"][0], r["trajectory"].shape, r["clusters"].shape, r["clusters"][0].tolist()
    (0.0, (4, 8, 3), (4, 2), [8, 8])
    >>> sphere_merging(t_first=50.0)
    Traceback (most recent call last):
    ...
    ValueError: t_first must be in (0, t1 = 40), got 50.0
    """
    if not 0 < cfg.t_first < cfg.t1:
        raise ValueError(f"t_first must be in (0, t1 = {cfg.t1:g}), got {cfg.t_first!r}")
    if cfg.save_count < 2:
        raise ValueError(f"save_count must be at least 2 (t = 0 and t1), got {cfg.save_count!r}")
    x0 = uniform_sphere(cfg.trials, cfg.n, cfg.d, generator=generator).to(device)  # drawn on the CPU
    save_at = [0.0] + np.geomspace(cfg.t_first, cfg.t1, cfg.save_count - 1).tolist()
    sol = simulate(Sphere(beta=cfg.beta), x0, cfg.t1, method="rk4", dt=cfg.dt, save_at=save_at)
    labels = torch.stack([cluster_labels(X, cfg.tol) for X in sol.xs])  # (S, trials, n)
    sizes = torch.zeros_like(labels).scatter_add_(-1, labels, torch.ones_like(labels))  # tokens per label
    return {
        "times": sol.ts.tolist(),
        "trajectory": sol.xs[:, 0],
        "labels": labels[-1, 0],
        "clusters": (sizes > 0).sum(dim=-1),
        "singletons": (sizes == 1).sum(dim=-1),
    }


def _runs(times: np.ndarray, counts: np.ndarray, start: int) -> list[tuple[int, float, float]]:
    """Runs of one cluster count ``(count, t_start, t_end)`` from save ``start`` on (the first save
    without a token alone), ``t_end`` the time of the next change (t1 for the last run), from the
    first run that lasts a doubling of time (``t_end >= 2 t_start``): the clusters once formed,
    without the quick merges of small groups still gathering. A description, not a test."""
    times, counts = times[start:], counts[start:]
    starts = np.r_[0, np.flatnonzero(np.diff(counts)) + 1]
    ends = np.r_[starts[1:], len(counts) - 1]
    runs = [(int(counts[a]), float(times[a]), float(times[b])) for a, b in zip(starts, ends)]
    first = next((i for i, (_, a, b) in enumerate(runs) if a > 0 and b >= 2 * a), len(runs))
    return runs[first:]


def _words(k: int) -> str:
    return ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")[k - 1] if 1 <= k <= 10 else str(k)


@summary_for("intro-sphere-merging")
def sphere_merging_summary(result: dict[str, Any]) -> dict[str, Any]:
    """What the chapter and the claims read: when each trial's tokens have all joined a cluster (the
    first save without a cluster of one token: ``formed_at``, nan if never) and how many clusters
    there are then (``formed_count``, 0 if never); the clusters at t1; trial 0's runs of one count
    once formed (``runs0``, in words ``trial0_phrase``); how many drops of the count after the
    formed runs begin are by more than one cluster between two saves (``multi_drops`` of ``drops``).

    Examples
    --------
    >>> r = {"times": [0.0, 1.0, 1.5, 5.0, 20.0], "clusters": [[8, 8], [6, 6], [5, 6], [5, 5], [3, 4]],
    ...      "singletons": [[8, 8], [1, 0], [0, 0], [0, 0], [0, 0]]}
    >>> s = sphere_merging_summary(r)
    >>> s["formed_at"], s["formed_count"], s["final_counts_text"], s["runs0"]
    ([1.5, 1.0], [5, 6], '3: 1, 4: 1', [(5, 1.5, 20.0), (3, 20.0, 20.0)])
    >>> s["trial0_phrase"], s["drops"], s["multi_drops"]
    ('five clusters from t = 1.5 to 20, then three clusters at t = 20', 3, 1)
    """
    ts = np.asarray(result["times"], dtype=np.float64)
    clusters, single = np.asarray(result["clusters"]), np.asarray(result["singletons"])
    trials = int(clusters.shape[1])
    formed = single == 0
    idx = [int(np.argmax(formed[:, j])) if formed[:, j].any() else None for j in range(trials)]
    formed_at = [float(ts[i]) if i is not None else math.nan for i in idx]
    formed_count = [int(clusters[i, j]) if i is not None else 0 for j, i in enumerate(idx)]
    final = clusters[-1]
    values, counts = np.unique(final, return_counts=True)
    runs = [_runs(ts, clusters[:, j], i) if i is not None else [] for j, i in enumerate(idx)]  # once formed
    runs0 = runs[0]
    phrase = ", then ".join(f"{_words(c)} cluster{'s' if c != 1 else ''} " + (
        f"from t = {a:.3g} to {b:.3g}" if k == 0 else f"to t = {b:.3g}" if b > a else f"at t = {b:.3g}")
        for k, (c, a, b) in enumerate(runs0))
    drops = multi = 0
    for j, rj in enumerate(runs):
        if rj:
            step = -np.diff(clusters[ts >= rj[0][1], j])
            drops, multi = drops + int((step > 0).sum()), multi + int((step > 1).sum())
    done = [f for f in formed_at if not math.isnan(f)]
    return dict(trials=trials, t1=float(ts[-1]), times=ts.tolist(), formed_at=formed_at, formed_count=formed_count,
                all_formed=len(done) == trials, formed_median=float(np.median(done)) if done else math.nan,
                formed_max=float(max(done)) if done else math.nan,
                min_formed_count=min((c for c in formed_count if c), default=0),
                max_formed_count=max(formed_count), final_counts=[int(c) for c in final],
                final_counts_text=", ".join(f"{v}: {c}" for v, c in zip(values.tolist(), counts.tolist())),
                several_at_end=int((final >= 2).sum()), min_final=int(final.min()), max_final=int(final.max()),
                clusters_trial0=[int(c) for c in clusters[:, 0]], mean_clusters=[float(c) for c in clusters.mean(axis=1)],
                runs0=runs0, trial0_phrase=phrase, drops=drops, multi_drops=multi)


QUOTE = "it avoids the immediate collapse into a single cluster"


@claims_for("intro-sphere-merging")
def sphere_merging_claims(result: dict[str, Any], cfg: SphereMergingConfig) -> list[ledger.Claim]:
    """Several clusters, not one: paper D's answer to reviewer 2 (Q1) says the metastable phase
    "avoids the immediate collapse into a single cluster". Its theorems are on the circle as N grows;
    reading the sentence for tokens on S^2 at this n and beta (basis ``reading``), every trial must
    hold at least two clusters when its tokens have all joined one (a yes/no check). How long the
    clusters then persist is reported, not judged: the paper gives no time scale on S^2 at finite n.
    A trial with a token still alone at t1 leaves the row inconclusive (a longer run would decide it).

    Examples
    --------
    >>> r = {"times": [0.0, 5.0, 20.0], "clusters": [[8, 8], [5, 4], [3, 4]], "singletons": [[8, 8], [0, 0], [0, 0]]}
    >>> [c.status for c in sphere_merging_claims(r, SphereMergingConfig())]
    ['reproduced']
    >>> sphere_merging_claims(dict(r, clusters=[[8, 8], [1, 4], [1, 4]]), SphereMergingConfig())[0].status
    'not-reproduced'
    >>> sphere_merging_claims(dict(r, singletons=[[8, 8], [0, 2], [0, 1]]), SphereMergingConfig())[0].status
    'inconclusive'
    """
    s = sphere_merging_summary(result)
    formed = [c for c in s["formed_count"] if c]
    if any(c < 2 for c in formed):
        v = ledger.verdict(False)
    elif not s["all_formed"]:
        v = ledger.Verdict("inconclusive", why=f"{s['trials'] - len(formed)} of {s['trials']} trials still hold a token alone "
                                               f"at t = {s['t1']:g}: needed: a longer horizon for them")
    else:
        v = ledger.verdict(True)
    return [ledger.Claim(
        id="D-sphere-several-clusters", paper="D", where="review answer (reviewer 2, Q1)",
        statement=rf"With $Q = K = V = I$, uniform tokens on $\mathbb{{S}}^{{{cfg.d - 1}}}$ ($\beta = {cfg.beta:g}$, "
                  rf"$n = {cfg.n}$) first gather into several clusters, not one (reading: the sentence, said of paper D's "
                  "model, read for this sphere and this finite n).",
        quote=QUOTE, basis="reading",
        test=f"yes/no: each of {s['trials']} trials holds at least 2 clusters (single linkage at {cfg.tol:g}) at the first save "
             "where no token is alone (measured: the fewest and the most over trials); a trial with a token still alone at "
             f"t1 leaves the row inconclusive. How long the clusters persist is shown, not judged (no time scale in the "
             f"paper for S^2 at finite n): at t = {s['t1']:g} the trials hold {s['final_counts_text']} (clusters: trials)",
        verdict=v, measured=[s["min_formed_count"], s["max_formed_count"]], expected=">= 2 clusters in every trial",
        tolerance=0)]
