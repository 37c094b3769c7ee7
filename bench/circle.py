"""Fast circle field (paper D, issue 9) against the pairwise n x n evaluation. Not a test: prints ratios.

1. N = 2e4 angles, beta = 5, float64, USA: the pairwise field (the official notebook's method,
   theta_i - theta_j, cos, exp, sin on an N x N array, here in row blocks so it fits in memory)
   once, against :func:`companion.circle.circle_field_fourier` (best of several), in this process;
   also against the pairwise field written as a matrix product (sphere form X X^T), a stronger
   baseline. Relative error of the fast field is printed too.
2. 1000 explicit Euler steps (dt = 1e-4) at N = 1e6, beta = 5, through
   :func:`companion.integrate.simulate` with the :class:`companion.circle.Circle` model.

The fast field has two backends (:func:`companion.circle.circle_field_fourier`): "powers" (torch,
complex matrix products, any device) and "grid" (numba, CPU: a uniform grid and Taylor expansions).
The default, "auto", takes the grid on the CPU from 8192 tokens when numba is installed; both are
timed, and the 1000-step run uses the default (a shorter run times "powers").

Timings depend on the machine's load: the script prints wall and process CPU time, the torch thread
count (2 unless --threads, the CI machine's cores) and the load average. The last line is
``speedup <ratio>``: pairwise / fast wall time at N = 2e4 (each the best of several runs).

Usage: python bench/circle.py [--steps S] [--threads T] [--quick]   (--quick: N = 5e3, 1e5, 50 steps)
"""
from __future__ import annotations

import argparse
import math
import os
import time

import torch

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
    args = ap.parse_args()
    torch.set_num_threads(args.threads or 2)
    print(f"tune_allocator applied: {tune_allocator()} (freed memory reused, not page-faulted in every step)")
    n1, n2, steps = (5_000, 100_000, 50) if args.quick else (20_000, 1_000_000, 1000)
    if args.steps:
        steps = args.steps
    beta = 5.0
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
    sol, sw, sc = timed(lambda: simulate(model, th2, steps * dt, method="euler", dt=dt))
    print(f"N = {n2}: default backend, {sol.stats['steps']} Euler steps (dt = {dt}) in {sw:.1f} s wall / {sc:.1f} s cpu"
          f" (extrapolated to 1000 steps: {sw * 1000 / sol.stats['steps']:.1f} s wall)")
    print(f"N = {n2}: {sw / sol.stats['steps'] * 1e3:.1f} ms a step; goal: 1000 steps under 60 s")
    th32 = th2.float()
    s32 = max(1, steps // 5)
    sol32, w32, _ = timed(lambda: simulate(model, th32, s32 * dt, method="euler", dt=dt))
    print(f"N = {n2}, float32 angles (the grid computes in float64, powers in complex64): {sol32.stats['steps']} Euler steps in {w32:.1f} s wall "
          f"(extrapolated to 1000 steps: {w32 * 1000 / sol32.stats['steps']:.1f} s)")
    print(f"ratio pairwise / fast at N = {n1}: wall {dw / fw:.0f}, process cpu {dc / fc:.0f}")
    print(f"speedup {dw / fw:.0f}")


if __name__ == "__main__":
    main()
