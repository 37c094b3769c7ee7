"""Atomic writes and provenance: every result under data/ sits beside a JSON that says how it was made."""
from __future__ import annotations

import datetime as _dt
import importlib.metadata as _md
import json
import os
import platform
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np

__all__ = ["repo_root", "atomic_write_text", "atomic_write_bytes", "provenance", "save_result", "load_result"]

_PACKAGES = ("companion", "torch", "numpy", "scipy", "pot", "transformers", "peft", "matplotlib")


def repo_root() -> Path:
    """The repository root: ``$COMPANION_ROOT`` if set, else the folder holding pyproject.toml above this file.

    Examples
    --------
    >>> (repo_root() / "src" / "companion").is_dir() or "COMPANION_ROOT" in os.environ
    True
    """
    env = os.environ.get("COMPANION_ROOT")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for p in here.parents:
        if (p / "pyproject.toml").exists() and (p / "src" / "companion").exists():
            return p
    return Path.cwd()


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Permissions of written files: what open() would give (the temporary file is created 0600).
_FILE_MODE = 0o666 & ~_read_umask()


def atomic_write_bytes(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``.

    A reader never sees a half-written file, and a crash leaves the old file intact. The file gets
    the permissions a plain ``open(path, "wb")`` would give (0666 less the umask).

    Examples
    --------
    >>> import tempfile
    >>> p = atomic_write_bytes(Path(tempfile.mkdtemp()) / "a" / "x.bin", b"abc")
    >>> p.read_bytes(), sorted(f.name for f in p.parent.iterdir())
    (b'abc', ['x.bin'])
    >>> p.stat().st_mode & 0o777 == 0o666 & ~_read_umask()
    True
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), _FILE_MODE)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: Path | str, text: str) -> Path:
    """Text version of :func:`atomic_write_bytes` (UTF-8).

    Examples
    --------
    >>> import tempfile
    >>> atomic_write_text(Path(tempfile.mkdtemp()) / "x.txt", "é").read_text(encoding="utf-8")
    'é'
    """
    return atomic_write_bytes(path, text.encode("utf-8"))


def _git_commit(root: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except Exception:
        return None


def _source_modified(root: Path) -> bool | None:
    """Whether src/ differs from the commit (a result from uncommitted code names a commit it did not run)."""
    try:
        out = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "src"], capture_output=True, text=True, timeout=5)
        return bool(out.stdout.strip()) if out.returncode == 0 else None
    except Exception:
        return None


def _versions() -> dict[str, str]:
    v = {}
    for p in _PACKAGES:
        try:
            v[p] = _md.version(p)
        except _md.PackageNotFoundError:
            pass
    return v


def _jsonable(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if hasattr(x, "tolist"):
        return x.tolist()
    if hasattr(x, "__dataclass_fields__"):
        import dataclasses

        return _jsonable(dataclasses.asdict(x))
    return repr(x)


def provenance(config: Mapping[str, Any] | Any = None, seed: int | None = None, **extra: Any) -> dict[str, Any]:
    """A JSON-ready record: config, seed, package versions, git commit (and whether src/ had
    uncommitted changes), machine and time.

    Examples
    --------
    >>> meta = provenance({"beta": 1.0}, seed=3, device="cpu")
    >>> meta["config"], meta["seed"], meta["device"], "torch" in meta["versions"]
    ({'beta': 1.0}, 3, 'cpu', True)
    """
    import torch

    root = repo_root()
    return {
        "config": _jsonable(config),
        "seed": seed,
        "versions": _versions(),
        "commit": _git_commit(root),
        "source_modified": _source_modified(root),
        "python": platform.python_version(),
        "machine": platform.platform(),
        # the device a run used is the caller's to state (extra["device"]); here only what exists
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **{k: _jsonable(v) for k, v in extra.items()},
    }


def save_result(path: Path | str, arrays: Mapping[str, Any], config: Any = None, seed: int | None = None, **extra: Any) -> Path:
    """Save ``arrays`` to ``path`` (.npz) with a provenance JSON beside it (``path`` + ``.json``).

    Both files are written atomically; the JSON is written last, so its presence marks a
    complete result.

    Examples
    --------
    >>> import tempfile
    >>> path = save_result(Path(tempfile.mkdtemp()) / "run", {"x": np.arange(3)}, {"n": 3}, seed=0)
    >>> arrays, meta = load_result(path)
    >>> arrays["x"].tolist(), meta["config"], path.suffix
    ([0, 1, 2], {'n': 3}, '.npz')
    """
    import io

    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_suffix(".npz")
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v.detach().cpu() if hasattr(v, "detach") else v) for k, v in arrays.items()})
    atomic_write_bytes(path, buf.getvalue())
    meta = provenance(config, seed, **extra)
    atomic_write_text(path.with_suffix(".json"), json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return path


def load_result(path: Path | str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Load a result saved by :func:`save_result`: (arrays, provenance) (example there).

    Raises FileNotFoundError if the provenance JSON is missing (an incomplete result).
    """
    path = Path(path).with_suffix(".npz")
    meta_path = path.with_suffix(".json")
    if not meta_path.exists():
        raise FileNotFoundError(f"{path}: no provenance JSON beside it, so the result is incomplete")
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    return arrays, json.loads(meta_path.read_text())
