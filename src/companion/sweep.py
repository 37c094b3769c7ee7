"""Parameter sweeps on Dask: every point computed once, saved atomically with provenance, resumable.

:func:`run_sweep` maps a function over a list of parameter points (a grid) with
:mod:`dask.distributed`, and writes each point's result to ``out_dir/point-<key>.npz`` plus its
provenance JSON (:func:`companion.provenance.save_result`), ``<key>`` being a hash of the point.

Guarantees, and why they hold
-----------------------------
* **Atomic**: both files are written to a temporary name and ``os.replace``-d; the JSON goes last
  and records the SHA-256 of the .npz, so a point is complete only when its .npz is the one its JSON
  records. A reader never sees half a result.
* **Resumable**: a point whose files pass :func:`companion.provenance.verify_result` is not
  recomputed. Interrupt a sweep (Ctrl-C, a crashed job, a failing point) and run the same call
  again: only the missing points run.
* **Self-repairing**: a point whose files fail verification (an .npz without its JSON, a truncated
  or replaced .npz, an unreadable JSON) is recomputed, and a ``RuntimeWarning`` names its file and
  what was wrong with it.
* **A killed worker loses and duplicates nothing**: Dask reschedules the tasks of a dead worker on
  the others (up to ``distributed.scheduler.allowed-failures`` times); a task re-checks completion
  before computing, and a point has exactly one file name, so a rerun, or even two runs racing,
  leave one complete result per point. This needs ``func`` to be deterministic in its point (put
  the seed *in* the point).

Schedulers
----------
``scheduler=None`` starts a :class:`distributed.LocalCluster` of ``n_workers`` single-threaded
processes on this machine; a string is the address of a running scheduler
(``"tcp://host:8786"``); a :class:`distributed.Client` or a cluster object is used as is;
``"serial"`` runs in this process without Dask (debugging, doctests).

On a SLURM cluster, `dask-jobqueue <https://jobqueue.dask.org>`_ (not pinned by the companion:
``pip install dask-jobqueue``) starts the workers as batch jobs::

    from dask_jobqueue import SLURMCluster
    cluster = SLURMCluster(cores=4, processes=4, memory="16GB", walltime="02:00:00",
                           job_extra_directives=["--gres=gpu:1"])  # one GPU per job, if wanted
    cluster.scale(jobs=8)
    results = run_sweep(func, grid, "/shared/fs/sweep", scheduler=cluster)

Dask's default configuration starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which makes
every large temporary of the chapters' torch computations a fresh ``mmap``: a worker then runs them
several times slower than a plain process (measured: ``bench/results/README.md`` in the
repository). The LocalCluster of :func:`run_sweep` unsets it; for workers you start yourself
(``dask worker``, dask-jobqueue), unset it in a Dask configuration file of the machines that start
them, e.g. ``~/.config/dask/companion.yaml``::

    distributed:
      nanny:
        pre-spawn-environ:
          MALLOC_TRIM_THRESHOLD_: null

(an environment variable cannot do it: Dask lowercases the key it names). Each task also applies
:func:`companion.perf.tune_allocator` in its worker process, as the command line does in its own.

``out_dir`` must then be on a file system every worker sees (the atomic rename is what makes
concurrent writers safe; it is atomic on local file systems and on NFS within one directory).
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import json
import uuid
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .encoding import flatten_result, unflatten_result
from .provenance import ResultError, load_result, save_result, verify_result

__all__ = ["run_sweep", "product_grid", "point_key", "point_path", "context_hash", "load_point", "SERIAL"]

SERIAL = "serial"


def product_grid(**axes: Sequence[Any]) -> list[dict[str, Any]]:
    """The Cartesian product of named axes as a list of points (last axis fastest).

    Examples
    --------
    >>> product_grid(beta=[1.0, 4.0], seed=range(2))
    [{'beta': 1.0, 'seed': 0}, {'beta': 1.0, 'seed': 1}, {'beta': 4.0, 'seed': 0}, {'beta': 4.0, 'seed': 1}]
    """
    for name, values in axes.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise TypeError(f"axis {name!r} must be a sequence of values, got {type(values).__name__}")
    names = list(axes)
    return [dict(zip(names, combo)) for combo in itertools.product(*(list(axes[n]) for n in names))]


def _canonical(point: Mapping[str, Any]) -> str:
    if not isinstance(point, Mapping):
        raise TypeError(f"a grid point must be a mapping of parameter names to values, got {type(point).__name__}")
    for k, v in point.items():
        if not isinstance(k, str):
            raise TypeError(f"grid point keys must be strings, got {k!r}")
        if not isinstance(v, (str, int, float, bool, type(None))):
            raise TypeError(f"grid point value {k}={v!r} must be a str, int, float, bool or None (it names the result file)")
    return json.dumps(dict(point), sort_keys=True)


def point_key(point: Mapping[str, Any]) -> str:
    """A stable 16-hex-digit name for a point (order of keys does not matter).

    Examples
    --------
    >>> point_key({"a": 1, "b": 2.5}) == point_key({"b": 2.5, "a": 1})
    True
    >>> len(point_key({"a": 1}))
    16
    """
    return hashlib.sha256(_canonical(point).encode()).hexdigest()[:16]


def point_path(out_dir: Path | str, point: Mapping[str, Any]) -> Path:
    """Where the result of ``point`` lives: ``out_dir/point-<key>.npz`` (+ ``.json``).

    Examples
    --------
    >>> point_path("sweep", {"a": 1}).name == f"point-{point_key({'a': 1})}.npz"
    True
    """
    return Path(out_dir) / f"point-{point_key(point)}.npz"


def _is_complete(path: Path, context_sha: str | None = None) -> bool:
    """Whether the point stored at ``path`` is complete, its files are what its JSON records, and it
    was computed in the sweep's context (``context_sha``: :func:`context_hash`; None: any)."""
    try:
        meta = verify_result(path)
    except (FileNotFoundError, ResultError):
        return False
    return context_sha is None or (meta.get("sweep") or {}).get("context_sha256") == context_sha


