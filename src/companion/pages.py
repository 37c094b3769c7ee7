"""What a chapter and the Status page display of stored results: one line of provenance, the stored
paper-scale result in place of the chapter's own, where each figure comes from, how long things took.

Nothing here computes an experiment: it reads what :mod:`companion.store` verified.
"""
from __future__ import annotations

import dataclasses

import json
import math
import platform
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .ledger import at_edge
from .provenance import repo_root
from .store import code_status, load_run, results_dir, stale

__all__ = ["show_full", "figure_sources", "chapter_times", "machine", "source_line",
           "retimed", "paper_figure", "verdict_box", "numbers_table", "ledger_table", "book_figures", "count_line", "section_link",
           "STATUS_CLASSES", "BASIS_WORDS", "plain_number", "humanize", "GLOSSES", "glosses", "state_words", "state_summary", "stale_words", "verdict_sentence", "verdict_record_text", "row_anchor", "ledger_list", "quote_pieces", "quote_html", "quote_markdown", "quote_markdown_escaped", "statement_markdown", "markdown_text", "verdict_markdown", "table_value", "line_style", "NUMBERS_SHOWN", "paper_order", "claims_frame", "rereading", "rereading_table", "rereading_counts"]


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



def state_words(row: Mapping[str, Any]) -> str:
    """The state of one row of :func:`figure_sources`, in words: **current** only when the stored result is
    shown and its code is the code now (:func:`companion.store.code_status`), otherwise "stale" and why,
    or "nothing stored".

    Examples
    --------
    >>> state_words({"stale": None, "code": "current"})
    '**current**'
    >>> state_words({"stale": None, "code": "code changed since abcdef0"})
    'stale: its code changed since commit abcdef0'
    >>> state_words({"stale": "computed with parameters {'n': 4}", "code": "current"})
    "stale: computed with parameters {'n': 4}"
    >>> state_words({"stale": "nothing stored", "code": "code version not recorded"})
    'nothing stored'
    """
    if row.get("stale") == "nothing stored":
        return "nothing stored"
    if row.get("stale") is None and row.get("code") == "current":
        return "**current**"
    if row.get("stale") is not None:
        return f"stale: {row['stale']}"
    return "stale: " + stale_words(str(row.get("code"))).split(", so ")[0]


def state_summary(rows: Sequence[Mapping[str, Any]]) -> str:
    """The states of :func:`figure_sources` rows in two short sentences.

    Examples
    --------
    >>> print(state_summary([{"stale": None, "code": "current"}, {"stale": None, "code": "code changed since abc"},
    ...                      {"stale": None, "code": "code version not recorded"}, {"stale": "nothing stored", "code": ""}]))
    4 experiments. 1 current; 2 stale (1 whose code changed since it was computed, 1 with no code version recorded); 1 with nothing stored.
    """
    states = [state_words(r) for r in rows]
    current = states.count("**current**")
    nothing = states.count("nothing stored")
    changed = sum(s.startswith("stale: its code changed") for s in states)
    unrecorded = sum(s.startswith("stale: no code version") for s in states)
    other = len(states) - current - nothing - changed - unrecorded
    why = [f"{changed} whose code changed since it was computed" if changed else "",
           f"{unrecorded} with no code version recorded" if unrecorded else "",
           f"{other} computed with other parameters or not verifying" if other else ""]
    stale_n = changed + unrecorded + other
    return (f"{len(rows)} experiments. {current} current; {stale_n} stale"
            + (f" ({', '.join(w for w in why if w)})" if stale_n else "") + f"; {nothing} with nothing stored.")


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


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|$&~])")


def markdown_text(text: Any) -> str:
    r"""``text`` as MyST Markdown that shows it literally: its Markdown punctuation escaped (a ``|`` cannot
    end a table cell, a ``$`` open maths, a ``{`` a role), on one line.

    Examples
    --------
    >>> print(markdown_text("max |a_1 - b| < $5 {x}\nnext"))
    max \|a\_1 - b\| \< \$5 \{x\} next
    """
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def _md_code(text: str) -> str:
    """``text`` as inline code (a backtick inside would close it: dropped)."""
    return f"`{' '.join(text.replace('`', '').split())}`"


def quote_markdown_escaped(text: str) -> str:
    r"""A paper's words as MyST Markdown for the PDF (:func:`quote_pieces`): maths in ``$...$``, the copy's
    mixed TeX as code, the words between them escaped (:func:`markdown_text`).

    Examples
    --------
    >>> print(quote_markdown_escaped(r"$|x_i| \le 1$ for i < n_k *"))
    $|x_i| \le 1$ for i \< n\_k \*
    >>> print(quote_markdown_escaped(r"If $\eta \ll 1$, the proofs C_{2}(R)\leq 2R^{2} which are useful for us"))
    If $\eta \ll 1$`, the proofs C_{2}(R)\leq 2R^{2} which are useful for us`
    """
    md = {"math": lambda p: f"${' '.join(p.split())}$", "copy": _md_code}
    return "".join(_spaced(p, markdown_text(p)) if k == "text" else md[k](p) for k, p in quote_pieces(text))


def _spaced(raw: str, text: str) -> str:
    """``text`` with the spaces ``raw`` begins and ends with (:func:`markdown_text` strips them)."""
    return (" " if raw[:1].isspace() else "") + text + (" " if raw[-1:].isspace() and text else "")


