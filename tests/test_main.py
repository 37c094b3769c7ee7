"""The command line: run / sweep / list on a tiny experiment registered here, --help, bad input."""
from __future__ import annotations

import dataclasses
import json
import re
import math
import subprocess
import sys

import numpy as np
import pytest

from companion import registry
from companion import ledger
from companion.__main__ import main, parse_axis
from companion.pages import chapter_times, figure_sources
from companion.store import load_run

NAME = "_test-cli-decay"


@dataclasses.dataclass(frozen=True)
class DecayConfig:
    steps: int = 20
    rate: float = 0.5
    seed: int = 0


def decay(cfg: DecayConfig, generator, device) -> dict:
    """Exponential decay x' = -rate x by explicit Euler (test experiment)."""
    import torch

    h = 1.0 / cfg.steps
    x = torch.ones((), dtype=torch.float64, device=device)
    xs = [x]
    for _ in range(cfg.steps):
        x = x - h * cfg.rate * x
        xs.append(x)
    return {"xs": torch.stack(xs), "final": float(x), "meta": {"steps": cfg.steps}}


def decay_claims(result, cfg):
    """x(1) = e^{-rate} up to Euler's O(h) error: rate h / 2 relative, so 1 % at these steps."""
    rates = np.atleast_1d(result.get("rates", cfg.rate))  # an assembled sweep holds several rates
    err = float(np.max(np.abs(np.atleast_1d(result["final"]) / np.exp(-rates) - 1)))
    return [ledger.Claim(id="X-decay", paper="A", where="-", statement="Euler follows e^{-rate t}",
                         verdict=ledger.verdict(err, 0.1), measured=err, expected=0.0, tolerance=0.1)]


def plot_decay(result, ax=None):
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots()[1]
    ax.plot(result["xs"])


PROFILES = {"fast": DecayConfig(), "full": DecayConfig(steps=40)}


@pytest.fixture
def registered():
    registry.experiment(NAME, chapter="_test", profiles=PROFILES, plot=plot_decay, claims=decay_claims)(decay)
    yield NAME
    registry._REGISTRY.pop(NAME, None)


