"""Every model x every stepper of ``simulate`` against references that do not use it (issue 47, item 2).

In the manner of diffrax's test helpers: a list of problems, each a model of :mod:`companion.models`
(or :class:`companion.circle.Circle`, or one written from the protocol alone) with initial tokens and
a reference solution, crossed with every stepper of :data:`companion.integrate.SOLVERS`. A reference
is a closed form where one exists (a linear flow: uniform weights, a consensus, tokens that attend to
themselves) and otherwise scipy's DOP853 at rtol 1e-12 on the model's own field, in the ambient space
(the exact flow of a tangent field stays on the sphere). None is a stored output of ``simulate``.
Then the parts on their own: the steppers against their stability polynomials, the controllers'
rules against their formulas, :class:`SaveAt`, and a stepper written outside the package.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Callable

import numpy as np
import pytest
import torch

from companion import circle, models, simulate
from companion.integrate import (DOPRI5, RK4, SOLVERS, TSIT5, ConstantStepSize, Euler, SaveAt, StepSizeController, Tally,
                                 solver)
from companion.theory.consensus import consensus_solution

F64 = torch.float64
T1 = 1.0
FIXED = [name for name, s in SOLVERS.items() if not s.adaptive]
ADAPTIVE = [name for name, s in SOLVERS.items() if s.adaptive]

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _sym(seed: int, scale: float = 1.0, d: int = 3) -> torch.Tensor:
    G = torch.randn(d, d, generator=_gen(seed), dtype=F64)
    return scale * (G + G.T) / 2


def _mat(seed: int, scale: float = 1.0, d: int = 3) -> torch.Tensor:
    return scale * torch.randn(d, d, generator=_gen(seed), dtype=F64)


def _unit(seed: int, trials: int = 2, n: int = 4, d: int = 3) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.randn(trials, n, d, generator=_gen(seed), dtype=F64), dim=-1)


def _consensus(seed: int, trials: int = 2, n: int = 4, d: int = 3) -> torch.Tensor:
    """Every trial's n tokens at one point of the sphere (a point per trial)."""
    return _unit(seed, trials, 1, d).expand(trials, n, d).contiguous()


# ----------------------------------------------------------------------------- closed forms
def _linear(V: torch.Tensor, X: torch.Tensor, t: float) -> torch.Tensor:
    """e^{tV} x for every token row of X : (trials, n, d)."""
    return X @ torch.linalg.matrix_exp(t * V).T


def _mean_flow(V: torch.Tensor) -> Callable:
    """x_i' = V mean_j x_j (uniform weights): the mean follows e^{tV}, the deviations from it stay."""
    def exact(X0, t):
        m0 = X0.mean(dim=1, keepdim=True)
        return X0 - m0 + _linear(V, m0, t)
    return exact


def _rescaled_mean_flow(V: torch.Tensor) -> Callable:
    """z_i' = V (mean_j z_j - z_i): the mean stays, the deviations follow e^{-tV}."""
    def exact(X0, t):
        m0 = X0.mean(dim=1, keepdim=True)
        return m0 + _linear(V, X0 - m0, -t)
    return exact


def _sphere_flow(V: torch.Tensor) -> Callable:
    """x' = P_x V x for every token on its own: x(t) = e^{tV} x0 / |e^{tV} x0|."""
    def exact(X0, t):
        return torch.nn.functional.normalize(_linear(V, X0, t), dim=-1)
    return exact


def _consensus_flow(V: torch.Tensor) -> Callable:
    """A consensus moves as one token (:func:`companion.theory.consensus.consensus_solution`)."""
    def exact(X0, t):
        return torch.stack([consensus_solution(X0[k, 0], V, t)[0].expand_as(X0[k]) for k in range(X0.shape[0])])
    return exact


KNOTS = (0.0, 0.5, 1.0)
V_DIAG = torch.tensor([[1.0, -0.5, 0.3], [-1.0, 0.5, 0.8], [0.2, 0.2, -1.0]], dtype=F64)  # diag(V_k), one row a knot


def _knots_integral(t: float) -> torch.Tensor:
    """int_0^t diag V(s) ds for V piecewise linear between KNOTS (trapezoids), (d,)."""
    out = torch.zeros(3, dtype=F64)
    for k in range(len(KNOTS) - 1):
        a, b = KNOTS[k], min(KNOTS[k + 1], t)
        if b <= a:
            break
        va = V_DIAG[k]
        vb = va + (b - a) / (KNOTS[k + 1] - a) * (V_DIAG[k + 1] - va)
        out += (b - a) * (va + vb) / 2
    return out


