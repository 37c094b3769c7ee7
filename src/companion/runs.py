"""Rerunning registered experiments outside the book: results, figures and provenance under data/.

The command line (``python -m companion run NAME``) and the status page are built on these:

* :func:`run_experiment` calls an experiment in a profile and on a device, and writes
  ``<out>/<name>/<profile>.npz`` (arrays), ``<profile>.json`` (provenance: config, versions, commit,
  machine, device, wall time) and ``<profile>.png`` (its figure, when it has a plot function);
* :func:`sweep_experiment` computes an experiment's sweep point by point on Dask
  (:func:`companion.sweep.run_sweep`) and saves what the points assemble into the same way;
* :func:`load_run` reads such a result back (``None`` when there is none), :func:`show_stored` also
  prints where it comes from, for the chapters;
* :func:`figure_sources`, :func:`chapter_times` and :func:`machine` gather what the status page shows.
"""
from __future__ import annotations

import io
import json
import platform
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from .provenance import atomic_write_bytes, load_result, repo_root, save_result
from .report import PROFILES
from .sweep import flatten_result, unflatten_result

__all__ = ["results_dir", "run_experiment", "sweep_experiment", "load_run", "show_stored", "stored_full", "save_figures", "figure_sources",
           "chapter_times", "machine", "run_profiles", "pack_results", "store_packed", "check_writable", "rejudge"]


def results_dir(root: Path | str | None = None) -> Path:
    """``data/results`` of the repository (or of ``root``).

    Examples
    --------
    >>> results_dir("/tmp/clone").as_posix()
    '/tmp/clone/data/results'
    >>> results_dir() == repo_root() / "data" / "results"
    True
    """
    return Path(root) / "data" / "results" if root is not None else repo_root() / "data" / "results"


def _check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    return profile


