"""Same bits before and after a change to ``simulate``: record its outputs over a grid of cases, then check. Not a test.

Every model class of :mod:`companion.models` (and :class:`companion.circle.Circle`, and a model written
from the protocol alone) x every method x fixed steps (two dt, one of which does not divide the save
intervals) and adaptive settings (tolerances, both error norms, fsal on/off/default) x save options
(none, a grid, a grid ending before t1, repeated and t0-valued times, a tensor, t0 != 0) x float32
and float64, on small ensembles (2 trials, 5 tokens, d = 3). A case stores its saved times and states,
its stats and config, the warnings it raised, or the exception it ended with (type and message);
``check`` asks each stored output to be :func:`torch.equal` (and byte-equal) to the new one (a NaN
where the stored one has one) and every other field to be equal. A few cases run with the compiled stage sums off and with the
progress bar on, and a few ask for the guards' errors (step budgets, stiffness, a singular field).

With ``--experiments`` it records and checks, instead, the result arrays of every registered
experiment's fast profile on the CPU (the LLM chapter's left out: they need a local language model;
``--skip`` leaves out more): every stored result is computed through ``simulate``.

Why a script under ``bench/`` and not a test: the stored bits are those of this machine and its
torch, numba and BLAS builds, so they cannot be a portable test; they are a refactoring guard, run
by hand around a change (record with the old code, check with the new). The tests that do travel
(``tests/test_integrate_solvers.py``) check every model x method against independent references.

Usage (the old code first: a checkout of the revision before the change, first on the path)::

    git worktree add /tmp/old REV
    PYTHONPATH=/tmp/old/src python bench/simulate_bits.py record /tmp/simulate_bits.pt
    PYTHONPATH=src python bench/simulate_bits.py check /tmp/simulate_bits.pt

About half a minute on one core; ``--experiments`` about a minute, and 3 more for the four longest
(spectral-rho-min, phase-eps-sweep, stability-prop33, metastable-official).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
import warnings

import torch

import companion
import companion._rk as R
from companion import circle, models, simulate

F32, F64 = torch.float32, torch.float64
T, N, D = 2, 5, 3


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _sym(seed: int, scale: float = 1.0) -> torch.Tensor:
    G = torch.randn(D, D, generator=_gen(seed), dtype=F64)
    return scale * (G + G.T) / 2


def _mat(seed: int, scale: float = 1.0) -> torch.Tensor:
    return scale * torch.randn(D, D, generator=_gen(seed), dtype=F64)


def _sphere_x(seed: int) -> torch.Tensor:
    return torch.nn.functional.normalize(torch.randn(T, N, D, generator=_gen(seed), dtype=F64), dim=-1)


class Decay:
    """x' = -x + sin(t), written from the protocol alone (no companion class)."""

    on_sphere = False

    def validate(self, X):
        return X

    def cast(self, X):
        return self

    def vector_field(self, t, X):
        return -X + math.sin(t)


