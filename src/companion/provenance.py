"""Atomic writes and provenance: every result under data/ sits beside a JSON that says how it was
made and records the SHA-256 of its files, so that a result is loaded only as the unit it was saved."""
from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata as _md
import io
import json
import os
import platform
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = [
    "repo_root", "atomic_write_text", "atomic_write_bytes", "provenance", "sha256_file", "ResultError",
    "save_result", "verify_result", "load_result", "seal_result", "source_files", "source_hash",
]

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
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError) and not isinstance(e, FileNotFoundError) and str(path) not in str(e):
            # a full disk (ENOSPC) or a quota: say which file, and that nothing was replaced
            raise OSError(e.errno, f"{e.strerror or e} while writing {path} (nothing was replaced; the "
                          "temporary file is removed)") from e
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


def processor() -> str:
    """The processor's model name and the vector extension torch's CPU kernels use ("AMD EPYC, AVX512").

    Two machines with the same platform string can differ in both: in their timings, and in the float32
    rounding of a long computation (the LLM chapter's LoRA fine-tunes part after a few steps).

    Examples
    --------
    >>> import torch
    >>> name, _, ext = processor().rpartition(", ")
    >>> bool(name), ext == torch.backends.cpu.get_cpu_capability()
    (True, True)
    """
    import torch

    name = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name or 'unknown processor'}, {torch.backends.cpu.get_cpu_capability()}"


