"""Chapter phase_transitions (paper A Section 4): the experiment building blocks on tiny sizes, and
every claims function: on the experiment's (reduced) result it gives the chapter's verdict, and on a
wrong input (the measurement moved past its tolerance, or the result of a wrong parameter) the
verdict changes."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from companion import init, models, simulate
from companion.registry import get, judge
from companion.experiments import phase_transitions as pt
from companion.theory import lora_depth as th

F64 = torch.float64


@pytest.fixture(scope="module", autouse=True)
def _one_thread_for_the_module():
    """One torch thread, set before the module-scoped results are computed (the shared ``one_thread``
    fixture is per test, too late for them): the batches here are tiny, and a second thread on a
    loaded 2-core machine made them tens of times slower."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


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


def test_exit_time_follows_switch_time_and_bound():
    Z0 = init.cube(2, 10, 2, 5.0, generator=torch.Generator().manual_seed(5))
    eps, delta = 0.05, 0.1
    base, C, T_delta = pt.base_run(Z0, 25.0, 0.1, delta)
    Vt = torch.diag(torch.tensor([1.0, 1.0 - eps], dtype=F64))
    _, exits, _ = pt.perturbed_times(Z0, Vt, torch.eye(2, dtype=F64), C, T_delta, 120.0, 0.1, delta, save_dt=0.1)
    for tr in range(2):
        sw = th.switch_time(C[tr], eps)
        assert sw - 0.2 <= exits[tr] <= max(sw, T_delta[tr]) + 2.0
        b = th.tube_bound(C[tr], torch.eye(2), torch.eye(2), Vt, n=10, delta=delta)
        if b is not None:
            assert exits[tr] <= th.exit_time_bound(T_delta[tr], b)


def test_bad_profile_and_parameter_are_rejected():
    with pytest.raises(ValueError, match="profile must be"):
        pt.norm_transition(profile="huge")
    with pytest.raises(ValueError, match="no parameter 'bad'"):
        pt.eps_sweep(bad=1)
    with pytest.raises(ValueError, match="fig8_kappa"):
        pt.critical_kappa(kappas=(0.01, 0.02), trials=2, L=8, blocks=1)


# Configs as they were stored before the fields were renamed (per, inits, samples: trials; a t_end that
# counts blocks: blocks; a t_end that is a horizon: t1).
FORMER_FULL = {
    "phase-norm-transition": {"depths": [16, 32, 64, 128, 256, 512, 1024, 2048, 4096], "per": 1000, "n": 8, "c": 1.0,
                              "kappa0": 0.05, "delta0": 1e-3, "t_end": 3, "seed": 0},
    "phase-critical-kappa": {"kappas": [0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2], "per": 2000, "L": 1024, "n": 8,
                             "delta0": 0.05, "t_end": 7, "t_from": 2.5, "fig8_kappa": 0.05, "relax_t": 1.5, "seed": 1},
    "phase-rank-independence": {"ranks": [1, 4, 16], "kappa": 0.01, "d": 16, "n": 8, "per": 4000, "L": 512, "delta0": 0.05,
                                "t_end": 5, "t_from": 2.0, "seed": 2},
    "phase-depth-transition": {"trials": 64, "n": 20, "half_width": 5.0, "dt": 0.1, "t_base": 30.0, "t_end": 1000.0,
                               "t_end_b": 60.0, "eps": 0.01, "v_b": [1.0, 1.0], "delta": 0.1, "seed": 3},
    "phase-eps-sweep": {"inits": 32, "n": 20, "half_width": 5.0, "dt": 0.1, "t_base": 30.0, "t_end": 3000.0, "eps_min": 1e-3,
                        "eps_max": 0.3, "eps_count": 15, "delta": 0.1, "boot": 200, "seed": 4},
    "phase-weak-error": {"depths": [2, 4, 8, 16, 32, 64, 128], "samples": 100000, "n": 4, "kappa": 0.1, "rank": 1,
                         "rank_depths": [2, 4, 8, 16], "ref_steps": 256, "ito_correction": True, "seed": 0},
}


