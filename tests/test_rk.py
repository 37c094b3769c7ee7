"""The compiled stage sums (companion._rk) against the torch expressions they replace, and simulate
with and without them: the same bits (the integrator's results must not depend on which ran)."""
import numpy as np
import pytest
import torch

import companion._rk as R
from companion import models, simulate
from companion.init import uniform_sphere
from companion.integrate import PAIRS

needs_numba = pytest.mark.skipif(not R.HAVE_NUMBA, reason="numba not installed")


def _torch_sum(x, h, coef, ks):
    """The integrator's former expression, written out: x + h * sum(c * k for nonzero c)."""
    s = h * sum(c * k for c, k in zip(coef, ks) if c != 0.0)
    return s if x is None else x + s


@needs_numba
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_compiled_stage_sums_round_as_torch(dtype, pair):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(7, 11, 3, generator=g, dtype=dtype)
    ks = [torch.randn(7, 11, 3, generator=g, dtype=dtype) * 10.0 ** float(j - 3) for j in range(7)]
    p = PAIRS[pair]
    stages = R.StageSums(x)
    for i in range(1, 7):
        stages.add(ks[i - 1])
        assert stages._flat is not None  # the compiled pass is the one under test
        got = stages(0.137, p.a[i])
        assert torch.equal(got, _torch_sum(x, 0.137, p.a[i], ks[:i])), (pair, i)
    stages.add(ks[6])
    assert torch.equal(stages(0.137, p.b), _torch_sum(x, 0.137, p.b, ks))
    assert torch.equal(stages(0.137, p.e, add_x=False), _torch_sum(None, 0.137, p.e, ks))


def test_stage_sums_fall_back_to_torch_where_they_cannot_compile():
    x = torch.ones(4, 3)
    stages = R.StageSums(x)
    stages.add(torch.ones(3, 4).T)  # not contiguous
    assert stages._flat is None
    stages.add(torch.full((4, 3), 2.0))
    assert torch.equal(stages(0.5, (1.0, 3.0)), torch.full((4, 3), 4.5))
    assert not R.compiled(x.requires_grad_(), [])
    assert not R.compiled(torch.ones(2, dtype=torch.float16), [])


def test_a_zero_sum_is_x_or_zero():
    x = torch.full((2, 2), 3.0)
    stages = R.StageSums(x)
    stages.add(torch.ones(2, 2))
    assert torch.equal(stages(1.0, (0.0,)), x) and torch.equal(stages(1.0, (0.0,), add_x=False), torch.zeros(2, 2))


@needs_numba
@pytest.mark.parametrize("method", ["tsit5", "dopri5"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_simulate_gives_the_same_bits_with_and_without_the_compiled_sums(monkeypatch, method, dtype):
    x0 = uniform_sphere(5, 12, 3, generator=torch.Generator().manual_seed(4)).to(dtype)
    model = models.spectral(torch.diag(torch.tensor([1.0, 0.5, -0.3], dtype=torch.float64)), 2.0)
    run = lambda: simulate(model, x0, 4.0, method=method, rtol=1e-6, atol=1e-8, save_at=[0.0, 1.0, 4.0])
    compiled = run()
    monkeypatch.setattr(R, "HAVE_NUMBA", False)
    plain = run()
    assert compiled.stats == plain.stats
    assert torch.equal(compiled.xs, plain.xs)
