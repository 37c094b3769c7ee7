"""The full profiles re-timed alone (bench/full_profiles.py): bench/results/README.md's quotes read the stored parts,
and every part is a real rerun that agreed with the stored result."""
from __future__ import annotations

from pathlib import Path

from companion import pages
from companion.registry import registry

ROOT = Path(__file__).resolve().parents[1]


def test_bench_readme_quotes_each_whole_chapter_re_timed():
    timed = pages.retimed()
    assert timed, "no re-timing parts under bench/results/*/full-profiles"
    readme = (ROOT / "bench" / "results" / "README.md").read_text().replace("\n", " ")
    stored = {n for n in registry() if (ROOT / "data" / "results" / n / "full.json").exists()}
    quoted = 0
    for chapter in {e.chapter for e in registry().values() if not e.chapter.startswith("_")}:
        names = {n for n in stored if registry()[n].chapter == chapter}
        if names and names <= set(timed):
            minutes = sum(timed[n]["wall_s"] for n in names) / 60
            assert f"{chapter} {minutes:.1f} min" in readme, (chapter, round(minutes, 1))
            quoted += 1
    assert quoted >= 1


def test_every_rerun_succeeded_and_each_changed_verdict_is_reported():
    """A rerun may judge a row otherwise (a result in its own right); bench/results/README.md and the Status page
    must then say which row and why, so a change nobody looked at fails here."""
    readme = (ROOT / "bench" / "results" / "README.md").read_text().replace("\n", " ")
    for name, t in pages.retimed().items():
        assert t["rc"] == 0, (name, t.get("error"))
        r = t["rerun"]
        assert r["rows"] >= 1 and r["same_verdict"] + len(r["changed"]) == r["rows"], (name, r)
        for change in r["changed"]:
            row, verdicts = change.split(": ", 1)
            assert f"{row} ({verdicts})" in readme, (name, change)
        assert t["wall_s"] > 0 and t["cpu_s"] > 0


def test_rerun_differences_sees_a_changed_verdict_and_number(full_profiles):
    diff = full_profiles.rerun_differences
    a = [{"id": "x", "status": "reproduced", "measured": 1.0}]
    assert diff(a, a) == {"rows": 1, "same_verdict": 1, "max_rel_diff": 0.0, "changed": []}
    d = diff(a, [{"id": "x", "status": "partly", "measured": 0.5}])
    assert d["same_verdict"] == 0 and d["max_rel_diff"] == 0.5 and d["changed"] == ["x: reproduced -> partly"]


def test_earlier_parts_adds_what_an_interrupted_rerun_left(full_profiles, tmp_path):
    import json

    scratch = tmp_path / "llm-training"
    assert full_profiles.earlier_parts(scratch, "llm-training") == {
        "earlier_parts": 0, "earlier_parts_wall_s": 0.0, "earlier_parts_cpu_s": 0.0, "earlier_load": None}
    parts = scratch / "llm-training" / "parts"
    parts.mkdir(parents=True)
    for i, (wall, cpu) in enumerate([(400.0, 700.0), (410.5, 720.0)]):
        (parts / f"r{i}-s0.json").write_text(json.dumps({"wall_time_s": wall, "cpu_time_s": cpu}))
    (parts / "r0-s0.npz").write_bytes(b"")  # arrays are not read
    (scratch / "starts.json").write_text(json.dumps([{"at": "t0", "load": [0.2, 0.5]}, {"at": "t1", "load": [1.9, 1.0]}]))
    assert full_profiles.earlier_parts(scratch, "llm-training") == {
        "earlier_parts": 2, "earlier_parts_wall_s": 810.5, "earlier_parts_cpu_s": 1420.0, "earlier_load": 1.9}
