"""Experiments, declared once: a config per profile, a body, a figure and the claims it checks.

An experiment is registered with :func:`experiment` on its body ``run(cfg, generator, device) -> dict``:

* ``config``: a frozen dataclass whose fields are the experiment's parameters (``seed`` among
  them), and one instance per profile of :data:`PROFILES` (``fast``: CI sizes;
  ``full``: the paper's sizes);
* the registry checks the profile once, applies overrides (keyword arguments, ``--param
  key=value``) through :func:`dataclasses.replace` after checking each key and type, builds the CPU
  generator from ``cfg.seed`` (a seed means one initial state on every device), resolves the device,
  calls the body and returns its result with tensors moved to CPU numpy, plus ``experiment``,
  ``profile`` and ``config`` (the config as a dict);
* ``plot(result, ax=None)`` draws its figure (a tuple of them draws several figures);
* ``claims(result, cfg) -> list[Claim]`` (:func:`claims_for`) turns the result into ledger rows,
  each verdict decided by :func:`companion.ledger.verdict`; :func:`judge` applies it to any result
  of a registered experiment (a fresh one, or one loaded from ``data/results``).

The decorator returns ``run(profile="fast", device="cpu", **overrides) -> dict``, the function the
chapters and ``python -m companion run NAME`` call. Heavy experiments may also declare one point of
their sweep (:func:`sweep_point`) so that ``python -m companion sweep`` maps it over a grid on Dask.

Names follow one style, ``<prefix>-<thing>``, the prefix naming the chapter
(:data:`CHAPTER_PREFIXES`). Every module under :mod:`companion.experiments` is imported by :func:`registry` (one experiment a
file, under a package per chapter), so a new experiment joins by itself.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import importlib
import inspect
import os
import pkgutil
import re
import types
import typing
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping


__all__ = [
    "Experiment", "PaperScale", "experiment", "claims_for", "summary_for", "check_stem", "sweep_point", "registry", "get", "judge",
    "summarize",
    "CHAPTER_PREFIXES", "PROFILES", "check_profile", "current_profile", "to_numpy", "output_folder", "writing_to",
]

# The profiles every experiment declares: ``fast`` (CI sizes, a few minutes on 2 cores) and ``full``
# (the paper's sizes).
PROFILES = ("fast", "full")


def check_profile(profile: str) -> str:
    """``profile`` when it is one of :data:`PROFILES`, else a ValueError naming them: the one check of a
    profile name, where a public function takes one (:meth:`Experiment.configure`,
    :func:`companion.runner.run_profiles`); what they call takes the checked name or its config.

    Examples
    --------
    >>> check_profile("full")
    'full'
    >>> check_profile("paper")
    Traceback (most recent call last):
    ...
    ValueError: profile must be one of ('fast', 'full'), got 'paper'
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    return profile


# The package whose modules declare the experiments: every module under it is imported by
# :func:`registry`, so a new experiment file needs no list edited by hand.
EXPERIMENTS_PACKAGE = "companion.experiments"

# Chapter slug -> the prefix of its experiments' names (`intro-clustering`, `metastable-ln-n`, ...).
CHAPTER_PREFIXES: dict[str, str] = {
    "introduction": "intro",
    "stability": "stability",
    "phase_transitions": "phase",
    "low_temperature": "lowtemp",
    "spectral_selection": "spectral",
    "metastable": "metastable",
    "llm_probes": "llm",
    "beyond": "beyond",
}

_REGISTRY: dict[str, "Experiment"] = {}
_FORMER: dict[str, str] = {}  # a former experiment name -> its name now
_THING = re.compile(r"[a-z0-9][a-zA-Z0-9]*(-[a-zA-Z0-9]+)*")


_OUTPUT: contextvars.ContextVar[Path | None] = contextvars.ContextVar("companion_experiment_output", default=None)


def output_folder() -> Path | None:
    """The folder a running experiment may keep intermediate files in, or None.

    ``python -m companion run NAME --out DIR`` (:func:`companion.runner.run_experiment`) sets it to
    ``DIR/NAME`` while the body runs, so a long experiment can store finished pieces there and
    resume from them (``llm-training`` keeps one part per run in ``DIR/NAME/parts``); a body called
    directly (a chapter, a test) sees None and keeps everything in memory.

    Examples
    --------
    >>> output_folder() is None
    True
    >>> with writing_to("/tmp/out/x"):
    ...     output_folder().as_posix()
    '/tmp/out/x'
    """
    return _OUTPUT.get()


