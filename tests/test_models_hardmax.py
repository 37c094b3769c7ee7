"""companion.models.hardmax: paper B's Algorithm 1 with a hardmax (App. C.1), behind the Model protocol."""

import pytest
import torch

from companion import init, models, simulate
from companion.models.hardmax import HardmaxAttention

F64 = torch.float64
B3 = torch.diag(torch.tensor([-1.0, -1.0, 1.0], dtype=F64))  # paper B, Figure 3
V3 = torch.diag(torch.tensor([-1.0, 1.0, -2.0], dtype=F64))


def test_hardmax_is_the_large_beta_limit_of_algorithm1():
    # formally beta = inf in eq. (1): the softmax field at beta = 1e6 equals the hardmax field (no ties on a lattice)
    x0 = init.fibonacci_sphere(1, 200, generator=torch.Generator().manual_seed(3))
    hard = HardmaxAttention(B=B3, V=V3)
    soft = models.low_temperature(B3, V3, 1e6).vector_field(0.0, x0)
    assert torch.allclose(hard.vector_field(0.0, x0), soft, atol=1e-9)
    chunked = HardmaxAttention(B=B3, V=V3, chunk=7)
    assert torch.equal(chunked.vector_field(0.0, x0), hard.vector_field(0.0, x0))
    with pytest.raises(ValueError, match="sphere"):
        simulate(hard, 2 * x0, 0.1, method="euler", dt=0.01)


def test_hardmax_field_written_out_by_hand():
    # x_i' = P_{x_i} V x_{j(i)}, j(i) = argmax_j <x_i, B x_j>, for every trial of a batch
    g = torch.Generator().manual_seed(4)
    X = init.uniform_sphere(3, 9, 4, generator=g)
    B = torch.randn(4, 4, generator=g, dtype=F64)
    V = torch.randn(4, 4, generator=g, dtype=F64)
    j = torch.einsum("tia,ab,tjb->tij", X, B, X).argmax(-1)  # (trials, n)
    Y = torch.stack([X[t, j[t]] for t in range(3)]) @ V.T
    expected = Y - (Y * X).sum(-1, keepdim=True) * X
    assert torch.allclose(HardmaxAttention(B=B, V=V).vector_field(0.0, X), expected, atol=1e-13)


def test_hardmax_follows_the_model_protocol():
    m = HardmaxAttention(B=B3, V=V3)
    models.check_model(m)
    assert isinstance(m, models.Model) and m.on_sphere
    x0 = init.uniform_sphere(2, 5, 3, generator=torch.Generator().manual_seed(5)).to(torch.float32)
    cast = m.cast(x0)
    assert cast.B.dtype == torch.float32 and cast.V.dtype == torch.float32
    sol = simulate(m, x0, 0.2, method="euler", dt=0.01)
    assert torch.allclose(sol.final.norm(dim=-1), torch.ones(2, 5), atol=1e-5)  # stays on the sphere
    with pytest.raises(ValueError, match="B"):
        HardmaxAttention(B=torch.eye(2, dtype=F64), V=V3).validate(x0.double())
