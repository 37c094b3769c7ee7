"""Peak memory of metastable-sphere's full profile at 4 trials (issue 32, item 4). Not a test: prints GB.

Each part runs in its own subprocess (glibc's default allocator, no MALLOC_ settings) and reports the
growth of its peak resident set (ru_maxrss) over the set before it:

* ``field``: one float64 RK4 step of the experiment's model (Sphere, A = V = I) on 4 trials x 1e4
  tokens: the attention field, blocked (at most 2**22 scores at once), O(n) memory a trial;
* ``energy_gram``: today's ``metrics.harmonic_energy`` (a (trials, n, n) Gram matrix and two Legendre
  arrays of that size), measured at n = 2500 and 4 trials only (at n = 1e4 it needs ~20 GB, more than
  this shared machine may take), with its n^2 scaling to 1e4 printed beside it;
* ``energy_blocked``: the same energies by blocks of query rows (:func:`harmonic_energy_blocked`, a
  proposal for ``metrics/harmonics.py``), at n = 1e4 and 4 trials, checked against the Gram version
  at n = 2500.

Usage: python bench/sphere_memory.py
"""
from __future__ import annotations

import os
import subprocess
import sys

BLOCKED = '''
import torch
def harmonic_energy_blocked(X, lmax, rows=256):
    """(1/n^2) sum_ij P_l(<x_i, x_j>) for l <= lmax, query rows in blocks: (trials, rows, n) at a time."""
    T, n, _ = X.shape
    out = torch.zeros(T, lmax + 1, dtype=X.dtype, device=X.device)
    for i in range(0, n, rows):
        G = (X[:, i:i + rows] @ X.transpose(-1, -2)).clamp_(-1.0, 1.0)
        p_prev, p = torch.ones_like(G), G
        out[:, 0] += p_prev.sum((-1, -2))
        if lmax >= 1:
            out[:, 1] += p.sum((-1, -2))
        for l in range(1, lmax):
            p_prev, p = p, ((2 * l + 1) * G * p - l * p_prev) / (l + 1)
            out[:, l + 1] += p.sum((-1, -2))
    return out / n ** 2
'''

PRELUDE = '''
import resource, torch
torch.set_num_threads(2)
from companion import init, models, simulate
from companion.metrics.harmonics import harmonic_energy
X = init.uniform_sphere({trials}, {n}, 3, generator=torch.Generator().manual_seed(0))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
'''

PARTS = {
    "field": "sol = simulate(models.metastable(4.0), X, 0.01, method='rk4', dt=0.01); assert torch.isfinite(sol.final).all()",
    "energy_gram": "E = harmonic_energy(X, 8)",
    "energy_blocked": "E = harmonic_energy_blocked(X, 8)",
}


def peak_gb(part: str, n: int, trials: int) -> float:
    code = BLOCKED + PRELUDE.format(n=n, trials=trials) + PARTS[part] + (
        "\nprint((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 2**20)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=1800)
    return float(out.stdout.strip().splitlines()[-1])


def agreement(n: int = 2500, trials: int = 4) -> float:
    """Largest |blocked - Gram| energy difference at n tokens (a second computation of the same sums)."""
    code = BLOCKED + PRELUDE.format(n=n, trials=trials) + (
        "print((harmonic_energy_blocked(X, 8, rows=300) - harmonic_energy(X, 8)).abs().max().item())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    print(f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    f = peak_gb("field", 10_000, 4)
    print(f"field: one float64 RK4 step, 4 trials x 1e4 tokens: peak grew {f:.2f} GB")
    g = peak_gb("energy_gram", 2500, 4)
    print(f"harmonic_energy (Gram), 4 trials x 2500 tokens: peak grew {g:.2f} GB; x16 for 1e4 tokens: ~{16 * g:.0f} GB")
    b = peak_gb("energy_blocked", 10_000, 4)
    print(f"harmonic_energy_blocked, 4 trials x 1e4 tokens: peak grew {b:.2f} GB")
    print(f"blocked against Gram at 2500 tokens: max difference {agreement():.1e}")


if __name__ == "__main__":
    main()