def provenance(config: Mapping[str, Any] | Any = None, seed: int | None = None, **extra: Any) -> dict[str, Any]:
    """A JSON-ready record: config, seed, package versions, git commit (and whether src/ had
    uncommitted changes), machine, processor and time.

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
        "processor": processor(),
        # the device a run used is the caller's to state (extra["device"]); here only what exists
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **{k: _jsonable(v) for k, v in extra.items()},
    }


# Modules of the package that store, run, show or judge results but compute none of their numbers:
# left out of :func:`source_hash`, so that editing them does not make every stored result stale.
# (Verdicts are re-derived from the stored numbers: ``companion.runner.rejudge``.)
SOURCE_EXCLUDED = frozenset({
    "companion.provenance", "companion.store", "companion.transport", "companion.sweep", "companion.runner",
    "companion.pages", "companion.report", "companion.style", "companion.ledger", "companion.inventory",
    "companion.perf", "companion.__main__", "companion.registry", "companion.replicate", "companion.inference",
})
# Functions registered by these decorators judge or summarise a stored result and compute none of its
# numbers: their lines are left out of a module's hash, so that a re-read verdict does not make it stale.
JUDGING_DECORATORS = frozenset({"claims_for", "summary_for"})
# The functions an ``@experiment(..., plot=...)`` names draw a stored result (a chapter draws it again
# from the stored arrays each time it executes): their lines are left out too, so a figure's ticks or
# legend can change without making its result stale.
DRAWING_KEYWORD = "plot"


def _unhashed_spans(tree: Any) -> list[tuple[int, int]]:
    r"""1-based inclusive line spans of the module-level functions that judge or draw a result and compute
    none of its numbers: those decorated by :data:`JUDGING_DECORATORS` and those an ``@experiment``
    decorator of the module names as its ``plot`` (decorators included). Sorted by line.

    Examples
    --------
    >>> import ast
    >>> code = "def plot_a(r):\n    pass\n@experiment('a', plot=plot_a)\ndef a(cfg):\n    return 1\n"
    >>> _unhashed_spans(ast.parse(code))
    [(1, 2)]
    """
    import ast

    def name(d: Any) -> Any:
        f = d.func if isinstance(d, ast.Call) else d
        return getattr(f, "id", None) or getattr(f, "attr", None)

    drawing: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and name(node) == "experiment":
            for kw in node.keywords:
                if kw.arg == DRAWING_KEYWORD:
                    values = kw.value.elts if isinstance(kw.value, (ast.Tuple, ast.List)) else [kw.value]
                    drawing.update(v.id for v in values if isinstance(v, ast.Name))
    spans = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if {name(d) for d in node.decorator_list} & JUDGING_DECORATORS or node.name in drawing:
                spans.append((min([node.lineno] + [d.lineno for d in node.decorator_list]), node.end_lineno))
    return spans


def _module_file(module: str, package_dir: Path) -> Path | None:
    """The source file of ``companion.x.y`` under ``package_dir`` (``x/y.py`` or ``x/y/__init__.py``)."""
    parts = module.split(".")[1:]
    base = package_dir.joinpath(*parts) if parts else package_dir
    for f in (base.with_suffix(".py") if parts else None, base / "__init__.py"):
        if f is not None and f.is_file():
            return f
    return None


def _imports(tree: Any, module: str, is_package: bool) -> set[str]:
    """Every ``companion...`` module named by an import statement of ``tree`` (any depth, relative ones
    resolved from ``module``); ``from pkg import name`` adds ``pkg.name`` too (it may be a module)."""
    import ast

    found: set[str] = set()
    here = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = here[:len(here) - (node.level - 1)] if node.level > 1 else here
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m == "companion" or m.startswith("companion.")}


def source_files(module: str, package_dir: Path | str | None = None) -> list[Path]:
    """The source files that determine a result computed by ``module`` (a ``companion...`` module):
    its own file and, transitively, every package module it imports (statically, by its import
    statements, function-level ones included; parent packages' ``__init__`` counted as Python runs
    them), less :data:`SOURCE_EXCLUDED`. Sorted by path.

    Examples
    --------
    >>> names = [f.relative_to(Path(__file__).parent).as_posix() for f in source_files("companion.experiments.introduction.consensus")]
    >>> "experiments/introduction/consensus.py" in names, "integrate.py" in names, "store.py" in names
    (True, True, False)
    """
    package_dir = Path(package_dir) if package_dir is not None else Path(__file__).resolve().parent
    todo, seen, files = [module], set(), {}
    if module.split(".")[0] != "companion":  # an experiment registered outside the package (a test's): its file
        import importlib.util

        origin = getattr(importlib.util.find_spec(module), "origin", None)
        if origin and Path(origin).is_file():
            files[Path(origin)] = module
            todo = list(_parsed(Path(origin), module)[0])
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # importing a.b.c runs a and a.b first
        f = _module_file(m, package_dir)
        if f is None or m in SOURCE_EXCLUDED:
            continue
        files[f] = m
        todo.extend(_parsed(f, m)[0])
    return sorted(files, key=lambda f: _relative(f, package_dir))


def _relative(f: Path, package_dir: Path) -> str:
    return f.relative_to(package_dir).as_posix() if f.is_relative_to(package_dir) else f.name


_PARSED: dict[tuple[Path, str, int, int], tuple[frozenset, bytes]] = {}


def _parsed(f: Path, module: str) -> tuple[frozenset, bytes]:
    """(package modules ``f`` imports, SHA-256 of its bytes with line endings as ``\\n`` and the lines of its
    judging and drawing functions left out: :func:`_unhashed_spans`), cached per file version (path, size, mtime) so
    that a page checking every stored result parses each file once."""
    import ast

    st = f.stat()
    key = (f, module, st.st_size, st.st_mtime_ns)
    if key not in _PARSED:
        data = f.read_bytes().replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        tree = ast.parse(data, filename=str(f))
        imports = frozenset(_imports(tree, module, f.name == "__init__.py"))
        lines = data.split(b"\n")
        for a, b in reversed(_unhashed_spans(tree)):
            del lines[a - 1:b]
        _PARSED[key] = (imports, hashlib.sha256(b"\n".join(lines)).digest())
    return _PARSED[key]


def source_hash(module: str, package_dir: Path | str | None = None) -> str:
    r"""SHA-256 (16 hex digits) of the source that determines a result of ``module``
    (:func:`source_files`): each file's path in the package and bytes, line endings read as ``\n``.

    Cheap (a parse of some tens of files) and deterministic: the same checkout gives the same hash
    on any machine, whatever its line endings.

    Examples
    --------
    >>> import tempfile
    >>> pkg = Path(tempfile.mkdtemp()) / "companion"
    >>> (pkg / "experiments").mkdir(parents=True)
    >>> for f, text in {"__init__.py": "", "maths.py": "X = 1\n", "store.py": "",
    ...                 "experiments/__init__.py": "", "experiments/e.py": "from ..maths import X\nfrom .. import store\n"}.items():
    ...     _ = (pkg / f).write_text(text)
    >>> h = source_hash("companion.experiments.e", pkg)
    >>> _ = (pkg / "maths.py").write_bytes(b"X = 1\r\n")           # line endings only: the same
    >>> source_hash("companion.experiments.e", pkg) == h
    True
    >>> _ = (pkg / "store.py").write_text("# machinery\n")          # an excluded module: the same
    >>> source_hash("companion.experiments.e", pkg) == h
    True
    >>> judged = "@claims_for('e')\ndef e_claims(result, cfg):\n    return []\n"
    >>> _ = (pkg / "experiments/e.py").write_text("from ..maths import X\nfrom .. import store\n" + judged)
    >>> source_hash("companion.experiments.e", pkg) == h               # a judging function: the same
    True
    >>> drawn = "def plot_e(r):\n    return {}\n@experiment('e', plot=plot_e)\ndef e(cfg):\n    return 1\n"
    >>> _ = (pkg / "experiments/e.py").write_text(drawn.format("'ticks'"))
    >>> h2 = source_hash("companion.experiments.e", pkg)
    >>> _ = (pkg / "experiments/e.py").write_text(drawn.format("'other ticks'"))
    >>> source_hash("companion.experiments.e", pkg) == h2           # a drawing function: the same
    True
    >>> _ = (pkg / "maths.py").write_text("X = 2\n")               # an imported module changed
    >>> source_hash("companion.experiments.e", pkg) == h
    False
    """
    package_dir = Path(package_dir) if package_dir is not None else Path(__file__).resolve().parent
    h = hashlib.sha256()
    for f in source_files(module, package_dir):
        h.update(_relative(f, package_dir).encode() + b"\0" + _parsed(f, _module_name(f, package_dir))[1])
    return h.hexdigest()[:16]


def _module_name(f: Path, package_dir: Path) -> str:
    if not f.is_relative_to(package_dir):
        return f.stem
    parts = list(f.relative_to(package_dir).with_suffix("").parts)
    return ".".join(["companion"] + (parts[:-1] if parts[-1] == "__init__" else parts))


class ResultError(ValueError):
    """A stored result that is not what its provenance JSON records, or cannot be read.

    The message names the file and what is wrong with it (missing, changed, unreadable).

    Examples
    --------
    >>> issubclass(ResultError, ValueError)
    True
    """


def sha256_file(path: Path | str) -> str:
    """SHA-256 of a file's bytes, as 64 hex digits (read in 1 MiB chunks).

    Examples
    --------
    >>> import tempfile
    >>> sha256_file(atomic_write_bytes(Path(tempfile.mkdtemp()) / "x", b"abc"))[:16]
    'ba7816bf8f01cfea'
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _figure_names(figures: Sequence[str | Path], folder: Path) -> list[str]:
    names = []
    if isinstance(figures, (str, Path)):
        raise TypeError(f"figures must be a list of file names, got the single {type(figures).__name__} {figures!r}")
    for f in figures:
        if not isinstance(f, (str, Path)):
            raise TypeError(f"figures must be file names (str or Path), got {type(f).__name__} {f!r}")
        name = Path(f).name
        if Path(f) not in (Path(name), folder / name):
            raise ValueError(f"figures must be names of files in {folder} (the result's folder), got {f!r}")
        if not (folder / name).is_file():
            raise ValueError(f"figures: {folder / name} does not exist; write the figures before save_result")
        names.append(name)
    return names


