"""Every stored full profile re-run alone and timed (issue 32, item 3). Not a test: writes timings.

Each experiment's full profile is run as ``python -m companion run NAME --profile full`` in a child
process, one at a time, into a scratch folder (the stored results under data/results are left as
they are), and the child's wall time, CPU time (user + system, from ``wait4``) and peak resident
memory are recorded with the load average before and after, the commit and whether the source was
modified. The rerun is also compared with the stored result: how many of its ledger rows have the
same verdict, and the largest relative difference of their measured numbers (a stored result made
by older code may differ; the number says by how much).

One part per experiment, written atomically into ``--out`` as it finishes: a killed run resumes
with the experiments that have no part yet (``--again`` reruns them). ``--report`` prints the
table, with each chapter's total, from the parts alone.

Usage: python bench/full_profiles.py --out DIR [--chapter SLUG ...] [--skip NAME ...] [--only NAME ...]
                                     [--again] [--report] [--store]

``--store``: each successful rerun replaces the stored result (verified, through ``pack`` and ``store``).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from companion.provenance import atomic_write_text, processor, provenance
from companion.registry import registry
from companion.store import load_run

# Cheapest chapters first, so that an interrupted run leaves whole chapters measured.
ORDER = ("introduction", "phase_transitions", "beyond", "metastable", "spectral_selection", "low_temperature",
         "stability", "llm_probes")


def rerun_differences(stored: list[dict], new: list[dict]) -> dict:
    """Stored ledger rows against a rerun's: rows compared, verdicts alike, largest relative difference.

    >>> a = [{"id": "x", "status": "reproduced", "measured": 2.0}, {"id": "y", "status": "partly", "measured": 1.0}]
    >>> b = [{"id": "x", "status": "reproduced", "measured": 2.2}, {"id": "y", "status": "reproduced", "measured": 1.0}]
    >>> d = rerun_differences(a, b)
    >>> d["rows"], d["same_verdict"], round(d["max_rel_diff"], 6), d["changed"]
    (2, 1, 0.090909, ['y: partly -> reproduced'])
    """
    old = {r["id"]: r for r in stored}
    rows, same, worst, changed = 0, 0, 0.0, []
    for r in new:
        o = old.get(r["id"])
        if o is None:
            continue
        rows += 1
        if o["status"] == r["status"]:
            same += 1
        else:
            changed.append(f"{r['id']}: {o['status']} -> {r['status']}")
        a, b = o.get("measured"), r.get("measured")
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isfinite(a) and math.isfinite(b):
            worst = max(worst, abs(a - b) / max(abs(a), abs(b), 1e-300) if a != b else 0.0)
    return {"rows": rows, "same_verdict": same, "max_rel_diff": worst, "changed": changed}


def run_alone(name: str, scratch: Path) -> dict:
    """One full profile in a child process: wall, CPU and peak memory of the child, and its outcome."""
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "companion", "run", name, "--profile", "full", "--out", str(scratch)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = child.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    return {"rc": rc, "wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_gb": round(usage.ru_maxrss / 2**20, 2),  # ru_maxrss is in KiB on Linux
            "load_before": [round(x, 2) for x in load_before[:2]], "load_after": [round(x, 2) for x in os.getloadavg()[:2]],
            "error": err.strip().splitlines()[-1] if rc and err.strip() else None}


def keep(scratch: Path, results: Path | None = None) -> list[Path]:
    """Store the verified results of ``scratch`` under ``results`` (default data/results), through the
    package's own pack and store (the rerun then becomes the stored result)."""
    from companion.transport import pack_results, store_packed

    with tempfile.TemporaryDirectory(prefix="full-profiles-packs-") as packs:
        return store_packed(pack_results(scratch, Path(packs)), results)


def starts(scratch: Path) -> list[dict]:
    """The starts of earlier children in ``scratch`` (``starts.json``: time and load average each)."""
    path = scratch / "starts.json"
    return json.loads(path.read_text()) if path.exists() else []


def earlier_parts(scratch: Path, name: str) -> dict:
    """What interrupted reruns of ``name`` left in ``scratch``: how many parts, their own wall and
    CPU times summed, and the highest one-minute load average an earlier child started under
    (:func:`starts`, written before each child starts; a part records no load of its own)."""
    metas = [json.loads(p.read_text()) for p in sorted((scratch / name / "parts").glob("*.json"))]
    return {"earlier_parts": len(metas),
            "earlier_parts_wall_s": round(sum(float(m.get("wall_time_s") or 0.0) for m in metas), 1),
            "earlier_parts_cpu_s": round(sum(float(m.get("cpu_time_s") or 0.0) for m in metas), 1),
            "earlier_load": max((s["load"][0] for s in starts(scratch)), default=None)}


