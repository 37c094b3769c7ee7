"""The figure of ``beyond-depth-paths`` (:mod:`companion.experiments.beyond.depth_paths`): four panels of its
result against the derived laws. Kept apart so that the experiment's file stays one screenful of computing."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...theory.questions import gap_closing_angle, tracking_lag, turning_rate

__all__ = ["plot_depth_paths"]


def plot_depth_paths(result: dict[str, Any], ax=None):
    """Four panels (a 2 x 2 grid): the lag behind the turning top eigenvector and the cluster's mean
    turning rate against omega / g, the angle through a gap closing, and the bifurcation depth
    against its two predictions (colour: the ramp's duration tau, darker for longer).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from companion.experiments.beyond.depth_paths import DEPTH_PATHS_TINY, depth_paths
    >>> len(plot_depth_paths(depth_paths(**DEPTH_PATHS_TINY)))
    4
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from ...style import COLORS, FULL_WIDTH

    fs = 10
    if ax is None:
        _, grid2 = plt.subplots(2, 2, figsize=(FULL_WIDTH, 6.6))
        ax = grid2.ravel()
    ad = COLORS["accent"]
    om = np.asarray(result["omegas"], float)
    grid = np.linspace(0, om.max() * 1.05, 400)
    g = 1.0  # the curves are drawn in units of the gap
    lag = np.array([tracking_lag(w, g) for w in grid])
    ax[0].plot(grid, lag, "-", color=COLORS["theory"], lw=1, label="derived")
    ax[0].plot(grid, grid, ":", color=COLORS["theory"], lw=1, label=r"first order $\omega/g$")
    ax[0].axhline(0, color=ad, lw=1.2, label="adiabatic: no lag")
    ax[0].axvline(0.5, color=COLORS["reference"], ls="--", lw=0.8)
    ok = np.isfinite(result["lag"])
    ax[0].errorbar(om[ok], result["lag"][ok], yerr=2 * result["lag_se"][ok], fmt="o", capsize=3, color=COLORS["measured"],
                   label="measured")
    ax[0].set(xlim=(0, 0.6), ylim=(-0.05, 0.9))
    ax[0].set_xlabel(r"$\omega / g$", fontsize=fs)
    ax[0].set_ylabel("steady lag (rad)", fontsize=fs)
    ax[0].set_title("Lag behind a turning eigenvector", fontsize=fs)
    ax[0].legend(fontsize=fs)
    ax[1].plot(grid, [turning_rate(w, g) / w if w > 0 else 1.0 for w in grid], "-", color=COLORS["theory"], lw=1, label="derived")
    ax[1].axhline(1, color=ad, lw=1.2, label="adiabatic")
    ax[1].axvline(0.5, color=COLORS["reference"], ls="--", lw=0.8)
    ax[1].errorbar(om, result["turn"], yerr=2 * result["turn_se"], fmt="o", capsize=3, color=COLORS["measured"], label="measured")
    ax[1].set_xlabel(r"$\omega / g$", fontsize=fs)
    ax[1].set_ylabel(r"mean turning rate / $\omega$", fontsize=fs)
    ax[1].set_title(r"Tracking breaks at $\omega = g/2$", fontsize=fs)
    ax[1].legend(fontsize=fs)
    ts = np.asarray(result["ts_sphere"], float)
    gap = float(result["gap"])
    for j, tau in enumerate(result["swap_taus"]):
        keep = ts <= 1.6 * tau
        s = ts[keep] / tau
        ax[2].plot(s, np.degrees(result["swap_trace"][j][keep]), color=f"C{j + (j > 0)}", label=rf"$\tau = {tau:g}$")  # C1 is the adiabatic colour
        ax[2].plot(s, np.degrees(gap_closing_angle(float(result["swap_phi_start"][j][0]), gap, tau, ts[keep])), ":",
                   color=COLORS["theory"], lw=1)
    ax[2].plot([0, 0.5, 0.5, 1.6], [0, 0, 90, 90], "-", color=ad, lw=1.2, label="adiabatic")
    ax[2].set_xlabel(r"$t / \tau$ (the path ends at 1)", fontsize=fs)
    ax[2].set_ylabel(r"angle from $e_1$ (deg)", fontsize=fs)
    ax[2].set_title("Through a gap closing (dotted: derived)", fontsize=fs)
    ax[2].legend(fontsize=fs)
    ex = np.asarray(result["exit"], float)
    ok = np.asarray(result["valid"], dtype=bool)
    pa, pp = np.asarray(result["pred_accumulated"], float), np.asarray(result["pred_pointwise"], float)
    cmap = plt.get_cmap("viridis")
    R = len(result["ramp_taus"])
    for j, tau in enumerate(result["ramp_taus"]):
        c = cmap(0.85 * (1 - j / max(R - 1, 1)))
        ax[3].plot(pa[j][ok[j]], ex[j][ok[j]], "o", color=c, ms=4)
        ax[3].plot(pp[j][ok[j]], ex[j][ok[j]], "x", color=c, ms=5)
    handles = [Line2D([], [], ls="", marker="o", color=COLORS["reference"], label="accumulated"),
               Line2D([], [], ls="", marker="x", color=COLORS["reference"], label="pointwise")]
    if (~ok).any():
        ax[3].plot(pa[~ok], np.minimum(ex[~ok], pa[~ok]), "s", mfc="none", color=COLORS["reference"])
        handles.append(Line2D([], [], ls="", marker="s", mfc="none", color=COLORS["reference"], label="excluded"))
    fin = ex[np.isfinite(ex)]
    top = float(fin.max()) * 1.05 if fin.size else 1.0
    ax[3].plot([0, top], [0, top], "-", color=COLORS["theory"], lw=0.8)
    ax[3].set_xlabel("predicted depth", fontsize=fs)
    ax[3].set_ylabel(r"measured depth $T^*$", fontsize=fs)
    ax[3].set_title("Bifurcation depth under a ramp", fontsize=fs)
    ax[3].legend(handles=handles, fontsize=fs)
    for a in ax:
        a.tick_params(labelsize=fs)
    ax[0].figure.tight_layout()
    return ax
