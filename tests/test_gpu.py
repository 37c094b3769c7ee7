"""The GPU path: sdpa (torch's fused attention, scale = beta) against the dense field, CUDA against CPU.

The sdpa tests without the ``gpu`` marker run on the CPU too (torch has a fused CPU kernel), so the
backend is checked in every CI run; the ``gpu`` ones need CUDA and are skipped with the reason
otherwise (``make gpu-check`` runs them on a GPU machine).
"""
from __future__ import annotations

import pytest
import torch

from companion import init, models, simulate
from companion.attention import attend, attention_field

HAS_CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(
    not HAS_CUDA,
    reason=f"no CUDA device: torch.cuda.is_available() is False (torch {torch.__version__}, CUDA build {torch.version.cuda})",
)


def _setup(trials, n, d, dtype, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    X = init.uniform_sphere(trials, n, d, generator=g, dtype=torch.float64).to(device=device, dtype=dtype)
    A = torch.randn(d, d, generator=g, dtype=torch.float64).to(device=device, dtype=dtype)
    V = torch.randn(d, d, generator=g, dtype=torch.float64).to(device=device, dtype=dtype)
    return X, A, V


def _reference(X, A, V, beta):
    """The field written out directly in float64 (softmax over explicit scores), no attention code."""
    X, A, V = X.double().cpu(), A.double().cpu(), V.double().cpu()
    scores = beta * torch.einsum("tid,ed,tje->tij", X, A, X)  # <A x_i, x_j>
    w = torch.softmax(scores, dim=-1)
    return torch.einsum("tij,ed,tjd->tie", w, V, X)


@pytest.mark.parametrize("d", [2, 3, 8, 11])
@pytest.mark.parametrize("beta", [0.1, 4.0, 60.0])
def test_sdpa_matches_dense_on_cpu_float64(d, beta):
    X, A, V = _setup(3, 97, d, torch.float64)
    ref = _reference(X, A, V, beta)
    for backend in ("dense", "sdpa"):
        got = attention_field(X, A, V, beta, backend=backend)
        torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-12)


def test_sdpa_float32_within_single_precision():
    X, A, V = _setup(2, 300, 5, torch.float32)
    got = attention_field(X, A, V, 3.0, backend="sdpa")
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), _reference(X, A, V, 3.0), rtol=1e-4, atol=1e-5)


def test_sdpa_uses_a_fused_kernel_not_the_math_fallback():
    """3-D inputs would silently take the math kernel (the whole score matrix in memory)."""
    from torch.profiler import profile

    X, A, V = _setup(2, 64, 3, torch.float32)
    with profile() as prof:
        attention_field(X, A, V, 2.0, backend="sdpa")
    ops = {e.key for e in prof.key_averages()}
    assert "aten::_scaled_dot_product_attention_math" not in ops, sorted(o for o in ops if "attention" in o)
    assert any("flash" in o or "efficient" in o for o in ops), sorted(o for o in ops if "attention" in o)


def test_sdpa_rejects_usa():
    X, A, V = _setup(1, 8, 3, torch.float64)
    with pytest.raises(ValueError, match="softmax"):
        attention_field(X, A, V, 1.0, normalization="usa", backend="sdpa")


# ----------------------------------------------------------------------------- CUDA only


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 2e-5), (torch.float64, 1e-10)])
def test_cuda_sdpa_matches_reference(dtype, tol):
    X, A, V = _setup(4, 2048, 3, dtype, device="cuda")
    ref = _reference(X, A, V, 5.0)
    got = attention_field(X, A, V, 5.0, backend="sdpa")
    assert got.device.type == "cuda" and got.dtype == dtype
    torch.testing.assert_close(got.double().cpu(), ref, rtol=tol, atol=tol)


@pytest.mark.gpu
@needs_cuda
def test_cuda_auto_large_n_memory_stays_linear():
    """n = 2^16 tokens: the dense scores would take 16 GiB in float32; auto (sdpa) must not."""
    n, d = 2**16, 3
    X, _, _ = _setup(1, n, d, torch.float32, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = attend(X, X, X, 2.0)  # backend="auto"
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    assert peak < 2**30, f"peak {peak / 2**30:.2f} GiB: the score matrix was materialised"
    # Against the blocked float64 field on a subset of queries (independent code path).
    idx = torch.arange(0, n, 4099, device="cuda")
    ref = attend(X.double()[:, idx], X.double(), X.double(), 2.0, backend="blocked")
    torch.testing.assert_close(out[:, idx].double(), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
@needs_cuda
def test_cuda_simulation_agrees_with_cpu_float64():
    V = torch.diag(torch.tensor([1.0, 0.5, -0.3], dtype=torch.float64))
    model = models.spectral(V, 1.0)
    x0 = init.uniform_sphere(20, 80, 3, generator=torch.Generator().manual_seed(1))
    cpu = simulate(model, x0, 5.0, method="rk4", dt=0.05)
    gpu = simulate(model, x0.cuda(), 5.0, method="rk4", dt=0.05)
    assert gpu.xs.device.type == "cuda"
    torch.testing.assert_close(gpu.xs.cpu(), cpu.xs, rtol=0, atol=1e-10)


@pytest.mark.gpu
@needs_cuda
def test_cuda_initial_conditions_follow_the_device():
    g = torch.Generator(device="cuda").manual_seed(0)
    X = init.uniform_sphere(2, 16, 3, generator=g, device="cuda")
    assert X.device.type == "cuda"
    torch.testing.assert_close(X.norm(dim=-1), torch.ones(2, 16, dtype=X.dtype, device="cuda"))


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("normalization", ["usa", "softmax"])
def test_cuda_circle_fourier_field_matches_cpu(normalization):
    """Paper D's circle field by its Fourier series on CUDA (added after the first GPU run, which
    never reached it: the metastable experiments then kept their tensors on the CPU)."""
    from companion.circle import circle_field_fourier
    from companion.init import uniform_angles

    th = uniform_angles(3, 50_000, generator=torch.Generator().manual_seed(2))
    cpu = circle_field_fourier(th, 5.0, normalization)
    gpu = circle_field_fourier(th.cuda(), 5.0, normalization)
    assert gpu.device.type == "cuda" and gpu.dtype == torch.float64
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-12, atol=1e-12 * float(cpu.abs().max()))
