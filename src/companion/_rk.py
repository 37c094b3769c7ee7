"""Runge-Kutta stage sums on the CPU in one compiled pass each (numba), with torch's roundings.

Private engine of :func:`companion.integrate.simulate`. A stage of an embedded pair needs
``x + h * sum_j a_j k_j``; written with torch tensors that is 2 s + 1 element-wise operations for s
terms (each product, each partial sum, the step, the update), each a pass over memory and a call
into torch: for the papers' ensembles (200 x 80 x 3 floats) a Tsitouras step spent a seventh of its
time there, outside the field (timings in ``bench/results/`` of the repository). :class:`StageSums`
does the same arithmetic in one call, keeping the partial sum in one buffer that stays in cache.

It rounds as torch does, operation for operation: each product ``a_j k_j`` in the tokens' precision
(the coefficient rounded to it first, as torch does with a Python float), the partial sums from
the left starting at 0 (Python's ``sum``), then ``h`` times the sum, then the addition of ``x``; no
fused multiply-add (numba contracts nothing without fastmath). So the integrator's results do not
change by a bit (tested against the torch expression).
"""
from __future__ import annotations

import functools
from typing import Sequence

import numpy as np
import torch

try:
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - the tests monkeypatch the flag
    numba = None
    HAVE_NUMBA = False

__all__ = ["StageSums", "compiled"]

_DTYPES = (torch.float32, torch.float64)


if HAVE_NUMBA:

    @numba.njit(cache=True, nogil=True)
    def _stage_sum(x, h, coef, ks, out, add_x):  # pragma: no cover - compiled; tested through stage_sum
        """out <- x + h * (0 + c_0 k_0 + c_1 k_1 + ...) (add_x) or h * (...), 1-D arrays of one dtype."""
        F = out.dtype.type
        m = out.size
        c = F(coef[0])
        k = ks[0]
        for e in range(m):
            out[e] = F(0.0) + c * k[e]
        for j in range(1, len(ks)):
            c = F(coef[j])
            k = ks[j]
            for e in range(m):
                out[e] = out[e] + c * k[e]
        hh = F(h)
        if add_x:
            for e in range(m):
                out[e] = x[e] + hh * out[e]
        else:
            for e in range(m):
                out[e] = hh * out[e]


def compiled(x: torch.Tensor, ks: Sequence[torch.Tensor]) -> bool:
    """Whether stage sums of these tensors take the compiled pass: numba is installed, and x and every k
    are contiguous CPU float32 or float64 tensors of x's dtype and shape, none needing a gradient.

    Examples
    --------
    >>> x = torch.zeros(2, 3)
    >>> compiled(x, [x]) == HAVE_NUMBA, compiled(x, [x.double()]), compiled(x, [x.T])
    (True, False, False)
    """
    if not HAVE_NUMBA or x.device.type != "cpu" or x.dtype not in _DTYPES or x.requires_grad or not x.is_contiguous():
        return False
    return all(_like(k, x) for k in ks)


def _like(k: torch.Tensor, x: torch.Tensor) -> bool:
    """k can join x's compiled sums: x's dtype, device and shape, contiguous, no gradient."""
    return (k.dtype == x.dtype and k.device == x.device and k.shape == x.shape and k.is_contiguous()
            and not k.requires_grad)


@functools.lru_cache(maxsize=None)
def _terms(coef: tuple[float, ...]) -> tuple[tuple[int, ...], np.ndarray]:
    """The indices of coef's nonzero entries and those entries (float64, read-only): the terms of a sum."""
    index = tuple(j for j, c in enumerate(coef) if c != 0.0)
    values = np.array([coef[j] for j in index], dtype=np.float64)
    values.flags.writeable = False
    return index, values


class StageSums:
    r"""The stages :math:`k_j` of one Runge-Kutta step from x, and their sums

    .. math::

        x + h \sum_j c_j k_j \quad (\text{add\_x}), \qquad h \sum_j c_j k_j,

    skipping zero coefficients. x and each k: tensors of one shape (for the integrator (trials, n, d)).
    Compiled while every stage allows it (:func:`compiled`), as torch expressions otherwise (any
    device); both round alike, so the choice never changes a result.

    Examples
    --------
    >>> stages = StageSums(torch.zeros(2, 2))
    >>> stages.add(torch.ones(2, 2)); stages.add(2 * torch.ones(2, 2))
    >>> stages(0.5, (1.0, 0.0)).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    >>> stages(2.0, (1.0, 0.25), add_x=False).tolist()
    [[3.0, 3.0], [3.0, 3.0]]
    """

    def __init__(self, x: torch.Tensor):
        self.x = x
        self.ks: list[torch.Tensor] = []
        # numpy views of x and its stages while every one allows the compiled pass, else None
        self._flat: list[np.ndarray] | None = [x.view(-1).numpy()] if compiled(x, []) else None

    def add(self, k: torch.Tensor) -> None:
        """Append the next stage."""
        self.ks.append(k)
        if self._flat is not None:
            if _like(k, self.x):
                self._flat.append(k.view(-1).numpy())
            else:
                self._flat = None

    def __call__(self, h: float, coef: Sequence[float], add_x: bool = True) -> torch.Tensor:
        index, values = _terms(tuple(coef[:len(self.ks)]))
        if not index:
            return self.x.clone() if add_x else torch.zeros_like(self.x)
        if self._flat is None:
            s = h * sum(coef[j] * self.ks[j] for j in index)
            return self.x + s if add_x else s
        out = torch.empty_like(self.x)
        _stage_sum(self._flat[0], float(h), values, tuple(self._flat[j + 1] for j in index), out.view(-1).numpy(), add_x)
        return out
