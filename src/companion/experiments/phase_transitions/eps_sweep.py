"""``phase-eps-sweep``: the time to bifurcation and the time to cluster against eps for
``V~ = diag(1, 1 - eps)`` (paper A, Theorem 4.6; the plot of arXiv 2402.15415).
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import numpy as np
import torch

from ... import fits, init, ledger
from ...registry import PaperScale, claims_for, experiment
from ...report import fmt
from ...style import COLORS, MIN_FONT
from ...theory import lora_depth as th
from ._shared import BOUND_RATIO, F64, SLOPE_SE, TOL_SLOPE, _plot_ax, base_run, perturbed_times, slope_tolerance

__all__ = ["EpsSweepConfig", "eps_sweep", "eps_sweep_claims", "plot_eps_sweep"]

# The eps law: exponent -1 within TOL_SLOPE or SLOPE_SE standard errors (as the norm slopes).
EPS_EXPONENT = -1.0


def _bound(C: np.ndarray, eps: float, n: int, delta: float):
    """Theorem 4.6's constants for ``V~ = diag(1, 1 - eps)``, Q = K = I (None: Assumption 4.5 fails)."""
    return th.tube_bound(C, torch.eye(2), torch.eye(2), torch.diag(torch.tensor([1.0, 1.0 - eps], dtype=F64)), n=n, delta=delta)


@dataclasses.dataclass(frozen=True)
class EpsSweepConfig:
    """The eps sweep (arXiv 2402.15415 plot, Thm 4.6): ``trials`` initial conditions of ``n`` tokens
    uniform in ``[-half_width, half_width]^2``, ``eps_count`` values of eps on a log grid from
    ``eps_min`` to ``eps_max``, RK4 at step ``dt`` to ``t1`` (base clusters read at ``t_base``,
    radius ``delta``); ``boot`` bootstrap resamples (numpy generator seeded with ``seed``) for the
    exponents' standard errors.

    Examples
    --------
    >>> EpsSweepConfig().eps_count, EpsSweepConfig().trials
    (9, 6)
    """

    trials: int = 6
    n: int = 20
    half_width: float = 5.0
    dt: float = 0.1
    t_base: float = 30.0
    t1: float = 600.0
    eps_min: float = 3e-3
    eps_max: float = 0.3
    eps_count: int = 9
    delta: float = 0.1
    boot: int = 200
    seed: int = 4


def plot_eps_sweep(result: dict, ax=None):
    """Median time to bifurcation T*, time to cluster and the Theorem 4.6 bound against eps (log-log).

    Parameters
    ----------
    result : dict
        What :func:`eps_sweep` returns.
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
    >>> ax = plot_eps_sweep(eps_sweep(trials=2, n=6, eps_count=3, eps_min=0.05, t1=40.0, t_base=10.0, boot=5))
    >>> len(ax.get_lines())
    4
    """
    ax = _plot_ax(ax)
    e = result["epss"]
    ax.plot(e, result["median_exit"], "o-", color=COLORS["measured"],
            label=rf"time to bifurcation $T^*$ (exponent {result['exponent_exit']:.2f})")
    ax.plot(e, result["median_settle"], "s-", color=COLORS["accent"],
            label=f"time to cluster (exponent {result['exponent_settle']:.2f})")
    ax.plot(e, result["median_bound"], "--", color=COLORS["bound"],
            label=f"Theorem 4.6 bound (exponent {result['exponent_bound']:.2f})")
    ax.plot(e, np.median(result["switch"], axis=1), ":", color=COLORS["theory"], label="argmax switch time (derived)")
    ax.set(xscale="log", yscale="log")
    ax.set_xlabel(r"perturbation $\varepsilon$ ($\widetilde V = \mathrm{diag}(1, 1 - \varepsilon)$)", fontsize=MIN_FONT + 1)
    ax.set_ylabel("time (median over initial conditions)", fontsize=MIN_FONT + 1)
    ax.set_title(r"Time to bifurcation against $\varepsilon$", fontsize=MIN_FONT + 1)
    ax.tick_params(labelsize=MIN_FONT)
    ax.legend(fontsize=MIN_FONT)
    return ax


