"""companion: self-attention as interacting particles, the package behind the book.

Simulators for every particle model of the four papers (batched over trials, CPU or GPU
through torch), closed-form theory, metrics, and LLM probes.

Examples
--------
>>> import torch, companion
>>> x0 = companion.init.uniform_sphere(2, 16, 3, generator=torch.Generator().manual_seed(0))
>>> sol = companion.simulate(companion.models.metastable(beta=1.0), x0, 1.0, dt=0.1)
>>> sol.xs.shape
torch.Size([2, 2, 16, 3])
"""
import importlib
from typing import Any

__version__ = "0.1.0"
__all__ = ["attention", "init", "metrics", "models", "simulate", "Solution", "__version__"]
# Loaded on first use (PEP 562), so that `python -m companion --help` or `--version` does not import torch.
_MODULES = ("attention", "init", "metrics", "models")
_FROM_INTEGRATE = ("simulate", "Solution")


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _FROM_INTEGRATE:
        return getattr(importlib.import_module(".integrate", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
