"""The fused attention kernel (numba, CPU) in float32 and float64 against the float64 torch field, and its exponentials."""
import math

import numpy as np
import pytest
import torch

import companion._fused as F
from companion import attention, models, simulate
from companion.attention import attend, attention_field, field_unchecked
from companion.init import uniform_sphere

pytestmark = pytest.mark.skipif(not F.HAVE_NUMBA, reason="numba is not installed (make venv installs it)")


def _sphere(trials, n, d, seed):
    return uniform_sphere(trials, n, d, generator=torch.Generator().manual_seed(seed))


def _rel(a, b):
    return ((a.double() - b).abs().max() / b.abs().max()).item()


def test_exponential_within_two_ulp_of_exp():
    # against float64 exp on every float32 step of [-87, 0] sampled densely, and exactly 1 at 0
    x = np.linspace(-87.0, 0.0, 3_000_001).astype(np.float32)
    y = F.exp_nonpositive(x)
    ref = np.exp(x.astype(np.float64))
    assert (np.abs(y - ref) / ref).max() < 2 * np.finfo(np.float32).eps
    assert F.exp_nonpositive(np.zeros(3, dtype=np.float32)).tolist() == [1.0, 1.0, 1.0]
    assert F.exp_nonpositive(np.array([-200.0], dtype=np.float32))[0] < 2e-38  # clamped, not garbage
    with pytest.raises(ValueError, match="<= 0"):
        F.exp_nonpositive(np.array([0.5], dtype=np.float32))


def test_float64_exponential_within_one_ulp_of_exp():
    # numpy's exp is correctly rounded to within 1 ulp: the kernel's is within 2 ulp of it on [-708, 0]
    x = np.linspace(-708.0, 0.0, 2_000_001)
    y = F.exp_nonpositive(x)
    assert y.dtype == np.float64
    assert (np.abs(y - np.exp(x)) / np.exp(x)).max() < 2 * np.finfo(np.float64).eps
    assert F.exp_nonpositive(np.zeros(2)).tolist() == [1.0, 1.0]
    assert 0 < F.exp_nonpositive(np.array([-800.0]))[0] < 4e-308  # clamped to e^-708, not garbage


# usa stops at beta = 10: e^100 overflows float32 (that case is tested below)
_CASES = [(norm, beta) for norm in ("softmax", "usa") for beta in (0.1, 1.0, 10.0, 100.0) if norm == "softmax" or beta <= 10]


