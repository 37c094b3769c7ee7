"""metastable-ln-n: the end of the linear phase against ln N (USA), a sweep of one point per N.

Each N is one point (:func:`ln_n_point`, its own generator seeded from the point), pooled by
:func:`ln_n_assemble`; ``python -m companion sweep metastable-ln-n`` computes the points on Dask.
The experiment was called ``metastable-lnN``: results stored under that name load as its own
(``formerly``; :func:`companion.store.load_from`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import fits, inference, ledger
from ...circle import Circle, circle_moments
from ...init import uniform_angles
from ...integrate import simulate
from ...perf import threads
from ...registry import PaperScale, claims_for, experiment, summary_for, sweep_point
from ...theory.metastable import gamma_k, k_max, linear_time

__all__ = ["LnNConfig", "ln_n", "ln_n_point", "ln_n_assemble", "ln_n_grid", "joint_fit", "plot_ln_n", "ln_n_claims", "ln_n_summary"]


@dataclasses.dataclass(frozen=True)
class LnNConfig:
    """The end of the linear phase against ln N (USA).

    For each N of ``ns`` (the i-th with ``trials[i]`` trials, seed ``seed + 100 i``), the first time
    |m_kmax| >= ``level`` at inverse temperature ``beta``: RK4 with step ``dt``, the moment saved
    every ``save_every`` time units, at most up to ``t1``; ``threads``: torch threads (None: leave).

    Examples
    --------
    >>> LnNConfig().ns, LnNConfig().trials
    ((1000, 3000, 10000, 30000, 100000), (24, 12, 6, 3, 2))
    """

    ns: tuple[int, ...] = (1_000, 3_000, 10_000, 30_000, 100_000)
    trials: tuple[int, ...] = (24, 12, 6, 3, 2)
    beta: float = 5.0
    level: float = 0.1
    dt: float = 4e-3
    save_every: float = 0.01
    t1: float = 1.5
    threads: int | None = 1
    seed: int = 1


def _end_of_linear_phase(n: int, trials: int, beta: float, generator: torch.Generator, level: float, dt: float, seg: float,
                         t1: float, device: Any = "cpu"):
    """First time |m_kmax| >= level per trial (interpolated in log |m| between segment ends)."""
    k = k_max(beta)
    X = uniform_angles(trials, n, generator=generator, device=device)
    model = Circle(beta, "usa")
    amp0 = circle_moments(X, k)[:, k].abs().cpu().numpy()
    ts, log_amp = [0.0], [np.log(amp0)]
    while ts[-1] < t1 and not (np.max(log_amp, axis=0) >= math.log(level)).all():
        X = simulate(model, X, ts[-1] + seg, t0=ts[-1], method="rk4", dt=dt).final
        ts.append(ts[-1] + seg)
        log_amp.append(np.log(circle_moments(X, k)[:, k].abs().cpu().numpy()))
    log_amp = np.stack(log_amp)  # (segments + 1, trials)
    cross = np.array([fits.first_crossing(ts, log_amp[:, j], math.log(level)) for j in range(trials)])
    return cross, amp0


def ln_n_grid(cfg: LnNConfig) -> list[dict[str, Any]]:
    """The points :func:`ln_n` computes: one per N of ``cfg.ns``, seed ``cfg.seed + 100 i``.

    Examples
    --------
    >>> ln_n_grid(LnNConfig(ns=(1000, 1000000), trials=(64, 4)))[-1]
    {'n': 1000000, 'trials': 4, 'seed': 101}
    """
    if len(cfg.ns) != len(cfg.trials):
        raise ValueError(f"ns and trials must have the same length, got {len(cfg.ns)} and {len(cfg.trials)}")
    return [{"n": n, "trials": tr, "seed": cfg.seed + 100 * i} for i, (n, tr) in enumerate(zip(cfg.ns, cfg.trials))]


def joint_fit(tt: np.ndarray, nn: np.ndarray, aa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Least squares fit of the end of the linear phase over the trials,

    .. math::

        t = a + b \ln N + c\,\big(-\ln |\sqrt N\, m_k(0)|\big)

    (theory: :math:`b = 1/(2\gamma_k)`, :math:`c = 1/\gamma_k`), with the ordinary least-squares
    standard errors of the coefficients.

    Parameters
    ----------
    tt : (T,) times, one per trial; nn : (T,) the trial's N; aa : (T,) its initial ``|m_k(0)|``.

    Returns
    -------
    (coefficients (a, b, c), their standard errors), two (3,) arrays; the errors are nan with fewer
    than 4 trials.

    Examples
    --------
    >>> nn = np.array([1e3, 1e3, 1e4, 1e4, 1e5])
    >>> aa = np.array([0.5, 2.0, 1.0, 0.7, 1.3]) / np.sqrt(nn)
    >>> coef, se = joint_fit(0.2 + 0.03 * np.log(nn) - 0.05 * np.log(np.sqrt(nn) * aa), nn, aa)
    >>> coef.round(6).tolist(), bool(np.all(se < 1e-9))
    ([0.2, 0.03, 0.05], True)
    """
    Xd = np.stack([np.ones(tt.size), np.log(nn), -np.log(np.sqrt(nn) * aa)], axis=1)
    coef, *_ = np.linalg.lstsq(Xd, tt, rcond=None)
    dof = tt.size - 3
    if dof <= 0:
        return coef, np.full(3, np.nan)
    s2 = float(np.sum((tt - Xd @ coef) ** 2)) / dof
    return coef, np.sqrt(np.maximum(np.diag(s2 * np.linalg.pinv(Xd.T @ Xd)), 0.0))


