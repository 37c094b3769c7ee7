"""``phase-rank-independence``: at fixed kappa and ``eta_L = sqrt(L)``, adapter ranks 1, 4 and 16 give
the same stationary deviation (paper A, Sec. 4.1 and Fig. 2).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import ledger
from ...models.layer_maps import adapter_chain, near_u1
from ...registry import PaperScale, claims_for, experiment
from ...report import fmt
from ...style import COLORS, MIN_FONT
from ...theory import lora_depth as th
from ._shared import F64, _gen, _plot_ax, window_mean

__all__ = ["RankIndependenceConfig", "rank_independence", "rank_independence_claims", "plot_rank_independence"]

# Rank independence: every pair of levels within 3 combined standard errors.
RANK_Z = 3.0


@dataclasses.dataclass(frozen=True)
class RankIndependenceConfig:
    """Rank independence at fixed kappa (eta_L = sqrt(L)): V = diag(1, linspace(0.5, 0.1, d - 1)),
    ``trials`` samples of ``n`` tokens started at ``N(u1 + delta0 g)`` for each rank of ``ranks``
    (adapter entries ``s_a = d sqrt(kappa / r)``), depth ``L``, ``blocks`` blocks of L layers, levels over
    ``t >= t_from``; the j-th rank is drawn with seed ``seed + j``.

    Examples
    --------
    >>> RankIndependenceConfig().ranks, RankIndependenceConfig().d
    ((1, 4, 16), 16)
    """

    ranks: tuple[int, ...] = (1, 4, 16)
    kappa: float = 0.01
    d: int = 16
    n: int = 8
    trials: int = 80
    L: int = 32
    delta0: float = 0.05
    blocks: int = 5
    t_from: float = 2.0
    seed: int = 2


def plot_rank_independence(result: dict, ax=None):
    """E sum_i (1 - <x_i,u1>^2) against macroscopic time for each rank at equal kappa.

    Parameters
    ----------
    result : dict
        What :func:`rank_independence` returns.
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
    >>> ax = plot_rank_independence(rank_independence(trials=2, L=8, blocks=2, t_from=1.0, d=4, ranks=(1, 2)))
    >>> len(ax.get_lines())
    3
    """
    ax = _plot_ax(ax)
    for r, (m, se) in zip(result["ranks"], result["curves"]):
        ax.plot(result["t"], m, label=f"rank {r}")
        ax.fill_between(result["t"], m - 2 * se, m + 2 * se, alpha=0.25)
    ax.axhline(result["eq21"], color=COLORS["theory"], ls="--", lw=0.8, label="prediction (21)")
    ax.set_xlabel(r"macroscopic time $t$ = layers$/L$", fontsize=MIN_FONT + 1)
    ax.set_ylabel(r"$\mathbb{E}\sum_i (1 - \langle x_i, u_1\rangle^2)$", fontsize=MIN_FONT + 1)
    ax.set_title(rf"Deviation from $u_1$ at equal $\kappa$, ranks {', '.join(str(int(r)) for r in result['ranks'])}",
                 fontsize=MIN_FONT + 1)
    ax.tick_params(labelsize=MIN_FONT)
    ax.legend(fontsize=MIN_FONT)
    return ax


@experiment("phase-rank-independence", chapter="phase_transitions", plot=plot_rank_independence,
            profiles={"fast": RankIndependenceConfig(), "full": RankIndependenceConfig(trials=1000, L=512)},
            paper=PaperScale(note="Rank independence is Fig. 2's LLM observation; the paper runs the toy model for it "
                                  "at no stated size: d = 16, kappa = 0.01, ranks 1, 4, 16, n = 8, depth L = 512, "
                                  "1000 samples per rank."),
            renamed={"per": "trials", "t_end": "blocks"})
def rank_independence(cfg: RankIndependenceConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Ranks 1, 4, 16 at the same kappa (d = 16, ``eta_L = sqrt(L)``): ``E sum_i (1 - <x_i,u1>^2)`` over
    time per rank, and the time-averaged stationary levels with standard errors. Profiles: ``fast``
    L = 32, 80 samples per rank; ``full`` L = 512, 1000 samples.

    Returns
    -------
    dict with ``curves`` (one (mean (S,), s.e. (S,)) pair per rank), ``levels`` and ``se`` (R,),
    ``max_z`` (largest pairwise difference of levels in combined standard errors) and ``eq21``.

    Examples
    --------
    >>> r = rank_independence(trials=2, L=8, blocks=2, t_from=1.0, d=4, ranks=(1, 2))
    >>> r["levels"].shape, bool(r["max_z"] >= 0)
    ((2,), True)
    """
    d, n, per, L, ranks = cfg.d, cfg.n, cfg.trials, cfg.L, list(cfg.ranks)
    if len(ranks) < 2:
        raise ValueError(f"ranks needs at least two ranks to compare, got {ranks}")
    lam = torch.cat([torch.ones(1, dtype=F64), torch.linspace(0.5, 0.1, d - 1, dtype=F64)])
    V = torch.diag(lam).to(device)
    curves, levels, ses = [], [], []
    for j, r in enumerate(ranks):
        g = generator if j == 0 else _gen(cfg.seed + j)  # the j-th rank: seed + j
        x0 = near_u1(per, n, d, cfg.delta0, g, device)
        s = d * math.sqrt(cfg.kappa / r)  # r s^2 / d^2 = kappa
        out = adapter_chain(V, x0, L, cfg.blocks, r, torch.full((per,), math.sqrt(L) * s, dtype=F64), g)
        curves.append((out["q"].mean(1).numpy(), (out["q"].std(1) / math.sqrt(per)).numpy()))
        m, e = window_mean(out["q"], out["t"], cfg.t_from)
        levels.append(m)
        ses.append(e)
    levels, ses = np.array(levels), np.array(ses)
    return {"ranks": ranks, "t": out["t"], "curves": curves, "levels": levels, "se": ses, "max_z": _max_pair_z(levels, ses),
            "eq21": th.stationary_deviation(lam, cfg.kappa, n), "kappa": cfg.kappa, "d": d, "n": n, "L": L, "per_rank": per}


