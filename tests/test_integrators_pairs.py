"""The embedded pairs (dopri5, tsit5), first-same-as-last on the sphere, and the per-trial error norm
(issue 32, item 2), each against a closed form.
"""
from __future__ import annotations

import math

import pytest
import torch

from companion import init, integrate, models, simulate

F64 = torch.float64


class _Closed:
    """A model with a closed-form solution. ``field(t, X)`` and ``exact(t, X0)``, X: (trials, n, d)."""

    on_sphere = False

    def __init__(self, field, exact):
        self.vector_field, self.exact = field, exact

    def validate(self, X):
        return X

    def cast(self, X):
        return self


# x' = x^2 cos t: nonlinear and time-dependent, x(t) = x0 / (1 - x0 sin t) (separable).
RICCATI = _Closed(lambda t, X: X * X * math.cos(t), lambda t, X0: X0 / (1 - X0 * math.sin(t)))
# x' = M x with a non-normal M: x(t) = e^{tM} x0.
_M = torch.tensor([[-0.5, 2.0, 0.0], [-1.0, -0.2, 0.3], [0.0, 0.4, -1.0]], dtype=F64)
LINEAR = _Closed(lambda t, X: X @ _M.T, lambda t, X0: X0 @ torch.linalg.matrix_exp(t * _M).T)
X0 = torch.tensor([[[0.3, -0.5, 0.8]]], dtype=F64)


def _fixed(pair, model, h, steps, embedded=False):
    """``steps`` fixed steps of ``pair`` (the 5th-order solution, or the embedded 4th-order one, x_new - err)."""
    t, x = 0.0, X0
    for _ in range(steps):
        x_new, err, _ = pair.step(model.vector_field, t, x, h, model.vector_field(t, x))
        x, t = (x_new - err if embedded else x_new), t + h
    return x, t


@pytest.mark.parametrize("name", ["dopri5", "tsit5"])
@pytest.mark.parametrize("model", [RICCATI, LINEAR], ids=["riccati", "linear"])
@pytest.mark.parametrize("embedded,order", [(False, 5), (True, 4)])
def test_pairs_converge_at_their_order(name, model, embedded, order):
    # halving h divides the global error at t = 1 by about 2^order: the least-squares slope of log2 error
    # against log2 steps over four halvings (single ratios wobble where error terms cancel)
    pair = integrate.PAIRS[name]
    steps = (8, 16, 32, 64) if order == 5 else (8, 16, 32, 64, 128)  # errors 1e-6..1e-12, above roundoff
    errs = []
    for k in steps:
        x, t = _fixed(pair, model, 1.0 / k, k, embedded)
        errs.append((x - model.exact(t, X0)).abs().max().item())
    u = [math.log2(k) for k in steps]
    v = [math.log2(e) for e in errs]
    ub, vb = sum(u) / len(u), sum(v) / len(v)
    slope = -sum((a - ub) * (b - vb) for a, b in zip(u, v)) / sum((a - ub) ** 2 for a in u)
    assert order - 0.5 < slope < order + 1.0, (errs, slope)  # one order less fails (a wrong coefficient: several)


@pytest.mark.parametrize("name", ["dopri5", "tsit5"])
def test_tableau_rows_sum_to_their_nodes(name):
    # consistency c_i = sum_j a_ij, weights summing to 1, FSAL (last row = b), error weights summing to 0
    p = integrate.PAIRS[name]
    assert all(abs(sum(row) - c) < 1e-14 for row, c in zip(p.a[1:], p.c[1:]))
    assert abs(sum(p.b) - 1) < 1e-14 and p.b[-1] == 0.0 and tuple(p.a[-1]) == tuple(p.b[:-1])
    assert abs(sum(p.e)) < 1e-14


@pytest.mark.parametrize("method", ["dopri5", "tsit5"])
def test_adaptive_methods_meet_the_closed_form(method):
    sol = simulate(RICCATI, X0, 2.0, method=method, rtol=1e-10, atol=1e-12)
    assert (sol.final - RICCATI.exact(2.0, X0)).abs().max().item() < 1e-8


