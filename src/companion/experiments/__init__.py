"""Experiments: one function per paper figure or theorem check, ``(profile, device) -> result dict``.

Chapters call them, and ``python -m companion run NAME`` reruns them. Register one with
:func:`experiment`; modules listed in ``_MODULES`` are imported lazily by :func:`registry`.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable

__all__ = ["Experiment", "experiment", "registry", "get"]

# Modules holding registered experiments (imported on demand so `import companion` stays light).
_MODULES: tuple[str, ...] = (
    "companion.experiments.introduction",
    "companion.experiments.stability",
    "companion.experiments.phase_transitions",
    "companion.experiments.low_temperature",
    "companion.experiments.spectral_selection",
    "companion.experiments.metastable",
    "companion.experiments.llm_probes",
)

_REGISTRY: dict[str, "Experiment"] = {}


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A registered experiment: ``func(profile="fast", device="cpu", **kw) -> dict``."""

    name: str
    chapter: str
    func: Callable[..., dict[str, Any]]
    description: str
    plot: Callable[..., Any] | None = None


def experiment(name: str, chapter: str, plot: Callable[..., Any] | None = None) -> Callable:
    """Decorator registering ``func`` under ``name`` (unique) for the CLI and the status page."""

    def deco(func: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        if name in _REGISTRY and _REGISTRY[name].func.__qualname__ != func.__qualname__:
            raise ValueError(f"experiment name {name!r} is already registered")
        doc = (func.__doc__ or "").strip().splitlines()
        _REGISTRY[name] = Experiment(name, chapter, func, doc[0] if doc else "", plot)
        return func

    return deco


def registry() -> dict[str, Experiment]:
    """Every registered experiment, importing the experiment modules that exist."""
    for m in _MODULES:
        try:
            importlib.import_module(m)
        except ModuleNotFoundError as e:
            if e.name != m:  # a real missing dependency inside an existing module
                raise
    return dict(sorted(_REGISTRY.items()))


def get(name: str) -> Experiment:
    """The experiment called ``name``; ValueError listing the known names otherwise."""
    reg = registry()
    if name not in reg:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(reg) or '(none)'}")
    return reg[name]
