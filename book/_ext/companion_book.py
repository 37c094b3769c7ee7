"""Sphinx hooks for the companion book: summary chapters are read after the others.

"What reproduces" (chapters/claims) renders data/claims/*.json, which the other chapters write
while they execute. Sphinx reads documents in sorted order and only re-reads changed sources, so
without these hooks the ledger page could show the rows of the previous build. Here:

* every document in ``companion_summary_docs`` is read after all the others, and
* whenever any other document is (re-)read, the summaries are re-read too.

The summary chapters themselves set ``mystnb: execution_mode: force`` in their front matter, so
jupyter-cache does not serve their old outputs (their code does not change when the data does).
"""
from __future__ import annotations

from typing import Any


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


def setup(app) -> dict[str, Any]:
    app.add_config_value("companion_summary_docs", ["chapters/claims", "chapters/status"], "env")
    app.connect("env-get-outdated", _outdated)
    app.connect("env-before-read-docs", _order)
    return {"parallel_read_safe": False, "parallel_write_safe": True, "version": "1"}
