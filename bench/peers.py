"""The ensemble against general ODE libraries at equal accuracy (issue 32, item 1). Not a test: prints ratios.

Same problem as ``bench/ensemble.py`` (200 trials x 80 tokens on S^2, beta = 1, V = diag(1, 0.5, -0.3),
uniform initial tokens, T = 10). The peers get the field as a user would write it in plain batched
torch (:func:`torch_field`: one score GEMM, torch's softmax, one value GEMM, the tangent projection)
and integrate it in the ambient space, as they would; every final state is renormalised before its
error is taken (the package's already is), so a peer is not charged for norm drift a user would remove.

For each solver and dtype the tolerances rtol = 10^(-k/2) (atol = rtol / 100, the same for all) are
swept from loose to tight; each run's maximum final error over ALL trials and entries against a
reference (float64 package dopri5 at rtol 1e-12, checked against torchdiffeq dopri5 at the same
tolerance: a second implementation) is recorded with its field evaluations and wall time. The
cheapest tolerance meeting the goal (max error <= 1e-4 in float32, <= 1e-6 in float64) is then
timed again, all solvers taking turns, as the median of ``--rounds`` rounds; the load average is
printed beside the numbers. The last line is ``peer ratio <r>``: the best peer's median time over the
package's, float32 at 1e-4.

Peers: torchdiffeq dopri5 (one step size for the batch, RMS norm over everything), torchode Tsit5 and
Dopri5 (per-trial step control: every trial its own step; default eager mode, no torch.compile).
diffrax is run only where jax is importable (it is not in this venv: skipped, and said so).

Install the peers first: ``make bench-deps`` (the ``bench`` extra of pyproject.toml, --no-deps to keep
the installed CPU torch).
Usage: python bench/peers.py [--quick] [--default-allocator] [--threads T] [--rounds R] [--out DIR --name FILE] [--dtypes ...] [--max-rtol R]
       (--quick: 40 trials; --out: write the JSON there, atomically; --help for the rest)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from companion import init, models, simulate
from companion.provenance import atomic_write_text
from ensemble import interleaved_medians  # bench/ensemble.py, beside this script: one copy of the timer

V_DIAG = (1.0, 0.5, -0.3)
BETA, T_END, N, D = 1.0, 10.0, 80, 3
GOALS = {"float32": 1e-4, "float64": 1e-6}


def torch_field(X: torch.Tensor, Vm: torch.Tensor, beta: float) -> torch.Tensor:
    """The spectral model's field in plain batched torch. X: (trials, n, d), Vm: (d, d) symmetric -> (trials, n, d).

    F_i = P_{x_i} sum_j softmax_j(beta <x_i, V x_j>) V x_j (V = V^T, so the queries are the values)."""
    q = X @ Vm
    w = torch.softmax(beta * (q @ X.mT), dim=-1)
    f = w @ q
    return f - (f * X).sum(-1, keepdim=True) * X


def _counted(fn):
    """fn wrapped to count its calls in ``.calls``."""
    def g(*a):
        g.calls += 1
        return fn(*a)
    g.calls = 0
    return g


def run_companion(method: str, error_norm: str, x0: torch.Tensor, Vm: torch.Tensor, rtol: float):
    """(final (trials, n, d), field evaluations) of the package's adaptive method."""
    sol = simulate(models.spectral(Vm.double(), BETA), x0, T_END, method=method, rtol=rtol, atol=rtol / 100,
                   error_norm=error_norm, max_steps=10**6)
    return sol.final, sol.stats["evaluations"]


def run_torchdiffeq(x0: torch.Tensor, Vm: torch.Tensor, rtol: float):
    import torchdiffeq

    f = _counted(lambda t, y: torch_field(y, Vm, BETA))
    ys = torchdiffeq.odeint(f, x0, torch.tensor([0.0, T_END], dtype=x0.dtype), method="dopri5", rtol=rtol, atol=rtol / 100)
    return ys[-1], f.calls


