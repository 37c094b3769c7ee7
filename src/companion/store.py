"""Stored results: where they live, how a run is written, how it is read back and whether it is current.

* :func:`results_dir` is ``data/results``; a run of experiment ``NAME`` in profile ``P`` is
  ``<results>/NAME/P.npz`` (arrays), ``P.json`` (provenance, hashes, verdicts) and ``P.png``;
* :func:`save_run` writes one whole into a temporary folder beside it (:func:`staging`), verifies
  it there and swaps it in by renames (:func:`install`), the previous unit kept whole in a backup
  folder until the last rename, so a write failed or killed at any point leaves the previous result
  or the new one; :func:`load_run` reads it back through the verified loader (the backup, when a
  killed write left the unit itself unverifiable), and the next write rolls such a backup back;
* :func:`stale_reason` says whether it is the current one for the profile's configuration, and
  :func:`code_status` whether the code that computed it is the code now (provenance records
  :func:`code_version`, a hash of the experiment's module and the package modules it imports).
"""
from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from typing import Any, Mapping

from .provenance import ResultError, atomic_write_bytes, load_result, repo_root, save_result, source_hash
from .registry import PROFILES
from .sweep import flatten_result, unflatten_result

__all__ = ["results_dir", "check_profile", "check_writable", "save_figures", "save_run", "load_run", "load_from",
           "stale_reason", "stale", "code_status", "code_version", "staging", "install",
           "verified_unit", "training_from_parts"]


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
    """``profile`` when it is one of :data:`companion.registry.PROFILES`, else a ValueError naming them.

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
    """Store ``result`` of the registered experiment ``exp`` as ``folder/<profile>.npz``, its figures
    (when ``figure``) and its provenance JSON (config, ``params``, device, wall time, verdicts, the
    hashes of every file, the code version: ``extra["code"]``, else :func:`code_version` now);
    returns the .npz path.

    The unit is written into :func:`staging`, verified and swapped in whole (:func:`install`): a
    failure anywhere (a full disk names the file) leaves the previous result as it was, and figures
    of the previous result that this one does not draw are removed.

    Examples
    --------
    >>> import tempfile
    >>> from companion.registry import get
    >>> exp = get("intro-consensus")
    >>> r = exp.run("fast", n=4, t1=1.0)
    >>> root = Path(tempfile.mkdtemp())
    >>> path = save_run(exp, "fast", "cpu", r, root / exp.name, {"n": 4, "t1": 1.0}, 0.5, False)
    >>> sorted(p.name for p in path.parent.iterdir()), load_from(root, exp.name, "fast")[1]["wall_time_s"]
    (['fast.json', 'fast.npz'], 0.5)
    """
    check_profile(profile)
    claims = [c.as_dict() for c in exp.judge(result)]
    arrays, other = flatten_result(result)
    config = {"experiment": exp.name, "chapter": exp.chapter, "profile": profile, "device": device, "params": dict(params)}
    seed = (result.get("config") or {}).get("seed", params.get("seed"))
    extra.setdefault("code", code_version(exp))  # callers that ran the experiment pass the version it ran with
    folder = Path(folder)
    with staging(folder, profile) as tmp:
        figures: list[str] = []
        if figure and exp.plot is not None:
            figures = [p.name for p in save_figures(exp.plot, result, tmp / f"{profile}.png")]
        save_result(tmp / f"{profile}.npz", arrays, config=config, seed=seed,
                    other=other, wall_time_s=round(wall, 3), figures=figures, claims=claims, **extra)
        return install(tmp, folder, profile, exp.name)



def code_version(exp) -> dict[str, str]:
    """What provenance records of the code behind a result of the registered experiment ``exp``: its
    module and :func:`companion.provenance.source_hash` (the module's file and the package modules
    it imports, less the storage and display machinery).

    Examples
    --------
    >>> from companion.registry import get
    >>> v = code_version(get("intro-consensus"))
    >>> v["module"], len(v["sha256"])
    ('companion.experiments.introduction.consensus', 16)
    """
    module = exp.body.__module__
    return {"module": module, "sha256": source_hash(module)}


@contextlib.contextmanager
def staging(folder: Path, profile: str):
    """A fresh temporary folder inside ``folder`` to write one result into (``.<profile>.new-<pid>-<random>``),
    removed on the way out whatever happens; folders of this kind left by dead processes are removed
    first, and a write of ``profile`` cut short is first rolled back or tidied (:func:`_recover`).

    Examples
    --------
    >>> import tempfile
    >>> with staging(Path(tempfile.mkdtemp()), "fast") as tmp:
    ...     tmp.name.startswith(".fast.new-"), tmp.is_dir()
    (True, True)
    >>> tmp.exists()
    False
    """
    import shutil
    import tempfile

    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob(f".{profile}.new-*"):  # a write killed before it cleaned up
        pid = old.name.split("-")[1] if old.name.count("-") >= 2 else ""
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    with _locked(folder) as fd:
        _recover(folder, profile, fd)
    tmp = Path(tempfile.mkdtemp(dir=folder, prefix=f".{profile}.new-{os.getpid()}-"))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _locked(folder: Path):
    """An exclusive ``flock`` on ``folder`` (its open file descriptor) while the block runs: one writer at a time."""
    import fcntl

    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def _unit(folder: Path, profile: str) -> list[str]:
    """Names of the regular files of the ``profile`` unit in ``folder``: its figures (``<profile>.png``,
    ``<profile>-N.png``), then ``<profile>.npz``, then ``<profile>.json`` (the order a unit is renamed in)."""
    import stat

    names = []
    for name in (f"{profile}.png", f"{profile}.npz", f"{profile}.json"):
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(folder / name).st_mode):
                names.append(name)
    extra = sorted(p.name for p in folder.glob(f"{profile}-*.png")
                   if p.stem[len(profile) + 1:].isdigit() and p.is_file() and not p.is_symlink())
    figures = [n for n in names if n.endswith(".png")] + extra
    return figures + [n for n in names if not n.endswith(".png")]


def _link(src: Path, dst: Path) -> None:
    """``dst`` a hard link of ``src`` (the same bytes, nothing written), else a copy flushed to disk."""
    import shutil

    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:  # a file system without hard links (or at its link limit)
        shutil.copyfile(src, dst)
        with open(dst, "rb+") as f:
            os.fsync(f.fileno())


def _backups(folder: Path, profile: str) -> list[Path]:
    """The backups ``.<profile>.old-<pid>-<random>`` in ``folder`` (see :func:`install`)."""
    return sorted(p for p in folder.glob(f".{profile}.old-*") if p.is_dir() and not p.is_symlink())


def _verifies(folder: Path, profile: str) -> bool:
    try:
        load_result(folder / f"{profile}.npz")
    except (FileNotFoundError, ResultError):
        return False
    return True


def _restore(backup: Path, folder: Path, profile: str, fd: int) -> None:
    """Put the unit saved in ``backup`` back in ``folder`` by renames, JSON last, and remove the files of
    the ``profile`` unit there that it does not have. Each file is linked to a second name inside
    ``backup`` and that name renamed, so ``backup`` stays whole until it is removed: a restore
    killed midway is simply done again."""
    names = _unit(backup, profile)
    for name in names:
        spare = backup / f".{name}.restore"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(spare)  # from a restore killed midway
        _link(backup / name, spare)
        os.replace(spare, folder / name)
    for name in _unit(folder, profile):
        if name not in names:  # figures of the unit that replaced it
            os.unlink(folder / name)
    os.fsync(fd)


def _recover(folder: Path, profile: str, fd: int) -> None:
    """Finish what a write of ``profile`` into ``folder`` cut short left behind; call holding :func:`_locked`.

    Under the lock no other writer is between its backup and its clean-up, so every backup there is
    left over: when the unit in ``folder`` verifies (the write got to its end, or never began
    replacing) the backups are discarded; when it does not and a backup verifies (killed midway
    through the renames), that backup is restored first. Backups that do not verify are discarded.

    Examples
    --------
    >>> import shutil, tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = save_result(folder / "fast.npz", {"x": [1]}, figures=[])
    >>> _ = shutil.copytree(folder, folder / ".fast.old-1-x")   # the backup of a write killed midway
    >>> _ = (folder / "fast.npz").write_bytes(b"the new .npz, renamed in before the kill")
    >>> with _locked(folder) as fd:
    ...     _recover(folder, "fast", fd)
    >>> sorted(p.name for p in folder.iterdir()), load_result(folder / "fast.npz")[0]["x"].tolist()
    (['fast.json', 'fast.npz'], [1])
    """
    import shutil

    backups = _backups(folder, profile)
    if not backups:
        return
    if not _verifies(folder, profile):
        good = next((b for b in backups if _verifies(b, profile)), None)
        if good is not None:
            _restore(good, folder, profile, fd)
    for b in backups:
        shutil.rmtree(b)
    os.fsync(fd)


def install(tmp: Path, folder: Path, profile: str, name: str) -> Path:
    """Move the result written in ``tmp`` into ``folder`` as ``<profile>.*``, replacing the one there whole.

    The new result is verified in ``tmp`` first (its hashes, and that it is the ``profile`` result of
    ``name``). Then, holding a lock on ``folder`` (so two writers never interleave):

    1. a write cut short earlier is rolled back or tidied (:func:`_recover`);
    2. the files of the unit there are hard-linked (copied where links are not possible) into a
       backup folder ``.<profile>.old-<pid>-<random>``, flushed to disk;
    3. the new figures, the .npz and last the JSON are renamed into place, and figures of the
       previous result that the new one does not have are removed;
    4. the backup is removed.

    A kill at any point leaves the previous unit or the new one loadable: before step 3 the unit
    there is untouched, during it the backup holds the previous unit whole (:func:`load_from` reads
    it when the unit there does not verify), after it the new unit is there. An exception during
    step 3 puts the previous unit back before it propagates. Nothing is written in ``folder`` but
    links and renames (a full disk names the file and replaces nothing). Returns the .npz path.

    Examples
    --------
    >>> import tempfile
    >>> from companion.provenance import save_result
    >>> folder = Path(tempfile.mkdtemp()) / "demo"
    >>> for n in (1, 2):  # the second replaces the first whole
    ...     with staging(folder, "fast") as tmp:
    ...         _ = save_result(tmp / "fast.npz", {"x": [n]}, config={"experiment": "demo", "profile": "fast"})
    ...         _ = install(tmp, folder, "fast", "demo")
    >>> sorted(p.name for p in folder.iterdir()), load_from(folder.parent, folder.name, "fast")[0]["x"].tolist()
    (['fast.json', 'fast.npz'], [2])
    """
    import shutil
    import tempfile

    npz = tmp / f"{profile}.npz"
    _, meta = load_result(npz)  # verified where it was written, before anything is replaced
    stored = meta.get("config") or {}
    if (stored.get("experiment"), stored.get("profile")) != (name, profile):
        raise ValueError(f"{npz}: holds the {stored.get('profile')!r} result of {stored.get('experiment')!r}, "
                         f"not the {profile!r} result of {name!r}; nothing replaced in {folder}")
    figures = list(meta.get("figures") or [])
    with _locked(folder) as fd:
        _recover(folder, profile, fd)
        backup = Path(tempfile.mkdtemp(dir=folder, prefix=f".{profile}.old-{os.getpid()}-"))
        try:
            for f in _unit(folder, profile):  # none when nothing is stored yet: restoring it then removes the unit
                _link(folder / f, backup / f)
            os.fsync(fd)
        except OSError as e:
            shutil.rmtree(backup, ignore_errors=True)
            raise OSError(e.errno, f"{e.strerror or e} while keeping a backup of {folder / profile}.* in "
                                   f"{backup.name} (nothing was replaced)") from e
        try:
            for f in figures + [npz.name, npz.with_suffix(".json").name]:  # the JSON last: it commits the unit
                os.replace(tmp / f, folder / f)
            for old in _unit(folder, profile):  # figures of the previous result that this one does not draw
                if old.endswith(".png") and old not in figures:
                    os.unlink(folder / old)
            os.fsync(fd)
        except BaseException:
            with contextlib.suppress(Exception):  # else the backup stays: the loader reads it, the next writer restores it
                _restore(backup, folder, profile, fd)
                shutil.rmtree(backup)
            raise
        shutil.rmtree(backup)
        os.fsync(fd)
    return folder / npz.name



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
    """:func:`load_run` from the results folder ``folder`` itself.

    A result stored under a former name of the experiment (its ``formerly``, see
    :func:`companion.registry.experiment`) and moved to the folder of its name now loads as its own,
    with ``result["experiment"]`` the name now; the provenance keeps the name it was stored under.

    Examples
    --------
    >>> import tempfile
    >>> from companion.runner import run_experiment
    >>> folder = Path(tempfile.mkdtemp())
    >>> load_from(folder, "intro-consensus", "fast") is None
    True
    >>> _ = run_experiment("intro-consensus", "fast", out=folder, params={"n": 4, "t1": 1.0}, figure=False)
    >>> result, meta = load_from(folder, "intro-consensus", "fast")
    >>> result["experiment"], meta["config"]["params"]
    ('intro-consensus', {'n': 4, 't1': 1.0})
    """
    path = folder / name / f"{check_profile(profile)}.npz"
    try:
        arrays, meta = _load_unit(folder / name, profile)
    except FileNotFoundError:
        return None
    stored = (meta.get("config") or {})
    recorded = stored.get("experiment")
    former = recorded != name and recorded in _former_names(name)  # stored before the experiment was renamed
    if (name if former else recorded, stored.get("profile")) != (name, profile):  # a verified pair, but another run's
        raise ValueError(f"{path}: holds the {stored.get('profile')!r} result of {recorded!r}, "
                         f"not the {profile!r} result of {name!r}")
    result = unflatten_result(arrays, meta.get("other"))
    if former:
        result["experiment"] = name  # judged, shown and compared under its name now
    return result, meta


def _load_unit(folder: Path, profile: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`companion.provenance.load_result` of ``folder/<profile>.npz``, or, when that unit is missing
    or does not verify, of a backup beside it that does (a write killed midway: see :func:`install`).

    Read only: the next writer restores or discards the backup (:func:`_recover`). A backup may also
    be that of a write in progress, whose previous unit it holds whole; if it goes away while being
    read the write has ended, and the unit is read once more.

    Examples
    --------
    >>> import shutil, tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = save_result(folder / "fast.npz", {"x": [1]}, figures=[])
    >>> backup = folder / ".fast.old-1-x"
    >>> _ = shutil.copytree(folder, backup)
    >>> _ = (folder / "fast.npz").write_bytes(b"replaced, and killed before the JSON")
    >>> _load_unit(folder, "fast")[0]["x"].tolist(), backup.exists()  # the previous unit, nothing written
    ([1], True)
    """
    main = folder / f"{profile}.npz"
    for _ in range(2):
        try:
            return load_result(main)
        except (FileNotFoundError, ResultError) as e:
            error = e
        backups = _backups(folder, profile)
        for b in backups:
            with contextlib.suppress(FileNotFoundError, ResultError):
                return load_result(b / main.name)
        if not backups:
            break
    raise error


