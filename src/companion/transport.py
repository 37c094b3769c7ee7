"""Carrying stored results between machines: packed into a few small files, verified when unpacked."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Sequence

from .provenance import atomic_write_bytes, load_result
from .store import results_dir, verified_unit

__all__ = ["pack_results", "store_packed"]


def pack_results(folder: Path | str, dest: Path | str, *, max_files: int = 8, max_bytes: int = 16 * 2**20) -> list[Path]:
    """Pack every verified result under ``folder`` (``<name>/<profile>.*``) into at most ``max_files``
    gzipped tar files of at most ``max_bytes`` each, written to ``dest``.

    For bringing results back from a remote machine that returns a few small files. A result that does
    not verify is left out; one that alone exceeds ``max_bytes`` compressed raises ValueError.

    Examples
    --------
    >>> import tempfile
    >>> from companion.runner import run_experiment
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

    import warnings

    folder, dest = Path(folder), Path(dest)
    if not folder.is_dir():
        raise ValueError(f"folder {folder} does not exist or is not a folder: nothing to pack")
    units = []
    for meta in sorted(folder.glob("*/*.json")):
        npz = meta.with_suffix(".npz")
        # A write killed midway leaves the previous unit in a backup beside it: that one is packed.
        where = verified_unit(meta.parent, meta.stem) or meta.parent
        try:
            _, info = load_result(where / npz.name)
        except (OSError, ValueError) as e:
            warnings.warn(f"pack: {npz} left out: it does not verify ({e})", RuntimeWarning, stacklevel=2)
            continue
        names = [meta.name, npz.name] + list(info.get("figures") or [])
        files = [(where / f, f"{meta.parent.name}/{f}") for f in names]
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for f, arcname in files:
                tar.add(f, arcname=arcname)
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
    if not units:
        raise ValueError(f"no verified result under {folder} (<name>/<profile>.json and .npz): nothing packed")
    if len(bins) > max_files:
        raise ValueError(f"{len(units)} results need {len(bins)} files of at most {max_bytes / 2**20:.0f} MB; max_files = {max_files}")
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for i, (_, files) in enumerate(bins, 1):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for f, arcname in files:
                tar.add(f, arcname=arcname)
        written.append(atomic_write_bytes(dest / f"results-{i}.tar.gz", buf.getvalue()))
    return written



# What one pack may unpack to: pack_results writes at most 16 MB packs of a few results each.
MAX_PACK_BYTES = 2 * 2**30
MAX_PACK_MEMBERS = 10_000


def _check_pack_file(pack: Path) -> None:
    """ValueError unless ``pack`` is a regular file (a FIFO would block the reader forever)."""
    import stat

    try:
        mode = pack.stat().st_mode
    except OSError as e:
        raise ValueError(f"{pack}: not a readable pack ({type(e).__name__}: {e}); nothing stored") from None
    if not stat.S_ISREG(mode):
        raise ValueError(f"{pack}: not a regular file (a FIFO, device or folder); refused unread, nothing stored")


def store_packed(packs: Sequence[Path | str], root: Path | str | None = None) -> list[Path]:
    """Unpack files made by :func:`pack_results` into ``root`` (default ``data/results``), verifying
    each result before it replaces anything; returns the .npz paths stored (a round trip: :func:`pack_results`).

    Examples
    --------
    A pack whose result was altered after packing is refused, naming the file:

    >>> from companion.runner import run_experiment
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
    import shutil
    import tarfile
    import tempfile

    from .store import install, load_run, staging

    root = Path(root) if root is not None else results_dir()
    stored = []
    with tempfile.TemporaryDirectory() as tmp:
        units: dict[tuple[str, str], tuple[Path, list[str]]] = {}
        for i, pack in enumerate(packs):  # every pack verified before anything is stored
            where = Path(tmp) / str(i)
            _check_pack_file(Path(pack))
            try:
                with tarfile.open(pack, mode="r:gz") as tar:
                    members = tar.getmembers()
                    size = sum(m.size for m in members)
                    if len(members) > MAX_PACK_MEMBERS or size > MAX_PACK_BYTES:
                        raise ValueError(f"{pack}: holds {len(members)} files of {size / 2**20:.0f} MiB unpacked, above the "
                                         f"{MAX_PACK_MEMBERS} files and {MAX_PACK_BYTES // 2**20} MiB a pack may hold; nothing stored")
                    tar.extractall(where, filter="data")  # no absolute paths, links or devices
            except (OSError, tarfile.TarError) as e:
                raise ValueError(f"{pack}: not a readable pack ({type(e).__name__}: {e}); nothing stored") from None
            for meta in sorted(where.glob("*/*.json")):
                name, profile = meta.parent.name, meta.stem
                # verified, and the profile result of the experiment its folder names (raises naming the file)
                try:
                    loaded = load_run(name, profile, folder=where)
                except ValueError as e:
                    raise type(e)(f"{pack}: {name}/{meta.name}: {e}; nothing stored") from None
                if (name, profile) in units:
                    raise ValueError(f"{pack}: holds the {profile!r} result of {name!r} a second time; nothing stored")
                units[(name, profile)] = (meta.parent, list(loaded[1].get("figures") or []))
        for (name, profile), (src, figures) in sorted(units.items()):
            target = root / name
            with staging(target, profile) as new:
                for f in figures + [f"{profile}.npz", f"{profile}.json"]:
                    shutil.copyfile(src / f, new / f)
                stored.append(install(new, target, profile, name))  # verified again, then swapped in whole
    return stored

