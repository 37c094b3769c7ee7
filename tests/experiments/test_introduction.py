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