@pytest.mark.parametrize("name", sorted(FORMER_FULL))
def test_results_stored_under_the_former_field_names_read_as_the_full_profile(name):
    exp = get(name)
    assert exp.config_of({"config": FORMER_FULL[name]}) == exp.profiles["full"]


def status(rows, cid):
    (row,) = [c for c in rows if c.id == cid]
    return row.status


# ---------------------------------------------------------------- claims: each can fail
@pytest.fixture(scope="module")
def norm():
    return pt.norm_transition(depths=(16, 32, 64, 128), trials=32)


def test_norm_claims_give_the_chapter_verdicts(norm):
    rows = judge(norm)
    # four depths: a monotone fall gives Kendall p = 1/4! = 0.042 < 0.05; at alpha = 1/4 the deviation falls like
    # L^(-1/2), many standard errors slower than 1/L at 32 samples; alpha = 0 falls like 1/L
    assert [(c.id, c.status) for c in rows][:4] == [
        ("A-thm4.2-subcritical-vanishes", "reproduced"), ("A-thm4.2-rate-1/L-alpha0", "reproduced"),
        ("A-thm4.2-rate-1/L-alpha1/4", "not-reproduced"), ("A-thm4.2-rate-derived", "reproduced")]
    assert all(c.chapter == "phase_transitions" and c.profile == "custom" for c in rows)
    assert {c.basis for c in rows} == {"paper", "derived", "reading"} and all(c.quote for c in rows)


def _with_row(r, a, values, rel_se=0.01):
    """``r`` with the mean deviation of the ``a``-th alpha replaced by ``values`` (standard errors ``rel_se`` of them)."""
    mean, se = np.array(r["mean"], dtype=float), np.array(r["se"], dtype=float)
    mean[a], se[a] = values, rel_se * np.asarray(values)
    return dict(r, mean=mean, se=se)


def test_norm_claims_fail_when_the_deviations_move(norm):
    L = np.asarray(norm["depths"], dtype=float)
    # alpha = 1/4 decaying exactly like 1/L (the theorem's rate): (20) holds there; the derived law (-1/2) fails for
    # alpha = 1/4 and holds for alpha = 0, so it is partly
    rows = judge(_with_row(norm, 1, 2.0 / L))
    assert status(rows, "A-thm4.2-rate-1/L-alpha1/4") == "reproduced" and status(rows, "A-thm4.2-rate-derived") == "partly"
    # alpha = 0 rising like L^0.3 (1 % errors): it does not vanish (Kendall over the depths: the opposite direction is
    # significant only with more depths, here 4 points give p = 1/24 < 0.05), and (20) fails there
    rows = judge(_with_row(norm, 0, 0.01 * L**0.3))
    assert status(rows, "A-thm4.2-subcritical-vanishes") == "partly"  # alpha = 1/4 still vanishes
    assert status(rows, "A-thm4.2-rate-1/L-alpha0") == "not-reproduced"
    assert status(rows, "A-thm4.2-rate-derived") in ("partly", "not-reproduced")
    # alpha = 0 decaying like L^(-1/2) with 1 % errors: 0.5 / (0.01 sqrt 2 / log 2) = 25 standard errors slower than 1/L
    assert status(judge(_with_row(norm, 0, 0.3 / L**0.5)), "A-thm4.2-rate-1/L-alpha0") == "not-reproduced"
    # alpha = 3/4: tokens that spread out (a spread above the initial one) fail Sec. 4.1.1's synchronisation
    spread = np.array(norm["sync_spread"], dtype=float)
    spread[3] = 1.0  # (n - 1)(d - 1) delta0^2 = 1.4e-5 at the start
    assert status(judge(dict(norm, sync_spread=spread)), "A-sec4.1.1-supercritical-sync") in ("partly", "not-reproduced")
    # a common direction that stays near u1 (displacement 0.01, against 2/3 for a random one) is not "strongly random"
    disp = np.array(norm["sync_disp"], dtype=float)
    disp[3] = 0.01
    rows = judge(dict(norm, sync_disp=disp))
    (row,) = [c for c in rows if c.id == "A-sec4.1.1-supercritical-sync"]
    assert row.status in ("partly", "not-reproduced") and "fails: random direction" in row.why
    # a growing critical level (alpha = 1/2 slope 0.3, s.e. as measured) fails the supercritical claim
    rows = judge(dict(norm, slopes={**norm["slopes"], 0.5: 0.3}))
    assert status(rows, "A-thm4.2-supercritical") in ("partly", "not-reproduced")


