"""One figure style for the book: the same colour for the same quantity in every chapter, and sizes
that fit the page's column (about 7.5 inches at the book's 100 dpi) with text of at least 10 pt.

Plot functions take these instead of their own choices, so that a reader learns the code once:
what was measured is blue, the paper's closed form or prediction black (dashed where it is a
curve), a bound the paper proves red, a second method or reference grey.

Examples
--------
>>> COLORS["measured"], FULL_WIDTH <= 7.5, MIN_FONT >= 10
('#1f77b4', True, True)
"""
from __future__ import annotations

__all__ = ["COLORS", "FULL_WIDTH", "PANEL", "MIN_FONT", "STATUS_COLORS", "log_x"]

COLORS = {
    "measured": "#1f77b4",   # what the simulator or the model gives
    "theory": "#000000",     # the paper's closed form or prediction
    "bound": "#d62728",      # an upper or lower bound the paper proves
    "reference": "#7f7f7f",  # a second method, a baseline, the initial state
    "accent": "#ff7f0e",     # a second measured family, when two are compared
}
# The verdict colours of book/_static/companion.css, for figures that mark a verdict.
STATUS_COLORS = {"reproduced": "#1a7f37", "partly": "#9a6700", "not-reproduced": "#cf222e", "inconclusive": "#8c959f",
                 "not-checkable": "#57606a", "our derivations": "#d0d7de"}
FULL_WIDTH = 7.2   # inches: the widest figure the column shows at its size (720 CSS px at 100 dpi)
PANEL = 3.4        # inches: one panel of a two-panel row
MIN_FONT = 10      # points: the smallest text in a figure (ticks included), at the size the page shows it


def log_x(ax) -> None:
    """Make ``ax``'s x axis logarithmic, labelled at 1, 2 and 5 times powers of ten in plain numbers
    (matplotlib's default labels every minor tick as 2x10^0, 3x10^0, ..., which overlap on a narrow range).

    Examples
    --------
    >>> import matplotlib
    >>> _ = matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([1.5, 25.0], [1.0, 2.0]); log_x(ax); fig.canvas.draw()
    >>> [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text() and 1.5 <= t.get_position()[0] <= 25]
    ['2', '5', '20']
    >>> plt.close(fig)
    """
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_xscale("log")
    ax.xaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    for set_formatter in (ax.xaxis.set_major_formatter, ax.xaxis.set_minor_formatter):
        set_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