def run_torchode(method: str, x0: torch.Tensor, Vm: torch.Tensor, rtol: float):
    import torchode as to

    T = x0.shape[0]
    f = _counted(lambda t, y: torch_field(y.view(x0.shape), Vm, BETA).reshape(T, -1))
    term = to.ODETerm(f)
    step = {"tsit5": to.Tsit5, "dopri5": to.Dopri5}[method](term=term)
    solver = to.AutoDiffAdjoint(step, to.IntegralController(atol=rtol / 100, rtol=rtol, term=term))
    problem = to.InitialValueProblem(y0=x0.reshape(T, -1), t_start=torch.zeros(T, dtype=x0.dtype),
                                     t_end=torch.full((T,), T_END, dtype=x0.dtype))
    sol = solver.solve(problem)
    if not bool((sol.status == 0).all()):
        raise RuntimeError(f"torchode {method} at rtol {rtol:g}: status {sol.status.unique().tolist()}")
    return sol.ys[:, -1].view(x0.shape), f.calls


def solvers(have_jax: bool) -> dict:
    """name -> (is_package, run(x0, Vm, rtol) -> (final, evaluations))."""
    out = {
        "companion dopri5": (True, lambda x, V, r: run_companion("dopri5", "rms", x, V, r)),
        "companion tsit5": (True, lambda x, V, r: run_companion("tsit5", "rms", x, V, r)),
        "companion tsit5 max_trial": (True, lambda x, V, r: run_companion("tsit5", "max_trial", x, V, r)),
        "torchdiffeq dopri5": (False, run_torchdiffeq),
        "torchode tsit5": (False, lambda x, V, r: run_torchode("tsit5", x, V, r)),
        "torchode dopri5": (False, lambda x, V, r: run_torchode("dopri5", x, V, r)),
    }
    assert not have_jax, "diffrax is not wired in: jax was not installed when this was written"
    return out


def max_error(final: torch.Tensor, ref: torch.Tensor) -> float:
    final = final.double()
    return (final / final.norm(dim=-1, keepdim=True) - ref).abs().max().item()


def load() -> str:
    return "load average " + " ".join(f"{v:.1f}" for v in os.getloadavg())


def sweep(run, x0: torch.Tensor, Vm: torch.Tensor, ref: torch.Tensor, rtols: list[float], stop: float) -> list[dict]:
    """Run at each tolerance, loose to tight, until the error is <= stop. Rows: rtol, error, evaluations, seconds."""
    rows = []
    for r in rtols:
        t = time.perf_counter()
        final, nfe = run(x0, Vm, r)
        s = time.perf_counter() - t
        rows.append({"rtol": r, "error": max_error(final, ref), "evaluations": int(nfe), "seconds": s})
        if rows[-1]["error"] <= stop:
            break
    return rows


def write_json_atomic(path: Path, data: dict) -> None:
    """Write ``data`` to ``path`` atomically (the package's own writer), then read it back to check."""
    atomic_write_text(path, json.dumps(data, indent=1))
    assert json.loads(path.read_text()) == json.loads(json.dumps(data)), f"{path} does not read back"