def _max_pair_z(levels: Any, se: Any) -> float:
    """The largest ``|level_a - level_b| / sqrt(se_a^2 + se_b^2)`` over pairs: levels, se (R,), R >= 2."""
    levels, se = np.asarray(levels, dtype=float), np.asarray(se, dtype=float)
    R = len(levels)
    return float(max(abs(levels[a] - levels[b]) / math.hypot(se[a], se[b]) for a in range(R) for b in range(a + 1, R)))


@claims_for("phase-rank-independence")
def rank_independence_claims(result: dict[str, Any], cfg: RankIndependenceConfig) -> list[ledger.Claim]:
    """Sec. 4.1 / Fig. 2: at fixed kappa every pair of ranks gives the same level within :data:`RANK_Z`
    combined standard errors.

    Examples
    --------
    >>> r = {"levels": np.array([0.865, 0.809, 0.857]), "se": np.array([0.021, 0.027, 0.024]), "ranks": [1, 4, 16]}
    >>> [c.status for c in rank_independence_claims(r, RankIndependenceConfig())]
    ['reproduced']
    >>> [c.status for c in rank_independence_claims(dict(r, levels=np.array([0.865, 0.6, 0.857])), RankIndependenceConfig())]
    ['not-reproduced']
    """
    z = _max_pair_z(result["levels"], result["se"])
    ranks = ", ".join(str(int(r)) for r in result["ranks"])
    return [ledger.Claim(
        id="A-rank-independence", paper="A", where="Sec. 4.1 / Fig. 2",
        statement=rf"At fixed $\kappa$, ranks {ranks} give the same deviation within error bars",
        verdict=ledger.verdict(z, RANK_Z), measured=f"max z {fmt(z, 2)}", expected=f"< {RANK_Z:g}", tolerance=RANK_Z,
        uncertainty="z in combined standard errors")]