def statement_markdown(text: str) -> str:
    r"""A claim's statement as MyST Markdown, as :func:`statement_html` shows it: its ``$...$`` maths as
    maths, the rest escaped (a lone dollar sign is text).

    Examples
    --------
    >>> print(statement_markdown(r"$W_2 \le C$ for t < 1"))
    $W_2 \le C$ for t \< 1
    >>> print(statement_markdown("costs $5"))
    costs \$5
    """
    if str(text).count("$") % 2:
        return markdown_text(text)
    pieces = re.split(r"(?<!\\)\$", str(text))
    return "".join(f"${' '.join(p.split())}$" if i % 2 else _spaced(p, markdown_text(p)) for i, p in enumerate(pieces)).strip()


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
    # Anything but the same code is said, as "stale", in a form book/_scripts/nbval_sanitize.cfg removes
    # whole (" (stale: ...)"): a chapter's compared output stays the same; the Status page says it in full.
    return (f"the paper-scale (full) profile, computed at commit {str(meta.get('commit') or '?')[:7]} on "
            f"{str(meta.get('created', '?'))[:10]}, {_device(meta)}, {took}" + (f" in {parts} parts" if parts else "")
            + ("" if code == "current" else f" (stale: {stale_words(code)})"))


def stale_words(code: str) -> str:
    """Why a stored result is stale, in a plain sentence (from :func:`companion.store.code_status`).

    Examples
    --------
    >>> stale_words("code changed since abcdef0")
    'its code changed since commit abcdef0, so it may not be what the code now computes'
    >>> stale_words("code version not recorded")
    'no code version was recorded with it, so it may not be what the code now computes'
    """
    if code.startswith("code changed since "):
        return f"its code changed since commit {code.removeprefix('code changed since ')}, so it may not be what the code now computes"
    if code == "code version not recorded":
        return "no code version was recorded with it, so it may not be what the code now computes"
    return code


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
    """Rendered as ``html`` on a page and as ``text`` in a notebook's text/plain (what nbval compares);
    ``markdown``, where given, is the form the PDF prints (myst-nb's latex builder prefers text/markdown to
    text/plain, its HTML builders text/html to both, so the pages do not change).

    Examples
    --------
    >>> shown = _Shown("<b>1</b>", "1", "**1**")
    >>> shown._repr_html_(), repr(shown), shown._repr_markdown_(), _Shown("<b>1</b>", "1")._repr_markdown_()
    ('<b>1</b>', '1', '**1**', None)
    """

    def __init__(self, html: str, text: str, markdown: str | None = None):
        self.html, self.text, self.markdown = html, text, markdown

    def _repr_html_(self) -> str:
        return self.html

    def _repr_markdown_(self) -> str | None:  # None: IPython leaves text/markdown out
        return self.markdown

    def __repr__(self) -> str:
        return self.text


# What a row rests on, in the words a verdict box uses (ledger.BASES).
BASIS_WORDS = {"paper": "the paper states", "derived": "our derivation", "reading": "our reading"}


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_E_NUMBER = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)e([-+]?)0*(\d+)\b")
_BRACKETS = re.compile(r"\[([^\[\]]*)\]")
_NUMBER = r"-?\d[\d.,]*(?:\s*×\s*10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?"


def plain_number(x: Any, sig: int = 3) -> str:
    """A number as a person writes it: ``sig`` significant digits, no trailing zeros, thousands
    separated, and powers of ten written out (``× 10⁻⁵``) below 0.001 and from 100,000 on.

    Examples
    --------
    >>> [plain_number(v) for v in (0.123456, 1.0, 37.35, 1213.4, 2500000, 1.5e-05, -0.0007364, 0)]
    ['0.123', '1', '37.4', '1,213', '2.5 × 10⁶', '1.5 × 10⁻⁵', '-7.36 × 10⁻⁴', '0']
    >>> plain_number(float("nan")), plain_number(float("inf")), plain_number(12), plain_number(True)
    ('not a number', 'infinity', '12', 'yes')
    """
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}" if abs(x) < 10**6 else plain_number(float(x), sig)
    x = float(x)
    if math.isnan(x):
        return "not a number"
    if math.isinf(x):
        return "infinity" if x > 0 else "minus infinity"
    if x == 0:
        return "0"
    return _decimal(x, sig) if 1e-3 <= abs(x) < 1e5 else _power(x, sig)


def _decimal(x: float, sig: int, group: str = ",") -> str:
    """A finite nonzero ``x`` in decimals, ``sig`` significant digits, no trailing zeros, thousands
    separated by ``group``."""
    digits = max(sig - 1 - math.floor(math.log10(abs(x))), 0)
    text = f"{round(x, digits):,.{digits}f}".replace(",", group)
    return text.rstrip("0").rstrip(".") if "." in text else text


