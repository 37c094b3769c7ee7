"""Paper B experiments (companion.experiments.low_temperature): helpers, small physics checks, and
the claims functions: each gives the chapter's verdict on a real result and changes it when the
measurement moves past its tolerance or comes from a wrong model."""

import numpy as np
import pytest
import torch

from companion import fits, init, models, simulate
from companion.registry import judge
from companion.experiments import low_temperature as ex
from companion.theory import low_temperature as lt

F64 = torch.float64


def statuses(result):
    return {c.id: c.status for c in judge(result)}


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


def test_profiles_are_declared_and_bad_input_refused():
    exp = ex.figure3.experiment_name
    assert exp == "lowtemp-figure3"
    with pytest.raises(ValueError, match="profile"):
        ex.figure3("huge")
    with pytest.raises(ValueError, match="no parameter 'bad'"):
        ex.figure3(bad=1)
    with pytest.raises(TypeError, match="'trials'"):
        ex.figure3(trials=2.5)
    with pytest.raises(ValueError, match="betas"):
        ex.simulate_betas(ex.FIG3_B, ex.FIG3_V, [0.0], init.uniform_sphere(1, 3, 3), 0.1)


def test_the_registry_generator_draws_today_s_tokens():
    # the body draws from the registry's generator, seeded from cfg.seed: the same tokens as a
    # generator seeded by hand (so the chapter's numbers do not change with the declared shape)
    r = ex.conjecture1(trials=1, n=5, t1=0.5)
    x0 = init.uniform_sphere(1, 5, 3, generator=torch.Generator().manual_seed(ex.Conjecture1Config().seed))
    align0 = ((x0 @ lt.check_assumption_1(ex.FIG3_B, ex.FIG3_V).basis) ** 2).sum(-1).mean(-1)
    np.testing.assert_allclose(r["F"]["align_E"][0], align0.numpy(), rtol=0, atol=1e-15)


def test_fabs_example_satisfies_assumption_and_differs_from_F():
    top = lt.check_assumption_1(ex.FABS_B, ex.FABS_V)
    F = lt.top_eigenspace(ex.FABS_V)
    Fa = lt.top_eigenspace_abs(ex.FABS_V)
    assert top.gap > 0 and Fa.value < 0 < F.value
    assert abs((F.basis.T @ Fa.basis).item()) < 1e-12 and abs((top.basis.T @ Fa.basis).item()) < 1e-12


# ----------------------------------------------------------------------------- Figure 3


@pytest.fixture(scope="module")
def fig3():
    return ex.figure3(trials=2, n=40)


def test_figure3_small_two_phases(fig3):
    r = fig3
    i3 = int(np.argmin(abs(r["ts"] - 3.0)))
    assert r["align_E"][i3].min() > 0.9  # first phase: near +-e1 (top eigenspace of V B^T)
    assert r["w2"][i3].max() < 0.5 * r["w2"][0].min()
    assert r["align_F"][-1].min() > 0.9  # terminal phase: near +-e2 (top eigenspace of V)
    assert np.isfinite(r["exit_times"]).all() and (r["exit_times"] > 3).all()


def test_figure3_claims_follow_the_measurement(fig3):
    assert statuses(fig3) == {"B-fig3-phase1-E": "reproduced", "B-fig3-phase2-F": "reproduced"}
    i3 = int(np.argmin(abs(fig3["ts"] - ex.PHASE1_TIME)))
    # a level of ours is no longer a verdict: 0.9 at both seeds (past the old 0.95) is still concentration
    lagging = fig3["align_E"].copy()
    lagging[i3] = 1.0 - 2 * ex.TOL_PHASE1
    assert statuses(dict(fig3, align_E=lagging))["B-fig3-phase1-E"] == "reproduced"
    # less aligned with E than the uniform law (mean 0.205 +- 0.005 against 1/3, t = -25.7 with 1 dof,
    # one-sided p = 0.012): the opposite of concentration
    lagging[i3] = [0.2, 0.21]
    assert statuses(dict(fig3, align_E=lagging))["B-fig3-phase1-E"] == "not-reproduced"
    # the wrong subspace: alignment with E (which the tokens have left at the end) in place of F
    assert statuses(dict(fig3, align_F=fig3["align_E"]))["B-fig3-phase2-F"] == "not-reproduced"


