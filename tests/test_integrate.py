"""The simulation core checked against closed forms, theorems and second methods (issue 10)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from companion import init, metrics, models, simulate
from companion.attention import attention_field
from companion.theory.consensus import consensus_modal_masses, consensus_solution

F64 = torch.float64


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def sym(d: int, seed: int, spread: float = 1.0) -> torch.Tensor:
    G = torch.randn(d, d, generator=gen(seed), dtype=F64)
    return spread * (G + G.T) / 2


# --------------------------------------------------------------------------- consensus manifold
@pytest.mark.parametrize("normalization", ["softmax", "usa"])
def test_consensus_manifold_matches_closed_form(normalization):
    d, n = 4, 6
    V = sym(d, 1)
    x0 = init.uniform_sphere(1, 1, d, generator=gen(2))[0, 0]
    X0 = x0.expand(1, n, d).clone()
    ts = torch.linspace(0, 2.0, 9, dtype=F64)
    # softmax weights are uniform on the manifold for any A; USA weights are e^{beta <A x, x>},
    # a time change, unless A = 0
    A = sym(d, 3) if normalization == "softmax" else torch.zeros(d, d, dtype=F64)
    sol = simulate(models.Sphere(A=A, V=V, beta=1.5, normalization=normalization), X0, 2.0, dt=0.01, save_at=ts)
    exact = consensus_solution(x0, V, ts)  # (T, d)
    err = (sol.xs - exact[:, None, None, :]).abs().max().item()
    assert err < 1e-8
    lam, E = torch.linalg.eigh(V)
    p = consensus_modal_masses((E.T @ x0) ** 2, lam, ts)
    m = metrics.modal_masses(sol.xs[:, 0], E)
    assert (m - p).abs().max().item() < 1e-8


# --------------------------------------------------------------------------- convergence order
def _order(method: str, dts: list[float]) -> float:
    x0 = init.uniform_sphere(1, 5, 3, generator=gen(4))
    model = models.Sphere(A=sym(3, 5), V=sym(3, 6), beta=1.0)
    ref = simulate(model, x0, 1.0, method="dopri5", rtol=1e-13, atol=1e-14).final
    errs = [(simulate(model, x0, 1.0, method=method, dt=h).final - ref).abs().max().item() for h in dts]
    slope, _ = np.polyfit(np.log(dts), np.log(errs), 1)
    return slope


def test_rk4_is_fourth_order():
    assert 3.6 < _order("rk4", [0.2, 0.1, 0.05, 0.025]) < 4.4


def test_euler_is_first_order():
    assert 0.85 < _order("euler", [0.02, 0.01, 0.005]) < 1.15


def test_dopri5_meets_its_tolerance_with_fewer_evaluations_than_rk4():
    x0 = init.uniform_sphere(3, 8, 3, generator=gen(7))
    model = models.Sphere(A=sym(3, 8), V=sym(3, 9), beta=2.0)
    ref = simulate(model, x0, 3.0, method="rk4", dt=1e-3).final
    sol = simulate(model, x0, 3.0, method="dopri5", rtol=1e-8, atol=1e-10)
    assert (sol.final - ref).abs().max().item() < 1e-6
    assert sol.stats["evaluations"] < 3000 * 4


# --------------------------------------------------------------------------- structural properties
def test_permutation_equivariance():
    X = init.uniform_sphere(2, 7, 3, generator=gen(10))
    model = models.Sphere(A=sym(3, 11), V=sym(3, 12), beta=3.0)
    perm = torch.randperm(7, generator=gen(13))
    f = model.cast(X).vector_field
    assert torch.allclose(f(0.0, X)[:, perm], f(0.0, X[:, perm]), atol=1e-14)


def test_sphere_models_stay_on_the_sphere():
    X = init.uniform_sphere(4, 20, 3, generator=gen(14))
    for method in ("euler", "rk4", "dopri5"):
        sol = simulate(models.Sphere(A=sym(3, 15), V=sym(3, 16), beta=4.0), X, 5.0, method=method, dt=0.1, save_at=torch.linspace(0, 5, 6))
        assert (sol.xs.norm(dim=-1) - 1).abs().max().item() < 1e-12


def test_batched_trials_equal_one_by_one():
    X = init.uniform_sphere(3, 10, 3, generator=gen(17))
    A = torch.stack([sym(3, s) for s in (18, 19, 20)])  # per-trial parameters
    V = sym(3, 21)
    batched = simulate(models.Sphere(A=A, V=V, beta=1.0), X, 2.0, dt=0.05).final
    for t in range(3):
        single = simulate(models.Sphere(A=A[t], V=V, beta=1.0), X[t : t + 1], 2.0, dt=0.05).final
        assert torch.allclose(batched[t : t + 1], single, atol=1e-13, rtol=0)


def test_same_seed_same_numbers():
    a = simulate(models.metastable(2.0), init.uniform_sphere(2, 9, 3, generator=gen(22)), 1.0).final
    b = simulate(models.metastable(2.0), init.uniform_sphere(2, 9, 3, generator=gen(22)), 1.0).final
    assert torch.equal(a, b)


def test_interaction_energy_never_decreases_along_paper_c_flow():
    V = torch.diag(torch.tensor([1.0, 0.4, -0.7], dtype=F64))
    X = init.uniform_sphere(5, 12, 3, generator=gen(23))
    ts = torch.linspace(0, 6, 121, dtype=F64)
    sol = simulate(models.spectral(V, 1.3), X, 6.0, dt=0.01, save_at=ts)
    E = torch.stack([metrics.interaction_energy(x, V, 1.3) for x in sol.xs])  # (T, trials)
    assert (E[1:] - E[:-1]).min().item() > -1e-10 * E.abs().max().item()


def test_zero_temperature_flow_converges_to_projection():
    # M = V B^T symmetric with a simple top eigenvalue: Pi(x) = P_E x / |P_E x|.
    V = torch.diag(torch.tensor([2.0, 1.0, -0.5], dtype=F64))
    B = torch.diag(torch.tensor([1.0, 0.8, 1.2], dtype=F64))
    M = V @ B.T
    lam, E = torch.linalg.eigh(M)
    top = E[:, -1:]
    X = init.uniform_sphere(2, 30, 3, generator=gen(24))
    sol = simulate(models.ZeroTemperature(B=B, V=V), X, 40.0, dt=0.05)
    target = metrics.project_to_subspace(X, top)
    assert (sol.final - target).abs().max().item() < 1e-8


def test_rescaled_dynamics_is_the_change_of_variables_of_eq6():
    # z(t) = e^{-tV} x(t): integrate eq (6) and eq (7) independently and compare.
    d = 3
    A, V = sym(d, 25, 0.5), sym(d, 26, 0.5)
    X = init.ball(2, 6, d, 1.0, generator=gen(27))
    ts = torch.linspace(0, 1.5, 4, dtype=F64)
    x = simulate(models.Euclidean(A=A, V=V), X, 1.5, dt=0.005, save_at=ts).xs
    z = simulate(models.Rescaled(A=A, V=V), X, 1.5, dt=0.005, save_at=ts).xs
    Einv = torch.linalg.matrix_exp(-ts[:, None, None] * V)  # (T, d, d)
    z_from_x = torch.einsum("tij,tbnj->tbni", Einv, x)
    assert (z - z_from_x).abs().max().item() < 1e-9


def test_layer_map_converges_to_the_continuous_flow_at_rate_one_over_depth():
    X = init.uniform_sphere(1, 6, 3, generator=gen(28))
    A, V = sym(3, 29), sym(3, 30)
    ref = simulate(models.Sphere(A=A, V=V), X, 1.0, method="rk4", dt=1e-3).final
    errs = []
    for L in (50, 100, 200):
        out = models.iterate_layers(models.LayerMap(A=A, V=V, depth=L), X)[-1]
        errs.append((out - ref).abs().max().item())
    slope = np.polyfit(np.log([50, 100, 200]), np.log(errs), 1)[0]
    assert -1.15 < slope < -0.85


def test_random_adapters_have_the_assumed_moments():
    # E dV = 0 and E |dV|_F^2 = eta^2 sum_a s_a^2 (E|u|^2 = E|v|^2 = 1 for u ~ N(0, I/d)).
    s = torch.tensor([1.0, 0.5, 2.0], dtype=F64)
    dV = models.random_value_adapters(64, 5, 3, s, 0.7, trials=200, generator=gen(31))
    fro2 = (dV**2).sum(dim=(-1, -2)).mean().item()
    expected = 0.7**2 * (s**2).sum().item()
    assert abs(fro2 / expected - 1) < 0.05
    assert dV.mean(dim=(0, 1)).abs().max().item() < 0.05


# --------------------------------------------------------------------------- field evaluation
def test_blocked_and_sdpa_equal_dense():
    X = init.uniform_sphere(3, 257, 4, generator=gen(32))
    A, V = sym(4, 33), sym(4, 34)
    dense = attention_field(X, A, V, 2.5, backend="dense")
    blocked = attention_field(X, A, V, 2.5, backend="blocked", block_elements=3 * 257 * 10)
    sdpa = attention_field(X, A, V, 2.5, backend="sdpa")
    assert torch.allclose(blocked, dense, atol=1e-13, rtol=0)
    assert torch.allclose(sdpa, dense, atol=1e-12, rtol=0)
    usa_d = attention_field(X, A, V, 2.5, normalization="usa", backend="dense")
    usa_b = attention_field(X, A, V, 2.5, normalization="usa", backend="blocked", block_elements=3 * 257 * 7)
    assert torch.allclose(usa_b, usa_d, atol=1e-12, rtol=0)


def test_softmax_field_matches_a_naive_loop():
    X = init.uniform_sphere(1, 5, 3, generator=gen(35))[0]
    A, V = sym(3, 36), sym(3, 37)
    beta = 1.7
    out = attention_field(X, A, V, beta)[0]
    for i in range(5):
        w = torch.tensor([math.exp(beta * float((A @ X[i]) @ X[j])) for j in range(5)], dtype=F64)
        w = w / w.sum()
        assert torch.allclose(out[i], sum(w[j] * (V @ X[j]) for j in range(5)), atol=1e-14)


@pytest.mark.parametrize("beta", [1e2, 1e3, 1e4])
def test_large_beta_is_finite(beta):
    X = init.uniform_sphere(2, 50, 3, generator=gen(38), dtype=torch.float32)
    sol = simulate(models.Sphere(beta=beta), X, 0.5, dt=0.01)
    assert torch.isfinite(sol.xs).all()
    # at large beta each token attends to its nearest neighbours: the field is bounded by |V| = 1
    assert attention_field(X, beta=beta).norm(dim=-1).max().item() <= 1 + 1e-5


def test_usa_overflow_is_a_clear_error():
    X = init.uniform_sphere(1, 4, 3, generator=gen(39), dtype=torch.float32)
    with pytest.raises(ValueError, match="too large for the unnormalised"):
        attention_field(X, beta=1e4, normalization="usa")


@pytest.mark.parametrize("dtype, params", [(torch.float32, F64), (F64, torch.float32)])
def test_dtype_follows_the_input_not_the_parameters(dtype, params):
    X = init.uniform_sphere(1, 4, 3, generator=gen(40), dtype=dtype)
    sol = simulate(models.Sphere(A=sym(3, 41).to(params), V=sym(3, 42).to(params)), X, 0.3, method="rk4", dt=0.01)
    assert sol.xs.dtype == dtype and sol.final.dtype == dtype
    # the same run in float64 throughout, to the precision of the coarser of the two dtypes
    ref = simulate(models.Sphere(A=sym(3, 41), V=sym(3, 42)), X.to(F64), 0.3, method="rk4", dt=0.01)
    tol = 1e-5 if torch.float32 in (dtype, params) else 1e-12
    assert (sol.xs.to(F64) - ref.xs).abs().max().item() < tol


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="no CUDA device: without a second device the output cannot be seen to follow the input")
def test_device_follows_the_input_on_cuda():
    """Tokens on CUDA, parameters on the CPU: the solution is on CUDA and equals the CPU run."""
    X = init.uniform_sphere(1, 4, 3, generator=gen(40), dtype=F64)
    model = models.Sphere(A=sym(3, 41), V=sym(3, 42))
    on_cpu = simulate(model, X, 0.3, method="rk4", dt=0.01)
    on_gpu = simulate(model, X.cuda(), 0.3, method="rk4", dt=0.01)
    assert on_gpu.xs.device.type == "cuda" and on_gpu.final.device.type == "cuda"
    assert (on_gpu.xs.cpu() - on_cpu.xs).abs().max().item() < 1e-12


# --------------------------------------------------------------------------- metrics
def test_wasserstein_exact_matches_a_one_dimensional_closed_form():
    # In 1-D, W_p between equal-size empirical measures pairs sorted samples.
    x = torch.rand(1, 40, 1, generator=gen(43), dtype=F64)
    y = torch.rand(1, 40, 1, generator=gen(44), dtype=F64) * 2
    closed = ((x.sort(dim=1).values - y.sort(dim=1).values).abs() ** 2).mean().sqrt().item()
    assert abs(metrics.wasserstein(x, y, 2).item() - closed) < 1e-12


def test_geodesic_cost_and_sliced_behave():
    X = init.uniform_sphere(1, 30, 3, generator=gen(45))
    Y = init.uniform_sphere(1, 30, 3, generator=gen(46))
    chord = metrics.wasserstein(X, Y, 1, cost="chordal").item()
    geo = metrics.wasserstein(X, Y, 1, cost="geodesic").item()
    assert chord <= geo <= chord * math.pi / 2 + 1e-12  # chord <= arc <= (pi/2) chord
    sliced = metrics.wasserstein(X, Y, 2, solver="sliced", n_projections=500).item()
    assert sliced <= metrics.wasserstein(X, Y, 2).item() + 1e-9  # sliced W2 <= W2


def test_cluster_count_rho_min_and_subspace_distance():
    e1 = torch.tensor([1.0, 0.0, 0.0], dtype=F64)
    X = torch.stack([e1, e1, -e1, -e1])[None]
    assert metrics.cluster_count(X, 0.1).item() == 2
    assert metrics.rho_min(X).item() == -1.0
    assert metrics.distance_to_subspace(X, e1).abs().max().item() == 0.0


def test_cluster_count_linkage_hand_cases():
    # trial 0: a chain 0, 0.08, 0.16 (each link < 0.1: one cluster) and a lone token at 1;
    # trial 1: four tokens pairwise 0.2 apart: four clusters
    X = torch.tensor([[[0.0, 0.0], [0.08, 0.0], [0.16, 0.0], [1.0, 0.0]],
                      [[0.0, 0.0], [0.2, 0.0], [0.4, 0.0], [0.6, 0.0]]], dtype=F64)
    assert metrics.cluster_count(X, 0.1).tolist() == [2, 4]
    assert metrics.cluster_count(X, 0.25).tolist() == [2, 1]
    (c0, w0), (c1, w1) = metrics.cluster_centres(X, 0.1)
    assert c0.tolist() == [[0.08, 0.0], [1.0, 0.0]] and w0.tolist() == [0.75, 0.25]
    assert c1.shape == (4, 2) and w1.tolist() == [0.25] * 4


def test_cluster_count_density_hand_cases():
    # 100 angles: 50 at 1.0, 30 at 4.0, 5 at 5.5 and 15 spread one per bin (256 bins: the uniform
    # count per bin is 100 / 256, the threshold 4 x 100 / 256 = 1.6 tokens)
    spread = torch.arange(15, dtype=F64) * (2 * math.pi / 15) + 0.2
    th = torch.cat([torch.full((50,), 1.0), torch.full((30,), 4.0), torch.full((5,), 5.5), spread]).to(F64)[None, :, None]
    assert metrics.cluster_count(th, criterion="density").tolist() == [3]
    assert metrics.cluster_count(th, criterion="density", min_mass=0.1).tolist() == [2]  # 5 % is too light
    assert metrics.cluster_count(th, criterion="density", level=100.0).tolist() == [1]  # above 39 tokens: the 50 only
    (c, w), = metrics.cluster_centres(th, criterion="density")
    assert torch.allclose(torch.as_tensor(c[:, 0]), torch.tensor([1.0, 4.0, 5.5], dtype=F64), atol=1e-12)
    assert w.tolist() == [0.5, 0.3, 0.05]
    # a cluster across 0 = 2 pi is one cluster with its circular mean at 0
    wrap = torch.tensor([-0.004, -0.002, 0.002, 0.004], dtype=F64).repeat(5)[None, :, None]
    (c, w), = metrics.cluster_centres(wrap, criterion="density")
    assert c.shape == (1, 1) and min(c[0, 0], 2 * math.pi - c[0, 0]) < 1e-12 and w.tolist() == [1.0]
    # a uniform cloud has no cluster at all, whatever n
    assert metrics.cluster_count(init.uniform_angles(3, 20000, generator=gen(5)), criterion="density").tolist() == [0, 0, 0]


class _Decay:
    """x' = -x, written from the protocol alone (no companion base class): x(t) = x0 e^{-t}."""

    on_sphere = False

    def validate(self, X):
        return X

    def cast(self, X):
        return self

    def vector_field(self, t, X):
        return -X


