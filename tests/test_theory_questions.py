"""The closed forms derived for the open questions (theory/questions.py): limits where they must be a
known law, hand computations, second methods and bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp

from companion.theory import lora_depth
from companion.theory import metastable as th_meta
from companion.theory import questions as q

LAM = (1.0, 0.5, 0.25)


# --------------------------------------------------------------------------- question 1
def test_aniso_level_is_eq21_when_isotropic():
    for kappa in (1e-3, 0.05, 0.3):
        assert q.aniso_level(LAM, [1 / 3] * 3, kappa, 5) == pytest.approx(lora_depth.stationary_deviation(LAM, kappa, 5), rel=1e-12)


def test_aniso_level_small_kappa_limit_and_noise_along_u1():
    # leading order: n sum_i k_i / (2 gap_i), k_i = d kappa w_i, whatever w_1
    w = (0.5, 0.3, 0.2)
    kappa = 1e-7
    lead = sum(3 * kappa * wi / (2 * (LAM[0] - li)) for wi, li in zip(w[1:], LAM[1:]))
    assert q.aniso_level(LAM, w, kappa, 1) == pytest.approx(lead, rel=1e-5)
    # same noise off u1, more along u1: less damping, a higher level
    # per unit of noise off u1 (0.4 against 1.0)
    assert q.aniso_level(LAM, (0.6, 0.2, 0.2), 0.05, 1) / 0.4 > q.aniso_level(LAM, (0.0, 0.5, 0.5), 0.05, 1)


@pytest.mark.parametrize("args, match", [
    ((LAM, (0.5, 0.5), 0.1, 1), "weights"),
    ((LAM, (0.5, 0.6, 0.1), 0.1, 1), "weights"),
    ((LAM, (1 / 3,) * 3, 0.0, 1), "kappa"),
    (((0.5, 1.0, 0.2), (1 / 3,) * 3, 0.1, 1), "eigvals"),
    ((LAM, (1.0, 0.0, 0.0), 1.0, 1), "no localised stationary law"),
])
def test_aniso_level_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        q.aniso_level(*args)


# --------------------------------------------------------------------------- question 2
def test_lora_rates_exact_and_first_order_parts():
    # V = (1 + eps) I rescales the field: every rate by 1 + eps, on the circle and on S^2
    for d in (2, 3):
        g = th_meta.growth_rate(np.arange(1, 5), 3.0, d, "softmax")
        assert q.lora_rates(np.arange(1, 5), 3.0, np.eye(d), 0.2) == pytest.approx(1.2 * g, rel=1e-12)
    # a rank-1 adapter: the trace u.v = cos(angle) alone moves the rates at first order
    E = q.lora_direction(60.0, 3)
    assert np.trace(E) == pytest.approx(0.5) and np.linalg.norm(E, 2) == pytest.approx(1.0)
    assert q.lora_rates(2, 3.0, E, 0.1) == pytest.approx((1 + 0.1 * 0.5 / 3) * th_meta.growth_rate(2, 3.0, 3, "softmax"))
    # symmetric E: no rotation; antisymmetric E: the frequency is odd in eps and linear in k's Bessel terms
    assert q.lora_frequency(3, 2.0, q.lora_direction(0.0, 2), 0.1) == 0.0
    J = np.array([[0.0, -1.0], [1.0, 0.0]])
    assert q.lora_frequency(2, 2.0, J, 0.1) == pytest.approx(-q.lora_frequency(2, 2.0, J, -0.1))
    # k = 1 at the uniform law: Omega_1 / eps = I_1'/I_0 + I_1/I_0 - (I_1/I_0)^2 (SA), from scipy directly
    r = sp.iv(1, 2.0) / sp.iv(0, 2.0)
    i1p = (sp.iv(0, 2.0) + sp.iv(2, 2.0)) / 2 / sp.iv(0, 2.0)
    assert q.lora_frequency(1, 2.0, J, 1.0) == pytest.approx(i1p + r - r * r, rel=1e-12)
    with pytest.raises(ValueError, match="2 x 2"):
        q.lora_frequency(2, 2.0, np.eye(3), 0.1)
    with pytest.raises(ValueError, match="d must be"):
        q.lora_direction(0.0, 1)
    with pytest.raises(ValueError, match="E must be"):
        q.lora_rates(2, 2.0, np.ones((2, 3)), 0.1)


def test_traceless_part():
    E = np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 1.0], [4.0, 0.0, 2.0]])
    S = q.traceless_part(E)
    assert np.trace(S) == pytest.approx(0.0, abs=1e-15) and np.array_equal(S, S.T)
    np.testing.assert_allclose(S + np.trace(E) / 3 * np.eye(3) + (E - E.T) / 2, E, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="E must be"):
        q.traceless_part(np.ones((1, 1)))


def test_lora_forcing_against_the_fourier_form():
    """On the circle the forced mode is m_2 = eps a (I_1/I_0) e^{2i alpha} (e^{gamma_2 t} - 1)/gamma_2 and
    <x^T S_0 x> = a Re(e^{-2i alpha} m_2): the general-d formula must agree."""
    beta, t, eps = 2.0, np.array([0.5, 2.0]), 0.03
    for angle in (0.0, 60.0, 90.0):
        E = q.lora_direction(angle, 2)
        a = 0.5  # the traceless part of a rank-1 unit adapter in the plane has eigenvalues +-1/2
        g2 = th_meta.growth_rate(2, beta, 2, "softmax")
        want = eps * a * a * sp.iv(1, beta) / sp.iv(0, beta) * np.expm1(g2 * t) / g2
        assert q.lora_forcing(t, beta, E, eps) == pytest.approx(want, rel=1e-12)
    assert q.lora_forcing(1.0, 2.0, np.eye(3), 0.5) == 0.0  # isotropic: the uniform law stays put


def test_lora_merge_rate_limits():
    E = q.lora_direction(0.0, 2)
    r0 = q.lora_merge_rate(2.0, E, 0.0)
    # paper D's instability rate of two clusters (an independent function), SA and USA
    assert r0["rate"] == pytest.approx(th_meta.cluster_instability_rate(2.0, 2, "softmax"), rel=1e-12)
    assert q.lora_merge_rate(2.0, E, 0.0, "usa")["rate"] == pytest.approx(th_meta.cluster_instability_rate(2.0, 2, "usa"))
    # the threshold is where the rate vanishes; |cos| = 1/2 needs about twice the size; orthogonal: never
    assert q.lora_merge_rate(2.0, E, r0["threshold"])["rate"] == pytest.approx(0.0, abs=1e-15)
    t60 = q.lora_merge_rate(2.0, q.lora_direction(60.0, 2), 0.0)["threshold"]
    assert q.lora_merge_rate(2.0, q.lora_direction(60.0, 2), t60)["rate"] == pytest.approx(0.0, abs=1e-15)
    assert 1.9 < t60 / r0["threshold"] < 2.1
    assert q.lora_merge_rate(2.0, q.lora_direction(90.0, 2), 0.5)["threshold"] == math.inf
    # with u.v > 0 the pair settles along u (alpha = angle/2, psi* = -angle/2); a rotation alone never settles it
    for angle in (0.0, 30.0, 60.0):
        assert q.lora_merge_rate(2.0, q.lora_direction(angle, 2), 0.1)["orientation"] == pytest.approx(0.0, abs=1e-12)
    assert math.isnan(q.lora_merge_rate(2.0, np.array([[0.0, -1.0], [1.0, 0.0]]), 0.1)["orientation"])


def test_lora_switch():
    E = q.lora_direction(0.0, 2)
    e = q.lora_switch_eps(400, 5.0, E, 0.2)
    assert q.lora_switch_share(e, 400, 5.0, E, 0.2) == pytest.approx(1 - math.exp(-1))
    shares = [q.lora_switch_share(f * e, 400, 5.0, E, 0.2) for f in (0.0, 0.3, 1.0, 3.0)]
    assert shares[0] == 0.0 and shares == sorted(shares) and shares[-1] > 0.95
    assert q.lora_switch_eps(4000, 5.0, E, 0.2) < e  # more tokens: a smaller adapter suffices
    with pytest.raises(ValueError, match="k_max = 2"):
        q.lora_switch_eps(400, 2.0, E, 0.2)
    with pytest.raises(ValueError, match="level"):
        q.lora_switch_share(0.1, 4, 5.0, E, 0.2)  # 0.2 * sqrt(4) < 1
    with pytest.raises(ValueError, match="traceless"):
        q.lora_switch_share(0.1, 400, 5.0, np.eye(2), 0.2)


# --------------------------------------------------------------------------- question 3
def test_terminal_prediction_family():
    """In the terminal map's family (V = diag(-0.5, rho, -1), B = diag(-1, -0.5, -x/beta)) the bipolar
    state on F^abs is stable iff x > 0 and rho < tanh(x); the consensus on F iff rho > 0."""
    beta = 5.0
    for x in (-1.0, 0.5, 1.0, 2.0):
        for rho in (-0.3, 0.3, 0.6, 0.9):
            p = q.terminal_prediction([-0.5, rho, -1.0], [-1.0, -0.5, -x / beta], beta)
            assert (p["F"], p["Fabs"]) == (1, 2)
            assert p["Fabs_stable"] == (x > 0 and rho < math.tanh(x)), (x, rho)
            assert p["F_stable"] == (rho > 0), (x, rho)
            assert q.translation_rate(rho, x) == pytest.approx(rho - math.tanh(x))
    with pytest.raises(ValueError, match="beta"):
        q.terminal_prediction([1.0, -2.0], [1.0, 1.0], 0.0)
    with pytest.raises(ValueError, match="v_eigs"):
        q.terminal_prediction([1.0, -2.0], [1.0], 1.0)


# --------------------------------------------------------------------------- question 4
def test_split_prediction():
    p = q.split_prediction((-0.5, -1.0, -1.5), 0.1, 3)
    assert not any(v["blocks"] for v in p.values())  # |ln 2| > 2 * 0.1 * 1.5: no stable split
    p = q.split_prediction((-0.5, -1.0, -1.5), 1.0, 6)
    assert all(v["blocks"] for v in p.values())
    with pytest.raises(ValueError, match="lambdas"):
        q.split_prediction((0.5, -1.0), 1.0, 3)
    with pytest.raises(ValueError, match="n must"):
        q.split_prediction((-0.5, -1.0), 1.0, 1)


# --------------------------------------------------------------------------- question 5
def test_tracking_laws():
    g = 0.5
    assert q.tracking_lag(0.0, g) == 0.0 and q.turning_rate(0.0, g) == 0.0
    # first order: the lag is omega / g on a slow path; it reaches pi/4 at the threshold omega = g/2
    assert q.tracking_lag(1e-4, g) == pytest.approx(1e-4 / g, rel=1e-6)
    assert q.tracking_lag(g / 2, g) == pytest.approx(math.pi / 4)
    assert math.isnan(q.tracking_lag(0.26, g))
    # the mean turning rate is continuous at the threshold and falls like g^2 / (8 omega) for fast paths
    assert q.turning_rate(g / 2, g) == g / 2 and q.turning_rate(g / 2 + 1e-9, g) == pytest.approx(g / 2, abs=1e-4)
    assert q.turning_rate(100.0, g) == pytest.approx(g * g / 800, rel=1e-3)
    for bad in ((-0.1, g), (0.1, 0.0), (math.nan, g)):
        with pytest.raises(ValueError):
            q.tracking_lag(*bad)


def test_ramp_depths_limits():
    S, eps = 0.5, 0.02
    assert q.ramp_depths(S, eps, 0.0) == (25.0, 25.0)  # a constant path: the frozen Sec. 4.2 formula
    # a ramp shorter than the depth: the accumulated reading adds tau / 2, the pointwise one nothing
    p, a = q.ramp_depths(S, eps, 10.0)
    assert (p, a) == (25.0, 30.0)
    # slow: sqrt(2) apart, however slow; both continuous where their regimes meet
    for tau in (1e3, 1e5):
        p, a = q.ramp_depths(S, eps, tau)
        assert a / p == pytest.approx(math.sqrt(2))
    for tau in (25.0, 50.0):
        lo, hi = q.ramp_depths(S, eps, tau * (1 - 1e-9)), q.ramp_depths(S, eps, tau * (1 + 1e-9))
        assert lo == pytest.approx(hi, rel=1e-6)
    # the accumulated reading is the solution of int_0^t eps(s) ds = S
    for tau in (0.0, 10.0, 60.0, 400.0):
        t = q.ramp_depths(S, eps, tau)[1]
        assert float(q.ramp_area(eps, tau, np.array([t]))[0]) == pytest.approx(S)
    assert q.ramp_depths(math.inf, eps, 10.0) == (math.inf, math.inf)
    for bad in ((-1.0, eps, 1.0), (S, 0.0, 1.0), (S, eps, -1.0)):
        with pytest.raises(ValueError):
            q.ramp_depths(*bad)


def test_ramp_area_by_quadrature():
    t = np.linspace(0.0, 50.0, 11)
    for tau in (0.0, 20.0):
        s = np.linspace(0.0, 50.0, 500001)
        rate = 0.02 * (np.minimum(s / tau, 1.0) if tau else np.ones_like(s))
        cum = np.concatenate([[0.0], np.cumsum((rate[1:] + rate[:-1]) / 2 * np.diff(s))])
        np.testing.assert_allclose(q.ramp_area(0.02, tau, t), np.interp(t, s, cum), rtol=1e-8, atol=1e-12)


def test_gap_closing_angle_against_one_token():
    """A single token (a consensus) under the straight path that swaps lambda_1 and lambda_2 follows the
    derived tan(phi) law: back at its start angle when the path ends, then on to e2."""
    import torch

    from companion import models
    from companion.integrate import simulate

    lam, tau, phi0 = (1.0, 0.5, 0.25), 20.0, 0.3
    times = np.array([0.0, tau, 30.0])
    swapped = (lam[1], lam[0], lam[2])
    V = torch.stack([torch.diag(torch.tensor(v, dtype=torch.float64)) for v in (lam, swapped, swapped)])  # knots at times
    x0 = torch.tensor([[[math.cos(phi0), math.sin(phi0), 0.0]]], dtype=torch.float64)
    ts = torch.tensor([0.0, 5.0, 10.0, tau, 30.0], dtype=torch.float64)
    sol = simulate(models.TimeVarying(times=tuple(times), V=V, A=V), x0, 30.0, method="rk4", dt=0.05, save_at=ts)
    phi = np.arctan2(sol.xs[:, 0, 0, 1].numpy(), sol.xs[:, 0, 0, 0].numpy())
    np.testing.assert_allclose(phi, q.gap_closing_angle(phi0, 0.5, tau, ts.numpy()), rtol=1e-6)
    assert phi[3] == pytest.approx(phi0, rel=1e-6)  # the path's end: not on the new top eigenvector
    with pytest.raises(ValueError, match="phi0"):
        q.gap_closing_angle(2.0, 0.5, 1.0, [0.0])
