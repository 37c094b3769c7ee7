"""Memory and time of metastable-sphere's full profile at 4 trials (issue 32, item 4). Not a test: prints.

Each part runs in its own subprocess (glibc's default allocator, no MALLOC_ settings, 1 torch thread as
the experiment uses) and reports its peak resident set (ru_maxrss), as growth over the set before it:

* ``field``: one float64 RK4 step of the experiment's model (Sphere, A = V = I) on 4 trials x 1e4
  tokens: the attention field, blocked (at most 2**22 scores at once), O(n) memory a trial;
* ``energy``: ``metrics.harmonic_energy`` at 4 trials x 1e4 tokens, lmax 8: the addition theorem, the
  coefficients c_lm = (1/n) sum_i Y_lm(x_i), O(trials n lmax^2) work, O(trials n) memory;
* ``timing``: that function against the pairwise sum it replaced ((1/n^2) sum_ij P_l(<x_i, x_j>),
  the Gram matrix by blocks of rows, :func:`harmonic_energy_pairwise` below, kept here as the
  reference), 4 trials x 1e4 tokens, lmax 6, same process, with their largest relative difference;
* ``full`` (``--full``, ~10-20 minutes): the whole experiment body at its full profile with 4 trials,
  the process's peak resident set (imports included), wall and CPU time.

Usage: python bench/sphere_memory.py [--full]
"""
from __future__ import annotations

import os
import subprocess
import sys

PAIRWISE = '''
import torch
def harmonic_energy_pairwise(X, lmax, rows=256):
    """(1/n^2) sum_ij P_l(<x_i, x_j>) for l <= lmax, query rows in blocks: (trials, rows, n) at a time."""
    T, n, _ = X.shape
    out = torch.zeros(T, lmax + 1, dtype=X.dtype, device=X.device)
    for i in range(0, n, rows):
        G = (X[:, i:i + rows] @ X.transpose(-1, -2)).clamp_(-1.0, 1.0)
        p_prev, p = torch.ones_like(G), G
        out[:, 0] += p_prev.sum((-1, -2))
        out[:, 1] += p.sum((-1, -2))
        for l in range(1, lmax):
            p_prev, p = p, ((2 * l + 1) * G * p - l * p_prev) / (l + 1)
            out[:, l + 1] += p.sum((-1, -2))
    return out / n ** 2
'''

PRELUDE = '''
import resource, time, torch
torch.set_num_threads(1)
from companion import init, models, simulate
from companion.metrics.harmonics import harmonic_energy
X = init.uniform_sphere({trials}, {n}, 3, generator=torch.Generator().manual_seed(0))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
'''

PARTS = {
    "field": "sol = simulate(models.metastable(4.0), X, 0.01, method='rk4', dt=0.01); assert torch.isfinite(sol.final).all()",
    "energy": "E = harmonic_energy(X, 8)",
    "timing": (
        "t = time.perf_counter(); old = harmonic_energy_pairwise(X, 6); t_old = time.perf_counter() - t\n"
        "t_new = float('inf')\n"
        "for _ in range(5):\n"
        "    t = time.perf_counter(); new = harmonic_energy(X, 6); t_new = min(t_new, time.perf_counter() - t)\n"
        "print(t_old, t_new, ((new - old).abs() / old.abs()).max().item())"),
}

FULL = '''
import resource, time
from companion.registry import get
t, c = time.perf_counter(), time.process_time()
r = get("metastable-sphere").run("full", trials=4)
wall, cpu = time.perf_counter() - t, time.process_time() - c
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
print(r["config"]["n"], r["config"]["trials"], wall, cpu, peak, max(r["max_rel_err"]))
'''


def _run(code: str, timeout: int = 1800) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=timeout)
    return out.stdout.strip().splitlines()[-1].split()


def peak_gb(part: str, n: int = 10_000, trials: int = 4) -> float:
    """Growth of the peak resident set (GB) while ``part`` runs on ``trials`` x ``n`` uniform tokens."""
    code = PAIRWISE + PRELUDE.format(n=n, trials=trials) + PARTS[part] + (
        "\nprint((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 2**20)")
    return float(_run(code)[-1])


def timing(n: int = 10_000, trials: int = 4) -> tuple[float, float, float]:
    """Seconds of the pairwise sum (once) and of harmonic_energy (best of 5), lmax 6, and their largest
    relative difference."""
    t_old, t_new, diff = _run(PAIRWISE + PRELUDE.format(n=n, trials=trials) + PARTS["timing"])
    return float(t_old), float(t_new), float(diff)


def main() -> None:
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    f = peak_gb("field")
    print(f"field: one float64 RK4 step, 4 trials x 1e4 tokens: peak grew {f:.2f} GB")
    e = peak_gb("energy")
    print(f"harmonic_energy (addition theorem), 4 trials x 1e4 tokens, lmax 8: peak grew {e:.3f} GB")
    t_old, t_new, diff = timing()
    print(f"4 trials x 1e4 tokens, lmax 6, 1 thread: pairwise sum {t_old:.1f} s, addition theorem {t_new * 1e3:.0f} ms "
          f"({t_old / t_new:.0f}x); largest relative difference {diff:.1e}")
    if "--full" in sys.argv[1:]:
        n, trials, wall, cpu, peak, err = _run(FULL, timeout=7200)
        print(f"metastable-sphere full, n = {n}, {trials} trials: wall {float(wall):.0f} s, CPU {float(cpu):.0f} s, "
              f"peak resident set {float(peak):.2f} GB (whole process); worst relative rate error {float(err):.4f}")
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
