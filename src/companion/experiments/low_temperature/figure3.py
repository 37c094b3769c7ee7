"""lowtemp-figure3: Figure 3 of paper B, concentration on E (top of V B^T) and then on F (top of V)."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import init, ledger
from ...registry import PaperScale, claims_for, experiment
from ...theory import low_temperature as lt
from ._shared import FIG3_B, FIG3_V, alignment, exit_time, save_grid, simulate_betas, w_to_pi

__all__ = [
    "Figure3Config",
    "figure3",
    "plot_figure3",
    "figure3_claims",
    "PHASE1_TIME",
    "TOL_PHASE1",
    "TOL_PHASE2",
]

# Phase 1 of Fig. 3: at t = PHASE1_TIME (well inside the metastable phase at beta = 100) every seed's
# mean |P_E x|^2 must be within TOL_PHASE1 of 1 (the tokens on +-e1; the few near the equator lag).
PHASE1_TIME = 3.0
TOL_PHASE1 = 0.05
# Phase 2 of Fig. 3: at the final time the tokens sit on +-e2, mean |P_F x|^2 within TOL_PHASE2 of 1.
TOL_PHASE2 = 0.01


def _index(ts: np.ndarray, t: float) -> int:
    """Index of the saved time nearest to ``t``."""
    return int(np.argmin(abs(np.asarray(ts) - t)))


@dataclasses.dataclass(frozen=True)
class Figure3Config:
    """Figure 3: ``trials`` independent sets of ``n`` uniform tokens on S^2 at inverse temperature
    ``beta``, the Figure 3 matrices, Euler with step ``dt`` up to ``t1``, saved every ``save_every``;
    the metastable phase ends when W_2(mu_t, Pi_# mu_0), after its minimum, climbs back to ``level``.

    Examples
    --------
    >>> Figure3Config().trials, Figure3Config(trials=16).beta
    (4, 100.0)
    """

    trials: int = 4
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
    >>> len(plot_figure3(figure3(trials=1, n=10, t1=1.0)))
    2
    """
    import matplotlib.pyplot as plt

    from ...style import COLORS, FULL_WIDTH, MIN_FONT

    if ax is None:
        fig, ax = plt.subplots(1, 2, figsize=(FULL_WIDTH, 3.4), layout="constrained")
    ts = result["ts"]
    beta = result["config"]["beta"]
    ax[0].semilogy(ts, result["w2"], color=COLORS["measured"], alpha=0.5, lw=0.8)
    ax[0].axvline(math.log(beta), color=COLORS["theory"], ls=":", label=r"$t = \log\beta$")
    ax[0].axhline(result["config"]["level"], color=COLORS["reference"], ls="--", lw=0.8, label="exit level")
    ax[0].set_xlabel(r"$t$", fontsize=MIN_FONT)
    ax[0].set_ylabel(r"$W_2(\mu_t, \Pi_\sharp\mu_0)$", fontsize=MIN_FONT)
    ax[0].set_title(rf"Distance to $\Pi_\sharp\mu_0$, $\beta = {beta:g}$", fontsize=MIN_FONT)
    ax[0].legend(fontsize=MIN_FONT)
    ax[1].plot(ts, result["align_E"].mean(axis=1), color=COLORS["measured"], label=r"$|P_E x|^2$, $E = \langle e_1\rangle$")
    ax[1].plot(ts, result["align_F"].mean(axis=1), color=COLORS["accent"], label=r"$|P_F x|^2$, $F = \langle e_2\rangle$")
    ax[1].axvline(math.log(beta), color=COLORS["theory"], ls=":")
    ax[1].set_xlabel(r"$t$", fontsize=MIN_FONT)
    ax[1].set_ylabel("mean alignment", fontsize=MIN_FONT)
    ax[1].set_title(r"Alignment with $E$, then with $F$", fontsize=MIN_FONT)
    ax[1].legend(fontsize=MIN_FONT, loc="center right")
    for a in ax:
        a.tick_params(labelsize=MIN_FONT)
    return ax


@experiment("lowtemp-figure3", chapter="low_temperature", plot=plot_figure3,
            renamed={"seeds": "trials"},
            profiles={"fast": Figure3Config(), "full": Figure3Config(trials=16)},
            paper=PaperScale({"n": 200, "beta": 100.0, "dt": 0.01, "t1": 20.0},
                             note="Sec. 5: Euler at dt = 0.01, d = 3, the Figure 3 matrices, T about 20. The paper "
                                  "shows one run and states no seed count: 16 seeds."))
def figure3(cfg: Figure3Config, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Figure 3: beta = 100, V = diag(-1, 1, -2), B = diag(-1, -1, 1): concentration on +-e1, then +-e2.

    Profiles: ``fast`` 4 seeds, ``full`` 16 (see :class:`Figure3Config`).

    Returns
    -------
    dict with ``ts`` (T,), ``w2`` and ``w1`` (T, trials) the exact W_p(mu_t, Pi_# mu_0), ``align_E`` and
    ``align_F`` (T, trials) the mean |P x|^2, ``exit_times`` (trials,) and ``snapshots`` {t: (n, 3)} of
    seed 0 at t = 0, 3, 20.

    Examples
    --------
    >>> r = figure3(trials=1, n=20, t1=4.0)
    >>> r["w2"].shape, bool(r["align_E"][-1, 0] > 0.9)
    ((17, 1), True)
    """
    x0 = init.uniform_sphere(cfg.trials, cfg.n, 3, generator=generator).to(device)
    save = save_grid(cfg.t1, cfg.save_every)
    ts, xs = simulate_betas(FIG3_B, FIG3_V, [cfg.beta], x0, cfg.t1, dt=cfg.dt, save_at=save)
    xs = xs[:, 0]
    E = lt.check_assumption_1(FIG3_B, FIG3_V)
    F = lt.top_eigenspace(FIG3_V)
    v = E.basis[:, 0].to(x0)
    w2 = w_to_pi(xs, x0, v, 2)
    return {
        "ts": ts,
        "w2": w2,
        "w1": w_to_pi(xs, x0, v, 1),
        "align_E": alignment(xs, E.basis.to(xs)),
        "align_F": alignment(xs, F.basis.to(xs)),
        "exit_times": np.array([exit_time(ts, w2[:, s], cfg.level) for s in range(cfg.trials)]),
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
            statement=f"At $\\beta = {cfg.beta:g}$ the tokens first concentrate on $E$, the top eigenspace of $VB^\\top$ "
                      f"(mean $|P_E x|^2$ at $t = {PHASE1_TIME:g}$)",
            verdict=ledger.verdict(1.0 - aE, TOL_PHASE1), measured=aE, expected=1.0, tolerance=TOL_PHASE1,
            uncertainty=f"worst of {cfg.trials} seeds"),
        ledger.Claim(
            id="B-fig3-phase2-F", paper="B", where="Fig. 3",
            statement=f"On a second time scale they align with $F$, the top eigenspace of $V$ "
                      f"(mean $|P_F x|^2$ at $t = {t_end:g}$)",
            verdict=ledger.verdict(1.0 - aF, TOL_PHASE2), measured=aF, expected=1.0, tolerance=TOL_PHASE2,
            uncertainty=f"worst of {cfg.trials} seeds"),
    ]
