"""Chapter kernels run with torch's and MKL's AVX2 code paths (book/_scripts/reference_arithmetic.py):
a reference made on an AVX2 machine then compares on an AVX-512 one."""
from __future__ import annotations

import doctest
import importlib.util
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
if "reference_arithmetic" in sys.modules:  # test_figures loads it by this name (refresh.py imports it)
    ra = sys.modules["reference_arithmetic"]
else:
    _spec = importlib.util.spec_from_file_location("reference_arithmetic", ROOT / "book" / "_scripts" / "reference_arithmetic.py")
    ra = importlib.util.module_from_spec(_spec)
    sys.modules["reference_arithmetic"] = ra
    _spec.loader.exec_module(ra)

X86 = platform.machine().lower() in ("x86_64", "amd64")


def test_doctests():
    result = doctest.testmod(ra)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.skipif(not X86, reason=f"the pin applies to x86-64 only, this is {platform.machine()}")
def test_torch_takes_the_pinned_code_path():
    env = ra.use_reference_arithmetic({k: v for k, v in os.environ.items() if k not in ra.PINNED})
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert out == "AVX2"


def test_every_kernel_start_pins_it():
    """nbval (the figure plugin), make refresh and the book build each set it before a kernel starts."""
    for script in ("nbval_figures.py", "refresh.py"):
        text = (ROOT / "book" / "_scripts" / script).read_text()
        assert "use_reference_arithmetic()" in text, script
    cfg = yaml.safe_load((ROOT / "book" / "_config.yml").read_text())
    assert "reference_arithmetic" in cfg["sphinx"]["local_extensions"]
