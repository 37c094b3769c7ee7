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
from . import attention, init, metrics, models
from .integrate import Solution, simulate

__version__ = "0.1.0"
__all__ = ["attention", "init", "metrics", "models", "simulate", "Solution", "__version__"]
