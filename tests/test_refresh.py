"""book/_scripts/refresh.py --prose: the markdown of a chapter copied into its reference, nothing executed.

Both directions: an edited paragraph reaches the reference while every code cell (source,
outputs, execution count, id) and the execution record stay as they were; an edited code cell,
or a changed cell option, is refused with a non-zero exit naming the cell, and the reference is
left untouched. Also: every committed reference holds the markdown of its .md (the reference
book, ``make book-ref``, renders the prose from the .ipynb, not from the .md).
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "book" / "_scripts"
CHAPTERS = ROOT / "book" / "chapters"
MD = sorted(CHAPTERS.glob("*.md"))
SLUG = "introduction"  # a small chapter, figures among the outputs


def _load_refresh():
    if "refresh" in sys.modules:
        return sys.modules["refresh"]
    sys.path.insert(0, str(SCRIPTS))  # refresh.py imports companion_figures from its own folder
    try:
        spec = importlib.util.spec_from_file_location("refresh", SCRIPTS / "refresh.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["refresh"] = mod
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(SCRIPTS))
    return mod


refresh = _load_refresh()


@pytest.fixture
def chapter(tmp_path, monkeypatch):
    """A copy of one chapter and its reference in a folder of their own, which refresh.py treats as the chapters."""
    for ext in (".md", ".ipynb"):
        shutil.copy(CHAPTERS / f"{SLUG}{ext}", tmp_path / f"{SLUG}{ext}")
    monkeypatch.setattr(refresh, "CHAPTERS", tmp_path)
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def _first_prose_line(md: Path) -> str:
    """The first line of ordinary prose of the chapter's second markdown cell."""
    cell = [c for c in jupytext.read(md).cells if c.cell_type == "markdown"][1]
    return next(x for x in cell.source.splitlines() if x and x[0].isalpha())


def test_prose_copies_markdown_and_keeps_code_cells(chapter):
    md, ipynb = chapter / f"{SLUG}.md", chapter / f"{SLUG}.ipynb"
    before = nbformat.read(ipynb, as_version=4)
    line = _first_prose_line(md)
    _edit(md, line, line + " An added sentence {cite:p}`geshkovski2025mathematical`.")
    # a paragraph appended to the figure caption above the heading, which becomes a cell of its own
    _edit(md, "## An exact solution", "A new paragraph before a heading.\n\n+++\n\n## An exact solution")

    out, changed = refresh.prose(SLUG)
    assert out == ipynb and changed == 3  # two cells edited, one added
    after = nbformat.read(ipynb, as_version=4)
    src = jupytext.read(md)
    assert [c.source for c in after.cells if c.cell_type == "markdown"] == [
        c.source for c in src.cells if c.cell_type == "markdown"]
    assert [c.cell_type for c in after.cells] == [c.cell_type for c in src.cells]
    assert [c for c in after.cells if c.cell_type == "code"] == [c for c in before.cells if c.cell_type == "code"]
    assert after.metadata == before.metadata  # the execution record of the outputs kept
    old_ids = {c.id for c in before.cells}
    assert sum(c.id not in old_ids for c in after.cells) == 1  # only the added cell has a new id
    assert len({c.id for c in after.cells}) == len(after.cells)

    text = ipynb.read_text()
    assert refresh.prose(SLUG) == (ipynb, 0)  # a second run finds nothing to do ...
    assert ipynb.read_text() == text  # ... and leaves the file as it was


def test_prose_leaves_an_unchanged_reference_byte_for_byte(chapter):
    ipynb = chapter / f"{SLUG}.ipynb"
    text = ipynb.read_text()
    assert refresh.prose(SLUG) == (ipynb, 0)
    assert ipynb.read_text() == text


