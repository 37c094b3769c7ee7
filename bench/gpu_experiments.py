"""Every registered experiment on the CPU and on CUDA in one process: does the GPU give the same numbers?

For each experiment (fast profile by default) the script runs ``func(profile, device="cpu")`` and
``func(profile, device="cuda")``, flattens both results the way ``python -m companion run`` saves
them (:func:`companion.encoding.flatten_result`) and compares them array by array:

- ``exact``: arrays bitwise equal (integers, counts, most booleans);
- ``close``: floating arrays whose largest difference is within ``rtol`` of the CPU array's largest
  entry, or below ``atol`` (many observables are errors at round-off level, e.g. a distance of
  1e-15 to a limit, which legitimately differ by O(1) relatively between devices);
- ``worst``: among the arrays whose difference exceeds ``atol``, the one with the largest relative
  difference, that difference and the array's scale.

It also records the peak CUDA memory the GPU run added: zero means the experiment never put a tensor
on the GPU (its ``device`` argument was ignored). Not a test: chaotic observables (exit times,
cluster counts at a threshold) may legitimately differ in the last bits and then beyond; the
report says where, so a reader can judge. Experiments are started only while ``--deadline``
seconds have not passed (a device lease is short); the rest are listed as not run.

Usage: python bench/gpu_experiments.py [--profile fast] [--device cuda] [--skip-chapter llm_probes] [--deadline 240]
       [--report PATH.json] [NAME ...]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from companion.registry import registry
from companion.gpu import cuda_summary, synchronize
from companion.provenance import atomic_write_bytes
from companion.encoding import flatten_result


def compare(cpu: dict[str, np.ndarray], gpu: dict[str, np.ndarray], rtol: float, atol: float = 0.0) -> dict:
    """Array-by-array agreement of two flattened results (same keys expected).

    Examples
    --------
    >>> r = compare({"a": np.array([1.0, 2.0]), "n": np.array(3), "e": np.array(1e-15)},
    ...             {"a": np.array([1.0, 2.0 + 1e-9]), "n": np.array(4), "e": np.array(2e-15)}, 1e-6, 1e-12)
    >>> r["exact"], r["close"], r["arrays"], r["worst_key"], r["differing"]
    (0, 2, 3, 'n', {'n': inf})
    """
    keys = sorted(set(cpu) | set(gpu))
    missing = [k for k in keys if k not in cpu or k not in gpu]
    exact = close = 0
    worst_key, worst, worst_scale = None, 0.0, 0.0
    differing: dict[str, float] = {}  # every array not within tolerance: its relative difference
    for k in keys:
        if k in missing:
            continue
        a, b = np.asarray(cpu[k]), np.asarray(gpu[k])
        if a.shape != b.shape:
            missing.append(k)
            continue
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            wide = np.complex128 if "c" in a.dtype.kind + b.dtype.kind else np.float64
            af, bf = a.astype(wide), b.astype(wide)
            fin = np.isfinite(af)
            # nan and inf must sit at the same places, with the same values
            same_nonfinite = np.array_equal(fin, np.isfinite(bf)) and np.array_equal(af[~fin], bf[~fin], equal_nan=True)
            scale = float(np.max(np.abs(af[fin]))) if fin.any() else 0.0
            diff = float(np.max(np.abs(af[fin] - bf[fin]))) if fin.any() and same_nonfinite else 0.0
            rel = (diff / scale if scale > 0 else diff) if same_nonfinite else float("inf")
            exact += bool(same_nonfinite and diff == 0.0)
            ok = bool(same_nonfinite and (rel <= rtol or diff <= atol))
            close += ok
            if not ok:
                differing[k] = rel
            if same_nonfinite and diff <= atol:
                continue  # round-off level: not a candidate for the worst array
        else:
            eq = bool(np.array_equal(a, b))
            rel = 0.0 if eq else float("inf")
            scale = float(np.max(np.abs(a))) if a.size and a.dtype.kind in "iub" else 0.0
            exact += eq
            close += eq
            if not eq:
                differing[k] = rel
        if rel > worst or worst_key is None:
            worst_key, worst, worst_scale = k, rel, scale
    return {"arrays": len(keys), "missing_or_reshaped": missing, "exact": exact, "close": close,
            "worst_key": worst_key, "worst_rel": worst, "worst_scale": worst_scale, "differing": differing}


def write_report(path: Path, args: argparse.Namespace, rows: list[dict]) -> None:
    """The rows so far as JSON, written atomically."""
    atomic_write_bytes(path, json.dumps({"accelerator": cuda_summary(), "torch": torch.__version__, "profile": args.profile,
                                         "rtol": args.rtol, "atol": args.atol, "rows": rows}, indent=1, default=str).encode())


def run_one(exp, profile: str, device: str) -> tuple[dict[str, np.ndarray], float]:
    synchronize(device)
    t = time.perf_counter()
    result = exp.func(profile=profile, device=device)
    synchronize(device)
    arrays, _ = flatten_result(result)
    return arrays, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="experiments (default: all registered)")
    ap.add_argument("--profile", default="fast", choices=("fast", "full"))
    ap.add_argument("--skip-chapter", action="append", default=[], help="chapters not to run (repeatable)")
    ap.add_argument("--deadline", type=float, default=240.0, help="start no experiment after this many seconds")
    ap.add_argument("--rtol", type=float, default=1e-6, help="relative tolerance of 'close' (default 1e-6)")
    ap.add_argument("--atol", type=float, default=1e-12, help="absolute tolerance of 'close' (default 1e-12)")
    ap.add_argument("--device", default="cuda", help="the device compared with the CPU (default cuda; 'cpu' checks the script itself)")
    ap.add_argument("--report", type=Path, default=None, help="write the per-experiment report as JSON here")
    args = ap.parse_args()
    print(f"gpu-experiments: accelerator: {cuda_summary()}; torch {torch.__version__}; {os.cpu_count()} CPUs")
    on_cuda = args.device.startswith("cuda")
    if on_cuda and not torch.cuda.is_available():
        print("gpu-experiments: SKIPPED: no CUDA device here (torch.cuda.is_available() is False)")
        return 0
    reg = registry()
    names = args.names or list(reg)
    unknown = [n for n in names if n not in reg]
    if unknown:
        ap.error(f"unknown experiment(s): {', '.join(unknown)}")
    t0 = time.perf_counter()
    rows: list[dict] = []
    for n in names:
        exp = reg[n]
        row: dict = {"name": n, "chapter": exp.chapter}
        if exp.chapter in args.skip_chapter:
            row["status"] = f"skipped (--skip-chapter {exp.chapter})"
        elif time.perf_counter() - t0 > args.deadline:
            row["status"] = f"not run (deadline {args.deadline:.0f} s passed)"
        else:
            try:
                cpu, row["cpu_s"] = run_one(exp, args.profile, "cpu")
                if on_cuda:  # peak above what was already allocated: what this experiment put on the GPU
                    torch.cuda.reset_peak_memory_stats()
                    base = torch.cuda.memory_allocated()
                gpu, row["gpu_s"] = run_one(exp, args.profile, args.device)
                row["gpu_peak_mib"] = (torch.cuda.max_memory_allocated() - base) / 2**20 if on_cuda else 0.0
                row.update(compare(cpu, gpu, args.rtol, args.atol))
                row["status"] = "ran" if row["gpu_peak_mib"] > 0 or not on_cuda else "ran, but nothing was put on the GPU"
            except Exception as e:  # report and go on: one broken experiment must not hide the others
                row["status"] = f"FAILED: {type(e).__name__}: {str(e)[:300]}"
        rows.append(row)
        if "cpu_s" in row and "arrays" in row:
            print(f"{n}: cpu {row['cpu_s']:.1f} s, gpu {row['gpu_s']:.1f} s, peak {row['gpu_peak_mib']:.1f} MiB; "
                  f"{row['exact']}/{row['arrays']} arrays exact, {row['close']}/{row['arrays']} close; "
                  f"worst {row['worst_key']} rel {row['worst_rel']:.1e} (scale {row['worst_scale']:.1e})"
                  + (f"; differing: {', '.join(row['differing'])}" if row["differing"] else "")
                  + (f"; missing or reshaped: {row['missing_or_reshaped']}" if row["missing_or_reshaped"] else "")
                  + ("" if row["status"] == "ran" else f" [{row['status']}]"), flush=True)
        else:
            print(f"{n}: {row['status']}", flush=True)
        if args.report:  # after every experiment: a lease that ends mid-run keeps what was measured
            write_report(args.report, args, rows)
    ran = [r for r in rows if "arrays" in r]
    failed = [r["name"] for r in rows if r["status"].startswith("FAILED")]
    print(f"gpu-experiments: {len(ran)} of {len(rows)} ran on both devices in {time.perf_counter() - t0:.0f} s; "
          f"{sum(r['close'] == r['arrays'] and not r['missing_or_reshaped'] for r in ran)} close in every array "
          f"(rtol {args.rtol:g}, atol {args.atol:g}); "
          f"{len(failed)} failed{': ' + ', '.join(failed) if failed else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
