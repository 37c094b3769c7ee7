"""Paper B (Alcalde, Bungert, Riedl, Roith): low-temperature concentration, figure by figure.

Every experiment integrates paper B's particle system (eq. 1) with explicit Euler, dt = 0.01, as the
paper's Section 5 does, and the zero-temperature flow (eq. 3) with the same scheme (the paper's
Algorithm 2). Several inverse temperatures run as ONE batched simulation: ``beta <x_i, B x_j>`` is
``<(beta B^T) x_i, x_j>``, so trial k gets ``A_k = beta_k B^T`` and the model's own beta is 1.

Profiles: ``fast`` (CI, 2 CPU cores, about a minute per experiment) and ``full`` (more seeds and
tokens; meant for a GPU).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch

from .. import fits, init, metrics, models
from ..integrate import simulate
from ..theory import low_temperature as lt
from . import experiment, plots

__all__ = [
    "FIG3_B",
    "FIG3_V",
    "FABS_B",
    "FABS_V",
    "simulate_betas",
    "figure3",
    "beta_comparison",
    "rate_in_beta",
    "zero_temperature_rate",
    "conjecture1",
    "plot_figure3",
    "plot_beta_comparison",
    "plot_rate_in_beta",
    "plot_zero_temperature_rate",
    "plot_conjecture1",
]

_F64 = torch.float64


def _diag(*a: float) -> torch.Tensor:
    return torch.diag(torch.tensor(a, dtype=_F64))


# Figure 3 of the paper: V B^T = diag(1, -1, -2), E = span(e1), F = span(e2) (top of V).
FIG3_V = _diag(-1.0, 1.0, -2.0)
FIG3_B = _diag(-1.0, -1.0, 1.0)
# Our example for F^abs (the paper's Appendix C examples were not recovered): V B^T = diag(2, -1, 0.3),
# E = span(e1), F = span(e2) (eigenvalue 1), F^abs = span(e3) (eigenvalue -3, largest modulus).
FABS_V = _diag(-1.0, 1.0, -3.0)
FABS_B = _diag(-2.0, -1.0, -0.1)

_PROFILES = ("fast", "full")


def _profile(profile: str) -> str:
    if profile not in _PROFILES:
        raise ValueError(f"profile must be one of {_PROFILES}, got {profile!r}")
    return profile


def simulate_betas(B, V, betas: Sequence[float], x0: torch.Tensor, t1: float, *, dt: float = 0.01, save_at=None, method: str = "euler"):
    """Paper B eq. (1) for several inverse temperatures in one batched run.

    Parameters
    ----------
    B, V : (d, d); betas : K inverse temperatures; x0 : (S, n, d) initial tokens (S seeds).

    Returns
    -------
    (ts, xs) with ``xs : (T, K, S, n, d)``.

    Examples
    --------
    >>> x0 = init.uniform_sphere(2, 5, 3, generator=torch.Generator().manual_seed(0))
    >>> ts, xs = simulate_betas(FIG3_B, FIG3_V, [1.0, 10.0], x0, 0.1)
    >>> tuple(xs.shape)
    (2, 2, 2, 5, 3)
    """
    betas = [float(b) for b in betas]
    if not betas or any(not (math.isfinite(b) and b > 0) for b in betas):
        raise ValueError(f"betas must be finite positive numbers, got {betas}")
    x0 = torch.as_tensor(x0)
    S = x0.shape[0]
    Bt = torch.as_tensor(B).to(x0).T
    A = torch.stack([b * Bt for b in betas for _ in range(S)])
    X0 = x0.repeat(len(betas), 1, 1)
    sol = simulate(models.Sphere(A=A, V=torch.as_tensor(V).to(x0), beta=1.0), X0, t1, method=method, dt=dt, save_at=save_at)
    return sol.ts, sol.xs.reshape(len(sol.ts), len(betas), S, *x0.shape[1:])


def _w(xs: torch.Tensor, x0: torch.Tensor, v: torch.Tensor, p: int = 2) -> torch.Tensor:
    """W_p(mu_t, Pi_# mu_0) (chordal) for every saved state, E = span(v). xs: (T, S, n, d) -> (T, S).

    Exact, by :func:`companion.theory.low_temperature.wasserstein_to_pi` (tested against POT)."""
    return torch.stack([lt.wasserstein_to_pi(x, x0, v, p) for x in xs])


def _exit_time(ts, w, level: float) -> float:
    """End of the metastable phase: the first time after the minimum of ``w`` at which ``w`` reaches
    ``level`` (interpolated between saved times); nan if it never does."""
    ts, w = (torch.as_tensor(a, dtype=torch.float64).cpu().numpy() for a in (ts, w))
    return fits.first_crossing(ts, w, level, start=ts[int(np.argmin(w))])


def _alignment(xs: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """Mean over tokens of |P x|^2 for the subspace spanned by ``basis``. xs: (..., n, d) -> (...)."""
    return ((xs @ basis) ** 2).sum(-1).mean(-1)


# ----------------------------------------------------------------------------- Figure 3


@experiment("low_temperature.figure3", chapter="low_temperature")
def figure3(profile: str = "fast", device: str = "cpu", *, seeds: int | None = None, beta: float = 100.0, n: int = 200, t1: float = 20.0, dt: float = 0.01, level: float = 0.5, seed: int = 0) -> dict[str, Any]:
    """Figure 3: beta = 100, V = diag(-1, 1, -2), B = diag(-1, -1, 1): concentration on +-e1, then +-e2."""
    seeds = seeds or {"fast": 4, "full": 16}[_profile(profile)]
    g = torch.Generator().manual_seed(seed)
    x0 = init.uniform_sphere(seeds, n, 3, generator=g).to(device)
    save = torch.linspace(0, t1, int(round(t1 / 0.25)) + 1)
    ts, xs = simulate_betas(FIG3_B, FIG3_V, [beta], x0, t1, dt=dt, save_at=save)
    xs = xs[:, 0]
    E = lt.check_assumption_1(FIG3_B, FIG3_V)
    F = lt.top_eigenspace(FIG3_V)
    v = E.basis[:, 0].to(x0)
    w2 = _w(xs, x0, v, 2)
    w1 = _w(xs, x0, v, 1)
    exits = [_exit_time(ts, w2[:, s], level) for s in range(seeds)]
    return {
        "ts": ts.cpu().numpy(),
        "w2": w2.cpu().numpy(),
        "w1": w1.cpu().numpy(),
        "align_E": _alignment(xs, E.basis.to(xs)).cpu().numpy(),
        "align_F": _alignment(xs, F.basis.to(xs)).cpu().numpy(),
        "exit_times": np.array(exits),
        "snapshots": {float(t): xs[int(torch.argmin((ts - t).abs()))][0].cpu().numpy() for t in (0.0, 3.0, 20.0) if t <= t1},
        "config": {"beta": beta, "n": n, "seeds": seeds, "t1": t1, "dt": dt, "level": level, "seed": seed, "method": "euler"},
    }


@plots("low_temperature.figure3")
def plot_figure3(result: dict[str, Any], ax=None):
    """Two panels: W_2(mu_t, Pi_# mu_0) per seed, and the mean alignment with E and with F."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    ts = result["ts"]
    beta = result["config"]["beta"]
    ax[0].semilogy(ts, result["w2"], color="C0", alpha=0.6)
    ax[0].axvline(math.log(beta), color="k", ls=":", label=r"$t = \log\beta$")
    ax[0].axhline(result["config"]["level"], color="C3", ls="--", lw=0.8, label="exit level")
    ax[0].set(xlabel="t", ylabel=r"$W_2(\mu_t, \Pi_\sharp\mu_0)$", title=f"beta = {beta:g}, one line per seed")
    ax[0].legend()
    ax[1].plot(ts, result["align_E"].mean(1), label=r"mean $|P_E x|^2$ ($E = e_1$)")
    ax[1].plot(ts, result["align_F"].mean(1), label=r"mean $|P_F x|^2$ ($F = e_2$)")
    ax[1].axvline(math.log(beta), color="k", ls=":")
    ax[1].set(xlabel="t", ylabel="alignment", title="figure3: alignment with E, then F")
    ax[1].legend()
    return ax


# ----------------------------------------------------------------------------- Figure 4


@experiment("low_temperature.beta_comparison", chapter="low_temperature")
def beta_comparison(profile: str = "fast", device: str = "cpu", *, betas: Sequence[float] = (10.0, 30.0, 100.0, 300.0, 1000.0), seeds: int | None = None, n: int = 200, t1: float = 20.0, dt: float = 0.01, level: float = 0.5, seed: int = 1) -> dict[str, Any]:
    """Figure 4's comparison: W_2(mu_t, Pi_# mu_0) for several beta and beta = infinity; exit time vs log beta."""
    seeds = seeds or {"fast": 3, "full": 10}[_profile(profile)]
    g = torch.Generator().manual_seed(seed)
    x0 = init.uniform_sphere(seeds, n, 3, generator=g).to(device)
    save = torch.linspace(0, t1, int(round(t1 / 0.25)) + 1)
    ts, xs = simulate_betas(FIG3_B, FIG3_V, betas, x0, t1, dt=dt, save_at=save)
    E = lt.check_assumption_1(FIG3_B, FIG3_V)
    v = E.basis[:, 0].to(x0)
    w2 = torch.stack([_w(xs[:, k], x0, v, 2) for k in range(len(betas))], 1)  # (T, K, S)
    zt = simulate(models.ZeroTemperature(B=FIG3_B, V=FIG3_V), x0, t1, method="euler", dt=dt, save_at=save)
    w2_inf = _w(zt.xs, x0, v, 2)  # (T, S)
    exits = np.array([[_exit_time(ts, w2[:, k, s], level) for s in range(seeds)] for k in range(len(betas))])
    mean_exit = np.nanmean(exits, axis=1)
    fit = fits.line_fit(np.log(np.asarray(betas)), mean_exit)
    return {
        "ts": ts.cpu().numpy(),
        "betas": np.asarray(betas, dtype=float),
        "w2": w2.cpu().numpy(),
        "w2_inf": w2_inf.cpu().numpy(),
        "exit_times": exits,
        "mean_exit": mean_exit,
        "fit": fit,
        "config": {"n": n, "seeds": seeds, "t1": t1, "dt": dt, "level": level, "seed": seed, "method": "euler"},
    }


@plots("low_temperature.beta_comparison")
def plot_beta_comparison(result: dict[str, Any], ax=None):
    """(a) seed-mean W_2(mu_t, Pi_# mu_0) per beta and for beta = inf; (b) exit time against log beta."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    ts = result["ts"]
    for k, b in enumerate(result["betas"]):
        ax[0].semilogy(ts, result["w2"][:, k].mean(-1), label=f"beta = {b:g}")
    ax[0].semilogy(ts, np.maximum(result["w2_inf"].mean(-1), 1e-16), "k--", label="beta = inf")
    ax[0].set(xlabel="t", ylabel=r"$W_2(\mu_t, \Pi_\sharp\mu_0)$", ylim=(1e-6, 3), title="beta_comparison")
    ax[0].legend(fontsize=8)
    lb = np.log(result["betas"])
    ax[1].plot(lb, result["exit_times"], "o", color="C0", alpha=0.4)
    ax[1].plot(lb, result["mean_exit"], "s", color="C1", label="seed mean")
    f = result["fit"]
    ax[1].plot(lb, f["slope"] * lb + f["intercept"], "k-", label=f"slope {f['slope']:.2f}, R2 {f['r2']:.3f}")
    ax[1].set(xlabel=r"$\log\beta$", ylabel="exit time", title="end of the metastable phase")
    ax[1].legend()
    return ax


# ----------------------------------------------------------------------------- the rate in beta


@experiment("low_temperature.rate_in_beta", chapter="low_temperature")
def rate_in_beta(profile: str = "fast", device: str = "cpu", *, betas: Sequence[float] | None = None, n: int | None = None, seeds: int = 1, t: float = 1.0, dt: float = 0.01, exact_w2: bool | None = None, seed: int = 2) -> dict[str, Any]:
    """Theorem 1 / Prop. 6: distance between finite-beta and zero-temperature solutions at time t vs beta."""
    profile = _profile(profile)
    betas = list(betas or {"fast": (3.0, 10.0, 30.0, 100.0), "full": (3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)}[profile])
    n = n or {"fast": 1500, "full": 12000}[profile]
    exact_w2 = (n <= 2000) if exact_w2 is None else exact_w2
    g = torch.Generator().manual_seed(seed)
    x0 = init.fibonacci_sphere(seeds, n, generator=g, device=device)
    _, xs = simulate_betas(FIG3_B, FIG3_V, betas, x0, t, dt=dt)
    zt = simulate(models.ZeroTemperature(B=FIG3_B, V=FIG3_V), x0, t, method="euler", dt=dt)
    xb, xz = xs[-1], zt.final  # (K, S, n, d), (S, n, d)
    coupling = ((xb - xz[None]) ** 2).sum(-1).mean(-1).sqrt().mean(-1).cpu().numpy()  # (K,)
    w2 = np.array([metrics.wasserstein(xb[k], xz).mean().item() for k in range(len(betas))]) if exact_w2 else None
    rate = lt.concentration_rate(torch.tensor(betas, dtype=_F64)).cpu().numpy()
    lb = np.log(np.asarray(betas))
    fit_beta = fits.line_fit(lb, np.log(coupling))
    fit_rate = fits.line_fit(np.log(rate), np.log(coupling))
    return {
        "betas": np.asarray(betas, dtype=float),
        "coupling": coupling,
        "w2": w2,
        "rate": rate,
        "exponent": -fit_beta["slope"],
        "fit_beta": fit_beta,
        "fit_rate": fit_rate,
        "config": {"n": n, "seeds": seeds, "t": t, "dt": dt, "seed": seed, "init": "Fibonacci lattice, random rotation", "method": "euler"},
    }


@plots("low_temperature.rate_in_beta")
def plot_rate_in_beta(result: dict[str, Any], ax=None):
    """log-log: distance to the zero-temperature solution against beta, with the rate sqrt(log(beta+1)/beta)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.6))
    b = result["betas"]
    ax.loglog(b, result["coupling"], "o-", label=r"$(\frac{1}{n}\sum_i|x_i^\beta - x_i^\infty|^2)^{1/2}$")
    if result["w2"] is not None:
        ax.loglog(b, result["w2"], "x", ms=9, label=r"$W_2(\mu^\beta_t, \mu^\infty_t)$")
    scale = result["coupling"][0] / result["rate"][0]
    ax.loglog(b, scale * result["rate"], "k--", label=r"$\propto\sqrt{\log(\beta+1)/\beta}$")
    ax.set(xlabel=r"$\beta$", ylabel="distance at t = %g" % result["config"]["t"], title="rate_in_beta")
    ax.legend(fontsize=8)
    return ax