def _time_varying_mean_flow(X0, t):
    """x_i' = V(t) mean_j x_j with V(t) diagonal: the mean follows exp(int V), the deviations stay."""
    m0 = X0.mean(dim=1, keepdim=True)
    return X0 - m0 + m0 * torch.exp(_knots_integral(t))


def _decay_exact(X0, t):
    """x' = -x + sin t: x(t) = (x0 + 1/2) e^{-t} + (sin t - cos t) / 2."""
    return (X0 + 0.5) * math.exp(-t) + (math.sin(t) - math.cos(t)) / 2


class Decay:
    """x' = -x + sin t, written from the protocol alone (no companion class, no parameters)."""

    on_sphere = False

    def validate(self, X):
        return X

    def cast(self, X):
        return self

    def vector_field(self, t, X):
        return -X + math.sin(t)


# ----------------------------------------------------------------------------- the problems
@dataclasses.dataclass(frozen=True)
class Problem:
    """A model, its initial tokens (float64) and its reference: ``exact(X0, t)`` or, when None, DOP853."""

    model: object
    x0: torch.Tensor
    exact: Callable | None = None

    def reference(self, t: float = T1) -> torch.Tensor:
        return self.exact(self.x0, t) if self.exact is not None else _dop853(self, t)


def _problems() -> dict[str, Problem]:
    V, A = _sym(1), _mat(2)
    xe = torch.randn(2, 4, 3, generator=_gen(3), dtype=F64)
    knots_v = torch.diag_embed(V_DIAG)  # (K, d, d)
    sphere_knots = torch.stack([_sym(4), _sym(5), _sym(6)])
    zeros = torch.zeros(3, 3, dtype=F64)
    return {
        "euclidean-uniform": Problem(models.Euclidean(A=zeros, V=V), xe, _mean_flow(V)),
        "euclidean": Problem(models.Euclidean(A=_mat(7, 0.5), V=_sym(8, 0.5), beta=1.5), xe),
        "euclidean-usa-causal": Problem(models.Euclidean(A=_mat(7, 0.1), V=_sym(8, 0.3), normalization="usa", causal=True), xe),
        "rescaled-uniform": Problem(models.Rescaled(A=zeros, V=V), xe, _rescaled_mean_flow(V)),
        "rescaled": Problem(models.Rescaled(A=_mat(9, 0.5), V=_sym(10, 0.5)), xe),
        "scale-capped-uniform": Problem(models.ScaleCappedRescaled(A=zeros, V=V), xe, _rescaled_mean_flow(V)),
        "scale-capped": Problem(models.ScaleCappedRescaled(A=_sym(11, 0.3), V=_sym(12, 0.5)), xe),
        "sphere-consensus": Problem(models.Sphere(A=A, V=V, beta=2.0), _consensus(13), _consensus_flow(V)),
        "sphere": Problem(models.Sphere(A=A, V=V, beta=2.0), _unit(14)),
        "sphere-usa": Problem(models.Sphere(A=_mat(15, 0.3), V=V, beta=1.5, normalization="usa"), _unit(16)),
        "sphere-causal-dense": Problem(models.Sphere(V=V, beta=3.0, causal=True, backend="dense"), _unit(17)),
        "zero-temperature": Problem(models.ZeroTemperature(B=torch.eye(3, dtype=F64), V=V), _unit(18), _sphere_flow(V)),
        "multihead-consensus": Problem(models.MultiHead((models.Sphere(V=V), models.Sphere(A=A, V=_sym(19), beta=2.0))),
                                       _consensus(20), _consensus_flow(V + _sym(19))),
        "multihead-mean": Problem(models.MultiHead((models.Sphere(V=V), models.Sphere(A=A, V=_sym(19), beta=2.0)),
                                                   combine="mean"), _unit(21)),
        "time-varying-uniform": Problem(models.TimeVarying(times=KNOTS, V=knots_v, A=zeros, geometry="euclidean"), xe,
                                        _time_varying_mean_flow),
        "time-varying": Problem(models.TimeVarying(times=KNOTS, V=sphere_knots, beta=2.0), _unit(22)),
        "hardmax-self": Problem(models.HardmaxAttention(B=torch.eye(3, dtype=F64), V=V), _unit(23), _sphere_flow(V)),
        "modal-consensus": Problem(models.ModalModel(torch.tensor([1.0, 0.3, -0.5], dtype=F64), beta=2.0), _consensus(24),
                                   _consensus_flow(torch.diag(torch.tensor([1.0, 0.3, -0.5], dtype=F64)))),
        "modal": Problem(models.ModalModel(torch.tensor([1.0, 0.3, -0.5], dtype=F64), beta=2.0), _unit(25)),
        "circle": Problem(circle.Circle(2.0), torch.rand(2, 6, 1, generator=_gen(26), dtype=F64) * 6.0),
        "circle-softmax-dense": Problem(circle.Circle(2.0, "softmax", backend="dense"),
                                        torch.rand(2, 6, 1, generator=_gen(27), dtype=F64) * 6.0),
        "protocol-only": Problem(Decay(), xe, _decay_exact),
    }


