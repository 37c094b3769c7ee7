"""Paper D (metastable clustering): the computations behind ``book/chapters/metastable.md``.

Every function takes ``profile`` ("fast": a few minutes on 2 CPU cores for the whole chapter;
"full": paper scale, N up to 1e6) and ``device`` and returns a dict of numbers and arrays.
Particle runs on the circle use :class:`companion.circle.Circle` (Fourier/Bessel field, float64)
through :func:`companion.integrate.simulate`; the sphere runs use
:func:`companion.models.metastable` (A = V = I).
"""
from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
import torch

from .. import fits
from ..circle import Circle, circle_moments, circular_distance, wrap
from ..init import uniform_angles, uniform_sphere
from ..metrics import cluster_centres, cluster_count
from ..integrate import simulate
from ..models import metastable as sphere_model
from ..pde import circle_w1, density_moments, noisy_uniform, quantile_tokens, solve_mean_field
from ..theory.metastable import gamma_k, growth_rate, k_max, linear_time, predicted_centres
from . import experiment, plots, sweep_point

__all__ = [
    "linear_rates",
    "lnN_law",
    "lnN_point",
    "lnN_assemble",
    "lnN_grid",
    "official_runs",
    "long_run",
    "mean_field_pde",
    "sphere_rates",
    "harmonic_energy",
    "plot_linear_rates",
    "plot_lnN_law",
    "plot_official_run",
    "plot_long_run",
    "plot_pde",
    "plot_sphere_rates",
]

BETAS = (1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 20.0, 50.0, 100.0)


def _check_profile(profile: str) -> str:
    if profile not in ("fast", "full"):
        raise ValueError(f"profile must be 'fast' or 'full', got {profile!r}")
    return profile


@contextlib.contextmanager
def _threads(n: int | None):
    """Temporarily set torch's thread count (None: leave it)."""
    old = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _angles(trials: int, n: int, seed: int, device: Any) -> torch.Tensor:
    """I.i.d. uniform angles (trials, n, 1) drawn from a CPU generator seeded ``seed``: a seed gives the
    same angles on every device."""
    return uniform_angles(trials, n, generator=torch.Generator().manual_seed(seed), device=device)


def harmonic_energy(X: torch.Tensor, lmax: int) -> torch.Tensor:
    """Energy of the empirical measure in each degree l <= lmax on S^2: (1/n^2) sum_ij P_l(<x_i, x_j>).

    Proportional to sum_m |c_lm|^2 with c_lm = (1/n) sum_i Y_lm(x_i) (addition theorem), so in the
    linear phase it grows like e^{2 gamma_l t}.

    Parameters
    ----------
    X : (trials, n, 3) tokens on S^2
    lmax : int >= 1

    Returns
    -------
    (trials, lmax + 1) tensor

    Examples
    --------
    >>> X = torch.tensor([[[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]]], dtype=torch.float64)
    >>> harmonic_energy(X, 2)[0].tolist()  # antipodal pair: odd degrees cancel
    [1.0, 0.0, 1.0]
    """
    if X.ndim != 3 or X.shape[-1] != 3:
        raise ValueError(f"X must be (trials, n, 3) tokens on S^2, got {tuple(X.shape)}")
    G = (X @ X.transpose(-1, -2)).clamp(-1.0, 1.0)
    n2 = X.shape[1] ** 2
    p_prev, p = torch.ones_like(G), G
    out = [p_prev.sum((-1, -2)) / n2, p.sum((-1, -2)) / n2]
    for l in range(1, lmax):
        p_prev, p = p, ((2 * l + 1) * G * p - l * p_prev) / (l + 1)
        out.append(p.sum((-1, -2)) / n2)
    return torch.stack(out[: lmax + 1], dim=-1)


# ----------------------------------------------------------------------------- 1. linear phase


def _linear_rates_one(beta: float, n: int, trials: int, kmax_fit: int, seed: int, normalization: str, frac: float, device: Any = "cpu"):
    k_th = k_max(beta)
    t_star = float(linear_time(n, beta, normalization))
    t_fit = frac * t_star
    ts = np.linspace(0.0, t_fit, 9)
    th = _angles(trials, n, seed, device)
    model = Circle(beta, normalization)
    # the uniform state is not stiff: steps limited by the fastest growth and the series' accuracy
    dt = min(0.05 * t_fit, 0.25 / float(gamma_k(k_th, beta, normalization)))
    sol = simulate(model, th, t_fit, method="rk4", dt=dt, save_at=ts)
    m = torch.stack([circle_moments(x, kmax_fit) for x in sol.xs])  # (T, trials, K + 1)
    log_amp = 0.5 * torch.log((m.abs() ** 2).mean(1)).cpu().numpy()  # RMS over trials
    rates = np.array([fits.line_fit(ts, log_amp[:, k])["slope"] for k in range(1, kmax_fit + 1)])
    return rates, t_fit