def test_figure3_claims_fail_on_a_run_stopped_in_the_metastable_phase():
    early = ex.figure3(trials=2, n=20, t1=4.0)  # t = 4 < log(100): still on E, |P_F x|^2 near 0, below 1/3
    assert statuses(early) == {"B-fig3-phase1-E": "reproduced", "B-fig3-phase2-F": "not-reproduced"}


def test_figure3_one_seed_cannot_be_tested_over_seeds():
    st = {c.id: (c.status, c.needed) for c in judge(ex.figure3(trials=1, n=20, t1=4.0))}
    assert st["B-fig3-phase1-E"] == ("inconclusive", 2)


# ----------------------------------------------------------------------------- Figure 4


@pytest.fixture(scope="module")
def fig4():
    return ex.beta_comparison(betas=(10.0, 30.0, 100.0, 300.0, 1000.0), trials=2, n=40, t1=12.0)


def test_beta_comparison_claims_follow_the_measurement(fig4):
    st = statuses(fig4)
    assert {k: st[k] for k in ("B-fig4-exit-logbeta", "B-fig4-zero-temp-no-phase2")} == {
        "B-fig4-exit-logbeta": "reproduced", "B-fig4-zero-temp-no-phase2": "reproduced"}
    # exit times that fall as beta grows (the measured ones, reversed): the opposite direction
    assert statuses(dict(fig4, exit_times=fig4["exit_times"][::-1]))["B-fig4-exit-logbeta"] == "not-reproduced"
    # exit times rising at every seed (Kendall tau = 1 over 5 betas: exact one-sided p = 1/120 per seed;
    # two seeds pooled by Stouffer: z = 2 * 2.394 / sqrt(2) = 3.39, p = 3.5e-4) whatever their slope
    rising = np.array([[1.0, 1.0], [1.01, 1.02], [1.02, 1.03], [1.05, 1.04], [1.06, 1.07]])
    rows = {c.id: c for c in judge(dict(fig4, exit_times=rising))}
    assert rows["B-fig4-exit-logbeta"].status == "reproduced" and rows["B-fig4-exit-logbeta"].margin == 2.1
    # two betas: no trend to test
    one = ex.beta_comparison(betas=(10.0, 1000.0), trials=1, n=10, t1=10.0)
    assert statuses(one)["B-fig4-exit-logbeta"] == "not-checkable"
    # the "beta = inf" curve taken from a finite-beta run: it has a second phase
    assert statuses(dict(fig4, w2_inf=fig4["w2"][:, 0]))["B-fig4-zero-temp-no-phase2"] == "not-reproduced"


def _window_curves(fig4, floor, shift=0.0):
    # W2 ~ e^{-t} (1 + 0.05 s) + floor per seed s; beta k delayed by shift * k
    ts = fig4["ts"][:, None, None]
    k = np.arange(len(fig4["betas"]))[None, :, None]
    s = np.arange(fig4["w2"].shape[-1])[None, None, :]
    return np.exp(-np.clip(ts - shift * k, 0, None)) * (1 + 0.05 * s) + floor


def test_cor4_window_start_is_judged_on_its_shape(fig4):
    row = lambda w: {c.id: c for c in judge(dict(fig4, w2=w))}["B-cor4-window-start"]  # noqa: E731
    good = row(_window_curves(fig4, 1e-3))  # t_in = log(1/eps) at every beta, 1 far from the floor
    assert abs(good.measured["slope_largest_beta"] - 1) < 0.25
    narrow = row(_window_curves(fig4, 0.3))  # levels over less than a decade: no shape can be told
    assert narrow.status == "inconclusive" and "needed" in narrow.why and narrow.measured["eps_span"] < ex.COR4_RANGE
    # a start that moves with beta is printed in paired standard errors; Cor. 4 says nothing of it
    moved = row(_window_curves(fig4, 0.3, shift=0.5))
    assert moved.status == "inconclusive" and moved.measured["t_in_shift_in_paired_se"] > 10
    assert row(_window_curves(fig4, 0.6)).status == "not-checkable"  # no window below 0.7 at any beta
    out = ex.cor4_window(fig4["ts"], _window_curves(fig4, 1e-3), fig4["betas"])
    assert out["t_in"].shape == (len(fig4["betas"]), ex.COR4_POINTS)
    with pytest.raises(ValueError, match="w2 must be"):
        ex.cor4_window(fig4["ts"], fig4["w2"][:, 0], fig4["betas"])


