"""Re-execute chapters into their reference notebooks: book/chapters/<slug>.md -> <slug>.ipynb.

    python book/_scripts/refresh.py SLUG [SLUG ...]
    python book/_scripts/refresh.py --prose SLUG [SLUG ...]

Reads the MyST source with jupytext, executes it with nbclient in book/chapters/ (as nbval and
the book build do), and writes the executed .ipynb. A raising cell aborts with a non-zero exit and
leaves the previous reference untouched. Figures are drawn with the book's rendering settings
(book/_scripts/matplotlibrc, as nbval and the book build), and every cell keeps the id it had in
the previous reference (an edited cell keeps the id of the cell it replaces; a new cell gets an
id derived from its source), so a refresh diff shows only what changed. The notebook's
``metadata.companion`` records how long the execution took, when, where and in which profile (the
status chapter shows it). Uses nbclient directly: `jupytext --execute` needs nbconvert, which the
pins do not include.

``--prose`` executes nothing: it copies the markdown cells of the .md into the existing reference
(an edited paragraph, a citation, a new heading) and keeps every code cell of the reference, with
its outputs and its execution record, as it is. It refuses, with a non-zero exit and the number
and first line of the cell, when the code cells of the .md differ from the reference's (source,
order, or cell options such as tags): outputs of code that changed must come from an execution.
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
from reference_arithmetic import use_reference_arithmetic

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
    use_reference_arithmetic()  # ... and the pinned code paths of torch and MKL
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(CHAPTERS)}})
    t0 = time.perf_counter()
    client.execute()
    # Build record for the Status chapter (companion.pages.chapter_times): nbval ignores notebook
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


class CodeChanged(Exception):
    """The code cells of a chapter's .md differ from those of its reference: it needs an execution."""


def _options(cell) -> dict:
    """A code cell's options as the .md states them (nbclient's ``execution`` timing left out)."""
    return {k: v for k, v in cell.metadata.items() if k != "execution"}


def _first_line(cell) -> str:
    line = next((x for x in cell.source.strip().splitlines() if x.strip()), "")
    return line if len(line) <= 60 else line[:57] + "..."


def check_code_unchanged(cells: list, previous: list) -> None:
    """Raise :class:`CodeChanged` unless ``cells`` hold the code cells of ``previous``, in order.

    Sources are compared without leading and trailing blank space (as tests/test_pipeline.py
    compares a chapter with its reference); cell options (``tags`` and the like) exactly.

    >>> from nbformat.v4 import new_code_cell as code, new_markdown_cell as md
    >>> ref = [md("# A"), code("x = 1"), md("text"), code("print(x)", metadata={"tags": ["t"]})]
    >>> check_code_unchanged([md("# A, edited"), code(" x = 1 "), code("print(x)", metadata={"tags": ["t"]})], ref)
    >>> def why(cells):
    ...     try:
    ...         check_code_unchanged(cells, ref)
    ...     except CodeChanged as err:
    ...         print(err)
    >>> why([code("x = 2"), code("print(x)", metadata={"tags": ["t"]})])
    code cell 1 of 2 (`x = 2`) differs from the reference's (`x = 1`)
    >>> why([code("x = 1"), code("print(x)")])
    code cell 2 of 2 (`print(x)`) has options {} where the reference has {'tags': ['t']}
    >>> why([code("x = 1")])
    the .md has 1 code cells, the reference 2
    """
    new = [c for c in cells if c.cell_type == "code"]
    old = [c for c in previous if c.cell_type == "code"]
    for k, (a, b) in enumerate(zip(new, old), 1):
        if a.source.strip() != b.source.strip():
            raise CodeChanged(f"code cell {k} of {len(new)} (`{_first_line(a)}`) differs from the reference's "
                              f"(`{_first_line(b)}`)")
        if _options(a) != _options(b):
            raise CodeChanged(f"code cell {k} of {len(new)} (`{_first_line(a)}`) has options {_options(a)} "
                              f"where the reference has {_options(b)}")
    if len(new) != len(old):
        raise CodeChanged(f"the .md has {len(new)} code cells, the reference {len(old)}")


def prose(slug: str) -> tuple[Path, int]:
    """Copy the markdown of ``<slug>.md`` into its existing reference ``<slug>.ipynb``, executing nothing.

    The notebook takes the .md's cells in order: its markdown (and raw) cells as written, each code
    cell as the reference holds it (outputs, execution count, id). Cell ids follow :func:`keep_ids`;
    the notebook's metadata, its execution record included, are kept. Returns the reference's
    path and the number of markdown cells that changed (the file is rewritten only when some did,
    or when cells were added or removed).

    Raises
    ------
    SystemExit
        When the .md or its reference is missing, or (:class:`CodeChanged`) when the code cells
        differ: run the chapter in execute mode instead.
    """
    src = CHAPTERS / f"{slug}.md"
    out = src.with_suffix(".ipynb")
    for path in (src, out):
        if not path.exists():
            raise SystemExit(f"refresh --prose: {path} does not exist")
    nb = jupytext.read(src)
    ref = nbformat.read(out, as_version=4)
    try:
        check_code_unchanged(nb.cells, ref.cells)
    except CodeChanged as err:
        raise SystemExit(f"refresh --prose: {src.name}: {err}; its outputs need an execution: "
                         f"make refresh CHAPTER={slug}") from None
    codes = iter(c for c in ref.cells if c.cell_type == "code")
    cells = [next(codes) if c.cell_type == "code" else c for c in nb.cells]
    keep_ids(cells, ref.cells)
    old_prose = [(c.id, c.cell_type, c.source) for c in ref.cells if c.cell_type != "code"]
    new_prose = [(c.id, c.cell_type, c.source) for c in cells if c.cell_type != "code"]
    # edited or added cells, then removed ones
    changed = len(set(new_prose) - set(old_prose)) + len({i for i, *_ in old_prose} - {i for i, *_ in new_prose})
    if changed or [c.id for c in cells] != [c.id for c in ref.cells]:
        ref.cells = cells
        tmp = out.with_suffix(".ipynb.tmp")
        nbformat.write(ref, tmp)
        tmp.replace(out)
    return out, changed


def main(argv: list[str]) -> int:
    if argv[:1] == ["--prose"]:
        for slug in argv[1:]:
            out, changed = prose(slug)
            print(f"refresh --prose: {out.relative_to(CHAPTERS.parents[1])}: "
                  + (f"{changed} markdown cell(s) updated" if changed else "markdown unchanged"))
        return 0
    for slug in argv:
        t = time.perf_counter()
        out = refresh(slug)
        print(f"refresh: wrote {out.relative_to(CHAPTERS.parents[1])} ({time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