@experiment("metastable_linear_rates", chapter="metastable")
def linear_rates(profile: str = "fast", device: str = "cpu", *, normalization: str = "softmax", seed: int = 0, threads: int | None = 1) -> dict[str, Any]:
    """Growth rate of each Fourier mode in the linear phase against gamma_k, for beta in BETAS."""
    _check_profile(profile)
    n, trials = (20_000, 2) if profile == "fast" else (200_000, 4)
    out: dict[str, Any] = {"betas": np.array(BETAS), "n": n, "trials": trials, "normalization": normalization,
                           "rates": [], "theory": [], "k_measured": [], "k_theory": [], "t_fit": []}
    with _threads(threads):
        for i, beta in enumerate(BETAS):
            kt = k_max(beta)
            kfit = max(4, 2 * kt)
            rates, t_fit = _linear_rates_one(beta, n, trials, kfit, seed + i, normalization, 0.35, device)
            theory = gamma_k(np.arange(1, kfit + 1), beta, normalization)
            out["rates"].append(rates)
            out["theory"].append(theory)
            out["k_measured"].append(int(np.argmax(rates)) + 1)
            out["k_theory"].append(kt)
            out["t_fit"].append(t_fit)
    # relative error of the measured rate of the modes that grow fastest (gamma_k >= gamma_max / 2)
    errs = []
    for r, th in zip(out["rates"], out["theory"]):
        keep = th >= 0.5 * th.max()
        errs.append(float(np.max(np.abs(r[keep] / th[keep] - 1))))
    out["max_rel_err"] = np.array(errs)
    # how far the measured rate of the predicted k_max is below the largest measured rate
    out["kmax_shortfall"] = np.array([1 - r[k - 1] / r.max() for r, k in zip(out["rates"], out["k_theory"])])
    # gap between the two largest predicted rates: below the measurement error, argmax is a coin toss
    out["theory_gap"] = np.array([1 - np.sort(th)[-2] / th.max() for th in out["theory"]])
    return out


