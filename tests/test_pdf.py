"""The book as a PDF (issue 48, ``make pdf``): the LaTeX step, and the PDF XeLaTeX makes of it.

* **The LaTeX step** (``make latex``: Sphinx's latex builder on the committed reference notebooks,
  execution off, as ``make book-ref``): every page of the table of contents is in ``book.tex``, every
  captioned figure of the sources is a figure there with its image beside it, no output prints as
  IPython's placeholder (``<IPython.core.display.HTML object>``), and the claims table (itables, HTML
  only) is printed as a table. The ``book.tex`` checked is ``COMPANION_BOOK_TEX`` when set (``make
  test-pdf`` and ``.ci/run`` build it once), else one built here (about a minute: marked slow).
* **The PDF** (``COMPANION_BOOK_PDF``, else ``book/_build/pdf/book.pdf``; ``none``: not built), read with poppler-utils
  (``make tex-deps`` installs them): its page count in a sensible range, an embedded image for every
  figure, every page's title in its text and no placeholder. Skipped where the PDF is not built.
* The helpers of ``book/_ext/companion_pdf.py`` on the committed claims notebook (fast).
* What the site folds or shows as HTML only, printed (issue 48): each verdict box as a box with the
  paper's quoted words (its Markdown form), each numbers table of a folded cell as a captioned table
  after the cell, the cell's code still left out. Expected from the reference notebooks: a chapter
  executed before the Markdown forms existed prints its boxes as text until it is re-executed.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
PDF_DEFAULT = BOOK / "_build" / "pdf" / "book.pdf"
PLACEHOLDERS = ("IPython.core.display", "HTML object", "<IPython")
# A sensible size for the book: its 16 pages were 300-700 pages when this test was written.
PAGES = (150, 2000)


def load_script(relpath: str, name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / relpath)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def pdf_ext():
    return load_script("book/_ext/companion_pdf.py", "companion_book_pdf_ext")


@pytest.fixture(scope="module")
def pipeline():
    return load_script("book/_scripts/pipeline.py", "companion_book_pipeline_pdf")


def book_docs(pipeline) -> list[str]:
    """The pages of the PDF, in order: the landing page, the chapters with a reference notebook and
    the appendix pages present (the table of contents ``make latex`` builds, pipeline.py ref-config)."""
    chapters = [f"chapters/{s}" for s in pipeline.chapter_slugs() if (pipeline.CHAPTERS / f"{s}.ipynb").exists()]
    return ["intro"] + chapters + [p for p in pipeline.APPENDIX if (BOOK / f"{p}.md").exists()]


def _markdown_of(doc: str) -> list[tuple[str, dict]]:
    """(markdown text, cell metadata) of a page as built: a chapter's reference notebook, else its .md."""
    nb = BOOK / f"{doc}.ipynb"
    if nb.exists():
        cells = json.loads(nb.read_text())["cells"]
        return [("".join(c["source"]) if c["cell_type"] == "markdown" else "", c.get("metadata", {})) for c in cells]
    return [((BOOK / f"{doc}.md").read_text(), {})]


_FIGURE = re.compile(r"^(?:`{3,}|:{3,})\{(?:glue:)?figure\}[^\n]*\n((?:[ \t]*:[^\n]*\n)*)", re.M)


def expected_figures(doc: str) -> tuple[int, list[str]]:
    """How many captioned figures a page has, and the names of those that have one: the ``figure``
    and ``glue:figure`` directives of its Markdown, and code cells whose ``mystnb.figure`` gives a caption."""
    count, names = 0, []
    for text, meta in _markdown_of(doc):
        for m in _FIGURE.finditer(text):
            count += 1
            name = re.search(r":name:\s*(\S+)", m.group(1))
            if name:
                names.append(name.group(1))
        fig = (meta.get("mystnb") or {}).get("figure") or {}
        if fig.get("caption"):
            count += 1
            if fig.get("name"):
                names.append(fig["name"])
    return count, names


