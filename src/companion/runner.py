"""Running registered experiments outside the book, one at a time, over a grid, or every missing one.

* :func:`run_experiment` calls an experiment in a profile and on a device, judges it, draws it and
  hands the store the result, its ledger rows and its figures (:func:`companion.store.save_run`:
  ``<out>/<name>/<profile>.npz``, ``.json``, ``.png``);
* :func:`sweep_experiment` computes an experiment's sweep point by point on Dask
  (:func:`companion.sweep.run_sweep`) and stores what the points assemble into the same way;
* :func:`run_profiles` runs every experiment whose stored result is missing or stale, one
  subprocess each, within a time budget; :func:`rejudge` re-derives stored verdicts.

The public functions check their arguments once, at their entry (the profile through
:meth:`~companion.registry.Experiment.configure`, the device through :func:`companion.gpu.resolve_device`);
what they call trusts them. The command line checks its own once and calls :func:`run_configured` and
:func:`sweep_configured`.
"""
from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from .store import check_writable, code_status, code_version, load_run, results_dir, save_run, stale_reason

__all__ = ["run_experiment", "run_configured", "draw_figures", "sweep_experiment", "sweep_configured", "run_profiles", "rejudge"]


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
    name : a name from :func:`companion.registry.registry`.
    profile : ``"fast"`` or ``"full"``.
    device : ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"`` (checked by :func:`companion.gpu.resolve_device`).
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
    >>> run_experiment("intro-consensus", "paper")
    Traceback (most recent call last):
    ...
    ValueError: profile must be one of ('fast', 'full'), got 'paper'
    """
    from .gpu import resolve_device
    from .registry import get

    exp = get(name)
    params = dict(params or {})
    cfg = exp.configure(profile, **params)  # the profile, unknown keys and wrong types refused before anything runs
    device = resolve_device(device)
    folder = check_writable((Path(out) if out is not None else results_dir()) / exp.name)  # a former name: the name now
    return run_configured(exp, cfg, profile, device, folder, params=params, figure=figure)


def run_configured(exp, cfg: Any, profile: str, device: str, folder: Path, *, params: Mapping[str, Any] | None = None,
                   figure: bool = True) -> Path:
    """:func:`run_experiment` for arguments already checked: ``exp`` a registered experiment, ``cfg`` its
    :meth:`~companion.registry.Experiment.configure` of ``profile`` with ``params``, ``device`` what
    :func:`companion.gpu.resolve_device` returned, ``folder`` the experiment's results folder
    (:func:`companion.store.check_writable`). Nothing is checked again.

    Examples
    --------
    >>> import tempfile
    >>> from companion.registry import get
    >>> exp = get("intro-consensus")
    >>> folder = Path(tempfile.mkdtemp()) / exp.name
    >>> path = run_configured(exp, exp.configure("fast", n=4, t1=1.0), "fast", "cpu", folder, params={"n": 4, "t1": 1.0},
    ...                       figure=False)
    >>> path.name, json.loads(path.with_suffix(".json").read_text())["config"]["device"]
    ('fast.npz', 'cpu')
    """
    import os

    from .registry import writing_to

    params = dict(params or {})
    code = code_version(exp)  # the code as it is when the run starts (a file edited meanwhile is not what ran)
    load0, c0, t0 = os.getloadavg()[0], time.process_time(), time.perf_counter()
    with writing_to(folder):  # a long experiment may keep finished pieces there and resume from them
        result = exp.compute(cfg, profile, device)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    # CPU time and the load average beside the wall time: a run timed on a busy machine says so.
    return _store(exp, profile, device, result, folder, params, wall, figure, cpu_time_s=round(cpu, 1),
                  load_average=[round(load0, 2), round(os.getloadavg()[0], 2)], code=code)


def draw_figures(plot, result: Mapping[str, Any]) -> list[bytes]:
    """Draw ``plot(result)`` off screen and return every figure it opened as PNG bytes, in order.

    Plot functions of the chapters take ``ax=`` or ``axes=`` and may open several figures, so the
    figures are collected from pyplot rather than passed in.

    Examples
    --------
    >>> def plot(result):  # one figure per curve
    ...     import matplotlib.pyplot as plt
    ...     for y in result["curves"]:
    ...         plt.subplots()[1].plot(y)
    >>> [png[:4] for png in draw_figures(plot, {"curves": [[0, 1], [1, 0]]})]
    [b'\x89PNG', b'\x89PNG']
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.close("all")
    plot(dict(result))
    pngs = []
    for num in plt.get_fignums():
        buf = io.BytesIO()
        plt.figure(num).savefig(buf, format="png", dpi=110, bbox_inches="tight")
        pngs.append(buf.getvalue())
    plt.close("all")
    return pngs