PROBLEMS = _problems()


def test_every_model_class_has_a_problem():
    # a model class added to companion.models without a problem here fails this test
    classes = {type(p.model) for p in PROBLEMS.values()}
    runnable = {getattr(models, name) for name in models.__all__ if isinstance(getattr(models, name), type)
                and name not in ("Model", "LayerMap")}  # LayerMap is a map (iterate_layers), not a flow
    assert runnable <= classes, sorted(c.__name__ for c in runnable - classes)
    assert {circle.Circle, Decay} <= classes


@functools.lru_cache(maxsize=None)
def _dop853_cached(name: str, t: float) -> torch.Tensor:
    from scipy.integrate import solve_ivp

    p = PROBLEMS[name]
    m = p.model.cast(p.x0)
    shape = p.x0.shape

    def rhs(s, y):
        return m.vector_field(s, torch.from_numpy(y).reshape(shape)).reshape(-1).numpy()

    out = solve_ivp(rhs, (0.0, t), p.x0.reshape(-1).numpy(), method="DOP853", rtol=1e-12, atol=1e-14)
    assert out.success, out.message
    return torch.from_numpy(out.y[:, -1].copy()).reshape(shape)


def _dop853(problem: Problem, t: float) -> torch.Tensor:
    name = next(k for k, v in PROBLEMS.items() if v is problem)
    return _dop853_cached(name, t)


def _error(problem: Problem, sol) -> float:
    return (sol.final.to(F64) - problem.reference()).abs().max().item()


# ----------------------------------------------------------------------------- every model x every stepper
@pytest.mark.parametrize("method", FIXED)
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_fixed_steppers_converge_at_their_order(name, method):
    # halving dt divides the error by 2^order: the least-squares slope over three halvings. TimeVarying's
    # knots (0, 0.5, 1) are step points of every grid, so the field is smooth within each step.
    p, order = PROBLEMS[name], SOLVERS[method].order
    dts = (0.02, 0.01, 0.005) if method == "euler" else (0.1, 0.05, 0.025)
    errs = [_error(p, simulate(p.model, p.x0, T1, method=method, dt=dt)) for dt in dts]
    slope = np.polyfit(np.log(dts), np.log(errs), 1)[0]
    # (one order more is allowed: a linear field with V(t) linear in t cancels rk4's leading error term)
    assert order - 0.3 < slope < order + 1.0, (errs, slope)
    assert errs[-1] < (5e-2 if method == "euler" else 1e-6), errs


@pytest.mark.parametrize("method", ADAPTIVE)
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_adaptive_pairs_meet_the_reference_and_follow_the_tolerance(name, method):
    p = PROBLEMS[name]
    tight = simulate(p.model, p.x0, T1, method=method, rtol=1e-10, atol=1e-12)
    loose = simulate(p.model, p.x0, T1, method=method, rtol=1e-5, atol=1e-7)
    errs = _error(p, tight), _error(p, loose)
    # the global error follows the tolerance (10^5 apart here: at least 10^2 apart in error)
    assert errs[0] < 3e-8 and errs[1] < 1e-2 and errs[1] > 100 * errs[0], errs
    assert tight.stats["steps"] > loose.stats["steps"] >= 1
    # every evaluation is a stage: 6 a trial step plus the first (7 a step where the retraction moves x_new)
    s = tight.stats
    assert 1 + 6 * (s["steps"] + s["rejected"]) <= s["evaluations"] <= 1 + 7 * (s["steps"] + s["rejected"]), s


