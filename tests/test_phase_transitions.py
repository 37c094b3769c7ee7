"""Chapter phase_transitions (paper A Section 4): the experiment building blocks on tiny sizes."""
from __future__ import annotations

import math

import pytest
import torch

from companion import init, models, simulate
from companion.experiments import phase_transitions as pt
from companion.theory import lora_depth as th

F64 = torch.float64


def test_capped_rescaled_matches_core_model_below_cap():
    V = torch.diag(torch.tensor([1.0, 0.9], dtype=F64))
    Z = init.cube(3, 7, 2, 2.0, generator=torch.Generator().manual_seed(0))
    ref = models.Rescaled(A=torch.eye(2, dtype=F64), V=V)
    cap = models.ScaleCappedRescaled(A=torch.eye(2, dtype=F64), V=V).cast(Z)
    for t in (0.0, 0.7, 3.0):
        assert torch.allclose(cap.vector_field(t, Z), ref.vector_field(t, Z), atol=1e-12)


def test_scale_cap_does_not_change_long_trajectory():
    # beyond a few time units the softmax is an exact argmax, so capping the scale at t = 15 is harmless
    V = torch.diag(torch.tensor([1.0, 0.9], dtype=F64))
    Z0 = init.cube(2, 8, 2, 5.0, generator=torch.Generator().manual_seed(1))
    kw = dict(method="rk4", dt=0.1, save_at=torch.tensor([0.0, 40.0], dtype=F64))
    a = simulate(models.ScaleCappedRescaled(A=torch.eye(2, dtype=F64), V=V, t_cap=15.0), Z0, 40.0, **kw).final
    b = simulate(models.ScaleCappedRescaled(A=torch.eye(2, dtype=F64), V=V, t_cap=1e9), Z0, 40.0, **kw).final
    assert torch.allclose(a, b, atol=1e-8)


def test_adapter_chain_without_noise_is_the_base_layer_map():
    V = torch.diag(torch.tensor(pt.LAMBDAS3, dtype=F64))
    x0 = pt._near_u1(2, 4, 3, 0.3, torch.Generator().manual_seed(2), "cpu")
    out = pt.adapter_chain(V, x0, 16, 2, 1, torch.zeros(2, dtype=F64), torch.Generator().manual_seed(3), saves_per_block=4)
    X = x0
    for _ in range(2):
        X = models.iterate_layers(models.LayerMap(A=V, V=V, depth=16), X)[-1]
    assert torch.allclose(out["q"][-1], (1 - X[..., 0] ** 2).sum(-1), atol=1e-12)
    assert (out["q"][-1] < out["q"][0]).all()  # the base map contracts onto u1


def test_critical_single_token_matches_bingham():
    # one token, eta_L = sqrt(L): the stationary E(1 - <x,u1>^2) is the Bingham value (derived limit);
    # tolerance: 4 standard errors plus 10% for the O(1/L) depth bias at L = 32
    kappa, trials, L = 0.05, 300, 32
    V = torch.diag(torch.tensor(pt.LAMBDAS3, dtype=F64))
    g = torch.Generator().manual_seed(4)
    x0 = pt._near_u1(trials, 1, 3, 0.05, g, "cpu")
    s = 3 * math.sqrt(kappa)
    out = pt.adapter_chain(V, x0, L, 6, 1, torch.full((trials,), math.sqrt(L) * s, dtype=F64), g)
    m, se = pt._window_mean(out["q"], out["t"], 2.0)
    want = th.bingham_deviation(pt.LAMBDAS3, kappa)
    assert abs(m - want) < 4 * se + 0.1 * want


def test_exit_time_follows_switch_time_and_bound():
    Z0 = init.cube(2, 10, 2, 5.0, generator=torch.Generator().manual_seed(5))
    eps, delta = 0.05, 0.1
    base, C, T_delta = pt._base_run(Z0, 25.0, 0.1, delta)
    Vt = torch.diag(torch.tensor([1.0, 1.0 - eps], dtype=F64))
    _, exits, _ = pt._perturbed_times(Z0, Vt, torch.eye(2, dtype=F64), C, T_delta, 120.0, 0.1, delta, save_dt=0.1)
    for tr in range(2):
        sw = th.switch_time(C[tr], eps)
        assert sw - 0.2 <= exits[tr] <= max(sw, T_delta[tr]) + 2.0
        b = pt._bound_for(C[tr], eps, 10, delta)
        if b is not None:
            assert exits[tr] <= th.exit_time_bound(T_delta[tr], b)


def test_bad_profile_is_rejected():
    with pytest.raises(ValueError, match="profile must be"):
        pt.norm_transition(profile="huge")
