"""Chapter "beyond" (issue 23): the derived predictions, the simulator where they must hold, answers
that can change, and the ledger's separate kind of row for open questions."""
from __future__ import annotations

import math

import numpy as np
import pytest

from companion import ledger
from companion.experiments import beyond as bq
from companion.theory import lora_depth

LAM = (1.0, 0.5, 0.25)


# --------------------------------------------------------------------------- ledger: rows of their own kind
def test_question_rows_have_their_own_statuses():
    q = ledger.Claim(id="Q-x", paper="B", where="Conjecture 1", statement="s", verdict=ledger.answer(ledger.verdict(0.01, 0.1)))
    assert q.status == "supported" and ledger.is_question(q)
    with pytest.raises(ValueError, match="status must be one of"):
        ledger.Claim(id="Q-x", paper="B", where="w", statement="s", verdict=ledger.verdict(True))  # a paper's status
    with pytest.raises(ValueError, match="status must be one of"):
        ledger.Claim(id="B-x", paper="B", where="w", statement="s", status="supported")  # an answer on a paper's claim
    assert [ledger.answer(ledger.Verdict(s)).status for s in ledger.STATUSES] == ["supported", "inconclusive", "refuted", "inconclusive"]
    with pytest.raises(TypeError, match="Verdict"):
        ledger.answer("reproduced")


def test_question_rows_are_kept_apart(tmp_path):
    paper = ledger.Claim(id="B-1", paper="B", where="Thm. 1", statement="s", verdict=ledger.verdict(True))
    q = ledger.Claim(id="Q-B-1", paper="B", where="Conjecture 1 (beyond)", statement="s", verdict=ledger.Verdict("refuted"))
    ledger.record("low", [paper], root=tmp_path, echo=False)
    ledger.record("beyond", [q], root=tmp_path, echo=False)
    assert (tmp_path / "data" / "claims" / "beyond.json").exists()
    assert [r["id"] for r in ledger.load(tmp_path)] == ["B-1"]
    assert [r["id"] for r in ledger.assemble(tmp_path)] == ["B-1"]  # data/claims.json: the papers' claims only
    assert [(r["id"], r["status"]) for r in ledger.load(tmp_path, questions=True)] == [("Q-B-1", "refuted")]
    # an answer never covers a paper's numbered result
    assert ledger.coverage(ledger.load(tmp_path), {"B": [{"ref": "Conjecture 1"}]})["B"] == [{"ref": "Conjecture 1"}]


# --------------------------------------------------------------------------- question 1
def test_aniso_level_is_eq21_when_isotropic():
    for kappa in (1e-3, 0.05, 0.3):
        assert bq.aniso_level(LAM, [1 / 3] * 3, kappa, 5) == pytest.approx(lora_depth.stationary_deviation(LAM, kappa, 5), rel=1e-12)


def test_aniso_level_small_kappa_limit_and_noise_along_u1():
    # leading order: n sum_i k_i / (2 gap_i), k_i = d kappa w_i, whatever w_1
    w = (0.5, 0.3, 0.2)
    kappa = 1e-7
    lead = sum(3 * kappa * wi / (2 * (LAM[0] - li)) for wi, li in zip(w[1:], LAM[1:]))
    assert bq.aniso_level(LAM, w, kappa, 1) == pytest.approx(lead, rel=1e-5)
    # same noise off u1, more along u1: less damping, a higher level
    # per unit of noise off u1 (0.4 against 1.0)
    assert bq.aniso_level(LAM, (0.6, 0.2, 0.2), 0.05, 1) / 0.4 > bq.aniso_level(LAM, (0.0, 0.5, 0.5), 0.05, 1)


@pytest.mark.parametrize("args, match", [
    ((LAM, (0.5, 0.5), 0.1, 1), "weights"),
    ((LAM, (0.5, 0.6, 0.1), 0.1, 1), "weights"),
    ((LAM, (1 / 3,) * 3, 0.0, 1), "kappa"),
    (((0.5, 1.0, 0.2), (1 / 3,) * 3, 0.1, 1), "eigvals"),
    ((LAM, (1.0, 0.0, 0.0), 1.0, 1), "no localised stationary law"),
])
def test_aniso_level_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        bq.aniso_level(*args)


def _aniso_result(level, slope=0.0):
    cases = [[1 / 3] * 3, [0.2, 0.8, 0.0], [0.2, 0.0, 0.8]]
    pred = np.array([bq.aniso_level(LAM, w, 0.01, 2) for w in cases])
    return {"cases": cases, "level": np.asarray(level, float) * pred, "level_se": 0.02 * pred, "predicted": pred,
            "scaling_slope": np.array([slope]), "scaling_slope_se": np.array([0.02])}


def test_aniso_answers_change():
    cfg = bq.AnisoConfig()
    good = [c.status for c in bq.aniso_claims(_aniso_result([1.0, 1.0, 1.0]), cfg)]
    assert good == ["supported", "refuted", "supported"]  # the derived law holds, so one kappa is refuted
    # a wrong model: levels equal to a single-kappa law (the split ratio 1), off the derived law
    r = _aniso_result([1.0, 1.0, 1.0])
    r["level"] = np.full(3, r["level"][0])
    statuses = [c.status for c in bq.aniso_claims(r, cfg)]
    assert statuses[0] == "refuted" and statuses[1] == "supported"
    assert bq.aniso_claims(_aniso_result([1.0, 1.0, 1.0], slope=-0.5), cfg)[2].status == "refuted"  # sqrt(L) not critical
    assert bq.aniso_claims(_aniso_result([1.0, 1.0, 1.0], slope=0.14), cfg)[2].status == "inconclusive"  # straddles 0.15


