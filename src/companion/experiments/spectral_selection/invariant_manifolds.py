"""Section 4: the consensus and balanced bipolar manifolds (Lemma 4.4, Proposition 4.5) and the energy (Sec. 2.2)."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from ... import init, ledger, metrics, models
from ...integrate import simulate
from ...registry import PaperScale, claims_for, experiment, summary_for
from ...report import below
from ...theory import consensus as th_consensus
from ...theory import spectral as th
from ._shared import TOL_BOUND, TOL_MONOTONE, TOL_ROUNDING, energy_claim

__all__ = ["InvariantManifoldsConfig", "invariant_manifolds", "plot_invariant_manifolds", "invariant_manifolds_summary",
           "invariant_manifolds_claims", "TOL_STATIONARY"]

# M(0) = 0 is an unstable equilibrium: rounding there grows by about e^{2 beta var_p(lambda) t} (~1e5 at
# beta = 1.5, t = 6), so 1e-9 covers it, while off balance (n_+ != n_-) the state moves by O(1).
TOL_STATIONARY = 1e-9


@dataclasses.dataclass(frozen=True)
class InvariantManifoldsConfig:
    """The consensus and balanced bipolar manifolds, and the energy.

    V = diag(``lambdas``), inverse temperature ``beta``; RK4 with step ``dt`` up to ``t1`` (61 saved
    times) for six consensus points (5 tokens each) and six bipolar points (``split`` = (n_+, n_-)
    tokens at +u and -u; balanced when equal), plus one bipolar point with M(0) = 0 (deterministic);
    the energy along ``energy_trials`` random 20-token trajectories at each of ``energy_betas``,
    step ``energy_dt``. ``seed`` draws the consensus points, the bipolar points, then the energy data.

    Examples
    --------
    >>> InvariantManifoldsConfig().lambdas, InvariantManifoldsConfig().energy_betas
    ((1.0, 0.3, -0.4, -1.2), (0.5, 2.0))
    """

    t1: float = 6.0
    dt: float = 0.01
    energy_trials: int = 20
    energy_dt: float = 0.02
    lambdas: tuple[float, ...] = (1.0, 0.3, -0.4, -1.2)
    beta: float = 1.5
    energy_betas: tuple[float, ...] = (0.5, 2.0)
    split: tuple[int, int] = (3, 3)
    seed: int = 0


def _zero_M_point(lambdas: torch.Tensor) -> torch.Tensor | None:
    """A unit u with M = <u, diag(lambdas) u> = 0: equal masses 1/d, then mass moved from the
    smallest to the largest eigenvalue's mode (or back) until M = 0; None if V is definite.

    Examples
    --------
    >>> u = _zero_M_point(torch.tensor([1.0, 0.3, -0.4, -1.2], dtype=torch.float64))
    >>> abs(float((u ** 2 * torch.tensor([1.0, 0.3, -0.4, -1.2], dtype=torch.float64)).sum())) < 1e-15
    True
    >>> _zero_M_point(torch.tensor([-0.5, -1.0], dtype=torch.float64)) is None
    True
    """
    lam = lambdas.double()
    if not (lam.max() > 0 > lam.min()):
        return None
    d = len(lam)
    top, bottom = int(torch.argmax(lam)), int(torch.argmin(lam))
    shift = -float(lam.mean()) / float(lam[top] - lam[bottom])  # mass moved from bottom to top (1/d each at start)
    p = torch.full((d,), 1.0 / d, dtype=lam.dtype)
    p[top] += shift
    p[bottom] -= shift
    if p.min() < 0:
        return None
    return p.sqrt()


def plot_invariant_manifolds(result: dict[str, Any], ax=None):
    """M(t) on the balanced bipolar manifold for six initial points; the eigenvalues dotted.

    Parameters
    ----------
    result : dict
        What :func:`invariant_manifolds` returns.
    ax : matplotlib.axes.Axes, optional
        Where to draw; None opens a new figure of the book's width.

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> plot_invariant_manifolds(invariant_manifolds(t1=1.0, dt=0.05, energy_trials=2, energy_dt=0.05), ax=plt.figure().gca()).get_xlabel()
    '$t$'
    """
    import matplotlib.pyplot as plt

    from ...style import COLORS, FULL_WIDTH, MIN_FONT

    if ax is None:
        _, ax = plt.subplots(figsize=(FULL_WIDTH * 0.75, 3.4), layout="constrained")
    ax.plot(result["ts"], result["M"], color=COLORS["measured"], lw=1.2)
    for lk in result["lambdas"]:
        ax.axhline(lk, color=COLORS["reference"], lw=0.8, ls=":")
    ax.set_xlabel("$t$", fontsize=MIN_FONT + 1)
    ax.set_ylabel("$M(t) = \\langle u, V u\\rangle$", fontsize=MIN_FONT + 1)
    ax.tick_params(labelsize=MIN_FONT)
    ax.set_title("Balanced bipolar manifold: $|M(t)|$ grows towards an eigenvalue", fontsize=MIN_FONT + 1)
    return ax


@experiment("spectral-invariant-manifolds", chapter="spectral_selection", plot=plot_invariant_manifolds,
            profiles={"fast": InvariantManifoldsConfig(), "full": InvariantManifoldsConfig(dt=0.005, energy_trials=200, energy_dt=0.01)},
            paper=PaperScale(note="Sec. 4's closed forms come with no numerical setting: V = diag(1, 0.3, -0.4, -1.2), "
                                  "beta = 1.5, RK4 at 0.005 to T = 6; the energy along 200 random 20-token runs at "
                                  "beta = 0.5 and 2."))
def invariant_manifolds(cfg: InvariantManifoldsConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Consensus p_k(t) vs closed form; bipolar M(t) monotone, alpha = tanh(beta M), the selected
    mode (Prop. 4.5), the M(0) = 0 state; energy.

    Returns
    -------
    dict with ``ts`` (61,), ``M`` (61, 6) on the bipolar manifold, ``consensus_error``,
    ``consensus_spread``, ``bipolar_offset`` (largest distance of x_i from s_i u), ``min_signed_dM``
    (smallest sign(M(0)) increment of M), ``alpha_error`` (alpha measured from the field against
    tanh(beta M)), ``dM_error`` (M' from the field against Lemma 4.4), ``selection_ratio`` (largest
    ratio, over t > 0, points and modes, of p_k / p_k* to Prop. 4.5's bound, k* the largest
    eigenvalue if M(0) > 0, the smallest if M(0) < 0), ``selected_mass`` (smallest p_k*(t1)),
    ``M0_signs`` (6,), ``stationary_drift`` and ``stationary_M`` (largest |p(t) - p(0)| and |M(t)|
    from the M(0) = 0 point; nan if V is definite), ``min_dlogE`` (smallest increment of log E_beta
    on the energy trajectories), ``lambdas``, ``beta``.

    Examples
    --------
    >>> r = invariant_manifolds(t1=1.0, dt=0.05, energy_trials=2, energy_dt=0.05)
    >>> r["bipolar_offset"] < 1e-12, r["min_signed_dM"] >= 0, r["alpha_error"] < 1e-12
    (True, True, True)
    """
    g = generator
    lam = torch.tensor(cfg.lambdas, dtype=torch.float64)
    V = torch.diag(lam).to(device)
    d, beta, t1, dt = len(cfg.lambdas), cfg.beta, cfg.t1, cfg.dt
    ts = torch.linspace(0, t1, 61)
    # consensus: all n tokens at one random point u, six independent points
    u = init.uniform_sphere(6, 1, d, generator=g).to(device)
    sol = simulate(models.spectral(V, beta), u.expand(6, 5, d).contiguous(), t1, dt=dt, save_at=ts).xs
    p_sim = sol[:, :, 0, :] ** 2  # (T, 6, d)
    p_th = torch.stack([th_consensus.consensus_modal_masses(u[j, 0].cpu() ** 2, lam, ts) for j in range(6)], 1)
    consensus_err = (p_sim.cpu() - p_th).abs().amax().item()
    spread = (sol - sol[:, :, :1]).norm(dim=-1).amax().item()
    # bipolar: x_i = s_i u, n_+ = n_- = 3 by default; six random points u
    u = init.uniform_sphere(6, 1, d, generator=g).to(device)
    s = torch.tensor([1.0] * cfg.split[0] + [-1.0] * cfg.split[1], dtype=torch.float64, device=device)
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
    # energy along generic trajectories, several temperatures
    x0 = init.uniform_sphere(cfg.energy_trials, 20, d, generator=g).to(device)
    min_dlogE = math.inf
    for b in cfg.energy_betas:
        xs = simulate(models.spectral(V, b), x0, t1, dt=cfg.energy_dt, save_at=ts).xs
        logE = metrics.interaction_energy(xs.flatten(0, 1), V, b, log=True).reshape(len(ts), -1)
        min_dlogE = min(min_dlogE, torch.diff(logE, dim=0).amin().item())
    # Prop. 4.5: with k* the largest eigenvalue if M(0) > 0, the smallest if M(0) < 0, alpha keeps the
    # sign of M(0) and |alpha| >= |tanh(beta M(0))|, so p_k / p_k* <= (its t = 0 value) e^{-2 |tanh(beta M(0))| |lambda_k - lambda_k*| t}
    lam_d, ts_d = lam.to(U), ts.to(U)
    P = U ** 2  # (T, 6, d)
    kstar = torch.where(M[0] > 0, torch.argmax(lam_d), torch.argmin(lam_d))  # (6,)
    Pstar = P.gather(-1, kstar[None, :, None].expand(len(ts), -1, 1))  # (T, 6, 1)
    rate = 2 * torch.tanh(beta * M[0]).abs()[:, None] * (lam_d[None, :] - lam_d[kstar][:, None]).abs()  # (6, d)
    log_q = torch.log(P / Pstar) - torch.log(P[:1] / Pstar[:1]) + rate[None] * ts_d[:, None, None]
    others = torch.arange(d, device=U.device)[None, :] != kstar[:, None]  # (6, d)
    selection_ratio = log_q[1:][:, others].exp().amax().item()
    # the M(0) = 0 point: p stationary (an unstable equilibrium: only rounding moves it)
    u0 = _zero_M_point(lam)
    if u0 is None:
        drift = zero_M = math.nan
    else:
        sol0 = simulate(models.spectral(V, beta), s[None, :, None] * u0.to(U)[None, None, :], t1, dt=dt, save_at=ts).xs[:, 0]
        P0 = sol0[:, 0, :] ** 2
        drift = (P0 - P0[:1]).abs().amax().item()
        zero_M = (P0 @ lam_d).abs().amax().item()
    return dict(
        ts=ts,
        consensus_error=consensus_err,
        consensus_spread=spread,
        bipolar_offset=off,
        M=M,
        min_signed_dM=dM.amin().item(),
        alpha_error=alpha_err,
        dM_error=dM_err,
        selection_ratio=selection_ratio,
        selected_mass=Pstar[-1].amin().item(),
        M0_signs=torch.sign(M[0]),
        stationary_drift=drift,
        stationary_M=zero_M,
        min_dlogE=min_dlogE,
        lambdas=lam,
        beta=beta,
    )


