"""Issue 18, the bad-input items of the models, metrics, fields and draws: each refused early with an
error naming the argument and the problem, and the pairwise metrics in memory linear in n."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from companion import circle, init, metrics, models, simulate
from companion.attention import attention_field

F64 = torch.float64
C128 = torch.complex128
X3 = init.uniform_sphere(2, 5, 3, generator=torch.Generator().manual_seed(1))
I3 = torch.eye(3, dtype=F64)
G = torch.Generator().manual_seed(0)


def _half_draw():
    """float16 tokens normalised in float16: up to 1e-3 off the sphere (float16's resolution near 1)."""
    g = torch.randn(2, 50, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float16)
    return g / g.norm(dim=-1, keepdim=True)


CASES = [
    # (label, callable, exception, message fragment)
    # item 8: the geodesic cost clipped <x, y> and returned W(2X, X) = 0
    ("geodesic X off the sphere", lambda: metrics.wasserstein(2 * X3, X3, cost="geodesic"), ValueError,
     "X (cost='geodesic') must lie on the unit sphere for this model: max | |x_i| - 1 | = 1"),
    ("geodesic Y off the sphere", lambda: metrics.wasserstein(X3, 0.5 * X3, cost="geodesic"), ValueError,
     "Y (cost='geodesic') must lie on the unit sphere for this model: max | |x_i| - 1 | = 0.5"),
    # item 9: complex matrices were cast to real with a warning, in every constructor taking matrices
    ("complex V, Sphere", lambda: models.Sphere(V=I3.to(C128)), TypeError, "V must be real, got dtype torch.complex128"),
    ("complex A, Euclidean", lambda: models.Euclidean(A=I3.to(C128)), TypeError, "A must be real"),
    ("complex V, Rescaled", lambda: models.Rescaled(V=I3.to(C128)), TypeError, "V must be real"),
    ("complex V, capped", lambda: models.ScaleCappedRescaled(A=I3, V=I3.to(C128)), TypeError, "V must be real"),
    ("complex B, zero temperature", lambda: models.ZeroTemperature(B=I3.to(C128), V=I3), TypeError, "B must be real"),
    ("complex dV, layer map", lambda: models.LayerMap(A=I3, V=I3, dV=I3.to(C128), depth=2), TypeError, "dV must be real"),
    ("complex numpy V", lambda: models.low_temperature(I3, np.eye(3) * (1 + 0j), 1.0), TypeError, "V must be real"),
    ("complex from_qkv", lambda: models.from_qkv(I3, I3, I3.to(C128)), TypeError, "V must be real"),
    ("complex V, field", lambda: attention_field(X3, V=I3.to(C128)), TypeError, "V must be real"),
    ("complex V, energy", lambda: metrics.interaction_energy(X3, I3.to(C128), 1.0), TypeError, "V must be real"),
    ("complex s, adapters", lambda: models.random_value_adapters(2, 3, 1, 1 + 1j, 1.0, generator=G), TypeError, "s must be real"),
    # item 10: masses in a non-orthonormal basis
    ("eigvecs not orthonormal", lambda: metrics.modal_masses(X3, 2 * I3), ValueError,
     "eigvecs must have orthonormal columns (masses of another basis do not sum to the tokens' norms): max |E^T E - I| = 3"),
    ("eigvecs skewed", lambda: metrics.modal_masses(X3, I3 + 0.01 * torch.triu(torch.ones(3, 3, dtype=F64), 1)), ValueError,
     "max |E^T E - I| = 0.01"),
    # scalars checked at construction: type, finite, sign
    ("beta a string", lambda: models.Sphere(beta="2"), TypeError, "beta must be a real number, got str '2'"),
    ("beta a bool", lambda: models.metastable(True), TypeError, "beta must be a real number, got bool True"),
    ("beta complex", lambda: models.Euclidean(beta=1j), TypeError, "beta must be a real number"),
    ("beta a vector", lambda: models.Sphere(beta=torch.ones(2)), TypeError, "beta must be a real number"),
    ("beta inf", lambda: models.Rescaled(beta=math.inf), ValueError, "beta must be finite"),
    ("beta a string, layer map", lambda: models.LayerMap(A=I3, V=I3, depth=2, beta="1"), TypeError, "beta must be a real number"),
    ("beta a string, field", lambda: attention_field(X3, beta="1"), TypeError, "beta must be a real number"),
    ("beta a string, circle", lambda: circle.Circle("5"), TypeError, "beta must be a real number"),
    ("tol a string, circle", lambda: circle.Circle(5.0, tol="1e-16"), TypeError, "tol must be a real number"),
    ("unknown backend at construction", lambda: models.Sphere(backend="gpu"), ValueError, "backend must be one of"),
    ("t_cap negative", lambda: models.ScaleCappedRescaled(A=I3, V=I3, t_cap=-1.0), ValueError, "t_cap must be >= 0"),
    ("t_cap a string", lambda: models.ScaleCappedRescaled(A=I3, V=I3, t_cap="150"), TypeError, "t_cap must be a real number"),
    ("depth fractional", lambda: models.LayerMap(A=I3, V=I3, depth=2.5), TypeError, "depth must be an integer"),
    ("depth a string", lambda: models.random_value_adapters("4", 3, 2, 1.0, 1.0, generator=G), TypeError, "depth must be an integer"),
    ("rank fractional", lambda: models.random_value_adapters(4, 3, 1.5, 1.0, 1.0, generator=G), TypeError, "rank must be an integer"),
    ("eta a string", lambda: models.random_value_adapters(4, 3, 2, 1.0, "0.5", generator=G), TypeError, "eta must be a real number"),
    ("save_every a string", lambda: models.iterate_layers(models.LayerMap(A=I3, V=I3, depth=2), X3, save_every="1"), TypeError,
     "save_every must be an integer"),
    ("p a string", lambda: metrics.wasserstein(X3, X3, "2"), TypeError, "p must be a real number"),
    ("tol a string, clusters", lambda: metrics.cluster_count(X3, "0.1"), TypeError, "tol must be a real number"),
    ("level a string", lambda: metrics.cluster_count(X3[..., :1], criterion="density", level="4"), TypeError, "level must be a real number"),
    ("bins fractional", lambda: metrics.cluster_count(X3[..., :1], criterion="density", bins=10.5), TypeError, "bins must be an integer"),
    ("radius a string", lambda: init.ball(1, 3, 3, "1", generator=G), TypeError, "radius must be a real number"),
    ("delta a string", lambda: init.cone(1, 3, 3, "0.5", generator=G), TypeError, "delta must be a real number"),
    ("n a bool", lambda: init.uniform_sphere(1, True, 3, generator=G), TypeError, "n must be a positive integer"),
    ("zero point, no noise", lambda: init.near_point(torch.zeros(3), 1, 2, 0.0, generator=G), ValueError, "point must be non-zero"),
    # half precision: refused where the package draws, and by the models with what to do
    ("float16 draw", lambda: init.uniform_sphere(1, 3, 3, generator=G, dtype=torch.float16), TypeError,
     "dtype must be torch.float32 or torch.float64, got torch.float16"),
    ("bfloat16 draw", lambda: init.cube(1, 3, 3, generator=G, dtype=torch.bfloat16), TypeError, "dtype must be torch.float32"),
    ("float16 tokens", lambda: simulate(models.Sphere(), _half_draw(), 0.1), TypeError,
     "x0 has dtype torch.float16; companion computes in torch.float32 or torch.float64"),
    ("float16 tokens say what to do", lambda: simulate(models.Euclidean(), _half_draw(), 0.1), TypeError,
     "pass x0.float() or x0.double()"),
    ("float16 angles", lambda: simulate(circle.Circle(2.0), torch.zeros(1, 3, 1, dtype=torch.float16), 0.1), TypeError,
     "x0 has dtype torch.float16"),
    # the large-beta usa refusal says what helps in the dtype at hand
    ("usa overflow in float64", lambda: models.metastable(1e4, "usa").vector_field(0.0, X3), ValueError,
     "lower beta (or the scale of A) so that beta <A x_i, x_j> stays below ~700"),
    ("usa overflow in float32", lambda: models.metastable(1e4, "usa").vector_field(0.0, X3.float()), ValueError,
     "use float64 tokens"),
    # sliced Wasserstein: NaN or a raw numpy error before
    ("n_projections zero", lambda: metrics.wasserstein(X3, X3, solver="sliced", n_projections=0), ValueError,
     "n_projections must be >= 1, got 0"),
    ("n_projections negative", lambda: metrics.wasserstein(X3, X3, solver="sliced", n_projections=-3), ValueError,
     "n_projections must be >= 1"),
    ("n_projections fractional", lambda: metrics.wasserstein(X3, X3, solver="sliced", n_projections=2.5), TypeError,
     "n_projections must be an integer"),
    ("seed a string", lambda: metrics.wasserstein(X3, X3, solver="sliced", seed="a"), TypeError, "seed must be an integer"),
    ("seed negative", lambda: metrics.wasserstein(X3, X3, solver="sliced", seed=-1), ValueError, "seed must lie in"),
    # meta tensors in the fields and metrics: a torch internal message before
    ("meta basis", lambda: metrics.distance_to_subspace(X3, torch.ones(3, 1, device="meta")), ValueError,
     "basis is on the 'meta' device"),
    ("meta point", lambda: init.near_point(torch.ones(3, device="meta"), 1, 2, 0.1, generator=G), ValueError,
     "point is on the 'meta' device"),
    ("meta beta", lambda: models.Sphere(beta=torch.tensor(1.0, device="meta")), ValueError, "beta is on the 'meta' device"),
    ("meta A at construction", lambda: models.Sphere(A=torch.eye(3, device="meta")), ValueError, "A is on the 'meta' device"),
    ("meta tokens, field", lambda: attention_field(X3.to("meta")), ValueError, "X is on the 'meta' device"),
    ("meta tokens, wasserstein", lambda: metrics.wasserstein(X3.to("meta"), X3), ValueError, "X is on the 'meta' device"),
    ("meta tokens, rho_min", lambda: metrics.rho_min(X3.to("meta")), ValueError, "X is on the 'meta' device"),
    # found by tests/test_property.py
    ("float16 tokens, metric", lambda: metrics.cluster_count(X3.half(), 0.1), TypeError, "X has dtype torch.float16"),
    ("float16 tokens, field", lambda: attention_field(X3.half()), TypeError, "X has dtype torch.float16"),
    ("usa circle field overflows float32", lambda: circle.circle_field(torch.zeros(1, 2, 1), 200.0, "usa"), ValueError,
     "beta = 200 is too large for the USA field in torch.float32"),
    ("usa circle model in float32", lambda: simulate(circle.Circle(200.0), torch.zeros(1, 2, 1), 0.1), ValueError,
     "use float64 angles"),
    ("Fourier modes beyond reach", lambda: circle.Circle(1e8, "softmax"), ValueError, "beta = 1e+08 is too large for the Fourier field"),
    ("energy overflows", lambda: metrics.interaction_energy(X3, 1e3 * I3, 5.0), ValueError, "pass log=True"),
    ("W_p overflows", lambda: metrics.wasserstein(1e200 * X3, X3), ValueError, "W_p of X and Y overflows float64"),
]


@pytest.mark.parametrize("label,call,exc,fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_a_clear_error(label, call, exc, fragment):
    with pytest.raises(exc) as info:
        call()
    assert fragment in str(info.value), f"{label}: {info.value}"


def test_the_usa_message_no_longer_offers_float64_to_float64_tokens():
    with pytest.raises(ValueError) as info:
        models.metastable(1e4, "usa").vector_field(0.0, X3)
    assert "use float64" not in str(info.value)


def test_geodesic_distance_of_unit_tokens_is_still_computed():
    """The refusal is only for off-sphere tokens: antipodal single tokens are pi apart."""
    x = torch.tensor([[[1.0, 0.0]]], dtype=F64)
    assert metrics.wasserstein(x, -x, cost="geodesic").item() == pytest.approx(math.pi, abs=1e-12)


def test_orthonormal_eigvecs_are_accepted_in_float32():
    E = init.random_orthogonal(3, generator=torch.Generator().manual_seed(3))
    m = metrics.modal_masses(X3.float(), E.float())
    assert torch.allclose(m.sum(-1), torch.ones(2), atol=1e-5)  # unit tokens: masses sum to 1


def test_a_dense_circle_takes_any_beta():
    """The Fourier limit is the Fourier backends': the dense field at beta = 1e8 is the argmax pull."""
    v = circle.Circle(1e8, "softmax", backend="dense").vector_field(0.0, torch.tensor([[[0.0], [0.5]]], dtype=F64))
    assert bool(torch.isfinite(v).all())


def test_the_softmax_fourier_field_takes_beta_beyond_the_usa_limit():
    """Found by tests/test_property.py: the USA factor e^beta was computed for softmax too (OverflowError)."""
    th = torch.tensor([[[0.0], [0.5]]], dtype=F64)
    a, b = circle.circle_field(th, 1000.0, "softmax"), circle.circle_field(th, 1000.0, "softmax", backend="dense")
    assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)


def test_beta_is_stored_as_a_float():
    m = models.Sphere(beta=torch.tensor(2.0, dtype=F64))
    assert type(m.beta) is float and m.beta == 2.0


# ----------------------------------------------------------------------------- blocked pair metrics


def _dense_rho_min(X):
    G = X @ X.transpose(-1, -2)
    eye = torch.eye(X.shape[1], dtype=torch.bool)
    return G.masked_fill(eye, math.inf).amin(dim=(-1, -2))


def _components(X, tol):
    """Reference labels by breadth-first search over the dense adjacency, one trial at a time: a search
    started from the smallest unlabelled index labels its component with that index, its minimum."""
    out = []
    for x in X:
        adj = (torch.cdist(x[None], x[None])[0] < tol).numpy()
        lab = -np.ones(len(x), dtype=np.int64)
        for s in range(len(x)):
            if lab[s] >= 0:
                continue
            lab[s], todo = s, [s]
            while todo:
                i = todo.pop()
                for j in np.nonzero(adj[i] & (lab < 0))[0]:
                    lab[j] = s
                    todo.append(j)
        out.append(lab)
    return torch.from_numpy(np.stack(out))


@pytest.mark.parametrize("limit", [10**9, 700, 37, 1], ids=["one block", "trial blocks", "row blocks", "one row"])
def test_blocked_rho_min_equals_the_dense_one_bitwise(monkeypatch, limit):
    X = init.uniform_sphere(3, 40, 4, generator=torch.Generator().manual_seed(5))
    monkeypatch.setattr(metrics, "_BLOCK_ELEMENTS", limit)
    assert torch.equal(metrics.rho_min(X), _dense_rho_min(X))


@pytest.mark.parametrize("limit", [10**9, 700, 37, 1], ids=["one block", "trial blocks", "row blocks", "one row"])
def test_blocked_clusters_equal_breadth_first_components(monkeypatch, limit):
    g = torch.Generator().manual_seed(2)
    # a chain of 30 tokens 0.09 apart (diameter 29: many rounds of propagation) plus random tokens
    chain = torch.stack([torch.arange(30, dtype=F64) * 0.09, torch.zeros(30, dtype=F64)], -1)
    X = torch.cat([chain[torch.randperm(30, generator=g)], torch.rand(30, 2, generator=g, dtype=F64) * 3 + 4])[None]
    X = torch.cat([X, torch.rand(1, 60, 2, generator=g, dtype=F64) * 2])
    monkeypatch.setattr(metrics, "_BLOCK_ELEMENTS", limit)
    labels = metrics.cluster_labels(X, 0.1)
    ref = _components(X, 0.1)
    assert torch.equal(labels, ref)
    assert torch.equal(metrics.cluster_count(X, 0.1), torch.tensor([len(set(r.tolist())) for r in ref]))


MEMORY_CODE = """
import resource, torch
torch.set_num_threads(2)
from companion import metrics
g = torch.Generator().manual_seed(0)
X = torch.nn.functional.normalize(torch.randn(1, {n}, 3, generator=g, dtype=torch.float64), dim=-1)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
r = metrics.rho_min(X)
c = metrics.cluster_count(X, 1e-3)
assert r.shape == (1,) and -1 <= r.item() < -0.99 and 1 <= c.item() <= {n}
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 2**20)
"""


@pytest.mark.slow
def test_pair_metrics_memory_is_linear_in_n():
    """n = 12,000: one dense Gram or distance matrix is 1.15 GB, and the dense code held two or three
    (past the 3 GB address-space limit with torch's own ~1.5 GB); blocked, the two metrics together grow
    resident memory by less than 0.25 GB (blocks of 2**22 pairs: 32 MiB of float64 each)."""
    n = 12_000
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    limit = 3 * 2**30

    def cap():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    out = subprocess.run([sys.executable, "-c", MEMORY_CODE.format(n=n)], capture_output=True, text=True, env=env,
                         preexec_fn=cap, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    grew_gb = float(out.stdout.strip())
    assert grew_gb < 0.25, f"rho_min and cluster_count grew resident memory by {grew_gb:.2f} GB at n = {n}"