@plots("metastable_linear_rates")
def plot_linear_rates(result: dict[str, Any], axes=None):
    """Measured growth rates (dots) against gamma_k (lines), and k_max(beta) measured vs theory."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    for beta, r, th in zip(result["betas"], result["rates"], result["theory"]):
        if beta in (1.0, 5.0, 20.0, 100.0):
            k = np.arange(1, len(r) + 1)
            line, = ax.plot(k, th, "-", lw=1)
            ax.plot(k, r, "o", color=line.get_color(), ms=4, label=f"beta = {beta:g}")
    ax.set_xlabel("mode k")
    ax.set_ylabel("growth rate")
    ax.set_title("gamma_k (lines) vs measured (dots), " + result["normalization"])
    ax.legend(fontsize=8)
    ax = axes[1]
    b = result["betas"]
    ax.plot(b, result["k_theory"], "s-", label="theory argmax gamma_k")
    ax.plot(b, result["k_measured"], "o", label="measured")
    ax.plot(b, np.sqrt(2 * b), ":", label="sqrt(2 beta)")
    ax.set_xscale("log")
    ax.set_xlabel("beta")
    ax.set_ylabel("k_max")
    ax.legend(fontsize=8)
    return axes


# ----------------------------------------------------------------------------- 2. ln N law


def _end_of_linear_phase(n: int, trials: int, beta: float, seed: int, level: float, dt: float, seg: float, t_max: float,
                         device: Any = "cpu"):
    """First time |m_kmax| >= level per trial (interpolated in log |m| between segment ends)."""
    k = k_max(beta)
    X = _angles(trials, n, seed, device)
    model = Circle(beta, "usa")
    amp0 = circle_moments(X, k)[:, k].abs().cpu().numpy()
    ts, log_amp = [0.0], [np.log(amp0)]
    while ts[-1] < t_max and not (np.max(log_amp, axis=0) >= math.log(level)).all():
        X = simulate(model, X, ts[-1] + seg, t0=ts[-1], method="rk4", dt=dt).final
        ts.append(ts[-1] + seg)
        log_amp.append(np.log(circle_moments(X, k)[:, k].abs().cpu().numpy()))
    log_amp = np.stack(log_amp)  # (segments + 1, trials)
    cross = np.array([fits.first_crossing(ts, log_amp[:, j], math.log(level)) for j in range(trials)])
    return cross, amp0


LNN_GRID = {"fast": ([1_000, 3_000, 10_000, 30_000, 100_000], [24, 12, 6, 3, 2]),
            "full": ([1_000, 10_000, 100_000, 1_000_000], [64, 16, 8, 4])}


@experiment("metastable_lnN", chapter="metastable")
def lnN_law(profile: str = "fast", device: str = "cpu", *, beta: float = 5.0, level: float = 0.1, seed: int = 1, threads: int | None = 1) -> dict[str, Any]:
    """Time at which the k_max mode reaches ``level`` against ln N (USA): slope vs 1/(2 gamma_kmax).

    One :func:`lnN_point` per N of ``LNN_GRID[profile]`` (seed ``seed + 100 i`` for the i-th N),
    combined by :func:`lnN_assemble`; ``python -m companion sweep metastable_lnN`` computes the
    points on Dask instead.
    """
    points = [lnN_point(profile, device, **p, beta=beta, level=level, threads=threads) for p in lnN_grid(profile, seed)]
    return lnN_assemble(points)


def lnN_grid(profile: str = "fast", seed: int = 1) -> list[dict[str, Any]]:
    """The points :func:`lnN_law` computes: one per N of ``LNN_GRID[profile]``, seed ``seed + 100 i``.

    Examples
    --------
    >>> lnN_grid("full")[-1]
    {'n': 1000000, 'trials': 4, 'seed': 301}
    """
    ns, trials = LNN_GRID[_check_profile(profile)]
    return [{"n": n, "trials": tr, "seed": seed + 100 * i} for i, (n, tr) in enumerate(zip(ns, trials))]


def lnN_assemble(points: list[dict[str, Any]]) -> dict[str, Any]:
    """The ln N law from :func:`lnN_point` results (any number of seeds per N, all at one beta and level).

    Per N, the trials of every point are pooled: mean end of the linear phase and its standard
    error; then the fitted slope against ln N, the per-trial slope against -ln |m_k(0)|, and the joint
    fit (see :func:`lnN_law`).

    Examples
    --------
    >>> pts = [{"n": n, "beta": 5.0, "level": 0.1, "t_end": np.array([0.1 * math.log(n)] * 2),
    ...         "amp0": np.array([n ** -0.5] * 2)} for n in (100, 1000, 10000)]
    >>> r = lnN_assemble(pts)
    >>> round(r["slope"], 12), r["ns"].tolist(), r["trials"].tolist()
    (0.1, [100, 1000, 10000], [2, 2, 2])
    """
    if not points:
        raise ValueError("lnN_assemble needs at least one point")
    beta, level = float(points[0]["beta"]), float(points[0]["level"])
    if any(float(p["beta"]) != beta or float(p["level"]) != level for p in points):
        raise ValueError("lnN_assemble: every point must have the same beta and level (sweep them separately)")
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
    ln_n = np.log(np.array(ns, dtype=np.float64))
    line = fits.line_fit(ln_n, t_end) if len(ns) > 1 else {"slope": math.nan, "intercept": math.nan}
    slope, icpt = line["slope"], line["intercept"]
    # per trial, t_end = (ln level - ln |m_k(0)|) / gamma + c: the slope against -ln |m_k(0)| is 1/gamma
    tt, aa = np.concatenate(all_t), np.concatenate(all_a)
    nn = np.concatenate([np.full(tr, n, dtype=np.float64) for n, tr in zip(ns, trials)])
    ok = np.isfinite(tt)
    slope_amp = fits.line_fit(-np.log(aa[ok]), tt[ok])["slope"]
    # joint fit t = a + b ln N + c (-ln |sqrt(N) m_k(0)|): b is the ln N law with the trial-to-trial
    # spread of the initial amplitude (a Rayleigh variable) taken out; theory b = 1/(2 gamma), c = 1/gamma
    Xd = np.stack([np.ones(ok.sum()), np.log(nn[ok]), -np.log(np.sqrt(nn[ok]) * aa[ok])], axis=1)
    coef, *_ = np.linalg.lstsq(Xd, tt[ok], rcond=None)
    return {"beta": beta, "k": k, "gamma": gam, "level": level, "ns": np.array(ns), "trials": np.array(trials),
            "t_end": np.array(t_end), "t_sem": np.array(t_sd), "slope": float(slope), "intercept": float(icpt),
            "slope_theory": 1 / (2 * gam), "t_star": linear_time(np.array(ns), beta, "usa"),
            "slope_amp": slope_amp, "slope_amp_theory": 1 / gam, "unfinished": int((~ok).sum()),
            "joint_lnN": float(coef[1]), "joint_amp": float(coef[2]), "t_trials": tt, "n_trials": nn, "amp0_trials": aa}


@sweep_point("metastable_lnN", assemble=lnN_assemble, grid=lnN_grid)
def lnN_point(profile: str = "fast", device: str = "cpu", *, n: int, seed: int, trials: int = 1, beta: float = 5.0,
              level: float = 0.1, threads: int | None = 1) -> dict[str, Any]:
    """One point of the ln N law: ``trials`` USA runs of ``n`` tokens (seed ``seed``), each run to the
    first time ``|m_kmax| >= level`` (RK4, dt = 4e-3, checked every 0.01, at most t = 1.5).

    Returns ``t_end`` (per trial; nan if not reached) and ``amp0`` (initial ``|m_kmax|``) with the
    point's parameters. The profile sets nothing here (the grid does); it is checked and recorded.

    Examples
    --------
    >>> r = lnN_point(n=200, seed=0, trials=2)
    >>> r["t_end"].shape, bool(np.all((r["t_end"] > 0) & (r["t_end"] < 1.5)))
    ((2,), True)
    """
    _check_profile(profile)
    if int(n) < 2 or int(trials) < 1:
        raise ValueError(f"need n >= 2 tokens and trials >= 1, got n = {n}, trials = {trials}")
    with _threads(threads):
        cross, amp0 = _end_of_linear_phase(int(n), int(trials), beta, seed, level, dt=4e-3, seg=0.01, t_max=1.5, device=device)
    return {"n": int(n), "trials": int(trials), "seed": seed, "beta": beta, "level": level, "t_end": cross, "amp0": amp0}


@plots("metastable_lnN")
def plot_lnN_law(result: dict[str, Any], ax=None):
    """Mean end of the linear phase against ln N with the fitted and the predicted slope."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4))
    x = np.log(result["ns"])
    ax.errorbar(x, result["t_end"], yerr=result["t_sem"], fmt="o", label="measured (mean +- s.e.)")
    ax.plot(x, result["intercept"] + result["slope"] * x, "-", label=f"fit, slope {result['slope']:.4f}")
    ax.plot(x, result["t_end"].mean() + result["slope_theory"] * (x - x.mean()), "--",
            label=f"slope 1/(2 gamma_k) = {result['slope_theory']:.4f}")
    ax.set_xlabel("ln N")
    ax.set_ylabel(f"first time |m_k| >= {result['level']}")
    ax.set_title(f"end of the linear phase, USA, beta = {result['beta']:g}, k = {result['k']}")
    ax.legend(fontsize=8)
    return ax


