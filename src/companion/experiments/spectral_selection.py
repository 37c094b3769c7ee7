"""Paper C (Kuehn & Yoon): spectral selection in symmetric self-attention, checked numerically.

Every function ``name(profile="fast", device="cpu", **kw) -> dict`` returns numpy arrays and plain
numbers; ``plot_<name>(result, ax=None)`` draws the matching figure. Choices the paper leaves open
(the V matrices, d, horizons, n for Fig. 4) are fixed in :data:`PROFILES` and stated in the chapter:

* positive-dominant regime (Figs. 1-2, Theorem 6.1): d = 3, ``V = diag(1, 0.5, -0.5)``, so
  ``lambda_1 = 1 > max_k |lambda_k| = 0.5``;
* negative-definite regime (Figs. 3-4): d = 3, ``V = diag(-0.5, -1, -1.5)`` (simple eigenvalues,
  ``e_3`` the most negative direction).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np
import torch

from .. import init, metrics, models
from .._validate import as_tokens, check_on_sphere
from ..integrate import simulate
from ..theory import consensus as th_consensus
from ..theory import spectral as th
from . import experiment, plots

__all__ = [
    "PROFILES",
    "ModalModel",
    "pure_state",
    "modal_form",
    "invariant_manifolds",
    "stability_cases",
    "stability_boundary",
    "cone_bound",
    "rho_min_ensembles",
    "two_tokens",
    "multi_token",
]

V_POSITIVE = (1.0, 0.5, -0.5)
V_NEGATIVE = (-0.5, -1.0, -1.5)

# fast: CPU, a few minutes for the whole chapter on 2 cores; full: paper scale (GPU).
PROFILES: dict[str, dict[str, Any]] = {
    "fast": dict(
        modal=dict(trials=8, n=16, t1=5.0, dt=0.01),
        manifolds=dict(t1=6.0, dt=0.01, energy_trials=20, energy_dt=0.02),
        cases=dict(count=240),
        boundary=dict(betas=(0.2, 0.5, 1.0, 1.5, 2.0, 3.0), bisect=26),
        cone=dict(trials=20, n=80, t1=10.0, dt=0.05, delta=0.2),
        ensemble=dict(trials=200, n=80, t1=30.0, dt=0.2, saves=61),
        two=dict(trials=200, t1=30.0, dt=0.05, saves=151),
        multi=dict(trials=200, n=10, t1=40.0, dt=0.1, saves=81),
    ),
    "full": dict(
        modal=dict(trials=32, n=64, t1=10.0, dt=0.005),
        manifolds=dict(t1=6.0, dt=0.005, energy_trials=200, energy_dt=0.01),
        cases=dict(count=2000),
        boundary=dict(betas=tuple(np.round(np.linspace(0.1, 3.0, 30), 3)), bisect=40),
        cone=dict(trials=200, n=80, t1=20.0, dt=0.02, delta=0.2),
        ensemble=dict(trials=200, n=80, t1=60.0, dt=0.05, saves=121),
        two=dict(trials=1000, t1=40.0, dt=0.02, saves=201),
        multi=dict(trials=1000, n=20, t1=60.0, dt=0.05, saves=121),
    ),
}


def _profile(profile: str, key: str, kw: dict[str, Any]) -> dict[str, Any]:
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {tuple(PROFILES)}, got {profile!r}")
    cfg = dict(PROFILES[profile][key])
    unknown = set(kw) - set(cfg) - {"seed"}
    if unknown:
        raise ValueError(f"unknown options {sorted(unknown)}; known: {sorted(cfg)} and seed")
    cfg.update(kw)
    return cfg


def _diag(lams, device) -> torch.Tensor:
    return torch.diag(torch.tensor(lams, dtype=torch.float64, device=device))


def _np(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()


# ----------------------------------------------------------------------------- the modal system


@dataclasses.dataclass(frozen=True)
class ModalModel:
    """The modal system of Section 3 as a simulate-able model: state ``C : (trials, n, d)`` of
    coordinates ``c_ik = <x_i, e_k>``, field :func:`companion.theory.spectral.modal_rhs`.

    Examples
    --------
    >>> m = ModalModel(torch.tensor([1.0, -1.0], dtype=torch.float64), beta=1.0)
    >>> C = torch.tensor([[[0.6, 0.8]]], dtype=torch.float64)
    >>> m.vector_field(0.0, C)  # one token: c' = Lambda c - <c, Lambda c> c
    tensor([[[ 0.7680, -0.5760]]], dtype=torch.float64)
    """

    lambdas: torch.Tensor
    beta: float = 1.0

    on_sphere: ClassVar[bool] = True

    def validate(self, X: torch.Tensor) -> torch.Tensor:
        X = as_tokens(X, "c0")
        if torch.as_tensor(self.lambdas).numel() != X.shape[-1]:
            raise ValueError(f"lambdas must have d = {X.shape[-1]} entries")
        check_on_sphere(X, "c0")
        return X

    def cast(self, X: torch.Tensor) -> "ModalModel":
        return dataclasses.replace(self, lambdas=torch.as_tensor(self.lambdas).to(X))

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor:
        return th.modal_rhs(X, self.lambdas, self.beta)


# ----------------------------------------------------------------------------- Jacobians


def pure_state(V: torch.Tensor, p: int, n_plus: int, n_minus: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The pure-mode equilibrium ``x_i* = s_i e_p`` (n_+ tokens at +e_p first, then n_- at -e_p).

    Returns
    -------
    (X*, lambdas, E): X* (n, d), the ascending eigenvalues (d,) and eigenvectors (d, d) of V.

    Examples
    --------
    >>> X, lam, E = pure_state(torch.diag(torch.tensor([2.0, -1.0], dtype=torch.float64)), 1, 1, 1)
    >>> X.abs().tolist(), lam.tolist()
    ([[1.0, 0.0], [1.0, 0.0]], [-1.0, 2.0])
    """
    lam, E = torch.linalg.eigh(torch.as_tensor(V, dtype=torch.float64))
    s = torch.tensor([1.0] * n_plus + [-1.0] * n_minus, dtype=lam.dtype)
    return s[:, None] * E[:, p][None, :], lam, E