def _seal(meta: dict[str, Any], npz_sha: str, folder: Path, figures: Sequence[str]) -> dict[str, Any]:
    """``meta`` with the SHA-256 of the npz and of each figure under ``"sha256"``."""
    return {**meta, "sha256": {"npz": npz_sha, "figures": {name: sha256_file(folder / name) for name in figures}}}


def _write_meta(meta_path: Path, meta: Mapping[str, Any]) -> Path:
    return atomic_write_text(meta_path, json.dumps(meta, indent=1, sort_keys=True) + "\n")


def save_result(path: Path | str, arrays: Mapping[str, Any], config: Any = None, seed: int | None = None, *,
                figures: Sequence[str | Path] = (), **extra: Any) -> Path:
    """Save ``arrays`` to ``path`` (.npz) with a provenance JSON beside it (``path`` + ``.json``).

    One stored result is one unit: the figures (``figures``: names of files already written in the
    same folder), the .npz, and last the JSON, which records the SHA-256 of the .npz and of each
    figure under ``"sha256"``. Each file is written atomically; a write cut short anywhere leaves
    files that disagree with the JSON, which :func:`load_result` refuses.

    Parameters
    ----------
    path : where the arrays go (the suffix becomes ``.npz``).
    arrays : name -> array (numpy arrays, numbers, torch tensors on any device).
    config, seed, extra : recorded by :func:`provenance`.
    figures : file names in ``path``'s folder, recorded as ``"figures"`` and hashed.

    Examples
    --------
    >>> import tempfile
    >>> path = save_result(Path(tempfile.mkdtemp()) / "run", {"x": np.arange(3)}, {"n": 3}, seed=0)
    >>> arrays, meta = load_result(path)
    >>> arrays["x"].tolist(), meta["config"], path.suffix
    ([0, 1, 2], {'n': 3}, '.npz')
    >>> meta["sha256"]["npz"] == sha256_file(path), meta["sha256"]["figures"]
    (True, {})
    """
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_suffix(".npz")
    if "sha256" in extra:
        raise ValueError("extra provenance may not be called 'sha256': the hashes of the files are recorded there")
    names = _figure_names(figures, path.parent)
    meta = provenance(config, seed, figures=names, **extra)  # the git calls before the first write: a short window
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v.detach().cpu() if hasattr(v, "detach") else v) for k, v in arrays.items()})
    data = buf.getvalue()
    meta = _seal(meta, hashlib.sha256(data).hexdigest(), path.parent, names)
    atomic_write_bytes(path, data)
    _write_meta(path.with_suffix(".json"), meta)
    return path


