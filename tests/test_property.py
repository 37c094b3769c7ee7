"""Property-based test of the public API (issue 18, "Beyond the listed cases").

Random shapes, dtypes and parameter values at and beyond their limits go through ``simulate`` with
every model and method, the fields, the metrics and the draws. Every draw must either return a
finite result of the documented shape, or raise an error of the package's own (raised by a line of
``companion``, never from inside torch, numpy, POT or numba) of an expected type whose message names
one of the arguments, within a bounded time (a SIGALRM watchdog turns a hang into a failure).

Profiles (``HYPOTHESIS_PROFILE``): ``ci`` (default; derandomised, a few dozen examples per test, its
share of CI well under a minute) and ``long`` (``make test-property``: random, many examples).
"""
from __future__ import annotations

import math
import os
import signal
import traceback
import warnings
from pathlib import Path

import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, settings, strategies as st  # noqa: E402

from companion import circle, init, metrics, models, simulate  # noqa: E402
from companion.attention import BACKENDS, attention_field  # noqa: E402
from companion.integrate import METHODS  # noqa: E402

COMMON = dict(database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=25, deadline=10_000, derandomize=True, **COMMON)
settings.register_profile("long", max_examples=400, deadline=30_000, **COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

PACKAGE = Path(init.__file__).resolve().parent  # src/companion (models and metrics are packages inside it)
WATCHDOG_S = int(os.environ.get("PROPERTY_WATCHDOG_S", 60))  # per example: tiny sizes and few steps take milliseconds; only a hang gets here
DTYPES = (torch.float64, torch.float32, torch.float16)


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"no result within {WATCHDOG_S} s")


NUMPY_FP_WARNINGS = ("overflow encountered", "invalid value encountered", "divide by zero encountered")