# ----------------------------------------------------------------------------- 1. modal form


@experiment("spectral-modal-form", chapter="spectral_selection")
def modal_form(profile: str = "fast", device: str = "cpu", **kw) -> dict[str, Any]:
    """Modal system (f_ik, phi_i) integrated on its own vs the direct simulation; masses m_k(t)."""
    cfg = _profile(profile, "modal", kw)
    g = torch.Generator().manual_seed(int(kw.get("seed", 0)))
    lam = torch.tensor([1.0, 0.6, -0.2, -0.8], dtype=torch.float64)
    E = init.random_orthogonal(4, generator=g)
    V = (E * lam) @ E.T
    beta = 1.0
    x0 = init.uniform_sphere(cfg["trials"], cfg["n"], 4, generator=g).to(device)
    ts = torch.linspace(0, cfg["t1"], 51)
    direct = simulate(models.spectral(V.to(device), beta), x0, cfg["t1"], dt=cfg["dt"], save_at=ts).xs
    Ed = E.to(device)
    modal = simulate(ModalModel(lam.to(device), beta), x0 @ Ed, cfg["t1"], dt=cfg["dt"], save_at=ts).xs
    err = (modal @ Ed.T - direct).abs().amax().item()
    masses = metrics.modal_masses(direct.flatten(0, 1), Ed).reshape(len(ts), cfg["trials"], 4).mean(1)
    return dict(ts=_np(ts), masses=_np(masses), lambdas=_np(lam), max_error=err, config=cfg)


@plots("spectral-modal-form")
def plot_modal_form(result: dict[str, Any], ax=None):
    """Averaged modal masses m_k(t) (mean over trials) of the direct simulation."""
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    for k, lk in enumerate(result["lambdas"]):
        ax.plot(result["ts"], result["masses"][:, k], label=f"$\\lambda_{k + 1} = {lk:g}$")
    ax.set_xlabel("t")
    ax.set_ylabel("$m_k(t)$ (trial mean)")
    ax.legend()
    ax.set_title("modal masses (spectral_selection.modal_form)")
    return ax


# ----------------------------------------------------------------------------- 2. invariant manifolds


