"""No rounding noise printed by the cells nbval recomputes.

A cell marked ``# The CI check`` is re-executed on the CI machine and its text compared with the
committed reference. A number at the level of float64 rounding (1e-13 and below) differs between
machines in its digits and even its decade: stop 37's CI failed on ``3.1e-14`` against ``2.8e-14``
and ``6.7e-16`` against ``1.1e-15``. Such a number must be printed as a bound,
:func:`companion.report.below` (``< 1e-12``), never as digits. Stored results (cells that load
them) are the same on every machine and are not checked here.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

CHAPTERS = Path(__file__).resolve().parents[1] / "book" / "chapters"
REFERENCES = sorted(CHAPTERS.glob("*.ipynb"))
# a number in scientific notation of exponent -13 or lower, not written as a bound ("< 1e-12")
NOISE = re.compile(r"(?<![<>] )(?<![\w.])-?\d(?:\.\d+)?e-(?:1[3-9]|[2-9]\d|\d{3})\b")


def noise_in(text: str) -> list[str]:
    """The rounding-noise numbers printed in ``text``.

    >>> noise_in("drift = 2.8e-14; bound < 1e-15; rate 3.1e-05; x = -6.7e-16")
    ['2.8e-14', '-6.7e-16']
    """
    return [m.group(0) for m in NOISE.finditer(text)]


def _texts(cell) -> str:
    out = []
    for o in cell.get("outputs", []):
        if "text" in o:
            out.append(o["text"])
        elif "text/plain" in o.get("data", {}):
            out.append(o["data"]["text/plain"])
    return "\n".join(out)


def test_detector_finds_noise_and_spares_bounds():
    assert noise_in("max |Pi(x_t) - Pi(x_0)| = 3.1e-14") == ["3.1e-14"]
    assert noise_in("mass drift = 1.1e-15 and 4e-120") == ["1.1e-15", "4e-120"]
    assert noise_in("max |modal - direct| = < 1e-12; spread 4.3e-08; z = 9.66e-09") == []


@pytest.mark.parametrize("ref", REFERENCES, ids=[p.stem for p in REFERENCES])
def test_recomputed_cells_print_no_rounding_noise(ref):
    nb = nbformat.read(ref, as_version=4)
    found = [(i, noise_in(_texts(c))) for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and c.source.lstrip().startswith("# The CI check")]
    found = [(i, n) for i, n in found if n]
    assert not found, (f"{ref.name}: cells {[i for i, _ in found]} print rounding noise {[n for _, n in found]}: "
                       "print it with companion.report.below (a bound), then `make refresh CHAPTER=...`")
