"""Chapter "stability under perturbations": paper A, Section 3 (Prop. 3.1, Prop. 3.3, Remark 3.4)
and the orthogonal-projection mitigation it motivates.

Every experiment returns a dict of numpy arrays and floats (the numbers the chapter prints) and is
registered for ``python -m companion run NAME``. All runs are float64, RK4, beta = 1 (the paper's
setting), batched: each perturbation is one trial of a single :func:`companion.simulate` call.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from . import experiment, plots
from .. import fits, init, metrics
from ..integrate import simulate
from ..models import Euclidean, Sphere
from ..report import PROFILES as _PROFILE_NAMES
from ..theory import lora

__all__ = [
    "Prop31Config",
    "Prop33Config",
    "prop31_wasserstein",
    "prop33_families",
    "prop33_map",
    "remark34_ranks",
    "mitigation",
    "plot_prop31_wasserstein",
    "plot_prop33_families",
    "plot_prop33_map",
    "plot_remark34_ranks",
    "plot_mitigation",
]

CHAPTER = "stability"


def _check_profile(profile: str) -> None:
    if profile not in _PROFILE_NAMES:
        raise ValueError(f"profile must be one of {_PROFILE_NAMES}, got {profile!r}")


def _unit_op(M: torch.Tensor) -> torch.Tensor:
    """Scale each (d, d) matrix of a (..., d, d) batch to operator norm 1."""
    return M / torch.linalg.matrix_norm(M, ord=2)[..., None, None]


# ----------------------------------------------------------------------------- Proposition 3.1


@dataclasses.dataclass(frozen=True)
class Prop31Config:
    """Sizes of the finite-time experiment (paper A, Prop. 3.1; Euclidean dynamics, eq. 6).

    ``A`` and ``V`` are fixed Gaussian matrices scaled to operator norms ``norm_A``, ``norm_V``;
    each seed draws tokens uniform in B(0, radius) and unit-norm perturbation directions; a
    perturbation of size eps has ``|dA|_op = eps`` and/or ``|dV|_op = eps`` (family "A", "V", "both").
    """

    d: int = 4
    n: int = 32
    seeds: int = 4
    radius: float = 1.0
    norm_A: float = 1.0
    norm_V: float = 1.0
    eps: tuple[float, ...] = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
    families: tuple[str, ...] = ("V", "A", "both")
    t1: float = 2.0
    n_save: int = 21
    dt: float = 0.05
    seed: int = 0


PROP31 = {
    "fast": Prop31Config(),
    "full": Prop31Config(d=8, n=256, seeds=16, eps=(1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1), n_save=41, dt=0.02),
}


@experiment("prop31_wasserstein", chapter=CHAPTER)
def prop31_wasserstein(profile: str = "fast", device: str = "cpu", **overrides: Any) -> dict[str, Any]:
    """Prop. 3.1: W2 between base and perturbed token measures over time, against bound (14).

    Returns
    -------
    dict
        With ``ts (T,)``, ``eps (E,)``, ``families``, ``w2 (F, E, S, T)`` (POT exact W2 per seed),
        ``log10_bound`` and ``log10_bound_appendix (F, E, S, T)`` (log10 of the W2 bound, may be inf),
        ``log_log_excess (F, E, S, T)`` (ln ln(bound / L_t), always finite for t > 0),
        ``slack (F, E, S, T-1)`` (log10 bound / measured, t > 0), ``all_below`` (bool),
        ``min_slack`` (float), ``slopes`` (F,) fitted d log W2 / d log eps at ``t1``,
        ``bound_eps_exponent`` (F,) the same slope for the bound at t = 0 (1 if dA = 0, else 1/2).

    Examples
    --------
    >>> r = prop31_wasserstein(n=6, seeds=1, eps=(1e-3, 1e-2), families=("V",), t1=0.5, n_save=3, dt=0.1)
    >>> r["w2"].shape, bool(r["all_below"]), round(float(r["slopes"][0]), 1)
    ((1, 2, 1, 3), True, 1.0)
    """
    _check_profile(profile)
    cfg = dataclasses.replace(PROP31[profile], **overrides)
    g = torch.Generator().manual_seed(cfg.seed)
    d, S = cfg.d, cfg.seeds
    A = cfg.norm_A * _unit_op(torch.randn(d, d, generator=g, dtype=torch.float64))
    V = cfg.norm_V * _unit_op(torch.randn(d, d, generator=g, dtype=torch.float64))
    x0 = init.ball(S, cfg.n, d, cfg.radius, generator=g)
    dirA = _unit_op(torch.randn(S, d, d, generator=g, dtype=torch.float64))
    dirV = _unit_op(torch.randn(S, d, d, generator=g, dtype=torch.float64))
    F, E = len(cfg.families), len(cfg.eps)
    dA = torch.zeros(F, E, S, d, d, dtype=torch.float64)
    dV = torch.zeros_like(dA)
    for f, fam in enumerate(cfg.families):
        if fam not in ("A", "V", "both"):
            raise ValueError(f"families must be among 'A', 'V', 'both', got {fam!r}")
        for e, eps in enumerate(cfg.eps):
            if fam in ("A", "both"):
                dA[f, e] = eps * dirA
            if fam in ("V", "both"):
                dV[f, e] = eps * dirV
    ts = torch.linspace(0.0, cfg.t1, cfg.n_save, dtype=torch.float64)
    dev = torch.device(device)
    base = simulate(Euclidean(A=A.to(dev), V=V.to(dev)), x0.to(dev), cfg.t1, method="rk4", dt=cfg.dt, save_at=ts)
    X0 = x0.expand(F, E, S, cfg.n, d).reshape(-1, cfg.n, d)
    pert = simulate(
        Euclidean(A=(A + dA).reshape(-1, d, d).to(dev), V=(V + dV).reshape(-1, d, d).to(dev)),
        X0.to(dev), cfg.t1, method="rk4", dt=cfg.dt, save_at=ts,
    )
    T = len(ts)
    w2 = np.zeros((F, E, S, T))
    for k in range(T):
        Xb = base.xs[k].expand(F, E, S, cfg.n, d).reshape(-1, cfg.n, d)
        w2[..., k] = metrics.wasserstein(Xb, pert.xs[k], p=2, solver="exact").cpu().numpy().reshape(F, E, S)
    lb = np.zeros_like(w2)
    lb_app = np.zeros_like(w2)
    lle = np.zeros_like(w2)
    M0 = x0.norm(dim=-1).amax(dim=-1)  # (S,)
    for f in range(F):
        for e in range(E):
            for s in range(S):
                b = lora.prop31_bound(A, V, dA[f, e, s], dV[f, e, s], float(M0[s]), ts)
                ba = lora.prop31_bound(A, V, dA[f, e, s], dV[f, e, s], float(M0[s]), ts, variant="appendix")
                lb[f, e, s] = b.log10_w2_bound.cpu().numpy()
                lb_app[f, e, s] = ba.log10_w2_bound.cpu().numpy()
                lle[f, e, s] = b.log_log_excess.cpu().numpy()
    with np.errstate(divide="ignore"):
        slack = lb[..., 1:] - np.log10(w2[..., 1:])
    all_below = bool(np.all(np.log10(np.maximum(w2, 1e-300)) <= lb))
    slopes = np.array([fits.line_fit(cfg.eps, w2[f, :, :, -1].mean(-1), loglog=True)["slope"] for f in range(F)])
    bound_exp = np.array([fits.line_fit(np.log(cfg.eps), lb[f, :, 0, 0] * math.log(10.0))["slope"] for f in range(F)])
    return {
        "config": dataclasses.asdict(cfg),
        "profile": profile,
        "ts": ts.cpu().numpy(),
        "eps": np.asarray(cfg.eps),
        "families": list(cfg.families),
        "w2": w2,
        "log10_bound": lb,
        "log10_bound_appendix": lb_app,
        "log_log_excess": lle,
        "slack": slack,
        "all_below": all_below,
        "all_below_appendix": bool(np.all(np.log10(np.maximum(w2, 1e-300)) <= lb_app)),
        "min_slack": float(np.min(slack)),
        "slopes": slopes,
        "bound_eps_exponent": bound_exp,
    }


@plots("prop31_wasserstein")
def plot_prop31_wasserstein(result: dict[str, Any], ax=None):
    """Left: W2(t) (mean over seeds) per eps for the "both" family (or the last one) with bound (14)
    where it is below 1e6; right: log10 log10 of the slack bound / measured (min over trials)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(11, 4))
    ts, eps = result["ts"], result["eps"]
    fams = result["families"]
    f = fams.index("both") if "both" in fams else len(fams) - 1
    cmap = plt.get_cmap("viridis")
    for e, ep in enumerate(eps):
        c = cmap(e / max(1, len(eps) - 1))
        ax[0].semilogy(ts[1:], result["w2"][f, e, :, 1:].mean(0), "o-", ms=3, color=c, label=f"W2, eps={ep:g}")
        lb = result["log10_bound"][f, e, :, :].min(0)
        ok = lb < 6
        ax[0].semilogy(ts[ok], 10.0 ** lb[ok], "--", color=c, lw=1)
    ax[0].set_xlabel("t")
    ax[0].set_ylabel("W2(mu_t, nu_t)")
    ax[0].set_title(f"Prop. 3.1, family '{fams[f]}': measured (o) and bound (14) (--, clipped at 1e6)", fontsize=9)
    ax[0].legend(fontsize=7)
    for fi, fam in enumerate(fams):
        sl = result["slack"][fi].reshape(-1, result["slack"].shape[-1]).min(0)
        ax[1].plot(ts[1:], np.log10(np.maximum(sl, 1e-300)), "o-", ms=3, label=f"family {fam}")
    ax[1].set_xlabel("t")
    ax[1].set_ylabel("log10 log10(bound / measured)")
    ax[1].set_title("slack of (14): doubly exponential in t", fontsize=9)
    ax[1].legend(fontsize=7)
    return ax


