"""``intro-consensus``: on the consensus manifold (all tokens at one point) the simulator against the
closed form of paper C, Sec. 4.1 (:mod:`companion.theory.consensus`).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import torch

from ... import ledger
from ...init import random_orthogonal
from ...integrate import simulate
from ...metrics import modal_masses
from ...models import Sphere
from ...registry import PaperScale, claims_for, experiment, summary_for
from ...report import below
from ...theory.consensus import consensus_modal_masses, consensus_solution

__all__ = ["ConsensusConfig", "consensus", "plot_consensus", "consensus_summary", "consensus_claims", "TOL_EXACT", "TOL_SLOPE"]

# The simulator must match the closed form to integration accuracy (dopri5 at rtol 1e-10).
TOL_EXACT = 1e-8
# d/dt log(p_k/p_1) from the first and last samples: exact up to the integration error, far below 1e-6.
TOL_SLOPE = 1e-6


@dataclasses.dataclass(frozen=True)
class ConsensusConfig:
    """All ``n`` tokens at one point; V symmetric with eigenvalues ``lambdas`` (random eigenvectors),
    an unrelated random A, inverse temperature ``beta``; Dormand-Prince (``rtol``, ``atol``) up to
    ``t1``, sampled at ``samples`` equally spaced times.

    Examples
    --------
    >>> ConsensusConfig().lambdas
    (1.0, 0.5, -0.3)
    """

    n: int = 64
    lambdas: tuple[float, ...] = (1.0, 0.5, -0.3)
    beta: float = 1.0
    t1: float = 5.0
    samples: int = 21
    rtol: float = 1e-10
    atol: float = 1e-12
    seed: int = 1


def plot_consensus(result: dict[str, Any], ax=None):
    """Modal masses p_k(t): closed form (lines) against the simulator (markers); returns the axes.

    Parameters
    ----------
    result : dict
        What :func:`consensus` returns.
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
    >>> ax = plot_consensus(consensus(n=4, t1=1.0))
    >>> len(ax.get_lines())
    6
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.4))
    ts = result["times"]
    for k, lam in enumerate(result["lambdas"]):
        line, = ax.plot(ts, result["p_theory"][:, k], lw=1.6, label=f"$\\lambda_{k + 1} = {lam:g}$")
        ax.plot(ts, result["p_sim"][:, k], "o", ms=4, mfc="none", color=line.get_color())
    ax.set_xlabel("t")
    ax.set_ylabel("modal mass $p_k(t)$")
    ax.legend(fontsize=8, frameon=False)
    return ax


@experiment("intro-consensus", chapter="introduction", plot=plot_consensus,
            profiles={"fast": ConsensusConfig(), "full": ConsensusConfig()},
            paper=PaperScale(note="Paper C's consensus closed form (Sec. 4.1) comes with no numerical setting; the "
                                  "check is exact at any size, so full = fast."))
