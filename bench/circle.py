"""Fast circle field (paper D, issue 9) against the pairwise n x n evaluation. Not a test: prints ratios.

1. N = 2e4 angles, beta = 5, float64, USA: the pairwise field (the official notebook's method,
   theta_i - theta_j, cos, exp, sin on an N x N array, here in row blocks so it fits in memory)
   once, against :func:`companion.circle.circle_field_fourier` (best of several), in this process;
   also against the pairwise field written as a matrix product (sphere form X X^T), a stronger
   baseline. Relative error of the fast field is printed too.
2. 1000 explicit Euler steps (dt = 1e-4) at N = 1e6, beta = 5, through
   :func:`companion.integrate.simulate` with the :class:`companion.circle.Circle` model, the median
   of ``--repeat`` runs. With ``--old-grid REV`` (19a7953: before the P = 7 kernels) the grid kernels of git revision REV
   (``companion/_circle_grid.py`` as it was there, loaded from ``git show``) take turns with the
   current ones in the same process: one field evaluation and the 1000 steps, old and new
   interleaved, so both see the same load. Issue 32's goal: 1000 steps in at most 5 s on 2 cores.

The fast field has two backends (:func:`companion.circle.circle_field_fourier`): "powers" (torch,
complex matrix products, any device) and "grid" (numba, CPU: a uniform grid and Taylor expansions).
The default, "auto", takes the grid on the CPU from 8192 tokens when numba is installed; both are
timed, and the 1000-step run uses the default (a shorter run times "powers").

Timings depend on the machine's load: the script prints wall and process CPU time, the torch thread
count (2 unless --threads, the CI machine's cores) and the load average. The last line is
``speedup <ratio>``: pairwise / fast wall time at N = 2e4 (each the best of several runs).

The time of one evaluation is set beside two floors measured here: the memory traffic it cannot
avoid (read the angles twice, write the field once: 24 bytes a token, timed as two sums and a copy
of the same arrays, so mostly from the L3 cache; out of cache this machine streamed ~9 GB/s, 2.7 ms
for the 24 MB) and the table traffic (2 P rows of 8 bytes a token, from L1/L2).

OpenMP: torch's CPU threads (GNU OpenMP) spin after each parallel operation, and on 2 cores the
spinning thread takes a core from the grid's numba threads: measured here (2026-12-02, load ~3.5)
1000 steps took 25.8 s in the default setting and 6.9 s with ``OMP_WAIT_POLICY=PASSIVE``, process CPU
22.9 s against 11.2 s. ``--omp-passive`` sets it for this run (it must be set before torch loads).

Usage: python bench/circle.py [--steps S] [--threads T] [--repeat R] [--old-grid REV] [--omp-passive] [--quick]
       (--quick: N = 5e3, 1e5, 50 steps)
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if "--omp-passive" in sys.argv:  # read by OpenMP when torch loads it: before the import
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

import torch  # noqa: E402

import companion.circle as C
from companion.circle import Circle, circle_field_dense, circle_field_fourier, fourier_truncation
from companion.init import uniform_angles
from companion.integrate import simulate
from companion.perf import tune_allocator


def timed(fn, repeat: int = 1):
    best_wall = best_cpu = float("inf")
    out = None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        best_wall = min(best_wall, time.perf_counter() - w)
        best_cpu = min(best_cpu, time.process_time() - c)
    return out, best_wall, best_cpu


def grid_module_at(rev: str):
    """companion._circle_grid as it was at git revision ``rev``, imported under another name (its numba
    kernels compiled into a temporary folder), so old and new kernels can be timed in one process."""
    root = Path(__file__).resolve().parent.parent
    src = subprocess.run(["git", "show", f"{rev}:src/companion/_circle_grid.py"], cwd=root, capture_output=True,
                         text=True, check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="circle_grid_")) / "circle_grid_old.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("circle_grid_old", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # numba's cache pickles the module name
    spec.loader.exec_module(mod)
    return mod


@contextlib.contextmanager
def using_grid(mod):
    """companion.circle's grid backend served by ``mod`` inside the block."""
    saved = C._circle_grid
    C._circle_grid = mod
    try:
        yield
    finally:
        C._circle_grid = saved


def _median_ms(samples: list) -> str:
    return f"{1e3 * statistics.median(samples):.1f}"


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).abs().max() / b.abs().max()).item()


