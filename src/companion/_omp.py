"""Whether numba's parallel kernels may start their threads in this process.

numba's ``prange`` runs on GNU OpenMP here (its default threading layer), and GNU OpenMP cannot run
in a child forked from a process that had started it: the child aborts ("fork() called from a
process already using GNU OpenMP") and a ``multiprocessing`` pool waits on it for ever. So a forked
child runs the compiled kernels' work items one after another on its own thread: the same code on
the same items, the same numbers (:mod:`companion._fused`, :mod:`companion._circle_grid`).
"""
from __future__ import annotations

import os

__all__ = ["forked"]

_FORKED = False  # set in a child forked from this process (whether or not the parent had started OpenMP)


def _after_fork() -> None:
    global _FORKED
    _FORKED = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def forked() -> bool:
    """True in a process forked from the one that imported this module: run kernels serially there.

    Examples
    --------
    >>> forked()
    False
    """
    return _FORKED
