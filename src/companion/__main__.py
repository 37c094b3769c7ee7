"""Command line: rerun any registered experiment, or sweep one over a grid on Dask.

    python -m companion list
    python -m companion run NAME [NAME ...] [--profile fast|full] [--device cpu|cuda] [--out DIR]
    python -m companion run --all --profile fast
    python -m companion sweep NAME --grid n=1000,10000 --grid seed=0:8 [--scheduler tcp://host:8786]
    python -m companion sweep NAME --profile full      # an experiment with a sweep point: its own grid
    python -m companion full [NAME ...] [--budget MINUTES] [--device cuda] [--out DIR]   # every full profile not stored
    python -m companion pack DIR --to PACKS            # verified results -> at most 8 .tar.gz of 16 MB
    python -m companion store PACKS/*.tar.gz           # verify and store them under data/results

``run`` writes ``DIR/<name>/<profile>.npz`` (result), ``.json`` (provenance) and ``.png`` (figure),
DIR defaulting to data/results; ``sweep`` writes one file pair per point under
``DIR/<name>/sweep-<profile>/``, resumes where a previous call stopped, and, for an experiment with a
sweep point, saves the assembled result as ``run`` does.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Sequence

__all__ = ["main", "build_parser", "parse_value", "parse_axis"]


PROFILES = ("fast", "full")  # the registry's profiles (registry.PROFILES; a test keeps the two equal: this file imports no torch)
MAX_WORKERS = 4 * (__import__("os").cpu_count() or 1)
MAX_BUDGET_MIN = 525_600.0
# How far --param may take a positive parameter beyond the larger of its two profiles: counts (tokens, trials,
# steps) 100 times, other sizes (horizons, temperatures) a million times.
MAX_COUNT_FACTOR, MAX_SIZE_FACTOR = 100, 1e6  # a year of minutes: anything longer is a typo, and 60 * 1e308 s overflows

# Arguments of a sweep point that the sweep itself supplies (not grid axes).
_NOT_GRID = ("profile", "device", "cfg")


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit status 2 (no traceback)."""


def _checked(fn, *a, **kw):
    try:
        return fn(*a, **kw)
    except (ValueError, TypeError) as e:
        raise UsageError(str(e)) from e


# Integers the command line accepts: what a torch int64 (sizes, seeds) holds.
_INT_LIMIT = 2**63 - 1


def _non_finite(text: str) -> Any:
    raise argparse.ArgumentTypeError(f"{text} is not a finite number")