@pytest.fixture(scope="module")
def crit():
    return pt.critical_kappa()


@pytest.mark.slow  # the fast profile, whole
def test_critical_claims_give_the_chapter_verdicts(crit):
    rows = judge(crit)
    assert [(c.id, c.status) for c in rows if c.id != "A-eq21-bingham-all-kappa"] == [
        ("A-eq21-small-kappa", "reproduced"), ("A-thmD4-sum-from-1", "not-reproduced"),
        ("A-fig8-synchronisation", "reproduced"), ("A-lemD5-spread-rate", "reproduced"),
        ("A-lemD7-relaxation-rate", "reproduced")]
    # the D.4 form cannot vanish as kappa -> 0: its i = 1 term is n kappa / (d kappa) = 8/3
    assert crit["D4"][0] > 8 / 3 and crit["q"][0] < 0.1
    # Lemma D.7's rate for V = diag(1, 0.5, 0.25), d = 3: 0.5 + 1.5 kappa, by hand
    assert crit["D7_rate"] == pytest.approx([0.5 + 1.5 * k for k in crit["kappas"]])
    # the rate at small kappa is close to 2 lambda_1 = 2 (computed independently: Lemma D.5 without kappa)
    assert abs(crit["spread_rate"][0] - 2.0) < 0.1


@pytest.mark.slow  # the fast profile, whole
def test_critical_claims_fail_for_a_wrong_parameter(crit):
    # the measurement at twice the kappa, judged against the predictions for the chapter's kappa
    doubled = pt.critical_kappa(kappas=tuple(2 * k for k in crit["kappas"]), fig8_kappa=0.1, trials=20)
    wrong = dict(doubled, eq21=crit["eq21"], D4=crit["D4"], bingham=crit["bingham"])
    rows = judge(wrong)
    assert status(rows, "A-eq21-small-kappa") == "not-reproduced"
    assert status(rows, "A-eq21-bingham-all-kappa") == "not-reproduced"
    # 10 % off everywhere with 1 % errors: 10 standard errors at every kappa, the derived Bingham claim fails throughout;
    # 10 % off at the largest kappa only: partly
    assert status(judge(dict(crit, q=crit["bingham"] * 1.1, q_se=crit["bingham"] * 0.01)), "A-eq21-bingham-all-kappa") == "not-reproduced"
    q = np.array(crit["bingham"], dtype=float)
    q[-1] *= 1.1
    assert status(judge(dict(crit, q=q, q_se=crit["bingham"] * 0.01)), "A-eq21-bingham-all-kappa") == "partly"
    # the D.4 form is right only if the measurement carries its n/d extra term
    assert status(judge(dict(crit, q=crit["D4"])), "A-thmD4-sum-from-1") == "reproduced"
    # a shortfall below 2 lambda_1 + (d - 2) kappa that shrinks as kappa grows (the O(eps) term growing as the tokens
    # localise): the opposite of Lemma D.5's shape, Kendall p = 1/7! in that direction
    shrinking = crit["C_S"] - np.linspace(0.5, 0.01, len(crit["kappas"]))
    assert status(judge(dict(crit, spread_rate=shrinking)), "A-lemD5-spread-rate") == "not-reproduced"
    # an approach to the level slower than Lemma D.7's rate by 4 standard errors at kappa = 0.05 (one-sided p = 3e-5),
    # the other kappa as measured: the lemma fails at that kappa only
    slow = np.array(crit["relax_rate"], dtype=float)
    slow[4] = crit["D7_rate"][4] - 4 * crit["relax_rate_se"][4]
    assert status(judge(dict(crit, relax_rate=slow)), "A-lemD7-relaxation-rate") == "partly"
    assert status(judge(dict(crit, relax_rate=crit["D7_rate"] - 4 * crit["relax_rate_se"])), "A-lemD7-relaxation-rate") == "not-reproduced"
    # tokens that did not synchronise: a spread at the end above the one at the start
    assert status(judge(dict(crit, fig8_spread=2 * crit["fig8_spread_t0"])), "A-fig8-synchronisation") == "not-reproduced"


