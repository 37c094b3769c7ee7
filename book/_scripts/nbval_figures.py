"""pytest plugin: nbval also compares every figure of a notebook with its reference, as an image.

Loaded by book/chapters/conftest.py, so ``pytest --nbval book/chapters`` (``make test-nbval``)
and nbval on one chapter check figures too; elsewhere ``-p nbval_figures`` with book/_scripts on
the path. For each cell nbval checks (not ``nbval-skip``, not ``nbval-ignore-output``, executed in
the reference), the i-th PNG the cell draws now is compared with the i-th PNG of the reference
(rules and tolerance: companion_figures.py). A difference fails that cell, naming the chapter,
cell and figure, and writes expected, actual and diff images to ``--figure-diffs`` (default
book/_build/figure-diffs), which the failure and the terminal summary print.

Before any kernel starts, ``MATPLOTLIBRC`` is pointed at the book's rendering settings.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

import companion_figures as cf
from reference_arithmetic import use_reference_arithmetic

DEFAULT_DIFFS = Path("book") / "_build" / "figure-diffs"


class FigureMismatch(AssertionError):
    """A cell's figures differ from its reference (the message says which and where the images are)."""


@dataclass
class _State:
    folder: Path
    tolerance: cf.Tolerance = cf.Tolerance()
    planned: int = 0
    compared: int = 0
    failed: list[str] = field(default_factory=list)
    closest: tuple = (-1, -1, "")  # (changed pixels, largest change, figure): the pass nearest the limit


_KEY = pytest.StashKey[_State]()


def pytest_addoption(parser) -> None:
    parser.getgroup("nbval").addoption(
        "--figure-diffs", default=None, metavar="DIR",
        help=f"where differing figures are written as expected/actual/diff PNGs (default {DEFAULT_DIFFS})")


def pytest_configure(config) -> None:
    cf.use_book_rendering()  # before nbval starts a kernel: they inherit it
    use_reference_arithmetic()
    folder = config.getoption("figure_diffs", default=None)
    folder = Path(folder) if folder else config.rootpath / DEFAULT_DIFFS
    config.stash[_KEY] = _State(folder=folder.resolve())


def _nbval_cell(item) -> bool:
    from nbval.plugin import IPyNbCell

    return isinstance(item, IPyNbCell)


def _compared(item) -> bool:
    """Whether nbval checks this cell's outputs, and so this plugin its figures."""
    return (_nbval_cell(item) and bool(item.options["check"]) and not item.options["skip"]
            and item.cell.get("execution_count") is not None)


def pytest_collection_finish(session) -> None:
    state = session.config.stash.get(_KEY, None)
    cells = [i for i in session.items if _nbval_cell(i)]
    if state is not None:
        for notebook in {i.parent for i in cells}:  # glued figures: as images here, not as text by nbval
            if cf.GLUED not in notebook.skip_compare:
                notebook.skip_compare = (*notebook.skip_compare, cf.GLUED)
    if state is None or not cells:
        return
    state.planned = sum(len(cf.figures(i.cell.outputs)) for i in cells if _compared(i))
    left = [f"{i.path.name} Cell {i.cell_num}" for i in cells if not _compared(i) and cf.figures(i.cell.outputs)]
    notebooks = len({i.path for i in cells})
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(f"figures: {state.planned} reference figures in {notebooks} notebooks under image comparison "
                      f"(tolerance: {state.tolerance.pixels} pixels may change by more than {state.tolerance.level}/255)")
        if left:
            tr.write_line(f"figures: NOT compared (nbval-skip, nbval-ignore-output or unexecuted): {', '.join(left)}")


def _first_line(source: str) -> str:
    lines = [s for s in source.splitlines() if s.strip()]
    return lines[0].strip()[:80] if lines else ""


def _check_figures(item, state: _State) -> list[str]:
    """Compare the figures nbval just captured for ``item`` with its reference; the problems found."""
    ref = cf.figures(item.cell.outputs)
    new = cf.figures(item.test_outputs or [])
    state.compared += len(ref)
    problems = []
    if len(ref) != len(new):
        problems.append(f"the reference has {len(ref)} figure(s), this run drew {len(new)}")
    for k in range(1, max(len(ref), len(new)) + 1):
        stem = cf.artifact_stem(item.path, item.cell_num, k)
        cf.clear_artifacts(state.folder, stem)
        e = cf.decode(ref[k - 1]) if k <= len(ref) else None
        a = cf.decode(new[k - 1]) if k <= len(new) else None
        if e is None or a is None:  # a figure missing from this run, or new in it
            kind, img = ("expected", e) if a is None else ("actual", a)
            state.folder.mkdir(parents=True, exist_ok=True)
            (p := state.folder / f"{stem}-{kind}.png").write_bytes(cf.encode(img))
            problems.append(f"figure {k}: {'missing from this run' if a is None else 'not in the reference'}\n"
                            f"    {kind:<8} {p}")
            continue
        result = cf.compare(e, a, state.tolerance)
        if result.passed:
            name = f"{item.path.name} Cell {item.cell_num} figure {k}"
            state.closest = max(state.closest, (result.changed, result.max_diff, name))
            continue
        exp, act, diff = cf.write_artifacts(state.folder, stem, e, a, state.tolerance)
        problems.append(f"figure {k} of {len(ref)}: {result.describe()}\n"
                        f"    expected {exp}\n    actual   {act}\n    diff     {diff} (red: changed beyond the tolerance)")
    return problems


def _message(item, problems: list[str]) -> str:
    cid = item.cell.get("id")
    head = (f"Figures differ from the reference: chapter {item.path.stem} ({item.path.name}), "
            f"Cell {item.cell_num}{f' (cell id {cid})' if cid else ''}: {_first_line(item.cell.source)!r}")
    tail = (f"If the change is intended, re-execute the chapter into its reference "
            f"(make refresh CHAPTER={item.path.stem}) and review the figure in the diff.")
    return "\n".join([head, *("  " + p for p in problems), tail])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    state = item.config.stash.get(_KEY, None)
    if state is None or not _compared(item):
        return (yield)
    try:
        result = yield
    except Exception:
        # nbval already fails the cell. If only its text differs, report the figures beside it.
        outs = item.test_outputs or []
        if outs and not any(o.get("output_type") == "error" for o in outs):
            _report(item, state, fail=False)
        raise
    _report(item, state, fail=True)
    return result


def _report(item, state: _State, fail: bool) -> None:
    problems = _check_figures(item, state)
    if not problems:
        return
    state.failed.append(f"{item.path.name} Cell {item.cell_num}")
    if fail:
        raise FigureMismatch(_message(item, problems))
    item.add_report_section("call", "figures", _message(item, problems))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.excinfo is not None and isinstance(call.excinfo.value, FigureMismatch):
        report.longrepr = str(call.excinfo.value)
    return report


def pytest_terminal_summary(terminalreporter) -> None:
    state = terminalreporter.config.stash.get(_KEY, None)
    if state is None or terminalreporter.config.option.collectonly or not (state.planned or state.compared):
        return
    line = f"figures: {state.compared} of {state.planned} reference figures compared as images"
    if state.failed:
        line += f"; differ in {', '.join(state.failed)}: expected/actual/diff PNGs in {state.folder}"
    terminalreporter.write_line(line)
    if state.closest[0] >= 0:
        changed, largest, name = state.closest
        terminalreporter.write_line(f"figures: nearest the limit among those that pass: {name}, {changed} pixels "
                                    f"changed by more than {state.tolerance.level}/255, largest change {largest}/255")