def _check_number(v: Any, text: str) -> Any:
    """``v`` when every number in it is finite and every integer fits in int64, else ArgumentTypeError."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, float) and not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number (it overflows a float)")
    if isinstance(v, int) and abs(v) > _INT_LIMIT:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}{'...' if len(text) > 40 else ''} is out of range: integers "
                                         f"must lie within +-(2**63 - 1)")
    if isinstance(v, list):
        for x in v:
            _check_number(x, text)
    if isinstance(v, dict):
        raise argparse.ArgumentTypeError(f"{text!r}: a JSON object is not a parameter value")
    return v


def parse_value(text: str) -> Any:
    """A command-line value: JSON when it parses (numbers, true/false, null, lists), else the text.

    Numbers must be finite (``NaN``, ``Infinity``, ``1e400`` are refused) and integers must fit in
    int64; a refusal is an :class:`argparse.ArgumentTypeError` (a one-line usage error, exit 2).

    Examples
    --------
    >>> parse_value("3"), parse_value("2.5"), parse_value("true"), parse_value("usa")
    (3, 2.5, True, 'usa')
    >>> parse_value("1e400")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: '1e400' is not a finite number (it overflows a float)
    """
    try:
        v = json.loads(text, parse_constant=_non_finite)
    except json.JSONDecodeError:
        return text
    except ValueError as e:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise argparse.ArgumentTypeError(f"{text[:40]!r}...: {e}") from None
    return _check_number(v, text)


def _key_value(text: str, what: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{what} must look like KEY=VALUE, got {text!r}")
    return key.strip(), value


def parse_axis(text: str) -> tuple[str, list[Any]]:
    """A sweep axis ``KEY=v1,v2,...`` or ``KEY=start:stop`` (integers, stop excluded).

    Examples
    --------
    >>> parse_axis("beta=1,4.5"), parse_axis("seed=0:3")
    (('beta', [1, 4.5]), ('seed', [0, 1, 2]))
    """
    key, value = _key_value(text, "--grid")
    parts = value.split(":")
    if len(parts) == 2 and all(p.strip().lstrip("-").isdigit() for p in parts):
        a, b = (_check_number(int(p), p) for p in parts)
        if b - a > 10**6:
            raise argparse.ArgumentTypeError(f"--grid {key}={value}: {b - a} points; at most 10**6 on one axis")
        values: list[Any] = list(range(a, b))
    else:
        try:
            values = [parse_value(v) for v in value.split(",") if v != ""]
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(f"--grid {key}=...: {e}") from None
    if not values:
        raise argparse.ArgumentTypeError(f"--grid {key}= has no values")
    for v in values:
        if isinstance(v, list):
            raise argparse.ArgumentTypeError(f"--grid {key}=...: {v!r} is a list; give the values of the axis "
                                             "separated by commas (KEY=V1,V2)")
    seen: set[tuple[str, Any]] = set()  # (type, value): 1 and 1.0 are different points, as the config sees them
    for v in values:
        if (type(v).__name__, v) in seen:
            raise argparse.ArgumentTypeError(f"--grid {key}=...: the value {v!r} is given twice; each point is computed once")
        seen.add((type(v).__name__, v))
    return key, values


def _out_dir(text: str) -> Path:
    """``--out``: a folder name (an empty one would write into the current folder unasked)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("--out must name a folder, got an empty string (use --out . for this folder)")
    return Path(text)


def _param(text: str) -> tuple[str, Any]:
    key, value = _key_value(text, "--param")
    try:
        return key, parse_value(value)
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"--param {key}=...: {e}") from None


EPILOG = ("experiments: `python -m companion list` lists them, one a line (`list --json` for a program); "
          "`python -m companion run NAME --help` shows NAME's parameters with their fast and full values")


def _first_sentence(text: str) -> str:
    """The first sentence of a docstring as plain text (reStructuredText roles and literals unmarked)."""
    import re

    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", " ".join(text.split()))
    text = text.replace("``", "").replace("`", "")
    head = re.split(r"(?<=[.:;])\s", text, maxsplit=1)[0]
    return head.rstrip(":;")


def _experiment_help(names: Sequence[str]) -> str:
    """``run NAME --help``: each named experiment's parameters with their type and both profiles' values."""
    from .registry import get

    lines = []
    for n in names:
        try:
            exp = get(n)
        except ValueError as e:
            lines.append(str(e))
            continue
        lines.append(f"{exp.name} [{exp.chapter}]: {_first_sentence(exp.description)}")
        lines.append("  parameters (--param KEY=VALUE): type, fast profile, full profile")
        types = {f.name: getattr(f.type, "__name__", str(f.type)) for f in __import__("dataclasses").fields(exp.config)}
        for key, values in exp.parameters().items():
            lines.append(f"    {key:<14} {types.get(key, '?'):<18} {values['fast']!r:<16} {values['full']!r}")
    return "\n".join(lines)


def _sweeps_epilog() -> str:
    import inspect

    try:
        from .registry import registry

        reg = registry()
    except Exception as e:
        return f"experiments: the registry failed to import ({type(e).__name__}: {e})"
    lines = ["experiments with a sweep point (its parameters; * = required with --grid; no --grid: the profile's own grid):"]
    for name, exp in reg.items():
        if exp.point is None:
            continue
        params = inspect.signature(exp.point).parameters
        names = [n + ("*" if p.default is inspect.Parameter.empty else "") for n, p in params.items()
                 if n not in _NOT_GRID and p.kind is not p.VAR_KEYWORD]
        lines.append(f"  {name}: {', '.join(names)}")
    lines.append("any other experiment: the grid sets its keyword arguments (see `python -m companion list`)")
    return "\n".join(lines)


