"""Initial conditions and sampling grids, each random draw from an explicit :class:`torch.Generator`.

Token draws return ``(trials, n, d)`` tensors (angles: ``(trials, n, 1)``) in the requested dtype
(float64 by default). Numbers are drawn on the generator's device and the result is then moved to
``device`` (default: the generator's device), so a seed gives one initial state on every device:
a CPU generator with ``device="cuda"`` draws on the CPU and returns CUDA tensors.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from ._validate import check_data_device, check_positive, check_real

__all__ = ["diagonal", 
    "uniform_sphere",
    "cone",
    "cube",
    "ball",
    "near_point",
    "uniform_angles",
    "random_orthogonal",
    "fibonacci_sphere",
    "angle_grid",
]


# Draws come in the dtypes the models integrate in (companion.models.STATE_DTYPES): a float16 draw
# is off the unit sphere by up to 1e-3, ten times the sphere check's tolerance.
_DTYPES = (torch.float32, torch.float64)


def _dtype(dtype) -> torch.dtype:
    if dtype not in _DTYPES:
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype}: the models integrate in those "
                        "(half precision cannot hold unit norms to the sphere check's 1e-4); draw in float32 and "
                        "convert the result if another part of your code needs half precision")
    return dtype


def _sizes(trials: int, n: int, d: int) -> tuple[int, int, int]:
    out = []
    for name, v in (("trials", trials), ("n", n), ("d", d)):
        if isinstance(v, (bool, str, bytes)) or not isinstance(v, (int, float)) and not hasattr(v, "__index__"):
            raise TypeError(f"{name} must be a positive integer, got {type(v).__name__} {v!r}")
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
        out.append(int(v))
    return tuple(out)  # type: ignore[return-value]


def _device(device) -> torch.device:
    """``device`` as a torch.device this build can use (CUDA asked of a CPU-only build refused here,
    naming the argument, not by torch's AssertionError at the first allocation)."""
    from .gpu import resolve_device

    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a str or torch.device, got {type(device).__name__} {device!r}")
    try:
        dev = torch.device(device)
        # CUDA is checked against this build; other devices ("meta" for shapes only) pass as torch knows them
        return torch.device(resolve_device(str(dev))) if dev.type == "cuda" else dev
    except (ValueError, RuntimeError) as e:
        raise ValueError(f"device: {e}") from None


def _devices(device, generator) -> tuple[torch.device, torch.device]:
    """(where to draw, where to return): draws follow the generator, the result goes to ``device``."""
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    target = _device(device) if device is not None else None
    draw = generator.device if generator is not None else (target or torch.device("cpu"))
    return draw, (target or draw)


def _required(generator) -> None:
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")


def uniform_sphere(trials: int, n: int, d: int, *, generator: torch.Generator | None = None, dtype=torch.float64, device=None) -> torch.Tensor:
    """Tokens i.i.d. uniform on the unit sphere S^{d-1} (normalised Gaussians).

    Examples
    --------
    >>> X = uniform_sphere(2, 5, 3, generator=torch.Generator().manual_seed(0))
    >>> X.shape, bool(torch.allclose(X.norm(dim=-1), torch.ones(2, 5, dtype=torch.float64)))
    (torch.Size([2, 5, 3]), True)
    """
    trials, n, d = _sizes(trials, n, d)
    dtype = _dtype(dtype)
    draw, device = _devices(device, generator)
    G = torch.randn(trials, n, d, generator=generator, dtype=dtype, device=draw)
    return (G / G.norm(dim=-1, keepdim=True)).to(device)


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
    dtype = _dtype(dtype)
    delta = check_real(delta, "delta")
    if not -1.0 <= delta < 1.0:
        raise ValueError(f"delta must lie in [-1, 1), got {delta}")
    draw, device = _devices(device, generator)
    a = torch.zeros(d, dtype=dtype, device=draw)
    if axis is None:
        a[0] = 1.0
    else:
        if isinstance(axis, torch.Tensor):
            check_data_device(axis, "axis")
        a = torch.as_tensor(axis, dtype=dtype, device=draw).reshape(-1)
        if a.numel() != d or not torch.isfinite(a).all() or a.norm() == 0:
            raise ValueError(f"axis must be a non-zero vector of length d = {d}")
        a = a / a.norm()
    out = torch.empty(trials * n, d, dtype=dtype, device=draw)
    filled = 0
    while filled < trials * n:
        G = torch.randn(max(256, 4 * (trials * n - filled)), d, generator=generator, dtype=dtype, device=draw)
        G = G / G.norm(dim=-1, keepdim=True)
        # fold the lower half onto the upper one first: halves the rejections for delta >= 0
        G = torch.where((G @ a < 0)[:, None] & (delta >= 0), -G, G)
        ok = G[G @ a >= delta][: trials * n - filled]
        out[filled : filled + len(ok)] = ok
        filled += len(ok)
    return out.reshape(trials, n, d).to(device)


def cube(trials: int, n: int, d: int, half_width: float = 5.0, *, generator: torch.Generator | None = None, dtype=torch.float64, device=None) -> torch.Tensor:
    """Tokens uniform in the cube ``[-half_width, half_width]^d`` (paper A, App. E.3.1 uses 5).

    Examples
    --------
    >>> X = cube(1, 100, 2, generator=torch.Generator().manual_seed(0))
    >>> bool((X.abs() <= 5).all())
    True
    """
    trials, n, d = _sizes(trials, n, d)
    dtype = _dtype(dtype)
    half_width = check_positive(check_real(half_width, "half_width"), "half_width")
    draw, device = _devices(device, generator)
    return ((2 * torch.rand(trials, n, d, generator=generator, dtype=dtype, device=draw) - 1) * half_width).to(device)


def ball(trials: int, n: int, d: int, radius: float = 1.0, *, generator: torch.Generator | None = None, dtype=torch.float64, device=None) -> torch.Tensor:
    """Tokens uniform in the ball B(0, radius) of R^d.

    Examples
    --------
    >>> X = ball(1, 100, 3, 2.0, generator=torch.Generator().manual_seed(0))
    >>> bool((X.norm(dim=-1) <= 2).all())
    True
    """
    trials, n, d = _sizes(trials, n, d)
    dtype = _dtype(dtype)
    radius = check_positive(check_real(radius, "radius"), "radius")
    draw, device = _devices(device, generator)
    S = uniform_sphere(trials, n, d, generator=generator, dtype=dtype, device=draw)
    r = torch.rand(trials, n, 1, generator=generator, dtype=dtype, device=draw) ** (1.0 / d)
    return (radius * r * S).to(device)


def near_point(point: torch.Tensor, trials: int, n: int, scale: float, *, generator: torch.Generator | None = None, sphere: bool = True, dtype=torch.float64) -> torch.Tensor:
    """Tokens ``point + delta_i`` with ``delta_i ~ N(0, scale^2 I)``, renormalised if ``sphere``,
    on ``point``'s device.

    Used for paper A's ``x_i^0 = u_1 + delta_i`` (eq. 18).

    Examples
    --------
    >>> e1 = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    >>> X = near_point(e1, 2, 4, 1e-3, generator=torch.Generator().manual_seed(0))
    >>> bool(((X - e1).norm(dim=-1) < 0.01).all())
    True
    """
    dtype = _dtype(dtype)
    if isinstance(point, torch.Tensor):
        check_data_device(point, "point")
    p = torch.as_tensor(point, dtype=dtype).reshape(-1)
    trials, n, d = _sizes(trials, n, p.numel())
    if not torch.isfinite(p).all():
        raise ValueError("point has non-finite entries")
    scale = check_positive(check_real(scale, "scale"), "scale", strict=False)
    if sphere and scale == 0 and not bool(p.norm() > 0):
        raise ValueError("point must be non-zero when scale = 0 and sphere=True: its tokens are normalised")
    draw, device = _devices(p.device, generator)
    X = p.to(draw) + scale * torch.randn(trials, n, d, generator=generator, dtype=dtype, device=draw)
    if sphere:
        X = X / X.norm(dim=-1, keepdim=True)
    return X.to(device)


def uniform_angles(trials: int, n: int, *, generator: torch.Generator, dtype=torch.float64, device=None) -> torch.Tensor:
    """Angles i.i.d. uniform on [0, 2 pi), the state of :class:`companion.circle.Circle`: (trials, n, 1).

    Examples
    --------
    >>> th = uniform_angles(2, 5, generator=torch.Generator().manual_seed(1))
    >>> th.shape, bool((th >= 0).all() and (th < 2 * math.pi).all())
    (torch.Size([2, 5, 1]), True)
    """
    _required(generator)
    trials, n, _ = _sizes(trials, n, 1)
    dtype = _dtype(dtype)
    draw, device = _devices(device, generator)
    return (2 * math.pi * torch.rand(trials, n, 1, generator=generator, dtype=dtype, device=draw)).to(device)


def random_orthogonal(d: int, *, trials: int | None = None, generator: torch.Generator, dtype=torch.float64, device=None) -> torch.Tensor:
    """Haar-distributed orthogonal matrices: Q of the QR factorisation of a Gaussian matrix, its columns'
    signs fixed so that R has a positive diagonal (without the fix Q is not Haar).

    Parameters
    ----------
    d : size; trials : number of independent matrices (None: one, without a trials axis).

    Returns
    -------
    (d, d), or (trials, d, d) when ``trials`` is given.

    Examples
    --------
    >>> Q = random_orthogonal(3, generator=torch.Generator().manual_seed(0))
    >>> bool(torch.allclose(Q.T @ Q, torch.eye(3, dtype=torch.float64)))
    True
    >>> random_orthogonal(3, trials=4, generator=torch.Generator().manual_seed(0)).shape
    torch.Size([4, 3, 3])
    """
    _required(generator)
    shape = (_sizes(1, 1, d)[2],) * 2 if trials is None else (_sizes(trials, 1, d)[0], int(d), int(d))
    dtype = _dtype(dtype)
    draw, device = _devices(device, generator)
    Q, R = torch.linalg.qr(torch.randn(shape, generator=generator, dtype=dtype, device=draw))
    return (Q * torch.sign(torch.diagonal(R, dim1=-2, dim2=-1))[..., None, :]).to(device)


def fibonacci_sphere(trials: int, n: int, *, generator: torch.Generator, dtype=torch.float64, device=None) -> torch.Tensor:
    """A Fibonacci lattice of n points on S^2, rotated by an independent Haar rotation per trial:
    (trials, n, 3).

    Point i sits at height ``z_i = 1 - (2 i + 1) / n`` and longitude ``(i + 1/2) pi (3 - sqrt 5)``
    (the golden angle), so equal areas hold nearly equal numbers of points: the empirical measure is
    much closer to the uniform law than n i.i.d. draws, and fewer tokens reach the mean-field regime.

    Examples
    --------
    >>> X = fibonacci_sphere(2, 100, generator=torch.Generator().manual_seed(0))
    >>> X.shape, round(X.mean(1).norm(dim=-1).max().item(), 3)  # mean of a uniform law is 0
    (torch.Size([2, 100, 3]), 0.0)
    """
    _required(generator)
    trials, n, _ = _sizes(trials, n, 3)
    dtype = _dtype(dtype)
    draw, device = _devices(device, generator)
    i = torch.arange(n, dtype=dtype, device=draw) + 0.5
    z = 1 - 2 * i / n
    r = torch.sqrt(1 - z * z)
    phi = i * math.pi * (3 - math.sqrt(5))
    P = torch.stack([r * torch.cos(phi), r * torch.sin(phi), z], -1)
    Q = random_orthogonal(3, trials=trials, generator=generator, dtype=dtype)
    return (P[None] @ Q.transpose(-1, -2)).to(device)


def angle_grid(M: int, *, dtype=torch.float64, device=None) -> torch.Tensor:
    """Centres ``(i + 1/2) 2 pi / M`` of M equal cells of [0, 2 pi), i = 0..M-1: (M,).

    Examples
    --------
    >>> angle_grid(4).tolist() == [k * math.pi / 4 for k in (1, 3, 5, 7)]
    True
    """
    if isinstance(M, (bool, str, bytes)) or not isinstance(M, (int, float)) and not hasattr(M, "__index__"):
        raise TypeError(f"M must be a positive integer, got {type(M).__name__} {M!r}")
    if int(M) != M or M < 1:
        raise ValueError(f"M must be a positive integer, got {M!r}")
    M = int(M)
    dtype = _dtype(dtype)
    return (torch.arange(M, dtype=dtype, device=device) + 0.5) * (2 * math.pi / M)


def diagonal(values: Sequence[float], *, dtype: torch.dtype = torch.float64, device: Any = "cpu") -> torch.Tensor:
    """The diagonal matrix of ``values`` (d,) -> (d, d), float64 on ``device`` by default.

    Examples
    --------
    >>> diagonal([1.0, -0.5]).tolist()
    [[1.0, 0.0], [0.0, -0.5]]
    """
    return torch.diag(torch.tensor([float(v) for v in values], dtype=dtype, device=device))
