"""Stored results: where they live, and the verified unit (written, installed, verified, recovered, current).

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

The store computes, judges and draws nothing: :mod:`companion.runner` runs an experiment, judges and
draws it, and hands the store the result, its ledger rows and its figures' PNG bytes. Functions that
need an experiment's declaration (its module, profiles, former names) take the registered experiment
(:func:`companion.registry.get`) from the caller; the store imports no registry.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from .encoding import flatten_result, unflatten_result
from .provenance import ResultError, atomic_write_bytes, load_result, repo_root, save_result, source_hash

__all__ = ["results_dir", "check_writable", "save_run", "load_run", "stale_reason", "stale", "code_status",
           "code_version", "staging", "install", "verified_unit"]


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


def save_run(folder: Path, result: Mapping[str, Any], config: Mapping[str, Any], *,
             claims: Sequence[Mapping[str, Any]] = (), figures: Sequence[bytes] = (), **extra: Any) -> Path:
    """Store ``result`` as the ``config["profile"]`` result of ``config["experiment"]`` in ``folder``
    (``<profile>.npz``), with its ledger rows ``claims``, its figures (PNG bytes: ``<profile>.png``,
    ``<profile>-2.png``...) and its provenance JSON (``config``, ``extra``: wall time, code version,
    seed..., the hashes of every file); returns the .npz path.

    The unit is written into :func:`staging`, verified and swapped in whole (:func:`install`): a
    failure anywhere (a full disk names the file) leaves the previous result as it was, and figures
    of the previous result that this one does not have are removed.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp()) / "demo"
    >>> path = save_run(folder, {"x": [1.0, 2.0], "fit": {"slope": 0.5}}, {"experiment": "demo", "profile": "fast"},
    ...                 wall_time_s=0.5)
    >>> result, meta = load_run("demo", "fast", folder=folder.parent)
    >>> sorted(p.name for p in folder.iterdir()), result["fit"], meta["wall_time_s"]
    (['fast.json', 'fast.npz'], {'slope': 0.5}, 0.5)
    """
    name, profile = config["experiment"], config["profile"]
    arrays, other = flatten_result(result)
    folder = Path(folder)
    with staging(folder, profile) as tmp:
        names = [f"{profile}.png" if i == 0 else f"{profile}-{i + 1}.png" for i in range(len(figures))]
        for n, png in zip(names, figures):
            atomic_write_bytes(tmp / n, png)
        save_result(tmp / f"{profile}.npz", arrays, config=dict(config), other=other, figures=names,
                    claims=[dict(c) for c in claims], **extra)
        return install(tmp, folder, profile, name)


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
    there is untouched, during it the backup holds the previous unit whole (:func:`load_run` reads
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
    >>> sorted(p.name for p in folder.iterdir()), load_run(folder.name, "fast", folder=folder.parent)[0]["x"].tolist()
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


def load_run(name: str, profile: str = "full", root: Path | str | None = None, *, folder: Path | str | None = None,
             formerly: Sequence[str] = ()) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The result dict and provenance stored for the ``profile`` run of ``name``, or None if there is none.

    Read from ``folder/<name>/<profile>.*`` (``folder``: a results folder, default :func:`results_dir`
    of ``root``) through the verified loader (:func:`companion.provenance.load_result`; the backup of a
    write killed midway when the unit itself does not verify, see :func:`install`). Lists come back as
    numpy arrays and 0-d arrays as Python scalars. A verified unit that holds another experiment's or
    profile's result raises ValueError naming the file; one stored under a former name of the
    experiment (``formerly``: the registered experiment's, :func:`companion.registry.experiment`) and
    moved to the folder of its name now loads as its own, with ``result["experiment"]`` the name now
    (the provenance keeps the name it was stored under).

    Examples
    --------
    >>> import tempfile
    >>> from companion.runner import run_experiment
    >>> root = Path(tempfile.mkdtemp())
    >>> load_run("intro-consensus", "fast", root=root) is None  # nothing stored yet
    True
    >>> _ = run_experiment("intro-consensus", "fast", out=results_dir(root), params={"n": 4, "t1": 1.0}, figure=False)
    >>> result, meta = load_run("intro-consensus", "fast", root=root)
    >>> result["max_mass_error"] < 1e-8, result["p_sim"].shape, meta["config"]["params"]
    (True, (21, 3), {'n': 4, 't1': 1.0})
    >>> load_run("intro-consensus", "fast", folder=results_dir(root))[1]["config"]["experiment"]
    'intro-consensus'
    """
    folder = Path(folder) if folder is not None else results_dir(root)
    path = folder / name / f"{profile}.npz"
    try:
        arrays, meta = _read_unit(folder / name, profile)
    except FileNotFoundError:
        return None
    stored = (meta.get("config") or {})
    recorded = stored.get("experiment")
    former = recorded != name and recorded in tuple(formerly)  # stored before the experiment was renamed
    if (name if former else recorded, stored.get("profile")) != (name, profile):  # a verified pair, but another run's
        raise ValueError(f"{path}: holds the {stored.get('profile')!r} result of {recorded!r}, "
                         f"not the {profile!r} result of {name!r}")
    result = unflatten_result(arrays, meta.get("other"))
    if former:
        result["experiment"] = name  # judged, shown and compared under its name now
    return result, meta