@experiment("spectral-invariant-manifolds", chapter="spectral_selection")
def invariant_manifolds(profile: str = "fast", device: str = "cpu", **kw) -> dict[str, Any]:
    """Consensus p_k(t) vs closed form; balanced bipolar M(t) monotone, alpha = tanh(beta M); energy."""
    cfg = _profile(profile, "manifolds", kw)
    g = torch.Generator().manual_seed(int(cfg.get("seed", 0)))
    lam = torch.tensor([1.0, 0.3, -0.4, -1.2], dtype=torch.float64)
    V = torch.diag(lam).to(device)
    d, beta, t1, dt = 4, 1.5, cfg["t1"], cfg["dt"]
    ts = torch.linspace(0, t1, 61)
    # consensus: all n tokens at one random point u, six independent points
    u = init.uniform_sphere(6, 1, d, generator=g).to(device)
    sol = simulate(models.spectral(V, beta), u.expand(6, 5, d).contiguous(), t1, dt=dt, save_at=ts).xs
    p_sim = sol[:, :, 0, :] ** 2  # (T, 6, d)
    p_th = torch.stack([th_consensus.consensus_modal_masses(u[j, 0].cpu() ** 2, lam, ts) for j in range(6)], 1)
    consensus_err = (p_sim.cpu() - p_th).abs().amax().item()
    spread = (sol - sol[:, :, :1]).norm(dim=-1).amax().item()
    # balanced bipolar: x_i = s_i u, n_+ = n_- = 3; six points u, half with M(0) < 0
    u = init.uniform_sphere(6, 1, d, generator=g).to(device)
    s = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0, -1.0], dtype=torch.float64, device=device)
    X0 = s[None, :, None] * u
    sol = simulate(models.spectral(V, beta), X0, t1, dt=dt, save_at=ts).xs  # (T, 6, 6, d)
    U = sol[:, :, 0, :]
    off = (sol - s[None, None, :, None] * U[:, :, None, :]).norm(dim=-1).amax().item()
    M = (U * (U @ V)).sum(-1)  # (T, 6)
    dM = torch.diff(M, dim=0) * torch.sign(M[:1])
    F = models.spectral(V, beta).vector_field(0.0, sol.flatten(0, 1)).reshape(sol.shape)
    w = U @ V - M[..., None] * U  # V u - M u: alpha is the coefficient of the field along it
    wn = (w * w).sum(-1)
    ok = wn > 1e-10  # at a pure mode w = 0 and alpha is not observable
    alpha = ((F[:, :, 0, :] * w).sum(-1) / wn.clamp_min(1e-300))
    alpha_err = (alpha - torch.tanh(beta * M))[ok].abs().amax().item()
    dM_th = th.bipolar_dM(U ** 2, lam.to(U), beta)
    dM_field = 2 * (F[:, :, 0, :] * (U @ V)).sum(-1)  # M' = 2 <u', V u> from the model's own field
    dM_err = (dM_field - dM_th).abs().amax().item()
    # energy along generic trajectories, two temperatures
    x0 = init.uniform_sphere(cfg["energy_trials"], 20, d, generator=g).to(device)
    min_dlogE = math.inf
    for b in (0.5, 2.0):
        xs = simulate(models.spectral(V, b), x0, t1, dt=cfg["energy_dt"], save_at=ts).xs
        logE = metrics.interaction_energy(xs.flatten(0, 1), V, b, log=True).reshape(len(ts), -1)
        min_dlogE = min(min_dlogE, torch.diff(logE, dim=0).amin().item())
    return dict(
        ts=_np(ts),
        consensus_error=consensus_err,
        consensus_spread=spread,
        bipolar_offset=off,
        M=_np(M),
        min_signed_dM=dM.amin().item(),
        alpha_error=alpha_err,
        dM_error=dM_err,
        min_dlogE=min_dlogE,
        lambdas=_np(lam),
        beta=beta,
        config=cfg,
    )