def model_cases() -> list[tuple[str, object, torch.Tensor]]:
    """(name, model, x0 in float64) for every model class that simulate runs."""
    xs, xe = _sphere_x(1), torch.randn(T, N, D, generator=_gen(2), dtype=F64)
    Vpath = torch.stack([_sym(3), _sym(4), _sym(5)])
    B = _mat(6) + 2 * torch.eye(D, dtype=F64)
    out = [
        ("euclidean", models.Euclidean(A=_mat(7, 0.5), V=_sym(8, 0.5)), xe),
        ("euclidean-usa-causal", models.Euclidean(A=_mat(7, 0.5), V=_sym(8, 0.5), normalization="usa", causal=True), xe),
        ("rescaled", models.Rescaled(A=_mat(9, 0.5), V=_sym(10, 0.5)), xe),
        ("scale-capped", models.ScaleCappedRescaled(A=_sym(11), V=_sym(12, 0.5), t_cap=0.5), xe),
        ("sphere", models.Sphere(A=_mat(13), V=_sym(14), beta=2.0), xs),
        ("sphere-dense", models.Sphere(A=_mat(13), V=_sym(14), beta=2.0, backend="dense"), xs),
        ("sphere-usa", models.Sphere(A=_mat(13, 0.3), V=_sym(14), beta=1.5, normalization="usa"), xs),
        ("sphere-causal", models.Sphere(V=_sym(15), beta=3.0, causal=True), xs),
        ("sphere-per-trial", models.Sphere(A=torch.stack([_mat(16), _mat(17)]), V=_sym(18), beta=1.0), xs),
        ("metastable", models.metastable(4.0), xs),
        ("zero-temperature", models.ZeroTemperature(B=B, V=_sym(19)), xs),
        ("multihead", models.MultiHead((models.Sphere(V=_sym(20), beta=1.0), models.Sphere(A=_mat(21), V=_sym(22), beta=2.0)),
                                       combine="mean"), xs),
        ("time-varying", models.TimeVarying(times=(0.0, 0.4, 1.0), V=Vpath, beta=2.0), xs),
        ("time-varying-euclidean", models.TimeVarying(times=(0.0, 0.4, 1.0), V=Vpath, A=Vpath, geometry="euclidean"), xe),
        ("hardmax", models.HardmaxAttention(B=B, V=_sym(23)), xs),
        ("modal", models.ModalModel(torch.tensor([1.0, 0.3, -0.5], dtype=F64), beta=2.0), xs),
        ("circle-usa", circle.Circle(3.0), torch.rand(T, 2 * N, 1, generator=_gen(24), dtype=F64) * 6.0),
        ("circle-softmax-dense", circle.Circle(3.0, "softmax", backend="dense"),
         torch.rand(T, 2 * N, 1, generator=_gen(25), dtype=F64) * 6.0),
        ("protocol-only", Decay(), xe),
    ]
    return out


SAVES = {
    "none": dict(),
    "grid": dict(save_at=[0.0, 0.25, 0.5, 0.75, 1.0]),
    "early": dict(save_at=[0.0, 0.3, 0.6]),  # ends before t1
    "repeats": dict(save_at=(0.0, 0.0, 0.35, 0.35, 1.0)),
    "tensor": dict(save_at=torch.linspace(0.0, 1.0, 4)),
    "t0": dict(t0=0.2, save_at=[0.2, 0.55, 1.0]),
}
FIXED = {"dt0.1": dict(dt=0.1), "dt0.07": dict(dt=0.07)}
ADAPTIVE = {
    "default": dict(),
    "loose": dict(rtol=1e-4, atol=1e-6, dt=0.5),
    "max-trial": dict(rtol=1e-5, atol=1e-7, error_norm="max_trial"),
    "fsal-on": dict(rtol=1e-6, atol=1e-8, fsal=True),
    "fsal-off": dict(rtol=1e-6, atol=1e-8, fsal=False),
}
METHODS = ("euler", "rk4", "dopri5", "tsit5")


def cases():
    """(key, callable) for every case; the callable runs simulate."""
    for name, model, x0 in model_cases():
        for dtype in (F32, F64):
            x = x0.to(dtype)
            for method in METHODS:
                settings = FIXED if method in ("euler", "rk4") else ADAPTIVE
                for sname, skw in settings.items():
                    saves = SAVES if sname in ("dt0.1", "default", "fsal-on") else {k: SAVES[k] for k in ("grid", "t0")}
                    for vname, vkw in saves.items():
                        kw = dict(method=method, **skw, **vkw)
                        yield f"{name}/{str(dtype)[6:]}/{method}/{sname}/{vname}", (lambda m=model, x=x, kw=kw: simulate(m, x, 1.0, **kw))
    yield from special_cases()


