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
