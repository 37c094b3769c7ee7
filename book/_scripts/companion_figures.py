"""Figures compared as images: a chapter's PNG outputs against its committed reference notebook.

nbval compares text outputs only (it drops ``image/png`` unless run with nbdime, which compares
bytes). ``nbval_figures.py`` calls this module from inside the nbval step; the rules live here:

* **Same size.** A figure drawn with ``bbox_inches="tight"`` changes size when its tick labels,
  title or legend change; a different size fails.
* **At most** ``Tolerance.pixels`` **pixels changed by more than** ``Tolerance.level`` (out of 255,
  largest channel difference, both images flattened onto white).

What the default (``level=64``, ``pixels=24``) lets through, measured on a 6 x 4 inch figure at
100 dpi (tests/test_figures.py proves both directions): a line of full contrast moved by up to
0.25 pixel passes (its edge pixels change by ``shift * 224`` levels at most); at 0.3 pixel about
400 pixels change and it fails, as do a series dropped or an axis limit changed. Markers snap to
whole pixels: one that jumps a pixel changes 11-22 pixels, so one or two may. Noise of 1e-12 in
the data changes no pixel by more than 2 levels, and the chapters re-executed with one thread
instead of two drew every figure identically. The chapters draw at twice that resolution (retina,
:func:`companion.pages.book_figures`); re-measured there, the boundaries are the same in device
pixels (0.25 passes, 0.3 fails with about 770 pixels changed), so in CSS pixels the tolerance is
twice as strict, and a marker that jumps one device pixel (about 44-88 pixels) fails.

The rendering settings that drew the references are pinned in ``book/_scripts/matplotlibrc``;
:func:`use_book_rendering` points ``MATPLOTLIBRC`` at it in every process that starts a chapter's kernel.
"""
from __future__ import annotations

import base64
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RC_FILE = HERE / "matplotlibrc"
PNG = "image/png"
# A figure glued by myst_nb (pages.paper_figure: the paper-scale figure) is stored under this key, which
# nbval would compare byte for byte: its antialiasing differs between machines, so it is compared as an image too.
GLUED = "application/papermill.record/image/png"


