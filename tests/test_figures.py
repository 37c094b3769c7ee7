"""Figures compared as images (book/_scripts/companion_figures.py, nbval_figures.py; issue 21).

Both directions: a series moved by a few pixels, a series dropped or an axis limit changed fails;
the same figure with 1e-12 noise, or computed with one thread instead of two, passes. In-process
on rendered figures, and end to end through nbval on a small notebook whose text outputs stay
the same, so only the figure comparison can catch the changes. Also: every figure of the
committed references is under comparison, the references were drawn with the pinned settings,
and a refresh keeps cell ids.
"""
from __future__ import annotations

import base64
import copy
import doctest
import importlib.util
import io
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "book" / "_scripts"
CHAPTERS = ROOT / "book" / "chapters"
REFERENCES = sorted(CHAPTERS.glob("*.ipynb"))


def _load(name: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # refresh.py imports companion_figures by name
    spec.loader.exec_module(mod)
    return mod


cf = _load("companion_figures")
_load("reference_arithmetic")  # refresh.py imports it by name too


# --------------------------------------------------------------------------- rendering in-process
def _render(shift_px: float = 0.0, drop: int | None = None, ylim=(-0.6, 1.2), noise: float = 0.0, dpi: int | None = None) -> np.ndarray:
    """A chapter-like figure (three series, legend, labels) drawn as the inline backend draws it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.transforms as mt

    rc = matplotlib.rc_params_from_file(str(cf.RC_FILE), use_default_template=True)
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 10.0, 120)
    ys = [np.exp(-t / 3), 0.5 * np.cos(t) * np.exp(-t / 5), 0.2 + 0.05 * t]
    with matplotlib.rc_context(rc):
        fig, ax = plt.subplots(figsize=(6, 4))
        # Moves series 0 by exactly shift_px pixels (an offset in inches times the dpi).
        dots = dpi or fig.dpi  # the resolution the PNG is drawn at (retina: twice the figure's dpi)
        up = mt.offset_copy(ax.transData, fig, y=shift_px / dots, units="inches")
        for i, y in enumerate(ys):
            if i != drop:
                ax.plot(t, y * (1 + noise * rng.standard_normal(y.shape)), label=f"series {i}",
                        transform=up if i == 0 else ax.transData)
        ax.set_ylim(*ylim)
        ax.set_xlabel("t")
        ax.legend(loc="upper right")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight", **({"dpi": dpi} if dpi else {}))  # the inline backend's print_figure
        plt.close(fig)
    return cf.decode(buf.getvalue())


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return _render()


@pytest.mark.parametrize("shift", [0.125, 0.25])
def test_subpixel_move_passes(reference, shift):
    """A full-contrast line's edge pixels change by about shift * 224/255 (C0 blue on white):
    64/255 is crossed only beyond ~0.29 px."""
    assert cf.compare(reference, _render(shift_px=shift)).passed


@pytest.mark.parametrize("shift", [0.5, 1.0, 3.0])
def test_moved_series_fails(reference, shift):
    result = cf.compare(reference, _render(shift_px=shift))
    assert not result.passed
    # Both edges of a ~600 px long line change: hundreds of pixels, far beyond the 24 allowed.
    assert result.changed > 10 * result.tolerance.pixels, result.describe()


def test_dropped_series_fails(reference):
    result = cf.compare(reference, _render(drop=1))
    assert not result.passed and result.max_diff > 128, result.describe()


@pytest.mark.parametrize("ylim", [(-0.6, 1.3), (-0.6, 1.25), (-0.5, 1.2)])
def test_axis_limit_change_fails(reference, ylim):
    assert not cf.compare(reference, _render(ylim=ylim)).passed


def test_float_noise_passes(reference):
    result = cf.compare(reference, _render(noise=1e-12))
    # 1e-12 of a unit-scale series is 4e-10 px on this 400 px axis: at most a level or two of
    # antialiasing, nowhere near the 64/255 that counts a pixel as changed.
    assert result.passed and result.changed == 0 and result.max_diff <= 4, result.describe()


def test_tolerance_holds_at_retina_resolution():
    """The chapters draw PNGs at twice the figure's dpi (companion.pages.book_figures, IPython's
    retina format). Re-measured there: the same boundaries in device pixels (0.25 px passes, 0.3 px
    fails with ~770 pixels changed), a dropped series or a changed axis limit fails, 1e-12 noise
    changes no pixel. In CSS pixels the tolerance is therefore twice as strict as at 100 dpi."""
    ref = _render(dpi=200)
    assert ref.shape[0] > 700, "not drawn at 200 dpi"
    assert cf.compare(ref, _render(shift_px=0.25, dpi=200)).passed
    moved = cf.compare(ref, _render(shift_px=0.3, dpi=200))
    assert not moved.passed and moved.changed > 10 * moved.tolerance.pixels, moved.describe()
    assert not cf.compare(ref, _render(drop=1, dpi=200)).passed
    assert not cf.compare(ref, _render(ylim=(-0.5, 1.2), dpi=200)).passed
    noise = cf.compare(ref, _render(noise=1e-12, dpi=200))
    assert noise.passed and noise.changed == 0, noise.describe()


def test_size_change_is_reported():
    e = np.full((30, 40, 3), 255, np.uint8)
    result = cf.compare(e, e[:, :39])
    assert not result.passed and result.describe() == "size changed from 40x30 to 39x30 pixels"
    assert cf.diff_image(e, e[:, :39]).shape == (30, 40, 3)


def test_bad_input_is_refused():
    e = np.full((3, 3, 3), 255, np.uint8)
    with pytest.raises(ValueError, match="expected must be"):
        cf.compare(e[..., 0], e)
    with pytest.raises(TypeError, match="tolerance must be"):
        cf.compare(e, e, tolerance=3)
    with pytest.raises(ValueError, match="pixels must be"):
        cf.Tolerance(pixels=-1)
    with pytest.raises(TypeError, match="png must be"):
        cf.decode(3)


@pytest.mark.parametrize("name", ["companion_figures", "refresh"])
def test_doctests(name):
    result = doctest.testmod(_load(name))
    assert result.attempted > 0 and result.failed == 0


# --------------------------------------------------------------------------- end to end through nbval
SETUP = """\
import matplotlib.pyplot as plt
import matplotlib.transforms as mt
import numpy as np
import torch

