"""Paper D's mean-field equation on the circle, solved by a mass-conserving finite-volume scheme.

    d_t u + d_theta (u v[u]) = 0,   v[u](theta) = -int e^{beta cos(theta - p)} sin(theta - p) u(p) dp   (USA)

(SA divides v by int e^{beta cos(theta - p)} u(p) dp). ``u`` is a probability density on [0, 2 pi)
held as cell averages on M equal cells [i dx, (i + 1) dx). The velocity at the cell faces is the
exact discrete convolution of the cell masses with the kernel (one FFT per evaluation); the fluxes
are upwind with a minmod-limited linear reconstruction (MUSCL), and time stepping is SSP-RK2
(Heun) with dt = cfl * dx / max |v|. Mass is conserved to rounding (the update is a difference of
face fluxes) and the scheme keeps u >= 0 for cfl <= 1/2.

The official notebook used Lax-Friedrichs with 9999 points and dt = 0.02 dx; this scheme is less
diffusive, so cluster peaks are sharper for the same M.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch

from ._validate import check_beta, check_generator, check_normalization, check_positive
from .init import angle_grid

__all__ = [
    "face_velocity",
    "solve_mean_field",
    "noisy_uniform",
    "quantile_tokens",
    "density_moments",
    "circle_w1",
]


def _check_u(u: Any) -> torch.Tensor:
    if not isinstance(u, torch.Tensor) or not u.is_floating_point():
        raise TypeError(f"u must be a floating torch.Tensor of cell averages (..., M), got {type(u).__name__}")
    if u.ndim < 1 or u.shape[-1] < 8:
        raise ValueError(f"u must have shape (..., M) with M >= 8 cells, got {tuple(u.shape)}")
    if not torch.isfinite(u).all():
        raise ValueError("u has non-finite entries")
    return u


def _kernel_fft(M: int, beta: float, dtype: torch.dtype, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """FFTs of g(p) e^{-beta} and e^{beta (cos p - 1)} sampled at p = (m + 1/2) dx (face minus centre)."""
    p = angle_grid(M, dtype=dtype, device=device)
    e = torch.exp(beta * (torch.cos(p) - 1.0))
    return torch.fft.rfft(e * torch.sin(p)), torch.fft.rfft(e)


def face_velocity(u: torch.Tensor, beta: float, normalization: str = "usa") -> torch.Tensor:
    """Velocity at the right face (i + 1) dx of every cell, from the cell averages ``u``.

    v_i = -dx sum_j g((i - j + 1/2) dx) u_j with g(p) = e^{beta cos p} sin p (USA); SA divides by
    dx sum_j e^{beta cos((i - j + 1/2) dx)} u_j.

    Parameters
    ----------
    u : (..., M) tensor, cell averages of a density (mass sum(u) * 2 pi / M)
    beta : float
    normalization : {"usa", "softmax"}

    Returns
    -------
    (..., M) tensor

    Examples
    --------
    >>> u = torch.full((64,), 1 / (2 * math.pi), dtype=torch.float64)
    >>> face_velocity(u, 3.0).abs().max().item() < 1e-12  # the uniform law is stationary
    True
    """
    u = _check_u(u)
    beta = check_beta(beta)
    normalization = check_normalization(normalization)
    M = u.shape[-1]
    dx = 2 * math.pi / M
    gk, ek = _kernel_fft(M, beta, u.dtype, u.device)
    uk = torch.fft.rfft(u)
    num = torch.fft.irfft(uk * gk, n=M) * dx
    if normalization == "usa":
        if beta > 700:
            raise ValueError(f"beta = {beta:g} too large for the USA field in float64")
        return -math.exp(beta) * num
    return -num / (torch.fft.irfft(uk * ek, n=M) * dx)


def _minmod(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where(a * b > 0, torch.sign(a) * torch.minimum(a.abs(), b.abs()), torch.zeros_like(a))


def _rhs(u: torch.Tensor, v: torch.Tensor, dx: float) -> torch.Tensor:
    up, um = torch.roll(u, -1, -1), torch.roll(u, 1, -1)
    s = _minmod(u - um, up - u)
    left_state = u + 0.5 * s  # value at the right face seen from cell i
    right_state = torch.roll(u - 0.5 * s, -1, -1)  # value at that face seen from cell i + 1
    F = torch.clamp(v, min=0) * left_state + torch.clamp(v, max=0) * right_state
    return -(F - torch.roll(F, 1, -1)) / dx


def solve_mean_field(
    u0: torch.Tensor,
    beta: float,
    t1: float,
    *,
    normalization: str = "usa",
    save_at: Sequence[float] | None = None,
    cfl: float = 0.4,
    dt_max: float,
) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """Integrate the mean-field equation from the cell averages ``u0`` to ``t1``.

    Parameters
    ----------
    u0 : (..., M) tensor, cell averages of a probability density on [0, 2 pi)
    beta : float
    t1 : float, final time > 0
    normalization : {"usa", "softmax"}
    save_at : times in [0, t1] to keep (default [0, t1])
    cfl : float in (0, 0.5]: dt = min(cfl dx / max |v|, dt_max)
    dt_max : float
        Accuracy cap on the step (near the uniform law max |v| is tiny and the CFL step huge), chosen
        by the caller from the dynamics it studies: the metastable experiments take 0.05 / gamma_kmax,
        a twentieth of the fastest linear growth time (:func:`companion.theory.metastable.gamma_k`).

    Returns
    -------
    ts : (T,) float64 tensor; us : (T, ..., M) tensor; stats : dict(steps=, mass_drift=)

    Examples
    --------
    >>> th = angle_grid(128)
    >>> u0 = (1 + 0.1 * torch.cos(2 * th)) / (2 * math.pi)
    >>> ts, us, st = solve_mean_field(u0, 2.0, 0.2, dt_max=0.01)
    >>> st["mass_drift"] < 1e-13, bool(us[-1].max() > u0.max())
    (True, True)
    """
    u = _check_u(u0)
    beta = check_beta(beta)
    normalization = check_normalization(normalization)
    t1 = check_positive(t1, "t1")
    cfl = check_positive(cfl, "cfl")
    if cfl > 0.5:
        raise ValueError(f"cfl must be <= 0.5 for positivity, got {cfl}")
    times = [0.0, t1] if save_at is None else [float(s) for s in save_at]
    if any(s < 0 or s > t1 + 1e-12 for s in times) or any(b < a for a, b in zip(times, times[1:])):
        raise ValueError("save_at must be non-decreasing times in [0, t1]")
    dt_max = check_positive(dt_max, "dt_max")
    M = u.shape[-1]
    dx = 2 * math.pi / M
    mass0 = u.sum(-1) * dx
    t, steps, out = 0.0, 0, []
    for ts in times:
        while ts - t > 1e-14 * max(1.0, ts):
            v = face_velocity(u, beta, normalization)
            vmax = v.abs().max().item()
            h = min(ts - t, dt_max, cfl * dx / vmax if vmax > 0 else dt_max)
            u1 = u + h * _rhs(u, v, dx)
            u = 0.5 * (u + u1 + h * _rhs(u1, face_velocity(u1, beta, normalization), dx))
            t += h
            steps += 1
        out.append(u.clone())
    drift = ((u.sum(-1) * dx - mass0).abs().max()).item()
    return torch.tensor(times, dtype=torch.float64), torch.stack(out), {"steps": steps, "mass_drift": drift}


def noisy_uniform(M: int, noise: float = 0.01, *, generator: torch.Generator, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """u0 = 1/(2 pi) + noise * xi on M cells (xi i.i.d. standard normal, mean removed so the mass is 1).

    Examples
    --------
    >>> u = noisy_uniform(100, generator=torch.Generator().manual_seed(0))
    >>> round((u.sum() * 2 * math.pi / 100).item(), 12)
    1.0
    """
    if int(M) < 8:
        raise ValueError(f"M must be >= 8, got {M}")
    check_positive(noise, "noise", strict=False)
    check_generator(generator, torch.device("cpu"))
    xi = torch.randn(int(M), generator=generator, dtype=dtype)
    u = 1 / (2 * math.pi) + noise * (xi - xi.mean())
    if (u < 0).any():
        raise ValueError("noise too large: u0 has negative cells")
    return u


def quantile_tokens(u: torch.Tensor, n: int) -> torch.Tensor:
    """n angles at the quantiles (j + 1/2)/n of the piecewise-constant density ``u`` (M,), shape (1, n, 1).

    Deterministic, so the empirical measure is within O(1/n) of u in W1 (i.i.d. draws: O(n^{-1/2})).

    Examples
    --------
    >>> th = quantile_tokens(torch.full((8,), 1 / (2 * math.pi), dtype=torch.float64), 4)[0, :, 0]
    >>> np.allclose(th.numpy(), (np.arange(4) + 0.5) * np.pi / 2)
    True
    """
    u = _check_u(u)
    if u.ndim != 1:
        raise ValueError(f"u must be one density (M,), got {tuple(u.shape)}")
    M = u.shape[0]
    dx = 2 * math.pi / M
    cdf = np.concatenate([[0.0], np.cumsum(u.cpu().numpy()) * dx])
    cdf /= cdf[-1]
    faces = np.arange(M + 1) * dx
    q = (np.arange(int(n)) + 0.5) / int(n)
    return torch.as_tensor(np.interp(q, cdf, faces), dtype=u.dtype, device=u.device).reshape(1, -1, 1)


def density_moments(u: torch.Tensor, K: int) -> torch.Tensor:
    """m_k = int u(p) e^{i k p} dp, k = 0..K, for cell averages (..., M) (cell centres as nodes).

    Examples
    --------
    >>> u = torch.full((16,), 1 / (2 * math.pi), dtype=torch.float64)
    >>> [round(abs(v), 12) for v in density_moments(u, 2).tolist()]
    [1.0, 0.0, 0.0]
    """
    u = _check_u(u)
    M = u.shape[-1]
    dx = 2 * math.pi / M
    th = angle_grid(M, dtype=u.dtype, device=u.device)
    k = torch.arange(K + 1, dtype=u.dtype, device=u.device)
    E = torch.exp(1j * k[:, None] * th[None, :])
    return (u.to(E.dtype) @ E.T) * dx


def circle_w1(theta: Any, u: torch.Tensor, samples: int = 16) -> float:
    """W1 on the circle (geodesic cost) between the empirical law of ``theta`` and the density ``u`` (M,).

    W1 = min_c int_0^{2 pi} |F(x) - G(x) - c| dx with F, G the two CDFs from 0; evaluated at
    ``samples`` points per cell.

    Examples
    --------
    >>> u = torch.full((64,), 1 / (2 * math.pi), dtype=torch.float64)
    >>> round(circle_w1(torch.tensor([0.0, math.pi]), u), 3)  # each atom spreads over an arc of length pi: pi/4
    0.785
    """
    u = _check_u(u)
    M = u.shape[-1]
    dx = 2 * math.pi / M
    t = np.sort(np.remainder(np.asarray(torch.as_tensor(theta).detach().cpu(), dtype=np.float64).reshape(-1), 2 * np.pi))
    S = M * int(samples)
    x = angle_grid(S).numpy()
    F = np.searchsorted(t, x, side="right") / t.size
    mass = u.detach().cpu().numpy() * dx
    cdf = np.concatenate([[0.0], np.cumsum(mass)])
    cdf /= cdf[-1]
    G = np.interp(x, np.arange(M + 1) * dx, cdf)
    D = F - G
    return float(np.abs(D - np.median(D)).mean() * 2 * np.pi)
