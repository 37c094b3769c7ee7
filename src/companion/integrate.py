"""One entry point for every particle model, :func:`simulate`, in the shape of the ODE libraries.

The parts, each replaceable on its own (the shape of diffrax's ``diffeqsolve`` with solver objects,
a step-size controller and ``SaveAt``, and of torchdiffeq's solvers behind a dict):

- a **stepper** advances the tokens by one step (:mod:`companion._rk`: :class:`Euler`, :class:`RK4`,
  the embedded pairs :data:`DOPRI5` and :data:`TSIT5`); the method names ``"euler"``, ``"rk4"``,
  ``"dopri5"``, ``"tsit5"`` are shortcuts for them (:data:`SOLVERS`, :func:`solver`);
- a **step-size controller** decides the steps: :class:`ConstantStepSize` splits every save interval
  into equal steps of at most dt (with the step budget and, for a Sphere model, the stability limit
  checked before the first step); :class:`StepSizeController` accepts or rejects a pair's trial step
  on its error estimate and sizes the next one, and holds the guards (the step floor, the stiffness
  projection, the overflow count, ``max_steps``);
- :class:`SaveAt` holds the times at which the state is kept; the run ends at the last one.

:func:`simulate` checks its arguments, builds these from its keyword arguments and runs a short loop
over the save times. Sphere models are integrated in the ambient space (their field is tangent) and
retracted back onto the sphere by renormalising after every step (:func:`retraction`).

Guards: fixed steps are counted against ``max_steps`` before the first one and, for a Sphere model,
checked against a stability limit (:func:`stability_number`: a :class:`StabilityWarning`, or a
refusal far above it); the adaptive pairs reject and shrink a step whose stages overflow, and stop
with an error naming the time reached and the step when the step falls below what t resolves, or
when, at the step size they have settled on, the rest of the run would not fit in ``max_steps``
(checked every 1000 steps, three times in a row: a stiff problem fails in seconds, not after an hour).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from typing import Any, Callable, ClassVar, Iterator, Sequence

import torch

from ._rk import DOPRI5, RK4, SOLVERS, TSIT5, EmbeddedPair, Euler, Field
from ._validate import check_count, check_positive, check_real
from .models import Model, MultiHead, Sphere, check_model

__all__ = ["simulate", "Solution", "SaveAt", "ConstantStepSize", "StepSizeController", "Tally", "solver", "retraction",
           "Euler", "RK4", "EmbeddedPair", "DOPRI5", "TSIT5", "SOLVERS", "METHODS", "ADAPTIVE", "ERROR_NORMS", "PAIRS",
           "STABILITY_LIMITS", "HARD_FACTOR", "StabilityWarning", "stability_number"]

METHODS = tuple(SOLVERS)
ADAPTIVE = tuple(name for name, s in SOLVERS.items() if s.adaptive)
PAIRS = {name: SOLVERS[name] for name in ADAPTIVE}
# How a trial step's error is measured against the tolerances (see simulate's error_norm).
ERROR_NORMS = ("rms", "max_trial")
_EPS = 2.0**-52  # float64 machine epsilon: times are Python floats whatever the state's dtype

# Linear stability intervals on the negative real axis, |R(z)| <= 1 for z in [-limit, 0]:
# Euler R = 1 + z; RK4 R = 1 + z + z^2/2 + z^3/6 + z^4/24 (root of R(z) = 1 at z = -2.7853).
STABILITY_LIMITS = {name: s.stability_limit for name, s in SOLVERS.items() if not s.adaptive}
# stability_number above HARD_FACTOR times the method's limit is refused, not just warned about.
HARD_FACTOR = 10.0


class StabilityWarning(UserWarning):
    """A fixed step above its method's stability limit for the model (:func:`stability_number`).

    Examples
    --------
    >>> issubclass(StabilityWarning, UserWarning)
    True
    """


@dataclasses.dataclass(frozen=True)
class Solution:
    """What :func:`simulate` returns.

    Attributes
    ----------
    ts : (T,) float64 tensor of saved times.
    xs : (T, trials, n, d) states at those times (x0's dtype and device).
    stats : dict with ``steps`` (accepted), ``rejected`` and ``evaluations`` of the field.
    config : dict describing the model, method and step or tolerances; ``t1`` is the time integrated
        to (the last save time).

    Examples
    --------
    >>> from companion.models import Sphere
    >>> x0 = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64)
    >>> sol = simulate(Sphere(), x0, 1.0, save_at=[0.0, 0.5, 1.0])
    >>> sol.ts.tolist(), tuple(sol.final.shape), sol.stats["steps"]
    ([0.0, 0.5, 1.0], (1, 2, 2), 10)
    """

    ts: torch.Tensor
    xs: torch.Tensor
    stats: dict[str, int]
    config: dict[str, Any]

    @property
    def final(self) -> torch.Tensor:
        """The last saved state, (trials, n, d)."""
        return self.xs[-1]


def solver(method: Any) -> Any:
    """The stepper ``method`` stands for: a name in :data:`SOLVERS` (the shortcuts ``"euler"``, ``"rk4"``,
    ``"dopri5"``, ``"tsit5"``), or a stepper itself (an object with ``name``, ``adaptive`` and ``step``,
    as :class:`RK4` or :class:`EmbeddedPair`).

    Examples
    --------
    >>> solver("tsit5") is TSIT5, solver(RK4()).name
    (True, 'rk4')
    >>> solver("rk45")
    Traceback (most recent call last):
    ...
    ValueError: method must be one of ('euler', 'rk4', 'dopri5', 'tsit5'), got 'rk45'
    """
    if isinstance(method, str) and method in SOLVERS:
        return SOLVERS[method]
    if not isinstance(method, str) and all(hasattr(method, a) for a in ("name", "adaptive", "step")):
        return method
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def _normalise(X: torch.Tensor) -> torch.Tensor:
    return X / X.norm(dim=-1, keepdim=True)


def _identity(X: torch.Tensor) -> torch.Tensor:
    return X


def retraction(model: Any) -> Callable[[torch.Tensor], torch.Tensor]:
    r"""The map applied after every step: :math:`x_i \mapsto x_i / \lVert x_i \rVert` for a model with
    ``on_sphere``, the identity otherwise (which returns the very tensor it is given). X : (trials, n, d).

    Examples
    --------
    >>> from companion.models import Euclidean, Sphere
    >>> retraction(Sphere())(torch.tensor([[[3.0, 4.0]]])).tolist()
    [[[0.6000000238418579, 0.800000011920929]]]
    >>> X = torch.ones(1, 1, 2)
    >>> retraction(Euclidean())(X) is X
    True
    """
    return _normalise if getattr(model, "on_sphere", False) else _identity


def stability_number(model: Any, h: float) -> float | None:
    r"""The fixed step ``h`` against the field's scale, ``h * Lambda``, for a :class:`~companion.models.Sphere`
    model, or a :class:`~companion.models.MultiHead` of them (None for any other model: no bound is
    derived for it).

    .. math::

        \Lambda = 2\, \|V\|_2\, W, \qquad W = 1 \ (\text{softmax}), \qquad
        W = e^{\beta \|A\|_2} \ (\text{usa}),

    with ``||.||_2`` the spectral norm (A or V None: the identity; per-trial matrices: the largest).
    For a :class:`~companion.models.MultiHead` the heads' :math:`\Lambda_h` add (divided by H for
    ``combine="mean"``): the linearisation of a sum of fields is the sum of theirs, and the bound
    below holds for each.

    Derivation. Token i moves by :math:`F_i = P_{x_i} m_i`, :math:`m_i = \sum_j w_{ij} V x_j`,
    :math:`P_x = I - x x^\top`, all :math:`|x_j| = 1`; the weights sum to :math:`W_i = \sum_j w_{ij}
    \le W` (1 for softmax; usa weights are :math:`e^{\beta \langle A x_i, x_j\rangle}/n \le
    e^{\beta\|A\|_2}/n`). With the weights frozen, the tangent part of the linearisation is

    .. math::

        \delta F_i = \sum_j w_{ij} P_{x_i} V \delta x_j - \langle x_i, m_i\rangle\, \delta x_i,

    whose block-row norm is at most :math:`W\|V\|_2 + W\|V\|_2 = \Lambda`, so every eigenvalue
    :math:`\lambda` of the linearised flow has :math:`|\lambda| \le \Lambda`. The bound is attained:
    at a consensus on the top eigenvector of a symmetric V (and of A, for usa) the eigenvalues include
    :math:`W(\lambda_d - \lambda_1)`, which is :math:`-\Lambda` when :math:`\lambda_d = -\lambda_1`.
    A method with linear stability interval :math:`[-L, 0]` on the negative real axis
    (:data:`STABILITY_LIMITS`: Euler 2, RK4 2.785) is then stable wherever :math:`h\Lambda \le L`;
    above it a token can be thrown past its attractor, and the retraction onto the sphere keeps the
    wrong state finite. The derivative of the weights (a term :math:`\beta \|A\|_2 \|V\|_2` times the weighted
    spread of the tokens) is left out: the weights are bounded, so it only matters transiently, near ties
    between groups of tokens, and counting it would flag paper B's low-temperature runs (beta up to
    1000 at dt = 0.01), which match the paper.

    Examples
    --------
    >>> from companion.models import Euclidean, Sphere
    >>> stability_number(Sphere(V=2 * torch.eye(3), beta=4.0), 0.5)  # 0.5 * 2 * 2
    2.0
    >>> round(stability_number(Sphere(beta=1.0, normalization="usa"), 0.5), 4)  # 0.5 * 2 * e
    2.7183
    >>> stability_number(Euclidean(), 0.5) is None
    True
    >>> from companion.models import MultiHead
    >>> stability_number(MultiHead((Sphere(), Sphere(V=2 * torch.eye(3)))), 0.5)  # 0.5 * 2 * (1 + 2)
    3.0
    """
    if isinstance(model, MultiHead):
        parts = [stability_number(head, h) for head in model.heads]
        if any(p is None for p in parts):
            return None
        return sum(parts) / len(parts) if model.combine == "mean" else sum(parts)
    if not isinstance(model, Sphere):
        return None

    def norm(M: torch.Tensor | None) -> float:
        if M is None:
            return 1.0
        M = torch.as_tensor(M)
        return torch.linalg.matrix_norm(M.to(torch.float64) if M.dtype != torch.float64 else M, ord=2).max().item()

    log_w = model.beta * norm(model.A) if model.normalization == "usa" else 0.0
    return h * 2.0 * norm(model.V) * math.exp(min(log_w, 700.0))  # e^700: already refused at any step


def _check_stability(model: Any, stepper: Any, h: float, dt: float, stacklevel: int) -> None:
    """Warn (:class:`StabilityWarning`) above the method's stability limit, refuse above HARD_FACTOR times it.

    ``stacklevel``: of the warning, counted from here, so that it names the line calling :func:`simulate`."""
    number = stability_number(model, h)
    limit = getattr(stepper, "stability_limit", None)
    if number is None or h == 0.0 or limit is None:
        return
    method = stepper.name
    scale = "summed over the heads " if isinstance(model, MultiHead) else ""
    what = (f"the {method} step h = {h:.3g} (dt = {dt:g}) against this {type(model).__name__} model's scale: "
            f"h * 2 ||V||_2 * W {scale}= {number:.3g} (W = 1 for softmax, e^(beta ||A||_2) for usa)")
    if number > HARD_FACTOR * limit:
        raise ValueError(f"simulate: {what} > {HARD_FACTOR * limit:g}, the hard limit ({HARD_FACTOR:g} x {method}'s "
                         f"stability limit {limit:g}); use dt <= {h * limit / number:.3g}")
    if number > limit:
        warnings.warn(f"simulate: {what} > {limit:g}, {method}'s stability limit: tokens can be thrown past their "
                      f"attractor and end at a wrong point; use dt <= {h * limit / number:.3g}", StabilityWarning,
                      stacklevel=stacklevel)


def _times(save_at: Sequence[float] | torch.Tensor) -> tuple[float, ...]:
    """``save_at`` as a tuple of finite, non-decreasing floats (TypeError or ValueError naming save_at otherwise)."""
    if isinstance(save_at, (str, bytes)) or not hasattr(save_at, "__len__") and not hasattr(save_at, "__iter__"):
        raise TypeError(f"save_at must be a 1-D sequence or tensor of times, got {type(save_at).__name__} {save_at!r}")
    shape = getattr(save_at, "shape", None)
    if shape is not None and len(shape) != 1:
        raise ValueError(f"save_at must be 1-D (one time after another), got shape {tuple(shape)}")
    if shape is not None and (getattr(save_at, "dtype", None) in (torch.bool, torch.complex64, torch.complex128)
                              or getattr(getattr(save_at, "dtype", None), "kind", "f") not in "iuf"):
        raise TypeError(f"save_at must hold real times, got dtype {save_at.dtype}")
    ts = [check_real(s, f"save_at[{i}]") if not isinstance(s, (list, tuple)) else _nested(i, s) for i, s in enumerate(save_at)]
    if not ts:
        raise ValueError("save_at must hold at least one time")
    if any(not math.isfinite(s) for s in ts):
        raise ValueError("save_at has non-finite times")
    if any(b < a for a, b in zip(ts, ts[1:])):
        raise ValueError("save_at must be non-decreasing")
    return tuple(ts)


def _nested(i: int, s: Any) -> float:
    raise ValueError(f"save_at must be 1-D (one time after another), got a sequence at save_at[{i}] = {s!r}")


@dataclasses.dataclass(frozen=True)
class SaveAt:
    r"""The times at which :func:`simulate` keeps the state, :math:`t_0 \le s_1 \le \dots \le s_T \le t_1`.

    The run ends at the last one, :attr:`t_end` (the ``t1`` a :class:`Solution`'s config records); a
    time may repeat (the same state is kept twice). The save times alone decide where a run stops
    and which points a fixed step must hit (:meth:`ConstantStepSize.plan`).

    Parameters
    ----------
    ts : (T,) times, T >= 1, finite and non-decreasing: a 1-D sequence, array or tensor of real
        numbers (kept as a tuple of floats).

    Examples
    --------
    >>> saves = SaveAt(torch.tensor([0.0, 0.5, 1.0]))
    >>> saves.ts, saves.t_end
    ((0.0, 0.5, 1.0), 1.0)
    >>> list(saves.intervals(0.0))  # the first save time is the start: no step
    [(0.0, 0.0), (0.0, 0.5), (0.5, 1.0)]
    >>> SaveAt.between(0.0, 2.0).ts  # the default of simulate: the two ends
    (0.0, 2.0)
    >>> SaveAt([0.5, 0.2])
    Traceback (most recent call last):
    ...
    ValueError: save_at must be non-decreasing
    """

    ts: tuple[float, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "ts", _times(self.ts))

    @classmethod
    def between(cls, t0: float, t1: float, save_at: "SaveAt | Sequence[float] | torch.Tensor | None" = None) -> "SaveAt":
        """``save_at`` (a :class:`SaveAt` or its times; default ``(t0, t1)``) checked to lie in [t0, t1]."""
        if save_at is None:
            return cls((t0, t1))
        saves = save_at if isinstance(save_at, SaveAt) else cls(save_at)
        ts = saves.ts
        if ts[0] < t0 - 1e-12 or ts[-1] > t1 + 1e-12:
            raise ValueError(f"save_at must lie in [t0, t1] = [{t0}, {t1}], got [{ts[0]}, {ts[-1]}]")
        return saves

    @property
    def t_end(self) -> float:
        """The last save time, where the run ends."""
        return self.ts[-1]

    def intervals(self, t0: float) -> Iterator[tuple[float, float]]:
        """The intervals ``(start, save time)`` a run from ``t0`` covers, one a save time."""
        return zip((t0,) + self.ts[:-1], self.ts)


@dataclasses.dataclass(frozen=True)
class ConstantStepSize:
    r"""Fixed steps of at most ``dt`` (for :class:`Euler` and :class:`RK4`): every save interval is
    split into equal steps, so that every save time is hit exactly.

    .. math::

        m_j = \Big\lceil \frac{s_j - s_{j-1}}{dt} - 10^{-9} \Big\rceil, \qquad
        h_j = \frac{s_j - s_{j-1}}{m_j}, \qquad s_0 = t_0,

    and :math:`m_j = 0` when :math:`s_j = s_{j-1}` (the :math:`10^{-9}` keeps a length that is a multiple of dt
    up to rounding from taking one step more; an interval shorter than :math:`10^{-9} dt` takes none).

    Parameters
    ----------
    dt : the longest step, > 0.
    max_steps : most steps in all; :meth:`check` refuses a plan above it before the first step.

    Examples
    --------
    >>> control = ConstantStepSize(0.3)
    >>> control.plan(0.0, SaveAt([0.0, 0.5, 1.0]))  # 0, ceil(0.5 / 0.3), ceil(0.5 / 0.3)
    (0, 2, 2)
    >>> ConstantStepSize(0.3, max_steps=3).check(RK4(), Sphere(), 0.0, SaveAt([0.0, 0.5, 1.0]))
    Traceback (most recent call last):
    ...
    ValueError: simulate: rk4 with dt = 0.3 needs 4 steps from t0 = 0 to t = 1 (ceil(length / dt) per save interval), more than max_steps = 3: increase dt or max_steps
    """

    dt: float = 0.1
    max_steps: int = 10_000_000

    def steps(self, t: float, ts: float) -> int | float:
        """The number of equal steps from t to the save time ts (0 when ts <= t; inf where the count overflows)."""
        q = (ts - t) / self.dt - 1e-9 if ts > t else 0.0
        return math.ceil(q) if math.isfinite(q) else math.inf

    def plan(self, t0: float, saves: SaveAt) -> tuple[int | float, ...]:
        """The steps in each save interval of a run from t0, (T,)."""
        return tuple(self.steps(a, b) for a, b in saves.intervals(t0))

    def check(self, stepper: Any, model: Any, t0: float, saves: SaveAt, stacklevel: int = 2) -> None:
        """Before the first step: refuse a plan of more than ``max_steps`` steps (ValueError) and check the
        longest step against the stepper's stability limit for the model (:func:`stability_number`:
        :class:`StabilityWarning` above it, ValueError above :data:`HARD_FACTOR` times it).
        ``stacklevel``: the warning's, as for :func:`warnings.warn` called here (2: this method's caller)."""
        counts = self.plan(t0, saves)
        if sum(counts) > self.max_steps:
            raise ValueError(f"simulate: {stepper.name} with dt = {self.dt:g} needs {sum(counts)} steps from t0 = {t0:g} "
                             f"to t = {saves.t_end:g} (ceil(length / dt) per save interval), more than max_steps = "
                             f"{self.max_steps}: increase dt or max_steps")
        longest = max([(b - a) / m for (a, b), m in zip(saves.intervals(t0), counts) if m] or [0.0])
        _check_stability(model, stepper, longest, self.dt, stacklevel + 1)


@dataclasses.dataclass(frozen=True)
class Tally:
    """What a run has counted: accepted and rejected steps, and two counters of the adaptive guards.

    Attributes
    ----------
    steps, rejected : accepted and rejected steps (a fixed-step run rejects none).
    overrun : consecutive stiffness projections that found the rest of the run beyond ``max_steps``.
    overflows : trial steps with a non-finite or overflowing stage since the last overflow check.

    Examples
    --------
    >>> Tally().counted(True, False).counted(False, True)
    Tally(steps=1, rejected=1, overrun=0, overflows=1)
    """

    steps: int = 0
    rejected: int = 0
    overrun: int = 0
    overflows: int = 0

    @property
    def attempts(self) -> int:
        """Trial steps so far, accepted and rejected."""
        return self.steps + self.rejected

    def counted(self, accepted: bool, blew_up: bool) -> "Tally":
        """One more trial step, accepted or not, with a non-finite stage (``blew_up``) or not."""
        return Tally(self.steps + accepted, self.rejected + (not accepted), self.overrun, self.overflows + blew_up)


@dataclasses.dataclass(frozen=True)
class StepSizeController:
    r"""The adaptive pairs' step-size control: the error test, the rule for the next step, and the guards.

    A trial step of size h from x to :math:`x_{new}`, with error estimate err, is accepted when

    .. math::

        E = \Big\lVert \frac{\mathrm{err}}{\mathrm{atol} + \mathrm{rtol}\, \max(|x|, |x_{new}|)} \Big\rVert \le 1

    (the norm: ``error_norm``, :func:`_error_norm`), and the next step, after an accepted or a rejected
    one, is

    .. math::

        h_{next} = h\, \min\big(5,\ \max(0.2,\ 0.9\, \max(E, 10^{-10})^{-1/5})\big),

    the elementary (integral) controller of a 5th-order pair, or :math:`0.2 h` after a step with a
    non-finite or overflowing stage (rejected, whatever E). The guards, each an error naming the time
    reached and the step (:meth:`guard` before every trial step, :meth:`bounded` on its size):

    - the **step floor** :math:`h_{min} = 10\, \epsilon_{64} \max(|t|, |t_{save}|)`, the smallest step
      that t resolves (Hairer's DOPRI5 test): a smaller initial guess is raised to it; a step that
      rejections shrank below it, or one that does not move t, ends the run (RuntimeError;
      FloatingPointError when the last trial had a non-finite stage);
    - the **stiffness projection**: every 1000 trial steps, the steps still needed at the current
      step size, :math:`(t_{end} - t) / h`, against what is left of ``max_steps``; three projections
      beyond it in a row end the run (RuntimeError);
    - the **overflow check**: every 100 trial steps, when a quarter of them had a non-finite or
      overflowing stage and the rest of the run cannot fit in ``max_steps`` at the current step
      (FloatingPointError: the solution grows out of the dtype's range);
    - ``max_steps`` trial steps, accepted and rejected (RuntimeError).

    Parameters
    ----------
    rtol, atol : tolerances, > 0 (rtol not below the unit roundoff of the tokens' dtype: :meth:`checked`).
    error_norm : ``"rms"`` or ``"max_trial"`` (:func:`_error_norm`).
    max_steps : most trial steps.

    Examples
    --------
    >>> control = StepSizeController(rtol=1e-6, atol=1e-9)
    >>> accepted, h = control.adapt(0.1, 0.5, True)  # E = 1/2: the step grows by 0.9 * 2^(1/5)
    >>> accepted, round(h, 6)
    (True, 0.103383)
    >>> control.adapt(0.1, 3.0, True)[0], control.adapt(0.1, 0.0, False)  # too large an error; an overflow
    (False, (False, 0.020000000000000004))
    """

    rtol: float = 1e-7
    atol: float = 1e-9
    error_norm: str = "rms"
    max_steps: int = 10_000_000

    safety: ClassVar[float] = 0.9
    exponent: ClassVar[float] = 0.2  # 1 / (order + 1) of the embedded 4th-order estimate
    shrink: ClassVar[float] = 0.2
    grow: ClassVar[float] = 5.0
    project_every: ClassVar[int] = 1000
    overflow_every: ClassVar[int] = 100

    def checked(self, dtype: torch.dtype) -> "StepSizeController":
        """Itself, after refusing an rtol below the unit roundoff of ``dtype`` (ValueError)."""
        u = torch.finfo(dtype).eps / 2
        if self.rtol < u:
            raise ValueError(f"rtol = {self.rtol:g} is below the unit roundoff {u:.3g} of {dtype}: no step can meet "
                             f"that relative error; use rtol >= {u:.3g} (atol still bounds the absolute error)")
        return self

    def error(self, x: torch.Tensor, x_new: torch.Tensor, err: torch.Tensor) -> tuple[float, float]:
        """``(E, ok)`` of a trial step, x, x_new, err : (trials, n, d): the scaled error and 1.0 when x_new and
        err are finite (0.0 otherwise), read in one device sync."""
        scale = self.atol + self.rtol * torch.maximum(x.abs(), x_new.abs())
        e_norm = _error_norm(err, scale, self.error_norm)
        finite = torch.isfinite(x_new).all() & torch.isfinite(err).all()
        e, ok = torch.stack([e_norm, finite.to(e_norm.dtype)]).tolist()  # one device sync
        return e, ok

    def adapt(self, h: float, e: float, ok: float) -> tuple[bool, float]:
        """``(accepted, next step)`` after a trial step of size h with scaled error e; ``ok`` false: a
        non-finite or overflowing stage, or an error norm that overflowed (a rejected step, not the end)."""
        factor = self.safety * (1.0 / max(e, 1e-10)) ** self.exponent if ok else 0.0
        return bool(ok) and e <= 1.0, h * min(self.grow, max(self.shrink, factor))

    def bounded(self, h: float, t: float, ts: float, after_reject: bool, blew_up: bool, dtype: torch.dtype, name: str) -> float:
        """The step to try from t towards the save time ts: h raised to the step floor unless a rejection
        shrank it there; an error when it is below the floor or does not move t."""
        h_min = 10 * _EPS * max(abs(t), abs(ts))
        if h < h_min and not after_reject:
            h = h_min
        if h < h_min or t + min(h, ts - t) == t:
            if blew_up:
                raise FloatingPointError(f"simulate: {name} stopped at t = {t:.10g}: the field is non-finite "
                                         f"or overflows {dtype} at every step tried, down to step h = {h:.3g} "
                                         f"(smallest {h_min:.3g}); the solution blows up there or the model is "
                                         "singular (float64 tokens hold up to 1.8e308)")
            raise RuntimeError(f"simulate: {name} stopped at t = {t:.10g}: step h = {h:.3g} is below the "
                               f"smallest step {h_min:.3g} that t resolves (10 eps max(|t|, |t_save|)); "
                               "the problem is too stiff for an explicit method here, or its solution "
                               "blows up in finite time near this t (no step size helps then)")
        return h

    def guard(self, tally: Tally, t: float, h: float, ts: float, t_end: float, dtype: torch.dtype, name: str) -> Tally:
        """Before a trial step from t of size h (next save time ts, end t_end): the stiffness projection,
        the overflow check and ``max_steps`` (an error when one fails); the tally with their counters."""
        attempts, overrun, overflows = tally.attempts, tally.overrun, tally.overflows
        left, needed = self.max_steps - attempts, (t_end - t) / max(h, 1e-300)
        if attempts and attempts % self.project_every == 0:
            # At the step size the controller has settled on, would the rest of the run fit in what is left of
            # max_steps? Three checks in a row say no: stop now rather than hours later.
            overrun = overrun + 1 if needed > left else 0
            if overrun >= 3:
                raise RuntimeError(f"simulate: {name} at t = {t:.10g} takes steps of h = {h:.3g}; reaching t1 = "
                                   f"{t_end:g} would need about {needed:.3g} more steps, more than the {left} left of "
                                   f"max_steps = {self.max_steps}: the problem is stiff for an explicit method here; "
                                   "raise max_steps, loosen rtol/atol or shorten t1")
        if attempts and attempts % self.overflow_every == 0:
            # Steps kept small because every longer one overflows: the solution nears the dtype's limit.
            if overflows >= self.overflow_every // 4 and needed > left:
                raise FloatingPointError(f"simulate: {name} at t = {t:.10g}: {overflows} of the last {self.overflow_every} "
                                         f"trial steps were non-finite or overflowed {dtype} (largest "
                                         f"{torch.finfo(dtype).max:.2g}), leaving steps of h = {h:.3g}: the solution "
                                         "grows out of range; use float64 tokens or a shorter t1")
            overflows = 0
        if attempts >= self.max_steps:
            raise RuntimeError(f"simulate: {name} reached max_steps = {self.max_steps} at t = {t:.10g} (next save time "
                               f"{ts:g}) with step h = {h:.3g}: the problem may be stiff for an explicit method; raise "
                               "max_steps, loosen rtol/atol or shorten t1")
        return tally if (overrun, overflows) == (tally.overrun, tally.overflows) else dataclasses.replace(
            tally, overrun=overrun, overflows=overflows)


def _error_norm(err: torch.Tensor, scale: torch.Tensor, norm: str) -> torch.Tensor:
    r"""The scaled error of a trial step (accepted when <= 1). err, scale: (trials, n, d) -> 0-d tensor.

    .. math::

        E_{\mathrm{rms}} = \Big(\frac{1}{T n d} \sum_{t,i,c} \big(\frac{\mathrm{err}_{tic}}{s_{tic}}\big)^2\Big)^{1/2},
        \qquad
        E_{\mathrm{max\_trial}} = \max_t \Big(\frac{1}{n d} \sum_{i,c} \big(\frac{\mathrm{err}_{tic}}{s_{tic}}\big)^2\Big)^{1/2},

    with :math:`s = \mathrm{atol} + \mathrm{rtol} \max(|x|, |x_{new}|)`. ``"rms"`` averages the trials
    (a quiet trial hides a hard one: T trials allow one trial an error up to sqrt(T) times the tolerance);
    ``"max_trial"`` holds every trial to the tolerance, so the worst trial's error follows rtol.

    Examples
    --------
    >>> err = torch.tensor([[[3.0]], [[0.0]], [[0.0]], [[0.0]]])
    >>> s = torch.ones(4, 1, 1)
    >>> _error_norm(err, s, "rms").item(), _error_norm(err, s, "max_trial").item()
    (1.5, 3.0)
    """
    q = (err / scale) ** 2
    if norm == "rms":
        return torch.sqrt(torch.mean(q))
    return torch.sqrt(q.flatten(1).mean(dim=1).max())


def _counted(field: Field) -> tuple[Field, list[int]]:
    """The field, and a one-element list that counts its evaluations (a closure: the cheapest call)."""
    calls = [0]

    def f(t: float, x: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        return field(t, x)

    return f, calls


@dataclasses.dataclass(frozen=True)
class _State:
    """Where a run stands at a save time: t, the tokens x (trials, n, d), what an adaptive run carries
    into the next interval (the step h to try, the field k1 at (t, x) when known, whether the last trial
    was rejected and whether it had a non-finite stage), and the :class:`Tally`."""

    t: float
    x: torch.Tensor
    h: float = 0.0
    k1: torch.Tensor | None = None
    after_reject: bool = False
    blew_up: bool = False
    tally: Tally = Tally()


def _fixed_to(stepper: Any, control: ConstantStepSize, f: Field, retract: Callable, s: _State, ts: float) -> _State:
    """``control.steps(s.t, ts)`` equal steps of ``stepper`` from s to the save time ts, each retracted."""
    t, X, m = s.t, s.x, control.steps(s.t, ts)
    h = (ts - t) / m if m else 0.0
    for i in range(m):
        try:
            X = stepper.step(f, t + i * h, X, h)
        except FloatingPointError as err:
            raise FloatingPointError(f"simulate: {stepper.name} step {s.tally.steps + i + 1} from t = {t + i * h:.10g} "
                                     f"(h = {h:.3g}): {err}") from err
        X = retract(X)
    return _State(ts, X, tally=Tally(s.tally.steps + m))


def _first_stage(f: Field, t: float, X: torch.Tensor, name: str) -> torch.Tensor:
    """The field at the state itself, (trials, n, d); an error when it is not finite there (no step helps)."""
    try:
        k1 = f(t, X)
    except FloatingPointError as err:
        raise FloatingPointError(f"simulate: {name} at t = {t:.10g}, at the state itself (no smaller step helps): "
                                 f"{err}") from err
    if not torch.isfinite(k1).all():
        raise FloatingPointError(f"simulate: the field is non-finite at t = {t:.10g}, at the state itself (no smaller "
                                 f"step helps): it overflows {X.dtype} or the model is singular there; use float64 "
                                 "tokens, or check the model")
    return k1


def _trial(pair: Any, control: StepSizeController, f: Field, t: float, X: torch.Tensor, h: float, k1: torch.Tensor,
           retract_last: Callable | None) -> tuple[torch.Tensor | None, float, float, torch.Tensor | None]:
    """``(x_new, E, ok, k_last)`` of one trial step; a stage that overflowed (the fused kernel refuses it) is a
    step with ``E = inf, ok = False``, rejected like any other."""
    try:
        X_new, err, k_last = pair.step(f, t, X, h, k1, retract_last)
    except FloatingPointError:
        return None, math.inf, False, None
    return (X_new, *control.error(X, X_new, err), k_last)


def _adaptive_to(pair: Any, control: StepSizeController, f: Field, retract: Callable, retract_last: Callable | None,
                 t_end: float, s: _State, ts: float) -> _State:
    """Trial steps of ``pair`` under ``control`` from s to the save time ts (the run ends at t_end).

    An accepted step's x_new is retracted (unless the pair's last stage already was, ``retract_last``);
    its last stage is the next step's first unless that retraction moved x_new."""
    t, X, h, k1, after_reject, blew_up, tally = s.t, s.x, s.h, s.k1, s.after_reject, s.blew_up, s.tally
    while ts - t > 1e-12 * max(1.0, abs(ts)):
        tally = control.guard(tally, t, h, ts, t_end, X.dtype, pair.name)
        k1 = _first_stage(f, t, X, pair.name) if k1 is None else k1
        h = control.bounded(h, t, ts, after_reject, blew_up, X.dtype, pair.name)
        hh = min(h, ts - t)
        X_new, e, ok, k_last = _trial(pair, control, f, t, X, hh, k1, retract_last)
        accepted, h = control.adapt(hh, e, ok)
        after_reject, blew_up, tally = not accepted, not ok, tally.counted(accepted, not ok)
        if accepted:
            t += hh
            retracted = X_new if retract_last is not None else retract(X_new)
            k1, X = (k_last if retracted is X_new else None), retracted
    return _State(t, X, h, k1, after_reject, blew_up, tally)


def _progress(times: tuple[float, ...], on: bool, name: str):
    if not on:
        return times
    from tqdm.auto import tqdm

    return tqdm(times, desc=f"simulate[{name}]", leave=False)


def simulate(
    model: Model,
    x0: torch.Tensor,
    t1: float,
    *,
    method: Any = "rk4",
    dt: float = 0.1,
    save_at: SaveAt | Sequence[float] | torch.Tensor | None = None,
    t0: float = 0.0,
    rtol: float = 1e-7,
    atol: float = 1e-9,
    max_steps: int = 10_000_000,
    progress: bool = False,
    error_norm: str = "rms",
    fsal: bool | None = None,
) -> Solution:
    r"""Integrate ``dX/dt = model.vector_field(t, X)`` from ``t0`` to ``t1``.

    .. math::

        \frac{dX}{dt} = F(t, X), \quad X(t_0) = x_0, \qquad
        X_{k+1} = \mathcal R\big(\Phi_h(t_k, X_k)\big),

    with :math:`\Phi_h` one step of the method (a stepper) and :math:`\mathcal R` the retraction
    :math:`x_i \mapsto x_i / \lVert x_i\rVert` for a model with ``on_sphere`` (the identity
    otherwise, :func:`retraction`); the steps h are a step-size controller's
    (:class:`ConstantStepSize` for a fixed-step method, :class:`StepSizeController` for a pair), the
    states kept those at the save times (:class:`SaveAt`).

    Parameters
    ----------
    model : a :class:`companion.models.Model`: ``on_sphere``, ``validate(X)``, ``cast(X)`` and
        ``vector_field(t, X)`` (TypeError naming what is missing otherwise).
    x0 : (trials, n, d) or (n, d) initial tokens; its device and dtype are used throughout.
    t1 : final time (> t0).
    method : ``"euler"``, ``"rk4"`` (fixed step), ``"dopri5"`` (Dormand-Prince 5(4)) or ``"tsit5"``
        (Tsitouras 5(4): the same cost a step, smaller error constants), both adaptive with error control;
        the names are shortcuts for the steppers of :data:`SOLVERS`, which may be passed themselves
        (:func:`solver`).
    dt : step for the fixed-step methods (> 0). Between consecutive save times the interval is split
        into ``ceil(length / dt)`` equal steps, so every save time is hit exactly and no step exceeds
        ``dt`` (:class:`ConstantStepSize`). For the adaptive methods, the initial step guess.
    save_at : times at which to keep the state (default ``[t0, t1]``), inside [t0, t1], or a
        :class:`SaveAt`. The run stops at the last save time: when it is before t1, ``final`` is the
        state there and ``config["t1"]`` records that time, not the t1 asked for.
    rtol, atol : tolerances of the adaptive methods (mixed error norm, see ``error_norm``: all trials
        share one step size). rtol below the unit roundoff of x0's dtype is refused.
    error_norm : how the adaptive methods measure a trial step's error against the tolerances:
        ``"rms"`` (default) over every entry of the batch, or ``"max_trial"``, the largest of the
        trials' RMS errors, so that no trial exceeds the tolerance (:func:`_error_norm`).
    fsal : for a sphere model, evaluate an adaptive pair's last stage at the retracted new point, so
        that it is the next step's first stage (first same as last): 6 field evaluations a step
        instead of 7. The step's 5th-order solution is unchanged (its last weight is 0); only the error
        estimate sees the last stage, evaluated at a point within the local error of the unretracted
        one. Default (None): on for ``"tsit5"``, off for ``"dopri5"`` (whose stored results were computed
        with the 7th evaluation; :attr:`EmbeddedPair.fsal_on_sphere`). No effect on other models (FSAL
        is exact there) or fixed-step methods.
    max_steps : most steps. Fixed-step methods refuse up front when the save grid needs more
        (``ceil(length / dt)`` per save interval); the adaptive methods count accepted and rejected
        steps and stop with RuntimeError naming the time reached and the step.
    progress : show a tqdm progress bar over the save times.

    Returns
    -------
    :class:`Solution` with ``ts : (T,)`` and ``xs : (T, trials, n, d)``.

    Raises
    ------
    TypeError
        An argument of the wrong type (t1 or t0 a string, a bool or a tensor of several numbers;
        save_at of strings).
    ValueError
        Bad values (save_at not 1-D); a fixed step far above the stability limit of a
        :class:`~companion.models.Sphere` model (:func:`stability_number` above :data:`HARD_FACTOR`
        times :data:`STABILITY_LIMITS`); more fixed steps than ``max_steps``.
    RuntimeError
        An adaptive method reached ``max_steps``, or its step fell below ``10 eps max(|t|, |t_save|)``,
        the smallest step that t resolves (a problem too stiff for an explicit method there, or a
        solution that blows up in finite time) (:class:`StepSizeController`).
    FloatingPointError
        The field is non-finite, or overflows x0's dtype, at the state reached (adaptive methods:
        also at every step down to that smallest one), or a fixed-step state became non-finite.
        The message names the dtype and what to do (float64 tokens hold up to 1.8e308).

    Warns
    -----
    StabilityWarning
        A fixed step above the method's stability limit for a Sphere model (:func:`stability_number`).
        Larger adaptive steps whose stages overflow are rejected and shrunk, not reported.

    Examples
    --------
    >>> from companion.models import Euclidean
    >>> x0 = torch.ones(1, 1, 1, dtype=torch.float64)
    >>> sol = simulate(Euclidean(V=torch.eye(1)), x0, 1.0, method="rk4", dt=0.01)
    >>> round(sol.final.item(), 8)  # x' = x gives e
    2.71828183

    The same with a stepper object and a :class:`SaveAt`, as the names and lists stand for:

    >>> sol = simulate(Euclidean(V=torch.eye(1)), x0, 1.0, method=TSIT5, save_at=SaveAt([0.0, 0.5, 1.0]), rtol=1e-10)
    >>> [round(x, 8) for x in sol.xs.flatten().tolist()], sol.config["method"]
    ([1.0, 1.64872127, 2.71828183], 'tsit5')
    """
    check_model(model)
    stepper = solver(method)
    if error_norm not in ERROR_NORMS:
        raise ValueError(f"error_norm must be one of {ERROR_NORMS}, got {error_norm!r}")
    if fsal is not None and not isinstance(fsal, bool):
        raise TypeError(f"fsal must be True, False or None, got {fsal!r}")
    t0, t1 = check_real(t0, "t0"), check_real(t1, "t1")
    if t1 < t0:
        raise ValueError(f"t1 must be finite and >= t0 = {t0}, got {t1}")
    dt, rtol, atol = check_positive(dt, "dt"), check_positive(rtol, "rtol"), check_positive(atol, "atol")
    max_steps = check_count(max_steps, "max_steps")
    X = model.validate(x0)
    model = model.cast(X)
    (f, calls), retract, saves = _counted(model.vector_field), retraction(model), SaveAt.between(t0, t1, save_at)
    if stepper.adaptive:
        control = StepSizeController(rtol, atol, error_norm, max_steps).checked(X.dtype)
        fsal = fsal if fsal is not None else getattr(stepper, "fsal_on_sphere", False)
        last = retract if getattr(model, "on_sphere", False) and fsal else None
        advance = functools.partial(_adaptive_to, stepper, control, f, retract, last, saves.t_end)
        state = _State(t0, X, h=dt)
    else:
        control = ConstantStepSize(dt, max_steps)
        control.check(stepper, model, t0, saves, stacklevel=3)  # the warning names simulate's caller
        advance, state = functools.partial(_fixed_to, stepper, control, f, retract), _State(t0, X)
    saved = []
    for ts in _progress(saves.ts, progress, stepper.name):
        state = advance(state, ts)
        if not torch.isfinite(state.x).all():
            raise FloatingPointError(f"simulate: the state became non-finite by t = {ts:g} (it overflowed "
                                     f"{state.x.dtype} or the step is unstable): reduce dt, use float64 tokens, "
                                     "or check the model")
        saved.append(state.x)
    X, adaptive = state.x, stepper.adaptive
    config = {"model": type(model).__name__, "method": stepper.name, "dt": dt, "t0": t0,
              "t1": saves.t_end,  # the time integrated to: the last save time (t1 unless save_at ends before it)
              "rtol": rtol if adaptive else None, "atol": atol if adaptive else None,
              "dtype": str(X.dtype), "device": str(X.device), "shape": list(X.shape)}
    stats = {"steps": state.tally.steps, "rejected": state.tally.rejected, "evaluations": calls[0]}
    return Solution(torch.tensor(saves.ts, dtype=torch.float64), torch.stack(saved), stats, config)