@contextlib.contextmanager
def writing_to(folder: Path | str | None) -> Iterator[Path | None]:
    """Context in which :func:`output_folder` returns ``folder`` (None: nothing is kept).

    Examples
    --------
    >>> with writing_to(None) as f:
    ...     f, output_folder()
    (None, None)
    """
    token = _OUTPUT.set(Path(folder) if folder is not None else None)
    try:
        yield _OUTPUT.get()
    finally:
        _OUTPUT.reset(token)


def _check_name(name: str, chapter: str) -> None:
    """``<prefix>-<thing>``; chapters outside the book (tests, doctests: a leading underscore) are free."""
    if chapter.startswith("_"):
        return
    if chapter not in CHAPTER_PREFIXES:
        raise ValueError(f"experiment {name!r}: unknown chapter {chapter!r}; chapters: {', '.join(CHAPTER_PREFIXES)}")
    prefix = CHAPTER_PREFIXES[chapter] + "-"
    if not (name.startswith(prefix) and _THING.fullmatch(name[len(prefix):])):
        raise ValueError(f"experiment {name!r} of chapter {chapter!r} must be named '{prefix}<thing>' "
                         "(<thing>: letters, digits and dashes, starting with a lower-case letter or digit)")


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _coerce(value: Any, hint: Any, key: str) -> Any:
    """``value`` as the field type ``hint`` (ints accepted for floats, lists for tuples), else TypeError."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is object:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(value, a, key)
            except TypeError:
                pass
        raise TypeError(f"parameter {key!r} must be {_type_name(hint)}, got {type(value).__name__} {value!r}")
    if origin is typing.Literal:
        if value not in args:
            raise TypeError(f"parameter {key!r} must be one of {args}, got {value!r}")
        return value
    if origin is tuple:
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"parameter {key!r} must be a tuple ({_type_name(hint)}), got {type(value).__name__} {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], f"{key}[{i}]") for i, v in enumerate(value))
        if args and len(args) != len(value):
            raise TypeError(f"parameter {key!r} must have {len(args)} entries ({_type_name(hint)}), got {len(value)}")
        return tuple(_coerce(v, a, f"{key}[{i}]") for i, (v, a) in enumerate(zip(value, args))) if args else tuple(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"parameter {key!r} must be a number, got {type(value).__name__} {value!r}")
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"parameter {key!r} must be an integer, got {type(value).__name__} {value!r}")
        return value
    if isinstance(hint, type):
        if hint is not bool and isinstance(value, bool):
            raise TypeError(f"parameter {key!r} must be {hint.__name__}, got bool {value!r}")
        if not isinstance(value, hint):
            raise TypeError(f"parameter {key!r} must be {hint.__name__}, got {type(value).__name__} {value!r}")
    return value


def _fields(config: type) -> dict[str, Any]:
    hints = typing.get_type_hints(config)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(config)}


def configure(config: type, base: Any, overrides: Mapping[str, Any], what: str) -> Any:
    """``base`` with ``overrides`` applied after checking every key and value type.

    Examples
    --------
    >>> @dataclasses.dataclass(frozen=True)
    ... class C:
    ...     n: int = 4
    ...     beta: float = 1.0
    ...     seed: int = 0
    >>> configure(C, C(), {"beta": 2}, "demo")
    C(n=4, beta=2.0, seed=0)
    >>> configure(C, C(), {"bad": 1}, "demo")
    Traceback (most recent call last):
    ...
    ValueError: demo has no parameter 'bad'; its parameters: n, beta, seed
    >>> configure(C, C(), {"n": "8"}, "demo")
    Traceback (most recent call last):
    ...
    TypeError: demo: parameter 'n' must be an integer, got str '8'
    """
    fields = _fields(config)
    unknown = [k for k in overrides if k not in fields]
    if unknown:
        raise ValueError(f"{what} has no parameter {unknown[0]!r}; its parameters: {', '.join(fields)}")
    try:
        checked = {k: _coerce(v, fields[k], k) for k, v in overrides.items()}
    except TypeError as e:
        raise TypeError(f"{what}: {e}") from None
    return dataclasses.replace(base, **checked) if checked else base


def to_numpy(x: Any) -> Any:
    """Tensors (nested in dicts, lists and tuples) as CPU numpy arrays; everything else unchanged.

    Examples
    --------
    >>> import torch
    >>> r = to_numpy({"a": torch.ones(2), "b": [torch.zeros(1), 3], "c": "x"})
    >>> type(r["a"]).__name__, type(r["b"][0]).__name__, r["b"][1], r["c"]
    ('ndarray', 'ndarray', 3, 'x')
    """
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        return x.detach().cpu().numpy()
    if isinstance(x, dict):
        return {k: to_numpy(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and any(hasattr(v, "detach") or isinstance(v, (dict, list, tuple)) for v in x):
        return type(x)(to_numpy(v) for v in x)
    return x


@dataclasses.dataclass(frozen=True)
class PaperScale:
    """What the paper used for an experiment, against which its ``full`` profile is held.

    ``values``: the paper's value of each parameter it states (by parameter name); the ``full``
    profile must equal each one, unless ``deviations`` names the parameter with the reason (a
    smaller size that the check does not need, a cost). ``note``: what the paper leaves unknown
    (see ``shared/papers/NOTES.md``) and what the profile chose instead, in one or two sentences.

    Examples
    --------
    >>> PaperScale({"n": 200, "dt": 0.01}, {"dt": "0.01 is unstable for the ODE; 0.005"}, "trials not given; 16").values["n"]
    200
    """

    values: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    deviations: Mapping[str, str] = dataclasses.field(default_factory=dict)
    note: str = ""

    def check(self, name: str, config: type, full: Any) -> None:
        """ValueError naming the first parameter the ``full`` profile sets otherwise than the paper
        without a stated deviation (or a key that is not a parameter)."""
        fields = _fields(config)
        for key in list(self.values) + list(self.deviations):
            if key not in fields:
                raise ValueError(f"experiment {name!r}: paper scale names {key!r}, not a parameter; its parameters: {', '.join(fields)}")
        for key, value in self.values.items():
            want = configure(config, full, {key: value}, f"experiment {name!r} (paper scale)")
            if key not in self.deviations and getattr(want, key) != getattr(full, key):
                raise ValueError(f"experiment {name!r}: the paper has {key} = {value!r}, the full profile {getattr(full, key)!r}; "
                                 "set the full profile to the paper's value or give the reason in deviations")

    def lines(self, full: Any) -> list[str]:
        """Human-readable lines: each stated value with the full profile's, then the note."""
        out = []
        for key, value in self.values.items():
            mine = getattr(full, key)
            why = self.deviations.get(key)
            out.append(f"{key}: paper {value!r}, full {mine!r}" + (f" ({why})" if why else ""))
        if self.note:
            out.append(self.note)
        return out


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A registered experiment (see the module docstring).

    ``config`` is the config dataclass and ``profiles`` its instance per profile; ``body(cfg,
    generator, device)`` computes the result; ``plot(result)`` draws it; ``claims(result, cfg)``
    judges it. For a sweep, ``point(cfg, device, **point) -> dict`` computes one grid point,
    ``assemble(points, cfg) -> dict`` joins them into the result and ``grid(cfg)`` lists the
    experiment's own points.

    Examples
    --------
    >>> exp = get("intro-consensus")
    >>> exp.chapter, exp.configure("fast", n=4).n, exp.parameters()["n"]
    ('introduction', 4, {'fast': 64, 'full': 64})
    """

    name: str
    chapter: str
    config: type
    profiles: Mapping[str, Any]
    body: Callable[..., dict[str, Any]]
    description: str
    plot: Callable[..., Any] | None = None
    claims: Callable[..., list] | None = None
    summary: Callable[..., dict[str, Any]] | None = None
    point: Callable[..., dict[str, Any]] | None = None
    assemble: Callable[..., dict[str, Any]] | None = None
    grid: Callable[..., list[dict[str, Any]]] | None = None
    runner: Callable[..., dict[str, Any]] | None = None
    paper: PaperScale | None = None
    renamed: Mapping[str, str] = dataclasses.field(default_factory=dict)
    formerly: tuple[str, ...] = ()
    added: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def func(self) -> Callable[..., dict[str, Any]]:
        """``(profile="fast", device="cpu", **overrides) -> dict``: the experiment as one function."""
        return self.runner

    def configure(self, profile: str = "fast", **overrides: Any) -> Any:
        """The config of ``profile`` with ``overrides`` applied (unknown keys and wrong types refused)."""
        return configure(self.config, self.profiles[check_profile(profile)], overrides, f"experiment {self.name!r}")

    def parameters(self) -> dict[str, dict[str, Any]]:
        """Every parameter with its value in each profile: ``{name: {profile: value}}``."""
        return {f.name: {p: getattr(self.profiles[p], f.name) for p in PROFILES} for f in dataclasses.fields(self.config)}

    def run(self, profile: str = "fast", device: Any = "cpu", **overrides: Any) -> dict[str, Any]:
        """The result in ``profile`` on ``device``: CPU numpy arrays, with ``experiment``, ``profile``
        (``"custom"`` when the overrides changed the profile's config) and ``config``."""
        from .gpu import resolve_device

        return self.compute(self.configure(profile, **overrides), profile, resolve_device(device))

    def compute(self, cfg: Any, profile: str, device: str) -> dict[str, Any]:
        """:meth:`run` for inputs already checked: ``cfg`` a config of this experiment (:meth:`configure`
        of ``profile``), ``device`` a device :func:`companion.gpu.resolve_device` returned. Nothing is
        checked again (the command line and :func:`companion.runner.run_experiment` check once, at their entry)."""
        import torch

        generator = torch.Generator().manual_seed(cfg.seed)
        return self.stamp(self.body(cfg, generator, device), cfg, profile)

    def stamp(self, result: Any, cfg: Any, profile: str) -> dict[str, Any]:
        """``result`` with tensors as CPU numpy and ``experiment``, ``profile`` and ``config`` added."""
        result = to_numpy(result)
        if not isinstance(result, dict):
            raise TypeError(f"experiment {self.name!r}: its body must return a dict, got {type(result).__name__}")
        result["experiment"] = self.name
        result["profile"] = profile if cfg == self.profiles[profile] else "custom"
        result["config"] = dataclasses.asdict(cfg)
        return result

    def config_of(self, result: Mapping[str, Any]) -> Any:
        """The config a result of this experiment was computed with (from ``result["config"]``; a parameter
        it lacks has its :attr:`added` value, else the fast profile's)."""
        stored = {**self.added, **{self.renamed.get(k, k): v for k, v in dict(result.get("config") or {}).items()}}
        known = {f.name for f in dataclasses.fields(self.config)}
        return configure(self.config, self.profiles["fast"], {k: _plain(v) for k, v in stored.items() if k in known},
                         f"experiment {self.name!r} (stored config)")

    def summarize(self, result: Mapping[str, Any]) -> dict[str, Any]:
        """Every number the chapter's prose and the claims read, computed once from ``result``
        (``summary(result) -> dict``; {} without a summary function)."""
        return {} if self.summary is None else dict(self.summary(result))

    def judge(self, result: Mapping[str, Any]) -> list:
        """The ledger rows of ``result`` (chapter and profile filled in); [] without a claims function."""
        if self.claims is None:
            return []
        rows = self.claims(result, self.config_of(result))
        profile = str(result.get("profile", "?"))
        return [dataclasses.replace(c, chapter=self.chapter, profile=profile, experiment=self.name) for c in rows]


def _plain(v: Any) -> Any:
    """Values read back from storage (numpy scalars and arrays) as Python scalars and lists."""
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _runner(exp_name: str, body: Callable[..., Any]) -> Callable[..., dict[str, Any]]:
    """The public function of a registered experiment: ``(profile="fast", device="cpu", **overrides)``."""

    def run(profile: str = "fast", device: Any = "cpu", **overrides: Any) -> dict[str, Any]:
        return _REGISTRY[exp_name].run(profile, device, **overrides)

    run.__name__, run.__qualname__, run.__module__ = body.__name__, body.__qualname__, body.__module__
    run.__doc__ = body.__doc__
    run.__signature__ = inspect.Signature([
        inspect.Parameter("profile", inspect.Parameter.POSITIONAL_OR_KEYWORD, default="fast", annotation=str),
        inspect.Parameter("device", inspect.Parameter.POSITIONAL_OR_KEYWORD, default="cpu", annotation=str),
        inspect.Parameter("overrides", inspect.Parameter.VAR_KEYWORD, annotation=Any),
    ], return_annotation=dict)
    run.body = body  # the undecorated body, for tests
    run.experiment_name = exp_name
    return run


def experiment(name: str, *, chapter: str, profiles: Mapping[str, Any],
               plot: Callable[..., Any] | tuple[Callable[..., Any], ...] | None = None,
               claims: Callable[..., list] | None = None, paper: PaperScale | None = None,
               renamed: Mapping[str, str] | None = None, formerly: tuple[str, ...] = (),
               added: Mapping[str, Any] | None = None) -> Callable:
    """Decorator registering ``body(cfg, generator, device) -> dict`` as the experiment ``name``.

    ``profiles`` maps every profile of :data:`PROFILES` to a config (instances of
    one frozen dataclass with a ``seed`` field). ``paper`` states the paper's sizes; the ``full``
    profile is checked against them (:class:`PaperScale`). ``plot`` is ``plot_<stem>(result, ax=None)``
    or a tuple of such functions, drawn in order. ``renamed`` maps a parameter's former name to its
    name now and ``formerly`` lists the experiment's former names, so that results stored under the
    old names still load, verify and count as current. ``added`` maps a parameter introduced after results
    were stored to the value all of them were computed with (a stored config that lacks it has that
    value, not the fast profile's). Returns the experiment's public function
    ``run(profile="fast", device="cpu", **overrides) -> dict``.

    An experiment of the book lives in ``companion/experiments/<chapter>/<stem>.py``, ``<stem>`` being
    its name after the chapter's prefix with dashes as underscores, and its pieces carry that stem:
    the body ``<stem>``, the config ``<Stem>Config``, the claims ``<stem>_claims`` and the figure
    ``plot_<stem>`` (:func:`check_stem`).

    Examples
    --------
    >>> @dataclasses.dataclass(frozen=True)
    ... class SquareConfig:
    ...     x: float = 3.0
    ...     seed: int = 0
    >>> @experiment("_doc-square", chapter="_doc", profiles={"fast": SquareConfig(), "full": SquareConfig(x=30.0)})
    ... def square(cfg, generator, device):
    ...     "x squared."
    ...     return {"y": cfg.x ** 2}
    >>> square()["y"], square("full")["y"], square(x=2)["y"], square(x=2)["profile"]
    (9.0, 900.0, 4.0, 'custom')
    >>> square(y=1)
    Traceback (most recent call last):
    ...
    ValueError: experiment '_doc-square' has no parameter 'y'; its parameters: x, seed
    >>> get("_doc-square").parameters()
    {'x': {'fast': 3.0, 'full': 30.0}, 'seed': {'fast': 0, 'full': 0}}
    >>> del _REGISTRY["_doc-square"]
    """
    _check_name(name, chapter)
    if set(profiles) != set(PROFILES):
        raise ValueError(f"experiment {name!r}: profiles must be given for exactly {PROFILES}, got {tuple(profiles)}")
    configs = list(profiles.values())
    config = type(configs[0])
    if not (dataclasses.is_dataclass(config) and config.__dataclass_params__.frozen):
        raise TypeError(f"experiment {name!r}: a profile's config must be a frozen dataclass instance, got {config.__name__}")
    if any(type(c) is not config for c in configs):
        raise TypeError(f"experiment {name!r}: every profile's config must be a {config.__name__}")
    fields = _fields(config)
    if "seed" not in fields:
        raise TypeError(f"experiment {name!r}: {config.__name__} needs a 'seed' field (the registry seeds the generator from it)")
    for p, c in profiles.items():  # the declared values pass the same checks as overrides
        configure(config, c, dataclasses.asdict(c), f"experiment {name!r}, profile {p!r}")
    if paper is not None:
        paper.check(name, config, profiles["full"])
    renamed = dict(renamed or {})
    for old, new in renamed.items():
        if new not in fields or old in fields:
            raise ValueError(f"experiment {name!r}: renamed {old!r} -> {new!r} must map a former name to a parameter; "
                             f"its parameters: {', '.join(fields)}")
    added = dict(added or {})
    if set(added) - set(fields):
        raise ValueError(f"experiment {name!r}: added {sorted(set(added) - set(fields))} must name parameters; "
                         f"its parameters: {', '.join(fields)}")
    drawn = plot if isinstance(plot, tuple) else (plot,) if plot is not None else ()
    figure = drawn[0] if len(drawn) == 1 else _chain(*drawn) if drawn else None

    def deco(body: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        if name in _REGISTRY and _REGISTRY[name].body.__qualname__ != body.__qualname__:
            raise ValueError(f"experiment name {name!r} is already registered")
        check_stem(name, chapter, body, config, plots=drawn, claims=claims)
        for old in formerly:
            if _FORMER.get(old, name) != name or old in _REGISTRY:
                raise ValueError(f"experiment {name!r}: former name {old!r} is taken")
        doc = (body.__doc__ or "").strip().splitlines()
        run = _runner(name, body)
        _REGISTRY[name] = Experiment(name, chapter, config, dict(profiles), body, doc[0] if doc else "", figure, claims,
                                     runner=run, paper=paper, renamed=renamed, formerly=tuple(formerly), added=added)
        _FORMER.update({old: name for old in formerly})
        return run

    return deco


def _registered(name: str, what: str) -> Experiment:
    if name not in _REGISTRY:
        raise ValueError(f"{what}({name!r}): no experiment of that name is registered yet (register it first)")
    return _REGISTRY[name]


def _chain(*plots: Callable[..., Any]) -> Callable[..., Any]:
    """One plot function drawing each of ``plots`` on its own figure, in order."""

    def each(result: dict[str, Any]) -> None:
        for p in plots:
            p(result)

    each.__name__ = each.__qualname__ = "+".join(getattr(p, "__name__", "plot") for p in plots)
    return each


def _camel(stem: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in stem.split("_"))


def check_stem(name: str, chapter: str, body: Callable[..., Any], config: type, *,
               plots: tuple[Callable[..., Any], ...] = (), claims: Callable[..., Any] | None = None) -> None:
    """ValueError unless an experiment of the book carries one name stem everywhere.

    For ``name = "<prefix>-<thing>"`` the stem is ``<thing>`` with dashes as underscores; the body is
    ``<stem>`` in ``companion.experiments.<chapter>.<stem>``, the config ``<Stem>Config``, the claims
    function ``<stem>_claims``, each plot function ``plot_<stem>`` or ``plot_<stem>_<what>``.
    Experiments outside the book (chapters starting with ``_``) are free.

    Examples
    --------
    >>> def two_tokens(cfg, generator, device): ...
    >>> two_tokens.__module__ = "companion.experiments.spectral_selection.two_tokens"
    >>> class TwoTokensConfig: ...
    >>> check_stem("spectral-two-tokens", "spectral_selection", two_tokens, TwoTokensConfig)
    >>> class PairConfig: ...
    >>> check_stem("spectral-two-tokens", "spectral_selection", two_tokens, PairConfig)
    Traceback (most recent call last):
    ...
    ValueError: experiment 'spectral-two-tokens': its config must be called TwoTokensConfig (stem 'two_tokens'), not PairConfig
    """
    if chapter.startswith("_"):
        return
    stem = name[len(CHAPTER_PREFIXES[chapter]) + 1:].replace("-", "_")
    want = {"its module": (body.__module__, f"{EXPERIMENTS_PACKAGE}.{chapter}.{stem}"),
            "its body": (body.__name__, stem),
            "its config": (config.__name__, _camel(stem) + "Config")}
    if claims is not None:
        want["its claims function"] = (claims.__name__, f"{stem}_claims")
    for what, (got, expected) in want.items():
        if got != expected:
            raise ValueError(f"experiment {name!r}: {what} must be called {expected} (stem {stem!r}), not {got}")
    for p in plots:
        got = getattr(p, "__name__", "")
        if not (got == f"plot_{stem}" or got.startswith(f"plot_{stem}_")):
            raise ValueError(f"experiment {name!r}: its plot function must be called plot_{stem} or plot_{stem}_<what> "
                             f"(stem {stem!r}), not {got}")


def claims_for(name: str) -> Callable:
    """Decorator registering ``claims(result, cfg) -> list[ledger.Claim]`` for the experiment ``name``.

    Examples
    --------
    >>> from companion import ledger
    >>> @dataclasses.dataclass(frozen=True)
    ... class Cfg:
    ...     x: float = 0.5
    ...     seed: int = 0
    >>> @experiment("_doc-half", chapter="_doc", profiles={"fast": Cfg(), "full": Cfg()})
    ... def half(cfg, generator, device):
    ...     "x, measured."
    ...     return {"x": cfg.x}
    >>> @claims_for("_doc-half")
    ... def half_claims(result, cfg):
    ...     err = abs(result["x"] - 0.5)
    ...     return [ledger.Claim(id="X-half", paper="A", where="Eq. 1", statement="x = 1/2",
    ...                          verdict=ledger.verdict(err, reproduced=0.01), measured=result["x"], expected=0.5, tolerance=0.01)]
    >>> [(c.status, c.chapter, c.profile) for c in judge(half())]
    [('reproduced', '_doc', 'fast')]
    >>> [c.status for c in judge(half(x=0.7))]  # the same check fails on a wrong measurement
    ['not-reproduced']
    >>> del _REGISTRY["_doc-half"]
    """

    def deco(fn: Callable[..., list]) -> Callable[..., list]:
        exp = _registered(name, "claims_for")
        if exp.claims is not None and exp.claims.__qualname__ != fn.__qualname__:
            raise ValueError(f"claims_for({name!r}): the experiment already has a claims function ({exp.claims.__qualname__})")
        check_stem(name, exp.chapter, exp.body, exp.config, claims=fn)
        _REGISTRY[name] = dataclasses.replace(exp, claims=fn)
        return fn

    return deco


def summary_for(name: str) -> Callable:
    """Decorator registering ``summary(result) -> dict`` for the experiment ``name``: every number its
    chapter's prose and its claims read, computed once (a chapter glues these values and computes
    nothing; a sentence that compares reads a value computed here). Named ``<stem>_summary``.

    Examples
    --------
    >>> @dataclasses.dataclass(frozen=True)
    ... class Cfg:
    ...     x: float = 0.5
    ...     seed: int = 0
    >>> @experiment("_doc-third", chapter="_doc", profiles={"fast": Cfg(), "full": Cfg()})
    ... def third(cfg, generator, device):
    ...     "x, measured."
    ...     return {"x": cfg.x}
    >>> @summary_for("_doc-third")
    ... def third_summary(result):
    ...     return {"error": abs(result["x"] - 0.5), "exact": result["x"] == 0.5}
    >>> summarize(third(x=0.75))
    {'error': 0.25, 'exact': False}
    >>> del _REGISTRY["_doc-third"]
    """

    def deco(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        exp = _registered(name, "summary_for")
        if exp.summary is not None and exp.summary.__qualname__ != fn.__qualname__:
            raise ValueError(f"summary_for({name!r}): the experiment already has a summary function ({exp.summary.__qualname__})")
        if not exp.chapter.startswith("_"):
            stem = name[len(CHAPTER_PREFIXES[exp.chapter]) + 1:].replace("-", "_")
            if fn.__name__ != f"{stem}_summary":
                raise ValueError(f"experiment {name!r}: its summary function must be called {stem}_summary, not {fn.__name__}")
        _REGISTRY[name] = dataclasses.replace(exp, summary=fn)
        return fn

    return deco


def sweep_point(name: str, assemble: Callable[..., dict[str, Any]], grid: Callable[..., list[dict[str, Any]]]) -> Callable:
    """Decorator registering ``point(cfg, device, **params) -> dict`` as one grid point of ``name``.

    ``grid(cfg)`` is the experiment's own list of points (dicts of ``params``) and
    ``assemble(points, cfg)`` joins the point results into the experiment's result; the body should be
    ``assemble([point(cfg, device, **p) for p in grid(cfg)], cfg)``, so that ``python -m companion
    sweep NAME`` (one point per Dask task, :func:`companion.sweep.run_sweep`) computes the same
    numbers as ``run NAME``, only distributed; ``--grid`` axes sweep other points.

    Examples
    --------
    >>> @dataclasses.dataclass(frozen=True)
    ... class SumConfig:
    ...     xs: tuple[int, ...] = (0, 1, 2, 3)
    ...     seed: int = 0
    >>> def xs(cfg):
    ...     return [{"x": x} for x in cfg.xs]
    >>> def add_up(points, cfg):
    ...     return {"sum": sum(p["y"] for p in points)}
    >>> @experiment("_doc-sum", chapter="_doc", profiles={"fast": SumConfig(), "full": SumConfig(xs=tuple(range(100)))})
    ... def total(cfg, generator, device):
    ...     "Sum of the squares of the grid's x."
    ...     return add_up([square(cfg, device, **p) for p in xs(cfg)], cfg)
    >>> @sweep_point("_doc-sum", assemble=add_up, grid=xs)
    ... def square(cfg, device="cpu", *, x):
    ...     return {"y": x * x}
    >>> exp = get("_doc-sum")
    >>> cfg = exp.configure("fast")
    >>> total()["sum"], exp.assemble([exp.point(cfg, **p) for p in exp.grid(cfg)], cfg)
    (14, {'sum': 14})
    >>> del _REGISTRY["_doc-sum"]
    """
    for what, f in (("assemble", assemble), ("grid", grid)):
        if not callable(f):
            raise TypeError(f"sweep_point({name!r}): {what} must be callable, got {type(f).__name__}")

    def deco(point: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        exp = _registered(name, "sweep_point")
        _REGISTRY[name] = dataclasses.replace(exp, point=point, assemble=assemble, grid=grid)
        return point

    return deco


def _experiment_modules() -> list[str]:
    """Every module under :data:`EXPERIMENTS_PACKAGE`, chapter packages first, then their files.

    Examples
    --------
    >>> "companion.experiments.introduction" in _experiment_modules()
    True
    """
    package = importlib.import_module(EXPERIMENTS_PACKAGE)
    return [m.name for m in pkgutil.walk_packages(package.__path__, EXPERIMENTS_PACKAGE + ".")]


def _import_experiments() -> None:
    for m in _experiment_modules():
        importlib.import_module(m)


def current_profile() -> str:
    """The profile the book runs in: ``$COMPANION_PROFILE`` (``fast`` or ``full``), default ``fast``.

    Examples
    --------
    >>> current_profile() in PROFILES
    True
    """
    p = os.environ.get("COMPANION_PROFILE", "fast")
    if p not in PROFILES:
        raise ValueError(f"COMPANION_PROFILE must be one of {PROFILES}, got {p!r}")
    return p


def registry() -> dict[str, Experiment]:
    """Every registered experiment, importing the experiment modules that exist.

    Examples
    --------
    >>> reg = registry()
    >>> "intro-clustering" in reg, all(n.startswith(CHAPTER_PREFIXES[e.chapter] + "-") for n, e in reg.items())
    (True, True)
    """
    _import_experiments()
    return dict(sorted(_REGISTRY.items()))


def get(name: str) -> Experiment:
    """The experiment called ``name``; ValueError listing the known names otherwise.

    Examples
    --------
    >>> get("intro-consensus").name
    'intro-consensus'
    >>> get("intro-clusterin")
    Traceback (most recent call last):
    ...
    ValueError: unknown experiment 'intro-clusterin'; did you mean 'intro-clustering' or ...? (`python -m companion list` lists all ...)
    """
    import difflib

    reg = registry()
    name = _FORMER.get(name, name)
    if name not in reg:
        close = difflib.get_close_matches(str(name), list(reg), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"unknown experiment {name!r}{hint} (`python -m companion list` lists all {len(reg)})")
    return reg[name]


def summarize(result: Mapping[str, Any]) -> dict[str, Any]:
    """The summary of a result of a registered experiment (it names its experiment): see :func:`summary_for`.

    Examples
    --------
    >>> s = summarize(get("intro-consensus").run(n=4, t1=1.0))
    >>> isinstance(s, dict) and len(s) > 0
    True
    """
    if "experiment" not in result:
        raise ValueError("summarize(result): the result names no experiment (results of Experiment.run carry 'experiment')")
    return get(str(result["experiment"])).summarize(result)


def judge(result: Mapping[str, Any]) -> list:
    """The ledger rows of a result of a registered experiment (it names its experiment).

    Examples
    --------
    >>> rows = judge(get("intro-consensus").run(n=4, t1=1.0))
    >>> [(c.id, c.status, c.profile) for c in rows]
    [('C-4.1-consensus-closed-form', 'reproduced', 'custom'), ('C-4.1-log-ratio-slopes', 'reproduced', 'custom')]
    """
    if "experiment" not in result:
        raise ValueError("judge(result): the result names no experiment (results of Experiment.run carry 'experiment')")
    return get(str(result["experiment"])).judge(result)