# ----------------------------------------------------------------------------- Corollary 2


@experiment("low_temperature.zero_temperature_rate", chapter="low_temperature")
def zero_temperature_rate(profile: str = "fast", device: str = "cpu", *, n_large: int | None = None, n_small: int = 200, seeds: int = 3, t1: float = 10.0, dt: float = 0.01, window_mf: tuple[float, float] = (1.0, 3.5), window_late: tuple[float, float] = (6.0, 10.0), ps: Sequence[float] = (0.25, 0.5, 1.0), seed: int = 3) -> dict[str, Any]:
    """Corollary 2: exponential convergence of the zero-temperature flow to Pi_# rho_0, rate vs the gap."""
    n_large = n_large or {"fast": 20000, "full": 400000}[_profile(profile)]
    g = torch.Generator().manual_seed(seed)
    E = lt.check_assumption_1(FIG3_B, FIG3_V)
    save = torch.linspace(0, t1, int(round(t1 / 0.25)) + 1)
    model = models.ZeroTemperature(B=FIG3_B, V=FIG3_V)
    out: dict[str, Any] = {"ts": save.cpu().numpy(), "gap": E.gap, "sigma_max": float(torch.linalg.svdvals(FIG3_B).max())}
    for name, n in (("large", n_large), ("small", n_small)):
        x0 = init.uniform_sphere(seeds, n, 3, generator=g).to(device)
        sol = simulate(model, x0, t1, method="euler", dt=dt, save_at=save)
        # E is one-dimensional and Pi is invariant along the flow (Lemma 9): this IS W_2(mu_t, Pi_# mu_0)
        w = torch.stack([lt.pi_distance(x, x0, E.basis.to(x0)) for x in sol.xs]).cpu()  # (T, S)
        bounds = {p: lt.corollary2_bound(x0, FIG3_B, FIG3_V, p, save) for p in ps}  # (T, S) each
        out[name] = {
            "n": n,
            "w2": w.cpu().numpy(),
            "bound_ratio": {p: float((w / b).max()) for p, b in bounds.items()},
            "pi_drift": float(max((metrics.project_to_subspace(x, E.basis.to(x)) - metrics.project_to_subspace(x0, E.basis.to(x0))).abs().max() for x in sol.xs)),
        }
    ts = save.cpu().numpy()

    def rate(w, window):
        m = (ts >= window[0]) & (ts <= window[1])
        return -fits.line_fit(ts[m], np.log(w.mean(-1)[m]))["slope"]

    out["rate_mean_field"] = rate(out["large"]["w2"], window_mf)
    out["rate_late"] = rate(out["small"]["w2"], window_late)
    # Predictions: the Corollary's exponent p gamma / sigma_max(B) with the largest admissible p
    # (k = dim E = 1: p < 1/2 for a density; p = 1 for finitely many tokens off E-perp).
    out["predicted_mean_field"] = lt.max_admissible_p(E.dim) * E.gap / out["sigma_max"]
    out["predicted_late"] = 1.0 * E.gap / out["sigma_max"]
    out["config"] = {"seeds": seeds, "t1": t1, "dt": dt, "window_mf": window_mf, "window_late": window_late, "seed": seed, "method": "euler"}
    return out


