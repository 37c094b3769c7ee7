"""The README and the Performance page quote the stored peer comparison; the quotes read its numbers."""
from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "cpu-2026-12-02"


def _ratio(dtype: str) -> str:
    d = json.loads((RESULTS / f"peers-200-{dtype}.json").read_text())
    return f"{d['ratios'][dtype]['ratio']:.1f}x"


def test_quoted_peer_ratios_are_the_stored_ones():
    readme = (ROOT / "README.md").read_text()
    page = (ROOT / "book" / "performance.md").read_text()
    f32, f64 = _ratio("float32"), _ratio("float64")
    assert re.search(rf"{re.escape(f32)} faster than the best of them in float32", readme), f32
    assert re.search(rf"{re.escape(f64)} in float64", readme), f64
    assert f"the package was {f32} faster than the best peer" in page.replace("\n", " ")
    assert f"In float64 it was {f64}" in page.replace("\n", " ")
