"""``phase-depth-transition``: Theorem 4.6 of paper A in the Figure 5 settings (App. E.1.1, E.3.1).

The rescaled dynamics (7) ``z = e^{-tV} x`` in d = 2: the base ``Q = K = V = I_2`` against
(a) ``V~ = diag(1, 1 - eps)`` (the exit-time bound and the hard-argmax switch time) and
(b) ``Q~ = K~ = e_1 e_1^T`` (where Assumption 4.5 cannot hold).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import init, ledger
from ...metrics.hull import hull_excess
from ...registry import PaperScale, claims_for, experiment
from ...report import fmt
from ...style import COLORS, MIN_FONT
from ...theory import lora_depth as th
from ._shared import BOUND_RATIO, F64, _dist_to_set, _plot_ax, base_run, perturbed_times

__all__ = ["DepthTransitionConfig", "depth_transition", "depth_transition_claims", "plot_depth_transition", "TOL_HULL"]

# The save step of perturbation (b): its exit happens at once, so it is read on the integration grid.
QK_SAVE_DT = 0.1

# ---- thresholds of the claims
# Assumption 4.5 needs gap = lambda_1 - |lambda_2| > 0; below 1e-12 it is round-off of a zero gap.
GAP_MIN = 1e-12
# Fig. 5 (b): every initial condition leaves the base clusters within the horizon; half of them is partly.
EXIT_PARTLY = 0.5
# Cor. B.8 / Lemma B.7: no coordinate leaves its initial range; 1e-9 of the [-5, 5] box allows RK4 round-off.
TOL_HULL = 1e-9
# T* - t_switch lies in [-0.5, 2]: the save step 0.5 early, or the 2 delta travel (under 2 time units) late.
SWITCH_EARLY, SWITCH_LATE = -0.5, 2.0


def _rounded(x: float) -> Any:
    """``x`` rounded for a ledger row, or ``'< 1e-12'`` when it is that small in size (round-off)."""
    return f"< {1e-12:g}" if abs(x) < 1e-12 else float(f"{x:.3g}")


@dataclasses.dataclass(frozen=True)
class DepthTransitionConfig:
    """Depth transition (Thm 4.6, Fig. 5 settings): ``trials`` initial conditions of ``n`` tokens
    uniform in ``[-half_width, half_width]^2``, RK4 at step ``dt``; the base Q = K = V = I_2 runs to
    ``t_base`` (its clusters read there, radius ``delta``); perturbation (a) ``V~ = diag(1, 1 - eps)``
    runs to ``t1``, perturbation (b) ``Q~ = K~ = e1 e1^T`` with ``V~ = diag(v_b)`` (App. E.3.1:
    ``V~ = I_2``) to ``t1_b``.

    Examples
    --------
    >>> DepthTransitionConfig().trials, DepthTransitionConfig().t1
    (8, 250.0)
    """

    trials: int = 8
    n: int = 20
    half_width: float = 5.0
    dt: float = 0.1
    t_base: float = 30.0
    t1: float = 250.0  # past the largest switch time of these draws at eps = 0.01
    t1_b: float = 60.0
    eps: float = 0.01
    v_b: tuple[float, float] = (1.0, 1.0)
    delta: float = 0.1
    seed: int = 3


def plot_depth_transition(result: dict, ax=None):
    """Rescaled tokens of one initial condition: base limit clusters and the perturbed trajectory.

    Parameters
    ----------
    result : dict
        What :func:`depth_transition` returns.
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
    >>> ax = plot_depth_transition(depth_transition(trials=1, n=6, t_base=10.0, t1=20.0, t1_b=12.0))
    >>> ax.get_title().startswith("Base and perturbed tokens (rescaled)")
    True
    """
    ax = _plot_ax(ax)
    P = result["pert_path0"]
    ax.plot(P[:, :, 0], P[:, :, 1], color=COLORS["accent"], lw=0.6, alpha=0.7)
    B = result["base_path0"]
    ax.plot(B[:, :, 0], B[:, :, 1], color=COLORS["measured"], lw=0.6, alpha=0.7)
    ax.plot([], [], color=COLORS["measured"], label=r"base ($\widetilde V = V = I_2$)")
    ax.plot([], [], color=COLORS["accent"], label=r"perturbed ($\widetilde V$ of (a))")
    C = result["clusters0"]
    ax.scatter(C[:, 0], C[:, 1], color=COLORS["theory"], zorder=3, s=24, label=r"base clusters $\mathcal{C}$")
    ax.scatter(P[-1, :, 0], P[-1, :, 1], color=COLORS["accent"], marker="x", zorder=3, label="perturbed limit")
    ax.set_xlabel(r"$z_1$", fontsize=MIN_FONT + 1)
    ax.set_ylabel(r"$z_2$", fontsize=MIN_FONT + 1)
    ax.set_title(rf"Base and perturbed tokens (rescaled), $\varepsilon = {float(result['eps']):g}$", fontsize=MIN_FONT + 1)
    ax.set_aspect("equal", adjustable="datalim")
    ax.tick_params(labelsize=MIN_FONT)
    ax.legend(fontsize=MIN_FONT, loc="best")
    return ax


@experiment("phase-depth-transition", chapter="phase_transitions", plot=plot_depth_transition,
            profiles={"fast": DepthTransitionConfig(), "full": DepthTransitionConfig(trials=64, t1=1000.0)},
            paper=PaperScale({"half_width": 5.0, "dt": 0.1, "eps": 0.01, "v_b": (1.0, 1.0)},
                             note="Figure 5 (App. E.1.1, E.3.1) gives no n, trials or horizons; the authors' earlier "
                                  "paper (arXiv 2402.15415, NOTES A) used n = 50 or 20, delta = 0.1, T = 20-50: n = 20, "
                                  "delta = 0.1, base read at T = 30, 64 initial conditions, perturbed runs to T = 1000."),
            renamed={"t_end": "t1", "t_end_b": "t1_b"})
def depth_transition(cfg: DepthTransitionConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Theorem 4.6 in the Figure 5 settings: T_delta of the base (Q = K = V = I_2) and the exit time
    T*(delta) of (a) ``V~ = diag(1, 1 - eps)`` with the theorem's bound and the hard-argmax switch time,
    (b) ``Q~ = K~ = e1 e1^T`` (V~ = I_2: Assumption 4.5 cannot hold). Tokens uniform in [-5, 5]^2.
    Profiles: ``fast`` 8 initial conditions, (a) to t = 250; ``full`` 64, to t = 1000.

    Returns
    -------
    dict with, per initial condition (trials,): ``T_delta``, ``n_clusters``, ``exit_a``, ``bound_a``,
    ``switch_a``, ``exit_b``, ``bound_b``, ``dist_b_at_T_delta``; ``bounds`` (the constants of
    Thm 4.6 per initial condition, a dict or None); paths of the first initial condition.

    Examples
    --------
    >>> r = depth_transition(trials=1, n=6, t_base=10.0, t1=20.0, t1_b=12.0)
    >>> r["T_delta"].shape, r["exit_b"].shape
    ((1,), (1,))
    """
    n, trials, dt, delta = cfg.n, cfg.trials, cfg.dt, cfg.delta
    Z0 = init.cube(trials, n, 2, cfg.half_width, generator=generator).to(device)
    base, C, T_delta = base_run(Z0, cfg.t_base, dt, delta)
    Vt = torch.diag(torch.tensor([1.0, 1.0 - cfg.eps], dtype=F64))
    sol_a, exit_a, _ = perturbed_times(Z0, Vt, torch.eye(2, dtype=F64), C, T_delta, cfg.t1, dt, delta)
    bounds = [th.tube_bound(C[tr], torch.eye(2), torch.eye(2), Vt, n=n, delta=delta) for tr in range(trials)]
    bound_a = np.array([th.exit_time_bound(T_delta[tr], b) if b is not None else np.nan for tr, b in enumerate(bounds)])
    switch_a = np.array([th.switch_time(C[tr], cfg.eps) for tr in range(trials)])
    e1 = torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=F64)
    V_b = torch.diag(torch.tensor(cfg.v_b, dtype=F64))
    sol_b, exit_b, _ = perturbed_times(Z0, V_b, e1, C, T_delta, cfg.t1_b, dt, delta, save_dt=QK_SAVE_DT)
    # (b): does Assumption 4.5 hold for any initial condition (V~ = I_2 has no simple dominant eigenvalue)?
    bound_b = [th.exit_time_bound(T_delta[tr], b) if (b := th.tube_bound(C[tr], e1, e1, V_b, n=n, delta=delta)) is not None
               else math.nan for tr in range(trials)]
    # (b): distance of the perturbed tokens to the base clusters at T_delta (the exit happens at once)
    dist_b = np.array([float(_dist_to_set(sol_b.xs[:, tr], C[tr])[int(round(T_delta[tr] / QK_SAVE_DT))]) for tr in range(trials)])
    return {"eps": cfg.eps, "delta": delta, "n": n, "trials": trials, "T_delta": T_delta, "n_clusters": [len(c) for c in C],
            "exit_a": exit_a, "bound_a": bound_a, "switch_a": switch_a,
            "bounds": [dataclasses.asdict(b) if b is not None else None for b in bounds], "exit_b": exit_b,
            "bound_b": np.array(bound_b), "dist_b_at_T_delta": dist_b, "gap_b": th.dominance_gap(cfg.v_b),
            "hull_excess": max(hull_excess(base.xs), hull_excess(sol_a.xs)),
            "clusters0": C[0], "base_path0": base.xs[:, 0], "pert_path0": sol_a.xs[::2, 0], "qk_path0": sol_b.xs[:, 0]}


