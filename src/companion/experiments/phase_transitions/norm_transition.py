"""``phase-norm-transition``: Theorem 4.2 of paper A, the stationary deviation against depth L for
random value adapters of size ``eta_L = c L^alpha``, below, at and above the critical sqrt(L).

The post-LayerNorm layer map (18) with V = A = diag(1, 0.5, 0.25), tokens started near u_1 = e_1 and
i.i.d. rank-1 value adapters (19); Monte Carlo trials sit on the trials axis, so one
:func:`companion.models.layer_maps.adapter_chain` call runs them all. A sweep: one point per depth
(:func:`norm_point`), joined by :func:`norm_assemble`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import fits, ledger
from ...models.layer_maps import adapter_chain, near_u1
from ...registry import PaperScale, claims_for, experiment, sweep_point
from ...report import fmt
from ...style import COLORS, MIN_FONT
from ...theory import lora_depth as th
from ._shared import F64, LAMBDAS3, SLOPE_SE, SYNC_RATIO, TOL_SLOPE, _gen, _plot_ax, slope_tolerance

__all__ = ["NormTransitionConfig", "norm_transition", "norm_point", "norm_assemble", "norm_grid", "norm_transition_claims",
           "plot_norm_transition", "NORM_ALPHAS"]

# The adapter scalings eta_L = c L^alpha of the norm transition: two below, one at, one above sqrt(L).
NORM_ALPHAS = (0.0, 0.25, 0.5, 0.75)

# ---- thresholds of the claims
# A decaying deviation: a log-log slope below -0.3 is a clear decay over a 32x range of depths.
SUBCRITICAL_SLOPE = -0.3
# Supercritical: alpha = 3/4 grows (slope above 0.2) while alpha = 1/2 stays flat (|slope| below 0.15)
SUPER_SLOPE = 0.2
CRITICAL_FLAT = 0.15
# ... and the alpha = 3/4 level at the largest depth exceeds 5x the mean alpha = 1/2 level.
SUPER_LEVEL_RATIO = 5.0
# Sec. 4.1.1, eta_L >> sqrt(L): "a strongly random moving direction" means a mean displacement
# 1 - <m, u1>^2 above half its value 2/3 for a uniformly random direction on S^2.
DISP_STRONG = 1.0 / 3.0


def _by_alpha(table: Any, alpha: float) -> float:
    """``table[alpha]`` for a dict keyed by alpha (float keys; a stored result may give strings)."""
    for k, v in dict(table).items():
        if math.isclose(float(k), alpha):
            return float(v)
    raise ValueError(f"the result has no alpha = {alpha} (alphas: {list(dict(table))})")


@dataclasses.dataclass(frozen=True)
class NormTransitionConfig:
    """Norm transition (Thm 4.2): ``trials`` samples per (alpha, L) for each depth L of ``depths`` and
    each alpha of :data:`NORM_ALPHAS`, ``n`` tokens in d = 3 started at ``N(u1 + delta0 g)``, rank-1
    adapters with ``eta_L = c L^alpha`` and ``kappa = kappa0``, ``blocks`` blocks of L layers (the
    observable averaged over ``t >= blocks / 2``); the j-th depth is drawn with seed ``seed + j``.

    Examples
    --------
    >>> NormTransitionConfig().depths[-1], NormTransitionConfig().trials
    (512, 64)
    """

    depths: tuple[int, ...] = (16, 32, 64, 128, 256, 512)
    trials: int = 64
    n: int = 8
    c: float = 1.0
    kappa0: float = 0.05
    delta0: float = 1e-3
    blocks: int = 3
    seed: int = 0


def norm_grid(cfg: NormTransitionConfig) -> list[dict[str, Any]]:
    """The points :func:`norm_transition` computes: one per depth of ``cfg.depths``, seed ``cfg.seed + j``.

    Examples
    --------
    >>> norm_grid(NormTransitionConfig())[:2]
    [{'L': 16, 'seed': 0}, {'L': 32, 'seed': 1}]
    """
    return [{"L": int(L), "seed": cfg.seed + j} for j, L in enumerate(cfg.depths)]


def norm_assemble(points: list[dict[str, Any]], cfg: NormTransitionConfig | None = None) -> dict[str, Any]:
    """The norm transition from :func:`norm_point` results (any number of seeds per depth, one c and kappa0).

    Per (alpha, L) the per-sample time averages of every point are pooled into a mean and a standard
    error; then the weighted log-log slope per alpha and the kappa_eff prediction (see
    :func:`norm_transition`). The points carry their own parameters, so ``cfg`` is not needed.

    Examples
    --------
    >>> pts = [{"L": L, "c": 1.0, "kappa0": 0.05, "n": 8, "d": 3, "t_end": 3, "alphas": [0.0],
    ...         "per_trial": [[1.0 / L, 1.1 / L, 0.9 / L]]} for L in (16, 64)]
    >>> r = norm_assemble(pts)
    >>> r["depths"], round(r["slopes"][0.0], 12), r["per_alpha"]
    ([16, 64], -1.0, 3)
    """
    if not points:
        raise ValueError("norm_assemble needs at least one point")
    first = points[0]
    c, kappa0, n, d, t_end = float(first["c"]), float(first["kappa0"]), int(first["n"]), int(first["d"]), int(first["t_end"])
    alphas = [float(a) for a in first["alphas"]]
    for p in points:
        if (float(p["c"]), float(p["kappa0"]), [float(a) for a in p["alphas"]]) != (c, kappa0, alphas):
            raise ValueError("norm_assemble: every point must have the same c, kappa0 and alphas (sweep them separately)")
    depths = sorted({int(p["L"]) for p in points})
    mean = np.zeros((len(alphas), len(depths)))
    se = np.zeros_like(mean)
    pers = set()
    for j, L in enumerate(depths):
        per_trial = np.concatenate([np.asarray(p["per_trial"], dtype=np.float64) for p in points if int(p["L"]) == L], axis=1)
        pers.add(per_trial.shape[1])
        for a in range(len(alphas)):
            x = torch.from_numpy(per_trial[a])
            mean[a, j], se[a, j] = x.mean().item(), x.std().item() / math.sqrt(x.numel())
    nan = {"slope": math.nan, "slope_se": math.nan}
    lines = [fits.line_fit(depths, mean[a], se=se[a], loglog=True) if len(depths) > 1 else nan for a in range(len(alphas))]
    slopes = {alpha: lines[a]["slope"] for a, alpha in enumerate(alphas)}
    slope_se = {alpha: lines[a]["slope_se"] for a, alpha in enumerate(alphas)}
    # Sec. 4.1.1: mean spread and mean-direction displacement at the last layer of the largest depth
    last = [p for p in points if int(p["L"]) == depths[-1] and "spread_end" in p]
    sync = {k: (np.concatenate([np.asarray(p[k], dtype=np.float64) for p in last], axis=1).mean(1) if last
                else np.full(len(alphas), np.nan)) for k in ("spread_end", "disp_end")}
    # the small-noise stationary level with kappa_eff = c^2 kappa0 L^(2 alpha - 1)
    predicted = np.array([[th.stationary_deviation(LAMBDAS3, th.effective_kappa(kappa0, c, al, L), n) for L in depths]
                          for al in alphas])
    return {"depths": depths, "alphas": alphas, "mean": mean, "se": se, "slopes": slopes, "slope_se": slope_se,
            "predicted": predicted, "n": n, "d": d, "per_alpha": pers.pop() if len(pers) == 1 else sorted(pers),
            "kappa0": kappa0, "c": c, "t_end": t_end, "uniform_level": 2.0 * n,  # E|x - u1|^2 = 2 for x uniform
            "sync_spread": sync["spread_end"], "sync_disp": sync["disp_end"]}  # E|x - u1|^2 = 2 for x uniform on the sphere


def plot_norm_transition(result: dict, ax=None):
    """Stationary deviation against depth L, one curve per alpha (log-log), dashed: kappa_eff theory.

    Parameters
    ----------
    result : dict
        What :func:`norm_transition` returns.
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
    >>> ax = plot_norm_transition(norm_transition(depths=(16, 32), trials=2))
    >>> len(ax.get_lines()) >= 4
    True
    """
    ax = _plot_ax(ax)
    for a, alpha in enumerate(result["alphas"]):
        line = ax.errorbar(result["depths"], result["mean"][a], yerr=2 * result["se"][a], marker="o", ms=3, capsize=2,
                           label=rf"$\alpha = {float(alpha):g}$ (slope {_by_alpha(result['slopes'], alpha):.2f})")
        ax.plot(result["depths"], result["predicted"][a], "--", color=line[0].get_color(), lw=0.8)
    ax.axhline(result["uniform_level"], color=COLORS["reference"], lw=0.8, ls=":", label="uniformly spread tokens")
    ax.set(xscale="log", yscale="log")
    ax.set_xlabel(r"depth $L$ ($\eta_L = L^\alpha$)", fontsize=MIN_FONT + 1)
    ax.set_ylabel(r"$\mathbb{E}\sum_i |x_i - u_1|^2$", fontsize=MIN_FONT + 1)
    ax.set_title("Stationary deviation against depth, per adapter scaling", fontsize=MIN_FONT + 1)
    ax.set_xticks(result["depths"], [str(L) for L in result["depths"]])
    ax.xaxis.set_minor_formatter("")  # the log axis' minor labels overlap the depth labels
    ax.tick_params(labelsize=MIN_FONT)
    ax.legend(fontsize=MIN_FONT, ncol=1)
    return ax


@experiment("phase-norm-transition", chapter="phase_transitions", plot=plot_norm_transition,
            profiles={"fast": NormTransitionConfig(),
                      "full": NormTransitionConfig(depths=(16, 32, 64, 128, 256, 512, 1024, 2048, 4096), trials=1000)},
            paper=PaperScale(note="Theorem 4.2 comes with no numerical setting (App. E.2's is lost from the copy; Fig. 8 "
                                  "gives no sizes): d = 3, V = diag(1, 0.5, 0.25), n = 8, rank-1 adapters, kappa0 = 0.05, "
                                  "depths 16 to 4096, 1000 samples per point."),
            renamed={"per": "trials", "t_end": "blocks"})
def norm_transition(cfg: NormTransitionConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Theorem 4.2: stationary ``E sum_i |x_i - u1|^2`` against depth L for ``eta_L = c L^alpha``.

    Measured over macroscopic time ``[blocks / 2, blocks]`` after starting at ``N(u1 + delta0 g)``;
    the adapters have rank 1 and ``s = d sqrt(kappa0)`` (so ``kappa = kappa0``). Returns the means
    and standard errors per (alpha, L), the weighted log-log slopes with their standard errors, and the
    kappa_eff prediction of the level; the theorem says slope ``-1``, the effective-noise argument
    ``2 alpha - 1``. One :func:`norm_point` per depth (its own generator, seed ``cfg.seed + j`` for
    the j-th depth, so a point computes the same numbers alone; ``generator`` is not used), combined
    by :func:`norm_assemble`; ``python -m companion sweep phase-norm-transition`` computes them on Dask.
    Profiles: ``fast`` L = 16..512 and 64 samples, ``full`` L up to 4096 and 1000 samples.

    Examples
    --------
    >>> r = norm_transition(depths=(16, 32), trials=4)
    >>> r["mean"].shape, r["experiment"], r["profile"]
    ((4, 2), 'phase-norm-transition', 'custom')
    """
    return norm_assemble([norm_point(cfg, device, **p) for p in norm_grid(cfg)], cfg)


