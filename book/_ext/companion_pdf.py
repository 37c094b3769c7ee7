"""The book as a PDF (``make pdf``): what the LaTeX builder prints, and the landing page's link to it.

LaTeX cannot show a notebook's HTML outputs, so myst-nb picks another form of each output for the
``latex`` builder (text/markdown, then text/plain). The verdict boxes and the numbers tables carry
their own Markdown (below); two kinds of output carry only IPython's placeholder
``<IPython.core.display.HTML object>``, which would be printed as such:

* the interactive claims table (itables): its rows are embedded in the page's script as JSON
  (``data_json``); :class:`PrintItables` prints them as a table (a ``longtable``), the cells' maths
  typeset and each result linked to its section, as on the page;
* the scripts that load DataTables (``init_notebook_mode``): nothing to print, dropped.

Both run before myst-nb chooses a form (:class:`myst_nb.sphinx_.SelectMimeType`, priority 4), for
the latex builder only.

The verdict boxes and the numbers tables (``companion.pages``) carry a Markdown form too, which the
latex builder prints: each box with its record and the paper's quoted words, each table as a table.
A PDF cannot unfold, and sphinx-jupyterbook-latex leaves a folded cell out whole (``hide-cell``: code
and outputs; ``hide-output``: the outputs): :class:`UnfoldNumbers` moves the numbers tables of such
cells out after them, captioned with the fold's label ("The numbers behind the figure"), so the PDF
prints the numbers and still leaves out the code.

The landing page links to the PDF with the role ``{pdf-link}`text``` only when ``make pdf`` has
built it (``companion_pdf_file``, relative to the book's folder): the HTML build then copies it to
the site's root as ``companion_pdf_name``. Without it the role says how to build it, so a site
never links to a file it lacks; a page using the role is re-read when the PDF appears or changes.
"""
from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

# IPython's text/plain of an object with only an HTML form.
PLACEHOLDER = re.compile(r"^<IPython\.core\.display\.\w+ object>$")
_DT_ARGS = re.compile(r"let\s+dt_args\s*=\s*")
_MATH = re.compile(r"^\\\((.*)\\\)$|^\\\[(.*)\\\]$|^\$(.*)\$$", re.S)


def _bundle_forms(bundle: nodes.Element) -> dict[str, nodes.Element]:
    return {c.get("mime_type", ""): c for c in bundle.children}


def _text(container: nodes.Element | None) -> str:
    return container.astext().strip() if container is not None else ""


def itables_args(html: str) -> dict[str, Any] | None:
    """The DataTables arguments itables embeds in a page (``let dt_args = {...}``), or None.

    >>> itables_args('<script>let dt_args = {"data_json": "[[1, 2]]", "order": []};</script>')["data_json"]
    '[[1, 2]]'
    >>> itables_args("<div>no table</div>") is None
    True
    """
    m = _DT_ARGS.search(html)
    if not m:
        return None
    try:
        args, _ = json.JSONDecoder().raw_decode(html, m.end())
    except ValueError:
        return None
    return args if isinstance(args, dict) else None


class _Inline(HTMLParser):
    """A table cell's HTML as docutils paragraphs: text, maths (MathJax's ``\\(...\\)`` spans),
    bold, italics, code and links; ``<br>`` starts a new paragraph."""

    def __init__(self, link):
        super().__init__(convert_charrefs=True)
        self.link = link
        self.paragraphs = [nodes.paragraph()]
        self.stack: list[nodes.Element] = [self.paragraphs[0]]
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "br":
            self.paragraphs.append(nodes.paragraph())
            self.stack = [self.paragraphs[-1]]
            return
        node: nodes.Element | None = None
        if tag == "span" and "math" in (attrs.get("class") or "").split():
            node = nodes.math()
        elif tag in ("b", "strong"):
            node = nodes.strong()
        elif tag in ("i", "em", "small"):
            node = nodes.emphasis()
        elif tag == "code":
            node = nodes.literal()
        elif tag == "a" and attrs.get("href"):
            node = self.link(attrs["href"])
        self.tags.append(tag)
        if node is not None:
            node["companion_tag"] = tag
            self.stack[-1] += node
            self.stack.append(node)

    def handle_endtag(self, tag):
        if tag == "br" or tag not in self.tags:
            return
        while self.tags:
            open_tag = self.tags.pop()
            if len(self.stack) > 1 and self.stack[-1].get("companion_tag") == open_tag:
                done = self.stack.pop()
                if isinstance(done, nodes.math):
                    m = _MATH.match(done.astext().strip())
                    if m:
                        tex = next(g for g in m.groups() if g is not None)
                        done.children = []
                        done += nodes.Text(tex)
            if open_tag == tag:
                break

    def handle_data(self, data):
        if data:
            self.stack[-1] += nodes.Text(data)


