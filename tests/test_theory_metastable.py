"""Paper D closed forms against quadrature, the NOTES table, and a short particle run."""
import math

import numpy as np
import pytest
import scipy.integrate
import scipy.special
import torch

from companion.circle import Circle, circle_moments
from companion.init import uniform_angles
from companion.integrate import simulate
from companion.theory.metastable import gamma_k, growth_rate, k_max, linear_time, predicted_centres


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("beta", [0.5, 2.0, 5.0, 12.0])
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_circle_rate_equals_kernel_fourier_coefficient(beta, k):
    # linearising d_t rho = d_theta(rho (g * rho)), g = e^{beta cos} sin, at rho = 1/(2 pi):
    # mode k grows at (k / 2 pi) int g(p) sin(k p) dp
    val, _ = scipy.integrate.quad(lambda p: math.exp(beta * math.cos(p)) * math.sin(p) * math.sin(k * p), 0, 2 * math.pi, limit=200)
    rate = k * val / (2 * math.pi)
    assert float(gamma_k(k, beta, "usa")) == pytest.approx(rate, rel=1e-10)
    z = scipy.integrate.quad(lambda p: math.exp(beta * math.cos(p)), 0, 2 * math.pi)[0] / (2 * math.pi)
    assert float(gamma_k(k, beta, "softmax")) == pytest.approx(rate / z, rel=1e-10)


@pytest.mark.parametrize("beta", [1.0, 4.0, 9.0])
@pytest.mark.parametrize("l", [1, 2, 4])
def test_sphere_rate_equals_funk_hecke_quadrature(beta, l):
    # on S^2 (normalised measure) the kernel's eigenvalue is (1/2) int_{-1}^1 e^{beta t} P_l(t) dt
    lam = 0.5 * scipy.integrate.quad(lambda t: math.exp(beta * t) * scipy.special.eval_legendre(l, t), -1, 1)[0]
    assert float(growth_rate(l, beta, 3, "usa")) == pytest.approx(l * (l + 1) / beta * lam, rel=1e-10)
    assert float(growth_rate(l, beta, 3, "softmax")) == pytest.approx(l * (l + 1) / beta * lam / (math.sinh(beta) / beta), rel=1e-10)


def test_kmax_table_from_notes():
    table = {1: 1, 2: 2, 3: 2, 5: 3, 7: 4, 10: 4, 20: 6, 50: 10, 100: 14}
    assert {b: k_max(b) for b in table} == table
    for b in [20.0, 50.0, 100.0]:  # about sqrt(2 beta)
        assert abs(k_max(b) - math.sqrt(2 * b)) <= 1


def test_linear_time_scaling():
    t = linear_time(np.array([1e3, 1e6]), 5.0)
    assert t[1] / t[0] == pytest.approx(2.0)
    assert float(t[0]) == pytest.approx(math.log(1e3) / (2 * 9 * scipy.special.iv(3, 5.0) / 5.0))


def test_predicted_centres_of_a_modulated_density():
    # tokens at the quantiles of 1 + 0.5 cos(3 (theta - c)): mode 3 peaks at c + 2 pi j / 3
    c = 0.4
    grid = np.linspace(0, 2 * np.pi, 200001)
    cdf = (grid + 0.5 * (np.sin(3 * (grid - c)) + np.sin(3 * c)) / 3) / (2 * np.pi)
    th = np.interp((np.arange(3000) + 0.5) / 3000, cdf, grid)
    got = predicted_centres(th, 3)
    assert np.allclose(got, np.sort(np.remainder(c + 2 * np.pi * np.arange(3) / 3, 2 * np.pi)), atol=1e-3)


def test_bad_arguments():
    with pytest.raises(ValueError, match="normalization"):
        gamma_k(1, 1.0, "x")
    with pytest.raises(ValueError, match="beta"):
        gamma_k(1, 0.0)
    with pytest.raises(ValueError, match="l must"):
        growth_rate(-1, 1.0)
    with pytest.raises(ValueError, match="d must"):
        growth_rate(1, 1.0, d=1)
    with pytest.raises(ValueError, match="k must"):
        predicted_centres(np.zeros(3), 0)