def compare(x0: torch.Tensor, V64: torch.Tensor, ref: torch.Tensor, dtypes: list, *, rounds: int = 5,
            min_rtol: float = 1e-10, stop64: float = 1e-8, threads: int = 2, have_jax: bool = False,
            save=None, max_rtol: float = 1e-2) -> dict:
    """Sweep every solver's tolerances in each dtype, then time the cheapest meeting the goal, taking turns.

    x0: (trials, n, d) float64 tokens; ref: (trials, n, d) the float64 reference final state. Returns
    the JSON-ready record: ``sweeps`` (every run), ``chosen`` (with medians), ``ratios`` (best peer over
    best package, per dtype). ``save(data)``, if given, is called after each dtype (a partial record)."""
    table = solvers(have_jax)
    grid = [10 ** (-k / 2) for k in range(4, 21) if min_rtol * 0.999 <= 10 ** (-k / 2) <= max_rtol * 1.001]  # max_rtol .. min_rtol
    data = {"problem": {"trials": x0.shape[0], "n": N, "d": D, "beta": BETA, "V": list(V_DIAG), "T": T_END,
                        "threads": threads},
            "versions": {"torch": torch.__version__, "python": platform.python_version()},
            "load_start": os.getloadavg(), "sweeps": {}, "chosen": {}}
    for mod in ("torchdiffeq", "torchode"):
        data["versions"][mod] = __import__(mod).__version__ if hasattr(__import__(mod), "__version__") else "?"
    for dtype in dtypes:
        dname = str(dtype)[6:]
        xs, Vm = x0.to(dtype), V64.to(dtype)
        rtols = [r for r in grid if r >= 2 * torch.finfo(dtype).eps]
        stop = stop64 if dtype == torch.float64 else GOALS[dname]
        for name, (_, run) in table.items():
            rows = sweep(run, xs, Vm, ref, rtols, stop)
            data["sweeps"][f"{name} | {dname}"] = rows
            print(f"{dname} {name}: " + "; ".join(f"rtol {r['rtol']:.0e} err {r['error']:.1e} nfe {r['evaluations']} "
                                                  f"{r['seconds']:.2f} s" for r in rows) + f"; {load()}", flush=True)
        # the cheapest (loosest) tolerance meeting the goal, then all timed taking turns
        chosen = {}
        for name in table:
            ok = [r for r in data["sweeps"][f"{name} | {dname}"] if r["error"] <= GOALS[dname]]
            if ok:
                chosen[name] = ok[0]
        samples = {name: [] for name in chosen}
        for _ in range(rounds):
            for name, row in chosen.items():
                t = time.perf_counter()
                table[name][1](xs, Vm, row["rtol"])
                samples[name].append(time.perf_counter() - t)
        print(f"{dname}, max final error <= {GOALS[dname]:g}, median of {rounds} interleaved rounds; {load()}")
        for name, row in chosen.items():
            med = float(np.median(samples[name]))
            row = dict(row, median_s=med, samples_s=samples[name], per_eval_ms=1e3 * med / row["evaluations"])
            data["chosen"][f"{name} | {dname}"] = row
            print(f"  {name:<28} rtol {row['rtol']:.0e}  err {row['error']:.1e}  nfe {row['evaluations']:6d}  "
                  f"{med:7.3f} s  ({row['per_eval_ms']:.3f} ms an evaluation)", flush=True)
        data["complete"] = dtype == dtypes[-1]
        data["ratios"] = ratios_of(data, table)
        if save is not None:
            save(data)
    data["load_end"] = os.getloadavg()
    data["ratios"] = ratios_of(data, table, say=True)
    return data


