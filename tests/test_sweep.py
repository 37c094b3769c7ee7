"""Dask sweeps: atomic per-point results, resume after interruption, a killed worker loses nothing."""
from __future__ import annotations

import functools
import os
import signal
import sys
import threading
import time
from pathlib import Path

import cloudpickle
import numpy as np
import pytest

from companion.encoding import flatten_result, unflatten_result
from companion.sweep import point_key, point_path, product_grid, run_sweep

# Dask workers are fresh processes that cannot import this test module (pytest imports it as
# tests.test_sweep with importlib), so its functions travel by value (run_sweep pickles the
# function with cloudpickle, which honours this registration).
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def logistic_point(r: float, seed: int, *, log_dir: str, sleep: float = 0.0) -> dict:
    """A tiny deterministic 'experiment': 50 logistic-map steps from a seeded start.

    Every start of a computation leaves a marker file ``<key>.<pid>.<nonce>`` in ``log_dir``, so the
    test can count how often each point was (re)computed and by which process.
    """
    key = point_key({"r": r, "seed": seed})
    Path(log_dir, f"{key}.{os.getpid()}.{time.monotonic_ns()}").touch()
    time.sleep(sleep)
    x = np.random.default_rng(seed).uniform(0.1, 0.9)
    traj = [x]
    for _ in range(50):
        x = r * x * (1 - x)
        traj.append(x)
    return {"traj": np.array(traj), "stats": {"last": traj[-1]}, "r": r}


def expected_traj(r: float, seed: int) -> np.ndarray:
    """The same map, written independently as a closed loop over a preallocated array."""
    out = np.empty(51)
    out[0] = np.random.default_rng(seed).uniform(0.1, 0.9)
    for i in range(50):
        out[i + 1] = r * out[i] * (1 - out[i])
    return out


def starts(log_dir: Path) -> dict[str, list[int]]:
    """Point key -> pids of every computation started for it."""
    out: dict[str, list[int]] = {}
    marks = sorted((int(n), k, int(p)) for k, p, n in (f.name.split(".") for f in log_dir.iterdir()))
    for _, key, pid in marks:  # in start order (CLOCK_MONOTONIC is system-wide)
        out.setdefault(key, []).append(pid)
    return out


def check_complete(out: Path, grid: list[dict], results: list[dict]) -> None:
    """One complete result per point, right values, nothing else left in the folder."""
    assert len(results) == len(grid)
    for p, res in zip(grid, results):
        np.testing.assert_array_equal(res["traj"], expected_traj(p["r"], p["seed"]))
        assert res["stats"]["last"] == res["traj"][-1]
        assert res["_provenance"]["config"] == p
        assert res["_provenance"]["seed"] == p["seed"]
    names = sorted(f.name for f in out.iterdir())
    want = sorted(n for p in grid for n in (point_path(out, p).name, point_path(out, p).with_suffix(".json").name))
    assert names == want, "stray or missing files (temporary files, duplicates)"


def test_flatten_roundtrip():
    import torch

    res = {"a": torch.arange(3.0), "nested": {"b": 2, "c": "txt"}, "none": None}
    arrays, other = flatten_result(res)
    assert set(arrays) == {"a", "nested/b", "nested/c"} and other == {"none": None}
    back = unflatten_result(arrays, other)
    assert back["nested"] == {"b": 2, "c": "txt"} and back["none"] is None
    np.testing.assert_array_equal(back["a"], [0.0, 1.0, 2.0])