@pytest.mark.parametrize("method", list(SOLVERS))
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_dtype_follows_the_input_and_sphere_states_stay_on_it(name, method):
    p = PROBLEMS[name]
    x32 = p.x0.float()
    kw = dict(method=method, save_at=[0.0, 0.5, T1], **(dict(dt=0.01) if method in FIXED else dict(rtol=1e-6, atol=1e-8)))
    sol = simulate(p.model, x32, T1, **kw)
    assert sol.xs.dtype == torch.float32 and sol.xs.shape == (3,) + tuple(x32.shape)
    assert sol.ts.dtype == F64 and sol.ts.tolist() == [0.0, 0.5, T1]
    assert torch.equal(sol.xs[0], x32)  # the first save time is t0: the initial state itself
    # the same run in float64: apart by float32's roundoff (and, adaptive, the tolerance: the steps may differ)
    assert (sol.xs.double() - simulate(p.model, p.x0, T1, **kw).xs).abs().max().item() < 1e-4
    if p.model.on_sphere:
        assert (sol.xs.double().norm(dim=-1) - 1).abs().max().item() < 1e-6


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the device cannot be seen to follow the input")
@pytest.mark.parametrize("method", list(SOLVERS))
def test_device_follows_the_input_for_every_model(method):
    for name, p in PROBLEMS.items():
        if isinstance(p.model, Decay):
            continue
        cpu = simulate(p.model, p.x0, T1, method=method, dt=0.05)
        gpu = simulate(p.model, p.x0.cuda(), T1, method=method, dt=0.05)
        assert gpu.xs.device.type == "cuda", name
        assert (gpu.xs.cpu() - cpu.xs).abs().max().item() < 1e-9, name


# ----------------------------------------------------------------------------- shortcuts and objects
@pytest.mark.parametrize("method", list(SOLVERS))
def test_a_method_name_is_a_shortcut_for_its_stepper_and_a_list_for_a_save_at(method):
    p = PROBLEMS["sphere"]
    by_name = simulate(p.model, p.x0, T1, method=method, save_at=[0.0, 0.3, 0.6])
    by_object = simulate(p.model, p.x0, T1, method=SOLVERS[method], save_at=SaveAt([0.0, 0.3, 0.6]))
    assert solver(method) is SOLVERS[method]
    assert torch.equal(by_name.xs, by_object.xs) and by_name.stats == by_object.stats
    assert by_name.config == by_object.config and by_object.config["t1"] == 0.6


@dataclasses.dataclass(frozen=True)
class Midpoint:
    """The explicit midpoint rule, order 2, written outside the package as a stepper."""

    name = "midpoint"
    adaptive = False
    order = 2
    stability_limit = 2.0  # R(z) = 1 + z + z^2/2: |R| <= 1 on [-2, 0]

    def step(self, f, t, x, h):
        return x + h * f(t + h / 2, x + (h / 2) * f(t, x))


def test_a_stepper_written_outside_the_package_runs_at_its_order():
    p = PROBLEMS["euclidean-uniform"]
    dts = (0.1, 0.05, 0.025)
    errs = [_error(p, simulate(p.model, p.x0, T1, method=Midpoint(), dt=dt)) for dt in dts]
    assert 1.8 < np.polyfit(np.log(dts), np.log(errs), 1)[0] < 2.3, errs
    sol = simulate(p.model, p.x0, T1, method=Midpoint(), dt=0.1)
    assert sol.config["method"] == "midpoint" and sol.stats == {"steps": 10, "rejected": 0, "evaluations": 20}


# ----------------------------------------------------------------------------- the steppers
@pytest.mark.parametrize("stepper,R", [
    (Euler(), lambda z: 1 + z),
    (RK4(), lambda z: 1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24),
])
def test_a_fixed_step_of_a_linear_field_is_the_stability_polynomial(stepper, R):
    lam, h = -1.7, 0.3
    x = torch.tensor([[[1.0]]], dtype=F64)
    got = stepper.step(lambda t, y: lam * y, 0.0, x, h).item()
    assert got == pytest.approx(R(h * lam), rel=1e-15, abs=0)