@pytest.mark.slow  # the fast profile, whole
def test_rank_claims_give_the_chapter_verdict_and_can_fail():
    rank = pt.rank_independence()
    assert [c.status for c in judge(rank)] == ["reproduced"]
    levels = np.array(rank["levels"], dtype=float)
    levels[-1] += 6 * math.hypot(rank["se"][-1], rank["se"][0])  # rank 16 moved 6 combined s.e. away
    assert [c.status for c in judge(dict(rank, levels=levels))] == ["not-reproduced"]


def test_rank_claim_is_the_homogeneity_test():
    # three equal standard errors s and levels 0, 0, 3 s: Cochran's Q = sum (m - mean)^2 / s^2 = 1 + 1 + 4 = 6, so
    # p = exp(-3) = 0.0498 under chi2(2): just rejected at 0.05, kept at 0.01 (fragile)
    r = {"ranks": [1, 4, 16], "levels": np.array([0.8, 0.8, 0.83]), "se": np.array([0.01, 0.01, 0.01]), "eq21": 0.79,
         "L": 512, "per_rank": 1000}
    (row,) = judge(dict(r, experiment="phase-rank-independence"))
    assert row.status == "not-reproduced" and row.fragile and row.basis == "reading"
    assert pt.rank_independence_summary(r)["p"] == pytest.approx(math.exp(-3), rel=1e-9)


@pytest.fixture(scope="module")
def dep():
    return pt.depth_transition(trials=3, t1=150.0)


def test_depth_claims_give_the_chapter_verdicts(dep):
    # three initial conditions that all exit in setting (b): a binomial test against 1/2 gives p = 1/8, undecided
    assert [(c.id, c.status) for c in judge(dep)] == [
        ("A-thm4.6-exit-bound", "reproduced"), ("A-thm4.6-switch-time", "reproduced"), ("A-thm4.6-qk-setting", "not-reproduced"),
        ("A-fig5-qk-exit", "inconclusive"), ("A-corB8-bounded", "reproduced")]
    (qk,) = [c for c in judge(dep) if c.id == "A-fig5-qk-exit"]
    assert qk.needed is not None and qk.needed > 3
    assert dep["gap_b"] == 0.0  # V~ = I_2: the double eigenvalue 1 has no gap


def test_depth_claims_fail_when_moved(dep):
    assert status(judge(dict(dep, bound_a=dep["bound_a"] / 10)), "A-thm4.6-exit-bound") == "not-reproduced"
    assert status(judge(dict(dep, bound_a=np.full(3, np.nan))), "A-thm4.6-exit-bound") == "not-reproduced"
    # exits predicted for eps = 0.02 (half the switch time) against the eps = 0.01 measurement
    half = np.array([th.switch_time(np.asarray(c), 0.02) for c in [dep["clusters0"]]] + list(dep["switch_a"][1:] / 2))
    assert status(judge(dict(dep, switch_a=half)), "A-thm4.6-switch-time") == "not-reproduced"
    # in the QK setting, 2 of 20 initial conditions leave: P(X <= 2) = 211 / 2^20 = 2e-4 under one half, not typical
    few = dict(dep, exit_b=np.r_[np.full(2, 4.0), np.full(18, np.inf)], T_delta=np.full(20, 4.0),
               dist_b_at_T_delta=np.full(20, 0.1), bound_b=np.full(20, np.nan))
    assert status(judge(few), "A-fig5-qk-exit") == "not-reproduced"
    assert status(judge(dict(dep, hull_excess=1e-3)), "A-corB8-bounded") == "not-reproduced"


