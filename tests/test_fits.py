"""companion.fits: line fits against the closed-form least-squares sums, event times against hand cases."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from companion.fits import first_crossing, first_time, line_fit, settle_time


def _sums(x, y, w):
    """Weighted least squares by the normal equations written out with sums (the textbook formulas)."""
    S, Sx, Sy = w.sum(), (w * x).sum(), (w * y).sum()
    Sxx, Sxy = (w * x * x).sum(), (w * x * y).sum()
    delta = S * Sxx - Sx**2
    b = (S * Sxy - Sx * Sy) / delta
    a = (Sxx * Sy - Sx * Sxy) / delta
    return a, b, math.sqrt(S / delta)


def test_ordinary_fit_matches_covariance_formula():
    x = np.array([0.0, 1.0, 2.0, 4.0, 7.0])
    y = np.array([1.1, 2.9, 5.2, 8.8, 15.1])
    f = line_fit(x, y)
    slope = ((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum()
    r = np.corrcoef(x, y)[0, 1]
    assert f["slope"] == pytest.approx(slope, rel=1e-12)
    assert f["intercept"] == pytest.approx(y.mean() - slope * x.mean(), rel=1e-12)
    assert f["r2"] == pytest.approx(r**2, rel=1e-12)
    assert "slope_se" not in f


def test_exact_line_and_constant_series():
    assert line_fit([0, 1, 2], [1, 3, 5]) == pytest.approx({"slope": 2.0, "intercept": 1.0, "r2": 1.0}, rel=1e-14)
    f = line_fit([1.0, 2.0, 3.0], [4.0, 4.0, 4.0])
    assert abs(f["slope"]) < 1e-14 and f["r2"] == 1.0  # nothing to explain


def test_weighted_fit_matches_the_normal_equations_and_its_error():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    y = 0.5 + 2.0 * x + np.array([0.01, -0.02, 0.015, 0.0, -0.01, 0.02])
    se = np.array([0.1, 0.1, 0.2, 0.2, 0.4, 0.4])
    f = line_fit(x, y, se=se)
    a, b, err = _sums(x, y, 1 / se**2)
    assert f["slope"] == pytest.approx(b, rel=1e-12) and f["intercept"] == pytest.approx(a, rel=1e-12)
    # residuals far below the stated errors: chi^2 / dof < 1, the error is the formal one
    assert f["slope_se"] == pytest.approx(err, rel=1e-12)
    # the same points with errors 100x smaller: chi^2 / dof > 1 scales the error up by its square root
    g = line_fit(x, y, se=se / 100)
    w = 1 / (se / 100) ** 2
    chi2 = (w * (y - a - b * x) ** 2).sum() / (len(x) - 2)
    assert chi2 > 1
    assert g["slope_se"] == pytest.approx(_sums(x, y, w)[2] * math.sqrt(chi2), rel=1e-9)


def test_weights_discount_an_uncertain_point():
    x = np.arange(6.0)
    y = 3.0 * x
    y[-1] += 10.0  # an outlier
    plain = line_fit(x, y)["slope"]
    se = np.ones(6)
    se[-1] = 1e4
    assert abs(line_fit(x, y, se=se)["slope"] - 3.0) < 1e-6 < abs(plain - 3.0)


def test_loglog_is_a_power_law_and_uses_relative_errors():
    x = np.array([16.0, 32, 64, 128, 256])
    y = 3.0 * x**-0.5 * np.array([1.0, 1.02, 0.97, 1.01, 0.99])
    f = line_fit(x, y, loglog=True)
    assert f == line_fit(np.log(x), np.log(y))
    # equal relative errors weight every point equally: the weighted slope is the ordinary one
    assert line_fit(x, y, se=0.001 * y, loglog=True)["slope"] == pytest.approx(f["slope"], rel=1e-10)
    # the 2 % scatter is 20x the stated 0.1 % errors, so the slope error grows with it
    exact = line_fit(x, 3.0 * x**-0.5, se=0.001 * 3.0 * x**-0.5, loglog=True)
    assert exact["slope"] == pytest.approx(-0.5, abs=1e-12)
    assert line_fit(x, y, se=0.001 * y, loglog=True)["slope_se"] > 10 * exact["slope_se"]
    # delta method: on an exact power law with 1 % errors se(b) = 0.01 / sqrt(sum (log x - mean)^2)
    lx = np.log(x)
    assert exact["slope_se"] == pytest.approx(0.001 / math.sqrt(((lx - lx.mean()) ** 2).sum()), rel=1e-10)


def test_line_fit_bad_input():
    with pytest.raises(ValueError, match="same length >= 2"):
        line_fit([1.0], [2.0])
    with pytest.raises(ValueError, match="same length"):
        line_fit([1.0, 2.0], [2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="x > 0 and y > 0"):
        line_fit([1.0, 2.0], [0.0, 1.0], loglog=True)
    with pytest.raises(ValueError, match="se must be > 0"):
        line_fit([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], se=[1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="one-dimensional"):
        line_fit(np.ones((2, 2)), np.ones((2, 2)))


def test_first_crossing_interpolates_between_saved_times():
    ts, y = [0.0, 1.0, 2.0, 3.0], [1.0, 0.1, 0.3, 0.7]
    assert first_crossing(ts, y, 0.5) == 0.0  # already above at the first saved time
    assert first_crossing(ts, y, 0.5, start=1.0) == pytest.approx(2.5)  # 0.3 -> 0.7 reaches 0.5 half-way
    assert first_crossing(ts, y, 0.4, start=1.0) == pytest.approx(2.25)
    assert first_crossing(ts, y, 0.5, start=1.0, interpolate=False) == 3.0
    assert first_crossing(ts, y, 0.7, start=1.0) == 3.0  # reaching the level exactly counts
    assert math.isnan(first_crossing(ts, y, 2.0))
    assert first_crossing(ts, y, 2.0, never=math.inf) == math.inf
    # the window starts between saved points: no interpolation back across its start
    assert first_crossing([0.0, 1.0, 2.0], [0.0, 0.0, 1.0], 0.5, start=1.5) == 2.0
    # tensors (as from a simulation) are accepted
    assert first_crossing(torch.tensor([0.0, 2.0]), torch.tensor([0.0, 4.0]), 1.0) == pytest.approx(0.5)


def test_first_time_and_settle_time_hand_cases():
    ts = [0.0, 1.0, 2.0, 3.0]
    assert first_time(ts, [False, False, True, True]) == 2.0
    assert math.isnan(first_time(ts, [False] * 4))
    # above 1 at t = 0 and t = 2, below from t = 3 on
    assert settle_time(ts, [2.0, 0.5, 1.5, 0.2], 1.0) == 3.0
    assert settle_time(ts, [0.5, 0.5, 0.5, 0.5], 1.0) == 0.0  # never above: settled from the start
    assert math.isnan(settle_time(ts, [0.5, 0.5, 0.5, 1.5], 1.0))  # still above at the horizon
    assert settle_time(ts, [1.0, 1.0, 1.0, 1.0], 1.0) == 0.0  # "at or below" the level
    with pytest.raises(ValueError, match="shape of ts"):
        first_time(ts, [True])


@pytest.mark.parametrize("k, n", [(0, 1), (0, 16), (16, 16), (3, 10), (50, 97)])
def test_fraction_interval_against_wilson_formula(k, n):
    import math

    from companion.fits import fraction_interval

    z = 1.959963984540054  # the Wilson score interval written out (Wilson 1927), against the scipy call
    p = k / n
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo, hi = fraction_interval(k, n, level=0.95)
    assert lo == pytest.approx(max(0.0, centre - half), abs=1e-12) and hi == pytest.approx(min(1.0, centre + half), abs=1e-12)


@pytest.mark.parametrize("k, n", [(-1, 4), (5, 4), (1, 0), (1.5, 4), (True, 4)])
def test_fraction_interval_refuses_bad_counts(k, n):
    from companion.fits import fraction_interval

    with pytest.raises(ValueError, match="must be"):
        fraction_interval(k, n)
