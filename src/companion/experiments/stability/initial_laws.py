"""stability-initial-laws: paper A, Lemma C.12 (two initial laws under one rescaled dynamics (87):
W2(mu_t, nu_t) <= e^{2 L t} W2(mu_0, nu_0))."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import init, ledger, metrics
from ...attention import rescaled_field_jacobian
from ...integrate import simulate
from ...models import Rescaled
from ...registry import PaperScale, claims_for, experiment, summary_for
from ...report import fmt
from ._shared import CHAPTER, TOL_BOUND_REL, bound_row, unit_op

__all__ = ["InitialLawsConfig", "initial_laws", "initial_laws_claims", "initial_laws_summary", "plot_initial_laws"]


@dataclasses.dataclass(frozen=True)
class InitialLawsConfig:
    """Lemma C.12: the rescaled dynamics (87) in dimension ``d`` with ``V = Q diag(lambdas) Q^T``
    (Q random orthogonal) and ``A`` Gaussian of operator norm ``norm_A``, drawn for each of
    ``trials`` trials; ``n`` tokens uniform in B(0, 1) and the same tokens moved by ``delta g_i``
    (g_i Gaussian, one direction per trial) for each ``delta``; RK4 step ``dt`` to ``t1`` with
    ``save_count`` saved times; the field's Lipschitz constant is the largest Jacobian norm at the
    tokens of both measures and ``lip_points`` points uniform in the ball holding them.

    Examples
    --------
    >>> InitialLawsConfig().deltas
    (0.001, 0.01, 0.1)
    """

    d: int = 3
    n: int = 16
    lambdas: tuple[float, ...] = (0.5, 0.1, -0.4)
    norm_A: float = 1.0
    deltas: tuple[float, ...] = (1e-3, 1e-2, 1e-1)
    trials: int = 2
    t1: float = 3.0
    dt: float = 0.02
    save_count: int = 16
    lip_points: int = 128
    seed: int = 0

    def __post_init__(self) -> None:
        if len(self.lambdas) != self.d:
            raise ValueError(f"lambdas must hold d = {self.d} eigenvalues, got {len(self.lambdas)}")
        if not self.deltas or min(self.deltas) <= 0 or self.trials < 1 or self.save_count < 2:
            raise ValueError(f"deltas must be positive, trials >= 1 and save_count >= 2, got {self.deltas!r}, {self.trials}, "
                             f"{self.save_count}")


def plot_initial_laws(result: dict[str, Any], ax=None):
    """W2(mu_t, nu_t) / W2(mu_0, nu_0) per (trial, delta), with e^{L t} and e^{2 L t}.

    Parameters
    ----------
    result : dict
        A result of :func:`initial_laws`.
    ax : matplotlib.axes.Axes, optional
        The axes to draw on; None opens a new figure.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = plot_initial_laws(initial_laws(n=6, trials=1, deltas=(1e-2,), t1=1.0, save_count=3, lip_points=8))
    >>> len(ax.get_lines())
    3
    """
    import matplotlib.pyplot as plt

    from ...style import COLORS

    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 3.6), layout="constrained")
    ts = result["ts"]
    g = result["growth"].reshape(-1, len(ts))
    for i, row in enumerate(g):
        ax.plot(ts, row, color=COLORS["measured"], lw=0.8, alpha=0.7, label="measured" if i == 0 else None)
    for s in range(result["L"].shape[0]):
        ax.plot(ts, np.exp(result["L"][s] * ts), "--", color=COLORS["reference"], lw=1,
                label=r"$e^{Lt}$ (the proof's Grönwall)" if s == 0 else None)
        ax.plot(ts, np.exp(2 * result["L"][s] * ts), "-", color=COLORS["bound"], lw=1, label=r"$e^{2Lt}$ (eq. 88)" if s == 0 else None)
    ax.set(yscale="log")
    ax.set_xlabel("$t$", fontsize=10)
    ax.set_ylabel(r"$W_2(\mu_t, \nu_t) / W_2(\mu_0, \nu_0)$", fontsize=10)
    ax.set_title("Growth of the distance between two laws", fontsize=10)
    ax.legend(fontsize=10)
    ax.tick_params(labelsize=10)
    return ax


@experiment("stability-initial-laws", chapter=CHAPTER, plot=plot_initial_laws, renamed={"seeds": "trials", "n_save": "save_count"},
            profiles={"fast": InitialLawsConfig(), "full": InitialLawsConfig(n=64, trials=8, lip_points=512, save_count=31)},
            paper=PaperScale(note="Lemma C.12 is a proof step (after Piccoli and Rossi 2013); the paper runs no experiment. "
                                  "The matrices, tokens, displacements and horizon are ours."))
def initial_laws(cfg: InitialLawsConfig, generator: torch.Generator, device: Any) -> dict[str, Any]:
    """Lemma C.12: two initial laws under one rescaled dynamics (87); W2(mu_t, nu_t) against
    ``e^{2 L t} W2(mu_0, nu_0)``, L the largest Lipschitz constant in x of the field X[mu_s] up to t
    (the largest operator norm of :func:`companion.attention.rescaled_field_jacobian` over the
    sampled points).

    Returns
    -------
    dict
        ``ts (T,)``, ``deltas (D,)``, ``w2 (S, D, T)``, ``growth (S, D, T)`` (W2 / W2 at t = 0),
        ``L (S, T)`` (running maximum over the saved times of the field's Lipschitz constant),
        ``ratio (S, D, T)`` (W2_t / (e^{2 L t} W2_0)), ``ratio_proof`` (the same with e^{L t}),
        ``max_ratio`` and ``max_ratio_proof`` (over t > 0); S = ``trials``.

    Examples
    --------
    >>> r = initial_laws(n=6, trials=1, deltas=(1e-2,), t1=1.0, save_count=3, lip_points=8)
    >>> r["w2"].shape, bool(r["max_ratio"] <= 1)
    ((1, 1, 3), True)
    """
    g = generator
    d, S, D, n = cfg.d, cfg.trials, len(cfg.deltas), cfg.n
    lam = torch.tensor(cfg.lambdas, dtype=torch.float64)
    Q = init.random_orthogonal(d, trials=S, generator=g)
    V = Q @ torch.diag_embed(lam.expand(S, d)) @ Q.transpose(-1, -2)
    A = cfg.norm_A * unit_op(torch.randn(S, d, d, generator=g, dtype=torch.float64))
    x0 = init.ball(S, n, d, 1.0, generator=g)
    dirs = torch.randn(S, n, d, generator=g, dtype=torch.float64)
    y0 = torch.stack([x0 + dl * dirs for dl in cfg.deltas], dim=1)  # (S, D, n, d)
    ts = torch.linspace(0.0, cfg.t1, cfg.save_count, dtype=torch.float64)
    dev = torch.device(device)
    base = simulate(Rescaled(A=A.to(dev), V=V.to(dev)), x0.to(dev), cfg.t1, method="rk4", dt=cfg.dt, save_at=ts).xs
    AA = A.repeat_interleave(D, 0).to(dev)
    VV = V.repeat_interleave(D, 0).to(dev)
    pert = simulate(Rescaled(A=AA, V=VV), y0.reshape(S * D, n, d).to(dev), cfg.t1, method="rk4", dt=cfg.dt, save_at=ts).xs
    T = len(ts)
    w2 = np.zeros((S, D, T))
    lip = np.zeros((S, T))
    for k in range(T):
        xb = base[k].repeat_interleave(D, 0)
        w2[:, :, k] = metrics.wasserstein(xb, pert[k], p=2, solver="exact").cpu().numpy().reshape(S, D)
        toks = torch.cat([base[k], pert[k].reshape(S, D * n, d)], dim=1)
        Rk = toks.norm(dim=-1).amax(-1)  # (S,)
        pts = init.ball(S, cfg.lip_points, d, 1.0, generator=g).to(dev) * Rk[:, None, None]
        J = rescaled_field_jacobian(torch.cat([toks, pts], dim=1), base[k], A.to(dev), V.to(dev), float(ts[k]))
        lip[:, k] = torch.linalg.matrix_norm(J, ord=2).amax(-1).cpu().numpy()
    L = np.maximum.accumulate(lip, axis=1)
    t_np = ts.numpy()
    growth = w2 / w2[..., :1]
    ratio = growth / np.exp(2 * L[:, None, :] * t_np)
    ratio_proof = growth / np.exp(L[:, None, :] * t_np)
    return {"ts": ts, "deltas": np.asarray(cfg.deltas), "w2": w2, "growth": growth, "L": L, "ratio": ratio,
            "ratio_proof": ratio_proof, "max_ratio": float(ratio[..., 1:].max()),
            "max_ratio_proof": float(ratio_proof[..., 1:].max()), "max_growth": float(growth[..., 1:].max())}


QUOTE_88 = (r"We consider two probability measures $\mu_{0},\nu_{0}\in\mathcal{P}_{c}(\mathbb{R}^{d})$ , then "
            r"W_{2}(\mu_{t},\nu_{t})\leq e^{2Lt}W_{2}(\mu_{0},\nu_{0}), (88) where $L$ is given by the Lipschitz constant "
            r"of the function $x\mapsto\Phi^{t}_{\mathcal{X}[\mu]}(x)$ restricted to $x\in B(0,R).$")


@summary_for("stability-initial-laws")
def initial_laws_summary(result: dict[str, Any]) -> dict[str, Any]:
    """Every number the chapter and the claims read from an :func:`initial_laws` result: the largest
    ratios to e^{2Lt} and to the proof's e^{Lt} over t > 0, the ratio at the last time, the largest growth.

    Examples
    --------
    >>> s = initial_laws_summary({"max_ratio": 0.9, "max_ratio_proof": 0.95, "ratio": np.full((1, 1, 3), 0.5),
    ...                           "max_growth": 2.0})
    >>> s["ratio"], s["end"], s["proof_holds"]
    (0.9, 0.5, 'holds')
    """
    cfg = result.get("config", {})
    join = lambda xs: ", ".join(fmt(x) for x in xs)  # noqa: E731
    mp = float(result["max_ratio_proof"])
    return {
        "setup": (f"d = {cfg.get('d')}, V with eigenvalues {join(cfg.get('lambdas', []))}, n = {cfg.get('n')} tokens, "
                  f"displacements {join(cfg.get('deltas', []))}, {cfg.get('trials')} draws, T = {fmt(cfg.get('t1', math.nan))}, "
                  f"L sampled at {cfg.get('lip_points')} points") if cfg else "",
        "ratio": float(result["max_ratio"]), "ratio_proof": mp, "end": float(np.asarray(result["ratio"])[..., -1].max()),
        "growth": float(result.get("max_growth", math.nan)),
        "proof_holds": "holds" if mp <= 1.0 + TOL_BOUND_REL else "fails",
    }


@claims_for("stability-initial-laws")
def initial_laws_claims(result: dict[str, Any], cfg: InitialLawsConfig) -> list[ledger.Claim]:
    """Lemma C.12: eq. (88) against the largest ratio W2_t / (e^{2 L t} W2_0) over t > 0, trials
    and displacements (above 1 + :data:`~companion.experiments.stability.TOL_BOUND_REL`: violated).

    Examples
    --------
    >>> r = {"max_ratio": 0.9, "max_ratio_proof": 0.95, "ratio": np.full((1, 1, 3), 0.5), "L": np.ones((1, 3))}
    >>> [c.status for c in initial_laws_claims(r, InitialLawsConfig())]
    ['reproduced']
    >>> [c.status for c in initial_laws_claims(dict(r, max_ratio=1.5), InitialLawsConfig())]
    ['not-reproduced']
    """
    s = initial_laws_summary(result)
    return [bound_row("A-lemmaC.12-initial-laws", "Lemma C.12, eq. (88)",
                      r"Same weights, two initial laws: $W_2(\mu_t, \nu_t) \le e^{2Lt}\, W_2(\mu_0, \nu_0)$, $L$ the "
                      r"largest Lipschitz constant of the field $\mathcal X[\mu_s]$, $s \le t$, on the ball of the "
                      rf"supports (largest ratio over $t > 0$; {s['end']:.2g} at the last time; with the proof's $e^{{Lt}}$, "
                      rf"which ignores that $\nu_t$ follows $\mathcal X[\nu_t]$, the largest ratio is {s['ratio_proof']:.3g})",
                      s["ratio"], expected="<= 1", quote=QUOTE_88,
                      test=("the largest ratio W2(mu_t, nu_t) / (e^{2Lt} W2(mu_0, nu_0)) over t > 0, draws and "
                            "displacements, L measured on the ball of the supports; violated above 1 + 1e-9 (float64)"))]
