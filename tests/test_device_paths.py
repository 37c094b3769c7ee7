"""Every experiment honours its ``device`` argument; the CPU-vs-GPU comparison script works.

A GPU run (bench/gpu_experiments.py on an H200) found that the metastable experiments, two of
the depth-transition ones and parts of the introduction ignored ``device`` or drew their random
numbers on the device's generator (other numbers than on the CPU). These checks keep that from
coming back without a GPU, by behaviour, not by reading the source: each experiment runs through
its public function with ``device="meta"`` (shapes without data, so it stops at the first
data-dependent step) and with ``device="cpu"``, every torch operation watched
(:class:`torch.utils._python_dispatch.TorchDispatchMode`). With "meta", more operations must touch
the meta device than with "cpu" (transformers builds its models on "meta" in both), no random
draw may happen there beyond what the "cpu" run draws there, and no ``torch.Generator`` may be
made for another device than the CPU.
"""
from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from companion.registry import registry

ROOT = Path(__file__).resolve().parents[1]
OPS_LIMIT = 3_000  # torch operations watched per run: an experiment that never reaches its device stops here
EXEMPT = "``device`` is accepted"  # what a docstring says when an experiment has no use for a device


class _Enough(Exception):
    """Raised from inside the watched run once it has shown what it does."""


def _on_meta(x) -> bool:
    return (isinstance(x, torch.Tensor) and x.device.type == "meta") or \
        (isinstance(x, torch.device) and x.type == "meta") or (isinstance(x, str) and x == "meta")


@dataclass
class Trace:
    """What a watched run did: per torch operation whether it touched "meta", the positions of the
    random draws on "meta", the devices of the generators it made, and how it ended."""

    meta: list[bool] = field(default_factory=list)
    draws: list[int] = field(default_factory=list)
    generators: list[str] = field(default_factory=list)
    ended: str = "returned"


class _Watch(TorchDispatchMode):
    def __init__(self, trace: Trace, stop):
        super().__init__()
        self.trace, self.stop = trace, stop

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        meta = any(_on_meta(x) for x in tree_leaves((args, kwargs)))
        if meta and torch.Tag.nondeterministic_seeded in func.tags:
            self.trace.draws.append(len(self.trace.meta))
        self.trace.meta.append(meta)
        if self.stop(self.trace):
            raise _Enough
        return func(*args, **kwargs)


def watch(run, device: str, stop, monkeypatch) -> Trace:
    """Run ``run(device)`` with every torch operation and every ``torch.Generator`` watched until
    ``stop(trace)`` says enough; "meta" is let through :func:`companion.gpu.resolve_device`."""
    import companion.gpu as gpu

    trace = Trace()
    real_resolve, real_generator = gpu.resolve_device, torch.Generator

    def resolve(device="cpu"):
        return "meta" if str(device) == "meta" else real_resolve(device)

    class Generator(real_generator):
        def __new__(cls, device="cpu"):
            trace.generators.append(str(device))
            return real_generator.__new__(cls, device)

    for m in list(sys.modules.values()):
        if getattr(m, "__name__", "").startswith("companion") and getattr(m, "resolve_device", None) is real_resolve:
            monkeypatch.setattr(m, "resolve_device", resolve)
    monkeypatch.setattr(torch, "Generator", Generator)
    try:
        with _Watch(trace, stop):
            run(device)
    except _Enough:
        trace.ended = f"stopped after {len(trace.meta)} operations"
    except Exception as e:  # most runs on "meta" end here, at their first data-dependent step
        trace.ended = f"{type(e).__name__}: {str(e)[:200]}"
    finally:
        monkeypatch.undo()
    return trace


def device_problems(run, monkeypatch, limit: int = OPS_LIMIT) -> list[str]:
    """What is wrong with how ``run(device)`` uses its device (empty when nothing is).

    The "cpu" run is the reference: it is watched until it does an operation off "meta" where the
    "meta" run did one on it (the device is used) and has passed the last draw of the "meta" run,
    or for as many operations as the "meta" run did.
    """
    on_meta = watch(run, "meta", lambda t: len(t.meta) >= limit, monkeypatch)
    last_draw = on_meta.draws[-1] + 1 if on_meta.draws else 0
    used = []

    def enough(t: Trace) -> bool:
        i = len(t.meta) - 1
        if i < len(on_meta.meta) and on_meta.meta[i] and not t.meta[i]:
            used.append(i)
        return len(t.meta) >= len(on_meta.meta) or (bool(used) and len(t.meta) >= last_draw)

    on_cpu = watch(run, "cpu", enough, monkeypatch)
    problems = []
    if not used and on_meta.ended.startswith("stopped") and limit < 10 * OPS_LIMIT:
        # Still in work done on "meta" whatever the device (an LLM's shape check builds the model on "meta"):
        # watch ten times longer before saying the device is ignored.
        return device_problems(run, monkeypatch, 10 * limit)
    if not used:
        problems.append(f"ignores its device: with device='meta' its first {len(on_meta.meta)} torch operations "
                        f"touched the meta device exactly where they did with device='cpu' ({sum(on_meta.meta)} "
                        f"times; the 'meta' run ended: {on_meta.ended})")
    cpu_draws = [i for i in on_cpu.draws if i < last_draw]
    if len(on_meta.draws) > len(cpu_draws):
        problems.append(f"draws random numbers on its device ({len(on_meta.draws)} draws on 'meta' with device='meta', "
                        f"{len(cpu_draws)} with device='cpu'): a seed must mean one initial state on every device")
    foreign = sorted({g for g in on_meta.generators + on_cpu.generators if torch.device(g).type != "cpu"})
    if foreign:
        problems.append(f"makes torch.Generator on {foreign}: a seed must mean one initial state on every device")
    return problems