@pytest.fixture(scope="module")
def tex(pipeline, tmp_path_factory) -> tuple[Path, str]:
    """``book.tex`` of the LaTeX step and its text: ``COMPANION_BOOK_TEX``, else built here."""
    given = os.environ.get("COMPANION_BOOK_TEX")
    if given:
        path = Path(given)
        if not path.is_absolute():
            path = ROOT / path
        assert path.is_file(), f"COMPANION_BOOK_TEX={given}: no such file (make latex builds it)"
        return path, path.read_text()
    out = tmp_path_factory.mktemp("pdf")
    py = sys.executable
    subprocess.run([py, str(BOOK / "_scripts" / "pipeline.py"), "ref-config", str(out)], cwd=ROOT, check=True)
    jb = Path(py).parent / "jupyter-book"
    run = subprocess.run([str(jb), "build", "book", "--config", str(out / "_config.yml"), "--toc", str(out / "_toc.yml"),
                          "--path-output", str(out), "--builder", "latex", "-W", "--keep-going"],
                         cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    path = out / "_build" / "latex" / "book.tex"
    return path, path.read_text()


def _pages_of(text: str) -> dict[str, str]:
    """The LaTeX of each page, split at the labels Sphinx writes at each page's start."""
    marks = [(m.start(), m.group(1)) for m in re.finditer(r"\\label\{\\detokenize\{([^}]*)::doc\}\}", text)]
    return {doc: text[a:(marks[i + 1][0] if i + 1 < len(marks) else len(text))] for i, (a, doc) in enumerate(marks)}



@pytest.mark.slow
def test_latex_has_every_page_in_order(tex, pipeline):
    _, text = tex
    docs = book_docs(pipeline)
    found = list(_pages_of(text))
    assert found == docs, f"pages in book.tex {found}, table of contents {docs}"
    # every page after the landing page opens a chapter (the landing page is the PDF's front matter)
    assert len(re.findall(r"^\\chapter\{", text, re.M)) == len(docs) - 1


@pytest.mark.slow
def test_latex_has_every_figure_with_its_image(tex, pipeline):
    path, text = tex
    pages = _pages_of(text)
    missing, counts = [], {}
    for doc in book_docs(pipeline):
        count, names = expected_figures(doc)
        body = pages.get(doc, "")
        figures = re.findall(r"\\begin\{figure\}.*?\\end\{figure\}", body, re.S)
        counts[doc] = (len(figures), count)
        for name in names:
            if f"\\label{{\\detokenize{{{doc}:{name}}}}}" not in body:
                missing.append(f"{doc}: {name}")
        for fig in figures:
            images = re.findall(r"\\sphinxincludegraphics(?:\[[^\]]*\])?\{\{?([^{}]+)\}", fig)
            assert images, f"{doc}: a figure without an image"
            for img in images:
                assert list(path.parent.glob(img + "*")), f"{doc}: image {img} not written beside book.tex"
    assert not missing, f"figures missing from book.tex: {missing}"
    short = {d: c for d, c in counts.items() if c[0] < c[1]}
    assert not short, f"pages with fewer figures than their sources (found, expected): {short}"
    assert sum(c[1] for c in counts.values()) >= 60  # the book's figures, not an empty source list


@pytest.mark.slow
def test_latex_prints_no_placeholder_and_the_claims_table(tex):
    _, text = tex
    for p in PLACEHOLDERS:
        assert p not in text, f"book.tex prints {p!r}"
    claims = _pages_of(text)["chapters/claims"]
    assert "\\begin{longtable}" in claims, "the claims table is not printed as a table"
    assert not re.search(r"&lt;|<span|<a |<br", claims), "HTML left in the claims page"


def _plain(text: str) -> str:
    """Text compared as read: ligatures undone (NFKC), Unicode hyphens as "-", whitespace single."""
    text = unicodedata.normalize("NFKC", text).replace("\u2010", "-").replace("\u2011", "-")
    return re.sub(r"\s+", " ", text)


def _poppler(tool: str) -> str:
    exe = shutil.which(tool)
    if not exe:
        pytest.skip(f"{tool} (poppler-utils) not installed: make tex-deps")
    return exe


@pytest.fixture(scope="module")
def pdf() -> Path:
    given = os.environ.get("COMPANION_BOOK_PDF")
    if given == "none":
        pytest.skip("no TeX here: the PDF step did not run (make test-pdf)")
    path = Path(given) if given else PDF_DEFAULT
    if not path.is_absolute():
        path = ROOT / path
    if not path.is_file():
        if given:
            pytest.fail(f"COMPANION_BOOK_PDF={given}: no such file")
        pytest.skip(f"no PDF at {path.relative_to(ROOT)}: make pdf builds it")
    return path


@pytest.fixture(scope="module")
def pdf_text(pdf) -> str:
    out = subprocess.run([_poppler("pdftotext"), "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, check=True)
    return _plain(out.stdout)


def test_pdf_page_count(pdf):
    info = subprocess.run([_poppler("pdfinfo"), str(pdf)], capture_output=True, text=True, check=True).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    assert PAGES[0] <= pages <= PAGES[1], f"{pages} pages"


def test_pdf_has_an_image_for_every_figure(pdf, pipeline):
    listing = subprocess.run([_poppler("pdfimages"), "-list", str(pdf)], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in listing.splitlines()[2:] if line.strip()]
    # distinct embedded images (object number), soft masks (an image's alpha channel) left out
    images = {r[10] for r in rows if len(r) > 10 and r[2] == "image"}
    figures = sum(expected_figures(doc)[0] for doc in book_docs(pipeline))
    assert len(images) >= figures, f"{len(images)} images in the PDF for {figures} figures"


def test_pdf_text_has_every_page_and_no_placeholder(pdf_text, pipeline):
    for p in PLACEHOLDERS:
        assert p not in pdf_text, f"the PDF prints {p!r}"
    for doc in book_docs(pipeline):
        src = BOOK / f"{doc}.md"
        title = re.search(r"^# (.+)$", src.read_text(), re.M).group(1)
        assert _plain(re.sub(r"[`*$\\{}]", "", title)) in pdf_text, f"{doc}: title {title!r} not in the PDF"


# --- the helpers, on the committed claims notebook ------------------------------------------------

def _claims_outputs():
    nb = json.loads((BOOK / "chapters" / "claims.ipynb").read_text())
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            yield cell, out


def test_itables_table_has_every_row_without_html(pdf_ext):
    from docutils import nodes

    html = [("".join(o["data"]["text/html"]), c) for c, o in _claims_outputs() if "text/html" in o.get("data", {})]
    tables = [(h, c) for h, c in html if pdf_ext.itables_args(h)]
    assert len(tables) == 1, "one itables table on the claims page"
    args = pdf_ext.itables_args(tables[0][0])
    rows = json.loads(args["data_json"])
    table = pdf_ext.itables_table(args, "chapters/claims")
    body = list(table.findall(nodes.tbody))[0]
    assert len(body.children) == len(rows) > 50
    text = table.astext()
    assert not re.search(r"<[a-z/]|&[a-z]+;", text), "HTML left in the printed table"
    assert list(table.findall(nodes.math)), "the statements' maths typeset"
    refs = [r["refuri"] for r in table.findall(nodes.reference) if r.get("refuri", "").startswith("%")]
    assert refs and all(re.match(r"^%chapters/\w+#[\w.-]+$", r) for r in refs), refs[:3]
    # the rows nbval compares (the cell before prints them, one a line) are those printed
    printed = [o for c, o in _claims_outputs() if o.get("output_type") == "stream" and "remove-cell" in c["metadata"].get("tags", [])]
    lines = [line for o in printed for line in "".join(o["text"]).splitlines() if line.count(" | ") >= 4]
    assert len(lines) == len(rows)


def test_placeholder_outputs_are_recognised(pdf_ext):
    plain = ["".join(o["data"]["text/plain"]) for _, o in _claims_outputs() if "text/html" in o.get("data", {})]
    flagged = [p for p in plain if pdf_ext.PLACEHOLDER.match(p.strip())]
    assert len(flagged) >= 3  # itables' two scripts and its table
    assert not pdf_ext.PLACEHOLDER.match("reproduced      A-prop3.1-bound ...")


def test_doctests(pdf_ext):
    import doctest

    result = doctest.testmod(pdf_ext)
    assert result.attempted >= 4 and not result.failed


# --- issue 48: the verdict boxes' quotes and the folded numbers tables, printed --------------------

def _reference_outputs():
    """(doc, cell, output) of every output of the reference notebooks."""
    for nb in sorted((BOOK / "chapters").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            for out in cell.get("outputs", []):
                yield f"chapters/{nb.stem}", cell, out


def _markdown(out) -> str:
    return "".join(out.get("data", {}).get("text/markdown", ""))


def _claims_by_id() -> dict:
    return {r["id"]: r for f in sorted((ROOT / "data" / "claims").glob("*.json")) for r in json.loads(f.read_text())}


def _plain_words(quote: str) -> str | None:
    """The longest run of plain words of a quote (no maths, no TeX): printed as written."""
    from companion import pages

    runs = [run for k, p in pages.quote_pieces(quote) if k == "text" for run in re.findall(r"[A-Za-z][A-Za-z ,.']{20,}[A-Za-z]", p)]
    return max(runs, key=len) if runs else None


def _tex_words(tex: str) -> str:
    """The words of LaTeX source as compared: Sphinx's curly apostrophes straight, whitespace single."""
    return re.sub(r"\s+", " ", tex.replace("\u2019", "'"))


def expected_quotes() -> dict[str, list[tuple[str, str]]]:
    """Per page, (row id, plain words of the paper's quote) of each verdict box whose reference output
    has a Markdown form."""
    claims, found = _claims_by_id(), {}
    for doc, _, out in _reference_outputs():
        md = _markdown(out)
        if not md.startswith("````{admonition}"):
            continue
        for row_id in re.findall(r"^- \*\*row:\*\* (.+?), in the claims table$", md, re.M):
            row_id = row_id.replace("\\", "")
            words = _plain_words(str(claims.get(row_id, {}).get("quote") or ""))
            if words:
                found.setdefault(doc, []).append((row_id, " ".join(words.split())))
    return found


def expected_folded_tables() -> dict[str, dict[str, int]]:
    """Per page, how many numbers tables of folded cells each caption (the fold's label) has, for the
    outputs with a Markdown form."""
    pdf_ext = load_script("book/_ext/companion_pdf.py", "companion_book_pdf_ext_expected")
    found: dict[str, dict[str, int]] = {}
    for doc, cell, out in _reference_outputs():
        tags = set(cell["metadata"].get("tags", []))
        if not tags & {"hide-cell", "hide-output"} or not _markdown(out).startswith("| quantity | value |"):
            continue
        caption = pdf_ext.fold_caption((cell["metadata"].get("mystnb") or {}).get("code_prompt_show"))
        if caption:
            found.setdefault(doc, {}).setdefault(caption, 0)
            found[doc][caption] += 1
    return found


@pytest.mark.slow
def test_latex_prints_the_verdict_boxes_with_their_quotes(tex):
    """Each verdict box with a Markdown form is a box in book.tex, with the paper's quoted words."""
    _, text = tex
    pages = _pages_of(text)
    quotes = expected_quotes()
    assert quotes, "no verdict box of the reference notebooks has a Markdown form (re-execute the chapters)"
    missing = [f"{doc}: {row_id}: {words[:60]!r}" for doc, rows in quotes.items() for row_id, words in rows
               if words not in _tex_words(pages.get(doc, ""))]
    assert not missing, f"{len(missing)} quotes not printed, e.g. {missing[:3]}"
    for doc in quotes:
        assert "\\begin{sphinxadmonition}" in pages[doc], f"{doc}: no verdict box printed as a box"


@pytest.mark.slow
def test_latex_prints_the_folded_numbers_tables(tex):
    """Each numbers table of a folded cell is a table in book.tex, captioned with its fold's label; the
    folded code is not printed."""
    _, text = tex
    pages = _pages_of(text)
    tables = expected_folded_tables()
    assert tables, "no folded numbers table of the reference notebooks has a Markdown form (re-execute the chapters)"
    for doc, captions in tables.items():
        for caption, count in captions.items():
            cap = re.escape(caption)  # a table's caption, or a long table's (over 30 rows: Sphinx's longtable)
            printed = re.findall(r"\\sphinxcaption\{" + cap + r"\}\s*\\sphinxaftertopcaption\s*\\begin\{(?:tabulary|tabular)"
                                 r"|\\sphinxthelongtablecaptionisattop\s*\\caption\{" + cap + r"\\strut\}", pages.get(doc, ""))
            assert len(printed) == count, f"{doc}: {len(printed)} tables captioned {caption!r}, the notebook has {count}"
        assert "pages.numbers_table(" not in pages[doc], f"{doc}: a folded cell's code printed"


def test_pdf_prints_the_folded_numbers_tables(pdf_text):
    """The PDF's text has a captioned table ("Table 5.1: The numbers behind the figure") for each
    folded numbers table."""
    tables = expected_folded_tables()
    if not tables:
        pytest.skip("no folded numbers table of the reference notebooks has a Markdown form yet")
    for caption in {c for captions in tables.values() for c in captions}:
        expected = sum(captions.get(caption, 0) for captions in tables.values())
        found = len(re.findall(r"Table \d+(?:\.\d+)*: " + re.escape(caption) + r"(?!\w)", pdf_text))
        assert found == expected, f"{found} tables captioned {caption!r} in the PDF, the notebooks have {expected}"


def test_unfold_numbers_moves_only_the_numbers_out_of_a_fold(pdf_ext):
    """A folded cell's numbers table goes after the cell, captioned with the fold's label; its code and
    other outputs stay folded; a cell that is not folded keeps its table."""
    from docutils import nodes

    def bundle(html: str, with_table: bool) -> nodes.container:
        forms = [nodes.container("", nodes.raw("", html, format="html"), mime_type="text/html")]
        if with_table:
            table = nodes.table("", nodes.tgroup("", cols=2))
            forms.append(nodes.container("", table, mime_type="text/markdown"))
        forms.append(nodes.container("", nodes.literal_block("", "slope  0.1"), mime_type="text/plain"))
        return nodes.container("", *forms, nb_element="mime_bundle")

    def cell(classes, *outputs):
        c = nodes.container("", nodes.container("", nodes.literal_block("", "pages.numbers_table({})"), classes=["cell_input"]),
                            nodes.container("", *outputs, nb_element="cell_code_output", classes=["cell_output"]),
                            nb_element="cell_code", classes=["cell", *classes])
        c["prompt_show"] = "Show the numbers behind the figure"
        return c

    section = nodes.section()
    folded = cell(["tag_hide-cell"], bundle('<table class="numbers"><tbody></tbody></table>', True),
                  bundle("<div>a figure's HTML</div>", False))
    shown = cell([], bundle('<table class="numbers"><tbody></tbody></table>', True))
    section += [folded, shown]
    assert pdf_ext.unfold_numbers(section) == 1
    assert section.children[0] is folded and section.children[2] is shown
    moved = section.children[1]
    assert moved.get("nb_element") == "mime_bundle"
    assert [t.astext() for t in moved.findall(nodes.title)] == ["The numbers behind the figure"]
    assert len([b for b in folded.findall(nodes.container) if b.get("nb_element") == "mime_bundle"]) == 1  # the other output
    assert "numbers_table" in folded.astext()  # the code stays in the fold (left out by sphinx-jupyterbook-latex)
    assert len([b for b in shown.findall(nodes.container) if b.get("nb_element") == "mime_bundle"]) == 1
