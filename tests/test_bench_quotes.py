"""bench/results/README.md and the Performance page quote the stored peer comparison; the quotes read its numbers.

(The front page, README.md, carries no measurement: tests/test_readme.py.)"""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def _runs(dtype: str) -> list[float]:
    """The peer ratios of every 200-trial run in the newest folder holding one for ``dtype``."""
    folder = max(p.parent for p in RESULTS.glob(f"cpu-*/peers-200-{dtype}*.json"))
    files = sorted(folder.glob(f"peers-200-{dtype}.json")) + sorted(folder.glob(f"peers-200-{dtype}-?.json"))
    return [json.loads(f.read_text())["ratios"][dtype]["ratio"] for f in files]


def _ratio(dtype: str) -> str:
    """The median over those runs, as quoted."""
    return f"{statistics.median(_runs(dtype)):.1f}x"


def test_quoted_peer_ratios_are_the_stored_ones():
    readme = (RESULTS / "README.md").read_text().replace("\n", " ")
    page = (ROOT / "book" / "performance.md").read_text()
    f32, f64 = _ratio("float32"), _ratio("float64")
    assert re.search(rf"{re.escape(f32)} faster than the best of them in float32", readme), f32
    assert re.search(rf"{re.escape(f64)} in float64", readme), f64
    assert f"the package was {f32} faster than the best peer" in page.replace("\n", " ")
    assert f"In float64 it was {f64}" in page.replace("\n", " ")


def test_quoted_float32_spread_is_the_stored_runs():
    r = _runs("float32")
    assert len(r) >= 3, "quote a float32 ratio over several runs"
    spread = f"{min(r):.1f}-{max(r):.1f}x over {len(r)} runs"
    assert spread in (RESULTS / "README.md").read_text().replace("\n", " "), spread
    assert spread in (ROOT / "book" / "performance.md").read_text().replace("\n", " "), spread
