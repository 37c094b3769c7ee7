"""companion.metrics.harmonics: the harmonic energy from the Gram matrix against the spherical harmonics."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special
import torch

from companion.init import uniform_sphere
from companion.metrics.harmonics import harmonic_energy


def test_harmonic_energy_is_the_addition_theorem_sum_of_the_harmonic_coefficients():
    X = uniform_sphere(2, 40, 3, generator=torch.Generator().manual_seed(7))
    E = harmonic_energy(X, 4).numpy()
    x = X.numpy()
    polar = np.arccos(np.clip(x[..., 2], -1, 1))
    azimuth = np.arctan2(x[..., 1], x[..., 0])
    for l in range(5):
        c = np.stack([scipy.special.sph_harm_y(l, m, polar, azimuth).mean(-1) for m in range(-l, l + 1)], -1)  # (2, 2l + 1)
        np.testing.assert_allclose(E[:, l], 4 * math.pi / (2 * l + 1) * (np.abs(c) ** 2).sum(-1), rtol=1e-10, atol=1e-13)


def test_harmonic_energy_refuses_tokens_off_s2():
    with pytest.raises(ValueError, match=r"\(trials, n, 3\)"):
        harmonic_energy(torch.zeros(1, 4, 2, dtype=torch.float64), 2)


@pytest.mark.parametrize("entries", [1, 7, 40 * 40 * 2 - 1])
def test_harmonic_energy_in_row_blocks_is_still_the_harmonic_sum(monkeypatch, entries):
    """Rows of the Gram matrix a block at a time (one row, a few, all but one): the same energies as the
    spherical-harmonic coefficients give, so the blocking loses no pair and counts none twice."""
    import companion.metrics.harmonics as h

    monkeypatch.setattr(h, "BLOCK_ENTRIES", entries)
    X = uniform_sphere(2, 40, 3, generator=torch.Generator().manual_seed(3))
    E = h.harmonic_energy(X, 3).numpy()
    x = X.numpy()
    polar, azimuth = np.arccos(np.clip(x[..., 2], -1, 1)), np.arctan2(x[..., 1], x[..., 0])
    for l in range(4):
        c = np.stack([scipy.special.sph_harm_y(l, m, polar, azimuth).mean(-1) for m in range(-l, l + 1)], -1)
        np.testing.assert_allclose(E[:, l], 4 * math.pi / (2 * l + 1) * (np.abs(c) ** 2).sum(-1), rtol=1e-10, atol=1e-13)


def test_harmonic_energy_refuses_a_bad_degree():
    X = uniform_sphere(1, 4, 3, generator=torch.Generator().manual_seed(0))
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="lmax"):
            harmonic_energy(X, bad)