def test_run_writes_result_figure_provenance(registered, tmp_path):
    assert main(["run", NAME, "--profile", "fast", "--out", str(tmp_path), "--param", "rate=2"]) == 0
    folder = tmp_path / NAME
    assert sorted(p.name for p in folder.iterdir()) == ["fast.json", "fast.npz", "fast.png"]
    assert (folder / "fast.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result, meta = _load(tmp_path)
    # Euler on x' = -2x, h = 1/20: x_N = (1 - 2/20)^20, independent of the code above.
    assert result["final"] == pytest.approx(0.9**20, rel=1e-12)
    np.testing.assert_allclose(result["xs"], 0.9 ** np.arange(21), rtol=1e-12)
    assert result["meta"] == {"steps": 20} and result["profile"] == "custom" and result["config"]["rate"] == 2.0
    assert meta["config"] == {"experiment": NAME, "chapter": "_test", "profile": "fast", "device": "cpu", "params": {"rate": 2}}
    assert meta["figures"] == ["fast.png"] and meta["wall_time_s"] >= 0
    # The verdicts are stored beside the result: (1 - 2/20)^20 = 0.1216 against e^-2 = 0.1353, 10.2 % off.
    assert [(c["id"], c["status"], c["profile"]) for c in meta["claims"]] == [("X-decay", "not-reproduced", "custom")]
    assert {"versions", "commit", "machine", "created"} <= set(meta)


def _load(out):
    from companion.provenance import load_result
    from companion.encoding import unflatten_result

    arrays, meta = load_result(out / NAME / "fast.npz")
    return unflatten_result(arrays, meta.get("other")), meta


def test_load_run_and_figure_sources(registered, tmp_path, monkeypatch):
    monkeypatch.setenv("COMPANION_ROOT", str(tmp_path))
    assert load_run(NAME, "full") is None
    row = next(r for r in figure_sources("fast") if r["experiment"] == NAME)
    assert (row["profile"], row["device"]) == ("fast", "cpu")
    assert main(["run", NAME, "--profile", "full", "--no-figure"]) == 0  # default out: $COMPANION_ROOT/data/results
    result, meta = load_run(NAME, "full")
    assert result["final"] == pytest.approx((1 - 0.5 / 40) ** 40, rel=1e-12)
    row = next(r for r in figure_sources("fast") if r["experiment"] == NAME)
    assert (row["profile"], row["device"], row["source"]) == ("full", "cpu", f"data/results/{NAME}/full.npz")
    assert row["parts"] == 0
    unassembled = next(r for r in figure_sources("fast") if r["experiment"] != NAME)
    assert (unassembled["profile"], unassembled["parts"], unassembled["parts_s"]) == ("fast", 0, None)
    # A result assembled from parts (one LoRA run each) costs its parts' time, not the assembly's.
    parts = tmp_path / "data" / "results" / NAME / "parts"
    parts.mkdir()
    from companion.provenance import save_result

    for k, (wall, cpu) in enumerate([(100.0, 90.0), (200.0, 150.0)]):  # read through the verified loader
        save_result(parts / f"p{k}", {"x": np.arange(2)}, wall_time_s=wall, cpu_time_s=cpu)
    with_parts = next(r for r in figure_sources("fast") if r["experiment"] == NAME)
    assert with_parts["parts"] == 2
    assert with_parts["full_s"] == pytest.approx(row["full_s"] + 300.0)
    assert with_parts["full_cpu_s"] == pytest.approx(row["full_cpu_s"] + 240.0)


def test_sweep_command(registered, tmp_path, capsys):
    argv = ["sweep", NAME, "--grid", "rate=0.5,1", "--grid", "seed=0:2", "--scheduler", "serial", "--out", str(tmp_path)]
    assert main(argv) == 0
    points = sorted((tmp_path / NAME / "sweep-fast").glob("point-*.json"))
    assert len(points) == 4
    finals = sorted(json.loads(p.read_text())["config"]["rate"] for p in points)
    assert finals == [0.5, 0.5, 1, 1]
    assert main(argv) == 0  # resumes: nothing left to do, same files
    assert len(list((tmp_path / NAME / "sweep-fast").iterdir())) == 8
    assert "4 points" in capsys.readouterr().out


def decay_point(cfg: DecayConfig, device: str = "cpu", *, rate: float, seed: int = 0) -> dict:
    """One point of a decay sweep: the final value of the Euler run at one rate."""
    return {"rate": rate, "final": decay(dataclasses.replace(cfg, rate=rate, seed=seed), None, device)["final"]}


def decay_assemble(points: list[dict], cfg: DecayConfig) -> dict:
    rates = sorted({float(p["rate"]) for p in points})
    final = np.array([next(p["final"] for p in points if p["rate"] == r) for r in rates])
    return {"rates": np.array(rates), "final": final, "xs": final}  # xs: what plot_decay draws


@pytest.fixture
def sweepable(registered):
    registry.sweep_point(NAME, assemble=decay_assemble, grid=lambda cfg: [{"rate": 0.5}, {"rate": 4.0}])(decay_point)
    yield NAME


def test_sweep_point_assembles_into_the_experiment_result(sweepable, tmp_path, capsys):
    argv = ["sweep", NAME, "--grid", "rate=1,0.5,2", "--scheduler", "serial", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert len(list((tmp_path / NAME / "sweep-fast").glob("point-*.json"))) == 3
    result, meta = _load(tmp_path)
    np.testing.assert_array_equal(result["rates"], [0.5, 1.0, 2.0])
    np.testing.assert_allclose(result["final"], [(1 - r / 20) ** 20 for r in (0.5, 1.0, 2.0)], rtol=1e-12)
    assert meta["sweep"]["points"] == 3 and meta["sweep"]["axes"] == {"rate": [1, 0.5, 2]}
    assert meta["sweep"]["point_function"].endswith("decay_point") and meta["figures"] == ["fast.png"]
    assert "assembled the points into" in capsys.readouterr().out


def test_sweep_without_grid_uses_the_experiments_own_grid(sweepable, tmp_path):
    assert main(["sweep", NAME, "--scheduler", "serial", "--out", str(tmp_path), "--no-figure"]) == 0
    result, meta = _load(tmp_path)
    np.testing.assert_array_equal(result["rates"], [0.5, 4.0])
    assert meta["sweep"]["axes"] == {"rate": [0.5, 4.0]} and meta["figures"] == []


@pytest.mark.parametrize(
    "grid, message",
    [
        (["seed=0:2"], "--grid rate=... is required"),
        (["rate=1", "beta=2"], "--grid beta=...: the sweep point of _test-cli-decay"),
    ],
)
def test_sweep_grid_checked_against_the_point_function(sweepable, tmp_path, grid, message, capsys):
    argv = ["sweep", NAME, "--scheduler", "serial", "--out", str(tmp_path)] + [a for g in grid for a in ("--grid", g)]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / NAME).exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "_no-such-experiment"], "unknown experiment"),
        (["run", NAME, "--device", "tpu"], "device must be"),
        (["run"], "at least one EXPERIMENT"),
        (["sweep", NAME, "--grid", "profile=fast"], "use --profile"),
        (["run", NAME, "--param", "bad=1"], "has no parameter 'bad'; its parameters: steps, rate, seed"),
        (["run", NAME, "--param", "steps=2.5"], "parameter 'steps' must be an integer"),
        (["sweep", NAME, "--grid", "bad=1,2"], "has no parameter 'bad'"),
        (["sweep", NAME], "--grid is required: _test-cli-decay has no sweep point"),
    ],
)
def test_bad_input_exits_2_with_message(registered, argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_cuda_request_without_gpu_is_a_clear_error(registered, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(SystemExit):
        main(["run", NAME, "--device", "cuda"])
    assert "sees no CUDA device" in capsys.readouterr().err


def test_parse_axis_rejects_empty():
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match="no values"):
        parse_axis("beta=")
    with pytest.raises(argparse.ArgumentTypeError, match="KEY=VALUE"):
        parse_axis("beta")


def test_help_is_fast_and_points_to_list():
    """`--help` and `--version` import no experiment (nor torch): they answer at once."""
    code = ("import sys; from companion.__main__ import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('torch' in sys.modules, 'companion.registry' in sys.modules, file=sys.stderr)")
    for flag in ("--help", "--version"):
        out = subprocess.run([sys.executable, "-c", code, flag], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and out.stderr.strip().endswith("False False"), out.stderr
    out = subprocess.run([sys.executable, "-m", "companion", "--help"], capture_output=True, text=True, timeout=120)
    assert "python -m companion list" in out.stdout and "--version" in out.stdout
    from companion import __version__

    version = subprocess.run([sys.executable, "-m", "companion", "--version"], capture_output=True, text=True, timeout=120)
    assert version.stdout.strip() == f"companion {__version__}"


def test_run_name_help_lists_its_parameters(capsys):
    with pytest.raises(SystemExit):
        main(["run", "intro-clustering", "--help"])
    out = capsys.readouterr().out
    assert "intro-clustering [introduction]:" in out and "``" not in out
    assert re.search(r"\n    trials +int +16 +1024\n", out) and re.search(r"\n    seed +int +0 +0\n", out)


def test_list_json(capsys):
    assert main(["list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in listed] == list(registry.registry())
    one = next(e for e in listed if e["name"] == "intro-clustering")
    assert one["parameters"]["trials"] == {"fast": 16, "full": 1024} and "\n" not in one["description"]


def test_cli_profiles_are_the_registrys():
    from companion import __main__ as cli

    assert cli.PROFILES == registry.PROFILES


def test_every_experiment_takes_profile_device_and_has_a_figure():
    """What `run --all` relies on: the CLI calls func(profile=..., device=...) and saves the figures
    of the experiment's plot function (given as plot= to registry.experiment)."""
    import inspect

    # tables of Jacobian checks, no figure in the chapter
    without_figure = {"spectral-stability-cases", "spectral-lemma-a1"}
    reg = registry.registry()
    assert len(reg) >= 35
    for name, exp in reg.items():
        params = inspect.signature(exp.func).parameters
        assert {"profile", "device"} <= set(params), name
        assert (exp.plot is None) == (name in without_figure), name


def test_run_reports_time_and_figures(registered, tmp_path, capsys):
    from companion.registry import _REGISTRY

    bare = "_test-cli-bare"
    registry.experiment(bare, chapter="_test", profiles=PROFILES)(decay)
    try:
        assert main(["run", NAME, bare, "--out", str(tmp_path)]) == 0
    finally:
        _REGISTRY.pop(bare, None)
    out = capsys.readouterr().out
    assert f"{NAME}: " in out and "(+ .json, 1 figure)" in out
    assert f"{bare}: " in out and "no figure (no plot function)" in out
    assert "2 experiments in " in out and "slowest: " in out
    assert "[not-reproduced] X-decay" not in out and "[    reproduced] X-decay: measured" in out  # fast: 1.3 % off


def test_list_shows_parameters_per_profile(registered, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert f"{NAME}\t_test\t" in out and "    steps = 20  (full: 40)" in out and "    rate = 0.5\n" in out


def test_chapter_times_from_notebook_metadata(tmp_path):
    nb = {"cells": [
        {"cell_type": "code", "metadata": {"execution": {"iopub.execute_input": "2026-01-01T00:00:01.000Z", "shell.execute_reply": "2026-01-01T00:00:03.500Z"}}},
        {"cell_type": "markdown", "metadata": {}},
        {"cell_type": "code", "metadata": {"execution": {"iopub.execute_input": "2026-01-01T00:00:04.000Z", "shell.execute_reply": "2026-01-01T00:01:01.250Z"}}},
    ]}
    (tmp_path / "ch.ipynb").write_text(json.dumps(nb))
    (tmp_path / "bare.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "metadata": {}}]}))
    rec = {"execution_seconds": 12.5, "executed": "2026-02-02 10:00 UTC", "machine": "Linux-x, 2 CPUs", "profile": "fast"}
    (tmp_path / "made.ipynb").write_text(json.dumps({"metadata": {"companion": rec}, "cells": nb["cells"]}))
    rows = {r["chapter"]: r for r in chapter_times(tmp_path)}
    assert rows["ch"]["cells"] == 2 and math.isclose(rows["ch"]["seconds"], 60.25)
    assert rows["ch"]["executed"] == "2026-01-01 00:01 UTC" and rows["ch"]["machine"] is None
    assert rows["bare"]["seconds"] is None
    # The build record written by make refresh wins over the cell timestamps.
    assert (rows["made"]["seconds"], rows["made"]["machine"], rows["made"]["profile"]) == (12.5, "Linux-x, 2 CPUs", "fast")


def test_full_runs_what_is_missing_within_the_budget_then_pack_and_store(tmp_path, capsys):
    """`full` runs a real experiment in a subprocess, skips it once stored, and a spent budget starts
    nothing; `pack` and `store` bring the verified result into another results folder."""
    out = tmp_path / "results"
    argv = ["full", "intro-consensus", "--profile", "fast", "--out", str(out), "--budget", "5"]
    assert main(argv) == 0
    assert "1 ran" in capsys.readouterr().out
    assert main(argv) == 0
    assert "1 stored" in capsys.readouterr().out
    (out / "intro-consensus" / "fast.npz").write_bytes(b"not an npz")  # damaged: recomputed, not trusted
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "does not verify" in text and "1 ran" in text
    assert main(["pack", str(out), "--to", str(tmp_path / "packs")]) == 0
    packs = sorted((tmp_path / "packs").glob("*.tar.gz"))
    assert [p.name for p in packs] == ["results-1.tar.gz"]
    assert main(["store", *map(str, packs), "--out", str(tmp_path / "stored")]) == 0
    from companion.provenance import load_result

    arrays, meta = load_result(tmp_path / "stored" / "intro-consensus" / "fast.npz")
    assert meta["config"]["experiment"] == "intro-consensus" and [c["status"] for c in meta["claims"]] == ["reproduced"] * 2


def test_full_with_no_budget_left_starts_nothing(tmp_path, capsys):
    from companion.runner import run_profiles

    rows = run_profiles(["intro-consensus", "intro-clustering"], "fast", out=tmp_path, budget_s=0.5, log=lambda s: None)
    assert [r["status"] for r in rows] == ["not started", "not started"] and not any(tmp_path.iterdir())
    with pytest.raises(SystemExit) as e:
        main(["full", "intro-consensus", "--budget", "0"])
    assert e.value.code == 2 and "--budget must lie in" in capsys.readouterr().err


def test_pack_refuses_more_than_the_limits(tmp_path):
    from companion.transport import pack_results
    from companion.runner import run_experiment

    for n in (4, 5):
        run_experiment("intro-consensus", "fast", out=tmp_path / f"r{n}", params={"n": n, "t1": 0.5}, figure=False)
    with pytest.raises(ValueError, match="more than max_bytes"):
        pack_results(tmp_path / "r4", tmp_path / "p", max_bytes=100)
