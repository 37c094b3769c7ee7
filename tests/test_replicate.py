"""companion.replicate: a result recomputed on another processor, lined up with the stored one.

The expected numbers are written out by hand from the synthetic runs (a logarithm, a checkpoint
index), not read back from the module."""
from __future__ import annotations

import math

import numpy as np
import pytest

from companion import replicate
from companion.provenance import ResultError
from companion.registry import get, registry
from companion.runner import run_experiment


def _training(ppl_base, drift_end, seeds=(0, 1)):
    """A training result of one rank, 3 checkpoints at steps 0, 5, 11, 2 layers: ``ppl_base`` (S, 3)."""
    base = np.asarray(ppl_base, float)
    drift = np.zeros((len(seeds), 3, 2))
    drift[:, -1, -1] = drift_end
    return {"runs": {4: {"seeds": np.array(seeds), "step": np.array([0, 5, 11]), "ppl_base": base, "drift": drift}}}


def test_training_runs_say_where_each_run_parted_and_where_it_ended():
    a = _training([[10.0, 12.0, 20.0], [10.0, 11.0, 11.0]], [0.4, 0.5])
    b = _training([[10.0, 12.0, 30.0], [10.0, 11.0, 11.0]], [0.6, 0.5])
    first, second = replicate.training_runs(a, b)
    assert (first["rank"], first["seed"], first["departs"]) == (4, 0, 11)
    assert first["forgetting"] == pytest.approx((math.log(2.0), math.log(3.0)))
    assert first["drift"] == pytest.approx((0.4, 0.6))
    assert second["departs"] is None and second["forgetting"][0] == second["forgetting"][1] == pytest.approx(math.log(1.1))
    # the spread over the two stored seeds of rank 4: |ln 2 - ln 1.1| / sqrt(2)
    assert replicate.seed_spread([first, second], "forgetting") == pytest.approx(abs(math.log(2.0) - math.log(1.1)) / math.sqrt(2))


def test_training_runs_match_seeds_by_value_not_position():
    a = _training([[10.0, 10.0, 20.0], [10.0, 10.0, 40.0]], [0.1, 0.2], seeds=(0, 1))
    b = _training([[10.0, 10.0, 40.0], [10.0, 10.0, 20.0]], [0.2, 0.1], seeds=(1, 0))
    assert all(r["departs"] is None for r in replicate.training_runs(a, b))


def test_replicates_load_verified_and_refuse_a_tampered_one(tmp_path):
    folder = tmp_path / "data" / "replicates" / "other-cpu"
    run_experiment("intro-consensus", "full", out=folder, params={"n": 4, "t1": 1.0}, figure=False)
    [(label, result, meta)] = replicate.replicates("intro-consensus", tmp_path)
    assert label == "other-cpu" and result["experiment"] == "intro-consensus"
    assert replicate.verdicts(meta, meta) and all(v["stored"] == v["replica"] for v in replicate.verdicts(meta, meta))
    npz = folder / "intro-consensus" / "full.npz"
    npz.write_bytes(npz.read_bytes()[:-8] + b"tampered")
    with pytest.raises(ResultError):
        replicate.replicates("intro-consensus", tmp_path)


STORED_REPLICATES = [(name, label) for name in registry() for label, _, _ in replicate.replicates(name)]


@pytest.mark.parametrize("name,label", STORED_REPLICATES, ids=[f"{label}/{name}" for name, label in STORED_REPLICATES])
def test_a_stored_replicate_is_the_same_computation_judged_now(name, label):
    """What the Status page sets side by side must differ by the processor only: the stored result's
    parameters, a recorded code version (the page says whether it is the code now), and the verdicts the
    claims function gives on it now."""
    from companion.store import code_status, load_run

    [(_, result, meta)] = [r for r in replicate.replicates(name) if r[0] == label]
    stored = load_run(name, "full")[1]
    assert meta["config"] == stored["config"], f"{label}/{name}: not the stored result's parameters"
    status = code_status(get(name), meta)
    assert status == "current" or status.startswith("code changed since "), f"{label}/{name}: {status}"
    assert [c.as_dict() for c in get(name).judge(result)] == meta["claims"], f"{label}/{name}: verdicts not current"


@pytest.mark.skipif(not replicate.replicates("llm-training-indomain"), reason="no replicate of llm-training-indomain stored")
def test_bench_readme_quotes_the_in_domain_replicate():
    from pathlib import Path

    from companion.store import load_run

    readme = (Path(__file__).resolve().parents[1] / "bench" / "results" / "README.md").read_text().replace("\n", " ")
    _, result, meta = replicate.replicates("llm-training-indomain")[-1]
    stored, stored_meta = load_run("llm-training-indomain", "full")
    rows, runs = replicate.verdicts(stored_meta, meta), replicate.training_runs(stored, result)
    parted = replicate.departures(runs)
    same = sum(v["stored"] == v["replica"] for v in rows)
    assert f"all {len(runs)} fine-tunes part" in readme and len(parted) == len(runs)
    assert f"first at step {parted[0]} to {parted[-1]}, median {int(np.median(parted))}" in readme
    assert f"{same} of {len(rows)} verdicts are the same" in readme
    corr = next(c for c in meta["claims"] if c["id"] == "A-drift-forgetting-correlation-smollm2-indomain")
    low, high = corr["uncertainty"]
    assert f"r = {corr['measured']:.2f} (95 % interval {low:.2f} to {high:.2f})" in readme