THREADS, NOISE = {threads}, {noise}
torch.set_num_threads(THREADS)
g = torch.Generator().manual_seed(0)
a = torch.randn(64, 4096, generator=g, dtype=torch.float64)
b = torch.randn(4096, 3, generator=g, dtype=torch.float64)
walk = (torch.cumsum(a @ b, dim=0) / 64).numpy()  # (64, 3): three series, each a sum of GEMM products
rng = np.random.default_rng(1)
print(np.round(walk[-1], 6))"""

FIGURE = """\
# {name}
fig, ax = plt.subplots(figsize=(6, 4))
up = mt.offset_copy(ax.transData, fig, y={shift} / fig.dpi, units="inches")  # series 0 moved {shift} px
for i in range(3):
    if i != {drop}:
        y = walk[:, i] * (1 + NOISE * rng.standard_normal(64))
        ax.plot(y, label=f"series {{i}}", transform=up if i == 0 else ax.transData)
ax.set_ylim(walk.min() - 0.5, {top_scale} * walk.max() + 0.5)
ax.legend(loc="upper left")
plt.show()
print(np.round(walk.mean(axis=0), 4))"""

# name -> (shift in pixels, dropped series, scale of the upper y limit) in the changed notebook
CHANGES = {"same": (0, None, 1.0), "moved": (3, None, 1.0), "dropped": (0, 1, 1.0), "limit": (0, None, 1.3)}


def _notebook(threads: int, noise: float, changed: bool):
    cells = [nbformat.v4.new_code_cell(SETUP.format(threads=threads, noise=noise))]
    for name, (shift, drop, top) in CHANGES.items():
        if not changed:
            shift, drop, top = 0, None, 1.0
        cells.append(nbformat.v4.new_code_cell(FIGURE.format(name=name, shift=shift, drop=drop, top_scale=top)))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _nbval(folder: Path, notebook: str, plugin: bool, threads: int = 2) -> subprocess.CompletedProcess:
    env = cf.use_book_rendering(dict(os.environ))
    env["PYTHONPATH"] = os.pathsep.join([str(SCRIPTS), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(OMP_NUM_THREADS=str(threads), NUMBA_NUM_THREADS=str(threads))
    (folder / "pytest.ini").write_text("[pytest]\n")  # not the repository's configuration
    args = [sys.executable, "-m", "pytest", "--nbval", notebook, "-p", "no:cacheprovider", "-rA", "-c", "pytest.ini",
            "--rootdir", str(folder)]
    if plugin:
        args += ["-p", "nbval_figures", "--figure-diffs", str(folder / "diffs")]
    return subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def _outcomes(stdout: str) -> dict[int, str]:
    return {int(m[2]): m[1] for m in re.finditer(r"^(PASSED|FAILED) \S+::Cell (\d+)", stdout, re.M)}


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    """A reference executed with two threads, and a copy of it whose cells draw changed figures
    (outputs kept), checked by nbval with one thread and 1e-12 noise, with and without the plugin."""
    from nbclient import NotebookClient

    folder = tmp_path_factory.mktemp("figures")
    ref = _notebook(threads=2, noise=0.0, changed=False)
    NotebookClient(ref, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute(env=cf.use_book_rendering(dict(os.environ)))
    check = _notebook(threads=1, noise=1e-12, changed=True)
    for cell, done in zip(check.cells, ref.cells):
        cell.outputs, cell.execution_count = done.outputs, done.execution_count
    nbformat.write(check, folder / "chapter.ipynb")
    checked = _nbval(folder, "chapter.ipynb", plugin=True, threads=1)
    return folder, ref, checked, _nbval(folder, "chapter.ipynb", plugin=False, threads=1)


def test_nbval_alone_misses_the_changes(e2e):
    """The reason for the plugin: the changed cells print the same numbers, so text comparison passes."""
    _, _, _, plain = e2e
    assert _outcomes(plain.stdout) == {0: "PASSED", 1: "PASSED", 2: "PASSED", 3: "PASSED", 4: "PASSED"}, plain.stdout[-3000:]


def test_nbval_with_figures_fails_exactly_the_changed_cells(e2e):
    folder, _, run, _ = e2e
    # Cell 0: one thread instead of two; Cell 1: same figure from one-thread data with 1e-12 noise.
    assert _outcomes(run.stdout) == {0: "PASSED", 1: "PASSED", 2: "FAILED", 3: "FAILED", 4: "FAILED"}, run.stdout[-4000:]
    assert run.returncode == 1


def test_failure_names_chapter_cell_figure_and_writes_images(e2e):
    folder, ref, run, _ = e2e
    diffs = folder / "diffs"
    for cell, name in ((2, "moved"), (3, "dropped"), (4, "limit")):
        assert f"chapter chapter (chapter.ipynb), Cell {cell}" in run.stdout and f"'# {name}'" in run.stdout
        stem = f"chapter-cell{cell:02d}-fig1"
        for kind in ("expected", "actual", "diff"):
            path = diffs / f"{stem}-{kind}.png"
            assert path.exists() and f"{kind:<8} {path}" in run.stdout, run.stdout[-4000:]
        # The expected image is the reference's figure, pixel for pixel.
        png = next(o for o in ref.cells[cell].outputs if "image/png" in o.get("data", {}))["data"]["image/png"]
        assert np.array_equal(cf.decode((diffs / f"{stem}-expected.png").read_bytes()), cf.decode(png))
    assert "figure 1 of 1: " in run.stdout and "make refresh CHAPTER=chapter" in run.stdout
    assert not list(diffs.glob("chapter-cell01-*"))  # a passing figure leaves nothing behind
    assert f"figures: 4 of 4 reference figures compared as images; differ in chapter.ipynb Cell 2, " \
           f"chapter.ipynb Cell 3, chapter.ipynb Cell 4: expected/actual/diff PNGs in {diffs}" in run.stdout


# --------------------------------------------------------------------------- the book's references
def _png_chunks(png: bytes) -> dict[bytes, list[bytes]]:
    chunks, pos = {}, 8
    while pos < len(png):
        (n,) = struct.unpack(">I", png[pos:pos + 4])
        chunks.setdefault(png[pos + 4:pos + 8], []).append(png[pos + 8:pos + 8 + n])
        pos += 12 + n
    return chunks


def _reference_pngs(path: Path) -> list[bytes]:
    """Every PNG output of a reference, shown (image/png) or glued by myst_nb, read from its JSON
    (independent of the plugin)."""
    nb = json.loads(path.read_text())
    keys = ("image/png", "application/papermill.record/image/png")
    return [base64.b64decode(o["data"][k]) for c in nb["cells"] for o in c.get("outputs", [])
            for k in keys if k in o.get("data", {})]


def test_every_reference_figure_is_under_comparison():
    """nbval over book/chapters (collect only: no kernel) announces how many figures it will compare."""
    counted = sum(len(_reference_pngs(p)) for p in REFERENCES)
    assert counted > 0
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "book/chapters", "--collect-only", "-q",
                          "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    m = re.search(r"figures: (\d+) reference figures in (\d+) notebooks under image comparison", run.stdout)
    assert m, run.stdout[-2000:] + run.stderr[-2000:]
    assert (int(m[1]), int(m[2])) == (counted, len(REFERENCES)), run.stdout[-2000:]
    assert "NOT compared" not in run.stdout


@pytest.mark.parametrize("path", REFERENCES, ids=[p.stem for p in REFERENCES])
def test_references_drawn_with_the_pinned_settings(path):
    """Every reference PNG says 100 dpi (3937 pixels per metre), the pinned figure.dpi, or 200 dpi
    for a retina figure, and carries no timestamp (no tIME chunk, no date among its text chunks)."""
    import matplotlib

    dpi = matplotlib.rc_params_from_file(str(cf.RC_FILE), use_default_template=False)["figure.dpi"]
    for png in _reference_pngs(path):
        chunks = _png_chunks(png)
        x, y, unit = struct.unpack(">IIB", chunks[b"pHYs"][0])
        # at the pinned dpi, or twice it where the chapter draws for high-density screens
        # (companion.pages.book_figures: IPython's "retina" PNGs, shown at the pinned size)
        assert (x, y, unit) in {(round(k * dpi / 0.0254), round(k * dpi / 0.0254), 1) for k in (1, 2)}, (x, y, unit)
        assert b"tIME" not in chunks
        keys = [t.split(b"\0")[0] for t in chunks.get(b"tEXt", []) + chunks.get(b"iTXt", [])]
        assert keys == [b"Software"], keys


def test_pinned_fonts_are_matplotlibs_own():
    import matplotlib
    from matplotlib import font_manager

    rc = matplotlib.rc_params_from_file(str(cf.RC_FILE), use_default_template=True)
    with matplotlib.rc_context(rc):
        found = Path(font_manager.findfont(font_manager.FontProperties(family=rc["font.family"])))
    assert found.is_relative_to(Path(matplotlib.get_data_path())), found


def test_refresh_keeps_cell_ids():
    """A chapter re-read from its source keeps every id of its reference; an edited cell keeps its
    id, an inserted one gets a new id derived from its source."""
    refresh = _load("refresh")
    old = nbformat.read(CHAPTERS / "introduction.ipynb", as_version=4).cells
    new = [nbformat.v4.new_code_cell(c.source) if c.cell_type == "code" else nbformat.v4.new_markdown_cell(c.source)
           for c in copy.deepcopy(old)]
    k = next(i for i, c in enumerate(new) if c.cell_type == "code")
    new[k].source += "\nprint('edited')"
    new.insert(1, nbformat.v4.new_markdown_cell("An inserted paragraph."))
    refresh.keep_ids(new, old)
    assert [c.id for c in new[:1] + new[2:]] == [c.id for c in old]
    assert new[1].id not in {c.id for c in old} and new[1].id.startswith("m-")