X_SPHERE = init.uniform_sphere(4, 12, 3, generator=torch.Generator().manual_seed(0))
V_DIAG = torch.diag(torch.tensor([1.0, 0.5, -0.3], dtype=F64))


@pytest.mark.parametrize("method,fsal,per_step", [("dopri5", None, 7), ("dopri5", False, 7), ("dopri5", True, 6),
                                                  ("tsit5", None, 6), ("tsit5", False, 7)])
def test_sphere_evaluations_per_step(method, fsal, per_step):
    # legacy dopri5 recomputes the first stage after each retraction (7 a step); with fsal the last stage
    # is evaluated at the retracted point and reused (6 a step, plus the first one)
    sol = simulate(models.Sphere(V=V_DIAG), X_SPHERE, 1.0, method=method, rtol=1e-6, atol=1e-8, fsal=fsal)
    s = sol.stats
    assert s["evaluations"] == 1 + 6 * (s["steps"] + s["rejected"]) + (per_step - 6) * s["steps"] - (per_step - 6), s


def test_fsal_on_the_sphere_keeps_the_accuracy():
    # the fsal run and the legacy one agree to the tolerance, against a tight rk4 reference (a second method)
    m = models.Sphere(V=V_DIAG, beta=2.0)
    ref = simulate(m, X_SPHERE, 1.0, method="rk4", dt=5e-3).final  # rk4 error ~ (5e-3)^4: 1e-9
    for method, fsal in [("dopri5", False), ("dopri5", True), ("tsit5", True)]:
        sol = simulate(m, X_SPHERE, 1.0, method=method, rtol=1e-8, atol=1e-10, fsal=fsal)
        assert (sol.final - ref).abs().max().item() < 1e-6, (method, fsal)


def test_default_dopri5_is_unchanged_by_the_new_options_off():
    # error_norm="rms" and fsal=False are the defaults of dopri5: bitwise the same run
    m = models.Sphere(V=V_DIAG)
    a = simulate(m, X_SPHERE, 1.0, method="dopri5", rtol=1e-6)
    b = simulate(m, X_SPHERE, 1.0, method="dopri5", rtol=1e-6, error_norm="rms", fsal=False)
    assert torch.equal(a.final, b.final) and a.stats == b.stats


def _rotation(omegas):
    """x' = omega_t J x in the plane, one rate per trial: x(t) = R(omega_t t) x0 (rotation by omega_t t)."""
    w = torch.tensor(omegas, dtype=F64)[:, None, None]
    J = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=F64)

    def exact(t, X0):
        c, s = torch.cos(w * t), torch.sin(w * t)
        return torch.cat([c * X0[..., :1] - s * X0[..., 1:], s * X0[..., :1] + c * X0[..., 1:]], dim=-1)

    return _Closed(lambda t, X: w * (X @ J.T), exact)


def test_max_trial_norm_holds_the_hardest_trial_to_the_tolerance():
    # one fast trial among 99 slow ones: the RMS norm averages the fast trial's error with 99 tiny ones
    # (it can be 10x the tolerance), the per-trial norm does not
    model = _rotation([20.0] + [0.01] * 99)
    X = torch.tensor([1.0, 0.0], dtype=F64).expand(100, 1, 2).contiguous()
    worst = {}
    for norm in ("rms", "max_trial"):
        sol = simulate(model, X, 2.0, method="tsit5", rtol=1e-6, atol=1e-6, error_norm=norm)
        worst[norm] = (sol.final - model.exact(2.0, X)).abs().max().item()
    assert worst["max_trial"] < worst["rms"] / 3, worst
    # a single trial: both norms are the same number, so the same run
    one = X[:1]
    a = simulate(_rotation([20.0]), one, 1.0, method="tsit5", rtol=1e-6, error_norm="rms")
    b = simulate(_rotation([20.0]), one, 1.0, method="tsit5", rtol=1e-6, error_norm="max_trial")
    assert a.stats == b.stats and torch.allclose(a.final, b.final, rtol=0, atol=1e-15)
