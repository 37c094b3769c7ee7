"""One entry point for every particle model: :func:`simulate`.

Fixed-step explicit Euler and classical RK4, and the adaptive Dormand-Prince 5(4) pair with error
control. Sphere models are integrated in the ambient space (their field is tangent) and retracted
back onto the sphere by renormalising after every step. States are kept at the requested times
only.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import torch

from ._validate import check_positive

__all__ = ["simulate", "Solution", "METHODS"]

METHODS = ("euler", "rk4", "dopri5")


@dataclasses.dataclass(frozen=True)
class Solution:
    """What :func:`simulate` returns.

    Attributes
    ----------
    ts : (T,) float64 tensor of saved times.
    xs : (T, trials, n, d) states at those times (x0's dtype and device).
    stats : dict with ``steps`` (accepted), ``rejected`` and ``evaluations`` of the field.
    config : dict describing the model, method and step or tolerances.

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


def _dopri_step(f, t, x, h, k1):
    ks = [k1]
    for i in range(1, 7):
        xi = x + h * sum(a * k for a, k in zip(_DP_A[i], ks) if a != 0.0)
        ks.append(f(t + _DP_C[i] * h, xi))
    x_new = x + h * sum(b * k for b, k in zip(_DP_B5, ks) if b != 0.0)
    err = h * sum(e * k for e, k in zip(_DP_E, ks) if e != 0.0)
    return x_new, err, ks[-1]  # FSAL: the last stage is f at the new point


def _save_times(t0: float, t1: float, save_at: Sequence[float] | torch.Tensor | None) -> list[float]:
    if save_at is None:
        return [t0, t1]
    ts = [float(s) for s in torch.as_tensor(save_at, dtype=torch.float64).reshape(-1)]
    if not ts:
        raise ValueError("save_at must hold at least one time")
    if any(not math.isfinite(s) for s in ts):
        raise ValueError("save_at has non-finite times")
    if any(b < a for a, b in zip(ts, ts[1:])):
        raise ValueError("save_at must be non-decreasing")
    if ts[0] < t0 - 1e-12 or ts[-1] > t1 + 1e-12:
        raise ValueError(f"save_at must lie in [t0, t1] = [{t0}, {t1}], got [{ts[0]}, {ts[-1]}]")
    return ts


def simulate(
    model,
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
) -> Solution:
    """Integrate ``dX/dt = model.vector_field(t, X)`` from ``t0`` to ``t1``.

    Parameters
    ----------
    model : any object with ``vector_field(t, X)``, ``on_sphere``, ``validate(X)`` and ``cast(X)``
        (every class in :mod:`companion.models`).
    x0 : (trials, n, d) or (n, d) initial tokens; its device and dtype are used throughout.
    t1 : final time (> t0).
    method : ``"euler"``, ``"rk4"`` (fixed step) or ``"dopri5"`` (adaptive, error control).
    dt : step for the fixed-step methods (> 0). Between consecutive save times the interval is split
        into ``ceil(length / dt)`` equal steps, so every save time is hit exactly and no step exceeds
        ``dt``. For dopri5, the initial step guess.
    save_at : times at which to keep the state (default ``[t0, t1]``), inside [t0, t1].
    rtol, atol : tolerances of dopri5 (mixed error norm, RMS over every entry of the batch: all trials
        share one step size).
    progress : show a tqdm progress bar over the save times.

    Returns
    -------
    :class:`Solution` with ``ts : (T,)`` and ``xs : (T, trials, n, d)``.

    Examples
    --------
    >>> from companion.models import Euclidean
    >>> x0 = torch.ones(1, 1, 1, dtype=torch.float64)
    >>> sol = simulate(Euclidean(V=torch.eye(1)), x0, 1.0, method="rk4", dt=0.01)
    >>> round(sol.final.item(), 8)  # x' = x gives e
    2.71828183
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    t0 = float(t0)
    t1 = float(t1)
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 < t0:
        raise ValueError(f"t1 must be finite and >= t0 = {t0}, got {t1}")
    dt = check_positive(dt, "dt")
    rtol = check_positive(rtol, "rtol")
    atol = check_positive(atol, "atol")
    X = model.validate(x0)
    model = model.cast(X)
    f = model.vector_field
    times = _save_times(t0, t1, save_at)
    stats = {"steps": 0, "rejected": 0, "evaluations": 0}
    saved = []
    t = t0
    h = dt
    k1 = None
    it = times
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(times, desc=f"simulate[{method}]", leave=False)
    for ts in it:
        if method in ("euler", "rk4"):
            m = math.ceil((ts - t) / dt - 1e-9) if ts > t else 0
            step = _rk4 if method == "rk4" else _euler
            hm = (ts - t) / m if m else 0.0
            for i in range(m):
                X, nfe = step(f, t + i * hm, X, hm)
                X = _retract(model, X)
                stats["evaluations"] += nfe
            stats["steps"] += m
            t = ts
        else:
            while ts - t > 1e-12 * max(1.0, abs(ts)):
                if stats["steps"] + stats["rejected"] >= max_steps:
                    raise RuntimeError(f"simulate: dopri5 exceeded max_steps = {max_steps} before t = {ts}")
                if k1 is None:
                    k1 = f(t, X)
                    stats["evaluations"] += 1
                hh = min(h, ts - t)
                X_new, err, k_last = _dopri_step(f, t, X, hh, k1)
                stats["evaluations"] += 6
                scale = atol + rtol * torch.maximum(X.abs(), X_new.abs())
                e = torch.sqrt(torch.mean((err / scale) ** 2)).item()
                if not math.isfinite(e):
                    raise FloatingPointError(f"simulate: non-finite error estimate at t = {t:g} (the field blew up)")
                if e <= 1.0:
                    t += hh
                    stats["steps"] += 1
                    retracted = _retract(model, X_new)
                    # FSAL is exact only without a retraction; on the sphere recompute k1.
                    k1 = k_last if retracted is X_new else None
                    X = retracted
                else:
                    stats["rejected"] += 1
                factor = 0.9 * (1.0 / max(e, 1e-10)) ** 0.2
                h = hh * min(5.0, max(0.2, factor))
        if not torch.isfinite(X).all():
            raise FloatingPointError(f"simulate: the state became non-finite by t = {ts:g}; reduce dt or check the model")
        saved.append(X)
    config = {
        "model": type(model).__name__,
        "method": method,
        "dt": dt,
        "t0": t0,
        "t1": t1,
        "rtol": rtol if method == "dopri5" else None,
        "atol": atol if method == "dopri5" else None,
        "dtype": str(X.dtype),
        "device": str(X.device),
        "shape": list(X.shape),
    }
    return Solution(torch.tensor(times, dtype=torch.float64), torch.stack(saved), stats, config)