def build_parser(run_help: Sequence[str] = (), sweep_help: bool = False) -> argparse.ArgumentParser:
    """The argument parser. ``run_help``: the experiments named before ``--help`` on a ``run`` line, whose
    parameters ``run``'s help then lists; ``sweep_help``: list the sweep points in ``sweep``'s help (the
    only helps that import the experiments)."""
    from . import __version__

    epilog = EPILOG
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="python -m companion", description=__doc__.split("\n\n")[0], epilog=epilog, formatter_class=fmt)
    parser.add_argument("--version", action="version", version=f"companion {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{list,run,sweep,full,pack,store}")

    lst = sub.add_parser("list", help="list the registered experiments with their parameters per profile", epilog=epilog, formatter_class=fmt)
    lst.add_argument("--json", action="store_true", help="one JSON document: name, chapter, description, parameters per profile")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--profile", choices=PROFILES, default="fast",
                       help="fast (CI scale, seconds to minutes) or full (the paper's scale: minutes on 2 cores for most, hours for the LLM chapter)")
        p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto (default cpu)")
        p.add_argument("--out", type=_out_dir, default=None, help="results folder (default data/results)")
        p.add_argument("--quiet", action="store_true", help="no progress on stderr")

    run = sub.add_parser("run", help="run experiments, save result + figure + provenance",
                         epilog=_experiment_help(run_help) if run_help else epilog, formatter_class=fmt)
    run.add_argument("names", nargs="*", metavar="EXPERIMENT")
    run.add_argument("--all", action="store_true", help="run every registered experiment")
    run.add_argument("--param", type=_param, action="append", default=[], metavar="KEY=VALUE", help="override one parameter of the experiment's config (repeatable; `list` shows them)")
    run.add_argument("--no-figure", action="store_true", help="skip the figure")
    common(run)

    sw = sub.add_parser("sweep", help="run an experiment over a parameter grid on Dask", formatter_class=fmt,
                        epilog=_sweeps_epilog() if sweep_help else "`python -m companion sweep --help` lists the sweep points",
                        description="Map an experiment's sweep point (or, if it has none, the whole experiment) over the grid, one "
                                    "Dask task per point; each point is saved under OUT/NAME/sweep-PROFILE/ and skipped when rerun. "
                                    "The points of a sweep point assemble into the experiment's result, saved as by `run`.")
    sw.add_argument("name", metavar="EXPERIMENT")
    sw.add_argument("--grid", type=parse_axis, action="append", default=[], metavar="KEY=V1,V2|KEY=A:B",
                    help="one axis of the grid (repeatable; the grid is their product); without it, an experiment with a "
                         "sweep point computes its own grid of --profile (the points of `run`)")
    sw.add_argument("--scheduler", default=None, help="Dask scheduler address (default: a LocalCluster here), or 'serial'")
    sw.add_argument("--workers", type=int, default=2, help=f"LocalCluster workers (default 2, at most {MAX_WORKERS})")
    sw.add_argument("--no-figure", action="store_true", help="skip the figure of the assembled result")
    common(sw)

    full = sub.add_parser("full", help="run every experiment's profile that is not stored yet, or stale, within a time budget",
                          description="Each experiment not yet stored (verified) under OUT, or stored with another config "
                                      "or by code that changed since, runs in its own process with "
                                      "the budget left as its timeout; call again to continue. --profile defaults to full.")
    full.add_argument("names", nargs="*", metavar="EXPERIMENT", help="default: every registered experiment")
    full.add_argument("--budget", type=float, default=12.0, help="minutes for the whole call (default 12)")
    full.add_argument("--skip-chapter", action="append", default=[], metavar="SLUG", help="leave a chapter's experiments out (repeatable)")
    common(full)
    full.set_defaults(profile="full")

    pack = sub.add_parser("pack", help="pack the verified results of a folder into a few .tar.gz files (to copy back from a remote machine)")
    pack.add_argument("folder", type=Path)
    pack.add_argument("--to", type=Path, required=True, help="folder for results-<i>.tar.gz")
    pack.add_argument("--max-files", type=int, default=8)
    pack.add_argument("--max-mb", type=float, default=16.0, help="largest pack in MiB (finite, > 0)")

    store = sub.add_parser("store", help="verify and store results packed by `pack` under data/results (or --out)")
    store.add_argument("packs", nargs="+", type=Path)
    store.add_argument("--out", type=_out_dir, default=None, help="results folder (default data/results)")
    return parser