@pytest.mark.parametrize("normalization,beta", _CASES)
@pytest.mark.parametrize("n,d", [(1, 3), (7, 2), (80, 3), (300, 3), (50, 5)])
def test_fused_field_equals_the_float64_field(normalization, beta, n, d):
    # beta = 0.1 shifts rows by the Cauchy-Schwarz bound, beta = 100 mostly by the exact maximum;
    # n = 300 splits a trial over several blocks. Errors are relative to the unprojected field's scale
    # (one token's projected field is zero up to rounding of that scale, e^beta for usa).
    X = _sphere(3, n, d, seed=n + d)
    g = torch.Generator().manual_seed(1)
    A = torch.randn(d, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    V = torch.randn(3, d, d, generator=g, dtype=torch.float64) / math.sqrt(d)  # per-trial values
    for a, v in [(None, None), (A, V), (A, A)]:
        for project in (False, True):
            ref = field_unchecked(X, a, v, beta, normalization=normalization, backend="dense", project=project)
            cast = (lambda M: None if M is None else M.float())
            got = field_unchecked(X.float(), cast(a), cast(v), beta, normalization=normalization, backend="fused", project=project)
            assert got.dtype == torch.float32 and got.shape == X.shape
            scale = field_unchecked(X, a, v, beta, normalization=normalization, backend="dense").abs().max().item()
            err = (got.double() - ref).abs().max().item() / max(1.0, scale)
            assert err < 3e-5, (a is None, v is A, project)
            got64 = field_unchecked(X, a, v, beta, normalization=normalization, backend="fused", project=project)
            assert got64.dtype == torch.float64
            # float64: rounding of the scores (|s| up to beta) times the weights, a few ulp of beta
            err64 = (got64 - ref).abs().max().item() / max(1.0, scale)
            assert err64 < 64 * np.finfo(np.float64).eps * max(1.0, beta), (a is None, v is A, project)


def test_auto_takes_the_fused_kernel_only_where_it_applies(monkeypatch):
    X = _sphere(2, 20, 3, seed=0).float()
    calls = []
    real = F.fused_field
    monkeypatch.setattr(F, "fused_field", lambda *a, **k: calls.append(1) or real(*a, **k))
    attention_field(X, beta=1.0)
    assert calls == [1]
    Xg = X.clone().requires_grad_(True)
    out = attention_field(Xg, beta=1.0)  # autograd: torch
    assert out.grad_fn is not None and calls == [1]
    attention_field(_sphere(1, 5, 12, seed=1).float(), beta=1.0)  # float32, d = 12 > 8: torch
    attention_field(_sphere(1, 5, 8, seed=1).float(), beta=1.0)  # float32, d = 8: fused
    assert calls == [1, 1]
    attention_field(_sphere(1, 5, 16, seed=1), beta=1.0)  # float64, d = 16: fused
    attention_field(_sphere(1, 5, 17, seed=1), beta=1.0)  # float64, d = 17 > 16: torch
    assert calls == [1, 1, 1]
    monkeypatch.setattr(F, "HAVE_NUMBA", False)
    attention_field(X, beta=1.0)
    attention_field(X.double(), beta=1.0)
    assert calls == [1, 1, 1]


def test_fused_refuses_what_it_cannot_do():
    X = _sphere(1, 10, 3, seed=2)
    with pytest.raises(ValueError, match="float32 or float64 tensors of one dtype on the CPU, got X torch.float16"):
        field_unchecked(X.half(), None, None, 1.0, backend="fused")
    with pytest.raises(ValueError, match="got X torch.float64 on cpu, A torch.float32 on cpu"):
        field_unchecked(X, torch.eye(3), None, 1.0, backend="fused")
    with pytest.raises(ValueError, match="autograd"):
        attention_field(X.float().requires_grad_(True), beta=1.0, backend="fused")
    with pytest.raises(ValueError, match="not attend"):
        attend(X.float(), X.float(), X.float(), 1.0, backend="fused")


def test_usa_overflow_falls_back_to_the_exact_maximum_or_raises():
    # A = diag(1, -1): the bound beta |A x_i| = beta, but every score beta <A x_i, x_j> <= 0 when all
    # tokens sit near (0, 1); e^{beta} / n overflows float32 at beta = 95, the true field does not.
    th = torch.linspace(1.3, 1.8, 12, dtype=torch.float64)
    X = torch.stack([torch.cos(th), torch.sin(th)], -1)[None]
    A = torch.diag(torch.tensor([1.0, -1.0], dtype=torch.float64))
    ref = attention_field(X, A, None, 95.0, normalization="usa", backend="dense")
    got = attention_field(X.float(), A.float(), None, 95.0, normalization="usa", backend="fused")
    assert torch.isfinite(got).all() and _rel(got, ref) < 1e-5
    with pytest.raises(ValueError, match="too large for the unnormalised"):
        attention_field(_sphere(1, 10, 3, seed=3).float(), beta=100.0, normalization="usa", backend="fused")


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-6), (np.float64, 1e-15)])
def test_thread_counts_agree_to_rounding(dtype, tol):
    X = _sphere(9, 120, 3, seed=4).numpy().astype(dtype)
    V = np.diag([1.0, 0.5, -0.3]).astype(dtype)
    one, _ = F.fused_field(X, V, V, 2.0, True, True, threads=1)
    two, _ = F.fused_field(X, V, V, 2.0, True, True, threads=2)
    assert one.dtype == dtype and np.abs(one - two).max() <= tol * np.abs(one).max()