def context_hash(context: Mapping[str, Any] | None) -> str | None:
    """SHA-256 (16 hex digits) of a sweep's context as canonical JSON, None without one.

    The context is what computes every point besides the point itself (the experiment's whole
    configuration, its profile, device and code version, see :func:`companion.runner.sweep_experiment`):
    a stored point whose context differs is recomputed.

    Examples
    --------
    >>> context_hash({"dt": 0.004, "n": 3}) == context_hash({"n": 3, "dt": 0.004}) != context_hash({"n": 3, "dt": 0.016})
    True
    >>> context_hash(None) is None
    True
    """
    if context is None:
        return None
    from .provenance import _jsonable

    return hashlib.sha256(json.dumps(_jsonable(context), sort_keys=True).encode()).hexdigest()[:16]


def _context_change(stored: Any, now: Any, where: str = "") -> list[str]:
    """What differs between two contexts (JSON values), as ``key: stored -> now`` lines."""
    if isinstance(stored, Mapping) and isinstance(now, Mapping):
        out = []
        for k in sorted(set(stored) | set(now)):
            out += _context_change(stored.get(k), now.get(k), f"{where}.{k}" if where else str(k))
        return out
    return [] if stored == now else [f"{where or 'context'}: {stored!r} -> {now!r}"]


def _func_name(func: Callable) -> str:
    f = func.func if isinstance(func, functools.partial) else func
    return f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', type(f).__name__)}"


def save_point(path: Path, result: Mapping[str, Any], point: Mapping[str, Any], func_name: str,
               context: Mapping[str, Any] | None = None, **extra: Any) -> Path:
    """Write one point's result and provenance (``extra`` added to it) atomically (JSON last); the
    sweep's ``context`` and its :func:`context_hash` are recorded under ``"sweep"``."""
    arrays, other = flatten_result(result)
    sweep = {"function": func_name, "key": point_key(point)}
    if context is not None:
        sweep.update(context=context, context_sha256=context_hash(context))
    return save_result(path, arrays, config=dict(point), seed=point.get("seed"), sweep=sweep, other=other, **extra)


def load_point(path: Path | str) -> dict[str, Any]:
    """The result dict saved at ``path`` (its provenance under the key ``"_provenance"``), verified.

    Raises FileNotFoundError or :class:`companion.provenance.ResultError` naming the file when the
    point is incomplete or its files differ from what its JSON records.

    Examples
    --------
    >>> import tempfile
    >>> path = point_path(tempfile.mkdtemp(), {"x": 2})
    >>> _ = save_point(path, {"y": 4, "fit": {"slope": 0.5}}, {"x": 2}, "doc.square")
    >>> res = load_point(path)
    >>> res["y"], res["fit"], res["_provenance"]["config"]
    (4, {'slope': 0.5}, {'x': 2})
    """
    arrays, meta = load_result(path)
    result = unflatten_result(arrays, meta.get("other"))
    result["_provenance"] = meta
    return result