@claims_for("phase-depth-transition")
def depth_transition_claims(result: dict[str, Any], cfg: DepthTransitionConfig) -> list[ledger.Claim]:
    """Thm 4.6 (2) for perturbation (a) (exit-time bound, and the derived argmax switch time) and the
    QK setting (b).

    Examples
    --------
    >>> r = {"exit_a": np.array([88.5, 43.0]), "bound_a": np.array([452.0, 503.0]), "switch_a": np.array([88.3, 42.6]),
    ...      "exit_b": np.array([4.0, 5.0]), "bound_b": np.array([np.nan, np.nan]), "T_delta": np.array([4.0, 5.0]),
    ...      "dist_b_at_T_delta": np.array([0.3, 2.0]), "gap_b": 0.0, "hull_excess": 0.0}
    >>> [c.status for c in depth_transition_claims(r, DepthTransitionConfig())]
    ['reproduced', 'reproduced', 'not-reproduced', 'reproduced', 'reproduced']
    """
    exit_a, bound_a = np.asarray(result["exit_a"], dtype=float), np.asarray(result["bound_a"], dtype=float)
    ok = np.isfinite(bound_a)
    worst = float(np.max(exit_a[ok] / bound_a[ok])) if ok.any() else math.nan  # no bound at all: nothing holds
    gapsw = exit_a - np.asarray(result["switch_a"], dtype=float)
    outside = float(max(np.max(SWITCH_EARLY - gapsw), np.max(gapsw - SWITCH_LATE)))  # <= 0 inside [early, late]
    exit_b, bound_b = np.asarray(result["exit_b"], dtype=float), np.asarray(result["bound_b"], dtype=float)
    T_delta = np.asarray(result["T_delta"], dtype=float)
    appl_b = np.isfinite(bound_b)
    gap_b = float(result["gap_b"])
    left_b = np.isfinite(exit_b)
    dist_b = np.asarray(result["dist_b_at_T_delta"], dtype=float)
    excess = float(result["hull_excess"])
    bound_txt = f" (max T*/bound {fmt(np.max(exit_b[appl_b] / bound_b[appl_b]))} there)" if appl_b.any() else ""
    return [
        ledger.Claim(
            id="A-thm4.6-exit-bound", paper="A", where="Thm 4.6 (2)",
            statement=r"$T^*(\delta) \le \max\{T_\delta, T_{\mathrm{dom}}\} + 16\|\ell\|\delta/(\lambda_1 D_-)$ for "
                      rf"$\tilde V = \mathrm{{diag}}(1, 1-\varepsilon)$, $\varepsilon = {cfg.eps:g}$",
            verdict=ledger.verdict(worst, BOUND_RATIO), measured=f"max T*/bound {fmt(worst)} over {int(ok.sum())} inits",
            expected="<= 1", tolerance=0),
        ledger.Claim(
            id="A-thm4.6-switch-time", paper="A", where="Thm 4.6 (derived argmax switch time)",
            statement=r"The measured exit time equals the hard-argmax switch time of the base clusters plus the short "
                      r"$2\delta$ travel",
            verdict=ledger.verdict(outside, 0.0, scale=-SWITCH_EARLY),
            measured=f"T* - t_switch in [{fmt(gapsw.min())}, {fmt(gapsw.max())}]", expected="[0, 2]", tolerance=-SWITCH_EARLY,
            uncertainty="save step 0.5"),
        ledger.Claim(
            id="A-thm4.6-qk-setting", paper="A", where="App. E.3.1 / Fig. 5, Assumption 4.5",
            statement=rf"App. E.3.1 illustrates Thm 4.6 with $\tilde Q = \tilde K = e_1 e_1^\top$, "
                      rf"$\tilde V = \mathrm{{diag}}{tuple(cfg.v_b)}$: Assumption 4.5 (simple dominant eigenvalue, "
                      r"$\mathrm{gap} = \lambda_1 - |\lambda_2| > 0$) holds there",
            verdict=ledger.verdict(bool(gap_b > GAP_MIN)),
            measured=f"gap {fmt(gap_b)}; Assumption 4.5 accepted for {int(appl_b.sum())}/{appl_b.size} inits{bound_txt}; "
                     f"measured exit: T* - T_delta median {fmt(np.median(exit_b - T_delta))}, distance to C at T_delta median "
                     f"{fmt(np.median(dist_b), 2)} (2 delta = {fmt(2 * cfg.delta)})",
            expected="gap > 0", tolerance=GAP_MIN),
        ledger.Claim(
            id="A-fig5-qk-exit", paper="A", where="Fig. 5 / App. E.3.1",
            statement=r"With $\tilde Q = \tilde K = e_1 e_1^\top$ the perturbed tokens leave the base clusters (exit "
                      r"$T^*(\delta)$ within the horizon)",
            verdict=ledger.verdict(float(left_b.mean()), 1.0, partly=EXIT_PARTLY, better="higher"),
            measured=float(left_b.mean()), expected=1.0, tolerance=0.0,
            uncertainty=f"{left_b.size} inits; T* - T_delta max {fmt(np.max(exit_b - T_delta))}"),
        ledger.Claim(
            id="A-corB8-bounded", paper="A", where="Lemma B.7 / Cor. B.8",
            statement=r"For $V$ with real non-negative spectrum the rescaled tokens stay bounded: each coordinate "
                      r"$\varphi_k^*(z_i)$ stays within its initial range (base $V = I_2$ and "
                      r"$\tilde V = \mathrm{diag}(1, 1 - \varepsilon)$)",
            verdict=ledger.verdict(excess, TOL_HULL), measured=_rounded(excess), expected="<= 0", tolerance=TOL_HULL),
    ]
