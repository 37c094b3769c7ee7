"""Paper B (Alcalde, Bungert, Riedl, Roith): low-temperature concentration, figure by figure.

Every experiment integrates paper B's particle system (eq. 1) with explicit Euler, dt = 0.01, as the
paper's Section 5 does, and the zero-temperature flow (eq. 3) with the same scheme (the paper's
Algorithm 2). Several inverse temperatures run as ONE batched simulation: ``beta <x_i, B x_j>`` is
``<(beta B^T) x_i, x_j>``, so trial k gets ``A_k = beta_k B^T`` and the model's own beta is 1.

Each experiment is declared with a frozen config per profile (``fast``: CI, 2 CPU cores, about a
minute each; ``full``: the paper's sizes where it states them, more seeds and tokens elsewhere, each
experiment's :class:`~companion.experiments.PaperScale` saying which) and judged by its claims
function, whose thresholds are the module constants below.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, Sequence

import numpy as np
import torch

from .. import fits, init, ledger, metrics, models
from .._validate import as_tokens, check_matrix, check_on_sphere
from ..integrate import simulate
from ..theory import low_temperature as lt
from ..registry import PaperScale, claims_for, experiment, plots

__all__ = [
    "FIG3_B",
    "FIG3_V",
    "FABS_B",
    "FABS_V",
    "simulate_betas",
    "Figure3Config",
    "figure3",
    "plot_figure3",
    "figure3_claims",
    "BetaComparisonConfig",
    "beta_comparison",
    "plot_beta_comparison",
    "beta_comparison_claims",
    "RateInBetaConfig",
    "rate_in_beta",
    "plot_rate_in_beta",
    "rate_in_beta_claims",
    "ZeroTemperatureRateConfig",
    "zero_temperature_rate",
    "plot_zero_temperature_rate",
    "zero_temperature_rate_claims",
    "general_pair",
    "Conjecture1Config",
    "conjecture1",
    "plot_conjecture1",
    "conjecture1_claims",
    "GradientFlowConfig",
    "gradient_flow",
    "plot_gradient_flow",
    "gradient_flow_claims",
    "LAPLACE_B",
    "LaplaceConfig",
    "laplace",
    "plot_laplace",
    "laplace_claims",
    "GradientFlowBetaConfig",
    "gradient_flow_beta",
    "plot_gradient_flow_beta",
    "gradient_flow_beta_claims",
    "EigenConsensusConfig",
    "eigen_consensus",
    "plot_eigen_consensus",
    "eigen_consensus_claims",
    "HardmaxAttention",
    "HardmaxConfig",
    "hardmax",
    "plot_hardmax",
    "hardmax_claims",
]

_F64 = torch.float64

# Phase 1 of Fig. 3: at t = PHASE1_TIME (well inside the metastable phase at beta = 100) every seed's
# mean |P_E x|^2 must be within TOL_PHASE1 of 1 (the tokens on +-e1; the few near the equator lag).
PHASE1_TIME = 3.0
TOL_PHASE1 = 0.05
# Phase 2 of Fig. 3: at the final time the tokens sit on +-e2, mean |P_F x|^2 within TOL_PHASE2 of 1.
TOL_PHASE2 = 0.01
# Fig. 4(b): "affine in log beta" means the line explains at least this fraction of the variance ...
EXIT_R2 = 0.9
# ... and "positive slope" that the slope is at least 3 of its standard errors above 0 (2: partly).
EXIT_Z = 3.0
EXIT_Z_PARTLY = 2.0
# beta = inf: W2 to Pi_# mu_0 must reach this (rounding level after t = 20 at rate >= 1) ...
NO_PHASE2_W2 = 1e-8
# ... without ever growing by more than rounding between saved times.
MONOTONE_SLACK = 1e-12
# Thm. 1's rate: the log-log slope of the distance against sqrt(log(beta+1)/beta) must be >= 1
# ("at least as fast"), within RATE_SLOPE_TOL for the fit over four betas; the fit must be a line.
RATE_SLOPE = 1.0
RATE_SLOPE_TOL = 0.1
RATE_R2 = 0.9
# Cor. 2's bound: the measured W2 over the bound, maximised over t, seeds and p, must not exceed 1.
BOUND_RATIO = 1.0
# Cor. 2's exponent: measured rate within 10 % of p* gamma / sigma_max(B) (fits over 2.5-4 time units).
TOL_RATE_REL = 0.1
# Lemma 9: Pi(x_t) = Pi(x_0) exactly along eq. (3), Euler steps included (each step moves P_E x along
# itself); 1e-9 is far above the rounding (1e-15) and far below a real drift.
TOL_PI_DRIFT = 1e-9
# Prop. 8: V_p(rho_t) <= V_p(rho_0) exp(-2 p gamma t / sigma_max(B)); a ratio above 1 is a violation,
# up to 1 % of slack for Euler's O(dt) error (dt = 0.01) on the measured path.
PROP8_RATIO = 1.01
# Conj. 1: the final RMS distance of the tokens to the target subspace (F or F^abs) at t1.
TOL_CONJ1 = 0.05
# App. C.3: the final states (one Dirac on F; alignment with E) within 1 % of exact.
TOL_C3 = 0.01
# Distances below this are rounding level and differ between machines: they are reported floored.
DIST_FLOOR = 1e-6


def _diag(*a: float) -> torch.Tensor:
    return torch.diag(torch.tensor(a, dtype=_F64))


# App. C.2 (Prop. 6 holds without A2): the Figure 3 B with a non-symmetric M = V B^T (our choice:
# Figure 3's M with an entry 1/2 above the diagonal).
NONSYM_M = torch.tensor([[1.0, 0.5, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -2.0]], dtype=torch.float64)

# Figure 3 of the paper: V B^T = diag(1, -1, -2), E = span(e1), F = span(e2) (top of V).
FIG3_V = _diag(-1.0, 1.0, -2.0)
FIG3_B = _diag(-1.0, -1.0, 1.0)
# Our example for F^abs (the paper's Appendix C examples were not recovered): V B^T = diag(2, -1, 0.3),
# E = span(e1), F = span(e2) (eigenvalue 1), F^abs = span(e3) (eigenvalue -3, largest modulus).
FABS_V = _diag(-1.0, 1.0, -3.0)
FABS_B = _diag(-2.0, -1.0, -0.1)
NONSYM_V = NONSYM_M @ torch.linalg.inv(FIG3_B.T)


def simulate_betas(B, V, betas: Sequence[float], x0: torch.Tensor, t1: float, *, dt: float = 0.01, save_at=None, method: str = "euler"):
    """Paper B eq. (1) for several inverse temperatures in one batched run.

    Parameters
    ----------
    B, V : (d, d); betas : K inverse temperatures; x0 : (S, n, d) initial tokens (S seeds).

    Returns
    -------
    (ts, xs) with ``xs : (T, K, S, n, d)``.

    Examples
    --------
    >>> x0 = init.uniform_sphere(2, 5, 3, generator=torch.Generator().manual_seed(0))
    >>> ts, xs = simulate_betas(FIG3_B, FIG3_V, [1.0, 10.0], x0, 0.1)
    >>> tuple(xs.shape)
    (2, 2, 2, 5, 3)
    """
    betas = [float(b) for b in betas]
    if not betas or any(not (math.isfinite(b) and b > 0) for b in betas):
        raise ValueError(f"betas must be finite positive numbers, got {betas}")
    x0 = torch.as_tensor(x0)
    S = x0.shape[0]
    Bt = torch.as_tensor(B).to(x0).T
    A = torch.stack([b * Bt for b in betas for _ in range(S)])
    X0 = x0.repeat(len(betas), 1, 1)
    sol = simulate(models.Sphere(A=A, V=torch.as_tensor(V).to(x0), beta=1.0), X0, t1, method=method, dt=dt, save_at=save_at)
    return sol.ts, sol.xs.reshape(len(sol.ts), len(betas), S, *x0.shape[1:])


def _w(xs: torch.Tensor, x0: torch.Tensor, v: torch.Tensor, p: int = 2) -> torch.Tensor:
    """W_p(mu_t, Pi_# mu_0) (chordal) for every saved state, E = span(v). xs: (T, S, n, d) -> (T, S).

    Exact, by :func:`companion.theory.low_temperature.wasserstein_to_pi` (tested against POT)."""
    return torch.stack([lt.wasserstein_to_pi(x, x0, v, p) for x in xs])


def _exit_time(ts, w, level: float) -> float:
    """End of the metastable phase: the first time after the minimum of ``w`` at which ``w`` reaches
    ``level`` (interpolated between saved times); nan if it never does."""
    ts, w = (torch.as_tensor(a, dtype=torch.float64).cpu().numpy() for a in (ts, w))
    return fits.first_crossing(ts, w, level, start=ts[int(np.argmin(w))])


def _alignment(xs: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """Mean over tokens of |P x|^2 for the subspace spanned by ``basis``. xs: (..., n, d) -> (...)."""
    return ((xs @ basis) ** 2).sum(-1).mean(-1)


def _save_grid(t1: float, every: float) -> torch.Tensor:
    """Saved times 0, every, 2 every, ..., t1."""
    return torch.linspace(0, t1, int(round(t1 / every)) + 1)


def _index(ts: np.ndarray, t: float) -> int:
    """Index of the saved time nearest to ``t``."""
    return int(np.argmin(abs(np.asarray(ts) - t)))


# ----------------------------------------------------------------------------- Figure 3


@dataclasses.dataclass(frozen=True)
class Figure3Config:
    """Figure 3: ``seeds`` independent sets of ``n`` uniform tokens on S^2 at inverse temperature
    ``beta``, the Figure 3 matrices, Euler with step ``dt`` up to ``t1``, saved every ``save_every``;
    the metastable phase ends when W_2(mu_t, Pi_# mu_0), after its minimum, climbs back to ``level``.

    Examples
    --------
    >>> Figure3Config().seeds, Figure3Config(seeds=16).beta
    (4, 100.0)
    """

    seeds: int = 4
    n: int = 200
    beta: float = 100.0
    t1: float = 20.0
    dt: float = 0.01
    save_every: float = 0.25
    level: float = 0.5
    seed: int = 0


def plot_figure3(result: dict[str, Any], ax=None):
    """Two panels: W_2(mu_t, Pi_# mu_0) per seed, and the mean alignment with E and with F.

    Parameters
    ----------
    result : dict
        What :func:`figure3` returns.
    ax : sequence of 2 matplotlib.axes.Axes, optional
        The panels, left to right; None opens a new figure with them.

    Returns
    -------
    ax : sequence of matplotlib.axes.Axes
        The panels drawn on: ``ax`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> len(plot_figure3(figure3(seeds=1, n=10, t1=1.0)))
    2
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    ts = result["ts"]
    beta = result["config"]["beta"]
    ax[0].semilogy(ts, result["w2"], color="C0", alpha=0.6)
    ax[0].axvline(math.log(beta), color="k", ls=":", label=r"$t = \log\beta$")
    ax[0].axhline(result["config"]["level"], color="C3", ls="--", lw=0.8, label="exit level")
    ax[0].set(xlabel="t", ylabel=r"$W_2(\mu_t, \Pi_\sharp\mu_0)$", title=f"beta = {beta:g}, one line per seed")
    ax[0].legend()
    ax[1].plot(ts, result["align_E"].mean(axis=1), label=r"mean $|P_E x|^2$ ($E = e_1$)")
    ax[1].plot(ts, result["align_F"].mean(axis=1), label=r"mean $|P_F x|^2$ ($F = e_2$)")
    ax[1].axvline(math.log(beta), color="k", ls=":")
    ax[1].set(xlabel="t", ylabel="alignment", title="figure3: alignment with E, then F")
    ax[1].legend()
    return ax


@experiment("lowtemp-figure3", chapter="low_temperature", plot=plot_figure3,
            profiles={"fast": Figure3Config(), "full": Figure3Config(seeds=16)},
            paper=PaperScale({"n": 200, "beta": 100.0, "dt": 0.01, "t1": 20.0},
                             note="Sec. 5: Euler at dt = 0.01, d = 3, the Figure 3 matrices, T about 20. The paper "
                                  "shows one run and states no seed count: 16 seeds."))
def figure3(cfg: Figure3Config, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Figure 3: beta = 100, V = diag(-1, 1, -2), B = diag(-1, -1, 1): concentration on +-e1, then +-e2.

    Profiles: ``fast`` 4 seeds, ``full`` 16 (see :class:`Figure3Config`).

    Returns
    -------
    dict with ``ts`` (T,), ``w2`` and ``w1`` (T, seeds) the exact W_p(mu_t, Pi_# mu_0), ``align_E`` and
    ``align_F`` (T, seeds) the mean |P x|^2, ``exit_times`` (seeds,) and ``snapshots`` {t: (n, 3)} of
    seed 0 at t = 0, 3, 20.

    Examples
    --------
    >>> r = figure3(seeds=1, n=20, t1=4.0)
    >>> r["w2"].shape, bool(r["align_E"][-1, 0] > 0.9)
    ((17, 1), True)
    """
    x0 = init.uniform_sphere(cfg.seeds, cfg.n, 3, generator=generator).to(device)
    save = _save_grid(cfg.t1, cfg.save_every)
    ts, xs = simulate_betas(FIG3_B, FIG3_V, [cfg.beta], x0, cfg.t1, dt=cfg.dt, save_at=save)
    xs = xs[:, 0]
    E = lt.check_assumption_1(FIG3_B, FIG3_V)
    F = lt.top_eigenspace(FIG3_V)
    v = E.basis[:, 0].to(x0)
    w2 = _w(xs, x0, v, 2)
    return {
        "ts": ts,
        "w2": w2,
        "w1": _w(xs, x0, v, 1),
        "align_E": _alignment(xs, E.basis.to(xs)),
        "align_F": _alignment(xs, F.basis.to(xs)),
        "exit_times": np.array([_exit_time(ts, w2[:, s], cfg.level) for s in range(cfg.seeds)]),
        "snapshots": {float(t): xs[int(torch.argmin((ts - t).abs()))][0] for t in (0.0, 3.0, 20.0) if t <= cfg.t1},
    }


@claims_for("lowtemp-figure3")
def figure3_claims(result: dict[str, Any], cfg: Figure3Config) -> list[ledger.Claim]:
    """Figure 3's two time scales: concentration on E at :data:`PHASE1_TIME` (within
    :data:`TOL_PHASE1` of full alignment, worst seed) and on F at the final time (within
    :data:`TOL_PHASE2`).

    Examples
    --------
    >>> ts = np.array([0.0, 3.0, 20.0])
    >>> good = {"ts": ts, "align_E": np.array([[0.3], [0.99], [0.0]]), "align_F": np.array([[0.3], [0.0], [1.0]])}
    >>> [c.status for c in figure3_claims(good, Figure3Config())]
    ['reproduced', 'reproduced']
    >>> stuck = dict(good, align_F=np.array([[0.3], [0.0], [0.5]]))  # never reaches F
    >>> [c.status for c in figure3_claims(stuck, Figure3Config())]
    ['reproduced', 'not-reproduced']
    """
    aE = float(np.min(result["align_E"][_index(result["ts"], PHASE1_TIME)]))
    aF = float(np.min(result["align_F"][-1]))
    t_end = float(result["ts"][-1])
    return [
        ledger.Claim(
            id="B-fig3-phase1-E", paper="B", where="Fig. 3",
            statement=f"At beta = {cfg.beta:g} the tokens first concentrate on the top eigenspace E of V B^T "
                      f"(min over seeds of mean |P_E x|^2 at t = {PHASE1_TIME:g})",
            verdict=ledger.verdict(1.0 - aE, TOL_PHASE1), measured=aE, expected=1.0, tolerance=TOL_PHASE1,
            uncertainty=f"worst of {cfg.seeds} seeds"),
        ledger.Claim(
            id="B-fig3-phase2-F", paper="B", where="Fig. 3",
            statement=f"On a second time scale the tokens align with F, the top eigenspace of V "
                      f"(min over seeds of mean |P_F x|^2 at t = {t_end:g})",
            verdict=ledger.verdict(1.0 - aF, TOL_PHASE2), measured=aF, expected=1.0, tolerance=TOL_PHASE2,
            uncertainty=f"worst of {cfg.seeds} seeds"),
    ]


# ----------------------------------------------------------------------------- Figure 4


@dataclasses.dataclass(frozen=True)
class BetaComparisonConfig:
    """Figure 4's comparison: the Figure 3 matrices at every inverse temperature of ``betas`` (one
    batched run) and at beta = infinity (eq. 3), ``seeds`` sets of ``n`` uniform tokens, Euler with
    step ``dt`` up to ``t1``, saved every ``save_every``; exit level ``level`` as in
    :class:`Figure3Config`.

    Examples
    --------
    >>> BetaComparisonConfig().betas
    (10.0, 30.0, 100.0, 300.0, 1000.0)
    """

    betas: tuple[float, ...] = (10.0, 30.0, 100.0, 300.0, 1000.0)
    seeds: int = 3
    n: int = 200
    t1: float = 20.0
    dt: float = 0.01
    save_every: float = 0.25
    level: float = 0.5
    seed: int = 1


def plot_beta_comparison(result: dict[str, Any], ax=None):
    """(a) seed-mean W_2(mu_t, Pi_# mu_0) per beta and for beta = inf; (b) exit time against log beta.

    Parameters
    ----------
    result : dict
        What :func:`beta_comparison` returns.
    ax : sequence of 2 matplotlib.axes.Axes, optional
        The panels, left to right; None opens a new figure with them.

    Returns
    -------
    ax : sequence of matplotlib.axes.Axes
        The panels drawn on: ``ax`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> len(plot_beta_comparison(beta_comparison(betas=(10.0, 30.0), seeds=1, n=10, t1=8.0)))
    2
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    ts = result["ts"]
    for k, b in enumerate(result["betas"]):
        ax[0].semilogy(ts, result["w2"][:, k].mean(axis=-1), label=f"beta = {b:g}")
    ax[0].semilogy(ts, np.maximum(result["w2_inf"].mean(axis=-1), 1e-16), "k--", label="beta = inf")
    ax[0].set(xlabel="t", ylabel=r"$W_2(\mu_t, \Pi_\sharp\mu_0)$", ylim=(1e-6, 3), title="beta_comparison")
    ax[0].legend(fontsize=8)
    lb = np.log(result["betas"])
    ax[1].plot(lb, result["exit_times"], "o", color="C0", alpha=0.4)
    ax[1].plot(lb, result["mean_exit"], "s", color="C1", label="seed mean")
    f = result["fit"]
    ax[1].plot(lb, f["slope"] * lb + f["intercept"], "k-", label=f"slope {f['slope']:.2f}, R2 {f['r2']:.3f}")
    ax[1].set(xlabel=r"$\log\beta$", ylabel="exit time", title="end of the metastable phase")
    ax[1].legend()
    return ax


@experiment("lowtemp-beta-comparison", chapter="low_temperature", plot=plot_beta_comparison,
            profiles={"fast": BetaComparisonConfig(), "full": BetaComparisonConfig(seeds=10)},
            paper=PaperScale({"dt": 0.01},
                             note="Figure 4's betas, n and horizon are not recovered (NOTES B): the Figure 3 "
                                  "matrices, n = 200 and T = 20 as in Figure 3, beta = 10 to 1000 and infinity, "
                                  "10 seeds."))
def beta_comparison(cfg: BetaComparisonConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Figure 4's comparison: W_2(mu_t, Pi_# mu_0) for several beta and beta = infinity; exit time vs log beta.

    Profiles: ``fast`` 3 seeds, ``full`` 10 (see :class:`BetaComparisonConfig`).

    Returns
    -------
    dict with ``ts`` (T,), ``betas`` (K,), ``w2`` (T, K, seeds), ``w2_inf`` (T, seeds) for beta = inf,
    ``exit_times`` (K, seeds), ``mean_exit`` (K,) and ``fit`` (the line of the mean exit time
    against log beta: ``slope``, ``intercept``, ``r2``).

    Examples
    --------
    >>> r = beta_comparison(betas=(10.0, 30.0), seeds=1, n=10, t1=8.0)
    >>> r["w2"].shape, r["exit_times"].shape, sorted(r["fit"])
    ((33, 2, 1), (2, 1), ['intercept', 'r2', 'slope'])
    """
    x0 = init.uniform_sphere(cfg.seeds, cfg.n, 3, generator=generator).to(device)
    save = _save_grid(cfg.t1, cfg.save_every)
    ts, xs = simulate_betas(FIG3_B, FIG3_V, cfg.betas, x0, cfg.t1, dt=cfg.dt, save_at=save)
    E = lt.check_assumption_1(FIG3_B, FIG3_V)
    v = E.basis[:, 0].to(x0)
    w2 = torch.stack([_w(xs[:, k], x0, v, 2) for k in range(len(cfg.betas))], 1)  # (T, K, S)
    zt = simulate(models.ZeroTemperature(B=FIG3_B, V=FIG3_V), x0, cfg.t1, method="euler", dt=cfg.dt, save_at=save)
    exits = np.array([[_exit_time(ts, w2[:, k, s], cfg.level) for s in range(cfg.seeds)] for k in range(len(cfg.betas))])
    mean_exit = np.nanmean(exits, axis=1)
    # standard error of each mean exit time over the seeds; the weighted fit gives the slope's error
    se = np.nanstd(exits, axis=1, ddof=1) / np.sqrt(np.isfinite(exits).sum(axis=1)) if cfg.seeds > 1 else None
    fit_se = fits.line_fit(np.log(np.asarray(cfg.betas)), mean_exit, se=se) if se is not None and np.all(se > 0) else None
    return {
        "ts": ts,
        "betas": np.asarray(cfg.betas, dtype=float),
        "w2": w2,
        "w2_inf": _w(zt.xs, x0, v, 2),
        "exit_times": exits,
        "mean_exit": mean_exit,
        "fit": fits.line_fit(np.log(np.asarray(cfg.betas)), mean_exit),
        "exit_se": se,
        "fit_se": fit_se,
    }


@claims_for("lowtemp-beta-comparison")
def beta_comparison_claims(result: dict[str, Any], cfg: BetaComparisonConfig) -> list[ledger.Claim]:
    """Figure 4: the exit time is affine in log beta (weighted R^2 at least :data:`EXIT_R2`) with a
    slope at least :data:`EXIT_Z` standard errors above 0 (:data:`EXIT_Z_PARTLY`: partly), and the zero-temperature flow has no second phase (W2 non-increasing up to
    :data:`MONOTONE_SLACK`, below :data:`NO_PHASE2_W2` at the end).

    Examples
    --------
    >>> fit = {"slope": 0.7, "intercept": 3.0, "r2": 0.99, "slope_se": 0.05}
    >>> r = {"fit": fit, "fit_se": fit, "w2_inf": np.array([[1.0], [1e-3], [1e-9]])}
    >>> [c.status for c in beta_comparison_claims(r, BetaComparisonConfig())]
    ['reproduced', 'reproduced']
    >>> noisy = dict(r, fit_se=dict(fit, slope_se=0.3), w2_inf=np.array([[1.0], [1e-3], [0.5]]))  # 2.3 standard errors
    >>> [c.status for c in beta_comparison_claims(noisy, BetaComparisonConfig())]
    ['partly', 'not-reproduced']
    """
    fit = result.get("fit_se")
    if fit is not None:
        slope, slope_se, r2 = float(fit["slope"]), float(fit["slope_se"]), float(fit["r2"])
        exit_verdict = (ledger.verdict(slope / slope_se, EXIT_Z, partly=EXIT_Z_PARTLY, better="higher", scale=1.0)
                        if r2 >= EXIT_R2 else ledger.verdict(False))
    else:  # one seed: no standard error, no verdict on the slope's sign
        slope, slope_se, r2 = float(result["fit"]["slope"]), None, float(result["fit"]["r2"])
        exit_verdict = ledger.verdict(False)
    winf = np.asarray(result["w2_inf"]).mean(axis=-1)
    no_second = bool((np.diff(winf) <= MONOTONE_SLACK).all() and winf[-1] < NO_PHASE2_W2)
    betas = ", ".join(f"{b:g}" for b in cfg.betas)
    return [
        ledger.Claim(
            id="B-fig4-exit-logbeta", paper="B", where="Sec. 5, Fig. 4(b)",
            statement=f"The metastable phase ends after a time of order log beta: the exit time is affine in log beta "
                      f"with positive slope (fit over beta = {betas}, weighted by the standard error of each mean over "
                      f"{cfg.seeds} seeds; margin in standard errors of the slope)",
            verdict=exit_verdict, measured={"slope": slope, "r2": r2},
            expected=f"slope >= {EXIT_Z:g} standard errors above 0, weighted R^2 >= {EXIT_R2:g}", tolerance=EXIT_Z,
            uncertainty=slope_se),
        ledger.Claim(
            id="B-fig4-zero-temp-no-phase2", paper="B", where="Sec. 5, Cor. 2",
            statement="For beta = infinity the distance to Pi_# mu_0 decreases monotonically to zero: no second phase",
            verdict=ledger.verdict(no_second), measured=no_second,
            expected=f"W2(t={cfg.t1:g}) < {NO_PHASE2_W2:g} and non-increasing", tolerance=MONOTONE_SLACK),
    ]


# ----------------------------------------------------------------------------- the rate in beta


@dataclasses.dataclass(frozen=True)
class RateInBetaConfig:
    """Theorem 1's rate in beta: at time ``t`` the finite-beta solution for every beta of ``betas``
    against the zero-temperature one, from the same ``n`` tokens (a randomly rotated Fibonacci
    lattice, ``seeds`` rotations), Euler with step ``dt``; ``exact_w2`` also computes W_2 by exact
    optimal transport (None: when n <= 2000, where it is affordable).

    Examples
    --------
    >>> RateInBetaConfig().n, RateInBetaConfig().exact_w2
    (1500, None)
    """

    betas: tuple[float, ...] = (3.0, 10.0, 30.0, 100.0)
    n: int = 1500
    seeds: int = 1
    t: float = 1.0
    dt: float = 0.01
    exact_w2: bool | None = None
    seed: int = 2


def plot_rate_in_beta(result: dict[str, Any], ax=None):
    """log-log: distance to the zero-temperature solution against beta, with the rate sqrt(log(beta+1)/beta).

    Parameters
    ----------
    result : dict
        What :func:`rate_in_beta` returns.
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
    >>> len(plot_rate_in_beta(rate_in_beta(betas=(3.0, 10.0), n=50, t=0.1)).get_lines())
    3
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.6))
    b = result["betas"]
    ax.loglog(b, result["coupling"], "o-", label=r"$(\frac{1}{n}\sum_i|x_i^\beta - x_i^\infty|^2)^{1/2}$")
    if result["w2"] is not None:
        ax.loglog(b, result["w2"], "x", ms=9, label=r"$W_2(\mu^\beta_t, \mu^\infty_t)$")
    scale = result["coupling"][0] / result["rate"][0]
    ax.loglog(b, scale * result["rate"], "k--", label=r"$\propto\sqrt{\log(\beta+1)/\beta}$")
    ax.set(xlabel=r"$\beta$", ylabel="distance at t = %g" % result["config"]["t"], title="rate_in_beta")
    ax.legend(fontsize=8)
    return ax


@experiment("lowtemp-rate-in-beta", chapter="low_temperature", plot=plot_rate_in_beta,
            profiles={"fast": RateInBetaConfig(),
                      "full": RateInBetaConfig(betas=(3.0, 10.0, 30.0, 100.0, 300.0, 1000.0), n=12000)},
            paper=PaperScale({"dt": 0.01},
                             note="Theorem 1 / Prop. 6 have no figure and their constants are not recovered "
                                  "(NOTES B): n = 12,000 lattice tokens stand in for the mean-field law, beta from 3 "
                                  "to 1000, read at t = 1."))
def rate_in_beta(cfg: RateInBetaConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Theorem 1 / Prop. 6: distance between finite-beta and zero-temperature solutions at time t vs beta.

    Profiles: ``fast`` n = 1500, beta up to 100; ``full`` n = 12000, beta up to 1000 (see
    :class:`RateInBetaConfig`).

    Returns
    -------
    dict with ``betas`` (K,), ``coupling`` (K,) the coupling distance
    ``(mean_i |x_i^beta - x_i^inf|^2)^{1/2}`` (seed mean), ``w2`` (K,) or None, ``rate`` (K,)
    sqrt(log(beta+1)/beta), ``exponent`` (distance ~ beta^-exponent), ``fit_beta`` and ``fit_rate``
    (log distance against log beta, against log rate) and ``init`` (how the tokens were placed).

    Examples
    --------
    >>> r = rate_in_beta(betas=(3.0, 10.0), n=50, t=0.1)
    >>> bool(r["coupling"][1] < r["coupling"][0]), r["w2"].shape
    (True, (2,))
    """
    betas = list(cfg.betas)
    exact_w2 = (cfg.n <= 2000) if cfg.exact_w2 is None else cfg.exact_w2
    x0 = init.fibonacci_sphere(cfg.seeds, cfg.n, generator=generator, device=device)
    _, xs = simulate_betas(FIG3_B, FIG3_V, betas, x0, cfg.t, dt=cfg.dt)
    zt = simulate(models.ZeroTemperature(B=FIG3_B, V=FIG3_V), x0, cfg.t, method="euler", dt=cfg.dt)
    xb, xz = xs[-1], zt.final  # (K, S, n, d), (S, n, d)
    coupling = ((xb - xz[None]) ** 2).sum(-1).mean(-1).sqrt().mean(-1).cpu().numpy()  # (K,)
    w2 = np.array([metrics.wasserstein(xb[k], xz).mean().item() for k in range(len(betas))]) if exact_w2 else None
    rate = lt.concentration_rate(torch.tensor(betas, dtype=_F64)).cpu().numpy()
    fit_beta = fits.line_fit(np.log(np.asarray(betas)), np.log(coupling))
    # App. C.2: the same tokens with the non-symmetric M (Prop. 6 does not need A2)
    _, xs_ns = simulate_betas(FIG3_B, NONSYM_V, betas, x0, cfg.t, dt=cfg.dt)
    zt_ns = simulate(models.ZeroTemperature(B=FIG3_B, V=NONSYM_V), x0, cfg.t, method="euler", dt=cfg.dt)
    coupling_ns = ((xs_ns[-1] - zt_ns.final[None]) ** 2).sum(-1).mean(-1).sqrt().mean(-1).cpu().numpy()
    return {
        "betas": np.asarray(betas, dtype=float),
        "coupling": coupling,
        "w2": w2,
        "rate": rate,
        "exponent": -fit_beta["slope"],
        "fit_beta": fit_beta,
        "fit_rate": fits.line_fit(np.log(rate), np.log(coupling)),
        "init": "Fibonacci lattice, random rotation",
        "coupling_nonsym": coupling_ns,
        "fit_rate_nonsym": fits.line_fit(np.log(rate), np.log(coupling_ns)),
    }


@claims_for("lowtemp-rate-in-beta")
def rate_in_beta_claims(result: dict[str, Any], cfg: RateInBetaConfig) -> list[ledger.Claim]:
    """Theorem 1's rate: the log-log slope of the distance against sqrt(log(beta+1)/beta) is at least
    :data:`RATE_SLOPE` (within :data:`RATE_SLOPE_TOL`) on a line (R^2 at least :data:`RATE_R2`).
    The same on a non-symmetric M (App. C.2: Prop. 6 without A2). The theorem's constants are not
    checkable (a not-checkable row says so).

    Examples
    --------
    >>> r = {"fit_rate": {"slope": 1.8, "r2": 1.0}, "exponent": 0.59, "fit_rate_nonsym": {"slope": 1.5, "r2": 1.0}}
    >>> [c.status for c in rate_in_beta_claims(r, RateInBetaConfig())]
    ['reproduced', 'reproduced', 'not-checkable']
    >>> slow = dict(r, fit_rate={"slope": 0.5, "r2": 1.0})  # decays slower than the rate
    >>> rate_in_beta_claims(slow, RateInBetaConfig())[1].status
    'not-reproduced'
    """
    s, r2 = float(result["fit_rate"]["slope"]), float(result["fit_rate"]["r2"])
    floor = RATE_SLOPE - RATE_SLOPE_TOL
    rows = []
    if "fit_rate_nonsym" in result:
        sn, r2n = float(result["fit_rate_nonsym"]["slope"]), float(result["fit_rate_nonsym"]["r2"])
        rows.append(ledger.Claim(
            id="B-appC2-prop6-nonsymmetric", paper="B", where="Prop. 6, Sec. 2, App. C.2",
            statement="Prop. 6 holds without A2: with a non-symmetric M = V B^T (our choice: Fig. 3's M plus 1/2 at (1, 2)) the "
                      "distance between the beta and zero-temperature solutions at fixed t still decays at least like "
                      "sqrt(log(beta+1)/beta) (log-log slope against the rate >= 1)",
            verdict=ledger.verdict(sn, floor, better="higher", scale=RATE_SLOPE_TOL) if r2n >= RATE_R2 else ledger.verdict(False),
            measured={"slope_vs_rate": sn, "r2": r2n}, expected=f"slope >= {RATE_SLOPE:g}", tolerance=RATE_SLOPE_TOL))
    return rows + [
        ledger.Claim(
            id="B-thm1-rate-beta", paper="B", where="Thm. 1, Prop. 6",
            statement="At fixed t the distance between the beta and zero-temperature solutions decays at least like "
                      "sqrt(log(beta+1)/beta) (log-log slope against the rate >= 1)",
            verdict=ledger.verdict(s, floor, better="higher", scale=RATE_SLOPE_TOL) if r2 >= RATE_R2 else ledger.verdict(False),
            measured={"slope_vs_rate": s, "exponent_beta": float(result["exponent"])}, expected=f"slope >= {RATE_SLOPE:g}",
            tolerance=RATE_SLOPE_TOL),
        ledger.Claim(
            id="B-thm1-constants", paper="B", where="Thm. 1, Prop. 6, Cor. 4",
            statement="The constants C, c, C0, C1 and the exact assumptions of Theorem 1 / Prop. 6",
            verdict=ledger.NOT_CHECKABLE),
    ]


# ----------------------------------------------------------------------------- Corollary 2


@dataclasses.dataclass(frozen=True)
class ZeroTemperatureRateConfig:
    """Corollary 2: the zero-temperature flow (eq. 3) with the Figure 3 matrices from ``seeds`` sets
    of ``n_large`` uniform tokens (the mean-field regime, rate fitted over ``window_mf``) and of
    ``n_small`` (finitely many tokens, rate fitted over ``window_late``), Euler with step ``dt`` up
    to ``t1``, saved every ``save_every``; the bound is evaluated for every p of ``ps``. Lemma 9 and
    Prop. 8 are also checked where they have content: ``n_small`` tokens in dimension ``general_d``
    under :func:`general_pair` (dim E = 2, M not diagonal, B not orthogonal); ``general_beta`` None
    runs eq. (3) there, a number runs eq. (1) at that beta instead (a flow that Lemma 9 and Prop. 8
    do not cover: the checks' failure case).

    Examples
    --------
    >>> ZeroTemperatureRateConfig().n_large, ZeroTemperatureRateConfig().ps
    (20000, (0.25, 0.5, 1.0))
    """

    n_large: int = 20000
    n_small: int = 200
    seeds: int = 3
    t1: float = 10.0
    dt: float = 0.01
    save_every: float = 0.25
    window_mf: tuple[float, float] = (1.0, 3.5)
    window_late: tuple[float, float] = (6.0, 10.0)
    ps: tuple[float, ...] = (0.25, 0.5, 1.0)
    general_d: int = 4
    general_beta: float | None = None
    seed: int = 3


def general_pair(d: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """A random (B, V) satisfying Assumption 1 with a two-dimensional E and a non-diagonal M.

    ``M = Q diag(1, 1, -1/2, ..., -1) Q^T`` with Q Haar (gap 3/2), ``B = G + 2 I`` with G Gaussian
    (invertible, not orthogonal), ``V = M B^{-T}`` so that ``V B^T = M``. Drawn on the CPU from
    ``generator``. Returns (B, V), each (d, d) float64.

    Examples
    --------
    >>> B, V = general_pair(4, torch.Generator().manual_seed(0))
    >>> E = lt.check_assumption_1(B, V)
    >>> E.dim, round(E.gap, 12)
    (2, 1.5)
    """
    if int(d) != d or d < 3:
        raise ValueError(f"d must be an integer >= 3 (a 2-dimensional E and a gap), got {d!r}")
    Q = init.random_orthogonal(d, generator=generator)
    mu = torch.tensor([1.0, 1.0, *np.linspace(-0.5, -1.0, d - 2)], dtype=_F64)
    M = Q @ torch.diag(mu) @ Q.T
    M = (M + M.T) / 2  # symmetric to the last bit
    B = torch.randn(d, d, generator=generator, dtype=_F64) + 2 * torch.eye(d, dtype=_F64)
    return B, M @ torch.linalg.inv(B.T)


def plot_zero_temperature_rate(result: dict[str, Any], ax=None):
    """W_2(rho_t, Pi_# rho_0) of the zero-temperature flow with the two predicted slopes.

    Parameters
    ----------
    result : dict
        What :func:`zero_temperature_rate` returns.
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
    >>> r = zero_temperature_rate(n_large=100, n_small=20, seeds=1, t1=2.0, window_mf=(0.5, 1.0), window_late=(1.0, 2.0))
    >>> len(plot_zero_temperature_rate(r).get_lines())
    4
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.6))
    ts = result["ts"]
    for name, c in (("large", "C0"), ("small", "C1")):
        w = result[name]["w2"].mean(axis=-1)
        ax.semilogy(ts, w, color=c, label=f"n = {result[name]['n']}")
    w0 = result["large"]["w2"].mean(axis=-1)[0]
    ax.semilogy(ts, w0 * np.exp(-result["predicted_mean_field"] * ts), "k:", label=r"$e^{-\gamma t/2}$")
    ax.semilogy(ts, w0 * np.exp(-result["predicted_late"] * ts), "k--", label=r"$e^{-\gamma t}$")
    ax.set(xlabel="t", ylabel=r"$W_2(\rho_t, \Pi_\sharp\rho_0)$", ylim=(1e-10, 2), title="zero_temperature_rate")
    ax.legend(fontsize=8)
    return ax


@experiment("lowtemp-zero-temperature-rate", chapter="low_temperature", plot=plot_zero_temperature_rate,
            profiles={"fast": ZeroTemperatureRateConfig(), "full": ZeroTemperatureRateConfig(n_large=400000)},
            paper=PaperScale({"dt": 0.01},
                             note="Corollary 2 comes with no stated sizes (App. C.3's beta = infinity runs use "
                                  "matrices not recovered): the Figure 3 matrices, n = 4e5 tokens for the mean-field "
                                  "rate, n = 200 (Figure 3's) for finitely many tokens, T = 10, 3 seeds."))
def zero_temperature_rate(cfg: ZeroTemperatureRateConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Corollary 2: exponential convergence of the zero-temperature flow to Pi_# rho_0, rate vs the gap.

    Profiles: ``fast`` n_large = 20000, ``full`` 400000 (see :class:`ZeroTemperatureRateConfig`).

    Returns
    -------
    dict with ``ts`` (T,), ``gap``, ``sigma_max`` (of B), and per regime (``large``, ``small``)
    ``n``, ``w2`` (T, seeds) = W_2(mu_t, Pi_# mu_0), ``bound_ratio`` {p: max over t and seeds of W2 /
    bound} and ``pi_drift`` (max |Pi(x_t) - Pi(x_0)|); ``rate_mean_field`` and ``rate_late`` (fitted
    exponential rates) with ``predicted_mean_field`` and ``predicted_late``; ``general``: the
    :func:`general_pair` run (``d``, ``dim_E``, ``offdiag`` of M, ``sigma_min_max`` of B,
    ``pi_drift``, ``prop8_ratio`` {p: max over t > 0 of V_p(t) / (V_p(0) e^{-2 p gamma t / sigma_max})},
    ``lemma7_ratio`` {p: max of the coupling cost / sqrt(2 V_p)} and ``model``).

    Examples
    --------
    >>> r = zero_temperature_rate(n_large=100, n_small=20, seeds=1, t1=2.0, window_mf=(0.5, 1.0), window_late=(1.0, 2.0))
    >>> r["predicted_mean_field"], r["predicted_late"], r["small"]["pi_drift"] < 1e-12
    (1.0, 2.0, True)
    """
    E = lt.check_assumption_1(FIG3_B, FIG3_V)
    save = _save_grid(cfg.t1, cfg.save_every)
    model = models.ZeroTemperature(B=FIG3_B, V=FIG3_V)
    out: dict[str, Any] = {"ts": save.cpu().numpy(), "gap": E.gap, "sigma_max": float(torch.linalg.svdvals(FIG3_B).max())}
    for name, n in (("large", cfg.n_large), ("small", cfg.n_small)):
        x0 = init.uniform_sphere(cfg.seeds, n, 3, generator=generator).to(device)
        sol = simulate(model, x0, cfg.t1, method="euler", dt=cfg.dt, save_at=save)
        basis = E.basis.to(x0)
        # E is one-dimensional and Pi is invariant along the flow (Lemma 9): this IS W_2(mu_t, Pi_# mu_0)
        w = torch.stack([lt.pi_distance(x, x0, basis) for x in sol.xs]).cpu()  # (T, S)
        bounds = {p: lt.corollary2_bound(x0, FIG3_B, FIG3_V, p, save) for p in cfg.ps}  # (T, S) each
        pi0 = metrics.project_to_subspace(x0, basis)
        out[name] = {
            "n": n,
            "w2": w.numpy(),
            "bound_ratio": {p: float((w / b).max()) for p, b in bounds.items()},
            "pi_drift": float(max((metrics.project_to_subspace(x, basis) - pi0).abs().max() for x in sol.xs)),
        }
    ts = out["ts"]

    def rate(w, window):
        m = (ts >= window[0]) & (ts <= window[1])
        return -fits.line_fit(ts[m], np.log(w.mean(-1)[m]))["slope"]

    out["rate_mean_field"] = rate(out["large"]["w2"], cfg.window_mf)
    out["rate_late"] = rate(out["small"]["w2"], cfg.window_late)
    # Predictions: the Corollary's exponent p gamma / sigma_max(B) with the largest admissible p
    # (k = dim E = 1: p < 1/2 for a density, so the rate approaches 1/2 gamma / sigma_max; p = 1 for
    # finitely many tokens off E-perp).
    out["predicted_mean_field"] = lt.max_admissible_p(E.dim) * E.gap / out["sigma_max"]
    out["predicted_late"] = 1.0 * E.gap / out["sigma_max"]
    out["general"] = _general_run(cfg, generator, device, save)
    return out


def _general_run(cfg: ZeroTemperatureRateConfig, generator: torch.Generator, device: str, save: torch.Tensor) -> dict[str, Any]:
    """Lemma 9, Lemma 7 and Prop. 8 on :func:`general_pair` (drawn after the other runs' tokens)."""
    B, V = general_pair(cfg.general_d, generator)
    E = lt.check_assumption_1(B, V)
    x0 = init.uniform_sphere(cfg.seeds, cfg.n_small, cfg.general_d, generator=generator).to(device)
    model = models.ZeroTemperature(B=B, V=V) if cfg.general_beta is None else models.low_temperature(B, V, cfg.general_beta)
    sol = simulate(model, x0, cfg.t1, method="euler", dt=cfg.dt, save_at=save)
    basis = E.basis.to(x0)
    pi0 = metrics.project_to_subspace(x0, basis)
    ts = save.to(_F64)
    lemma7, prop8 = {}, {}
    for p in cfg.ps:
        vp = torch.stack([lt.lyapunov_vp(x, basis, p) for x in sol.xs]).cpu()  # (T, S)
        # the coupling x <-> Pi(x), an upper bound on W_2(mu_t, Pi_# mu_t)
        w = torch.stack([lt.pi_distance(x, x, basis) for x in sol.xs]).cpu()
        lemma7[p] = float((w / torch.sqrt(2 * vp)).max())
        decay = torch.exp(-2 * lt.corollary2_rate(B, V, p) * ts)[:, None]
        prop8[p] = float((vp / (vp[0] * decay))[1:].max())  # t > 0 (the ratio is 1 at t = 0)
    M = lt.attention_value_matrix(B, V)
    return {
        "d": cfg.general_d,
        "dim_E": E.dim,
        "offdiag": float((M - torch.diag(M.diagonal())).abs().max()),
        "sigma_min_max": [float(s) for s in torch.linalg.svdvals(B)[[-1, 0]]],
        "pi_drift": float(max((metrics.project_to_subspace(x, basis) - pi0).abs().max() for x in sol.xs)),
        "lemma7_ratio": lemma7,
        "prop8_ratio": prop8,
        "model": "eq. (3)" if cfg.general_beta is None else f"eq. (1), beta = {cfg.general_beta:g}",
    }


@claims_for("lowtemp-zero-temperature-rate")
def zero_temperature_rate_claims(result: dict[str, Any], cfg: ZeroTemperatureRateConfig) -> list[ledger.Claim]:
    """Corollary 2, Lemma 9, Prop. 8 and Lemma 7: the bound holds (max ratio at most
    :data:`BOUND_RATIO`), the rates match p* gamma / sigma_max(B) within :data:`TOL_RATE_REL`;
    on the general example Pi(x_t) = Pi(x_0) within :data:`TOL_PI_DRIFT` and V_p decays at
    Prop. 8's rate (ratio at most :data:`PROP8_RATIO`); Lemma 7 holds for every law, so its row
    records the slack, not-checkable.

    Examples
    --------
    >>> part = {"bound_ratio": {0.5: 0.5}, "pi_drift": 0.0}
    >>> gen = {"d": 4, "dim_E": 2, "offdiag": 0.5, "pi_drift": 1e-15, "prop8_ratio": {0.5: 0.9}, "lemma7_ratio": {0.5: 0.7}}
    >>> r = {"large": part, "small": part, "rate_mean_field": 0.99, "rate_late": 2.02,
    ...      "predicted_mean_field": 1.0, "predicted_late": 2.0, "general": gen}
    >>> [c.status for c in zero_temperature_rate_claims(r, ZeroTemperatureRateConfig())][:4]
    ['reproduced', 'reproduced', 'reproduced', 'reproduced']
    >>> [c.status for c in zero_temperature_rate_claims(dict(r, rate_mean_field=2.0), ZeroTemperatureRateConfig())][:4]
    ['reproduced', 'not-reproduced', 'reproduced', 'reproduced']
    """
    ratio = max(float(v) for name in ("large", "small") for v in result[name]["bound_ratio"].values())
    rel = max(abs(float(result["rate_mean_field"]) / float(result["predicted_mean_field"]) - 1),
              abs(float(result["rate_late"]) / float(result["predicted_late"]) - 1))
    gen = result["general"]
    drift = float(gen["pi_drift"])
    prop8 = max(float(v) for v in gen["prop8_ratio"].values())
    lemma7 = max(float(v) for v in gen["lemma7_ratio"].values())
    where_gen = (f"d = {int(gen['d'])}, dim E = {int(gen['dim_E'])}, M not diagonal (max |off-diagonal| "
                 f"{float(gen['offdiag']):.2g}), B not orthogonal, {cfg.n_small} tokens x {cfg.seeds} seeds")
    ps = ", ".join(f"{p:g}" for p in cfg.ps)
    return [
        ledger.Claim(
            id="B-cor2-bound", paper="B", where="Cor. 2",
            statement=f"W2(rho_t, Pi_# rho_0) <= sqrt(2 V_p(rho_0)) exp(-p gamma t / sigma_max(B)) for p = {ps} "
                      "(max ratio over t, seeds, n)",
            verdict=ledger.verdict(ratio, BOUND_RATIO), measured=ratio, expected=f"<= {BOUND_RATIO:g}", tolerance=BOUND_RATIO),
        ledger.Claim(
            id="B-cor2-rate-gap", paper="B", where="Cor. 2",
            statement="The zero-temperature flow converges exponentially at rate p* gamma / sigma_max(B) (mean field: p* = 1/2; finite n: p = 1)",
            verdict=ledger.verdict(rel, TOL_RATE_REL),
            measured={"mean_field": float(result["rate_mean_field"]), "finite_n": float(result["rate_late"])},
            expected={"mean_field": float(result["predicted_mean_field"]), "finite_n": float(result["predicted_late"])},
            tolerance=TOL_RATE_REL),
        ledger.Claim(
            id="B-lemma9-pi-invariant", paper="B", where="Lemma 9",
            statement=f"Pi(x_t) = Pi(x_0) along the zero-temperature flow ({where_gen}; with dim E = 1 and a "
                      "diagonal M it would only say that the sign of x_1 never changes)",
            verdict=ledger.verdict(drift, TOL_PI_DRIFT), measured=drift, expected=0.0, tolerance=TOL_PI_DRIFT),
        ledger.Claim(
            id="B-prop8-vp-decay", paper="B", where="Prop. 8",
            statement=f"V_p(rho_t) <= V_p(rho_0) exp(-2 p gamma t / sigma_max(B)) along eq. (3) for p = {ps} "
                      f"(max over t > 0 and seeds of the ratio; {where_gen})",
            verdict=ledger.verdict(prop8, PROP8_RATIO, scale=PROP8_RATIO - 1), measured=prop8, expected=f"<= 1",
            tolerance=PROP8_RATIO - 1),
        ledger.Claim(
            id="B-lemma7-w2-vp", paper="B", where="Lemma 7",
            statement="W_2(mu, Pi_# mu)^2 <= 2 V_p(mu): true token by token (|x - Pi(x)|^2 = 2 (1 - cos theta) <= "
                      "2 tan(theta)^(2p)), so a numerical check could not fail; measured: its slack along eq. (3), "
                      f"max over t, seeds and p of the coupling cost over sqrt(2 V_p) ({where_gen})",
            verdict=ledger.NOT_CHECKABLE, measured=lemma7, expected="<= 1 (for every law)"),
    ]


# ----------------------------------------------------------------------------- Conjecture 1


@dataclasses.dataclass(frozen=True)
class Conjecture1Config:
    """Conjecture 1: both examples (the Figure 3 matrices, ending on F; FABS_B, FABS_V, ending on
    F^abs) at inverse temperature ``beta`` from the same ``seeds`` sets of ``n`` uniform tokens,
    Euler with step ``dt`` up to ``t1``, saved every ``save_every``.

    Examples
    --------
    >>> Conjecture1Config().beta, Conjecture1Config().seeds
    (30.0, 2)
    """

    beta: float = 30.0
    seeds: int = 2
    n: int = 200
    t1: float = 20.0
    dt: float = 0.01
    save_every: float = 0.5
    seed: int = 4


# The two examples of Conjecture 1: (name, B, V); the name is the subspace the tokens should end on.
_CONJ1_EXAMPLES = (("F", FIG3_B, FIG3_V), ("Fabs", FABS_B, FABS_V))


def plot_conjecture1(result: dict[str, Any], ax=None):
    """Seed-mean alignment with E, F and F^abs over time, one panel per example.

    Parameters
    ----------
    result : dict
        What :func:`conjecture1` returns.
    ax : sequence of 2 matplotlib.axes.Axes, optional
        The panels, left to right; None opens a new figure with them.

    Returns
    -------
    ax : sequence of matplotlib.axes.Axes
        The panels drawn on: ``ax`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> len(plot_conjecture1(conjecture1(seeds=1, n=10, t1=1.0)))
    2
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    ts = result["ts"]
    for a, name, title in ((ax[0], "F", "V = diag(-1, 1, -2), B = diag(-1, -1, 1)"), (ax[1], "Fabs", "V = diag(-1, 1, -3), B = diag(-2, -1, -0.1)")):
        r = result[name]
        a.plot(ts, r["align_E"].mean(axis=-1), label="E (top of V B^T)")
        a.plot(ts, r["align_F"].mean(axis=-1), label="F (top of V)")
        a.plot(ts, r["align_Fabs"].mean(axis=-1), "--", label="F^abs (largest |eig| of V)")
        a.set(xlabel="t", ylabel="mean alignment", title=f"conjecture1: {title}")
        a.legend(fontsize=8)
    return ax


@experiment("lowtemp-conjecture1", chapter="low_temperature", plot=plot_conjecture1,
            profiles={"fast": Conjecture1Config(), "full": Conjecture1Config(seeds=8)},
            paper=PaperScale({"dt": 0.01},
                             note="Conjecture 1's F^abs examples (App. C.4) and their sizes are not recovered "
                                  "(NOTES B): the Figure 3 matrices and a chosen F^abs pair, beta = 30, n = 200, "
                                  "T = 20, 8 seeds."))
def conjecture1(cfg: Conjecture1Config, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Conjecture 1: one example ending on F (top eigenspace of V), one on F^abs (largest modulus).

    Profiles: ``fast`` 2 seeds, ``full`` 8 (see :class:`Conjecture1Config`).

    Returns
    -------
    dict with ``ts`` (T,) and per example (``F``, ``Fabs``) ``align_E``, ``align_F``, ``align_Fabs``
    (T, seeds) mean |P x|^2, ``dist_target`` {``F``, ``Fabs``: (seeds,)} the RMS distance of the
    final tokens to that subspace, and the spectra ``eig_V``, ``eig_M``.

    Examples
    --------
    >>> r = conjecture1(seeds=1, n=10, t1=1.0)
    >>> r["F"]["align_E"].shape, r["Fabs"]["eig_V"]
    ((3, 1), [-3.0, -1.0, 1.0])
    """
    x0 = init.uniform_sphere(cfg.seeds, cfg.n, 3, generator=generator).to(device)
    save = _save_grid(cfg.t1, cfg.save_every)
    out: dict[str, Any] = {"ts": save.cpu().numpy()}
    for name, B, V in _CONJ1_EXAMPLES:
        E = lt.check_assumption_1(B, V)
        F = lt.top_eigenspace(V)
        Fa = lt.top_eigenspace_abs(V)
        _, xs = simulate_betas(B, V, [cfg.beta], x0, cfg.t1, dt=cfg.dt, save_at=save)
        xs = xs[:, 0]
        out[name] = {
            "align_E": _alignment(xs, E.basis.to(xs)),
            "align_F": _alignment(xs, F.basis.to(xs)),
            "align_Fabs": _alignment(xs, Fa.basis.to(xs)),
            # distance of the final law to a law on the target subspace (its own projection onto it)
            "dist_target": {
                "F": metrics.distance_to_subspace(xs[-1], F.basis.to(xs)).pow(2).mean(-1).sqrt(),
                "Fabs": metrics.distance_to_subspace(xs[-1], Fa.basis.to(xs)).pow(2).mean(-1).sqrt(),
            },
            "eig_V": torch.linalg.eigvalsh(torch.as_tensor(V)).tolist(),
            "eig_M": torch.linalg.eigvalsh(lt.attention_value_matrix(B, V)).tolist(),
        }
    return out


@claims_for("lowtemp-conjecture1")
def conjecture1_claims(result: dict[str, Any], cfg: Conjecture1Config) -> list[ledger.Claim]:
    """Conjecture 1, both alternatives: each example ends within :data:`TOL_CONJ1` (RMS distance of
    the tokens, worst seed, floored at :data:`DIST_FLOOR`) of its target subspace.

    Examples
    --------
    >>> r = {"F": {"dist_target": {"F": np.array([1e-3]), "Fabs": np.array([1.0])}},
    ...      "Fabs": {"dist_target": {"F": np.array([1.0]), "Fabs": np.array([0.0])}}}
    >>> [c.status for c in conjecture1_claims(r, Conjecture1Config())][:2]
    ['reproduced', 'reproduced']
    >>> swapped = {"F": r["Fabs"], "Fabs": r["F"]}  # each example ending on the other subspace
    >>> [c.status for c in conjecture1_claims(swapped, Conjecture1Config())][:2]
    ['not-reproduced', 'not-reproduced']
    """
    dF = max(float(np.max(result["F"]["dist_target"]["F"])), DIST_FLOOR)
    dA = max(float(np.max(result["Fabs"]["dist_target"]["Fabs"])), DIST_FLOOR)
    t1 = f"{cfg.t1:g}"
    return [
        ledger.Claim(
            id="B-conj1-F", paper="B", where="Conj. 1",
            statement=f"Our example (the Fig. 3 matrices, beta = {cfg.beta:g}) ends on F, the top eigenspace of V: "
                      f"RMS distance of the tokens to F at t = {t1}",
            verdict=ledger.verdict(dF, TOL_CONJ1), measured=dF, expected=f"<= {TOL_CONJ1:g}", tolerance=TOL_CONJ1,
            uncertainty=f"worst of {cfg.seeds} seeds"),
        ledger.Claim(
            id="B-conj1-Fabs", paper="B", where="Conj. 1",
            statement=f"Our example (V = diag(-1,1,-3), B = diag(-2,-1,-0.1), beta = {cfg.beta:g}) ends on F^abs, "
                      "the eigenspace of V of largest modulus",
            verdict=ledger.verdict(dA, TOL_CONJ1), measured=dA, expected=f"<= {TOL_CONJ1:g}", tolerance=TOL_CONJ1,
            uncertainty=f"worst of {cfg.seeds} seeds"),
        ledger.Claim(
            id="B-fig2-examples", paper="B", where="Fig. 2, App. C.4",
            statement="The paper's own Figure 2 and Appendix C.4 examples (their matrices were not recovered; "
                      "our own examples are the two rows above)",
            verdict=ledger.NOT_CHECKABLE),
    ]


# ----------------------------------------------------------------------------- App. C.3


@dataclasses.dataclass(frozen=True)
class GradientFlowConfig:
    """App. C.3, minimization case: ``B = -V`` with ``V = diag(v_diag)`` positive definite (so B is
    negative definite), ``seeds`` sets of ``n`` uniform tokens, eq. (1) at inverse temperature
    ``beta_small`` and eq. (3) (beta = infinity), Euler with step ``dt`` up to ``t1``, saved every
    ``save_every``.

    Examples
    --------
    >>> GradientFlowConfig().v_diag
    (0.5, 1.0, 2.0)
    """

    v_diag: tuple[float, ...] = (0.5, 1.0, 2.0)
    beta_small: float = 1.0
    seeds: int = 2
    n: int = 100
    t1: float = 15.0
    dt: float = 0.01
    save_every: float = 0.5
    seed: int = 5


def _gradient_flow_matrices(cfg: GradientFlowConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, V) = (-diag(v_diag), diag(v_diag)); ValueError unless every entry is > 0 and they are distinct."""
    v = [float(x) for x in cfg.v_diag]
    if len(v) < 2 or any(not x > 0 for x in v) or len(set(v)) != len(v):
        raise ValueError(f"v_diag must hold >= 2 distinct positive numbers, got {cfg.v_diag}")
    V = _diag(*v)
    return -V, V


def plot_gradient_flow(result: dict[str, Any], ax=None):
    """Seed-mean alignment with E and F, and |mean token|, against t, for small beta and beta = inf.

    Parameters
    ----------
    result : dict
        What :func:`gradient_flow` returns.
    ax : sequence of 2 matplotlib.axes.Axes, optional
        The panels, left to right; None opens a new figure with them.

    Returns
    -------
    ax : sequence of matplotlib.axes.Axes
        The panels drawn on: ``ax`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> len(plot_gradient_flow(gradient_flow(seeds=1, n=10, t1=1.0)))
    2
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    ts = result["ts"]
    for a, name, title in ((ax[0], "small", f"beta = {result['config']['beta_small']:g}"), (ax[1], "inf", "beta = inf (eq. 3)")):
        r = result[name]
        a.plot(ts, r["align_E"].mean(axis=-1), label="E (top of V B^T = -V^2)")
        a.plot(ts, r["align_F"].mean(axis=-1), label="F (top of V)")
        a.plot(ts, r["mean_norm"].mean(axis=-1), ":", label="|mean token| (1: one Dirac)")
        a.set(xlabel="t", ylabel="mean alignment", title=f"gradient_flow, B = -V: {title}")
        a.legend(fontsize=8)
    return ax


@experiment("lowtemp-gradient-flow", chapter="low_temperature", plot=plot_gradient_flow,
            profiles={"fast": GradientFlowConfig(), "full": GradientFlowConfig(seeds=8, n=200)},
            paper=PaperScale({"dt": 0.01},
                             note="App. C.3's B, V, n and beta (Figs. 6-9) are not recovered (NOTES B): "
                                  "V = diag(0.5, 1, 2), B = -V, beta = 1 and infinity, n = 200 (Figure 3's), T = 15, "
                                  "8 seeds."))
def gradient_flow(cfg: GradientFlowConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """App. C.3, the gradient-flow case B = -V with B negative definite: for small beta the tokens
    minimise the energy (one Dirac at v_min(B) = the top eigenvector of V, so on F); for beta =
    infinity they align with E = top of V B^T = -V^2 and stay there.

    Profiles: ``fast`` 2 seeds of 100 tokens, ``full`` 8 of 200 (see :class:`GradientFlowConfig`).

    Returns
    -------
    dict with ``ts`` (T,), ``E`` and ``F`` (the axes, as indices), and per run (``small``, ``inf``)
    ``align_E``, ``align_F`` (T, seeds) mean |P x|^2 and ``mean_norm`` (T, seeds) the norm of the
    mean token.

    Examples
    --------
    >>> r = gradient_flow(seeds=1, n=10, t1=1.0)
    >>> r["E"], r["F"], r["small"]["align_F"].shape
    (0, 2, (3, 1))
    """
    B, V = _gradient_flow_matrices(cfg)
    E = lt.check_assumption_1(B, V)
    F = lt.top_eigenspace(V)
    d = V.shape[0]
    x0 = init.uniform_sphere(cfg.seeds, cfg.n, d, generator=generator).to(device)
    save = _save_grid(cfg.t1, cfg.save_every)
    _, xs = simulate_betas(B, V, [cfg.beta_small], x0, cfg.t1, dt=cfg.dt, save_at=save)
    zt = simulate(models.ZeroTemperature(B=B, V=V), x0, cfg.t1, method="euler", dt=cfg.dt, save_at=save)
    out: dict[str, Any] = {"ts": save.cpu().numpy(), "E": int(E.basis[:, 0].abs().argmax()), "F": int(F.basis[:, 0].abs().argmax())}
    for name, X in (("small", xs[:, 0]), ("inf", zt.xs)):
        out[name] = {"align_E": _alignment(X, E.basis.to(X)), "align_F": _alignment(X, F.basis.to(X)),
                     "mean_norm": X.mean(-2).norm(dim=-1)}
    return out


@claims_for("lowtemp-gradient-flow")
def gradient_flow_claims(result: dict[str, Any], cfg: GradientFlowConfig) -> list[ledger.Claim]:
    """App. C.3 (B = -V negative definite): at small beta every seed ends as one Dirac on F (|mean
    token| and mean |P_F x|^2 within :data:`TOL_C3` of 1); at beta = infinity on E (mean |P_E x|^2
    within :data:`TOL_C3` of 1), with no terminal phase.

    Examples
    --------
    >>> one = {"align_E": np.array([[0.3], [0.0]]), "align_F": np.array([[0.3], [1.0]]), "mean_norm": np.array([[0.1], [1.0]])}
    >>> on_E = {"align_E": np.array([[0.3], [1.0]]), "align_F": np.array([[0.3], [0.0]]), "mean_norm": np.array([[0.1], [0.05]])}
    >>> [c.status for c in gradient_flow_claims({"small": one, "inf": on_E}, GradientFlowConfig())]
    ['reproduced', 'reproduced']
    >>> [c.status for c in gradient_flow_claims({"small": on_E, "inf": one}, GradientFlowConfig())]
    ['not-reproduced', 'not-reproduced']
    """
    small, inf = result["small"], result["inf"]
    one_dirac = float(min(np.min(small["mean_norm"][-1]), np.min(small["align_F"][-1])))
    on_E = float(np.min(inf["align_E"][-1]))
    v = ", ".join(f"{x:g}" for x in cfg.v_diag)
    return [
        ledger.Claim(
            id="B-appC3-min-small-beta", paper="B", where="App. C.3 (minimization case, Fig. 8)",
            statement=f"B = -V negative definite (our V = diag({v})), beta = {cfg.beta_small:g}: the tokens reach the "
                      "energetically optimal state, one Dirac at v_min(B) = top eigenvector of V (min over seeds of "
                      f"|mean token| and mean |P_F x|^2 at t = {cfg.t1:g})",
            verdict=ledger.verdict(1.0 - one_dirac, TOL_C3), measured=one_dirac, expected=1.0, tolerance=TOL_C3,
            uncertainty=f"worst of {cfg.seeds} seeds"),
        ledger.Claim(
            id="B-appC3-min-zero-temp", paper="B", where="App. C.3 (minimization case, Fig. 8)",
            statement=f"Same matrices, beta = infinity (Algorithm 2): the tokens only align with E (top of V B^T = -V^2), "
                      f"no alignment with F follows (min over seeds of mean |P_E x|^2 at t = {cfg.t1:g})",
            verdict=ledger.verdict(1.0 - on_E, TOL_C3), measured=on_E, expected=1.0, tolerance=TOL_C3,
            uncertainty=f"worst of {cfg.seeds} seeds"),
    ]


# ----------------------------------------------------------------------------- Lemma 5

# Lemma 5's setting is ours (the lemma's formula is lost): a non-orthogonal invertible B, and a law
# with a positive density (Assumption 3), half uniform and two von Mises-Fisher bumps, whose softmax
# mean also has a closed form (theory.low_temperature.vmf_mixture_softmax_mean) against which the
# quadrature is checked.
LAPLACE_B = torch.tensor([[1.0, 0.4, 0.0], [0.0, 0.8, 0.3], [0.2, 0.0, 1.5]], dtype=torch.float64)
LAPLACE_WEIGHTS = (0.5, 0.3, 0.2)
LAPLACE_CENTRES = ((0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, -0.6, 0.8))
LAPLACE_KAPPAS = (0.0, 4.0, 8.0)
# Without Assumption 3 (a cap cut out around y*(x)) the error at the largest beta must sit within
# TOL_HOLE (relative) of its limit 1 - cos r: at beta = 1e4 the closed form is 0.2 % above the limit.
TOL_HOLE = 0.05


@dataclasses.dataclass(frozen=True)
class LaplaceConfig:
    """Lemma 5: the softmax mean of a law on S^2 against the maximiser y*(x) = B^T x / |B^T x| for
    every inverse temperature of ``betas``, at ``tokens`` uniform directions x (``LAPLACE_B``), by a
    quadrature with ``nodes`` Gauss-Legendre points per interval in ``u = 1 - cos theta`` and
    ``azimuths`` points in the angle; the law without Assumption 3 has a cap of angular radius
    ``hole_radius`` removed around y*(x) of the first token.

    Examples
    --------
    >>> LaplaceConfig().betas[-1], LaplaceConfig().hole_radius
    (10000.0, 0.3)
    """

    betas: tuple[float, ...] = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0)
    tokens: int = 8
    hole_radius: float = 0.3
    nodes: int = 16
    azimuths: int = 64
    seed: int = 6


def _laplace_density(Y: torch.Tensor) -> torch.Tensor:
    return lt.vmf_mixture_density(Y, LAPLACE_WEIGHTS, LAPLACE_CENTRES, LAPLACE_KAPPAS)


def plot_laplace(result: dict[str, Any], ax=None):
    """log-log: the worst token's |m_beta(x) - y*(x)| against beta, Lemma 5's rate, the leading term
    1/beta, and the law with a hole levelling off at 1 - cos r.

    Parameters
    ----------
    result : dict
        What :func:`laplace` returns.
    ax : matplotlib.axes.Axes, optional
        The axes to draw on; None opens a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> len(plot_laplace(laplace(betas=(1.0, 10.0), tokens=2)).get_lines())
    5
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.8))
    b = result["betas"]
    ax.loglog(b, result["err_max"], "o-", label=r"positive density: $\max_x |m_\beta(x) - y^*(x)|$")
    ax.loglog(b, result["leading_max"], "k:", label=r"leading term $\sqrt{1+|\nabla\log f|^2}/(\beta|B^\top x|)$")
    scale = result["err_max"][0] / result["rate"][0]
    ax.loglog(b, scale * result["rate"], "k--", label=r"$\propto\sqrt{\log(\beta+1)/\beta}$ (Lemma 5's rate)")
    ax.loglog(b, result["hole_err"], "s-", color="C3", label="cap of radius r cut out around y* (no Assumption 3)")
    ax.axhline(result["hole_limit"], color="C3", lw=0.8, ls="--")
    ax.set(xlabel=r"$\beta$", ylabel="distance to the maximiser", title="laplace: softmax mean vs y*(x)")
    ax.legend(fontsize=7)
    return ax


@experiment("lowtemp-laplace", chapter="low_temperature", plot=plot_laplace,
            profiles={"fast": LaplaceConfig(), "full": LaplaceConfig(tokens=64)},
            paper=PaperScale({}, note="Lemma 5 is a bound with no experiment and its formula is lost (NOTES B): "
                                      "our B and positive density on S^2, beta from 1 to 1e4, 8 token directions "
                                      "(64 in full), quadrature checked against closed forms."))
def laplace(cfg: LaplaceConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Lemma 5: the softmax mean approaches the maximiser y*(x) as beta grows, for a positive density.

    A quadrature on S^2 (:func:`companion.theory.low_temperature.softmax_mean_quadrature`) of
    ``m_beta(x) = int y e^{beta <x, B y>} drho / int e^{beta <x, B y>} drho``. ``device`` is accepted
    but not used: a few hundred thousand quadrature nodes in float64 per beta, done on the CPU.

    Returns
    -------
    dict with ``betas`` (K,), ``err`` (K, tokens) = |m_beta(x) - y*(x)|, ``err_max`` (K,),
    ``quad_vs_closed`` (max |quadrature - closed form| over all), ``leading`` (K, tokens) the derived
    leading term and ``leading_max`` (K,), ``rate`` (K,) = sqrt(log(beta+1)/beta), ``fit_rate``
    (log err_max against log rate), ``exponent`` (err_max ~ beta^-exponent over beta >= 100),
    ``hole_err`` (K,) and ``hole_closed`` (K,) for the law with a hole, ``hole_limit`` = 1 - cos r,
    ``density_min`` (a lower bound of the density, Assumption 3's l_0).

    Examples
    --------
    >>> r = laplace(betas=(10.0, 1000.0), tokens=2)
    >>> r["err"].shape, bool(r["quad_vs_closed"] < 1e-12), bool(r["err_max"][1] < r["err_max"][0])
    ((2, 2), True, True)
    """
    x = init.uniform_sphere(1, cfg.tokens, 3, generator=generator)[0]
    ystar = lt.maximiser(x, LAPLACE_B)
    Yg = ystar.clone().requires_grad_(True)  # grad log f at y*, for the leading term
    torch.log(_laplace_density(Yg)).sum().backward()
    grad = Yg.grad.detach()
    err, lead, closed = [], [], []
    for b in cfg.betas:
        m = lt.softmax_mean_quadrature(x, LAPLACE_B, b, _laplace_density, nodes=cfg.nodes, azimuths=cfg.azimuths)
        mc = lt.vmf_mixture_softmax_mean(x, LAPLACE_B, b, LAPLACE_WEIGHTS, LAPLACE_CENTRES, LAPLACE_KAPPAS)
        closed.append(float((m - mc).abs().max()))
        err.append((m - ystar).norm(dim=-1))
        lead.append(lt.laplace_leading_error(x, LAPLACE_B, b, grad))
    err, lead = torch.stack(err).numpy(), torch.stack(lead).numpy()
    betas = np.asarray(cfg.betas, dtype=float)
    rate = lt.concentration_rate(torch.tensor(betas, dtype=_F64)).numpy()
    err_max = err.max(axis=1)
    tail = betas >= 100
    # the law without Assumption 3: a cap of radius r cut out around y*(x_0)
    r0 = float(cfg.hole_radius)
    u0 = 1 - math.cos(r0)
    hole = lambda Y: lt.capped_uniform_density(Y, ystar[0], r0)  # noqa: E731
    kappa0 = float((x[0] @ LAPLACE_B).norm())
    hole_err = np.array([float((lt.softmax_mean_quadrature(x[:1], LAPLACE_B, b, hole, nodes=cfg.nodes, azimuths=cfg.azimuths,
                                                           breaks=[u0]) - ystar[:1]).norm()) for b in cfg.betas])
    # l_0 >= sum_k w_k (density of component k at its antipode, its minimum)
    lower = sum(w * float(lt.vmf_mixture_density(-torch.tensor(c, dtype=_F64), [1.0], [c], [k]))
                for w, c, k in zip(LAPLACE_WEIGHTS, LAPLACE_CENTRES, LAPLACE_KAPPAS))
    return {
        "betas": betas,
        "err": err,
        "err_max": err_max,
        "quad_vs_closed": max(closed),
        "leading": lead,
        "leading_max": lead.max(axis=1),
        "rate": rate,
        "fit_rate": fits.line_fit(np.log(rate), np.log(err_max)),
        "exponent": -fits.line_fit(np.log(betas[tail]), np.log(err_max[tail]))["slope"] if tail.sum() >= 2 else float("nan"),
        "hole_err": hole_err,
        "hole_closed": lt.capped_uniform_softmax_error(torch.tensor(kappa0 * betas), r0).numpy(),
        "hole_limit": u0,
        "density_min": lower,
    }


@claims_for("lowtemp-laplace")
def laplace_claims(result: dict[str, Any], cfg: LaplaceConfig) -> list[ledger.Claim]:
    """Lemma 5: for the positive density the worst token's error decays at least like
    sqrt(log(beta+1)/beta) (log-log slope against the rate at least :data:`RATE_SLOPE`, within
    :data:`RATE_SLOPE_TOL`, on a line: R^2 at least :data:`RATE_R2`); without Assumption 3 the error
    stays at its limit 1 - cos r (within :data:`TOL_HOLE`, relative, at the largest beta).

    Examples
    --------
    >>> r = {"fit_rate": {"slope": 2.0, "r2": 0.99}, "exponent": 1.0, "err_max": np.array([0.5, 1e-4]),
    ...      "leading_max": np.array([0.4, 1e-4]), "quad_vs_closed": 1e-16, "hole_err": np.array([0.6, 0.0448]),
    ...      "hole_limit": 0.0447}
    >>> [c.status for c in laplace_claims(r, LaplaceConfig())]
    ['reproduced', 'reproduced']
    >>> bad = dict(r, fit_rate={"slope": 0.1, "r2": 0.99}, hole_err=np.array([0.6, 1e-4]))  # a law with no hole
    >>> [c.status for c in laplace_claims(bad, LaplaceConfig())]
    ['not-reproduced', 'not-reproduced']
    """
    s, r2 = float(result["fit_rate"]["slope"]), float(result["fit_rate"]["r2"])
    floor = RATE_SLOPE - RATE_SLOPE_TOL
    err_last, lead_last = float(result["err_max"][-1]), float(result["leading_max"][-1])
    hole, limit = float(result["hole_err"][-1]), float(result["hole_limit"])
    bmax = f"{cfg.betas[-1]:g}"
    return [
        ledger.Claim(
            id="B-lemma5-laplace-rate", paper="B", where="Lemma 5, Sec. 4.1",
            statement="Quantitative Laplace principle on S^2: for a law with a positive density (ours: half uniform, two "
                      "von Mises-Fisher bumps) the softmax mean approaches y*(x) = B^T x / |B^T x| at least like "
                      f"sqrt(log(beta+1)/beta) (worst of {cfg.tokens} directions x, beta from {cfg.betas[0]:g} to {bmax}; "
                      "log-log slope against the rate >= 1)",
            verdict=ledger.verdict(s, floor, better="higher", scale=RATE_SLOPE_TOL) if r2 >= RATE_R2 else ledger.verdict(False),
            measured={"slope_vs_rate": s, "r2": r2, "exponent_beta": float(result["exponent"]),
                      f"err_at_beta_{bmax}": err_last, "err_over_leading_term": err_last / lead_last,
                      "quadrature_vs_closed_form": float(result["quad_vs_closed"])},
            expected=f"slope >= {RATE_SLOPE:g}", tolerance=RATE_SLOPE_TOL),
        ledger.Claim(
            id="B-lemma5-assumption3-needed", paper="B", where="Lemma 5, Sec. 2 (Assumption 3)",
            statement=f"Without Assumption 3 the softmax field is a poor approximation of the zero-temperature one even for "
                      f"large beta: with a cap of radius {cfg.hole_radius:g} cut out around y*(x) the error at beta = {bmax} "
                      "stays at its limit 1 - cos r",
            verdict=ledger.verdict(abs(hole / limit - 1), TOL_HOLE), measured=hole, expected=limit, tolerance=TOL_HOLE),
    ]


# ----------------------------------------------------------------------------- App. C.3, Figs. 6, 7, 9

# App. C.3's verdict thresholds. "Aligned with E": mean |P_E x|^2 >= 1 - ALIGN_TOL (a spread of the
# tokens of about 13 degrees RMS around +-v) ...
ALIGN_TOL = 0.05
# ... "one Dirac" (the energy-optimal state of Fig. 6): the energy ratio within ENERGY_TOL of 1 ...
ENERGY_TOL = 0.01
# ... "at Pi_# rho_0's energy": the ratio within ENERGY_PI_TOL of E(Pi_# rho_0) / E(rho_opt) ...
ENERGY_PI_TOL = 0.05
# ... "closer to Pi_# rho_0": W2 at the largest beta at most W2_CONTRAST times W2 at the smallest ...
W2_CONTRAST = 0.5
# ... "converges to Pi_# rho_0": at most SWITCH_TOL of the tokens end on the other pole than Pi sends
# them to (once aligned, W2(mu_t, Pi_# mu_0) = 2 sqrt(switched fraction): 2 % is W2 <= 0.28, against
# about 1 at t = 0; 2 of 100 tokens) ...
SWITCH_TOL = 0.02
# ... and "energetically optimal" (Fig. 7): the energy ratio at least 1 - OPT_TOL (at finite n the
# two poles hold q_+ != 1/2 of the tokens and the ratio tends to 1 - (q_+ - q_-)^2, derived).
OPT_TOL = 0.05


@dataclasses.dataclass(frozen=True)
class GradientFlowBetaConfig:
    """App. C.3, Figures 6, 7 and 9: the gradient-flow cases over the inverse temperatures ``betas``,
    from the same ``seeds`` sets of ``n`` uniform tokens on S^2, Euler with step ``dt`` up to ``t1``,
    saved every ``save_every``. Fig. 6: ``B = V = diag(pd_diag)`` (positive definite, energy
    maximised); Fig. 7: ``B = V = diag(nsd_diag)`` (negative semi-definite); Fig. 9: ``B =
    diag(pd_diag)``, ``V = -B`` (energy minimised). The claims read the first beta as "small" and the
    last as "large".

    Examples
    --------
    >>> GradientFlowBetaConfig().betas, GradientFlowBetaConfig().nsd_diag
    ((0.1, 1.0, 10.0, 100.0), (0.0, -1.0, -2.0))
    """

    betas: tuple[float, ...] = (0.1, 1.0, 10.0, 100.0)
    pd_diag: tuple[float, ...] = (0.5, 1.0, 2.0)
    nsd_diag: tuple[float, ...] = (0.0, -1.0, -2.0)
    seeds: int = 2
    n: int = 100
    t1: float = 30.0
    dt: float = 0.01
    save_every: float = 1.0
    seed: int = 7


def _c3_cases(cfg: GradientFlowBetaConfig) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(name, B, V) of Figures 6, 7 and 9; ValueError unless pd_diag > 0, nsd_diag <= 0, both distinct."""
    pd, nsd = [float(v) for v in cfg.pd_diag], [float(v) for v in cfg.nsd_diag]
    if len(pd) < 2 or any(not v > 0 for v in pd) or len(set(pd)) != len(pd):
        raise ValueError(f"pd_diag must hold >= 2 distinct positive numbers, got {cfg.pd_diag}")
    if len(nsd) != len(pd) or any(v > 0 for v in nsd) or len(set(abs(v) for v in nsd)) != len(nsd):
        raise ValueError(f"nsd_diag must hold {len(pd)} numbers <= 0 of distinct moduli, got {cfg.nsd_diag}")
    P, N = _diag(*pd), _diag(*nsd)
    return [("fig6", P, P), ("fig7", N, N), ("fig9", P, -P)]


def plot_gradient_flow_beta(result: dict[str, Any], ax=None):
    """Top row: W_2(mu_t, Pi_# mu_0) per beta (seed mean), one panel per figure; bottom row: the
    energy ratio E_B(mu_t) / E_B(rho_opt) (Figs. 6, 7) and the alignment with E (Fig. 9).

    Parameters
    ----------
    result : dict
        What :func:`gradient_flow_beta` returns.
    ax : (2, 3) array of matplotlib.axes.Axes, optional
        The panels, one column per figure; None opens a new figure with them.

    Returns
    -------
    (2, 3) array of matplotlib.axes.Axes
        The panels drawn on: ``ax`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> plot_gradient_flow_beta(gradient_flow_beta(betas=(0.1, 10.0), seeds=1, n=10, t1=1.0)).shape
    (2, 3)
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(2, 3, figsize=(12, 6), sharex=True)
    ts = result["ts"]
    titles = {"fig6": "Fig. 6: B = V > 0", "fig7": "Fig. 7: B = V <= 0", "fig9": "Fig. 9: B = -V > 0"}
    for j, name in enumerate(("fig6", "fig7", "fig9")):
        r = result[name]
        for k, b in enumerate(result["betas"]):
            ax[0, j].plot(ts, r["w2"][:, k].mean(-1), color=f"C{k}", label=f"beta = {b:g}")
            if r["energy_ratio"] is not None:
                ax[1, j].plot(ts, r["energy_ratio"][:, k].mean(-1), color=f"C{k}")
            else:
                ax[1, j].plot(ts, r["align"][:, k].mean(-1), color=f"C{k}")
        ax[0, j].set(ylabel=r"$W_2(\mu_t, \Pi_\sharp\mu_0)$", title=f"gradient_flow_beta, {titles[name]}")
        ax[1, j].set(xlabel="t", ylabel=r"$\mathcal{E}_B(\mu_t)/\mathcal{E}_B(\rho^{opt})$" if r["energy_ratio"] is not None
                     else r"mean $|P_E x|^2$")
        ax[0, j].legend(fontsize=7)
    return ax


@experiment("lowtemp-gradient-flow-beta", chapter="low_temperature", plot=plot_gradient_flow_beta,
            profiles={"fast": GradientFlowBetaConfig(),
                      "full": GradientFlowBetaConfig(betas=(0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0), seeds=8, n=400)},
            paper=PaperScale({"dt": 0.01},
                             note="App. C.3's matrices, n, betas and horizon (Figs. 6, 7, 9) are not recovered "
                                  "(NOTES B): diag(0.5, 1, 2) and diag(0, -1, -2), beta from 0.1 to 100, T = 30, "
                                  "n = 400 and 8 seeds in full (100 and 2 in fast)."))
def gradient_flow_beta(cfg: GradientFlowBetaConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """App. C.3, Figures 6, 7, 9: the gradient-flow cases B = V (positive definite, negative
    semi-definite) and B = -V (B positive definite) over beta: W2 to Pi_# rho_0, alignment with E and
    the energy ratio.

    Profiles: ``fast`` 4 betas, 2 seeds of 100 tokens; ``full`` 7 betas, 8 seeds of 400 (see
    :class:`GradientFlowBetaConfig`).

    Returns
    -------
    dict with ``ts`` (T,), ``betas`` (K,) and per figure (``fig6``, ``fig7``, ``fig9``): ``w2``, ``align``
    (T, K, seeds) = W_2(mu_t, Pi_# mu_0) and mean |P_E x|^2, ``energy_ratio`` (T, K, seeds) =
    E_B(mu_t) / E_B(rho_opt) (None for Fig. 9, whose optimum is not known), ``pi_energy_ratio`` (K,
    seeds) the ratio of Pi_# mu_0 itself, ``p_plus`` (seeds,) its mass at +v, ``switched`` (K, seeds)
    the fraction of tokens on the other pole than Pi sends them to at t1, ``lam_v`` the eigenvalue of
    B at v (E = span(v)) and ``eig_B``.

    Examples
    --------
    >>> r = gradient_flow_beta(betas=(0.1, 10.0), seeds=1, n=10, t1=1.0)
    >>> r["fig6"]["w2"].shape, r["fig9"]["energy_ratio"] is None
    ((2, 2, 1), True)
    """
    cases = _c3_cases(cfg)
    x0 = init.uniform_sphere(cfg.seeds, cfg.n, len(cfg.pd_diag), generator=generator).to(device)
    save = _save_grid(cfg.t1, cfg.save_every)
    out: dict[str, Any] = {"ts": save.cpu().numpy(), "betas": np.asarray(cfg.betas, dtype=float)}
    for name, B, V in cases:
        E = lt.top_eigenspace(lt.attention_value_matrix(B, V))  # A1 fails for Fig. 7 (B singular): E from M itself
        if E.dim != 1:
            raise ValueError(f"{name}: the top eigenspace of V B^T must be one-dimensional, got dim {E.dim}")
        v = E.basis[:, 0].to(x0)
        lam_v = float(v.cpu() @ B @ v.cpu())
        _, xs = simulate_betas(B, V, cfg.betas, x0, cfg.t1, dt=cfg.dt, save_at=save)  # (T, K, S, n, d)
        K = len(cfg.betas)
        w2 = torch.stack([torch.stack([lt.wasserstein_to_pi(x, x0, v) for x in xs[:, k]]) for k in range(K)], 1)
        align = ((xs @ v) ** 2).mean(-1).cpu()
        p_plus = ((x0 @ v) > 0).double().mean(-1).cpu()
        switched = ((xs[-1] @ v > 0) != (x0 @ v > 0)[None]).double().mean(-1).cpu()
        ratio = pi_ratio = None
        if name != "fig9":  # App. C.3's optimal states: one Dirac at v (Fig. 6), (delta_v + delta_-v)/2 (Fig. 7)
            q_opt = 1.0 if name == "fig6" else 0.5
            log_opt = torch.stack([lt.log_two_pole_energy(torch.tensor(q_opt, dtype=_F64), lam_v, b) for b in cfg.betas])  # (K,)
            logE = torch.stack([torch.stack([lt.log_energy(x, B, b) for x in xs[:, k]]) for k, b in enumerate(cfg.betas)], 1).cpu()
            ratio = torch.exp(logE - log_opt[None, :, None])
            pi_ratio = torch.stack([torch.exp(lt.log_two_pole_energy(p_plus, lam_v, b) - log_opt[k]) for k, b in enumerate(cfg.betas)])
        out[name] = {"w2": w2, "align": align, "energy_ratio": ratio, "pi_energy_ratio": pi_ratio, "p_plus": p_plus,
                     "switched": switched, "lam_v": lam_v, "eig_B": torch.linalg.eigvalsh(B).tolist()}
    return out


@claims_for("lowtemp-gradient-flow-beta")
def gradient_flow_beta_claims(result: dict[str, Any], cfg: GradientFlowBetaConfig) -> list[ledger.Claim]:
    """App. C.3 at t1, the first beta read as small and the last as large (worst seed throughout).
    Fig. 6: one Dirac at small beta (energy ratio within :data:`ENERGY_TOL` of 1); at large beta
    aligned with E (:data:`ALIGN_TOL`), at the energy of Pi_# rho_0 (:data:`ENERGY_PI_TOL`) and closer
    to it (W2 ratio at most :data:`W2_CONTRAST`). Fig. 7: aligned with E at every beta, and at most
    :data:`SWITCH_TOL` of the tokens on the other pole (else partly); energy ratio at least 1 -
    :data:`OPT_TOL` at large beta. Fig. 9: aligned at large beta, not at small beta, W2 ratio at most
    :data:`W2_CONTRAST`.

    Examples
    --------
    >>> one = lambda *v: np.array(v, dtype=float)[None, :, None]  # (T = 1, K, seeds = 1)
    >>> f6 = {"w2": one(1.4, 0.1), "align": one(1.0, 1.0), "energy_ratio": one(1.0, 0.5),
    ...       "pi_energy_ratio": np.array([[1.0], [0.5]]), "switched": np.zeros((2, 1))}
    >>> f7 = {"w2": one(0.1, 0.0), "align": one(1.0, 1.0), "energy_ratio": one(0.99, 0.99), "switched": np.zeros((2, 1))}
    >>> f9 = {"w2": one(0.8, 0.1), "align": one(0.6, 0.99), "energy_ratio": None, "switched": np.zeros((2, 1))}
    >>> cfg = GradientFlowBetaConfig(betas=(0.1, 100.0))
    >>> [c.status for c in gradient_flow_beta_claims({"fig6": f6, "fig7": f7, "fig9": f9}, cfg)]
    ['reproduced', 'reproduced', 'reproduced', 'reproduced', 'reproduced']
    >>> swapped = {"fig6": f9 | {"energy_ratio": one(0.5, 0.5), "pi_energy_ratio": np.ones((2, 1))}, "fig7": f9 | {"energy_ratio": one(0.5, 0.5)}, "fig9": f6}
    >>> [c.status for c in gradient_flow_beta_claims(swapped, cfg)]
    ['not-reproduced', 'not-reproduced', 'not-reproduced', 'not-reproduced', 'not-reproduced']
    """
    f6, f7, f9 = result["fig6"], result["fig7"], result["fig9"]
    bs, bl = f"{cfg.betas[0]:g}", f"{cfg.betas[-1]:g}"
    last = lambda a: np.asarray(a)[-1]  # noqa: E731  (K, seeds) at t1
    w2ratio = lambda r: float(last(r["w2"])[-1].mean() / max(last(r["w2"])[0].mean(), 1e-300))  # noqa: E731
    where = f"t = {cfg.t1:g}, worst of {cfg.seeds} seeds"
    # Fig. 6
    dirac = float(last(f6["energy_ratio"])[0].min())
    al6 = float(last(f6["align"])[-1].min())
    e6 = float(np.max(np.abs(last(f6["energy_ratio"])[-1] - np.asarray(f6["pi_energy_ratio"])[-1])))
    c6 = w2ratio(f6)
    # Fig. 7
    al7 = float(last(f7["align"]).min())
    sw7 = float(np.max(f7["switched"]))
    opt7 = float(last(f7["energy_ratio"])[-1].min())
    # Fig. 9
    al9_l, al9_s = float(last(f9["align"])[-1].min()), float(last(f9["align"])[0].max())
    c9 = w2ratio(f9)
    return [
        ledger.Claim(
            id="B-fig6-max-small-beta-dirac", paper="B", where="App. C.3, Fig. 6",
            statement=f"B = V positive definite (ours: diag{tuple(cfg.pd_diag)}), beta = {bs}: the tokens reach the "
                      f"energy-optimal state, one Dirac at +-v_max(B) (min energy ratio E_B(mu_t)/E_B(delta_v), {where})",
            verdict=ledger.verdict(1.0 - dirac, ENERGY_TOL), measured=dirac, expected=1.0, tolerance=ENERGY_TOL),
        ledger.Claim(
            id="B-fig6-max-large-beta-near-pi", paper="B", where="App. C.3, Fig. 6",
            statement=f"Same matrices, beta = {bl}: the tokens stay near Pi_# rho_0 at suboptimal energy: aligned with E, at "
                      f"the energy ratio of Pi_# rho_0 itself (derived: q_+^2 + q_-^2 + 2 q_+ q_- e^(-2 beta lambda)), and W2 to "
                      f"Pi_# rho_0 at most {W2_CONTRAST:g} times that at beta = {bs} ({where})",
            verdict=ledger.worst(ledger.verdict(1.0 - al6, ALIGN_TOL), ledger.verdict(e6, ENERGY_PI_TOL),
                                 ledger.verdict(c6, W2_CONTRAST)),
            measured={"min_alignment": al6, "energy_ratio_minus_pi": e6, "w2_ratio_large_small": c6},
            expected={"alignment": f">= {1 - ALIGN_TOL:g}", "energy": f"within {ENERGY_PI_TOL:g}", "w2_ratio": f"<= {W2_CONTRAST:g}"}),
        ledger.Claim(
            id="B-fig7-nsd-pi-every-beta", paper="B", where="App. C.3, Fig. 7",
            statement=f"B = V negative semi-definite (ours: diag{tuple(cfg.nsd_diag)}): convergence towards Pi_# rho_0 even "
                      f"for small beta: aligned with E at every beta from {bs} to {bl} (needed), and at most {SWITCH_TOL:g} of "
                      f"the tokens on the other pole than Pi sends them to (else partly) ({where})",
            verdict=ledger.graded([ledger.verdict(1.0 - al7, ALIGN_TOL)], [ledger.verdict(sw7, SWITCH_TOL)]),
            measured={"min_alignment": al7, "max_switched_fraction": sw7},
            expected={"alignment": f">= {1 - ALIGN_TOL:g}", "switched": f"<= {SWITCH_TOL:g}"}),
        ledger.Claim(
            id="B-fig7-nsd-large-beta-optimal", paper="B", where="App. C.3, Fig. 7",
            statement=f"Same matrices, beta = {bl}: the tokens reach an energetically optimal state (min energy ratio "
                      f"E_B(mu_t) / E_B((delta_v + delta_-v)/2); its finite-n shortfall is (q_+ - q_-)^2, derived) ({where})",
            verdict=ledger.verdict(1.0 - opt7, OPT_TOL), measured=opt7, expected=f">= {1 - OPT_TOL:g}", tolerance=OPT_TOL),
        ledger.Claim(
            id="B-fig9-min-pd-large-beta-only", paper="B", where="App. C.3, Fig. 9",
            statement=f"B = -V, B positive definite (ours: diag{tuple(cfg.pd_diag)}): alignment with E and W2 convergence to "
                      f"Pi_# rho_0 only for larger beta: aligned at beta = {bl}, not aligned at beta = {bs}, and W2 at most "
                      f"{W2_CONTRAST:g} times that at beta = {bs} ({where})",
            verdict=ledger.worst(ledger.verdict(1.0 - al9_l, ALIGN_TOL), ledger.verdict(1.0 - al9_s, ALIGN_TOL, better="higher"),
                                 ledger.verdict(c9, W2_CONTRAST)),
            measured={"alignment_large_beta": al9_l, "alignment_small_beta": al9_s, "w2_ratio_large_small": c9},
            expected={"alignment_large": f">= {1 - ALIGN_TOL:g}", "alignment_small": f"< {1 - ALIGN_TOL:g}",
                      "w2_ratio": f"<= {W2_CONTRAST:g}"}),
    ]


# ----------------------------------------------------------------------------- App. B

# App. B: the field at delta_v and at n_+/n delta_v + n_-/n delta_-v (v an eigenvector of V) is
# P_v(lambda v) = 0 in exact arithmetic: anything above TOL_STATIONARY (far above float64 rounding of
# O(1) numbers, far below the field at a non-eigenvector) is a violation.
TOL_STATIONARY = 1e-12
# The measured growth rates of a perturbed consensus against the linearisation
# (theory.low_temperature.consensus_growth_rates): Euler with dt = 0.01 shifts a rate r by about
# r^2 dt / 2 (1.5 % at r = 3), so 5 % relative.
TOL_CONSENSUS_RATE = 0.05


@dataclasses.dataclass(frozen=True)
class EigenConsensusConfig:
    """App. B: with the Figure 3 value matrix V and a random B (``G + 2 I``, G Gaussian, drawn from the
    seed), the consensus ``delta_v`` and the bipartite ``n_plus`` tokens at v, ``n - n_plus`` at -v,
    for every eigenvector v of V, at every beta of ``betas``; then each consensus perturbed by
    tangent noise of size ``eps``, Euler with step ``dt`` up to ``t1`` (saved every ``save_every``),
    growth rates fitted over ``window``.

    Examples
    --------
    >>> EigenConsensusConfig().n, EigenConsensusConfig().n_plus
    (20, 13)
    """

    n: int = 20
    n_plus: int = 13
    betas: tuple[float, ...] = (1.0, 100.0)
    eps: float = 1e-9
    t1: float = 3.0
    window: tuple[float, float] = (0.5, 3.0)
    dt: float = 0.01
    save_every: float = 0.25
    seed: int = 8


def plot_eigen_consensus(result: dict[str, Any], ax=None):
    """Measured growth rates of a perturbed consensus on each eigenvector of V (markers) against the
    linearisation (lines), for every beta.

    Parameters
    ----------
    result : dict
        What :func:`eigen_consensus` returns.
    ax : matplotlib.axes.Axes, optional
        The axes to draw on; None opens a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> r = eigen_consensus(n=6, n_plus=4, t1=1.0, window=(0.25, 1.0))
    >>> len(plot_eigen_consensus(r).get_lines()) > 0
    True
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.8))
    lam = result["lam"]
    for i in range(len(lam)):
        pred = [result["predicted_spread"][i], *result["predicted_modes"][i]]
        ax.hlines(pred, i - 0.3, i + 0.3, color="k", lw=1)
        for k, b in enumerate(result["betas"]):
            meas = [result["spread_rate"][k, i], *result["mode_rates"][k, i]]
            ax.plot([i - 0.1 + 0.2 * k] * len(meas), meas, "o", ms=4, color=f"C{k}", label=f"beta = {b:g}" if i == 0 else None)
    ax.axhline(0, color="C3", lw=0.8, ls="--")
    ax.set_xticks(range(len(lam)), [f"v: lambda = {v:g}" for v in lam])
    ax.set(ylabel="growth rate of the perturbation", title="eigen_consensus: lines = linearisation")
    ax.legend(fontsize=8)
    return ax


@experiment("lowtemp-eigen-consensus", chapter="low_temperature", plot=plot_eigen_consensus,
            profiles={"fast": EigenConsensusConfig(), "full": EigenConsensusConfig(n=200, n_plus=120, betas=(1.0, 10.0, 100.0, 1000.0))},
            paper=PaperScale({"dt": 0.01},
                             note="App. B states its stationary laws for any n and cites Altafini's stability theorem; it "
                                  "gives no sizes: the Figure 3 V, a random B, n = 20 (200 in full), beta = 1 and 100."))
def eigen_consensus(cfg: EigenConsensusConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """App. B: delta_v and the bipartite n_+ delta_v + n_- delta_-v are stationary for eigenvectors v of V;
    consensus on the top eigenvector is stable, on the others unstable (particle model, eq. 1).

    Returns
    -------
    dict with ``lam`` (eigenvalues of V, ascending), ``betas`` (K,), ``field`` (K, d, 2) the largest
    |field| at the consensus and the bipartite state of each eigenvector, ``drift`` (K, d, 2) the
    largest |x(t1) - x(0)| of a run from them, ``field_non_eigen`` (K, 2) the same field at a
    non-eigenvector (the failure case), ``spread_rate`` (K, d) and ``mode_rates`` (K, d, d - 1) the
    fitted growth rates of the perturbed consensus on each eigenvector, ``predicted_spread`` (d,) and
    ``predicted_modes`` (d, d - 1) from the linearisation, ``top`` (the index of the top eigenvector).

    Examples
    --------
    >>> r = eigen_consensus(n=6, n_plus=4, t1=1.0, window=(0.25, 1.0))
    >>> bool(r["field"].max() < 1e-12), bool(r["field_non_eigen"].min() > 0.1), r["top"]
    (True, True, 2)
    """
    n, n_plus = int(cfg.n), int(cfg.n_plus)
    if not 0 < n_plus < n:
        raise ValueError(f"n_plus must lie strictly between 0 and n = {n}, got {n_plus}")
    V = FIG3_V
    d = V.shape[0]
    B = torch.randn(d, d, generator=generator, dtype=_F64) + 2 * torch.eye(d, dtype=_F64)
    noise = torch.randn(d, n, d, generator=generator, dtype=_F64)
    lam, U = torch.linalg.eigh(V)
    signs = torch.tensor([1.0] * n_plus + [-1.0] * (n - n_plus), dtype=_F64)[:, None]

    def states(u: torch.Tensor) -> torch.Tensor:  # (2, n, d): delta_u and the bipartite state on +-u
        return torch.stack([u.expand(n, d), signs * u])

    u_bad = (U[:, 0] + U[:, -1]) / math.sqrt(2)
    X = torch.cat([states(U[:, i]) for i in range(d)]).to(device)  # (2 d, n, d)
    field, drift, bad = [], [], []
    for b in cfg.betas:
        model = models.low_temperature(B, V, b)
        field.append(model.vector_field(0.0, X).norm(dim=-1).amax(-1).reshape(d, 2))
        sol = simulate(model, X, cfg.t1, method="euler", dt=cfg.dt)
        drift.append((sol.final - X).norm(dim=-1).amax(-1).reshape(d, 2))
        bad.append(model.vector_field(0.0, states(u_bad).to(device)).norm(dim=-1).amax(-1))
    # the perturbed consensus on every eigenvector: x_i = N(v + eps P_v g_i)
    P = torch.eye(d, dtype=_F64)[None] - U.T[:, :, None] * U.T[:, None, :]  # (d, d, d): P_v per eigenvector
    x0 = U.T[:, None, :] + cfg.eps * noise @ P
    x0 = (x0 / x0.norm(dim=-1, keepdim=True)).to(device)
    save = _save_grid(cfg.t1, cfg.save_every)
    ts, xs = simulate_betas(B, V, cfg.betas, x0, cfg.t1, dt=cfg.dt, save_at=save)  # (T, K, d, n, d)
    ts = ts.cpu().numpy()
    m = (ts >= cfg.window[0]) & (ts <= cfg.window[1])
    Ud = U.to(xs)
    tang = xs - (xs * Ud.T[None, None, :, None, :]).sum(-1, keepdim=True) * Ud.T[None, None, :, None, :]
    mean = tang.mean(-2)  # (T, K, d, d)
    spread = (tang - mean[..., None, :]).pow(2).sum(-1).mean(-1).sqrt().cpu().numpy()  # (T, K, d)
    coef = (mean @ Ud).abs().cpu().numpy()  # (T, K, i, j): the mean's component along u_j

    def rate(y: np.ndarray) -> float:
        return fits.line_fit(ts[m], np.log(y[m]))["slope"]

    K = len(cfg.betas)
    spread_rate = np.array([[rate(spread[:, k, i]) for i in range(d)] for k in range(K)])
    mode_rates = np.array([[[rate(coef[:, k, i, j]) for j in range(d) if j != i] for i in range(d)] for k in range(K)])
    pred = [lt.consensus_growth_rates(V, i) for i in range(d)]
    return {
        "lam": lam.tolist(),
        "betas": np.asarray(cfg.betas, dtype=float),
        "field": torch.stack(field),
        "drift": torch.stack(drift),
        "field_non_eigen": torch.stack(bad),
        "spread_rate": spread_rate,
        "mode_rates": mode_rates,
        "predicted_spread": np.array([p["spread"] for p in pred]),
        "predicted_modes": np.array([[r for _, r in p["modes"]] for p in pred]),
        "top": int(np.argmax(lam.numpy())),
    }


@claims_for("lowtemp-eigen-consensus")
def eigen_consensus_claims(result: dict[str, Any], cfg: EigenConsensusConfig) -> list[ledger.Claim]:
    """App. B: the field at, and the drift from, delta_v and the bipartite state on every eigenvector
    at most :data:`TOL_STATIONARY`; the perturbed consensus decays on the top eigenvector and grows
    on every other (needed), at the linearised rates within :data:`TOL_CONSENSUS_RATE` (else partly).

    Examples
    --------
    >>> r = {"field": np.zeros((1, 2, 2)), "drift": np.zeros((1, 2, 2)), "field_non_eigen": np.ones((1, 2)),
    ...      "spread_rate": np.array([[1.0, -2.0]]), "mode_rates": np.array([[[3.0], [-3.0]]]),
    ...      "predicted_spread": np.array([1.0, -2.0]), "predicted_modes": np.array([[3.0], [-3.0]]), "top": 1}
    >>> [c.status for c in eigen_consensus_claims(r, EigenConsensusConfig())]
    ['reproduced', 'reproduced']
    >>> wrong = dict(r, field=np.ones((1, 2, 2)), top=0)  # a non-eigenvector; the wrong eigenvector called top
    >>> [c.status for c in eigen_consensus_claims(wrong, EigenConsensusConfig())]
    ['not-reproduced', 'not-reproduced']
    """
    field = float(max(np.max(result["field"]), np.max(result["drift"])))
    spread, modes = np.asarray(result["spread_rate"]), np.asarray(result["mode_rates"])
    top = int(result["top"])
    growth = np.concatenate([spread[..., None], modes], -1).max(-1).max(0)  # (d,): fastest growth, worst beta
    signs = bool(growth[top] < 0 and all(growth[i] > 0 for i in range(len(growth)) if i != top))
    pred = np.concatenate([np.asarray(result["predicted_spread"])[:, None], np.asarray(result["predicted_modes"])], -1)
    meas = np.concatenate([spread[..., None], modes], -1)  # (K, d, d)
    rel = float(np.max(np.abs(meas / pred[None] - 1)))
    betas = ", ".join(f"{b:g}" for b in cfg.betas)
    return [
        ledger.Claim(
            id="B-appB-eigen-stationary", paper="B", where="App. B",
            statement=f"delta_v and n_+/n delta_v + n_-/n delta_-v (n = {cfg.n}, n_+ = {cfg.n_plus}) are stationary for eq. (1) "
                      f"for every eigenvector v of V (the Figure 3 V, a random B, beta = {betas}): largest |field| and "
                      f"largest drift over t = {cfg.t1:g}",
            verdict=ledger.verdict(field, TOL_STATIONARY, scale=TOL_STATIONARY), measured=field, expected=0.0,
            tolerance=TOL_STATIONARY,
            uncertainty=f"the same field at a non-eigenvector: {float(np.min(result['field_non_eigen'])):.3g}"),
        ledger.Claim(
            id="B-appB-top-consensus-stable", paper="B", where="App. B",
            statement="Consensus on the top eigenvector of V is stable, on the other eigenvectors unstable (a perturbation "
                      f"of size {cfg.eps:g} decays, resp. grows; needed), at the linearised rates -lambda_v (spread) and "
                      "lambda_k - lambda_v (mean, along u_k) (derived; within the tolerance, else partly)",
            verdict=ledger.graded([ledger.verdict(signs)], [ledger.verdict(rel, TOL_CONSENSUS_RATE)]),
            measured={"fastest_growth_per_eigenvector": [float(g) for g in growth], "max_relative_rate_error": rel},
            expected={"top": "< 0", "others": "> 0", "rates": f"within {TOL_CONSENSUS_RATE:g}"}, tolerance=TOL_CONSENSUS_RATE),
    ]


# ----------------------------------------------------------------------------- App. C.1

# App. C.1: the trajectories of Algorithm 1 with a hardmax and of Algorithm 2 must differ (the smallest
# gap above HARDMAX_GAP_FLOOR, far above rounding) ...
HARDMAX_GAP_FLOOR = 1e-3
# ... and, derived here, the gap shrinks like the distance from y*(x) to the nearest token of a
# quasi-uniform lattice, n^(-1/2) on S^2: the fitted exponent within HARDMAX_EXP_TOL of 1/2.
HARDMAX_EXPONENT = 0.5
HARDMAX_EXP_TOL = 0.1


@dataclasses.dataclass(frozen=True)
class HardmaxAttention:
    """Paper B's Algorithm 1 with the softmax replaced by a hardmax (App. C.1): every token attends
    only to the token that maximises its score, ``x_i' = P_{x_i} V x_{j(i)}`` with
    ``j(i) = argmax_j <x_i, B x_j>``, on the sphere. A :class:`companion.models.Model`.

    B, V: (d, d). Scores are computed ``chunk`` rows at a time (memory n * chunk per trial).

    Examples
    --------
    >>> m = HardmaxAttention(B=torch.eye(2, dtype=torch.float64), V=torch.eye(2, dtype=torch.float64))
    >>> X = torch.tensor([[[1.0, 0.0], [0.6, 0.8]]], dtype=torch.float64)
    >>> m.vector_field(0.0, X)  # each token's best match is itself: P_x x = 0
    tensor([[[0., 0.],
             [0., 0.]]], dtype=torch.float64)
    """

    B: torch.Tensor
    V: torch.Tensor
    chunk: int = 1024

    on_sphere: ClassVar[bool] = True

    def validate(self, X: torch.Tensor) -> torch.Tensor:
        X = as_tokens(X, "x0")
        check_on_sphere(X, "x0")
        check_matrix(self.B, X.shape[-1], "B", like=X)
        check_matrix(self.V, X.shape[-1], "V", like=X)
        return X

    def cast(self, X: torch.Tensor) -> "HardmaxAttention":
        return dataclasses.replace(self, B=torch.as_tensor(self.B).to(X), V=torch.as_tensor(self.V).to(X))

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor:
        XB = X @ self.B  # rows (B^T x_i)^T: score_ij = <B^T x_i, x_j>
        idx = torch.cat([(XB[:, i:i + self.chunk] @ X.transpose(-1, -2)).argmax(-1) for i in range(0, X.shape[1], self.chunk)], 1)
        Y = torch.gather(X, 1, idx[..., None].expand(-1, -1, X.shape[-1]))
        return models.tangent_project(X, Y @ self.V.T)


@dataclasses.dataclass(frozen=True)
class HardmaxConfig:
    """App. C.1: for every n of ``ns``, ``seeds`` randomly rotated Fibonacci lattices of n tokens on
    S^2, the Figure 3 matrices, Algorithm 1 with a hardmax (:class:`HardmaxAttention`) and Algorithm 2
    (eq. 3) by Euler with step ``dt`` up to ``t``.

    Examples
    --------
    >>> HardmaxConfig().ns
    (100, 200, 400, 800)
    """

    ns: tuple[int, ...] = (100, 200, 400, 800)
    seeds: int = 2
    t: float = 1.0
    dt: float = 0.01
    seed: int = 9


def plot_hardmax(result: dict[str, Any], ax=None):
    """log-log: the gap between the hardmax Algorithm 1 and Algorithm 2 against n, with n^(-1/2).

    Parameters
    ----------
    result : dict
        What :func:`hardmax` returns.
    ax : matplotlib.axes.Axes, optional
        The axes to draw on; None opens a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: ``ax`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> len(plot_hardmax(hardmax(ns=(20, 40), seeds=1, t=0.1)).get_lines())
    3
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.6))
    n = result["ns"]
    ax.loglog(n, result["gap"], "o-", label=f"trajectories at t = {result['config']['t']:g}")
    ax.loglog(n, result["field_gap"], "s-", label="fields at t = 0")
    ax.loglog(n, result["gap"][0] * (n / n[0]) ** -0.5, "k--", label=r"$\propto n^{-1/2}$")
    ax.minorticks_off()
    ax.set_xticks(n, [f"{v:g}" for v in n])
    ax.set(xlabel="n", ylabel="RMS distance", title="hardmax: Algorithm 1 (hardmax) vs Algorithm 2")
    ax.legend(fontsize=8)
    return ax


@experiment("lowtemp-hardmax", chapter="low_temperature", plot=plot_hardmax,
            profiles={"fast": HardmaxConfig(), "full": HardmaxConfig(ns=(100, 200, 400, 800, 1600, 3200), seeds=4)},
            paper=PaperScale({"dt": 0.01},
                             note="App. C.1 makes the remark without an experiment: the Figure 3 matrices, Fibonacci "
                                  "lattices of 100 to 800 tokens (3200 in full), read at t = 1."))
def hardmax(cfg: HardmaxConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """App. C.1: Algorithm 1 with a hardmax is not Algorithm 2 at finite n; the gap against n.

    Returns
    -------
    dict with ``ns`` (K,), ``gap`` (K,) the coupling distance (mean_i |x_i^hard - x_i^alg2|^2)^(1/2)
    at t (seed mean), ``field_gap`` (K,) the same for the two fields at t = 0, ``fit`` (log gap
    against log n) and ``exponent`` (gap ~ n^-exponent).

    Examples
    --------
    >>> r = hardmax(ns=(20, 40), seeds=1, t=0.1)
    >>> r["gap"].shape, bool((r["gap"] > 0).all())
    ((2,), True)
    """
    ns = [int(n) for n in cfg.ns]
    if len(ns) < 2 or min(ns) < 2:
        raise ValueError(f"ns must hold >= 2 token counts, each >= 2, got {cfg.ns}")
    gap, field_gap = [], []
    zt_model, hm_model = models.ZeroTemperature(B=FIG3_B, V=FIG3_V), HardmaxAttention(B=FIG3_B, V=FIG3_V)
    for n in ns:
        x0 = init.fibonacci_sphere(cfg.seeds, n, generator=generator, device=device)
        xz = simulate(zt_model, x0, cfg.t, method="euler", dt=cfg.dt).final
        xh = simulate(hm_model, x0, cfg.t, method="euler", dt=cfg.dt).final
        gap.append(float(((xh - xz) ** 2).sum(-1).mean(-1).sqrt().mean()))
        f0 = hm_model.cast(x0).vector_field(0.0, x0) - zt_model.cast(x0).vector_field(0.0, x0)
        field_gap.append(float((f0**2).sum(-1).mean(-1).sqrt().mean()))
    fit = fits.line_fit(np.log(ns), np.log(gap))
    return {"ns": np.asarray(ns, dtype=float), "gap": np.asarray(gap), "field_gap": np.asarray(field_gap), "fit": fit,
            "exponent": -fit["slope"]}


@claims_for("lowtemp-hardmax")
def hardmax_claims(result: dict[str, Any], cfg: HardmaxConfig) -> list[ledger.Claim]:
    """App. C.1: the hardmax Algorithm 1 and Algorithm 2 differ at every n (smallest gap above
    :data:`HARDMAX_GAP_FLOOR`; needed), by a gap that shrinks like n^(-1/2) (fitted exponent within
    :data:`HARDMAX_EXP_TOL` of :data:`HARDMAX_EXPONENT`; else partly).

    Examples
    --------
    >>> r = {"gap": np.array([0.13, 0.05]), "exponent": 0.48}
    >>> [c.status for c in hardmax_claims(r, HardmaxConfig())]
    ['reproduced']
    >>> [c.status for c in hardmax_claims(dict(r, gap=np.array([1e-15, 1e-15])), HardmaxConfig())]  # the same algorithm twice
    ['not-reproduced']
    """
    smallest, a = float(np.min(result["gap"])), float(result["exponent"])
    ns = ", ".join(f"{n:g}" for n in cfg.ns)
    return [
        ledger.Claim(
            id="B-appC1-hardmax-not-alg2", paper="B", where="App. C.1",
            statement=f"Algorithm 1 with the softmax replaced by a hardmax is not Algorithm 2 at finite n: from the same "
                      f"tokens (Fibonacci lattices, n = {ns}, the Figure 3 matrices) their trajectories differ at t = {cfg.t:g} "
                      "(needed), by a gap shrinking like n^(-1/2), the spacing of the tokens (derived; else partly)",
            verdict=ledger.graded([ledger.verdict(smallest, HARDMAX_GAP_FLOOR, better="higher")],
                                  [ledger.verdict(abs(a - HARDMAX_EXPONENT), HARDMAX_EXP_TOL)]),
            measured={"smallest_gap": smallest, "exponent_n": a},
            expected={"gap": f">= {HARDMAX_GAP_FLOOR:g}", "exponent": HARDMAX_EXPONENT}, tolerance=HARDMAX_EXP_TOL,
            uncertainty=f"seed mean of {cfg.seeds} lattice rotations"),
    ]
