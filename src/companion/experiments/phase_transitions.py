"""Chapter "phase_transitions": paper A, Section 4 (norm transition, Theorem 4.2; depth transition,
Theorem 4.6) and Appendix E.1-E.3.

Norm transition: the post-LayerNorm layer map (18) with V = A = diag(lambda), tokens started near
u_1 = e_1 and i.i.d. random value adapters (19) with ``eta_L = c L^alpha``. Monte Carlo samples sit
on the trials axis, so one :func:`companion.models.iterate_layers` call runs them all; a run of
``t`` macroscopic time units chains ``t`` blocks of L layers (step 1/L), each with fresh adapters.

Depth transition: the rescaled dynamics (7) ``z = e^{-tV} x`` in d = 2 (App. E.1.1 / E.3.1 settings),
base ``Q = K = V = I`` against ``V~ = diag(1, 1 - eps)`` or ``Q~ = K~ = e_1 e_1^T``.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch

from .. import fits, init, models
from ..integrate import simulate
from ..metrics import cluster_centres
from ..models import ScaleCappedRescaled
from ..theory import lora_depth as th
from . import experiment, plots, sweep_point

__all__ = [
    "norm_transition",
    "norm_point",
    "norm_assemble",
    "norm_grid",
    "critical_kappa",
    "rank_independence",
    "depth_transition",
    "eps_sweep",
    "plot_norm_transition",
    "plot_critical_kappa",
    "plot_rank_independence",
    "plot_depth_transition",
    "plot_eps_sweep",
]

F64 = torch.float64

# Base value matrix of the norm experiments (d = 3): spectral gaps 0.5 and 0.75.
LAMBDAS3 = (1.0, 0.5, 0.25)


def _gen(seed: int) -> torch.Generator:
    """A CPU generator: random draws are made on the CPU and moved, so a seed gives the same
    initial state (and adapters) on every device."""
    return torch.Generator().manual_seed(int(seed))


def _check_profile(profile: str) -> None:
    if profile not in ("fast", "full"):
        raise ValueError(f"profile must be 'fast' or 'full', got {profile!r}")


# ----------------------------------------------------------------------------- norm transition
def _near_u1(trials: int, n: int, d: int, delta: float, gen: torch.Generator, device) -> torch.Tensor:
    """Tokens ``N(u_1 + delta g_i)``, g_i standard normal: (trials, n, d)."""
    X = (delta * torch.randn(trials, n, d, generator=gen, dtype=F64)).to(device)
    X[..., 0] += 1.0
    return X / X.norm(dim=-1, keepdim=True)


def _observables(X: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per trial: ``q = sum_i (1 - <x_i,u1>^2)`` (Thm D.4), ``sq = sum_i |x_i - u1|^2`` (eq. 21),
    ``spread = sum_i |x_i - xbar|^2`` and ``disp = 1 - <xbar/|xbar|, u1>^2`` (Fig. 8)."""
    c = X[..., 0]
    xbar = X.mean(dim=1)
    m = xbar / xbar.norm(dim=-1, keepdim=True)
    return {
        "q": (1 - c**2).sum(-1),
        "sq": (2 - 2 * c).sum(-1),
        "spread": ((X - xbar[:, None, :]) ** 2).sum((-1, -2)),
        "disp": 1 - m[:, 0] ** 2,
        "mean_dir": m,
    }


