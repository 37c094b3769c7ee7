"""Lemma 6.3, Theorem 6.4 and Figure 3: two tokens, V negative definite: rho decreases and m_d -> 1."""
from __future__ import annotations

import dataclasses
from typing import Any

import torch

from ... import init, ledger, models
from ...integrate import simulate
from ...registry import PaperScale, claims_for, experiment, summary_for
from ._shared import ON_AXIS, V_NEGATIVE

__all__ = ["TwoTokensConfig", "two_tokens", "plot_two_tokens", "two_tokens_summary", "two_tokens_claims", "RHO_FLOOR"]

# Below rho = -1 + 1e-8 a pair is antipodal to rounding and rho no longer moves measurably.
RHO_FLOOR = 1e-8


@dataclasses.dataclass(frozen=True)
class TwoTokensConfig:
    """Figure 3: ``trials`` uniform pairs on S^2, V = diag(``lambdas``) negative definite, inverse
    temperature ``beta``; RK4 with step ``dt`` up to ``t1``, ``save_count`` saved times.

    Examples
    --------
    >>> TwoTokensConfig().lambdas, TwoTokensConfig().seed
    ((-0.5, -1.0, -1.5), 3)
    """

    trials: int = 200
    t1: float = 30.0
    dt: float = 0.05
    save_count: int = 151
    lambdas: tuple[float, ...] = V_NEGATIVE
    beta: float = 1.0
    seed: int = 3


def plot_two_tokens(result: dict[str, Any], ax=None):
    """Figure 3: rho(t) and m_d(t) for every pair.

    Parameters
    ----------
    result : dict
        What :func:`two_tokens` returns.
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
    >>> len(plot_two_tokens(two_tokens(trials=2, t1=2.0, save_count=5)))
    2
    """
    import matplotlib.pyplot as plt

    from ...style import COLORS, FULL_WIDTH, MIN_FONT

    axes = ax
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(FULL_WIDTH, 3.2), layout="constrained")
        fig.suptitle("Two tokens, negative-definite $V$: one curve per pair", fontsize=MIN_FONT + 1)
    axes[0].plot(result["ts"], result["rho"], color=COLORS["measured"], lw=0.4, alpha=0.4)
    axes[0].set_ylabel("$\\rho(t) = \\langle x_1, x_2\\rangle$", fontsize=MIN_FONT + 1)
    axes[0].set_title("(a) correlation", fontsize=MIN_FONT + 1)
    axes[1].plot(result["ts"], result["md"], color=COLORS["measured"], lw=0.4, alpha=0.4)
    axes[1].set_ylabel("$m_d(t)$", fontsize=MIN_FONT + 1)
    axes[1].set_title("(b) mass on $e_d$", fontsize=MIN_FONT + 1)
    for a in axes:
        a.set_xlabel("$t$", fontsize=MIN_FONT + 1)
        a.tick_params(labelsize=MIN_FONT)
    return axes


@experiment("spectral-two-tokens", chapter="spectral_selection", plot=plot_two_tokens, renamed={"saves": "save_count"},
            profiles={"fast": TwoTokensConfig(), "full": TwoTokensConfig(trials=1000, t1=40.0, dt=0.02, save_count=201)},
            paper=PaperScale(note="Figure 3 fixes n = 2 only; V, d, beta, the number of pairs and the horizon are not "
                                  "recovered: d = 3, V = diag(-0.5, -1, -1.5), beta = 1, 1000 pairs, RK4 at 0.02 to "
                                  "T = 40."))
