"""One entry point for every particle model: :func:`simulate`.

Fixed-step explicit Euler and classical RK4, and the adaptive Dormand-Prince 5(4) pair with error
control. Sphere models are integrated in the ambient space (their field is tangent) and retracted
back onto the sphere by renormalising after every step. States are kept at the requested times
only.

Guards: fixed steps are counted against ``max_steps`` before the first one and, for a Sphere model,
checked against a stability limit (:func:`stability_number`: a :class:`StabilityWarning`, or a
refusal far above it); dopri5 rejects and shrinks a step whose stages overflow, and stops with an
error naming the time reached and the step when the step falls below what t resolves, or when,
at the step size it has settled on, the rest of the run would not fit in ``max_steps`` (checked
every 1000 steps, three times in a row: a stiff problem fails in seconds, not after an hour).
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, Sequence

import torch

from ._rk import StageSums
from ._validate import check_count, check_positive, check_real
from .models import Model, MultiHead, Sphere, check_model

__all__ = ["simulate", "Solution", "METHODS", "ADAPTIVE", "ERROR_NORMS", "PAIRS", "STABILITY_LIMITS", "HARD_FACTOR", "StabilityWarning", "stability_number"]

METHODS = ("euler", "rk4", "dopri5", "tsit5")
ADAPTIVE = ("dopri5", "tsit5")
# How a trial step's error is measured against the tolerances (see simulate's error_norm).
ERROR_NORMS = ("rms", "max_trial")
_EPS = 2.0**-52  # float64 machine epsilon: times are Python floats whatever the state's dtype
# Every this many dopri5 steps, project the steps still needed at the current step size (stiffness check).
_PROJECT_EVERY = 1000
# Every this many adaptive steps, stop when a quarter of them overflowed and the step left cannot reach t1.
_OVERFLOW_EVERY = 100

# Linear stability intervals on the negative real axis, |R(z)| <= 1 for z in [-limit, 0]:
# Euler R = 1 + z; RK4 R = 1 + z + z^2/2 + z^3/6 + z^4/24 (root of R(z) = 1 at z = -2.7853).
STABILITY_LIMITS = {"euler": 2.0, "rk4": 2.785}
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


def _retract(model, X: torch.Tensor) -> torch.Tensor:
    return X / X.norm(dim=-1, keepdim=True) if getattr(model, "on_sphere", False) else X


def _euler(f, t, x, h):
    return x + h * f(t, x), 1


def _rk4(f, t, x, h):
    k1 = f(t, x)
    k2 = f(t + h / 2, x + (h / 2) * k1)
    k3 = f(t + h / 2, x + (h / 2) * k2)
    k4 = f(t + h, x + h * k3)
    return x + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4), 4


@dataclasses.dataclass(frozen=True)
class Pair:
    """An explicit embedded Runge-Kutta pair whose last stage is at the new point (first same as last).

    c : stage times (s,); a : rows of the stage matrix (row i has i entries); b : weights of the
    5th-order solution (s,), b[-1] = 0 and a[-1] = b[:-1]; e : b minus the embedded 4th-order weights.
    """

    name: str
    c: tuple[float, ...]
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    e: tuple[float, ...]


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

PAIRS = {"dopri5": Pair("dopri5", _DP_C, _DP_A, _DP_B5, _DP_E), "tsit5": Pair("tsit5", _TS_C, _TS_A, _TS_B5, _TS_E)}


def _pair_step(pair: Pair, f, t, x, h, k1, retract=None):
    """One trial step of an embedded pair from (t, x) with first stage k1 = f(t, x).

    Returns (x_new, err, k_last) with k_last = f(t + h, x_new), the next step's first stage (FSAL).
    ``retract``: a map onto the sphere applied to the last stage's point before the field is evaluated
    there, so that k_last is the field at the retracted x_new that the next step starts from (without
    it a sphere model pays a 7th evaluation a step). The 5th-order solution does not use the last
    stage (b[-1] = 0); only the error estimate sees it, through the weight e[-1].
    """
    stages = StageSums(x)
    stages.add(k1)
    last = len(pair.c) - 1
    for i in range(1, last + 1):
        xi = stages(h, pair.a[i])
        if i == last and retract is not None:
            xi = retract(xi)
        stages.add(f(t + pair.c[i] * h, xi))
    x_new = xi if retract is not None else stages(h, pair.b)
    err = stages(h, pair.e, add_x=False)
    return x_new, err, stages.ks[-1]


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


def _step_counts(t0: float, times: list[float], dt: float) -> list[float]:
    """Fixed steps in each save interval, ``ceil(length / dt)``; inf where that count overflows."""
    counts, t = [], t0
    for ts in times:
        q = (ts - t) / dt - 1e-9 if ts > t else 0.0
        counts.append(math.ceil(q) if math.isfinite(q) else math.inf)
        t = ts
    return counts


def _largest_step(t0: float, times: list[float], counts: list[float]) -> float:
    """The longest of the equal steps that split each save interval (0 when no step is taken)."""
    starts = [t0] + times[:-1]
    return max([(b - a) / m for a, b, m in zip(starts, times, counts) if m] or [0.0])


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


def _check_stability(model: Any, method: str, h: float, dt: float) -> None:
    """Warn (:class:`StabilityWarning`) above the method's stability limit, refuse above HARD_FACTOR times it."""
    number = stability_number(model, h)
    if number is None or h == 0.0:
        return
    limit = STABILITY_LIMITS[method]
    scale = "summed over the heads " if isinstance(model, MultiHead) else ""
    what = (f"the {method} step h = {h:.3g} (dt = {dt:g}) against this {type(model).__name__} model's scale: "
            f"h * 2 ||V||_2 * W {scale}= {number:.3g} (W = 1 for softmax, e^(beta ||A||_2) for usa)")
    if number > HARD_FACTOR * limit:
        raise ValueError(f"simulate: {what} > {HARD_FACTOR * limit:g}, the hard limit ({HARD_FACTOR:g} x {method}'s "
                         f"stability limit {limit:g}); use dt <= {h * limit / number:.3g}")
    if number > limit:
        warnings.warn(f"simulate: {what} > {limit:g}, {method}'s stability limit: tokens can be thrown past their "
                      f"attractor and end at a wrong point; use dt <= {h * limit / number:.3g}", StabilityWarning, stacklevel=3)


