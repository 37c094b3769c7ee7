"""The grid algorithm of the circle field (numba, CPU) against the pairwise field and the powers algorithm."""
import math

import numpy as np
import pytest
import torch

import companion._circle_grid as G
import companion.circle as C
from companion.circle import Circle, circle_field_dense, circle_field_fourier, fourier_truncation, uniform_angles

pytestmark = pytest.mark.skipif(not G.HAVE_NUMBA, reason="numba is not installed (make venv installs it)")


def _rel(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def _clustered(n, k, spread, g):
    idx = torch.randint(0, k, (1, n, 1), generator=g)
    return idx * (2 * math.pi / k) + 0.3 + spread * torch.randn(1, n, 1, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("normalization", ["usa", "softmax"])
@pytest.mark.parametrize("beta", [0.1, 1.0, 5.0, 20.0, 100.0])
@pytest.mark.parametrize("n", [1, 60, 1500])
def test_grid_equals_dense(beta, n, normalization):
    g = torch.Generator().manual_seed(int(10 * beta) + n)
    th = uniform_angles(2, n, generator=g)
    ref = circle_field_dense(th, beta, normalization)
    grid = circle_field_fourier(th, beta, normalization, algorithm="grid")
    if n == 1:  # one token: no interaction, the field is exactly zero up to the series' rounding
        assert grid.abs().max().item() < 1e-13 * (math.exp(beta) if normalization == "usa" else 1.0)
    else:
        assert _rel(grid, ref) < 1e-12


@pytest.mark.parametrize("normalization", ["usa", "softmax"])
@pytest.mark.parametrize("beta", [0.5, 5.0, 50.0])
def test_grid_on_clusters_and_angles_outside_one_turn(beta, normalization):
    # clustered tokens, shifted by whole turns (negative and large): the grid reduces angles mod 2 pi
    g = torch.Generator().manual_seed(3)
    th = _clustered(2000, 3, 0.05, g)
    turns = torch.randint(-3, 4, th.shape, generator=g).to(th.dtype)
    shifted = th + 2 * math.pi * turns
    ref = circle_field_dense(th, beta, normalization)
    assert _rel(circle_field_fourier(shifted, beta, normalization, algorithm="grid"), ref) < 1e-12


@pytest.mark.parametrize("normalization", ["usa", "softmax"])
def test_grid_and_powers_agree_at_large_n(normalization):
    # n = 2e5: too many pairs for the dense field, so the second method is the powers algorithm
    th = uniform_angles(1, 200_000, generator=torch.Generator().manual_seed(5))
    a = circle_field_fourier(th, 5.0, normalization, algorithm="grid")
    b = circle_field_fourier(th, 5.0, normalization, algorithm="powers")
    assert _rel(a, b) < 1e-12


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


def test_grid_keeps_dtype_and_matches_float64_in_float32():
    th = uniform_angles(2, 5000, generator=torch.Generator().manual_seed(2))
    v64 = circle_field_fourier(th, 5.0, algorithm="grid")
    v32 = circle_field_fourier(th.float(), 5.0, algorithm="grid")
    assert v32.dtype == torch.float32 and v32.shape == th.shape
    assert _rel(v32.double(), v64) < 1e-6  # float32 angles carry ~1e-7 relative error in


def test_grid_truncation_bound_holds_for_the_chosen_sizes():
    # (pi K / M)^P / P! <= 1e-17, checked against the exact remainder of the exponential series
    for K in (1, 15, 25, 43, 100, 400):
        M, P = G.grid_size(K)
        assert M >= 64 * (K + 1) and M & (M - 1) == 0
        assert G.taylor_bound(K, M, P) <= 1e-17 < G.taylor_bound(K, M, P - 1)
        y = np.linspace(-math.pi * K / M, math.pi * K / M, 101)
        partial = sum((1j * y) ** p / math.factorial(p) for p in range(P))
        assert np.abs(np.exp(1j * y) - partial).max() <= G.taylor_bound(K, M, P) + 4e-16


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


def test_auto_picks_grid_only_for_large_cpu_inputs(monkeypatch):
    big = torch.zeros(1, C._GRID_MIN_N, dtype=torch.float64)
    small = torch.zeros(3, C._GRID_MIN_N - 1, dtype=torch.float64)
    assert C._pick_algorithm("auto", big) == "grid"
    assert C._pick_algorithm("auto", small) == "powers"
    assert C._pick_algorithm("powers", big) == "powers"
    meta = torch.zeros(1, C._GRID_MIN_N, device="meta")
    assert C._pick_algorithm("auto", meta) == "powers"  # not on the CPU
    with pytest.raises(ValueError, match="algorithm='grid' runs on the CPU only"):
        C._pick_algorithm("grid", meta)
    monkeypatch.setattr(G, "HAVE_NUMBA", False)
    assert C._pick_algorithm("auto", big) == "powers"
    with pytest.raises(ImportError, match="numba"):
        C._pick_algorithm("grid", big)


def test_bad_algorithm_is_named():
    th = uniform_angles(1, 10, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="algorithm must be one of"):
        circle_field_fourier(th, 1.0, algorithm="fft")
    with pytest.raises(ValueError, match="algorithm must be one of"):
        Circle(1.0, algorithm="fft")
    with pytest.raises(ValueError, match="K must be an integer"):
        G.grid_size(0)


def test_circle_model_runs_the_grid_and_stays_close_to_powers():
    # a short Euler run at n = 5000: the two algorithms' trajectories agree to rounding growth
    from companion.integrate import simulate

    th = uniform_angles(1, 5000, generator=torch.Generator().manual_seed(4))
    a = simulate(Circle(5.0, algorithm="grid"), th, 0.01, method="euler", dt=1e-3).xs[-1]
    b = simulate(Circle(5.0, algorithm="powers"), th, 0.01, method="euler", dt=1e-3).xs[-1]
    assert (a - b).abs().max().item() < 1e-12



@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no os.fork on this platform")
def test_grid_threads_work_in_a_forked_child(monkeypatch):
    # the pool is made in the parent; a forked child must not send work to the parent's dead threads
    import multiprocessing as mp

    monkeypatch.setattr(G, "_MIN_PER_THREAD", 64)
    t = uniform_angles(1, 4000, generator=torch.Generator().manual_seed(6)).numpy()[..., 0]
    c, _ = C._bessel_coeffs(5.0, fourier_truncation(5.0))
    parent = G.grid_field(t, c, None, 1.0, threads=2)
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        child = pool.apply_async(G.grid_field, (t, c, None, 1.0, 2)).get(timeout=60)
    assert np.array_equal(parent, child)
