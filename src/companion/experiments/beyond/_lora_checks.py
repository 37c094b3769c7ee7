"""The deterministic linear checks of ``beyond-lora-metastable`` (lattices, no noise): on the circle
(:func:`lora_circle_check`) and on S^2 (zonal pushes about the icosahedral axes), with the helpers the
experiment's other parts share."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ... import fits, init, models
from ...circle import circle_moments, to_angles, to_points
from ...integrate import simulate
from ...theory import metastable as th_meta
from ...theory.questions import lora_direction, traceless_part
from ._shared import F64

if TYPE_CHECKING:
    from .lora_metastable import LoraMetastableConfig

__all__ = ["lora_circle_check"]

_PHI = (1 + math.sqrt(5)) / 2  # the golden ratio: the icosahedron's vertices are (0, +-1, +-phi) and cyclic
# The 6 axes through the icosahedron's vertices, a spherical 5-design: averaging P_l(<x, e>) P_l(<y, e>) over
# them gives P_l(<x, y>) / (2l + 1) for l <= 2, an isotropic average over the degree.
_ICOSA = np.array([[0, 1, _PHI], [0, 1, -_PHI], [1, _PHI, 0], [1, -_PHI, 0], [_PHI, 0, 1], [-_PHI, 0, 1]]) / math.sqrt(1 + _PHI**2)


def _identity_plus(Es: list[np.ndarray], epss: list[float]) -> torch.Tensor:
    """V = I + eps E per trial: (trials, d, d) float64."""
    return torch.stack([torch.eye(E.shape[0], dtype=F64) + e * torch.tensor(E, dtype=F64) for E, e in zip(Es, epss)])


def _slope(ts: np.ndarray, y: np.ndarray) -> float:
    return float(fits.line_fit(ts, y)["slope"])


def lora_circle_check(cfg: LoraMetastableConfig, device: str = "cpu") -> dict[str, Any]:
    """The deterministic linear check on the circle: per angle of ``cfg.angles``, the measured rate
    and frequency of each mode k of ``cfg.ks`` at eps = +-eps_check (antithetic +-amp perturbations
    of the quantile lattice), and the forced ``<x^T S_0 x>`` (the part odd in eps of the lattice's
    own drift).

    Parameters
    ----------
    cfg : the experiment's config (``angles``, ``ks``, ``m_circle``, ``amp``, ``eps_check``,
        ``beta_lin``, ``t_lin``, ``dt_lin``, ``samples`` are used); device : where to simulate.

    Returns
    -------
    dict with ``rate`` and ``freq`` (angles, 2, K) (the second axis: eps = +eps_check, -eps_check),
    ``forcing`` (angles, samples) and the saved times ``ts`` (samples,).

    Examples
    --------
    >>> from companion.experiments.beyond.lora_metastable import LoraMetastableConfig
    >>> g = lora_circle_check(LoraMetastableConfig(m_circle=32, ks=(2,), t_lin=0.4, samples=3))
    >>> g["rate"].shape, g["freq"].shape, g["forcing"].shape
    ((3, 2, 1), (3, 2, 1), (3, 3))
    """
    M, ks, amp = cfg.m_circle, list(cfg.ks), cfg.amp
    base = init.angle_grid(M)[:, None]
    perturbed = {(k, s): th_meta.dominant_mode_quantiles(np.array([s * amp + 0j]), k, M)[0] for k in ks for s in (1, -1)}
    X, Es, epss = [], [], []
    for ang in cfg.angles:
        E = lora_direction(ang, 2)
        for se in (1, -1):
            X += [base] + [perturbed[(k, s)] for k in ks for s in (1, -1)]
            Es += [E] * (1 + 2 * len(ks))
            epss += [se * cfg.eps_check] * (1 + 2 * len(ks))
    X = to_points(torch.stack(X))
    ts = torch.linspace(0.0, cfg.t_lin, cfg.samples, dtype=F64)
    sol = simulate(models.Sphere(V=_identity_plus(Es, epss).to(device), beta=cfg.beta_lin), X.to(device), cfg.t_lin,
                   method="rk4", dt=cfg.dt_lin, save_at=ts)
    xs = sol.xs.cpu()  # (S, trials, M, 2)
    m = torch.stack([circle_moments(to_angles(x), max(ks)) for x in xs]).numpy()  # (S, trials, K + 1)
    t = ts.numpy()
    per = 1 + 2 * len(ks)
    rate, freq, q = [], [], []
    for i, ang in enumerate(cfg.angles):
        S0 = torch.tensor(traceless_part(lora_direction(ang, 2)), dtype=F64)
        r_s, f_s, q_s = [], [], []
        for j in range(2):
            b = (2 * i + j) * per
            q_s.append(torch.einsum("snd,de,sne->s", xs[:, b], S0, xs[:, b]).numpy() / M)
            dm = [(m[:, b + 1 + 2 * a, k] - m[:, b + 2 + 2 * a, k]) / 2 for a, k in enumerate(ks)]
            r_s.append([_slope(t, np.log(np.abs(z))) for z in dm])
            f_s.append([_slope(t, np.unwrap(np.angle(z))) for z in dm])
        rate.append(r_s)
        freq.append(f_s)
        q.append((q_s[0] - q_s[1]) / 2)  # the part odd in eps: the forced response, the lattice's own drift cancelled
    return {"rate": np.array(rate), "freq": np.array(freq), "forcing": np.array(q), "ts": t}  # (A, 2, K), (A, S)


def _zonal_push(X: torch.Tensor, axis: np.ndarray, l: int, s: float) -> torch.Tensor:
    """Tokens moved along the gradient of P_l(<x, axis>), so that the density gains s P_l(<x, axis>)
    to first order (div grad P_l = -l(l+1) P_l on S^2). X: (n, 3)."""
    e = torch.tensor(axis, dtype=X.dtype)
    z = X @ e
    dP = torch.tensor(np.polynomial.legendre.legval(z.numpy(), np.polynomial.legendre.legder([0] * l + [1])), dtype=X.dtype)
    Y = X + (s / (l * (l + 1))) * dP[:, None] * (e - z[:, None] * X)
    return Y / Y.norm(dim=-1, keepdim=True)


def _pair_energy(Xp: torch.Tensor, Xm: torch.Tensor, l: int) -> torch.Tensor:
    """Degree-l energy of the signed measure (mu_p - mu_m)/2 on S^2, ``(1/n^2) sum P_l(<x, y>)`` over its
    pairs with signs. Xp, Xm: (..., n, 3) -> (...)."""
    c = [0] * l + [1]
    def B(X, Y):  # noqa: E306
        G = (X @ Y.transpose(-1, -2)).clamp(-1, 1)
        return torch.as_tensor(np.polynomial.legendre.legval(G.numpy(), c)).mean((-1, -2))
    return (B(Xp, Xp) - 2 * B(Xp, Xm) + B(Xm, Xm)) / 4


def _lora_sphere_check(cfg: LoraMetastableConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Per angle: the measured rate of the degree-l energy summed over the icosahedral axes (the
    multiplet mean) at eps = +-eps_check, and the forced <q> of the Fibonacci lattice itself."""
    ls, n = list(cfg.ls), cfg.n_sphere
    if max(ls) > 2:
        raise ValueError(f"ls: the 6 icosahedral axes average a degree isotropically only up to l = 2, got {ls}")
    base = init.fibonacci_sphere(1, n, generator=generator)[0]
    pushed = [_zonal_push(base, ax, l, s * cfg.amp) for l in ls for ax in _ICOSA for s in (1, -1)]
    per = 1 + len(pushed)
    X, Es, epss = [], [], []
    for ang in cfg.angles:
        E = lora_direction(ang, 3)
        for se in (1, -1):
            X += [base] + pushed
            Es += [E] * per
            epss += [se * cfg.eps_check] * per
    ts = torch.linspace(0.0, cfg.t_lin, cfg.samples, dtype=F64)
    sol = simulate(models.Sphere(V=_identity_plus(Es, epss).to(device), beta=cfg.beta_sphere), torch.stack(X).to(device),
                   cfg.t_lin, method="rk4", dt=cfg.dt_lin, save_at=ts)
    xs = sol.xs.cpu()  # (S, trials, n, 3)
    t = ts.numpy()
    na = len(_ICOSA)
    rate, q = [], []
    for i, ang in enumerate(cfg.angles):
        S0 = torch.tensor(traceless_part(lora_direction(ang, 3)), dtype=F64)
        r_s, q_s = [], []
        for j in range(2):
            b = (2 * i + j) * per
            q_s.append(torch.einsum("snd,de,sne->s", xs[:, b], S0, xs[:, b]).numpy() / n)
            r_l = []
            for a, l in enumerate(ls):
                idx = b + 1 + 2 * na * a + 2 * np.arange(na)
                energy = _pair_energy(xs[:, idx], xs[:, idx + 1], l).sum(-1).numpy()  # (S,)
                r_l.append(_slope(t, 0.5 * np.log(energy)))
            r_s.append(r_l)
        rate.append(r_s)
        q.append((q_s[0] - q_s[1]) / 2)
    return {"rate": np.array(rate), "forcing": np.array(q), "ts": t}