def _check_counts(exp, overrides: dict[str, Any], flag: str = "--param") -> None:
    """An integer parameter that is >= 1 in every profile counts something (tokens, trials, steps):
    an override below 1 is refused here, before the run, rather than deep inside it; so is a positive
    parameter taken past :data:`MAX_COUNT_FACTOR` (counts) or :data:`MAX_SIZE_FACTOR` (other sizes) times
    its larger profile value."""
    values = exp.parameters()
    for key, v in overrides.items():
        if key == "seed" or key.endswith("_seed"):  # a seed names an initial state: any integer >= 0, 0 included
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise UsageError(f"{flag} {key}={v!r}: a seed must be an integer >= 0")
            continue
        profiles = list((values.get(key) or {}).values())
        ints = [x for x in profiles if isinstance(x, int) and not isinstance(x, bool)]
        counts = bool(profiles) and len(ints) == len(profiles) and min(ints) >= 1
        if isinstance(v, int) and not isinstance(v, bool) and v < 1 and counts:
            raise UsageError(f"{flag} {key}={v}: {key} counts something (the profiles have "
                             f"{', '.join(map(str, dict.fromkeys(ints)))}) and must be an integer >= 1")
        sizes = [x for x in profiles if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0]
        if sizes and len(sizes) == len(profiles) and isinstance(v, (int, float)) and not isinstance(v, bool):
            most = (MAX_COUNT_FACTOR if counts else MAX_SIZE_FACTOR) * max(sizes)
            if v > most:  # a typo or a run no machine finishes: refused here, not by torch deep inside
                raise UsageError(f"{flag} {key}={v:g}: more than {MAX_COUNT_FACTOR if counts else MAX_SIZE_FACTOR:g} times "
                                 f"the largest profile's {max(sizes):g}; the command line stops at {most:g} (call "
                                 f"companion.registry.get({exp.name!r}).run(...) from Python for a larger run)")


def _check_out(out: Path | None) -> None:
    """The results folder is writable (created if missing), before anything is computed."""
    from .store import check_writable, results_dir

    _checked(check_writable, out if out is not None else results_dir())