def measure(name: str, out: Path, store: bool = False) -> dict:
    """Re-run ``name`` alone, compare with the stored result, write the part ``out/<name>.json``;
    with ``store``, a successful rerun replaces the stored result.

    The rerun writes into ``out/scratch/<name>``, removed once it succeeds. An experiment stored in
    resumable parts (the LLM training runs, hours on 2 cores) that was killed leaves its finished
    parts there, and the next call resumes from them: its ``wall_s`` is then this child's wall time
    plus the earlier parts' own (``earlier_parts``, ``earlier_parts_wall_s``, ``earlier_parts_cpu_s``, ``earlier_load``;
    the earlier children's start-up is left out)."""
    scratch = out / "scratch" / name
    scratch.mkdir(parents=True, exist_ok=True)
    earlier = earlier_parts(scratch, name)
    now = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "load": list(os.getloadavg()[:2])}
    atomic_write_text(scratch / "starts.json", json.dumps(starts(scratch) + [now], indent=1) + "\n")
    part = {"experiment": name, "chapter": registry()[name].chapter, **run_alone(name, scratch)}
    if earlier["earlier_parts"]:
        part.update(earlier, child_wall_s=part["wall_s"], wall_s=round(part["wall_s"] + earlier["earlier_parts_wall_s"], 1),
                    cpu_s=round(part["cpu_s"] + earlier["earlier_parts_cpu_s"], 1))
    try:
        stored = load_run(name, "full")
        fresh = load_run(name, "full", folder=scratch) if part["rc"] == 0 else None
        if stored is not None:
            part["stored_wall_s"] = stored[1].get("wall_time_s")
            part["stored_load"] = stored[1].get("load_average")
            part["stored_commit"] = (stored[1].get("commit") or "")[:12] or None
        if fresh is not None:
            part["compute_s"] = fresh[1].get("wall_time_s")  # the child's own time, without starting Python
        if stored is not None and fresh is not None:
            part["rerun"] = rerun_differences(stored[1].get("claims") or [], fresh[1].get("claims") or [])
        if store and fresh is not None:
            part["stored_now"] = [str(p) for p in keep(scratch)]
    finally:
        if part["rc"] == 0:
            shutil.rmtree(scratch, ignore_errors=True)
    part["provenance"] = provenance(threads=os.cpu_count())  # the machine is in provenance already
    part["cpu"] = processor()
    atomic_write_text(out / f"{name}.json", json.dumps(part, indent=1, sort_keys=True) + "\n")
    return part


def names_in_order(chapters: list[str] | None, only: list[str] | None, skip: list[str]) -> list[str]:
    """Experiment names, chapter by chapter in ORDER (then any other chapter), less ``skip``."""
    reg = registry()
    order = [c for c in ORDER if not chapters or c in chapters]
    names = [n for c in order for n, e in reg.items() if e.chapter == c]
    names += [n for n, e in reg.items() if e.chapter not in ORDER and not e.chapter.startswith("_") and not chapters]
    return [n for n in names if n not in skip and (not only or n in only)]


def report(out: Path) -> None:
    """The table of the parts in ``out``, with each chapter's total wall time."""
    parts = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    totals: dict[str, float] = {}
    print(f"{'experiment':32} {'wall s':>8} {'cpu s':>8} {'peak GB':>8} {'stored s':>9} {'load':>11}  rerun")
    for p in sorted(parts, key=lambda p: (ORDER.index(p["chapter"]) if p["chapter"] in ORDER else 99, p["experiment"])):
        totals[p["chapter"]] = totals.get(p["chapter"], 0.0) + p["wall_s"]
        r = p.get("rerun")
        same = f"{r['same_verdict']}/{r['rows']} verdicts alike, max rel diff {r['max_rel_diff']:.1e}" if r else (p.get("error") or "-")
        print(f"{p['experiment']:32} {p['wall_s']:8.1f} {p['cpu_s']:8.1f} {p['peak_rss_gb']:8.2f} "
              f"{p.get('stored_wall_s') or float('nan'):9.1f} {p['load_before'][0]:5.2f}/{p['load_after'][0]:5.2f}  {same}")
    for c, t in totals.items():
        print(f"chapter {c}: {t:.0f} s ({t / 60:.1f} min) over {sum(p['chapter'] == c for p in parts)} experiments")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--chapter", action="append", default=None)
    ap.add_argument("--only", action="append", default=None)
    ap.add_argument("--skip", action="append", default=[])
    ap.add_argument("--again", action="store_true")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--store", action="store_true", help="a successful rerun replaces the stored result (data/results)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.report:
        return report(args.out)
    for name in names_in_order(args.chapter, args.only, args.skip):
        if (args.out / f"{name}.json").exists() and not args.again:
            continue
        p = measure(name, args.out, store=args.store)
        print(f"{name}: rc {p['rc']}, {p['wall_s']} s wall, {p['cpu_s']} s CPU, {p['peak_rss_gb']} GB, "
              f"load {p['load_before'][0]} -> {p['load_after'][0]}, rerun {p.get('rerun')}", flush=True)
    report(args.out)


if __name__ == "__main__":
    main()
