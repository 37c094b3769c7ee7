"""simulate's guards against hangs and silent wrong answers (issue 18, items 3-7).

Each hang is tested with a small ``max_steps`` and a wall-clock bound (no pytest-timeout needed):
before the guards these calls ran until the step budget or for hours.
"""
from __future__ import annotations

import math
import re
import time
import warnings

import pytest
import torch

from companion import init, integrate, models, simulate

F64 = torch.float64
X3 = init.uniform_sphere(1, 6, 3, generator=torch.Generator().manual_seed(0))
VDIAG = torch.diag(torch.tensor([2.0, -1.0, 0.5], dtype=F64))  # ||V||_2 = 2, top eigenvalue 2 (pole e1)


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _timed(call, seconds: float):
    """Run ``call`` and fail if it took longer than ``seconds`` (a hang guard without pytest-timeout)."""
    start = time.perf_counter()
    try:
        return call()
    finally:
        took = time.perf_counter() - start
        assert took < seconds, f"took {took:.1f} s, more than {seconds} s"


def _number_after(text: str, key: str) -> float:
    """The number printed after ``key`` in ``text`` (e.g. ``"t = "``)."""
    m = re.search(re.escape(key) + r"([-+0-9.e]+)", text)
    assert m, f"no {key!r} in: {text}"
    return float(m.group(1))


# ----------------------------------------------------------------------------- 3. fixed-step budget
@pytest.mark.parametrize("method", ["euler", "rk4"])
def test_fixed_step_refuses_more_steps_than_max_steps(method):
    # 1 / 1e-5 = 100,000 steps > 1,000: refused before any step (the old code ran all of them)
    with pytest.raises(ValueError) as info:
        _timed(lambda: simulate(models.Sphere(), X3, 1.0, method=method, dt=1e-5, max_steps=1000), 5.0)
    msg = str(info.value)
    assert "100000 steps" in msg and "max_steps = 1000" in msg, msg


def test_fixed_step_budget_counts_the_save_grid():
    # dt = 0.3 over [0, 1] is 4 steps, but the save grid splits it into 10 intervals of one step each
    ts = torch.linspace(0, 1, 11, dtype=F64)
    with pytest.raises(ValueError, match=r"10 steps.*max_steps = 5"):
        simulate(models.Sphere(), X3, 1.0, dt=0.3, save_at=ts, max_steps=5)
    sol = simulate(models.Sphere(), X3, 1.0, dt=0.3, save_at=ts, max_steps=10)  # exactly the budget
    assert sol.stats["steps"] == 10


# ----------------------------------------------------------------------------- 4. dopri5 cannot spin
STIFF = models.Euclidean(V=-1e8 * torch.eye(3, dtype=F64))  # decay rate 1e8: dopri5's stable step ~3e-8


def test_dopri5_stops_when_time_stops_advancing():
    # at t = 1e9 one ulp of t is 1.2e-7, larger than the stable step: t + h == t. The old code counted
    # such steps as accepted and spun to max_steps (an hour at the default), then named neither t nor h.
    with pytest.raises(RuntimeError) as info:
        _timed(lambda: simulate(STIFF, X3, 1e9 + 1.0, t0=1e9, method="dopri5", max_steps=2000), 30.0)
    msg = str(info.value)
    assert _number_after(msg, "at t = ") == pytest.approx(1e9)
    h = _number_after(msg, "step h = ")
    assert 0 < h < 16 * 2.2205e-16 * 1e9, msg  # below the smallest step that t = 1e9 resolves


def test_dopri5_step_budget_names_the_time_reached_and_the_step():
    with pytest.raises(RuntimeError) as info:
        _timed(lambda: simulate(STIFF, X3, 1.0, method="dopri5", max_steps=100), 30.0)
    msg = str(info.value)
    assert "max_steps = 100" in msg, msg
    t, h = _number_after(msg, "at t = "), _number_after(msg, "step h = ")
    # 100 steps below the stability limit 3.3 / 1e8 reach at most 100 * 3.3e-8 = 3.3e-6
    assert 0 < t < 3.4e-6 and 0 < h < 1e-7, msg


