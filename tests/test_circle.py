"""The circle solver: Fourier/Bessel field (both backends) against the pairwise field, model protocol, clusters."""
import math

import numpy as np
import pytest
import scipy.special
import torch

import companion._circle_grid as G
import companion.circle as C
from companion.circle import (
    Circle,
    circle_field,
    circle_field_dense,
    circle_field_fourier,
    circle_moments,
    circular_distance,
    fourier_truncation,
    to_angles,
    to_points,
)
from companion.init import uniform_angles
from companion.metrics import cluster_centres, cluster_count


pytestmark = pytest.mark.usefixtures("one_thread")


def _rel(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def _clustered(n, k, spread, g):
    idx = torch.randint(0, k, (1, n, 1), generator=g)
    return idx * (2 * math.pi / k) + 0.3 + spread * torch.randn(1, n, 1, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("normalization", ["usa", "softmax"])
@pytest.mark.parametrize("beta", [0.1, 1.0, 5.0, 20.0, 100.0])
@pytest.mark.parametrize("n", [7, 60, 300, 1200])
def test_fourier_equals_dense_uniform(beta, n, normalization):
    g = torch.Generator().manual_seed(int(10 * beta) + n)
    th = uniform_angles(2, n, generator=g)
    assert _rel(circle_field_fourier(th, beta, normalization), circle_field_dense(th, beta, normalization)) < 1e-12


@pytest.mark.parametrize("normalization", ["usa", "softmax"])
@pytest.mark.parametrize("beta", [0.5, 5.0, 50.0])
def test_fourier_equals_dense_clustered_and_spread_over_chunks(beta, normalization, monkeypatch):
    # small chunks and no kept powers exercise the blocked two-pass path
    import companion.circle as C

    monkeypatch.setattr(C, "_CHUNK", 97)
    monkeypatch.setattr(C, "_KEEP", 0)
    g = torch.Generator().manual_seed(3)
    th = _clustered(1000, 3, 0.05, g)
    assert _rel(circle_field_fourier(th, beta, normalization), circle_field_dense(th, beta, normalization)) < 1e-12


@pytest.mark.parametrize("normalization", ["usa", "softmax"])
def test_kept_and_recomputed_powers_give_the_same_field(normalization, monkeypatch):
    # the second pass either reuses the first pass's powers or recomputes them: same blocks, same bits
    import companion.circle as C

    monkeypatch.setattr(C, "_CHUNK", 97)
    th = uniform_angles(3, 500, generator=torch.Generator().manual_seed(11))
    kept = circle_field_fourier(th, 5.0, normalization)
    monkeypatch.setattr(C, "_KEEP", 0)
    assert torch.equal(kept, circle_field_fourier(th, 5.0, normalization))


def test_model_field_equals_the_checked_function():
    th = uniform_angles(2, 300, generator=torch.Generator().manual_seed(12))
    for norm in ("usa", "softmax"):
        assert torch.equal(Circle(3.0, norm).vector_field(0.0, th), circle_field_fourier(th, 3.0, norm))
    with pytest.raises(ValueError, match="X"):
        Circle(3.0).vector_field(0.0, torch.zeros(2, 3, 2, dtype=torch.float64))


@pytest.mark.parametrize("normalization", ["usa", "softmax"])
def test_far_apart_pairs_absolute_error(normalization):
    # two far-apart tokens at beta = 100 interact with weight e^{-100 (1 - cos d)}: the series
    # resolves the field only to ~eps times the kernel's scale (e^beta for USA, 1 for SA)
    beta = 100.0
    th = uniform_angles(4, 2, generator=torch.Generator().manual_seed(9))
    err = (circle_field_fourier(th, beta, normalization) - circle_field_dense(th, beta, normalization)).abs().max().item()
    scale = math.exp(beta) if normalization == "usa" else 1.0
    assert err < 1e-13 * scale


def test_dense_matches_the_vector_form_on_the_plane():
    # independent route: project sum_j w_ij x_j on the tangent (-sin, cos) of x_i
    g = torch.Generator().manual_seed(0)
    th = uniform_angles(2, 40, generator=g)
    X = to_points(th)
    beta = 2.5
    E = torch.exp(beta * X @ X.transpose(-1, -2))
    tang = torch.cat([-torch.sin(th), torch.cos(th)], dim=-1)
    for norm, w in [("usa", E / 40), ("softmax", E / E.sum(-1, keepdim=True))]:
        ref = (tang * (w @ X)).sum(-1, keepdim=True)
        assert torch.allclose(circle_field_dense(th, beta, norm), ref, rtol=1e-12, atol=1e-12)


def test_truncation_bound_and_tolerance():
    for beta in [0.3, 5.0, 40.0]:
        K = fourier_truncation(beta)
        k = np.arange(K + 1, 4 * K + 60)
        tail = (2 / beta) * (k * scipy.special.ive(k, beta)).sum() / scipy.special.ive(0, beta)
        assert tail <= 1e-16
        # one mode fewer would break the bound
        k2 = np.arange(K, 4 * K + 60)
        t2 = max((2 / beta) * (k2 * scipy.special.ive(k2, beta)).sum(), 2 * scipy.special.ive(k2, beta).sum())
        assert K == 1 or t2 / scipy.special.ive(0, beta) > 1e-16
    assert fourier_truncation(5.0, 1e-6) < fourier_truncation(5.0, 1e-16)


def test_truncated_series_error_is_the_dropped_tail():
    # with too few modes the error is real: the check can fail
    g = torch.Generator().manual_seed(1)
    th = _clustered(500, 2, 0.01, g)
    ref = circle_field_dense(th, 20.0)
    assert _rel(circle_field_fourier(th, 20.0, K=5), ref) > 1e-3


def test_moments_closed_form():
    th = torch.tensor([[[0.0], [math.pi]]], dtype=torch.float64)
    m = circle_moments(th, 4)
    expected = torch.tensor([1, 0, 1, 0, 1], dtype=torch.complex128)
    assert torch.allclose(m[0], expected, atol=1e-15)
    g = torch.Generator().manual_seed(2)
    th = uniform_angles(2, 333, generator=g)
    m = circle_moments(th, 30)
    ref = torch.exp(1j * torch.arange(31, dtype=torch.float64) * th).mean(1)
    assert torch.allclose(m, ref, atol=1e-13)


def test_two_tokens_closed_form():
    d = 0.7
    th = torch.tensor([[[0.0], [d]]], dtype=torch.float64)
    beta = 3.0
    v = circle_field_fourier(th, beta, "usa")[0, :, 0]
    expected = math.exp(beta * math.cos(d)) * math.sin(d) / 2  # token 0 moves towards token 1
    assert v[0].item() == pytest.approx(expected, rel=1e-13)
    assert v[1].item() == pytest.approx(-expected, rel=1e-13)


def test_symmetric_configuration_is_stationary():
    th = (torch.arange(4, dtype=torch.float64) * math.pi / 2 + 0.2).reshape(1, 4, 1)
    for norm in ["usa", "softmax"]:
        v = circle_field_fourier(th, 7.0, norm)
        assert v.abs().max().item() < 1e-12 * math.exp(7.0)


def test_float32_follows_input():
    th = uniform_angles(1, 100, generator=torch.Generator().manual_seed(0), dtype=torch.float32)
    v = circle_field_fourier(th, 2.0)
    assert v.dtype == torch.float32
    assert _rel(v.double(), circle_field_dense(th.double(), 2.0)) < 1e-4


def test_model_protocol_and_euler_step():
    m = Circle(4.0, "softmax")
    assert m.on_sphere is False
    th = uniform_angles(2, 50, generator=torch.Generator().manual_seed(5))
    assert m.validate(th[0]).shape == (1, 50, 1)
    dense = Circle(4.0, "softmax", backend="dense")
    assert torch.allclose(m.vector_field(0.0, th), dense.vector_field(0.0, th), rtol=0, atol=1e-12)


def test_bad_input_raises():
    th = torch.zeros(1, 3, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match="normalization"):
        circle_field(th, 1.0, "bogus")
    with pytest.raises(ValueError, match="beta"):
        circle_field(th, -1.0)
    with pytest.raises(ValueError, match="beta"):
        circle_field(th, 800.0, "usa")
    with pytest.raises(ValueError, match=r"\(trials, n, 1\)"):
        circle_field(torch.zeros(1, 3, 2), 1.0)
    with pytest.raises(TypeError):
        circle_field(np.zeros((1, 3, 1)), 1.0)
    with pytest.raises(ValueError, match="non-finite"):
        circle_field(torch.full((1, 3, 1), float("nan")), 1.0)
    with pytest.raises(ValueError, match="backend must be one of"):
        Circle(1.0, backend="fft")
    with pytest.raises(ValueError, match="backend must be one of"):
        circle_field(th, 1.0, backend="fourier")
    with pytest.raises(ValueError, match="K"):
        circle_field_fourier(th, 1.0, K=0)


def test_angles_points_roundtrip():
    th = uniform_angles(1, 20, generator=torch.Generator().manual_seed(0))
    back = to_angles(to_points(th))
    assert float(circular_distance(back.numpy(), th.numpy()).max()) < 1e-12


def test_clusters():
    g = torch.Generator().manual_seed(0)
    th = _clustered(3000, 4, 0.01, g)
    c, w = cluster_centres(th, criterion="density")[0]
    assert c.shape == (4, 1) and 0.95 < w.sum() <= 1
    assert float(circular_distance(np.sort(c[:, 0]), np.sort((0.3 + np.arange(4) * np.pi / 2) % (2 * np.pi))).max()) < 0.01
    assert cluster_count(uniform_angles(1, 5000, generator=g), criterion="density").item() == 0


# ----------------------------------------------------------------------------- the mean-field PDE

from companion.pde import circle_w1, density_moments, face_velocity, noisy_uniform, quantile_tokens, solve_mean_field  # noqa: E402
from companion.theory.metastable import gamma_k, k_max  # noqa: E402


def _cells(M):
    return (torch.arange(M, dtype=torch.float64) + 0.5) * 2 * math.pi / M


@pytest.mark.parametrize("normalization", ["usa", "softmax"])
def test_face_velocity_equals_particle_field_of_a_smooth_density(normalization):
    # the same velocity from the FFT quadrature of the density and, pairwise, from tokens at its quantiles
    M, beta = 512, 3.0
    u = (1 + 0.3 * torch.cos(2 * _cells(M) - 0.4)) / (2 * math.pi)
    v = face_velocity(u, beta, normalization)[::8]
    faces = ((torch.arange(M, dtype=torch.float64) + 1) * 2 * math.pi / M)[::8]
    tokens = quantile_tokens(u, 20_000)[0, :, 0]
    D = faces[:, None] - tokens[None, :]
    E = torch.exp(beta * torch.cos(D))
    num = -(E * torch.sin(D)).mean(1)
    ref = num if normalization == "usa" else num / E.mean(1)
    assert torch.allclose(v, ref, atol=1e-3 * ref.abs().max().item())


def test_pde_conserves_mass_and_positivity_and_grows_at_gamma():
    M, beta, eps, k = 1024, 5.0, 1e-5, 3
    u0 = (1 + eps * torch.cos(k * _cells(M))) / (2 * math.pi)
    t1 = 0.1
    ts, us, st = solve_mean_field(u0, beta, t1, save_at=[0.0, t1], dt_max=0.05 / float(gamma_k(k_max(beta), beta)))
    assert st["mass_drift"] < 1e-13
    assert us.min().item() >= 0
    growth = (density_moments(us[-1], k)[k].abs() / density_moments(us[0], k)[k].abs()).item()
    assert math.log(growth) / t1 == pytest.approx(float(gamma_k(k, beta)), rel=0.02)


def test_noisy_uniform_and_quantiles():
    g = torch.Generator().manual_seed(0)
    u = noisy_uniform(256, 0.01, generator=g)
    assert abs(u.sum().item() * 2 * math.pi / 256 - 1) < 1e-12
    th = quantile_tokens(u, 5000)
    assert circle_w1(th, u) < 1e-3  # quantile tokens are O(1/n) from the density
    iid = uniform_angles(1, 5000, generator=g)
    assert circle_w1(iid, u) > circle_w1(th, u)
    with pytest.raises(ValueError, match="cfl"):
        solve_mean_field(u, 1.0, 0.1, cfl=0.9, dt_max=0.01)
    with pytest.raises(TypeError):
        face_velocity(np.ones(16), 1.0)


def test_w1_of_a_shifted_atom():
    # an atom against a narrow bump at distance 1: W1 = 1 (up to the bump's width)
    M = 4096
    u = torch.zeros(M, dtype=torch.float64)
    u[M // 4] = M / (2 * math.pi)  # all mass in one cell around pi/2
    c = (M // 4 + 0.5) * 2 * math.pi / M
    assert circle_w1(torch.tensor([c - 1.0]), u) == pytest.approx(1.0, abs=1e-3)


# ----------------------------------------------------------------------------- the grid backend (numba)
needs_numba = pytest.mark.skipif(not G.HAVE_NUMBA, reason="numba is not installed (make venv installs it)")


@needs_numba
@pytest.mark.parametrize("normalization", ["usa", "softmax"])
@pytest.mark.parametrize("beta", [0.1, 1.0, 5.0, 20.0, 100.0])
@pytest.mark.parametrize("n", [1, 60, 1500])
def test_grid_equals_dense(beta, n, normalization):
    g = torch.Generator().manual_seed(int(10 * beta) + n)
    th = uniform_angles(2, n, generator=g)
    ref = circle_field_dense(th, beta, normalization)
    grid = circle_field_fourier(th, beta, normalization, backend="grid")
    if n == 1:  # one token: no interaction, the field is exactly zero up to the series' rounding
        assert grid.abs().max().item() < 1e-13 * (math.exp(beta) if normalization == "usa" else 1.0)
    else:
        assert _rel(grid, ref) < 1e-12


@needs_numba
@pytest.mark.parametrize("normalization", ["usa", "softmax"])
@pytest.mark.parametrize("beta", [0.5, 5.0, 50.0])
def test_grid_on_clusters_and_angles_outside_one_turn(beta, normalization):
    # clustered tokens, shifted by whole turns (negative and large): the grid reduces angles mod 2 pi
    g = torch.Generator().manual_seed(3)
    th = _clustered(2000, 3, 0.05, g)
    turns = torch.randint(-3, 4, th.shape, generator=g).to(th.dtype)
    shifted = th + 2 * math.pi * turns
    ref = circle_field_dense(th, beta, normalization)
    assert _rel(circle_field_fourier(shifted, beta, normalization, backend="grid"), ref) < 1e-12


@needs_numba
@pytest.mark.parametrize("normalization", ["usa", "softmax"])
def test_grid_and_powers_agree_at_large_n(normalization):
    # n = 2e5: too many pairs for the dense field, so the second computation is the powers backend
    th = uniform_angles(1, 200_000, generator=torch.Generator().manual_seed(5))
    a = circle_field_fourier(th, 5.0, normalization, backend="grid")
    b = circle_field_fourier(th, 5.0, normalization, backend="powers")
    assert _rel(a, b) < 1e-12


@needs_numba
def test_threads_split_trials_and_tokens_to_rounding(monkeypatch):
    # more threads change only the order of the sums: agreement to rounding, both splits exercised
    monkeypatch.setattr(G, "_MIN_PER_THREAD", 64)
    g = torch.Generator().manual_seed(8)
    for trials, n in [(1, 3000), (5, 700)]:
        th = uniform_angles(trials, n, generator=g).numpy()[..., 0]
        c, d = C._bessel_coeffs(5.0, fourier_truncation(5.0))
        one = G.grid_field(th, c, d, -1.0, threads=1)
        for threads in (2, 3):
            assert G._parts(trials, n, threads) != [(0, trials, 0, n)]
            many = G.grid_field(th, c, d, -1.0, threads=threads)
            assert np.abs(many - one).max() <= 1e-14 * np.abs(one).max()


@needs_numba
def test_grid_keeps_dtype_and_matches_float64_in_float32():
    th = uniform_angles(2, 5000, generator=torch.Generator().manual_seed(2))
    v64 = circle_field_fourier(th, 5.0, backend="grid")
    v32 = circle_field_fourier(th.float(), 5.0, backend="grid")
    assert v32.dtype == torch.float32 and v32.shape == th.shape
    assert _rel(v32.double(), v64) < 1e-6  # float32 angles carry ~1e-7 relative error in


@needs_numba
def test_grid_truncation_bound_holds_for_the_chosen_sizes():
    # worst case (no coefficients given): 2 (pi K / M)^P / P! <= 1e-17, P the least such, checked against
    # the exact remainder of the exponential series
    for K in (1, 15, 25, 43, 100, 400):
        M, P = G.grid_size(K)
        assert M >= 64 * (K + 1) and M & (M - 1) == 0
        assert 2 * G.taylor_bound(K, M, P) <= 1e-17 < 2 * G.taylor_bound(K, M, P - 1)
        y = np.linspace(-math.pi * K / M, math.pi * K / M, 101)
        partial = sum((1j * y) ** p / math.factorial(p) for p in range(P))
        assert np.abs(np.exp(1j * y) - partial).max() <= G.taylor_bound(K, M, P) + 4e-16


@needs_numba
@pytest.mark.parametrize("beta", [0.1, 1.0, 5.0, 20.0, 100.0])
def test_grid_terms_for_the_fields_coefficients_bound_the_exact_remainder(beta):
    # the field's Bessel coefficients decay, so fewer Taylor terms meet 1e-17: the weighted bound, P the least,
    # and above the remainder sum_k |c_k| |e^{i k y} - partial| summed in 40-digit arithmetic (mpmath) at the
    # offsets' extremes y = +-pi / M (the remainder of each mode grows with |k y|)
    import mpmath

    K = fourier_truncation(beta)
    num_c, den_c = C._bessel_coeffs(beta, K)
    M, P = G.grid_size(K, num_c, den_c)
    assert (M, P)[0] == G.grid_size(K)[0] and P < G.grid_size(K)[1]
    for c in (num_c, den_c):
        assert G.weighted_bound(c, M, P) <= 1e-17 < max(G.weighted_bound(c, M, P - 1) for c in (num_c, den_c))
        with mpmath.workdps(40):
            y = mpmath.pi / M
            rem = sum(abs(mpmath.mpf(float(abs(ck))) * (mpmath.expj(k * y) - sum((1j * k * y) ** p / mpmath.factorial(p)
                                                                                   for p in range(P))))
                      for k, ck in enumerate(c))
            exact = float(2 * rem / mpmath.fsum(abs(float(ck)) for ck in c))
        assert exact <= G.weighted_bound(c, M, P) * (1 + 1e-12)
        assert exact > 1e-3 * G.weighted_bound(c, M, P)  # and the bound is not vacuous: within 1e3 of the truth


@needs_numba
def test_grid_size_rejects_coefficients_of_the_wrong_length():
    with pytest.raises(ValueError, match="K \\+ 1 = 26 entries"):
        G.grid_size(25, np.ones(25))


@needs_numba
def test_grid_moments_against_direct_sums():
    # the moments the grid forms (before the evaluation tables) equal (1/n) sum_j e^{i k theta_j}
    rng = np.random.default_rng(0)
    t = rng.uniform(-10, 10, size=(2, 900))
    K = 30
    # the field with a single nonzero coefficient c_k reads the moment back: Im(conj(m_k) e^{ik theta})
    for k in (1, 7, 30):
        c = np.zeros(K + 1)
        c[k] = 1.0
        v = G.grid_field(t, c, None, 1.0)
        m = np.exp(1j * k * t).mean(axis=1, keepdims=True)
        assert np.abs(v - (np.conj(m) * np.exp(1j * k * t)).imag).max() < 1e-13


@needs_numba
def test_auto_picks_grid_only_for_large_cpu_inputs(monkeypatch):
    big = torch.zeros(1, C._GRID_MIN_N, dtype=torch.float64)
    small = torch.zeros(3, C._GRID_MIN_N - 1, dtype=torch.float64)
    assert C._pick_backend("auto", big) == "grid"
    assert C._pick_backend("auto", small) == "powers"
    assert C._pick_backend("powers", big) == "powers"
    meta = torch.zeros(1, C._GRID_MIN_N, device="meta")
    assert C._pick_backend("auto", meta) == "powers"  # not on the CPU
    with pytest.raises(ValueError, match="backend='grid' runs on the CPU only"):
        C._pick_backend("grid", meta)
    monkeypatch.setattr(G, "HAVE_NUMBA", False)
    assert C._pick_backend("auto", big) == "powers"
    with pytest.raises(ImportError, match="numba"):
        C._pick_backend("grid", big)


@needs_numba
def test_bad_backend_is_named():
    th = uniform_angles(1, 10, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="backend must be one of"):
        circle_field_fourier(th, 1.0, backend="fft")
    with pytest.raises(ValueError, match="backend must be one of"):
        circle_field_fourier(th, 1.0, backend="dense")  # the pairwise field is no Fourier summation
    with pytest.raises(ValueError, match="K must be an integer"):
        G.grid_size(0)


@needs_numba
def test_circle_model_runs_the_grid_and_stays_close_to_powers():
    # a short Euler run at n = 5000: the two backends' trajectories agree to rounding growth
    from companion.integrate import simulate

    th = uniform_angles(1, 5000, generator=torch.Generator().manual_seed(4))
    a = simulate(Circle(5.0, backend="grid"), th, 0.01, method="euler", dt=1e-3).xs[-1]
    b = simulate(Circle(5.0, backend="powers"), th, 0.01, method="euler", dt=1e-3).xs[-1]
    assert (a - b).abs().max().item() < 1e-12



def _forked_grid(t, c):
    from companion._omp import forked

    return forked(), G.grid_field(t, c, None, 1.0, 2)


@needs_numba
@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no os.fork on this platform")
def test_grid_threads_work_in_a_forked_child(monkeypatch):
    # the parent starts numba's OpenMP team; GNU OpenMP aborts a forked child that starts it again, so
    # the child runs the same work items on its own thread: the same sums, the same field
    import multiprocessing as mp

    monkeypatch.setattr(G, "_MIN_PER_THREAD", 64)
    t = uniform_angles(1, 4000, generator=torch.Generator().manual_seed(6)).numpy()[..., 0]
    c, _ = C._bessel_coeffs(5.0, fourier_truncation(5.0))
    parent = G.grid_field(t, c, None, 1.0, threads=2)
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        forked, child = pool.apply_async(_forked_grid, (t, c)).get(timeout=60)
    assert forked and not G.forked()
    assert np.array_equal(parent, child)
    items = G._items(G._parts(1, 4000, 2), True)
    assert len(items) == 2 and not G._serial(items)  # the parent runs them in parallel