@summary_for("spectral-invariant-manifolds")
def invariant_manifolds_summary(result: dict[str, Any]) -> dict[str, Any]:
    """What the chapter and the claims read: the bipolar offset, the errors of alpha = tanh(beta M)
    and of M' against Lemma 4.4, the smallest sign(M(0)) dM, ``selection_excess`` (the largest
    ratio of p_k/p_k* to its Prop. 4.5 bound, minus 1: <= 0 where the bound holds), the smallest
    selected mass at t1, the stationary drift, the smallest energy increment, and the number of
    energy trajectories.

    Examples
    --------
    >>> r = dict(min_dlogE=1e-5, bipolar_offset=0.0, min_signed_dM=0.0, alpha_error=1e-14, dM_error=1e-14,
    ...          selection_ratio=0.9, selected_mass=0.999, stationary_drift=1e-13, stationary_M=1e-14)
    >>> s = invariant_manifolds_summary(r)
    >>> round(s["selection_excess"], 6), s["energy_trials"]
    (-0.1, None)
    """
    keys = ("bipolar_offset", "alpha_error", "dM_error", "min_signed_dM", "selection_ratio", "selected_mass",
            "stationary_drift", "stationary_M", "min_dlogE")
    out = {k: float(result[k]) for k in keys}
    out["selection_excess"] = out["selection_ratio"] - 1.0
    cfg = result.get("config") or {}
    out["energy_trials"] = int(cfg["energy_trials"]) if "energy_trials" in cfg else None
    return out