def html_cell(html: str, link) -> list[nodes.paragraph]:
    parser = _Inline(link)
    parser.feed(str(html))
    parser.close()
    return [p for p in parser.paragraphs if p.astext().strip()] or [nodes.paragraph()]


def _link_from(docname: str):
    """A function giving the node for a link of the page ``docname``: a page of the book (``x.html#y``)
    becomes a reference LaTeX resolves to that section; anything else keeps its text only."""
    folder = docname.rsplit("/", 1)[0] + "/" if "/" in docname else ""

    def link(href: str) -> nodes.Element:
        m = re.match(r"^([\w./-]*?)(?:\.html)?(?:#([\w.:-]+))?$", href)
        if href.startswith(("http://", "https://")):
            return nodes.reference(refuri=href)
        if m and (m.group(1) or m.group(2)):
            page = (folder + m.group(1)) if m.group(1) else docname
            return nodes.reference(refuri="%" + page + ("#" + m.group(2) if m.group(2) else ""), internal=True)
        return nodes.inline()

    return link


def itables_table(args: dict[str, Any], docname: str) -> nodes.table | None:
    """The rows of an itables table (its ``data_json`` and header) as a docutils table."""
    try:
        rows = json.loads(args["data_json"])
    except (KeyError, TypeError, ValueError):
        return None
    head = re.search(r"<thead>(.*?)</thead>", args.get("table_html", ""), re.S)
    header = re.findall(r"<th[^>]*>(.*?)</th>", head.group(1), re.S) if head else []
    ncols = max([len(header)] + [len(r) for r in rows]) if (rows or header) else 0
    if not ncols:
        return None
    # Column widths: those the page sets (percent), the rest shared equally.
    widths: dict[int, float] = {}
    for spec in args.get("columnDefs", []):
        w = str(spec.get("width", "")).rstrip("%")
        for t in spec.get("targets", []):
            if isinstance(t, int) and w.replace(".", "", 1).isdigit():
                widths[t] = float(w)
    link = _link_from(docname)
    rest = [i for i in range(ncols) if i not in widths]
    if rest:  # the columns the page leaves to the browser: shared by their text (column_widths)
        texts = [[nodes.paragraph("", "", *html_cell(str(c), link)).astext() for c in r] for r in [header] + rows]
        by_text = column_widths([[r[i] for i in rest if i < len(r)] for r in texts])
        left = max(100.0 - sum(widths.values()), 5.0 * len(rest))
        for i, w in zip(rest, by_text):
            widths[i] = left * w / sum(by_text)
    table = nodes.table(classes=["longtable", "colwidths-given", "companion-itables"])
    tgroup = nodes.tgroup(cols=ncols)
    table += tgroup
    for i in range(ncols):
        tgroup += nodes.colspec(colwidth=max(1, round(widths[i])))
    if header:
        thead = nodes.thead()
        tgroup += thead
        row = nodes.row()
        for h in header + [""] * (ncols - len(header)):
            entry = nodes.entry()
            entry.extend(html_cell(h, link))
            row += entry
        thead += row
    tbody = nodes.tbody()
    tgroup += tbody
    for r in rows:
        row = nodes.row()
        for cell in list(r) + [""] * (ncols - len(r)):
            entry = nodes.entry()
            entry.extend(html_cell("" if cell is None else str(cell), link))
            row += entry
        tbody += row
    return table


def _docname(node: nodes.Node, default: str) -> str:
    """The page a node comes from: the LaTeX builder joins every page into one tree, each page
    under a ``start_of_file`` node that names it."""
    while node is not None:
        if isinstance(node, addnodes.start_of_file):
            return node["docname"]
        node = node.parent
    return default


class PrintItables(SphinxPostTransform):
    """Outputs with nothing but IPython's placeholder as text: itables tables printed as tables,
    the rest (scripts) dropped (latex builder only, before myst-nb picks an output's form)."""

    default_priority = 3
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        bundles = [n for n in self.document.findall(nodes.container) if n.get("nb_element") == "mime_bundle"]
        for bundle in bundles:
            forms = _bundle_forms(bundle)
            if "text/markdown" in forms or "text/latex" in forms or any(k.startswith("image/") for k in forms):
                continue
            plain = _text(forms.get("text/plain"))
            if plain and not PLACEHOLDER.match(plain):
                continue
            args = itables_args(_text(forms.get("text/html")))
            table = itables_table(args, _docname(bundle, self.env.docname)) if args else None
            if table is not None:
                bundle.replace_self(table)
            else:
                bundle.parent.remove(bundle)