# ----------------------------------------------------------------------------- 5. official runs (+ 2.)


def _official_one(beta: float, t1: float, n: int, seed: int, n_show: int, saves: int, dt: float, device: Any = "cpu") -> dict[str, Any]:
    th0 = _angles(1, n, seed, device)
    k = k_max(beta)
    ts = np.linspace(0.0, t1, saves)
    sol = simulate(Circle(beta, "usa"), th0, t1, method="euler", dt=dt, save_at=ts)
    xs = sol.xs[:, 0, :, 0]
    counts = cluster_count(sol.xs[:, 0], criterion="density").cpu().numpy()
    centres, masses = cluster_centres(sol.xs[-1, :1], criterion="density")[0]
    centres = centres[:, 0]
    pred = predicted_centres(th0[0, :, 0].cpu().numpy(), k)
    # distance of each measured centre to the nearest predicted one
    dist = np.array([circular_distance(c, pred).min() for c in centres]) if centres.size else np.array([np.inf])
    amp = torch.stack([circle_moments(x[None, :, None], 2 * k) for x in xs])[:, 0].abs().cpu().numpy()
    show = np.linspace(0, n - 1, n_show).astype(int)
    return {"beta": beta, "t1": t1, "n": n, "k": k, "ts": ts, "counts": counts, "centres": centres,
            "masses": masses, "predicted": pred, "centre_error": float(dist.max()), "moments": amp,
            "traj": wrap(xs[:, show]).cpu().numpy(), "final": wrap(xs[-1]).cpu().numpy(), "initial": wrap(xs[0]).cpu().numpy(),
            "t_star": float(linear_time(n, beta, "usa")), "steps": sol.stats["steps"]}