def special_cases():
    """The guards' errors and warnings, rejected steps, long runs, the torch stage sums, the progress bar."""
    xs = _sphere_x(30)
    V = torch.diag(torch.tensor([2.0, -1.0, 0.5], dtype=F64))
    stiff = models.Euclidean(V=-1e8 * torch.eye(D, dtype=F64))
    big = models.Sphere(V=1e3 * torch.diag(torch.tensor([1.0, -1.0, 0.5], dtype=F64)))

    class Singular(Decay):
        def vector_field(self, t, X):
            return X if t < 0.5 else X * float("inf")

    sp = models.Sphere(V=V, beta=4.0)
    yield "special/fixed-budget", lambda: simulate(sp, xs, 1.0, dt=1e-5, max_steps=1000)
    yield "special/fixed-budget-grid", lambda: simulate(sp, xs, 1.0, dt=0.3, save_at=torch.linspace(0, 1, 11), max_steps=10)
    yield "special/stability-warning", lambda: simulate(sp, xs, 10.0, method="rk4", dt=1.0)
    yield "special/stability-warning-euler", lambda: simulate(models.Sphere(V=V), xs, 1.2, method="euler", dt=0.6)
    yield "special/stability-hard", lambda: simulate(sp, xs, 20.0, method="rk4", dt=10.0)
    yield "special/stability-saves", lambda: simulate(sp, xs, 1.0, method="rk4", dt=10.0, save_at=[0.0, 0.25, 0.5, 0.75, 1.0])
    yield "special/multihead-warning", lambda: simulate(models.MultiHead((sp, sp)), xs, 1.0, method="euler", dt=0.5)
    yield "special/no-step", lambda: simulate(sp, xs, 0.0)
    yield "special/no-step-dopri5", lambda: simulate(sp, xs, 0.0, method="dopri5")
    yield "special/time-stops", lambda: simulate(stiff, xs, 1e9 + 1.0, t0=1e9, method="dopri5", max_steps=2000)
    yield "special/max-steps", lambda: simulate(stiff, xs, 1.0, method="dopri5", max_steps=100)
    yield "special/stiff-projection", lambda: simulate(stiff, xs, 1.0, method="tsit5", max_steps=30_000)
    yield "special/stiff-fits", lambda: simulate(stiff, xs, 1e-4, method="dopri5", save_at=[0.0, 1e-4])
    yield "special/first-step-overflows", lambda: simulate(big, xs, 0.05, method="dopri5", max_steps=20_000)
    yield "special/first-step-overflows-tsit5", lambda: simulate(big, xs.float(), 0.05, method="tsit5", max_steps=20_000)
    yield "special/singular", lambda: simulate(Singular(), xs, 1.0, method="dopri5", max_steps=1000)
    yield "special/singular-floor", lambda: simulate(Singular(), xs, 0.5 + 1e-10, method="dopri5")
    yield "special/singular-at-t0", lambda: simulate(Singular(), xs, 1.0, t0=0.6, method="tsit5")
    yield "special/kernel-refuses-at-t0", lambda: simulate(models.Euclidean(), xs.float() * 1e20, 1.0, method="tsit5")
    yield "special/singular-fixed", lambda: simulate(Singular(), xs, 1.0, method="rk4", dt=0.1)
    yield "special/rtol-roundoff", lambda: simulate(sp, xs, 1.0, method="dopri5", rtol=1e-300, atol=1e-300)
    yield "special/rtol-roundoff32", lambda: simulate(sp, xs.float(), 1.0, method="tsit5", rtol=1e-8)
    yield "special/tiny-atol", lambda: simulate(sp, xs, 0.5, method="dopri5", rtol=1e-8, atol=1e-300)
    for method in METHODS:
        yield f"special/outgrows-float32/{method}", lambda m=method: simulate(models.Euclidean(), xs.float(), 50.0, method=m)
        yield f"special/grows-float64/{method}", lambda m=method: simulate(models.Euclidean(), xs, 50.0, method=m)
    yield "special/overflow-rejected", lambda: simulate(models.Euclidean(V=-50.0 * torch.eye(3)), xs.float() * 1e17, 0.2,
                                                        method="dopri5", dt=1.0, rtol=1e-6, atol=1.0)
    yield "special/overflow-rejected-tsit5", lambda: simulate(models.Euclidean(V=-50.0 * torch.eye(3)), xs.float() * 1e17, 0.2,
                                                              method="tsit5", dt=1.0, rtol=1e-6, atol=1.0)
    yield "special/long-tsit5", lambda: simulate(models.metastable(9.0), xs, 30.0, method="tsit5", rtol=1e-9, atol=1e-11,
                                                 save_at=torch.linspace(0, 30, 7))
    yield "special/long-dopri5-32", lambda: simulate(models.metastable(9.0), xs.float(), 30.0, method="dopri5", rtol=1e-6,
                                                     atol=1e-8, save_at=torch.linspace(0, 30, 7))
    yield "special/many-trials-max-trial", lambda: simulate(models.Sphere(V=V), _big_x(), 2.0, method="tsit5", error_norm="max_trial",
                                                            rtol=1e-6, atol=1e-8)
    yield "special/negative-t", lambda: simulate(sp, xs, -0.5, t0=-2.0, method="tsit5")
    yield "special/n-d-input", lambda: simulate(sp, xs[0], 1.0, method="dopri5")
    for method in METHODS:
        yield f"special/progress/{method}", lambda m=method: _quiet(lambda: simulate(sp, xs, 1.0, method=m, progress=True,
                                                                                     save_at=[0.0, 0.5, 1.0]))
        yield f"special/torch-sums/{method}", lambda m=method: _no_numba(lambda: simulate(sp, xs.float(), 1.0, method=m, rtol=1e-5))
    yield "special/bad-method", lambda: simulate(sp, xs, 1.0, method="rk45")
    yield "special/bad-norm", lambda: simulate(sp, xs, 1.0, method="tsit5", error_norm="max")
    yield "special/bad-fsal", lambda: simulate(sp, xs, 1.0, method="tsit5", fsal=1)
    yield "special/bad-save", lambda: simulate(sp, xs, 1.0, save_at=[0.0, 2.0])
    yield "special/bad-save-order", lambda: simulate(sp, xs, 1.0, save_at=[0.5, 0.2])
    yield "special/bad-t1", lambda: simulate(sp, xs, -1.0)