@dataclass(frozen=True)
class Tolerance:
    """How different two renderings of one figure may be and still pass.

    Parameters
    ----------
    level : int
        A pixel counts as changed when one of its RGB channels differs by more than ``level``
        (0-255).
    pixels : int
        At most this many changed pixels pass.

    Examples
    --------
    >>> Tolerance()
    Tolerance(level=64, pixels=24)
    >>> Tolerance(level=300)
    Traceback (most recent call last):
    ...
    ValueError: level must be an integer in [0, 255], got 300
    """

    level: int = 64
    pixels: int = 24

    def __post_init__(self) -> None:
        if not isinstance(self.level, int) or not 0 <= self.level <= 255:
            raise ValueError(f"level must be an integer in [0, 255], got {self.level!r}")
        if not isinstance(self.pixels, int) or self.pixels < 0:
            raise ValueError(f"pixels must be a non-negative integer, got {self.pixels!r}")


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`compare` (sizes are ``(width, height)``; ``changed`` counts pixels)."""

    expected_size: tuple[int, int]
    actual_size: tuple[int, int]
    changed: int
    max_diff: int
    rms: float
    tolerance: Tolerance

    @property
    def passed(self) -> bool:
        return self.expected_size == self.actual_size and self.changed <= self.tolerance.pixels

    def describe(self) -> str:
        """One line: why it failed, or how close it was.

        Examples
        --------
        >>> Comparison((10, 10), (10, 12), 0, 0, 0.0, Tolerance()).describe()
        'size changed from 10x10 to 10x12 pixels'
        >>> Comparison((10, 10), (10, 10), 30, 255, 5.25, Tolerance()).describe()
        '30 pixels changed by more than 64/255 (at most 24 may); largest change 255/255, RMS 5.25'
        """
        if self.expected_size != self.actual_size:
            (w0, h0), (w1, h1) = self.expected_size, self.actual_size
            return f"size changed from {w0}x{h0} to {w1}x{h1} pixels"
        return (f"{self.changed} pixels changed by more than {self.tolerance.level}/255 "
                f"(at most {self.tolerance.pixels} may); largest change {self.max_diff}/255, RMS {self.rms:.2f}")


def decode(png: str | bytes) -> np.ndarray:
    """A PNG (bytes, or base64 text as notebooks store it) as RGB pixels flattened onto white.

    Returns ``(height, width, 3)`` uint8.

    Examples
    --------
    >>> rgba = np.zeros((2, 3, 4), np.uint8)          # transparent black
    >>> decode(encode(rgba)).shape, int(decode(encode(rgba)).min())
    ((2, 3, 3), 255)
    """
    from PIL import Image

    if isinstance(png, str):
        png = base64.b64decode(png)
    if not isinstance(png, (bytes, bytearray)):
        raise TypeError(f"png must be bytes or base64 text, got {type(png).__name__}")
    img = Image.open(io.BytesIO(png)).convert("RGBA")
    white = Image.new("RGBA", img.size, (255, 255, 255, 255))
    return np.asarray(Image.alpha_composite(white, img).convert("RGB"))


def encode(pixels: np.ndarray) -> bytes:
    """PNG bytes of ``(height, width, 3 or 4)`` uint8 pixels (no metadata: no date).

    Examples
    --------
    >>> encode(np.full((1, 1, 3), 255, np.uint8))[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    from PIL import Image

    pixels = np.asarray(pixels)
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] not in (3, 4):
        raise ValueError(f"pixels must be (height, width, 3 or 4) uint8, got {pixels.shape} {pixels.dtype}")
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def compare(expected: np.ndarray, actual: np.ndarray, tolerance: Tolerance = Tolerance()) -> Comparison:
    r"""Compare two renderings ``(height, width, 3)`` of one figure.

    With :math:`\delta_p = \max_c |e_{p,c} - a_{p,c}|` per pixel :math:`p`, a figure passes when the
    sizes agree and

    .. math::

        \#\{p : \delta_p > \text{level}\} \le \text{pixels}.

    Examples
    --------
    >>> e = np.full((20, 30, 3), 255, np.uint8)
    >>> a = e.copy(); a[5, :, :] = 0                   # a 30-pixel black line appears
    >>> compare(e, e).passed, compare(e, a).passed, compare(e, a).changed
    (True, False, 30)
    >>> compare(e, a[:10]).describe()
    'size changed from 30x20 to 30x10 pixels'
    """
    if not isinstance(tolerance, Tolerance):
        raise TypeError(f"tolerance must be a Tolerance, got {type(tolerance).__name__}")
    for name, img in (("expected", expected), ("actual", actual)):
        if np.ndim(img) != 3 or np.shape(img)[2] != 3:
            raise ValueError(f"{name} must be (height, width, 3) pixels, got shape {np.shape(img)}")
    size = lambda img: (int(img.shape[1]), int(img.shape[0]))  # noqa: E731
    if expected.shape != actual.shape:
        return Comparison(size(expected), size(actual), 0, 0, 0.0, tolerance)
    d = np.abs(expected.astype(np.int16) - actual.astype(np.int16))
    delta = d.max(axis=2)
    return Comparison(size(expected), size(actual), int((delta > tolerance.level).sum()), int(delta.max()),
                      float(np.sqrt((d.astype(np.float64) ** 2).mean())), tolerance)