def _store(exp, profile: str, device: str, result: Mapping[str, Any], folder: Path, params: Mapping[str, Any],
           wall: float, figure: bool, **extra: Any) -> Path:
    """Judge ``result`` (the ledger rows of ``exp``'s claims), draw it (when ``figure``) and hand all of it
    to :func:`companion.store.save_run` with its provenance (config, ``params``, device, wall time, ``extra``)."""
    claims = [c.as_dict() for c in exp.judge(result)]
    figures = draw_figures(exp.plot, result) if figure and exp.plot is not None else []
    config = {"experiment": exp.name, "chapter": exp.chapter, "profile": profile, "device": device, "params": dict(params)}
    seed = (result.get("config") or {}).get("seed", params.get("seed"))
    return save_run(folder, result, config, claims=claims, figures=figures, seed=seed, wall_time_s=round(wall, 3), **extra)


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

    An experiment with a sweep point (:func:`companion.registry.sweep_point`) is computed one
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
    >>> points, path = sweep_experiment("metastable-ln-n", grid, out=results_dir(root), scheduler="serial",
    ...                                 figure=False, progress=False)
    >>> sorted(p.suffix for p in points.iterdir()), path.relative_to(root).as_posix()
    (['.json', '.json', '.npz', '.npz'], 'data/results/metastable-ln-n/fast.npz')
    >>> result, meta = load_run("metastable-ln-n", "fast", root=root)
    >>> result["ns"].tolist(), result["trials"].tolist(), meta["sweep"]["points"], meta["sweep"]["axes"]
    ([1000], [4], 2, {'n': [1000], 'seed': [0, 1], 'trials': [2]})
    """
    from .gpu import resolve_device
    from .registry import get

    exp = get(name)
    cfg = exp.configure(profile)  # the profile refused here, once
    device = resolve_device(device)
    grid = [dict(p) for p in grid]
    for p in grid:
        for reserved in ("profile", "device"):
            if reserved in p:
                raise ValueError(f"grid points may not set {reserved!r}: it is the sweep's {reserved} argument")
    folder = check_writable((Path(out) if out is not None else results_dir()) / exp.name)
    return sweep_configured(exp, cfg, profile, device, grid, folder, scheduler=scheduler, n_workers=n_workers,
                            figure=figure, progress=progress)


def sweep_configured(exp, cfg: Any, profile: str, device: str, grid: Sequence[Mapping[str, Any]], folder: Path, *,
                     scheduler: Any = None, n_workers: int = 2, figure: bool = True,
                     progress: bool = True) -> tuple[Path, Path | None]:
    """:func:`sweep_experiment` for arguments already checked (as :func:`run_configured`'s; ``grid``'s points
    set neither ``profile`` nor ``device``). Nothing is checked again.

    Examples
    --------
    >>> import tempfile
    >>> from companion.registry import get
    >>> from companion.sweep import product_grid
    >>> exp = get("metastable-ln-n")
    >>> folder = Path(tempfile.mkdtemp()) / exp.name
    >>> points, path = sweep_configured(exp, exp.configure("fast"), "fast", "cpu", product_grid(n=[1000], seed=[0], trials=[2]),
    ...                                 folder, scheduler="serial", figure=False, progress=False)
    >>> points.name, path.name
    ('sweep-fast', 'fast.npz')
    """
    import dataclasses
    import functools

    from .sweep import run_sweep

    if exp.point is not None:
        target = exp.point
        task = functools.partial(exp.point, cfg, device=device)
    else:
        target = exp.func
        task = functools.partial(target, profile=profile, device=device)
    code = code_version(exp)
    context = {"experiment": exp.name, "profile": profile, "device": device, "config": dataclasses.asdict(cfg), "code": code}
    t0 = time.perf_counter()
    results = run_sweep(task, grid, folder / f"sweep-{profile}", scheduler=scheduler, n_workers=n_workers, progress=progress,
                        context=context)
    if exp.assemble is None:
        return folder / f"sweep-{profile}", None
    points = [{k: v for k, v in r.items() if k != "_provenance"} for r in results]
    result = exp.stamp(exp.assemble(points, cfg), cfg, profile)
    axes: dict[str, list[Any]] = {}
    for p in grid:
        for k, v in p.items():
            if v not in axes.setdefault(k, []):
                axes[k].append(v)
    path = _store(exp, profile, device, result, folder, {}, time.perf_counter() - t0, figure,
                  sweep={"points": len(grid), "axes": axes, "folder": f"sweep-{profile}",
                         "point_function": f"{target.__module__}.{target.__qualname__}"}, code=code)
    return folder / f"sweep-{profile}", path


def run_profiles(names: Sequence[str], profile: str = "full", device: str = "cpu", *, out: Path | str | None = None,
                 budget_s: float = 720.0, skip_stored: bool = True, python: str | None = None,
                 log=print) -> list[dict[str, Any]]:
    """Run each experiment of ``names`` in ``profile``, one subprocess each, within ``budget_s`` seconds.

    An experiment already stored (and verified) in ``out`` is skipped when ``skip_stored``, unless it is
    stale (:func:`companion.store.stale_reason`: another configuration) or its code changed since it was
    computed (:func:`companion.store.code_status`; a result stored before the code version was recorded
    is kept); each
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

    from .registry import check_profile, get

    check_profile(profile)
    out = Path(out) if out is not None else results_dir()
    python = python or sys.executable
    deadline = time.monotonic() + float(budget_s)
    rows = []
    for name in names:
        if skip_stored and (out / name / f"{profile}.json").exists():
            exp = get(name)
            reason = stale_reason(exp, profile, out)
            if reason is None:
                code = code_status(exp, load_run(name, profile, folder=out, formerly=exp.formerly)[1])  # verified just now
                reason = code if code.startswith("code changed") else None  # "not recorded": older results are kept
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
    from .registry import get
    from .provenance import ResultError, atomic_write_text

    exp = get(name)
    loaded = load_run(name, profile, root, formerly=exp.formerly)
    if loaded is None:
        raise FileNotFoundError(f"no stored {profile!r} result of {name!r} under {results_dir(root)}")
    result, meta = loaded
    try:
        current = [c.as_dict() for c in exp.judge(result)]
    except (KeyError, IndexError) as e:  # a verified file can still lack what the claims read
        raise ResultError(f"{results_dir(root) / name / f'{profile}.npz'}: the stored result lacks {e} (or holds it "
                          f"empty), which the claims of {name!r} read; rerun it") from None
    stored = list(meta.get("claims") or [])
    if write and stored != current:
        meta["claims"] = current
        atomic_write_text(results_dir(root) / name / f"{profile}.json", json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return stored, current