def test_aniso_run_small():
    r = bq.aniso_adapters(per=8, L=8, t_end=2, t_from=1.0, depths=(8, 16))
    assert r["level"].shape == (5,) and np.all(r["level"] > 0) and np.all(np.isfinite(r["scaling_slope"]))
    with pytest.raises(ValueError, match="cases"):
        bq.aniso_adapters(cases=((0.5, 0.5),), per=2, L=8, t_end=1, t_from=0.0, depths=(8,))


# --------------------------------------------------------------------------- question 3
def test_terminal_prediction_family():
    """In the map's family the bipolar state on F^abs is stable iff x > 0 and rho < tanh(x); the
    consensus on F iff rho > 0."""
    for x in (-1.0, 0.5, 1.0, 2.0):
        for rho in (-0.3, 0.3, 0.6, 0.9):
            v, b = bq._family(3, x, rho, 5.0)
            p = bq.terminal_prediction(v, b, 5.0)
            assert (p["F"], p["Fabs"]) == (1, 2)
            assert p["Fabs_stable"] == (x > 0 and rho < math.tanh(x)), (x, rho)
            assert p["F_stable"] == (rho > 0), (x, rho)
    with pytest.raises(ValueError, match="beta"):
        bq.terminal_prediction([1.0, -2.0], [1.0, 1.0], 0.0)
    with pytest.raises(ValueError, match="v_eigs"):
        bq.terminal_prediction([1.0, -2.0], [1.0], 1.0)
    with pytest.raises(ValueError, match="dims"):
        bq.terminal_map(dims=(2,), seeds=1, n=2, t1=0.1)


def test_translation_rate_against_the_simulator():
    """The derived rate rho - tanh(x) is what the particle system does near the bipolar state."""
    r = bq.terminal_map(xs=(-1.0, 0.5, 2.0), rhos=(-0.3, 0.9), seeds=1, n=4, t1=0.5, dt=0.1)
    assert np.max(np.abs(np.subtract(r["rate_measured"], r["rate_predicted"]))) < bq.RATE_TOL


def test_terminal_answers_change():
    cfg = bq.TerminalConfig()
    r = {"predicted": ["F", "Fabs", "both", "neither"], "ends": [["F"] * 4, ["Fabs"] * 4, ["F", "Fabs"] * 2, ["neither"] * 4],
         "rate_measured": [0.1, -0.3], "rate_predicted": [0.1, -0.3]}
    assert [c.status for c in bq.terminal_claims(r, cfg)] == ["supported"] * 3
    slow = dict(r, ends=[["F"] * 4, ["neither"] * 4, ["F", "Fabs"] * 2, ["neither"] * 4])  # unsettled runs
    assert bq.terminal_claims(slow, cfg)[1].status == "inconclusive"
    wrong = dict(r, ends=[["Fabs"] * 4, ["Fabs"] * 4, ["F"] * 4, ["F"] * 4], rate_measured=[0.2, -0.3])
    assert [c.status for c in bq.terminal_claims(wrong, cfg)] == ["refuted"] * 3


# --------------------------------------------------------------------------- question 4
def test_split_prediction():
    p = bq.split_prediction((-0.5, -1.0, -1.5), 0.1, 3)
    assert not any(v["blocks"] for v in p.values())  # |ln 2| > 2 * 0.1 * 1.5: no stable split
    p = bq.split_prediction((-0.5, -1.0, -1.5), 1.0, 6)
    assert all(v["blocks"] for v in p.values())
    with pytest.raises(ValueError, match="lambdas"):
        bq.split_prediction((0.5, -1.0), 1.0, 3)
    with pytest.raises(ValueError, match="n must"):
        bq.split_prediction((-0.5, -1.0), 1.0, 1)


def test_negdef_answers_change():
    cfg = bq.NegDefConfig()
    r = {"trials": 200, "in_stable": 180, "in_theorem": 180, "in_unstable": 0, "unsettled": 0, "not_split": 20,
         "none_stable_trials": 20, "none_stable_not_split": 20}
    assert [c.status for c in bq.negdef_claims(r, cfg)] == ["supported", "supported"]
    assert bq.negdef_claims(dict(r, unsettled=30), cfg)[0].status == "inconclusive"  # 15 % unsettled
    assert bq.negdef_claims(dict(r, none_stable_not_split=18), cfg)[1].status == "inconclusive"  # 0.9: between 0.8 and 0.95
    assert [c.status for c in bq.negdef_claims(dict(r, in_unstable=1, none_stable_not_split=0), cfg)] == ["refuted", "refuted"]
    assert bq.negdef_claims(dict(r, none_stable_trials=0, none_stable_not_split=0), cfg)[1].status == "inconclusive"


def test_negdef_run_small():
    r = bq.negdef_patterns(ns=(3,), betas=(0.1, 1.0), trials=3, t1=2.0)
    assert r["trials"] == 6 and r["none_stable_trials"] == 3  # beta = 0.1, n = 3: no split is stable
    assert all(len(c["n_plus"]) == 3 for c in r["cells"].values())