def _check_regular(path: Path) -> None:
    """Refuse anything but a regular file before opening it (a FIFO or a device would block or never end)."""
    import stat

    mode = os.stat(path).st_mode  # FileNotFoundError passes through: nothing stored
    if not stat.S_ISREG(mode):
        raise ResultError(f"{path}: not a regular file (a FIFO, device or folder in place of a stored file); refused unread")


def _read_meta(meta_path: Path) -> dict[str, Any]:
    _check_regular(meta_path)
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except RecursionError:
        raise ResultError(f"{meta_path}: provenance JSON nested too deeply to read (not a file this package wrote)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ResultError(f"{meta_path}: unreadable provenance JSON ({type(e).__name__}: {e})") from None
    if not isinstance(meta, dict):
        raise ResultError(f"{meta_path}: provenance JSON is a {type(meta).__name__}, not an object")
    _check_fields(meta, meta_path)
    return meta


# The provenance fields readers rely on, with the JSON types they may hold (a field may be absent). The
# JSON is not covered by its own hashes, so a wrongly typed field is refused here, naming it, rather than
# escaping a reader far away as an AttributeError.
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "config": (dict, type(None)), "other": (dict, type(None)), "sweep": (dict, type(None)), "claims": (list, type(None)),
    "figures": (list,), "sha256": (dict,), "code": (dict, type(None)), "versions": (dict,),
    "seed": (int, type(None)), "wall_time_s": (int, float, type(None)), "cpu_time_s": (int, float, type(None)),
    "commit": (str, type(None)), "created": (str, type(None)), "device": (str, type(None)), "profile": (str, type(None)),
    "machine": (str, type(None)), "processor": (str, type(None)), "cuda_device": (str, type(None)),
    "load_average": (list, type(None)), "experiment": (str, type(None)),
}


