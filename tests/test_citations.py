"""The book cites through its bibliography (issue 22): book/references.bib, {cite:p}`key` / {cite:t}`key`.

Three checks on the prose of every page (markdown cells only; code cells are not prose):
every cited key is in the .bib; no page types out an arXiv number or the author list of one of
the four papers instead of citing it; and a page that names paper A, B, C or D cites that paper
at least once. ``BACKLOG`` lists the pages that named a paper without citing it when this rule
was made (2026-12-01); the test fails when the list is wrong in either direction.
"""
from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
PAGES = sorted([BOOK / "intro.md", *(BOOK / "chapters").glob("*.md")])
BIB = BOOK / "references.bib"

# The four papers' keys, as in book/references.bib and CITATION.cff.
PAPER_KEYS = {"A": "koubbi2026lora", "B": "alcalde2026concentration", "C": "kuehn2026spectral", "D": "bruno2025metastable"}
# Author lists typed instead of a citation (the way the pages named the papers before the bibliography).
TYPED = re.compile(r"Koubbi,\s+Hernandez|Alcalde,\s+Bungert|Kuehn\s+and\s+Yoon|Bruno,\s+Pasqualotto|"
                   r"arXiv[:\s]*\d{4}\.\d{4,5}|Koubbi\s+et\s+al\.?\s+20\d\d")
CITE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]+)`")
NAMES = re.compile(r"\b[Pp]apers?\s+((?:[ABCD](?:,\s*|\s+and\s+|\s*&\s*)?)+)\b")

# page stem -> papers it names without citing them (to be emptied, not extended)
BACKLOG: dict[str, set[str]] = {}


def prose(page: Path) -> str:
    """The markdown of a page: a chapter's markdown cells, or the whole of a plain page."""
    if page.parent.name != "chapters":
        return page.read_text()
    return "\n\n".join(c.source for c in jupytext.read(page).cells if c.cell_type == "markdown")


def bib_keys(text: str) -> set[str]:
    """Entry keys of a BibTeX text.

    >>> sorted(bib_keys("@misc{a2020x,\\n title = {T}}\\n@article{b2021y, title = {U}}"))
    ['a2020x', 'b2021y']
    """
    return set(re.findall(r"^@\w+\{([^,\s]+),", text, re.M))


def cited(text: str) -> set[str]:
    """Keys cited in MyST markdown.

    >>> sorted(cited("as shown {cite:p}`a2020x,b2021y` and by {cite:t}`c2022z`"))
    ['a2020x', 'b2021y', 'c2022z']
    """
    return {k.strip() for m in CITE.finditer(text) for k in m.group(1).split(",")}


def named_papers(text: str) -> set[str]:
    """The papers A-D a text names ("paper A", "papers A and D", "Paper C's").

    >>> sorted(named_papers("as paper A says; papers B and D agree; Paper C's case"))
    ['A', 'B', 'C', 'D']
    """
    return {p for m in NAMES.finditer(text) for p in re.findall(r"[ABCD]", m.group(1))}


def uncited_papers(text: str) -> set[str]:
    """Papers a text names but never cites.

    >>> sorted(uncited_papers("paper A {cite:p}`koubbi2026lora`; paper D"))
    ['D']
    """
    return {p for p in named_papers(text) if PAPER_KEYS[p] not in cited(text)}


def test_the_four_papers_are_in_the_bibliography():
    assert set(PAPER_KEYS.values()) <= bib_keys(BIB.read_text())


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_cited_keys_exist(page):
    missing = cited(prose(page)) - bib_keys(BIB.read_text())
    assert not missing, f"{page.relative_to(ROOT)} cites keys not in book/references.bib: {sorted(missing)}"


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_no_typed_references(page):
    typed = sorted({m.group(0) for m in TYPED.finditer(prose(page))})
    assert not typed, (f"{page.relative_to(ROOT)} types references out: {typed}; cite them with "
                       "{cite:p}`key` (keys in book/references.bib)")


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_named_papers_are_cited(page):
    missing, listed = uncited_papers(prose(page)), BACKLOG.get(page.stem, set())
    keys = {p: PAPER_KEYS[p] for p in sorted(missing - listed)}
    assert not missing - listed, f"{page.relative_to(ROOT)} names papers it never cites: {keys}; add {{cite:p}}`key`"
    assert not listed - missing, f"{page.stem}: papers {sorted(listed - missing)} are cited now: remove them from BACKLOG"


def test_checks_fail_on_typed_and_uncited_references():
    """The checks above can fail: a typed author list, an arXiv number and an uncited paper are caught."""
    text = "Paper B (Alcalde, Bungert, Riedl, Roith), arXiv 2605.10931, as paper C shows."
    assert {m.group(0) for m in TYPED.finditer(text)} == {"Alcalde, Bungert", "arXiv 2605.10931"}
    assert uncited_papers(text) == {"B", "C"}
    assert uncited_papers(text + " {cite:p}`alcalde2026concentration,kuehn2026spectral`") == set()
