"""companion.models.TimeVarying (issue 23, question 5): weights that vary along depth, piecewise
linear between knots, run by the same simulate; a constant path is the frozen model exactly."""
from __future__ import annotations

import math

import pytest
import torch

from companion import models
from companion.integrate import simulate

F64 = torch.float64
LAM = torch.diag(torch.tensor([1.0, 0.5, 0.25], dtype=F64))


def _tokens(trials=3, n=5, d=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(trials, n, d, generator=g, dtype=F64)
    return X / X.norm(dim=-1, keepdim=True)


def test_constant_path_is_the_frozen_model_exactly():
    X = _tokens()
    frozen = simulate(models.Sphere(A=LAM, V=LAM, beta=2.0), X, 5.0, method="rk4", dt=0.1).final
    for path in (LAM[None], LAM.expand(3, 3, 3).clone(), LAM.expand(3, 2, 3, 3).clone()):  # one knot, equal knots, per trial
        times = (0.0,) if path.shape[-3] == 1 else tuple(float(t) for t in range(path.shape[-3]))
        m = models.TimeVarying(times=times, V=path, A=path, beta=2.0)
        assert torch.equal(simulate(m, X, 5.0, method="rk4", dt=0.1).final, frozen)
    Ve = torch.diag(torch.tensor([1.0, 0.99], dtype=F64))
    Z = 3 * torch.randn(2, 6, 2, generator=torch.Generator().manual_seed(1), dtype=F64)
    fe = simulate(models.Euclidean(V=Ve), Z, 4.0, method="rk4", dt=0.1).final
    pe = simulate(models.TimeVarying(times=(0.0, 2.0), V=torch.stack([Ve, Ve]), geometry="euclidean"), Z, 4.0,
                  method="rk4", dt=0.1).final
    assert torch.equal(fe, pe)


def test_interpolation_and_hold():
    V = torch.stack([torch.diag(torch.tensor([1.0, 0.0])), torch.diag(torch.tensor([0.0, 1.0])), torch.diag(torch.tensor([2.0, 2.0]))])
    m = models.TimeVarying(times=(0.0, 1.0, 3.0), V=V)
    assert torch.equal(m.value_at(-1.0), V[0]) and torch.equal(m.value_at(1.0), V[1]) and torch.equal(m.value_at(9.0), V[2])
    assert torch.allclose(m.value_at(0.25), torch.diag(torch.tensor([0.75, 0.25])))
    assert torch.allclose(m.value_at(2.0), torch.diag(torch.tensor([1.0, 1.5])))
    assert m.score_at(0.5) is None and m.on_sphere
    A = torch.eye(2)
    assert models.TimeVarying(times=(0.0, 1.0, 3.0), V=V, A=A).score_at(2.0) is A  # a fixed score matrix
    mv = models.TimeVarying(times=(0.0, 1.0, 3.0), V=V, A=V)  # A(t) = V(t)
    assert torch.equal(mv.score_at(0.5), mv.value_at(0.5))
    assert not models.TimeVarying(times=[0.0], V=V[:1], geometry="euclidean").on_sphere
    models.check_model(m)


def test_a_turning_value_matrix_moves_a_token():
    """One token under V(t) = R diag(1, 0.5) R^T with R turning at 0.1 (gap 0.5): it lags the top
    eigenvector by 1/2 arcsin(2 * 0.1 / 0.5) (Adler's equation), the frozen-weight answer plus the lag."""
    w, T = 0.1, 60.0
    times = torch.arange(0.0, T + 0.025, 0.05, dtype=F64)
    c, s = torch.cos(w * times), torch.sin(w * times)
    V = torch.zeros(len(times), 2, 2, dtype=F64)
    V[:, 0, 0], V[:, 1, 1] = c * c + 0.5 * s * s, s * s + 0.5 * c * c
    V[:, 0, 1] = V[:, 1, 0] = 0.5 * c * s
    x0 = torch.tensor([[[1.0, 0.0]]], dtype=F64)
    x = simulate(models.TimeVarying(times=tuple(times.tolist()), V=V, A=V), x0, T, method="rk4", dt=0.1).final[0, 0]
    lag = math.remainder(w * T - math.atan2(float(x[1]), float(x[0])), math.pi)  # an eigenvector is defined up to sign
    assert lag == pytest.approx(0.5 * math.asin(2 * w / 0.5), abs=1e-4)


@pytest.mark.parametrize("kwargs, err, match", [
    (dict(times=(0.0, 0.0), V=LAM.expand(2, 3, 3)), ValueError, "strictly increasing"),
    (dict(times=(0.0, math.inf), V=LAM.expand(2, 3, 3)), ValueError, "strictly increasing"),
    (dict(times="ab", V=LAM[None]), TypeError, "times"),
    (dict(times=(0.0, 1.0), V=LAM[None]), ValueError, "knots"),
    (dict(times=(0.0,), V=LAM), ValueError, "knots"),
    (dict(times=(0.0,), V=[[1.0]]), TypeError, "V must be"),
    (dict(times=(0.0,), V=LAM[None], A=torch.eye(2)), ValueError, "A must be"),
    (dict(times=(0.0,), V=LAM[None] * math.nan), ValueError, "non-finite"),
    (dict(times=(0.0,), V=LAM[None], geometry="torus"), ValueError, "geometry"),
    (dict(times=(0.0,), V=LAM[None], beta=0.0), ValueError, "beta"),
    (dict(times=(0.0,), V=LAM[None], normalization="max"), ValueError, "normalization"),
])
def test_bad_construction(kwargs, err, match):
    with pytest.raises(err, match=match):
        models.TimeVarying(**kwargs)


def test_bad_states():
    m = models.TimeVarying(times=(0.0, 1.0), V=LAM.expand(2, 2, 3, 3).clone())
    with pytest.raises(ValueError, match="V has 2 trials"):
        simulate(m, _tokens(trials=3), 1.0, method="rk4", dt=0.1)
    with pytest.raises(ValueError, match="d = 2"):
        simulate(models.TimeVarying(times=(0.0,), V=LAM[None]), _tokens(d=2), 1.0, method="rk4", dt=0.1)
    with pytest.raises(ValueError, match="unit sphere"):
        simulate(models.TimeVarying(times=(0.0,), V=LAM[None]), 2 * _tokens(), 1.0, method="rk4", dt=0.1)
