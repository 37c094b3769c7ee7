"""companion.metrics.hminus1: the exact prefix-sum H^{-1} norm and distance on the circle against the
truncated Fourier series they sum."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from companion.init import uniform_angles
from companion.metrics.hminus1 import hminus1_distance, hminus1_norm

K = np.arange(1, 200_001)


def moments(a: torch.Tensor) -> np.ndarray:
    """m_k = mean_j e^{i k theta_j} for k = 1..K: (trials, K)."""
    return np.exp(1j * K[None, :, None] * a[..., 0].numpy()[:, None, :]).mean(-1)


def test_hminus1_norm_equals_the_fourier_sum():
    th = uniform_angles(2, 50, generator=torch.Generator().manual_seed(3))
    direct = 2 * (np.abs(moments(th)) ** 2 / K ** 2).sum(-1)  # +-k; the tail beyond K is below 2 / K = 1e-5
    np.testing.assert_allclose(hminus1_norm(th).numpy(), direct, atol=2e-5)


def test_hminus1_norm_takes_angles_mod_2pi_and_refuses_other_shapes():
    th = uniform_angles(3, 40, generator=torch.Generator().manual_seed(1))
    np.testing.assert_allclose(hminus1_norm(th + 4 * math.pi).numpy(), hminus1_norm(th).numpy(), rtol=1e-9)
    with pytest.raises(ValueError, match=r"\(trials, n, 1\) angles"):
        hminus1_norm(th[..., 0])


def test_hminus1_distance_equals_the_fourier_sum():
    g = torch.Generator().manual_seed(4)
    th, ph = uniform_angles(2, 40, generator=g), uniform_angles(2, 25, generator=g)
    direct = 2 * (np.abs(moments(th) - moments(ph)) ** 2 / K ** 2).sum(-1)  # the tail beyond K is below 4 / K
    np.testing.assert_allclose(hminus1_distance(th, ph).numpy() ** 2, direct, atol=4e-5)
    assert float(hminus1_distance(th, th).max()) < 1e-7  # a measure against itself (rounding: sqrt of ~1e-16)


def test_hminus1_distance_refuses_mismatched_trials():
    g = torch.Generator().manual_seed(5)
    with pytest.raises(ValueError, match="same number of trials"):
        hminus1_distance(uniform_angles(2, 10, generator=g), uniform_angles(3, 10, generator=g))
