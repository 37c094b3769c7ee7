"""Paper B closed forms: Pi, the eigenspaces of M = V B^T and of V, the rate, Corollary 2's bound,
and the zero-temperature flow (models.ZeroTemperature) against its exact time-change solution."""
import math

import pytest
import torch

from companion import init, metrics, models, simulate
from companion.theory import low_temperature as lt

F64 = torch.float64


def D(*a):
    return torch.diag(torch.tensor(a, dtype=F64))


B3, V3 = D(-1, -1, 1), D(-1, 1, -2)  # paper B, Figure 3


def random_symmetric_pair(g, d=4):
    """B invertible and V = S B^{-T} with S symmetric, so that M = V B^T = S is symmetric (A2)."""
    B = torch.randn(d, d, generator=g, dtype=F64) + 2 * torch.eye(d, dtype=F64)
    S = torch.randn(d, d, generator=g, dtype=F64)
    S = S + S.T
    V = S @ torch.linalg.inv(B.T)
    return B, V, S


def test_attention_value_matrix_and_top_eigenspace_figure3():
    M = lt.attention_value_matrix(B3, V3)
    assert torch.equal(M, D(1, -1, -2))
    top = lt.check_assumption_1(B3, V3)
    assert top.value == 1.0 and top.gap == 2.0 and top.dim == 1
    assert torch.allclose(top.basis.abs()[:, 0], torch.tensor([1.0, 0, 0], dtype=F64))
    F = lt.top_eigenspace(V3)
    assert F.value == 1.0 and torch.allclose(F.basis.abs()[:, 0], torch.tensor([0, 1.0, 0], dtype=F64))
    Fa = lt.top_eigenspace_abs(V3)
    assert Fa.value == -2.0 and torch.allclose(Fa.basis.abs()[:, 0], torch.tensor([0, 0, 1.0], dtype=F64))


def test_top_eigenspace_multiplicity_and_random_rotation():
    g = torch.Generator().manual_seed(0)
    Q = init.random_orthogonal(5, generator=g)
    M = Q @ D(3, 3, 1, 0, -2) @ Q.T
    top = lt.top_eigenspace(M)
    assert top.dim == 2 and abs(top.value - 3) < 1e-12 and abs(top.gap - 2) < 1e-12
    # the eigenspace is the span of the first two columns of Q: same orthogonal projector
    P1 = top.basis @ top.basis.T
    P2 = Q[:, :2] @ Q[:, :2].T
    assert torch.allclose(P1, P2, atol=1e-12)
    assert lt.top_eigenspace(torch.eye(3, dtype=F64)).gap == math.inf


def test_assumption_errors():
    with pytest.raises(ValueError, match="invertible"):
        lt.check_assumption_1(D(1, 0, 1), D(1, 1, 1))
    with pytest.raises(ValueError, match="symmetric"):
        lt.check_assumption_1(torch.eye(2, dtype=F64), torch.tensor([[1.0, 2.0], [0.0, 1.0]], dtype=F64))
    with pytest.raises(ValueError, match="square"):
        lt.top_eigenspace(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="orthogonal"):
        lt.pi_projection(torch.tensor([[0.0, 1.0, 0.0]], dtype=F64), B3, V3)
    with pytest.raises(ValueError, match="p must lie"):
        lt.lyapunov_vp(torch.tensor([[1.0, 0.0]], dtype=F64), torch.tensor([1.0, 0.0], dtype=F64), 1.5)
    with pytest.raises(ValueError, match="beta"):
        lt.concentration_rate(torch.tensor([0.0]))


def test_pi_is_projection_onto_unit_sphere_of_E():
    g = torch.Generator().manual_seed(1)
    B, V, S = random_symmetric_pair(g)
    X = init.uniform_sphere(2, 50, 4, generator=g)
    P = lt.pi_projection(X, B, V)
    top = lt.top_eigenspace(S)
    assert torch.allclose(P.norm(dim=-1), torch.ones(2, 50, dtype=F64))
    assert torch.allclose(metrics.distance_to_subspace(P, top.basis), torch.zeros(2, 50, dtype=F64), atol=1e-12)
    # Pi is idempotent and P_E x is a positive multiple of Pi(x)
    assert torch.allclose(lt.pi_projection(P, B, V), P, atol=1e-12)
    PE = (X @ top.basis) @ top.basis.T
    assert ((PE * P).sum(-1) > 0).all()