def consensus(cfg: ConsensusConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """All n tokens start at one point x0: the simulator against the consensus closed form.

    The model is paper C's (2.2) generalised: ``Sphere(A, V, beta)`` with a symmetric V of the given
    eigenvalues (random eigenvectors) and an unrelated random A, since on the consensus manifold the
    attention weights are uniform whatever A and beta are. Both profiles are the same: the check is
    exact, and its size does not change it.

    Returns
    -------
    dict with ``times`` (T,), ``p_sim`` and ``p_theory`` (T, d) modal masses, ``max_mass_error``,
    ``max_state_error`` (simulated token vs ``e^{tV} x0 / |e^{tV} x0|``), ``max_spread`` (largest
    distance between two tokens: 0 if the manifold is invariant), ``log_ratio_slopes`` (measured
    d/dt log(p_k / p_1) for k >= 2, from the first and last samples) and ``slopes_theory``
    (2 (lambda_k - lambda_1)).

    Examples
    --------
    >>> r = consensus(n=4, t1=1.0)
    >>> r["max_mass_error"] < 1e-8, r["max_spread"] < 1e-12
    (True, True)
    """
    d = len(cfg.lambdas)
    kw = {"dtype": torch.float64, "generator": generator}  # drawn on the CPU: one problem on every device
    E = random_orthogonal(d, generator=generator)  # eigenvectors (columns)
    lam = torch.tensor(cfg.lambdas, dtype=torch.float64)
    V = E @ torch.diag(lam) @ E.T
    A = torch.randn(d, d, **kw)
    x = torch.randn(d, **kw)
    E, lam, V, A, x0 = (T.to(device) for T in (E, lam, V, A, x / x.norm()))
    X0 = x0.expand(1, cfg.n, d).clone()
    ts = torch.linspace(0.0, cfg.t1, cfg.samples, dtype=torch.float64)
    sol = simulate(Sphere(A=A, V=V, beta=cfg.beta), X0, cfg.t1, method="dopri5", rtol=cfg.rtol, atol=cfg.atol,
                   save_at=ts.tolist())
    xs = sol.xs[:, 0]  # (T, n, d)
    p_sim = modal_masses(xs, E)  # (T, d): averaged over tokens (all equal on the manifold)
    p_theory = consensus_modal_masses((E.T @ x0) ** 2, lam, ts.to(device))
    exact = consensus_solution(x0, V, ts.to(device))  # (T, d)
    log_ratio = torch.log(p_sim[:, 1:] / p_sim[:, :1])
    slopes = (log_ratio[-1] - log_ratio[0]) / (ts[-1] - ts[0]).item()
    return {
        "times": ts.tolist(),
        "lambdas": list(cfg.lambdas),
        "p_sim": p_sim,
        "p_theory": p_theory,
        "max_mass_error": float((p_sim - p_theory).abs().max()),
        "max_state_error": float((xs - exact[:, None, :]).norm(dim=-1).max()),
        "max_spread": float((xs - xs[:, :1]).norm(dim=-1).max()),
        "log_ratio_slopes": slopes.cpu().tolist(),
        "slopes_theory": [2 * (lk - cfg.lambdas[0]) for lk in cfg.lambdas[1:]],
        "stats": dict(sol.stats),
    }


@summary_for("intro-consensus")
def consensus_summary(result: dict[str, Any]) -> dict[str, Any]:
    """What the chapter and the claims read: the largest mass error, the tokens' spread, the state
    error, ``error`` (the larger of mass error and spread, the closed-form row's measure), the measured
    and closed-form log-ratio slopes and ``slope_error`` (their largest difference).

    Examples
    --------
    >>> s = consensus_summary(dict(max_mass_error=1e-13, max_spread=0.0, max_state_error=1e-12,
    ...                            log_ratio_slopes=[-1.0, -2.6000001], slopes_theory=[-1.0, -2.6]))
    >>> s["error"], round(s["slope_error"], 9)
    (1e-13, 1e-07)
    """
    slopes = [float(x) for x in result["log_ratio_slopes"]]
    theory = [float(x) for x in result["slopes_theory"]]
    return dict(max_mass_error=float(result["max_mass_error"]), max_spread=float(result["max_spread"]),
                max_state_error=float(result.get("max_state_error", float("nan"))),
                error=max(float(result["max_mass_error"]), float(result["max_spread"])),
                slopes=slopes, slopes_theory=theory, slope_error=max(abs(a - b) for a, b in zip(slopes, theory)))


@claims_for("intro-consensus")
def consensus_claims(result: dict[str, Any], cfg: ConsensusConfig) -> list[ledger.Claim]:
    """Paper C, Sec. 4.1: the closed form of the modal masses (within :data:`TOL_EXACT`, the
    integration's accuracy, tokens kept together) and the log-ratio slopes 2 (lambda_k - lambda_1)
    (within :data:`TOL_SLOPE`): the paper's formulas are exact, the tolerances are the method's error.

    Examples
    --------
    >>> r = consensus(n=4, t1=1.0)
    >>> [c.status for c in consensus_claims(r, ConsensusConfig())]
    ['reproduced', 'reproduced']
    >>> r["log_ratio_slopes"] = [s + 1e-3 for s in r["log_ratio_slopes"]]  # a slope off by 1e-3
    >>> [c.status for c in consensus_claims(r, ConsensusConfig())]
    ['reproduced', 'not-reproduced']
    """
    s = consensus_summary(result)
    return [
        ledger.Claim(
            id="C-4.1-consensus-closed-form", paper="C", where="Sec. 4.1, eq. (4.4)",
            statement=r"On the consensus manifold the modal masses follow $p_k(t) = p_k(0)\, e^{2\lambda_k t} / \sum_l p_l(0)\, e^{2\lambda_l t}$.",
            quote=r"\displaystyle p_{k}(t)=\frac{p_{k}(0)e^{2\lambda_{k}t}}{\sum_{l=1}^{d}p_{l}(0)e^{2\lambda_{l}t}},\quad\forall~k\in[d].",
            basis="paper",
            test=f"largest |p_sim - p_closed form| and largest distance between two tokens <= {TOL_EXACT:g}, the accuracy of "
                 f"the Dormand-Prince integration (rtol {cfg.rtol:g}); the formula is exact",
            verdict=ledger.verdict(s["error"], TOL_EXACT), measured=below(s["error"]), expected=0.0, tolerance=TOL_EXACT),
        ledger.Claim(
            id="C-4.1-log-ratio-slopes", paper="C", where="Sec. 4.1",
            statement=r"$\frac{d}{dt}\log(p_k/p_m) = 2(\lambda_k - \lambda_m)$: only the largest eigenvalue on the initial support survives.",
            quote=r"\displaystyle\frac{d}{dt}\log\frac{p_{k}(t)}{p_{m}(t)}=\frac{\dot{p}_{k}}{p_{k}}-\frac{\dot{p}_{m}}{p_{m}}=2(\lambda_{k}-\lambda_{m}).",
            basis="paper",
            test=f"measured slopes of log(p_k/p_1) between the first and last samples against 2 (lambda_k - lambda_1): largest "
                 f"difference <= {TOL_SLOPE:g} (integration error over the run)",
            verdict=ledger.verdict(s["slope_error"], TOL_SLOPE), measured=[round(x, 6) for x in s["slopes"]],
            expected=s["slopes_theory"], tolerance=TOL_SLOPE),
    ]