def outcome(call, names: tuple[str, ...], allowed: tuple[type, ...] = (ValueError, TypeError), clear=None):
    """Run ``call()``: its result, or None when it raised an acceptable refusal.

    Acceptable: an instance of ``allowed`` raised by a line of the package, whose message names one of
    ``names`` (and, given ``clear``, for which ``clear(error)`` holds: then, too, no numpy warning of
    an overflow or invalid value, a computation run on an inf or a NaN, may escape). Anything else (NaN,
    a foreign exception, a hang) fails the test."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(WATCHDOG_S)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("ignore")  # stability warnings are advice, not results
            if clear is not None:
                warnings.filterwarnings("always", category=RuntimeWarning)
            try:
                return call()
            finally:
                fp = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught if str(w.message).startswith(NUMPY_FP_WARNINGS)]
                assert not fp, f"a computation ran on an inf or NaN: {fp}"
    except (Hang, AssertionError):
        raise
    except Exception as e:
        if isinstance(e.__context__, Hang):  # the watchdog fired inside numba, which wraps it in SystemError
            raise e.__context__ from None
        where = traceback.extract_tb(e.__traceback__)[-1].filename
        assert isinstance(e, allowed), f"{type(e).__name__} (not {[a.__name__ for a in allowed]}): {e}"
        assert Path(where).resolve().is_relative_to(PACKAGE), f"raised inside {where}, not by the package: {type(e).__name__}: {e}"
        assert any(n in str(e) for n in names), f"message names none of {names}: {e}"
        assert clear is None or clear(e), f"not a clear refusal: {type(e).__name__}: {e}"
        return None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def assert_finite(T: torch.Tensor, shape: tuple[int, ...], what: str) -> None:
    assert tuple(T.shape) == shape, f"{what}: shape {tuple(T.shape)}, expected {shape}"
    assert bool(torch.isfinite(T).all()), f"{what}: non-finite entries in {T}"


# ----------------------------------------------------------------------------- strategies

# positive parameters: typical values, limits and beyond (0, negative, huge, non-finite, wrong type)
POSITIVE = st.one_of(
    st.floats(min_value=1e-3, max_value=50.0),
    st.sampled_from([0.0, -1.0, 1e-300, 1e-8, 200.0, 1e3, 1e8, math.inf, -math.inf, math.nan, "2", True, 1j]),
)
SCALES = st.sampled_from([0.0, 1e-3, 1.0, 3.0, 1e3, 1e8])


@st.composite
def tokens(draw, *, d=None, sphere=None):
    """(trials, n, d) tokens: on the sphere or not, any of three dtypes, sometimes with a NaN."""
    T, n = draw(st.integers(1, 2)), draw(st.integers(1, 5))
    d = draw(st.integers(1, 4)) if d is None else d
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    X = torch.randn(T, n, d, generator=g, dtype=torch.float64)
    on = draw(st.booleans()) if sphere is None else sphere
    X = X / X.norm(dim=-1, keepdim=True) if on else X * draw(SCALES)
    if draw(st.integers(0, 19)) == 0:
        X[0, 0, 0] = math.nan
    return X.to(draw(st.sampled_from(DTYPES)))


@st.composite
def matrix(draw, d: int, *, allow_none=True):
    """A (d, d) matrix or None; sometimes of the wrong size, complex or with an inf."""
    kind = draw(st.sampled_from(["none", "random", "random", "identity", "wrong size", "complex", "inf"]
                                if allow_none else ["random", "random", "identity", "wrong size", "complex", "inf"]))
    if kind == "none":
        return None
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    M = torch.randn(d + (kind == "wrong size"), d + (kind == "wrong size"), generator=g, dtype=torch.float64)
    M = torch.eye(d, dtype=torch.float64) if kind == "identity" else M * draw(SCALES)
    if kind == "complex":
        return M.to(torch.complex128)
    if kind == "inf":
        M[0, 0] = math.inf
    return M


# ----------------------------------------------------------------------------- simulate

MODEL_KINDS = ("euclidean", "rescaled", "capped", "sphere", "usa", "zero temperature", "circle")
SIM_NAMES = ("x0", "beta", "A", "V", "B", "t1", "dt", "max_steps", "method", "rtol", "atol", "t_cap", "normalization",
             "tol", "simulate")


@st.composite
def model_and_state(draw):
    """(a builder of the model, x0): the constructor runs inside :func:`outcome`, its refusals judged."""
    kind = draw(st.sampled_from(MODEL_KINDS))
    beta = draw(POSITIVE)
    if kind == "circle":
        X = draw(tokens(d=1, sphere=False))
        normalization, backend = draw(st.sampled_from(["usa", "softmax"])), draw(st.sampled_from(circle.BACKENDS))
        return (lambda: circle.Circle(beta, normalization, backend)), X
    d = draw(st.integers(1, 4))
    X = draw(tokens(d=d, sphere=None))
    A, V = draw(matrix(d)), draw(matrix(d))
    t_cap = draw(st.sampled_from([0.0, 1.0, 150.0, -1.0]))
    build = {
        "euclidean": lambda: models.Euclidean(A=A, V=V, beta=beta),
        "rescaled": lambda: models.Rescaled(A=A, V=V, beta=beta),
        "capped": lambda: models.ScaleCappedRescaled(A=A, V=V, t_cap=t_cap),
        "sphere": lambda: models.Sphere(A=A, V=V, beta=beta),
        "usa": lambda: models.metastable(beta, "usa"),
        "zero temperature": lambda: models.ZeroTemperature(B=A, V=V),
    }[kind]
    return build, X


@hypothesis.given(
    model_and_state(),
    st.sampled_from(METHODS),
    st.sampled_from([0.05, 0.3, 1.0, 0.0, -1.0, math.inf, math.nan]),
    st.sampled_from([0.01, 0.1, 0.5, 1e-9, 0.0, -0.1, math.nan]),
)
def test_simulate_returns_finite_states_or_refuses_clearly(case, method, t1, dt):
    build, X = case
    model = outcome(build, SIM_NAMES)
    if model is None:
        return
    # RuntimeError: dopri5 out of max_steps; FloatingPointError: a solution that blows up (e^{tV} with
    # |V| = 1e8), both raised by the integrator naming itself ("simulate: ...")
    sol = outcome(lambda: simulate(model, X, t1, method=method, dt=dt, max_steps=200), SIM_NAMES,
                  (ValueError, TypeError, RuntimeError, FloatingPointError))
    if sol is not None:
        S = sol.ts.shape[0]
        assert_finite(sol.xs, (S,) + tuple(X.shape), f"simulate({type(model).__name__}, {method})")


# ----------------------------------------------------------------------------- fields

FIELD_NAMES = ("X", "A", "V", "beta", "normalization", "backend", "theta")


@hypothesis.given(st.data())
def test_attention_field_is_finite_or_refuses_clearly(data):
    X = data.draw(tokens())
    d = X.shape[-1]
    A, V = data.draw(matrix(d)), data.draw(matrix(d))
    beta = data.draw(POSITIVE)
    normalization = data.draw(st.sampled_from(["softmax", "usa", "l2"]))
    backend = data.draw(st.sampled_from(BACKENDS + ("gpu",)))
    F = outcome(lambda: attention_field(X, A, V, beta, normalization=normalization, backend=backend), FIELD_NAMES)
    if F is not None:
        assert_finite(F, tuple(X.shape), "attention_field")


@hypothesis.given(st.data())
def test_circle_field_is_finite_or_refuses_clearly(data):
    th = data.draw(tokens(d=1, sphere=False))
    beta = data.draw(POSITIVE)
    normalization = data.draw(st.sampled_from(["softmax", "usa", "sa", "l2"]))
    backend = data.draw(st.sampled_from(circle.BACKENDS + ("gpu",)))
    F = outcome(lambda: circle.circle_field(th, beta, normalization, backend=backend), FIELD_NAMES)
    if F is not None:
        assert_finite(F, tuple(th.shape), "circle_field")


# ----------------------------------------------------------------------------- metrics

METRIC_NAMES = ("X", "Y", "p", "cost", "solver", "n_projections", "seed", "tol", "criterion", "bins", "level",
                "min_mass", "eigvecs", "basis", "V", "beta")


@hypothesis.given(st.data())
def test_metrics_are_finite_or_refuse_clearly(data):
    X = data.draw(tokens())
    T, n, d = X.shape
    which = data.draw(st.sampled_from(["wasserstein", "rho_min", "cluster_count", "cluster_centres", "modal_masses",
                                       "project", "distance", "energy"]))
    if which == "wasserstein":
        Y = data.draw(tokens(d=d))
        p = data.draw(st.sampled_from([1, 2, 3.5, 0.5, math.inf, "2"]))
        cost = data.draw(st.sampled_from(["euclidean", "chordal", "geodesic", "cosine"]))
        solver = data.draw(st.sampled_from(["auto", "exact", "sliced"]))
        k = data.draw(st.sampled_from([1, 16, 0, -2, 2.5]))
        out = outcome(lambda: metrics.wasserstein(X, Y, p, cost=cost, solver=solver, n_projections=k), METRIC_NAMES)
        shape = (T,)
    elif which == "rho_min":
        out, shape = outcome(lambda: metrics.rho_min(X), METRIC_NAMES), (T,)
    elif which in ("cluster_count", "cluster_centres"):
        criterion = data.draw(st.sampled_from(["linkage", "density"]))
        tol = data.draw(POSITIVE) if criterion == "linkage" else None
        fn = getattr(metrics, which)
        out = outcome(lambda: fn(X, tol, criterion=criterion), METRIC_NAMES)
        if which == "cluster_centres" and out is not None:
            assert len(out) == T
            for c, w in out:
                assert c.ndim == 2 and c.shape[1] == d and w.shape == (c.shape[0],)
                assert all(map(math.isfinite, c.ravel())) and all(0 < x <= 1 for x in w)
            return
        shape = (T,)
    elif which == "modal_masses":
        E = data.draw(st.one_of(st.just(init.random_orthogonal(d, generator=torch.Generator().manual_seed(0))), matrix(d, allow_none=False)))
        out, shape = outcome(lambda: metrics.modal_masses(X, E), METRIC_NAMES), (T, d)
    elif which in ("project", "distance"):
        k = data.draw(st.integers(1, d))
        basis = data.draw(st.one_of(st.just(torch.eye(d, dtype=torch.float64)[:, :k]), matrix(d, allow_none=False)))
        fn = metrics.project_to_subspace if which == "project" else metrics.distance_to_subspace
        out = outcome(lambda: fn(X, basis), METRIC_NAMES)
        shape = tuple(X.shape) if which == "project" else (T, n)
    else:
        V, beta, log = data.draw(matrix(d, allow_none=False)), data.draw(POSITIVE), data.draw(st.booleans())
        out, shape = outcome(lambda: metrics.interaction_energy(X, V, beta, log=log), METRIC_NAMES), (T,)
    if out is not None:
        assert_finite(out, shape, which)


# ----------------------------------------------------------------------------- draws

INIT_NAMES = ("trials", "n", "d", "dtype", "delta", "axis", "half_width", "radius", "point", "scale", "generator", "M")
COUNTS = st.one_of(st.integers(1, 4), st.sampled_from([0, -1, 2.5, True, "3"]))


@hypothesis.given(st.data())
def test_draws_are_finite_or_refuse_clearly(data):
    T, n, d = data.draw(COUNTS), data.draw(COUNTS), data.draw(COUNTS)
    dtype = data.draw(st.sampled_from(DTYPES + (torch.int64,)))
    g = data.draw(st.sampled_from([torch.Generator().manual_seed(1), None, 7]))
    which = data.draw(st.sampled_from(["uniform_sphere", "cone", "cube", "ball", "near_point", "uniform_angles",
                                       "random_orthogonal", "fibonacci_sphere", "angle_grid"]))
    calls = {
        "uniform_sphere": lambda: init.uniform_sphere(T, n, d, generator=g, dtype=dtype),
        "cone": lambda: init.cone(T, n, d, data.draw(st.sampled_from([-1.0, 0.0, 0.9, 0.999, 1.0, 2.0, math.nan])), generator=g, dtype=dtype),
        "cube": lambda: init.cube(T, n, d, data.draw(POSITIVE), generator=g, dtype=dtype),
        "ball": lambda: init.ball(T, n, d, data.draw(POSITIVE), generator=g, dtype=dtype),
        "near_point": lambda: init.near_point(torch.ones(d if type(d) is int and d > 0 else 1) * data.draw(SCALES), T, n,
                                              data.draw(POSITIVE), generator=g, dtype=dtype),
        "uniform_angles": lambda: init.uniform_angles(T, n, generator=g, dtype=dtype),
        "random_orthogonal": lambda: init.random_orthogonal(d, trials=T, generator=g, dtype=dtype),
        "fibonacci_sphere": lambda: init.fibonacci_sphere(T, n, generator=g, dtype=dtype),
        "angle_grid": lambda: init.angle_grid(n, dtype=dtype),
    }
    out = outcome(calls[which], INIT_NAMES)
    if out is not None:
        assert out.dtype == dtype and bool(torch.isfinite(out).all()), f"{which}: {out}"
        if which in ("uniform_sphere", "cone", "near_point", "fibonacci_sphere"):  # near_point: sphere=True
            assert bool(((out.norm(dim=-1) - 1).abs() < 1e-4).all()), f"{which}: tokens off the sphere"


# ----------------------------------------------------------------------------- command line and loaders
# (issue 31: the command line's parameter parsing and the stored-result loaders, under the same rule:
# a value, or the package's own clear refusal; never a traceback from inside, never a hang)

# what a user types after KEY=: numbers at and beyond their limits, JSON of every kind, plain text
CLI_VALUES = st.one_of(
    st.integers(-10, 10**4).map(str),
    st.integers(min_value=2**62, max_value=2**80).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "9" * 4000, "true", "null", "[]", "[1, 2]",
                     "[1e400]", "{}", '{"a": 1}', '"x"', "", "0x10", "1_000", " 3", "64 ", "2.5", "-0"]),
    st.text(max_size=12),
)


@hypothesis.given(st.sampled_from(["n", "t1", "beta", "seed", "lambdas", "nope"]), CLI_VALUES)
def test_param_parsing_is_a_value_or_a_one_line_refusal(key, text):
    """``run EXPERIMENT --param KEY=VALUE`` up to the point where the run would start (what _cmd_run
    checks before running): either a configuration of finite numbers and int64 integers, counts >= 1,
    or exit status 2 with the package's message (argparse's, or a UsageError naming the parameter)."""
    from companion import __main__ as cli
    from companion.registry import get

    parser = cli.build_parser()
    try:
        args = parser.parse_args(["run", "intro-consensus", "--param", f"{key}={text}"])
    except SystemExit as e:
        assert e.code == 2
        return
    params = dict(args.param)
    exp = get("intro-consensus")
    try:
        cfg = cli._checked(exp.configure, args.profile, **params)
        cli._check_counts(exp, params)
    except cli.UsageError as e:
        assert key in str(e) or "parameter" in str(e), str(e)
        return
    value = getattr(cfg, key)
    for v in value if isinstance(value, tuple) else (value,):
        if isinstance(v, float):
            assert math.isfinite(v), (key, text, v)
        if isinstance(v, int) and not isinstance(v, bool):
            assert abs(v) < 2**63, (key, text, v)
    if key == "n":
        assert value >= 1


@hypothesis.given(st.lists(CLI_VALUES, min_size=1, max_size=4).map(",".join) | st.sampled_from(["0:3", "-2:2", "5:1", "0:99999999999"]))
def test_grid_axis_is_distinct_scalars_or_a_refusal(text):
    """``--grid KEY=...``: distinct JSON scalars that name a point file, or argparse's refusal."""
    import argparse

    from companion.__main__ import parse_axis
    from companion.sweep import point_key

    try:
        key, values = parse_axis(f"x={text}")
    except argparse.ArgumentTypeError as e:
        assert "--grid" in str(e) or "finite" in str(e) or "range" in str(e), str(e)
        return
    assert key == "x" and values
    for v in values:
        assert v is None or isinstance(v, (str, int, float, bool)), v
        assert not isinstance(v, float) or math.isfinite(v)
        point_key({"x": v})  # every value names a point
    assert len({(type(v), v) for v in values}) == len(values)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@pytest.fixture(scope="module")