def ratios_of(data: dict, table: dict, say: bool = False) -> dict:
    """Best peer's median time over the best package solver's, per dtype with timed runs."""
    ratios = {}
    for dname in [d for d in GOALS if any(k.endswith(d) for k in data["chosen"])]:
        got = {k.split(" | ")[0]: v for k, v in data["chosen"].items() if k.endswith(dname)}
        pkg = min((v["median_s"], k) for k, v in got.items() if table[k][0])
        peer = min(((v["median_s"], k) for k, v in got.items() if not table[k][0]), default=(math.nan, "none"))
        ratios[dname] = {"package": pkg[1], "package_s": pkg[0], "peer": peer[1], "peer_s": peer[0],
                         "ratio": peer[0] / pkg[0]}
        if say:
            print(f"{dname} at max error <= {GOALS[dname]:g}: best package {pkg[1]} {pkg[0]:.3f} s, best peer {peer[1]} "
                  f"{peer[0]:.3f} s: peer / package = {peer[0] / pkg[0]:.2f}")
    return ratios


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="40 trials (smoke run; the work-precision figure's data)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5, help="timing rounds of the chosen tolerances (median)")
    ap.add_argument("--out", type=Path, default=None, help="folder for the JSON (the work-precision data)")
    ap.add_argument("--name", default="peers.json", help="file name of the JSON in --out")
    ap.add_argument("--dtypes", default="float32,float64", help="comma-separated: float32, float64")
    ap.add_argument("--ref-rtol", type=float, default=1e-12, help="tolerance of the float64 reference")
    ap.add_argument("--ref-method", default="dopri5", choices=("dopri5", "tsit5"))
    ap.add_argument("--ref-cache", type=Path, default=None, help="a .pt file keeping the reference between runs")
    ap.add_argument("--check-ref", action="store_true", help="also compute the reference with torchdiffeq (a second "
                                                                "implementation) and print the difference")
    ap.add_argument("--min-rtol", type=float, default=1e-10, help="tightest tolerance of the sweep")
    ap.add_argument("--max-rtol", type=float, default=1e-2, help="loosest tolerance of the sweep (a float64 run for the "
                                                                 "1e-6 goal alone can start at 1e-4: looser ones all miss it)")
    ap.add_argument("--stop64", type=float, default=1e-8, help="float64 sweeps stop at this error (figure: 1e-8)")
    ap.add_argument("--default-allocator", action="store_true", help="leave glibc's allocator as it is (by default "
                    "tune_allocator is applied: process-wide, so the peers' torch fields reuse freed memory too)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if not args.default_allocator:
        from companion.perf import tune_allocator

        print(f"allocator tuned for every solver alike (companion.perf.tune_allocator): {tune_allocator()}")
    try:
        import jax  # noqa: F401

        have_jax = True
    except ImportError:
        have_jax = False
    trials = 40 if args.quick else 200
    x0 = init.uniform_sphere(trials, N, D, generator=torch.Generator().manual_seed(0))
    V64 = torch.diag(torch.tensor(V_DIAG, dtype=torch.float64))
    print(f"peers: {trials} trials x {N} tokens, d = {D}, beta = {BETA}, V = diag{V_DIAG}, T = {T_END}, "
          f"{args.threads} threads; {load()}")
    if not have_jax:
        print("diffrax: skipped (jax is not importable in this environment)")
    t = time.perf_counter()
    cache = args.ref_cache
    if cache is not None and cache.exists():
        stored = torch.load(cache)
        if stored["key"] != [trials, args.ref_method, args.ref_rtol]:
            raise SystemExit(f"{cache} holds the reference of {stored['key']}, not {[trials, args.ref_method, args.ref_rtol]}")
        ref, ref_nfe = stored["ref"], stored["evaluations"]
    else:
        ref, ref_nfe = run_companion(args.ref_method, "max_trial", x0, V64, args.ref_rtol)
        if cache is not None:
            torch.save({"key": [trials, args.ref_method, args.ref_rtol], "ref": ref, "evaluations": ref_nfe}, cache)
    t_ref = time.perf_counter() - t
    print(f"reference: float64 companion {args.ref_method} (max_trial norm) rtol {args.ref_rtol:g} ({t_ref:.1f} s, "
          f"{ref_nfe} evaluations)", flush=True)
    if args.check_ref:
        second, _ = run_torchdiffeq(x0, V64, args.ref_rtol)
        print(f"  max difference from float64 torchdiffeq dopri5 at rtol {args.ref_rtol:g}: {max_error(second, ref):.1e}")
    # the cost of one field evaluation alone, package against the plain torch field, taking turns
    field_ms = {}
    for dname in args.dtypes.split(","):
        dtype = getattr(torch, dname)
        X, Vm = x0.to(dtype), V64.to(dtype)
        m = models.spectral(V64, BETA).cast(X)
        t_pkg, t_torch = interleaved_medians([lambda: m.vector_field(0.0, X), lambda: torch_field(X, Vm, BETA)], rounds=15)
        print(f"one {dname} field evaluation, median of interleaved repeats: package {1e3 * t_pkg:.3f} ms, plain torch "
              f"{1e3 * t_torch:.3f} ms (torch / package {t_torch / t_pkg:.2f}); {load()}", flush=True)
        field_ms[dname] = {"package": 1e3 * t_pkg, "plain_torch": 1e3 * t_torch, "load": os.getloadavg()}

    extra = {"sweep": {"max_rtol": args.max_rtol, "min_rtol": args.min_rtol, "stop64": args.stop64, "rounds": args.rounds},
             "reference": {"method": args.ref_method, "error_norm": "max_trial", "rtol": args.ref_rtol,
                           "evaluations": ref_nfe, "seconds": t_ref}, "field_ms": field_ms}

    def save(data: dict) -> None:
        if args.out is not None:
            write_json_atomic(args.out / args.name, dict(data, **extra))
            print(f"wrote {args.out / args.name} (complete: {data.get('complete')})", flush=True)

    data = compare(x0, V64, ref, [getattr(torch, d) for d in args.dtypes.split(",")], rounds=args.rounds,
                   min_rtol=args.min_rtol, stop64=args.stop64, threads=args.threads, have_jax=have_jax, save=save,
                   max_rtol=args.max_rtol)
    save(data)
    ratios = data["ratios"]
    print(f"{load()}")
    for dname, r in ratios.items():
        print(f"peer ratio {dname} {r['ratio']:.2f}")
    first = next(iter(ratios.values()))
    print(f"peer ratio {first['ratio']:.2f}")


if __name__ == "__main__":
    main()
