"""The Runge-Kutta steppers behind :func:`companion.integrate.simulate`, one object a method, and their stage sums.

A stepper advances the tokens ``x : (trials, n, d)`` by one step of size h under a field
``f(t, x) -> (trials, n, d)``; it knows nothing of save times, step sizes or retractions
(:mod:`companion.integrate` drives it). :data:`SOLVERS` maps the method names ``simulate`` takes to
them: :class:`Euler` and :class:`RK4` (fixed step, each with its linear stability interval), and the
embedded pairs :data:`DOPRI5` and :data:`TSIT5` (:class:`EmbeddedPair`: a tableau, a 5th-order
solution and an error estimate for the step-size controller).

The pairs' stages are sums ``x + h * sum_j a_j k_j``; written with torch tensors that is 2 s + 1
element-wise operations for s terms (each product, each partial sum, the step, the update), each a
pass over memory and a call into torch: for the papers' ensembles (200 x 80 x 3 floats) a Tsitouras
step spent a seventh of its time there, outside the field (timings in ``bench/results/`` of the
repository). :class:`StageSums` does the same arithmetic on the CPU in one compiled pass (numba),
keeping the partial sum in one buffer that stays in cache.

It rounds as torch does, operation for operation: each product ``a_j k_j`` in the tokens' precision
(the coefficient rounded to it first, as torch does with a Python float), the partial sums from
the left starting at 0 (Python's ``sum``), then ``h`` times the sum, then the addition of ``x``; no
fused multiply-add (numba contracts nothing without fastmath). So the integrator's results do not
change by a bit (tested against the torch expression).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, ClassVar, Sequence

import numpy as np
import torch

try:
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - the tests monkeypatch the flag
    numba = None
    HAVE_NUMBA = False

__all__ = ["StageSums", "compiled", "Euler", "RK4", "EmbeddedPair", "DOPRI5", "TSIT5", "SOLVERS"]

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


Field = Callable[[float, torch.Tensor], torch.Tensor]  # f(t, x) -> dx/dt, x : (trials, n, d)


@dataclasses.dataclass(frozen=True)
class Euler:
    r"""Explicit Euler, a fixed-step method of order 1: one field evaluation a step.

    .. math::

        x_{k+1} = x_k + h\, F(t_k, x_k), \qquad R(z) = 1 + z,

    stable on the negative real axis for :math:`hL \le 2` (:attr:`stability_limit`, the root of
    :math:`|R(z)| = 1`).

    Examples
    --------
    >>> Euler().step(lambda t, x: -x, 0.0, torch.ones(1, 1, 1), 0.5).item()  # 1 - 0.5
    0.5
    """

    name: ClassVar[str] = "euler"
    adaptive: ClassVar[bool] = False
    order: ClassVar[int] = 1
    stability_limit: ClassVar[float] = 2.0

    def step(self, f: Field, t: float, x: torch.Tensor, h: float) -> torch.Tensor:
        """x at t + h, (trials, n, d) like x."""
        return x + h * f(t, x)


@dataclasses.dataclass(frozen=True)
class RK4:
    r"""The classical Runge-Kutta method, fixed step, order 4: four field evaluations a step.

    .. math::

        k_1 = F(t, x), \quad k_2 = F(t + \tfrac h2, x + \tfrac h2 k_1), \quad
        k_3 = F(t + \tfrac h2, x + \tfrac h2 k_2), \quad k_4 = F(t + h, x + h k_3),

        x_{k+1} = x_k + \frac h6 (k_1 + 2 k_2 + 2 k_3 + k_4), \qquad
        R(z) = 1 + z + \frac{z^2}{2} + \frac{z^3}{6} + \frac{z^4}{24},

    stable on the negative real axis for :math:`hL \le 2.785` (:attr:`stability_limit`, the root
    of :math:`R(z) = 1` at :math:`z = -2.7853`).

    Examples
    --------
    >>> round(RK4().step(lambda t, x: x, 0.0, torch.ones(1, 1, 1, dtype=torch.float64), 1.0).item(), 6)  # e ~ 2.718282
    2.708333
    """

    name: ClassVar[str] = "rk4"
    adaptive: ClassVar[bool] = False
    order: ClassVar[int] = 4
    stability_limit: ClassVar[float] = 2.785

    def step(self, f: Field, t: float, x: torch.Tensor, h: float) -> torch.Tensor:
        """x at t + h, (trials, n, d) like x."""
        k1 = f(t, x)
        k2 = f(t + h / 2, x + (h / 2) * k1)
        k3 = f(t + h / 2, x + (h / 2) * k2)
        k4 = f(t + h, x + h * k3)
        return x + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4)


@dataclasses.dataclass(frozen=True)
class EmbeddedPair:
    r"""An explicit embedded Runge-Kutta pair of orders 5(4) whose last stage is at the new point
    (first same as last, FSAL): s = 7 stages, 6 new field evaluations a step.

    .. math::

        k_i = F\Big(t + c_i h,\; x + h \sum_{j<i} a_{ij} k_j\Big), \qquad
        x_{new} = x + h \sum_i b_i k_i, \qquad
        \mathrm{err} = h \sum_i e_i k_i,

    with :math:`e = b - \hat b` (:math:`\hat b` the embedded 4th-order weights), :math:`b_s = 0`
    and :math:`a_{s,\cdot} = b`: the last stage is the field at :math:`x_{new}`, the next step's first.

    Parameters
    ----------
    name : the method's name in :data:`SOLVERS`.
    c : (s,) stage times; a : rows of the stage matrix (row i has i entries); b : (s,) 5th-order
        weights; e : (s,) error weights.
    fsal_on_sphere : whether ``simulate`` evaluates the last stage at the retracted new point of a
        sphere model by default (its ``fsal=None``).

    Examples
    --------
    One step of x' = x from x = 1: the 5th-order solution against e^h, and the error estimate.

    >>> x = torch.ones(1, 1, 1, dtype=torch.float64)
    >>> x_new, err, k_last = DOPRI5.step(lambda t, x: x, 0.0, x, 0.1, x)
    >>> abs(x_new.item() - 1.1051709180756477) < 1e-9, abs(err.item()) < 1e-7, bool(torch.equal(k_last, x_new))
    (True, True, True)
    """

    name: str
    c: tuple[float, ...]
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    e: tuple[float, ...]
    fsal_on_sphere: bool = False

    adaptive: ClassVar[bool] = True
    order: ClassVar[int] = 5

    def step(self, f: Field, t: float, x: torch.Tensor, h: float, k1: torch.Tensor,
             retract: Callable[[torch.Tensor], torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One trial step from (t, x) with first stage ``k1 = f(t, x)``: ``(x_new, err, k_last)``, each (trials, n, d).

        ``k_last = f(t + h, x_new)`` is the next step's first stage. ``retract``: a map onto the sphere
        applied to the last stage's point before the field is evaluated there, so that k_last is the
        field at the retracted x_new that the next step starts from (without it a sphere model pays a
        7th evaluation a step). The 5th-order solution does not use the last stage (b[-1] = 0); only
        the error estimate sees it, through the weight e[-1].
        """
        stages = StageSums(x)
        stages.add(k1)
        last = len(self.c) - 1
        for i in range(1, last + 1):
            xi = stages(h, self.a[i])
            if i == last and retract is not None:
                xi = retract(xi)
            stages.add(f(t + self.c[i] * h, xi))
        x_new = xi if retract is not None else stages(h, self.b)
        err = stages(h, self.e, add_x=False)
        return x_new, err, stages.ks[-1]


