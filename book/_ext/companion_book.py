"""Sphinx hooks for the companion book: summary chapters are read after the others.

"What reproduces" (chapters/claims) renders data/claims/*.json, which the other chapters write
while they execute. Sphinx reads documents in sorted order and only re-reads changed sources, so
without these hooks the ledger page could show the rows of the previous build. Here:

* every document in ``companion_summary_docs`` is read after all the others, and
* whenever any other document is (re-)read, the summaries are re-read too.

The summary chapters themselves set ``mystnb: execution_mode: force`` in their front matter, so
jupyter-cache does not serve their old outputs (their code does not change when the data does).

The download menu of a chapter built from its MyST ``.md`` source also offers the executed notebook
(``.ipynb``): sphinx-book-theme 1.3 adds that entry only when a launch provider (Binder, Colab, ...)
is configured; :func:`_offer_executed_notebook` does the same copy without one.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

# Docstrings in this package write math as plain text (|x|, n_+, c_i1). In reStructuredText
# `|x|` is a substitution and `n_` a hyperlink target, both errors under -W. Outside inline
# literals, roles, doctest and literal blocks, such characters are escaped before numpydoc runs.
_LITERAL = re.compile(r"(``.+?``|(?::[\w:+-]+:)?`[^`]+`_{0,2})")
_TARGET = re.compile(r"(?<=[\w)\]}])_(?=[\s,.;:)\]+\-]|$)")


def escape_plain_math(lines: list[str]) -> list[str]:
    r"""Escape ``|`` and trailing ``_`` in docstring prose (not in literals, doctests or code blocks).

    >>> escape_plain_math(["x' = P_x M x / |B^T x|, n_+ tokens", "``|x|`` stays", ">>> abs(-1)  # |x|"])
    ["x' = P_x M x / \\|B^T x\\|, n\\_+ tokens", '``|x|`` stays', '>>> abs(-1)  # |x|']
    >>> escape_plain_math([r".. math:: \|V\|_{op}", r"   e^{\|A\|}", "", "after |x|"])
    ['.. math:: \\|V\\|_{op}', '   e^{\\|A\\|}', '', 'after \\|x\\|']
    """
    out, in_doctest, literal_indent = [], False, None
    for i, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if not stripped:
            in_doctest = False
            out.append(line)
            continue
        if literal_indent is not None:
            if indent > literal_indent:
                out.append(line)
                continue
            literal_indent = None
        if stripped.startswith(">>>") or in_doctest:
            in_doctest = True
            out.append(line)
            continue
        if stripped.startswith(".. math::"):  # TeX, on the directive's line and in its indented block
            out.append(line)
            literal_indent = indent
            continue
        parts = _LITERAL.split(line)
        for k in range(0, len(parts), 2):  # even parts are outside literals
            parts[k] = _TARGET.sub(r"\\_", parts[k].replace("|", "\\|"))
        out.append("".join(parts))
        if stripped.endswith("::"):
            literal_indent = indent
    return out


def _escape_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    lines[:] = escape_plain_math(lines)


def _summaries(app) -> list[str]:
    return list(app.config.companion_summary_docs)


def _outdated(app, env, added, changed, removed) -> list[str]:
    summaries = _summaries(app)
    others = (set(added) | set(changed) | set(removed)) - set(summaries)
    if not others:
        return []
    return [d for d in summaries if d in env.found_docs]


def _order(app, env, docnames: list[str]) -> None:
    summaries = _summaries(app)
    last = [d for d in summaries if d in docnames]
    docnames[:] = [d for d in docnames if d not in last] + last


def _offer_executed_notebook(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Put a notebook page's executed ``.ipynb`` beside its sources for the download menu.

    myst-nb writes every executed notebook, a text (``.md``) notebook included, to its output
    folder (``_build/jupyter_execute``). sphinx-book-theme offers ``_sources/<page>.ipynb`` in the
    download menu when ``context["ipynb_source"]`` names it, which it sets only for a launch
    provider (header_buttons/launch.py); this sets it, after the same copy, before the theme builds
    the menu (priority 500 < its 501). Pages built from an ``.ipynb`` already offer it as their
    source and are left alone, as are pages that are not notebooks.
    """
    if context.get("ipynb_source") or context.get("page_source_suffix") != ".md":
        return
    if "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    config = getattr(app.env, "mystnb_config", None)
    folder = Path(getattr(config, "output_folder", "") or Path(app.outdir).parent / "jupyter_execute")
    executed = folder.joinpath(*pagename.split("/")).with_suffix(".ipynb")
    if not executed.is_file():
        return
    target = Path(app.outdir, "_sources", *pagename.split("/")).with_suffix(".ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(executed, target)
    context["ipynb_source"] = pagename + ".ipynb"


_FOLD = re.compile(r"<(/?)details\b[^>]*>", re.I)
_IMG_SRC = re.compile(r"<img\b([^>]*?)\ssrc=\"([^\"]+)\"", re.I)


def defer_folded_images(body: str) -> str:
    """Images inside a folded block (``<details>``: a hidden cell, the CI check) load only when it is
    unfolded: their ``src`` becomes ``data-src``, which ``_static/companion-fold.js`` restores on the
    block's ``toggle`` event (and before printing). Images outside folds are left as they are.

    >>> print(defer_folded_images('<img src="a.png"><details><summary>s</summary><img alt="x" src="b.png"></details>'))
    <img src="a.png"><details><summary>s</summary><img alt="x" data-src="b.png" loading="lazy"></details>
    """
    out, depth, pos = [], 0, 0
    for m in _FOLD.finditer(body):
        chunk = body[pos:m.start()]
        out.append(_IMG_SRC.sub(lambda i: f'<img{i.group(1)} data-src="{i.group(2)}" loading="lazy"', chunk) if depth else chunk)
        out.append(m.group(0))
        depth = max(depth - 1, 0) if m.group(1) else depth + 1
        pos = m.end()
    out.append(body[pos:])
    return "".join(out)


_IMG_SHOWN = re.compile(r"<img\b(?![^>]*\b(?:loading|data-src)=)([^>]*?)\ssrc=\"([^\"]+)\"([^>]*)>", re.I)
EAGER_IMAGES = 2  # the first figures of a page load with it


def lazy_images(body: str, eager: int = EAGER_IMAGES) -> str:
    """Images after the first ``eager`` of a page load when the reader scrolls near them: their ``src``
    becomes ``data-src`` (``_static/companion-fold.js`` restores it within 1,500 px of the screen, and
    all of them before printing; ``loading="lazy"`` as well), with the image itself in a ``<noscript>``
    for a reader without scripts. A chapter's first visit fetches the figures of its first screens.

    >>> print(lazy_images('<img src="a.png"><img alt="b" src="b.png" style="w">', eager=1))
    <img src="a.png"><img alt="b" data-src="b.png" style="w" loading="lazy" class="companion-lazy"><noscript><img alt="b" src="b.png" style="w"></noscript>
    """
    seen = [0]

    def swap(m: re.Match) -> str:
        if "animations/" in m.group(2):  # a video's still frame (companion.animate) is the video's business
            return m.group(0)
        seen[0] += 1
        if seen[0] <= eager:
            return m.group(0)
        head, src, tail = m.group(1), m.group(2), m.group(3).rstrip("/ ").rstrip()
        return (f'<img{head} data-src="{src}"{tail} loading="lazy" class="companion-lazy">'
                f"<noscript>{m.group(0)}</noscript>")

    return _IMG_SHOWN.sub(swap, body)


def _defer_folded(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    if isinstance(context.get("body"), str):
        body = defer_folded_images(context["body"]) if "<details" in context["body"] else context["body"]
        context["body"] = lazy_images(body)


# Figures numbered per paper, not across the book (issue 48): paper C's second figure is "Fig. C.2", not
# "Fig. 48". A paper's chapters share its letter and count on (paper A's three chapters: A.1, A.2, ...);
# the other chapters have their own letter. Pages not listed keep Sphinx's number.
FIGURE_PREFIX = {
    "chapters/introduction": "I",
    "chapters/stability": "A", "chapters/phase_transitions": "A", "chapters/llm_probes": "A",
    "chapters/low_temperature": "B", "chapters/spectral_selection": "C", "chapters/metastable": "D",
    "chapters/your_own_dynamics": "T", "chapters/beyond": "E", "chapters/claims": "R", "chapters/status": "S",
}
_NUMBERED = re.compile(r'(<span class="(?:caption-number|std std-numref)">)Fig\. (\d+)(\s?)(</span>)')


def figure_labels(numbers: dict[str, list[int]], order: list[str], prefix: dict[str, str] = FIGURE_PREFIX) -> dict[int, str]:
    """Sphinx's book-wide figure numbers -> per-paper labels, from each page's numbers (``numbers``) in
    the reading order of the pages (``order``).

    >>> figure_labels({"chapters/stability": [3, 4], "chapters/phase_transitions": [5], "chapters/metastable": [9], "x": [7]},
    ...               ["x", "chapters/stability", "chapters/phase_transitions", "chapters/metastable"])
    {3: 'A.1', 4: 'A.2', 5: 'A.3', 9: 'D.1'}
    """
    labels, count = {}, {}
    for doc in order:
        letter = prefix.get(doc)
        if not letter:
            continue
        for n in sorted(numbers.get(doc, [])):
            count[letter] = count.get(letter, 0) + 1
            labels[n] = f"{letter}.{count[letter]}"
    return labels


def relabel_figures(html: str, labels: dict[int, str]) -> str:
    """Captions and {numref} links of ``html`` with their per-paper labels (numbers not in ``labels`` kept).

    >>> relabel_figures('<span class="caption-number">Fig. 48 </span> see <span class="std std-numref">Fig. 48</span>, paper Fig. 2', {48: "C.2"})
    '<span class="caption-number">Fig. C.2 </span> see <span class="std std-numref">Fig. C.2</span>, paper Fig. 2'
    """
    return _NUMBERED.sub(lambda m: f"{m.group(1)}Fig. {labels.get(int(m.group(2)), m.group(2))}{m.group(3)}{m.group(4)}", html)


def _relabel_built_figures(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    env = app.env
    numbers = {doc: [v[0] for v in figs.get("figure", {}).values() if v] for doc, figs in env.toc_fignumbers.items()}
    order = [app.config.root_doc] + [d for d in env.toctree_includes.get(app.config.root_doc, [])]
    seen = set(order)
    for doc in list(order):  # the toctree below each part, in reading order
        for child in env.toctree_includes.get(doc, []):
            if child not in seen:
                order.append(child)
                seen.add(child)
    order += sorted(set(numbers) - seen)
    labels = figure_labels(numbers, order)
    if not labels:
        return
    for doc in sorted(env.found_docs):  # a link to a figure may be on any page
        path = Path(app.outdir, *doc.split("/")).with_suffix(".html")
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            new = relabel_figures(text, labels)
            if new != text:
                path.write_text(new, encoding="utf-8")


def _trim_icon_script(app, exception) -> None:
    """The theme ships Font Awesome twice: its stylesheet maps every ``fa-*`` class to the webfont, and
    ``scripts/fontawesome.js`` (1.5 MB, 0.54 MB gzipped, on every page) redraws the same icons as SVG.
    The webfont alone draws them; the script is replaced by a stub (issue 48: a page's first visit)."""
    if exception is not None or app.builder.format != "html":
        return
    script = Path(app.outdir, "_static", "scripts", "fontawesome.js")
    if script.is_file() and script.stat().st_size > 10_000:
        script.write_text("/* Font Awesome's SVG script left out: the theme's stylesheet and webfont draw the icons "
                          "(book/_ext/companion_book.py). */\n", encoding="utf-8")
        Path(str(script) + ".map").unlink(missing_ok=True)


def setup(app) -> dict[str, Any]:
    app.add_config_value("companion_summary_docs", ["chapters/claims", "chapters/status"], "env")
    app.connect("env-get-outdated", _outdated)
    app.connect("env-before-read-docs", _order)
    app.connect("autodoc-process-docstring", _escape_docstring, priority=400)  # before numpydoc (500)
    app.connect("html-page-context", _offer_executed_notebook, priority=500)  # before the theme's menu (501)
    app.connect("html-page-context", _defer_folded, priority=400)
    app.connect("build-finished", _relabel_built_figures)
    app.connect("build-finished", _trim_icon_script)
    return {"parallel_read_safe": False, "parallel_write_safe": True, "version": "1"}
