"""Issue 31, groups 2, 8 and 9 (init, from_qkv): a sweep point knows what computed it; the command
line refuses bad values in one line with exit 2; the API refuses bad types naming the argument.

Each test scripts one of the issue's probes; each fails on the code before the issue's fixes.
"""
from __future__ import annotations

import argparse
import dataclasses
import warnings

import numpy as np
import pytest
import torch

from companion import init, models, registry
from companion.__main__ import main, parse_axis
from companion.runner import sweep_experiment
from companion.sweep import product_grid, run_sweep

NAME = "_test-hardening-sweep"


@dataclasses.dataclass(frozen=True)
class StepConfig:
    dt: float = 0.25
    n: int = 4
    seed: int = 0


def _body(cfg, generator, device):
    return {"xs": np.array([_point(cfg, x=x)["y"] for x in (1.0, 2.0)])}


def _point(cfg, device="cpu", *, x):
    """y = x / dt: depends on the configuration, not only on the point."""
    return {"x": x, "y": x / cfg.dt}


def _assemble(points, cfg):
    return {"xs": np.array([p["y"] for p in sorted(points, key=lambda p: p["x"])])}


@pytest.fixture
def sweepable():
    def register(dt):
        registry._REGISTRY.pop(NAME, None)
        registry.experiment(NAME, chapter="_test", profiles={"fast": StepConfig(dt=dt), "full": StepConfig(dt=dt)})(_body)
        registry.sweep_point(NAME, assemble=_assemble, grid=lambda cfg: [{"x": 1.0}, {"x": 2.0}])(_point)

    yield register
    registry._REGISTRY.pop(NAME, None)


# --- group 2: a sweep point computed with another configuration is recomputed, saying why ----------

