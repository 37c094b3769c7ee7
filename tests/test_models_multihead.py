"""What the chapter "Your own dynamics" relies on: causal attention, multi-head models, your own model.

Causal attention and :class:`companion.models.MultiHead` are checked against fields written out
here from their formulas (no attention code), against identities the chapter prints (equal heads,
time rescaling, decoupled heads, the fixed first token, the prefix property) and against wrong
models, so each check is seen to fail where it should. The ``gpu`` tests need CUDA (skipped with the
reason elsewhere).
"""
from __future__ import annotations

import dataclasses
import math
import warnings

import pytest
import torch

from companion import init, models
from companion.attention import attend, attention_field
from companion.integrate import StabilityWarning, simulate, stability_number
from companion.models import Euclidean, MultiHead, Rescaled, Sphere, from_qkv, tangent_jacobian
from companion.theory.consensus import consensus_modal_masses

F64 = torch.float64
HAS_CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(
    not HAS_CUDA,
    reason=f"no CUDA device: torch.cuda.is_available() is False (torch {torch.__version__}, CUDA build {torch.version.cuda})",
)


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _draw(trials=2, n=9, d=3, seed=0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    X = init.uniform_sphere(trials, n, d, generator=g)
    A = torch.randn(d, d, generator=g, dtype=F64)
    V = torch.randn(d, d, generator=g, dtype=F64)
    return X.to(dtype), A.to(dtype), V.to(dtype)


def _causal_reference(X, A, V, beta, usa=False):
    """sum_{j <= i} w_ij V x_j written out in float64 with an explicit loop over i (no masking code)."""
    X, A, V = X.double(), A.double(), V.double()
    T, n, d = X.shape
    out = torch.zeros(T, n, d, dtype=F64)
    for i in range(n):
        s = beta * torch.einsum("td,ed,tje->tj", X[:, i], A, X[:, : i + 1])  # <A x_i, x_j>, j <= i
        w = torch.exp(s) / n if usa else torch.softmax(s, dim=-1)
        out[:, i] = torch.einsum("tj,ed,tjd->te", w, V, X[:, : i + 1])
    return out


# ----------------------------------------------------------------------------- causal attention
@pytest.mark.parametrize("backend", ["dense", "blocked", "sdpa", "auto"])
def test_causal_softmax_field_matches_the_formula(backend):
    X, A, V = _draw()
    got = attention_field(X, A, V, 1.7, backend=backend, causal=True, block_elements=40)  # blocks of 2 queries
    torch.testing.assert_close(got, _causal_reference(X, A, V, 1.7), rtol=0, atol=1e-13)


@pytest.mark.parametrize("backend", ["dense", "blocked", "auto"])
def test_causal_usa_field_matches_the_formula(backend):
    X, A, V = _draw()
    got = attention_field(X, A, V, 1.7, normalization="usa", backend=backend, causal=True, block_elements=40)
    torch.testing.assert_close(got, _causal_reference(X, A, V, 1.7, usa=True), rtol=0, atol=1e-13)


def test_causal_differs_from_full_attention():
    """The check above fails for the unmasked field: the mask matters for every token but the last."""
    X, A, V = _draw()
    full = attention_field(X, A, V, 1.7)
    ref = _causal_reference(X, A, V, 1.7)
    gap = (full - ref).norm(dim=-1)[0]
    assert (gap[:-1] > 1e-3).all() and gap[-1] < 1e-13


def test_causal_float32_takes_the_torch_path():
    """CPU float32 in low dimension would take the fused kernel, which has no mask: auto must not."""
    X, A, V = _draw(dtype=torch.float32)
    got = attention_field(X, A, V, 1.7, causal=True)
    torch.testing.assert_close(got.double(), _causal_reference(X, A, V, 1.7), rtol=0, atol=1e-5)


def test_causal_refusals():
    X, A, V = _draw(dtype=torch.float32)
    with pytest.raises(ValueError, match="no causal mask"):
        attention_field(X, A, V, 1.0, backend="fused", causal=True)
    with pytest.raises(TypeError, match="causal must be True or False"):
        attend(X, X, X, 1.0, causal="yes")
    with pytest.raises(ValueError, match="at least as many keys as queries"):
        attend(X, X[:, :3], X[:, :3], 1.0, causal=True)
    with pytest.raises(TypeError, match="causal must be True or False"):
        Sphere(causal=1)


def test_causal_autograd_jacobian_matches_finite_differences():
    """The masked scores are filled out of place under autograd: the Jacobian is right."""
    g = torch.Generator().manual_seed(3)
    X = init.uniform_sphere(1, 5, 3, generator=g)[0]
    A = torch.randn(3, 3, generator=g, dtype=F64)
    m = Sphere(A=A, V=torch.eye(3, dtype=F64), beta=1.3, causal=True)
    J_ad = tangent_jacobian(m, X, mode="autograd")
    J_fd = tangent_jacobian(m, X, mode="fd")
    torch.testing.assert_close(J_ad, J_fd, rtol=0, atol=1e-7)
    # token 1 depends on nobody else: its rows vanish outside its own block
    assert J_ad[:2, 2:].abs().max() == 0


def test_causal_first_token_fixed_and_prefix_property():
    X, _, _ = _draw(trials=2, n=8)
    m = Sphere(beta=1.0, causal=True)
    run = dict(method="rk4", dt=0.05, save_at=torch.linspace(0.0, 5.0, 6, dtype=F64))
    xs = simulate(m, X, 5.0, **run).xs
    assert (xs[:, :, 0] - X[:, 0]).abs().max() < 1e-14
    first4 = simulate(m, X[:, :4], 5.0, **run).xs
    assert (xs[:, :, :4] - first4).abs().max() < 1e-14
    # a full-attention model moves the first token and couples it to later ones: both checks fail
    full = simulate(Sphere(beta=1.0), X, 5.0, **run).xs
    assert (full[:, :, 0] - X[:, 0]).abs().max() > 1e-2
    assert (full[:, :, :4] - simulate(Sphere(beta=1.0), X[:, :4], 5.0, **run).xs).abs().max() > 1e-2


def test_causal_second_token_follows_the_scalar_ode():
    """theta' = -sin(theta) / (1 + e^{beta (1 - cos theta)}), integrated by RK4 on the scalar."""
    beta, t1 = 1.5, 4.0
    X = torch.tensor([[[1.0, 0.0, 0.0], [math.cos(2.0), math.sin(2.0), 0.0]]], dtype=F64)
    theta = 2 * math.asin(float((simulate(Sphere(beta=beta, causal=True), X, t1, dt=0.01).final[0, 1] - X[0, 0]).norm()) / 2)
    f = lambda th: -math.sin(th) / (1.0 + math.exp(beta * (1.0 - math.cos(th))))
    th, h = 2.0, 0.001
    for _ in range(round(t1 / h)):
        k1 = f(th); k2 = f(th + h / 2 * k1); k3 = f(th + h / 2 * k2); k4 = f(th + h * k3)
        th += h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    assert abs(theta - th) < 1e-8
    # the full-attention pair moves twice as fast (both tokens move): far from this ODE
    full = simulate(Sphere(beta=beta), X, t1, dt=0.01).final[0]
    assert abs(2 * math.asin(float((full[1] - full[0]).norm()) / 2) - th) > 1e-2


def test_rescaled_causal_is_the_causal_euclidean_flow_rescaled():
    g = torch.Generator().manual_seed(4)
    Q, K, V = (torch.randn(3, 3, generator=g, dtype=F64) / math.sqrt(3) for _ in range(3))
    x0 = init.uniform_sphere(1, 6, 3, generator=g)
    ts = torch.linspace(0.0, 2.0, 5, dtype=F64)
    tight = dict(method="dopri5", rtol=1e-11, atol=1e-13, save_at=ts)
    x = simulate(from_qkv(Q, K, V, 2.0, geometry="euclidean", causal=True), x0, 2.0, **tight).xs
    z = simulate(from_qkv(Q, K, V, 2.0, geometry="rescaled", causal=True), x0, 2.0, **tight).xs
    zx = torch.einsum("tab,tinb->tina", torch.linalg.matrix_exp(-ts[:, None, None] * V), x)
    assert (z - zx).abs().max() < 1e-8
    z_full = simulate(from_qkv(Q, K, V, 2.0, geometry="rescaled"), x0, 2.0, **tight).xs
    assert (z_full - zx).abs().max() > 1e-3


def test_from_qkv_passes_causal_and_defaults_to_full_attention():
    I = torch.eye(2)
    assert from_qkv(I, I, I).causal is False
    assert isinstance(from_qkv(I, I, I, geometry="rescaled", causal=True), Rescaled)
    assert from_qkv(I, I, I, geometry="euclidean", causal=True).causal is True


# ----------------------------------------------------------------------------- multi-head
def test_equal_heads_mean_is_one_head_and_sum_is_one_head_faster():
    X, A, V = _draw(trials=2, n=7)
    head = Sphere(A=A, V=V / 3, beta=2.0)
    one = simulate(head, X, 3.0, dt=0.05).final
    mean3 = simulate(MultiHead([head, head, head], combine="mean"), X, 3.0, dt=0.05).final
    sum3 = simulate(MultiHead((head,) * 3), X, 1.0, dt=0.05 / 3).final
    assert (mean3 - one).abs().max() < 1e-13
    assert (sum3 - one).abs().max() < 1e-13
    # the sum at the same time is not one head: the check can fail
    assert (simulate(MultiHead((head,) * 3), X, 3.0, dt=0.05).final - one).abs().max() > 1e-3


def test_multihead_field_is_the_sum_of_the_heads_fields():
    X, A, V = _draw(trials=3, n=6)
    h1, h2 = Sphere(A=A, V=V, beta=1.0), Sphere(A=V, V=A, beta=0.5, causal=True)
    got = MultiHead((h1, h2)).vector_field(0.0, X)
    P = lambda F: F - (F * X).sum(-1, keepdim=True) * X
    want = P(attention_field(X, A, V, 1.0)) + P(_causal_reference(X, V, A, 0.5))
    torch.testing.assert_close(got, want, rtol=0, atol=1e-13)


def test_orthogonal_heads_decouple_in_euclidean_space():
    g = torch.Generator().manual_seed(5)
    P1 = torch.diag(torch.tensor([1.0, 1.0, 0.0, 0.0], dtype=F64))
    P2 = torch.eye(4, dtype=F64) - P1
    m = MultiHead((from_qkv(P1, P1, P1, 3.0, geometry="euclidean"), from_qkv(P2, P2, 0.5 * P2, 3.0, geometry="euclidean")))
    x0 = torch.randn(2, 10, 4, generator=g, dtype=F64)
    both = simulate(m, x0, 1.5, dt=0.01).final
    u = simulate(Euclidean(beta=3.0), x0[..., :2], 1.5, dt=0.01).final
    w = simulate(Euclidean(V=0.5 * torch.eye(2, dtype=F64), beta=3.0), x0[..., 2:], 1.5, dt=0.01).final
    assert (both - torch.cat([u, w], dim=-1)).abs().max() < 1e-12
    # heads that read the whole space (Q = K = I) couple the halves: the check fails for them
    coupled = MultiHead((Euclidean(V=P1, beta=3.0), Euclidean(V=0.5 * P2, beta=3.0)))
    assert (simulate(coupled, x0, 1.5, dt=0.01).final - torch.cat([u, w], dim=-1)).abs().max() > 1e-3


def test_orthogonal_heads_on_the_consensus_manifold_follow_the_summed_closed_form():
    P1 = torch.diag(torch.tensor([1.0, 1.0, 0.0, 0.0], dtype=F64))
    P2 = torch.eye(4, dtype=F64) - P1
    m = MultiHead((from_qkv(P1, P1, P1, 4.0), from_qkv(P2, P2, 0.5 * P2, 4.0)))
    x = torch.tensor([0.1, 0.2, 0.5, 0.6], dtype=F64)
    x = x / x.norm()
    ts = torch.linspace(0.0, 3.0, 4, dtype=F64)
    p = simulate(m, x.expand(1, 5, 4).clone(), 3.0, method="dopri5", rtol=1e-11, atol=1e-13, save_at=ts).xs[:, 0] ** 2
    theory = consensus_modal_masses(x**2, torch.tensor([1.0, 1.0, 0.5, 0.5], dtype=F64), ts)
    assert (p - theory[:, None]).abs().max() < 1e-9
    wrong = consensus_modal_masses(x**2, torch.tensor([1.0, 1.0, 0.0, 0.0], dtype=F64), ts)  # head 2 forgotten
    assert (p - wrong[:, None]).abs().max() > 1e-2


def test_multihead_refusals():
    s = Sphere()
    with pytest.raises(ValueError, match="at least one"):
        MultiHead(())
    with pytest.raises(ValueError, match="all live on the sphere or all in R"):
        MultiHead((s, Euclidean()))
    with pytest.raises(ValueError, match="combine must be one of"):
        MultiHead((s,), combine="max")
    with pytest.raises(TypeError, match=r"heads\[1\] must follow the companion.models.Model protocol"):
        MultiHead((s, object()))
    with pytest.raises(TypeError, match="sequence of models"):
        MultiHead(s)
    with pytest.raises(ValueError, match="unit sphere|on the sphere"):  # each head validates x0
        simulate(MultiHead((s, s)), torch.ones(1, 2, 3, dtype=F64), 1.0)


def test_multihead_stability_number_adds_over_heads():
    a, b = Sphere(V=2 * torch.eye(3)), Sphere(beta=3.0)
    assert stability_number(MultiHead((a, b)), 0.1) == pytest.approx(stability_number(a, 0.1) + stability_number(b, 0.1))
    assert stability_number(MultiHead((a, b), combine="mean"), 0.1) == pytest.approx(0.5 * (0.4 + 0.2))
    assert stability_number(MultiHead((Euclidean(), Euclidean())), 0.1) is None
    X, _, _ = _draw()
    with pytest.warns(StabilityWarning, match="MultiHead model's scale"):
        simulate(MultiHead((a, a, a)), X, 1.0, method="euler", dt=0.2)  # 0.2 * 2 * 2 * 3 = 2.4 > 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", StabilityWarning)
        simulate(MultiHead((a, a, a), combine="mean"), X, 1.0, method="euler", dt=0.2)  # 0.8: fine


# ----------------------------------------------------------------------------- your own model
@dataclasses.dataclass(frozen=True)
class _Rotating:
    """The chapter's own model: x_i' = Omega x_i + P_{x_i} sum_j softmax_j(beta <x_i, x_j>) x_j."""

    Omega: torch.Tensor
    beta: float = 1.0
    on_sphere = True

    def validate(self, X):
        return torch.as_tensor(X)

    def cast(self, X):
        return dataclasses.replace(self, Omega=self.Omega.to(X))

    def vector_field(self, t, X):
        F = attention_field(X, beta=self.beta)
        return X @ self.Omega.T + F - (F * X).sum(-1, keepdim=True) * X


def test_your_own_model_runs_and_is_the_rotated_sphere_flow():
    X, _, _ = _draw(trials=1, n=6)
    Omega = torch.tensor([[0.0, -1.0, 0.3], [1.0, 0.0, 0.0], [-0.3, 0.0, 0.0]], dtype=F64)
    assert isinstance(_Rotating(Omega), models.Model)
    ts = torch.linspace(0.0, 3.0, 4, dtype=F64)
    tight = dict(method="dopri5", rtol=1e-11, atol=1e-13, save_at=ts)
    x = simulate(_Rotating(Omega), X, 3.0, **tight).xs
    y = simulate(Sphere(beta=1.0), X, 3.0, **tight).xs
    R = torch.linalg.matrix_exp(ts[:, None, None] * Omega)
    assert (x - torch.einsum("tab,tinb->tina", R, y)).abs().max() < 1e-8
    # rotating the other way is wrong by far
    Rm = torch.linalg.matrix_exp(-ts[:, None, None] * Omega)
    assert (x - torch.einsum("tab,tinb->tina", Rm, y)).abs().max() > 1e-1
    # a MultiHead takes your own model as a head too
    m = MultiHead((_Rotating(Omega), Sphere(beta=1.0)), combine="mean")
    assert simulate(m, X, 1.0, dt=0.1).final.shape == X.shape


# ----------------------------------------------------------------------------- CUDA
@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 2e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("backend", ["sdpa", "dense", "blocked"])
def test_cuda_causal_field_matches_the_formula(backend, dtype, tol):
    X, A, V = _draw(trials=2, n=300, d=3)
    if backend == "sdpa" and dtype == torch.float64:
        pytest.skip("sdpa is taken for float32 on CUDA; float64 goes to the blocked path (covered)")
    got = attention_field(X.to("cuda", dtype), A.to("cuda", dtype), V.to("cuda", dtype), 2.0, backend=backend,
                          causal=True, block_elements=30_000)
    assert got.device.type == "cuda"
    torch.testing.assert_close(got.double().cpu(), _causal_reference(X, A, V, 2.0), rtol=0, atol=tol)


@pytest.mark.gpu
@needs_cuda
def test_cuda_multihead_causal_run_matches_cpu():
    X, A, V = _draw(trials=2, n=16, d=3)
    m = MultiHead((Sphere(A=A, V=V, beta=1.0, causal=True), Sphere(beta=2.0)))
    cpu = simulate(m, X, 2.0, dt=0.02).final
    gpu = simulate(m, X.cuda(), 2.0, dt=0.02).final
    assert gpu.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=0, atol=1e-12)