# Dormand-Prince 5(4) tableau.
_DP_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_DP_A = (
    (),
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_DP_B5 = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_DP_B4 = (5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40)
_DP_E = tuple(b5 - b4 for b5, b4 in zip(_DP_B5, _DP_B4))

# Tsitouras 5(4) (Ch. Tsitouras, Comput. Math. Appl. 62 (2011) 770-775), coefficients to 16 digits as
# published; its tests check the orders 5 and 4 against closed forms (tests/test_integrators_pairs.py).
_TS_C = (0.0, 0.161, 0.327, 0.9, 0.9800255409045097, 1.0, 1.0)
_TS_A = (
    (),
    (0.161,),
    (-0.008480655492356989, 0.335480655492357),
    (2.897153057105493, -6.359448489975075, 4.3622954328695815),
    (5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525),
    (5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401, -0.028269050394068383),
    (0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081, 2.324710524099774),
)
_TS_B5 = _TS_A[-1] + (0.0,)
_TS_E = (0.001780011052226, 0.000816434459657, -0.007880878010262, 0.144711007173263, -0.582357165452555,
         0.458082105929187, -1 / 66)

# dopri5 keeps the 7th evaluation on the sphere by default: its stored results were computed with it.
DOPRI5 = EmbeddedPair("dopri5", _DP_C, _DP_A, _DP_B5, _DP_E, fsal_on_sphere=False)
TSIT5 = EmbeddedPair("tsit5", _TS_C, _TS_A, _TS_B5, _TS_E, fsal_on_sphere=True)

# The method names simulate takes, and the steppers they stand for.
SOLVERS = {"euler": Euler(), "rk4": RK4(), "dopri5": DOPRI5, "tsit5": TSIT5}
