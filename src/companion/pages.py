"""What a chapter and the Status page display of stored results: one line of provenance, the stored
paper-scale result in place of the chapter's own, where each figure comes from, how long things took.

Nothing here computes an experiment: it reads what :mod:`companion.store` verified.
"""
from __future__ import annotations

import dataclasses

import json
import platform
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .ledger import at_edge
from .provenance import repo_root
from .store import code_status, load_run, results_dir, stale

__all__ = ["show_full", "figure_sources", "chapter_times", "machine", "source_line",
           "retimed", "paper_figure", "verdict_box", "numbers_table", "ledger_table", "book_figures", "count_line", "section_link",
           "STATUS_CLASSES", "BASIS_WORDS", "quote_pieces", "quote_html", "quote_markdown", "paper_order", "claims_frame", "rereading", "rereading_table", "rereading_counts"]


def _stored_line(exp, profile: str, meta: Mapping[str, Any], root: Path | str | None) -> str:
    """Where a stored result comes from: commit, date, device, run time (its parts' included) and
    whether its code is the code now (:func:`companion.store.code_status`)."""
    wall, _, parts = _parts_times(results_dir(root) / exp.name / "parts")
    own = _seconds(meta)
    took = ("? s (no wall time recorded)" if own is None else
            f"{own + wall:.0f} s ({parts} parts, {wall:.0f} s, then assembled)" if parts else f"{own:.0f} s")
    return (f"stored {profile} profile: commit {str(meta.get('commit') or '?')[:10]}, {str(meta.get('created', '?'))[:10]}, "
            f"device {_device(meta)}, {took}; code " + code_status(exp, meta).removeprefix("code "))


def _seconds(meta: Mapping[str, Any], key: str = "wall_time_s") -> float | None:
    """A time a provenance records (s), None when it records none (or not a number)."""
    v = meta.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _device(meta: Mapping[str, Any]) -> str:
    config = meta.get("config")
    return str(config.get("device", "?")) if isinstance(config, Mapping) else "?"



def show_full(result: Mapping[str, Any], root: Path | str | None = None, *, draw: bool = True) -> dict[str, Any]:
    """The stored full-profile result of ``result``'s experiment when one is stored, verifies and is
    current (:func:`companion.store.stale`), else ``result`` itself: what a chapter judges and records
    (the paper-scale measurement where there is one).

    Prints where it comes from (commit, date, device, run time, whether its code is the code now), or
    why a stored one is not used; with ``draw``, draws the stored result with the experiment's plot
    function and prints its verdicts.

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
    intro-consensus: stored full profile: commit ..., device cpu, ... s; code current
    >>> full["profile"], full["p_sim"].shape
    ('full', (21, 3))
    """
    from .registry import get
    from .ledger import format_claims

    exp = get(str(result["experiment"]))
    stored, reason = _full(exp, root)
    if reason is not None:
        print(f"{exp.name}: " + (f"no stored full-profile result; run: python -m companion run {exp.name} --profile full"
                                 if reason == "nothing stored" else f"stored full-profile result not used: {reason}"))
        return dict(result)
    full, meta = stored
    print(f"{exp.name}: " + _stored_line(exp, "full", meta, root))
    if draw:
        if exp.plot is not None:
            exp.plot(full)
        print(format_claims([c.as_dict() for c in exp.judge(full)]))
    return full


def _full(exp, root: Path | str | None) -> tuple[tuple[dict[str, Any], dict[str, Any]] | None, str | None]:
    """The stored full-profile (result, provenance) of the registered experiment ``exp`` (None when nothing
    verifies) and why it is not the current one (:func:`companion.store.stale`; None when it is)."""
    try:
        stored = load_run(exp.name, "full", root, formerly=exp.formerly)
    except (OSError, ValueError) as e:  # damaged, swapped, unreadable: reported, never shown as stored
        return None, f"does not verify ({e})"
    return stored, stale(exp, "full", stored)