def _official_ensemble(beta: float, t1: float, n: int, trials: int, seed: int, dt: float, device: Any = "cpu") -> dict[str, Any]:
    """Many seeds of the same run (RK4): how often k_max clusters appear, and where."""
    th0 = _angles(trials, n, seed, device)
    k = k_max(beta)
    sol = simulate(Circle(beta, "usa"), th0, t1, method="rk4", dt=dt)
    counts, errs, winners = [], [], []
    clusters = cluster_centres(sol.final, criterion="density")
    for j in range(trials):
        c = clusters[j][0][:, 0]
        counts.append(c.size)
        pred = predicted_centres(th0[j, :, 0].cpu().numpy(), k)
        errs.append(float(max(circular_distance(x, pred).min() for x in c)) if c.size == k else np.nan)
        m = circle_moments(sol.final[j : j + 1], 2 * k)[0, 1:].abs().cpu().numpy()
        winners.append(int(np.argmax(m)) + 1)
    m0 = circle_moments(th0, k + 1)[:, 1:].abs().cpu().numpy()  # initial |m_k|, k = 1..k+1
    return {"beta": beta, "t1": t1, "n": n, "trials": trials, "k": k, "counts": np.array(counts),
            "centre_errors": np.array(errs), "dominant_mode": np.array(winners), "amp0": m0,
            "rates": gamma_k(np.arange(1, k + 2), beta, "usa")}


@experiment("metastable_official", chapter="metastable")
def official_runs(profile: str = "fast", device: str = "cpu", *, seed: int = 2, threads: int | None = 1) -> dict[str, Any]:
    """The official notebook's runs: USA, N = 2e4, Euler dt = 1e-4, beta = 5 to T = 0.6 and beta = 7 to T = 0.1,
    plus an ensemble of seeds (RK4) for the frequency of k_max clusters."""
    _check_profile(profile)
    trials = 8 if profile == "fast" else 32
    with _threads(threads):
        runs = [_official_one(5.0, 0.6, 20_000, seed, 300, 61, 1e-4, device), _official_one(7.0, 0.1, 20_000, seed + 1, 300, 51, 1e-4, device)]
        ens = [_official_ensemble(5.0, 0.6, 20_000, trials, seed + 10, 2e-3, device),
               _official_ensemble(7.0, 0.1, 20_000, trials, seed + 11, 1e-3, device)]
    return {"runs": runs, "ensembles": ens}


