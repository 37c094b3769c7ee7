"""Initial conditions, each drawn from an explicit :class:`torch.Generator`.

All return ``(trials, n, d)`` tensors in the requested dtype (float64 by default) on the
generator's device type.
"""
from __future__ import annotations

import torch

from ._validate import check_generator, check_positive

__all__ = ["uniform_sphere", "cone", "cube", "ball", "near_point"]


def _sizes(trials: int, n: int, d: int) -> tuple[int, int, int]:
    out = []
    for name, v in (("trials", trials), ("n", n), ("d", d)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
        out.append(int(v))
    return tuple(out)  # type: ignore[return-value]


def _device(device, generator) -> torch.device:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    device = torch.device(device) if device is not None else (generator.device if generator is not None else torch.device("cpu"))
    check_generator(generator, device)
    return device


def uniform_sphere(trials: int, n: int, d: int, *, generator: torch.Generator | None = None, dtype=torch.float64, device=None) -> torch.Tensor:
    """Tokens i.i.d. uniform on the unit sphere S^{d-1} (normalised Gaussians).

    Examples
    --------
    >>> X = uniform_sphere(2, 5, 3, generator=torch.Generator().manual_seed(0))
    >>> X.shape, bool(torch.allclose(X.norm(dim=-1), torch.ones(2, 5, dtype=torch.float64)))
    (torch.Size([2, 5, 3]), True)
    """
    trials, n, d = _sizes(trials, n, d)
    device = _device(device, generator)
    G = torch.randn(trials, n, d, generator=generator, dtype=dtype, device=device)
    return G / G.norm(dim=-1, keepdim=True)


def cone(trials: int, n: int, d: int, delta: float, *, generator: torch.Generator | None = None, axis: torch.Tensor | None = None, dtype=torch.float64, device=None) -> torch.Tensor:
    """Tokens uniform on the spherical cap ``{x : <x, axis> >= delta}`` (rejection sampling).

    ``axis`` defaults to e_1; ``delta`` in [-1, 1).

    Examples
    --------
    >>> X = cone(1, 50, 3, 0.5, generator=torch.Generator().manual_seed(1))
    >>> bool((X[..., 0] >= 0.5).all())
    True
    """
    trials, n, d = _sizes(trials, n, d)
    delta = float(delta)
    if not -1.0 <= delta < 1.0:
        raise ValueError(f"delta must lie in [-1, 1), got {delta}")
    device = _device(device, generator)
    a = torch.zeros(d, dtype=dtype, device=device)
    if axis is None:
        a[0] = 1.0
    else:
        a = torch.as_tensor(axis, dtype=dtype, device=device).reshape(-1)
        if a.numel() != d or a.norm() == 0:
            raise ValueError(f"axis must be a non-zero vector of length d = {d}")
        a = a / a.norm()
    out = torch.empty(trials * n, d, dtype=dtype, device=device)
    filled = 0
    while filled < trials * n:
        G = torch.randn(max(256, 4 * (trials * n - filled)), d, generator=generator, dtype=dtype, device=device)
        G = G / G.norm(dim=-1, keepdim=True)
        # fold the lower half onto the upper one first: halves the rejections for delta >= 0
        G = torch.where((G @ a < 0)[:, None] & (delta >= 0), -G, G)
        ok = G[G @ a >= delta][: trials * n - filled]
        out[filled : filled + len(ok)] = ok
        filled += len(ok)
    return out.reshape(trials, n, d)


def cube(trials: int, n: int, d: int, half_width: float = 5.0, *, generator: torch.Generator | None = None, dtype=torch.float64, device=None) -> torch.Tensor:
    """Tokens uniform in the cube ``[-half_width, half_width]^d`` (paper A, App. E.3.1 uses 5).

    Examples
    --------
    >>> X = cube(1, 100, 2, generator=torch.Generator().manual_seed(0))
    >>> bool((X.abs() <= 5).all())
    True
    """
    trials, n, d = _sizes(trials, n, d)
    half_width = check_positive(half_width, "half_width")
    device = _device(device, generator)
    return (2 * torch.rand(trials, n, d, generator=generator, dtype=dtype, device=device) - 1) * half_width


def ball(trials: int, n: int, d: int, radius: float = 1.0, *, generator: torch.Generator | None = None, dtype=torch.float64, device=None) -> torch.Tensor:
    """Tokens uniform in the ball B(0, radius) of R^d.

    Examples
    --------
    >>> X = ball(1, 100, 3, 2.0, generator=torch.Generator().manual_seed(0))
    >>> bool((X.norm(dim=-1) <= 2).all())
    True
    """
    trials, n, d = _sizes(trials, n, d)
    radius = check_positive(radius, "radius")
    device = _device(device, generator)
    S = uniform_sphere(trials, n, d, generator=generator, dtype=dtype, device=device)
    r = torch.rand(trials, n, 1, generator=generator, dtype=dtype, device=device) ** (1.0 / d)
    return radius * r * S


def near_point(point: torch.Tensor, trials: int, n: int, scale: float, *, generator: torch.Generator | None = None, sphere: bool = True, dtype=torch.float64) -> torch.Tensor:
    """Tokens ``point + delta_i`` with ``delta_i ~ N(0, scale^2 I)``, renormalised if ``sphere``.

    Used for paper A's ``x_i^0 = u_1 + delta_i`` (eq. 18).

    Examples
    --------
    >>> e1 = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    >>> X = near_point(e1, 2, 4, 1e-3, generator=torch.Generator().manual_seed(0))
    >>> bool(((X - e1).norm(dim=-1) < 0.01).all())
    True
    """
    p = torch.as_tensor(point, dtype=dtype).reshape(-1)
    trials, n, d = _sizes(trials, n, p.numel())
    if not torch.isfinite(p).all():
        raise ValueError("point has non-finite entries")
    scale = check_positive(scale, "scale", strict=False)
    device = _device(p.device, generator)
    X = p.to(device) + scale * torch.randn(trials, n, d, generator=generator, dtype=dtype, device=device)
    if sphere:
        X = X / X.norm(dim=-1, keepdim=True)
    return X
