"""The ledger's coverage of each paper's numbered results (issue 17, "The ledger itself").

``data/paper_results.json`` lists every numbered result of the four papers; a ledger row covers one
when its ``where`` names it. These tests check the spelling normaliser, the coverage rule, the
inventory file, and that every numbered result a ledger row names is listed in the inventory.
"""
from __future__ import annotations

import json

import pytest

from companion import ledger
from companion.inventory import coverage, load_inventory, result_refs, unlisted


@pytest.mark.parametrize("where, refs", [
    ("Proposition 3.1", ["Prop. 3.1"]),
    ("Prop. 3.1", ["Prop. 3.1"]),
    ("Prop 3.1", ["Prop. 3.1"]),
    ("prop.3.1", ["Prop. 3.1"]),
    ("Theorem 4.2", ["Thm. 4.2"]),
    ("Thm 4.2 (21), derived limit", ["Thm. 4.2"]),
    ("Thm D.4", ["Thm. D.4"]),
    ("Corollary B.8", ["Cor. B.8"]),
    ("Cor. 2", ["Cor. 2"]),
    ("Lemma 4.4", ["Lemma 4.4"]),
    ("Lem. 4.4", ["Lemma 4.4"]),
    ("Rem. 5.3, Fig. 5", ["Remark 5.3", "Fig. 5"]),
    ("Conj. 1", ["Conjecture 1"]),
    ("Figure 7", ["Fig. 7"]),
    ("Sec. 5, Fig. 4(b)", ["Fig. 4"]),
    ("Appendix C.2", ["App. C.2"]),
    ("Fig. 2, App. C", ["Fig. 2", "App. C"]),
    ("Lemma 6.3, Thm. 6.4, Fig. 3", ["Lemma 6.3", "Thm. 6.4", "Fig. 3"]),
    ("Theorems 4.2, 4.3 and 4.5", ["Thm. 4.2", "Thm. 4.3", "Thm. 4.5"]),
    ("Prop. 3.10", ["Prop. 3.10"]),
    ("Sec. 2, Example 3 (its number inferred)", ["Example 3"]),
    ("Examples 3 and 4", ["Example 3", "Example 4"]),
])
def test_spellings(where, refs):
    assert result_refs(where) == refs


@pytest.mark.parametrize("where", ["eq. (20)", "Sec. 4.1, eq. (4.4)", "reviews; Thm on the linear phase",
                                   "linearisation (NOTES D)", "", "a remark on figures", "the example, probably its 3"])
def test_sections_equations_and_words_name_nothing(where):
    assert result_refs(where) == []


@pytest.mark.parametrize("where, refs", [
    ("Figures 6-9", ["Fig. 6", "Fig. 7", "Fig. 8", "Fig. 9"]),
    ("Figs. 6–8", ["Fig. 6", "Fig. 7", "Fig. 8"]),
    ("App. E.4.1-E.4.4, Fig. 7", ["App. E.4.1", "App. E.4.2", "App. E.4.3", "App. E.4.4", "Fig. 7"]),
    ("App. E.4.2-4", ["App. E.4.2", "App. E.4.3", "App. E.4.4"]),
    ("Lemmas 6.3 to 6.4", ["Lemma 6.3", "Lemma 6.4"]),
    ("Thm. 4.2-5.1", ["Thm. 4.2", "Thm. 5.1"]),  # not one range of numbers: its two ends
])
def test_ranges(where, refs):
    assert result_refs(where) == refs


def _left(rows, inventory):
    return {p: [e["ref"] for e in entries] for p, entries in coverage(rows, inventory).items()}


def test_range_covers_inner_figure_and_prefix_does_not_cover():
    inv = {"A": [{"ref": "Fig. 7"}, {"ref": "Prop. 3.1"}, {"ref": "Prop. 3.10"}, {"ref": "Fig. 10"}]}
    left = _left([{"paper": "A", "where": "Figures 6-9"}, {"paper": "A", "where": "Prop. 3.10"}], inv)
    assert left["A"] == ["Prop. 3.1", "Fig. 10"]
    left = _left([{"paper": "A", "where": "Proposition 3.1"}], inv)
    assert left["A"] == ["Fig. 7", "Prop. 3.10", "Fig. 10"]