@sweep_point("phase-norm-transition", assemble=norm_assemble, grid=norm_grid)
def norm_point(cfg: NormTransitionConfig, device: str = "cpu", *, L: int, seed: int) -> dict[str, Any]:
    """One depth of the norm transition: ``cfg.trials`` samples for each alpha in :data:`NORM_ALPHAS`
    (one batched chain of ``cfg.blocks`` blocks of L layers, drawn with seed ``seed``), each sample's
    ``sum_i |x_i - u1|^2`` averaged over ``t >= blocks / 2``: ``per_trial`` of shape (alphas, trials).
    The point keeps its former keys ``per`` (the trials) and ``t_end`` (the blocks), so that stored
    points assemble with new ones.

    Examples
    --------
    >>> r = norm_point(NormTransitionConfig(trials=4), L=16, seed=0)
    >>> np.asarray(r["per_trial"]).shape, bool(np.all(np.asarray(r["per_trial"]) > 0))
    ((4, 4), True)
    """
    per = int(cfg.trials)
    if int(L) < 8 or int(L) % 8 or per < 2:
        raise ValueError(f"need a depth L >= 8 that is a multiple of 8 and trials >= 2, got L = {L}, trials = {per}")
    L = int(L)
    d, n, blocks = 3, cfg.n, cfg.blocks
    alphas = list(NORM_ALPHAS)
    V = torch.diag(torch.tensor(LAMBDAS3, dtype=F64, device=device))
    s = d * math.sqrt(cfg.kappa0)
    g = _gen(seed)
    x0 = near_u1(per * len(alphas), n, d, cfg.delta0, g, device)
    scale = torch.tensor([cfg.c * L**al * s for al in alphas], dtype=F64).repeat_interleave(per)  # all alphas at once
    out = adapter_chain(V, x0, L, blocks, 1, scale, g)
    keep = out["t"] >= blocks / 2
    per_trial = torch.stack([out["sq"][:, a * per:(a + 1) * per][keep].mean(0) for a in range(len(alphas))])
    # Sec. 4.1.1: spread of the tokens and displacement of their mean direction at the last layer
    spread_end, disp_end = (out[k][-1].reshape(len(alphas), per) for k in ("spread", "disp"))
    return {"L": L, "seed": seed, "per": per, "c": cfg.c, "kappa0": cfg.kappa0, "alphas": alphas, "n": n, "d": d,
            "t_end": blocks, "per_trial": per_trial.cpu().numpy(), "spread_end": spread_end.numpy(), "disp_end": disp_end.numpy()}


