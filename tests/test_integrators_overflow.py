"""Issue 31, group 1 (float32 overflow) and group 9 (simulate's argument types).

Before the fix the fused kernel raised ``SystemError ... returned a result with an exception set``
(a ZeroDivisionError inside numba) on every overflowing input, dopri5 never got to reject the step,
and ``backend="dense"`` returned all-NaN silently; simulate took ``t1="1.0"`` and ``t1=True``.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import companion._fused as F
from companion import init, models, simulate
from companion.attention import attention_field

X64 = init.uniform_sphere(1, 10, 3, generator=torch.Generator().manual_seed(3))
X32 = X64.float()
needs_numba = pytest.mark.skipif(not F.HAVE_NUMBA, reason="numba is not installed (make venv installs it)")


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _names_float32_and_fix(err: pytest.ExceptionInfo) -> None:
    msg = str(err.value)
    assert "float32" in msg and "float64" in msg, msg  # the dtype, and what to do


# ----------------------------------------------------------------------------- group 1: the field
@needs_numba
@pytest.mark.parametrize("backend", ["auto", "fused", "dense", "blocked"])
@pytest.mark.parametrize("case", ["big tokens", "big beta"])
def test_an_overflowing_float32_field_is_refused_naming_the_dtype(backend, case):
    # scores beta <x_i, x_j> = 1e40 or 1e39 do not fit float32 (largest 3.4e38) on any path
    X, beta = (X32 * 1e20, 1.0) if case == "big tokens" else (X32, 1e39)
    with pytest.raises(FloatingPointError) as err:
        attention_field(X, beta=beta, backend=backend)
    _names_float32_and_fix(err)


@needs_numba
def test_the_same_inputs_in_float64_are_computed():
    # the refusal is about float32's range, not the inputs: float64 computes them (hardmax limit:
    # with scores ~1e40 each token's weight sits on the token of largest <x_i, x_j>, itself or a neighbour)
    out = attention_field(X64 * 1e20, beta=1.0)
    assert torch.isfinite(out).all()
    S = (X64 @ X64.mT)[0]
    expect = (X64[0] * 1e20)[S.argmax(dim=1)]
    assert torch.allclose(out[0], expect, rtol=1e-12)


@needs_numba
def test_sphere_model_with_a_huge_A_in_float32():
    # A = 1e37 I: scores up to 1e37 fit float32 but the query norms |beta A x_i|^2 = 1e74 do not
    with pytest.raises(FloatingPointError) as err:
        simulate(models.Sphere(A=1e37 * torch.eye(3)), X32, 1.0, dt=0.1)
    _names_float32_and_fix(err)
    # 1e39 does not even fit float32: refused when cast to x0's dtype (a clear error, not a SystemError)
    with pytest.raises((ValueError, FloatingPointError), match="A|float32"):
        simulate(models.Sphere(A=1e39 * torch.eye(3)), X32, 1.0, dt=0.1)


@needs_numba
@pytest.mark.parametrize("method", ["euler", "rk4", "dopri5", "tsit5"])
def test_a_float32_euclidean_run_that_outgrows_float32_stops_with_a_floating_point_error(method):
    # tokens grow like e^t (V = I): |x|^2 passes 3.4e38 near t = 44; float64 reaches t = 50
    with pytest.raises(FloatingPointError) as err:
        simulate(models.Euclidean(), X32, 50.0, method=method)
    _names_float32_and_fix(err)
    assert "t = 4" in str(err.value)  # where: the time it stopped at (43-46)
    assert torch.isfinite(simulate(models.Euclidean(), X64, 50.0, method=method).final).all()


@needs_numba
@pytest.mark.parametrize("method", ["dopri5", "tsit5"])
def test_an_adaptive_step_whose_stages_overflow_is_rejected_and_shrunk(method, monkeypatch):
    # V = -50 I, |x0| = 1e17: the solution decays (|x|^2 <= 1e34 fits float32), but the first trial step
    # (h = 0.2, 50 h = 10, far past stability) has stages up to ~2000 |x0| (measured) whose squared norms
    # overflow float32. The kernel refuses those stages, the step is rejected and shrunk, and the run
    # finishes; the old kernel raised SystemError out of the first trial step.
    refused = []
    kernel = F.fused_field

    def counting(*args, **kw):
        try:
            return kernel(*args, **kw)
        except FloatingPointError:
            refused.append(1)
            raise

    monkeypatch.setattr(F, "fused_field", counting)
    V = -50.0 * torch.eye(3)
    sol = simulate(models.Euclidean(V=V), X32 * 1e17, 0.2, method=method, dt=1.0, rtol=1e-6, atol=1.0)
    assert refused and sol.stats["rejected"] >= 1
    ref = simulate(models.Euclidean(V=V), X64 * 1e17, 0.2, method="rk4", dt=1e-4).final  # float64, a second method
    assert ((sol.final.double() - ref).abs().max() / ref.abs().max()).item() < 1e-4


@needs_numba
def test_range_problem_bounds_are_what_the_kernel_needs():
    none = np.zeros((0, 0, 0), dtype=np.float32)
    X = np.ones((1, 4, 3), dtype=np.float32)
    assert F.range_problem(X, 1.0, none, none, 1.0, 4) is None
    assert "squared norm" in F.range_problem(X, np.inf, none, none, 1.0, 4)
    Xn = X.copy()
    Xn[0, 0, 0] = np.nan
    assert "not finite" in F.range_problem(Xn, np.inf, none, none, 1.0, 4)
    # the value sums: m |V| K with m = 1e30 tokens (a bound, no array of that size)
    assert "value sums" in F.range_problem(X, 1e10, none, none, 1e-30, 10**30)


# ----------------------------------------------------------------------------- group 9: argument types
@pytest.mark.parametrize("t1", ["1.0", True, torch.tensor([1.0, 2.0]), None, 1j])
def test_t1_of_the_wrong_type_is_refused_naming_t1(t1):
    with pytest.raises(TypeError, match="t1"):
        simulate(models.Sphere(), X64, t1)


def test_t0_of_the_wrong_type_is_refused_naming_t0():
    with pytest.raises(TypeError, match="t0"):
        simulate(models.Sphere(), X64, 1.0, t0="0")


def test_t1_as_a_number_of_any_real_kind_is_accepted():
    for t1 in (1, 1.0, np.float64(1.0), torch.tensor(1.0), torch.tensor([1.0])):
        assert simulate(models.Sphere(), X64, t1).config["t1"] == 1.0


@pytest.mark.parametrize("save_at,error,match", [
    (["0", "1"], TypeError, r"save_at\[0\]"),
    ([0.0, True], TypeError, r"save_at\[1\]"),
    ("01", TypeError, "save_at"),
    (0.5, TypeError, "save_at"),
    ([[0.0, 0.5], [0.7, 1.0]], ValueError, "1-D"),
    (torch.tensor([[0.0, 0.5], [0.7, 1.0]]), ValueError, "1-D"),
    (np.zeros((2, 1)), ValueError, "1-D"),
    (torch.tensor([True, False]), TypeError, "save_at"),
    ([0.0, float("nan")], ValueError, "save_at"),
])
def test_bad_save_at_is_refused_naming_it(save_at, error, match):
    with pytest.raises(error, match=match):
        simulate(models.Sphere(), X64, 1.0, save_at=save_at)


def test_one_dimensional_save_at_of_any_kind_is_accepted():
    for save_at in ([0.0, 0.5, 1.0], (0, 0.5, 1), np.array([0.0, 0.5, 1.0]), torch.tensor([0.0, 0.5, 1.0])):
        assert simulate(models.Sphere(), X64, 1.0, save_at=save_at).ts.tolist() == [0.0, 0.5, 1.0]


@pytest.mark.parametrize("kw,error", [({"error_norm": "max"}, ValueError), ({"fsal": 1}, TypeError)])
def test_new_options_are_checked(kw, error):
    with pytest.raises(error, match=next(iter(kw))):
        simulate(models.Sphere(), X64, 1.0, method="tsit5", **kw)