@plots("spectral-invariant-manifolds")
def plot_invariant_manifolds(result: dict[str, Any], ax=None):
    """M(t) on the balanced bipolar manifold for six initial points."""
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    ax.plot(result["ts"], result["M"])
    for lk in result["lambdas"]:
        ax.axhline(lk, color="0.8", lw=0.8, ls=":")
    ax.set_xlabel("t")
    ax.set_ylabel("$M(t) = \\langle u, V u\\rangle$")
    ax.set_title("balanced bipolar manifold (spectral_selection.invariant_manifolds)")
    return ax


# ----------------------------------------------------------------------------- 3. Theorem 5.2


def _match_error(a: torch.Tensor, b: torch.Tensor) -> float:
    from scipy.optimize import linear_sum_assignment

    cost = (a[:, None] - b[None, :]).abs().cpu().numpy()
    r, c = linear_sum_assignment(cost)
    return float(cost[r, c].max()) if len(r) else 0.0


@experiment("spectral-stability-cases", chapter="spectral_selection")
def stability_cases(profile: str = "fast", device: str = "cpu", **kw) -> dict[str, Any]:
    """Jacobians at pure states over random (V, beta, n_+, n_-) vs Prop. 5.1 / Theorem 5.2.

    ``device`` is accepted for the common signature and not used: the work is linear algebra on
    Jacobians of at most 10 tokens in d <= 4 (size n d <= 40), which the CPU does faster than a GPU."""
    cfg = _profile(profile, "cases", kw)
    g = torch.Generator().manual_seed(int(cfg.get("seed", 0)))
    rows = []
    for _ in range(cfg["count"]):
        d = int(torch.randint(2, 5, (1,), generator=g))
        lam_raw = 4 * torch.rand(d, generator=g, dtype=torch.float64) - 2
        Q = init.random_orthogonal(d, generator=g)
        V = (Q * lam_raw) @ Q.T
        V = (V + V.T) / 2
        beta = float(math.exp(math.log(0.2) + (math.log(3.0) - math.log(0.2)) * torch.rand(1, generator=g).item()))
        n_plus = int(torch.randint(1, 5, (1,), generator=g))
        n_minus = int(torch.randint(0, 5, (1,), generator=g))
        p = int(torch.randint(0, d, (1,), generator=g))
        X, lam, _ = pure_state(V, p, n_plus, n_minus)
        model = models.spectral(V, beta)
        J = models.tangent_jacobian(model, X)
        Jfd = models.tangent_jacobian(model, X, mode="fd")
        ev = torch.linalg.eigvals(J)
        ev_th = th.sign_split_spectrum(lam, p, beta, n_plus, n_minus)
        lead = ev.real.max().item()
        if n_minus == 0:
            stated = th.homogeneous_stable(lam, p)
            blocks = bool(ev_th.real.max() < 0)
        else:
            stated = th.sign_split_stable_theorem(lam, p, beta, n_plus, n_minus)
            blocks = th.sign_split_stable_blocks(lam, p, beta, n_plus, n_minus)
        rows.append(
            dict(
                d=d, lambdas=lam.tolist(), p=p, beta=beta, n_plus=n_plus, n_minus=n_minus,
                kind="homogeneous" if n_minus == 0 else "sign-split",
                singleton=(n_minus == 0 and n_plus == 1) or (n_minus > 0 and min(n_plus, n_minus) == 1),
                gammas=th.gammas(float(lam[p]), beta, n_plus, n_minus),
                lead=lead, jacobian_stable=lead < 0, stated=stated, blocks=blocks,
                spectrum_error=_match_error(ev, ev_th), fd_error=(J - Jfd).abs().max().item(),
            )
        )
    return _summarise_cases(rows)


def _summarise_cases(rows: list[dict[str, Any]]) -> dict[str, Any]:
    agree = sum(r["stated"] == r["jacobian_stable"] for r in rows)
    disagreements = [r for r in rows if r["stated"] != r["jacobian_stable"]]
    return dict(
        rows=rows,
        count=len(rows),
        homogeneous=sum(r["kind"] == "homogeneous" for r in rows),
        singleton=sum(r["singleton"] for r in rows),
        stable=sum(r["jacobian_stable"] for r in rows),
        agree_stated=agree,
        agree_stated_no_singleton=sum(r["stated"] == r["jacobian_stable"] for r in rows if not r["singleton"]),
        no_singleton=sum(not r["singleton"] for r in rows),
        agree_blocks=sum(r["blocks"] == r["jacobian_stable"] for r in rows),
        disagreements=disagreements,
        disagreements_singleton=sum(r["singleton"] for r in disagreements),
        max_spectrum_error=max(r["spectrum_error"] for r in rows),
        max_fd_error=max(r["fd_error"] for r in rows),
        min_margin=min(abs(r["lead"]) for r in rows),
    )