@pytest.mark.parametrize("change", ["source", "tags", "added", "removed"])
def test_prose_refuses_changed_code_and_names_the_cell(chapter, change):
    md, ipynb = chapter / f"{SLUG}.md", chapter / f"{SLUG}.ipynb"
    text = ipynb.read_text()
    cells = [c for c in jupytext.read(md).cells if c.cell_type == "code"]
    call = "res = intro.clustering(PROFILE)"
    k = next(i for i, c in enumerate(cells, 1) if call in c.source)  # the cell that runs the fast profile
    first = cells[k - 1].source.splitlines()[0]
    n = len(cells)
    if change == "source":
        _edit(md, call, "res = intro.clustering(PROFILE, trials=3)")
        expected = f"code cell {k} of {n} (`{first[:40]}"
    elif change == "tags":
        block = md.read_text().split(first + "\n" + call)[0].rsplit("```{code-cell} ipython3\n", 1)[1]  # the cell's options
        _edit(md, "```{code-cell} ipython3\n" + block + first + "\n" + call,
              "```{code-cell} ipython3\n" + block.replace(":tags: [hide-cell]", ":tags: [hide-cell, nbval-ignore-output]") + first + "\n" + call)
        expected = f"code cell {k} of {n} (`{first[:40]}"  # the options differ: the message names the cell
    elif change == "added":
        _edit(md, "## An exact solution", "```{code-cell} ipython3\nprint(1)\n```\n\n## An exact solution")
        expected = f"of {n + 1} (`print(1)`) differs from the reference's"
    else:
        last = cells[-1].source
        _edit(md, "```{code-cell} ipython3\n:tags: [remove-input]\n" + last + "\n```\n", "")
        expected = f"the .md has {n - 1} code cells, the reference {n}"
    with pytest.raises(SystemExit) as err:
        refresh.prose(SLUG)
    assert expected in str(err.value) and f"make refresh CHAPTER={SLUG}" in str(err.value)
    assert ipynb.read_text() == text


def test_prose_command_line_exit_status(chapter):
    """From the command line: exit 0 and a summary line, or a non-zero exit with the refusal on stderr."""
    script = (
        "import sys, pathlib; sys.path.insert(0, sys.argv[1]); import refresh; "
        "refresh.CHAPTERS = pathlib.Path(sys.argv[2]); sys.exit(refresh.main(sys.argv[3:]))"
    )
    run = lambda: subprocess.run([sys.executable, "-c", script, str(SCRIPTS), str(chapter), "--prose", SLUG],
                                 capture_output=True, text=True, timeout=120)
    ok = run()
    assert ok.returncode == 0, ok.stderr
    assert "markdown unchanged" in ok.stdout
    _edit(chapter / f"{SLUG}.md", "torch.set_num_threads(2)", "torch.set_num_threads(1)")
    bad = run()
    assert bad.returncode != 0
    n = sum(1 for c in jupytext.read(chapter / f"{SLUG}.md").cells if c.cell_type == "code")
    assert f"refresh --prose: introduction.md: code cell 1 of {n} (`import matplotlib.pyplot as plt`)" in bad.stderr


def test_prose_refuses_a_missing_reference(chapter):
    (chapter / f"{SLUG}.ipynb").unlink()
    with pytest.raises(SystemExit, match="does not exist"):
        refresh.prose(SLUG)


@pytest.mark.parametrize("md", MD, ids=[p.stem for p in MD])
def test_reference_prose_matches_source(md):
    """The reference book renders the .ipynb: its markdown cells must be the .md's, in order."""
    src = [(c.cell_type, c.source) for c in jupytext.read(md).cells if c.cell_type != "code"]
    ref = [(c.cell_type, c.source) for c in nbformat.read(md.with_suffix(".ipynb"), as_version=4).cells
           if c.cell_type != "code"]
    assert src == ref, (f"book/chapters/{md.name}: the prose of its .ipynb is not the .md's: "
                        f"run `python book/_scripts/refresh.py --prose {md.stem}` (code unchanged) "
                        f"or `make refresh CHAPTER={md.stem}`")