# ----------------------------------------------------------------------------- Section 2's example


def test_uniform_vp_closed_form_against_known_values():
    assert lt.uniform_vp(4, 3, 1.0) == pytest.approx(1.0)  # E[1/s] - 1 for s ~ Beta(3/2, 1/2)
    assert lt.uniform_vp(3, 2, 0.5) == pytest.approx(1.0)  # B(1/2, 1) / B(1, 1/2)
    assert lt.uniform_vp(3, 1, 0.5) == float("inf") and lt.uniform_vp(4, 2, 1.0) == float("inf")  # k = 2p: infinite
    assert lt.uniform_vp(3, 1, 0.49) < float("inf")
    with pytest.raises(ValueError, match="p must lie"):
        lt.uniform_vp(3, 1, 1.5)
    with pytest.raises(ValueError, match="k <= d"):
        lt.uniform_vp(3, 4, 0.5)


def test_tail_index_recovers_a_pareto_tail_and_refuses_bad_input():
    u = torch.rand(100000, generator=torch.Generator().manual_seed(1), dtype=F64)
    assert abs(ex.tail_index(u ** (-1 / 0.7), 2000) - 0.7) < 0.05
    with pytest.raises(ValueError, match="top"):
        ex.tail_index(u, 1)
    with pytest.raises(ValueError, match="more than top"):
        ex.tail_index(u[:10], 20)
    with pytest.raises(ValueError, match="positive"):
        ex.tail_index(-u, 10)


@pytest.mark.slow
def test_assumptions_example_reproduces_and_fails_for_another_law():
    r = ex.assumptions_example(n=100000, trials=3, top=300)
    assert statuses(r) == {"B-sec2-example-compat": "reproduced"}
    # a density that blows up near E-perp (|P_E x| squared): every tail index halves, the row fails
    assert statuses(ex.assumptions_example(n=100000, trials=3, top=300, warp=2.0)) == {"B-sec2-example-compat": "not-reproduced"}
    # the tail indices a wrong criterion (k > p) would give
    assert statuses(dict(r, alpha=r["ks"] / r["ps"]))["B-sec2-example-compat"] == "not-reproduced"
    with pytest.raises(ValueError, match="ks must"):
        ex.assumptions_example(ks=(4,), d=4)


# ----------------------------------------------------------------------------- the rate in beta


@pytest.fixture(scope="module")
def rate():
    return ex.rate_in_beta(n=300, exact_w2=False)


def test_rate_in_beta_claims_follow_the_measurement(rate):
    assert statuses(rate) == {"B-appC2-prop6-nonsymmetric": "reproduced", "B-thm1-rate-beta": "reproduced",
                              "B-thm1-constants": "not-checkable"}
    # a distance that decays only like beta^-0.2, slower than the rate: the check must fail
    slow = np.log(rate["coupling"][0] * (rate["betas"] / rate["betas"][0]) ** -0.2)
    bad = dict(rate, fit_rate=fits.line_fit(np.log(rate["rate"]), slow), fit_rate_nonsym=fits.line_fit(np.log(rate["rate"]), slow))
    assert statuses(bad)["B-thm1-rate-beta"] == "not-reproduced"
    assert statuses(bad)["B-appC2-prop6-nonsymmetric"] == "not-reproduced"


# ----------------------------------------------------------------------------- Corollary 2


@pytest.fixture(scope="module")
def zero():
    return ex.zero_temperature_rate(n_large=2000, n_small=50, trials=1, t1=8.0, window_mf=(0.5, 2.0), window_late=(5.0, 8.0))


