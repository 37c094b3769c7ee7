"""The declared tests are calibrated (about ALPHA false positives under their null) and have power
(they detect an effect of a few standard errors): checked by simulation, independently of their code."""
from __future__ import annotations

import numpy as np
import pytest

from companion import inference, ledger


def _rate(fn, reps=400, seed=0):
    rng = np.random.default_rng(seed)
    return np.mean([fn(rng) < ledger.ALPHA for _ in range(reps)])


@pytest.mark.parametrize("name, null, effect", [
    ("mean_effect", lambda r: inference.mean_effect(r.normal(0, 1, 20)).p, lambda r: inference.mean_effect(r.normal(0.8, 1, 20)).p),
    ("paired", lambda r: inference.paired(*(lambda b: (b + r.normal(0, 0.1, 15), b))(r.normal(0, 1, 15))).p,
     lambda r: inference.paired(*(lambda b: (b + 0.1 + r.normal(0, 0.1, 15), b))(r.normal(0, 1, 15))).p),
    ("proportion", lambda r: inference.proportion(int(r.binomial(40, 0.5)), 40, 0.5).p,
     lambda r: inference.proportion(int(r.binomial(40, 0.8)), 40, 0.5).p),
    ("trend", lambda r: inference.trend(np.arange(12), r.normal(0, 1, 12)).p,
     lambda r: inference.trend(np.arange(12), 0.3 * np.arange(12) + r.normal(0, 1, 12)).p),
    ("equal_means", lambda r: inference.equal_means(r.normal(0, 1, (3, 20))).p,
     lambda r: inference.equal_means(r.normal(0, 1, (3, 20)) + np.array([[0], [0], [1.5]])).p),
])
def test_calibrated_and_powerful(name, null, effect):
    assert _rate(null) < 2.2 * ledger.ALPHA, f"{name}: too many false positives"
    assert _rate(effect) > 0.8, f"{name}: misses a clear effect"


def test_paired_design_sees_what_unpaired_errors_hide():
    """Two conditions sharing initial states differ by 0.02 with a spread of 0.2 between states: the paired
    test finds it; an unpaired comparison of the two means could not."""
    rng = np.random.default_rng(1)
    base = rng.normal(0, 0.2, 40)
    a, b = base + 0.02 + rng.normal(0, 0.002, 40), base
    assert inference.paired(a, b).p < 1e-6
    assert inference.equal_means([a, b]).p > ledger.ALPHA


def test_trials_needed_decides_at_that_size():
    """At the predicted size a one-sided test at ALPHA detects the effect about 80 % of the time."""
    rng = np.random.default_rng(2)
    t = inference.mean_effect(rng.normal(0.2, 1, 30))
    n = inference.trials_needed(30, 0.2 / (1 / np.sqrt(30)))
    assert n is not None and n > 30
    hit = np.mean([inference.mean_effect(rng.normal(0.2, 1, n)).p < ledger.ALPHA for _ in range(300)])
    assert 0.7 < hit < 0.9
    assert t.n == 30


def test_pooled_beats_worst_case():
    rng = np.random.default_rng(3)
    seeds = [inference.mean_effect(rng.normal(0.5, 1, 8)) for _ in range(6)]
    assert inference.pooled(seeds).p < min(s.p for s in seeds)


@pytest.mark.parametrize("bad", [[1.0], [1.0, float("nan"), 2.0]])
def test_bad_samples_named(bad):
    with pytest.raises(ValueError, match="x needs"):
        inference.mean_effect(bad)


def test_verdict_words_can_change():
    assert ledger.significant(0.2, against=0.8, needed=50).status == "inconclusive"
    assert ledger.significant(0.001).status == "reproduced"
    assert ledger.significant(0.99, against=0.001).status == "not-reproduced"
    assert ledger.consistent(0.5).status == "reproduced" and ledger.consistent(0.001).status == "not-reproduced"
    v = ledger.cases({"a": ledger.verdict(0.01, 0.1), "b": ledger.verdict(0.5, 0.1)})
    assert v.status == "partly" and "fails: b" in v.why
    assert ledger.verdict(0.09, 0.1).fragile and not ledger.verdict(0.01, 0.1).fragile


