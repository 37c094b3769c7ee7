"""The float64 attention field: the fused kernel against torch's float64 path (issue 32). Not a test: prints ratios.

For each shape (trials, n, d) of the papers' runs, one field evaluation of the sphere model
(A = V symmetric, per trial where the experiment has one matrix per trial, projected on the tangent
spaces; Euclidean, unprojected, for stability-prop31's shape) in float64 with ``backend="fused"``
against the faster of torch's ``"dense"`` and ``"blocked"`` paths (what "auto" took before), all
taking turns in one process (:func:`ensemble.interleaved_medians`; glibc tuned by
:func:`companion.perf.tune_allocator`, as the package's runs are), with their largest difference
relative to the field's scale. The dimensions 32 and 64 show where torch's GEMMs win again, which is
why ``attention._FUSED_MAX_D`` stops at 16 for float64.

Usage: python bench/fused64.py [--threads T] [--rounds R]
"""
from __future__ import annotations

import argparse
import os
import platform

import torch

from companion.attention import field_unchecked
from companion.perf import tune_allocator
from ensemble import interleaved_medians  # bench/ensemble.py, beside this script: one copy of the timer

# (label, trials, n, d, one matrix per trial, project)
SHAPES = (
    ("bench ensemble (paper C)", 200, 80, 3, False, True),
    ("metastable-sphere, one field", 4, 10_000, 3, False, True),
    ("stability-prop31 (Euclidean)", 400, 256, 8, True, False),
    ("stability-prop33 / mitigation", 337, 256, 12, True, True),
    ("d = 16", 16, 1000, 16, False, True),
    ("d = 24", 16, 1000, 24, False, True),
    ("d = 32, one trial", 1, 4000, 32, False, True),
    ("d = 64", 8, 512, 64, False, True),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tune_allocator()  # torch at its best: freed score arrays reused, not mapped afresh every call
    g = torch.Generator().manual_seed(0)
    print(f"float64 field, fused kernel against torch; {args.threads} threads, {platform.processor() or platform.machine()}, "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for label, T, n, d, per_trial, project in SHAPES:
        X = torch.nn.functional.normalize(torch.randn(T, n, d, generator=g, dtype=torch.float64), dim=-1)
        M = torch.randn(T if per_trial else 1, d, d, generator=g, dtype=torch.float64) / d**0.5
        M = (M + M.mT) / 2
        M = M if per_trial else M[0]
        # dense holds the (T, n, n) scores: left out above 2**27 of them (1 GiB of float64)
        backends = ("fused", "dense", "blocked") if T * n * n <= 2**27 else ("fused", "blocked")
        run = {bk: (lambda bk=bk: field_unchecked(X, M, M, 1.0, backend=bk, project=project)) for bk in backends}
        times = dict(zip(backends, interleaved_medians(list(run.values()), rounds=args.rounds, inner=1)))
        ref = run["blocked"]()
        scale = field_unchecked(X, M, M, 1.0, backend="blocked").abs().max()
        err = ((run["fused"]() - ref).abs().max() / scale.clamp(min=1.0)).item()
        best = min((b for b in backends if b != "fused"), key=times.get)
        print(f"{label:32s} {T:4d} x {n:5d} x d = {d:2d}: fused {times['fused'] * 1e3:8.2f} ms, torch "
              f"{times[best] * 1e3:8.2f} ms ({best}), torch / fused {times[best] / times['fused']:5.2f}, max diff {err:.1e}")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
