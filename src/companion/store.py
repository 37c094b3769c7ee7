"""Stored results: where they live, how a run is written, how it is read back and whether it is current.

* :func:`results_dir` is ``data/results``; a run of experiment ``NAME`` in profile ``P`` is
  ``<results>/NAME/P.npz`` (arrays), ``P.json`` (provenance, hashes, verdicts) and ``P.png``;
* :func:`save_run` writes one (figures first, the verified JSON last), :func:`load_run` reads it
  back through the verified loader, :func:`stale_reason` says whether it is the current one.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Mapping

from .provenance import atomic_write_bytes, load_result, repo_root, save_result
from .registry import PROFILES
from .sweep import flatten_result, unflatten_result

__all__ = ["results_dir", "check_profile", "check_writable", "save_figures", "save_run", "load_run", "load_from",
           "stale_reason", "stale"]


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



def check_profile(profile: str) -> str:
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



def save_run(exp, profile: str, device: str, result: Mapping[str, Any], folder: Path, params: Mapping[str, Any],
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



def load_run(name: str, profile: str = "full", root: Path | str | None = None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The result dict and provenance saved by :func:`run_experiment`, or None if there is none.

    Lists come back as numpy arrays and 0-d arrays as Python scalars.

    Examples
    --------
    >>> import tempfile
    >>> from companion.runner import run_experiment
    >>> root = Path(tempfile.mkdtemp())
    >>> load_run("intro-consensus", "fast", root=root) is None  # nothing stored yet
    True
    >>> _ = run_experiment("intro-consensus", "fast", out=results_dir(root), params={"n": 4, "t1": 1.0}, figure=False)
    >>> result, meta = load_run("intro-consensus", "fast", root=root)
    >>> result["max_mass_error"] < 1e-8, result["p_sim"].shape, meta["config"]["experiment"]
    (True, (21, 3), 'intro-consensus')
    """
    return load_from(results_dir(root), name, profile)



def load_from(folder: Path, name: str, profile: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """:func:`load_run` from the results folder ``folder`` itself."""
    path = folder / name / f"{check_profile(profile)}.npz"
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
    >>> from companion.runner import run_experiment
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
        stored = load_from(Path(folder) if folder is not None else results_dir(), name, profile)
    except (OSError, ValueError) as e:
        return f"does not verify ({e})"
    return stale(name, profile, stored)



def stale(name: str, profile: str, stored: tuple[dict[str, Any], dict[str, Any]] | None) -> str | None:
    """:func:`stale_reason` for a result already loaded (``stored``: :func:`load_run`'s pair or None)."""
    import dataclasses

    from .registry import get

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