def ln_n_assemble(points: list[dict[str, Any]], cfg: LnNConfig) -> dict[str, Any]:
    """The ln N law from :func:`ln_n_point` results (any number of seeds per N, all at ``cfg.beta`` and
    ``cfg.level``).

    Per N, the trials of every point are pooled: mean end of the linear phase and its standard
    error; then the fitted slope against ln N, the per-trial slope against -ln |m_k(0)|, and the joint
    fit t = a + b ln N + c (-ln |sqrt(N) m_k(0)|) (theory: b = 1/(2 gamma), c = 1/gamma), with the
    standard error of b.

    Examples
    --------
    >>> pts = [{"n": n, "beta": 5.0, "level": 0.1, "t_end": np.array([0.1 * math.log(n)] * 2),
    ...         "amp0": np.array([n ** -0.5] * 2)} for n in (100, 1000, 10000)]
    >>> r = ln_n_assemble(pts, LnNConfig())
    >>> round(r["slope"], 12), r["ns"].tolist(), r["trials"].tolist()
    (0.1, [100, 1000, 10000], [2, 2, 2])
    """
    if not points:
        raise ValueError("ln_n_assemble needs at least one point")
    beta, level = float(cfg.beta), float(cfg.level)
    if any(float(p["beta"]) != beta or float(p["level"]) != level for p in points):
        raise ValueError(f"ln_n_assemble: every point must have beta = {beta:g} and level = {level:g} (sweep others separately)")
    ns = sorted({int(p["n"]) for p in points})
    by_n = {n: [p for p in points if int(p["n"]) == n] for n in ns}
    k = k_max(beta)
    gam = float(gamma_k(k, beta, "usa"))
    t_end, t_sd, all_t, all_a, trials = [], [], [], [], []
    for n in ns:
        cross = np.concatenate([np.atleast_1d(np.asarray(p["t_end"], dtype=np.float64)) for p in by_n[n]])
        amp0 = np.concatenate([np.atleast_1d(np.asarray(p["amp0"], dtype=np.float64)) for p in by_n[n]])
        tr = cross.size
        t_end.append(float(np.nanmean(cross)))
        t_sd.append(float(np.nanstd(cross) / math.sqrt(tr)))
        all_t.append(cross)
        all_a.append(amp0)
        trials.append(tr)
    log_n = np.log(np.array(ns, dtype=np.float64))
    line = fits.line_fit(log_n, t_end) if len(ns) > 1 else {"slope": math.nan, "intercept": math.nan}
    slope, icpt = line["slope"], line["intercept"]
    # per trial, t_end = (ln level - ln |m_k(0)|) / gamma + c: the slope against -ln |m_k(0)| is 1/gamma
    tt, aa = np.concatenate(all_t), np.concatenate(all_a)
    nn = np.concatenate([np.full(tr, n, dtype=np.float64) for n, tr in zip(ns, trials)])
    ok = np.isfinite(tt)
    slope_amp = fits.line_fit(-np.log(aa[ok]), tt[ok])["slope"]
    # joint fit: b is the ln N law with the trial-to-trial spread of the initial amplitude (a Rayleigh
    # variable) taken out
    coef, se = joint_fit(tt[ok], nn[ok], aa[ok])
    return {"beta": beta, "k": k, "gamma": gam, "level": level, "ns": np.array(ns), "trials": np.array(trials),
            "t_end": np.array(t_end), "t_sem": np.array(t_sd), "slope": float(slope), "intercept": float(icpt),
            "slope_theory": 1 / (2 * gam), "t_star": linear_time(np.array(ns), beta, "usa"),
            "slope_amp": slope_amp, "slope_amp_theory": 1 / gam, "unfinished": int((~ok).sum()),
            "joint_lnN": float(coef[1]), "joint_amp": float(coef[2]), "joint_lnN_se": float(se[1]),
            "t_trials": tt, "n_trials": nn, "amp0_trials": aa}