@experiment("phase-eps-sweep", chapter="phase_transitions", plot=plot_eps_sweep,
            profiles={"fast": EpsSweepConfig(),
                      "full": EpsSweepConfig(trials=32, t1=3000.0, eps_min=1e-3, eps_count=15)},
            paper=PaperScale({"n": 20, "half_width": 5.0, "dt": 0.1, "eps_min": 1e-3, "eps_max": 0.3, "delta": 0.1},
                             note="The plot of the authors' earlier paper (arXiv 2402.15415, as NOTES A restates it: "
                                  "n = 50 or 20, d = 2, RK4 at 0.1, eps from 0.001 to 0.3, delta = 0.1; the box "
                                  "[-5, 5]^2 of paper A, App. E.3.1). Its eps count, initial conditions and horizon are "
                                  "not given: 15 eps, 32 initial conditions, T = 3000."),
            renamed={"inits": "trials", "t_end": "t1"})
def eps_sweep(cfg: EpsSweepConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Time to bifurcation T*(delta) and time to cluster (settle time of the perturbed dynamics)
    against eps for ``V~ = diag(1, 1 - eps)``, with fitted log-log exponents of the medians over the
    initial conditions (fitted where median T* >= 3 max T_delta; bootstrap standard errors over the
    initial conditions), the Theorem 4.6 bound,
    and the largest eps for which every token stays within 2 delta on [T_delta, 10 T_delta] (part 1).
    All eps values and initial conditions run in one batched simulate call. Profiles: ``fast`` 6
    initial conditions, 9 eps in [3e-3, 0.3], t = 600; ``full`` 32, 15 eps in [1e-3, 0.3], t = 3000.

    Examples
    --------
    >>> r = eps_sweep(trials=2, n=6, eps_count=3, eps_min=0.05, t1=40.0, t_base=10.0, boot=5)
    >>> r["exits"].shape, r["eps_star"].shape
    ((3, 2), (2,))
    """
    n, inits, dt, delta, seed = cfg.n, cfg.trials, cfg.dt, cfg.delta, cfg.seed
    epss = np.geomspace(cfg.eps_min, cfg.eps_max, cfg.eps_count)
    t1 = cfg.t1
    Z0 = init.cube(inits, n, 2, cfg.half_width, generator=generator).to(device)
    base, C, T_delta = base_run(Z0, cfg.t_base, dt, delta)
    E = len(epss)
    Zb = Z0.repeat(E, 1, 1)  # trial index = e * inits + i
    Vt = torch.stack([torch.diag(torch.tensor([1.0, 1.0 - e], dtype=F64)) for e in epss]).repeat_interleave(inits, 0)
    Cb, Tb = [C[i] for _ in epss for i in range(inits)], np.tile(T_delta, E)
    _, exits, settle = perturbed_times(Zb, Vt, torch.eye(2, dtype=F64), Cb, Tb, t1, dt, delta)
    exits, settle = exits.reshape(E, inits), settle.reshape(E, inits)
    bound = np.array([[th.exit_time_bound(T_delta[i], b) if (b := _bound(C[i], e, n, delta)) is not None else np.nan
                       for i in range(inits)] for e in epss])
    switch = np.array([[th.switch_time(C[i], e) for i in range(inits)] for e in epss])
    # a run that has not bifurcated within the horizon has not reached its own limit: no time to cluster
    settle = np.where(np.isfinite(exits), settle, np.nan)
    stays = exits > 10 * T_delta[None, :]  # part 1 holds for this (eps, init)
    eps_star = []
    for i in range(inits):
        ok = np.cumprod(stays[:, i]).astype(bool)  # holds for every eps up to this one
        eps_star.append(float(epss[ok][-1]) if ok.any() else math.nan)
    med_exit = np.median(exits, axis=1)
    with warnings.catch_warnings():  # an eps with no finite value gives nan, which the fit masks out
        warnings.simplefilter("ignore", RuntimeWarning)
        med_settle = np.nanmedian(settle, axis=1)
        med_bound = np.nanmedian(bound, axis=1)
    # Fit where the bifurcation is separated from the clustering of the base (median T* >= 3 max T_delta):
    # for larger eps the exit is floored at T_delta and says nothing about the eps law.
    fit = np.isfinite(med_exit) & (med_exit >= 3 * T_delta.max())
    fit_c = fit & np.isfinite(med_settle)

    def exponents(ex, se_, bd):
        me, ms, mb = np.median(ex, axis=1), np.nanmedian(se_, axis=1), np.nanmedian(bd, axis=1)
        ok = fit & np.isfinite(me)
        okc = fit_c & np.isfinite(ms)

        def slope(x, y):
            return fits.line_fit(x, y, loglog=True)["slope"] if len(x) >= 2 else math.nan

        return slope(epss[ok], me[ok]), slope(epss[okc], ms[okc]), slope(epss[ok], mb[ok])

    est = exponents(exits, settle, bound)
    # error bars: bootstrap over the initial conditions (same resample for every eps)
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(cfg.boot):
        idx = rng.integers(0, inits, inits)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            boot.append(exponents(exits[:, idx], settle[:, idx], bound[:, idx]))
    with warnings.catch_warnings():  # too few resamples with a finite exponent give nan
        warnings.simplefilter("ignore", RuntimeWarning)
        boot_se = np.nanstd(np.array(boot), axis=0, ddof=1)
    return {"epss": epss, "T_delta": T_delta, "exits": exits, "settle": settle, "bound": bound, "switch": switch,
            "eps_star": np.array(eps_star), "median_exit": med_exit, "median_settle": med_settle, "median_bound": med_bound,
            "fit_eps": epss[fit], "exponent_exit": est[0], "exponent_settle": est[1], "exponent_bound": est[2],
            "exponent_exit_se": float(boot_se[0]), "exponent_settle_se": float(boot_se[1]),
            "exponent_bound_se": float(boot_se[2]), "n": n, "inits": inits, "delta": delta, "t_end": t1}


@claims_for("phase-eps-sweep")
def eps_sweep_claims(result: dict[str, Any], cfg: EpsSweepConfig) -> list[ledger.Claim]:
    """Thm 4.6 (1) (an eps* for every initial condition), the 1/eps law of the time to bifurcation and
    Thm 4.6 (2) across the sweep.

    Examples
    --------
    >>> r = {"eps_star": np.array([0.01, 0.03]), "exponent_exit": -0.99, "exponent_exit_se": 0.003,
    ...      "exponent_bound": -1.0, "exponent_settle": -0.93, "exponent_settle_se": 0.02,
    ...      "exits": np.array([[100.0, 90.0]]), "bound": np.array([[400.0, 300.0]])}
    >>> [c.status for c in eps_sweep_claims(r, EpsSweepConfig())]
    ['reproduced', 'reproduced', 'reproduced']
    """
    es = np.asarray(result["eps_star"], dtype=float)
    ex, ex_se = float(result["exponent_exit"]), float(result["exponent_exit_se"])
    exits, bound = np.asarray(result["exits"], dtype=float), np.asarray(result["bound"], dtype=float)
    okb = np.isfinite(bound) & np.isfinite(exits)
    worst = float(np.max(exits[okb] / bound[okb])) if okb.any() else math.nan
    with warnings.catch_warnings():  # every eps* nan: the medians are nan too, and the verdict says so
        warnings.simplefilter("ignore", RuntimeWarning)
        es_txt = f"eps* median {fmt(np.nanmedian(es))}, range [{fmt(np.nanmin(es))}, {fmt(np.nanmax(es))}]"
    return [
        ledger.Claim(
            id="A-thm4.6-part1", paper="A", where="Thm 4.6 (1)",
            statement=r"For $\varepsilon$ small enough the perturbed tokens stay within $2\delta$ of $\mathcal C$ on "
                      r"$[T_\delta, 10T_\delta]$",
            verdict=ledger.verdict(bool(np.all(np.isfinite(es)))), measured=es_txt, expected="exists (> 0)", tolerance="grid of eps"),
        ledger.Claim(
            id="A-eps-scaling", paper="A", where="Thm 4.6 / arXiv 2402.15415 plot",
            statement=r"Time to bifurcation scales like $1/\varepsilon$ (log-log exponent $-1$, as the argmax switch time "
                      r"and the $1/\mathrm{gap}$ term of $T_{\mathrm{dom}}$)",
            verdict=ledger.verdict(abs(ex - EPS_EXPONENT), slope_tolerance(ex_se)),
            measured=f"exponent {fmt(ex)} +- {fmt(ex_se, 1)} (bound {fmt(result['exponent_bound'])}, "
                     f"time to cluster {fmt(result['exponent_settle'])} +- {fmt(result['exponent_settle_se'], 1)})",
            expected=EPS_EXPONENT, tolerance=f"max({TOL_SLOPE}, {SLOPE_SE:g} s.e.)", uncertainty=round(ex_se, 4)),
        ledger.Claim(
            id="A-thm4.6-bound-sweep", paper="A", where="Thm 4.6 (2)",
            statement=r"The exit-time bound holds across the $\varepsilon$ sweep",
            verdict=ledger.verdict(worst, BOUND_RATIO),
            measured=f"max T*/bound {fmt(worst)} over {int(okb.sum())} (eps, init) pairs", expected="<= 1", tolerance=0),
    ]