def stored_result(tmp_path_factory):
    """One small stored full-profile result (intro-consensus, 4 tokens), to damage copies of."""
    from companion.runner import run_experiment

    out = tmp_path_factory.mktemp("stored")
    run_experiment("intro-consensus", "full", out=out, params={"n": 4, "t1": 0.5})
    return out


def _load_outcome(folder):
    from companion import pages
    from companion.registry import get
    from companion.store import load_run, stale

    try:
        stored = load_run("intro-consensus", "full", folder=folder)
    except (ValueError, FileNotFoundError) as e:  # ResultError is a ValueError
        assert str(folder) in str(e) or "profile" in str(e), str(e)
        return None
    if stored is not None:
        stale(get("intro-consensus"), "full", stored)
        pages._stored_line(get("intro-consensus"), "full", stored[1], folder.parent.parent)
    return stored


@hypothesis.given(kind=st.sampled_from(["bytes", "json", "fields", "figures"]), data=st.data())
def test_loaders_refuse_damaged_provenance_clearly(stored_result, tmp_path_factory, kind, data):
    """A damaged, crafted or foreign provenance JSON: the verified loader either loads a result that is
    the stored one (its own files) or raises its own error naming the file; never another exception."""
    import json as _json
    import shutil

    from companion.provenance import sha256_file

    root = tmp_path_factory.mktemp("damaged")
    shutil.copytree(stored_result, root / "data" / "results")
    folder = root / "data" / "results"
    meta_path = folder / "intro-consensus" / "full.json"
    meta = _json.loads(meta_path.read_text())
    if kind == "bytes":
        meta_path.write_bytes(data.draw(st.binary(max_size=64)))
    elif kind == "json":
        meta_path.write_text(_json.dumps(data.draw(JSON)))
    elif kind == "fields":
        for k in data.draw(st.lists(st.sampled_from(sorted(meta)), max_size=4)):
            meta[k] = data.draw(JSON)
        meta_path.write_text(_json.dumps(meta))
    else:  # figure names of every kind, hashed so that only the name can be wrong
        outside = root / "outside.png"
        outside.write_bytes(b"x")
        names = data.draw(st.lists(st.sampled_from(["full.png", str(outside), "../outside.png", "", ".", "..",
                                                    "a/b.png", "full.npz", "fast.png"]) | st.text(max_size=6), max_size=3))
        meta["figures"] = names
        meta["sha256"]["figures"] = {n: sha256_file(outside) for n in names}
        meta_path.write_text(_json.dumps(meta))
    stored = outcome(lambda: _load_outcome(folder), (str(folder), "profile"), allowed=(ValueError, FileNotFoundError))
    if stored is not None:
        for name in stored[1].get("figures") or []:
            assert "/" not in name and name not in ("", ".", ".."), name