def save_figures(plot, result: Mapping[str, Any], path: Path) -> list[Path]:
    """Draw ``plot(result)`` off screen and write every figure it opened (``path``, ``path-2``...).

    Plot functions of the chapters take ``ax=`` or ``axes=`` and may open several figures, so the
    figures are collected from pyplot rather than passed in.

    Examples
    --------
    >>> import tempfile
    >>> def plot(result):  # one figure per curve
    ...     import matplotlib.pyplot as plt
    ...     for y in result["curves"]:
    ...         plt.subplots()[1].plot(y)
    >>> paths = save_figures(plot, {"curves": [[0, 1], [1, 0]]}, Path(tempfile.mkdtemp()) / "fig.png")
    >>> [p.name for p in paths], [p.read_bytes()[:4] for p in paths]
    (['fig.png', 'fig-2.png'], [b'\x89PNG', b'\x89PNG'])
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    path = Path(path)
    plt.close("all")
    plot(dict(result))
    written = []
    for i, num in enumerate(plt.get_fignums()):
        fig = plt.figure(num)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        p = path if i == 0 else path.with_name(f"{path.stem}-{i + 1}{path.suffix}")
        written.append(atomic_write_bytes(p, buf.getvalue()))
    plt.close("all")
    for old in path.parent.glob(f"{path.stem}-*{path.suffix}"):  # figures of an earlier run that drew more
        if old not in written and old.stem[len(path.stem) + 1:].isdigit():
            old.unlink()
    return written


def _save_run(exp, profile: str, device: str, result: Mapping[str, Any], folder: Path, params: Mapping[str, Any],
              wall: float, figure: bool, **extra: Any) -> Path:
    claims = [c.as_dict() for c in exp.judge(result)]
    arrays, other = flatten_result(result)
    figures: list[str] = []
    if figure and exp.plot is not None:
        figures = [p.name for p in save_figures(exp.plot, result, folder / f"{profile}.png")]
    config = {"experiment": exp.name, "chapter": exp.chapter, "profile": profile, "device": device, "params": dict(params)}
    seed = (result.get("config") or {}).get("seed", params.get("seed"))
    return save_result(folder / f"{profile}.npz", arrays, config=config, seed=seed,
                       other=other, wall_time_s=round(wall, 3), figures=figures, claims=claims, **extra)


def check_writable(folder: Path) -> Path:
    """``folder`` (created if missing) when this process can write into it; else a ValueError naming it.

    Called before an experiment runs, so a result is never computed only to be lost.

    Examples
    --------
    >>> import tempfile
    >>> check_writable(Path(tempfile.mkdtemp()) / "a" / "b").is_dir()
    True
    """
    import os
    import tempfile

    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ValueError(f"results folder {folder} is not writable ({e.strerror or e}); choose another with --out") from None
    return folder


def run_experiment(
    name: str,
    profile: str = "fast",
    device: str = "cpu",
    *,
    out: Path | str | None = None,
    params: Mapping[str, Any] | None = None,
    figure: bool = True,
) -> Path:
    """Run the registered experiment ``name`` and save result, figure and provenance.

    Parameters
    ----------
    name : a name from :func:`companion.experiments.registry`.
    profile : ``"fast"`` or ``"full"``.
    device : ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (checked by :func:`companion.gpu.resolve_device`).
    out : results folder (default ``data/results``); files go to ``out/<name>/<profile>.*``.
    params : extra keyword arguments for the experiment (recorded in the provenance).
    figure : also draw the experiment's plot function, if it has one.

    Returns
    -------
    Path of the .npz written (its provenance JSON and figure beside it).

    Examples
    --------
    The introduction's consensus check, shortened (4 tokens to t = 1), into a scratch folder:

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> path = run_experiment("intro-consensus", "fast", out=out, params={"n": 4, "t1": 1.0})
    >>> path.relative_to(out).as_posix(), sorted(p.name for p in path.parent.iterdir())
    ('intro-consensus/fast.npz', ['fast.json', 'fast.npz', 'fast.png'])
    >>> meta = json.loads(path.with_suffix(".json").read_text())
    >>> meta["config"]["params"], meta["figures"], meta["wall_time_s"] >= 0
    ({'n': 4, 't1': 1.0}, ['fast.png'], True)
    """
    from .experiments import get, writing_to
    from .gpu import resolve_device

    exp = get(name)
    _check_profile(profile)
    device = resolve_device(device)
    params = dict(params or {})
    exp.configure(profile, **params)  # unknown keys and wrong types refused before anything runs
    folder = check_writable((Path(out) if out is not None else results_dir()) / name)
    import os

    load0, c0, t0 = os.getloadavg()[0], time.process_time(), time.perf_counter()
    with writing_to(folder):  # a long experiment may keep finished pieces there and resume from them
        result = exp.run(profile, device, **params)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    # CPU time and the load average beside the wall time: a run timed on a busy machine says so.
    return _save_run(exp, profile, device, result, folder, params, wall, figure, cpu_time_s=round(cpu, 1),
                     load_average=[round(load0, 2), round(os.getloadavg()[0], 2)])


def sweep_experiment(
    name: str,
    grid: Sequence[Mapping[str, Any]],
    profile: str = "fast",
    device: str = "cpu",
    *,
    out: Path | str | None = None,
    scheduler: Any = None,
    n_workers: int = 2,
    figure: bool = True,
    progress: bool = True,
) -> tuple[Path, Path | None]:
    """Compute the registered experiment ``name`` over ``grid`` with :func:`companion.sweep.run_sweep`.

    An experiment with a sweep point (:func:`companion.experiments.sweep_point`) is computed one
    point per task, and the points assemble into its result, saved like :func:`run_experiment`'s
    (``out/<name>/<profile>.npz``, figure, provenance naming the grid). Any other experiment is run
    whole at every grid point (the grid then sets its keyword arguments), and nothing is assembled.

    Parameters
    ----------
    grid : points, dicts of parameter values (:func:`companion.sweep.product_grid`); ``profile``
        and ``device`` are passed to every point and may not appear in it.
    out : results folder (default ``data/results``): the points go to ``out/<name>/sweep-<profile>/``.
    scheduler, n_workers, progress : as in :func:`companion.sweep.run_sweep` (``"serial"``: no Dask).

    Returns
    -------
    (folder of the points, path of the assembled .npz or None).

    Examples
    --------
    Two seeds of the smallest N of the metastable chapter's ln N law, in this process:

    >>> import tempfile
    >>> from companion.sweep import product_grid
    >>> root = Path(tempfile.mkdtemp())
    >>> grid = product_grid(n=[1000], seed=[0, 1], trials=[2])
    >>> points, path = sweep_experiment("metastable-lnN", grid, out=results_dir(root), scheduler="serial",
    ...                                 figure=False, progress=False)
    >>> sorted(p.suffix for p in points.iterdir()), path.relative_to(root).as_posix()
    (['.json', '.json', '.npz', '.npz'], 'data/results/metastable-lnN/fast.npz')
    >>> result, meta = load_run("metastable-lnN", "fast", root=root)
    >>> result["ns"].tolist(), result["trials"].tolist(), meta["sweep"]["points"], meta["sweep"]["axes"]
    ([1000], [4], 2, {'n': [1000], 'seed': [0, 1], 'trials': [2]})
    """
    import functools

    from .experiments import get
    from .gpu import resolve_device
    from .sweep import run_sweep

    exp = get(name)
    _check_profile(profile)
    device = resolve_device(device)
    grid = [dict(p) for p in grid]
    for p in grid:
        for reserved in ("profile", "device"):
            if reserved in p:
                raise ValueError(f"grid points may not set {reserved!r}: it is the sweep's {reserved} argument")
    folder = check_writable((Path(out) if out is not None else results_dir()) / name)
    cfg = exp.configure(profile)
    if exp.point is not None:
        target = exp.point
        task = functools.partial(exp.point, cfg, device=device)
    else:
        target = exp.func
        task = functools.partial(target, profile=profile, device=device)
    t0 = time.perf_counter()
    results = run_sweep(task, grid, folder / f"sweep-{profile}", scheduler=scheduler, n_workers=n_workers, progress=progress)
    if exp.assemble is None:
        return folder / f"sweep-{profile}", None
    points = [{k: v for k, v in r.items() if k != "_provenance"} for r in results]
    result = exp.stamp(exp.assemble(points, cfg), cfg, profile)
    axes: dict[str, list[Any]] = {}
    for p in grid:
        for k, v in p.items():
            if v not in axes.setdefault(k, []):
                axes[k].append(v)
    path = _save_run(exp, profile, device, result, folder, {}, time.perf_counter() - t0, figure,
                     sweep={"points": len(grid), "axes": axes, "folder": f"sweep-{profile}",
                            "point_function": f"{target.__module__}.{target.__qualname__}"})
    return folder / f"sweep-{profile}", path


def load_run(name: str, profile: str = "full", root: Path | str | None = None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The result dict and provenance saved by :func:`run_experiment`, or None if there is none.

    Lists come back as numpy arrays and 0-d arrays as Python scalars.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> load_run("intro-consensus", "fast", root=root) is None  # nothing stored yet
    True
    >>> _ = run_experiment("intro-consensus", "fast", out=results_dir(root), params={"n": 4, "t1": 1.0}, figure=False)
    >>> result, meta = load_run("intro-consensus", "fast", root=root)
    >>> result["max_mass_error"] < 1e-8, result["p_sim"].shape, meta["config"]["experiment"]
    (True, (21, 3), 'intro-consensus')
    """
    return _load_from(results_dir(root), name, profile)