def verified_unit(folder: Path, profile: str) -> Path | None:
    """The folder holding the ``profile`` unit of the result folder ``folder`` that verifies: ``folder``
    itself, or the backup of a write killed midway that :func:`load_from` would read, or None.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> verified_unit(folder, "fast") is None
    True
    >>> _ = save_result(folder / "fast.npz", {"x": [1]}, figures=[])
    >>> verified_unit(folder, "fast") == folder
    True
    """
    folder = Path(folder)
    for where in [folder] + _backups(folder, profile):
        if _verifies(where, profile):
            return where
    return None


def _former_names(name: str) -> tuple[str, ...]:
    """The former names of the registered experiment ``name`` (its ``formerly``; none if unregistered)."""
    from .registry import get

    try:
        return get(name).formerly
    except ValueError:
        return ()



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
    """:func:`stale_reason` for a result already loaded (``stored``: :func:`load_run`'s pair or None).

    Examples
    --------
    >>> stale("intro-consensus", "fast", None)
    'nothing stored'
    """
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



def code_status(name: str, meta: Mapping[str, Any] | None) -> str:
    """Whether the code behind a stored result of ``name`` (its provenance ``meta``) is the code now:
    ``"current"``, ``"code changed since <commit>"`` (the source hash it recorded, see
    :func:`code_version`, differs from the checkout's), or ``"code version not recorded"`` (stored
    before provenance recorded one, or nothing stored: ``meta`` None).

    :func:`stale_reason` is about the configuration; this is about the code. A chapter keeps showing
    a result whose code changed (its caption says so); ``python -m companion full`` (``make full``)
    recomputes it.

    Examples
    --------
    >>> from companion.registry import get
    >>> code_status("intro-consensus", {"code": code_version(get("intro-consensus")), "commit": "0123456789abcdef"})
    'current'
    >>> code_status("intro-consensus", {"code": {"module": "m", "sha256": "0" * 16}, "commit": "0123456789abcdef"})
    'code changed since 0123456'
    >>> code_status("intro-consensus", {"commit": "0123456789abcdef"})
    'code version not recorded'
    """
    from .registry import get

    code = (meta or {}).get("code")
    if not isinstance(code, Mapping) or not isinstance(code.get("sha256"), str):
        return "code version not recorded"
    now = code_version(get(name))
    if code.get("sha256") == now["sha256"] and code.get("module") == now["module"]:
        return "current"
    commit = (meta or {}).get("commit")
    return f"code changed since {commit[:7] if isinstance(commit, str) and commit else 'an unknown commit'}"



