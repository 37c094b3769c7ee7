"""`make gpu-check`: the GPU-only tests and a short CPU-vs-GPU benchmark, in one command (< 5 min).

1. pytest tests/test_gpu.py (the ``gpu``-marked tests need CUDA; the sdpa-vs-dense ones run anyway);
2. the 200-trial ensemble of paper C Figure 2 (200 trials x 80 tokens on S^2, beta = 1,
   V = diag(1, 0.5, -0.3), RK4, dt = 0.1, float64): RK4 steps per second on the CPU and on the GPU;
3. n = 1e5 tokens on S^2 (Q = K = V = I, beta = 1, float32, Euler): steps per second on the GPU,
   the field through torch's fused attention (scaled_dot_product_attention, scale = beta).

Last line: ``speedup <ratio>`` = GPU over CPU steps per second on the ensemble, same process.
Without CUDA it says so and exits 0 (nothing else to do). Not a test: it prints numbers.

Usage: python bench/gpu_check.py [--skip-tests]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

from companion import init, models, simulate
from companion.gpu import cuda_summary, synchronize

ROOT = Path(__file__).resolve().parents[1]


def steps_per_second(model, x0, dt: float, steps: int, method: str, device: str) -> float:
    """Fixed-step steps per second, after one warm-up step (kernel selection, allocator)."""
    simulate(model, x0, dt, method=method, dt=dt)
    synchronize(device)
    t = time.perf_counter()
    sol = simulate(model, x0, steps * dt, method=method, dt=dt)
    synchronize(device)
    el = time.perf_counter() - t
    assert torch.isfinite(sol.final).all(), "non-finite state"
    return steps / el


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skip-tests", action="store_true")
    args = ap.parse_args()
    print(f"gpu-check: accelerator: {cuda_summary()}")
    if not torch.cuda.is_available():
        print("gpu-check: SKIPPED: no CUDA device here (torch.cuda.is_available() is False). "
              "On a GPU machine install the CUDA build of the pinned torch, e.g. "
              "`.venv/bin/pip install \"torch==2.13.0+cu128\" --index-url https://download.pytorch.org/whl/cu128` "
              "(the +cu128 label matters: plain torch==2.13.0 is already satisfied by the CPU build; see README, GPU notes), "
              "then run `make gpu-check` again.")
        return 0
    rc = 0
    if not args.skip_tests:
        print("gpu-check: pytest tests/test_gpu.py", flush=True)
        rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(ROOT / "tests" / "test_gpu.py")], cwd=ROOT)
        print(f"gpu-check: tests exit status {rc}", flush=True)

    # The 200-trial ensemble, CPU (all cores) vs GPU, float64 as the chapters run it.
    torch.set_num_threads(os.cpu_count() or 1)
    V = torch.diag(torch.tensor([1.0, 0.5, -0.3], dtype=torch.float64))
    x0 = init.uniform_sphere(200, 80, 3, generator=torch.Generator().manual_seed(0))
    model = models.spectral(V, 1.0)
    cpu = steps_per_second(model, x0, 0.1, 50, "rk4", "cpu")
    gpu = steps_per_second(model, x0.cuda(), 0.1, 200, "rk4", "cuda")
    print(f"ensemble 200 x 80 on S^2, float64 RK4: cpu {cpu:.1f} steps/s ({torch.get_num_threads()} threads), gpu {gpu:.1f} steps/s")

    # n = 1e5 on the sphere: the attention field through sdpa (auto picks it for float32 on CUDA).
    n = 100_000
    xl = init.uniform_sphere(1, n, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float32).cuda()
    torch.cuda.reset_peak_memory_stats()
    big = steps_per_second(models.metastable(1.0), xl, 0.01, 10, "euler", "cuda")
    peak = torch.cuda.max_memory_allocated() / 2**20
    print(f"n = 1e5 tokens on S^2, float32 Euler: {big:.2f} steps/s on the GPU (peak memory {peak:.0f} MiB; dense scores would need {n * n * 4 / 2**30:.0f} GiB)")
    print(f"speedup {gpu / cpu:.2f}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
