"""The papers' inventory: every numbered result of each paper, and which of them no ledger row names.

``data/paper_results.json`` lists, per paper, each numbered result (theorem, proposition, figure...)
with its section, a summary and, for one not checked, the reason; :func:`coverage` and
:func:`unlisted` hold it against the ledger's rows (:mod:`companion.ledger`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

from .ledger import PAPERS
from .provenance import repo_root

__all__ = ["result_refs", "load_inventory", "coverage", "unlisted", "INVENTORY_KEYS"]


INVENTORY_KEYS = ("ref", "section", "summary", "reason")

# Each spelling of a kind of numbered result, and the one spelling the ledger uses for it.
_KINDS = (("theorem", "Thm."), ("thm", "Thm."), ("proposition", "Prop."), ("prop", "Prop."), ("lemma", "Lemma"),
          ("lem", "Lemma"), ("corollar", "Cor."), ("cor", "Cor."), ("remark", "Remark"), ("rem", "Remark"),
          ("conjecture", "Conjecture"), ("conj", "Conjecture"), ("example", "Example"), ("figure", "Fig."), ("fig", "Fig."),
          ("appendi", "App."), ("app", "App."))
_NUM = r"(?:[A-Z](?:\.\d+)+|\d+(?:\.\d+)*|[A-Z](?![A-Za-z0-9]))"  # 4.2, C.12, E.4.1, or a bare appendix letter
_ITEM = rf"{_NUM}(?:\s*(?:-|–|—|to)\s*{_NUM})?"
_REF = re.compile(
    r"(?<![A-Za-z])(?i:(?P<kind>theorems?|thms?|propositions?|props?|lemmas|lemmata|lemma|lem|corollary|corollaries"
    r"|cors?|remarks?|rems?|conjectures?|conj|examples?|figures?|figs?|appendix|appendices|app))(?![A-Za-z])\.?\s*"
    rf"(?P<items>{_ITEM}(?:\s*(?:,|and|&)\s*{_ITEM})*)")
_ITEM_RE = re.compile(rf"(?P<a>{_NUM})(?:\s*(?:-|–|—|to)\s*(?P<b>{_NUM}))?")
_MAX_RANGE = 100  # a longer "range" is a typo, not a list of results: keep its two ends


def _expand(a: str, b: str | None) -> list[str]:
    """The numbers a range ``a-b`` spans ("6-9", "E.4.1-E.4.4", "E.4.1-4"); its two ends when it is not one."""
    if b is None:
        return [a]
    pa, pb = a.split("."), b.split(".")
    if len(pb) < len(pa):  # "E.4.1-4": the end gives only the last parts
        pb = pa[: len(pa) - len(pb)] + pb
    if pa[:-1] == pb[:-1] and pa[-1].isdigit() and pb[-1].isdigit() and 0 <= int(pb[-1]) - int(pa[-1]) <= _MAX_RANGE:
        return [".".join(pa[:-1] + [str(k)]) for k in range(int(pa[-1]), int(pb[-1]) + 1)]
    return [a, ".".join(pb)]


def result_refs(where: str) -> list[str]:
    """The numbered results a ``where`` text names, each in the ledger's one spelling.

    Kinds are spelled ``"Thm."``, ``"Prop."``, ``"Lemma"``, ``"Cor."``, ``"Remark"``, ``"Conjecture"``,
    ``"Example"``, ``"Fig."``, ``"App."`` whatever the text wrote ("Theorem", "Thm", "Figures", "Appendix", ...);
    ranges ("Figures 6-9", "App. E.4.1-E.4.4") and lists ("Lemmas 6.3 and 6.4") are spelled out.
    Sections and equations ("Sec. 4.1", "eq. (20)") name no numbered result; a panel ("Fig. 4(b)")
    names its figure.

    Parameters
    ----------
    where : str
        The ``where`` field of a ledger row, or an inventory ``ref``.

    Returns
    -------
    list of str
        The refs in the order the text names them, each once.

    Examples
    --------
    >>> result_refs("Proposition 3.1, eq. (14)"), result_refs("Prop 3.10")
    (['Prop. 3.1'], ['Prop. 3.10'])
    >>> result_refs("Theorems 4.2, 4.3 and 4.5; Corollary B.8")
    ['Thm. 4.2', 'Thm. 4.3', 'Thm. 4.5', 'Cor. B.8']
    >>> result_refs("Sec. 5, Figures 6-9"), result_refs("App. E.4.1-E.4.4, Fig. 4(b)")
    (['Fig. 6', 'Fig. 7', 'Fig. 8', 'Fig. 9'], ['App. E.4.1', 'App. E.4.2', 'App. E.4.3', 'App. E.4.4', 'Fig. 4'])
    >>> result_refs("Sec. 4.1, eq. (20)"), result_refs("reviews; Thm on the linear phase")
    ([], [])
    >>> result_refs("Sec. 2, Example 3"), result_refs("Sec. 2 (the example, probably its 3)")
    (['Example 3'], [])
    """
    if not isinstance(where, str):
        raise TypeError(f"where must be a str, got {type(where).__name__}")
    out: list[str] = []
    for m in _REF.finditer(where):
        word = m.group("kind").lower()
        kind = next(canon for prefix, canon in _KINDS if word.startswith(prefix))
        for item in _ITEM_RE.finditer(m.group("items")):
            for num in _expand(item.group("a"), item.group("b")):
                if kind != "App." and not any(c.isdigit() for c in num):
                    continue  # a bare letter is an appendix, never a theorem's number
                ref = f"{kind} {num}"
                if ref not in out:
                    out.append(ref)
    return out


def load_inventory(root: Path | None = None) -> dict[str, list[dict[str, str]]]:
    """The numbered results of each paper, from ``data/paper_results.json``, checked.

    The file maps each paper (``"A"`` to ``"D"``) to a list of entries ``{"ref", "section", "summary",
    "reason"}``: ``ref`` in the spelling of :func:`result_refs`, unique within its paper; ``reason`` says
    why the result has no numerical check and is shown only while no ledger row names it.

    Parameters
    ----------
    root : Path, optional
        Repository root (default: :func:`companion.provenance.repo_root`).

    Returns
    -------
    dict
        Paper -> list of entries, in the file's order.

    Examples
    --------
    >>> inv = load_inventory()
    >>> sorted(inv) == list(PAPERS), {"ref": "Thm. 4.2"} in [{"ref": e["ref"]} for e in inv["A"]]
    (True, True)
    """
    path = (root or repo_root()) / "data" / "paper_results.json"
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or sorted(data) != sorted(PAPERS):
        got = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path}: must map exactly the papers {PAPERS}, got {got}")
    for paper, entries in data.items():
        seen: set[str] = set()
        for e in entries:
            if not isinstance(e, dict) or sorted(e) != sorted(INVENTORY_KEYS):
                raise ValueError(f"{path}: paper {paper}: each entry needs exactly the keys {INVENTORY_KEYS}, got {e!r}")
            if not all(isinstance(e[k], str) and e[k].strip() for k in INVENTORY_KEYS):
                raise ValueError(f"{path}: paper {paper}, {e['ref']!r}: every field must be a non-empty string")
            if result_refs(e["ref"]) != [e["ref"]]:
                raise ValueError(f"{path}: paper {paper}: ref {e['ref']!r} is not one result in the ledger's spelling")
            if e["ref"] in seen:
                raise ValueError(f"{path}: paper {paper}: ref {e['ref']!r} is listed twice")
            seen.add(e["ref"])
    return data


def _named(rows: Iterable[dict[str, Any]]) -> dict[str, set[str]]:
    """Paper -> the refs its rows' ``where`` fields name."""
    named: dict[str, set[str]] = {p: set() for p in PAPERS}
    for r in rows:
        if not isinstance(r, dict):
            raise TypeError(f"rows must be ledger rows (dicts), got {type(r).__name__}")
        if r.get("paper") not in PAPERS:
            raise ValueError(f"row {r.get('id')!r}: paper must be one of {PAPERS}, got {r.get('paper')!r}")
        named[r["paper"]].update(result_refs(r.get("where") or ""))
    return named