def test_flatten_roundtrip_number_keys_and_lists_of_dicts():
    """Shapes the chapters' experiments return: dicts keyed by beta or rank, lists of per-run dicts,
    ragged lists of arrays (these made 6 of 35 experiments fail in `run --all`)."""
    res = {
        "rho": {0.1: np.arange(3.0), 1.5: np.ones(2)},
        "runs": {8: {"norm": [1.0, 2.0]}, 32: {"norm": [3.0]}},
        "list_of_runs": [{"beta": 5.0, "counts": np.array([1, 2])}, {"beta": 7.0, "note": None}],
        "ragged": [np.zeros(2), np.zeros(3)],
        "odd keys": {"#x": 1, "@y": 2, True: 3},
    }
    arrays, other = flatten_result(res)
    assert other == {"list_of_runs/@1/note": None}
    back = unflatten_result(arrays, other)
    assert sorted(back["rho"]) == [0.1, 1.5] and sorted(back["runs"]) == [8, 32]
    np.testing.assert_array_equal(back["rho"][0.1], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(back["runs"][32]["norm"], [3.0])
    assert [r["beta"] for r in back["list_of_runs"]] == [5.0, 7.0] and back["list_of_runs"][1]["note"] is None
    assert [a.shape for a in back["ragged"]] == [(2,), (3,)]
    assert back["odd keys"] == {"#x": 1, "@y": 2, True: 3}
    with pytest.raises(ValueError, match="must not contain '/'"):
        flatten_result({"a/b": 1})
    with pytest.raises(ValueError, match="strings, numbers or bools"):
        flatten_result({(1, 2): 1})


@pytest.mark.parametrize(
    "bad, err, match",
    [
        ({"grid": {"r": [1.0]}}, TypeError, "list of points"),
        ({"grid": [{"r": [1.0, 2.0]}]}, TypeError, "must be a str, int"),
        ({"grid": [{"r": 1.0, "seed": 0}, {"seed": 0, "r": 1.0}]}, ValueError, "duplicated point"),
        ({"n_workers": 0}, ValueError, "n_workers"),
        ({"scheduler": 3.5}, TypeError, "scheduler"),
    ],
)
def test_bad_input(tmp_path, bad, err, match):
    kw = {"grid": [{"r": 1.0, "seed": 0}], "n_workers": 1, "scheduler": None, **bad}
    grid = kw.pop("grid")
    func = functools.partial(logistic_point, log_dir=str(tmp_path))
    with pytest.raises(err, match=match):
        run_sweep(func, grid, tmp_path / "out", progress=False, **kw)


def test_product_grid_rejects_scalar_axis():
    with pytest.raises(TypeError, match="axis 'seed'"):
        product_grid(seed=3)


def failing_point(r: float, seed: int, *, log_dir: str, fail_r: float) -> dict:
    """``logistic_point`` that crashes for one value of r (an interrupted sweep)."""
    if r == fail_r:
        raise RuntimeError("simulated crash")
    return logistic_point(r, seed, log_dir=log_dir)


def test_resume_skips_finished_points_serial(tmp_path):
    log, out = tmp_path / "log", tmp_path / "out"
    log.mkdir()
    grid = product_grid(r=[2.5, 3.2, 3.9], seed=[0, 1])
    crashing = functools.partial(failing_point, log_dir=str(log), fail_r=3.9)
    with pytest.raises(RuntimeError, match="2 of 6 sweep points failed"):
        run_sweep(crashing, grid, out, scheduler="serial", progress=False)
    assert len(list(out.glob("*.json"))) == 4  # the other points were saved
    fixed = functools.partial(failing_point, log_dir=str(log), fail_r=-1.0)
    results = run_sweep(fixed, grid, out, scheduler="serial", progress=False)
    check_complete(out, grid, results)
    counts = {k: len(v) for k, v in starts(log).items()}
    assert counts == {point_key(p): 1 for p in grid}, "a finished point was recomputed"
    # A third call computes nothing at all.
    run_sweep(fixed, grid, out, scheduler="serial", progress=False)
    assert sum(len(v) for v in starts(log).values()) == len(grid)


def test_incomplete_point_is_recomputed_and_foreign_results_refused(tmp_path):
    log, out = tmp_path / "log", tmp_path / "out"
    log.mkdir()
    grid = product_grid(r=[3.0], seed=[0, 1])
    func = functools.partial(logistic_point, log_dir=str(log))
    run_sweep(func, grid, out, scheduler="serial", progress=False)
    # A write cut short: the .npz is there but not its provenance JSON, plus a stray temporary.
    point_path(out, grid[0]).with_suffix(".json").unlink()
    (out / f".{point_path(out, grid[0]).name}.abc.tmp").write_bytes(b"partial")
    results = run_sweep(func, grid, out, scheduler="serial", progress=False)
    check_complete(out, grid, results)
    assert sorted(len(v) for v in starts(log).values()) == [1, 2]
    with pytest.raises(ValueError, match="holds results of"):
        run_sweep(functools.partial(failing_point, log_dir=str(log), fail_r=0.0), grid, out, scheduler="serial", progress=False)


def test_resume_on_default_local_cluster(tmp_path):
    """scheduler=None: a LocalCluster is started; a half-finished sweep is completed, not redone."""
    log, out = tmp_path / "log", tmp_path / "out"
    log.mkdir()
    grid = product_grid(r=[2.8, 3.5], seed=[0, 1, 2])
    func = functools.partial(logistic_point, log_dir=str(log))
    run_sweep(func, grid[:3], out, scheduler="serial", progress=False)
    results = run_sweep(func, grid, out, n_workers=2, progress=False)
    check_complete(out, grid, results)
    counts = starts(log)
    assert {k: len(v) for k, v in counts.items()} == {point_key(p): 1 for p in grid}
    # The last three ran in the cluster's worker processes, not here.
    assert all(counts[point_key(p)][0] != os.getpid() for p in grid[3:])


def test_killed_worker_loses_and_duplicates_nothing(tmp_path):
    import logging

    from distributed import Client, LocalCluster

    log, out = tmp_path / "log", tmp_path / "out"
    log.mkdir()
    grid = product_grid(r=[2.9, 3.3, 3.6, 3.95], seed=[0, 1, 2])
    func = functools.partial(logistic_point, log_dir=str(log), sleep=0.6)
    killed: dict[str, int] = {}

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        worker_pids = set(client.run(os.getpid).values())

        def killer():
            # Wait until some point is being computed (started, not saved) on a worker, kill that worker.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                for key, pids in starts(log).items():
                    saved = (out / f"point-{key}.json").exists()
                    if not saved and pids[-1] in worker_pids and len(list(out.glob("*.json"))) >= 1:
                        killed["key"], killed["pid"] = key, pids[-1]
                        os.kill(pids[-1], signal.SIGKILL)
                        return
                time.sleep(0.02)

        t = threading.Thread(target=killer, daemon=True)
        t.start()
        results = run_sweep(func, grid, out, scheduler=cluster.scheduler_address, progress=False)
        t.join(timeout=5)

    assert killed, "the test never managed to kill a worker mid-task"
    check_complete(out, grid, results)
    counts = starts(log)
    # The point in flight on the killed worker was lost with it and started again elsewhere,
    # yet it has exactly one saved result (check_complete), like every other point.
    assert len(counts[killed["key"]]) >= 2
    assert counts[killed["key"]][0] == killed["pid"] and killed["pid"] not in counts[killed["key"]][1:]
    assert set(counts) == {point_key(p) for p in grid}