def _check_fields(meta: Mapping[str, Any], meta_path: Path) -> None:
    """ResultError naming the first field of ``meta`` whose JSON type is not one :data:`FIELD_TYPES` allows
    (claims: a list of objects).

    Examples
    --------
    >>> _check_fields({"config": {"n": 3}, "claims": [{"id": "x"}]}, Path("r.json"))
    >>> _check_fields({"config": "n=3"}, Path("r.json"))
    Traceback (most recent call last):
    ...
    companion.provenance.ResultError: r.json: field 'config' is a str, not a dict or NoneType; refused
    """
    for key, types in FIELD_TYPES.items():
        if key in meta and (not isinstance(meta[key], types) or (isinstance(meta[key], bool) and bool not in types)):
            raise ResultError(f"{meta_path}: field {key!r} is a {type(meta[key]).__name__}, not a "
                              f"{' or '.join(t.__name__ for t in types)}; refused")
    for i, row in enumerate(meta.get("claims") or []):
        if not isinstance(row, dict):
            raise ResultError(f"{meta_path}: claims[{i}] is a {type(row).__name__}, not an object; refused")


def _plain_name(name: Any) -> bool:
    """Whether ``name`` is a file name inside a folder: no folder part, not absolute, not . or .."""
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\\" not in name
            and "\x00" not in name)


def _check_figures(meta: Mapping[str, Any], sums: Mapping[str, Any], meta_path: Path) -> None:
    """The figures a JSON lists and hashes are plain names of files in its own folder, the same in both lists."""
    listed, hashed = meta.get("figures", []), sums.get("figures", {})
    if not isinstance(listed, list):
        raise ResultError(f"{meta_path}: 'figures' is a {type(listed).__name__}, not a list of file names")
    for name in list(listed) + list(hashed):
        if not _plain_name(name):
            raise ResultError(f"{meta_path}: figure {name!r} is not a plain file name in the result's folder; refused")
    if sorted(listed) != sorted(hashed):
        raise ResultError(f"{meta_path}: lists the figures {sorted(listed)} but records the hashes of {sorted(hashed)}")


def _check_file(path: Path, want: Any, meta_path: Path, data: bytes | None = None) -> None:
    if path.exists() and not path.is_file():
        raise ResultError(f"{path}: not a regular file (a FIFO, device or folder), though {meta_path.name} records it; refused unread")
    if not path.is_file():
        raise ResultError(f"{path}: missing, though {meta_path.name} records it (a deleted file or a write cut short)")
    got = hashlib.sha256(data).hexdigest() if data is not None else sha256_file(path)
    if got != want:
        raise ResultError(
            f"{path}: SHA-256 {got[:16]}... differs from {str(want)[:16]}... recorded in {meta_path.name} "
            f"({path.stat().st_size} bytes): the file was changed, truncated or replaced after the result was "
            "saved (an interrupted write, or a copy from another result); rerun what made it")


def _read_verified(path: Path) -> tuple[bytes, dict[str, Any]]:
    """The .npz bytes at ``path`` and its provenance, after checking every hash the JSON records."""
    meta_path = path.with_suffix(".json")
    if not os.path.lexists(meta_path):
        raise FileNotFoundError(f"{path}: no provenance JSON beside it, so the result is incomplete")
    meta = _read_meta(meta_path)
    sums = meta.get("sha256")
    if not isinstance(sums, dict) or not isinstance(sums.get("npz"), str) or not isinstance(sums.get("figures", {}), dict):
        raise ResultError(
            f"{meta_path}: records no SHA-256 of its files, so they cannot be verified (saved before results were "
            f"sealed?); if the files are trusted as they are, seal them: companion.provenance.seal_result('{path}')")
    _check_figures(meta, sums, meta_path)
    data = path.read_bytes() if path.is_file() else None
    _check_file(path, sums["npz"], meta_path, data)
    for name, want in sums.get("figures", {}).items():
        _check_file(path.parent / name, want, meta_path)
    return data, meta


def verify_result(path: Path | str) -> dict[str, Any]:
    """Check a stored result against its provenance JSON; return that provenance.

    Raises FileNotFoundError when the JSON is missing (an incomplete result, never loaded) and
    :class:`ResultError`, naming the file, when the JSON is unreadable or records no hashes, or the
    .npz or a figure is missing or differs from the SHA-256 the JSON records.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> a = save_result(folder / "a", {"x": np.arange(3)})
    >>> b = save_result(folder / "b", {"x": np.arange(4)})
    >>> verify_result(a)["sha256"]["npz"] == sha256_file(a)
    True
    >>> _ = atomic_write_bytes(a, b.read_bytes())  # another result's arrays beside a's JSON
    >>> verify_result(a)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    companion.provenance.ResultError: .../a.npz: SHA-256 ... differs from ... recorded in a.json ...
    """
    return _read_verified(Path(path).with_suffix(".npz"))[1]