def test_concentration_rate_values():
    b = torch.tensor([1.0, 10.0, 1e6], dtype=F64)
    expected = torch.tensor([math.sqrt(math.log(2)), math.sqrt(math.log(11) / 10), math.sqrt(math.log(1e6 + 1) / 1e6)], dtype=F64)
    assert torch.allclose(lt.concentration_rate(b), expected)
    assert (lt.concentration_rate(b).diff() < 0).all()


def test_lemma7_w2_below_sqrt_2vp():
    # W_2(mu, Pi_# mu)^2 <= 2 V_p(mu) for p in (0, 1]; W_2 from POT, independently of V_p
    g = torch.Generator().manual_seed(2)
    X = init.uniform_sphere(3, 60, 3, generator=g)
    e1 = torch.tensor([1.0, 0, 0], dtype=F64)
    W = metrics.wasserstein(X, metrics.project_to_subspace(X, e1))
    for p in (0.1, 0.5, 1.0):
        assert (W**2 <= 2 * lt.lyapunov_vp(X, e1, p) + 1e-12).all()


def test_wasserstein_to_pi_matches_pot():
    g = torch.Generator().manual_seed(3)
    X0 = init.uniform_sphere(3, 40, 3, generator=g)
    X = init.uniform_sphere(3, 40, 3, generator=g)  # an unrelated state: signs need not be preserved
    e1 = torch.tensor([1.0, 0, 0], dtype=F64)
    target = metrics.project_to_subspace(X0, e1)
    for p in (1, 2):
        exact = metrics.wasserstein(X, target, p=p, solver="exact")
        assert torch.allclose(lt.wasserstein_to_pi(X, X0, e1, p), exact, atol=1e-10)
    # and the coupling x_i <-> Pi(x0_i) is only an upper bound in general
    assert (lt.pi_distance(X, X0, e1) >= metrics.wasserstein(X, target) - 1e-12).all()


def test_zero_temperature_exact_orthogonal_B_is_normalised_linear_flow():
    # |B^T x| = 1 for orthogonal B, so tau = t and x(t) = e^{tM} x0 / |e^{tM} x0| in closed form
    g = torch.Generator().manual_seed(4)
    x0 = init.uniform_sphere(2, 7, 3, generator=g)
    ts = torch.tensor([0.0, 0.5, 2.0], dtype=F64)
    x = lt.zero_temperature_exact(x0, B3, V3, ts)
    M = D(1, -1, -2)
    for i, t in enumerate(ts):
        y = x0 @ torch.linalg.matrix_exp(t * M).T
        assert torch.allclose(x[i], y / y.norm(dim=-1, keepdim=True), atol=1e-12)


@pytest.mark.parametrize("method,dt,tol", [("rk4", 0.01, 1e-7), ("euler", 0.001, 5e-3)])
def test_zero_temperature_model_matches_exact_solution(method, dt, tol):
    g = torch.Generator().manual_seed(5)
    B, V, _ = random_symmetric_pair(g, d=4)
    x0 = init.uniform_sphere(2, 20, 4, generator=g)
    ts = torch.tensor([0.0, 0.3, 1.0], dtype=F64)
    sol = simulate(models.ZeroTemperature(B=B, V=V), x0, 1.0, method=method, dt=dt, save_at=ts)
    exact = lt.zero_temperature_exact(x0, B, V, ts, dt=1e-3)
    err = (sol.xs - exact).norm(dim=-1).max().item()
    assert err < tol


def test_zero_temperature_euler_first_order():
    # the Euler error halves with dt: an honest convergence-order check of the model + integrator
    g = torch.Generator().manual_seed(6)
    B, V, _ = random_symmetric_pair(g, d=3)
    x0 = init.uniform_sphere(1, 10, 3, generator=g)
    exact = lt.zero_temperature_exact(x0, B, V, [0.5], dt=1e-3)[-1]
    errs = [(simulate(models.ZeroTemperature(B=B, V=V), x0, 0.5, method="euler", dt=h).final - exact).norm(dim=-1).max().item() for h in (0.01, 0.005)]
    assert 1.7 < errs[0] / errs[1] < 2.3


def test_lemma9_pi_invariant_along_zero_temperature_flow():
    g = torch.Generator().manual_seed(7)
    B, V, S = random_symmetric_pair(g, d=4)
    x0 = init.uniform_sphere(2, 30, 4, generator=g)
    sol = simulate(models.ZeroTemperature(B=B, V=V), x0, 3.0, method="rk4", dt=0.01, save_at=torch.linspace(0, 3, 4))
    P0 = lt.pi_projection(x0, B, V)
    for x in sol.xs:
        assert torch.allclose(lt.pi_projection(x, B, V), P0, atol=1e-9)


