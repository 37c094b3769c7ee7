"""Every stored result under data/results carries the verdicts its experiment's claims function
gives on it now: a stored result and its verdicts cannot drift apart."""
from __future__ import annotations

import json

import pytest

from companion.provenance import repo_root
from companion.registry import get
from companion.runner import rejudge
from companion.store import stale_reason

STORED = sorted((repo_root() / "data" / "results").glob("*/*.json"))


@pytest.mark.parametrize("meta", STORED, ids=[f"{p.parent.name}/{p.stem}" for p in STORED])
def test_stored_verdicts_are_current(meta):
    stored, current = rejudge(meta.parent.name, meta.stem)
    assert current, f"{meta}: its experiment's claims function gives no rows"
    assert stored == current, (f"{meta}: stored verdicts differ from the claims function's; after checking why, store the "
                               f"current ones with companion.runner.rejudge({meta.parent.name!r}, {meta.stem!r}, write=True)")


@pytest.mark.parametrize("meta", STORED, ids=[f"{p.parent.name}/{p.stem}" for p in STORED])
def test_stored_results_are_the_declared_profile(meta):
    """A profile changed after its result was stored leaves a stale result: `make full` recomputes it."""
    reason = stale_reason(get(meta.parent.name), meta.stem)
    assert reason is None, f"{meta}: {reason}; recompute it with `make full`"


def test_rejudge_writes_the_current_verdicts(tmp_path):
    from companion.store import results_dir
    from companion.runner import run_experiment

    run_experiment("intro-consensus", "full", out=results_dir(tmp_path), params={"n": 4, "t1": 1.0}, figure=False)
    path = results_dir(tmp_path) / "intro-consensus" / "full.json"
    meta = json.loads(path.read_text())
    meta["claims"][0]["status"] = "not-reproduced"  # a stale verdict
    path.write_text(json.dumps(meta))
    stored, current = rejudge("intro-consensus", root=tmp_path)
    assert stored != current
    rejudge("intro-consensus", root=tmp_path, write=True)
    stored, current = rejudge("intro-consensus", root=tmp_path)  # and the hashes still verify
    assert stored == current and current[0]["status"] == "reproduced"


FULL = [p for p in STORED if p.stem == "full"]


@pytest.mark.parametrize("meta", FULL, ids=[p.parent.name for p in FULL])
def test_stored_results_draw(meta):
    """A chapter draws a stored result as loaded from its .npz (arrays where the run had lists): the plot must take it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from companion.registry import get
    from companion.store import load_run

    exp = get(meta.parent.name)
    if exp.plot is None:
        pytest.skip(f"{exp.name} has no figure")
    result, _ = load_run(exp.name, "full")
    try:
        exp.plot(result)
    finally:
        plt.close("all")