def _covers(name: str, ref: str) -> bool:
    """A named ref covers an entry when it is the entry, or the appendix holding it ("App. C" holds "App. C.2")."""
    return name == ref or (name.startswith("App. ") and ref.startswith(name + "."))


def coverage(rows: Iterable[dict[str, Any]],
             inventory: dict[str, list[dict[str, str]]]) -> dict[str, list[dict[str, str]]]:
    """Per paper, the inventory entries that no ledger row covers.

    A row covers an entry when the row's ``paper`` is the entry's paper and its ``where`` names the
    entry's ``ref`` (spellings normalised by :func:`result_refs`, so "Figures 6-9" covers "Fig. 7" and
    "Prop. 3.10" does not cover "Prop. 3.1"), or names the appendix that holds it ("App. C" covers
    "App. C.2"). A row counts whatever its verdict, not-checkable included: it carries its own reason.

    Parameters
    ----------
    rows : iterable of dict
        Ledger rows (:func:`load`), each with ``paper`` and ``where``.
    inventory : dict
        Paper -> entries, as from :func:`load_inventory`.

    Returns
    -------
    dict
        Every paper of :data:`PAPERS` -> its uncovered entries, in inventory order.

    Examples
    --------
    >>> inv = {"A": [{"ref": "Prop. 3.1"}, {"ref": "Fig. 7"}, {"ref": "Lemma C.12"}], "B": [{"ref": "App. C.2"}]}
    >>> rows = [{"paper": "A", "where": "Figures 6-9"}, {"paper": "A", "where": "Prop. 3.10"},
    ...         {"paper": "B", "where": "Fig. 2, App. C"}]
    >>> {p: [e["ref"] for e in left] for p, left in coverage(rows, inv).items()}
    {'A': ['Prop. 3.1', 'Lemma C.12'], 'B': [], 'C': [], 'D': []}
    """
    if not isinstance(inventory, dict):
        raise TypeError(f"inventory must be a dict paper -> entries, got {type(inventory).__name__}")
    named = _named(rows)
    return {p: [e for e in inventory.get(p, []) if not any(_covers(n, e["ref"]) for n in named[p])] for p in PAPERS}