# ----------------------------------------------------------------------------- 5. overflowing first step
def test_dopri5_shrinks_a_first_step_that_overflows():
    model = models.Sphere(V=1e3 * torch.diag(torch.tensor([1.0, -1.0, 0.5], dtype=F64)))
    # the default first step, dt = 0.1, overflows (from t1 = 0.02 on: shorter runs clip the first step)
    sol = simulate(model, X3, 0.05, method="dopri5", max_steps=20_000)
    assert sol.stats["rejected"] >= 1
    assert torch.isfinite(sol.final).all()
    # independent reference: RK4 at dt = 2e-5 (dt * 2 ||V|| = 0.04, far inside its stability limit)
    ref = simulate(model, X3, 0.05, method="rk4", dt=2e-5).final
    assert (sol.final - ref).abs().max().item() < 1e-5


def test_dopri5_reports_where_the_field_stops_being_finite():
    class Singular:
        """x' = x for t < 0.5 and a non-finite field from t = 0.5 on."""

        on_sphere = False

        def validate(self, X):
            return X

        def cast(self, X):
            return self

        def vector_field(self, t, X):
            return X if t < 0.5 else X * float("inf")

    # the old code stopped at the start of the first step that crossed 0.5 ("the field blew up")
    with pytest.raises(FloatingPointError, match="non-finite") as info:
        _timed(lambda: simulate(Singular(), X3, 1.0, method="dopri5", max_steps=1000), 30.0)
    assert _number_after(str(info.value), "at t = ") == pytest.approx(0.5, abs=1e-9)


def test_dopri5_tolerance_below_roundoff_is_refused():
    # rtol = atol = 1e-300 used to end in "the field blew up" (the error norm overflowed)
    with pytest.raises(ValueError, match=r"rtol = 1e-300 .*float64"):
        simulate(models.Sphere(), X3, 1.0, method="dopri5", rtol=1e-300, atol=1e-300)
    # a tiny atol alone is legitimate: the relative part of the test is met
    sol = simulate(models.Sphere(), X3, 0.5, method="dopri5", rtol=1e-8, atol=1e-300)
    assert torch.isfinite(sol.final).all()


# ----------------------------------------------------------------------------- 6. fixed step too large on the sphere
@pytest.mark.parametrize(
    "method,R", [("euler", lambda z: 1 + z), ("rk4", lambda z: 1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24)]
)
def test_stability_limits_are_the_methods_real_stability_intervals(method, R):
    # |R(z)| <= 1 on [-limit, 0] and > 1 just beyond: the amplification factor of y' = z y / h
    limit = integrate.STABILITY_LIMITS[method]
    assert max(abs(R(-limit * k / 1000)) for k in range(1001)) <= 1.0
    assert abs(R(-limit * 1.002)) > 1.0


def test_stability_number_from_the_parameters():
    # softmax: 2 ||V||_2 (beta does not enter); usa: times e^{beta ||A||_2}
    assert integrate.stability_number(models.Sphere(V=VDIAG, beta=4.0), 0.5) == pytest.approx(2.0)
    usa = models.Sphere(A=2 * torch.eye(3, dtype=F64), V=VDIAG, beta=1.5, normalization="usa")
    assert integrate.stability_number(usa, 0.1) == pytest.approx(0.1 * 2 * 2 * math.exp(3.0))
    per_trial = torch.stack([torch.eye(3, dtype=F64), 3 * torch.eye(3, dtype=F64)])  # worst trial counts
    assert integrate.stability_number(models.Sphere(V=per_trial), 0.1) == pytest.approx(0.6)
    assert integrate.stability_number(models.Euclidean(V=VDIAG), 0.1) is None  # off the sphere: no bound


def _fine(model, t1):
    return simulate(model, X3, t1, method="rk4", dt=0.05).final  # dt * 2 ||V|| = 0.2


