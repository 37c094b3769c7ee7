"""metrics/hull.py: the excess of a coordinate over its initial range (paper A, Lemma B.7 / Cor. B.8)."""
from __future__ import annotations

import torch

from companion import init, models, simulate
from companion.metrics.hull import hull_excess

F64 = torch.float64


def test_hull_excess_by_hand():
    z0 = torch.tensor([[[0.0, 0.0], [1.0, 2.0]]], dtype=F64)  # (trials = 1, n = 2, d = 2): box [0, 1] x [0, 2]
    inside = torch.stack([z0, z0 * 0.5 + 0.25])  # (T = 2, 1, 2, 2): all within the box
    assert hull_excess(inside) == 0.0  # the initial state touches its box
    below = torch.stack([z0, z0 - torch.tensor([0.0, 0.3], dtype=F64)])  # second coordinate 0.3 below its minimum
    assert abs(hull_excess(below) - 0.3) < 1e-15
    # a second trial far away keeps its own box: the first trial's excess is the answer
    two = torch.cat([below, below + 10.0], dim=1)
    assert abs(hull_excess(two) - 0.3) < 1e-15


def test_lemma_b7_holds_for_a_nonnegative_spectrum_only():
    # Lemma B.7 needs eigenvalues >= 0: with V = diag(1, -0.5) the second coordinate's range grows.
    # 1e-9 of the [-5, 5] box allows RK4 round-off.
    Z0 = init.cube(2, 8, 2, 5.0, generator=torch.Generator().manual_seed(6))
    kw = dict(method="rk4", dt=0.1, save_at=torch.arange(0.0, 3.05, 0.1, dtype=F64))
    good = simulate(models.Rescaled(A=torch.eye(2, dtype=F64), V=torch.eye(2, dtype=F64)), Z0, 3.0, **kw).xs
    bad = simulate(models.Rescaled(A=torch.eye(2, dtype=F64), V=torch.diag(torch.tensor([1.0, -0.5], dtype=F64))), Z0, 3.0, **kw).xs
    assert hull_excess(good) <= 1e-9
    assert hull_excess(bad) > 100 * 1e-9