def test_corollary2_bound_holds_and_flow_concentrates():
    # W_2(rho_t, Pi_# rho_0) <= sqrt(2 V_p(rho_0)) exp(-p gamma t / sigma_max(B)) for every p in (0, 1]
    g = torch.Generator().manual_seed(8)
    B, V, S = random_symmetric_pair(g, d=3)
    top = lt.check_assumption_1(B, V)
    x0 = init.uniform_sphere(2, 40, 3, generator=g)
    ts = torch.linspace(0, 4, 9, dtype=F64)
    xs = lt.zero_temperature_exact(x0, B, V, ts)
    target = lt.pi_projection(x0, B, V)
    W = torch.stack([metrics.wasserstein(x, target) for x in xs])  # POT, (T, trials)
    for p in (0.25, 1.0):
        bound = lt.corollary2_bound(x0, B, V, p, ts)
        assert (W <= bound + 1e-10).all()
    assert (W[-1] < 0.05 * W[0]).all()
    assert lt.corollary2_rate(B, V, 1.0) == pytest.approx(top.gap / torch.linalg.svdvals(B).max().item())


def test_stability_bound_shape_and_errors():
    b = lt.stability_bound(torch.tensor([10.0, 1000.0], dtype=F64), 1.0, 0.0, 2.0)
    assert torch.allclose(b, 2 * lt.concentration_rate(torch.tensor([10.0, 1000.0], dtype=F64)) * (math.e**2 - 1))
    with pytest.raises(ValueError, match="C0 <= C1"):
        lt.stability_bound(10.0, 1.0, 2.0, 1.0)


def test_max_admissible_p():
    assert [lt.max_admissible_p(k) for k in (1, 2, 3, 7)] == [0.5, 1.0, 1.0, 1.0]
    with pytest.raises(ValueError):
        lt.max_admissible_p(0)


def test_float32_and_dtype_follow_input():
    x0 = init.uniform_sphere(1, 5, 3, generator=torch.Generator().manual_seed(9), dtype=torch.float32)
    x = lt.zero_temperature_exact(x0, B3.float(), V3.float(), [0.0, 1.0], dt=0.01)
    assert x.dtype == torch.float32
    assert lt.pi_projection(x0, B3, V3).dtype == torch.float32


# ----------------------------------------------------------------------------- Lemma 5: the softmax mean on S^2


def random_mixture(g):
    w = torch.rand(3, generator=g, dtype=F64) + 0.2
    mu = torch.randn(3, 3, generator=g, dtype=F64)
    return (w / w.sum()).tolist(), (mu / mu.norm(dim=-1, keepdim=True)).tolist(), [0.0, 3.0, 12.0]


@pytest.mark.parametrize("beta", [0.5, 7.0, 300.0, 1e5])
def test_quadrature_matches_vmf_mixture_closed_form(beta):
    g = torch.Generator().manual_seed(11)
    B = torch.randn(3, 3, generator=g, dtype=F64) + 2 * torch.eye(3, dtype=F64)
    w, mu, k = random_mixture(g)
    x = init.uniform_sphere(1, 5, 3, generator=g)[0]
    quad = lt.softmax_mean_quadrature(x, B, beta, lambda Y: lt.vmf_mixture_density(Y, w, mu, k))
    closed = lt.vmf_mixture_softmax_mean(x, B, beta, w, mu, k)
    assert torch.allclose(quad, closed, atol=1e-12, rtol=0)
    # the softmax mean lies inside the ball and approaches y* as beta grows
    assert (closed.norm(dim=-1) < 1).all()


def test_softmax_mean_against_a_sampled_law():
    # a third method: the softmax average over 2e5 i.i.d. draws of the uniform law (Monte Carlo) at beta = 5
    g = torch.Generator().manual_seed(12)
    Y = init.uniform_sphere(1, 200000, 3, generator=g)[0]
    x = torch.tensor([[0.6, 0.0, 0.8]], dtype=F64)
    w = torch.softmax(5.0 * (x @ B3 @ Y.T), dim=-1)
    mc = w @ Y
    quad = lt.softmax_mean_quadrature(x, B3, 5.0, lambda P: torch.ones(P.shape[:-1], dtype=P.dtype))
    assert (mc - quad).norm() < 0.01  # Monte Carlo error about 0.5 / sqrt(effective sample size)
    assert torch.allclose(quad, lt.vmf_mixture_softmax_mean(x, B3, 5.0, [1.0], [[1.0, 0, 0]], [0.0]), atol=1e-13)


