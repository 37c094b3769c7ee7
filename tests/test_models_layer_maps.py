"""The LoRA-adapter layer maps of paper A (models/layer_maps.py): without noise they are the base layer
map and the post-LN ODE; at the critical scaling one token follows the Bingham law; and the pieces
refuse what they cannot run."""
from __future__ import annotations

import math

import pytest
import torch

from companion import init, models, simulate
from companion.models.layer_maps import adapter_chain, coupled_samples, layer_map_samples, near_u1, weak_observable
from companion.theory import lora_depth as th

F64 = torch.float64
LAMBDAS3 = (1.0, 0.5, 0.25)


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def test_adapter_chain_without_noise_is_the_base_layer_map():
    V = torch.diag(torch.tensor(LAMBDAS3, dtype=F64))
    x0 = near_u1(2, 4, 3, 0.3, torch.Generator().manual_seed(2), "cpu")
    out = adapter_chain(V, x0, 16, 2, 1, torch.zeros(2, dtype=F64), torch.Generator().manual_seed(3), saves_per_block=4)
    X = x0
    for _ in range(2):
        X = models.iterate_layers(models.LayerMap(A=V, V=V, depth=16), X)[-1]
    assert torch.allclose(out["q"][-1], (1 - X[..., 0] ** 2).sum(-1), atol=1e-12)
    assert (out["q"][-1] < out["q"][0]).all()  # the base map contracts onto u1
    # the other observables of the last state, by hand
    c = X[..., 0]
    assert torch.allclose(out["sq"][-1], (2 - 2 * c).sum(-1), atol=1e-12)
    xbar = X.mean(1)
    assert torch.allclose(out["spread"][-1], ((X - xbar[:, None]) ** 2).sum((-1, -2)), atol=1e-12)
    assert torch.allclose(out["mean_dir"][-1], xbar / xbar.norm(dim=-1, keepdim=True), atol=1e-12)


def test_critical_single_token_matches_bingham():
    # one token, eta_L = sqrt(L): the stationary E(1 - <x,u1>^2) is the Bingham value (derived limit);
    # tolerance: 4 standard errors plus 10% for the O(1/L) depth bias at L = 32
    kappa, trials, L = 0.05, 300, 32
    V = torch.diag(torch.tensor(LAMBDAS3, dtype=F64))
    g = torch.Generator().manual_seed(4)
    x0 = near_u1(trials, 1, 3, 0.05, g, "cpu")
    s = 3 * math.sqrt(kappa)
    out = adapter_chain(V, x0, L, 6, 1, torch.full((trials,), math.sqrt(L) * s, dtype=F64), g)
    per_trial = out["q"][out["t"] >= 2.0].mean(0)
    m, se = per_trial.mean().item(), per_trial.std().item() / math.sqrt(trials)
    want = th.bingham_deviation(LAMBDAS3, kappa)
    assert abs(m - want) < 4 * se + 0.1 * want


def test_sde_without_noise_is_the_deterministic_dynamics():
    # kappa -> 0: the SDE scheme and the layer maps reduce to the post-LN ODE x' = P_x V m(x),
    # integrated here independently by the package's RK4 solver.
    V = torch.diag(torch.tensor(LAMBDAS3, dtype=F64))
    x0 = init.uniform_sphere(1, 4, 3, generator=torch.Generator().manual_seed(3))[0]
    ode = simulate(models.Sphere(A=V, V=V), x0[None], 1.0, method="rk4", dt=0.01).final
    r = coupled_samples(x0, V, (32, 64), 64, 1e-12, 2, torch.Generator().manual_seed(0))
    phi = weak_observable(ode).item()
    assert (2 * r["fine"] - r["coarse"])[0].item() == pytest.approx(phi, abs=1e-4)  # Richardson: O(h^2)
    e32, e64 = (r["layers"][i, 0].item() - phi for i in (0, 1))  # Euler with normalisation: O(1/L)
    assert abs(e64) < 0.01 and e32 / e64 == pytest.approx(2.0, abs=0.2)
    # the rank-r layer map without noise (kappa = 1e-24) is the base layer map of depth 32
    v = layer_map_samples(x0, V, 32, 1e-24, 1, 2, torch.Generator().manual_seed(1))
    base = models.iterate_layers(models.LayerMap(A=V, V=V, depth=32), x0[None])[-1]
    assert v.tolist() == pytest.approx([weak_observable(base).item()] * 2, abs=1e-9)


def test_layer_maps_refuse_what_they_cannot_run():
    V = torch.diag(torch.tensor(LAMBDAS3, dtype=F64))
    x0 = near_u1(1, 2, 3, 0.1, torch.Generator().manual_seed(0), "cpu")
    with pytest.raises(ValueError, match="multiple of saves_per_block"):
        adapter_chain(V, x0, 12, 1, 1, torch.zeros(1, dtype=F64), torch.Generator().manual_seed(0), saves_per_block=8)
    with pytest.raises(ValueError, match="must divide 2 steps"):
        coupled_samples(x0[0], V, (3,), 2, 0.1, 2, torch.Generator().manual_seed(0))