def test_zero_temperature_rate_small(zero):
    r = zero
    assert r["predicted_mean_field"] == 1.0 and r["predicted_late"] == 2.0
    assert abs(r["rate_late"] - 2.0) < 0.2  # finite n: each token converges at rate gamma
    assert 0.7 < r["rate_mean_field"] < 1.4  # near gamma / 2 while the law still looks like a density
    assert all(v <= 1.0 for v in r["large"]["bound_ratio"].values())
    assert r["small"]["pi_drift"] < 1e-9


def test_zero_temperature_rate_claims_follow_the_measurement(zero):
    ids = ["B-cor2-bound", "B-cor2-rate-gap", "B-lemma9-pi-invariant", "B-prop8-vp-decay", "B-lemma7-w2-vp"]
    assert statuses(zero) == dict.fromkeys(ids, "reproduced")
    assert zero["general"]["dim_E"] == 2 and zero["general"]["offdiag"] > 0.1  # where Lemma 9 has content
    over = dict(zero, small=dict(zero["small"], bound_ratio={1.0: 1.2}))
    assert statuses(over)["B-cor2-bound"] == "not-reproduced"
    # the wrong prediction: p = 1 for the density as well (Assumption 2 forbids it for dim E = 1)
    assert statuses(dict(zero, predicted_mean_field=2.0))["B-cor2-rate-gap"] == "partly"  # that regime fails, the other holds
    drift = dict(zero, general=dict(zero["general"], pi_drift=1e-6))
    assert statuses(drift)["B-lemma9-pi-invariant"] == "not-reproduced"
    slow = dict(zero, general=dict(zero["general"], prop8_ratio={0.5: 1.05}))  # 5 % above, Euler allows 1 %
    assert statuses(slow)["B-prop8-vp-decay"] == "not-reproduced"
    loose = dict(zero, general=dict(zero["general"], lemma7_ratio={1.0: 1.1}))  # W2 above sqrt(2 V_p)
    assert statuses(loose)["B-lemma7-w2-vp"] == "not-reproduced"


def _curves(zero, name, rate):
    return dict(zero[name], w2=np.exp(-rate * zero["ts"])[:, None] * np.ones_like(zero[name]["w2"]))


def test_cor2_rate_is_judged_as_a_bound(zero):
    # Corollary 2 bounds W2 from above: a decay faster than its rate agrees with it, a slower one does not
    fast = dict(zero, large=_curves(zero, "large", 3.0), small=_curves(zero, "small", 5.0))
    assert statuses(fast)["B-cor2-rate-gap"] == "reproduced"
    # exactly exponential at 0.75 of gamma: no drift inside the window, so the error is Euler's r dt / 2 = 1 %
    slow = dict(zero, small=_curves(zero, "small", 1.5))
    row = {c.id: c for c in judge(slow)}["B-cor2-rate-gap"]
    assert row.status == "partly" and row.why.endswith("fails: finite n")
    assert row.tolerance["finite_n"] == pytest.approx(0.01, rel=1e-4)
    assert statuses(dict(zero, large=_curves(zero, "large", 0.85)))["B-cor2-rate-gap"] in ("partly", "not-reproduced")
    rows = {c.id: c for c in judge(zero)}
    assert set(rows["B-cor2-rate-gap"].measured) == {"mean_field", "finite_n"}  # the ratios stay printed
    assert rows["B-cor2-rate-gap"].uncertainty.startswith("rate over the bound's rate, range over seeds")


def test_decay_rate_refuses_a_window_without_two_points():
    ts = np.linspace(0, 1, 5)
    assert abs(ex.decay_rate(ts, np.exp(-2 * ts), (0.0, 1.0)) - 2) < 1e-12
    with pytest.raises(ValueError, match="window"):
        ex.decay_rate(ts, np.exp(-ts), (0.3, 0.4))