def test_vmf_density_integrates_to_one():
    w, mu, k = random_mixture(torch.Generator().manual_seed(13))
    z, wz = (torch.as_tensor(a, dtype=F64) for a in __import__("numpy").polynomial.legendre.leggauss(200))
    phi = torch.arange(256, dtype=F64) * 2 * math.pi / 256
    r = torch.sqrt(1 - z**2)
    Y = torch.stack([r[:, None] * torch.cos(phi), r[:, None] * torch.sin(phi), z[:, None].expand(-1, 256)], -1)
    total = (lt.vmf_mixture_density(Y, w, mu, k) * wz[:, None]).sum() * 2 * math.pi / 256
    assert abs(total.item() - 1) < 1e-10


def test_vmf_density_floor_is_a_lower_bound_exact_for_one_component():
    # one component: its minimum, at the antipode of its centre; a mixture: below every sampled value
    mu = [[0.0, 0.6, 0.8]]
    exact = lt.vmf_mixture_density(-torch.tensor(mu[0], dtype=F64), [1.0], mu, [3.0]).item()
    assert lt.vmf_mixture_density_floor([1.0], mu, [3.0]) == pytest.approx(exact, rel=1e-14)
    w, mu, k = random_mixture(torch.Generator().manual_seed(15))
    Y = init.uniform_sphere(1, 20000, 3, generator=torch.Generator().manual_seed(16))[0]
    sampled = lt.vmf_mixture_density(Y, w, mu, k).min().item()
    assert 0 < lt.vmf_mixture_density_floor(w, mu, k) <= sampled
    with pytest.raises(ValueError, match="sum to 1"):
        lt.vmf_mixture_density_floor([0.5, 0.4], [[1.0, 0, 0], [0, 1.0, 0]], [0.0, 1.0])


def test_vmf_mean_length_branches_and_limits():
    k = torch.tensor([1e-4, 5e-4, 2e-3, 0.5, 3.0], dtype=F64)
    direct = 1 / torch.tanh(k) - 1 / k
    assert torch.allclose(lt.vmf_mean_length(k)[2:], direct[2:], atol=1e-12)
    assert torch.allclose(lt.vmf_mean_length(k)[:2], k[:2] / 3, rtol=1e-6)  # the series branch
    big = lt.vmf_mean_length(torch.tensor([1e3, 1e6], dtype=F64))
    assert torch.allclose(1 - big, torch.tensor([1e-3, 1e-6], dtype=F64), rtol=1e-9)  # 1 - A ~ 1/kappa, no cancellation
    assert (lt.vmf_mean_length(torch.linspace(0, 50, 101, dtype=F64)).diff() > 0).all()


def test_capped_uniform_closed_form_against_quadrature():
    x = torch.tensor([[0.0, 0.6, 0.8]], dtype=F64)
    ys = lt.maximiser(x, B3)
    r0 = 0.4
    kappa = (x @ B3).norm().item()
    for beta in (0.3, 10.0, 1e3, 1e5):
        quad = lt.softmax_mean_quadrature(x, B3, beta, lambda Y: lt.capped_uniform_density(Y, ys[0], r0), breaks=[1 - math.cos(r0)])
        err = (quad - ys).norm().item()
        assert err == pytest.approx(lt.capped_uniform_softmax_error(torch.tensor([kappa * beta]), r0).item(), rel=1e-7)
    assert err - (1 - math.cos(r0)) == pytest.approx(1 / (kappa * beta), rel=1e-3)  # no convergence to y* without Assumption 3


def test_leading_term_of_the_laplace_error():
    # beta |m - y*| |B^T x| -> sqrt(1 + |grad_S log f(y*)|^2): derived, checked against the closed form
    g = torch.Generator().manual_seed(14)
    B = torch.randn(3, 3, generator=g, dtype=F64) + 2 * torch.eye(3, dtype=F64)
    w, mu, k = random_mixture(g)
    x = init.uniform_sphere(1, 6, 3, generator=g)[0]
    Y = lt.maximiser(x, B).requires_grad_(True)
    torch.log(lt.vmf_mixture_density(Y, w, mu, k)).sum().backward()
    for beta, tol in ((1e3, 0.1), (1e5, 1e-3)):
        err = (lt.vmf_mixture_softmax_mean(x, B, beta, w, mu, k) - lt.maximiser(x, B)).norm(dim=-1)
        assert torch.allclose(err / lt.laplace_leading_error(x, B, beta, Y.grad), torch.ones(6, dtype=F64), atol=tol)