def _load_from(folder: Path, name: str, profile: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """:func:`load_run` from the results folder ``folder`` itself."""
    path = folder / name / f"{_check_profile(profile)}.npz"
    try:
        arrays, meta = load_result(path)
    except FileNotFoundError:
        return None
    stored = (meta.get("config") or {})
    if (stored.get("experiment"), stored.get("profile")) != (name, profile):  # a verified pair, but another run's
        raise ValueError(f"{path}: holds the {stored.get('profile')!r} result of {stored.get('experiment')!r}, "
                         f"not the {profile!r} result of {name!r}")
    return unflatten_result(arrays, meta.get("other")), meta


def stale_reason(name: str, profile: str = "full", folder: Path | str | None = None) -> str | None:
    """Why the ``profile`` result of ``name`` stored in ``folder`` (default ``data/results``) is not the
    current one, or None when it is.

    A result is current when it verifies and was computed with the profile's config as declared now
    (same parameters, no overrides): changing a profile makes its stored result stale, and
    :func:`run_profiles` computes it again.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> stale_reason("intro-consensus", "fast", folder)
    'nothing stored'
    >>> _ = run_experiment("intro-consensus", "fast", out=folder, figure=False)
    >>> stale_reason("intro-consensus", "fast", folder) is None
    True
    >>> _ = run_experiment("intro-consensus", "fast", out=folder, params={"n": 4}, figure=False)
    >>> stale_reason("intro-consensus", "fast", folder)
    "computed with parameters {'n': 4}, not the profile's: n = 4 (the profile has 64)"
    """
    try:
        stored = _load_from(Path(folder) if folder is not None else results_dir(), name, profile)
    except (OSError, ValueError) as e:
        return f"does not verify ({e})"
    return _stale(name, profile, stored)


def _stale(name: str, profile: str, stored: tuple[dict[str, Any], dict[str, Any]] | None) -> str | None:
    """:func:`stale_reason` for a result already loaded (``stored``: :func:`load_run`'s pair or None)."""
    import dataclasses

    from .experiments import get

    if stored is None:
        return "nothing stored"
    result, meta = stored
    exp = get(name)
    now = dataclasses.asdict(exp.configure(profile))
    then = dataclasses.asdict(exp.config_of(result))
    differ = [f"{k} = {then[k]!r} (the profile has {now[k]!r})" for k in now if _plain(then.get(k)) != _plain(now[k])]
    params = (meta.get("config") or {}).get("params") or {}
    if params or differ:
        head = f"computed with parameters {params}, not the profile's" if params else "the profile changed since"
        return head + (": " + "; ".join(differ) if differ else "")
    return None


def _plain(value: Any) -> Any:
    """JSON-comparable form of a config value (tuples and arrays as lists)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    return value


def show_stored(name: str, profile: str = "full", root: Path | str | None = None) -> dict[str, Any] | None:
    """Load a stored result for a chapter and print one line saying where it comes from.

    Prints the commit, date, device and run time from the provenance, or, when nothing is stored,
    the command that makes it. Returns the result dict (see :func:`load_run`) or None.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> show_stored("intro-consensus", root=root) is None
    no stored full-profile result; run: python -m companion run intro-consensus --profile full
    True
    >>> _ = run_experiment("intro-consensus", "full", out=results_dir(root), params={"n": 4, "t1": 1.0}, figure=False)
    >>> result = show_stored("intro-consensus", root=root)  # doctest: +ELLIPSIS
    stored full profile: commit ..., device cpu, ... s
    >>> result["p_sim"].shape
    (21, 3)
    """
    stored = load_run(name, profile, root)
    if stored is None:
        print(f"no stored {profile}-profile result; run: python -m companion run {name} --profile {profile}")
        return None
    result, meta = stored
    print(_stored_line(name, profile, meta, root))
    return result


def _stored_line(name: str, profile: str, meta: Mapping[str, Any], root: Path | str | None) -> str:
    """Where a stored result comes from: commit, date, device and run time (its parts' included)."""
    wall, _, parts = _parts_times(results_dir(root) / name / "parts")
    took = (f"{meta['wall_time_s'] + wall:.0f} s ({parts} parts, {wall:.0f} s, then assembled)" if parts
            else f"{meta['wall_time_s']:.0f} s")
    return (f"stored {profile} profile: commit {(meta.get('commit') or '?')[:10]}, {meta.get('created', '?')[:10]}, "
            f"device {meta['config']['device']}, {took}")


def stored_full(name: str, root: Path | str | None = None) -> dict[str, Any] | None:
    """The stored full-profile result of ``name`` when it verifies and is current (:func:`stale_reason`),
    else None; prints one line saying where it comes from, or why none is used. Reads the file once.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> stored_full("intro-consensus", root) is None
    intro-consensus: no stored full-profile result; run: python -m companion run intro-consensus --profile full
    True
    >>> _ = run_experiment("intro-consensus", "full", out=results_dir(root), figure=False)
    >>> stored_full("intro-consensus", root)["profile"]  # doctest: +ELLIPSIS
    intro-consensus: stored full profile: commit ..., device cpu, ... s
    'full'
    """
    try:
        stored = _load_from(results_dir(root), name, "full")
    except (OSError, ValueError) as e:
        stored, reason = None, f"does not verify ({e})"
    else:
        reason = _stale(name, "full", stored)
    if reason is not None:
        print(f"{name}: " + (f"no stored full-profile result; run: python -m companion run {name} --profile full"
                             if reason == "nothing stored" else f"stored full-profile result not used: {reason}"))
        return None
    result, meta = stored
    print(f"{name}: " + _stored_line(name, "full", meta, root))
    return result


def paper_scale(result: Mapping[str, Any], root: Path | str | None = None, *, draw: bool = True) -> dict[str, Any]:
    """The stored full-profile result of ``result``'s experiment when one is stored and current, else
    ``result`` itself: what a chapter judges and records (the paper-scale measurement where there is one).

    Prints where it comes from (:func:`show_stored`'s line, or why a stored one is not used); with
    ``draw``, draws the stored result with the experiment's plot function and prints its verdicts.

    Examples
    --------
    >>> import tempfile
    >>> from companion.experiments import get
    >>> root = Path(tempfile.mkdtemp())
    >>> fast = get("intro-consensus").run("fast", n=4, t1=1.0)
    >>> paper_scale(fast, root)["profile"]
    intro-consensus: no stored full-profile result; run: python -m companion run intro-consensus --profile full
    'custom'
    >>> _ = run_experiment("intro-consensus", "full", out=results_dir(root), params={"n": 4}, figure=False)
    >>> paper_scale(fast, root)["profile"]  # computed with other parameters than the full profile's
    intro-consensus: stored full-profile result not used: computed with parameters {'n': 4}, not the profile's: n = 4 (the profile has 64)
    'custom'
    >>> _ = run_experiment("intro-consensus", "full", out=results_dir(root), figure=False)
    >>> full = paper_scale(fast, root, draw=False)  # doctest: +ELLIPSIS
    intro-consensus: stored full profile: commit ..., device cpu, ... s
    >>> full["profile"], full["p_sim"].shape
    ('full', (21, 3))
    """
    from .experiments import get
    from .ledger import format_claims

    name = str(result["experiment"])
    full = stored_full(name, root)
    if full is None:
        return dict(result)
    exp = get(name)
    if draw:
        if exp.plot is not None:
            exp.plot(full)
        print(format_claims([c.as_dict() for c in exp.judge(full)]))
    return full


def figure_sources(profile: str, root: Path | str | None = None) -> list[dict[str, Any]]:
    """For every registered experiment: which profile and device its figure in the book comes from.

    A chapter shows a stored full-profile result when ``data/results/<name>/full.json`` exists (made
    by ``python -m companion run NAME --profile full``, its device in the provenance); otherwise it
    computes the experiment while it executes, in the book's ``profile``, on the CPU. Each row also
    has the stored wall times (``fast_s``, ``full_s``), the full run's CPU time and load average
    (``full_cpu_s``, ``load``: None for runs stored before they were recorded) and the paper-scale
    note of the experiment's :class:`~companion.experiments.PaperScale` (``paper``). An experiment
    computed in parts (``<name>/parts/*.json``, e.g. one LoRA run each) adds its parts' wall and CPU
    times to the full run's, which then only assembled them; ``parts`` counts them (0 otherwise). Where
    the full result is not assembled yet, ``parts`` counts the parts stored so far and ``parts_s`` sums
    their wall times (None without parts).

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = run_experiment("intro-consensus", "full", out=results_dir(root), params={"n": 4, "t1": 1.0}, figure=False)
    >>> rows = {r["experiment"]: r for r in figure_sources("fast", root=root)}
    >>> [(r["profile"], r["device"], r["source"]) for r in (rows["intro-consensus"], rows["intro-clustering"])]
    [('full', 'cpu', 'data/results/intro-consensus/full.npz'), ('fast', 'cpu', 'computed while the chapter executes')]
    >>> rows["intro-consensus"]["full_s"] > 0, rows["intro-consensus"]["fast_s"], rows["intro-consensus"]["verdicts"]
    (True, None, {'reproduced': 2})
    """
    from .experiments import registry

    rows = []
    for name, exp in registry().items():
        meta_path = results_dir(root) / name / "full.json"
        fast_s = _wall_time(results_dir(root) / name / "fast.json")
        paper = exp.paper.note if exp.paper is not None else ""
        parts_wall, parts_cpu, parts = _parts_times(results_dir(root) / name / "parts")
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
            dev = str((meta.get("config") or {}).get("device", "?"))
            if dev.startswith("cuda"):  # the provenance names the GPU model
                dev = str(meta.get("cuda_device") or meta.get("device") or dev)
            verdicts = [c.get("status") for c in meta.get("claims") or []]
            full_s, full_cpu_s = meta.get("wall_time_s"), meta.get("cpu_time_s")
            rows.append({"experiment": name, "chapter": exp.chapter, "profile": "full",
                         "device": dev, "source": f"data/results/{name}/full.npz",
                         "commit": (meta.get("commit") or "?")[:10], "created": meta.get("created", "?"),
                         "fast_s": fast_s, "full_s": None if full_s is None else full_s + parts_wall,
                         "full_cpu_s": None if full_cpu_s is None else full_cpu_s + parts_cpu, "parts": parts,
                         "load": meta.get("load_average"), "paper": paper,
                         "verdicts": {v: verdicts.count(v) for v in dict.fromkeys(verdicts)}})
        else:
            rows.append({"experiment": name, "chapter": exp.chapter, "profile": profile, "device": "cpu",
                         "source": "computed while the chapter executes", "commit": "", "created": "",
                         "fast_s": fast_s, "full_s": None, "full_cpu_s": None, "load": None, "paper": paper,
                         "verdicts": {}, "parts": parts, "parts_s": parts_wall if parts else None})
    return rows


def _parts_times(folder: Path) -> tuple[float, float, int]:
    """Summed wall and CPU times (s) of the parts stored in ``folder`` and their number (0, 0, 0 if none)."""
    wall = cpu = 0.0
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for path in paths:
        meta = json.loads(path.read_text())
        wall += float(meta.get("wall_time_s") or 0.0)
        cpu += float(meta.get("cpu_time_s") or 0.0)
    return wall, cpu, len(paths)


def _wall_time(meta_path: Path) -> float | None:
    """The wall time a stored run recorded, None when nothing (readable) is stored."""
    try:
        return float(json.loads(meta_path.read_text())["wall_time_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def chapter_times(chapters: Path | str | None = None) -> list[dict[str, Any]]:
    """Execution time of each committed reference notebook, and the machine that executed it.

    ``book/_scripts/refresh.py`` (``make refresh``) writes ``metadata.companion`` into each
    reference notebook: ``execution_seconds``, ``executed`` (UTC), ``machine``, ``profile``.
    Notebooks executed otherwise fall back to nbclient's per-cell timestamps, when recorded.

    Returns one row per ``book/chapters/*.ipynb``: ``chapter``, ``cells`` (code cells),
    ``seconds`` (None if unknown), ``executed``, ``machine`` and ``profile`` (None if unknown).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> rec = {"execution_seconds": 18.5, "executed": "2026-11-29 10:00 UTC", "machine": "x86_64, 2 CPUs", "profile": "fast"}
    >>> cell = {"cell_type": "code", "metadata": {"execution": {
    ...     "iopub.execute_input": "2026-11-29T10:00:00Z", "shell.execute_reply": "2026-11-29T10:00:04.25Z"}}}
    >>> _ = (folder / "a.ipynb").write_text(json.dumps({"metadata": {"companion": rec}, "cells": [cell, cell]}))
    >>> _ = (folder / "b.ipynb").write_text(json.dumps({"metadata": {}, "cells": [cell]}))
    >>> [(r["chapter"], r["cells"], r["seconds"], r["profile"]) for r in chapter_times(folder)]
    [('a', 2, 18.5, 'fast'), ('b', 1, 4.25, None)]
    """
    from datetime import datetime

    folder = Path(chapters) if chapters is not None else repo_root() / "book" / "chapters"
    rows = []
    for nb in sorted(folder.glob("*.ipynb")):
        doc = json.loads(nb.read_text())
        cells = [c for c in doc.get("cells", []) if c.get("cell_type") == "code"]
        rec = doc.get("metadata", {}).get("companion") or {}
        if "execution_seconds" in rec:
            rows.append({"chapter": nb.stem, "cells": len(cells), "seconds": float(rec["execution_seconds"]),
                         "executed": rec.get("executed"), "machine": rec.get("machine"), "profile": rec.get("profile")})
            continue
        stamps = []
        for c in cells:
            ex = c.get("metadata", {}).get("execution", {})
            a, b = ex.get("iopub.execute_input"), ex.get("shell.execute_reply")
            if a and b:
                stamps.append((datetime.fromisoformat(a.replace("Z", "+00:00")), datetime.fromisoformat(b.replace("Z", "+00:00"))))
        seconds = (max(b for _, b in stamps) - min(a for a, _ in stamps)).total_seconds() if stamps else None
        last = max(b for _, b in stamps).strftime("%Y-%m-%d %H:%M UTC") if stamps else None
        rows.append({"chapter": nb.stem, "cells": len(cells), "seconds": seconds, "executed": last, "machine": None, "profile": None})
    return rows


def machine() -> dict[str, Any]:
    """The machine this process runs on: platform, CPUs, Python, torch and its accelerator.

    Examples
    --------
    >>> import os, torch
    >>> m = machine()
    >>> sorted(m)
    ['accelerator', 'cpus', 'platform', 'processor', 'python', 'torch', 'torch threads']
    >>> m["cpus"] == os.cpu_count(), m["torch"] == torch.__version__, m["python"] == platform.python_version()
    (True, True, True)
    """
    import os

    import torch

    from .gpu import cuda_summary

    return {
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpus": os.cpu_count(),
        "torch threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "accelerator": cuda_summary(),
    }


def run_profiles(names: Sequence[str], profile: str = "full", device: str = "cpu", *, out: Path | str | None = None,
                 budget_s: float = 720.0, skip_stored: bool = True, python: str | None = None,
                 log=print) -> list[dict[str, Any]]:
    """Run each experiment of ``names`` in ``profile``, one subprocess each, within ``budget_s`` seconds.

    An experiment already stored (and verified) in ``out`` is skipped when ``skip_stored``; each
    subprocess is ``python -m companion run NAME`` with a timeout of the budget left, so a run that
    would overrun is stopped and nothing half-written is kept (results are written atomically, JSON
    last). Resumable: call it again and it continues with what is missing. Returns one row per name:
    ``name``, ``status`` (``stored``, ``ran``, ``failed``, ``timeout``, ``not started``) and ``seconds``.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> rows = run_profiles(["intro-consensus"], "fast", out=out, budget_s=300, log=lambda s: None)
    >>> [(r["name"], r["status"]) for r in rows], sorted(p.name for p in (out / "intro-consensus").iterdir())
    ([('intro-consensus', 'ran')], ['fast.json', 'fast.npz', 'fast.png'])
    >>> [r["status"] for r in run_profiles(["intro-consensus"], "fast", out=out, log=lambda s: None)]
    ['stored']
    """
    import subprocess
    import sys

    _check_profile(profile)
    out = Path(out) if out is not None else results_dir()
    python = python or sys.executable
    deadline = time.monotonic() + float(budget_s)
    rows = []
    for name in names:
        if skip_stored and (out / name / f"{profile}.json").exists():
            reason = stale_reason(name, profile, out)
            if reason is None:
                rows.append({"name": name, "status": "stored", "seconds": 0.0})
                log(f"{name}: stored already, skipped")
                continue
            log(f"{name}: stored result is stale ({reason}); recomputing")
        left = deadline - time.monotonic()
        if left < 1:
            rows.append({"name": name, "status": "not started", "seconds": 0.0})
            continue
        t0 = time.monotonic()
        cmd = [python, "-m", "companion", "run", name, "--profile", profile, "--device", device, "--out", str(out)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
            status = "ran" if proc.returncode == 0 else "failed"
            detail = "" if proc.returncode == 0 else " " + (proc.stderr.strip().splitlines() or ["?"])[-1]
        except subprocess.TimeoutExpired:
            status, detail = "timeout", f" (budget of {budget_s:.0f} s spent)"
        seconds = time.monotonic() - t0
        rows.append({"name": name, "status": status, "seconds": round(seconds, 1)})
        log(f"{name}: {status} in {seconds:.1f} s{detail}")
    return rows


def pack_results(folder: Path | str, dest: Path | str, *, max_files: int = 8, max_bytes: int = 16 * 2**20) -> list[Path]:
    """Pack every verified result under ``folder`` (``<name>/<profile>.*``) into at most ``max_files``
    gzipped tar files of at most ``max_bytes`` each, written to ``dest``.

    For bringing results back from a remote machine that returns a few small files. A result that does
    not verify is left out; one that alone exceeds ``max_bytes`` compressed raises ValueError.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> _ = run_experiment("intro-consensus", "fast", out=out / "results", params={"n": 4, "t1": 1.0})
    >>> packs = pack_results(out / "results", out / "packed")
    >>> [p.name for p in packs]
    ['results-1.tar.gz']
    >>> stored = store_packed(packs, Path(tempfile.mkdtemp()))
    >>> [p.relative_to(p.parents[1]).as_posix() for p in stored]
    ['intro-consensus/fast.npz']
    """
    import gzip
    import tarfile

    folder, dest = Path(folder), Path(dest)
    units = []
    for meta in sorted(folder.glob("*/*.json")):
        npz = meta.with_suffix(".npz")
        try:
            _, info = load_result(npz)
        except (OSError, ValueError):
            continue
        files = [meta, npz] + [meta.parent / f for f in (info.get("figures") or [])]
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for f in files:
                tar.add(f, arcname=f.relative_to(folder).as_posix())
        size = len(gzip.compress(buf.getvalue(), compresslevel=9))
        if size > max_bytes:
            raise ValueError(f"{npz}: {size / 2**20:.1f} MB compressed, more than max_bytes = {max_bytes / 2**20:.1f} MB")
        units.append((size, files))
    bins: list[list] = []  # first fit, largest first
    for size, files in sorted(units, key=lambda u: -u[0]):
        for b in bins:
            if b[0] + size <= max_bytes:
                b[0] += size
                b[1].extend(files)
                break
        else:
            bins.append([size, list(files)])
    if len(bins) > max_files:
        raise ValueError(f"{len(units)} results need {len(bins)} files of at most {max_bytes / 2**20:.0f} MB; max_files = {max_files}")
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for i, (_, files) in enumerate(bins, 1):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for f in files:
                tar.add(f, arcname=f.relative_to(folder).as_posix())
        written.append(atomic_write_bytes(dest / f"results-{i}.tar.gz", buf.getvalue()))
    return written


def store_packed(packs: Sequence[Path | str], root: Path | str | None = None) -> list[Path]:
    """Unpack files made by :func:`pack_results` into ``root`` (default ``data/results``), verifying
    each result before it replaces anything; returns the .npz paths stored (a round trip: :func:`pack_results`).

    Examples
    --------
    A pack whose result was altered after packing is refused, naming the file:

    >>> import tarfile, tempfile
    >>> tmp = Path(tempfile.mkdtemp())
    >>> _ = run_experiment("intro-consensus", "fast", out=tmp / "r", params={"n": 4, "t1": 0.5}, figure=False)
    >>> _ = (tmp / "r" / "intro-consensus" / "fast.npz").write_bytes(b"altered")
    >>> with tarfile.open(tmp / "bad.tar.gz", "w:gz") as tar:
    ...     tar.add(tmp / "r" / "intro-consensus", arcname="intro-consensus")
    >>> store_packed([tmp / "bad.tar.gz"], tmp / "stored")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    companion.provenance.ResultError: ...fast.npz...
    >>> (tmp / "stored").exists()
    False
    """
    import tarfile
    import tempfile

    root = Path(root) if root is not None else results_dir()
    stored = []
    for pack in packs:
        with tempfile.TemporaryDirectory() as tmp, tarfile.open(pack, mode="r:gz") as tar:
            tar.extractall(tmp, filter="data")  # no absolute paths, links or devices
            for meta in sorted(Path(tmp).glob("*/*.json")):
                npz = meta.with_suffix(".npz")
                _, info = load_result(npz)  # raises, naming the file, if it does not verify
                target = root / meta.parent.name
                for f in [npz] + [meta.parent / n for n in (info.get("figures") or [])] + [meta]:  # JSON last
                    atomic_write_bytes(target / f.name, f.read_bytes())
                stored.append(target / npz.name)
    return stored


def rejudge(name: str, profile: str = "full", root: Path | str | None = None, *, write: bool = False) -> tuple[list, list]:
    """The verdicts stored with a result against those its claims function gives now.

    Returns ``(stored, current)`` as lists of ledger rows (dicts). With ``write=True`` the stored
    rows are replaced by the current ones (the JSON is rewritten atomically; the hashes of the npz and
    figures, which the verdicts do not enter, stay valid): verdicts are derived from the stored
    numbers, so a changed claims function needs no recomputation, only this.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = run_experiment("intro-consensus", "full", out=results_dir(root), params={"n": 4, "t1": 1.0}, figure=False)
    >>> stored, current = rejudge("intro-consensus", root=root)
    >>> stored == current, [r["status"] for r in current]
    (True, ['reproduced', 'reproduced'])
    """
    from .experiments import get
    from .provenance import atomic_write_text

    loaded = load_run(name, profile, root)
    if loaded is None:
        raise FileNotFoundError(f"no stored {profile!r} result of {name!r} under {results_dir(root)}")
    result, meta = loaded
    current = [c.as_dict() for c in get(name).judge(result)]
    stored = list(meta.get("claims") or [])
    if write and stored != current:
        meta["claims"] = current
        atomic_write_text(results_dir(root) / name / f"{profile}.json", json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return stored, current
