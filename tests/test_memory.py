"""Memory of the blocked attention field at large n (issue 10: linear in n, one evaluation < 1 GB).

Runs in a subprocess without the Makefile's allocator settings (glibc's defaults, as a user gets
them) and under an address-space limit, so a regression fails here instead of exhausting the
machine. The regression this guards against: per-block results held for a final torch.cat
fragmented the heap, and at n = 8e4 resident memory grew by 16 MB a block to 14.8 GB.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

CODE = """
import resource, torch
torch.set_num_threads(2)
from companion.attention import attend
X = torch.nn.functional.normalize(torch.randn(1, {n}, 3, generator=torch.Generator().manual_seed(0)), dim=-1)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
F = attend(X, X, X, 1.0, backend="blocked")
assert F.shape == (1, {n}, 3) and bool(torch.isfinite(F).all())
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 2**20)
"""


def test_blocked_field_memory_stays_flat_over_many_blocks():
    n = 80_000  # 1,540 blocks of 2**22 scores (16 MB each)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    limit = 3 * 2**30  # address space: torch itself maps ~1.5 GB

    def cap():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    out = subprocess.run([sys.executable, "-c", CODE.format(n=n)], capture_output=True, text=True, env=env,
                         preexec_fn=cap, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    grew_gb = float(out.stdout.strip())
    # two reused (1, 52, 8e4) float32 workspaces are 33 MB; allow the allocator its slack
    assert grew_gb < 0.5, f"peak resident memory grew by {grew_gb:.2f} GB during one blocked field evaluation"


SPHERE_CODE = """
import resource, torch
torch.set_num_threads(2)
from companion import init, models
X = init.uniform_sphere(4, 10_000, 3, generator=torch.Generator().manual_seed(0))
f = models.metastable(4.0).cast(X).vector_field
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
F = f(0.0, X)
assert F.shape == X.shape and F.dtype == torch.float64 and bool(torch.isfinite(F).all())
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 2**20)
"""


@pytest.mark.slow
def test_float64_sphere_field_at_metastable_scale_is_blocked():
    # metastable-sphere's full profile (n = 1e4) with 4 trials: the dense (4, 1e4, 1e4) float64 scores
    # alone would be 3.2 GB (two such arrays: 6.4 GB); the blocked field holds two (4, 104, 1e4) blocks
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", SPHERE_CODE], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    grew_gb = float(out.stdout.strip())
    assert grew_gb < 0.5, f"one float64 field evaluation of 4 x 1e4 tokens grew peak memory by {grew_gb:.2f} GB"
