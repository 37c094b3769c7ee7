"""Issue 48: the numbers behind a figure read as a person writes them, and the verdict boxes and numbers
tables carry a Markdown form that the PDF prints (myst-nb's latex builder prefers text/markdown to
text/plain; its HTML builders text/html to both).

The Markdown is parsed here as the book parses it (MyST, with the book's extensions), so a character
that would break a table cell, open maths or a role is seen without building the PDF."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
from docutils import nodes
from docutils.core import publish_doctree

from companion import pages

ROOT = Path(__file__).resolve().parents[1]
# A Python container as Python prints it (tests/test_verdict_text.py has the longer form for the ledger's strings).
REPR = re.compile(r"[\[\]{}]|\b(?:None|True|False|nan|inf)\b|\d\.?\d*e[-+]\d")

VALUES = {
    "weights": [0.25, 0.25, 0.5],
    "covariance weights w": [[0.33, 0.33, 0.33], [0.8, 0.1, 0.1]],
    "runs (rank, seed)": [(1, 0), (4, 2)],
    "N": np.array([100, 1000, 10000, 100000, 1000000]),
    "beta": [10, 30, 100, 300, 1000.0],
    "steady lag": np.array([0.025, 0.0501, float("nan")]),
    "V_p": [2.12, float("inf")],
    "eps* per initial condition": np.linspace(0.001, 0.0391, 64),
    "extremal cases": {"field": True, "qk_in": np.bool_(True)},
    "max |located - sigma(e^{2 beta}, r)|": "< 1e-07",
    "smallest increment": np.float64(9.2e-06),
    "trials": np.int64(16800),
    "found": True,
    "fall per rank, half-width": "0.142 ± 0.043, 0.137 ± 0.035",
    "standard error": [0.000139, 4.52e-05],
    "a *starred* _key_ with $5 and `ticks`": 1,
}


def _myst(text: str) -> nodes.document:
    """``text`` parsed as the book parses a Markdown output (MyST with the book's extensions); a
    problem the parser reports fails here."""
    from myst_parser.parsers.docutils_ import Parser

    doc = publish_doctree(text, parser=Parser(), settings_overrides={
        "myst_enable_extensions": ["dollarmath", "colon_fence", "amsmath", "deflist", "substitution"],
        "report_level": 2, "halt_level": 5, "warning_stream": False})
    problems = [m.astext() for m in doc.findall(nodes.system_message)]
    assert not problems, problems
    return doc


def test_numbers_read_as_written():
    shown = pages.numbers_table(VALUES)
    rows = dict(line.split("  ", 1) for line in repr(shown).splitlines())
    rows = {k.strip(): v.strip() for k, v in rows.items()}
    assert rows["weights"] == "0.25, 0.25, 0.5"
    assert rows["covariance weights w"] == "(0.33, 0.33, 0.33), (0.8, 0.1, 0.1)"
    assert rows["runs (rank, seed)"] == "(1, 0), (4, 2)"
    assert rows["N"] == "100, 1000, 10000, 100000, 1 × 10⁶"  # no thousands commas among the list's commas
    assert rows["beta"] == "10, 30, 100, 300, 1000"
    assert rows["steady lag"] == "0.025, 0.0501, not a number"
    assert rows["eps* per initial condition"] == "64 values, 0.001 to 0.0391"
    assert rows["extremal cases"] == "field = yes, qk in = yes"
    assert rows["max |located - sigma(e^{2 beta}, r)|"] == "< 10⁻⁷"
    assert rows["smallest increment"] == "9.2 × 10⁻⁶" and rows["trials"] == "16,800" and rows["found"] == "yes"
    assert rows["standard error"] == "1.39 × 10⁻⁴, 4.52 × 10⁻⁵"
    said = [v for k, v in rows.items() if k != "a *starred* _key_ with $5 and `ticks`"]
    assert not [v for v in said if REPR.search(v)], "a Python repr in a numbers table"


def test_one_precision_per_line():
    """Every number of a line at the table's significant digits and, where the line's numbers all lie
    between 10⁻⁴ and 10⁵, in decimals (no 6.2 × 10⁻⁴ beside 0.0012); a summary's range too."""
    shown = pages.numbers_table({"a": [0.123456, 12.3456, 1234.56], "b": np.linspace(0.111111, 0.999999, 40),
                                 "masses": [0.945, 0.0536, 0.000624, 0.00123], "spread": [1.94e-05, 0.00125, 0.654],
                                 "runs": [(1, 0.5), (2, 2e-07)]}, sig=2)
    assert repr(shown).splitlines() == ["a       0.12, 12, 1235", "b       40 values, 0.11 to 1",
                                        "masses  0.94, 0.054, 0.00062, 0.0012",
                                        "spread  1.9 × 10⁻⁵, 0.0013, 0.65",
                                        "runs    (1, 0.5), (2, 2 × 10⁻⁷)"]


def test_the_repr_check_can_fail():
    """The old table printed Python's lists and e-notation: caught."""
    assert REPR.search("[0.0165, 0.00516, 0.0243]") and REPR.search("{'field': True}") and REPR.search("1e+03")


def test_three_forms_say_the_same():
    """text/plain (nbval), text/html (the page) and text/markdown (the PDF) show the same keys and values,
    and the Markdown parses as one two-column table of them."""
    shown = pages.numbers_table(VALUES)
    plain = [(k.strip(), v) for k, v in (line.split("  ", 1) for line in repr(shown).splitlines())]
    plain = [(k, v.strip()) for k, v in plain]
    cells = re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", shown._repr_html_())
    assert [(html.unescape(k), html.unescape(v)) for k, v in cells] == plain
    doc = _myst(shown._repr_markdown_())
    tables = list(doc.findall(nodes.table))
    assert len(tables) == 1
    body = list(tables[0].findall(nodes.tbody))[0]
    parsed = [tuple(e.astext() for e in row.findall(nodes.entry)) for row in body.children]
    assert parsed == plain
    assert not list(doc.findall(nodes.math)), "a dollar sign in a key opened maths"


def _claims() -> list[dict]:
    return [r for f in sorted((ROOT / "data" / "claims").glob("*.json")) for r in json.loads(f.read_text())]


def _plain_words(quote: str) -> str | None:
    """The longest run of plain words in a quote (no TeX, no maths): what print must show as written."""
    runs = [run for k, p in pages.quote_pieces(quote) if k == "text" for run in re.findall(r"[A-Za-z][A-Za-z ,.'-]{20,}[A-Za-z]", p)]
    return max(runs, key=len) if runs else None


def test_every_stored_verdict_box_prints_its_quote():
    """Every stored claim's box as Markdown: one admonition titled by its status, no parser problem, the
    paper's quoted words in it (maths typeset where the quote has any), the same sentence as the page."""
    rows = _claims()
    assert len(rows) > 100
    quoted = 0
    for row in rows:
        box = pages.verdict_box([row])
        doc = _myst(box._repr_markdown_())
        boxes = list(doc.findall(nodes.admonition))
        assert len(boxes) == 1, row["id"]
        assert boxes[0].children[0].astext().startswith(row["status"]), row["id"]
        text = " ".join(boxes[0].astext().split())
        assert " ".join(pages.verdict_sentence(row).split()) in text, row["id"]
        words = _plain_words(row.get("quote") or "")
        if words:
            assert " ".join(words.split()) in text, f"{row['id']}: the paper's words {words!r} not printed"
            quoted += 1
        if "$" in (row.get("quote") or "") and str(row["quote"]).count("$") % 2 == 0:
            assert list(boxes[0].findall(nodes.math)), f"{row['id']}: the quote's maths not typeset"
    assert quoted > 100


def test_verdict_box_html_and_text_unchanged_by_the_markdown():
    """The Markdown is a third form: the page's HTML and nbval's text are what they were."""
    row = _claims()[0]
    box = pages.verdict_box([row])
    assert box._repr_html_().startswith('<div class="verdicts">') and "````" not in box._repr_html_()
    assert repr(box).startswith(f"{row['status']}: ") and "````" not in repr(box)
    assert pages.verdict_box([row], skip=[row["id"]])._repr_markdown_() == ""