@functools.lru_cache(maxsize=None)
def _doc(name: str) -> str:
    exp = registry()[name]
    return " ".join(f.__doc__ or "" for f in (exp.func, getattr(exp, "body", None)) if f is not None)


@pytest.mark.parametrize("name", sorted(registry()))
def test_experiment_runs_on_its_device_with_cpu_random_numbers(name, monkeypatch):
    if EXEMPT in _doc(name):
        pytest.skip(f"{name}: its docstring says {EXEMPT} and why it is not used")
    exp = registry()[name]
    problems = device_problems(lambda device: exp.func(profile="fast", device=device), monkeypatch)
    assert not problems, f"{name}: " + "; ".join(problems)


# The check itself, on small experiments that are wrong in each way it looks for.
def _honest(device="cpu"):
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0)).to(device)
    return (x * 2).sum().item()


def _deaf(device="cpu"):
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    return (x * 2).sum().item()


def _draws_on_device(device="cpu"):
    torch.manual_seed(0)
    return torch.randn(3, 4, device=device).sum().item()


def _generator_on_device(device="cpu"):
    try:
        torch.Generator(device=device)
    except RuntimeError:  # "meta" has no generator: the attempt is what counts
        pass
    return _honest(device)


def _generator_cuda_literal(device="cpu"):
    try:
        torch.Generator("cuda")
    except RuntimeError:  # no CUDA here: the attempt is what counts
        pass
    return _honest(device)


@pytest.mark.parametrize("run, problem", [
    (_honest, None),
    (_deaf, "ignores its device"),
    (_draws_on_device, "draws random numbers on its device"),
    (_generator_on_device, r"makes torch.Generator on \['meta'\]"),
    (_generator_cuda_literal, r"makes torch.Generator on \['cuda'\]"),
])
def test_the_device_check_catches_each_fault(run, problem, monkeypatch):
    problems = device_problems(run, monkeypatch)
    if problem is None:
        assert problems == []
    else:
        assert any(re.search(problem, p) for p in problems), problems


def test_compare_counts_exact_close_and_round_off(gpu_experiments):
    cmp = gpu_experiments.compare
    cpu = {"x": np.array([1.0, 2.0]), "k": np.array([3, 4]), "err": np.array(1e-15), "nan": np.array([np.nan, 1.0])}
    gpu = {"x": np.array([1.0, 2.0 + 1e-3]), "k": np.array([3, 4]), "err": np.array(3e-15), "nan": np.array([np.nan, 1.0])}
    r = cmp(cpu, gpu, rtol=1e-6, atol=1e-12)
    assert (r["arrays"], r["exact"], r["close"]) == (4, 2, 3)
    assert r["worst_key"] == "x" and r["worst_rel"] == pytest.approx(5e-4)
    assert list(r["differing"]) == ["x"]  # every array outside tolerance is named, not only the worst
    assert cmp({"a": np.zeros(2)}, {"a": np.zeros(3)}, 1e-6)["missing_or_reshaped"] == ["a"]
    assert cmp({"a": np.array([np.nan])}, {"a": np.array([0.0])}, 1e-6, 1.0)["close"] == 0  # nan against a number


def test_gpu_experiments_script_end_to_end_on_cpu(tmp_path):
    """--device cpu runs the same experiment twice in one process: every array must be bitwise equal."""
    report = tmp_path / "r.json"
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_experiments.py"), "--device", "cpu",
                          "--report", str(report), "spectral-two-tokens"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    (row,) = json.loads(report.read_text())["rows"]
    assert row["status"] == "ran" and row["arrays"] > 5 and row["exact"] == row["arrays"] and row["differing"] == {}, row


def test_scale_capped_model_caches_the_shift_bitwise():
    """cast() precomputes V - lambda_1 I and max lambda_1 once; the field must not change by a bit."""
    from companion.models import ScaleCappedRescaled

    g = torch.Generator().manual_seed(0)
    Z = torch.randn(3, 7, 2, generator=g, dtype=torch.float64)
    V = torch.diag(torch.tensor([1.0, 0.7], dtype=torch.float64))
    m = ScaleCappedRescaled(A=torch.eye(2, dtype=torch.float64), V=V)
    for t in (0.0, 2.5, 400.0):
        assert torch.equal(m.vector_field(t, Z), m.cast(Z).vector_field(t, Z))
