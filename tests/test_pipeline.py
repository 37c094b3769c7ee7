"""The book pipeline: chapters vs references, the claims ledger, the toc, the pins, the README.

These checks are fast (no chapter is executed here; nbval does that in ``make test-nbval``).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml

from companion import ledger

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "book" / "chapters"
MD = sorted(CHAPTERS.glob("*.md"))


def _code(cells) -> list[str]:
    return [c.source.strip() for c in cells if c.cell_type == "code"]


def _ref(md: Path):
    ipynb = md.with_suffix(".ipynb")
    assert ipynb.exists(), f"{md.name} has no committed reference {ipynb.name}: run `make refresh CHAPTER={md.stem}`"
    return nbformat.read(ipynb, as_version=4)


# --------------------------------------------------------------------------- chapters vs references
@pytest.mark.parametrize("md", MD, ids=[p.stem for p in MD])
def test_reference_matches_source(md):
    """The .ipynb reference was produced from the current .md: same code cells, in order."""
    src = _code(jupytext.read(md).cells)
    ref = _code(_ref(md).cells)
    assert src == ref, (
        f"book/chapters/{md.name} and its .ipynb disagree (code edited, reference not refreshed): "
        f"run `make refresh CHAPTER={md.stem}`"
    )


@pytest.mark.parametrize("md", MD, ids=[p.stem for p in MD])
def test_reference_is_executed(md):
    """Every code cell of the reference ran (nbval never compares cells with execution_count None)."""
    nb = _ref(md)
    bad = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip() and c.get("execution_count") is None]
    assert not bad, f"{md.stem}.ipynb: cells {bad} were never executed: run `make refresh CHAPTER={md.stem}`"
    errors = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{md.stem}.ipynb: cells {errors} raised"


@pytest.mark.parametrize("md", MD, ids=[p.stem for p in MD])
def test_reference_has_no_figure_repr(md):
    """Figure cells end with plt.show(): a '<Figure size ...>' text output changes between matplotlib versions."""
    nb = _ref(md)
    for c in nb.cells:
        for o in c.get("outputs", []):
            text = o.get("data", {}).get("text/plain", "") if "data" in o else ""
            assert not ("image/png" not in o.get("data", {}) and str(text).startswith("<Figure size")), f"{md.stem}: bare {text!r}"


def test_mismatch_is_detected(tmp_path):
    """The check above can fail: an edited code cell differs from its stale reference."""
    md = tmp_path / "x.md"
    md.write_text("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
                  "kernelspec:\n  name: python3\n  display_name: Python 3\n---\n\n```{code-cell} ipython3\nprint(1)\n```\n")
    nb = jupytext.read(md)
    nbformat.write(nb, md.with_suffix(".ipynb"))
    md.write_text(md.read_text().replace("print(1)", "print(2)"))
    assert _code(jupytext.read(md).cells) != _code(_ref(md).cells)


# --------------------------------------------------------------------------- the claims ledger
def _record_cell_text(nb) -> str | None:
    """Printed stdout of the cell that calls ledger.record( (None when the chapter records nothing)."""
    cells = [c for c in nb.cells if c.cell_type == "code" and "ledger.record(" in c.source]
    if not cells:
        return None
    assert len(cells) == 1, "one ledger.record( cell per chapter"
    return "".join(o.get("text", "") for o in cells[0].get("outputs", []) if o.get("output_type") == "stream" and o.get("name") == "stdout")


@pytest.mark.parametrize("md", MD, ids=[p.stem for p in MD])
def test_ledger_json_is_what_the_chapter_prints(md):
    """data/claims/<slug>.json is exactly what the reference notebook's record cell printed.

    nbval proves the notebook is what the code produces; this proves the JSON is what it shows.
    """
    text = _record_cell_text(_ref(md))
    path = ROOT / "data" / "claims" / f"{md.stem}.json"
    if text is None:
        assert not path.exists(), f"{path} exists but {md.name} never calls ledger.record("
        return
    assert path.exists(), f"{md.name} records claims but {path} is missing: run `make refresh CHAPTER={md.stem}`"
    rows = json.loads(path.read_text())
    assert text.rstrip("\n") == ledger.format_claims(rows), f"{path.name} differs from what {md.stem}.ipynb prints"


def test_no_orphan_ledger_files():
    for f in sorted((ROOT / "data" / "claims").glob("*.json")):
        assert (CHAPTERS / f"{f.stem}.md").exists(), f"{f} belongs to no chapter"


def test_assembled_ledger_is_current_and_valid():
    path = ROOT / "data" / "claims.json"
    assert path.exists(), "data/claims.json missing: run `make refresh CHAPTER=claims`"
    rows = json.loads(path.read_text())
    assert rows == ledger.load(), "data/claims.json is stale: run `make refresh CHAPTER=claims`"
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate claim ids"
    for r in rows:
        assert set(r) == set(ledger.KEYS), f"{r.get('id')}: keys {sorted(r)}"
        assert r["status"] in ledger.STATUSES and r["paper"] in ledger.PAPERS, r["id"]
        assert (CHAPTERS / f"{r['chapter']}.md").exists(), f"{r['id']}: unknown chapter {r['chapter']}"
        assert r["statement"].strip() and r["where"].strip(), r["id"]


# --------------------------------------------------------------------------- toc, cache guard
def test_toc_lists_the_chapters_present(pipeline):
    toc = ROOT / "book" / "_toc.yml"
    assert toc.read_text() == pipeline.toc_text(), "book/_toc.yml is stale: run `make toc`"
    parts = yaml.safe_load(toc.read_text())["parts"]
    files = [e["file"] for part in parts for e in part["chapters"]]
    assert sorted(f for f in files if f.startswith("chapters/")) == sorted(f"chapters/{p.stem}" for p in MD)
    assert files[0] == "chapters/introduction" and files[-1] == "api"
    # grouped by paper: each paper's part holds only chapters that check that paper
    captions = [p["caption"] for p in parts]
    assert [c[:7] for c in captions if c.startswith("Paper ")] == ["Paper A", "Paper B", "Paper C", "Paper D"]


def test_api_page_lists_every_public_module(pipeline):
    api = (ROOT / "book" / "api.md").read_text()
    assert api == pipeline.api_text(), "book/api.md is stale: run `make toc`"
    for m in ("companion.integrate", "companion.models", "companion.ledger", "companion.experiments", "companion.theory.consensus"):
        assert f".. automodule:: {m}\n" in api
    assert not any("._" in m for m in pipeline.public_modules())


def test_toc_order_and_missing_chapters(pipeline, tmp_path):
    for s in ("status", "claims", "zeta_extra", "metastable", "introduction"):
        (tmp_path / f"{s}.md").write_text("# x\n")
    assert pipeline.chapter_slugs(tmp_path) == ["introduction", "metastable", "zeta_extra", "claims", "status"]
    toc = pipeline.toc_text(tmp_path)
    assert "chapters/stability" not in toc  # listed in ORDER, absent: left out
    parts = {p["caption"]: [e["file"] for e in p["chapters"]] for p in yaml.safe_load(toc)["parts"]}
    assert parts["Other chapters"] == ["chapters/zeta_extra"]  # a chapter no part names still appears
    assert "Paper A: LoRA forgetting" not in parts  # a part with none of its chapters present is left out


def test_cache_guard_wipes_on_source_change(pipeline, tmp_path):
    (tmp_path / "src" / "companion").mkdir(parents=True)
    mod = tmp_path / "src" / "companion" / "m.py"
    mod.write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    build = tmp_path / "_build"
    assert not pipeline.guard(build, root=tmp_path)  # first run: nothing to wipe
    (build / ".jupyter_cache").mkdir()
    (build / ".doctrees").mkdir()
    assert not pipeline.guard(build, root=tmp_path)  # unchanged inputs: cache kept
    assert (build / ".jupyter_cache").exists()
    mod.write_text("x = 2\n")
    assert pipeline.guard(build, root=tmp_path)
    assert not (build / ".jupyter_cache").exists() and not (build / ".doctrees").exists()
    fp = pipeline.inputs_fingerprint(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'y'\n")
    assert pipeline.inputs_fingerprint(tmp_path) != fp


def test_ref_config_builds_from_references(pipeline, tmp_path):
    cfg = yaml.safe_load(pipeline.ref_config(tmp_path / "c.yml").read_text())
    assert cfg["execute"]["execute_notebooks"] == "off"
    assert "chapters/*.md" in cfg["exclude_patterns"] and "**.ipynb" not in cfg["exclude_patterns"]
    main = yaml.safe_load((ROOT / "book" / "_config.yml").read_text())
    assert main["sphinx"]["config"]["nb_execution_raise_on_error"] is True
    assert "_static" not in main["sphinx"]["config"]["mathjax_path"].replace("../", "")



def test_subset_config_allows_links_to_absent_chapters_only(pipeline, tmp_path):
    """A book of some chapters (make book CHAPTERS=...) does not fail on its links to the chapters it
    lacks; the whole book keeps every link an error (-W), and its own suppressions stay."""
    main = yaml.safe_load((ROOT / "book" / "_config.yml").read_text())
    own = main["sphinx"]["config"].get("suppress_warnings", [])
    whole = yaml.safe_load(pipeline.ref_config(tmp_path / "w.yml").read_text())
    assert whole["sphinx"]["config"].get("suppress_warnings", []) == own
    assert not set(pipeline.SUBSET_WARNINGS) & set(own)
    part = yaml.safe_load(pipeline.ref_config(tmp_path / "p.yml", references=False, subset=True).read_text())
    assert part["sphinx"]["config"]["suppress_warnings"] == own + ["ref.doc", "ref.ref"]
    assert part["execute"]["execute_notebooks"] == main["execute"]["execute_notebooks"]  # still executed
    assert part["exclude_patterns"] == main.get("exclude_patterns", part["exclude_patterns"])
    assert pipeline.main(["toc-subset", str(tmp_path / "s"), "introduction"]) in (0, None)
    toc = (tmp_path / "s" / "_toc.yml").read_text()
    assert "chapters/introduction" in toc and "chapters/stability" not in toc

# --------------------------------------------------------------------------- README
def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    """The README's reuse example is real code: it runs and prints what the README says it prints."""
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- tested-example -->\s*```python\n(.*?)```\s*\n(?:Prints|It prints):?\s*\n\s*```(?:text)?\n(.*?)```", text, re.S)
    assert m, "README.md: the reuse example (<!-- tested-example --> python block + printed text block) is missing"
    code, expected = m.group(1), m.group(2)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out.strip() == expected.strip()


def test_readme_lists_every_chapter():
    text = (ROOT / "README.md").read_text()
    for md in MD:
        assert f"book/chapters/{md.name}" in text, f"README.md: no row for {md.name} in the Chapters table"


def test_ci_entry_point():
    run = (ROOT / ".ci" / "run").read_text().splitlines()
    assert run[0] == "#!/usr/bin/env bash" and "set -euo pipefail" in run and "make test" in run
    assert (ROOT / ".ci" / "run").stat().st_mode & 0o111, ".ci/run must be executable"


# --------------------------------------------------------------------------- Sphinx hooks
def test_summary_chapters_are_read_last_and_reread(book_ext):
    ext = book_ext

    class App:
        class config:
            companion_summary_docs = ["chapters/claims", "chapters/status"]

    class Env:
        found_docs = {"intro", "chapters/claims", "chapters/introduction", "chapters/status"}

    docs = ["chapters/claims", "chapters/introduction", "chapters/status", "intro"]
    ext._order(App, Env, docs)
    assert docs == ["chapters/introduction", "intro", "chapters/claims", "chapters/status"]
    assert ext._outdated(App, Env, set(), {"chapters/introduction"}, set()) == ["chapters/claims", "chapters/status"]
    assert ext._outdated(App, Env, set(), {"chapters/claims"}, set()) == []  # nothing else changed


def test_docstring_escaping_keeps_literals_and_code(book_ext):
    ext = book_ext
    lines = [
        "Bound |x - y| <= c_i1 with n_+ tokens and ``|z|``, :math:`|w|`.",
        "Example::",
        "",
        "    |kept| n_",
        "back to prose |a|",
        ">>> abs(-1)  # |x|",
        "1",
    ]
    out = ext.escape_plain_math(lines)
    assert out[0] == r"Bound \|x - y\| <= c_i1 with n\_+ tokens and ``|z|``, :math:`|w|`."
    assert out[3] == "    |kept| n_" and out[4] == r"back to prose \|a\|" and out[5:] == lines[5:]


def test_scorecard_counts_and_links(pipeline, tmp_path):
    """The landing page's scorecard: per-paper counts of the papers' own statements, our derivations apart,
    the fragile ones, every not-reproduced paper row quoted and linked to its section (or its chapter where
    no section carries the label); a derived row that fails is not listed as the paper's."""
    base = {"chapter": "ch", "basis": "paper", "fragile": False}
    rows = [dict(base, id="A-1", paper="A", where="Thm. 1", statement="s1", status="reproduced", quote="q1", experiment="e1"),
            dict(base, id="A-2", paper="A", where="Thm. 2", statement="s2", status="not-reproduced", quote="q2", why="w2",
                 experiment="e2", fragile=True),
            dict(base, id="A-3", paper="A", where="Thm. 3", statement="s3", status="not-reproduced", quote="q3",
                 experiment="e3", basis="derived"),
            dict(base, id="B-1", paper="B", where="Fig. 3", statement="s4", status="not-reproduced", quote="q4", why="w4",
                 chapter="other", experiment="e4")]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "claims.json").write_text(json.dumps(rows))
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    (chapters / "ch.md").write_text("(sec-e2)=\n## x\n")
    text = pipeline.scorecard_text(tmp_path, chapters)
    assert "| reproduced | 1 | 0 | 0 | 0 | **1** |" in text and "| not reproduced | 1 | 1 | 0 | 0 | **2** |" in text
    assert "| of which fragile | 1 | 0 | 0 | 0 | **1** |" in text and "| *our derivations* (apart) | 1 | 0 | 0 | 0 | **1** |" in text
    assert '{ref}`Thm. 2 <sec-e2>`. *The paper:* \u201cq2\u201d *We measured:* w2' in text
    assert 'Fig. 3 ({doc}`chapters/other`). *The paper:* \u201cq4\u201d' in text
    assert "Thm. 3" not in text