def _read_unit(folder: Path, profile: str) -> tuple[dict[str, Any], dict[str, Any]]:
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
    >>> _read_unit(folder, "fast")[0]["x"].tolist(), backup.exists()  # the previous unit, nothing written
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
    itself, or the backup of a write killed midway that :func:`load_run` would read, or None.

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


def stale_reason(exp, profile: str = "full", folder: Path | str | None = None) -> str | None:
    """Why the ``profile`` result of the registered experiment ``exp`` stored in the results folder
    ``folder`` (default ``data/results``) is not the current one, or None when it is.

    A result is current when it verifies and was computed with the profile's config as declared now
    (same parameters, no overrides): changing a profile makes its stored result stale, and
    :func:`companion.runner.run_profiles` computes it again.

    Examples
    --------
    >>> import tempfile
    >>> from companion.registry import get
    >>> from companion.runner import run_experiment
    >>> folder, exp = Path(tempfile.mkdtemp()), get("intro-consensus")
    >>> stale_reason(exp, "fast", folder)
    'nothing stored'
    >>> _ = run_experiment("intro-consensus", "fast", out=folder, figure=False)
    >>> stale_reason(exp, "fast", folder) is None
    True
    >>> _ = run_experiment("intro-consensus", "fast", out=folder, params={"n": 4}, figure=False)
    >>> stale_reason(exp, "fast", folder)
    "computed with parameters {'n': 4}, not the profile's: n = 4 (the profile has 64)"
    """
    try:
        stored = load_run(exp.name, profile, folder=folder, formerly=exp.formerly)
    except (OSError, ValueError) as e:
        return f"does not verify ({e})"
    return stale(exp, profile, stored)


def stale(exp, profile: str, stored: tuple[dict[str, Any], dict[str, Any]] | None) -> str | None:
    """:func:`stale_reason` for a result of the registered experiment ``exp`` already loaded (``stored``:
    :func:`load_run`'s pair or None).

    Examples
    --------
    >>> from companion.registry import get
    >>> stale(get("intro-consensus"), "fast", None)
    'nothing stored'
    """
    import dataclasses

    if stored is None:
        return "nothing stored"
    result, meta = stored
    now = dataclasses.asdict(exp.configure(profile))
    then = dataclasses.asdict(exp.config_of(result))
    differ = [f"{k} = {then[k]!r} (the profile has {now[k]!r})" for k in now if _plain(then.get(k)) != _plain(now[k])]
    params = (meta.get("config") or {}).get("params") or {}
    if params or differ:
        head = f"computed with parameters {params}, not the profile's" if params else "the profile changed since"
        return head + (": " + "; ".join(differ) if differ else "")
    return None


def code_status(exp, meta: Mapping[str, Any] | None) -> str:
    """Whether the code behind a stored result of the registered experiment ``exp`` (its provenance
    ``meta``) is the code now: ``"current"``, ``"code changed since <commit>"`` (the source hash it
    recorded, see :func:`code_version`, differs from the checkout's), or ``"code version not
    recorded"`` (stored before provenance recorded one, or nothing stored: ``meta`` None).

    :func:`stale_reason` is about the configuration; this is about the code. A chapter keeps showing
    a result whose code changed (its caption says so); ``python -m companion full`` (``make full``)
    recomputes it.

    Examples
    --------
    >>> from companion.registry import get
    >>> exp = get("intro-consensus")
    >>> code_status(exp, {"code": code_version(exp), "commit": "0123456789abcdef"})
    'current'
    >>> code_status(exp, {"code": {"module": "m", "sha256": "0" * 16}, "commit": "0123456789abcdef"})
    'code changed since 0123456'
    >>> code_status(exp, {"commit": "0123456789abcdef"})
    'code version not recorded'
    """
    if isinstance(exp, str):
        raise TypeError(f"code_status takes the registered experiment (companion.registry.get({exp!r})), not its name")
    code = (meta or {}).get("code")
    if not isinstance(code, Mapping) or not isinstance(code.get("sha256"), str):
        return "code version not recorded"
    now = code_version(exp)
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