def test_qk_setting_with_a_gap_satisfies_assumption_4_5():
    # V~ = diag(1, 0.9) in setting (b): gap 0.1 > 0, so Assumption 4.5 holds and the row changes verdict
    r = pt.depth_transition(trials=1, n=10, t_base=15.0, t1=20.0, t1_b=15.0, v_b=(1.0, 0.9))
    assert r["gap_b"] == pytest.approx(0.1)
    assert status(judge(r), "A-thm4.6-qk-setting") == "reproduced"


@pytest.fixture(scope="module")
def sweep():
    return pt.eps_sweep(trials=3, eps_count=5, eps_min=0.01, t1=200.0, boot=50)


def test_eps_sweep_claims_give_the_chapter_verdicts(sweep):
    # (three initial conditions bootstrap the exponent's error too narrowly to judge -1 on this tiny sweep: the
    # exponent row is checked on set numbers below)
    rows = judge(sweep)
    assert [(c.id, c.status) for c in rows if c.id != "A-eps-scaling"] == [
        ("A-thm4.6-part1", "reproduced"), ("A-thm4.6-bound-sweep", "reproduced")]
    assert abs(sweep["exponent_exit"] + 1) < 0.1
    # an exponent 0.2 standard errors from -1 is consistent with the derived 1/eps law (two-sided p = 0.84)
    assert status(judge(dict(sweep, exponent_exit=-0.99, exponent_exit_se=0.05)), "A-eps-scaling") == "reproduced"


def test_eps_sweep_claims_fail_when_moved(sweep):
    es = np.array(sweep["eps_star"], dtype=float)
    es[0] = np.nan  # one initial condition leaves C before 10 T_delta at every eps
    assert status(judge(dict(sweep, eps_star=es)), "A-thm4.6-part1") == "not-reproduced"
    assert status(judge(dict(sweep, exponent_exit=-0.5, exponent_exit_se=0.05)), "A-eps-scaling") == "not-reproduced"  # 10 s.e.
    assert status(judge(dict(sweep, bound=sweep["bound"] / 10)), "A-thm4.6-bound-sweep") == "not-reproduced"


# ----------------------------------------------------------------------------- Theorem D.2 (issue 17)


@pytest.fixture(scope="module")
def rweak():
    return pt.weak_error(depths=(2, 4, 8, 16), trials=1500, ref_steps=16, rank_depths=(2,))


def test_weak_error_small(rweak):
    r = rweak
    assert np.all(np.abs(r["error"]) > 2 * r["error_se"])  # every depth resolved (coupling)
    assert r["slope"] == pytest.approx(-1.0, abs=0.2)
    # rank-1 adapters of (19) have the covariance of the Gaussian ones: the same error within noise
    assert abs(r["rank_error"][0] - r["error"][0]) < 3 * math.hypot(r["rank_error_se"][0], r["error_se"][0])


def test_weak_error_claims_follow_the_measurement(rweak):
    assert [c.status for c in judge(rweak)] == ["reproduced"]
    # A wrong limit: (91) without its Ito drift. The error no longer vanishes with L and the row fails.
    wrong = pt.weak_error(depths=(2, 4, 8, 16), trials=1500, ref_steps=16, rank_depths=(), ito_correction=False)
    assert wrong["slope"] > -0.6
    assert [c.status for c in judge(wrong)] == ["not-reproduced"]
    # and an error decaying like L^(-1/2) (the measured one times sqrt(L)) fails too
    slow = dict(rweak, error=rweak["error"] * np.sqrt(rweak["depths"]), error_se=rweak["error_se"] * np.sqrt(rweak["depths"]))
    assert [c.status for c in judge(slow)] == ["not-reproduced"]


def test_weak_error_config_checks():
    with pytest.raises(ValueError, match="divide"):
        pt.weak_error(depths=(3, 4))
    with pytest.raises(ValueError, match="increasing"):
        pt.weak_error(depths=(4, 2))
