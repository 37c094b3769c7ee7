"""companion.init: the draws' laws (moments, hand-computed grids) and where numbers are drawn."""
from __future__ import annotations

import math

import pytest
import torch

from companion import init

F64 = torch.float64


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_random_orthogonal_is_orthogonal_and_haar():
    Q = init.random_orthogonal(3, trials=4000, generator=gen(0))
    eye = torch.eye(3, dtype=F64)
    assert (Q.transpose(-1, -2) @ Q - eye).abs().max() < 1e-13
    assert torch.allclose(torch.linalg.det(Q).abs(), torch.ones(4000, dtype=F64))
    # Haar on O(3): every entry has mean 0 and second moment 1/3. Without the sign fix (R's diagonal
    # made positive) LAPACK's Householder QR gives Q[0, 0] <= 0 always: mean -1/2.
    se = math.sqrt(1 / 3 / 4000)
    assert Q.mean(0).abs().max() < 4 * se
    assert ((Q**2).mean(0) - 1 / 3).abs().max() < 0.03
    # a column is uniform on S^2, so a coordinate is uniform on [-1, 1] (Archimedes): E|q_1| = 1/2
    assert abs(Q[:, 0, 0].abs().mean().item() - 0.5) < 4 * math.sqrt(1 / 12 / 4000)


def test_random_orthogonal_shapes_and_dtype():
    assert init.random_orthogonal(4, generator=gen()).shape == (4, 4)
    Q = init.random_orthogonal(2, trials=3, generator=gen(), dtype=torch.float32)
    assert Q.shape == (3, 2, 2) and Q.dtype == torch.float32


def test_uniform_angles_law():
    th = init.uniform_angles(4, 5000, generator=gen(1))
    assert th.shape == (4, 5000, 1) and th.dtype == F64
    assert bool((th >= 0).all() and (th < 2 * math.pi).all())
    # uniform on [0, 2 pi): E cos = E sin = 0, E theta = pi
    assert abs(torch.cos(th).mean().item()) < 0.03 and abs(torch.sin(th).mean().item()) < 0.03
    assert abs(th.mean().item() - math.pi) < 0.03


def test_fibonacci_sphere_is_a_rotated_lattice_and_nearly_uniform():
    n = 2000
    X = init.fibonacci_sphere(3, n, generator=gen(3))
    assert torch.allclose(X.norm(dim=-1), torch.ones(3, n, dtype=F64))
    second = X.transpose(-1, -2) @ X / n  # E[x x^T] = I / 3 for the uniform law
    assert torch.allclose(second, torch.eye(3, dtype=F64).expand(3, 3, 3) / 3, atol=2e-3)
    assert not torch.allclose(X[0], X[1])  # different random rotations
    # a rotation keeps every inner product: the Gram matrix is the unrotated lattice's, built by hand
    i = torch.arange(8, dtype=F64)
    z = 1 - (2 * i + 1) / 8
    phi = (i + 0.5) * math.pi * (3 - math.sqrt(5))
    P = torch.stack([torch.sqrt(1 - z**2) * torch.cos(phi), torch.sqrt(1 - z**2) * torch.sin(phi), z], -1)
    Y = init.fibonacci_sphere(2, 8, generator=gen(4))
    assert torch.allclose(Y @ Y.transpose(-1, -2), (P @ P.T).expand(2, 8, 8), atol=1e-14)


def test_angle_grid_is_the_cell_centres():
    assert torch.allclose(init.angle_grid(4), torch.tensor([1, 3, 5, 7], dtype=F64) * math.pi / 4, rtol=0, atol=1e-15)
    g = init.angle_grid(360)
    assert torch.allclose(torch.diff(g), torch.full((359,), 2 * math.pi / 360, dtype=F64), atol=1e-13)
    assert abs(torch.cos(g).sum().item()) < 1e-12  # a full period of a symmetric grid


DRAWS = [
    ("uniform_sphere", lambda g, dev: init.uniform_sphere(2, 5, 3, generator=g, device=dev), (2, 5, 3)),
    ("cone", lambda g, dev: init.cone(2, 5, 3, 0.2, generator=g, device=dev), (2, 5, 3)),
    ("cube", lambda g, dev: init.cube(2, 5, 3, generator=g, device=dev), (2, 5, 3)),
    ("ball", lambda g, dev: init.ball(2, 5, 3, generator=g, device=dev), (2, 5, 3)),
    ("uniform_angles", lambda g, dev: init.uniform_angles(2, 5, generator=g, device=dev), (2, 5, 1)),
    ("random_orthogonal", lambda g, dev: init.random_orthogonal(3, trials=2, generator=g, device=dev), (2, 3, 3)),
    ("fibonacci_sphere", lambda g, dev: init.fibonacci_sphere(2, 5, generator=g, device=dev), (2, 5, 3)),
]


@pytest.mark.parametrize("name,draw,shape", DRAWS, ids=[d[0] for d in DRAWS])
def test_a_cpu_generator_draws_on_the_cpu_for_any_device(name, draw, shape):
    """A seed means one draw on every device: with device="meta" (no data, any machine) the numbers
    come from the CPU generator, whose stream then continues exactly as after a CPU draw."""
    g_cpu, g_meta = gen(7), gen(7)
    X = draw(g_cpu, None)
    M = draw(g_meta, "meta")
    assert X.device.type == "cpu" and M.device.type == "meta"
    assert tuple(M.shape) == shape == tuple(X.shape) and M.dtype == X.dtype
    assert torch.equal(torch.rand(4, generator=g_cpu), torch.rand(4, generator=g_meta))


def test_near_point_is_the_point_plus_scaled_noise():
    e1 = torch.tensor([1.0, 0.0, 0.0], dtype=F64)
    X = init.near_point(e1, 2, 4, 1e-3, generator=gen(0), sphere=False)
    noise = torch.randn(2, 4, 3, generator=gen(0), dtype=F64)  # the same stream, drawn by hand
    assert torch.allclose(X, e1 + 1e-3 * noise, rtol=0, atol=1e-15)