def test_covered_entry_disappears_only_for_its_paper():
    inv = {"A": [{"ref": "Thm. 4.2"}, {"ref": "Fig. 2"}], "C": [{"ref": "Fig. 2"}]}
    assert _left([], inv) == {"A": ["Thm. 4.2", "Fig. 2"], "B": [], "C": ["Fig. 2"], "D": []}
    assert _left([{"paper": "C", "where": "Fig. 2, Sec. 7.1"}], inv) == {"A": ["Thm. 4.2", "Fig. 2"], "B": [], "C": [], "D": []}
    assert _left([{"paper": "A", "where": "Theorem 4.2 (20)"}], inv)["A"] == ["Fig. 2"]
    assert _left([{"paper": "A", "where": "eq. (20)"}], inv)["A"] == ["Thm. 4.2", "Fig. 2"]


def test_appendix_covers_its_subsections_not_the_reverse():
    inv = {"B": [{"ref": "App. C.2"}, {"ref": "App. C.3"}, {"ref": "App. B"}, {"ref": "App. C"}]}
    assert _left([{"paper": "B", "where": "Fig. 2, App. C"}], inv)["B"] == ["App. B"]
    assert _left([{"paper": "B", "where": "App. C.2"}], inv)["B"] == ["App. C.3", "App. B", "App. C"]


def test_unlisted_names_the_misses():
    inv = {"B": [{"ref": "Thm. 1"}, {"ref": "App. C.2"}]}
    rows = [{"paper": "B", "where": "Thm. 1, Prop. 6, App. C"}, {"paper": "A", "where": "Fig. 8"}]
    assert unlisted(rows, inv) == {"A": ["Fig. 8"], "B": ["Prop. 6"], "C": [], "D": []}


def test_bad_input():
    with pytest.raises(TypeError, match="where"):
        result_refs(None)
    with pytest.raises(TypeError, match="inventory"):
        coverage([], [])
    with pytest.raises(ValueError, match="paper"):
        coverage([{"id": "X", "paper": "E", "where": "Fig. 1"}], {})
    with pytest.raises(TypeError, match="rows"):
        unlisted(["Fig. 1"], {})


def _entry(ref):
    return {"ref": ref, "section": "Sec. 1", "summary": "s", "reason": "r"}


@pytest.mark.parametrize("data, match", [
    ({"A": [], "B": [], "C": []}, "papers"),
    ({"A": [_entry("Fig. 1"), _entry("Figure 1")], "B": [], "C": [], "D": []}, "ledger's spelling"),
    ({"A": [_entry("Fig. 1"), _entry("Fig. 1")], "B": [], "C": [], "D": []}, "twice"),
    ({"A": [{"ref": "Fig. 1", "section": "x", "summary": "s"}], "B": [], "C": [], "D": []}, "keys"),
    ({"A": [dict(_entry("Fig. 1"), reason=" ")], "B": [], "C": [], "D": []}, "non-empty"),
])
def test_load_inventory_rejects_bad_files(tmp_path, data, match):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "paper_results.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=match):
        load_inventory(tmp_path)


def test_inventory_file_is_valid():
    raw = json.loads((ledger.repo_root() / "data" / "paper_results.json").read_text())
    assert sorted(raw) == ["A", "B", "C", "D"]
    for paper, entries in raw.items():
        assert entries, f"paper {paper} lists no results"
        for e in entries:
            assert set(e) == {"ref", "section", "summary", "reason"}, (paper, e)
            assert all(isinstance(v, str) and v.strip() for v in e.values()), (paper, e)
        refs = [e["ref"] for e in entries]
        assert len(refs) == len(set(refs)), f"paper {paper}: duplicate refs {sorted({r for r in refs if refs.count(r) > 1})}"
    assert load_inventory() == raw


def test_every_result_a_row_names_is_in_the_inventory():
    inv = load_inventory()
    misses = [f"{r['id']} ({r['paper']}, {r['where']!r}): {m}" for r in ledger.load()
              for m in [unlisted([r], inv)[r["paper"]]] if m]
    assert not misses, "ledger rows name results missing from data/paper_results.json:\n" + "\n".join(misses)