def matmul_pairwise(theta: torch.Tensor, beta: float) -> torch.Tensor:
    """USA field through X X^T in row blocks: -(1/n) sum_j e^{beta <x_i, x_j>} <t_i, x_j>."""
    X = torch.cat([torch.cos(theta), torch.sin(theta)], dim=-1)[0]
    n = X.shape[0]
    T = torch.cat([-torch.sin(theta), torch.cos(theta)], dim=-1)[0]
    out = torch.empty(n, dtype=X.dtype)
    rows = max(1, (1 << 22) // n)
    for s in range(0, n, rows):
        E = torch.exp(beta * (X[s : s + rows] @ X.T - 1.0))
        out[s : s + rows] = ((E @ X) * T[s : s + rows]).sum(-1)
    return (math.exp(beta) * out / n).reshape(1, n, 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3, help="runs of the Euler steps (median)")
    ap.add_argument("--old-grid", default=None, help="git revision whose grid kernels take turns with the current ones")
    ap.add_argument("--omp-passive", action="store_true", help="OMP_WAIT_POLICY=PASSIVE: torch's idle threads sleep, not spin")
    args = ap.parse_args()
    torch.set_num_threads(args.threads or 2)
    print(f"tune_allocator applied: {tune_allocator()} (freed memory reused, not page-faulted in every step)")
    n1, n2, steps = (5_000, 100_000, 50) if args.quick else (20_000, 1_000_000, 1000)
    if args.steps:
        steps = args.steps
    beta = 5.0
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}")
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f} (2 cores; shared machine)")
    print(f"beta = {beta}, Fourier modes K = {fourier_truncation(beta)} (tail < 1e-16 I_0(beta))")

    g = torch.Generator().manual_seed(0)
    th = uniform_angles(1, n1, generator=g)
    algo = C._pick_backend("auto", th[..., 0])
    print(f"default backend at N = {n1} on this machine: {algo} (numba installed: {C._circle_grid.HAVE_NUMBA})")
    circle_field_fourier(th, beta, "usa")  # a first call compiles the grid kernels (or loads them from numba's cache)
    fast, fw, fc = timed(lambda: circle_field_fourier(th, beta, "usa"), repeat=20)
    pw, pww, pwc = timed(lambda: circle_field_fourier(th, beta, "usa", backend="powers"), repeat=20)
    dense, dw, dc = timed(lambda: circle_field_dense(th, beta, "usa"), repeat=2)
    mm, mw, mc = timed(lambda: matmul_pairwise(th, beta), repeat=2)
    rel = ((fast - dense).abs().max() / dense.abs().max()).item()
    rel_mm = ((mm - dense).abs().max() / dense.abs().max()).item()
    print(f"N = {n1}: pairwise (angles, official method) {dw:.3f} s wall / {dc:.3f} s cpu")
    print(f"N = {n1}: pairwise as matrix product (X X^T)   {mw:.3f} s wall / {mc:.3f} s cpu  (rel. diff {rel_mm:.1e})")
    print(f"N = {n1}: Fourier/Bessel, powers backend        {pww * 1e3:.2f} ms wall / {pwc * 1e3:.2f} ms cpu  "
          f"(rel. error vs pairwise {_rel(pw, dense):.1e})")
    print(f"N = {n1}: Fourier/Bessel, default ({algo:<6})       {fw * 1e3:.2f} ms wall / {fc * 1e3:.2f} ms cpu  (rel. error vs pairwise {rel:.1e})")
    print(f"ratio against the matrix-product baseline: {mw / fw:.0f}")

    th2 = uniform_angles(1, n2, generator=g)
    dt = 1e-4
    model = Circle(beta, "usa")
    powers = Circle(beta, "usa", backend="powers")
    one, one_w, one_c = timed(lambda: model.vector_field(0.0, th2), repeat=5)
    onep, onep_w, onep_c = timed(lambda: powers.vector_field(0.0, th2), repeat=5)
    print(f"N = {n2}: one field evaluation, default ({C._pick_backend('auto', th2[..., 0])}) {one_w * 1e3:.1f} ms wall / {one_c * 1e3:.1f} ms cpu; "
          f"powers {onep_w * 1e3:.1f} ms wall / {onep_c * 1e3:.1f} ms cpu (relative difference {_rel(one, onep):.1e})")
    sp = max(1, steps // 20)
    solp, spw, _ = timed(lambda: simulate(powers, th2, sp * dt, method="euler", dt=dt))
    print(f"N = {n2}: powers backend, {solp.stats['steps']} Euler steps in {spw:.1f} s wall "
          f"(extrapolated to 1000 steps: {spw * 1000 / solp.stats['steps']:.1f} s)")
    grids = {"new": C._circle_grid}
    if args.old_grid:
        grids[f"old ({args.old_grid})"] = grid_module_at(args.old_grid)
        with using_grid(grids[f"old ({args.old_grid})"]):
            old_one = model.vector_field(0.0, th2)  # compiles the old kernels
        print(f"N = {n2}: old grid kernels against the current ones: relative difference {_rel(old_one, one):.1e}")
    # one evaluation, old and new taking turns; then the floors it is measured against
    ev = {name: [] for name in grids}
    for _ in range(15):
        for name, mod in grids.items():
            with using_grid(mod):
                w = time.perf_counter()
                model.vector_field(0.0, th2)
                ev[name].append(time.perf_counter() - w)
    t2, o2 = th2[..., 0].clone(), torch.empty(1, n2, dtype=th2.dtype)
    floor = []
    for _ in range(15):
        w = time.perf_counter()
        t2.sum(), t2.sum(), o2.copy_(t2)  # the unavoidable traffic: angles read twice, field written once
        floor.append(time.perf_counter() - w)
    K = fourier_truncation(beta)
    M, P = C._circle_grid.grid_size(K, *C._bessel_coeffs(beta, K)[:1])
    print(f"N = {n2}: one grid evaluation, median of 15 interleaved: " + ", ".join(f"{k} {_median_ms(v)} ms" for k, v in ev.items())
          + f"; load average {os.getloadavg()[0]:.1f}")
    print(f"N = {n2}: floors: memory traffic 24 bytes a token ({24 * n2 / 2**20:.0f} MiB: two reads, one write; the same "
          f"arrays every repeat, so largely from the L3 cache, not DRAM) "
          f"{_median_ms(floor)} ms; tables {2 * P} rows of 8 bytes a token ({16 * P * n2 / 2**20:.0f} MiB from L1/L2, "
          f"M = {M}, P = {P}); evaluation / memory floor = {statistics.median(ev['new']) / statistics.median(floor):.1f}")
    # the 1000 steps, old and new taking turns, --repeat times
    runs = {name: [] for name in grids}
    for r in range(args.repeat):
        for name, mod in grids.items():
            with using_grid(mod):
                load0 = os.getloadavg()[0]
                sol, sw, sc = timed(lambda: simulate(model, th2, steps * dt, method="euler", dt=dt))
            runs[name].append((sw, sc, load0, os.getloadavg()[0]))
            print(f"N = {n2}: {name} grid, run {r + 1}: {sol.stats['steps']} Euler steps (dt = {dt}) in {sw:.2f} s wall / "
                  f"{sc:.2f} s cpu; load average {load0:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)
    for name, rs in runs.items():
        sw = statistics.median(r[0] for r in rs)
        print(f"N = {n2}: {name}, median of {len(rs)}: {steps} Euler steps in {sw:.2f} s wall / "
              f"{statistics.median(r[1] for r in rs):.2f} s cpu ({sw / steps * 1e3:.2f} ms a step; extrapolated "
              f"to 1000 steps: {sw * 1000 / steps:.2f} s); goal: 1000 steps in at most 5 s")
    th32 = th2.float()
    s32 = max(1, steps // 5)
    sol32, w32, _ = timed(lambda: simulate(model, th32, s32 * dt, method="euler", dt=dt))
    print(f"N = {n2}, float32 angles (the grid computes in float64, powers in complex64): {sol32.stats['steps']} Euler steps in {w32:.1f} s wall "
          f"(extrapolated to 1000 steps: {w32 * 1000 / sol32.stats['steps']:.1f} s)")
    print(f"ratio pairwise / fast at N = {n1}: wall {dw / fw:.0f}, process cpu {dc / fc:.0f}")
    print(f"speedup {dw / fw:.0f}")


if __name__ == "__main__":
    main()