def _big_x() -> torch.Tensor:
    return torch.nn.functional.normalize(torch.randn(40, 6, 3, generator=_gen(31), dtype=F64), dim=-1)


def _quiet(call):
    with contextlib.redirect_stderr(io.StringIO()):
        return call()


def _no_numba(call):
    was = R.HAVE_NUMBA
    R.HAVE_NUMBA = False
    try:
        return call()
    finally:
        R.HAVE_NUMBA = was


class _Result:
    """An experiment's flattened result, told apart from a Solution."""

    def __init__(self, fields: dict):
        self.fields = fields


def run_case(call) -> dict:
    """What a case gives: its solution's fields or its error, and its warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            sol = call()
        except Exception as err:  # noqa: BLE001 - an error is an outcome to compare
            out = {"error": (type(err).__name__, str(err))}
        else:
            out = sol.fields if isinstance(sol, _Result) else {"ts": sol.ts, "xs": sol.xs, "stats": dict(sol.stats),
                                                                "config": dict(sol.config)}
    out["warnings"] = [(w.category.__name__, str(w.message), w.filename.rsplit("/", 1)[-1]) for w in caught]
    return out


def _equal(x: torch.Tensor, y) -> bool:
    """Same dtype, shape and bytes, and torch.equal (a NaN, which torch.equal never finds equal, where the
    other has one: the bytes compare them)."""
    if not (isinstance(y, torch.Tensor) and x.dtype == y.dtype and x.shape == y.shape):
        return False
    if x.is_floating_point() or x.is_complex():
        nan = torch.isnan(x)
        if not torch.equal(nan, torch.isnan(y)):
            return False
        x, y, same_bytes = x[~nan], y[~nan], x.cpu().numpy().tobytes() == y.cpu().numpy().tobytes()
    else:
        same_bytes = x.cpu().numpy().tobytes() == y.cpu().numpy().tobytes()
    return same_bytes and torch.equal(x, y)


def _same(a: dict, b: dict) -> list[str]:
    """What differs between two outcomes of one case (empty when the same)."""
    bad = []
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            bad.append(f"{k} only in one")
        elif isinstance(a[k], torch.Tensor):
            if not _equal(a[k], b[k]):
                bad.append(f"{k} differs")
        elif a[k] != b[k]:
            bad.append(f"{k}: {a[k]!r} != {b[k]!r}")
    return bad


def experiment_cases(skip: set[str]):
    """(key, callable) for every registered experiment's fast profile on the CPU but the LLM chapter's
    (they need a local language model) and those in ``skip``; the callable returns its result, flattened."""
    from companion import registry

    for name, exp in sorted(registry.registry().items()):
        if not name.startswith("llm-") and name not in skip:
            yield f"experiment/{name}", (lambda e=exp: _flat(e.run("fast", "cpu"), "result."))


def _flat(result, prefix: str = "") -> dict:
    """A result dict's leaves by dotted key: tensors and arrays as CPU tensors, the rest as they are."""
    import numpy as np

    out = {}
    for k, v in (result.items() if isinstance(result, dict) else enumerate(result)):
        key = f"{prefix}{k}"
        if isinstance(v, (dict, list, tuple)) and any(isinstance(x, (dict, list, tuple, np.ndarray, torch.Tensor))
                                                      for x in (v.values() if isinstance(v, dict) else v)):
            out.update(_flat(v, key + "."))
        elif isinstance(v, torch.Tensor):
            out[key] = v.detach().cpu()
        elif isinstance(v, np.ndarray) and v.dtype.kind in "biufc":
            out[key] = torch.from_numpy(np.ascontiguousarray(v))
        else:
            out[key] = repr(v)  # repr: a NaN equals itself, a float keeps all its digits
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("record", "check"))
    ap.add_argument("path", help="the stored outcomes (torch.save file)")
    ap.add_argument("--experiments", action="store_true", help="the registered experiments' fast profiles instead "
                    "(their result arrays), less the LLM chapter's")
    ap.add_argument("--skip", default="", help="experiments left out, comma-separated (with --experiments)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"companion from {companion.__file__}; torch {torch.__version__}; numba {R.HAVE_NUMBA}", file=sys.stderr)
    if args.experiments:
        outcomes = {}
        for key, call in experiment_cases(set(filter(None, args.skip.split(",")))):
            outcomes[key] = run_case(lambda c=call: _Result(c()))
            print(key, file=sys.stderr)
    else:
        outcomes = {key: run_case(call) for key, call in cases()}
    errors = sum("error" in o for o in outcomes.values())
    if args.mode == "record":
        torch.save(outcomes, args.path)
        print(f"recorded {len(outcomes)} cases ({errors} ending in an error) to {args.path}")
        return
    stored = torch.load(args.path, weights_only=False)
    bad = {k: _same(stored[k], outcomes[k]) for k in stored if k in outcomes}
    bad = {k: v for k, v in bad.items() if v}
    missing = sorted(set(stored) ^ set(outcomes))
    tensors = sum(isinstance(v, torch.Tensor) for o in outcomes.values() for v in o.values())
    print(f"checked {len(outcomes)} cases ({errors} ending in an error, {tensors} tensors): "
          f"{len(outcomes) - len(bad) - len(missing)} the same, {len(bad)} different, {len(missing)} in one run only")
    for k, v in list(bad.items())[:20]:
        print(f"  {k}: {'; '.join(v)[:400]}")
    for k in missing[:20]:
        print(f"  only in one run: {k}")
    sys.exit(1 if bad or missing else 0)


if __name__ == "__main__":
    main()
