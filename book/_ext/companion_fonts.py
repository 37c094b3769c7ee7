"""The icon webfont cut to the icons the site draws (issue 48: a page's first visit).

pydata-sphinx-theme 0.17 ships Font Awesome 6 whole, and every page fetches ``fa-solid-900.woff2``
(156 kB) to draw about fifteen icons (menu, search, theme switch, download, arrows). After an HTML
build this extension collects the icons the site uses: the ``fa-*`` classes written in its pages and
scripts, looked up in the theme's stylesheet, and the codepoints the stylesheets put in ``content``
themselves (the admonitions' icons, the sidebar's arrow). It cuts each Font Awesome font to them
with fontTools' subsetter (installed with matplotlib, which needs it) and points the stylesheet's
``@font-face`` at the cut font. fontTools writes WOFF2 only with the brotli package, which the pins do
not include, so the cut fonts are WOFF (zlib): 156 kB became a few kB all the same.

An icon a script would name at run time without its class in the script's text would draw as an empty
box: the theme's scripts name theirs literally (``fa-xmark``), and tests/test_render.py checks that the
pages' icons are drawn.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from sphinx.util import logging

logger = logging.getLogger(__name__)

FONTS = Path("_static", "vendor", "fontawesome", "webfonts")
STYLESHEET = Path("_static", "styles", "pydata-sphinx-theme.css")
_CLASS = re.compile(r"\bfa-[a-z0-9]+(?:-[a-z0-9]+)*")
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_ICON_SELECTOR = re.compile(r"\s*\.(fa-[a-z0-9-]+)(?:::?before)?\s*")
_ESCAPE = re.compile(r"\\([0-9a-fA-F]{4,6})")
_FACE = re.compile(r'url\(([^)]*?/webfonts/)([\w-]+)\.woff2\) format\("woff2"\)')


def _private(body: str) -> set[int]:
    """The codepoints of Unicode's private use area (where icon fonts put their glyphs) in a CSS rule's
    body, escaped (``"\\f0c9"``) or literal."""
    points = {int(h, 16) for h in _ESCAPE.findall(body)} | {ord(c) for c in body}
    return {p for p in points if 0xE000 <= p <= 0xF8FF}


def icon_codepoints(css: str, classes: Iterable[str]) -> set[int]:
    """The glyphs a site draws: those of the icon rules (``.fa-bars:before{content:"\\f0c9"}``) of the
    ``classes`` it uses, and every glyph the stylesheet's other rules name.

    >>> css = '.fa-bars:before,.fa-navicon:before{content:"\\\\f0c9"}.fa-xmark:before{content:"\\\\f00d"}' \\
    ...       '.fa-sun:before{content:"\\\\f185"}html{--pst-icon-info:"\\\\f05a"}.fa-lg{font-size:1.25em}'
    >>> sorted(hex(p) for p in icon_codepoints(css, {"fa-navicon", "fa-lg", "fa-solid"}))
    ['0xf05a', '0xf0c9']
    """
    classes = set(classes)
    found: set[int] = set()
    for selector, body in _RULE.findall(css):
        points = _private(body)
        if not points:
            continue
        names = [_ICON_SELECTOR.fullmatch(s) for s in selector.split(",")]
        if all(names):  # an entry of the icon catalogue: only if the site uses one of its names
            if any(m.group(1) in classes for m in names):
                found |= points
        else:
            found |= points
    return found


def icon_classes(texts: Iterable[str]) -> set[str]:
    """The ``fa-*`` class names in ``texts`` (pages, scripts).

    >>> sorted(icon_classes(['<i class="fa-solid fa-bars"></i>', 'e.className = "fa-solid fa-xmark";']))
    ['fa-bars', 'fa-solid', 'fa-xmark']
    """
    return {name for text in texts for name in _CLASS.findall(text)}


def cut_font(source: Path, target: Path, codepoints: set[int]) -> int:
    """Write ``source`` (a TrueType font) cut to ``codepoints`` as WOFF at ``target``; its size in bytes."""
    from fontTools import subset

    options = subset.Options()
    options.flavor = "woff"
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.notdef_outline = True
    font = subset.load_font(str(source), options)
    sub = subset.Subsetter(options)
    sub.populate(unicodes=sorted(codepoints))
    sub.subset(font)
    subset.save_font(font, str(target), options)
    return target.stat().st_size


def point_at_cut_fonts(css: str) -> tuple[str, list[str]]:
    """The stylesheet with each Font Awesome ``@font-face`` fetching ``<name>.subset.woff`` in place of
    ``<name>.woff2``, and the names it changed.

    >>> print(point_at_cut_fonts('src:url(../vendor/fontawesome/webfonts/fa-solid-900.woff2) format("woff2"),url(x.ttf)'))
    ('src:url(../vendor/fontawesome/webfonts/fa-solid-900.subset.woff) format("woff"),url(x.ttf)', ['fa-solid-900'])
    """
    names: list[str] = []

    def swap(m: re.Match) -> str:
        names.append(m.group(2))
        return f'url({m.group(1)}{m.group(2)}.subset.woff) format("woff")'

    return _FACE.sub(swap, css), names


def _trim_icon_fonts(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    css_path, fonts = out / STYLESHEET, out / FONTS
    if not css_path.is_file() or not fonts.is_dir():
        return
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in out.rglob("*.html")]
    texts += [p.read_text(encoding="utf-8", errors="replace") for p in (out / "_static").rglob("*.js")]
    stylesheets = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in (out / "_static").rglob("*.css"))
    points = icon_codepoints(stylesheets, icon_classes(texts))
    css, names = point_at_cut_fonts(css_path.read_text(encoding="utf-8"))
    sizes = {}
    for name in names:
        source = fonts / f"{name}.ttf"
        if not source.is_file():
            logger.warning(f"companion_fonts: {source} missing: the icon font cannot be cut")
            return
        sizes[name] = cut_font(source, fonts / f"{name}.subset.woff", points)
    css_path.write_text(css, encoding="utf-8")
    logger.info(f"companion_fonts: {len(points)} icons; " + ", ".join(f"{n} {s:,} bytes" for n, s in sizes.items()))


def setup(app) -> dict[str, Any]:
    app.connect("build-finished", _trim_icon_fonts)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
