"""Theorem 6.1, Corollary 6.2 and Figure 1: one-sided cone data contract to a single cluster at +-e_1."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from ... import init, ledger, metrics, models
from ...integrate import simulate
from ...registry import PaperScale, claims_for, experiment, summary_for
from ...theory import spectral as th
from ._shared import TOL_BOUND, TOL_MONOTONE, V_POSITIVE

__all__ = ["ConeBoundConfig", "cone_bound", "plot_cone_bound", "plot_cone_bound_snapshots", "cone_bound_summary", "cone_bound_claims", "CONE_RHO",
           "CONE_R"]

# Marks printed beside Fig. 1's row, not deciding it (the paper gives none): every pair within 8 degrees
# (rho_min > 0.99) and R_k below 1 %.
CONE_RHO = 0.99
CONE_R = 1e-2


@dataclasses.dataclass(frozen=True)
class ConeBoundConfig:
    """Theorem 6.1: ``trials`` ensembles of ``n`` tokens uniform on the cap {c_1 >= ``delta``} of
    S^2, V = diag(``lambdas``) (lambda_1 > |lambda_k|), inverse temperature ``beta``; RK4 with step
    ``dt`` up to ``t1``, saved every 0.1 and at the Fig. 1 times 0, 0.5, 1, 2. ``seed`` draws the
    cap {c_1 >= delta}, then, for Corollary 6.2, as many tokens on the opposite cap {c_1 <= -delta}.

    Examples
    --------
    >>> ConeBoundConfig().lambdas, ConeBoundConfig().seed
    ((1.0, 0.5, -0.5), 1)
    """

    trials: int = 20
    n: int = 80
    t1: float = 10.0
    dt: float = 0.05
    delta: float = 0.2
    lambdas: tuple[float, ...] = V_POSITIVE
    beta: float = 1.0
    seed: int = 1


def plot_cone_bound(result: dict[str, Any], ax=None):
    """R_k(t) / bound (Theorem 6.1) for every trial and k: never above 1.

    Parameters
    ----------
    result : dict
        What :func:`cone_bound` returns.
    ax : matplotlib.axes.Axes, optional
        Where to draw; None opens a new figure of the book's width.

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> plot_cone_bound(cone_bound(trials=2, n=8, t1=1.0, dt=0.1), ax=plt.figure().gca()).get_title()
    'Cone data: $R_k(t)$ stays below the bound of Theorem 6.1'
    """
    import matplotlib.pyplot as plt

    from ...style import COLORS, FULL_WIDTH, MIN_FONT

    if ax is None:
        _, ax = plt.subplots(figsize=(FULL_WIDTH * 0.75, 3.4), layout="constrained")
    q = result["R"] / result["bound"]
    ax.plot(result["ts"], q.reshape(len(result["ts"]), -1), lw=0.6, color=COLORS["measured"], alpha=0.5)
    ax.axhline(1.0, color=COLORS["bound"], ls="--", label="bound (ratio 1)")
    ax.set_xlabel("$t$", fontsize=MIN_FONT + 1)
    ax.set_ylabel("$R_k(t)\\,/\\,R_k(0)e^{-\\delta(\\lambda_1-|\\lambda_k|)t}$", fontsize=MIN_FONT + 1)
    ax.tick_params(labelsize=MIN_FONT)
    ax.legend(fontsize=MIN_FONT, loc="lower left")
    ax.set_title("Cone data: $R_k(t)$ stays below the bound of Theorem 6.1", fontsize=MIN_FONT + 1)
    return ax


def plot_cone_bound_snapshots(result: dict[str, Any], ax=None):
    """Figure 1: one trial of cone data at t = 0, 0.5, 1, 2 on S^2 (one row); the star marks e_1.

    Parameters
    ----------
    result : dict
        What :func:`cone_bound` returns.
    ax : sequence of 3D matplotlib.axes.Axes, optional
        One panel per time of ``result["snap_t"]``; None opens a new figure with them in one row.

    Returns
    -------
    ax : sequence of matplotlib.axes.Axes
        The panels drawn on: ``ax`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> len(plot_cone_bound_snapshots(cone_bound(trials=2, n=8, t1=1.0, dt=0.1)))  # t = 0, 0.5, 1
    3
    """
    import matplotlib.pyplot as plt

    from ...style import COLORS, FULL_WIDTH, MIN_FONT

    if ax is None:
        # One row: the panels side by side keep the figure a third as tall as a grid would.
        k = len(result["snap_t"])
        fig = plt.figure(figsize=(FULL_WIDTH, FULL_WIDTH / max(k, 2) + 0.5), layout="constrained")
        ax = [fig.add_subplot(1, k, i + 1, projection="3d") for i in range(k)]
        fig.suptitle("One-sided cone data gather at $e_1$ (star), first trial", fontsize=MIN_FONT + 1)
    u, v = np.mgrid[0 : 2 * np.pi : 30j, 0 : np.pi : 15j]
    for a, t, X in zip(ax, result["snap_t"], result["snapshots"]):
        a.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.3)
        a.scatter(X[:, 0], X[:, 1], X[:, 2], s=6, color=COLORS["measured"])
        a.scatter([1.0], [0.0], [0.0], marker="*", s=150, color=COLORS["accent"])
        a.set_title(f"$t = {t:g}$", fontsize=MIN_FONT + 1)
        a.set_xlim(-1, 1), a.set_ylim(-1, 1), a.set_zlim(-1, 1)
        a.set_box_aspect((1, 1, 1))
        a.set_axis_off()
    return ax


@experiment("spectral-cone-bound", chapter="spectral_selection", plot=(plot_cone_bound, plot_cone_bound_snapshots),
            profiles={"fast": ConeBoundConfig(), "full": ConeBoundConfig(trials=200, t1=20.0, dt=0.02)},
            paper=PaperScale({"n": 80, "beta": 1.0},
                             note="Figure 1 shows one run at t = 0, 0.5, 1, 2; V, d, delta, horizon and step are not "
                                  "recovered (NOTES C): d = 3, V = diag(1, 0.5, -0.5), delta = 0.2, 200 ensembles to "
                                  "T = 20, RK4 at 0.02."))
def cone_bound(cfg: ConeBoundConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Theorem 6.1 on one-sided cone data (and the Fig. 1 snapshots of the first trial).

    Returns
    -------
    dict with ``ts`` (T,), ``R`` and ``bound`` (T, trials, d - 1), ``max_ratio`` (of R / bound,
    1 at t = 0 by construction), ``max_ratio_after0``, ``min_dm`` (smallest increment of
    min_i c_i1), ``final_R``, ``final_rho_min``, ``snap_t``, ``snapshots`` (4, n, d) of trial 0,
    ``snap_mean_c1``, ``snap_rho_min``, ``delta_min``; for the opposite cap (Corollary 6.2)
    ``mirror_max_ratio_after0``, ``mirror_max_dm`` (largest increment of max_i c_i1) and
    ``mirror_final_distance`` (largest |x_i(t1) + e_1|).

    Examples
    --------
    >>> r = cone_bound(trials=2, n=8, t1=2.0, dt=0.05)
    >>> r["max_ratio_after0"] <= 1, r["min_dm"] >= -1e-12
    (True, True)
    """
    lam = torch.tensor(cfg.lambdas, dtype=torch.float64)
    V = torch.diag(lam).to(device)
    d = len(cfg.lambdas)
    x0 = init.cone(cfg.trials, cfg.n, d, cfg.delta, generator=generator).to(device)
    ts = torch.linspace(0, cfg.t1, int(round(cfg.t1 / 0.1)) + 1)
    snap_t = [s for s in (0.0, 0.5, 1.0, 2.0) if s <= cfg.t1]  # Fig. 1's times, within the run
    ts = torch.unique(torch.cat([ts, torch.tensor(snap_t, dtype=ts.dtype)]))
    xs = simulate(models.spectral(V, cfg.beta), x0, cfg.t1, dt=cfg.dt, save_at=ts).xs.cpu()  # (T, trials, n, d)
    c1 = xs[..., 0]
    delta = c1[0].amin(dim=-1)  # (trials,) the tightest delta of each trial
    R = (xs[..., 1:] / c1[..., None]).abs().amax(dim=2)  # (T, trials, d - 1)
    bound = th.cone_ratio_bound(R[0], delta[:, None], float(lam[0]), lam[1:][None, :], ts)
    ratio = (R / bound).amax().item()  # 1 at t = 0 by construction
    ratio_after0 = (R / bound)[1:].amax().item()
    m = c1.amin(dim=-1)
    idx = [int(torch.argmin((ts - s).abs())) for s in snap_t]
    snaps = xs[idx, 0]
    # Corollary 6.2: tokens on the opposite cap c_i1 <= -delta, an independent draw after the first
    e1 = torch.zeros(d, dtype=torch.float64)
    e1[0] = 1.0
    y0 = init.cone(cfg.trials, cfg.n, d, cfg.delta, axis=-e1, generator=generator).to(device)
    ys = simulate(models.spectral(V, cfg.beta), y0, cfg.t1, dt=cfg.dt, save_at=ts).xs.cpu()
    b1 = ys[..., 0]
    R_m = (ys[..., 1:] / b1[..., None]).abs().amax(dim=2)
    bound_m = th.cone_ratio_bound(R_m[0], (-b1[0].amax(dim=-1))[:, None], float(lam[0]), lam[1:][None, :], ts)
    return dict(
        mirror_max_ratio_after0=(R_m / bound_m)[1:].amax().item(),
        mirror_max_dm=torch.diff(b1.amax(dim=-1), dim=0).amax().item(),
        mirror_final_distance=(ys[-1] + e1).norm(dim=-1).amax().item(),
        ts=ts, R=R, bound=bound, max_ratio=ratio, max_ratio_after0=ratio_after0,
        min_dm=torch.diff(m, dim=0).amin().item(),
        final_R=R[-1].amax().item(),
        final_rho_min=metrics.rho_min(xs[-1]).amin().item(),
        snap_t=snap_t, snapshots=snaps,
        snap_mean_c1=[float(snaps[i, :, 0].mean()) for i in range(len(snap_t))],
        snap_rho_min=[float(metrics.rho_min(snaps[i])) for i in range(len(snap_t))],
        delta_min=delta.amin().item(),
    )


@summary_for("spectral-cone-bound")
def cone_bound_summary(result: dict[str, Any]) -> dict[str, Any]:
    """What the chapter and the claims read: the largest R_k / bound after t = 0 (``bound_excess``: that
    ratio minus 1, <= 0 where Theorem 6.1 holds) for the cap and the opposite cap, the smallest
    increment of min_i c_i1 (largest of max_i c_i1 on the opposite cap), ``max_R_increment`` (the
    largest rise of R_k between saved times over all trials and k: < 0 where every R_k falls), the
    final R_k, rho_min and distance to -e_1, whether the printed marks of Fig. 1 are met, and the
    number of trials.

    Examples
    --------
    >>> r = dict(max_ratio_after0=0.8, min_dm=0.0, final_rho_min=0.9999, final_R=1e-3, R=[[[0.5]], [[0.2]]],
    ...          mirror_max_ratio_after0=0.8, mirror_max_dm=0.0, mirror_final_distance=1e-3)
    >>> s = cone_bound_summary(r)
    >>> round(s["bound_excess"], 6), round(s["max_R_increment"], 6), s["marks_met"]
    (-0.2, -0.3, True)
    """
    import numpy as np

    R = np.asarray(result["R"], dtype=float)
    cfg = result.get("config") or {}
    out = dict(
        max_ratio_after0=float(result["max_ratio_after0"]), min_dm=float(result["min_dm"]),
        mirror_max_ratio_after0=float(result["mirror_max_ratio_after0"]), mirror_max_dm=float(result["mirror_max_dm"]),
        mirror_final_distance=float(result["mirror_final_distance"]), final_R=float(result["final_R"]),
        final_rho_min=float(result["final_rho_min"]), max_R_increment=float(np.diff(R, axis=0).max()),
        trials=int(cfg["trials"]) if "trials" in cfg else int(R.shape[1]),
    )
    out["bound_excess"] = out["max_ratio_after0"] - 1.0
    out["mirror_bound_excess"] = out["mirror_max_ratio_after0"] - 1.0
    out["marks_met"] = out["final_rho_min"] > CONE_RHO and out["final_R"] < CONE_R
    return out


@claims_for("spectral-cone-bound")
def cone_bound_claims(result: dict[str, Any], cfg: ConeBoundConfig) -> list[ledger.Claim]:
    """Theorem 6.1 (R_k / bound - 1 <= :data:`TOL_BOUND` for t > 0, min_i c_i1 never decreasing beyond
    :data:`TOL_MONOTONE`: rounding, the theorem is exact), Figure 1 (the data contract onto e_1: R_k falls
    between saved times in every trial and the cone is kept; the marks rho_min > :data:`CONE_RHO`,
    R_k < :data:`CONE_R` are printed, not judged) and Corollary 6.2 on the opposite cap (the same bound,
    max_i c_i1 never increasing; the final distance to -e_1 printed).

    Examples
    --------
    >>> r = dict(max_ratio_after0=0.8, min_dm=0.0, final_rho_min=0.9999, final_R=1e-3, R=[[[0.5]], [[0.2]]],
    ...          mirror_max_ratio_after0=0.8, mirror_max_dm=0.0, mirror_final_distance=1e-3)
    >>> [c.status for c in cone_bound_claims(r, ConeBoundConfig())]
    ['reproduced', 'reproduced', 'reproduced']
    >>> [c.status for c in cone_bound_claims(dict(r, max_ratio_after0=1.2, R=[[[0.5]], [[0.6]]]), ConeBoundConfig())]
    ['not-reproduced', 'not-reproduced', 'reproduced']
    """
    s = cone_bound_summary(result)
    bound = ledger.worst(ledger.verdict(s["bound_excess"], TOL_BOUND), ledger.verdict(s["min_dm"], -TOL_MONOTONE, better="higher"))
    cluster = ledger.worst(ledger.verdict(s["max_R_increment"], TOL_MONOTONE), ledger.verdict(s["min_dm"], -TOL_MONOTONE, better="higher"))
    mirror = ledger.worst(ledger.verdict(s["mirror_bound_excess"], TOL_BOUND), ledger.verdict(s["mirror_max_dm"], TOL_MONOTONE))
    return [
        ledger.Claim(id="C-thm6.1-cone-bound", paper="C", where="Thm. 6.1, App. B.1",
                     statement="$R_k(t) \\le R_k(0)\\, e^{-\\delta(\\lambda_1 - |\\lambda_k|)t}$ on cone data",
                     quote="\\dot{R}(t)\\leq-\\delta(\\lambda_{1}-|\\lambda_{k}|)R(t)\\quad\\text{for a.e. }t\\geq 0.",
                     basis="paper",
                     test=f"R_k(t) / (R_k(0) e^(-delta (lambda_1 - |lambda_k|) t)) - 1 <= {TOL_BOUND:g} for t > 0 in all "
                          f"{s['trials']} trials, and min_i c_i1 never falling by more than {TOL_MONOTONE:g} (rounding; the "
                          "bound is exact)",
                     verdict=bound, measured=s["max_ratio_after0"], expected="<= 1 (t > 0)", tolerance=TOL_BOUND),
        ledger.Claim(id="C-fig1-cone-cluster", paper="C", where="Fig. 1, Sec. 7.1", statement="One-sided data contract to a single cluster at $e_1$",
                     quote="the particles rapidly contract and form a single cluster near $e_{1}$", basis="paper",
                     test=f"R_k = max_i |c_ik / c_i1| falls between saved times in every trial (largest rise <= {TOL_MONOTONE:g}, "
                          "rounding) while min_i c_i1 never falls: the tokens contract onto e_1. Printed, not judged: "
                          f"rho_min > {CONE_RHO:g} and R_k < {CONE_R:g} at t_end",
                     verdict=cluster, measured={"largest rise of R_k": s["max_R_increment"], "rho_min(t_end)": s["final_rho_min"],
                                                "R_k(t_end)": s["final_R"]},
                     expected=f"R_k falling (printed marks: rho_min > {CONE_RHO:g}, R_k < {CONE_R:g} at t_end)", tolerance=TOL_MONOTONE),
        ledger.Claim(id="C-cor6.2-negative-cone", paper="C", where="Cor. 6.2",
                     statement="Tokens with $c_{i1}(0) \\le -\\delta < 0$ reach consensus at $-e_1$, $R_k$ decaying as in Theorem 6.1",
                     quote="Theorem 6.1 immediately yields the corresponding statement for the opposite orientation.", basis="paper",
                     test=f"on the opposite cap: R_k / bound - 1 <= {TOL_BOUND:g} for t > 0 and max_i c_i1 never rising by more "
                          f"than {TOL_MONOTONE:g} (rounding); the final distance to -e_1 is printed",
                     verdict=mirror, measured=[s["mirror_max_ratio_after0"], s["mirror_final_distance"]],
                     expected="R_k / bound <= 1 (t > 0); max_i |x_i(t_end) + e_1| printed", tolerance=TOL_BOUND),
    ]