def _tune_worker() -> None:
    """In a Dask worker process (ours to tune), keep freed memory for reuse as the CLI does
    (:func:`companion.perf.tune_allocator`); in the caller's own process, change nothing."""
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return
    from .perf import tune_allocator

    tune_allocator()


def _check_same_code(context: Mapping[str, Any] | None) -> None:
    """RuntimeError when the code this process would run differs from the code the sweep's client recorded
    (``context["code"]``: :func:`companion.store.code_version`): a worker with another checkout would
    otherwise store its numbers as computed by the client's code."""
    import platform

    code = (context or {}).get("code")
    if not isinstance(code, Mapping) or not str(code.get("module")).startswith("companion."):
        return  # an experiment registered outside the package (a test's): no checkout to compare
    from .provenance import source_hash

    here = source_hash(code["module"])
    if here != code.get("sha256"):
        raise RuntimeError(f"worker {platform.node()}: its code of {code['module']} hashes to {here}, the sweep's client "
                           f"to {code.get('sha256')}: the worker runs other code; refused (install the client's checkout "
                           "on every worker)")


def _run_point(func: Callable, point: dict[str, Any], path: str, func_name: str,
               context: Mapping[str, Any] | None = None) -> str:
    """One task: compute and save ``point`` unless a previous attempt already finished it (in ``context``)."""
    p = Path(path)
    if _is_complete(p, context_hash(context)):  # a previous attempt (a rescheduled task, a racing run) finished it
        return "skipped"
    import platform
    import time

    _check_same_code(context)
    _tune_worker()
    t0 = time.perf_counter()
    result = func(**point)
    save_point(p, result, point, func_name, context, wall_time_s=round(time.perf_counter() - t0, 3), host=platform.node())
    return "computed"


def _run_point_pickled(func_bytes: bytes, point: dict[str, Any], path: str, func_name: str,
                       context: Mapping[str, Any] | None = None) -> str:
    import cloudpickle

    return _run_point(cloudpickle.loads(func_bytes), point, path, func_name, context)


@contextmanager
def _client(scheduler: Any, n_workers: int) -> Iterator[Any]:
    from distributed import Client, LocalCluster

    if scheduler is None:
        import logging

        import dask

        # Dask starts workers with MALLOC_TRIM_THRESHOLD_=65536, which also pins glibc's mmap
        # threshold: every large torch temporary is then a fresh mmap, and the circle sweep ran
        # several times slower in a worker than in this process (bench/results/README.md).
        with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}), \
                LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                             dashboard_address=None, silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
            yield client
    elif isinstance(scheduler, Client):
        yield scheduler
    elif isinstance(scheduler, str):
        with Client(scheduler) as client:
            yield client
    elif hasattr(scheduler, "scheduler_address"):
        with Client(scheduler) as client:
            yield client
    else:
        raise TypeError(f"scheduler must be None, {SERIAL!r}, an address string, a Client or a cluster, got {type(scheduler).__name__}")


def _progress(total: int, enabled: bool, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, desc=desc, unit="point")