def _power(x: float, sig: int) -> str:
    """A finite nonzero ``x`` as ``m × 10ⁿ``, ``sig`` significant digits in ``m``."""
    mantissa, exponent = f"{x:.{sig - 1}e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def _prose(text: str) -> str:
    """A ledger's string in words: ``1e-09`` as ``10⁻⁹``, an interval ``[a, b]`` as ``a to b``, a bracketed
    list as its items."""
    def power(m: re.Match) -> str:
        mantissa, sign, exp = m.groups()
        head = "" if mantissa in ("1", "1.0") else f"{mantissa} × "
        return f"{head}10{(('-' if sign == '-' else '') + exp).translate(_SUPERSCRIPT)}"

    def brackets(m: re.Match) -> str:
        items = [i.strip().strip("'\"") for i in m.group(1).split(",")]
        return f"{items[0]} to {items[1]}" if len(items) == 2 and all(re.fullmatch(_NUMBER, i) for i in items) else ", ".join(items)

    text = _E_NUMBER.sub(power, str(text).replace("\n", " "))
    text = text.replace("<=", "≤").replace(">=", "≥").replace("+-", "±")
    while _BRACKETS.search(text):
        text = _BRACKETS.sub(brackets, text)
    return text.replace("{", "").replace("}", "")


def key_words(key: Any) -> str:
    """A result's key in words: a bare identifier's underscores read as spaces (``final_E`` as
    ``final E``); a key that is already words or a formula keeps them, since there an underscore is a
    subscript (``smallest m_d(t_end)``, ``R_k(t_end)``).

    Examples
    --------
    >>> key_words("w2_at_end"), key_words("smallest m_d(t_end)"), key_words("R_k(t_end)")
    ('w2 at end', 'smallest m_d(t_end)', 'R_k(t_end)')
    >>> key_words("rho_min < -1 + 1e-3 at t = 0")
    'rho_min < -1 + 10⁻³ at t = 0'
    """
    k = str(key)
    return _prose(k if re.search(r"[\s()]", k) else k.replace("_", " "))


def humanize(v: Any, sig: int = 3, names: Sequence[Any] | None = None) -> str:
    """A ledger value in words, never a Python repr: numbers through :func:`plain_number`, a mapping as
    "name value" pairs, a list as its items (a label followed by its value as "label: value"), and
    with ``names`` (as long as the list) each item after its name.

    Examples
    --------
    >>> humanize({"mean": 0.99561, "worst_seed": 0.9897})
    'mean 0.996, worst seed 0.99'
    >>> humanize([1.013, 37.35, 0.5607])
    '1.01, 37.4 and 0.561'
    >>> humanize(["seeds with 3 clusters at T", 110, 128, "median centre error (rad)", 0.1757])
    'seeds with 3 clusters at T: 110 and 128; median centre error (rad): 0.176'
    >>> humanize([0.4, 0.3056], names=["decoder", "encoder"])
    'decoder 0.4; encoder 0.306'
    >>> humanize([[1, 2, 3], "judged at 4 of 9 betas"]), humanize("p < 1e-09"), humanize(None)
    ('1, 2 and 3; judged at 4 of 9 betas', 'p < 10⁻⁹', 'none')
    """
    if v is None:
        return "none"
    if isinstance(v, str):
        return _prose(v)
    if isinstance(v, (bool, int, float)) or (hasattr(v, "dtype") and getattr(v, "ndim", 1) == 0):
        return plain_number(v.item() if hasattr(v, "item") else v, sig)
    if isinstance(v, Mapping):
        return ", ".join(f"{key_words(k)} {humanize(x, sig)}" for k, x in v.items())
    if hasattr(v, "tolist"):
        v = v.tolist()
    items = list(v)
    if names is not None and len(names) == len(items):
        return "; ".join(f"{humanize(n, sig)} {humanize(x, sig)}" for n, x in zip(names, items))
    if all(isinstance(x, (bool, int, float)) for x in items):
        words = [plain_number(x, sig) for x in items]
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1] if words else "none"
    clauses, label, values = [], None, []

    def close():
        if label is not None or values:
            joined = humanize(values, sig) if values else ""
            clauses.append(f"{label}: {joined}" if label is not None and joined else label if label is not None else joined)

    for x in items:
        if isinstance(x, str) and x.strip().lower() in ("nan", "inf", "-inf"):
            values.append(float(x))
        elif isinstance(x, str):
            close()
            label, values = _prose(x), []
        elif isinstance(x, (list, tuple, Mapping)) or hasattr(x, "tolist"):
            text = humanize(x, sig)
            if label is not None and not values:
                clauses.append(f"{label}: {text}")
                label = None
            else:
                close()
                clauses.append(text)
                label, values = None, []
        else:
            values.append(x)
    close()
    return "; ".join(c for c in clauses if c)


