"""The ledger's rows as a referee reads them (issue 45): every row quotes the paper and says its basis,
every `paper` quote stands in the paper's text, statuses are the five words, and sensitivity is recorded."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from companion import ledger

ROOT = Path(__file__).resolve().parents[1]
ROWS = json.loads((ROOT / "data" / "claims.json").read_text())
QUESTIONS = ledger.load(ROOT, questions=True)
HAVE_PAPERS = ledger.papers_dir().is_dir()


def _ids(rows):
    return [r["id"] for r in rows]


@pytest.mark.parametrize("row", ROWS + QUESTIONS, ids=_ids(ROWS + QUESTIONS))
def test_row_says_what_it_rests_on(row):
    assert row.get("basis") in ledger.BASES, f"{row['id']}: basis {row.get('basis')!r}"
    assert str(row.get("quote") or "").strip(), f"{row['id']}: no quote"
    assert isinstance(row.get("fragile"), bool), f"{row['id']}: fragile not recorded"
    assert row.get("test"), f"{row['id']}: no words for what decides the verdict"
    allowed = ledger.QUESTION_STATUSES if ledger.is_question(row) else ledger.STATUSES
    assert row["status"] in allowed
    if row["status"] == "inconclusive" and not ledger.is_question(row):
        assert row.get("needed") or "needed" in str(row.get("why", "")), f"{row['id']}: inconclusive without the trials that would decide"
    if row["status"] in ("partly", "not-reproduced", "refuted"):
        assert row.get("why"), f"{row['id']}: {row['status']} without why"


@pytest.mark.skipif(not HAVE_PAPERS, reason="the papers' text (shared/papers) is not beside this checkout")
@pytest.mark.parametrize("row", [r for r in ROWS + QUESTIONS if r.get("basis") == "paper"],
                         ids=_ids([r for r in ROWS + QUESTIONS if r.get("basis") == "paper"]))
def test_paper_quote_stands_in_the_paper(row):
    assert ledger.quote_found(row), f"{row['id']}: quote not found verbatim in {row.get('source') or ledger.PAPER_FILES[row['paper']]}: {row['quote'][:120]!r}"


def test_scorecard_counts_paper_rows_only():
    rows = [{"paper": "A", "basis": "paper", "status": "not-reproduced"},
            {"paper": "A", "basis": "derived", "status": "not-reproduced"},
            {"paper": "A", "basis": "reading", "status": "reproduced"}]
    c = ledger.counts(rows, "A")
    assert c["not-reproduced"] == 1 and c["reproduced"] == 0 and c["our derivations"] == 2


def test_no_hand_written_quantile_table():
    """Quantiles come from scipy.stats: no Student t or normal quantile typed into the package."""
    typed = re.compile(r"\b(12\.706|4\.303|3\.182|2\.776|2\.571|1\.959\d*|1\.96|1\.645|2\.576)\b")
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "src" / "companion").rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1) if typed.search(line) and not line.lstrip().startswith(("#", ">>>"))]
    assert not hits, hits


def test_one_significance_level():
    """The level is declared once, in ledger.py: no other module types its own alpha."""
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "src" / "companion").rglob("*.py") if p.name != "ledger.py"
            for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"\b(ALPHA|alpha_level|SIGNIFICANCE)\s*=\s*0\.\d", line)]
    assert not hits, hits


CHAPTERS = sorted((ROOT / "book" / "chapters").glob("*.md"))
COMPUTING = re.compile(r"\bnp\.|\bmath\.|\bnumpy\b|\bscipy\b|\bstats\.|\bfor\b .* \bin\b|\bwhile\b|\bmin\(|\bmax\(|\bsum\(|\bsorted\(|\babs\(|\bround\(")


def _removed_cells(md: Path):
    text = md.read_text()
    for m in re.finditer(r"```\{code-cell\}[^\n]*\n(:tags: \[[^\]]*remove-cell[^\]]*\]\n)(.*?)```", text, re.S):
        yield m.group(2)


@pytest.mark.parametrize("md", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_removed_cells_compute_nothing(md):
    """A removed cell only glues what a summary returns: no numpy, math, loops or statistics in it."""
    bad = [line for cell in _removed_cells(md) for line in cell.splitlines()
           if COMPUTING.search(line) and not line.lstrip().startswith("#")]
    assert not bad, bad[:10]