def test_sweep_recomputes_points_of_another_configuration(sweepable, tmp_path):
    grid = product_grid(x=[1.0, 2.0])
    sweepable(0.25)
    sweep_experiment(NAME, grid, out=tmp_path, scheduler="serial", figure=False, progress=False)
    sweepable(0.5)  # the profile's dt changed
    with pytest.warns(RuntimeWarning, match=r"sweep point \{'x': 1.0\} is recomputed: .*config.dt: 0.25 -> 0.5"):
        sweep_experiment(NAME, grid, out=tmp_path, scheduler="serial", figure=False, progress=False)
    from companion.store import load_run

    result, meta = load_run(NAME, "fast", folder=tmp_path)
    np.testing.assert_allclose(result["xs"], [1 / 0.5, 2 / 0.5])  # the new dt's numbers, not the old ones
    assert result["config"]["dt"] == 0.5 and meta["code"]["sha256"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same configuration: reused, nothing said
        sweep_experiment(NAME, grid, out=tmp_path, scheduler="serial", figure=False, progress=False)


def test_sweep_point_of_unknown_context_is_recomputed(tmp_path):
    def square(x):
        return {"y": x * x}

    run_sweep(square, product_grid(x=[3]), tmp_path, scheduler="serial", progress=False)  # no context recorded
    with pytest.warns(RuntimeWarning, match="records no context"):
        res = run_sweep(square, product_grid(x=[3]), tmp_path, scheduler="serial", progress=False, context={"k": 1})
    assert res[0]["_provenance"]["sweep"]["context"] == {"k": 1} and res[0]["y"] == 9


def test_issue_probe_metastable_ln_n_dt(tmp_path, monkeypatch):
    """The issue's probe: sweep metastable-ln-n (n = 1000, seeds 0-1), change the fast profile's dt
    from 0.004 to 0.016, sweep again: the points are recomputed, and the result holds dt = 0.016's."""
    exp = registry.get("metastable-ln-n")
    grid = product_grid(n=[1000], seed=[0, 1], trials=[2])
    sweep_experiment(exp.name, grid, out=tmp_path, scheduler="serial", figure=False, progress=False)
    from companion.store import load_run

    before = load_run(exp.name, "fast", folder=tmp_path)[0]
    fast = exp.profiles["fast"]
    assert fast.dt == 0.004
    monkeypatch.setitem(registry._REGISTRY, exp.name,
                        dataclasses.replace(exp, profiles={**exp.profiles, "fast": dataclasses.replace(fast, dt=0.016)}))
    with pytest.warns(RuntimeWarning, match="dt: 0.004 -> 0.016"):
        sweep_experiment(exp.name, grid, out=tmp_path, scheduler="serial", figure=False, progress=False)
    after = load_run(exp.name, "fast", folder=tmp_path)[0]
    assert after["config"]["dt"] == 0.016
    assert not np.array_equal(np.asarray(before["t_trials"]), np.asarray(after["t_trials"]))


# --- group 8: command-line gaps give the one-line exit 2 ------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["run", "intro-consensus", "--param", "n=-3"], "n counts something"),
    (["run", "intro-consensus", "--param", "n=0"], "must be an integer >= 1"),
    (["run", "intro-consensus", "--param", "n=" + "9" * 4000], "--param n=...: "),
    (["run", "intro-consensus", "--param", "seed=1180591620717411303424"], "out of range"),
    (["run", "intro-consensus", "--param", "t1=NaN"], "--param t1=...: NaN is not a finite number"),
    (["run", "intro-consensus", "--param", "t1=Infinity"], "Infinity is not a finite number"),
    (["run", "intro-consensus", "--param", "beta=1e400"], "'1e400' is not a finite number"),
    (["sweep", "metastable-ln-n", "--grid", "n=1000,1000"], "the value 1000 is given twice"),
    (["sweep", "metastable-ln-n", "--grid", "n=[1000]"], "[1000] is a list"),
    (["run", "intro-consensus", "--out", ""], "--out must name a folder"),
    (["run", "intro-consensus", "--out", "/proc/no/such"], "is not writable"),
    (["sweep", "metastable-ln-n", "--out", "/proc/no/such"], "is not writable"),
    (["full", "intro-consensus", "--out", "/proc/no/such"], "is not writable"),
    # round 3 (issue 47): seeds are integers >= 0, budgets and pack sizes finite and bounded, workers bounded
    (["run", "intro-consensus", "--param", "seed=1.5"], "must be an integer"),
    (["run", "intro-consensus", "--param", "seed=-1"], "a seed must be an integer >= 0"),
    (["sweep", "metastable-ln-n", "--grid", "seed=0.5,1"], "a seed must be an integer >= 0"),
    (["full", "intro-consensus", "--budget", "1e308"], "--budget must lie in"),
    (["pack", ".", "--to", "packs", "--max-mb", "nan"], "--max-mb must lie in"),
    (["sweep", "metastable-ln-n", "--grid", "n=1000", "--workers", "100000"], "--workers must lie in"),
    (["run", "intro-consensu"], "did you mean 'intro-consensus'"),
    (["run", "intro-consensus", "--param", "n=4611686018427387904"], "the command line stops at"),  # 2**62: torch's numel overflow
    (["run", "intro-clustering", "--param", "n=200000"], "more than 100 times the largest profile's 64"),
    (["run", "intro-consensus", "--param", "t1=1e300"], "more than 1e+06 times"),
])
def test_command_line_refuses_in_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2, err
    last = err.strip().splitlines()[-1]
    assert message in last and last.startswith("python -m companion") and "Traceback" not in err
    assert not any(tmp_path.iterdir())  # nothing written (the empty --out wrote into the cwd before)


def test_seed_zero_is_a_seed(tmp_path):
    """`--param seed=0` and `--grid seed=0:2` are accepted: a seed is not a count (issue 47)."""
    assert main(["run", "intro-consensus", "--param", "seed=0", "--param", "n=4", "--param", "t1=0.5", "--out", str(tmp_path),
                 "--no-figure", "--quiet"]) == 0
    from companion.__main__ import _check_grid
    from companion.registry import get

    _check_grid(get("metastable-ln-n"), {"n": [1000], "seed": [0, 1]})


def test_grid_duplicate_check_is_linear():
    """20,000 values on one axis parse at once (the quadratic check took 53 s)."""
    import time

    t0 = time.perf_counter()
    key, values = parse_axis("beta=" + ",".join(str(i + 0.5) for i in range(20_000)))
    assert len(values) == 20_000 and time.perf_counter() - t0 < 2.0
    with pytest.raises(argparse.ArgumentTypeError, match="given twice"):
        parse_axis("beta=" + ",".join(str(i + 0.5) for i in range(20_000)) + ",0.5")