# A folded cell (myst-nb's tag classes) and the HTML a numbers table (companion.pages.numbers_table) opens with.
FOLDED = ("tag_hide-cell", "tag_hide-output")
_NUMBERS_HTML = re.compile(r'^\s*<table class="numbers"')


def fold_caption(prompt: Any) -> str | None:
    """The caption of a folded cell's table in print: its fold's label without "Show" (None for
    myst-nb's default label, which names no content).

    >>> fold_caption("Show the numbers behind the figure"), fold_caption("Show code cell {type}")
    ('The numbers behind the figure', None)
    """
    words = str(prompt or "").strip()
    if not words.startswith("Show ") or "{" in words or words.startswith("Show code cell"):
        return None
    rest = words[len("Show "):]
    return rest[:1].upper() + rest[1:]


def unfold_numbers(document: nodes.Element) -> int:
    """Move the numbers tables out of every folded code cell of ``document`` to just after the cell, a
    Markdown table captioned (:func:`fold_caption`); return how many moved."""
    moved = 0
    for cell in list(document.findall(nodes.container)):
        if cell.get("nb_element") != "cell_code" or not set(FOLDED) & set(cell["classes"]):
            continue
        tables = [b for b in cell.findall(nodes.container) if b.get("nb_element") == "mime_bundle"
                  and _NUMBERS_HTML.match(_text(_bundle_forms(b).get("text/html")))]
        caption = fold_caption(cell.get("prompt_show"))
        at = cell.parent.index(cell)
        for i, bundle in enumerate(tables):
            bundle.parent.remove(bundle)
            table = next(iter(_bundle_forms(bundle).get("text/markdown", nodes.container()).findall(nodes.table)), None)
            if caption and table is not None and not any(isinstance(c, nodes.title) for c in table.children):
                table.insert(0, nodes.title("", caption))
            cell.parent.insert(at + 1 + i, bundle)
            moved += 1
    return moved


class UnfoldNumbers(SphinxPostTransform):
    """The numbers tables of folded cells printed after them (:func:`unfold_numbers`; latex builder
    only, at priority 3: before myst-nb picks a form and sphinx-jupyterbook-latex drops the folded cells)."""

    default_priority = 3
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        unfold_numbers(self.document)


_TAG = re.compile(r"\\tag\*?\{")


def tagged_display(tex: str) -> str:
    r"""LaTeX for a display with its own ``\tag``: Sphinx wraps an unlabelled display in
    ``equation*`` + ``split``, where amsmath forbids ``\tag``; ``gather*`` (``align*`` when it
    aligns at ``&``) allows one per line, as MathJax shows it on the page.

    >>> print(tagged_display(r"a = b \tag{15}"))
    \begin{gather*}
    a = b \tag{15}
    \end{gather*}
    """
    env = "align*" if "&" in tex else "gather*"
    return f"\\begin{{{env}}}\n{tex.strip()}\n\\end{{{env}}}"


class TaggedDisplays(SphinxPostTransform):
    """Displays that carry ``\tag{...}`` (equation numbers as the paper prints them) in an
    environment that allows it (latex builder only)."""

    default_priority = 3
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(nodes.math_block)):
            if node.get("nowrap") or node.get("label") or not _TAG.search(node.astext()):
                continue
            node.replace_self(nodes.raw("", tagged_display(node.astext()), format="latex"))


LINE_CHARS = 95  # characters of a table's text across the page (A4, 10 pt)