def plot_official_run(run: dict[str, Any], axes=None):
    """Trajectories (300 tokens) with the predicted cluster angles, and initial/final histograms."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    ax = axes[0]
    traj = run["traj"].copy()
    traj[1:][np.abs(np.diff(traj, axis=0)) > np.pi] = np.nan  # break lines where an angle wraps
    ax.plot(run["ts"], traj, "-", color="k", lw=0.3, alpha=0.4)
    for c in run["predicted"]:
        ax.axhline(c, color="r", lw=0.8, ls="--")
    ax.axvline(run["t_star"], color="b", lw=0.8, ls=":")
    ax.set_xlabel("t")
    ax.set_ylabel("theta mod 2 pi")
    ax.set_title(f"beta = {run['beta']:g}: trajectories, predicted centres (red), t* (blue)")
    ax = axes[1]
    bins = np.linspace(0, 2 * np.pi, 181)
    ax.hist(run["initial"], bins=bins, density=True, alpha=0.5, label="t = 0")
    ax.hist(run["final"], bins=bins, density=True, alpha=0.6, label=f"t = {run['t1']:g}")
    for c in run["predicted"]:
        ax.axvline(c, color="r", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_xlabel("theta")
    ax.legend(fontsize=8)
    return axes



@plots("metastable_official")
def _plot_official_runs(result: dict[str, Any]) -> None:
    """Every official run of :func:`official_runs`, one figure each (for ``python -m companion run``)."""
    for run in result["runs"]:
        plot_official_run(run)

# ----------------------------------------------------------------------------- 2. plateau and merging


@experiment("metastable_long_run", chapter="metastable")
def long_run(profile: str = "fast", device: str = "cpu", *, beta: float = 5.0, seed: int = 3, threads: int | None = 1) -> dict[str, Any]:
    """Cluster count over a long USA run: formation of k_max clusters, the plateau, merging."""
    _check_profile(profile)
    n, trials, t1 = (500, 8, 60.0) if profile == "fast" else (5_000, 16, 200.0)
    th0 = _angles(trials, n, seed, device)
    ts = np.concatenate([np.linspace(0, 1, 21)[:-1], np.geomspace(1, t1, 60)])
    with _threads(threads):
        sol = simulate(Circle(beta, "usa"), th0, t1, method="dopri5", dt=1e-3, save_at=ts, rtol=1e-7, atol=1e-9)
    counts = cluster_count(sol.xs.flatten(0, 1), criterion="density").reshape(len(ts), trials).T.cpu().numpy()
    k = k_max(beta)
    first_k = np.array([fits.first_time(ts, c == k) for c in counts])
    merged = np.array([fits.first_time(ts, (c < k) & (ts > ft)) for c, ft in zip(counts, first_k)])  # ts > nan: never
    return {"beta": beta, "n": n, "trials": trials, "t1": t1, "k": k, "ts": ts, "counts": counts,
            "first_k": first_k, "first_merge": merged, "final_counts": counts[:, -1], "stats": sol.stats}


@plots("metastable_long_run")
def plot_long_run(result: dict[str, Any], ax=None):
    """Cluster count against time (log scale) for every trial."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.8))
    for j, c in enumerate(result["counts"]):
        ax.step(result["ts"], c + 0.04 * j, where="post", lw=1)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("t")
    ax.set_ylabel("cluster count")
    ax.set_title(f"USA, beta = {result['beta']:g}, N = {result['n']}: k_max = {result['k']} clusters, then merging")
    return ax


# ----------------------------------------------------------------------------- 3. the PDE


@experiment("metastable_pde", chapter="metastable")
def mean_field_pde(profile: str = "fast", device: str = "cpu", *, beta: float = 5.0, t1: float = 0.5, noise: float = 0.01, seed: int = 4, threads: int | None = 1) -> dict[str, Any]:
    """Paper D Fig. 4: the mean-field density from u0 = 1/(2 pi) + noise, and particles started at its quantiles."""
    _check_profile(profile)
    M, ns = (2048, [10_000, 100_000]) if profile == "fast" else (8192, [10_000, 100_000, 1_000_000])
    g = torch.Generator().manual_seed(seed)
    u0 = noisy_uniform(M, noise, generator=g).to(device)
    ts = np.linspace(0, t1, 6)
    with _threads(threads):
        tsp, us, st = solve_mean_field(u0, beta, t1, save_at=ts)
        w1 = []
        for n in ns:
            sol = simulate(Circle(beta, "usa"), quantile_tokens(u0, n), t1, method="rk4", dt=2e-3, save_at=ts)
            w1.append([circle_w1(sol.xs[i], us[i]) for i in range(len(ts))])
            if n == ns[-1]:
                final_particles = wrap(sol.xs[-1, 0, :, 0]).cpu().numpy()
    # a coarser grid, to separate the PDE's discretisation error from the particles' error
    _, us_half, _ = solve_mean_field(u0[0::2] * 0.5 + u0[1::2] * 0.5, beta, t1, save_at=ts)
    w1_grid = [circle_w1(quantile_tokens(us_half[i], 200_000), us[i]) for i in range(len(ts))]
    k = k_max(beta)
    m = density_moments(us[-1], 2 * k).abs().cpu().numpy()
    centres, masses = cluster_centres(quantile_tokens(us[-1], 100_000), criterion="density")[0]
    return {"beta": beta, "t1": t1, "M": M, "noise": noise, "ts": ts, "u": us.cpu().numpy(), "mass_drift": st["mass_drift"],
            "steps": st["steps"], "ns": np.array(ns), "w1": np.array(w1), "w1_grid": np.array(w1_grid),
            "moments_final": m, "dominant_mode": int(np.argmax(m[1:]) + 1), "k": k, "peaks": int(centres.size),
            "peak_masses": masses, "min_u": float(us.min()),
            # a density histogram, not the N angles: a stored full-profile result stays small at N = 1e6
            "particles_hist": np.histogram(final_particles, bins=_PDE_HIST_BINS, range=(0.0, 2 * np.pi), density=True)[0]}