# ----------------------------------------------------------------------------- 4. Figure 5


R_GROUPS = {0.5: (2, 4), 1.0: (3, 3), 2.0: (4, 2), 4.0: (8, 2)}


def _stable_at(lambda_k: float, beta: float, n_plus: int, n_minus: int) -> bool:
    V = _diag((1.0, lambda_k), "cpu")
    X, _, _ = pure_state(V, 1, n_plus, n_minus)  # eigh sorts ascending: index 1 is lambda_p = 1
    return bool(torch.linalg.eigvals(models.tangent_jacobian(models.spectral(V, beta), X)).real.max() < 0)


@experiment("spectral-stability-boundary", chapter="spectral_selection")
def stability_boundary(profile: str = "fast", device: str = "cpu", **kw) -> dict[str, Any]:
    """Figure 5: lambda_p sigma(e^{2 beta}, r) vs beta (lambda_p = 1) and Jacobian-located boundaries.

    ``device`` is accepted for the common signature and not used: the work is linear algebra on
    Jacobians of at most 10 tokens in d <= 4 (size n d <= 40), which the CPU does faster than a GPU."""
    cfg = _profile(profile, "boundary", kw)
    beta_curve = np.linspace(0.01, 3.0, 300)
    out: dict[str, Any] = dict(beta_curve=beta_curve, betas=np.array(cfg["betas"], dtype=float), r=list(R_GROUPS), curves={}, located={}, thresholds={})
    errs = []
    closed_below = []
    for r, (npl, nmi) in R_GROUPS.items():
        thr = th.threshold_beta(r)
        out["thresholds"][r] = thr
        out["curves"][r] = np.array([th.sigma(math.exp(2 * b), r) if b > thr else np.nan for b in beta_curve])
        located = []
        for b in cfg["betas"]:
            if not _stable_at(-0.999, b, npl, nmi):
                located.append(np.nan)  # window closed
                continue
            lo, hi = -0.999, 0.999
            for _ in range(cfg["bisect"]):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if _stable_at(mid, b, npl, nmi) else (lo, mid)
            located.append((lo + hi) / 2)
            errs.append(abs(located[-1] - th.sigma(math.exp(2 * b), r)))
        out["located"][r] = np.array(located)
        # theory: closed window just below the threshold (beta = 0.9 thr), open just above (1.1 thr)
        if thr > 0:
            closed_below.append(not _stable_at(-0.5, 0.9 * thr, npl, nmi) and _stable_at(-0.5, 1.1 * thr, npl, nmi))
        # expected: located is nan exactly when beta <= threshold
        out.setdefault("nan_matches", []).append(
            all(np.isnan(x) == (b <= thr) for x, b in zip(located, cfg["betas"]))
        )
    out["max_error"] = max(errs)
    out["located_points"] = len(errs)
    out["threshold_ok"] = all(closed_below)
    out["nan_matches"] = all(out["nan_matches"])
    return out


@plots("spectral-stability-boundary")
def plot_stability_boundary(result: dict[str, Any], ax=None):
    """Figure 5: the boundary sigma(e^{2 beta}, r) (lines), thresholds (empty circles), located (x)."""
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    styles = ["-", "--", "-.", ":"]
    for (r, ls) in zip(result["r"], styles):
        line, = ax.plot(result["beta_curve"], result["curves"][r], ls, label=f"r = {r:g}")
        ax.plot([result["thresholds"][r]], [0.0], "o", mfc="none", color=line.get_color())
        ax.plot(result["betas"], result["located"][r], "x", color=line.get_color())
    ax.set_xlabel("$\\beta$")
    ax.set_ylabel("$\\lambda_p\\,\\sigma(e^{2\\beta}, r)$")
    ax.legend()
    ax.set_title("Fig. 5 (spectral_selection.stability_boundary)")
    return ax


