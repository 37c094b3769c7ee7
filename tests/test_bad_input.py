"""Bad input gets a clear error naming the argument (issue 10): one parametrised table."""
from __future__ import annotations

import pytest
import torch

from companion import init, metrics, models, simulate
from companion.attention import attention_field

F64 = torch.float64
G = torch.Generator().manual_seed(0)
X3 = init.uniform_sphere(2, 5, 3, generator=torch.Generator().manual_seed(1))
I3 = torch.eye(3, dtype=F64)
NAN = X3.clone()
NAN[0, 0, 0] = float("nan")


CASES = [
    # (label, callable, exception, message fragment)
    ("tokens not a tensor", lambda: attention_field([[1.0, 0.0]]), TypeError, "X must be a torch.Tensor"),
    ("integer tokens", lambda: attention_field(torch.ones(2, 3, dtype=torch.int64)), TypeError, "floating dtype"),
    ("tokens wrong rank", lambda: attention_field(torch.ones(3, dtype=F64)), ValueError, "shape (trials, n, d)"),
    ("A wrong size", lambda: attention_field(X3, A=torch.eye(2, dtype=F64)), ValueError, "A must have shape (3, 3)"),
    ("V wrong size", lambda: simulate(models.Sphere(V=torch.eye(4)), X3, 1.0), ValueError, "V must have shape (3, 3)"),
    ("per-trial A count", lambda: attention_field(X3, A=torch.stack([I3] * 3)), ValueError, "A has 3 trials"),
    ("NaN tokens", lambda: simulate(models.Sphere(), NAN, 1.0), ValueError, "x0 has non-finite"),
    ("inf in A", lambda: attention_field(X3, A=I3 * float("inf")), ValueError, "A has non-finite"),
    ("off the sphere", lambda: simulate(models.Sphere(), 2 * X3, 1.0), ValueError, "x0 must lie on the unit sphere"),
    ("beta zero", lambda: models.Sphere(beta=0.0), ValueError, "beta must be > 0"),
    ("beta negative", lambda: attention_field(X3, beta=-1.0), ValueError, "beta must be > 0"),
    ("beta nan", lambda: models.spectral(I3, float("nan")), ValueError, "beta must be finite"),
    ("dt zero", lambda: simulate(models.Sphere(), X3, 1.0, dt=0.0), ValueError, "dt must be > 0"),
    ("dt negative", lambda: simulate(models.Sphere(), X3, 1.0, dt=-0.1), ValueError, "dt must be > 0"),
    ("t1 before t0", lambda: simulate(models.Sphere(), X3, -1.0), ValueError, "t1 must be finite"),
    ("unknown method", lambda: simulate(models.Sphere(), X3, 1.0, method="rk45"), ValueError, "method must be one of"),
    ("save_at outside", lambda: simulate(models.Sphere(), X3, 1.0, save_at=[0.0, 2.0]), ValueError, "save_at must lie in"),
    ("save_at decreasing", lambda: simulate(models.Sphere(), X3, 1.0, save_at=[0.5, 0.2]), ValueError, "non-decreasing"),
    ("rank zero", lambda: models.random_value_adapters(4, 3, 0, 1.0, 1.0, generator=G), ValueError, "rank must satisfy"),
    ("rank above d", lambda: models.random_value_adapters(4, 3, 4, 1.0, 1.0, generator=G), ValueError, "rank must satisfy"),
    ("negative s", lambda: models.random_value_adapters(4, 3, 2, -1.0, 1.0, generator=G), ValueError, "s must be a positive"),
    ("layer map depth", lambda: models.LayerMap(A=I3, V=I3), ValueError, "depth is required"),
    ("layer map off sphere", lambda: models.iterate_layers(models.LayerMap(A=I3, V=I3, depth=2), 2 * X3), ValueError, "unit sphere"),
    ("generator wrong type", lambda: init.uniform_sphere(1, 3, 3, generator=42), TypeError, "generator must be a torch.Generator"),
    ("n not positive", lambda: init.uniform_sphere(1, 0, 3, generator=G), ValueError, "n must be a positive integer"),
    ("cone delta", lambda: init.cone(1, 3, 3, 1.5, generator=G), ValueError, "delta must lie in"),
    ("unknown normalization", lambda: models.Sphere(normalization="l2"), ValueError, "normalization must be one of"),
    ("spectral V not symmetric", lambda: models.spectral(torch.triu(torch.ones(3, 3)), 1.0), ValueError, "V must be symmetric"),
    ("wasserstein dims", lambda: metrics.wasserstein(X3, torch.ones(1, 4, 2, dtype=F64)), ValueError, "same dimension d"),
    ("wasserstein p", lambda: metrics.wasserstein(X3, X3, 0.5), ValueError, "p must be >= 1"),
    ("sliced geodesic", lambda: metrics.wasserstein(X3, X3, solver="sliced", cost="geodesic"), ValueError, "sliced"),
    ("cluster tol", lambda: metrics.cluster_count(X3, 0.0), ValueError, "tol must be > 0"),
    ("subspace basis", lambda: metrics.project_to_subspace(X3, torch.ones(2, 1)), ValueError, "basis must have shape"),
    ("Pi undefined", lambda: metrics.project_to_subspace(torch.tensor([[0.0, 1.0]]), torch.tensor([1.0, 0.0])), ValueError, "orthogonal to the subspace"),
    ("zero-T B^T x = 0", lambda: simulate(models.ZeroTemperature(B=torch.diag(torch.tensor([1.0, 0.0])), V=torch.eye(2)), torch.tensor([[0.0, 1.0]]), 1.0), ValueError, "B^T x = 0"),
    ("not a model", lambda: simulate(I3, X3, 1.0), TypeError, "Tensor lacks on_sphere, validate(X), cast(X), vector_field(t, X)"),
    ("unknown OT solver", lambda: metrics.wasserstein(X3, X3, solver="fast"), ValueError, "solver must be one of"),
    ("unknown cluster criterion", lambda: metrics.cluster_count(X3, 0.1, criterion="kmeans"), ValueError, "criterion must be one of"),
    ("linkage without tol", lambda: metrics.cluster_count(X3), ValueError, "needs tol"),
    ("density on points", lambda: metrics.cluster_count(X3, criterion="density"), ValueError, "X must be (trials, n, 1)"),
    ("density with tol", lambda: metrics.cluster_count(X3[..., :1], 0.1, criterion="density"), ValueError, "tol applies to criterion='linkage'"),
    ("linkage with bins", lambda: metrics.cluster_centres(X3, 0.1, bins=64), ValueError, "bins apply to criterion='density'"),
    ("orthogonal without generator", lambda: init.random_orthogonal(3, generator=None), TypeError, "generator must be a torch.Generator"),
    ("orthogonal size", lambda: init.random_orthogonal(0, generator=G), ValueError, "d must be a positive integer"),
    ("angles n", lambda: init.uniform_angles(1, 0, generator=G), ValueError, "n must be a positive integer"),
    ("angle grid", lambda: init.angle_grid(0), ValueError, "M must be a positive integer"),
    ("max_steps zero", lambda: simulate(models.Sphere(), X3, 1.0, max_steps=0), ValueError, "max_steps must be >= 1"),
    ("max_steps fractional", lambda: simulate(models.Sphere(), X3, 1.0, max_steps=2.5), TypeError, "max_steps must be an integer"),
    ("max_steps bool", lambda: simulate(models.Sphere(), X3, 1.0, max_steps=True), TypeError, "max_steps must be an integer"),
    ("fixed steps over max_steps", lambda: simulate(models.Sphere(), X3, 1.0, dt=1e-3, max_steps=10), ValueError, "needs 1000 steps"),
    ("rtol below roundoff", lambda: simulate(models.Sphere(), X3, 1.0, method="dopri5", rtol=1e-300, atol=1e-300), ValueError, "below the unit roundoff"),
    ("rk4 step far too large", lambda: simulate(models.Sphere(V=2 * I3), X3, 10.0, dt=10.0), ValueError, "the hard limit"),
    ("meta tokens", lambda: simulate(models.Sphere(), X3.to("meta"), 1.0), ValueError, "x0 is on the 'meta' device"),
    ("meta V", lambda: simulate(models.Sphere(V=torch.eye(3, device="meta")), X3, 1.0), ValueError, "V is on the 'meta' device"),
]


@pytest.mark.parametrize("label,call,exc,fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_a_clear_error(label, call, exc, fragment):
    with pytest.raises(exc) as info:
        call()
    assert fragment in str(info.value), f"{label}: message was {info.value!s}"
