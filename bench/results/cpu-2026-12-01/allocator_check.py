"""One float32 field evaluation of the 200 x 80 ensemble (d = 3, torch path), glibc's default allocator
against companion.perf.tune_allocator: median time and minor page faults per call. One process per
variant (mallopt cannot be undone), MALLOC_*_THRESHOLD_ removed from the environment first."""
import os, resource, subprocess, sys, time

CHILD = r'''
import resource, sys, time
import numpy as np, torch
from companion.attention import attention_field
from companion.perf import tune_allocator
torch.set_num_threads(2)
tuned = sys.argv[1] == "tuned"
if tuned:
    assert tune_allocator()
g = torch.Generator().manual_seed(0)
X = torch.randn(200, 80, 3, generator=g); X = X / X.norm(dim=-1, keepdim=True)
V = torch.diag(torch.tensor([1.0, 0.5, -0.3]))
f = lambda: attention_field(X, V, V, 1.0, backend="dense")
for _ in range(20): f()
ts, faults = [], []
for _ in range(30):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt; t = time.perf_counter()
    for _ in range(10): f()
    ts.append((time.perf_counter() - t) / 10); faults.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 10)
print(f"{'tune_allocator' if tuned else 'glibc default'}: {np.median(ts) * 1e3:.2f} ms a field (median of 30 x 10 calls), "
      f"{np.median(faults):.0f} minor page faults a call")
'''
env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
print(f"python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f} before the runs")
for variant in ("default", "tuned", "default", "tuned"):
    out = subprocess.run([sys.executable, "-c", CHILD, variant], env=env, capture_output=True, text=True)
    print(out.stdout.strip() or out.stderr[-500:])
print(f"load average {os.getloadavg()[0]:.1f} after")