# ----------------------------------------------------------------------------- 5. Theorem 6.1 and Fig. 1


@experiment("spectral-cone-bound", chapter="spectral_selection")
def cone_bound(profile: str = "fast", device: str = "cpu", **kw) -> dict[str, Any]:
    """Theorem 6.1 on one-sided cone data (and the Fig. 1 snapshots of the first trial)."""
    cfg = _profile(profile, "cone", kw)
    g = torch.Generator().manual_seed(int(cfg.get("seed", 1)))
    lam = torch.tensor(V_POSITIVE, dtype=torch.float64)
    V = torch.diag(lam).to(device)
    beta = 1.0
    x0 = init.cone(cfg["trials"], cfg["n"], 3, cfg["delta"], generator=g).to(device)
    ts = torch.linspace(0, cfg["t1"], int(round(cfg["t1"] / 0.1)) + 1)
    snap_t = [0.0, 0.5, 1.0, 2.0]
    ts = torch.unique(torch.cat([ts, torch.tensor(snap_t, dtype=ts.dtype)]))
    xs = simulate(models.spectral(V, beta), x0, cfg["t1"], dt=cfg["dt"], save_at=ts).xs.cpu()  # (T, trials, n, 3)
    c1 = xs[..., 0]
    delta = c1[0].amin(dim=-1)  # (trials,) the tightest delta of each trial
    R = (xs[..., 1:] / c1[..., None]).abs().amax(dim=2)  # (T, trials, 2)
    bound = th.cone_ratio_bound(R[0], delta[:, None], float(lam[0]), lam[1:][None, :], ts)
    ratio = (R / bound).amax().item()  # 1 at t = 0 by construction
    ratio_after0 = (R / bound)[1:].amax().item()
    m = c1.amin(dim=-1)
    idx = [int(torch.argmin((ts - s).abs())) for s in snap_t]
    snaps = xs[idx, 0]
    return dict(
        ts=_np(ts), R=_np(R), bound=_np(bound), max_ratio=ratio, max_ratio_after0=ratio_after0,
        min_dm=torch.diff(m, dim=0).amin().item(),
        final_R=R[-1].amax().item(),
        final_rho_min=metrics.rho_min(xs[-1]).amin().item(),
        snap_t=snap_t, snapshots=_np(snaps),
        snap_mean_c1=[float(snaps[i, :, 0].mean()) for i in range(len(snap_t))],
        snap_rho_min=[float(metrics.rho_min(snaps[i])) for i in range(len(snap_t))],
        delta_min=delta.amin().item(), config=cfg,
    )


@plots("spectral-cone-bound")
def plot_cone_bound(result: dict[str, Any], ax=None):
    """R_k(t) / bound (Theorem 6.1) for every trial and k: never above 1."""
    import matplotlib.pyplot as plt

    ax = ax or plt.gca()
    q = result["R"] / result["bound"]
    ax.plot(result["ts"], q.reshape(len(result["ts"]), -1), lw=0.6, color="C0", alpha=0.5)
    ax.axhline(1.0, color="k", ls="--")
    ax.set_xlabel("t")
    ax.set_ylabel("$R_k(t)\\,/\\,R_k(0)e^{-\\delta(\\lambda_1-|\\lambda_k|)t}$")
    ax.set_title("Theorem 6.1 (spectral_selection.cone_bound)")
    return ax


@plots("spectral-cone-bound")
def plot_snapshots(result: dict[str, Any], fig=None):
    """Figure 1: one trial of cone data at t = 0, 0.5, 1, 2 on S^2; the star marks e_1."""
    import matplotlib.pyplot as plt

    fig = fig or plt.figure(figsize=(12, 3.4))
    u, v = np.mgrid[0 : 2 * np.pi : 30j, 0 : np.pi : 15j]
    for i, (t, X) in enumerate(zip(result["snap_t"], result["snapshots"])):
        ax = fig.add_subplot(1, len(result["snap_t"]), i + 1, projection="3d")
        ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.3)
        ax.scatter(X[:, 0], X[:, 1], X[:, 2], s=6, color="C0")
        ax.scatter([1.0], [0.0], [0.0], marker="*", s=150, color="orange")
        ax.set_title(f"t = {t:g}")
        ax.set_axis_off()
    fig.suptitle("Fig. 1 (spectral_selection.cone_bound, plot_snapshots)")
    return fig


