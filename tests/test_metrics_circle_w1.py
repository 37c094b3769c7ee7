"""companion.metrics.circle_w1: W1 on the circle between empirical measures, against an optimal matching."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from companion.init import uniform_angles
from companion.metrics.circle_w1 import circle_w1_empirical


def test_circle_w1_empirical_equals_the_optimal_matching():
    # equal numbers of points: W1 on the circle is an optimal assignment with the geodesic cost
    from scipy.optimize import linear_sum_assignment
    g = torch.Generator().manual_seed(5)
    th, ph = uniform_angles(3, 30, generator=g), uniform_angles(3, 30, generator=g)
    got = circle_w1_empirical(th, ph)
    for j in range(3):
        d = np.abs(th[j, :, 0].numpy()[:, None] - ph[j, :, 0].numpy()[None, :])
        cost = np.minimum(d, 2 * np.pi - d)
        r, c = linear_sum_assignment(cost)
        assert got[j] == pytest.approx(cost[r, c].mean(), rel=1e-12)


def test_circle_w1_empirical_is_symmetric_and_refuses_other_shapes():
    g = torch.Generator().manual_seed(6)
    th, ph = uniform_angles(2, 20, generator=g), uniform_angles(2, 7, generator=g)
    np.testing.assert_allclose(circle_w1_empirical(th, ph), circle_w1_empirical(ph, th), rtol=1e-12)
    with pytest.raises(ValueError, match=r"\(trials, n, 1\) angles"):
        circle_w1_empirical(th[..., 0], ph)
    with pytest.raises(ValueError, match="same number of trials"):
        circle_w1_empirical(th, ph[:1])