def _clip(text: str, limit: int) -> str:
    """``text`` cut at a clause boundary (or a space) to at most ``limit`` characters, with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 2]
    for sep in ("; ", ", ", " "):
        k = cut.rfind(sep)
        if k > limit // 3:
            return cut[:k].rstrip(" ,;:") + " …"
    return cut + " …"


def _uncertainty(u: Any) -> str:
    if u is None or u == "":
        return ""
    if isinstance(u, (int, float)) and not isinstance(u, bool):
        return f" ± {plain_number(u)}"
    return f" ({humanize(u)})"


EXPECTED_WORDS = {"paper": "the paper says", "derived": "our derivation from the paper gives",
                  "reading": "our reading of the paper gives"}
VERDICT_LINE = 200  # the longest line a verdict box shows (characters)


def _names(r: Mapping[str, Any]) -> list[str] | None:
    """The names of a list-valued measurement's components, where the expected values name them (a list of
    strings as long as the measurement)."""
    m, e = r.get("measured"), r.get("expected")
    if isinstance(m, (list, tuple)) and isinstance(e, (list, tuple)) and len(m) == len(e) > 1 \
            and all(isinstance(x, str) for x in e) and not any(isinstance(x, str) for x in m):
        return list(e)
    return None


def verdict_sentence(r: Mapping[str, Any]) -> str:
    """The one sentence of a verdict box: what was measured, with its uncertainty, against what the paper
    says (or what our derivation or reading of it gives), in words and at most :data:`VERDICT_LINE`
    characters with the status word before it (the full record is folded beneath).

    Examples
    --------
    >>> verdict_sentence({"measured": 0.50012, "uncertainty": 0.0123, "expected": "<= 1", "basis": "paper"})
    'Measured 0.5 ± 0.0123; the paper says ≤ 1.'
    >>> verdict_sentence({"measured": [0.4, 0.3056], "expected": ["decoder", "encoder"], "basis": "derived"})
    'Measured decoder 0.4; encoder 0.306.'
    >>> len(verdict_sentence({"measured": list(range(200)), "expected": "x" * 300, "basis": "reading"})) <= 185
    True
    """
    names = _names(r)
    measured = humanize(r.get("measured"), names=names)
    unc = _uncertainty(r.get("uncertainty"))
    if names is not None:
        m = _clip(measured + unc, VERDICT_LINE - 30)
        return f"Measured {m}" + ("" if m.endswith("…") else ".")
    words = EXPECTED_WORDS.get(r.get("basis") or "", "expected")
    expected = humanize(r.get("expected"))
    room = VERDICT_LINE - 30 - len(words)
    m = _clip(measured + unc, max(room // 2, room - len(expected)))
    e = _clip(expected, room - len(m))
    return f"Measured {m}; {words} {e}" + ("" if e.endswith("…") else ".")


def _why_words(r: Mapping[str, Any]) -> str:
    """Why a row is not simply reproduced, in words: its ``why`` (first sentence, clipped) or, without one,
    what its numbers say."""
    status = r.get("status")
    if status in ("reproduced", "supported", "not-checkable") and not r.get("why"):
        return ""
    why = humanize(r.get("why") or "")
    if why:
        return _clip(why[0].upper() + why[1:], VERDICT_LINE)
    if status == "inconclusive" and r.get("needed"):
        return f"The stored trials cannot decide; about {plain_number(r['needed'])} would."
    if r.get("tolerance") is not None:
        return f"Outside the tolerance ({humanize(r['tolerance'])})."
    return ""


# Words the ledger's rows use that a reader of the papers may not know, glossed where a box uses them
# (and on the claims page, "Words used in the verdicts").
GLOSSES = {
    "NOTES D": "the project's notes on paper D (NOTES.md, section D, kept with the papers, not on this site): "
               "the statements recovered from the authors' answers to the reviewers and their official notebook",
    "USA": "unnormalised self-attention: the weights exp(β⟨x_i, x_j⟩) divided by N (paper D)",
    "SA": "self-attention with softmax weights: exp(β⟨x_i, x_j⟩) divided by their sum (paper D)",
}


def glosses(*texts: Any) -> list[tuple[str, str]]:
    """The :data:`GLOSSES` whose word occurs (as a word) in ``texts``.

    Examples
    --------
    >>> [w for w, _ in glosses("linearisation (NOTES D)", "N = 1000, USA, beta = 2")]
    ['NOTES D', 'USA']
    >>> glosses("USABLE")
    []
    """
    joined = " ".join(str(t) for t in texts)
    return [(w, g) for w, g in GLOSSES.items() if re.search(rf"(?<![\w-]){re.escape(w)}(?![\w])", joined)]


def _record(r: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The full record of a ledger row as (field, words), in reading order."""
    out = [("claim", str(r.get("statement") or "")), ("where", str(r.get("where") or ""))]
    if r.get("quote"):
        src = " (recovered in the notes on the paper)" if r.get("source") else ""
        out.append((BASIS_WORDS.get(r.get("basis") or "", "the paper's words") + src, str(r["quote"])))
    elif r.get("basis"):
        out.append(("basis", BASIS_WORDS.get(r["basis"], r["basis"])))
    if r.get("test"):
        out.append(("test", humanize(r["test"])))
    names = _names(r)
    out.append(("measured", humanize(r.get("measured"), names=names)))
    if names is None:
        out.append(("expected", humanize(r.get("expected"))))
    for key in ("tolerance", "uncertainty"):
        if r.get(key) is not None:
            out.append((key, humanize(r[key])))
    if r.get("margin") is not None:
        out.append(("margin", f"{plain_number(r['margin'])} decades (powers of ten) between the measurement and "
                              "the threshold that would change the verdict"))
    if at_edge(r):
        out.append(("fragile", "yes: the status changes with the tolerance × 0.8 or × 1.25, or at the level 0.01 or 0.10"))
    if r.get("needed") is not None:
        out.append(("trials that would decide", plain_number(r["needed"])))
    if r.get("why"):
        out.append(("why", humanize(r["why"])))
    for word, gloss in glosses(*(r.get(k) for k in ("where", "statement", "quote", "test", "measured", "expected",
                                                       "uncertainty", "why"))):
        out.append((word, gloss))
    out.append(("row", f"{r['id']} (claims table: claims.html#row-{r['id']})"))
    return out