# What a stored .npz may expand to: this package writes arrays uncompressed (np.savez), so an array far
# larger than its bytes on disk was not written here (a zip bomb hashes and verifies like any file).
MAX_LOADED_BYTES = 4 * 2**30
MAX_EXPANSION = 64


def _check_expansion(data: bytes, path: Path) -> None:
    """ResultError when the arrays in ``data`` (an .npz's bytes) would load to more than
    :data:`MAX_LOADED_BYTES`, or an array larger than 1 MiB expands more than :data:`MAX_EXPANSION` times."""
    import zipfile

    try:
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise ResultError(f"{path}: not a readable .npz ({type(e).__name__}: {e})") from None
    total = sum(i.file_size for i in infos)
    if total > MAX_LOADED_BYTES:
        raise ResultError(f"{path}: its arrays would load to {total / 2**30:.1f} GiB, above the "
                          f"{MAX_LOADED_BYTES / 2**30:.0f} GiB this loader accepts; refused unread")
    for i in infos:
        if i.file_size > 2**20 and i.file_size > MAX_EXPANSION * max(i.compress_size, 1):
            raise ResultError(f"{path}: array {i.filename!r} expands {i.file_size // max(i.compress_size, 1)} times "
                              f"({i.compress_size} bytes to {i.file_size}); this package writes arrays uncompressed, "
                              "so it did not write this one: refused unread")


def load_result(path: Path | str) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Load a result saved by :func:`save_result`, verified: (arrays, provenance).

    The files are checked as by :func:`verify_result` (same errors) and the arrays are read from
    the very bytes that were hashed.

    Examples
    --------
    >>> import tempfile
    >>> path = save_result(Path(tempfile.mkdtemp()) / "run", {"x": np.arange(3)}, {"n": 3})
    >>> load_result(path)[0]["x"].tolist()
    [0, 1, 2]
    >>> _ = atomic_write_bytes(path, path.read_bytes()[:-10])  # truncated
    >>> load_result(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    companion.provenance.ResultError: .../run.npz: SHA-256 ... the file was changed, truncated or replaced ...
    """
    path = Path(path).with_suffix(".npz")
    data, meta = _read_verified(path)
    _check_expansion(data, path)
    try:
        with np.load(io.BytesIO(data)) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as e:  # hashed, yet not an npz: the writer stored something else
        raise ResultError(f"{path}: not a readable .npz ({type(e).__name__}: {e})") from None
    return arrays, meta


def seal_result(path: Path | str) -> Path:
    """Record in an existing result's JSON the SHA-256 of its .npz and figures, trusting them as they are.

    The migration for results saved before :func:`save_result` recorded hashes (run it only on
    files known to be intact, e.g. as committed). A result already sealed is verified and left
    alone; the JSON is otherwise rewritten with only the ``"sha256"`` field added.

    Examples
    --------
    >>> import tempfile
    >>> path = save_result(Path(tempfile.mkdtemp()) / "old", {"x": np.arange(2)})
    >>> meta = json.loads(path.with_suffix(".json").read_text())
    >>> _ = _write_meta(path.with_suffix(".json"), {k: v for k, v in meta.items() if k != "sha256"})
    >>> load_result(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    companion.provenance.ResultError: .../old.json: records no SHA-256 of its files, ...
    >>> load_result(seal_result(path))[1] == meta
    True
    """
    path = Path(path).with_suffix(".npz")
    meta_path = path.with_suffix(".json")
    meta = _read_meta(meta_path)
    if "sha256" in meta:
        verify_result(path)  # never launder a mismatch into a new hash
        return path
    if not path.is_file():
        raise ResultError(f"{path}: missing, though {meta_path.name} exists; nothing to seal")
    figures = meta.get("figures") or []
    for name in figures:
        if not (path.parent / name).is_file():
            raise ResultError(f"{path.parent / name}: missing, though {meta_path.name} lists it; nothing to seal")
    _write_meta(meta_path, _seal(meta, sha256_file(path), path.parent, figures))
    return path
