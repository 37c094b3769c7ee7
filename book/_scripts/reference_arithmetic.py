"""The arithmetic every chapter kernel runs with (nbval, ``make refresh``, the book build): on x86-64,
torch's own CPU kernels and MKL take their AVX2 code paths, whatever vector extensions the machine has.

Why: a reference notebook is made on one machine and compared on another. In float64, torch's
AVX-512 and AVX2 kernels (reductions, exp, softmax) differ in their last bits, and the 12-step LoRA
run of the LLM chapter's CI check carries that into its third digit: Align at the last checkpoint
0.99584 with AVX-512 against 0.99540 with AVX2, the update norm 4.21975 against 4.21963
(SmolLM2-135M, float64, 2026-12-02). MKL's own choice of code path moved the same number by 1e-8
(``MKL_CBWR``, its conditional numerical reproducibility). Pinned, the two kinds of machine compute
the same numbers; a variable already set is left as the user set it.

A reader who runs a chapter in their own Jupyter gets their machine's native kernels: the
fast-profile numbers may then differ from the book's in the third digit, the stored paper-scale
results not at all (they are loaded, not recomputed).
"""
from __future__ import annotations

import os
import platform

__all__ = ["PINNED", "use_reference_arithmetic", "setup"]

# torch reads ATEN_CPU_CAPABILITY once, when it is imported; MKL reads MKL_CBWR when it starts.
PINNED = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}
_X86 = ("x86_64", "amd64", "x64")


def use_reference_arithmetic(env: dict | None = None, machine: str | None = None) -> dict:
    """Set :data:`PINNED` in ``env`` (default this process's environment, which every kernel started
    later inherits) on x86-64 ``machine`` (default this one), leaving variables already set; return ``env``.

    Examples
    --------
    >>> use_reference_arithmetic({}, "x86_64") == PINNED
    True
    >>> use_reference_arithmetic({"MKL_CBWR": "COMPATIBLE"}, "x86_64")["MKL_CBWR"]
    'COMPATIBLE'
    >>> use_reference_arithmetic({}, "aarch64")
    {}
    """
    env = os.environ if env is None else env
    machine = platform.machine() if machine is None else machine
    if machine.lower() in _X86:
        for key, value in PINNED.items():
            env.setdefault(key, value)
    return env


def setup(app) -> dict:
    """Sphinx extension (book/_config.yml): the chapters the book build executes use the reference arithmetic."""
    use_reference_arithmetic()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
