"""How much the peer ratio owes to the tolerance grid (issue 32). Not a test: prints counts and ratios.

``bench/peers.py`` times each solver at the loosest tolerance of a half-decade grid whose largest final
error over the 200 trials is <= 1e-4 (float32). That error is not monotone in the tolerance: it is the
worst of 200 trajectories, each with its own step sequence, so a 5 % change of rtol can move it by a
factor 3 (the package's Tsitouras 5(4), max_trial norm: 4.2e-5 at rtol 10^-5.5 = 3.16e-6, 1.1e-4 at
3.0e-6). This script sweeps the same solvers on a finer grid, rtol = 10^(-k/8) from 1e-4 to 1e-7, and
reports per solver the field evaluations of

* the loosest tolerance meeting the goal (what a lucky grid point gives), and
* the loosest tolerance from which every tighter grid point meets it (what a user can rely on),

then the peer ratio each way, from whole runs at those tolerances timed as in peers.py: all solvers
taking turns in this process, the median of ``--rounds`` rounds.

Usage: python bench/peer_grid.py [--per-decade 8] [--rounds 5]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from companion import init
from peers import D, GOALS, N, V_DIAG, load, max_error, run_companion, solvers  # one copy of each


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-decade", type=int, default=8)
    ap.add_argument("--ref-rtol", type=float, default=1e-11)
    args = ap.parse_args()
    torch.set_num_threads(2)
    from companion.perf import tune_allocator

    tune_allocator()  # as peers.py: for every solver alike
    x0 = init.uniform_sphere(200, N, D, generator=torch.Generator().manual_seed(0))
    V64 = torch.diag(torch.tensor(V_DIAG, dtype=torch.float64))
    ref, _ = run_companion("tsit5", "max_trial", x0, V64, args.ref_rtol)
    xs, Vm = x0.float(), V64.float()
    goal, q = GOALS["float32"], args.per_decade
    grid = [10 ** (-k / q) for k in range(4 * q, 7 * q + 1)]
    table = solvers(False)
    picks = {}  # (solver, criterion) -> (rtol, evaluations)
    print(f"float32, goal: largest final error <= {goal:g}; rtol = 10^(-k/{q}) from 1e-4 to 1e-7 (atol = rtol / 100); "
          f"{load()}")
    for name, (is_package, run) in table.items():
        rows = []
        for r in grid:
            final, nfe = run(xs, Vm, r)
            rows.append((r, max_error(final, ref), int(nfe)))
        ok = [e <= goal for _, e, _ in rows]
        first = ok.index(True) if any(ok) else None
        steady = next((i for i in range(len(rows)) if all(ok[i:])), None)
        for crit, i in (("loosest", first), ("steady", steady)):
            if i is not None:
                picks[name, crit] = rows[i][0], rows[i][2]
        print(f"{name}: " + "; ".join(f"{r:.3g} {e:.1e} {n}" for r, e, n in rows), flush=True)
        print(f"  loosest meeting the goal: rtol {rows[first][0]:.3g}, {rows[first][2]} evaluations; from which all tighter "
              f"meet it: rtol {rows[steady][0]:.3g}, {rows[steady][2]} evaluations" if steady is not None else
              "  never meets the goal on this grid", flush=True)
    samples = {key: [] for key in picks}
    for _ in range(args.rounds):
        for (name, crit), (r, _) in picks.items():
            t = time.perf_counter()
            table[name][1](xs, Vm, r)
            samples[name, crit].append(time.perf_counter() - t)
    print(f"timed: median of {args.rounds} rounds, all taking turns; {load()}")
    for which, crit in (("loosest meeting the goal", "loosest"), ("all tighter meeting it", "steady")):
        med = {name: float(np.median(samples[name, c])) for name, c in samples if c == crit}
        for name, m in med.items():
            print(f"  {which}: {name:<28} rtol {picks[name, crit][0]:.3g}  nfe {picks[name, crit][1]:4d}  {m:.3f} s")
        pkg = min((m, n) for n, m in med.items() if table[n][0])
        peer = min((m, n) for n, m in med.items() if not table[n][0])
        print(f"{which}: best package {pkg[1]} {pkg[0]:.3f} s, best peer {peer[1]} {peer[0]:.3f} s: "
              f"peer / package = {peer[0] / pkg[0]:.2f}")


if __name__ == "__main__":
    main()
