"""Experiments: one function per paper figure or theorem check, ``(profile, device) -> result dict``.

Chapters call them, and ``python -m companion run NAME`` reruns them. Register one with
:func:`experiment`, its figure with :func:`plots` and, for the heavy ones, the function computing
one point of its sweep with :func:`sweep_point` (``python -m companion sweep NAME`` maps it over a
grid on Dask); modules listed in ``_MODULES`` are imported lazily by :func:`registry`.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any, Callable

__all__ = ["Experiment", "experiment", "plots", "sweep_point", "registry", "get"]

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
    """A registered experiment: ``func(profile="fast", device="cpu", **kw) -> dict``.

    ``plot(result)`` draws its figures; ``point(profile, device, **point) -> dict`` computes one
    point of the sweep the experiment is made of, ``assemble(points) -> dict`` turns the results
    of a list of points into the experiment's result, and ``grid(profile) -> list of points`` is the
    grid the experiment itself computes (all three None when it has no sweep).
    """

    name: str
    chapter: str
    func: Callable[..., dict[str, Any]]
    description: str
    plot: Callable[..., Any] | None = None
    point: Callable[..., dict[str, Any]] | None = None
    assemble: Callable[[list[dict[str, Any]]], dict[str, Any]] | None = None
    grid: Callable[[str], list[dict[str, Any]]] | None = None


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


def sweep_point(name: str, assemble: Callable[[list[dict[str, Any]]], dict[str, Any]],
                grid: Callable[[str], list[dict[str, Any]]]) -> Callable:
    """Decorator registering ``point(profile="fast", device="cpu", **params) -> dict`` as the
    computation of one grid point of the registered experiment ``name``, ``assemble`` as the
    function that turns a list of point results back into the experiment's result, and
    ``grid(profile)`` as the experiment's own list of points in that profile.

    The experiment itself should be ``assemble([point(profile, device, **p) for p in grid(profile)])``,
    so that ``python -m companion sweep NAME --profile full`` (one point per Dask task,
    :func:`companion.sweep.run_sweep`) computes the same numbers as ``run NAME --profile full``,
    only distributed; ``--grid`` axes sweep other points.

    Examples
    --------
    >>> def xs(profile):
    ...     return [{"x": x} for x in range(4 if profile == "fast" else 100)]
    >>> @experiment("_doc-sum", chapter="_doc")
    ... def total(profile="fast", device="cpu"):
    ...     "Sum of the squares of the grid's x."
    ...     return add_up([square(profile, device, **p) for p in xs(profile)])
    >>> def add_up(points):
    ...     return {"sum": sum(p["y"] for p in points)}
    >>> @sweep_point("_doc-sum", assemble=add_up, grid=xs)
    ... def square(profile="fast", device="cpu", *, x):
    ...     return {"y": x * x}
    >>> exp = get("_doc-sum")
    >>> exp.func()["sum"], exp.assemble([exp.point(**p) for p in exp.grid("fast")])
    (14, {'sum': 14})
    >>> del _REGISTRY["_doc-sum"]
    """
    for what, f in (("assemble", assemble), ("grid", grid)):
        if not callable(f):
            raise TypeError(f"sweep_point({name!r}): {what} must be callable, got {type(f).__name__}")

    def deco(point: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        if name not in _REGISTRY:
            raise ValueError(f"sweep_point({name!r}): no experiment of that name is registered yet (register it first)")
        _REGISTRY[name] = dataclasses.replace(_REGISTRY[name], point=point, assemble=assemble, grid=grid)
        return point

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