# ----------------------------------------------------------------------------- 6. Figures 2-4

CONSENSUS_TOL = 1e-3


@experiment("spectral-rho-min", chapter="spectral_selection")
def rho_min_ensembles(profile: str = "fast", device: str = "cpu", **kw) -> dict[str, Any]:
    """Figure 2: rho_min(t) over 200 trials, n = 80, beta in {0.1, 1, 1.5}, the same initial data."""
    cfg = _profile(profile, "ensemble", kw)
    g = torch.Generator().manual_seed(int(cfg.get("seed", 2)))
    V = torch.diag(torch.tensor(V_POSITIVE, dtype=torch.float64)).to(device)
    x0 = init.uniform_sphere(cfg["trials"], cfg["n"], 3, generator=g).to(device)
    ts = torch.linspace(0, cfg["t1"], cfg["saves"])
    out: dict[str, Any] = dict(ts=_np(ts), betas=[0.1, 1.0, 1.5], rho={}, consensus={}, antipodal={}, other={}, min_dlogE={}, clusters2={})
    for beta in out["betas"]:
        xs = simulate(models.spectral(V, beta), x0, cfg["t1"], dt=cfg["dt"], save_at=ts).xs  # one batched call
        rho = metrics.rho_min(xs.flatten(0, 1)).reshape(len(ts), -1).cpu()
        out["rho"][beta] = _np(rho)
        final = rho[-1]
        out["consensus"][beta] = (final > 1 - CONSENSUS_TOL).double().mean().item()
        out["antipodal"][beta] = (final < -1 + CONSENSUS_TOL).double().mean().item()
        out["other"][beta] = 1 - out["consensus"][beta] - out["antipodal"][beta]
        out["clusters2"][beta] = (metrics.cluster_count(xs[-1], 0.05) == 2).double().mean().item()
        logE = metrics.interaction_energy(xs.flatten(0, 1), V, beta, log=True).reshape(len(ts), -1)
        out["min_dlogE"][beta] = torch.diff(logE, dim=0).amin().item()
    out["initial_rho_min_max"] = float(out["rho"][0.1][0].max())
    out["config"] = cfg
    return out


@plots("spectral-rho-min")
def plot_rho_min(result: dict[str, Any], axes=None):
    """Figure 2: one curve per trial, one panel per beta."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, len(result["betas"]), figsize=(12, 3.2), sharey=True)
    for ax, beta in zip(axes, result["betas"]):
        ax.plot(result["ts"], result["rho"][beta], color="green", lw=0.4, alpha=0.4)
        ax.set_title(f"$\\beta$ = {beta:g}")
        ax.set_xlabel("t")
    axes[0].set_ylabel("$\\rho_{\\min}(t)$")
    axes[0].figure.suptitle("Fig. 2 (spectral_selection.rho_min_ensembles)")
    return axes


@experiment("spectral-two-tokens", chapter="spectral_selection")
def two_tokens(profile: str = "fast", device: str = "cpu", **kw) -> dict[str, Any]:
    """Figure 3: two tokens, V negative definite: rho(t) decreasing and m_d(t) -> 1."""
    cfg = _profile(profile, "two", kw)
    g = torch.Generator().manual_seed(int(cfg.get("seed", 3)))
    V = torch.diag(torch.tensor(V_NEGATIVE, dtype=torch.float64)).to(device)
    beta = 1.0
    x0 = init.uniform_sphere(cfg["trials"], 2, 3, generator=g).to(device)
    ts = torch.linspace(0, cfg["t1"], cfg["saves"])
    xs = simulate(models.spectral(V, beta), x0, cfg["t1"], dt=cfg["dt"], save_at=ts).xs.cpu()
    rho = (xs[:, :, 0] * xs[:, :, 1]).sum(-1)  # (T, trials)
    md = 0.5 * (xs[:, :, 0, 2] ** 2 + xs[:, :, 1, 2] ** 2)
    active = rho[:-1] > -1 + 1e-8  # below this rho sits at -1 to rounding
    incr = torch.diff(rho, dim=0)
    not_decreasing = ((incr >= 0) & active).any(0)
    return dict(
        ts=_np(ts), rho=_np(rho), md=_np(md), beta=beta,
        not_decreasing=int(not_decreasing.sum()),
        max_increase=incr.amax().item(),
        md_below=int((md[-1] < 0.99).sum()),
        min_md_final=md[-1].amin().item(),
        max_rho_final=rho[-1].amax().item(),
        trials=cfg["trials"], config=cfg,
    )


@plots("spectral-two-tokens")
def plot_two_tokens(result: dict[str, Any], axes=None):
    """Figure 3: rho(t) and m_d(t) for every pair."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    axes[0].plot(result["ts"], result["rho"], color="C0", lw=0.4, alpha=0.4)
    axes[0].set_ylabel("$\\rho(t)$")
    axes[1].plot(result["ts"], result["md"], color="C0", lw=0.4, alpha=0.4)
    axes[1].set_ylabel("$m_d(t)$")
    for ax in axes:
        ax.set_xlabel("t")
    axes[0].figure.suptitle("Fig. 3 (spectral_selection.two_tokens)")
    return axes