def test_dopri5s_step_of_a_linear_field_is_its_stability_polynomial():
    # Hairer & Wanner, Solving ODEs I, II.5: R(z) = sum_{k<=5} z^k/k! + z^6/600 for the 5th-order solution
    for z in (-0.5, -0.1, 0.2):
        x = torch.tensor([[[1.0]]], dtype=F64)
        x_new, err, k_last = DOPRI5.step(lambda t, y: z * y, 0.0, x, 1.0, z * x)
        R = sum(z**k / math.factorial(k) for k in range(6)) + z**6 / 600
        assert x_new.item() == pytest.approx(R, rel=1e-14, abs=1e-16)
        assert torch.equal(k_last, z * x_new)  # the last stage is the field at the new point (FSAL)


@pytest.mark.parametrize("pair", [DOPRI5, TSIT5], ids=["dopri5", "tsit5"])
def test_a_pairs_local_errors_have_their_orders(pair):
    # one step of x' = -x: the 5th-order solution is off e^{-h} by O(h^6), the error estimate is O(h^5)
    # (on x' = x, tsit5's h^6 and h^7 terms nearly cancel near h = 0.2)
    x = torch.ones(1, 1, 1, dtype=F64)
    out = {h: pair.step(lambda t, y: -y, 0.0, x, h, -x)[:2] for h in (0.2, 0.1, 0.05)}
    local = [abs(out[h][0].item() - math.exp(-h)) for h in out]
    est = [abs(out[h][1].item()) for h in out]
    for a, b in zip(local, local[1:]):
        assert 5.7 < math.log2(a / b) < 6.6, local
    for a, b in zip(est, est[1:]):
        assert 4.8 < math.log2(a / b) < 5.3, est


def test_a_retracted_last_stage_is_the_next_steps_first():
    # with retract, x_new is the retracted last stage point and k_last the field there
    f = models.Sphere(V=_sym(30)).cast(_unit(31)).vector_field
    x = _unit(31)
    x_new, _, k_last = TSIT5.step(f, 0.0, x, 0.1, f(0.0, x), retract=lambda y: torch.nn.functional.normalize(y, dim=-1))
    assert (x_new.norm(dim=-1) - 1).abs().max().item() < 1e-15
    assert torch.equal(k_last, f(0.1, x_new))


# ----------------------------------------------------------------------------- the controllers
def test_constant_steps_split_each_save_interval_evenly():
    control = ConstantStepSize(dt=0.3)
    saves = SaveAt([0.0, 0.0, 1.0, 1.3, 1.31, 1.31 + 1e-11])
    # ceil(1 / 0.3) = 4; 0.3 / 0.3 = 1 (no extra step for rounding); a short interval is one step, one
    # shorter than 1e-9 dt none (the state at 1.31 is kept again)
    assert control.plan(0.0, saves) == (0, 0, 4, 1, 1, 0)
    assert ConstantStepSize(dt=1e-300).steps(0.0, 1e10) == math.inf
    sol = simulate(Decay(), torch.zeros(1, 1, 1, dtype=F64), 1.3, method="rk4", dt=0.3, save_at=[0.0, 1.0, 1.3])
    assert sol.stats["steps"] == 5 and sol.stats["evaluations"] == 20


@pytest.mark.parametrize("e,ok", [(0.5, 1.0), (1e-14, 1.0), (1.0, 1.0), (1.0000001, 1.0), (40.0, 1.0), (0.3, 0.0),
                                  (float("nan"), 1.0), (math.inf, 0.0)])
def test_the_step_rule_is_the_elementary_controller(e, ok):
    accepted, h = StepSizeController().adapt(0.01, e, ok)
    assert accepted == (ok == 1.0 and e <= 1.0)
    expect = 0.2 if not ok or not e == e else min(5.0, max(0.2, 0.9 * max(e, 1e-10) ** -0.2))
    assert h == pytest.approx(0.01 * expect, rel=1e-15)


def test_the_error_is_scaled_by_the_tolerances():
    control = StepSizeController(rtol=1e-3, atol=1e-6)
    x = torch.tensor([[[1.0, -2.0]]], dtype=F64)
    x_new = torch.tensor([[[1.5, -1.0]]], dtype=F64)
    err = torch.tensor([[[3e-3, 4e-3]]], dtype=F64)
    e, ok = control.error(x, x_new, err)
    scale = [1e-6 + 1e-3 * 1.5, 1e-6 + 1e-3 * 2.0]
    assert e == pytest.approx(math.sqrt(((3e-3 / scale[0]) ** 2 + (4e-3 / scale[1]) ** 2) / 2), rel=1e-14) and ok == 1.0
    assert control.error(x, x_new * math.inf, err)[1] == 0.0