def adapter_chain(V: torch.Tensor, x0: torch.Tensor, L: int, blocks: int, rank: int, scale: torch.Tensor,
                  gen: torch.Generator, saves_per_block: int = 8) -> dict[str, torch.Tensor]:
    """Run ``blocks * L`` layers of (18) with i.i.d. adapters ``scale_trial * sum_a u_a v_a^T``.

    Parameters
    ----------
    V : (d, d) with A = V; x0 : (trials, n, d) on the sphere; L : depth (step 1/L);
    blocks : macroscopic time; rank : adapter rank; scale : (trials,) ``eta_L * s`` per trial;
    saves_per_block : observables kept per block.

    Returns
    -------
    dict of (S, trials) observables (``mean_dir``: (S, trials, d)) and ``t`` (S,) macroscopic times.

    Examples
    --------
    >>> x0 = _near_u1(2, 3, 3, 0.01, _gen(0), "cpu")
    >>> out = adapter_chain(torch.diag(torch.tensor(LAMBDAS3, dtype=F64)), x0, 8, 2, 1, torch.zeros(2), _gen(1), 2)
    >>> out["q"].shape, [round(float(t), 2) for t in out["t"]]
    (torch.Size([5, 2]), [0.0, 0.5, 1.0, 1.5, 2.0])
    """
    trials, n, d = x0.shape
    if L % saves_per_block:
        raise ValueError(f"L = {L} must be a multiple of saves_per_block = {saves_per_block}")
    k = L // saves_per_block
    obs = [_observables(x0)]
    X = x0
    for _ in range(blocks):
        dV = models.random_value_adapters(L, d, rank, 1.0, 1.0, trials=trials, generator=gen, device=gen.device).to(x0.device)
        dV = dV * scale.to(dV)[:, None, None, None]
        states = models.iterate_layers(models.LayerMap(A=V, V=V, dV=dV), X, save_every=k)
        obs += [_observables(S) for S in states[1:]]
        X = states[-1]
    out = {key: torch.stack([o[key] for o in obs]).cpu() for key in obs[0]}  # small observables: on the CPU
    out["t"] = torch.arange(len(obs), dtype=F64) / saves_per_block
    return out