# --- group 9: the API's type checks (init's device, from_qkv) ---------------------------------------

@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a build without CUDA")
def test_uniform_sphere_on_cuda_without_cuda_is_the_packages_refusal():
    for f, args in ((init.uniform_sphere, (2, 3, 3)), (init.cone, (1, 3, 3, 0.5))):
        with pytest.raises(ValueError, match="device: device='cuda' but torch .* sees no CUDA device"):
            f(*args, device="cuda")


def test_init_device_type_is_checked():
    with pytest.raises(TypeError, match="device must be a str or torch.device, got int"):
        init.uniform_sphere(2, 3, 3, device=0)
    with pytest.raises(ValueError, match="device"):
        init.uniform_sphere(2, 3, 3, device="tpu")
    assert init.uniform_sphere(2, 3, 3, device="cpu", generator=torch.Generator().manual_seed(0)).device.type == "cpu"


@pytest.mark.parametrize("Q, K, V, err, match", [
    (torch.eye(3), torch.eye(3, dtype=torch.float64), torch.eye(3), TypeError, "must have one dtype"),
    (torch.eye(3), torch.eye(4), torch.eye(3), ValueError, "K has shape \\(4, 4\\) but Q has \\(3, 3\\)"),
    (torch.eye(3), torch.eye(3), torch.eye(2), ValueError, "V has shape"),
    (torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2), ValueError, "Q must have shape \\(d, d\\)"),
    ("eye", torch.eye(3), torch.eye(3), TypeError, "Q must be a \\(d, d\\) tensor or array of numbers, got str"),
    (torch.eye(3), [["a", "b", "c"]] * 3, torch.eye(3), TypeError, "K must be"),
    (torch.eye(3)[None].repeat(2, 1, 1), torch.eye(3)[None].repeat(3, 1, 1), torch.eye(3), ValueError, "numbers of trials"),
    (torch.eye(3, dtype=torch.complex64), torch.eye(3, dtype=torch.complex64), torch.eye(3, dtype=torch.complex64),
     TypeError, "Q must be real"),
])
def test_from_qkv_refuses_bad_input(Q, K, V, err, match):
    with pytest.raises(err, match=match):
        models.from_qkv(Q, K, V)


def test_from_qkv_still_builds_A_from_K_and_Q():
    g = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(3, 3, generator=g, dtype=torch.float64) for _ in range(3))
    m = models.from_qkv(Q, K, V, 2.0, geometry="euclidean")
    # <Q x, K y> = x^T Q^T K y = <A x, y> with A = K^T Q (paper A), checked on random vectors
    x, y = torch.randn(3, generator=g, dtype=torch.float64), torch.randn(3, generator=g, dtype=torch.float64)
    assert torch.allclose((Q @ x) @ (K @ y), (m.A @ x) @ y)
    assert models.from_qkv([[1, 0], [0, 1]], [[2, 0], [0, 2]], [[1, 0], [0, 1]]).A.dtype == torch.float64


def test_worker_with_other_code_refuses(tmp_path):
    """A worker whose checkout differs from the client's refuses the point (before: stored as 'code current')."""
    from companion.registry import get
    from companion.store import code_version
    from companion.sweep import _run_point

    exp = get("intro-consensus")
    context = {"experiment": exp.name, "profile": "fast", "device": "cpu", "config": {}, "code": code_version(exp)}
    func = lambda **p: {"x": 1.0}  # noqa: E731
    assert _run_point(func, {"seed": 0}, str(tmp_path / "same"), "f", context) == "computed"
    other = dict(context, code={**context["code"], "sha256": "0" * 16})  # what a client with another checkout records
    with pytest.raises(RuntimeError, match="runs other code; refused"):
        _run_point(func, {"seed": 1}, str(tmp_path / "other"), "f", other)
    assert not (tmp_path / "other").with_suffix(".json").exists()