def _cmd_list(args: argparse.Namespace) -> int:
    from .registry import registry

    reg = registry()
    if args.json:
        print(json.dumps([{"name": n, "chapter": e.chapter, "description": _first_sentence(e.description),
                           "parameters": e.parameters()} for n, e in reg.items()], indent=1, default=repr))
        return 0
    if not reg:
        print("no experiments registered")
    for name, e in reg.items():
        print(f"{name}\t{e.chapter}\t{e.description}")
        for key, values in e.parameters().items():
            fast, full = values["fast"], values["full"]
            print(f"    {key} = {fast!r}" + ("" if full == fast else f"  (full: {full!r})"))
        scale = e.paper.lines(e.profiles["full"]) if e.paper else ["not stated"]
        print("    paper scale: " + "\n                 ".join(scale))
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from .gpu import resolve_device
    from .ledger import format_claims
    from .registry import get, registry
    from .runner import run_configured
    from .store import check_writable, results_dir

    names = list(registry()) if args.all else args.names
    if not names:
        raise UsageError("name at least one EXPERIMENT, or pass --all")
    params = dict(args.param)
    # Checked once, here, before anything runs: the names, the parameters (into each experiment's config;
    # argparse checked the profile), the device (resolved once: "auto" is one device for every run) and the
    # results folder. What runs below trusts them.
    configs = {}
    for n in names:
        exp = _checked(get, n)
        configs[n] = (exp, _checked(exp.configure, args.profile, **params))
        _check_counts(exp, params)
    device = _checked(resolve_device, args.device)
    out = args.out if args.out is not None else results_dir()
    _checked(check_writable, out)
    failed: list[str] = []
    times: dict[str, float] = {}
    t_all = time.perf_counter()
    bar = tqdm(names, desc=f"run ({args.profile}, {device})", unit="experiment", disable=args.quiet or len(names) < 2)
    talk = not args.quiet and sys.stderr.isatty()  # a terminal is told what runs; a log file only gets the results
    for n in bar:
        bar.set_postfix_str(n)
        if talk and len(names) == 1:
            print(f"{n}: running the {args.profile} profile on {device} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        exp, cfg = configs[n]
        try:
            folder = _checked(check_writable, out / exp.name)  # a former name runs and stores under the name now
            path = run_configured(exp, cfg, args.profile, device, folder, params=params, figure=not args.no_figure)
        except Exception as e:
            if len(names) == 1:
                raise
            failed.append(n)
            tqdm.write(f"FAILED {n} after {time.perf_counter() - t0:.1f} s: {type(e).__name__}: {e}")
            continue
        times[n] = time.perf_counter() - t0
        meta = json.loads(path.with_suffix(".json").read_text())
        figures = meta.get("figures") or []
        if meta.get("claims"):
            tqdm.write(format_claims(meta["claims"]))
        drawn = "" if args.no_figure else (f", {len(figures)} figure{'s' if len(figures) > 1 else ''}" if figures else ", no figure (no plot function)")
        tqdm.write(f"{n}: {times[n]:.1f} s, wrote {path} (+ .json{drawn})")
    if len(names) > 1:
        slowest = sorted(times, key=times.get, reverse=True)[:5]
        print(f"{len(names)} experiments in {time.perf_counter() - t_all:.1f} s wall ({args.profile}, {device}); "
              f"slowest: {', '.join(f'{n} {times[n]:.1f} s' for n in slowest)}")
    if failed:
        print(f"{len(failed)} of {len(names)} experiments failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _sweep_target(exp) -> tuple[Any, str]:
    """What a sweep maps over the grid: the experiment's sweep point, else the whole experiment."""
    if exp.point is not None:
        return exp.point, f"the sweep point of {exp.name} ({exp.point.__module__}.{exp.point.__qualname__})"
    return exp.func, f"experiment {exp.name} (no sweep point: the whole experiment runs at every grid point)"


def _check_grid(exp, axes: dict[str, list[Any]]) -> None:
    """Every --grid name is a parameter of what runs, and every required parameter has an axis."""
    import inspect

    target, what = _sweep_target(exp)
    for key, values in axes.items():
        for v in values:
            _check_counts(exp, {key: v}, "--grid")
    if exp.point is None:  # the whole experiment: the grid overrides its config
        for key, values in axes.items():
            for v in values:
                _checked(exp.configure, "fast", **{key: v})
        return
    params = inspect.signature(target).parameters
    names = [n for n, p in params.items() if n not in _NOT_GRID and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        for key in axes:
            if key not in names:
                raise UsageError(f"--grid {key}=...: {what} has no parameter {key!r}; its parameters: {', '.join(names)}")
    missing = [n for n in names if params[n].default is inspect.Parameter.empty and n not in axes]
    if missing:
        raise UsageError(f"--grid {missing[0]}=... is required: {what} needs {', '.join(missing)}")


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .gpu import resolve_device
    from .registry import get
    from .runner import sweep_configured
    from .store import check_writable, results_dir
    from .sweep import SERIAL, product_grid

    exp = _checked(get, args.name)
    cfg = _checked(exp.configure, args.profile)  # argparse checked the profile: this is its config
    device = _checked(resolve_device, args.device)  # resolved once, here; what runs below trusts it
    axes = dict(args.grid)
    for reserved in ("profile", "device"):
        if reserved in axes:
            raise UsageError(f"--grid {reserved}=...: use --{reserved} instead")
    if not 1 <= args.workers <= MAX_WORKERS:
        raise UsageError(f"--workers must lie in 1..{MAX_WORKERS} (4 per core), got {args.workers}")
    _check_out(args.out)
    if axes:
        _check_grid(exp, axes)
        grid = product_grid(**axes)
    elif exp.grid is not None:
        grid = exp.grid(cfg)
    else:
        raise UsageError(f"--grid is required: {args.name} has no sweep point, so no grid of its own (give at least one --grid KEY=V1,V2)")
    t0 = time.perf_counter()
    scheduler = SERIAL if args.scheduler == SERIAL else args.scheduler
    where = "in this process" if scheduler == SERIAL else (f"on {scheduler}" if scheduler else f"on a LocalCluster of {args.workers} workers")
    folder = _checked(check_writable, (args.out if args.out is not None else results_dir()) / exp.name)
    points, path = sweep_configured(exp, cfg, args.profile, device, grid, folder, scheduler=scheduler,
                                    n_workers=args.workers, figure=not args.no_figure)
    print(f"{args.name}: {len(grid)} points in {points} ({time.perf_counter() - t0:.1f} s wall {where})")
    if path is not None:
        print(f"{args.name}: assembled the points into {path} (+ .json{'' if args.no_figure else ', figures'})")
    return 0


def _cmd_full(args: argparse.Namespace) -> int:
    from .registry import get, registry
    from .gpu import resolve_device
    from .runner import run_profiles

    names = args.names or [n for n, e in registry().items() if e.chapter not in args.skip_chapter]
    for n in names:
        _checked(get, n)
    device = _checked(resolve_device, args.device)
    if not 0 < args.budget <= MAX_BUDGET_MIN:
        raise UsageError(f"--budget must lie in (0, {MAX_BUDGET_MIN}] minutes (a year), got {args.budget}")
    _check_out(args.out)
    t0 = time.perf_counter()
    rows = run_profiles(names, args.profile, device, out=args.out, budget_s=60 * args.budget,
                        log=(lambda s: None) if args.quiet else (lambda s: print(s, flush=True)))
    counts = {k: sum(r["status"] == k for r in rows) for k in ("stored", "ran", "failed", "timeout", "not started")}
    print(f"full: {len(rows)} experiments in {time.perf_counter() - t0:.0f} s ({args.profile}, {device}): "
          + ", ".join(f"{v} {k}" for k, v in counts.items() if v))
    return 1 if counts["failed"] else 0


def _cmd_pack(args: argparse.Namespace) -> int:
    from .transport import pack_results

    if not 0 < args.max_mb <= 2**20 or not 1 <= args.max_files <= 10**4:
        raise UsageError(f"--max-mb must lie in (0, 1048576] and --max-files in 1..10000, got {args.max_mb} and {args.max_files}")
    packs = _checked(pack_results, args.folder, args.to, max_files=args.max_files, max_bytes=int(args.max_mb * 2**20))
    for p in packs:
        print(f"pack: {p} ({p.stat().st_size / 2**20:.1f} MB)")
    return 0


def _cmd_store(args: argparse.Namespace) -> int:
    from .transport import store_packed

    for p in _checked(store_packed, args.packs, args.out):
        print(f"store: {p}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m companion`` and of the ``companion`` script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    helped = any(a in ("-h", "--help") for a in argv)
    parser = build_parser([a for a in argv[1:] if not a.startswith("-")] if helped and argv[:1] == ["run"] else (),
                          sweep_help=helped and argv[:1] == ["sweep"])
    args = parser.parse_args(argv)
    if args.command in ("run", "sweep", "full"):
        from .perf import tune_allocator

        tune_allocator()  # freed tensors are reused, not page-faulted in again every step
    try:
        if args.command == "list":
            return _cmd_list(args)
        if args.command == "run":
            return _cmd_run(args)
        if args.command == "sweep":
            return _cmd_sweep(args)
        return {"full": _cmd_full, "pack": _cmd_pack, "store": _cmd_store}[args.command](args)
    except UsageError as e:  # bad input: a clear message; errors inside experiments keep their traceback
        parser.exit(2, f"{parser.prog} {args.command}: error: {e}\n")


if __name__ == "__main__":
    sys.exit(main())
