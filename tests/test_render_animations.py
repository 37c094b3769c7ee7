"""The book's animations in headless Chromium: every video of companion.animate on the built pages
loads (readyState >= 2, a duration), shows its poster, and plays (currentTime advances after
play()) and pauses.

Runs on the book ``make book-ref`` builds (``COMPANION_BOOK_HTML``), as tests/test_render.py does,
with its fixtures; skips where Chromium or the built book is missing (fails in CI). Chromium's
virtual time (``--virtual-time-budget``) also drives the media clock, so the script waits on the
video's own events only, never on a timer.
"""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.chromium

_spec = importlib.util.spec_from_file_location("companion_test_render", Path(__file__).with_name("test_render.py"))
_render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_render)
chromium, html_dir = _render.chromium, _render.html_dir  # the render check's fixtures
ROOT, CHAPTERS, FLAGS = _render.ROOT, _render.CHAPTERS, _render.FLAGS

SHOW = re.compile(r'animate\.show\("([^"]+)"\)')
PLAY_UNTIL = 0.5  # seconds of video that must play

PLAY = r"""
<script>
(function () {
  const out = [];
  const write = () => document.body.setAttribute("data-companion-videos", JSON.stringify(out));
  window.addEventListener("load", function () {
    document.querySelectorAll("video.companion-animation").forEach((v, i) => {
      const r = {src: v.currentSrc || (v.querySelector("source") || {}).src || "", controls: v.controls,
                 label: v.getAttribute("aria-label") || "", poster: v.poster, posterWidth: 0, ready: v.readyState};
      out.push(r);
      const img = new Image();
      img.onload = () => { r.posterWidth = img.naturalWidth; write(); };
      img.src = v.poster;
      v.muted = true;
      v.addEventListener("error", () => { r.error = "media error " + (v.error && v.error.code); write(); }, true);
      const onData = () => {
        if (r.started) return;
        r.started = true; r.ready = v.readyState; r.duration = v.duration; r.width = v.videoWidth; r.t0 = v.currentTime;
        write();
        v.play().then(() => { r.playing = true; write(); }, (e) => { r.error = "play(): " + e; write(); });
      };
      v.addEventListener("timeupdate", () => {
        if (r.t1 !== undefined || v.currentTime < %(until)s) return;
        r.t1 = v.currentTime; v.pause(); r.paused = v.paused; write();
      });
      v.addEventListener("loadeddata", onData);
      if (v.readyState >= 2) onData(); else v.load();
    });
    write();
  });
})();
</script>
""" % {"until": PLAY_UNTIL}


def _expected() -> dict[str, list[str]]:
    """{page (relative to the site): the animations its reference notebook shows}, and the landing page's."""
    pages = {}
    for nb in sorted(CHAPTERS.glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        names = [m for c in cells if c["cell_type"] == "code" for m in SHOW.findall("".join(c["source"]))]
        if names:
            pages[f"chapters/{nb.stem}.html"] = names
    landing = (ROOT / "book" / "intro.md").read_text()
    pages["intro.html"] = re.findall(r'<source src="_static/animations/([\w-]+)\.mp4"', landing)
    return pages


EXPECTED = _expected()


def test_at_least_five_animations_in_the_book():
    names = {n for v in EXPECTED.values() for n in v}
    assert len(names) >= 5, f"the book shows {len(names)} animations: {sorted(names)}"
    assert EXPECTED["intro.html"] == ["hero"], "the landing page plays the hero"


def _videos(chromium: str, page: Path, profile: Path) -> list[dict]:
    # the last --virtual-time-budget counts: a page with more to load (the landing page) still plays 0.5 s
    return _render.probe_page(chromium, page, PLAY, "data-companion-videos", profile,
                              "--autoplay-policy=no-user-gesture-required", "--virtual-time-budget=20000",
                              "--window-size=1400,900")


@pytest.mark.parametrize("page", sorted(EXPECTED))
def test_animations_load_and_play(page, chromium, html_dir, tmp_path):
    path = html_dir / page
    assert path.exists(), f"{path} missing from the built book"
    videos = _videos(chromium, path, tmp_path / "profile")
    if not all(v.get("playing") and v.get("t1", 0) >= PLAY_UNTIL for v in videos):
        # headless Chromium sometimes dumps the page before the media clock reaches PLAY_UNTIL: one more try
        videos = _videos(chromium, path, tmp_path / "profile-2")
    names = [Path(v["src"]).stem for v in videos]
    assert names == EXPECTED[page], f"{page}: videos {names}, expected {EXPECTED[page]}"
    for name, v in zip(names, videos):
        assert "error" not in v, f"{page}, {name}: {v['error']}"
        assert v["src"].endswith(f"_static/animations/{name}.mp4") and v["controls"], (page, v)
        assert len(v["label"]) > 40, f"{page}, {name}: no description for a reader who cannot see it"
        assert v["ready"] >= 2 and v["duration"] > 0 and v["width"] > 0, f"{page}, {name} did not load: {v}"
        assert v["posterWidth"] > 0, f"{page}, {name}: the poster {v['poster']} did not load"
        assert v.get("playing") and v.get("t1", 0) >= PLAY_UNTIL > v["t0"], f"{page}, {name} did not play: {v}"
        assert v["paused"], f"{page}, {name} did not pause"