def test_lemma9_and_prop8_fail_for_a_flow_they_do_not_cover():
    # eq. (1) at beta = 10 on the general example: Pi moves and V_p does not decay at Prop. 8's rate
    r = ex.zero_temperature_rate(n_large=50, n_small=30, trials=1, t1=4.0, window_mf=(0.5, 2.0), window_late=(2.0, 4.0),
                                 general_beta=10.0)
    st = statuses(r)
    assert st["B-lemma9-pi-invariant"] == "not-reproduced" and st["B-prop8-vp-decay"] == "not-reproduced"


def test_general_pair_refuses_small_d():
    with pytest.raises(ValueError, match="d must be"):
        ex.general_pair(2, torch.Generator().manual_seed(0))


# ----------------------------------------------------------------------------- Conjecture 1


@pytest.fixture(scope="module")
def conj():
    return ex.conjecture1(trials=2, n=40)


def test_conjecture1_claims_follow_the_measurement(conj):
    assert statuses(conj) == {"B-conj1-F": "reproduced", "B-conj1-Fabs": "reproduced", "B-fig2-examples": "not-checkable"}
    swapped = dict(conj, F=conj["Fabs"], Fabs=conj["F"])  # each example judged against the other's target
    assert statuses(swapped)["B-conj1-F"] == "not-reproduced"
    assert statuses(swapped)["B-conj1-Fabs"] == "not-reproduced"


def test_conjecture1_claims_fail_before_the_terminal_phase():
    early = ex.conjecture1(trials=4, n=20, t1=3.0)  # still concentrated on E = span(e1)
    st = statuses(early)
    assert st["B-conj1-F"] == "not-reproduced" and st["B-conj1-Fabs"] == "not-reproduced"


# ----------------------------------------------------------------------------- App. C.3


@pytest.fixture(scope="module")
def grad():
    return ex.gradient_flow(trials=4, n=40)


def test_gradient_flow_claims_follow_the_measurement(grad):
    st = statuses(grad)
    assert {k: st[k] for k in ("B-appC3-min-small-beta", "B-appC3-min-zero-temp")} == {
        "B-appC3-min-small-beta": "reproduced", "B-appC3-min-zero-temp": "reproduced"}
    # E first is clear at n = 40; "then F" is not significant over 4 seeds when one of them is still on E at t = 30
    assert st["B-fig8-mid-E-then-F"] in ("reproduced", "inconclusive")
    swapped = dict(grad, small=grad["inf"], inf=grad["small"], mid=grad["inf"])  # each run judged as another
    assert set(statuses(swapped).values()) == {"not-reproduced"}
    # the small-beta run rises briefly towards E on its way to F (peak near 0.48): the declared test, which
    # has no level of ours, reads that as E first, then F; the printed marks tell the two regimes apart
    row = {c.id: c for c in judge(dict(grad, mid=grad["small"]))}["B-fig8-mid-E-then-F"]
    assert row.status == "reproduced" and row.measured["peak_E_worst_seed"] < ex.MID_E_LEVEL


def test_gradient_flow_claims_fail_at_a_larger_beta():
    # beta = 30 is not "small": at t = 30 the tokens are not one cluster on F yet
    st = statuses(ex.gradient_flow(trials=4, n=40, beta_small=30.0))
    assert st["B-appC3-min-small-beta"] == "not-reproduced" and st["B-appC3-min-zero-temp"] == "reproduced"


def test_gradient_flow_refuses_bad_matrices():
    with pytest.raises(ValueError, match="v_diag"):
        ex.gradient_flow(v_diag=(1.0, -1.0, 2.0))


# ----------------------------------------------------------------------------- Lemma 5


@pytest.fixture(scope="module")
def lap():
    return ex.laplace(betas=(1.0, 10.0, 100.0, 1000.0, 1e4), tokens=3)


def test_laplace_quadrature_and_leading_term(lap):
    assert lap["quad_vs_closed"] < 1e-12  # the quadrature against the closed form of the vMF mixture
    np.testing.assert_allclose(lap["err"][-1] / lap["leading"][-1], 1.0, atol=2e-3)  # error ~ 1/beta, derived constant
    np.testing.assert_allclose(lap["hole_err"], lap["hole_closed"], rtol=1e-7)
    assert abs(lap["exponent"] - 1) < 0.05 and lap["density_min"] > 0