@experiment("spectral-multi-token", chapter="spectral_selection")
def multi_token(profile: str = "fast", device: str = "cpu", **kw) -> dict[str, Any]:
    """Figure 4: n >= 3, V negative definite: how often the tokens collapse to +-e_d (open question)."""
    cfg = _profile(profile, "multi", kw)
    g = torch.Generator().manual_seed(int(cfg.get("seed", 4)))
    lam = torch.tensor(V_NEGATIVE, dtype=torch.float64)
    V = torch.diag(lam).to(device)
    beta = 1.0
    x0 = init.uniform_sphere(cfg["trials"], cfg["n"], 3, generator=g).to(device)
    ts = torch.linspace(0, cfg["t1"], cfg["saves"])
    xs = simulate(models.spectral(V, beta), x0, cfg["t1"], dt=cfg["dt"], save_at=ts).xs.cpu()
    masses = metrics.modal_masses(xs.flatten(0, 1), torch.eye(3, dtype=torch.float64)).reshape(len(ts), -1, 3)
    cd = xs[-1, :, :, 2]  # (trials, n)
    bipolar = (cd.abs() > 0.99).all(-1)
    both = bipolar & (cd > 0).any(-1) & (cd < 0).any(-1)
    n_plus = (cd > 0).sum(-1)
    # the sign-split state on e_d is stable only if |ln r| < 2 beta |lambda_d| (Theorem 5.2)
    frac_plus = n_plus[bipolar].double() / cfg["n"]
    return dict(
        ts=_np(ts), masses=_np(masses), n=cfg["n"], trials=cfg["trials"], beta=beta,
        bipolar_fraction=bipolar.double().mean().item(),
        both_signs_fraction=both.double().mean().item(),
        mean_md_final=masses[-1, :, 2].mean().item(),
        n_plus=_np(n_plus), frac_plus_range=(frac_plus.min().item(), frac_plus.max().item()) if bipolar.any() else (math.nan, math.nan),
        config=cfg,
    )


@plots("spectral-multi-token")
def plot_multi_token(result: dict[str, Any], axes=None):
    """Figure 4: modal masses m_k(t) (trial mean and spread) and the split n_+ of the final states."""
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=(10, 3.2))
    for k in range(3):
        m = result["masses"][:, :, k]
        axes[0].plot(result["ts"], m.mean(1), label=f"$m_{k + 1}$, $\\lambda_{k + 1} = {V_NEGATIVE[k]:g}$")
        axes[0].fill_between(result["ts"], np.quantile(m, 0.1, 1), np.quantile(m, 0.9, 1), alpha=0.2)
    axes[0].set_xlabel("t")
    axes[0].legend()
    axes[1].hist(result["n_plus"], bins=np.arange(result["n"] + 2) - 0.5)
    axes[1].set_xlabel("$n_+$ (tokens with $c_{i,d} > 0$ at the end)")
    axes[0].figure.suptitle("Fig. 4 (spectral_selection.multi_token)")
    return axes