def _save_times(t0: float, t1: float, save_at: Sequence[float] | torch.Tensor | None) -> list[float]:
    if save_at is None:
        return [t0, t1]
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
    if ts[0] < t0 - 1e-12 or ts[-1] > t1 + 1e-12:
        raise ValueError(f"save_at must lie in [t0, t1] = [{t0}, {t1}], got [{ts[0]}, {ts[-1]}]")
    return ts


def _nested(i: int, s: Any) -> float:
    raise ValueError(f"save_at must be 1-D (one time after another), got a sequence at save_at[{i}] = {s!r}")


def simulate(
    model: Model,
    x0: torch.Tensor,
    t1: float,
    *,
    method: str = "rk4",
    dt: float = 0.1,
    save_at: Sequence[float] | torch.Tensor | None = None,
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

    with :math:`\Phi_h` one step of the method and :math:`\mathcal R` the retraction
    :math:`x_i \mapsto x_i / \lVert x_i\rVert` for a model with ``on_sphere`` (the identity
    otherwise).

    Parameters
    ----------
    model : a :class:`companion.models.Model`: ``on_sphere``, ``validate(X)``, ``cast(X)`` and
        ``vector_field(t, X)`` (TypeError naming what is missing otherwise).
    x0 : (trials, n, d) or (n, d) initial tokens; its device and dtype are used throughout.
    t1 : final time (> t0).
    method : ``"euler"``, ``"rk4"`` (fixed step), ``"dopri5"`` (Dormand-Prince 5(4)) or ``"tsit5"``
        (Tsitouras 5(4): the same cost a step, smaller error constants), both adaptive with error control.
    dt : step for the fixed-step methods (> 0). Between consecutive save times the interval is split
        into ``ceil(length / dt)`` equal steps, so every save time is hit exactly and no step exceeds
        ``dt``. For dopri5, the initial step guess.
    save_at : times at which to keep the state (default ``[t0, t1]``), inside [t0, t1]. The run stops
        at the last save time: when it is before t1, ``final`` is the state there and ``config["t1"]``
        records that time, not the t1 asked for.
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
        with the 7th evaluation). No effect on other models (FSAL is exact there) or fixed-step methods.
    max_steps : most steps. Fixed-step methods refuse up front when the save grid needs more
        (``ceil(length / dt)`` per save interval); dopri5 counts accepted and rejected steps and stops
        with RuntimeError naming the time reached and the step.
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
        dopri5 reached ``max_steps``, or its step fell below ``10 eps max(|t|, |t_save|)``, the
        smallest step that t resolves (a problem too stiff for an explicit method there, or a
        solution that blows up in finite time).
    FloatingPointError
        The field is non-finite, or overflows x0's dtype, at the state reached (adaptive methods:
        also at every step down to that smallest one), or a fixed-step state became non-finite.
        The message names the dtype and what to do (float64 tokens hold up to 1.8e308).

    Warns
    -----
    StabilityWarning
        A fixed step above the method's stability limit for a Sphere model (:func:`stability_number`).
        Larger dopri5 steps whose stages overflow are rejected and shrunk, not reported.

    Examples
    --------
    >>> from companion.models import Euclidean
    >>> x0 = torch.ones(1, 1, 1, dtype=torch.float64)
    >>> sol = simulate(Euclidean(V=torch.eye(1)), x0, 1.0, method="rk4", dt=0.01)
    >>> round(sol.final.item(), 8)  # x' = x gives e
    2.71828183
    """
    check_model(model)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if error_norm not in ERROR_NORMS:
        raise ValueError(f"error_norm must be one of {ERROR_NORMS}, got {error_norm!r}")
    if fsal is not None and not isinstance(fsal, bool):
        raise TypeError(f"fsal must be True, False or None, got {fsal!r}")
    t0 = check_real(t0, "t0")
    t1 = check_real(t1, "t1")
    if t1 < t0:
        raise ValueError(f"t1 must be finite and >= t0 = {t0}, got {t1}")
    dt = check_positive(dt, "dt")
    rtol = check_positive(rtol, "rtol")
    atol = check_positive(atol, "atol")
    max_steps = check_count(max_steps, "max_steps")
    X = model.validate(x0)
    model = model.cast(X)
    stats = {"steps": 0, "rejected": 0, "evaluations": 0}
    field = model.vector_field

    def f(t: float, x: torch.Tensor) -> torch.Tensor:
        stats["evaluations"] += 1
        return field(t, x)

    times = _save_times(t0, t1, save_at)
    if method in ADAPTIVE:
        pair = PAIRS[method]
        sphere = getattr(model, "on_sphere", False)
        retract_last = (lambda Y: _retract(model, Y)) if sphere and (fsal if fsal is not None else method == "tsit5") else None
        u = torch.finfo(X.dtype).eps / 2
        if rtol < u:
            raise ValueError(f"rtol = {rtol:g} is below the unit roundoff {u:.3g} of {X.dtype}: no step can meet "
                             f"that relative error; use rtol >= {u:.3g} (atol still bounds the absolute error)")
    else:
        counts = _step_counts(t0, times, dt)
        if sum(counts) > max_steps:
            raise ValueError(f"simulate: {method} with dt = {dt:g} needs {sum(counts)} steps from t0 = {t0:g} to "
                             f"t = {times[-1]:g} (ceil(length / dt) per save interval), more than max_steps = "
                             f"{max_steps}: increase dt or max_steps")
        _check_stability(model, method, _largest_step(t0, times, counts), dt)
    saved = []
    t = t0
    h = dt
    k1 = None
    rejected = blew_up = False  # whether dopri5's last step was rejected, and for non-finite stages
    it = times
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(times, desc=f"simulate[{method}]", leave=False)
    overrun = 0  # consecutive step-count projections beyond max_steps (adaptive methods)
    overflows = 0  # trial steps rejected for a non-finite or overflowing stage since the last projection
    for j, ts in enumerate(it):
        if method in ("euler", "rk4"):
            m = counts[j]
            step = _rk4 if method == "rk4" else _euler
            hm = (ts - t) / m if m else 0.0
            for i in range(m):
                try:
                    X, _ = step(f, t + i * hm, X, hm)
                except FloatingPointError as err:
                    raise FloatingPointError(f"simulate: {method} step {stats['steps'] + i + 1} from t = {t + i * hm:.10g} "
                                             f"(h = {hm:.3g}): {err}") from err
                X = _retract(model, X)
            stats["steps"] += m
            t = ts
        else:
            while ts - t > 1e-12 * max(1.0, abs(ts)):
                attempts = stats["steps"] + stats["rejected"]
                if attempts and attempts % _PROJECT_EVERY == 0:
                    # At the step size the controller has settled on, would the rest of the run fit in what is
                    # left of max_steps? Three checks in a row say no: stop now rather than hours later.
                    needed = (times[-1] - t) / max(h, 1e-300)
                    overrun = overrun + 1 if needed > max_steps - attempts else 0
                    if overrun >= 3:
                        raise RuntimeError(f"simulate: {method} at t = {t:.10g} takes steps of h = {h:.3g}; reaching t1 = "
                                           f"{times[-1]:g} would need about {needed:.3g} more steps, more than the "
                                           f"{max_steps - attempts} left of max_steps = {max_steps}: the problem is stiff "
                                           "for an explicit method here; raise max_steps, loosen rtol/atol or shorten t1")
                if attempts and attempts % _OVERFLOW_EVERY == 0:
                    # Steps kept small because every longer one overflows: the solution nears the dtype's limit.
                    needed = (times[-1] - t) / max(h, 1e-300)
                    if overflows >= _OVERFLOW_EVERY // 4 and needed > max_steps - attempts:
                        raise FloatingPointError(f"simulate: {method} at t = {t:.10g}: {overflows} of the last "
                                                 f"{_OVERFLOW_EVERY} trial steps were non-finite or overflowed {X.dtype} (largest "
                                                 f"{torch.finfo(X.dtype).max:.2g}), leaving steps of h = {h:.3g}: the "
                                                 "solution grows out of range; use float64 tokens or a shorter t1")
                    overflows = 0
                if attempts >= max_steps:
                    raise RuntimeError(f"simulate: {method} reached max_steps = {max_steps} at t = {t:.10g} (next save "
                                       f"time {ts:g}) with step h = {h:.3g}: the problem may be stiff for an explicit "
                                       "method; raise max_steps, loosen rtol/atol or shorten t1")
                if k1 is None:
                    try:
                        k1 = f(t, X)
                    except FloatingPointError as err:
                        raise FloatingPointError(f"simulate: {method} at t = {t:.10g}, at the state itself (no smaller "
                                                 f"step helps): {err}") from err
                    if not torch.isfinite(k1).all():
                        raise FloatingPointError(f"simulate: the field is non-finite at t = {t:.10g}, at the state "
                                                 f"itself (no smaller step helps): it overflows {X.dtype} or the model is "
                                                 "singular there; use float64 tokens, or check the model")
                # Smallest step that t resolves (Hairer's DOPRI5 test): below it, t + h rounds h away. A small
                # initial guess is raised to it; a step that rejections shrank below it ends the run.
                h_min = 10 * _EPS * max(abs(t), abs(ts))
                if h < h_min and not rejected:
                    h = h_min
                if h < h_min or t + min(h, ts - t) == t:
                    if blew_up:
                        raise FloatingPointError(f"simulate: {method} stopped at t = {t:.10g}: the field is non-finite "
                                                 f"or overflows {X.dtype} at every step tried, down to step h = {h:.3g} "
                                                 f"(smallest {h_min:.3g}); the solution blows up there or the model is "
                                                 "singular (float64 tokens hold up to 1.8e308)")
                    raise RuntimeError(f"simulate: {method} stopped at t = {t:.10g}: step h = {h:.3g} is below the "
                                       f"smallest step {h_min:.3g} that t resolves (10 eps max(|t|, |t_save|)); "
                                       "the problem is too stiff for an explicit method here, or its solution "
                                       "blows up in finite time near this t (no step size helps then)")
                hh = min(h, ts - t)
                try:
                    X_new, err, k_last = _pair_step(pair, f, t, X, hh, k1, retract_last)
                except FloatingPointError:  # a stage overflowed (the fused kernel refuses it): a rejected step
                    e, ok = math.inf, False
                else:
                    scale = atol + rtol * torch.maximum(X.abs(), X_new.abs())
                    e_norm = _error_norm(err, scale, error_norm)
                    finite = torch.isfinite(X_new).all() & torch.isfinite(err).all()
                    e, ok = torch.stack([e_norm, finite.to(e_norm.dtype)]).tolist()  # one device sync
                # A non-finite stage (the step overshot into an overflow) is a rejected step, not the end; so
                # is an error norm that overflowed against a tiny atol.
                blew_up = not ok
                overflows += blew_up
                rejected = blew_up or not e <= 1.0
                if not rejected:
                    t += hh
                    stats["steps"] += 1
                    retracted = X_new if retract_last is not None else _retract(model, X_new)
                    # FSAL: k_last is the field at X_new; after a retraction of X_new (sphere, fsal off) recompute k1.
                    k1 = k_last if retracted is X_new else None
                    X = retracted
                else:
                    stats["rejected"] += 1
                factor = 0.9 * (1.0 / max(e, 1e-10)) ** 0.2 if not blew_up else 0.0
                h = hh * min(5.0, max(0.2, factor))
        if not torch.isfinite(X).all():
            raise FloatingPointError(f"simulate: the state became non-finite by t = {ts:g} (it overflowed {X.dtype} or the "
                                     "step is unstable): reduce dt, use float64 tokens, or check the model")
        saved.append(X)
    config = {
        "model": type(model).__name__,
        "method": method,
        "dt": dt,
        "t0": t0,
        "t1": times[-1],  # the time integrated to: the last save time (t1 unless save_at ends before it)
        "rtol": rtol if method in ADAPTIVE else None,
        "atol": atol if method in ADAPTIVE else None,
        "dtype": str(X.dtype),
        "device": str(X.device),
        "shape": list(X.shape),
    }
    return Solution(torch.tensor(times, dtype=torch.float64), torch.stack(saved), stats, config)