def two_tokens(cfg: TwoTokensConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Figure 3: two tokens, V negative definite: rho(t) decreasing and m_d(t) -> 1.

    Returns
    -------
    dict with ``ts`` (save_count,), ``rho`` and ``md`` (save_count, trials), ``not_decreasing`` (pairs where
    rho ever increases while above -1 + :data:`RHO_FLOOR`), ``max_increase``, ``md_below`` (pairs with
    m_d(t1) < :data:`ON_AXIS`), ``min_md_final``, ``max_rho_final``, ``trials``, ``beta``.

    Examples
    --------
    >>> r = two_tokens(trials=4, t1=20.0, save_count=41)
    >>> r["not_decreasing"], r["md_below"]
    (0, 0)
    """
    V = init.diagonal(cfg.lambdas, device=device)
    x0 = init.uniform_sphere(cfg.trials, 2, len(cfg.lambdas), generator=generator).to(device)
    ts = torch.linspace(0, cfg.t1, cfg.save_count)
    xs = simulate(models.spectral(V, cfg.beta), x0, cfg.t1, dt=cfg.dt, save_at=ts).xs.cpu()
    rho = (xs[:, :, 0] * xs[:, :, 1]).sum(-1)  # (T, trials)
    md = 0.5 * (xs[:, :, 0, -1] ** 2 + xs[:, :, 1, -1] ** 2)
    active = rho[:-1] > -1 + RHO_FLOOR  # below this rho sits at -1 to rounding
    incr = torch.diff(rho, dim=0)
    not_decreasing = ((incr >= 0) & active).any(0)
    return dict(
        ts=ts, rho=rho, md=md, beta=cfg.beta,
        not_decreasing=int(not_decreasing.sum()),
        max_increase=incr.amax().item(),
        md_below=int((md[-1] < ON_AXIS).sum()),
        min_md_final=md[-1].amin().item(),
        max_rho_final=rho[-1].amax().item(),
        trials=cfg.trials,
    )


@summary_for("spectral-two-tokens")
def two_tokens_summary(result: dict[str, Any]) -> dict[str, Any]:
    """What the chapter and the claims read: the pairs where rho ever stops decreasing
    (``not_decreasing``), the pairs whose distance to the limit, 1 - m_d, is larger at t_end than at
    t_end / 2 (``not_approaching``; both below 1e-12 counts as arrived), the smallest final m_d, the
    pairs below the printed mark :data:`ON_AXIS`, and the number of pairs.

    Examples
    --------
    >>> r = dict(ts=[0.0, 1.0, 2.0], md=[[0.3, 0.5], [0.9, 0.6], [0.99, 0.55]], not_decreasing=0, md_below=2, trials=2)
    >>> s = two_tokens_summary(r)
    >>> s["not_approaching"], s["min_md_final"]
    (1, 0.55)
    """
    import numpy as np

    ts, md = np.asarray(result["ts"], dtype=float), np.asarray(result["md"], dtype=float)
    mid = int(np.argmin(np.abs(ts - ts[-1] / 2)))
    gap_mid, gap_end = 1.0 - md[mid], 1.0 - md[-1]
    not_approaching = int(((gap_end > gap_mid) & (gap_end > 1e-12)).sum())
    return dict(not_decreasing=int(result["not_decreasing"]), not_approaching=not_approaching, t_mid=float(ts[mid]),
                t_end=float(ts[-1]), min_md_final=float(md[-1].min()), md_below=int(result["md_below"]),
                trials=int(result["trials"]))


@claims_for("spectral-two-tokens")
def two_tokens_claims(result: dict[str, Any], cfg: TwoTokensConfig) -> list[ledger.Claim]:
    """Lemma 6.3 / Theorem 6.4, two cases judged in every pair (theorems: one exception contradicts
    them): rho strictly decreases while above -1 + :data:`RHO_FLOOR` (rounding), and m_d approaches
    1 (1 - m_d smaller at t_end than at t_end / 2). The mark m_d(t_end) >= :data:`ON_AXIS` is printed.

    Examples
    --------
    >>> r = dict(ts=[0.0, 1.0, 2.0], md=[[0.3, 0.5], [0.9, 0.6], [0.99, 0.7]], not_decreasing=0, md_below=2, trials=2)
    >>> [c.status for c in two_tokens_claims(r, TwoTokensConfig())]
    ['reproduced']
    >>> c = two_tokens_claims(dict(r, not_decreasing=3), TwoTokensConfig())[0]
    >>> c.status, c.why
    ('partly', 'holds: m_d -> 1 (Thm. 6.4); fails: rho decreasing (Lemma 6.3)')
    """
    s = two_tokens_summary(result)
    v = ledger.cases({"rho decreasing (Lemma 6.3)": ledger.verdict(s["not_decreasing"] == 0),
                      "m_d -> 1 (Thm. 6.4)": ledger.verdict(s["not_approaching"] == 0)})
    return [ledger.Claim(
        id="C-fig3-two-tokens", paper="C", where="Lemma 6.3, Thm. 6.4, Fig. 3", statement="Two tokens, $V \\prec 0$: $\\rho$ decreases, $m_d \\to 1$",
        quote="Then, $\\rho(t)$ is strictly decreasing on $\\rho(t)\\in(-1,1)$.", basis="paper",
        test=f"in every one of {s['trials']} random pairs: rho(t) falls between saved times while above -1 + {RHO_FLOOR:g} "
             f"(rounding), and 1 - m_d is smaller at t = {s['t_end']:g} than at t = {s['t_mid']:g} (m_d -> 1; the theorem "
             f"gives no rate). Printed, not judged: m_d(t_end) >= {ON_AXIS:g}",
        verdict=v, measured={"pairs where rho rises": s["not_decreasing"], "pairs where 1 - m_d grows": s["not_approaching"],
                             "smallest m_d(t_end)": s["min_md_final"]},
        expected="0 exceptions", tolerance=0, uncertainty=f"{s['trials']} pairs")]
