"""Height of each chapter's article at a given window width in headless Chromium (issue 48's
"chapters about a quarter shorter"), measured with the render check's own probe (tests/test_render.py).

Usage: python bench/page_heights.py [HTML_ROOT] [--width 1400]
HTML_ROOT: a built book's html folder (default: the reference build, book/_build/ref/_build/html).
Prints one line per chapter: slug, article height in px, folds closed (what a reader meets first).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_render import MEASURE, probe_page  # noqa: E402  (one copy of the probe)


def heights(html: Path, width: int) -> dict[str, float]:
    """``{chapter slug: article height in px}`` for every chapter page under ``html/chapters``."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("page_heights: chromium not found (make chromium)")
    out = {}
    with tempfile.TemporaryDirectory() as profile:
        for page in sorted((html / "chapters").glob("*.html")):
            m = probe_page(chromium, page, MEASURE, "data-companion-metrics", Path(profile), f"--window-size={width},900")
            out[page.stem] = round(float(m["height"]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("html", nargs="?", default=str(ROOT / "book/_build/ref/_build/html"))
    ap.add_argument("--width", type=int, default=1400)
    a = ap.parse_args(argv)
    for slug, h in heights(Path(a.html), a.width).items():
        print(f"{slug:<20} {h:>7,d} px")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
