"""Every experiment honours its ``device`` argument; the CPU-vs-GPU comparison script works.

A GPU run (bench/gpu_experiments.py on an H200) found that the metastable experiments, two of
the depth-transition ones and parts of the introduction ignored ``device`` or drew their random
numbers on the device's generator (other numbers than on the CPU). These checks keep that from
coming back without a GPU: the source of each experiment must use ``device`` or say why not, and
random draws are made with CPU generators.
"""
from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from companion.experiments import registry

ROOT = Path(__file__).resolve().parents[1]


def _uses(func, name: str) -> bool:
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(tree))


@pytest.mark.parametrize("name", sorted(registry()))
def test_experiment_uses_its_device_or_says_why_not(name):
    func = registry()[name].func
    doc = func.__doc__ or ""
    assert _uses(func, "device") or "``device`` is accepted" in doc, (
        f"{name} ({func.__module__}.{func.__qualname__}) ignores its device argument")


@pytest.mark.parametrize("name", sorted(registry()))
def test_experiment_draws_random_numbers_on_the_cpu(name):
    """torch.Generator(device=...) draws other numbers on CUDA: a seed must mean one initial state."""
    src = inspect.getsource(inspect.getmodule(registry()[name].func))
    assert "Generator(device=" not in src


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
    from companion.experiments.phase_transitions import ScaleCappedRescaled

    g = torch.Generator().manual_seed(0)
    Z = torch.randn(3, 7, 2, generator=g, dtype=torch.float64)
    V = torch.diag(torch.tensor([1.0, 0.7], dtype=torch.float64))
    m = ScaleCappedRescaled(A=torch.eye(2, dtype=torch.float64), V=V)
    for t in (0.0, 2.5, 400.0):
        assert torch.equal(m.vector_field(t, Z), m.cast(Z).vector_field(t, Z))