def _wrap(text: str, width: int = VERDICT_LINE, indent: str = "") -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, subsequent_indent=indent, break_long_words=True, break_on_hyphens=False) or [""]


def row_anchor(row_id: str) -> str:
    """The id of a ledger row's line in the claims table ("What reproduces").

    Examples
    --------
    >>> row_anchor("A-prop3.1-bound")
    'row-A-prop3.1-bound'
    """
    return f"row-{row_id}"


# The record's fields that quote the papers (or our derivation or reading of them): shown in quotation marks.
_QUOTE_FIELDS = ("the paper states", "our derivation", "our reading", "the paper's words")


def verdict_box(rows: Any, only: Sequence[str] | None = None, skip: Sequence[str] | None = None,
                claims_page: str = "claims.html") -> _Shown:
    """The verdicts of one result, one box per claim: the status word, then one sentence of what was
    measured against what the paper says (:func:`verdict_sentence`), why in words where a claim is not
    simply reproduced, and the claim's id and full record folded beneath (with a link to its row in the
    claims table, ``claims_page#row-<id>``).

    ``rows``: a result of a registered experiment (judged here), or ledger rows (Claims or dicts);
    ``only`` / ``skip``: the ids to show / to leave out (a section shows the claims it discusses).

    Examples
    --------
    >>> from companion import ledger
    >>> row = ledger.Claim(id="X-1", paper="A", where="Prop. 3.1", statement="W2 stays below the bound",
    ...                    quote="W2 stays below", basis="paper", test="the bound",
    ...                    verdict=ledger.verdict(0.5, 1.0), measured=0.5, expected="<= 1", tolerance=1.0)
    >>> box = verdict_box([row])
    >>> print(box)
    reproduced: Measured 0.5; the paper says ≤ 1.
      X-1 (Prop. 3.1)
    >>> 'class="verdict verdict-ok"' in box._repr_html_(), "W2 stays below" in box._repr_html_(), "#row-X-1" in box._repr_html_()
    (True, True, True)
    >>> print(verdict_box([row], skip=["X-1"]))
    <BLANKLINE>
    """
    from .registry import judge

    if isinstance(rows, Mapping) and "experiment" in rows:
        rows = judge(rows)
    rows = [r.as_dict() if hasattr(r, "as_dict") else dict(r) for r in rows]
    rows = [r for r in rows if (only is None or r["id"] in only) and (skip is None or r["id"] not in skip)]
    html_rows, text_rows, md_rows = [], [], []
    for r in rows:
        sentence = verdict_sentence(r)
        why = _why_words(r)
        text_rows.append(f"{r['status']}: {sentence}" + (f"\n  why: {why}" if why else "") + f"\n  {r['id']} ({r['where']})")
        md_rows.append(verdict_markdown(r, sentence, why))
        edge = ' <span class="verdict-edge" title="the status changes with the tolerance x 0.8 or x 1.25, or at the level 0.01 or 0.10">fragile</span>' if at_edge(r) else ""
        fields = []
        for field, words in _record(r):
            if field == "claim":
                value = statement_html(words)
            elif field.startswith(_QUOTE_FIELDS):
                value = f"&ldquo;{quote_html(words)}&rdquo;"
            elif field == "row":
                value = (f'<code>{_esc(r["id"])}</code> (<a href="{_esc(claims_page)}#{_esc(row_anchor(r["id"]))}">'
                         'its row in the claims table</a>)')
            else:  # the ledger's words may carry the papers' TeX: typeset, or shown as the copy's text
                value = quote_html(words)
            fields.append(f"<dt>{_esc(field)}</dt><dd>{value}</dd>")
        why_html = f'<span class="verdict-why">{quote_html(why)}</span>' if why else ""
        html_rows.append(
            f'<div class="verdict verdict-{STATUS_CLASSES.get(r["status"], "na")}" id="verdict-{_esc(r["id"])}">'
            f'<span class="verdict-status">{_esc(r["status"])}</span>'
            f'<span class="verdict-line">{_esc(sentence)}{edge}</span>{why_html}'
            f'<details class="verdict-record"><summary>{_esc(r["where"])}: the claim and its full record</summary>'
            f'<dl>{"".join(fields)}</dl></details></div>')
    return _Shown('<div class="verdicts">' + "".join(html_rows) + "</div>", "\n".join(text_rows), "\n\n".join(md_rows))


