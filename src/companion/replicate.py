"""A stored full-profile result recomputed on another processor, against the stored one.

A replicate is what ``python -m companion run NAME --profile full --out data/replicates/<label>``
stores on a machine other than the stored result's, with the same code, seeds and data; it is
verified when loaded like any result (:func:`companion.store.load_run`). Where the two differ, only
the floating-point kernels did (their order of summation), so the difference is rounding, grown by
the computation. This module lines the two up: verdict by verdict and, for the LoRA fine-tunes, run
by run. Nothing here computes an experiment.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .provenance import repo_root
from .store import load_run

__all__ = ["replicates", "processor_of", "verdicts", "departure", "training_runs", "departures", "seed_spread"]


def replicates(name: str, root: Path | str | None = None) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Every verified full-profile replicate of ``name`` under ``data/replicates/<label>/``:
    ``(label, result, meta)``, sorted by label.

    Examples
    --------
    >>> import tempfile
    >>> replicates("llm-training-indomain", tempfile.mkdtemp())
    []
    """
    base = (Path(root) if root is not None else repo_root()) / "data" / "replicates"
    found = []
    for folder in sorted(p for p in base.glob("*") if p.is_dir()):
        loaded = load_run(name, "full", folder=folder)
        if loaded is not None:
            found.append((folder.name, *loaded))
    return found


def processor_of(meta: Mapping[str, Any], root: Path | str | None = None) -> str:
    """The processor a result was computed on: its provenance's ``processor``; for a result stored before
    provenance recorded one, the processor ``bench/full_profiles.py`` recorded for the same machine
    string; else ``"not recorded"``.

    Examples
    --------
    >>> processor_of({"processor": "AMD EPYC, AVX512", "machine": "m"})
    'AMD EPYC, AVX512'
    >>> import tempfile
    >>> processor_of({"machine": "m"}, tempfile.mkdtemp())
    'not recorded'
    """
    if meta.get("processor"):
        return str(meta["processor"])
    base = Path(root) if root is not None else repo_root()
    for path in sorted((base / "bench" / "results").glob("*-*/full-profiles/*.json")):
        part = json.loads(path.read_text())
        if part.get("cpu") and part.get("provenance", {}).get("machine") == meta.get("machine"):
            return str(part["cpu"])
    return "not recorded"


def verdicts(stored: Mapping[str, Any], replica: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ledger rows of two results' provenance (``meta["claims"]``), row by row, those in both:
    ``id``, ``stored`` and ``replica`` (the verdicts), ``measured`` and ``uncertainty`` (pairs: stored, replica).

    Examples
    --------
    >>> a = {"claims": [{"id": "x", "status": "reproduced", "measured": 0.8, "uncertainty": [0.4, 0.9]}]}
    >>> b = {"claims": [{"id": "x", "status": "partly", "measured": 0.3}]}
    >>> verdicts(a, b)
    [{'id': 'x', 'stored': 'reproduced', 'replica': 'partly', 'measured': (0.8, 0.3), 'uncertainty': ([0.4, 0.9], None)}]
    """
    other = {c["id"]: c for c in replica.get("claims", [])}
    return [{"id": c["id"], "stored": c["status"], "replica": other[c["id"]]["status"],
             "measured": (c.get("measured"), other[c["id"]].get("measured")),
             "uncertainty": (c.get("uncertainty"), other[c["id"]].get("uncertainty"))}
            for c in stored.get("claims", []) if c["id"] in other]


def departure(a: np.ndarray, b: np.ndarray, tol: float = 1e-6) -> int | None:
    """Index of the first entry where ``a`` and ``b`` differ by more than ``tol`` relative; None if none does.

    Examples
    --------
    >>> departure(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.1]))
    2
    >>> departure(np.ones(3), np.ones(3)) is None
    True
    """
    far = np.abs(a - b) > tol * np.maximum(np.abs(a), np.abs(b))
    return int(np.argmax(far)) if far.any() else None


def training_runs(stored: Mapping[str, Any], replica: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Run by run, two LoRA training results (``result["runs"][rank]``: ``seeds`` (S,), ``step`` (C,),
    ``ppl_base`` (S, C), ``drift`` (S, C, L)): ``rank``, ``seed``, ``departs`` (the first checkpoint's step
    at which the base-domain perplexities differ by more than 1e-6 relative; None: never), and the final
    forgetting :math:`\\ln(\\mathrm{ppl}/\\mathrm{ppl}_0)` and last-layer drift of each, as pairs
    ``forgetting`` and ``drift`` (stored, replica). Runs in both only.

    Examples
    --------
    >>> run = lambda end: {"seeds": np.array([0]), "step": np.array([0, 5, 11]),
    ...                    "ppl_base": np.array([[10.0, 12.0, end]]), "drift": np.full((1, 3, 2), 0.5)}
    >>> [row] = training_runs({"runs": {4: run(20.0)}}, {"runs": {4: run(30.0)}})
    >>> row["departs"], [round(f, 4) for f in row["forgetting"]]   # ln 2, ln 3
    (11, [0.6931, 1.0986])
    """
    rows = []
    for r, run in stored["runs"].items():
        other = replica["runs"].get(r)
        if other is None:
            continue
        seeds_b = np.asarray(other["seeds"]).tolist()
        for i, s in enumerate(np.asarray(run["seeds"]).tolist()):
            if s not in seeds_b:
                continue
            j = seeds_b.index(s)
            pa, pb = np.asarray(run["ppl_base"], float)[i], np.asarray(other["ppl_base"], float)[j]
            k = departure(pa, pb)
            da, db = np.asarray(run["drift"], float)[i, -1, -1], np.asarray(other["drift"], float)[j, -1, -1]
            rows.append({"rank": int(r), "seed": int(s),
                         "departs": None if k is None else int(np.asarray(run["step"])[k]),
                         "forgetting": (float(np.log(pa[-1] / pa[0])), float(np.log(pb[-1] / pb[0]))),
                         "drift": (float(da), float(db))})
    return rows


def departures(rows: list[dict[str, Any]]) -> list[int]:
    """The steps at which the runs of :func:`training_runs` parted, sorted; the runs that never did left out.

    Examples
    --------
    >>> departures([{"departs": 22}, {"departs": None}, {"departs": 5}])
    [5, 22]
    """
    return sorted(row["departs"] for row in rows if row["departs"] is not None)


def seed_spread(rows: list[dict[str, Any]], key: str) -> float:
    """Standard deviation over seeds of the stored ``key`` (``"forgetting"`` or ``"drift"``) within a rank,
    averaged over the ranks: the scale a host difference is read against.

    Examples
    --------
    >>> rows = [{"rank": 1, "forgetting": (0.0, 9.0)}, {"rank": 1, "forgetting": (2.0, 9.0)},
    ...         {"rank": 4, "forgetting": (1.0, 9.0)}, {"rank": 4, "forgetting": (1.0, 9.0)}]
    >>> round(seed_spread(rows, "forgetting"), 4)
    0.7071
    """
    ranks = sorted({row["rank"] for row in rows})
    return float(np.mean([np.std([row[key][0] for row in rows if row["rank"] == r], ddof=1) for r in ranks]))