def test_laplace_bad_input():
    x = torch.tensor([[0.0, 0.0, 1.0]], dtype=F64)
    with pytest.raises(ValueError, match="unit vectors"):
        lt.maximiser(torch.tensor([[0.0, 0.0, 2.0]], dtype=F64), B3)
    with pytest.raises(ValueError, match="undefined"):
        lt.maximiser(x, D(1, 1, 0))
    with pytest.raises(ValueError, match="sum to 1"):
        lt.vmf_mixture_softmax_mean(x, B3, 1.0, [0.5, 0.4], [[1.0, 0, 0], [0, 1.0, 0]], [0.0, 1.0])
    with pytest.raises(ValueError, match="kappas"):
        lt.vmf_mixture_density(x, [1.0], [[1.0, 0, 0]], [-1.0])
    with pytest.raises(ValueError, match="radius"):
        lt.capped_uniform_softmax_error(torch.tensor([1.0]), 4.0)
    with pytest.raises(ValueError, match="density must return"):
        lt.softmax_mean_quadrature(x, B3, 1.0, lambda Y: -torch.ones(Y.shape[:-1], dtype=Y.dtype))
    with pytest.raises(ValueError, match="d = 3"):
        lt.softmax_mean_quadrature(torch.tensor([[1.0, 0.0]], dtype=F64), torch.eye(2, dtype=F64), 1.0, lambda Y: Y[..., 0])
    with pytest.raises(ValueError, match="breaks"):
        lt.softmax_mean_quadrature(x, B3, 1.0, lambda Y: torch.ones(Y.shape[:-1], dtype=Y.dtype), breaks=[2.5])


# ----------------------------------------------------------------------------- App. C.3 and App. B


def test_energies_against_a_direct_sum():
    g = torch.Generator().manual_seed(15)
    X = init.uniform_sphere(2, 9, 3, generator=g)
    S = torch.randn(3, 3, generator=g, dtype=F64)
    direct = torch.exp(3.0 * X @ S @ X.transpose(-1, -2)).mean((-1, -2)).log()
    assert torch.allclose(lt.log_energy(X, S, 3.0), direct, atol=1e-12)
    # two poles on an eigenvector: the closed form equals the energy of explicit tokens, also at huge beta
    v = torch.tensor([0.0, 0.0, 1.0], dtype=F64)
    P = torch.cat([v.expand(7, 3), -v.expand(3, 3)])
    for beta in (0.5, 1e4):
        for lam, Bm in ((2.0, D(0.5, 1, 2)), (-2.0, D(0, -1, -2))):
            assert lt.log_two_pole_energy(torch.tensor(0.7, dtype=F64), lam, beta).item() == pytest.approx(lt.log_energy(P, Bm, beta).item(), rel=1e-12)
    assert math.isfinite(lt.log_two_pole_energy(torch.tensor(1.0), -3.0, 1e5).item())


def test_consensus_rates_against_the_jacobian_of_eq1():
    # the linearisation, derived by hand, against a finite-difference Jacobian of the particle model at consensus
    g = torch.Generator().manual_seed(16)
    Q = init.random_orthogonal(3, generator=g)
    V = Q @ D(-1.5, 0.5, 2.0) @ Q.T
    V = (V + V.T) / 2
    B = torch.randn(3, 3, generator=g, dtype=F64) + 2 * torch.eye(3, dtype=F64)
    lam, U = torch.linalg.eigh(V)
    for i in range(3):
        X = U[:, i].expand(4, 3).clone()
        J = models.tangent_jacobian(models.low_temperature(B, V, 7.0), X, mode="fd")
        got = sorted(torch.linalg.eigvals(J).real.tolist())
        r = lt.consensus_growth_rates(V, i)
        want = sorted([r["spread"]] * 6 + [rate for _, rate in r["modes"]])
        assert got == pytest.approx(want, abs=1e-6)
        assert r["stable"] == (i == 2)


def test_consensus_rates_bad_input():
    with pytest.raises(ValueError, match="index"):
        lt.consensus_growth_rates(V3, 3)
    with pytest.raises(ValueError, match="simple"):
        lt.consensus_growth_rates(D(1, 1, 2), 0)
    with pytest.raises(ValueError, match="symmetric"):
        lt.consensus_growth_rates(torch.tensor([[1.0, 2.0], [0.0, 1.0]], dtype=F64), 0)