_PDE_HIST_BINS = 360


@plots("metastable_pde")
def plot_pde(result: dict[str, Any], axes=None):
    """u(t, theta) at the saved times, and the particle histogram against u(T)."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    M = result["M"]
    th = (np.arange(M) + 0.5) * 2 * np.pi / M
    ax = axes[0]
    for t, u in zip(result["ts"], result["u"]):
        ax.plot(th, u, lw=1, label=f"t = {t:.1f}")
    ax.set_yscale("log")
    ax.set_xlabel("theta")
    ax.set_ylabel("u(t, theta)")
    ax.set_title(f"mean-field PDE, USA, beta = {result['beta']:g}, M = {M}")
    ax.legend(fontsize=7)
    ax = axes[1]
    hist = result["particles_hist"]
    ax.stairs(hist, np.linspace(0, 2 * np.pi, len(hist) + 1), fill=True, alpha=0.6,
              label=f"particles, N = {result['ns'][-1]}")
    ax.plot(th, result["u"][-1], "k-", lw=0.8, label="PDE")
    ax.set_yscale("log")
    ax.set_xlabel("theta")
    ax.set_title(f"t = {result['t1']:g}")
    ax.legend(fontsize=8)
    return axes


# ----------------------------------------------------------------------------- 4. the sphere


@experiment("metastable_sphere", chapter="metastable")
def sphere_rates(profile: str = "fast", device: str = "cpu", *, normalization: str = "softmax", seed: int = 5, threads: int | None = 1) -> dict[str, Any]:
    """Growth of spherical-harmonic degrees on S^2 (A = V = I) against the formula, a few beta."""
    _check_profile(profile)
    betas = (1.0, 3.0, 5.0, 10.0)
    n, trials = (2000, 2) if profile == "fast" else (10_000, 4)
    lmax = 6
    out: dict[str, Any] = {"betas": np.array(betas), "n": n, "trials": trials, "normalization": normalization,
                           "rates": [], "theory": [], "l_measured": [], "l_theory": []}
    with _threads(threads):
        for i, beta in enumerate(betas):
            theory = growth_rate(np.arange(1, lmax + 1), beta, 3, normalization)
            t_fit = 0.35 * math.log(n) / (2 * theory.max())
            ts = np.linspace(0, t_fit, 8)
            g = torch.Generator().manual_seed(seed + i)
            X0 = uniform_sphere(trials, n, 3, generator=g).to(device)
            sol = simulate(sphere_model(beta, normalization), X0, t_fit, method="rk4", dt=t_fit / 10, save_at=ts)
            E = torch.stack([harmonic_energy(x, lmax) for x in sol.xs]).mean(1).cpu().numpy()  # (T, lmax + 1)
            rates = np.array([fits.line_fit(ts, 0.5 * np.log(E[:, l]))["slope"] for l in range(1, lmax + 1)])
            out["rates"].append(rates)
            out["theory"].append(theory)
            out["l_measured"].append(int(np.argmax(rates)) + 1)
            out["l_theory"].append(k_max(beta, 3))
    errs = []
    for r, th in zip(out["rates"], out["theory"]):
        keep = th >= 0.5 * th.max()
        errs.append(float(np.max(np.abs(r[keep] / th[keep] - 1))))
    out["max_rel_err"] = np.array(errs)
    return out


@plots("metastable_sphere")
def plot_sphere_rates(result: dict[str, Any], ax=None):
    """Measured growth rate of each degree l on S^2 (dots) against the formula (lines)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4))
    for beta, r, th in zip(result["betas"], result["rates"], result["theory"]):
        l = np.arange(1, len(r) + 1)
        line, = ax.plot(l, th, "-", lw=1)
        ax.plot(l, r, "o", color=line.get_color(), ms=4, label=f"beta = {beta:g}")
    ax.set_xlabel("degree l")
    ax.set_ylabel("growth rate")
    ax.set_title(f"S^2, {result['normalization']}: formula (lines) vs measured (dots)")
    ax.legend(fontsize=8)
    return ax
