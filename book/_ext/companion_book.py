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


def setup(app) -> dict[str, Any]:
    app.add_config_value("companion_summary_docs", ["chapters/claims", "chapters/status"], "env")
    app.connect("env-get-outdated", _outdated)
    app.connect("env-before-read-docs", _order)
    app.connect("autodoc-process-docstring", _escape_docstring, priority=400)  # before numpydoc (500)
    app.connect("html-page-context", _offer_executed_notebook, priority=500)  # before the theme's menu (501)
    return {"parallel_read_safe": False, "parallel_write_safe": True, "version": "1"}