# ----------------------------------------------------------------------------- float32 overflow
# (issue 31, group 1: inputs whose scores, norms or growth pass float32's largest value 3.4e38; the
# outcome is finite states and fields, or a FloatingPointError / ValueError naming the dtype or the
# argument, never NaN, a SystemError from numba or a ZeroDivisionError; the known cases are in
# tests/test_integrators_overflow.py, these are random ones around them)

OVERFLOW = settings(max_examples=40 if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci" else 300, deadline=None)
HUGE = st.one_of(st.floats(0.0, 39.5).map(lambda u: 10.0 ** u), st.sampled_from([3.4e38, 3.5e38, 1e39, 1.8e19, 1.9e19]))
FACTOR = st.one_of(st.just(1.0), HUGE)  # half the draws leave a factor alone, so products land near the edge
OVERFLOW_NAMES = ("float32", "X", "x0", "A", "V", "beta")


@st.composite
def tokens32(draw, d=None, sphere=False):
    """(trials, n, d) float32 tokens scaled by a factor up to 10^39.5 (or, ``sphere``, on the sphere), no NaN."""
    T, n = draw(st.integers(1, 2)), draw(st.integers(1, 6) | st.sampled_from([40, 300]))  # many tokens: big value sums
    d = draw(st.integers(1, 4)) if d is None else d
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    X = torch.randn(T, n, d, generator=g, dtype=torch.float64)
    if sphere or draw(st.booleans()):
        X = X / X.norm(dim=-1, keepdim=True)
    return X.float() if sphere else (X * draw(st.sampled_from([1.0, 1e-20, 1e-30]) | HUGE)).float()


# (kind, scale, seed) of a (d, d) matrix, built by matrix_of once d is known (hypothesis shows the triple)
HUGE_MATRIX = st.tuples(st.sampled_from(["none", "identity", "random"]), FACTOR, st.integers(0, 2**16))


def matrix_of(spec: tuple[str, float, int], d: int) -> torch.Tensor | None:
    """None, or (d, d) float64: scale * I, or a random matrix times scale."""
    kind, scale, seed = spec
    if kind == "none":
        return None
    if kind == "identity":
        return scale * torch.eye(d, dtype=torch.float64)
    return scale * torch.randn(d, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def refused_clearly(e: Exception) -> bool:
    """For outcome(): a FloatingPointError names the dtype; a RuntimeError is the integrator's, naming
    itself (an adaptive run whose step shrank to nothing: the solution blows up in finite time)."""
    if isinstance(e, FloatingPointError):
        return "float32" in str(e)
    return not isinstance(e, RuntimeError) or str(e).startswith("simulate: ")


TINY32 = (init.uniform_sphere(1, 4, 3, generator=torch.Generator().manual_seed(1)) * 1e-30).float()
NO_MATRIX = ("none", 1.0, 0)


@OVERFLOW
@hypothesis.given(X=tokens32(), A=HUGE_MATRIX, V=HUGE_MATRIX, beta=FACTOR, normalization=st.sampled_from(["softmax", "usa"]),
                  backend=st.sampled_from(["fused", "dense", "fused", "dense", "auto", "blocked"]))
# beta itself past float32 with tiny scores: the fused kernel ran on beta = inf (inf * 0 = NaN) before
# the dense check refused its output, blaming the tokens
@hypothesis.example(X=TINY32, A=NO_MATRIX, V=NO_MATRIX, beta=1e39, normalization="softmax", backend="fused")
@hypothesis.example(X=TINY32 * 1e50, A=NO_MATRIX, V=NO_MATRIX, beta=1.0, normalization="usa", backend="dense")  # issue 31's X * 1e20
@hypothesis.example(X=TINY32 * 1e30, A=("identity", 1e39, 0), V=NO_MATRIX, beta=1.0, normalization="softmax", backend="fused")
def test_float32_overflow_in_the_field_is_finite_or_refused(X, A, V, beta, normalization, backend):
    A, V = matrix_of(A, X.shape[-1]), matrix_of(V, X.shape[-1])
    F = outcome(lambda: attention_field(X, A, V, beta, normalization=normalization, backend=backend), OVERFLOW_NAMES,
                (ValueError, FloatingPointError), refused_clearly)
    hypothesis.event(f"{backend}: " + ("refused" if F is None else "finite"))
    if F is not None:
        assert F.dtype == torch.float32
        assert_finite(F, tuple(X.shape), f"attention_field({backend}, {normalization}, beta={beta:g})")


@OVERFLOW
@hypothesis.given(st.data())
def test_float32_overflow_in_a_run_is_finite_or_refused(data):
    kind = data.draw(st.sampled_from(["euclidean growth", "euclidean", "sphere"]))
    method = data.draw(st.sampled_from(["euler", "rk4", "dopri5", "tsit5"]))
    d = data.draw(st.integers(1, 3))
    X = data.draw(tokens32(d, sphere=kind == "sphere"))
    kw = dict(normalization=data.draw(st.sampled_from(["softmax", "usa"])), backend=data.draw(st.sampled_from(["auto", "fused", "dense"])))
    if kind == "euclidean growth":  # V = c I: tokens grow like e^{ct}, past float32 within t1
        c, beta = data.draw(st.floats(0.5, 4.0)), data.draw(st.sampled_from([1.0, 10.0]))
        model = lambda: models.Euclidean(V=c * torch.eye(d), beta=beta, **kw)  # noqa: E731
        t1 = data.draw(st.floats(5.0, 100.0))
    elif kind == "euclidean":
        A, V, beta = matrix_of(data.draw(HUGE_MATRIX), d), matrix_of(data.draw(HUGE_MATRIX), d), data.draw(FACTOR)
        model = lambda: models.Euclidean(A=A, V=V, beta=beta, **kw)  # noqa: E731
        t1 = data.draw(st.sampled_from([0.1, 1.0, 10.0]))
    else:  # A = huge I: query norms |beta A x|^2 past float32
        A, beta = matrix_of(data.draw(HUGE_MATRIX), d), data.draw(FACTOR)
        model = lambda: models.Sphere(A=A, beta=beta, **kw)  # noqa: E731
        t1 = data.draw(st.sampled_from([0.1, 1.0, 10.0]))
    m = outcome(model, OVERFLOW_NAMES)
    if m is None:
        return
    dt = data.draw(st.sampled_from([0.05, 0.2, 1.0]))
    # RuntimeError: an adaptive run out of max_steps, or whose step shrank below what t resolves
    sol = outcome(lambda: simulate(m, X, t1, method=method, dt=dt, max_steps=400), OVERFLOW_NAMES + ("simulate",),
                  (ValueError, FloatingPointError, RuntimeError), refused_clearly)
    hypothesis.event(f"{kind}, {method}: " + ("refused" if sol is None else "finite"))
    if sol is not None:
        assert sol.xs.dtype == torch.float32
        assert_finite(sol.xs, (sol.ts.shape[0],) + tuple(X.shape), f"simulate({kind}, {method}, t1={t1:g})")