def unlisted(rows: Iterable[dict[str, Any]], inventory: dict[str, list[dict[str, str]]]) -> dict[str, list[str]]:
    """Per paper, the refs that ledger rows name but the inventory does not list (an appendix that holds
    listed entries counts as listed).

    Parameters
    ----------
    rows : iterable of dict
        Ledger rows, each with ``paper`` and ``where``.
    inventory : dict
        Paper -> entries, as from :func:`load_inventory`.

    Returns
    -------
    dict
        Every paper of :data:`PAPERS` -> the sorted refs missing from its inventory.

    Examples
    --------
    >>> inv = {"B": [{"ref": "Thm. 1"}, {"ref": "App. C.2"}]}
    >>> unlisted([{"paper": "B", "where": "Thm. 1, Prop. 6, App. C"}], inv)
    {'A': [], 'B': ['Prop. 6'], 'C': [], 'D': []}
    """
    if not isinstance(inventory, dict):
        raise TypeError(f"inventory must be a dict paper -> entries, got {type(inventory).__name__}")
    named = _named(rows)
    listed = {p: [e["ref"] for e in inventory.get(p, [])] for p in PAPERS}
    return {p: sorted(n for n in named[p] if not any(_covers(n, ref) for ref in listed[p])) for p in PAPERS}
