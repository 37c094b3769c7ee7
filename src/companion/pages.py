"""What a chapter and the Status page display of stored results: one line of provenance, the stored
paper-scale result in place of the chapter's own, where each figure comes from, how long things took.

Nothing here computes an experiment: it reads what :mod:`companion.store` verified.
"""
from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any, Mapping

from .provenance import repo_root
from .store import load_from, load_run, results_dir, stale

__all__ = ["show_stored", "stored_full", "show_full", "figure_sources", "chapter_times", "machine"]


def show_stored(name: str, profile: str = "full", root: Path | str | None = None) -> dict[str, Any] | None:
    """Load a stored result for a chapter and print one line saying where it comes from.

    Prints the commit, date, device and run time from the provenance, or, when nothing is stored,
    the command that makes it. Returns the result dict (see :func:`load_run`) or None.

    Examples
    --------
    >>> import tempfile
    >>> from companion.runner import run_experiment
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
    >>> from companion.runner import run_experiment
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
        stored = load_from(results_dir(root), name, "full")
    except (OSError, ValueError) as e:
        stored, reason = None, f"does not verify ({e})"
    else:
        reason = stale(name, "full", stored)
    if reason is not None:
        print(f"{name}: " + (f"no stored full-profile result; run: python -m companion run {name} --profile full"
                             if reason == "nothing stored" else f"stored full-profile result not used: {reason}"))
        return None
    result, meta = stored
    print(f"{name}: " + _stored_line(name, "full", meta, root))
    return result



def show_full(result: Mapping[str, Any], root: Path | str | None = None, *, draw: bool = True) -> dict[str, Any]:
    """The stored full-profile result of ``result``'s experiment when one is stored and current, else
    ``result`` itself: what a chapter judges and records (the paper-scale measurement where there is one).

    Prints where it comes from (:func:`show_stored`'s line, or why a stored one is not used); with
    ``draw``, draws the stored result with the experiment's plot function and prints its verdicts.

    Examples
    --------
    >>> import tempfile
    >>> from companion.runner import run_experiment
    >>> from companion.registry import get
    >>> root = Path(tempfile.mkdtemp())
    >>> fast = get("intro-consensus").run("fast", n=4, t1=1.0)
    >>> show_full(fast, root)["profile"]
    intro-consensus: no stored full-profile result; run: python -m companion run intro-consensus --profile full
    'custom'
    >>> _ = run_experiment("intro-consensus", "full", out=results_dir(root), params={"n": 4}, figure=False)
    >>> show_full(fast, root)["profile"]  # computed with other parameters than the full profile's
    intro-consensus: stored full-profile result not used: computed with parameters {'n': 4}, not the profile's: n = 4 (the profile has 64)
    'custom'
    >>> _ = run_experiment("intro-consensus", "full", out=results_dir(root), figure=False)
    >>> full = show_full(fast, root, draw=False)  # doctest: +ELLIPSIS
    intro-consensus: stored full profile: commit ..., device cpu, ... s
    >>> full["profile"], full["p_sim"].shape
    ('full', (21, 3))
    """
    from .registry import get
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
    note of the experiment's :class:`~companion.registry.PaperScale` (``paper``). An experiment
    computed in parts (``<name>/parts/*.json``, e.g. one LoRA run each) adds its parts' wall and CPU
    times to the full run's, which then only assembled them; ``parts`` counts them (0 otherwise). Where
    the full result is not assembled yet, ``parts`` counts the parts stored so far and ``parts_s`` sums
    their wall times (None without parts).

    Examples
    --------
    >>> import tempfile
    >>> from companion.runner import run_experiment
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = run_experiment("intro-consensus", "full", out=results_dir(root), params={"n": 4, "t1": 1.0}, figure=False)
    >>> rows = {r["experiment"]: r for r in figure_sources("fast", root=root)}
    >>> [(r["profile"], r["device"], r["source"]) for r in (rows["intro-consensus"], rows["intro-clustering"])]
    [('full', 'cpu', 'data/results/intro-consensus/full.npz'), ('fast', 'cpu', 'computed while the chapter executes')]
    >>> rows["intro-consensus"]["full_s"] > 0, rows["intro-consensus"]["fast_s"], rows["intro-consensus"]["verdicts"]
    (True, None, {'reproduced': 2})
    """
    from .registry import registry

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