def test_every_model_class_follows_the_protocol():
    from companion.circle import Circle
    from companion.models import ModalModel

    I2 = torch.eye(2, dtype=F64)
    every = [models.Euclidean(), models.Rescaled(), models.Sphere(), models.ZeroTemperature(B=I2, V=I2),
             models.ScaleCappedRescaled(A=I2, V=I2), Circle(1.0), ModalModel(torch.ones(2, dtype=F64)), _Decay()]
    for m in every:
        assert isinstance(m, models.Model), type(m).__name__
        models.check_model(m)
    x0 = torch.ones(1, 1, 1, dtype=F64)
    assert simulate(_Decay(), x0, 1.0, dt=0.01).final.item() == pytest.approx(math.exp(-1.0), rel=1e-9)


def test_simulate_names_what_a_model_lacks():
    class NoCast:
        on_sphere = False

        def validate(self, X):
            return X

        def vector_field(self, t, X):
            return -X

    x0 = torch.ones(1, 1, 1, dtype=F64)
    with pytest.raises(TypeError, match=r"NoCast lacks cast\(X\)$"):
        simulate(NoCast(), x0, 1.0)
    assert not isinstance(NoCast(), models.Model)
    with pytest.raises(TypeError, match=r"lacks on_sphere, validate\(X\), cast\(X\), vector_field\(t, X\)"):
        simulate(lambda t, X: -X, x0, 1.0)


def test_model_field_skips_checks_but_not_correctness():
    # the integrators' path (model.field, unchecked) equals the public, checked attention_field, with
    # A is V (one product) or not, and with parameters of another dtype (cast, not a torch error)
    from companion.attention import attention_field

    g = torch.Generator().manual_seed(21)
    X = torch.nn.functional.normalize(torch.randn(3, 20, 4, generator=g, dtype=torch.float64), dim=-1)
    V = torch.randn(4, 4, generator=g, dtype=torch.float64)
    V = V + V.T
    A = torch.randn(4, 4, generator=g, dtype=torch.float64)
    shared = models.Sphere(A=V, V=V, beta=2.0)
    assert shared.cast(X).A is shared.cast(X).V
    assert torch.equal(shared.field(X), attention_field(X, V, V, 2.0))
    assert torch.allclose(models.Sphere(A=A, V=V, beta=2.0).field(X), attention_field(X, A, V, 2.0), rtol=0, atol=1e-14)
    X32 = X.float()
    assert models.Sphere(A=A, V=V, beta=2.0).field(X32).dtype == torch.float32
    with pytest.raises(ValueError, match="V"):
        models.Sphere(V=torch.eye(3), beta=1.0).field(X)