def diff_image(expected: np.ndarray, actual: np.ndarray, tolerance: Tolerance = Tolerance()) -> np.ndarray:
    """Where two renderings differ: the expected figure faded, changed pixels red, smaller changes blue.

    Images of different sizes are padded with white to the larger size. Returns
    ``(height, width, 3)`` uint8.

    Examples
    --------
    >>> e = np.full((4, 4, 3), 255, np.uint8); a = e.copy(); a[1, 1] = 0; a[2, 2] = 250
    >>> d = diff_image(e, a)
    >>> d[1, 1].tolist(), d[2, 2].tolist(), d[0, 0].tolist()
    ([255, 0, 0], [0, 90, 255], [255, 255, 255])
    """
    h = max(expected.shape[0], actual.shape[0])
    w = max(expected.shape[1], actual.shape[1])

    def pad(img: np.ndarray) -> np.ndarray:
        out = np.full((h, w, 3), 255, np.uint8)
        out[: img.shape[0], : img.shape[1]] = img
        return out

    e, a = pad(expected), pad(actual)
    delta = np.abs(e.astype(np.int16) - a.astype(np.int16)).max(axis=2)
    out = (255 - (255 - e.astype(np.float64)) * 0.25).astype(np.uint8)
    out[(delta > 0) & (delta <= tolerance.level)] = (0, 90, 255)
    out[delta > tolerance.level] = (255, 0, 0)
    return out


def figures(outputs: list) -> list[str]:
    """The base64 PNGs among a cell's outputs, shown or glued, in order.

    Examples
    --------
    >>> figures([{"output_type": "stream", "text": "x"},
    ...          {"output_type": "display_data", "data": {"image/png": "iVBO", "text/plain": "<Figure>"}},
    ...          {"output_type": "display_data", "data": {GLUED: "iVBG"}}])
    ['iVBO', 'iVBG']
    """
    return [d[k] for o in outputs for d in [o.get("data") or {}] for k in (PNG, GLUED) if k in d]


def artifact_stem(notebook: str | Path, cell: int, k: int) -> str:
    """File stem of one figure's expected/actual/diff images (``cell`` as nbval numbers code cells).

    Examples
    --------
    >>> artifact_stem("book/chapters/introduction.ipynb", 3, 1)
    'introduction-cell03-fig1'
    """
    return f"{Path(notebook).stem}-cell{cell:02d}-fig{k}"


def write_artifacts(folder: Path, stem: str, expected: np.ndarray, actual: np.ndarray,
                    tolerance: Tolerance = Tolerance()) -> list[Path]:
    """Write ``<stem>-expected.png``, ``-actual.png`` and ``-diff.png`` into ``folder``.

    Examples
    --------
    >>> import tempfile
    >>> img = np.full((3, 3, 3), 255, np.uint8)
    >>> [p.name for p in write_artifacts(Path(tempfile.mkdtemp()), "x-cell01-fig1", img, img)]
    ['x-cell01-fig1-expected.png', 'x-cell01-fig1-actual.png', 'x-cell01-fig1-diff.png']
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind, img in (("expected", expected), ("actual", actual), ("diff", diff_image(expected, actual, tolerance))):
        p = folder / f"{stem}-{kind}.png"
        p.write_bytes(encode(img))
        paths.append(p)
    return paths


def clear_artifacts(folder: Path, stem: str) -> None:
    """Remove the images an earlier failure of this figure left (a pass must not leave stale ones).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); (d / "x-cell01-fig1-diff.png").write_bytes(b"")
    0
    >>> clear_artifacts(d, "x-cell01-fig1"); list(d.iterdir())
    []
    """
    pattern = re.compile(re.escape(stem) + r"-(expected|actual|diff)\.png")
    if Path(folder).is_dir():
        for p in Path(folder).iterdir():
            if pattern.fullmatch(p.name):
                p.unlink()


def use_book_rendering(env: dict | None = None):
    """Point ``MATPLOTLIBRC`` at the book's rendering settings in ``env``, and return it.

    ``env`` defaults to this process's environment, which every kernel started later inherits
    (nbval's, ``make refresh``'s, the book build's): call it before a chapter's kernel starts.

    Examples
    --------
    >>> use_book_rendering({"PATH": "/bin"}) == {"PATH": "/bin", "MATPLOTLIBRC": str(RC_FILE)}
    True
    """
    env = os.environ if env is None else env
    env["MATPLOTLIBRC"] = str(RC_FILE)
    return env


def setup(app) -> dict:
    """Sphinx extension (book/_config.yml): chapters executed by the book build render like the references."""
    use_book_rendering()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