def figure_sources(profile: str, root: Path | str | None = None) -> list[dict[str, Any]]:
    """For every registered experiment: which profile and device its figure in the book comes from.

    A chapter shows a stored full-profile result when ``data/results/<name>/full.*`` verifies
    (through :func:`companion.store.load_run`) and is current (:func:`companion.store.stale`; made by
    ``python -m companion run NAME --profile full``, its device in the provenance); otherwise it
    computes the experiment while it executes, in the book's ``profile``, on the CPU. ``stale`` says
    why a stored one is not shown (None: it is), ``code`` whether its code changed since
    (:func:`companion.store.code_status`). Each row also
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
    >>> r = rows["intro-consensus"]  # stored, but with other parameters than the profile's: not shown
    >>> r["profile"], r["source"], r["stale"][:24]
    ('fast', 'computed while the chapter executes', 'computed with parameters')
    >>> _ = run_experiment("intro-consensus", "full", out=results_dir(root), figure=False)
    >>> rows = {r["experiment"]: r for r in figure_sources("fast", root=root)}
    >>> [(r["profile"], r["device"], r["source"], r["stale"]) for r in (rows["intro-consensus"], rows["intro-clustering"])]
    [('full', 'cpu', 'data/results/intro-consensus/full.npz', None), ('fast', 'cpu', 'computed while the chapter executes', 'nothing stored')]
    >>> r = rows["intro-consensus"]
    >>> r["full_s"] > 0, r["fast_s"], r["verdicts"], r["code"], rows["intro-clustering"]["code"]
    (True, None, {'reproduced': 2}, 'current', 'code version not recorded')
    """
    from .registry import registry

    rows = []
    for name, exp in registry().items():
        fast_s = _wall_time(results_dir(root), exp)
        paper = exp.paper.note if exp.paper is not None else ""
        parts_wall, parts_cpu, parts = _parts_times(results_dir(root) / name / "parts")
        stored, reason = _full(exp, root)
        code = code_status(exp, stored[1] if stored is not None else None)
        if stored is not None and reason is None:
            meta = stored[1]
            dev = _device(meta)
            if dev.startswith("cuda"):  # the provenance names the GPU model
                dev = str(meta.get("cuda_device") or meta.get("device") or dev)
            verdicts = [c.get("status") for c in meta.get("claims") or [] if isinstance(c, Mapping)]
            full_s, full_cpu_s = _seconds(meta), _seconds(meta, "cpu_time_s")
            rows.append({"experiment": name, "chapter": exp.chapter, "profile": "full",
                         "device": dev, "source": f"data/results/{name}/full.npz", "stale": None, "code": code,
                         "commit": str(meta.get("commit") or "?")[:10], "created": str(meta.get("created", "?")),
                         "fast_s": fast_s, "full_s": None if full_s is None else full_s + parts_wall,
                         "full_cpu_s": None if full_cpu_s is None else full_cpu_s + parts_cpu, "parts": parts,
                         "load": meta.get("load_average"), "paper": paper,
                         "verdicts": {v: verdicts.count(v) for v in dict.fromkeys(verdicts)}})
        else:
            rows.append({"experiment": name, "chapter": exp.chapter, "profile": profile, "device": "cpu",
                         "source": "computed while the chapter executes", "commit": "", "created": "",
                         "stale": reason, "code": code,
                         "fast_s": fast_s, "full_s": None, "full_cpu_s": None, "load": None, "paper": paper,
                         "verdicts": {}, "parts": parts, "parts_s": parts_wall if parts else None})
    return rows



def _parts_times(folder: Path) -> tuple[float, float, int]:
    """Summed wall and CPU times (s) of the parts stored in ``folder`` and their number (0, 0, 0 if none).

    Each part is read through the verified loader: one that does not verify raises
    :class:`companion.provenance.ResultError` naming its file (a damaged committed part is an error to
    fix, not a time to leave out silently).
    """
    from .provenance import verify_result

    wall = cpu = 0.0
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for path in paths:
        meta = verify_result(path.with_suffix(".npz"))
        wall += _seconds(meta) or 0.0
        cpu += _seconds(meta, "cpu_time_s") or 0.0
    return wall, cpu, len(paths)



_RETIMED_KEYS = ("experiment", "chapter", "rc", "wall_s", "cpu_s", "peak_rss_gb", "load_before", "provenance")


