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

:func:`threads` sets torch's thread count for one run. Whether a second thread pays depends on the
field (2 cores, 2026-12-01/02): the metastable chapter's single-trial float64 fields took 334 s on two
threads against 184 s on one (metastable-sphere), while a batch of ~300 float64 trials of 256 tokens
ran 1.9x faster on two (stability-prop33); each experiment's config says which it uses.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import sys
from typing import Iterator

__all__ = ["tune_allocator", "threads", "ALLOCATOR_THRESHOLD"]

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


@contextlib.contextmanager
def threads(n: int | None) -> Iterator[None]:
    """Set torch's thread count inside the block, restore it after (None: leave it).

    Examples
    --------
    >>> import torch
    >>> before = torch.get_num_threads()
    >>> with threads(1):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    >>> with threads(0):
    ...     pass
    Traceback (most recent call last):
    ...
    ValueError: threads must be a positive number of torch threads or None, got 0
    """
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"threads must be a positive number of torch threads or None, got {n!r}")
    import torch  # here, so that importing this module stays cheap

    old = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)