def test_laplace_claims_follow_the_measurement(lap):
    assert statuses(lap) == {"B-lemma5-laplace-rate": "reproduced", "B-lemma5-assumption3-needed": "reproduced"}
    # the wrong model for each row: the law with a hole judged as the positive density, and the reverse
    hole_as_positive = dict(lap, fit_rate=fits.line_fit(np.log(lap["rate"]), np.log(lap["hole_err"])))
    assert statuses(hole_as_positive)["B-lemma5-laplace-rate"] == "not-reproduced"
    positive_as_hole = dict(lap, hole_err=lap["err"].min(axis=1))  # below the worst direction's error
    assert statuses(positive_as_hole)["B-lemma5-assumption3-needed"] == "not-reproduced"
    # the match with the limit 1 - cos r is printed, not judged: 10 % above it is still a poor approximation
    assert statuses(dict(lap, hole_err=lap["hole_err"] * 1.1))["B-lemma5-assumption3-needed"] == "reproduced"


# ----------------------------------------------------------------------------- App. C.3, Figs. 6, 7, 9


@pytest.fixture(scope="module")
def gfb():
    return ex.gradient_flow_beta(betas=(0.1, 100.0), trials=4, n=40)


def test_gradient_flow_beta_physics(gfb):
    f6, f7, f9 = gfb["fig6"], gfb["fig7"], gfb["fig9"]
    # Fig. 6 at small beta: one Dirac, so W2 to Pi_# mu_0 is 2 sqrt(mass Pi sends to the other pole)
    side = 1.0 - f6["switched"][0, 0]
    assert f6["w2"][-1, 0, 0] == pytest.approx(2 * np.sqrt(1 - side), abs=1e-6)
    # Fig. 7: (delta_v + delta_-v)/2 is optimal, so the ratio never exceeds 1 (up to Euler's error)
    assert f7["energy_ratio"].max() < 1 + 1e-9
    assert f9["energy_ratio"] is None and f9["align"][-1, 1].min() > f9["align"][-1, 0].max()


def test_gradient_flow_beta_claims_follow_the_measurement(gfb):
    st = statuses(gfb)
    assert st == dict.fromkeys(("B-fig6-max-small-beta-dirac", "B-fig6-max-large-beta-near-pi", "B-fig7-nsd-pi-every-beta",
                                "B-fig7-nsd-large-beta-optimal", "B-fig9-min-pd-large-beta-only"), "reproduced")
    f6, f7, f9 = gfb["fig6"], gfb["fig7"], gfb["fig9"]
    # Fig. 6, small beta ending below the energy of Pi_# mu_0 (two poles, not one Dirac)
    low = f6["energy_ratio"].copy()
    low[-1, 0] = f6["pi_energy_ratio"][0] - [0.01, 0.02, 0.015, 0.012]
    assert statuses(dict(gfb, fig6=dict(f6, energy_ratio=low)))["B-fig6-max-small-beta-dirac"] == "not-reproduced"
    # the betas swapped: large beta now optimal and farther from Pi_# mu_0 (Figs. 6 and 9)
    flip = lambda r, *keys: dict(r, **{k: r[k][:, ::-1] for k in keys})  # noqa: E731
    assert statuses(dict(gfb, fig6=flip(f6, "energy_ratio", "w2")))["B-fig6-max-large-beta-near-pi"] == "not-reproduced"
    assert statuses(dict(gfb, fig9=flip(f9, "align", "w2")))["B-fig9-min-pd-large-beta-only"] == "not-reproduced"
    # time reversed in Fig. 7: W2 grows at every beta, the energy falls
    back = dict(f7, w2=f7["w2"][::-1], energy_ratio=f7["energy_ratio"][::-1])
    st7 = statuses(dict(gfb, fig7=back))
    assert st7["B-fig7-nsd-pi-every-beta"] == "not-reproduced" and st7["B-fig7-nsd-large-beta-optimal"] == "not-reproduced"
    # the fraction of tokens switching pole is printed, not judged (it shrinks like n^-1/2: finite size)
    for switched in (0.0, 0.5):
        kept = dict(f7, switched=np.full_like(f7["switched"], switched))
        assert statuses(dict(gfb, fig7=kept))["B-fig7-nsd-pi-every-beta"] == "reproduced"