def retimed(root: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """The newest re-timing alone of each experiment's full profile, by name.

    ``bench/full_profiles.py`` re-runs a stored full profile in a child process on an otherwise idle
    machine and writes one part per experiment into ``bench/results/<machine>-<date>/full-profiles/``;
    of several folders the one with the latest date wins (folder names sort by date). Each row is the
    part: ``wall_s`` (the child's wall time, starting Python included), ``cpu_s``, ``peak_rss_gb``,
    ``load_before``, ``rc``, ``rerun`` (verdicts and numbers against the stored result) and
    ``provenance``, plus ``folder``. A part missing one of those keys raises ValueError naming it.

    Examples
    --------
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> retimed(root)
    {}
    >>> part = {"experiment": "intro-consensus", "chapter": "introduction", "rc": 0, "wall_s": 2.3, "cpu_s": 2.6,
    ...         "peak_rss_gb": 0.38, "load_before": [0.0, 0.1], "provenance": {"commit": "abc"}}
    >>> folder = root / "bench" / "results" / "cpu-2026-12-02" / "full-profiles"
    >>> folder.mkdir(parents=True)
    >>> _ = (folder / "intro-consensus.json").write_text(json.dumps(part))
    >>> r = retimed(root)["intro-consensus"]
    >>> r["wall_s"], r["folder"]
    (2.3, 'cpu-2026-12-02')
    >>> _ = (folder / "bad.json").write_text("{}")
    >>> retimed(root)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: .../bad.json: a re-timing part lacks experiment, chapter, rc, ...
    """
    base = Path(root) if root is not None else repo_root()
    rows: dict[str, dict[str, Any]] = {}
    folders = (base / "bench" / "results").glob("*-*/full-profiles")
    for folder in sorted(folders, key=lambda f: f.parent.name.split("-", 1)[1]):  # by date, oldest first: newer replace
        for path in sorted(folder.glob("*.json")):
            part = json.loads(path.read_text())
            lacking = [k for k in _RETIMED_KEYS if not isinstance(part, dict) or k not in part]
            if lacking:
                raise ValueError(f"{path}: a re-timing part lacks {', '.join(lacking)}")
            rows[part["experiment"]] = {**part, "folder": folder.parent.name}
    return rows


def _wall_time(folder: Path, exp, profile: str = "fast") -> float | None:
    """The wall time the stored ``profile`` run of the registered experiment ``exp`` recorded, None when none
    verifies or records one."""
    try:
        stored = load_run(exp.name, profile, folder=folder, formerly=exp.formerly)
    except (OSError, ValueError):
        return None
    return _seconds(stored[1]) if stored is not None else None



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



# --- A result section as the reader sees it -------------------------------------------------------
# The paper-scale figure (glued for a numbered {glue:figure} with its provenance in the caption), a
# verdict box, a small table of the numbers behind the figure, the chapter's ledger as one table.
# Each object renders as HTML on the page and as plain text (what nbval compares) in the notebook.

# One colour per verdict word, the same on every page (book/_static/companion.css styles the boxes).
STATUS_CLASSES = {"reproduced": "ok", "supported": "ok", "partly": "partly", "inconclusive": "na",
                  "not-reproduced": "bad", "refuted": "bad", "not-checkable": "na"}


def _esc(x: Any) -> str:
    import html

    return html.escape(str(x), quote=True)


def statement_html(text: str) -> str:
    r"""A claim's statement as HTML: escaped, its ``$...$`` maths marked up as Sphinx marks inline
    maths (``\(...\)`` in a ``math`` span), so MathJax typesets it inside tables and boxes too.

    Examples
    --------
    >>> print(statement_html(r"$W_2 \le C$ for t < 1"))
    <span class="math notranslate nohighlight">\(W_2 \le C\)</span> for t &lt; 1
    >>> print(statement_html("costs $5"))  # a lone dollar sign is text
    costs $5
    """
    import re

    if str(text).count("$") % 2:  # odd count: a lone dollar sign, no maths; the text escaped
        return _esc(text)
    out = []
    for i, piece in enumerate(re.split(r"(?<!\\)\$", str(text))):
        if i % 2:  # inside $...$
            out.append(f'<span class="math notranslate nohighlight">\\({_esc(piece)}\\)</span>')
        else:
            out.append(_esc(piece))
    return "".join(out)


_TEX_COMMAND = re.compile(r"\\[a-zA-Z]{2,}|[_^]\{")
_WORDS = re.compile(r"(?:\b[A-Za-z]{3,}\b[ ,.;:]*){3}")


def quote_pieces(text: str) -> list[tuple[str, str]]:
    r"""A paper's words cut into ``("text" | "math" | "copy", piece)``: ``$...$`` maths, and runs of the bare
    TeX our copies kept (their ``$`` lost), as maths when maths alone and as the copy's text ("copy") when
    TeX is mixed with words; the rest is text.

    Examples
    --------
    >>> quote_pieces(r"holds: $W_2 \le C$ (14)")
    [('text', 'holds: '), ('math', 'W_2 \\le C'), ('text', ' (14)')]
    >>> quote_pieces(r"n\sum_{i=1}^{d}\kappa")[0][0], quote_pieces(r"the proofs C_{2}(R)\leq 2R which are useful")[0][0]
    ('math', 'copy')
    """
    text = str(text)
    pieces = [text] if text.count("$") % 2 else re.split(r"(?<!\\)\$", text)
    out = []
    for i, piece in enumerate(pieces):
        if i % 2:
            out.append(("math", piece))
        elif not _TEX_COMMAND.search(piece):
            out.append(("text", piece))
        else:  # bare TeX: maths alone, or the copy's text where it is mixed with words
            lead, core, tail = re.match(r"(\s*)(.*?)(\s*)$", piece, re.S).groups()
            kind = "copy" if _WORDS.search(re.sub(r"\\[a-zA-Z]+|\{[^}]*\}", " ", core)) else "math"
            out += [("text", lead), (kind, core), ("text", tail)]
    return [(k, p) for k, p in out if p]


def quote_html(text: str) -> str:
    r"""A paper's words as HTML (:func:`quote_pieces`): maths typeset, the copy's mixed TeX in ``<code>``,
    never raw TeX in prose.

    Examples
    --------
    >>> print(quote_html(r"holds: $W_2 \le C$ (14)"))
    holds: <span class="math notranslate nohighlight">\(W_2 \le C\)</span> (14)
    >>> print(quote_html(r"the proofs C_{2}(R)\leq 2R^{2} which are useful for us"))
    <code class="verdict-quote-tex">the proofs C_{2}(R)\leq 2R^{2} which are useful for us</code>
    """
    html = {"text": _esc, "math": lambda p: f'<span class="math notranslate nohighlight">\\({_esc(p)}\\)</span>',
            "copy": lambda p: f'<code class="verdict-quote-tex">{_esc(p)}</code>'}
    return "".join(html[k](p) for k, p in quote_pieces(text))


def quote_markdown(text: str) -> str:
    r"""A paper's words as MyST Markdown (:func:`quote_pieces`): maths in ``$...$``, the copy's mixed TeX
    in backticks.

    Examples
    --------
    >>> print(quote_markdown(r"If $\eta \ll 1$ , then C_{2}(R)\leq 2R^{2} is what the proof uses"))
    If $\eta \ll 1$ `, then C_{2}(R)\leq 2R^{2} is what the proof uses`
    """
    md = {"text": lambda p: p, "math": lambda p: f"${p}$", "copy": lambda p: f"`{p.replace('`', '')}`"}
    return "".join(md[k](p) for k, p in quote_pieces(text))


def _text(x: Any) -> str:
    """A number or string of a ledger row as printed (floats already rounded by the ledger)."""
    return x if isinstance(x, str) else repr(x)


def _current_full(name: str, root: Path | str | None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The stored full-profile (result, provenance) of ``name`` when it verifies and is current, else None."""
    from .registry import get

    stored, reason = _full(get(name), root)
    return stored if reason is None else None


def source_line(name: str, root: Path | str | None = None, stored: Any = False) -> str:
    """Where the figure of ``name`` in the book comes from: its stored paper-scale run (commit, date,
    device, wall time), or the fast profile computed while the page is built when none is current.
    ``stored``: the pair :func:`_current_full` already returned (None: nothing current), so that a
    caller that loaded the result does not load it again.

    Examples
    --------
    >>> import tempfile
    >>> source_line("intro-consensus", tempfile.mkdtemp())
    'the fast profile, computed while this page was built (no current paper-scale result is stored)'
    """
    if stored is False:
        stored = _current_full(name, root)
    if stored is None:
        return "the fast profile, computed while this page was built (no current paper-scale result is stored)"
    meta = stored[1]
    wall, _, parts = _parts_times(results_dir(root) / name / "parts")
    own = _seconds(meta)
    took = "? s" if own is None else f"{own + wall:,.0f} s"
    from .registry import get

    code = code_status(get(name), meta)
    # Only a change is said, in a form book/_scripts/nbval_sanitize.cfg removes whole (" (code changed
    # since <7 hex>)"): a chapter's compared output stays the same; the Status page says it in full.
    return (f"the paper-scale (full) profile, computed at commit {str(meta.get('commit') or '?')[:7]} on "
            f"{str(meta.get('created', '?'))[:10]}, {_device(meta)}, {took}" + (f" in {parts} parts" if parts else "")
            + (f" ({code})" if code.startswith("code changed") else ""))


def paper_figure(name: str, fallback: Mapping[str, Any] | None = None, root: Path | str | None = None) -> dict[str, Any]:
    """Draw the paper-scale result of ``name`` for a numbered figure, and return that result.

    The stored full-profile result when it verifies and is current (:func:`show_full`), else
    ``fallback`` (the chapter's own fast result) or, without one, the fast profile run here. Each
    figure its plot function opens is glued as ``<name>-fig`` (then ``-fig2``, ...) and the source
    line (:func:`source_line`) as ``<name>-source``, so that the chapter shows them with
    ``{glue:figure}`` and cites the source in the caption. Outside a notebook (no myst_nb) the
    figures are left open. The result's ``"config"`` holds every parameter under its name now
    (:meth:`~companion.registry.Experiment.config_of`: a result stored before a parameter was
    renamed or added reads like one computed today).

    Examples
    --------
    >>> import tempfile, matplotlib
    >>> _ = matplotlib.use("Agg")
    >>> from companion.registry import get
    >>> fast = get("intro-consensus").run(n=4, t1=1.0)
    >>> r = paper_figure("intro-consensus", fast, root=tempfile.mkdtemp())
    >>> r["profile"], r["p_sim"].shape, r["config"]["n"]
    ('custom', (21, 3), 4)
    """
    import matplotlib.pyplot as plt

    from .registry import get

    exp = get(name)
    stored = _current_full(exp.name, root)  # loaded and verified once, for the figure and its source line
    result = stored[0] if stored is not None else dict(fallback) if fallback is not None else exp.run("fast")
    result = {**result, "config": dataclasses.asdict(exp.config_of(result))}
    plt.close("all")
    if exp.plot is not None:
        exp.plot(result)
    try:
        from myst_nb import glue
    except ImportError:
        return result
    for i, num in enumerate(plt.get_fignums()):
        fig = plt.figure(num)
        glue(f"{exp.name}-fig" + (str(i + 1) if i else ""), fig, display=False)
        plt.close(fig)
    glue(f"{exp.name}-source", source_line(exp.name, root, stored), display=False)
    return result


class _Shown:
    """Rendered as ``html`` on a page and as ``text`` in a notebook's text/plain (what nbval compares)."""

    def __init__(self, html: str, text: str):
        self.html, self.text = html, text

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text


# What a row rests on, in the words a verdict box uses (ledger.BASES).
BASIS_WORDS = {"paper": "the paper states", "derived": "our derivation", "reading": "our reading"}


def _detail(r: Mapping[str, Any]) -> str:
    """A row's numbers in one line: measured (uncertainty) against expected, tolerance, margin, fragile, trials needed."""
    line = f"measured {_text(r['measured'])}"
    u = r.get("uncertainty")
    if u is not None:
        line += f" ({u})" if isinstance(u, str) else f" ± {u!r}"
    parts = [line + f" vs expected {_text(r['expected'])}"]
    if r.get("tolerance") is not None:
        parts.append(f"tolerance {_text(r['tolerance'])}")
    if r.get("margin") is not None:
        parts.append(f"margin {r['margin']!r} decades")
    if at_edge(r):
        parts.append("fragile")
    if r.get("needed") is not None:
        parts.append(f"about {r['needed']} trials would decide")
    return "; ".join(parts)


def verdict_box(rows: Any) -> _Shown:
    """The verdicts of one result as boxes: the status as colour and word, the claim, the paper's words it
    tests and what it rests on (basis), measured against expected, why (for partly and not-reproduced),
    the margin (decades), whether it is fragile, and the trials that would decide an inconclusive row.

    ``rows``: a result of a registered experiment (judged here), or ledger rows (Claims or dicts).

    Examples
    --------
    >>> from companion import ledger
    >>> row = ledger.Claim(id="X-1", paper="A", where="Prop. 3.1", statement="W2 stays below the bound",
    ...                    quote="W2 stays below", basis="paper", test="the bound",
    ...                    verdict=ledger.verdict(0.5, 1.0), measured=0.5, expected="<= 1", tolerance=1.0)
    >>> box = verdict_box([row])
    >>> print(box)
    reproduced      X-1 (Prop. 3.1; the paper states): measured 0.5 vs expected <= 1; tolerance 1.0; margin 0.3 decades
    >>> 'class="verdict verdict-ok"' in box._repr_html_(), "W2 stays below" in box._repr_html_()
    (True, True)
    """
    from .registry import judge

    if isinstance(rows, Mapping) and "experiment" in rows:
        rows = judge(rows)
    rows = [r.as_dict() if hasattr(r, "as_dict") else dict(r) for r in rows]
    html_rows, text_rows = [], []
    for r in rows:
        detail = _detail(r)
        basis = BASIS_WORDS.get(r.get("basis") or "", "")
        head = f"{r['where']}; {basis}" if basis else r["where"]
        text_rows.append(f"{r['status']:<15} {r['id']} ({head}): {detail}" + (f"\n{'':<15} why: {r['why']}" if r.get("why") else ""))
        edge = ('<span class="verdict-edge" title="the status changes with the tolerance x 0.8 or x 1.25, or at the level '
                '0.01 or 0.10">fragile</span>' if at_edge(r) else "")
        quote = ""
        if r.get("quote"):
            src = " (recovered in the notes on the paper)" if r.get("source") else ""
            quote = (f'<span class="verdict-quote"><span class="verdict-basis">{_esc(basis)}{_esc(src)}:</span> '
                     f'&ldquo;{quote_html(r["quote"])}&rdquo;</span>')
        why = f'<span class="verdict-why">{_esc(r["why"])}</span>' if r.get("why") else ""
        html_rows.append(
            f'<div class="verdict verdict-{STATUS_CLASSES.get(r["status"], "na")}">'
            f'<span class="verdict-status">{_esc(r["status"])}{edge}</span>'
            f'<span class="verdict-claim"><b>{_esc(r["where"])}</b>: {statement_html(r["statement"])}</span>'
            f'{quote}<span class="verdict-numbers">{_esc(detail)}</span>{why}'
            f'<span class="verdict-id">{_esc(r["id"])}</span></div>')
    return _Shown('<div class="verdicts">' + "".join(html_rows) + "</div>", "\n".join(text_rows))


def numbers_table(values: Mapping[str, Any], sig: int = 3) -> _Shown:
    """The numbers behind a figure as a two-column table (rounded as :func:`companion.report.show` prints).

    Examples
    --------
    >>> print(numbers_table({"slope": 0.123456, "trials": 16}))
    slope   0.123
    trials  16
    """
    from .report import fmt

    def cell(v: Any) -> str:
        if isinstance(v, str):
            return v
        if hasattr(v, "tolist"):
            v = v.tolist()
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(cell(x) for x in v) + "]"
        return fmt(v, sig)

    shown = [(str(k), cell(v)) for k, v in values.items()]
    width = max((len(k) for k, _ in shown), default=0)
    text = "\n".join(f"{k:<{width}}  {v}" for k, v in shown)
    html = ('<table class="numbers"><tbody>' + "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in shown)
            + "</tbody></table>")
    return _Shown(html, text)


def ledger_table(rows: Any, link: Callable[[Mapping[str, Any]], str] | None = None) -> _Shown:
    """A chapter's ledger rows as one table: where, status, claim, measured, expected (``link(row)``,
    when given, is the address of the section discussing the row, e.g. :func:`section_link`).

    Examples
    --------
    >>> print(ledger_table([{"id": "X-1", "where": "Prop. 3.1", "status": "partly", "measured": 1.2,
    ...                      "expected": "<= 1", "statement": "s"}]))
    partly          X-1 (Prop. 3.1): measured 1.2 vs expected <= 1
    """
    rows = [r.as_dict() if hasattr(r, "as_dict") else dict(r) for r in rows]
    text = "\n".join(f"{r['status']:<15} {r['id']} ({r['where']}): measured {_text(r['measured'])} vs expected "
                     f"{_text(r['expected'])}" + (" (fragile)" if at_edge(r) else "") for r in rows)
    body = []
    for r in rows:
        where = _esc(r["where"])
        if link is not None:
            where = f'<a href="{_esc(link(r))}">{where}</a>'
        edge = ' <span class="verdict-edge">fragile</span>' if at_edge(r) else ""
        body.append(f'<tr><td>{where}</td><td><span class="status status-{STATUS_CLASSES.get(r["status"], "na")}">'
                    f'{_esc(r["status"])}</span>{edge}</td><td>{statement_html(r["statement"])}</td>'
                    f'<td>{_esc(_text(r["measured"]))}</td><td>{_esc(_text(r["expected"]))}</td></tr>')
    html = ('<table class="ledger"><thead><tr><th>result</th><th>status</th><th>claim</th><th>measured</th>'
            '<th>expected</th></tr></thead><tbody>' + "".join(body) + "</tbody></table>")
    return _Shown(html, text)


def book_figures() -> None:
    """Figures as the book shows them: PNGs drawn at twice the resolution and shown at their size
    (IPython's ``retina`` format), so they stay sharp on a high-density screen. Outside IPython it
    does nothing.

    Examples
    --------
    >>> book_figures()  # no IPython kernel here: nothing to set
    """
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:
        return
    if get_ipython() is not None:
        set_matplotlib_formats("retina")


def count_line(rows: Any) -> str:
    """One line counting a chapter's verdicts, for the top of its page: the rows that test the paper's own
    statements apart from our derivations and readings (as the scorecard counts them); answers to open
    questions on their own.

    Examples
    --------
    >>> count_line([{"status": "reproduced", "basis": "paper"}, {"status": "partly", "basis": "derived"},
    ...             {"status": "reproduced", "basis": "paper"}])
    "3 results checked. The paper's statements: 2 reproduced. Our derivations and readings: 1 partly"
    >>> count_line([{"status": "inconclusive", "id": "Q-1"}, {"status": "supported", "id": "Q-2"}])
    '2 questions answered: 1 supported, 1 inconclusive'
    """
    from .ledger import QUESTION_STATUSES, STATUSES, is_question

    rows = [r.as_dict() if hasattr(r, "as_dict") else dict(r) for r in rows]

    def tally(group: list, words: tuple) -> str:
        statuses = [r["status"] for r in group]
        return ", ".join(f"{statuses.count(s)} {s.replace('-', ' ')}" for s in words if statuses.count(s))

    questions = [r for r in rows if is_question(r)]
    papers = [r for r in rows if not is_question(r)]
    own = [r for r in papers if r.get("basis") == "paper"]
    ours = [r for r in papers if r.get("basis") != "paper"]
    parts = []
    if papers:
        parts.append(f"{len(papers)} result{'s' if len(papers) != 1 else ''} checked.")
        if own:
            parts.append(f"The paper's statements: {tally(own, STATUSES)}.")
        if ours:
            parts.append(f"Our derivations and readings: {tally(ours, STATUSES)}.")
    if questions:
        parts.append(f"{len(questions)} question{'s' if len(questions) != 1 else ''} answered: "
                     f"{tally(questions, QUESTION_STATUSES)}.")
    return " ".join(parts)[:-1]  # the page's sentence goes on after it


def section_link(row: Mapping[str, Any], page: str | None = None) -> str:
    """The link to the section discussing a ledger row's result: ``#sec-<experiment>`` on the
    chapter's own page, ``<chapter>.html#sec-<experiment>`` from another page of the chapters.

    Examples
    --------
    >>> row = {"chapter": "introduction", "experiment": "intro-consensus"}
    >>> section_link(row), section_link(row, page="claims")
    ('#sec-intro-consensus', 'introduction.html#sec-intro-consensus')
    """
    anchor = f"#sec-{row.get('experiment') or ''}" if row.get("experiment") else ""
    return anchor if page in (None, row.get("chapter")) else f"{row['chapter']}.html{anchor}"


def paper_order(row: Mapping[str, Any]) -> tuple:
    """Sort key of a ledger row in the papers' own order: paper, then the numbers of its section or
    result (``"Sec. 4.1"`` before ``"Sec. 4.10"``).

    Examples
    --------
    >>> rows = [{"paper": "A", "where": "Sec. 4.10"}, {"paper": "A", "where": "Sec. 4.2"}, {"paper": "A", "where": "App. C"}]
    >>> [r["where"] for r in sorted(rows, key=paper_order)]
    ['App. C', 'Sec. 4.2', 'Sec. 4.10']
    """
    parts = re.split(r"(\d+)", str(row["where"]))
    return (row["paper"], [(0, int(x), "") if x.isdigit() else (1, 0, x.lower()) for x in parts if x])


def _plain(v: Any) -> str:
    if isinstance(v, list):
        v = ", ".join(str(x) for x in v)
    return str(v).replace("\n", " ")


def claims_frame(rows: Sequence[Mapping[str, Any]], page: str = "claims") -> tuple[Any, str]:
    """The claims table of the "What reproduces" page, in the papers' order: a pandas DataFrame of HTML
    cells (result linked to its section, status with "fragile", basis, claim, measured, expected) and its
    plain text, one row a line (what nbval compares: the interactive table carries random ids).

    Examples
    --------
    >>> row = {"paper": "A", "where": "Prop. 3.1", "status": "reproduced", "basis": "paper", "statement": "s",
    ...        "measured": 0.5, "expected": "<= 1", "id": "X-1", "chapter": "stability", "experiment": "stability-prop31"}
    >>> frame, text = claims_frame([row])
    >>> print(text)
    A | Prop. 3.1 | reproduced | paper | X-1 | 0.5 | <= 1
    >>> list(frame.columns)  # the basis is written under the status
    ['paper', 'result', 'status', 'claim', 'measured', 'expected']
    """
    import pandas as pd

    ordered = sorted(rows, key=paper_order)
    frame = pd.DataFrame({
        "paper": [r["paper"] for r in ordered],
        "result": [f'<a id="row-{_esc(r["id"])}" href="{section_link(r, page=page)}">{_esc(r["where"])}</a>' for r in ordered],
        "status": [f'<span class="status status-{STATUS_CLASSES.get(r["status"], "na")}">{r["status"]}</span>'
                   + (' <span class="verdict-edge">fragile</span>' if at_edge(r) else "")
                   + (f'<br><small>{_esc(BASIS_WORDS.get(r.get("basis") or "", ""))}</small>' if r.get("basis") else "")
                   for r in ordered],
        "claim": [statement_html(r["statement"]) for r in ordered],
        "measured": [_esc(_plain(r["measured"])) for r in ordered],
        "expected": [_esc(_plain(r["expected"])) for r in ordered],
    })
    text = "\n".join(f"{r['paper']} | {r['where']} | {r['status']}{' (fragile)' if at_edge(r) else ''} | "
                     f"{r.get('basis') or ''} | {r['id']} | {_plain(r['measured'])} | {_plain(r['expected'])}" for r in ordered)
    return frame, text


def rereading(root: Path | str | None = None) -> list[dict[str, Any]]:
    """The re-reading of every row against the papers (issue 45): ``data/rereading/<chapter>.json``,
    each row ``{"id", "basis", "old", "new", "why"}``, in the papers' order of their ids.

    Examples
    --------
    >>> isinstance(rereading(), list)
    True
    """
    folder = Path(root or repo_root()) / "data" / "rereading"
    rows = []
    for f in sorted(folder.glob("*.json")):
        if f.name != "before.json":
            rows.extend(json.loads(f.read_text()))
    return sorted(rows, key=lambda r: r["id"])


def rereading_table(rows: Sequence[Mapping[str, Any]]) -> _Shown:
    """The re-reading, one row a line: id, basis, verdict before and after, and why (the papers' words in
    it through :func:`quote_html`, so their TeX is never raw prose).

    Examples
    --------
    >>> print(rereading_table([{"id": "X-1", "basis": "paper", "old": "partly", "new": "reproduced", "why": "a pass mark"}]))
    X-1 | paper | partly -> reproduced | a pass mark
    """
    text = "\n".join(f"{r['id']} | {r['basis']} | {r['old']} -> {r['new']} | {r['why']}" for r in rows)
    body = "".join(f"<tr><td><code>{_esc(r['id'])}</code></td><td>{_esc(r['basis'])}</td><td>{_esc(r['old'])}</td>"
                   f"<td>{_esc(r['new'])}</td><td>{quote_html(r['why'])}</td></tr>" for r in rows)
    html = ('<table class="ledger"><thead><tr><th>row</th><th>basis</th><th>before</th><th>after</th><th>why</th></tr>'
            "</thead><tbody>" + body + "</tbody></table>")
    return _Shown(html, text)


def rereading_counts(rows: Sequence[Mapping[str, Any]]) -> str:
    """The re-reading's counts as a Markdown table: one line per basis and move (old -> new status).

    Examples
    --------
    >>> print(rereading_counts([{"basis": "paper", "old": "partly", "new": "reproduced"},
    ...                         {"basis": "paper", "old": "partly", "new": "reproduced"}]))
    | basis | old | new | rows |
    |---|---|---|---:|
    | paper | partly | reproduced | 2 |
    """
    from collections import Counter

    c = Counter((r["basis"], r["old"], r["new"]) for r in rows)
    lines = ["| basis | old | new | rows |", "|---|---|---|---:|"]
    lines += [f"| {b} | {o} | {n} | {k} |" for (b, o, n), k in sorted(c.items())]
    return "\n".join(lines)