def _plain(value: Any) -> Any:
    """JSON-comparable form of a config value (tuples and arrays as lists)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    return value



# The LoRA training experiments whose runs are stored one part per (rank, seed) (companion.llm.training.run_parts).
_TRAINING_EXPERIMENTS = ("llm-training", "llm-training-indomain")


def training_from_parts(folder: Path | str, profile: str = "full", *, d: int | None = None, cfg: Any = None,
                        experiment: str = "llm-training", stored_ranks: bool = False) -> dict[str, Any] | None:
    """The ``profile`` result of ``llm-training`` (or of ``experiment``, ``llm-training-indomain``)
    assembled from the runs stored so far as parts.

    ``python -m companion run llm-training --out DIR`` stores each (rank, seed) run as it finishes in
    ``DIR/llm-training/parts`` (:func:`companion.llm.training.run_parts`); this reads every part there
    that is current for the profile (verified, computed with its settings: :func:`companion.llm.training.load_part`
    and :func:`companion.llm.training.part_settings`) and keeps the seeds that every rank of the profile has,
    so that rank comparisons stay paired. Nothing is trained. The result is what the experiment returns for
    those seeds (:func:`companion.llm.training.training_result`), with ``experiment``, ``config`` (the
    profile's, ``seeds`` those kept), ``profile`` (the profile's name when every run is there, else
    ``"<profile>, k of n runs"``), ``parts`` (the kept keys) and ``left_out`` (parts stored but not kept:
    their seed is missing in some rank).

    Parameters
    ----------
    folder : str or Path
        The parts folder (``data/results/llm-training/parts`` for the stored full profile).
    profile : str
        The profile whose runs to read (its settings decide which parts are current).
    d : int, optional
        Hidden size of the model (the alignment's random-subspace law depends on it); None reads
        ``hidden_size`` from the config.json of the profile's ``model_path`` (the bundled SmolLM2).
    cfg : TrainingConfig, optional
        The config whose runs to read instead of the profile's (its ranks, seeds and settings).
    experiment : str
        ``"llm-training"`` or ``"llm-training-indomain"``: whose profiles, and the name the result
        carries (so that :func:`companion.registry.judge` applies that experiment's claims).
    stored_ranks : bool
        False: every rank of the profile is needed (None until some seed has them all). True: the
        ranks with no stored part are left out, and the seeds kept are those every remaining rank
        has (a profile still being computed: ``config`` then names the ranks kept, and ``profile``
        counts the runs against the profile's).

    Returns
    -------
    dict or None
        As the experiment's result; None when no seed is stored for every rank.

    Examples
    --------
    >>> import dataclasses, tempfile
    >>> import numpy as np
    >>> from companion.llm import training
    >>> from companion.registry import get
    >>> cfg = get("llm-training").configure("fast", baseline_trials=8)
    >>> folder = Path(tempfile.mkdtemp())
    >>> def part(r, s):  # two checkpoints, three layers
    ...     return {"step": np.array([0, 12]), "ppl_base": np.array([10.0, 11.0]), "ppl_new": np.array([50.0, 40.0 - s]),
    ...             "b_tau": np.array([4, 2]), **{k: np.ones((2, 3)) for k in ("norm_layers", "align", "drift")}}
    >>> _ = training.run_parts([(4, 0), (16, 0), (4, 1)], part, folder, settings=training.part_settings(cfg))
    >>> res = training_from_parts(folder, "fast", d=64, cfg=dataclasses.replace(cfg, seeds=(0, 1)))
    >>> res["profile"], res["seeds"].tolist(), res["left_out"], res["runs"][16]["ppl_new"].tolist()
    ('fast, 2 of 4 runs', [0], [(4, 1)], [[50.0, 40.0]])
    >>> training_from_parts(Path(tempfile.mkdtemp()), "fast") is None   # nothing stored
    True
    >>> training_from_parts(folder, "fast", d=64, experiment="llm-training-indomain") is None   # other settings: not its parts
    True
    >>> _ = training.run_parts([(4, 2)], part, folder, settings=training.part_settings(cfg))
    >>> mine = dataclasses.replace(cfg, ranks=(4, 16, 64), seeds=(0, 1, 2))   # rank 64 not stored yet
    >>> training_from_parts(folder, "fast", d=64, cfg=mine) is None
    True
    >>> res = training_from_parts(folder, "fast", d=64, cfg=mine, stored_ranks=True)
    >>> res["profile"], res["ranks"].tolist(), res["config"]["ranks"], res["left_out"]
    ('fast, 2 of 9 runs', [4, 16], (4, 16), [(4, 1), (4, 2)])
    """
    import dataclasses

    import torch

    from .llm import assets, training
    from .registry import get

    if experiment not in _TRAINING_EXPERIMENTS:
        raise ValueError(f"experiment must be one of {_TRAINING_EXPERIMENTS}, got {experiment!r}")
    profiles = get(experiment).profiles
    if profile not in profiles:
        raise ValueError(f"profile must be one of {tuple(profiles)}, got {profile!r}")
    cfg = profiles[profile] if cfg is None else cfg
    settings = training.part_settings(cfg, get(experiment).added)
    parts = {}
    for r in cfg.ranks:
        for s in cfg.seeds:
            arrays = training.load_part(training.part_path(Path(folder), r, s), settings)
            if arrays is not None:
                parts[(int(r), int(s))] = arrays
    total = len(cfg.ranks) * len(cfg.seeds)
    if stored_ranks:  # a profile still being computed: the ranks with some stored part
        cfg = dataclasses.replace(cfg, ranks=tuple(r for r in cfg.ranks if any(r_ == int(r) for r_, _ in parts)))
    seeds = [int(s) for s in cfg.seeds if cfg.ranks and all((int(r), int(s)) in parts for r in cfg.ranks)]
    if not seeds:
        return None
    if d is None:
        d = assets.hidden_size(cfg.model_path)
    res = training.training_result(cfg, parts, seeds, d=d, model=str(cfg.model_path or "SmolLM2-135M-Instruct (bundled)"),
                                   generator=torch.Generator().manual_seed(cfg.seed))
    kept = [(int(r), s) for s in seeds for r in cfg.ranks]
    res.update(experiment=experiment, config=dataclasses.asdict(dataclasses.replace(cfg, seeds=tuple(seeds))),
               profile=profile if len(kept) == total else f"{profile}, {len(kept)} of {total} runs",
               parts=kept, left_out=sorted(k for k in parts if k not in set(kept)))
    return res


