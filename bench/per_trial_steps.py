"""What a per-trial step size could save on the peer ensemble, at equal accuracy (issue 32). Not a test.

The package's adaptive methods give all trials one step size, fitted to the hardest trial at each
moment (``error_norm="max_trial"``) or to their RMS (``"rms"``). Each trial integrated alone at the
same tolerance takes its own steps; a per-trial step size with the finished trials dropped from the
batch would do the sum of those, not trials x the batch's. Counting steps alone overstates the gain:
a trial left to its own tolerance ends less accurate than in a batch whose steps the hardest trial
sets. So each trial alone and the batch are both judged as ``bench/peers.py`` judges them: the
largest final error over all trials against the float64 reference (tsit5, ``--ref-rtol``), the goal
1e-4 in float32, on the tolerance grid of peers.py (rtol = 10^(-k/2): its "3e-06" is 3.16e-6). The work compared is the attempted steps (each
6 field evaluations of one trial, FSAL) of the loosest tolerance meeting the goal on either side.

Problem, precision and peers' rounding of V to float32: as in ``bench/peers.py``. Counts and errors
do not depend on the machine beyond last bits. A few minutes on 2 cores (the reference included).

Usage: python bench/per_trial_steps.py [--halves 10,11,12] [--ref-rtol 1e-11]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from companion import init, models, simulate
from peers import BETA, D, GOALS, N, T_END, V_DIAG, max_error, run_companion  # bench/peers.py, beside this script: one copy


def attempts(sol) -> int:
    """Accepted plus rejected steps of a solution."""
    return sol.stats["steps"] + sol.stats["rejected"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--halves", default="10,11,12", help="tolerances rtol = 10^(-k/2) for these k, peers.py's grid "
                    "(atol = rtol / 100)")
    ap.add_argument("--ref-rtol", type=float, default=1e-11)
    args = ap.parse_args()
    torch.set_num_threads(2)
    x0 = init.uniform_sphere(200, N, D, generator=torch.Generator().manual_seed(0))
    V64 = torch.diag(torch.tensor(V_DIAG, dtype=torch.float64))
    ref, _ = run_companion("tsit5", "max_trial", x0, V64, args.ref_rtol)  # peers.py's reference
    x32 = x0.float()
    model = models.spectral(V64.float().double(), BETA)  # peers.py's run_companion: V rounded to float32
    goal = GOALS["float32"]
    print(f"{x0.shape[0]} trials x {N} tokens, float32, tsit5; reference float64 tsit5 rtol {args.ref_rtol:g}; "
          f"goal: largest final error <= {goal:g}")
    met = {}
    for rtol in (10 ** (-int(k) / 2) for k in args.halves.split(",")):
        run = dict(method="tsit5", rtol=rtol, atol=rtol / 100)
        alone = [simulate(model, x32[t:t + 1], T_END, **run) for t in range(x0.shape[0])]
        work = np.array([attempts(s) for s in alone])
        err = max(max_error(s.final, ref[t:t + 1]) for t, s in enumerate(alone))
        batch = simulate(model, x32, T_END, error_norm="max_trial", **run)
        berr = max_error(batch.final, ref)
        print(f"rtol {rtol:.3g}: trials alone attempt {work.min()}-{work.max()} steps (mean {work.mean():.1f}), largest "
              f"error {err:.2e}; the batch (max_trial) {attempts(batch)} steps, largest error {berr:.2e}", flush=True)
        for side, e, w in (("alone", err, work.mean()), ("batch", berr, attempts(batch))):
            if e <= goal and side not in met:
                met[side] = (rtol, w)
    if len(met) == 2:
        (ra, wa), (rb, wb) = met["alone"], met["batch"]
        print(f"at the goal: trials alone need rtol {ra:.3g} (mean {wa:.1f} steps), the batch rtol {rb:.3g} ({wb} steps): "
              f"a per-trial step size would do {wa / wb:.2f} of the batch's field work, at most {wb / wa:.2f}x faster")
    else:
        print(f"goal met by {sorted(met) or 'neither'} on this grid: widen --halves")


if __name__ == "__main__":
    main()
