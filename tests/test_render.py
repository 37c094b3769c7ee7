"""The built book in headless Chromium: every chapter page shows its figures and typeset math, and
its download menu offers the chapter's notebook with its outputs.

``make test`` builds the book from the reference .ipynb (execution off, right after nbval verified
them) and runs this with ``COMPANION_BOOK_HTML`` pointing at it; by default the book of
``make book`` (book/_build/html) is checked. A book built the way ``make book`` builds it (from a
MyST .md notebook, executed, with book/_config.yml) is also built here, small, and opened, so that
what only the .md route gets wrong is seen in ``make test`` too. Skips, with the reason, where
Chromium or the built book is missing; in CI (env CI=true) those are failures.
"""
from __future__ import annotations

import html as html_text
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.chromium

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "book" / "chapters"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--virtual-time-budget=8000",
]
MATH = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$[^$\n]+\$|\{math\}|```\{math\}", re.S)


def _unavailable(in_ci: bool, reason: str):
    if in_ci:
        pytest.fail(f"{reason} (CI=true: the render check must run)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium(in_ci) -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        exe = shutil.which(name)
        if exe:
            return exe
    _unavailable(in_ci, "headless Chromium not found (make chromium installs the Debian package as root)")


@pytest.fixture(scope="module")
def html_dir(in_ci) -> Path:
    d = Path(os.environ.get("COMPANION_BOOK_HTML", ROOT / "book" / "_build" / "html")).resolve()
    if not (d / "intro.html").exists():
        _unavailable(in_ci, f"no built book at {d} (run make book, or make book-ref)")
    return d


def _dump_dom(chromium: str, page: Path, profile: Path) -> str:
    out = subprocess.run(
        [chromium, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180,
    )
    assert out.returncode == 0, f"chromium failed on {page}: {out.stderr[-2000:]}"
    return out.stdout


def _expectations(slug: str) -> tuple[int, bool]:
    """(number of figures, has math) of a chapter, read from its sources, not from the HTML."""
    nb = json.loads((CHAPTERS / f"{slug}.ipynb").read_text())
    figures = sum(
        1 for c in nb["cells"] if c["cell_type"] == "code"
        for o in c.get("outputs", []) if "image/png" in o.get("data", {})
        and "text/html" not in o["data"]  # a video (companion.animate): its poster PNG is for print
    )
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return figures, bool(MATH.search(markdown))


def _slugs() -> list[str]:
    return sorted(p.stem for p in CHAPTERS.glob("*.md") if p.with_suffix(".ipynb").exists())


@pytest.mark.parametrize("slug", _slugs())
def test_chapter_renders(slug, chromium, html_dir, tmp_path):
    page = html_dir / "chapters" / f"{slug}.html"
    assert page.exists(), f"{page} missing from the built book"
    dom = _dump_dom(chromium, page, tmp_path / "profile")
    figures, has_math = _expectations(slug)
    imgs = len(re.findall(r"<img\b[^>]*src=\"[^\"]*_images/", dom))
    assert imgs >= figures, f"{slug}: {imgs} figures rendered, the reference notebook has {figures}"
    typeset = dom.count("<mjx-container")
    if has_math:
        assert typeset > 0, f"{slug}: the chapter has math but nothing was typeset (MathJax not loaded?)"
        # MathJax must come from the vendored copy, never a CDN (the build is offline).
        assert re.search(r"<script[^>]+src=\"[^\"]*mathjax/tex-mml-chtml\.js", dom), "vendored MathJax not referenced"
        assert "cdn.jsdelivr" not in dom and "mathjax@3/es5" not in dom
    assert "Traceback (most recent call last)" not in dom, f"{slug}: a cell output shows a traceback"
    notebook_problems = _offered_notebook_problems(page, dom)
    assert not notebook_problems, f"{slug}: {notebook_problems}"


def download_menu(dom: str) -> dict[str, str]:
    """The download menu of a page's DOM: ``{entry text (".ipynb", ".md", ...): its href}``; the
    "Print to PDF" entry is a button without a link and is left out."""
    out = {}
    for attrs, inner in re.findall(r"<a\b([^>]*)>(.*?)</a>", dom, re.S):
        cls = re.search(r'class="([^"]*)"', attrs)
        href = re.search(r'href="([^"]*)"', attrs)
        if cls and href and re.search(r"\bbtn-download-[\w-]+-button\b", cls.group(1)):
            text = re.search(r'class="btn__text-container">([^<]*)<', inner)  # beside the icon (an <svg> once scripted)
            out[(text.group(1) if text else re.sub(r"<!--.*?-->|<[^>]+>|\s+", "", inner, flags=re.S)).strip()] = html_text.unescape(href.group(1))
    return out


def _offered_notebook_problems(page: Path, dom: str) -> list[str]:
    """Why the page's download menu does not offer its executed notebook (empty: it does)."""
    menu = download_menu(dom)
    if ".ipynb" not in menu:
        return [f"the download menu offers no .ipynb, only {sorted(menu)}"]
    nb = (page.parent / menu[".ipynb"]).resolve()
    if not nb.is_file():
        return [f"the menu's .ipynb ({menu['.ipynb']}) is not in the built book"]
    cells = json.loads(nb.read_text())["cells"]
    if not any(c.get("outputs") for c in cells if c["cell_type"] == "code"):
        return [f"the offered {nb.name} has no outputs: not the executed notebook"]
    return []


def test_download_menu_is_read_from_the_theme_markup():
    dom = ('<li><a href="../_sources/chapters/x.ipynb" target="_blank" class="btn btn-sm btn-download-notebook-button '
           'dropdown-item"><span class="btn__text-container">.ipynb</span></a></li><li><a href="../_sources/chapters/x.md" '
           'class="btn btn-sm btn-download-source-button dropdown-item"><span class="btn__text-container">.md</span></a></li>'
           '<a href="x.html" class="btn">other</a>')
    assert download_menu(dom) == {".ipynb": "../_sources/chapters/x.ipynb", ".md": "../_sources/chapters/x.md"}
    assert _offered_notebook_problems(Path("/nonexistent/chapters/x.html"), dom.split("</li>", 1)[1])[0].startswith(
        "the download menu offers no .ipynb")


TINY_CHAPTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A chapter

```{code-cell} ipython3
print(6 * 7)
```
"""


def test_md_build_offers_the_executed_notebook(chromium, pipeline, tmp_path):
    """A book built as `make book` builds it (a MyST .md notebook, executed, book/_config.yml with its
    extensions): the chapter's download menu offers the executed .ipynb (sphinx-book-theme alone
    offers it only with a launch provider), and the plain front page offers none."""
    book = tmp_path / "book"
    (book / "_vendor").mkdir(parents=True)  # html_extra_path of the real config
    shutil.copy2(ROOT / "book" / "references.bib", book)
    (book / "intro.md").write_text("# Front page\n\nNo code here.\n")
    (book / "chapter.md").write_text(TINY_CHAPTER)
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n- file: chapter\n")
    pipeline.ref_config(book / "_config.yml", references=False)
    jb = Path(sys.executable).parent / "jupyter-book"
    out = subprocess.run([str(jb), "build", str(book), "--builder", "html", "-W", "--keep-going"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"the small .md book did not build:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    site = book / "_build" / "html"
    page = site / "chapter.html"
    dom = _dump_dom(chromium, page, tmp_path / "profile")
    assert not _offered_notebook_problems(page, dom), _offered_notebook_problems(page, dom)
    nb = json.loads((page.parent / download_menu(dom)[".ipynb"]).read_text())
    assert "42" in json.dumps([c["outputs"] for c in nb["cells"] if c["cell_type"] == "code"])
    assert ".md" in download_menu(dom), "the .md source is still offered beside it"
    assert ".ipynb" not in download_menu(_dump_dom(chromium, site / "intro.html", tmp_path / "profile"))


def test_intro_and_ledger_have_math_and_figures():
    """The issue's 'done when': the introduction and the ledger render with math and figures."""
    for slug in ("introduction", "claims"):
        figures, has_math = _expectations(slug)
        assert figures >= 1 and has_math, f"{slug} should show at least one figure and some math"


def test_api_page_documents_the_core(chromium, html_dir, tmp_path):
    dom = _dump_dom(chromium, html_dir / "api.html", tmp_path / "profile")
    for name in ("companion.integrate.simulate", "companion.models.Sphere", "companion.ledger.record"):
        assert f'id="{name}"' in dom, f"API page lacks {name}"


def test_screenshot_intro(chromium, html_dir, tmp_path):
    """A screenshot of the introduction (book/_build/screenshots/), for a human to look at."""
    out_dir = ROOT / "book" / "_build" / "screenshots"
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / "introduction.png"
    res = subprocess.run(
        [chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}",
         "--window-size=1280,1600", (html_dir / "chapters" / "introduction.html").as_uri()],
        capture_output=True, text=True, timeout=180,
    )
    assert res.returncode == 0 and png.exists(), res.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, "screenshot missing or blank"


# --------------------------------------------------------------------------- the page as a reader sees it
# Measured in the page itself: a script injected into a copy of each built page (beside it, so its
# assets resolve) waits for MathJax, measures the laid-out page and writes the numbers into the DOM
# that Chromium dumps. No browser driver: the same headless Chromium, the same --dump-dom.
PAPER_CHAPTERS = ("stability", "phase_transitions", "llm_probes", "low_temperature", "spectral_selection",
                  "metastable", "beyond")
# A tutorial shows its code, so it is measured with the general checks only; on a phone its code cells
# may scroll inside their own box (a code line keeps its indentation), at 1400 px none may.
TUTORIALS = ("your_own_dynamics",)
MACHINERY_SHARE = 0.10     # visible code and raw printed output: at most a tenth of the page's height
FIRST_FIGURE_PX = 1500     # the first figure within this many CSS pixels of the top, at 1400 px wide
MEASURE = r"""
<script>
(function () {
  function shown(el) {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && !el.closest("details:not([open])");
  }
  function measure() {
    const art = document.querySelector("article.bd-article") || document.querySelector("article") || document.body;
    const col = art.getBoundingClientRect();
    const top = (el) => el.getBoundingClientRect().top + window.scrollY;
    const m = {width: window.innerWidth, height: art.getBoundingClientRect().height, code: 0, raw: 0, code_cells: 0,
               figures: [], overflow: [], tex: [], merror: document.querySelectorAll("mjx-merror").length};
    art.querySelectorAll(".cell_input").forEach((e) => { if (shown(e)) { m.code += e.getBoundingClientRect().height; m.code_cells += 1; } });
    art.querySelectorAll(".cell_output .output.stream, .cell_output .output.text_plain, .cell_output .output.traceback").forEach(
      (e) => { if (shown(e)) m.raw += e.getBoundingClientRect().height; });
    art.querySelectorAll("img").forEach((img) => {
      if (!shown(img)) return;
      const fig = img.closest("figure");
      const cap = fig && fig.querySelector("figcaption .caption-number");
      m.figures.push({top: top(img) - top(art), numbered: !!cap, alt: img.getAttribute("alt") || "",
                      src: img.getAttribute("src") || "", shown: img.getBoundingClientRect().width,
                      natural: img.naturalWidth});
    });
    art.querySelectorAll("pre, table, .highlight, mjx-container[display='true'], img, .cell_output, figure, .verdict, .companion-figure-frame").forEach((e) => {
      if (!shown(e)) return;
      const r = e.getBoundingClientRect();
      const scrolls = e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== "visible";
      const frame = e.closest(".companion-figure-frame");
      if (frame && frame !== e && frame.scrollWidth > frame.clientWidth + 1) return;  // seen through its scrolling frame
      if (r.right > col.right + 1 || scrolls)
        m.overflow.push({what: e.tagName.toLowerCase() + "." + (e.className || "").toString().slice(0, 40),
                         beyond: r.right > col.right + 1, math: e.tagName.toLowerCase() === "mjx-container",
                         code: !!e.closest(".cell_input"), figure: frame === e});
    });
    m.searches = Array.from(document.querySelectorAll(".search-button-field, .bd-search input")).filter(shown).length;
    const walker = document.createTreeWalker(art, NodeFilter.SHOW_TEXT);
    // Prose, and the HTML a cell shows (verdict boxes, ledger tables): not code, not printed text.
    const skip = "code, pre, script, style, mjx-container, .highlight, .cell_input, .output.stream, .output.text_plain, .pasted-text";
    while (walker.nextNode()) {
      const t = walker.currentNode;
      if (!t.parentElement || t.parentElement.closest(skip)) continue;
      const s = t.textContent;
      const hit = s.match(/\\[a-zA-Z]{2,}|\$[^$\s][^$]*\$|\\\(|\\\[/);
      if (hit) m.tex.push(s.trim().slice(0, 80));
    }
    document.body.setAttribute("data-companion-metrics", JSON.stringify(m));
  }
  window.addEventListener("load", function () {
    const ready = (window.MathJax && MathJax.startup && MathJax.startup.promise) || Promise.resolve();
    ready.then(() => setTimeout(measure, 200));
  });
})();
</script>
"""


def probe_page(chromium: str, page: Path, script: str, attr: str, profile: Path, *flags: str) -> object:
    """Open ``page`` in headless Chromium with ``script`` added before </body> (a copy beside it, removed
    after) and return the JSON the script wrote into the ``attr`` attribute of the dumped DOM."""
    import html

    probe = page.with_name(f".probe-{attr}-{page.name}")
    probe.write_text(page.read_text().replace("</body>", script + "</body>", 1))
    try:
        out = subprocess.run([chromium, *FLAGS, *flags, f"--user-data-dir={profile}", "--dump-dom", probe.as_uri()],
                             capture_output=True, text=True, timeout=180)
    finally:
        probe.unlink(missing_ok=True)
    assert out.returncode == 0, f"chromium failed on {page}: {out.stderr[-2000:]}"
    m = re.search(f'{attr}="([^"]*)"', out.stdout)
    assert m, f"{page.name}: the script writing {attr} did not run"
    return json.loads(html.unescape(m.group(1)))


def _metrics(chromium: str, page: Path, width: int, profile: Path) -> dict:
    return probe_page(chromium, page, MEASURE, "data-companion-metrics", profile, f"--window-size={width},900")


def _reader_problems(slug: str, m: dict, paper_chapter: bool, tutorial: bool = False) -> list[str]:
    """What a reader would trip over on one page, from its measurements (empty: none). In a tutorial
    (``tutorial``) a code cell's source may scroll inside its own box on a phone."""
    out = []
    if m["merror"]:
        out.append(f"{m['merror']} MathJax errors")
    if m["tex"]:
        out.append(f"raw TeX in prose: {m['tex'][:3]}")
    if m.get("searches", 1) > 1 or (m["width"] >= 1400 and m.get("searches", 1) < 1):
        out.append(f"{m['searches']} search boxes shown (one at 1400 px, at most one on a phone)")
    # At 1400 px nothing may be wider than the column or scroll sideways; on a phone (420 px) a long
    # displayed equation may scroll inside its own box, and a wide figure in its frame (companion.css keeps
    # it wide enough to read), but nothing may stick out of the column.
    # A tutorial's code cells likewise, on a phone: at 1400 px its code lines must fit the column.
    in_box = lambda o: o["math"] or o.get("figure", False) or (tutorial and o.get("code", False))  # noqa: E731
    wide = [o["what"] for o in m["overflow"] if m["width"] >= 1400 or o["beyond"] or not in_box(o)]
    if wide:
        out.append(f"{len(wide)} blocks wider than the column: {sorted(set(wide))[:4]}")
    for f in m["figures"]:
        if not f["numbered"]:
            out.append(f"figure without a numbered caption: {f['src'][-40:]}")
        if not f["alt"].strip() or re.search(r"_images|\.(png|jpe?g|svg)$", f["alt"].strip()):  # none, or a path
            out.append(f"figure without alt text: {f['src'][-40:]}")
    if paper_chapter:
        if m["code_cells"]:
            out.append(f"{m['code_cells']} code cells shown outside a collapsed block")
        share = (m["code"] + m["raw"]) / max(m["height"], 1)
        if share > MACHINERY_SHARE:
            out.append(f"code and raw output take {share:.0%} of the page (at most {MACHINERY_SHARE:.0%})")
        first = min((f["top"] for f in m["figures"]), default=None)
        if m["width"] >= 1400 and (first is None or first > FIRST_FIGURE_PX):
            out.append(f"first figure at {first} px (at most {FIRST_FIGURE_PX})")
    return out


@pytest.mark.parametrize("width", [1400, 420])
@pytest.mark.parametrize("slug", _slugs())
def test_chapter_reads_well(slug, width, chromium, html_dir, tmp_path):
    """No raw TeX, no MathJax error, every figure numbered with a caption and alt text, nothing wider
    than the column; in a paper chapter no visible code, machinery at most a tenth of the page, the
    first figure near the top. A tutorial (TUTORIALS) shows its code and gets the general checks."""
    if "pages.paper_figure(" not in (CHAPTERS / f"{slug}.md").read_text() and slug not in ("claims", "status", *TUTORIALS):
        pytest.skip(f"{slug} is not yet in the result-section shape (no pages.paper_figure): not measured")
    m = _metrics(chromium, html_dir / "chapters" / f"{slug}.html", width, tmp_path / "profile")
    problems = _reader_problems(slug, m, slug in PAPER_CHAPTERS, tutorial=slug in TUTORIALS)
    assert not problems, f"{slug} at {width} px: " + "; ".join(problems)


def test_reader_problems_are_found():
    """The page checks can fail: each defect, measured on a made-up page, is reported."""
    good = {"merror": 0, "tex": [], "searches": 1, "overflow": [{"what": "mjx-container.", "beyond": False, "math": True}], "code_cells": 0, "code": 0, "raw": 50, "height": 5000, "width": 1400,
            "figures": [{"numbered": True, "alt": "tokens on the sphere", "src": "_images/a.png", "top": 400}]}
    assert _reader_problems("x", {**good, "width": 420}, True) == []  # an equation scrolling in its box, on a phone
    assert "wider than the column" in " ".join(_reader_problems("x", good, True))  # not at 1400 px
    framed = {"what": "a.companion-figure-frame", "beyond": False, "math": False, "figure": True}
    assert _reader_problems("x", {**good, "width": 420, "overflow": [framed]}, True) == []  # a wide figure in its frame
    assert "wider than the column" in " ".join(_reader_problems("x", {**good, "overflow": [framed]}, True))  # not at 1400 px
    assert "wider than the column" in " ".join(_reader_problems("x", {**good, "width": 420, "overflow": [{**framed, "beyond": True}]}, True))
    good["overflow"] = []
    assert _reader_problems("x", good, True) == []
    bad = {"merror": 1, "tex": [r"\mathbb E"], "searches": 2, "overflow": [{"what": "pre.", "beyond": True, "math": False}], "code_cells": 2, "code": 800, "raw": 400,
           "height": 5000, "width": 1400, "figures": [{"numbered": False, "alt": "../_images/a.png", "src": "_images/a.png",
                                                       "top": 2500}]}
    found = " ".join(_reader_problems("x", bad, True))
    for word in ("MathJax", "raw TeX", "search boxes", "wider than the column", "numbered caption", "alt text", "code cells",
                 "of the page", "first figure"):
        assert word in found, word


def test_tutorial_code_rule_can_fail():
    """A tutorial's code cell may scroll inside its own box on a phone, and nothing else: not at 1400 px,
    not sticking out of the column, not printed output, not in a chapter that is no tutorial."""
    assert set(TUTORIALS) <= set(_slugs()) and not set(TUTORIALS) & set(PAPER_CHAPTERS)
    page = {"merror": 0, "tex": [], "searches": 1, "code_cells": 5, "code": 3000, "raw": 500, "height": 9000, "width": 420,
            "figures": [{"numbered": True, "alt": "angles falling", "src": "_images/a.png", "top": 4000}]}
    code = {"what": "pre.", "beyond": False, "math": False, "code": True}
    assert _reader_problems("t", {**page, "overflow": [code]}, False, tutorial=True) == []
    for m, tutorial in (({**page, "overflow": [code], "width": 1400}, True),   # a code line too long for the column
                        ({**page, "overflow": [{**code, "beyond": True}]}, True),  # sticking out of the column
                        ({**page, "overflow": [{**code, "code": False}]}, True),   # printed output scrolling
                        ({**page, "overflow": [code]}, False)):                     # not a tutorial
        assert "wider than the column" in " ".join(_reader_problems("t", m, False, tutorial=tutorial)), (m, tutorial)


# --------------------------------------------------------------------------- issue 48: fit, contrast, weight
# Each check runs a script in a copy of the built page (as _metrics does) and reads what it wrote into the
# DOM; the dark theme is the theme's own, chosen as a reader's toggle would (localStorage "mode").
DARK = '<script>localStorage.setItem("mode", "dark"); localStorage.setItem("theme", "dark");</script>'
PROBE = r"""
<script>
(function () {
  function run() {
    const out = {};
    try { out.value = (%s)(); } catch (e) { out.error = String(e); }
    document.body.setAttribute("data-companion-probe", JSON.stringify(out));
    if (window.parent !== window) window.parent.postMessage(JSON.stringify(out), "*");
  }
  window.addEventListener("load", function () {
    const ready = (window.MathJax && MathJax.startup && MathJax.startup.promise) || Promise.resolve();
    ready.then(() => setTimeout(run, 300));
  });
})();
</script>
"""


# Headless Chromium's window is never narrower than 500 px (--window-size=420,900 gives innerWidth 500), so
# a phone's width is a frame of that width in a page of its own: the probe inside reports to the frame's page.
FRAME = """<!DOCTYPE html><html><body style="margin:0"><iframe src="%s" width="%d" height="900" style="border:0"></iframe>
<script>window.addEventListener("message", (e) => document.body.setAttribute("data-companion-probe", e.data));</script>
</body></html>"""


def _probe(chromium: str, page: Path, js: str, width: int, profile: Path, dark: bool = False):
    """The value the JavaScript function expression ``js`` returns on ``page`` in a viewport ``width`` px
    wide (a frame of that width below 500 px)."""
    import html

    probe = page.with_name(f".probe-{width}-{'dark' if dark else 'light'}-{page.name}")
    frame = page.with_name(f".frame-{width}-{'dark' if dark else 'light'}-{page.name}")
    text = page.read_text()
    if dark:
        text = text.replace("<head>", "<head>" + DARK, 1)
    probe.write_text(text.replace("</body>", PROBE % js + "</body>", 1))
    opened = probe
    if width < 500:
        frame.write_text(FRAME % (probe.name, width))
        opened = frame
    try:
        out = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", f"--window-size={max(width, 500)},900", "--dump-dom",
                              opened.as_uri()], capture_output=True, text=True, timeout=180)
    finally:
        probe.unlink(missing_ok=True)
        frame.unlink(missing_ok=True)
    assert out.returncode == 0, f"chromium failed on {page}: {out.stderr[-2000:]}"
    m = re.search(r'data-companion-probe="([^"]*)"', out.stdout)
    assert m, f"{page.name}: the probe did not run"
    res = json.loads(html.unescape(m.group(1)))
    assert "error" not in res, f"{page.name}: {res['error']}"
    return res["value"]


def _pages(html_dir: Path) -> list[Path]:
    return [html_dir / "intro.html"] + [html_dir / "chapters" / f"{s}.html" for s in _slugs()]


SCROLL_WIDTH = "() => ({inner: window.innerWidth, scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth, wide: Array.from(document.querySelectorAll('article *')).filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.pst-scrollable-table-container, .dt-container, mjx-container, pre, .cell_input, .companion-figure-frame, details:not([open])')).slice(0, 3).map((e) => e.tagName.toLowerCase() + '.' + String(e.className).slice(0, 30) + ': ' + (e.textContent || '').trim().slice(0, 40))})"


@pytest.mark.parametrize("slug", ["intro", *_slugs()])
def test_no_page_wider_than_a_phone(slug, chromium, html_dir, tmp_path):
    """At 420 px nothing makes the page scroll sideways (a long API link wraps; a wide table scrolls in
    its own box)."""
    page = html_dir / "intro.html" if slug == "intro" else html_dir / "chapters" / f"{slug}.html"
    m = _probe(chromium, page, SCROLL_WIDTH, 420, tmp_path / "profile")
    assert m["inner"] == 420, f"the viewport is {m['inner']} px, not 420"
    assert m["scroll"] <= 420 and m["body"] <= 420, f"{slug}: {m['scroll']} px wide at 420 px: {m['wide']}"


# A two-panel figure on a phone: its labels are drawn at 10 pt, LABEL_PX CSS px at the figure's own width
# (100 dpi, book/_scripts/matplotlibrc); shrunk to a 420 px screen's column (about 362 px) they fell to 7 px.
LABEL_PX = 10 * 100 / 72
READABLE_PX = 8
TWO_PANELS = ("spectral_selection", "fig-spectral-two-tokens")  # Figure 3 of paper C: (a) correlation, (b) mass
FIGURE_ON_A_PHONE = """() => {
  const img = document.querySelector("#%s img");
  img.scrollIntoView();
  return {inner: window.innerWidth, scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth,
          own: parseFloat(img.style.width), shown: img.getBoundingClientRect().width,
          framed: img.parentElement.getBoundingClientRect().right <= window.innerWidth};
}"""


def test_two_panel_figure_reads_on_a_phone(chromium, html_dir, tmp_path):
    """At 420 px the page is no wider than the screen and a two-panel figure is shown wide enough for its
    labels to be READABLE_PX or more (its frame scrolls sideways, not the page)."""
    slug, figure = TWO_PANELS
    m = _probe(chromium, html_dir / "chapters" / f"{slug}.html", FIGURE_ON_A_PHONE % figure, 420, tmp_path / "profile")
    assert m["inner"] == 420, f"the viewport is {m['inner']} px, not 420"
    assert m["scroll"] <= 420 and m["body"] <= 420, f"{slug}: the page is {m['scroll']} px wide at 420 px"
    assert m["own"] > 600, f"{figure} is {m['own']} px wide at its own size: not the wide figure this checks"
    need = m["own"] * READABLE_PX / LABEL_PX
    assert m["shown"] >= need, (f"{figure}: shown {m['shown']:.0f} px wide of its {m['own']:.0f} px, labels "
                                f"{LABEL_PX * m['shown'] / m['own']:.1f} px (needs {need:.0f} px for {READABLE_PX} px)")
    assert m["framed"], f"{figure}: its frame sticks out of the screen"


# WCAG 2 contrast of each element's text colour against the colour painted behind it (the first opaque
# background up the tree, translucent ones blended over it), for the verdict boxes' words and table cells.
CONTRAST = r"""() => {
  function rgba(s) { const m = s.match(/[\d.]+/g) || [0, 0, 0, 0]; return [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1]; }
  function parse(s) {
    if (!s || s === "transparent") return [0, 0, 0, 0];
    if (s.startsWith("color(srgb")) { const m = s.match(/[\d.]+/g); return [m[0] * 255, m[1] * 255, m[2] * 255, m.length > 3 ? +m[3] : 1]; }
    return rgba(s);
  }
  function over(top, under) { const a = top[3]; return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat([1]); }
  function background(el) {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let bg = [255, 255, 255, 1];
    if (layers.length && layers[layers.length - 1][3] >= 1) bg = layers.pop();
    else bg = parse(getComputedStyle(document.documentElement).backgroundColor)[3] > 0 ? parse(getComputedStyle(document.documentElement).backgroundColor) : bg;
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  }
  function lum(c) { return 0.2126 * ch(c[0]) + 0.7152 * ch(c[1]) + 0.0722 * ch(c[2]); }
  function ch(v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }
  const out = [];
  const sel = ".verdict-status, .verdict-line, .verdict-why, .verdict-record > summary, .status, .verdict-edge, table.ledger-table td, table.table td, .pst-scrollable-table-container td, ul.ledger-list li";
  document.querySelectorAll(sel).forEach((el) => {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || el.closest("details:not([open])") && !el.matches(".verdict-record > summary")) return;
    if (!(el.textContent || "").trim()) return;
    const fg = parse(getComputedStyle(el).color), bg = background(el);
    const text = over(fg, bg);
    const [a, b] = [lum(text), lum(bg)].sort((x, y) => y - x);
    out.push({what: el.tagName.toLowerCase() + "." + String(el.className).split(" ")[0], text: el.textContent.trim().slice(0, 30), ratio: (a + 0.05) / (b + 0.05)});
  });
  return out;
}"""
MIN_CONTRAST = 4.5


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("slug", ["stability", "claims", "status"])
def test_verdicts_and_tables_contrast(slug, dark, chromium, html_dir, tmp_path):
    """Verdict words, their boxes and table cells read at 4.5 : 1 or more, in the light and the dark theme."""
    found = _probe(chromium, html_dir / "chapters" / f"{slug}.html", CONTRAST, 1400, tmp_path / "profile", dark=dark)
    assert found, f"{slug}: no verdict box or table cell measured"
    low = sorted((f for f in found if f["ratio"] < MIN_CONTRAST), key=lambda f: f["ratio"])
    assert not low, (f"{slug} ({'dark' if dark else 'light'}): {len(low)} of {len(found)} below {MIN_CONTRAST}: 1, lowest "
                     + "; ".join(f"{f['what']} '{f['text']}' {f['ratio']:.2f}" for f in low[:4]))


# The narrowest room a table cell leaves its longest word (canvas-measured in the cell's font): negative
# where the word is cut or sticks out, as overflow-wrap: anywhere made the claims table do.
COLUMNS = r"""() => {
  const ctx = document.createElement("canvas").getContext("2d");
  const out = [];
  document.querySelectorAll("article table").forEach((t, ti) => {
    t.querySelectorAll("th, td").forEach((cell) => {
      const r = cell.getBoundingClientRect();
      if (!r.width || cell.closest("details:not([open])")) return;
      const cs = getComputedStyle(cell);
      if (cs.display !== "table-cell") return;
      ctx.font = cs.fontStyle + " " + cs.fontWeight + " " + cs.fontSize + " " + cs.fontFamily;
      const room = cell.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      let longest = 0, word = "";
      while (walker.nextNode()) {
        const n = walker.currentNode;
        if (n.parentElement.closest("mjx-container, code, input, select, .verdict-edge")) continue;
        for (const w of n.textContent.split(/\s+/)) { const px = ctx.measureText(w).width; if (px > longest) { longest = px; word = w; } }
      }
      out.push({table: ti, word: word, room: room - longest, width: cell.clientWidth});
    });
  });
  return out;
}"""


@pytest.mark.parametrize("slug", ["intro", "claims", "status"])
def test_no_column_narrower_than_its_longest_word(slug, chromium, html_dir, tmp_path):
    """Every table cell (the scorecards, the claims table, Status's tables) is at least as wide as its
    longest word at 1400 px: no header or number broken inside a word."""
    page = html_dir / "intro.html" if slug == "intro" else html_dir / "chapters" / f"{slug}.html"
    cells = _probe(chromium, page, COLUMNS, 1400, tmp_path / "profile")
    assert cells, f"{slug}: no table measured"
    starved = sorted((c for c in cells if c["room"] < -1), key=lambda c: c["room"])
    assert not starved, f"{slug}: {len(starved)} cells narrower than their longest word, e.g. " + "; ".join(
        f"'{c['word']}' in {c['width']} px" for c in starved[:4])


FIRST_VISIT_BUDGET = 1_500_000  # bytes, gzipped as a server would send them; animations (video) excepted
RESOURCES = "() => performance.getEntriesByType('resource').map((e) => e.name).concat([location.href])"


def _serve(root: Path):
    import functools
    import http.server
    import threading

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def first_visit_bytes(chromium: str, html_dir: Path, rel: str, profile: Path) -> dict[str, int]:
    """What a first visit of ``rel`` fetches (the Performance API's list, the page loaded over HTTP with a
    fresh profile), each file's bytes gzipped as a server compresses text (images as they are)."""
    import gzip
    from urllib.parse import unquote, urlparse

    server = _serve(html_dir)
    page = html_dir / rel
    probe = page.with_name(f".weight-{page.name}")
    probe.write_text(page.read_text().replace("</body>", PROBE % RESOURCES + "</body>", 1))
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{probe.relative_to(html_dir).as_posix()}"
        out = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", "--window-size=1400,900", "--dump-dom", url],
                             capture_output=True, text=True, timeout=180)
    finally:
        probe.unlink(missing_ok=True)
        server.shutdown()
    import html

    m = re.search(r'data-companion-probe="([^"]*)"', out.stdout)
    assert m, f"{rel}: the probe did not run"
    sizes = {}
    for name in json.loads(html.unescape(m.group(1)))["value"]:
        path = urlparse(name).path
        f = html_dir / unquote(path).lstrip("/")
        if f.name.startswith(".weight-"):
            f = page
        if not f.is_file():
            continue
        data = f.read_bytes()
        sizes[str(f.relative_to(html_dir))] = len(data) if f.suffix in (".png", ".jpg", ".woff2", ".mp4", ".webm") else len(gzip.compress(data))
    return sizes


def test_folded_images_wait_for_their_fold():
    """A folded block's images carry data-src (restored when unfolded), others keep src."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from companion_book import defer_folded_images

    out = defer_folded_images('<img src="a.png"><details><summary>s</summary><p><img src="b.png"></p></details><img src="c.png">')
    assert out.count(' src="') == 2 and 'data-src="b.png"' in out


@pytest.mark.parametrize("slug", [s for s in _slugs() if s in PAPER_CHAPTERS or s in ("claims", "introduction")])
def test_first_visit_weight(slug, chromium, html_dir, tmp_path):
    sizes = first_visit_bytes(chromium, html_dir, f"chapters/{slug}.html", tmp_path / "profile")
    total = sum(v for k, v in sizes.items() if not k.endswith((".mp4", ".webm")))
    top = sorted(sizes.items(), key=lambda kv: -kv[1])[:4]
    assert total <= FIRST_VISIT_BUDGET, f"{slug}: first visit {total / 1e6:.2f} MB (budget 1.5 MB): largest {top}"


# The icon webfont (book/_ext/companion_fonts.py): a first visit fetched Font Awesome's whole solid font,
# 156 kB, for about fifteen icons; the build cuts it to the icons the site draws.
ICON_FONT_BUDGET = 20_000


def _fonts_ext():
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import companion_fonts

    return companion_fonts


def test_first_visit_fetches_the_cut_icon_font(chromium, html_dir, tmp_path):
    sizes = first_visit_bytes(chromium, html_dir, "intro.html", tmp_path / "profile")
    icons = {k: v for k, v in sizes.items() if "fontawesome" in k}
    assert icons, "no icon font fetched: the check does not see the header's icons"
    heavy = {k: v for k, v in icons.items() if v > ICON_FONT_BUDGET}
    assert not heavy, f"icon fonts over {ICON_FONT_BUDGET:,} bytes on a first visit: {heavy}"


def test_cut_icon_fonts_draw_every_icon_of_the_pages(html_dir):
    """Every icon class the built pages and scripts use has its glyph in the cut fonts the stylesheet
    fetches (a missing one would draw as an empty box)."""
    from fontTools.ttLib import TTFont

    fonts = _fonts_ext()
    css = (html_dir / fonts.STYLESHEET).read_text(encoding="utf-8")
    cut = re.findall(r'url\(\.\./vendor/fontawesome/webfonts/([\w-]+\.subset\.woff)\) format\("woff"\)', css)
    assert cut, "the theme's stylesheet fetches no cut icon font"
    glyphs = set()
    for name in cut:
        glyphs |= set(TTFont(str(html_dir / fonts.FONTS / name)).getBestCmap())
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in html_dir.rglob("*.html")]
    texts += [p.read_text(encoding="utf-8", errors="replace") for p in (html_dir / "_static").rglob("*.js")]
    stylesheets = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in (html_dir / "_static").rglob("*.css"))
    classes = fonts.icon_classes(texts)
    assert {"fa-bars", "fa-magnifying-glass", "fa-circle-half-stroke", "fa-download"} <= classes, "the header's icons not seen"
    used = fonts.icon_codepoints(stylesheets, classes)
    assert len(used) >= 15
    missing = sorted(hex(p) for p in used - glyphs)
    assert not missing, f"icons the pages use but the cut fonts lack: {missing}"
