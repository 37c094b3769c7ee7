"""Experiments: one function per paper figure or theorem check, ``(profile, device) -> result dict``.

Chapters call them, and ``python -m companion run NAME`` reruns them. Register one with
:func:`experiment` and its figure with :func:`plots`; modules listed in ``_MODULES`` are imported
lazily by :func:`registry`.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable

__all__ = ["Experiment", "experiment", "plots", "registry", "get"]

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


def _chain(first: Callable[..., Any], then: Callable[..., Any]) -> Callable[..., Any]:
    def both(result: dict[str, Any]) -> None:
        first(result)
        then(result)

    both.__name__ = both.__qualname__ = f"{getattr(first, '__name__', 'plot')}+{getattr(then, '__name__', 'plot')}"
    return both


def plots(name: str) -> Callable:
    """Decorator making ``plot(result)`` draw the figure of the registered experiment ``name``.

    ``python -m companion run`` calls it with the experiment's result and saves every figure it
    opens. Stacked on several plot functions of one experiment, they are all drawn, in order.

    Examples
    --------
    >>> @experiment("_doc-square", chapter="_doc")
    ... def square(profile="fast", device="cpu", x=3.0):
    ...     "x squared."
    ...     return {"y": x * x}
    >>> @plots("_doc-square")
    ... def plot_square(result, ax=None):
    ...     pass
    >>> get("_doc-square").plot is plot_square
    True
    >>> del _REGISTRY["_doc-square"]
    """

    def deco(plot: Callable[..., Any]) -> Callable[..., Any]:
        if name not in _REGISTRY:
            raise ValueError(f"plots({name!r}): no experiment of that name is registered yet (register it first)")
        exp = _REGISTRY[name]
        _REGISTRY[name] = dataclasses.replace(exp, plot=plot if exp.plot is None else _chain(exp.plot, plot))
        return plot

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
