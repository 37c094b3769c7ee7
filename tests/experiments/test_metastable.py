"""Paper D's claims (book/chapters/metastable.md): each verdict follows its measurement and can fail.

Each claims function is run on a shortened result of its experiment (it must give the chapter's
verdict), then on a wrong input: the measurement moved past its tolerance, or the result of another
model or parameter.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from companion import fits
from companion.experiments.metastable.cluster_limit import _trend
from companion.registry import get, judge
from companion.store import load_run, results_dir, stale_reason
from companion.experiments import metastable as ms
from companion.metrics.hminus1 import hminus1_norm
from companion.theory.metastable import gamma_k, growth_rate

pytestmark = pytest.mark.usefixtures("one_thread")


def statuses(result):
    return {c.id: c.status for c in judge(result)}


# ----------------------------------------------------------------------------- declared shape


NAMES = ("metastable-linear-rates", "metastable-ln-n", "metastable-official", "metastable-long-run", "metastable-pde",
         "metastable-sphere", "metastable-hminus1", "metastable-cluster-limit")


def test_every_experiment_is_declared_with_a_claims_function():
    for name in NAMES:
        exp = get(name)
        assert exp.chapter == "metastable" and exp.claims is not None and exp.plot is not None, name


def test_unknown_parameter_is_refused():
    with pytest.raises(ValueError, match="no parameter 'bad'"):
        ms.long_run(bad=1)
    with pytest.raises(TypeError, match="'trials'"):
        ms.long_run(trials=2.5)


# ----------------------------------------------------------------------------- linear phase


@pytest.fixture(scope="module")
def lin():
    return ms.linear_rates(n=5000, betas=(2.0, 5.0, 7.0))


def test_linear_rates_reproduce_and_fail_for_another_normalisation(lin):
    assert statuses(lin)["D-linear-rates"] == "reproduced"
    # the rates of SA measured, compared with USA's formula (a factor I_0(beta) apart)
    usa = [gamma_k(np.arange(1, len(t) + 1), b, "usa") for t, b in zip(lin["theory"], lin["betas"])]
    assert statuses(dict(lin, theory=usa))["D-linear-rates"] == "not-reproduced"
    # every rate 20 % too slow: past the method's 15 % error; 10 % too slow: within it (no partly band any more)
    assert statuses(dict(lin, rates=[0.8 * r for r in lin["theory"]]))["D-linear-rates"] == "not-reproduced"
    assert statuses(dict(lin, rates=[0.9 * r for r in lin["theory"]]))["D-linear-rates"] == "reproduced"


def test_kmax_row_says_where_it_judges_on_the_stored_run():
    stored = load_run("metastable-linear-rates", "full")
    if stored is None:
        pytest.skip("no stored full-profile result of metastable-linear-rates")
    res = stored[0]
    row = next(c for c in judge(res) if c.id == "D-kmax")
    # the gaps of the two largest gamma_k, from the closed form: 0.99 % at beta = 10, 0.72 % at 100, 1.9 % at 20 and 50
    gaps = [1 - np.sort(gamma_k(np.arange(1, 30), b, "softmax"))[-2] / gamma_k(np.arange(1, 30), b, "softmax").max()
            for b in (10.0, 20.0, 50.0, 100.0)]
    assert np.allclose(gaps, [0.0099, 0.0187, 0.0197, 0.0072], atol=5e-4)
    assert row.status == "reproduced" and row.measured[1] == "judged at 4 of 9 betas (2, 5, 7, 10)"
    assert row.measured[2] == "near-ties left out at beta 1, 3, 20, 50, 100"
    # the argmax moved to the neighbour at a judged beta (10): one case of four fails, partly; at a near-tie (20)
    # the argmax is not judged
    k = list(res["k_theory"])
    for beta, want in ((10.0, "partly"), (20.0, "reproduced")):
        i = list(res["betas"]).index(beta)
        rates = [np.array(r, dtype=float) for r in res["rates"]]
        rates[i][k[i]] = rates[i][k[i] - 1] * 1.001  # mode k_max + 1 just faster
        assert statuses(dict(res, rates=rates))["D-kmax"] == want, beta


def test_kmax_fails_where_resolved_and_is_not_judged_at_near_ties(lin):
    assert statuses(lin)["D-kmax"] == "reproduced"
    # beta = 5 (gap 12 %, resolved): the next mode, 4, measured fastest; beta = 2 still right: partly
    rates = [np.array(r, dtype=np.float64) for r in lin["rates"]]
    rates[1][3] = 1.05 * rates[1][2]
    assert statuses(dict(lin, rates=rates))["D-kmax"] == "partly"
    # every resolved beta wrong: not reproduced
    for i in range(len(rates)):
        rates[i][np.argmax(lin["theory"][i]) + 1] = 1.05 * rates[i].max()
    assert statuses(dict(lin, rates=rates))["D-kmax"] == "not-reproduced"
    # beta = 7 (gap 6 %, unresolved by a 10 % error of the other modes): mode 3 measured fastest
    rates = [np.array(r, dtype=np.float64) for r in lin["rates"]]
    rates[2][2] = 1.01 * rates[2][3]
    assert ms.kmax_resolution(rates, lin["theory"])["resolved"].tolist() == [True, True, False]
    assert statuses(dict(lin, rates=rates))["D-kmax"] == "reproduced"  # the near-tie is listed, not judged


# ----------------------------------------------------------------------------- ln N law


@pytest.fixture(scope="module")
def lnn():
    return ms.ln_n(ns=(300, 1000, 3000), trials=(8, 4, 2))


def test_ln_n_reproduces_and_fails_when_moved(lnn):
    (row,) = judge(lnn)
    assert row.status == "reproduced" and row.uncertainty is not None and 0 < row.uncertainty < 0.15 * lnn["slope_theory"]
    # b moved by 10 of its standard errors: a two-sided z test rejects b = 1/(2 gamma) (p about 1.5e-23)
    assert statuses(dict(lnn, joint_lnN=lnn["slope_theory"] + 10 * lnn["joint_lnN_se"]))["D-lnN"] == "not-reproduced"
    # another beta's theory: beta = 3 selects k = 2, whose rate is half of beta = 5's k = 3
    other = 1 / (2 * float(gamma_k(2, 3.0, "usa")))
    assert statuses(dict(lnn, slope_theory=other))["D-lnN"] == "not-reproduced"


def test_ln_n_sweep_points_assemble_into_the_result(lnn):
    exp = get("metastable-ln-n")
    cfg = exp.config_of(lnn)
    again = exp.assemble([exp.point(cfg, "cpu", **p) for p in exp.grid(cfg)], cfg)
    np.testing.assert_array_equal(again["t_trials"], lnn["t_trials"])
    assert [p["seed"] for p in exp.grid(cfg)] == [cfg.seed, cfg.seed + 100, cfg.seed + 200]


@pytest.mark.parametrize("profile", ["fast", "full"])
def test_ln_n_results_stored_under_the_former_name_load_as_current(profile):
    """`metastable-ln-n` was `metastable-lnN`: its results, stored under that name and moved to the folder of
    the name now, load, judge and count as current under either name. The fast one is still stored under
    the former name (the path this test is for); the full one was re-stored under the new name on 2026-12-03."""
    assert get("metastable-lnN").name == "metastable-ln-n"
    result, meta = load_run("metastable-ln-n", profile, formerly=get("metastable-ln-n").formerly)
    former = {"fast": "metastable-lnN", "full": "metastable-ln-n"}[profile]
    assert result["experiment"] == "metastable-ln-n" and meta["config"]["experiment"] == former
    assert stale_reason(get("metastable-ln-n"), profile) is None
    cfg = get("metastable-ln-n").config_of(result)  # the stored config's every and t_max, renamed
    assert (cfg.save_every, cfg.t1) == (0.01, 1.5)
    assert [c.id for c in judge(result)] == [c["id"] for c in meta["claims"]] == ["D-lnN"]


def test_a_former_name_does_not_admit_another_experiments_result(tmp_path):
    import shutil

    folder = results_dir(tmp_path)
    shutil.copytree(results_dir() / "metastable-pde", folder / "metastable-ln-n")
    with pytest.raises(ValueError, match="holds the 'fast' result of 'metastable-pde'"):
        load_run("metastable-ln-n", "fast", folder=folder, formerly=get("metastable-ln-n").formerly)
    shutil.copytree(results_dir() / "metastable-ln-n", folder / "metastable-pde", dirs_exist_ok=True)
    with pytest.raises(ValueError, match="holds the 'fast' result of 'metastable-lnN'"):
        load_run("metastable-pde", "fast", folder=folder, formerly=get("metastable-pde").formerly)  # a former name of another experiment


def test_joint_fit_recovers_known_coefficients():
    # t = 0.2 + 0.03 ln N + 0.05 (-ln |sqrt(N) a|) with noise of 1e-3: the fit finds 0.03 within 3 s.e.
    rng = np.random.default_rng(0)
    nn = np.repeat([1e3, 1e4, 1e5], 20)
    aa = rng.rayleigh(1 / math.sqrt(2), nn.size) / np.sqrt(nn)
    tt = 0.2 + 0.03 * np.log(nn) - 0.05 * np.log(np.sqrt(nn) * aa) + rng.normal(0, 1e-3, nn.size)
    coef, se = ms.joint_fit(tt, nn, aa)
    assert abs(coef[1] - 0.03) < 3 * se[1] and abs(coef[2] - 0.05) < 3 * se[2] and se[1] < 1e-3


# ----------------------------------------------------------------------------- official runs


@pytest.fixture(scope="module")
def off():
    # the stored full-profile result the chapter judges (128 seeds per ensemble; 100 s to recompute)
    stored = load_run("metastable-official", "full")
    if stored is None:
        pytest.skip("no stored full-profile result of metastable-official")
    return stored[0]


def test_official_runs_give_the_chapters_verdicts(off):
    s = statuses(off)
    # beta = 5: 110 of 128 seeds end with 3 clusters, nearer the predicted angles than chance; beta = 7: 42 of 128 end
    # with 4 (fewer than half), nearer the angles than chance: one case of two fails
    assert (s["D-official-beta5"], s["D-official-beta7"], s["D-Q3-displacement"]) == ("reproduced", "partly", "not-checkable")
    row = next(c for c in judge(off) if c.id == "D-official-beta7")
    assert row.why.startswith("holds: at the predicted angles (closer than chance); fails: 4 clusters at T in most seeds")
    assert row.measured[1:3] == [42, 128] and row.basis == "paper" and row.source == "NOTES.md"


def test_official_partly_needs_kmax_clusters_at_some_time(off):
    e7 = off["ensembles"][1]
    assert e7["history"]["reached_k"].any()
    three = np.full_like(np.asarray(e7["counts_t"]), 3)  # 3 clusters throughout: k_max = 4 never seen
    never = dict(e7, counts=three[-1], counts_t=three, centre_errors=np.full(e7["trials"], np.nan))
    assert statuses(dict(off, ensembles=[off["ensembles"][0], never]))["D-official-beta7"] == "not-reproduced"


def test_transient_phase_row_from_the_stored_ensembles(off):
    # beta = 7: 74 of 128 seeds hold 4 clusters for >= 2 saved times: P(X >= 74) = 0.046 for X ~ Binomial(128, 1/2),
    # below the level 0.05 but not 0.01 (fragile); mean onset 1.13 t*; our reading of the notebook, not the paper's count
    rows = {c.id: c for c in judge(off)}
    row = rows["D-transient-kmax-beta7"]
    assert row.status == "reproduced" and row.measured[1:4] == [74, 82, 128] and row.experiment == "metastable-official"
    assert row.fragile and row.basis == "reading"
    assert row.measured[5] > 1 and "D-transient-kmax-beta5" not in rows


def test_transient_phase_row_can_fail(off):
    e5, e7 = off["ensembles"]
    c = np.asarray(e7["counts_t"])
    # 4 clusters at a single saved time only (the counter splitting a cluster): no four-cluster phase held
    blip = np.where(c == 4, 3, c)
    blip[-1] = 4
    assert statuses(dict(off, ensembles=[e5, dict(e7, counts_t=blip)]))["D-transient-kmax-beta7"] == "not-reproduced"
    # only the first 12 of 128 seeds may pass through 4 clusters: not most (the onset case still holds: partly)
    few = np.where((c == 4) & (np.arange(c.shape[1]) >= 12), 3, c)
    assert statuses(dict(off, ensembles=[e5, dict(e7, counts_t=few)]))["D-transient-kmax-beta7"] == "partly"
    # the same counts against a t* twice as late: the clusters would come before the linear phase ends (partly)
    late = dict(e7, t_star=2 * float(e7["t_star"]))
    row = next(c for c in judge(dict(off, ensembles=[e5, late])) if c.id == "D-transient-kmax-beta7")
    assert row.status == "partly" and row.why == "holds: most seeds hold 4 clusters; fails: onset after t*"


def test_transient_phase_reads_each_seeds_first_episode():
    h = ms.transient_phase([0.0, 1.0, 2.0, 3.0, 4.0], [[0, 0], [4, 3], [4, 4], [3, 3], [4, 3]], 4)
    assert h["onset"].tolist() == [1.0, 2.0] and h["duration"].tolist() == [2.0, 1.0]
    assert h["after"].tolist() == [3, 3] and h["saves"].tolist() == [2, 1]
    with pytest.raises(ValueError, match="counts_t"):
        ms.transient_phase([0.0, 1.0], [[4, 4]], 4)


def test_official_figure_draws_each_run_on_its_own_panels(off):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        axes = ms.plot_official(off)
        assert axes.shape == (2, 2) and len({a.figure for a in axes.ravel()}) == 2
        fig, given = plt.subplots(2, 2)
        assert (ms.plot_official(off, given) == given).all()
    finally:
        plt.close("all")


def test_official_verdict_follows_fraction_and_positions(off):
    e5 = off["ensembles"][0]
    exact = dict(e5, centre_errors=np.linspace(0.04, 0.06, e5["trials"]))  # clusters where predicted
    assert statuses(dict(off, ensembles=[exact, off["ensembles"][1]]))["D-official-beta5"] == "reproduced"
    # clusters a uniform distance in [pi/6, pi/3] from the predicted angles, beyond the chance mean pi/6: that case fails
    far = dict(e5, centre_errors=np.linspace(np.pi / 6, np.pi / 3, e5["trials"]))
    assert statuses(dict(off, ensembles=[far, off["ensembles"][1]]))["D-official-beta5"] == "partly"
    two = dict(e5, counts=np.full(e5["trials"], 2), centre_errors=np.full(e5["trials"], np.nan))
    assert statuses(dict(off, ensembles=[two, off["ensembles"][1]]))["D-official-beta5"] == "not-reproduced"


# ----------------------------------------------------------------------------- plateau and merging


@pytest.fixture(scope="module")
def lr():
    return ms.long_run(n=200, trials=4, t1=20.0)


def test_merging_reproduces_and_is_undecided_without_merges(lr):
    assert statuses(lr) == {"D-merging": "reproduced"}  # the plateau's ln N trend: metastable-cluster-limit
    # "eventually": a trial still at k_max clusters at T has not contradicted it, a longer horizon would decide
    assert statuses(dict(lr, first_merge=np.full(lr["trials"], np.nan)))["D-merging"] == "inconclusive"
    one = np.where(np.arange(lr["trials"]) == 0, lr["first_merge"], np.nan)  # only the first trial merges
    assert statuses(dict(lr, first_merge=one))["D-merging"] == "inconclusive"
    assert statuses(dict(lr, first_k=np.full(lr["trials"], np.nan)))["D-merging"] == "not-checkable"


# ----------------------------------------------------------------------------- PDE


@pytest.fixture(scope="module")
def pde():
    return ms.pde(M=512, ns=(2000,))


def test_pde_reproduces_and_fails_for_another_beta(pde):
    assert statuses(pde) == {"D-pde-fig4": "reproduced", "D-kgcd-periodicity": "not-checkable", "D-pde-particles": "reproduced"}
    assert statuses(dict(pde, peaks=4))["D-pde-fig4"] == "partly"
    w1 = np.array(pde["w1"], dtype=np.float64)
    w1[-1, -1] = 3 * float(pde["w1_grid"][-1])  # beyond twice the PDE's grid error
    assert statuses(dict(pde, w1=w1))["D-pde-particles"] == "not-reproduced"
    # beta = 2 selects k = 2: judged against beta = 5's k = 3 the profile is wrong
    assert statuses(dict(ms.pde(M=512, ns=(2000,), beta=2.0), k=3))["D-pde-fig4"] == "not-reproduced"


# ----------------------------------------------------------------------------- sphere


def test_sphere_rates_reproduce_and_fail_for_another_normalisation():
    sph = ms.sphere(n=300, betas=(1.0, 3.0))
    assert statuses(sph)["D-sphere-rates"] == "reproduced"
    # SA measured, USA's formula (without the l = 0 normaliser) expected
    usa = [growth_rate(np.arange(1, len(t) + 1), b, 3, "usa") for t, b in zip(sph["theory"], sph["betas"])]
    assert statuses(dict(sph, theory=usa))["D-sphere-rates"] == "not-reproduced"
    # every rate 20 % too fast: past the method's 15 % error
    assert statuses(dict(sph, rates=[1.2 * t for t in sph["theory"]]))["D-sphere-rates"] == "not-reproduced"


def test_configs_are_frozen_and_profiles_differ_in_size_only():
    for name in NAMES:
        exp = get(name)
        fast, full = exp.profiles["fast"], exp.profiles["full"]
        with pytest.raises(dataclasses.FrozenInstanceError):
            fast.seed = 1
        assert fast.seed == full.seed, name


# ----------------------------------------------------------------------------- Lemma E.3


@pytest.fixture(scope="module")
def hm():
    return ms.hminus1(ns=(100, 1000, 10000), trials=100)


def test_hminus1_reproduces_and_fails_for_stratified_tokens(hm):
    assert statuses(hm)["D-lemmaE3-hminus1"] == "reproduced"
    assert statuses(dict(hm, slope=-1.0))["D-lemmaE3-hminus1"] == "not-reproduced"
    # one token uniform in each of N equal cells (not i.i.d. on the circle): E|m_k|^2 is smaller than 1/N
    g = torch.Generator().manual_seed(0)
    mean, se = [], []
    for n in hm["ns"]:
        th = (2 * math.pi * (torch.arange(n, dtype=torch.float64) + torch.rand(100, n, generator=g, dtype=torch.float64)) / n)
        sq = hminus1_norm(th[..., None]).numpy()
        mean.append(sq.mean())
        se.append(sq.std(ddof=1) / math.sqrt(sq.size))
    # E||rho_0||^2 then falls like N^-2 (sum_k k^-2 (1 - sinc^2(pi k / N)) / N): the RMS slope is about -1, not -1/2
    mean, se = np.array(mean), np.array(se)
    fit = fits.line_fit(np.asarray(hm["ns"], dtype=np.float64), np.sqrt(mean), se=se / (2 * np.sqrt(mean)), loglog=True)
    assert fit["slope"] < -0.9
    strat = dict(hm, mean_square=mean, mean_square_se=se, slope=fit["slope"], slope_se=fit["slope_se"])
    assert statuses(strat)["D-lemmaE3-hminus1"] == "not-reproduced"


# ----------------------------------------------------------------------------- the N -> infinity limit


@pytest.fixture(scope="module")
def cl():
    return ms.cluster_limit(ns=(300, 600), trials=(3, 3), t1=30.0)


def test_cluster_limit_reads_its_stored_horizon_as_t1():
    """The fast result was stored when the horizon was called ``t_max`` (the full one was re-stored with
    ``t1`` on 2026-12-03): both read as t1 = 60 and count as current."""
    fast, full = load_run("metastable-cluster-limit", "fast"), load_run("metastable-cluster-limit", "full")
    assert "t_max" in fast[0]["config"] and "t1" in full[0]["config"]
    for profile, stored in (("fast", fast), ("full", full)):
        assert get("metastable-cluster-limit").config_of(stored[0]).t1 == 60.0
        assert stale_reason(get("metastable-cluster-limit"), profile) is None


def test_cluster_limit_measures_what_it_says(cl):
    assert cl["k"] == 2 and [len(w) for w in cl["w1_cluster"]] == [3, 3]
    # f (the dominant mode alone) collapses onto the predicted atoms: its own W1 is far below the particles'
    assert max(float(np.max(f)) for f in cl["w1_floor"]) < 0.01 < min(float(np.min(w)) for w in cl["w1_cluster"])
    assert all(np.all(r > 0) for r in cl["remainder"])
    assert set(statuses(cl)) == {"D-thm4.2-cluster-limit", "D-propC17-remainder", "D-metastable-duration-lnN"}


def test_duration_row_cites_the_reviewer_on_the_metastable_phase(cl):
    # reviewer 2 (Q1, Q2) speaks of the metastable multi-cluster phase lasting O(ln N); reviewer 3 (W1-W3) of the
    # quasi-linear phase before it
    row = next(c for c in judge(cl) if c.id == "D-metastable-duration-lnN")
    assert "reviewer 2" in row.where and "reviewer 3" not in row.where


def test_metastable_statements_are_short_and_typeset():
    import re

    for name in NAMES:
        stored = load_run(name, "full")
        if stored is None:
            continue
        for c in judge(stored[0]):
            st = c.statement
            assert st.count("$") % 2 == 0, (c.id, st)
            prose = re.sub(r"\$[^$]*\$", "", st)
            assert not re.search(r"[_^\\]|\bbeta\b|\bgamma|\bk_max|\bln N", prose), (c.id, prose)
            assert len(st.split()) <= 22, (c.id, len(st.split()))


def _with(cl, key, values, log):
    """``cl`` with the per-trial values of ``key`` replaced, and their trend recomputed as the experiment does."""
    vals = [np.asarray(v, dtype=np.float64) for v in values]
    return dict(cl, **{key: vals, key + "_trend": _trend(np.asarray(cl["ns"], dtype=np.float64), vals, log)})


def test_cluster_limit_verdicts_follow_the_trends(cl):
    # 10 trials per N: every trial of the larger N below (above) every one of the smaller, or the same values.
    # Kendall's tau-b: 100 discordant cross pairs of 190, 90 tied in N: tau = -100 / sqrt(100 * 190) = -0.73 (p < 1e-4)
    base = np.linspace(0.9, 1.1, 10)
    down, flat, up = [0.5 * base, 0.3 * base], [0.5 * base, 0.5 * base[::-1]], [0.3 * base, 0.5 * base]
    for key, row, log in (("w1_cluster", "D-thm4.2-cluster-limit", True), ("remainder", "D-propC17-remainder", True)):
        assert [statuses(_with(cl, key, v, log))[row] for v in (down, flat, up)] == [
            "reproduced", "inconclusive", "not-reproduced"]
    # the plateau grows with ln N, does not move, or shrinks
    grow, same, shrink = [10 * base, 14 * base], [12 * base, 12 * base[::-1]], [14 * base, 10 * base]
    assert [statuses(_with(cl, "plateau", v, False))["D-metastable-duration-lnN"] for v in (grow, same, shrink)] == [
        "reproduced", "inconclusive", "not-reproduced"]
    row = next(c for c in judge(_with(cl, "plateau", same, False)) if c.id == "D-metastable-duration-lnN")
    assert row.needed is None or row.needed > 20  # no effect to aim at, or many more trials
