"""companion: self-attention as interacting particles, the package behind the book.

Simulators for every particle model of the four papers (batched over trials, CPU or GPU
through torch), closed-form theory, metrics, and LLM probes.
"""
__version__ = "0.1.0"