def verdict_markdown(r: Mapping[str, Any], sentence: str | None = None, why: str | None = None) -> str:
    r"""One claim's verdict box as MyST Markdown, what the PDF prints (it cannot fold): an admonition titled
    by the status word, the sentence and why (:func:`verdict_sentence`, :func:`_why_words`), then the
    record (:func:`_record`) unfolded, the paper's words quoted with their maths typeset; the measured and
    expected values and why are not said twice where the sentence and the why line hold them whole.

    Examples
    --------
    >>> print(verdict_markdown({"id": "X-1", "where": "Prop. 3.1", "statement": "$W_2$ stays below", "status": "partly",
    ...                         "quote": "$W_2 \\le C$", "basis": "paper", "measured": 1.5, "expected": "<= 1", "why": "1.5 > 1"}))
    ````{admonition} partly
    :class: verdict verdict-partly
    <BLANKLINE>
    Measured 1.5; the paper says ≤ 1.
    <BLANKLINE>
    Why: 1.5 \> 1
    <BLANKLINE>
    - **claim:** $W_2$ stays below
    - **where:** Prop. 3.1
    - **the paper states:** “$W_2 \le C$”
    - **row:** X-1, in the claims table
    ````
    """
    sentence = verdict_sentence(r) if sentence is None else sentence
    why = _why_words(r) if why is None else why
    title = str(r["status"]) + (" (fragile)" if at_edge(r) else "")
    lines = [f"````{{admonition}} {markdown_text(title)}", f":class: verdict verdict-{STATUS_CLASSES.get(r['status'], 'na')}",
             "", markdown_text(sentence), ""]
    if why:
        lines += ["Why: " + quote_markdown_escaped(why), ""]
    said = {"why": humanize(r.get("why") or "")[1:] == why[1:]}  # _why_words capitalises the first letter
    said["measured"] = said["expected"] = "…" not in sentence  # neither clipped
    for field, words in _record(r):
        if said.get(field):
            continue
        if field == "claim":
            value = statement_markdown(words)
        elif field.startswith(_QUOTE_FIELDS):
            value = f"“{quote_markdown_escaped(words)}”"
        elif field == "row":
            value = f"{markdown_text(r['id'])}, in the claims table"
        else:  # the ledger's words may carry the papers' TeX: typeset, or shown as the copy's text
            value = quote_markdown_escaped(words)
        lines.append(f"- **{markdown_text(field)}:** {value}")
    return "\n".join(lines + ["````"])


def verdict_record_text(r: Mapping[str, Any]) -> str:
    """A ledger row's box as plain text, every line at most :data:`VERDICT_LINE` characters: the status
    and sentence, why, and the folded record (what :func:`verdict_box` shows, for checks and print).

    Examples
    --------
    >>> print(verdict_record_text({"id": "X-1", "where": "Sec. 2", "statement": "s", "status": "partly",
    ...                            "measured": {"a_b": 1.23456}, "expected": "> 1", "why": "a fails"}))
    partly: Measured a b 1.23; expected > 1.
    why: A fails
    claim: s
    where: Sec. 2
    measured: a b 1.23
    expected: > 1
    why: a fails
    row: X-1 (claims table: claims.html#row-X-1)
    """
    r = dict(r)
    lines = _wrap(f"{r['status']}: {verdict_sentence(r)}")
    why = _why_words(r)
    if why:
        lines += _wrap(f"why: {why}")
    for field, words in _record(r):
        lines += _wrap(f"{field}: {words}", indent="  ")
    return "\n".join(lines)


NUMBERS_SHOWN = 20  # a numbers table shows a sequence of at most this many items; a longer one by count and range


def _flat(v: Any) -> list:
    """The leaves of nested lists and mappings (numpy already converted to lists)."""
    if isinstance(v, Mapping):
        v = list(v.values())
    if isinstance(v, (list, tuple)):
        return [y for x in v for y in _flat(x)]
    return [v]


def _fractions(v: Any) -> list[float]:
    """The finite, nonzero, non-integer numbers of a value."""
    return [x for x in _flat(v) if isinstance(x, float) and math.isfinite(x) and x != 0]


def line_style(v: Any) -> str:
    """How one line of a numbers table writes its numbers: ``"decimal"`` when every one lies between 10⁻⁴
    and 10⁵ (0.000624 beside 0.945, where :func:`plain_number` alone would write 6.24 × 10⁻⁴), else
    ``"plain"`` (each as :func:`plain_number` writes it: a line spanning more decades than decimals can
    hold keeps powers of ten where they are needed, never ``1 × 10⁰``).

    Examples
    --------
    >>> line_style([0.945, 0.0536, 0.000624]), line_style([1.94e-05, 0.00125, 0.654]), line_style([2, 1000000])
    ('decimal', 'plain', 'decimal')
    """
    return "decimal" if all(1e-4 <= abs(x) < 1e5 for x in _fractions(v)) else "plain"