def test_estimate_can_fail():
    """A slope at its theory passes the two-sided null, one many standard errors off fails it; the one-sided
    test follows the sign (expected values from the normal law: 1 standard error, p = 0.317)."""
    assert abs(inference.estimate(1.0, 1.0).p - 0.3173) < 1e-3
    assert ledger.consistent(inference.estimate(-0.498, 0.002, -0.5).p).status == "reproduced"
    assert ledger.consistent(inference.estimate(-0.45, 0.002, -0.5).p).status == "not-reproduced"
    up, down = inference.estimate(3.0, 1.0, 0.0, "greater", n=10), inference.estimate(-3.0, 1.0, 0.0, "greater", n=10)
    assert ledger.significant(up.p, against=up.against).status == "reproduced"
    assert ledger.significant(down.p, against=down.against).status == "not-reproduced"


def test_correlation_within_blocks_can_fail():
    """The blocked correlation is calibrated, has power, and a shift shared by a block is not a correlation."""
    def blocked(rng, slope):
        blocks = np.repeat(np.arange(3), 4)
        x = rng.normal(0, 1, 12) + 3 * blocks
        return inference.correlation(x, slope * x + 2 * blocks + rng.normal(0, 1, 12), blocks=blocks).p

    assert _rate(lambda r: blocked(r, 0.0)) < 2.2 * ledger.ALPHA
    assert _rate(lambda r: blocked(r, 1.5)) > 0.8
    # Blocks that move x and y together, with no relation inside any block: pooled, a false correlation; blocked, none.
    rng = np.random.default_rng(1)
    blocks = np.repeat(np.arange(3), 4)
    x, y = 5 * blocks + rng.normal(0, 1, 12), 5 * blocks + rng.normal(0, 1, 12)
    assert inference.correlation(x, y).p < 0.01 and inference.correlation(x, y, blocks=blocks).p > 0.05


def test_homogeneity_can_fail():
    """Cochran's Q from group means and standard errors: calibrated under equal means, powerful against a
    shift of 3 standard errors, and equal to the closed form for two groups (Q = z^2, so p = 2 (1 - Phi(|z|)):
    z = 2 gives 0.0455)."""
    def groups(rng, shift):
        x = rng.normal(0, 1, (3, 200)) + np.array([[0.0], [0.0], [shift]])
        return inference.homogeneity(x.mean(1), x.std(1, ddof=1) / np.sqrt(200), n=200).p

    assert _rate(lambda r: groups(r, 0.0)) < 2.2 * ledger.ALPHA
    assert _rate(lambda r: groups(r, 3 * np.sqrt(2) / np.sqrt(200))) > 0.8
    assert abs(inference.homogeneity([0.0, 2.0], [1.0 / np.sqrt(2)] * 2).p - 0.0455) < 1e-3
    assert ledger.consistent(inference.homogeneity([1.0, 1.01, 0.99], [0.01] * 3).p).status == "reproduced"
    assert ledger.consistent(inference.homogeneity([1.0, 1.0, 0.9], [0.01] * 3).p).status == "not-reproduced"


def test_matches_can_fail():
    """matches: estimates at their values pass; one estimate far off fails; the Bonferroni factor counts."""
    ok = inference.matches([2.0, 3.01, 5.99], [0.05, 0.05, 0.05], [2.0, 3.0, 6.0], dof=3)
    assert ledger.consistent(ok.p).status == "reproduced"
    off = inference.matches([2.0, 3.5, 6.0], [0.05, 0.05, 0.05], [2.0, 3.0, 6.0], dof=3)   # 10 s.e. off, t with 3 dof
    assert ledger.consistent(off.p).status == "not-reproduced"
    one = inference.matches([2.2], [0.05], [2.0], dof=3).p
    assert abs(inference.matches([2.2, 3.0], [0.05, 0.05], [2.0, 3.0], dof=3).p - min(1.0, 2 * one)) < 1e-12


def test_mcnemar_can_fail_and_pairs_matter():
    """Paired yes/no outcomes: 10 trials flip one way and none back is significant; 5 and 5 is not; the
    concordant trials (any number) change nothing."""
    assert inference.mcnemar(10, 0).p < ledger.ALPHA and inference.mcnemar(5, 5).p > ledger.ALPHA
    assert inference.mcnemar(0, 10).against < ledger.ALPHA and inference.mcnemar(0, 0).p == 1.0
