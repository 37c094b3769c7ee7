"""Paper A Section 4 closed forms (theory/lora_depth.py) against hand computations and second methods."""
from __future__ import annotations

import math

import pytest
import torch
from scipy import special

from companion.theory import lora_depth as th

LAM = [1.0, 0.5, 0.25]


def test_noise_magnitude_by_hand():
    assert th.noise_magnitude([3.0], 3) == pytest.approx(1.0)
    assert th.noise_magnitude([1.0, 1.0, 2.0], 4) == pytest.approx(6 / 16)
    with pytest.raises(ValueError, match="s must be positive"):
        th.noise_magnitude([1.0, -1.0], 3)


def test_effective_kappa_scaling():
    # alpha = 1/2 is depth independent; alpha = 0 decays like 1/L; alpha = 1/4 like L^(-1/2)
    assert th.effective_kappa(0.2, 1.5, 0.5, 10) == pytest.approx(th.effective_kappa(0.2, 1.5, 0.5, 1000)) == pytest.approx(0.45)
    assert th.effective_kappa(0.2, 1.0, 0.0, 100) == pytest.approx(0.002)
    assert th.effective_kappa(0.2, 1.0, 0.25, 100) == pytest.approx(0.02)
    with pytest.raises(ValueError, match="L must be"):
        th.effective_kappa(0.1, 1.0, 0.5, 0)


def test_stationary_deviation_by_hand():
    # d = 3, kappa = 0.1, n = 4: 4 * (0.1 / (1 + 0.3) + 0.1 / (1.5 + 0.3))
    want = 4 * (0.1 / 1.3 + 0.1 / 1.8)
    assert th.stationary_deviation(LAM, 0.1, 4) == pytest.approx(want)
    # Theorem D.4 also sums i = 1, whose term is kappa / (d kappa) = 1/d per token
    assert th.stationary_deviation(LAM, 0.1, 4, form="D4") - want == pytest.approx(4 / 3)
    assert th.stationary_deviation(LAM, 0.0, 4) == 0.0
    with pytest.raises(ValueError, match="simple top eigenvalue"):
        th.stationary_deviation([1.0, 1.0, 0.5], 0.1, 2)
    with pytest.raises(ValueError, match="form must be"):
        th.stationary_deviation(LAM, 0.1, 2, form="x")


def _isotropic_closed_form(a: float) -> float:
    """E[1 - u^2] for density exp(a u^2) on [0, 1] (S^2 with lambda_2 = lambda_3), via Dawson's function:
    I0 = int_0^1 e^{a u^2} du = e^a D(sqrt a) / sqrt a, int_0^1 u^2 e^{a u^2} du = (e^a - I0) / (2a)."""
    I0 = math.exp(a) * special.dawsn(math.sqrt(a)) / math.sqrt(a)
    I2 = (math.exp(a) - I0) / (2 * a)
    return 1 - I2 / I0


@pytest.mark.parametrize("kappa", [0.01, 0.1, 0.5, 2.0])
def test_bingham_isotropic_matches_dawson_closed_form(kappa):
    lam = [1.0, 0.4, 0.4]
    a = (lam[0] - lam[1]) / kappa
    assert th.bingham_deviation(lam, kappa, 3) == pytest.approx(3 * _isotropic_closed_form(a), rel=1e-8)


def test_bingham_limits():
    # small kappa: the linear (Ornstein-Uhlenbeck) level n sum kappa / (2 (lambda_1 - lambda_i)), error O(kappa^2)
    for kappa in (1e-3, 1e-4):
        lin = 5 * kappa * (1 / (2 * 0.5) + 1 / (2 * 0.75))
        assert abs(th.bingham_deviation(LAM, kappa, 5) / lin - 1) < 3 * kappa
    # large kappa: uniform on S^2, E[1 - u^2] = 2/3
    assert th.bingham_deviation(LAM, 1e4, 1) == pytest.approx(2 / 3, rel=1e-3)
    with pytest.raises(ValueError, match="d = 3"):
        th.bingham_deviation([1.0, 0.5], 0.1)