def lora_synthetic_result(wrong: bool = False) -> dict[str, Any]:
    """A synthetic result of ``beyond-lora-metastable`` for the claims' examples and tests: the
    measurements agree with the derived laws, or (``wrong``) come from a wrong model (rates
    unchanged, no forcing, clusters merging as without adapter, no switch). Only the keys
    :func:`lora_metastable_claims` reads, with 2 angles, 2 degrees and 20 trials.

    Examples
    --------
    >>> r = lora_synthetic_result()
    >>> r["circle"]["d_rate"].shape, r["plateau"]["censored"].shape
    ((2, 2), (1, 2, 20))
    """
    g = np.array([0.6, 0.42])
    dp = np.array([[0.3, 0.21], [0.0, 0.0]])
    fp = np.array([[0.0, 0.0], [-0.9, -1.2]])
    circle = {"gamma": g, "d_rate": np.zeros_like(dp) if wrong else dp, "d_rate_pred": dp, "d_freq": np.zeros_like(fp) if wrong else fp,
              "d_freq_pred": fp, "rate": np.array([[[0.6, 0.42]] * 2] * 2), "forcing": np.array([[0.0, 0.0 if wrong else 0.1]] * 2),
              "forcing_pred": np.array([[0.0, 0.1]] * 2), "freq": np.zeros((2, 2, 2))}
    sphere = {"gamma": g, "d_rate": np.zeros_like(dp) if wrong else dp, "d_rate_pred": dp, "rate": np.array([[[0.42, 0.6]] * 2] * 2),
              "forcing": np.array([[0.0, 0.0 if wrong else 0.05]] * 2), "forcing_pred": np.array([[0.0, 0.05]] * 2)}
    T = 20
    cens = np.zeros((1, 2, T), bool)
    cens[0, 1] = not wrong
    return {"angles": [0.0, 90.0], "ks": [2, 3], "ls": [2, 1], "beta_switch": 5.0, "n_switch": 400, "circle": circle, "sphere": sphere,
            "two_token": {"rate": np.array([0.01, -0.03 if not wrong else 0.036]), "rate_pred": np.array([0.01, -0.03]),
                          "axis_drift": np.zeros(2)},
            "switch": {"k_max": 3, "share_2": np.array([0.2, 0.2 if wrong else 1.0]), "predicted_share": np.array([0.0, 0.99]),
                       "selected": np.array([[2] * 4 + [3] * 16, [2] * 4 + [3] * 16 if wrong else [2] * 20])},
            "switch_factors": [0.0, 3.0], "plateau_factors": [0.0, 4.0],
            "plateau": {"t_form": np.ones((1, 2, T)), "censored": cens, "aligned": np.ones((1, 2, T), bool)}}