def test_float64_overflow_is_refused_naming_float64():
    X = np.ones((1, 4, 3)) * 1e160  # |x|^2 = 3e320 overflows float64
    with pytest.raises(FloatingPointError, match="overflows float64.*smaller tokens"):
        F.fused_field(X, None, None, 1.0, True, False)
    with pytest.raises(FloatingPointError, match="overflows float64"):
        F.fused_field(np.ones((1, 4, 3)) * 1e150, None, None, 1e10, True, False)  # scores beta |x|^2 = 3e310


def test_sphere_model_in_float32_follows_the_float64_flow():
    # paper C's ensemble setting: RK4 to T = 2 in float32 (fused) and float64 (torch)
    V = torch.diag(torch.tensor([1.0, 0.5, -0.3], dtype=torch.float64))
    X = _sphere(4, 80, 3, seed=5)
    from companion.integrate import simulate

    m = models.Sphere(A=V, V=V, beta=1.0)
    a = simulate(m, X.float(), 2.0, method="rk4", dt=0.05).final
    b = simulate(m, X, 2.0, method="rk4", dt=0.05).final
    assert (a.double() - b).abs().max().item() < 1e-5
    assert (a.norm(dim=-1) - 1).abs().max().item() < 1e-6
    assert attention.tangent_project is models.tangent_project


def _simulate_in_child(x0):
    from companion._omp import forked

    return forked(), simulate(models.Sphere(beta=1.0), x0, 2.0, method="tsit5").final


@pytest.mark.skipif(not F.HAVE_NUMBA, reason="numba not installed")
@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no os.fork on this platform")
def test_the_kernel_runs_in_a_process_forked_after_it_ran():
    # GNU OpenMP aborts a forked child that starts its team again ("fork() called from a process already
    # using GNU OpenMP") and a multiprocessing pool then waits for ever: the child runs the work items on
    # its own thread instead, the same items, so the same bits as the parent
    import multiprocessing as mp

    x0 = uniform_sphere(40, 32, 3, generator=torch.Generator().manual_seed(8)).float()
    parent = simulate(models.Sphere(beta=1.0), x0, 2.0, method="tsit5").final  # starts the team here
    with mp.get_context("fork").Pool(1) as pool:
        forked, child = pool.apply_async(_simulate_in_child, (x0,)).get(timeout=120)
    assert forked
    assert torch.equal(parent, child)


@pytest.mark.skipif(not F.HAVE_NUMBA, reason="numba not installed")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_keys_prepared_on_one_thread_or_several_give_the_same_field(monkeypatch, dtype):
    X = uniform_sphere(30, 50, 3, generator=torch.Generator().manual_seed(9)).numpy().astype(dtype)
    V = np.diag([1.0, 0.5, -0.3]).astype(dtype)
    monkeypatch.setattr(F, "_PARALLEL_PREPARE", 0)
    parallel = F.fused_field(X, V, V, 1.5, True, True, threads=2)
    monkeypatch.setattr(F, "_PARALLEL_PREPARE", 1 << 40)
    serial = F.fused_field(X, V, V, 1.5, True, True, threads=2)
    assert all(np.array_equal(a, b) for a, b in zip(parallel, serial))


def test_the_norm_bound_is_the_largest_frobenius_norm_whatever_the_cache_holds():
    M = np.stack([np.eye(3), 2 * np.eye(3)]).astype(np.float32)
    assert F._norm_bound(M) == pytest.approx(2 * 3 ** 0.5, rel=1e-12)
    M[1] *= 5  # same shape, other values: not the cached bound
    assert F._norm_bound(M) == pytest.approx(10 * 3 ** 0.5, rel=1e-12)
    assert F._norm_bound(np.zeros((0, 0, 0), dtype=np.float32)) == 1.0