def test_the_step_floor_is_ten_ulps_of_t():
    control = StepSizeController()
    t = 1e6
    floor = 10 * 2.0**-52 * (t + 1.0)  # 10 eps max(|t|, |t_save|)
    assert control.bounded(1e-30, t, t + 1.0, False, False, F64, "tsit5") == floor  # a small guess is raised to it
    with pytest.raises(RuntimeError, match="below the smallest step"):
        control.bounded(floor / 2, t, t + 1.0, True, False, F64, "tsit5")  # after a rejection: the end
    with pytest.raises(FloatingPointError, match="non-finite or overflows torch.float64 at every step"):
        control.bounded(floor / 2, t, t + 1.0, True, True, F64, "tsit5")
    assert control.bounded(0.5, t, t + 1.0, True, False, F64, "tsit5") == 0.5


def test_the_guards_fire_at_their_counts():
    control = StepSizeController(max_steps=5000)
    # the stiffness projection: every 1000 attempts, three in a row beyond what is left
    tally = Tally(steps=1000)
    tally = control.guard(tally, 0.0, 1e-6, 1.0, 1.0, F64, "dopri5")  # 1e6 steps needed > 4000 left
    assert tally.overrun == 1
    with pytest.raises(RuntimeError, match=r"would need about 1e\+06 more steps, more than the 3000 left"):
        control.guard(Tally(steps=2000, overrun=2), 0.0, 1e-6, 1.0, 1.0, F64, "dopri5")
    assert control.guard(Tally(steps=2000, overrun=2), 0.0, 0.1, 1.0, 1.0, F64, "dopri5").overrun == 0  # fits: reset
    # the overflow check: every 100 attempts, a quarter of them overflowed and the rest cannot fit
    with pytest.raises(FloatingPointError, match="25 of the last 100 trial steps"):
        control.guard(Tally(steps=75, rejected=25, overflows=25), 0.0, 1e-6, 1.0, 1.0, torch.float32, "tsit5")
    assert control.guard(Tally(steps=76, rejected=24, overflows=24), 0.0, 1e-6, 1.0, 1.0, F64, "tsit5").overflows == 0
    with pytest.raises(RuntimeError, match="reached max_steps = 5000"):
        control.guard(Tally(steps=4999, rejected=1), 0.0, 0.1, 1.0, 1.0, F64, "tsit5")


def test_rtol_below_the_dtypes_roundoff_is_refused():
    assert StepSizeController(rtol=1e-7).checked(torch.float32).rtol == 1e-7
    with pytest.raises(ValueError, match="unit roundoff"):
        StepSizeController(rtol=1e-8).checked(torch.float32)


# ----------------------------------------------------------------------------- save times
def test_save_at_holds_checked_times_and_the_end():
    assert SaveAt(np.array([0, 0.5, 0.5, 2])).ts == (0.0, 0.5, 0.5, 2.0)
    assert SaveAt.between(-1.0, 3.0).ts == (-1.0, 3.0) and SaveAt.between(0.0, 3.0, [0.0, 1.0]).t_end == 1.0
    saves = SaveAt([0.2, 1.0])
    assert SaveAt.between(0.0, 1.0, saves) is saves
    with pytest.raises(ValueError, match=r"lie in \[t0, t1\]"):
        SaveAt.between(0.0, 0.5, saves)
    for bad, error in (([], ValueError), ([1.0, float("inf")], ValueError), ("01", TypeError), ([[0.0]], ValueError)):
        with pytest.raises(error, match="save_at"):
            SaveAt(bad)
    with pytest.raises(dataclasses.FrozenInstanceError):
        saves.ts = (0.0,)


def test_repeated_save_times_keep_the_same_state():
    p = PROBLEMS["sphere"]
    for method in SOLVERS:
        sol = simulate(p.model, p.x0, T1, method=method, save_at=[0.0, 0.5, 0.5, 1.0])
        assert torch.equal(sol.xs[1], sol.xs[2])