def ln_n_point(cfg: LnNConfig, device: str = "cpu", *, n: int, seed: int, trials: int = 1) -> dict[str, Any]:
    """One point of the ln N law: ``trials`` USA runs of ``n`` tokens drawn with seed ``seed``, each run
    to the first time ``|m_kmax| >= cfg.level`` (RK4 at ``cfg.dt``, saved every ``cfg.save_every``, at
    most to ``cfg.t1``).

    Returns ``t_end`` (per trial; nan if not reached) and ``amp0`` (initial ``|m_kmax|``) with the
    point's parameters.

    Examples
    --------
    >>> r = ln_n_point(LnNConfig(), n=200, seed=0, trials=2)
    >>> r["t_end"].shape, bool(np.all((r["t_end"] > 0) & (r["t_end"] < 1.5)))
    ((2,), True)
    """
    if int(n) < 2 or int(trials) < 1:
        raise ValueError(f"need n >= 2 tokens and trials >= 1, got n = {n}, trials = {trials}")
    with threads(cfg.threads):
        cross, amp0 = _end_of_linear_phase(int(n), int(trials), cfg.beta, torch.Generator().manual_seed(int(seed)), cfg.level,
                                           dt=cfg.dt, seg=cfg.save_every, t1=cfg.t1, device=device)
    return {"n": int(n), "trials": int(trials), "seed": int(seed), "beta": cfg.beta, "level": cfg.level, "t_end": cross, "amp0": amp0}


def plot_ln_n(result: dict[str, Any], ax=None):
    """Mean end of the linear phase against ln N with the fitted and the predicted slope.

    Parameters
    ----------
    result : dict
        What :func:`ln_n` returns.
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
    >>> plot_ln_n(ln_n(ns=(200, 400), trials=(2, 2))).get_xlabel()
    '$\\\\ln N$'
    """
    import matplotlib.pyplot as plt

    from ...style import COLORS, MIN_FONT

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.8), layout="constrained")
    x = np.log(result["ns"])
    ax.errorbar(x, result["t_end"], yerr=result["t_sem"], fmt="o", color=COLORS["measured"],
                label=r"measured (mean $\pm$ s.e.)")
    ax.plot(x, result["intercept"] + result["slope"] * x, "-", color=COLORS["measured"], lw=1,
            label=f"fit, slope {result['slope']:.4f}")
    ax.plot(x, result["t_end"].mean() + result["slope_theory"] * (x - x.mean()), "--", color=COLORS["theory"],
            label=f"slope $1/(2\\gamma_k) = {result['slope_theory']:.4f}$")
    ax.set_xlabel(r"$\ln N$", fontsize=MIN_FONT)
    ax.set_ylabel(f"first time $|m_k| \\geq {result['level']}$", fontsize=MIN_FONT)
    ax.set_title(f"End of the linear phase, $\\beta = {result['beta']:g}$, $k = {result['k']}$", fontsize=MIN_FONT + 1)
    ax.legend(fontsize=MIN_FONT)
    ax.tick_params(labelsize=MIN_FONT)
    return ax


@experiment("metastable-ln-n", chapter="metastable", plot=plot_ln_n, formerly=("metastable-lnN",),
            renamed={"every": "save_every", "t_max": "t1"},
            profiles={"fast": LnNConfig(), "full": LnNConfig(ns=(1_000, 10_000, 100_000, 1_000_000), trials=(64, 16, 8, 4))},
            paper=PaperScale(note="The ln N law comes with no sizes (paper, reviews): N from 1e3 to 1e6 around the "
                                  "official N = 2e4, beta = 5 as the official run, 64 to 4 ensembles."))