@claims_for("spectral-invariant-manifolds")
def invariant_manifolds_claims(result: dict[str, Any], cfg: InvariantManifoldsConfig) -> list[ledger.Claim]:
    """The energy is monotone on random data (Sec. 2.2); Lemma 4.4 on the balanced bipolar manifold
    (invariant, alpha = tanh(beta M) and M' from the field within :data:`TOL_ROUNDING`, |M| never
    decreasing); Proposition 4.5 (p_k / p_k* below its bound: the excess over 1 at most
    :data:`TOL_BOUND`, rounding; the M(0) = 0 point stationary within :data:`TOL_STATIONARY`). Every
    tolerance is the rounding of the integration: the paper's statements are exact. The consensus
    closed form is the introduction's row ``C-4.1-consensus-closed-form``, not counted again here.

    Examples
    --------
    >>> r = dict(min_dlogE=1e-5, bipolar_offset=0.0, min_signed_dM=0.0, alpha_error=1e-14, dM_error=1e-14,
    ...          selection_ratio=0.9, selected_mass=0.999, stationary_drift=1e-13, stationary_M=1e-14)
    >>> [c.status for c in invariant_manifolds_claims(r, InvariantManifoldsConfig())]
    ['reproduced', 'reproduced', 'reproduced', 'reproduced']
    >>> [c.status for c in invariant_manifolds_claims(dict(r, min_signed_dM=-1e-3, selection_ratio=2.0), InvariantManifoldsConfig())]
    ['reproduced', 'not-reproduced', 'not-reproduced', 'reproduced']
    """
    s = invariant_manifolds_summary(result)
    off, ae, de = s["bipolar_offset"], s["alpha_error"], s["dM_error"]
    bipolar = ledger.worst(ledger.verdict(off, TOL_ROUNDING), ledger.verdict(s["min_signed_dM"], -TOL_MONOTONE, better="higher"),
                           ledger.verdict(ae, TOL_ROUNDING), ledger.verdict(de, TOL_ROUNDING))
    excess, drift = s["selection_excess"], s["stationary_drift"]
    balanced = cfg.split[0] == cfg.split[1]
    return [
        energy_claim(s["min_dlogE"], "C-sec2.2-energy-monotone",
                     f"{cfg.energy_trials} random 20-token trajectories, beta = {', '.join(f'{b:g}' for b in cfg.energy_betas)}"),
        ledger.Claim(
            id="C-lem4.4-bipolar", paper="C", where="Sec. 4.2, Lemma 4.4",
            statement="The balanced bipolar manifold $x_i = s_i u$ is invariant, with "
                      "$\\dot M = 2\\alpha(M)\\sum_k p_k(\\lambda_k - M)^2$, so $|M|$ never decreases"
                      + ("" if balanced else f" (run with n_+, n_- = {cfg.split}: not balanced)"),
            quote="\\dot{M}=2\\alpha(M)\\sum_{k=1}^{d}p_{k}(\\lambda_{k}-M)^{2}.", basis="paper",
            test=f"distance from the manifold, |alpha - tanh(beta M)| and |M' - Lemma 4.4| <= {TOL_ROUNDING:g}, and "
                 f"sign(M(0)) dM >= -{TOL_MONOTONE:g} between saved times (rounding; the lemma is exact)",
            verdict=bipolar, measured=[below(off, 1e-12), below(ae, 1e-12), below(de, 1e-12)],
            expected="offset, |alpha - tanh(beta M)|, |M' - Lemma 4.4| <= 1e-10; sign(M0) dM >= 0", tolerance=TOL_ROUNDING),
        ledger.Claim(
            id="C-prop4.5-bipolar-selection", paper="C", where="Sec. 4.2, Prop. 4.5",
            statement="On the balanced bipolar manifold the sign of $M(0)$ selects the largest ($M(0) > 0$) or smallest "
                      "($M(0) < 0$) eigenvalue",
            quote="On the balanced bipolar manifold, the sign of the weighted average $M$ determines whether the dynamics "
                  "is driven toward the largest or smallest eigenvalue on the initial support.",
            basis="paper",
            test="(p_k/p_k*)(t) / (p_k/p_k*)(0) against the bound exp(-2 |tanh(beta M(0))| |lambda_k - lambda_k*| t) that "
                 "the proof's (d/dt) log(p_k/p_l) = 2 alpha(M)(lambda_k - lambda_l) and |alpha(M(t))| >= |tanh(beta M(0))| "
                 f"give: largest ratio minus 1 <= {TOL_BOUND:g} (rounding)",
            verdict=ledger.verdict(excess, TOL_BOUND), measured=s["selection_ratio"],
            expected="(p_k/p_k*)(t) over (p_k/p_k*)(0) exp(-2 |tanh(beta M(0))| |lambda_k - lambda_k*| t): <= 1 (t > 0)",
            tolerance=TOL_BOUND),
        ledger.Claim(
            id="C-prop4.5-M0-stationary", paper="C", where="Sec. 4.2, Prop. 4.5",
            statement="On the balanced bipolar manifold $M(0) = 0$ gives $M(t) = 0$ and $p(t) = p(0)$ (stationary)",
            quote="Hence $p(t)$ is stationary.", basis="paper",
            test=f"largest |p(t) - p(0)| from M(0) = 0 <= {TOL_STATIONARY:g} (rounding grown along an unstable equilibrium)",
            verdict=ledger.verdict(drift, TOL_STATIONARY), measured=below(drift, 1e-12), expected="max |p(t) - p(0)| = 0 (rounding)",
            tolerance=TOL_STATIONARY),
    ]