@claims_for("phase-norm-transition")
def norm_transition_claims(result: dict[str, Any], cfg: NormTransitionConfig) -> list[ledger.Claim]:
    """Theorem 4.2 (20) below the critical scaling (alpha = 0, 1/4), the derived L^(2 alpha - 1) law and
    the supercritical growth (alpha = 3/4 against alpha = 1/2).

    Examples
    --------
    >>> r = {"slopes": {0.0: -1.0, 0.25: -0.5, 0.5: 0.0, 0.75: 0.5}, "slope_se": {0.0: 0.05, 0.25: 0.03, 0.5: 0.05, 0.75: 0.05},
    ...      "mean": np.array([[0.01], [0.05], [0.6], [14.0]]), "depths": [512], "uniform_level": 16.0,
    ...      "sync_spread": np.array([1e-8, 1e-8, 4e-8, 7e-8]), "sync_disp": np.array([1e-3, 0.01, 0.09, 0.57])}
    >>> [c.status for c in norm_transition_claims(r, NormTransitionConfig())]
    ['reproduced', 'reproduced', 'not-reproduced', 'reproduced', 'reproduced', 'reproduced']
    """
    s0, s14, s12, s34 = (_by_alpha(result["slopes"], a) for a in NORM_ALPHAS)
    e0, e14 = _by_alpha(result["slope_se"], 0.0), _by_alpha(result["slope_se"], 0.25)
    tol0, tol14 = slope_tolerance(e0), slope_tolerance(e14)
    derived = max(abs(s0 + 1) / tol0, abs(s14 + 0.5) / tol14)  # the derived law, in units of each tolerance
    mean = np.asarray(result["mean"])
    level34, level12 = float(mean[3][-1]), float(mean[2].mean())
    super_ok = s34 > SUPER_SLOPE and abs(s12) < CRITICAL_FLAT and level34 > SUPER_LEVEL_RATIO * level12
    sp34, di34 = float(np.asarray(result["sync_spread"])[3]), float(np.asarray(result["sync_disp"])[3])
    sync = ledger.verdict(sp34 / di34, SYNC_RATIO) if di34 > DISP_STRONG else ledger.verdict(False)
    return [
        ledger.Claim(
            id="A-thm4.2-subcritical-vanishes", paper="A", where="Thm 4.2 (20)",
            statement=r"For $\eta_L \ll \sqrt L$ the deviation $\mathbb E\sum_i \|x_i^L - u_1\|^2$ vanishes as $L$ grows "
                      r"($\alpha = 0, 1/4$)",
            verdict=ledger.verdict(max(s0, s14), SUBCRITICAL_SLOPE, scale=abs(SUBCRITICAL_SLOPE)),
            measured=f"slopes {fmt(s0)}, {fmt(s14)}", expected="< 0", tolerance=f"slope < {SUBCRITICAL_SLOPE}",
            uncertainty=f"s.e. {fmt(e0, 1)}, {fmt(e14, 1)}"),
        ledger.Claim(
            id="A-thm4.2-rate-1/L-alpha0", paper="A", where="Thm 4.2 (20)",
            statement=r"For bounded $\eta_L$ ($\alpha = 0$) the deviation is $O(1/L)$: log-log slope $-1$ in $L$",
            verdict=ledger.verdict(abs(s0 + 1), tol0), measured=round(s0, 3), expected=-1.0,
            tolerance=f"max({TOL_SLOPE}, {SLOPE_SE:g} s.e.) = {fmt(tol0, 2)}", uncertainty=round(e0, 3)),
        ledger.Claim(
            id="A-thm4.2-rate-1/L-alpha1/4", paper="A", where="Thm 4.2 (20)",
            statement=r"Rate (20) as stated, for every $\eta_L \ll \sqrt L$: at $\eta_L = L^{1/4}$ the deviation is $O(1/L)$ "
                      r"(slope $-1$); the $\kappa_{\mathrm{eff}}$ derivation gives $L^{2\alpha - 1} = L^{-1/2}$ instead "
                      "(A-thm4.2-rate-derived)",
            verdict=ledger.verdict(abs(s14 + 1), tol14), measured=round(s14, 3), expected=-1.0,
            tolerance=f"max({TOL_SLOPE}, {SLOPE_SE:g} s.e.) = {fmt(tol14, 2)}",
            uncertainty=round(e14, 3)),
        ledger.Claim(
            id="A-thm4.2-rate-derived", paper="A", where="Thm 4.2 (20), derived kappa_eff law",
            statement=r"Below the critical scaling the deviation decays like $L^{2\alpha - 1}$ "
                      r"($\kappa_{\mathrm{eff}} = \kappa L^{2\alpha - 1}$): slopes $-1$ and $-1/2$ for $\alpha = 0, 1/4$",
            verdict=ledger.verdict(derived, 1.0), measured=f"slopes {fmt(s0, 2)} +- {fmt(e0, 1)}, {fmt(s14, 2)} +- {fmt(e14, 1)}",
            expected="-1, -0.5", tolerance=f"max({TOL_SLOPE}, {SLOPE_SE:g} s.e.)", uncertainty=[round(e0, 3), round(e14, 3)]),
        ledger.Claim(
            id="A-thm4.2-supercritical", paper="A", where="Thm 4.2 (discussion)",
            statement=r"For $\eta_L \gg \sqrt L$ ($\alpha = 3/4$) the tokens leave the neighbourhood of $u_1$ as $L$ "
                      r"grows, while $\alpha = 1/2$ stays at a finite level",
            verdict=ledger.verdict(bool(super_ok)),
            measured=f"slope {fmt(s34, 2)} (alpha=3/4), {fmt(s12, 2)} (alpha=1/2); level at L={result['depths'][-1]} "
                     f"{fmt(level34, 2)} (uniform {fmt(result['uniform_level'])})",
            expected=f"slope > {SUPER_SLOPE}; |slope(1/2)| < {CRITICAL_FLAT}", tolerance=f"level > {SUPER_LEVEL_RATIO:g}x critical"),
        ledger.Claim(
            id="A-sec4.1.1-supercritical-sync", paper="A", where="Sec. 4.1.1 (discussion of Thm 4.2)",
            statement=r"For $\eta_L \gg \sqrt L$ ($\alpha = 3/4$) the tokens synchronise around a strongly random moving "
                      "direction",
            verdict=sync, measured=f"spread/displacement {fmt(sp34 / di34, 2)}, displacement {fmt(di34, 2)} at L={result['depths'][-1]}",
            expected=f"spread/displacement < {SYNC_RATIO:g}", tolerance=f"displacement > {fmt(DISP_STRONG)} (uniform: 2/3)"),
    ]