def _window_mean(series: torch.Tensor, t: torch.Tensor, t_from: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-trial time average over ``t >= t_from`` then mean and standard error over trials."""
    per_trial = series[t >= t_from].mean(0)  # (trials,)
    m = per_trial.mean().item()
    se = per_trial.std().item() / math.sqrt(per_trial.numel())
    return m, se


NORM_DEPTHS = {"fast": [16, 32, 64, 128, 256, 512], "full": [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]}
NORM_ALPHAS = (0.0, 0.25, 0.5, 0.75)
NORM_PER = {"fast": 64, "full": 1000}  # samples per (alpha, L) and seed


@experiment("norm_transition", chapter="phase_transitions")
def norm_transition(profile: str = "fast", device: str = "cpu", *, seed: int = 0, c: float = 1.0, kappa0: float = 0.05) -> dict[str, Any]:
    """Theorem 4.2: stationary ``E sum_i |x_i - u1|^2`` against depth L for ``eta_L = c L^alpha``.

    Measured over macroscopic time ``[t_end / 2, t_end]`` after starting at ``N(u1 + 1e-3 g)``;
    the adapters have rank 1 and ``s = d sqrt(kappa0)`` (so ``kappa = kappa0``). Returns the means
    and standard errors per (alpha, L), the weighted log-log slopes with their standard errors, and the
    kappa_eff prediction of the level; the theorem says slope ``-1``, the effective-noise argument
    ``2 alpha - 1``. One :func:`norm_point` per depth (seed ``seed + j`` for the j-th depth), combined
    by :func:`norm_assemble`; ``python -m companion sweep norm_transition`` computes them on Dask.
    """
    points = [norm_point(profile, device, **p, c=c, kappa0=kappa0) for p in norm_grid(profile, seed)]
    return norm_assemble(points)


def norm_grid(profile: str = "fast", seed: int = 0) -> list[dict[str, Any]]:
    """The points :func:`norm_transition` computes: one per depth of ``NORM_DEPTHS[profile]``, seed ``seed + j``.

    Examples
    --------
    >>> norm_grid("fast")[:2]
    [{'L': 16, 'seed': 0}, {'L': 32, 'seed': 1}]
    """
    _check_profile(profile)
    return [{"L": L, "seed": seed + j} for j, L in enumerate(NORM_DEPTHS[profile])]


def norm_assemble(points: list[dict[str, Any]]) -> dict[str, Any]:
    """The norm transition from :func:`norm_point` results (any number of seeds per depth, one c and kappa0).

    Per (alpha, L) the per-sample time averages of every point are pooled into a mean and a standard
    error; then the weighted log-log slope per alpha and the kappa_eff prediction (see
    :func:`norm_transition`).

    Examples
    --------
    >>> pts = [{"L": L, "c": 1.0, "kappa0": 0.05, "n": 8, "d": 3, "t_end": 3, "alphas": [0.0],
    ...         "per_trial": [[1.0 / L, 1.1 / L, 0.9 / L]]} for L in (16, 64)]
    >>> r = norm_assemble(pts)
    >>> r["depths"], round(r["slopes"][0.0], 12), r["per_alpha"]
    ([16, 64], -1.0, 3)
    """
    if not points:
        raise ValueError("norm_assemble needs at least one point")
    first = points[0]
    c, kappa0, n, d, t_end = float(first["c"]), float(first["kappa0"]), int(first["n"]), int(first["d"]), int(first["t_end"])
    alphas = [float(a) for a in first["alphas"]]
    for p in points:
        if (float(p["c"]), float(p["kappa0"]), [float(a) for a in p["alphas"]]) != (c, kappa0, alphas):
            raise ValueError("norm_assemble: every point must have the same c, kappa0 and alphas (sweep them separately)")
    depths = sorted({int(p["L"]) for p in points})
    mean = np.zeros((len(alphas), len(depths)))
    se = np.zeros_like(mean)
    pers = set()
    for j, L in enumerate(depths):
        per_trial = np.concatenate([np.asarray(p["per_trial"], dtype=np.float64) for p in points if int(p["L"]) == L], axis=1)
        pers.add(per_trial.shape[1])
        for a in range(len(alphas)):
            x = torch.from_numpy(per_trial[a])
            mean[a, j], se[a, j] = x.mean().item(), x.std().item() / math.sqrt(x.numel())
    nan = {"slope": math.nan, "slope_se": math.nan}
    lines = [fits.line_fit(depths, mean[a], se=se[a], loglog=True) if len(depths) > 1 else nan for a in range(len(alphas))]
    slopes = {alpha: lines[a]["slope"] for a, alpha in enumerate(alphas)}
    slope_se = {alpha: lines[a]["slope_se"] for a, alpha in enumerate(alphas)}
    # the small-noise stationary level with kappa_eff = c^2 kappa0 L^(2 alpha - 1)
    predicted = np.array([[th.stationary_deviation(LAMBDAS3, th.effective_kappa(kappa0, c, al, L), n) for L in depths]
                          for al in alphas])
    return {"depths": depths, "alphas": alphas, "mean": mean, "se": se, "slopes": slopes, "slope_se": slope_se,
            "predicted": predicted, "n": n, "d": d, "per_alpha": pers.pop() if len(pers) == 1 else sorted(pers),
            "kappa0": kappa0, "c": c, "t_end": t_end, "uniform_level": 2.0 * n}  # E|x - u1|^2 = 2 for x uniform on the sphere


@sweep_point("norm_transition", assemble=norm_assemble, grid=norm_grid)
def norm_point(profile: str = "fast", device: str = "cpu", *, L: int, seed: int, per: int | None = None, c: float = 1.0,
               kappa0: float = 0.05) -> dict[str, Any]:
    """One depth of the norm transition: ``per`` samples for each alpha in ``NORM_ALPHAS`` (one
    batched chain of 3 blocks of L layers, seed ``seed``), each sample's ``sum_i |x_i - u1|^2``
    averaged over ``t >= 1.5``: ``per_trial`` of shape (alphas, per).

    Examples
    --------
    >>> r = norm_point(L=16, seed=0, per=4)
    >>> np.asarray(r["per_trial"]).shape, bool(np.all(np.asarray(r["per_trial"]) > 0))
    ((4, 4), True)
    """
    _check_profile(profile)
    per = NORM_PER[profile] if per is None else int(per)
    if int(L) < 8 or int(L) % 8 or per < 2:
        raise ValueError(f"need a depth L >= 8 that is a multiple of 8 and per >= 2 samples, got L = {L}, per = {per}")
    L = int(L)
    d, n, t_end = 3, 8, 3
    alphas = list(NORM_ALPHAS)
    V = torch.diag(torch.tensor(LAMBDAS3, dtype=F64, device=device))
    s = d * math.sqrt(kappa0)
    g = _gen(seed)
    x0 = _near_u1(per * len(alphas), n, d, 1e-3, g, device)
    scale = torch.tensor([c * L**al * s for al in alphas], dtype=F64).repeat_interleave(per)  # all alphas at once
    out = adapter_chain(V, x0, L, t_end, 1, scale, g)
    keep = out["t"] >= t_end / 2
    per_trial = torch.stack([out["sq"][:, a * per:(a + 1) * per][keep].mean(0) for a in range(len(alphas))])
    return {"L": L, "seed": seed, "per": per, "c": c, "kappa0": kappa0, "alphas": alphas, "n": n, "d": d, "t_end": t_end,
            "per_trial": per_trial.cpu().numpy()}


@experiment("critical_kappa", chapter="phase_transitions")
def critical_kappa(profile: str = "fast", device: str = "cpu", *, seed: int = 1) -> dict[str, Any]:
    """Critical scaling ``eta_L = sqrt(L)``: stationary ``E sum_i (1 - <x_i,u1>^2)`` against kappa,
    compared with prediction (21), the Theorem D.4 form and the exact Bingham law; also the Figure 8
    numbers (token spread against the displacement of the mean direction). All kappa values run in
    one batched chain (the adapter scale is set per trial)."""
    _check_profile(profile)
    fast = profile == "fast"
    d, n = 3, 8
    per = 80 if fast else 2000
    L = 64 if fast else 1024
    kappas = [0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2]
    t_end, t_from = 7, 2.5
    V = torch.diag(torch.tensor(LAMBDAS3, dtype=F64, device=device))
    g = _gen(seed)
    x0 = _near_u1(per * len(kappas), n, d, 0.05, g, device)
    s = torch.tensor([d * math.sqrt(k) for k in kappas], dtype=F64).repeat_interleave(per)
    out = adapter_chain(V, x0, L, t_end, 1, math.sqrt(L) * s, g)
    res = {"kappas": kappas, "L": L, "n": n, "d": d, "per_kappa": per, "t": out["t"].cpu().numpy()}
    for key in ("q", "sq"):
        ms, ses = zip(*[_window_mean(out[key][:, i * per:(i + 1) * per], out["t"], t_from) for i in range(len(kappas))])
        res[key], res[key + "_se"] = np.array(ms), np.array(ses)
    res["eq21"] = np.array([th.stationary_deviation(LAMBDAS3, k, n) for k in kappas])
    res["D4"] = np.array([th.stationary_deviation(LAMBDAS3, k, n, form="D4") for k in kappas])
    res["bingham"] = np.array([th.bingham_deviation(LAMBDAS3, k, n) for k in kappas])
    # Figure 8: at kappa = 0.05, per-trial spread and mean-direction displacement at the last layer
    i = kappas.index(0.05)
    sl = slice(i * per, (i + 1) * per)
    res["fig8_spread"] = out["spread"][-1, sl].mean().item()
    res["fig8_disp"] = out["disp"][-1, sl].mean().item()
    res["fig8_spread_t0"] = out["spread"][0, sl].mean().item()
    res["fig8_path"] = out["mean_dir"][:, i * per].cpu().numpy()  # one sample's common direction over time
    res["q_curve_fig8"] = out["q"][:, sl].mean(1).cpu().numpy()
    return res


@experiment("rank_independence", chapter="phase_transitions")
def rank_independence(profile: str = "fast", device: str = "cpu", *, seed: int = 2, kappa: float = 0.01) -> dict[str, Any]:
    """Ranks 1, 4, 16 at the same kappa (d = 16, ``eta_L = sqrt(L)``): ``E sum_i (1 - <x_i,u1>^2)`` over
    time per rank, and the time-averaged stationary levels with standard errors."""
    _check_profile(profile)
    fast = profile == "fast"
    d, n = 16, 8
    per = 80 if fast else 1000
    L = 32 if fast else 512
    ranks = [1, 4, 16]
    t_end, t_from = 5, 2.0
    lam = torch.cat([torch.ones(1, dtype=F64), torch.linspace(0.5, 0.1, d - 1, dtype=F64)])
    V = torch.diag(lam).to(device)
    curves, levels, ses = [], [], []
    for j, r in enumerate(ranks):
        g = _gen(seed + j)
        x0 = _near_u1(per, n, d, 0.05, g, device)
        s = d * math.sqrt(kappa / r)  # r s^2 / d^2 = kappa
        out = adapter_chain(V, x0, L, t_end, r, torch.full((per,), math.sqrt(L) * s, dtype=F64), g)
        curves.append((out["q"].mean(1).cpu().numpy(), (out["q"].std(1) / math.sqrt(per)).cpu().numpy()))
        m, e = _window_mean(out["q"], out["t"], t_from)
        levels.append(m)
        ses.append(e)
    levels, ses = np.array(levels), np.array(ses)
    z = max(abs(levels[a] - levels[b]) / math.hypot(ses[a], ses[b]) for a in range(3) for b in range(a + 1, 3))
    return {"ranks": ranks, "t": out["t"].cpu().numpy(), "curves": curves, "levels": levels, "se": ses, "max_z": z,
            "eq21": th.stationary_deviation(lam, kappa, n), "kappa": kappa, "d": d, "n": n, "L": L, "per_rank": per}


# ----------------------------------------------------------------------------- depth transition
def _centres(Z: torch.Tensor, tol: float) -> list[np.ndarray]:
    """Cluster centres per trial (single linkage at ``tol``): list of (k, d) arrays."""
    return [c for c, _ in cluster_centres(Z, tol)]


def _dist_to_set(Z: torch.Tensor, C: np.ndarray) -> torch.Tensor:
    """``max_i d(z_i, C)`` at every saved time: Z (T, n, d) -> (T,), on the CPU (compared with ``sol.ts``)."""
    c = torch.as_tensor(C, dtype=Z.dtype, device=Z.device)
    return torch.cdist(Z, c.expand(Z.shape[0], *c.shape)).amin(-1).amax(-1).cpu()


def _base_run(Z0: torch.Tensor, t_base: float, dt: float, delta: float):
    base = simulate(models.Rescaled(A=torch.eye(2, dtype=F64), V=torch.eye(2, dtype=F64)), Z0, t_base, method="rk4", dt=dt,
                    save_at=torch.arange(0, t_base + dt / 2, dt, dtype=F64))
    C = _centres(base.xs[-1], delta / 2)
    T_delta = [fits.settle_time(base.ts, _dist_to_set(base.xs[:, tr], C[tr]), delta) for tr in range(Z0.shape[0])]
    return base, C, np.array(T_delta)


def _perturbed_times(Z0, V_t, A_t, C, T_delta, t_end, dt, delta, save_dt=0.5):
    """Exit times T*(delta) (resolution ``save_dt``), the perturbed dynamics' own settle time (time to
    cluster) and the solution."""
    ts = torch.arange(0, t_end + save_dt / 2, save_dt, dtype=F64)
    sol = simulate(ScaleCappedRescaled(A=A_t, V=V_t), Z0, t_end, method="rk4", dt=dt, save_at=ts)
    trials = Z0.shape[0]
    # the exit: the first saved t >= T_delta at which a token is 2 delta away from C (inf: none in the horizon)
    exits = np.array([fits.first_crossing(sol.ts, _dist_to_set(sol.xs[:, tr], C[tr]), 2 * delta, start=T_delta[tr] - 1e-9,
                                          interpolate=False, never=math.inf) for tr in range(trials)])
    Ct = _centres(sol.xs[-1], delta / 2)
    settle = np.array([fits.settle_time(sol.ts, _dist_to_set(sol.xs[:, tr], Ct[tr]), delta) for tr in range(trials)])
    # a settle time in the last 20% of the horizon is not trusted (the run may still be moving)
    settle = np.where(settle > 0.8 * t_end, np.nan, settle)
    return sol, exits, settle


def _bound_for(C: np.ndarray, eps: float, n: int, delta: float):
    """Theorem 4.6 constants for V~ = diag(1, 1 - eps), Q = K = I; M from the tube around C."""
    M = float(np.abs(C).max() + 2 * delta)
    try:
        return th.depth_bound(torch.as_tensor(C), torch.eye(2), torch.eye(2), torch.diag(torch.tensor([1.0, 1.0 - eps], dtype=F64)),
                              n=n, delta=delta, M=M)
    except ValueError:
        return None  # Assumption 4.5 fails for this configuration


@experiment("depth_transition", chapter="phase_transitions")
def depth_transition(profile: str = "fast", device: str = "cpu", *, seed: int = 3, eps: float = 0.01, delta: float = 0.1) -> dict[str, Any]:
    """Theorem 4.6 in the Figure 5 settings: T_delta of the base (Q = K = V = I_2) and the exit time
    T*(delta) of (a) ``V~ = diag(1, 1 - eps)`` with the theorem's bound and the hard-argmax switch time,
    (b) ``Q~ = K~ = e1 e1^T`` (V~ = I_2: Assumption 4.5 cannot hold). Tokens uniform in [-5, 5]^2."""
    _check_profile(profile)
    fast = profile == "fast"
    n, trials, dt = 20, (8 if fast else 64), 0.1
    Z0 = init.cube(trials, n, 2, 5.0, generator=_gen(seed)).to(device)
    base, C, T_delta = _base_run(Z0, 30.0, dt, delta)
    t_end = 250.0 if fast else 1000.0  # past the largest switch time of these draws at eps = 0.01
    Vt = torch.diag(torch.tensor([1.0, 1.0 - eps], dtype=F64))
    sol_a, exit_a, _ = _perturbed_times(Z0, Vt, torch.eye(2, dtype=F64), C, T_delta, t_end, dt, delta)
    bounds = [_bound_for(C[tr], eps, n, delta) for tr in range(trials)]
    bound_a = np.array([th.exit_time_bound(T_delta[tr], b) if b is not None else np.nan for tr, b in enumerate(bounds)])
    switch_a = np.array([th.switch_time(C[tr], eps) for tr in range(trials)])
    e1 = torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=F64)
    sol_b, exit_b, _ = _perturbed_times(Z0, torch.eye(2, dtype=F64), e1, C, T_delta, 60.0, dt, delta, save_dt=0.1)
    # (b): does Assumption 4.5 hold for any initial condition (V~ = I_2 has no simple dominant eigenvalue)?
    bound_b = []
    for tr in range(trials):
        try:
            b = th.depth_bound(torch.as_tensor(C[tr]), e1, e1, torch.eye(2, dtype=F64), n=n, delta=delta,
                               M=float(np.abs(C[tr]).max() + 2 * delta))
            bound_b.append(th.exit_time_bound(T_delta[tr], b))
        except ValueError:
            bound_b.append(math.nan)
    # (b): distance of the perturbed tokens to the base clusters at T_delta (the exit happens at once)
    dist_b = np.array([float(_dist_to_set(sol_b.xs[:, tr], C[tr])[int(round(T_delta[tr] / 0.1))]) for tr in range(trials)])
    return {"eps": eps, "delta": delta, "n": n, "trials": trials, "T_delta": T_delta, "n_clusters": [len(c) for c in C],
            "exit_a": exit_a, "bound_a": bound_a, "switch_a": switch_a, "bounds": bounds, "exit_b": exit_b,
            "bound_b": np.array(bound_b), "dist_b_at_T_delta": dist_b,
            "clusters0": C[0], "base_path0": base.xs[:, 0].cpu().numpy(), "pert_path0": sol_a.xs[::2, 0].cpu().numpy(),
            "qk_path0": sol_b.xs[:, 0].cpu().numpy()}


@experiment("eps_sweep", chapter="phase_transitions")
def eps_sweep(profile: str = "fast", device: str = "cpu", *, seed: int = 4, delta: float = 0.1) -> dict[str, Any]:
    """Time to bifurcation T*(delta) and time to cluster (settle time of the perturbed dynamics)
    against eps for ``V~ = diag(1, 1 - eps)``, with fitted log-log exponents of the medians over the
    initial conditions (fitted where median T* >= 3 max T_delta; bootstrap standard errors over the
    initial conditions), the Theorem 4.6 bound,
    and the largest eps for which every token stays within 2 delta on [T_delta, 10 T_delta] (part 1).
    All eps values and initial conditions run in one batched simulate call."""
    _check_profile(profile)
    fast = profile == "fast"
    n, inits, dt = 20, (6 if fast else 32), 0.1
    epss = np.geomspace(3e-3, 0.3, 9) if fast else np.geomspace(1e-3, 0.3, 15)
    t_end = 600.0 if fast else 3000.0
    Z0 = init.cube(inits, n, 2, 5.0, generator=_gen(seed)).to(device)
    base, C, T_delta = _base_run(Z0, 30.0, dt, delta)
    E = len(epss)
    Zb = Z0.repeat(E, 1, 1)  # trial index = e * inits + i
    Vt = torch.stack([torch.diag(torch.tensor([1.0, 1.0 - e], dtype=F64)) for e in epss]).repeat_interleave(inits, 0)
    Cb, Tb = [C[i] for _ in epss for i in range(inits)], np.tile(T_delta, E)
    _, exits, settle = _perturbed_times(Zb, Vt, torch.eye(2, dtype=F64), Cb, Tb, t_end, dt, delta)
    exits, settle = exits.reshape(E, inits), settle.reshape(E, inits)
    bound = np.array([[th.exit_time_bound(T_delta[i], b) if (b := _bound_for(C[i], e, n, delta)) is not None else np.nan
                       for i in range(inits)] for e in epss])
    switch = np.array([[th.switch_time(C[i], e) for i in range(inits)] for e in epss])
    # a run that has not bifurcated within the horizon has not reached its own limit: no time to cluster
    settle = np.where(np.isfinite(exits), settle, np.nan)
    stays = exits > 10 * T_delta[None, :]  # part 1 holds for this (eps, init)
    eps_star = []
    for i in range(inits):
        ok = np.cumprod(stays[:, i]).astype(bool)  # holds for every eps up to this one
        eps_star.append(float(epss[ok][-1]) if ok.any() else math.nan)
    med_exit = np.median(exits, axis=1)
    with warnings.catch_warnings():  # an eps with no finite value gives nan, which the fit masks out
        warnings.simplefilter("ignore", RuntimeWarning)
        med_settle = np.nanmedian(settle, axis=1)
        med_bound = np.nanmedian(bound, axis=1)
    # Fit where the bifurcation is separated from the clustering of the base (median T* >= 3 max T_delta):
    # for larger eps the exit is floored at T_delta and says nothing about the eps law.
    fit = np.isfinite(med_exit) & (med_exit >= 3 * T_delta.max())
    fit_c = fit & np.isfinite(med_settle)

    def exponents(ex, se_, bd):
        me, ms, mb = np.median(ex, axis=1), np.nanmedian(se_, axis=1), np.nanmedian(bd, axis=1)
        ok = fit & np.isfinite(me)
        okc = fit_c & np.isfinite(ms)
        def slope(x, y):
            return fits.line_fit(x, y, loglog=True)["slope"] if len(x) >= 2 else math.nan

        return slope(epss[ok], me[ok]), slope(epss[okc], ms[okc]), slope(epss[ok], mb[ok])

    est = exponents(exits, settle, bound)
    # error bars: bootstrap over the initial conditions (same resample for every eps)
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(200):
        idx = rng.integers(0, inits, inits)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            boot.append(exponents(exits[:, idx], settle[:, idx], bound[:, idx]))
    boot_se = np.nanstd(np.array(boot), axis=0, ddof=1)
    return {"epss": epss, "T_delta": T_delta, "exits": exits, "settle": settle, "bound": bound, "switch": switch,
            "eps_star": np.array(eps_star), "median_exit": med_exit, "median_settle": med_settle, "median_bound": med_bound,
            "fit_eps": epss[fit], "exponent_exit": est[0], "exponent_settle": est[1], "exponent_bound": est[2],
            "exponent_exit_se": float(boot_se[0]), "exponent_settle_se": float(boot_se[1]),
            "exponent_bound_se": float(boot_se[2]), "n": n, "inits": inits, "delta": delta, "t_end": t_end}


# ----------------------------------------------------------------------------- plots
def _ax(ax):
    import matplotlib.pyplot as plt

    return ax if ax is not None else plt.subplots(figsize=(5, 3.6))[1]


@plots("norm_transition")
def plot_norm_transition(result: dict, ax=None):
    """Stationary deviation against depth L, one curve per alpha (log-log), dashed: kappa_eff theory."""
    ax = _ax(ax)
    for a, alpha in enumerate(result["alphas"]):
        line = ax.errorbar(result["depths"], result["mean"][a], yerr=2 * result["se"][a], marker="o", ms=3, capsize=2,
                           label=f"alpha={alpha} (slope {result['slopes'][alpha]:.2f})")
        ax.plot(result["depths"], result["predicted"][a], "--", color=line[0].get_color(), lw=0.8)
    ax.axhline(result["uniform_level"], color="gray", lw=0.6, ls=":")
    ax.set(xscale="log", yscale="log", xlabel="depth L", ylabel="E sum_i |x_i - u1|^2",
           title="norm_transition")
    ax.set_xticks(result["depths"], [str(L) for L in result["depths"]])
    ax.xaxis.set_minor_formatter("")  # the log axis' minor labels overlap the depth labels
    ax.legend(fontsize=7)
    return ax


@plots("critical_kappa")
def plot_critical_kappa(result: dict, ax=None):
    """Measured stationary deviation / prediction, against kappa, for (21), Theorem D.4 and Bingham."""
    ax = _ax(ax)
    k = np.array(result["kappas"])
    for key, lab in (("eq21", "prediction (21)"), ("bingham", "Bingham (exact limit)"), ("D4", "Theorem D.4 (sum from i=1)")):
        ax.errorbar(k, result["q"] / result[key], yerr=2 * result["q_se"] / result[key], marker="o", ms=3, capsize=2, label=lab)
    ax.axhline(1, color="gray", lw=0.6)
    ax.set(xscale="log", yscale="log", xlabel="kappa", ylabel="measured / predicted", title="critical_kappa")
    ax.legend(fontsize=7)
    return ax


@plots("rank_independence")
def plot_rank_independence(result: dict, ax=None):
    """E sum_i (1 - <x_i,u1>^2) against macroscopic time for ranks 1, 4, 16 at equal kappa."""
    ax = _ax(ax)
    for r, (m, se) in zip(result["ranks"], result["curves"]):
        ax.plot(result["t"], m, label=f"rank {r}")
        ax.fill_between(result["t"], m - 2 * se, m + 2 * se, alpha=0.25)
    ax.axhline(result["eq21"], color="k", ls="--", lw=0.8, label="(21)")
    ax.set(xlabel="t = layers / L", ylabel="E sum_i (1 - <x_i,u1>^2)", title="rank_independence")
    ax.legend(fontsize=7)
    return ax


@plots("depth_transition")
def plot_depth_transition(result: dict, ax=None):
    """Rescaled tokens of one initial condition: base limit clusters and the perturbed trajectory."""
    ax = _ax(ax)
    P = result["pert_path0"]
    ax.plot(P[:, :, 0], P[:, :, 1], color="tab:red", lw=0.5, alpha=0.6)
    B = result["base_path0"]
    ax.plot(B[:, :, 0], B[:, :, 1], color="tab:blue", lw=0.5, alpha=0.6)
    C = result["clusters0"]
    ax.scatter(C[:, 0], C[:, 1], color="k", zorder=3, s=20, label="base clusters C")
    ax.scatter(P[-1, :, 0], P[-1, :, 1], color="tab:red", marker="x", zorder=3, label="perturbed limit")
    ax.set(xlabel="z_1", ylabel="z_2", title=f"depth_transition (eps = {result['eps']})")
    ax.legend(fontsize=7)
    return ax


@plots("eps_sweep")
def plot_eps_sweep(result: dict, ax=None):
    """Median time to bifurcation T*, time to cluster and the Theorem 4.6 bound against eps (log-log)."""
    ax = _ax(ax)
    e = result["epss"]
    ax.plot(e, result["median_exit"], "o-", label=f"time to bifurcation T* (exp {result['exponent_exit']:.2f})")
    ax.plot(e, result["median_settle"], "s-", label=f"time to cluster (exp {result['exponent_settle']:.2f})")
    ax.plot(e, result["median_bound"], "--", label=f"Thm 4.6 bound (exp {result['exponent_bound']:.2f})")
    ax.plot(e, np.median(result["switch"], axis=1), ":", label="argmax switch time")
    ax.set(xscale="log", yscale="log", xlabel="eps", ylabel="time", title="eps_sweep")
    ax.legend(fontsize=7)
    return ax