def run_sweep(
    func: Callable[..., Mapping[str, Any]],
    grid: Sequence[Mapping[str, Any]],
    out_dir: Path | str,
    *,
    scheduler: Any = None,
    n_workers: int = 2,
    progress: bool = True,
    context: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Compute ``func(**point)`` for every point of ``grid``, skipping points already on disk.

    With a ``context`` (JSON-able: what computes a point besides the point itself, e.g. the
    experiment's configuration and code version), a stored point is reused only when it was computed
    in the same context; otherwise it is recomputed, with a ``RuntimeWarning`` naming the point and what
    changed.

    Parameters
    ----------
    func : callable returning a dict (arrays, numbers, nested dicts); deterministic in its
        point, and picklable (a module-level function or a ``functools.partial`` of one).
    grid : sequence of points, each a dict of str/int/float/bool/None (see :func:`product_grid`).
    out_dir : folder of the sweep, one ``point-<key>.npz`` + ``.json`` per point.
    scheduler : None (a LocalCluster of ``n_workers`` processes), a scheduler address, a
        ``distributed.Client``, a cluster object, or ``"serial"`` (this process, no Dask).
    n_workers : workers of the LocalCluster started when ``scheduler`` is None.
    progress : show a tqdm progress bar.

    Returns
    -------
    list of result dicts, in grid order, each as loaded from disk with its provenance under
    ``"_provenance"``.

    Raises
    ------
    RuntimeError if some points failed: the others are saved, and calling again computes only
    the missing ones. ValueError if ``out_dir`` holds results of another function.

    Examples
    --------
    >>> import tempfile
    >>> def square(x, seed=0):
    ...     return {"y": x * x}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     res = run_sweep(square, product_grid(x=[1, 2, 3]), d, scheduler="serial", progress=False)
    ...     [r["y"] for r in res]
    ...     with warnings.catch_warnings(record=True) as w:
    ...         warnings.simplefilter("always")
    ...         _ = run_sweep(square, product_grid(x=[1]), d, scheduler="serial", progress=False, context={"dt": 0.1})
    ...     print(w[0].message)  # doctest: +ELLIPSIS
    [1, 4, 9]
    sweep point {'x': 1} is recomputed: its stored result records no context ..., and this sweep's is {'dt': 0.1}
    """
    if not callable(func):
        raise TypeError(f"func must be callable, got {type(func).__name__}")
    if isinstance(grid, Mapping) or not isinstance(grid, Sequence):
        raise TypeError("grid must be a list of points (dicts); build one with product_grid(...)")
    if not isinstance(n_workers, int) or n_workers < 1:
        raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}")
    points = [dict(p) for p in grid] if all(isinstance(p, Mapping) for p in grid) else None
    if points is None:
        raise TypeError("every grid point must be a dict of parameter names to values")
    keys = [point_key(p) for p in points]
    if len(set(keys)) != len(keys):
        dup = next(p for p, k in zip(points, keys) if keys.count(k) > 1)
        raise ValueError(f"grid has a duplicated point {dup}; each point is computed and stored once")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    name = _func_name(func)
    paths = [point_path(out_dir, p) for p in points]
    want_sha = context_hash(context)
    if context is not None:
        from .provenance import _jsonable

        now_ctx = json.loads(json.dumps(_jsonable(context), sort_keys=True))
        context = now_ctx

    todo = []
    for p, path in zip(points, paths):
        if not path.exists() and not path.with_suffix(".json").exists():
            todo.append((p, path))
            continue
        try:
            meta = verify_result(path)
        except (FileNotFoundError, ResultError) as e:
            warnings.warn(f"sweep point {p} is recomputed: {e}", RuntimeWarning, stacklevel=2)
            todo.append((p, path))
            continue
        owner = (meta.get("sweep") or {}).get("function")
        if owner != name:
            raise ValueError(f"{out_dir} holds results of {owner!r}, not {name!r}: use another out_dir")
        stored_sha = (meta.get("sweep") or {}).get("context_sha256")
        if want_sha is not None and stored_sha != want_sha:
            stored_ctx = (meta.get("sweep") or {}).get("context")
            why = (f"its stored result records no context (computed before sweeps recorded their configuration), "
                   f"and this sweep's is {now_ctx}" if stored_ctx is None else
                   "it was computed with another configuration (" + "; ".join(_context_change(stored_ctx, now_ctx)[:6] or ["?"]) + ")")
            warnings.warn(f"sweep point {p} is recomputed: {why}", RuntimeWarning, stacklevel=2)
            todo.append((p, path))

    failures: list[tuple[dict, BaseException]] = []
    if todo:
        bar = _progress(len(todo), progress, f"sweep {name.rsplit('.', 1)[-1]}")
        with bar:
            if scheduler == SERIAL:
                for p, path in todo:
                    try:
                        _run_point(func, p, str(path), name, context)
                    except Exception as e:  # keep going: the other points are still worth saving
                        failures.append((p, e))
                    bar.update()
            else:
                import cloudpickle
                from distributed import as_completed

                # Pickled here with cloudpickle (distributed tries plain pickle first, which sends
                # functions by reference: a worker that cannot import their module then hangs).
                func_bytes = cloudpickle.dumps(func)
                with _client(scheduler, n_workers) as client:
                    run = uuid.uuid4().hex[:8]
                    futures = {
                        client.submit(_run_point_pickled, func_bytes, p, str(path), name, context, pure=False,
                                      key=f"sweep-{run}-{point_key(p)}"): p
                        for p, path in todo
                    }
                    for fut in as_completed(futures):
                        if fut.status == "error":
                            failures.append((futures[fut], fut.exception()))
                        bar.update()
    # Temporary files of writes cut short (a killed worker) are garbage once every task is done.
    for tmp in out_dir.glob(".point-*.tmp"):
        tmp.unlink(missing_ok=True)
    if failures:
        p, e = failures[0]
        raise RuntimeError(
            f"{len(failures)} of {len(points)} sweep points failed (first: {p}: {type(e).__name__}: {e}); "
            f"the finished points are saved in {out_dir}, rerun to compute the missing ones"
        ) from e
    return [load_point(path) for path in paths]