def test_gradient_flow_beta_refuses_bad_matrices():
    with pytest.raises(ValueError, match="nsd_diag"):
        ex.gradient_flow_beta(nsd_diag=(0.0, 1.0, -2.0), n=5, trials=1, t1=0.1)
    with pytest.raises(ValueError, match="pd_diag"):
        ex.gradient_flow_beta(pd_diag=(1.0, 1.0, 2.0), n=5, trials=1, t1=0.1)


# ----------------------------------------------------------------------------- App. B


@pytest.fixture(scope="module")
def eig():
    return ex.eigen_consensus(n=10, n_plus=7)  # the fast profile has n = 20


def test_eigen_consensus_claims_follow_the_measurement(eig):
    assert statuses(eig) == {"B-appB-eigen-stationary": "reproduced", "B-appB-top-consensus-stable": "reproduced"}
    # Euler's exact per-step factor 1 + r dt explains the residual: log(1 + r dt) / dt to 4 digits
    r = eig["predicted_spread"]
    np.testing.assert_allclose(eig["spread_rate"][0], np.log1p(r * 0.01) / 0.01, rtol=1e-3)
    # the wrong model: the field at a non-eigenvector in place of the eigenvectors'
    bad = dict(eig, field=np.repeat(eig["field_non_eigen"][:, None, :], 3, axis=1))
    assert statuses(bad)["B-appB-eigen-stationary"] == "not-reproduced"
    # the wrong eigenvector called top (the unstable e1-consensus); rates 10 % off our linearisation are printed only
    assert statuses(dict(eig, top=1))["B-appB-top-consensus-stable"] == "not-reproduced"
    assert statuses(dict(eig, mode_rates=eig["mode_rates"] * 1.1))["B-appB-top-consensus-stable"] == "reproduced"


def test_eigen_consensus_refuses_bad_split():
    with pytest.raises(ValueError, match="n_plus"):
        ex.eigen_consensus(n=5, n_plus=5)


# ----------------------------------------------------------------------------- App. C.1


@pytest.fixture(scope="module")
def hm():
    return ex.hardmax(ns=(50, 100, 200, 400), trials=1)


def test_hardmax_claims_follow_the_measurement(hm):
    assert statuses(hm) == {"B-appC1-hardmax-not-alg2": "reproduced"}
    # the wrong model: Algorithm 2 compared with itself has no gap
    x0 = init.fibonacci_sphere(1, 50, generator=torch.Generator().manual_seed(0))
    zt = models.ZeroTemperature(B=ex.FIG3_B, V=ex.FIG3_V)
    same = (simulate(zt, x0, 1.0, method="euler", dt=0.01).final - simulate(zt, x0, 1.0, method="euler", dt=0.01).final).norm()
    assert statuses(dict(hm, gap=np.full(4, float(same))))["B-appC1-hardmax-not-alg2"] == "not-reproduced"
    # the exponent (derived, n^-1/2) is printed, not judged: the schemes still differ
    assert statuses(dict(hm, exponent=0.5 + 2 * ex.TOL_HARDMAX_EXP))["B-appC1-hardmax-not-alg2"] == "reproduced"


def test_a_result_stored_under_the_former_field_names_still_plots_and_judges(hm):
    # results stored before seeds -> trials and t -> t1 keep their config keys: read through `renamed`
    former = {"trials": "seeds", "t1": "t"}
    old = dict(hm, config={former.get(k, k): v for k, v in hm["config"].items()})
    assert "t" in old["config"] and "t1" not in old["config"]
    assert statuses(old) == statuses(hm)
    import matplotlib
    matplotlib.use("Agg")
    ax = ex.plot_hardmax(old)
    assert ax.get_lines()[0].get_label() == f"trajectories at $t = {hm['config']['t1']:g}$"
