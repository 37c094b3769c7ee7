"""bench/plot_peers.py draws the work-precision figure from stored peer runs; it refuses what it cannot draw."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(dtype: str, trials: int = 200) -> dict:
    row = {"rtol": 1e-4, "error": 1e-3, "evaluations": 100, "seconds": 0.1}
    return {"problem": {"trials": trials, "n": 80, "d": 3, "T": 10.0, "threads": 2}, "versions": {},
            "load_start": [0.5, 0.2, 0.1], "sweeps": {f"companion tsit5 | {dtype}": [row], f"torchode tsit5 | {dtype}": [row]}}


def test_merge_joins_the_sweeps_of_one_problem(plot_peers):
    m = plot_peers.merge([_run("float32"), dict(_run("float64"), load_start=[1.5, 0.0, 0.0])])
    assert sorted(m["sweeps"]) == ["companion tsit5 | float32", "companion tsit5 | float64",
                                   "torchode tsit5 | float32", "torchode tsit5 | float64"]
    assert m["load_start"][0] == 1.5


def test_merge_refuses_other_problems_and_a_sweep_twice(plot_peers):
    with pytest.raises(ValueError, match="different problems"):
        plot_peers.merge([_run("float32"), _run("float64", trials=40)])
    with pytest.raises(ValueError, match="more than one run"):
        plot_peers.merge([_run("float32"), _run("float32")])


def test_load_names_the_file_it_refuses(tmp_path, plot_peers):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"problem": {}}))
    with pytest.raises(ValueError, match="x.json: not a bench/peers.py result"):
        plot_peers.load(bad)


def test_the_stored_runs_of_the_performance_page_draw(tmp_path, plot_peers):
    folder = ROOT / "bench" / "results" / "cpu-2026-12-03"
    runs = [plot_peers.load(folder / "peers-200-float32.json"), plot_peers.load(folder / "peers-200-float64.json")]
    png = tmp_path / "wp.png"
    plot_peers.draw(plot_peers.merge(runs), png)
    assert png.stat().st_size > 10_000