@plots("low_temperature.zero_temperature_rate")
def plot_zero_temperature_rate(result: dict[str, Any], ax=None):
    """W_2(rho_t, Pi_# rho_0) of the zero-temperature flow with the two predicted slopes."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.6))
    ts = result["ts"]
    for name, c in (("large", "C0"), ("small", "C1")):
        w = result[name]["w2"].mean(-1)
        ax.semilogy(ts, w, color=c, label=f"n = {result[name]['n']}")
    w0 = result["large"]["w2"].mean(-1)[0]
    ax.semilogy(ts, w0 * np.exp(-result["predicted_mean_field"] * ts), "k:", label=r"$e^{-\gamma t/2}$")
    ax.semilogy(ts, w0 * np.exp(-result["predicted_late"] * ts), "k--", label=r"$e^{-\gamma t}$")
    ax.set(xlabel="t", ylabel=r"$W_2(\rho_t, \Pi_\sharp\rho_0)$", ylim=(1e-10, 2), title="zero_temperature_rate")
    ax.legend(fontsize=8)
    return ax


# ----------------------------------------------------------------------------- Conjecture 1


@experiment("low_temperature.conjecture1", chapter="low_temperature")
def conjecture1(profile: str = "fast", device: str = "cpu", *, beta: float = 30.0, seeds: int | None = None, n: int = 200, t1: float = 20.0, dt: float = 0.01, seed: int = 4) -> dict[str, Any]:
    """Conjecture 1: one example ending on F (top eigenspace of V), one on F^abs (largest modulus)."""
    seeds = seeds or {"fast": 2, "full": 8}[_profile(profile)]
    g = torch.Generator().manual_seed(seed)
    x0 = init.uniform_sphere(seeds, n, 3, generator=g).to(device)
    save = torch.linspace(0, t1, int(round(t1 / 0.5)) + 1)
    out: dict[str, Any] = {"ts": save.cpu().numpy()}
    for name, B, V in (("F", FIG3_B, FIG3_V), ("Fabs", FABS_B, FABS_V)):
        E = lt.check_assumption_1(B, V)
        F = lt.top_eigenspace(V)
        Fa = lt.top_eigenspace_abs(V)
        _, xs = simulate_betas(B, V, [beta], x0, t1, dt=dt, save_at=save)
        xs = xs[:, 0]
        out[name] = {
            "align_E": _alignment(xs, E.basis.to(xs)).cpu().numpy(),
            "align_F": _alignment(xs, F.basis.to(xs)).cpu().numpy(),
            "align_Fabs": _alignment(xs, Fa.basis.to(xs)).cpu().numpy(),
            # distance of the final law to a law on the target subspace (its own projection onto it)
            "dist_target": {
                "F": metrics.distance_to_subspace(xs[-1], F.basis.to(xs)).pow(2).mean(-1).sqrt().cpu().numpy(),
                "Fabs": metrics.distance_to_subspace(xs[-1], Fa.basis.to(xs)).pow(2).mean(-1).sqrt().cpu().numpy(),
            },
            "eig_V": torch.linalg.eigvalsh(torch.as_tensor(V)).tolist(),
            "eig_M": torch.linalg.eigvalsh(lt.attention_value_matrix(B, V)).tolist(),
        }
    out["config"] = {"beta": beta, "n": n, "seeds": seeds, "t1": t1, "dt": dt, "seed": seed, "method": "euler"}
    return out


@plots("low_temperature.conjecture1")
def plot_conjecture1(result: dict[str, Any], ax=None):
    """Seed-mean alignment with E, F and F^abs over time, one panel per example."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    ts = result["ts"]
    for a, name, title in ((ax[0], "F", "V = diag(-1, 1, -2), B = diag(-1, -1, 1)"), (ax[1], "Fabs", "V = diag(-1, 1, -3), B = diag(-2, -1, -0.1)")):
        r = result[name]
        a.plot(ts, r["align_E"].mean(-1), label="E (top of V B^T)")
        a.plot(ts, r["align_F"].mean(-1), label="F (top of V)")
        a.plot(ts, r["align_Fabs"].mean(-1), "--", label="F^abs (largest |eig| of V)")
        a.set(xlabel="t", ylabel="mean alignment", title=f"conjecture1: {title}")
        a.legend(fontsize=8)
    return ax
