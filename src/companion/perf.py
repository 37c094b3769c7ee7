"""Process-level settings that make the CPU path fast; opt-in, never applied on import.

glibc's malloc serves every allocation above a threshold (128 KiB at start, adapted up to 32 MiB)
with a fresh ``mmap`` and returns it to the OS on free, so a tensor of a few MB made at every step
of an integrator is page-faulted in again at every step: a float32 field evaluation of a chapter's
ensemble then spends much of its time in the kernel's page-fault handler, and none after
:func:`tune_allocator` (timings and fault counts: ``bench/results/README.md`` in the repository).
torch has no caching allocator on the CPU, so the remedy is glibc's own: a fixed mmap
threshold and a high trim threshold (memory freed by one step is reused by the next). The command
line, the benchmarks and ``make`` apply it (the Makefile through glibc's ``MALLOC_MMAP_THRESHOLD_``
and ``MALLOC_TRIM_THRESHOLD_``, so notebook kernels inherit it); call it yourself in scripts.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["tune_allocator", "ALLOCATOR_THRESHOLD"]

# Allocations below this come from the heap and freed memory up to this stays with the process.
ALLOCATOR_THRESHOLD = 1 << 30
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


def tune_allocator(threshold: int = ALLOCATOR_THRESHOLD) -> bool:
    """Keep freed memory for reuse instead of returning it to the OS (glibc only).

    Parameters
    ----------
    threshold : int
        Bytes, > 0: allocations below it are served from the heap, and up to this much freed memory
        at the top of the heap is kept.

    Returns
    -------
    True if glibc accepted the settings; False on other C libraries (nothing changed).

    Examples
    --------
    >>> tune_allocator() in (True, False)
    True
    >>> tune_allocator(0)
    Traceback (most recent call last):
    ...
    ValueError: threshold must be a positive number of bytes, got 0
    """
    if not isinstance(threshold, int) or threshold <= 0:
        raise ValueError(f"threshold must be a positive number of bytes, got {threshold!r}")
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    # mallopt takes a C int
    value = min(threshold, 2**31 - 1)
    return bool(mallopt(_M_MMAP_THRESHOLD, value)) and bool(mallopt(_M_TRIM_THRESHOLD, value))