def ln_n(cfg: LnNConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Time at which the k_max mode reaches ``cfg.level`` against ln N (USA): slope vs 1/(2 gamma_kmax).

    One :func:`ln_n_point` per point of :func:`ln_n_grid` (each seeds its own generator from its point,
    so that a point computes the same numbers wherever it runs), combined by :func:`ln_n_assemble`;
    ``python -m companion sweep metastable-ln-n`` computes the points on Dask instead.

    Returns
    -------
    dict with ``ns`` (K,), ``trials`` (K,) (pooled per N), ``t_end`` and ``t_sem`` (K,) (mean first time
    and its standard error), ``slope`` against ln N and ``slope_theory`` (1/(2 gamma_kmax)), the joint fit's
    ``joint_lnN`` (b), ``joint_lnN_se`` and ``joint_amp`` (c), and the per-trial ``t_trials``,
    ``n_trials``, ``amp0_trials``.

    Examples
    --------
    >>> r = ln_n(ns=(200, 400), trials=(2, 2))
    >>> r["k"], r["trials"].tolist(), r["t_trials"].shape
    (3, [2, 2], (4,))
    """
    return ln_n_assemble([ln_n_point(cfg, device, **p) for p in ln_n_grid(cfg)], cfg)


sweep_point("metastable-ln-n", assemble=ln_n_assemble, grid=ln_n_grid)(ln_n_point)  # registered once the experiment is


@summary_for("metastable-ln-n")
def ln_n_summary(result: dict[str, Any]) -> dict[str, Any]:
    """Every number the chapter and the row read: the slope of the mean end time against ln N, the
    joint-fit coefficient b of ln N with its standard error, and the two-sided z test of b against
    1/(2 gamma_kmax).

    Examples
    --------
    >>> s = ln_n_summary({"joint_lnN": 0.0270, "joint_lnN_se": 0.0004, "slope": 0.028, "slope_theory": 0.0269,
    ...                   "joint_amp": 0.054, "slope_amp_theory": 0.0538, "trials": [8, 8]})
    >>> s["p"] > 0.05, round(s["rel_error"], 4)
    (True, 0.0037)
    """
    theory = float(result["slope_theory"])
    se = result.get("joint_lnN_se")
    if se is None and "t_trials" in result:  # a result stored before the standard error was: from its trials
        tt, nn, aa = (np.asarray(result[k], dtype=np.float64) for k in ("t_trials", "n_trials", "amp0_trials"))
        ok = np.isfinite(tt)
        se = float(joint_fit(tt[ok], nn[ok], aa[ok])[1][1])
    b = float(result["joint_lnN"])
    n = int(np.sum(result.get("trials", [1])))
    test = inference.estimate(b, float(se), theory, n=n) if se is not None and np.isfinite(se) and se > 0 else None
    return {"joint_lnN": b, "joint_lnN_se": None if se is None else float(se), "slope": float(result["slope"]),
            "slope_theory": theory, "rel_error": abs(b / theory - 1), "slope_rel_error": abs(float(result["slope"]) / theory - 1),
            "joint_amp": float(result.get("joint_amp", math.nan)), "slope_amp_theory": float(result.get("slope_amp_theory", math.nan)),
            "p": math.nan if test is None else test.p, "z": math.nan if test is None else (b - theory) / float(se),
            "trials": [int(t) for t in np.atleast_1d(result.get("trials", []))],
            "trials_text": [str(int(t)) for t in np.atleast_1d(result.get("trials", []))]}


QUOTE = "the linear phase ends near t* = ln N / (2 gamma_kmax), so the metastable phase scales with ln N"


@claims_for("metastable-ln-n")
def ln_n_claims(result: dict[str, Any], cfg: LnNConfig) -> list[ledger.Claim]:
    """The ln N law (NOTES D, [paper, reviews]): the joint-fit coefficient b of ln N equals
    1/(2 gamma_kmax), a null judged by a two-sided z test with b's standard error
    (:func:`companion.ledger.consistent`); the relative error is printed.

    Examples
    --------
    >>> r = {"joint_lnN": 0.0272, "slope": 0.02, "slope_theory": 0.0269, "joint_lnN_se": 0.001}
    >>> [(c.status, c.uncertainty) for c in ln_n_claims(r, LnNConfig())]
    [('reproduced', 0.001)]
    >>> [c.status for c in ln_n_claims(dict(r, joint_lnN=0.04), LnNConfig())]   # 13 standard errors off
    ['not-reproduced']
    """
    s = ln_n_summary(result)
    return [ledger.Claim(
        id="D-lnN", paper="D", where="reviews; Thm on the linear phase (NOTES D)",
        statement=r"The linear phase ends at $t^* \approx \ln N / (2\gamma_{k_{\max}})$: slope "
                  r"$1/(2\gamma_{k_{\max}})$ in $\ln N$",
        quote=QUOTE, source=ledger.NOTES, basis="paper",
        test="two-sided z test that the joint-fit coefficient of ln N (with the initial amplitude as a second "
             "regressor) equals 1/(2 gamma_kmax): consistent unless p < ALPHA; the relative error is printed",
        verdict=ledger.consistent(s["p"]) if math.isfinite(s["p"]) else ledger.NOT_CHECKABLE,
        measured=[s["joint_lnN"], s["slope"], "relative error of b", s["rel_error"]], expected=s["slope_theory"],
        tolerance=f"level {ledger.ALPHA:g} (p = {s['p']:.2g})",
        uncertainty=None if s["joint_lnN_se"] is None or not np.isfinite(s["joint_lnN_se"]) else s["joint_lnN_se"])]