def column_widths(cells: list[list[str]]) -> list[int]:
    """Widths (percent) for the columns of a long table from their text: each column gets its
    typical cell length, and never less than its longest word; a cell's length counts up to 80.

    >>> column_widths([["A", "a long statement of the claim"], ["B", "another one"]])
    [9, 91]
    """
    ncols = max(len(r) for r in cells)
    need, floor = [], []
    for j in range(ncols):
        col = [r[j] for r in cells if j < len(r)]
        longest_word = max((len(w) for c in col for w in c.split()), default=1)
        typical = sorted(min(len(c), 80) for c in col)[len(col) * 3 // 4] if col else 1
        need.append(max(longest_word, typical, 3))
        floor.append(100 * (min(longest_word, 30) + 2) / LINE_CHARS)  # its longest word on one line
    total = sum(need)
    pct = [max(f, 100 * n / total) for n, f in zip(need, floor)]
    return [max(1, round(100 * p / sum(pct))) for p in pct]


class LongTableWidths(SphinxPostTransform):
    """Long tables (over 30 rows: LaTeX's ``longtable``) without widths get widths from their text,
    so their columns wrap within the page (Sphinx gives them unbreakable ``l`` columns); latex only."""

    default_priority = 5
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        for table in list(self.document.findall(nodes.table)):
            if "colwidths-given" in table["classes"]:
                continue
            rows = [r for r in table.findall(nodes.row)]
            tgroups = [t for t in table.children if isinstance(t, nodes.tgroup)]
            if len(tgroups) != 1 or (len(rows) <= 30 and "longtable" not in table["classes"]):
                continue
            cells = [[e.astext() for e in r.children if isinstance(e, nodes.entry)] for r in rows]
            specs = [c for c in tgroups[0].children if isinstance(c, nodes.colspec)]
            if not cells or any(len(r) != len(specs) for r in cells):
                continue  # merged cells: left to Sphinx
            for spec, width in zip(specs, column_widths(cells)):
                spec["colwidth"] = width
            table["classes"].append("colwidths-given")


# A backslash escape Python read in a docstring that was meant for TeX (``"\frac"`` is a form feed
# and "rac"): the control character back as the escape it came from.
_LOST_BACKSLASH = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\v": "\\v", "\t": "\\t", "\r": "\\r"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def repair_tex(tex: str) -> str:
    r"""TeX with the escapes a non-raw Python string turned into control characters restored.

    >>> repair_tex("\frac{1}{2} \approx \beta + \text{x}")
    '\\frac{1}{2} \\approx \\beta + \\text{x}'
    """
    return "".join(_LOST_BACKSLASH.get(c, c) for c in tex)


class ControlCharacters(SphinxPostTransform):
    """Control characters, which XeLaTeX refuses ("invalid character"): in maths the backslash
    escape they came from (see :func:`repair_tex`), elsewhere dropped (latex builder only)."""

    default_priority = 5
    builders = ("latex",)

    def run(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(nodes.Text)):
            text = str(node)
            if not (_CONTROL.search(text) or ("\t" in text and isinstance(node.parent, (nodes.math, nodes.math_block)))):
                continue
            if isinstance(node.parent, (nodes.math, nodes.math_block)):
                new = repair_tex(text)
            else:
                new = _CONTROL.sub("", text)
            node.parent.replace(node, nodes.Text(new))


# --- the landing page's link ---------------------------------------------------------------------

def _pdf(app) -> Path:
    return Path(app.srcdir, app.config.companion_pdf_file)


def _pdf_state(app) -> tuple[bool, int, int]:
    p = _pdf(app)
    if not p.is_file():
        return (False, 0, 0)
    st = p.stat()
    return (True, st.st_size, int(st.st_mtime))


def pdf_link_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{pdf-link}`text```: a link to the PDF when it is built (HTML builds), else how to build it."""
    env = inliner.document.settings.env
    app = env.app
    docs = getattr(env, "companion_pdf_docs", None)
    if docs is None:
        docs = env.companion_pdf_docs = {}
    state = _pdf_state(app)
    docs[env.docname] = state
    if app.builder.format != "html":
        return [], []
    if state[0]:
        size = state[1] / 2**20
        up = "../" * env.docname.count("/")
        ref = nodes.reference(rawtext, text, refuri=up + app.config.companion_pdf_name)
        return [ref, nodes.Text(f" ({size:.1f} MB): every chapter, figure, verdict and table, the numbers behind each figure included; what the site folds besides (code, CI checks) stays on the site.")], []
    return [nodes.Text(f"{text}: not built with this site; "), nodes.literal(text="make pdf"), nodes.Text(" builds it.")], []


def _outdated(app, env, added, changed, removed) -> list[str]:
    docs = getattr(env, "companion_pdf_docs", {}) or {}
    state = _pdf_state(app)
    return [d for d, s in docs.items() if tuple(s) != state and d in env.found_docs]


def _purge(app, env, docname) -> None:
    getattr(env, "companion_pdf_docs", {}).pop(docname, None)


def _merge(app, env, docnames, other) -> None:
    env.companion_pdf_docs = {**getattr(env, "companion_pdf_docs", {}), **getattr(other, "companion_pdf_docs", {})}


def _copy_pdf(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir, app.config.companion_pdf_name)
    src = _pdf(app)
    if src.is_file():
        shutil.copy2(src, target)
    elif target.exists():
        target.unlink()


def setup(app) -> dict[str, Any]:
    app.add_config_value("companion_pdf_file", "_build/pdf/book.pdf", "env")
    app.add_config_value("companion_pdf_name", "companion-book.pdf", "env")
    app.add_role("pdf-link", pdf_link_role)
    app.add_post_transform(PrintItables)
    app.add_post_transform(UnfoldNumbers)
    app.add_post_transform(TaggedDisplays)
    app.add_post_transform(LongTableWidths)
    app.add_post_transform(ControlCharacters)
    app.connect("env-get-outdated", _outdated)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("build-finished", _copy_pdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