def test_rk4_soft_limit_separates_right_from_wrong_answers():
    model = models.Sphere(V=VDIAG, beta=4.0)
    with pytest.warns(integrate.StabilityWarning, match=r"h \* 2 \|\|V\|\|_2 \* W = 4 "):
        coarse = simulate(model, X3, 10.0, method="rk4", dt=1.0).final  # 4 > 2.785: the pole e1 is unstable
    # the warning is not a false alarm: the answer is far from the converged one (the old code was silent)
    assert (coarse - _fine(model, 10.0)).norm(dim=-1).max().item() > 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        coarse = simulate(model, X3, 10.0, method="rk4", dt=0.5).final  # dt * 2 ||V|| = 2 < 2.785
    assert (coarse - _fine(model, 10.0)).abs().max().item() < 1e-3


def test_euler_has_its_own_soft_limit():
    model = models.Sphere(V=VDIAG)
    with pytest.warns(integrate.StabilityWarning, match="euler"):
        simulate(model, X3, 1.2, method="euler", dt=0.6)  # 2.4: above Euler's 2, below RK4's 2.785
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        simulate(model, X3, 1.2, method="rk4", dt=0.6)


def test_step_far_above_the_limit_is_refused():
    with pytest.raises(ValueError, match=r"\(dt = 10\).*hard limit"):
        simulate(models.Sphere(V=VDIAG, beta=4.0), X3, 20.0, method="rk4", dt=10.0)  # 40 > 10 * 2.785
    usa = models.Sphere(beta=6.0, normalization="usa")  # e^6 = 403: 2 * 403 * 0.05 = 40
    with pytest.raises(ValueError, match="hard limit"):
        simulate(usa, X3, 1.0, method="rk4", dt=0.05)
    # the limit applies to the step taken: dt = 10 with save times 0.25 apart steps by 0.25 (number 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        simulate(models.Sphere(V=VDIAG, beta=4.0), X3, 1.0, method="rk4", dt=10.0, save_at=[0.0, 0.25, 0.5, 0.75, 1.0])


# ----------------------------------------------------------------------------- 7. save_at ending before t1
@pytest.mark.parametrize("method", ["rk4", "dopri5"])
def test_final_and_config_agree_when_save_at_ends_early(method):
    sol = simulate(models.Sphere(), X3, 2.0, method=method, save_at=[0.0, 0.5, 1.0])
    assert sol.config["t1"] == 1.0 == sol.ts[-1].item()  # the old config said t1 = 2
    at1, at2 = (simulate(models.Sphere(), X3, t, method=method).final for t in (1.0, 2.0))
    assert (sol.final - at1).abs().max().item() < 1e-6 < (sol.final - at2).abs().max().item()


# ----------------------------------------------------------------------------- unclear errors
def test_meta_device_tokens_are_refused_clearly():
    with pytest.raises(ValueError, match=r"x0 is on the 'meta' device"):
        simulate(models.Sphere(), X3.to("meta"), 1.0)
    with pytest.raises(ValueError, match=r"V is on the 'meta' device"):
        simulate(models.Sphere(V=torch.eye(3, device="meta")), X3, 1.0)


def test_dopri5_stops_early_when_the_rest_cannot_fit_in_max_steps():
    # At t0 = 0 with the DEFAULT max_steps (1e7) the stiff decay ran ~1e7 steps (about an hour) before
    # failing: its stable step 3.3e-8 needs 3e7 steps for t1 = 1. Projected from the settled step size,
    # that is known after a few thousand steps.
    with pytest.raises(RuntimeError, match=r"would need about .* more steps, more than the .* left of max_steps = 10000000") as info:
        _timed(lambda: simulate(STIFF, X3, 1.0, method="dopri5"), 60.0)
    assert 0 < _number_after(str(info.value), "at t = ") < 1e-3
    # A problem that fits is untouched: the same decay to t1 = 1e-4 takes ~3e3 steps at the same step size,
    # passing three projections (every 1000 attempts) that find the rest within max_steps.
    sol = _timed(lambda: simulate(STIFF, X3, 1e-4, method="dopri5", save_at=[0.0, 1e-4]), 60.0)
    assert torch.isfinite(sol.final).all() and 3000 < sol.stats["steps"] + sol.stats["rejected"] < 1e4
