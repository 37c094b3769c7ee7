"""The introduction's claims: each verdict follows its measurement and can fail."""
from __future__ import annotations

import pytest

from companion.experiments import introduction as intro
from companion.registry import judge


@pytest.fixture(scope="module")
def cons():
    return intro.consensus(n=4, t1=2.0)


def test_consensus_reproduces_and_fails_when_moved(cons):
    assert [c.status for c in judge(cons)] == ["reproduced", "reproduced"]
    off = dict(cons, max_mass_error=10 * intro.TOL_EXACT)
    assert judge(off)[0].status == "not-reproduced"
    spread = dict(cons, max_spread=1e-3)  # tokens leaving the manifold fail the closed-form claim too
    assert judge(spread)[0].status == "not-reproduced"
    slopes = dict(cons, log_ratio_slopes=[s + 2 * intro.TOL_SLOPE for s in cons["log_ratio_slopes"]])
    assert judge(slopes)[1].status == "not-reproduced"


def test_consensus_of_a_wrong_model_fails(cons):
    # The closed form for eigenvalues (1, 0.5, -0.3) against a run whose V has other eigenvalues.
    wrong = intro.consensus(n=4, t1=2.0, lambdas=(1.0, 0.2, -0.3))
    wrong["p_theory"], wrong["slopes_theory"] = cons["p_theory"], cons["slopes_theory"]
    assert judge(wrong)[1].status == "not-reproduced"


def test_single_cluster_verdict_follows_the_trials():
    res = intro.clustering(trials=2, n=8, t1=40.0, save_at=(0.0, 40.0))
    assert [c.status for c in judge(res)] == ["reproduced"]
    # one trial of two still in three clusters at t1: "eventually" is not contradicted, only undecided
    unmerged = dict(res, clusters=res["clusters"].copy())
    unmerged["clusters"][-1, 1] = 3
    row = judge(unmerged)[0]
    assert row.status == "inconclusive" and "needed" in row.why
    # Too short a run to merge: the same check on a real result that has not clustered cannot decide either.
    early = intro.clustering(trials=2, n=8, t1=0.5, save_at=(0.0, 0.5))
    assert judge(early)[0].status == "inconclusive"
    assert intro.clustering_summary(early)["merged"] == 0


@pytest.fixture(scope="module")
def merging():
    return intro.sphere_merging("fast")


def test_sphere_merging_fast_profile_shapes(merging):
    import numpy as np

    cfg = intro.SphereMergingConfig()
    ts = np.asarray(merging["times"])
    assert ts.shape == (cfg.save_count,) and ts[0] == 0.0 and ts[1] == cfg.t_first and np.isclose(ts[-1], cfg.t1)
    assert np.allclose(np.diff(np.log(ts[1:])), np.log(ts[2] / ts[1]))  # geometric after t = 0: even in log t
    X = np.asarray(merging["trajectory"])
    assert X.shape == (cfg.save_count, cfg.n, cfg.d) and np.allclose(np.linalg.norm(X, axis=-1), 1.0)
    clusters, single = np.asarray(merging["clusters"]), np.asarray(merging["singletons"])
    assert clusters.shape == single.shape == (cfg.save_count, cfg.trials)
    assert (clusters[0] == cfg.n).all() and (single <= clusters).all() and (single[-1] == 0).all()
    labels = np.asarray(merging["labels"])
    assert labels.shape == (cfg.n,) and len(set(labels.tolist())) == clusters[-1, 0]


def test_sphere_merging_verdict_follows_the_clusters(merging):
    assert [c.status for c in judge(merging)] == ["reproduced"]
    s = intro.sphere_merging_summary(merging)
    assert s["min_formed_count"] >= 2 and s["all_formed"] and s["runs0"] and s["trial0_phrase"]
    # at beta = 1 the tokens gather straight into one cluster: the same check fails on a real run
    hot = intro.sphere_merging(trials=2, n=16, beta=1.0, t1=60.0, save_count=30)
    assert intro.sphere_merging_summary(hot)["formed_count"] == [1, 1]
    assert judge(hot)[0].status == "not-reproduced"
    # too short a run: tokens still alone at t1 leave it undecided
    early = intro.sphere_merging(trials=2, n=16, t1=2.0, save_count=5)
    row = judge(early)[0]
    assert row.status == "inconclusive" and "longer horizon" in row.why