def _in_line(x: Any, sig: int, style: str) -> str:
    """A number inside a sequence or mapping, written in its line's ``style`` (:func:`line_style`) without
    thousands separators (the sequence's commas would confuse them); integers of a million and more as
    powers of ten."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return plain_number(x, sig)
    if isinstance(x, int):
        return str(x) if abs(x) < 10**6 else _power(float(x), sig)
    if style == "decimal" and math.isfinite(x) and x != 0:
        return _decimal(x, sig, group="")
    return plain_number(x, sig).replace(",", "")


def _range_words(items: list, sig: int) -> str | None:
    """A long sequence of numbers (nested lists too) as its count (its shape when a table of rows) and range;
    None where it holds anything but numbers."""
    leaves = _flat(items)
    if not leaves or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in leaves):
        return None
    widths = {len(x) if isinstance(x, list) else None for x in items}
    count = (f"{len(items)} × {widths.pop()} values" if len(widths) == 1 and None not in widths and len(leaves) > len(items)
             else f"{len(leaves)} values")
    finite = [x for x in leaves if not math.isnan(x)]
    nan = len(leaves) - len(finite)
    if not finite:
        return f"{count}, all not a number"
    ends = [min(finite), max(finite)]
    lo, hi = (_in_line(x, sig, line_style(ends)) for x in ends)
    return f"{count}, " + (f"all {lo}" if lo == hi else f"{lo} to {hi}") + (f", {nan} not a number" if nan else "")


def table_value(v: Any, sig: int = 3, style: str | None = None) -> str:
    """One value of a numbers table as a person writes it, every number at ``sig`` significant digits: a lone
    number through :func:`plain_number`, yes or no for a truth value; a sequence as its items without
    brackets, a group inside it in parentheses, its numbers written one way where the line allows
    (:func:`line_style`), without thousands separators (which its commas would confuse); more than :data:`NUMBERS_SHOWN` numbers as their
    count and range; a mapping as ``name = value`` pairs; a string in words (:func:`humanize`: ``1e-06`` as
    ``10⁻⁶``). ``style``: that of the line a value is inside (None: this value is the line).

    Examples
    --------
    >>> import numpy as np
    >>> table_value([0.25, 0.25, 0.5]), table_value(np.array([100, 1000, 10000, 1000000])), table_value(16800)
    ('0.25, 0.25, 0.5', '100, 1000, 10000, 1 × 10⁶', '16,800')
    >>> table_value([0.945, 0.0536, 0.000624]), table_value([1.94e-05, 0.0822, 0.654, 1.0], sig=2)
    ('0.945, 0.0536, 0.000624', '1.9 × 10⁻⁵, 0.082, 0.65, 1')
    >>> table_value([[1, 0.25], [2, 0.5]]), table_value({"field": True, "qk_in": np.bool_(False)})
    ('(1, 0.25), (2, 0.5)', 'field = yes, qk in = no')
    >>> table_value(np.linspace(0.12, 0.98, 64)), table_value([float("nan")] * 3 + [0.5] * 30)
    ('64 values, 0.12 to 0.98', '33 values, all 0.5, 3 not a number')
    >>> table_value(np.ones((30, 3))), table_value("< 1e-06"), table_value(None), table_value(2.5e-05)
    ('30 × 3 values, all 1', '< 10⁻⁶', 'none', '2.5 × 10⁻⁵')
    """
    if hasattr(v, "tolist"):  # numpy: scalars as Python numbers, arrays as (nested) lists
        v = v.tolist()
    if v is None or isinstance(v, str):
        return humanize(v)
    if isinstance(v, (bool, int, float)):
        return plain_number(v, sig) if style is None else _in_line(v, sig, style)
    inner = style is not None
    if isinstance(v, Mapping):
        v = {k: x.tolist() if hasattr(x, "tolist") else x for k, x in v.items()}
        style = style or line_style(v)
        text = ", ".join(f"{key_words(k)} = {table_value(x, sig, style)}" for k, x in v.items())
    else:
        items = [x.tolist() if hasattr(x, "tolist") else list(x) if isinstance(x, tuple) else x for x in v]
        style = style or line_style(items)
        summary = _range_words(items, sig) if len(items) > NUMBERS_SHOWN else None
        shown = items if summary is None else items[:NUMBERS_SHOWN]
        text = summary or ", ".join(table_value(x, sig, style) for x in shown) or "none"
        if summary is None and len(items) > NUMBERS_SHOWN:
            text += f", … ({len(items)} in all)"
    return f"({text})" if inner else text


def numbers_table(values: Mapping[str, Any], sig: int = 3) -> _Shown:
    """The numbers behind a figure as a two-column table, each value as a person writes it
    (:func:`table_value`); a Markdown table for the PDF.

    Examples
    --------
    >>> table = numbers_table({"slope": 0.123456, "trials": 16, "weights": [0.25, 0.25, 0.5], "|x| below": "< 1e-12"})
    >>> print(table)
    slope      0.123
    trials     16
    weights    0.25, 0.25, 0.5
    |x| below  < 10⁻¹²
    >>> print(table._repr_markdown_())
    | quantity | value |
    |:---|:---|
    | slope | 0.123 |
    | trials | 16 |
    | weights | 0.25, 0.25, 0.5 |
    | \\|x\\| below | \\< 10⁻¹² |
    >>> "<td>0.25, 0.25, 0.5</td>" in table._repr_html_()
    True
    """
    shown = [(str(k), table_value(v, sig)) for k, v in values.items()]
    width = max((len(k) for k, _ in shown), default=0)
    text = "\n".join(f"{k:<{width}}  {v}" for k, v in shown)
    html = ('<table class="numbers"><tbody>' + "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in shown)
            + "</tbody></table>")
    markdown = "\n".join(["| quantity | value |", "|:---|:---|"]
                         + [f"| {markdown_text(k)} | {markdown_text(v)} |" for k, v in shown])
    return _Shown(html, text, markdown)


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
        body.append(f'<tr id="{_esc(row_anchor(r["id"]))}"><td>{where}</td><td><span class="status status-{STATUS_CLASSES.get(r["status"], "na")}">'
                    f'{_esc(r["status"])}</span>{edge}</td><td>{statement_html(r["statement"])}</td>'
                    f'<td>{_esc(humanize(r["measured"]))}</td><td>{_esc(humanize(r["expected"]))}</td></tr>')
    html = ('<table class="ledger"><thead><tr><th>result</th><th>status</th><th>claim</th><th>measured</th>'
            '<th>expected</th></tr></thead><tbody>' + "".join(body) + "</tbody></table>")
    return _Shown(html, text)


def ledger_list(rows: Any, claims_page: str = "claims.html") -> _Shown:
    """A chapter's claims as a short list, one line each: the status, the result linked to its section,
    and its row in the claims table (which holds the numbers).

    Examples
    --------
    >>> rows = [{"id": "X-1", "where": "Prop. 3.1", "status": "partly", "experiment": "e", "chapter": "c", "fragile": True}]
    >>> print(ledger_list(rows))
    partly (fragile): Prop. 3.1 (X-1)
    >>> 'href="#sec-e"' in ledger_list(rows)._repr_html_(), 'href="claims.html#row-X-1"' in ledger_list(rows)._repr_html_()
    (True, True)
    """
    rows = [r.as_dict() if hasattr(r, "as_dict") else dict(r) for r in rows]
    text = "\n".join(f"{r['status']}{' (fragile)' if at_edge(r) else ''}: {r['where']} ({r['id']})" for r in rows)
    items = "".join(
        f'<li><span class="status status-{STATUS_CLASSES.get(r["status"], "na")}">{_esc(r["status"])}</span>'
        + (' <span class="verdict-edge">fragile</span>' if at_edge(r) else "")
        + f' <a href="{_esc(section_link(r))}">{_esc(r["where"])}</a>'
        f' &middot; <a class="ledger-row-link" href="{_esc(claims_page)}#{_esc(row_anchor(r["id"]))}">row</a></li>'
        for r in rows)
    return _Shown(f'<ul class="ledger-list">{items}</ul>', text)


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


_SECTION = re.compile(r"\b(?:Sec|Section|App|Appendix)\.?\s*([A-Z]|\d+)((?:\.\d+)*)")
_RESULT = re.compile(r"\b([A-Z]|\d+)((?:\.\d+)+)\b|\b(?:Fig|Figure|Thm|Theorem|Prop|Lemma|Cor|Rem|Remark|Conj|eq)\.?\s*\(?([A-Z]?\d+)((?:\.\d+)*)")


def _numbers(head: str, tail: str) -> tuple:
    """``"4", ".1.2"`` as (4, 1, 2); an appendix letter after every numbered section (``"C"`` -> 1003)."""
    first = int(head) if head.isdigit() else 1000 + ord(head) - ord("A")
    return (first, *(int(x) for x in tail.split(".") if x))


def paper_order(row: Mapping[str, Any]) -> tuple:
    """Sort key of a ledger row in the papers' own order: paper, then the section it is in (``Sec.``/``App.``
    named, or the numbering of its result: Proposition 3.1 is in Section 3, Lemma C.12 in Appendix C, the
    appendices after the numbered sections), then the result's number; rows whose place names no number
    come last, in the order given.

    Examples
    --------
    >>> rows = [{"paper": "A", "where": w} for w in ("Lemma C.12", "Sec. 4.10", "Prop. 3.1, eq. (14)",
    ...         "Sec. 4.2, Fig. 6", "Sec. 4.2, Fig. 5", "official notebook", "App. C.3", "Thm 4.2 (20)")]
    >>> [r["where"] for r in sorted(rows, key=paper_order)]
    ['Prop. 3.1, eq. (14)', 'Thm 4.2 (20)', 'Sec. 4.2, Fig. 5', 'Sec. 4.2, Fig. 6', 'Sec. 4.10', 'Lemma C.12', 'App. C.3', 'official notebook']
    """
    where = str(row["where"])
    sec = _SECTION.search(where)
    results = [m for m in _RESULT.finditer(where) if not (sec and m.start() < sec.end() and m.end() > sec.start())]
    res = results[0] if results else None
    res_key = () if res is None else _numbers(res.group(1) or res.group(3), res.group(2) or res.group(4) or "")
    if sec is not None:
        return (row["paper"], 0, _numbers(sec.group(1), sec.group(2)), res_key)
    if res is not None:
        return (row["paper"], 0, res_key[:1] if len(res_key) > 1 else (), res_key)
    return (row["paper"], 1, (), ())


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
    A | Prop. 3.1 | reproduced | paper | X-1 | 0.5 | ≤ 1
    >>> list(frame.columns)  # the basis is written under the status
    ['paper', 'result', 'status', 'claim', 'measured', 'expected']
    """
    import pandas as pd

    ordered = sorted(rows, key=paper_order)
    frame = pd.DataFrame({
        "paper": [r["paper"] for r in ordered],
        "result": [f'<a id="{_esc(row_anchor(r["id"]))}" href="{section_link(r, page=page)}">{_esc(r["where"])}</a>' for r in ordered],
        "status": [f'<span class="status status-{STATUS_CLASSES.get(r["status"], "na")}">{r["status"]}</span>'
                   + (' <span class="verdict-edge">fragile</span>' if at_edge(r) else "")
                   + (f'<br><small>{_esc(BASIS_WORDS.get(r.get("basis") or "", ""))}</small>' if r.get("basis") else "")
                   for r in ordered],
        "claim": [statement_html(r["statement"]) for r in ordered],
        "measured": [_esc(humanize(r["measured"], names=_names(r))) for r in ordered],
        "expected": [_esc(humanize(r["expected"])) if _names(r) is None else "named with each measured value" for r in ordered],
    })
    text = "\n".join(f"{r['paper']} | {r['where']} | {r['status']}{' (fragile)' if at_edge(r) else ''} | "
                     f"{r.get('basis') or ''} | {r['id']} | {humanize(r['measured'], names=_names(r))} | {humanize(r['expected'])}" for r in ordered)
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