C3 = torch.tensor([[2.0, 0.0], [1.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)


def test_depth_bound_by_hand():
    Vt = torch.diag(torch.tensor([1.0, 0.9], dtype=torch.float64))
    b = th.depth_bound(C3, torch.eye(2), torch.eye(2), Vt, n=3, delta=0.1, M=3.0)
    # ell = e1: c+ = (2,0), c- = (1,1); D+ = D- = m* = 1, c11 = 1, C_sub = M^2 |c22| = 9
    assert (b.plus, b.minus, b.sign) == (0, 1, 1)
    assert b.C_sub == pytest.approx(9.0) and b.a_star == pytest.approx(0.25) and b.p_star == pytest.approx(1 / 26)
    assert b.gap == pytest.approx(0.1)
    assert b.T_dom == pytest.approx(math.log(144) / 0.1)
    assert b.slack == pytest.approx(1.6)
    assert th.exit_time_bound(10.0, b) == pytest.approx(math.log(144) / 0.1 + 1.6)
    assert th.exit_time_bound(100.0, b) == pytest.approx(101.6)


def test_depth_bound_second_term_by_hand():
    # M = 0.2: 4 C_sub / a* = 4 * 0.04 / 0.25 < 1, so the first term is negative and, so T_dom = log((2/a*) log(n/p*)) / (2 lambda_1)
    Vt = torch.diag(torch.tensor([1.0, 0.9], dtype=torch.float64))
    b = th.depth_bound(C3, torch.eye(2), torch.eye(2), Vt, n=3, delta=0.1, M=0.2)
    p = 1 / (2 * (1 + 0.8))
    assert b.T_dom == pytest.approx(0.5 * math.log(8 * math.log(3 / p)))


def test_depth_bound_rejects_bad_assumptions():
    with pytest.raises(ValueError, match="simple dominant eigenvalue"):
        th.depth_bound(C3, torch.eye(2), torch.eye(2), torch.eye(2), n=3, delta=0.1, M=3.0)
    one_sided = torch.tensor([[2.0, 0.0], [-1.0, 1.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match="no occupied non-maximal cluster"):
        th.depth_bound(one_sided, torch.eye(2), torch.eye(2), torch.diag(torch.tensor([1.0, 0.5])), n=3, delta=0.1, M=3.0)
    with pytest.raises(ValueError, match="Q must be"):
        th.depth_bound(C3, torch.eye(3), torch.eye(2), torch.eye(2), n=3, delta=0.1, M=3.0)


def test_dominance_gap_by_hand():
    assert th.dominance_gap([1.0, 0.5, -0.75]) == pytest.approx(0.25)
    assert th.dominance_gap([0.5, 1.0]) == pytest.approx(0.5)  # any order
    assert th.dominance_gap([2.0, -2.0]) == 0.0
    assert th.dominance_gap([1.0, 1.0 - 1e-17]) == 0.0  # round-off of a double eigenvalue
    with pytest.raises(ValueError, match="at least two"):
        th.dominance_gap([1.0])


def test_tube_bound_reads_M_from_the_tube_and_refuses_quietly():
    Vt = torch.diag(torch.tensor([1.0, 0.9], dtype=torch.float64))
    b = th.tube_bound(C3, torch.eye(2), torch.eye(2), Vt, n=3, delta=0.1)
    assert b.M == pytest.approx(2.0 + 0.2)  # max |c_p| = 2, plus 2 delta
    assert b == th.depth_bound(C3, torch.eye(2), torch.eye(2), Vt, n=3, delta=0.1, M=2.2)
    # Assumption 4.5 fails (double eigenvalue; no cluster c_-): None where depth_bound raises
    assert th.tube_bound(C3, torch.eye(2), torch.eye(2), torch.eye(2), n=3, delta=0.1) is None
    one_sided = torch.tensor([[2.0, 0.0], [-1.0, 1.0]], dtype=torch.float64)
    assert th.tube_bound(one_sided, torch.eye(2), torch.eye(2), Vt, n=3, delta=0.1) is None


def test_switch_time_by_hand():
    C = torch.tensor([[2.0, 0.0], [1.0, 3.0], [-2.0, 1.0]], dtype=torch.float64)
    # (1,3) -> (2,0): log(3 * 3 / (1 * 1)) / (2 eps); (-2,1) -> others: a_1 (b_1 - a_1) < 0 for b_1 > a_1... check
    # (-2,1) -> (1,3): a1(b1-a1) = -2*3 < 0: never. (2,0) never gains. So the minimum is log 9 / (2 eps).
    assert th.switch_time(C, 0.05) == pytest.approx(math.log(9) / 0.1)
    assert th.switch_time(torch.tensor([[2.0, 0.0], [-1.0, 0.0]]), 0.05) == math.inf
    with pytest.raises(ValueError, match="eps must be > 0"):
        th.switch_time(C, 0.0)