# ----------------------------------------------------------------------------- Proposition 3.3


@dataclasses.dataclass(frozen=True)
class Prop33Config:
    """Sizes of the long-time experiments (paper A, Prop. 3.3; post-LayerNorm dynamics, eq. 8,
    with ``A = V`` and ``A~ = V~ = V + dV``).

    ``V = Q diag(lambdas) Q^T`` with a random orthogonal Q; tokens uniform on the cap
    ``<x, u1> >= gamma``; both dynamics run to ``t1`` with RK4 step ``dt``.
    """

    d: int = 6
    lambdas: tuple[float, ...] = (1.5, 1.0, 0.8, 0.6, 0.4, 0.2)
    n: int = 32
    gamma: float = 0.3
    t1: float = 100.0
    dt: float = 0.1
    tol: float = 1e-3
    steps: int = 8  # 8-point grids never land exactly on the boundary of (15) or on a crossing
    seed: int = 1


PROP33 = {
    "fast": Prop33Config(),
    "full": Prop33Config(d=12, lambdas=(1.5,) + tuple(float(x) for x in np.round(np.linspace(1.0, 0.05, 11), 4)), n=256, steps=16, t1=200.0),
}


def _base_matrix(cfg: Prop33Config, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    lam = torch.tensor(cfg.lambdas, dtype=torch.float64)
    if lam.numel() != cfg.d:
        raise ValueError(f"lambdas must hold d = {cfg.d} eigenvalues, got {lam.numel()}")
    if (lam < 0).any() or not bool((lam[:-1] > lam[1:]).all()):
        raise ValueError("lambdas must be non-negative and strictly decreasing (Assumption 3.2)")
    Q = init.random_orthogonal(cfg.d, generator=g)
    return Q @ torch.diag(lam) @ Q.T, Q


def _run_pairs(Vs: torch.Tensor, dVs: torch.Tensor, x0: torch.Tensor, axis: torch.Tensor, cfg: Prop33Config, device: str) -> dict[str, np.ndarray]:
    """Simulate base (A = V) and perturbed (A = V = V + dV) dynamics for K pairs from the same x0
    (n, d), tokens in the cone around ``axis`` (which signs u1); return per-pair theory and
    measured limits."""
    K = Vs.shape[0]
    dev = torch.device(device)
    X0 = x0.expand(K, *x0.shape).contiguous().to(dev)
    ts = [0.0, cfg.t1]
    Vt = Vs + dVs
    base = simulate(Sphere(A=Vs.to(dev), V=Vs.to(dev)), X0, cfg.t1, method="rk4", dt=cfg.dt, save_at=ts).final.cpu()
    pert = simulate(Sphere(A=Vt.to(dev), V=Vt.to(dev)), X0, cfg.t1, method="rk4", dt=cfg.dt, save_at=ts).final.cpu()
    out: dict[str, list] = {k: [] for k in (
        "a", "b_norm", "E_norm", "gap", "margin", "holds", "bound", "eig_drift", "tilde_gap",
        "base_err", "conv_err", "dyn_drift", "clusters", "dist_dV_reading", "cone_tilde",
        "lemma_base", "lemma_pert")}
    for k in range(K):
        sp = lora.spectral_perturbation(Vs[k], dVs[k], reference=axis)
        _, v_dV = lora.top_eigenvector(dVs[k], sp.u1) if dVs[k].abs().max() > 0 else (0.0, sp.u1)
        xt = pert[k]
        out["a"].append(sp.a)
        out["b_norm"].append(sp.b_norm)
        out["E_norm"].append(sp.E_norm)
        out["gap"].append(sp.gap)
        out["margin"].append(sp.margin)
        out["holds"].append(sp.holds)
        out["bound"].append(sp.bound)
        out["eig_drift"].append(sp.drift)
        out["tilde_gap"].append(sp.tilde_gap)
        out["base_err"].append(float((base[k] - sp.u1).norm(dim=-1).max()))
        out["conv_err"].append(float((xt - sp.u1_tilde).norm(dim=-1).max()))
        out["dyn_drift"].append(float((xt - sp.u1).norm(dim=-1).mean()))
        out["clusters"].append(int(metrics.cluster_count(xt, 1e-2)[0]))
        out["dist_dV_reading"].append(float(min((xt - v_dV).norm(dim=-1).max(), (xt + v_dV).norm(dim=-1).max())))
        phi_t = float((x0.cpu() @ sp.u1_tilde).min())
        out["cone_tilde"].append(phi_t)
        # Lemma C.13's guaranteed error at t1 (nan where its hypotheses fail: cone or |lambda_min| > lambda_2)
        lam_t = torch.linalg.eigvalsh(Vt[k])
        ok_t = phi_t > 0 and sp.tilde_gap > 0 and float(-lam_t[0]) <= float(lam_t[-2])
        out["lemma_pert"].append(float(lora.cone_collapse_bound(phi_t, sp.tilde_gap, cfg.t1)) if ok_t else math.nan)
        out["lemma_base"].append(float(lora.cone_collapse_bound(float((x0.cpu() @ sp.u1).min()), sp.gap, cfg.t1)))
    return {k: np.asarray(v) for k, v in out.items()}


@experiment("prop33_families", chapter=CHAPTER)
def prop33_families(profile: str = "fast", device: str = "cpu", **overrides: Any) -> dict[str, Any]:
    """Prop. 3.3: limits of both dynamics and the drift |u1 - u1~| for four perturbation families.

    Families: ``"a"`` (dV = s u1 u1^T, in span), ``"b"`` (dV = s (u1 w^T + w u1^T), w a unit vector
    of u1-perp: the mixing part), ``"E"`` (dV = s P W P, |P W P|_op = 1, W random symmetric: the
    orthogonal part) and ``"gap"`` (a fixed random symmetric dV of norm 0.1 while the spectral gap
    of V varies, lambda_1 = lambda_2 + s).

    Returns
    -------
    dict
        With  per family name, a dict of (steps,) arrays: ``size`` and the outputs of the
        simulation (``a, b_norm, E_norm, gap, margin, holds, bound, eig_drift, tilde_gap, base_err,
        conv_err, dyn_drift, clusters, dist_dV_reading, cone_tilde``).

    Examples
    --------
    >>> r = prop33_families(steps=2, n=4, t1=20.0, dt=0.2)
    >>> sorted(r["families"]), r["families"]["b"]["dyn_drift"].shape
    (['E', 'a', 'b', 'gap'], (2,))
    """
    _check_profile(profile)
    cfg = dataclasses.replace(PROP33[profile], **overrides)
    g = torch.Generator().manual_seed(cfg.seed)
    V, Q = _base_matrix(cfg, g)
    d = cfg.d
    u1 = Q[:, 0]
    P = torch.eye(d, dtype=torch.float64) - torch.outer(u1, u1)
    x0 = init.cone(1, cfg.n, d, cfg.gamma, axis=u1, generator=g)[0]
    w = P @ torch.randn(d, generator=g, dtype=torch.float64)
    w = w / w.norm()
    W = torch.randn(d, d, generator=g, dtype=torch.float64)
    W = P @ (W + W.T) @ P
    W = W / lora.op_norm(W)
    R = torch.randn(d, d, generator=g, dtype=torch.float64)
    R = (R + R.T) / 2
    R = 0.1 * R / lora.op_norm(R)
    gap = cfg.lambdas[0] - cfg.lambdas[1]
    sizes = {
        "a": np.linspace(-1.4 * gap, 2 * gap, cfg.steps),
        "b": np.linspace(0.0, 0.8 * gap, cfg.steps),
        "E": np.linspace(0.0, 2.0 * gap, cfg.steps),
        "gap": np.linspace(0.15, 1.5, cfg.steps),
    }
    Vs, dVs, tags = [], [], []
    for fam, ss in sizes.items():
        for s in ss:
            if fam == "a":
                M = s * torch.outer(u1, u1)
            elif fam == "b":
                M = s * (torch.outer(u1, w) + torch.outer(w, u1))
            elif fam == "E":
                M = s * W
            else:
                M = R
            if fam == "gap":
                lam = list(cfg.lambdas)
                lam[0] = lam[1] + float(s)
                Vs.append(Q @ torch.diag(torch.tensor(lam, dtype=torch.float64)) @ Q.T)
            else:
                Vs.append(V)
            dVs.append(M)
            tags.append(fam)
    res = _run_pairs(torch.stack(Vs), torch.stack(dVs), x0, u1, cfg, device)
    tags = np.asarray(tags)
    fams = {fam: {"size": ss, **{k: v[tags == fam] for k, v in res.items()}} for fam, ss in sizes.items()}
    return {"config": dataclasses.asdict(cfg), "profile": profile, "families": fams, "gamma": cfg.gamma}


@plots("prop33_families")
def plot_prop33_families(result: dict[str, Any], ax=None):
    """Left: drift |u1 - u1~| against the perturbation size for the in-span (a), mixing (b) and
    orthogonal (E) families, measured from the dynamics (o) and bound (16) (--, only where (15)
    holds); right: drift against the spectral gap for a fixed dV."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(11, 4))
    fams = result["families"]
    for fam, c in (("a", "C0"), ("b", "C1"), ("E", "C2")):
        r = fams[fam]
        ax[0].plot(r["size"], r["dyn_drift"], "o", color=c, label=f"family {fam}: dynamics")
        ax[0].plot(r["size"], r["eig_drift"], "-", color=c, lw=0.8, label=f"family {fam}: |u1 - u1~| (eigh)")
        hb = np.where(r["holds"], r["bound"], np.nan)
        ax[0].plot(r["size"], hb, "--", color=c, label=f"family {fam}: bound (16)")
    ax[0].set_xlabel("perturbation size s")
    ax[0].set_ylabel("mean_i |x~_i(T) - u1|")
    ax[0].set_title("Prop. 3.3 (prop33_families): drift and bound (16)", fontsize=9)
    ax[0].legend(fontsize=6, ncol=2)
    r = fams["gap"]
    ax[1].loglog(r["size"], r["dyn_drift"], "o", label="dynamics")
    ax[1].loglog(r["size"], np.where(r["holds"], r["bound"], np.nan), "--", label="bound (16)")
    ax[1].set_xlabel("spectral gap lambda_1 - lambda_2")
    ax[1].set_ylabel("drift")
    ax[1].set_title("fixed dV (|dV|_op = 0.1), varying gap", fontsize=9)
    ax[1].legend(fontsize=7)
    return ax


@experiment("prop33_map", chapter=CHAPTER)
def prop33_map(profile: str = "fast", device: str = "cpu", **overrides: Any) -> dict[str, Any]:
    """Condition (15) over a grid of mixing size s = |b| and orthogonal size e = |E| (a = 0), with
    ``dV = s (u1 u2^T + u2 u1^T) + e u2 u2^T``, against the measured drift.

    In span(u1, u2) the perturbed matrix is ``[[lambda_1, s], [s, lambda_2 + e]]``, so the exact
    drift is ``2 sin(theta / 2)`` with ``tan(2 theta) = 2 s / (gap - e)`` (independent check).

    Returns
    -------
    dict
        With ``s (S,)``, ``e (S,)``, and (S, S) arrays indexed [i_e, i_s]: ``dyn_drift``,
        ``exact_drift``, ``margin``, ``bound``, ``clusters``, ``conv_err``.

    Examples
    --------
    >>> r = prop33_map(steps=2, n=4, t1=20.0, dt=0.2)
    >>> r["dyn_drift"].shape
    (2, 2)
    """
    _check_profile(profile)
    cfg = dataclasses.replace(PROP33[profile], **overrides)
    g = torch.Generator().manual_seed(cfg.seed)
    V, Q = _base_matrix(cfg, g)
    u1, u2 = Q[:, 0], Q[:, 1]
    x0 = init.cone(1, cfg.n, cfg.d, cfg.gamma, axis=u1, generator=g)[0]
    gap = cfg.lambdas[0] - cfg.lambdas[1]
    s_grid = np.linspace(0.0, 1.0 * gap, cfg.steps)
    e_grid = np.linspace(0.0, 2.0 * gap, cfg.steps)
    dVs = []
    for e in e_grid:
        for s in s_grid:
            dVs.append(float(s) * (torch.outer(u1, u2) + torch.outer(u2, u1)) + float(e) * torch.outer(u2, u2))
    K = len(dVs)
    res = _run_pairs(V.expand(K, -1, -1).contiguous(), torch.stack(dVs), x0, u1, cfg, device)
    S = len(s_grid)
    ss, ee = np.meshgrid(s_grid, e_grid)
    theta = 0.5 * np.arctan2(2 * ss, gap - ee)
    return {
        "config": dataclasses.asdict(cfg),
        "profile": profile,
        **{k: v.reshape(S, S) for k, v in res.items()},
        "gap": gap,  # after the per-cell arrays, which hold a "gap" entry too
        "s": s_grid,
        "e": e_grid,
        "exact_drift": 2 * np.sin(theta / 2),
    }


@plots("prop33_map")
def plot_prop33_map(result: dict[str, Any], ax=None):
    """Measured drift over (|b|, |E|) with the boundary of condition (15) (solid) and the line
    gap = e (dotted) where the perturbed top eigenvalue crosses when s = 0."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4.5))
    s, e, gap = result["s"], result["e"], result["gap"]
    im = ax.pcolormesh(s, e, result["dyn_drift"], shading="nearest", cmap="magma", vmin=0, vmax=math.sqrt(2))
    plt.colorbar(im, ax=ax, label="mean_i |x~_i(T) - u1|")
    sl = np.linspace(0, s[-1], 50)
    ax.plot(sl, gap - 2 * sl, "w-", lw=2, label="(15): gap = 2|b| + |E|")
    ax.axhline(gap, color="c", ls=":", label="|E| = gap")
    ax.set_xlim(s[0], s[-1])
    ax.set_ylim(e[0], e[-1])
    ax.set_xlabel("|b| (mixing part)")
    ax.set_ylabel("|E|_op (orthogonal part)")
    ax.set_title("prop33_map: drift, and condition (15)", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    return ax


# ----------------------------------------------------------------------------- Remark 3.4


@experiment("remark34_ranks", chapter=CHAPTER)
def remark34_ranks(profile: str = "fast", device: str = "cpu", ranks: tuple[int, ...] | None = None,
                   sigma: float = 0.3, cos_phi: float = 0.05, **overrides: Any) -> dict[str, Any]:
    """Remark 3.4: rank-r updates ``dV = sigma sum_{k<=r} w_k w_k^T``, ``w_k = c u1 + sqrt(1-c^2) u_{k+1}``,
    whose orthogonal block commutes with Lambda; measured ``(1/n) sum_i |x_i(T) - x~_i(T)|^2``
    against eq. (17) as printed and with the top-eigenvalue shift ``a`` restored.

    Returns
    -------
    dict
        With ``ranks (K,)``, ``measured``, ``pred_printed``, ``pred_with_a``, ``eig_sq`` (exact
        |u1 - u1~|^2), ``rel_err_printed``, ``rel_err_with_a`` (all (K,)), ``a (K,)``.

    Examples
    --------
    >>> r = remark34_ranks(ranks=(1,), n=4, t1=40.0, dt=0.2)
    >>> bool(r["rel_err_printed"][0] < 0.2)
    True
    """
    _check_profile(profile)
    cfg = dataclasses.replace(PROP33[profile], **overrides)
    if ranks is None:
        ranks = (1, 2, 3, 5) if cfg.d <= 6 else (1, 2, 4, 8)
    g = torch.Generator().manual_seed(cfg.seed)
    V, Q = _base_matrix(cfg, g)
    u1 = Q[:, 0]
    x0 = init.cone(1, cfg.n, cfg.d, cfg.gamma, axis=u1, generator=g)[0]
    c, sn = float(cos_phi), math.sqrt(1 - float(cos_phi) ** 2)
    dVs = []
    for r in ranks:
        if not 1 <= r <= cfg.d - 1:
            raise ValueError(f"ranks must lie in [1, d - 1] = [1, {cfg.d - 1}], got {r}")
        Wk = c * u1[:, None] + sn * Q[:, 1 : r + 1]  # (d, r)
        dVs.append(sigma * Wk @ Wk.T)
    K = len(ranks)
    dev = torch.device(device)
    X0 = x0.expand(K, *x0.shape).contiguous().to(dev)
    Vs = V.expand(K, -1, -1).contiguous()
    Vt = Vs + torch.stack(dVs)
    xb = simulate(Sphere(A=Vs.to(dev), V=Vs.to(dev)), X0, cfg.t1, method="rk4", dt=cfg.dt).final.cpu()
    xp = simulate(Sphere(A=Vt.to(dev), V=Vt.to(dev)), X0, cfg.t1, method="rk4", dt=cfg.dt).final.cpu()
    measured = ((xb - xp) ** 2).sum(-1).mean(-1).cpu().numpy()
    pp, pa, eig_sq, a_s, conv = [], [], [], [], []
    for k in range(K):
        lam, alpha, e = lora.commuting_coefficients(V, dVs[k])
        sp = lora.spectral_perturbation(V, dVs[k], reference=u1)
        pp.append(lora.remark34_prediction(lam, alpha, e))
        pa.append(lora.remark34_prediction(lam, alpha, e, a=sp.a))
        eig_sq.append(sp.drift**2)
        a_s.append(sp.a)
        conv.append(float((xp[k] - sp.u1_tilde).norm(dim=-1).max()))
    pp, pa = np.asarray(pp), np.asarray(pa)
    return {
        "config": dataclasses.asdict(cfg),
        "profile": profile,
        "ranks": np.asarray(ranks),
        "sigma": sigma,
        "cos_phi": cos_phi,
        "measured": measured,
        "pred_printed": pp,
        "pred_with_a": pa,
        "eig_sq": np.asarray(eig_sq),
        "a": np.asarray(a_s),
        "conv_err": np.asarray(conv),
        "rel_err_printed": np.abs(pp - measured) / measured,
        "rel_err_with_a": np.abs(pa - measured) / measured,
    }


@plots("remark34_ranks")
def plot_remark34_ranks(result: dict[str, Any], ax=None):
    """Measured squared cluster displacement against rank, with eq. (17) printed and with a."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4))
    r = result["ranks"]
    ax.plot(r, result["measured"], "o", ms=8, label="measured (1/n) sum_i |x_i - x~_i|^2 at T")
    ax.plot(r, result["pred_printed"], "s--", label="eq. (17) as printed")
    ax.plot(r, result["pred_with_a"], "^:", label="eq. (17) with lambda_1 + a")
    ax.set_xlabel("rank r of the update")
    ax.set_ylabel("squared displacement")
    ax.set_title("Remark 3.4 (remark34_ranks)", fontsize=9)
    ax.legend(fontsize=7)
    return ax


# ----------------------------------------------------------------------------- mitigation


@experiment("stability_mitigation", chapter=CHAPTER)  # registry names are global: prefixed
def mitigation(profile: str = "fast", device: str = "cpu", rank: int = 2, draws: int = 6,
               norms: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.6, 0.8, 1.2), **overrides: Any) -> dict[str, Any]:
    """Orthogonalised updates: random symmetric rank-2r updates ``dV = (B C^T + C B^T) / 2``
    (B, C (d, rank) Gaussian) at Frobenius norm eta, against ``P_perp dV P_perp`` rescaled to the
    same Frobenius norm. Drift = mean_i |x~_i(T) - u1|, averaged over ``draws``.

    Returns
    -------
    dict
        With ``norms (N,)``, ``raw``, ``proj`` ((N, draws) dynamic drifts), ``raw_eig``,
        ``proj_eig`` ((N, draws) |u1 - u1~|), ``raw_clusters``, ``proj_clusters`` ((N, draws)),
        ``mean_raw``, ``mean_proj`` ((N,)).

    Examples
    --------
    >>> r = mitigation(draws=1, norms=(0.1,), n=4, t1=40.0, dt=0.2)
    >>> bool(r["mean_proj"][0] < r["mean_raw"][0])
    True
    """
    _check_profile(profile)
    cfg = dataclasses.replace(PROP33[profile], **overrides)
    g = torch.Generator().manual_seed(cfg.seed)
    V, Q = _base_matrix(cfg, g)
    u1 = Q[:, 0]
    x0 = init.cone(1, cfg.n, cfg.d, cfg.gamma, axis=u1, generator=g)[0]
    dirs = []
    for _ in range(draws):
        B = torch.randn(cfg.d, rank, generator=g, dtype=torch.float64)
        C = torch.randn(cfg.d, rank, generator=g, dtype=torch.float64)
        M = (B @ C.T + C @ B.T) / 2
        dirs.append(M / torch.linalg.matrix_norm(M, ord="fro"))
    raw, proj = [], []
    for eta in norms:
        for M in dirs:
            raw.append(eta * M)
            proj.append(lora.orthogonal_projection_update(eta * M, u1, keep_norm="fro"))
    K = len(raw)
    Vs = V.expand(2 * K, -1, -1).contiguous()
    res = _run_pairs(Vs, torch.stack(raw + proj), x0, u1, cfg, device)
    N = len(norms)

    def part(key, lo):
        return res[key][lo : lo + K].reshape(N, draws)

    out = {
        "config": dataclasses.asdict(cfg),
        "profile": profile,
        "rank": rank,
        "norms": np.asarray(norms),
        "gap": cfg.lambdas[0] - cfg.lambdas[1],
        "raw": part("dyn_drift", 0),
        "proj": part("dyn_drift", K),
        "raw_eig": part("eig_drift", 0),
        "proj_eig": part("eig_drift", K),
        "raw_clusters": part("clusters", 0),
        "proj_clusters": part("clusters", K),
        "proj_E_norm": part("E_norm", K),
        "raw_holds": part("holds", 0),
    }
    out["mean_raw"] = out["raw"].mean(1)
    out["mean_proj"] = out["proj"].mean(1)
    return out


@plots("stability_mitigation")
def plot_mitigation(result: dict[str, Any], ax=None):
    """Mean drift against the Frobenius norm of the update, raw and orthogonally projected."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 4))
    n = result["norms"]
    ax.plot(n, result["mean_raw"], "o-", label="raw dV")
    ax.plot(n, result["mean_proj"], "s-", label="P_perp dV P_perp (same Frobenius norm)")
    ax.axvline(result["gap"], color="k", ls=":", lw=1, label="spectral gap")
    ax.set_xlabel("|dV|_F")
    ax.set_ylabel("mean drift mean_i |x~_i(T) - u1|")
    ax.set_title("mitigation: orthogonalised update", fontsize=9)
    ax.legend(fontsize=7)
    return ax
