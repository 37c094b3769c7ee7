"""How many steps each trial of the peer ensemble needs on its own, against the batch's (issue 32). Not a test.

The package's adaptive methods give all trials one step size, fitted to the hardest trial at each
moment (``error_norm="max_trial"``) or to their RMS (``"rms"``). Each trial integrated alone at the
same tolerance needs its own number of steps; a per-trial step size with the finished trials dropped
from the batch would do the sum of those, not trials x the batch's steps. This script counts both on
``bench/peers.py``'s problem (float32, Tsitouras 5(4)), which bounds what such a controller could
save in field work (counts only: independent of the machine). It runs every ``--every``-th trial
alone (default 1: all 200; a few minutes on 2 cores).

Usage: python bench/per_trial_steps.py [--every K] [--rtols 1e-6,3e-6]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from companion import init, models, simulate
from peers import BETA, D, N, T_END, V_DIAG  # bench/peers.py, beside this script: one copy of the problem


def steps(model, x0: torch.Tensor, rtol: float, norm: str = "rms") -> int:
    """Accepted steps of tsit5 over [0, T_END] at rtol (atol = rtol / 100, as in peers.py)."""
    return simulate(model, x0, T_END, method="tsit5", rtol=rtol, atol=rtol / 100, error_norm=norm).stats["steps"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=1, help="run every K-th trial alone")
    ap.add_argument("--rtols", default="1e-6,3e-6")
    args = ap.parse_args()
    x0 = init.uniform_sphere(200, N, D, generator=torch.Generator().manual_seed(0)).float()
    model = models.spectral(torch.diag(torch.tensor(V_DIAG, dtype=torch.float64)), BETA)
    alone = list(range(0, x0.shape[0], args.every))
    print(f"{x0.shape[0]} trials x {N} tokens, float32, tsit5; {len(alone)} trials run alone")
    for rtol in (float(r) for r in args.rtols.split(",")):
        each = np.array([steps(model, x0[t:t + 1], rtol) for t in alone])
        batch = steps(model, x0, rtol, "max_trial")
        print(f"rtol {rtol:g}: alone min {each.min()}, median {np.median(each):g}, mean {each.mean():.1f}, max {each.max()} "
              f"steps; the batch (max_trial norm) {batch}: per-trial steps with finished trials dropped would do "
              f"{each.mean() / batch:.2f} of the batch's field work")


if __name__ == "__main__":
    main()
