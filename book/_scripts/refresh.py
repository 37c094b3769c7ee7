"""Re-execute chapters into their reference notebooks: book/chapters/<slug>.md -> <slug>.ipynb.

    python book/_scripts/refresh.py SLUG [SLUG ...]

Reads the MyST source with jupytext, executes it with nbclient in book/chapters/ (as nbval and
the book build do), and writes the executed .ipynb. A raising cell aborts with a non-zero exit and
leaves the previous reference untouched. Figures are drawn with the book's rendering settings
(book/_scripts/matplotlibrc, as nbval and the book build), and every cell keeps the id it had in
the previous reference (an edited cell keeps the id of the cell it replaces; a new cell gets an
id derived from its source), so a refresh diff shows only what changed. The notebook's
``metadata.companion`` records how long the execution took, when, where and in which profile (the
status chapter shows it). Uses nbclient directly: `jupytext --execute` needs nbconvert, which the
pins do not include.
"""
from __future__ import annotations

import difflib
import hashlib
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

from companion_figures import use_book_rendering  # book/_scripts, the script's own folder

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"


def source_id(cell, taken: set[str]) -> str:
    """An id derived from the cell's type and source, not in ``taken`` (a repeated cell gets a suffix).

    >>> from nbformat.v4 import new_code_cell
    >>> cid = "c-" + hashlib.sha1(b"print(1)").hexdigest()[:8]
    >>> source_id(new_code_cell("print(1)"), set()) == cid
    True
    >>> source_id(new_code_cell("print(1)"), {cid}) == cid + "-2"
    True
    """
    base = f"{cell.cell_type[0]}-" + hashlib.sha1(cell.source.encode()).hexdigest()[:8]
    cid, k = base, 1
    while cid in taken:
        k += 1
        cid = f"{base}-{k}"
    return cid


def keep_ids(cells: list, previous: list) -> None:
    """Give ``cells`` the ids of the cells of ``previous`` they match, in place.

    Cells are aligned by type and source (difflib): an unchanged cell keeps its id, an edited
    cell the id of the cell of the same type it replaces; any other cell gets :func:`source_id`.

    >>> from nbformat.v4 import new_code_cell as code, new_markdown_cell as md
    >>> old = [md("# A", id="m1"), code("x = 1", id="c1"), code("print(x)", id="c2")]
    >>> new = [md("# A"), md("new text"), code("x = 2"), code("print(x)")]
    >>> keep_ids(new, old); new[0].id, new[1].id.startswith("m-"), new[2].id, new[3].id
    ('m1', True, 'c1', 'c2')
    """
    key = [(c.cell_type, c.source) for c in previous]
    sm = difflib.SequenceMatcher(a=key, b=[(c.cell_type, c.source) for c in cells], autojunk=False)
    kept: dict[int, str] = {}
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag in ("equal", "replace"):  # within a replaced block, the k-th cell of a type takes the k-th id
            for kind in {c.cell_type for c in cells[j1:j2]}:
                olds = [i for i in range(i1, i2) if previous[i].cell_type == kind and previous[i].get("id")]
                news = [j for j in range(j1, j2) if cells[j].cell_type == kind]
                kept.update({j: previous[i].id for i, j in zip(olds, news)})
    taken = set(kept.values())
    for j, c in enumerate(cells):
        c.id = kept.get(j) or source_id(c, taken)
        taken.add(c.id)


def refresh(slug: str, timeout: int = 1800) -> Path:
    src = CHAPTERS / f"{slug}.md"
    if not src.exists():
        raise SystemExit(f"refresh: {src} does not exist")
    nb = jupytext.read(src)
    out = src.with_suffix(".ipynb")
    keep_ids(nb.cells, nbformat.read(out, as_version=4).cells if out.exists() else [])
    use_book_rendering()  # the kernel inherits MATPLOTLIBRC
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(CHAPTERS)}})
    t0 = time.perf_counter()
    client.execute()
    # Build record for the Status chapter (companion.runs.chapter_times): nbval ignores notebook
    # metadata, so this one volatile block never breaks a comparison.
    nb.metadata["companion"] = {
        "execution_seconds": round(time.perf_counter() - t0, 1),
        "executed": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "profile": os.environ.get("COMPANION_PROFILE", "fast"),
    }
    tmp = out.with_suffix(".ipynb.tmp")
    nbformat.write(nb, tmp)
    tmp.replace(out)
    return out


def main(argv: list[str]) -> int:
    for slug in argv:
        t = time.perf_counter()
        out = refresh(slug)
        print(f"refresh: wrote {out.relative_to(CHAPTERS.parents[1])} ({time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