def test_particles_grow_at_the_predicted_rate():
    # SA, beta = 5, n = 20000: |m_k(t)| / |m_k(0)| = e^{gamma_k t} in the linear phase
    beta, n = 5.0, 20000
    th = uniform_angles(2, n, generator=torch.Generator().manual_seed(11))
    t1 = 0.3 * float(linear_time(n, beta, "softmax"))
    sol = simulate(Circle(beta, "softmax"), th, t1, method="rk4", dt=0.1)
    m0, m1 = circle_moments(sol.xs[0], 6), circle_moments(sol.xs[-1], 6)
    rate = 0.5 * torch.log((m1.abs() ** 2).mean(0) / (m0.abs() ** 2).mean(0)) / t1
    for k in (2, 3, 4):
        assert rate[k].item() == pytest.approx(float(gamma_k(k, beta, "softmax")), rel=0.1)
    assert int(torch.argmax(rate[1:])) + 1 == k_max(beta)


def test_dominant_mode_quantiles_invert_the_cdf_and_carry_the_mode():
    from companion.theory.metastable import dominant_mode_quantiles
    m = np.array([0.05 * np.exp(1.3j), 0.2 * np.exp(-2.0j)])
    th = dominant_mode_quantiles(m, 3, 3000)[..., 0].numpy()  # (2, 3000)
    q = (np.arange(3000) + 0.5) / 3000
    a, arg = np.abs(m)[:, None], np.angle(m)[:, None]
    F = th / (2 * np.pi) + a / (3 * np.pi) * (np.sin(3 * th - arg) + np.sin(arg))
    assert np.abs(np.remainder(F - q + 0.5, 1.0) - 0.5).max() < 1e-13  # angles are wrapped to [0, 2 pi): F mod 1
    # the particles carry m_3 (up to the O(1/M^2) of the midpoint rule) and no other low mode
    mk = np.exp(1j * np.arange(1, 7)[None, :, None] * th[:, None, :]).mean(-1)
    np.testing.assert_allclose(mk[:, 2], m, atol=1e-6)
    assert np.abs(np.delete(mk, [2, 5], axis=1)).max() < 1e-6
    with pytest.raises(ValueError, match="m_k"):
        dominant_mode_quantiles(np.array([0.6]), 2, 10)


def test_neighbour_exponent_from_the_rates():
    from companion.theory.metastable import neighbour_exponent
    g = gamma_k(np.arange(1, 8), 2.0, "usa")  # k_max = 2; the next fastest is k = 3
    assert neighbour_exponent(2.0) == pytest.approx((1 - g[2] / g[1]) / 2)
    assert neighbour_exponent(2.0, "softmax") == pytest.approx(neighbour_exponent(2.0))  # a ratio: I_0 cancels


@pytest.mark.parametrize("beta,k", [(2.0, 2), (5.0, 3), (7.0, 4), (1.0, 3)])
def test_cluster_instability_rate_from_a_finite_difference_jacobian(beta, k):
    # k tokens equally spaced are k equal point clusters: the pairwise field's Jacobian, by central differences
    from companion.circle import circle_field_dense
    from companion.theory.metastable import cluster_instability_rate
    for norm in ("usa", "softmax"):
        th0 = torch.tensor(2 * np.pi * np.arange(k) / k, dtype=torch.float64)[None, :, None]
        h, J = 1e-6, np.zeros((k, k))
        for c in range(k):
            e = torch.zeros_like(th0)
            e[0, c, 0] = h
            J[:, c] = ((circle_field_dense(th0 + e, beta, norm) - circle_field_dense(th0 - e, beta, norm)) / (2 * h))[0, :, 0].numpy()
        lead = float(np.max(np.linalg.eigvals(J).real))
        assert cluster_instability_rate(beta, k, norm) == pytest.approx(lead, rel=1e-7, abs=1e-9)


def test_plateau_slope_is_the_exponent_over_the_instability_rate():
    from companion.theory.metastable import cluster_instability_rate, neighbour_exponent, plateau_slope
    for beta in (2.0, 5.0, 7.0):
        for norm in ("usa", "softmax"):
            assert plateau_slope(beta, norm) == neighbour_exponent(beta, norm) / cluster_instability_rate(beta, k_max(beta), norm)
    # two antipodal clusters drift apart at e^-beta: the slope is e^beta times the exponent
    assert plateau_slope(2.0) == pytest.approx(neighbour_exponent(2.0) * math.exp(2.0), rel=1e-9)
    assert math.isnan(plateau_slope(0.5))  # k_max = 1: a single cluster, nothing merges
