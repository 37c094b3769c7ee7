"""Paper B experiments (companion.experiments.low_temperature): helpers and small physics checks."""

import numpy as np
import pytest
import torch

from companion import init, models, simulate
from companion.experiments import low_temperature as ex
from companion.theory import low_temperature as lt

F64 = torch.float64


def test_simulate_betas_equals_separate_runs():
    # the batching trick beta <x, B y> = <(beta B^T) x, y> must reproduce models.low_temperature
    x0 = init.uniform_sphere(2, 12, 3, generator=torch.Generator().manual_seed(0))
    betas = [3.0, 50.0]
    ts, xs = ex.simulate_betas(ex.FIG3_B, ex.FIG3_V, betas, x0, 0.5, save_at=[0.0, 0.25, 0.5])
    for k, b in enumerate(betas):
        ref = simulate(models.low_temperature(ex.FIG3_B, ex.FIG3_V, b), x0, 0.5, method="euler", dt=0.01, save_at=[0.0, 0.25, 0.5])
        assert torch.allclose(xs[:, k], ref.xs, atol=1e-13)


def test_low_temperature_model_is_paper_eq1():
    # x_i' = P_{x_i} sum_j softmax_j(beta <x_i, B x_j>) V x_j, written out by hand
    g = torch.Generator().manual_seed(1)
    X = init.uniform_sphere(1, 6, 3, generator=g)[0]
    B = torch.randn(3, 3, generator=g, dtype=F64)
    V = torch.randn(3, 3, generator=g, dtype=F64)
    beta = 2.5
    S = beta * X @ B @ X.T  # S_ij = beta <x_i, B x_j>
    W = torch.softmax(S, dim=1)
    F = W @ (X @ V.T)
    expected = F - (F * X).sum(-1, keepdim=True) * X
    got = models.low_temperature(B, V, beta).vector_field(0.0, X[None])[0]
    assert torch.allclose(got, expected, atol=1e-13)


def test_large_beta_field_approaches_zero_temperature_field():
    # with many quasi-uniform tokens the softmax average tends to V y*, y* = B^T x / |B^T x|
    x0 = init.fibonacci_sphere(1, 3000, generator=torch.Generator().manual_seed(2))
    zt = models.ZeroTemperature(B=ex.FIG3_B, V=ex.FIG3_V).vector_field(0.0, x0)
    errs = []
    for beta in (10.0, 100.0):
        f = models.low_temperature(ex.FIG3_B, ex.FIG3_V, beta).vector_field(0.0, x0)
        errs.append((f - zt).norm(dim=-1).mean().item())
    assert errs[1] < 0.5 * errs[0]


def test_figure3_small_two_phases():
    r = ex.figure3(seeds=2, n=40, t1=20.0)
    ts = r["ts"]
    i3 = int(np.argmin(abs(ts - 3.0)))
    assert r["align_E"][i3].min() > 0.9  # first phase: near +-e1 (top eigenspace of V B^T)
    assert r["w2"][i3].max() < 0.5 * r["w2"][0].min()
    assert r["align_F"][-1].min() > 0.9  # terminal phase: near +-e2 (top eigenspace of V)
    assert np.isfinite(r["exit_times"]).all() and (r["exit_times"] > 3).all()


def test_zero_temperature_rate_small():
    r = ex.zero_temperature_rate(n_large=2000, n_small=50, seeds=1, t1=8.0, window_mf=(0.5, 2.0), window_late=(5.0, 8.0))
    assert r["predicted_mean_field"] == 1.0 and r["predicted_late"] == 2.0
    assert abs(r["rate_late"] - 2.0) < 0.2  # finite n: each token converges at rate gamma
    assert 0.7 < r["rate_mean_field"] < 1.4  # near gamma / 2 while the law still looks like a density
    assert all(v <= 1.0 for v in r["large"]["bound_ratio"].values())
    assert r["small"]["pi_drift"] < 1e-9


def test_profile_validation():
    with pytest.raises(ValueError, match="profile"):
        ex.figure3("huge")
    with pytest.raises(ValueError, match="betas"):
        ex.simulate_betas(ex.FIG3_B, ex.FIG3_V, [0.0], init.uniform_sphere(1, 3, 3), 0.1)


def test_fabs_example_satisfies_assumption_and_differs_from_F():
    top = lt.check_assumption_1(ex.FABS_B, ex.FABS_V)
    F = lt.top_eigenspace(ex.FABS_V)
    Fa = lt.top_eigenspace_abs(ex.FABS_V)
    assert top.gap > 0 and Fa.value < 0 < F.value
    assert abs((F.basis.T @ Fa.basis).item()) < 1e-12 and abs((top.basis.T @ Fa.basis).item()) < 1e-12
