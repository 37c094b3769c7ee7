"""Issue 48, item 2: a verdict box reads in one line. Every stored claim's box (data/claims/*.json) is
rendered and scanned: no Python repr (a list, dict or tuple printed as Python prints it) in what it
says of the numbers, and no line over 200 characters; one box per claim, in the section of its result."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from companion import ledger, pages

ROOT = Path(__file__).resolve().parents[1]
# What a printed Python container looks like: a bracket or brace opening on a number, a quote or another
# container, quoted items separated by commas or colons, or Python's own words for nothing and truth.
REPR = re.compile(r"\[\s*[-+\d'\"\[]|\{\s*['\"]|\(\s*['\"]|['\"]\s*[,:]\s*['\"\d\[{-]|\b(?:None|True|False|nan)\b")
NUMBER_FIELDS = ("measured", "expected", "tolerance", "uncertainty", "test", "why")


def _rows() -> list[dict]:
    rows = []
    for f in sorted((ROOT / "data" / "claims").glob("*.json")):
        rows.extend(json.loads(f.read_text()))
    return rows


def repr_problems(texts) -> list[str]:
    return [t[max(m.start() - 30, 0):m.end() + 30] for t in texts for m in [REPR.search(t)] if m]


def test_the_repr_check_can_fail():
    """The old boxes printed ``measured [3, 0.875] +- 0.05846 vs expected [3, 'fraction ...']``: caught."""
    old = "measured [3, 0.875, 0.1625] ± 0.05846 vs expected [3, 'fraction at T >= 0.75']; {'mean': 0.99}"
    assert repr_problems([old])
    assert not repr_problems([pages.humanize([3, 0.875, 0.1625]), pages.humanize({"mean": 0.99})])
    rows = _rows()
    assert sum(bool(repr_problems([f"{r['measured']!r} {r['expected']!r}"])) for r in rows) > 20, "no row would have failed before"


@pytest.mark.parametrize("row", _rows(), ids=lambda r: r["id"])
def test_every_stored_box_reads(row):
    text = pages.verdict_record_text(row)
    long = [line for line in text.splitlines() if len(line) > pages.VERDICT_LINE]
    assert not long, f"{row['id']}: lines over {pages.VERDICT_LINE} characters: {long[:2]}"
    record = dict(pages._record(row))
    said = [pages.verdict_sentence(row), pages._why_words(row)] + [record.get(k, "") for k in NUMBER_FIELDS]
    assert not repr_problems(said), f"{row['id']}: a Python repr in its box: {repr_problems(said)[:2]}"
    box = pages.verdict_box([row])._repr_html_()
    line = re.search(r'<span class="verdict-line">(.*?)</span>', box, re.S)
    visible = html.unescape(re.sub(r"<[^>]+>", "", f"{row['status']} " + line.group(1)))
    assert len(visible) <= pages.VERDICT_LINE, f"{row['id']}: the box's line is {len(visible)} characters"
    assert f'href="claims.html#row-{html.escape(row["id"])}"' in box, "the box links to its row in the claims table"
    if row["status"] in ("partly", "not-reproduced", "refuted", "inconclusive"):
        assert 'class="verdict-why"' in box, f"{row['id']}: a {row['status']} box says why in words"
    assert "<details" in box and row["id"] in box.split("<details", 1)[1], "the id and record are folded beneath"


def test_one_box_per_claim_in_its_own_section():
    """A chapter shows each claim's box once, and Remark C.7's box sits in its own section (it stacked
    under Proposition 3.1's figure before)."""
    md = (ROOT / "book" / "chapters" / "stability.md").read_text()
    c7 = md.index("### Remark C.7")
    assert 'only=["A-remarkC.7-rescaled"]' in md[c7:md.index("\n## ", c7)]
    assert 'skip=["A-remarkC.7-rescaled"]' in md[:c7]


def test_the_claims_table_is_in_the_papers_order_with_a_target_per_row():
    rows = ledger.load()
    frame, text = pages.claims_frame(rows)
    ids = [re.search(r'id="row-([^"]+)"', cell).group(1) for cell in frame["result"]]
    assert len(ids) == len(set(ids)) == len(rows)
    stability = [r for r in sorted(rows, key=pages.paper_order) if r["paper"] == "A"]
    wheres = [r["where"] for r in stability]
    assert wheres.index("Prop. 3.1, eq. (14) (and eq. (85))") < wheres.index("Lemma C.1, eq. (40)") < wheres.index("Lemma C.12, eq. (88)")
    assert not repr_problems(text.splitlines())
