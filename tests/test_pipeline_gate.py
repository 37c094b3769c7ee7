"""The build gate: a failing cell fails the book build (Jupyter Book 1 otherwise exits 0).

Builds a tiny throwaway book in tmp_path with the project's own _config.yml, Sphinx hooks and
build flags (read from the Makefile), once with a passing cell (must build: the control) and once
with a raising cell (must exit non-zero). About 20 s on 2 cores.
"""
from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# Tiny chapter

```{code-cell} ipython3
CODE
```
"""


def _jb_flags() -> list[str]:
    out = subprocess.run(["make", "-s", "-C", str(ROOT), "print-JB_FLAGS"], capture_output=True, text=True, check=True)
    flags = shlex.split(out.stdout)
    assert "-W" in flags or "--warningiserror" in flags
    return flags


def _tiny_book(tmp: Path, code: str) -> Path:
    book = tmp / "book"
    (book / "chapters").mkdir(parents=True)
    shutil.copy(ROOT / "book" / "_config.yml", book / "_config.yml")
    shutil.copy(ROOT / "book" / "references.bib", book / "references.bib")  # bibtex_bibfiles in _config.yml
    shutil.copytree(ROOT / "book" / "_ext", book / "_ext")
    shutil.copytree(ROOT / "book" / "_scripts", book / "_scripts")  # the figure settings extension (companion_figures)
    (book / "_vendor").mkdir()  # html_extra_path must exist
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n- file: chapters/tiny\n")
    (book / "intro.md").write_text("# Tiny book\n")
    (book / "chapters" / "tiny.md").write_text(HEADER.replace("CODE", code))
    return book


def _build(book: Path) -> subprocess.CompletedProcess:
    jb = Path(sys.executable).with_name("jupyter-book")
    return subprocess.run([str(jb), "build", str(book), *_jb_flags()], capture_output=True, text=True, timeout=600, cwd=book)


@pytest.mark.slow
def test_failing_cell_fails_the_build(tmp_path):
    ok = _build(_tiny_book(tmp_path / "ok", "print(6 * 7)"))
    assert ok.returncode == 0, f"the control book must build:\n{ok.stdout[-3000:]}\n{ok.stderr[-3000:]}"
    assert (tmp_path / "ok" / "book" / "_build" / "html" / "chapters" / "tiny.html").exists()
    bad = _build(_tiny_book(tmp_path / "bad", "raise RuntimeError('this cell fails on purpose')"))
    assert bad.returncode != 0, "a raising cell must fail the build"
    assert "this cell fails on purpose" in bad.stdout + bad.stderr
