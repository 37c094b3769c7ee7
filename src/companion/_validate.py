"""Argument checks shared by the package: each raises a clear error naming the argument."""
from __future__ import annotations

import math
from typing import Any

import torch

__all__ = [
    "as_tokens",
    "check_beta",
    "check_count",
    "check_data_device",
    "check_positive",
    "check_matrix",
    "check_on_sphere",
    "check_generator",
    "check_normalization",
    "check_trials",
]


def as_tokens(X: Any, name: str = "X") -> torch.Tensor:
    """Return ``X`` as a floating tensor of shape (trials, n, d); a (n, d) input gains trials = 1.

    Raises TypeError for non-tensors or integer tensors, ValueError for bad shapes or
    non-finite entries.
    """
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (trials, n, d) or (n, d), got {type(X).__name__}")
    if not X.is_floating_point():
        raise TypeError(f"{name} must have a floating dtype (float32 or float64), got {X.dtype}")
    check_data_device(X, name)
    if X.ndim == 2:
        X = X.unsqueeze(0)
    if X.ndim != 3:
        raise ValueError(f"{name} must have shape (trials, n, d) or (n, d), got shape {tuple(X.shape)}")
    if min(X.shape) < 1:
        raise ValueError(f"{name} must be non-empty, got shape {tuple(X.shape)}")
    if not torch.isfinite(X).all():
        raise ValueError(f"{name} has non-finite entries (NaN or inf)")
    return X


def check_data_device(X: torch.Tensor, name: str) -> None:
    """Raise ValueError if ``X`` is on the ``meta`` device: it has a shape but no values to check or compute with."""
    if X.device.type == "meta":
        raise ValueError(f"{name} is on the 'meta' device, which holds no values: create it on 'cpu' or 'cuda'")


def check_count(value: Any, name: str) -> int:
    """Return ``value`` as an int after checking it is an integer >= 1 (bool and 2.5 refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__index__"):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if isinstance(value, float) and not value.is_integer():
        raise TypeError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if v < 1:
        raise ValueError(f"{name} must be >= 1, got {v}")
    return v


def check_positive(value: float, name: str, *, strict: bool = True) -> float:
    """Return ``float(value)`` after checking it is a finite real (:func:`check_real`) and > 0 (>= 0 if not strict)."""
    v = check_real(value, name)
    if strict and v <= 0:
        raise ValueError(f"{name} must be > 0, got {v}")
    if not strict and v < 0:
        raise ValueError(f"{name} must be >= 0, got {v}")
    return v


def check_beta(beta: float, name: str = "beta") -> float:
    """Inverse temperature: finite and strictly positive."""
    return check_positive(beta, name)


def check_trials(M: torch.Tensor, trials: int, name: str) -> torch.Tensor:
    """Raise ValueError unless a (trials, d, d) parameter has 1 or ``trials`` entries; O(1), returns M."""
    if M.ndim == 3 and M.shape[0] not in (1, trials):
        raise ValueError(f"{name} has {M.shape[0]} trials but X has {trials}")
    return M


def _as_tensor(M: Any, name: str, what: str) -> torch.Tensor:
    """``M`` as a tensor (TypeError naming ``what`` it must be) that is not on the meta device."""
    if not isinstance(M, torch.Tensor):
        try:
            M = torch.as_tensor(M)
        except Exception:
            raise TypeError(f"{name} must be {what}, got {type(M).__name__}") from None
    check_data_device(M, name)
    return M


def check_matrix(M: Any, d: int, name: str, *, like: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``M`` as a (d, d) or (trials, d, d) tensor on ``like``'s device and dtype.

    Raises ValueError when its trailing shape is not (d, d) or it has non-finite entries.
    """
    M = _as_tensor(M, name, "a (d, d) tensor or array")
    if M.ndim not in (2, 3) or M.shape[-2:] != (d, d):
        raise ValueError(f"{name} must have shape ({d}, {d}) or (trials, {d}, {d}) to match d = {d}, got {tuple(M.shape)}")
    if like is not None:
        M = M.to(device=like.device, dtype=like.dtype)
    if not torch.isfinite(M).all():
        raise ValueError(f"{name} has non-finite entries (NaN or inf)")
    return M


def check_on_sphere(X: torch.Tensor, name: str = "X", tol: float | None = None) -> None:
    """Raise ValueError if some token's norm differs from 1 by more than ``tol``.

    The default tolerance is 1e-6 in float64 and 1e-4 in lower precision.
    """
    if tol is None:
        tol = 1e-6 if X.dtype == torch.float64 else 1e-4
    err = (X.norm(dim=-1) - 1).abs().max().item()
    if err > tol:
        raise ValueError(
            f"{name} must lie on the unit sphere for this model: max | |x_i| - 1 | = {err:.3g} > tol {tol:g}"
            " (normalise the tokens first, e.g. X / X.norm(dim=-1, keepdim=True))"
        )


def check_generator(generator: torch.Generator | None, device: torch.device, name: str = "generator") -> None:
    """Raise ValueError if ``generator`` lives on another device type than ``device``."""
    if generator is None:
        return
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator or None, got {type(generator).__name__}")
    if torch.device(generator.device).type != torch.device(device).type:
        raise ValueError(
            f"{name} is on device '{generator.device}' but the data is on '{device}': "
            "create the generator with torch.Generator(device=...) on the data's device"
        )


def check_normalization(normalization: str, name: str = "normalization") -> str:
    """``"softmax"`` (alias ``"sa"``, paper D's SA) or ``"usa"``; ValueError otherwise."""
    if normalization == "sa":
        return "softmax"
    if normalization not in ("softmax", "usa"):
        raise ValueError(f"{name} must be one of ('softmax', 'usa') (or 'sa'), got {normalization!r}")
    return normalization


# The dtypes the package computes in: half precision cannot hold |x_i| = 1 to the sphere check's 1e-4
# (float16 resolves 1e-3 near 1), nor a step's increment against the state, and overflows at 65504.
STATE_DTYPES = (torch.float32, torch.float64)


def as_state(X: torch.Tensor, name: str = "x0") -> torch.Tensor:
    """``X`` checked as tokens (:func:`companion._validate.as_tokens`) in a dtype the package computes in.

    Raises TypeError, saying what to do, for float16 and bfloat16.

    Examples
    --------
    >>> as_state(torch.ones(2, 3)).shape
    torch.Size([1, 2, 3])
    >>> as_state(torch.ones(2, 3, dtype=torch.float16))
    Traceback (most recent call last):
    ...
    TypeError: x0 has dtype torch.float16; companion computes in torch.float32 or torch.float64 (half precision cannot hold unit norms to the sphere check's 1e-4 and overflows beyond 65504): pass x0.float() or x0.double(), or draw it in that dtype
    """
    X = as_tokens(X, name)
    if X.dtype not in STATE_DTYPES:
        raise TypeError(f"{name} has dtype {X.dtype}; companion computes in torch.float32 or torch.float64 (half precision "
                        f"cannot hold unit norms to the sphere check's 1e-4 and overflows beyond 65504): pass "
                        f"{name}.float() or {name}.double(), or draw it in that dtype")
    return X


def check_real(value, name: str) -> float:
    """Return ``value`` as a finite float; TypeError for what ``float()`` converts but is no number here.

    ``float("2")`` and ``float(True)`` succeed, so a model built with ``beta="2"`` used to fail steps
    later inside torch. Accepted: Python and numpy reals, 0-d or one-element real tensors.

    Examples
    --------
    >>> check_real(2, "beta")
    2.0
    >>> check_real("2", "beta")
    Traceback (most recent call last):
    ...
    TypeError: beta must be a real number, got str '2'
    """
    bad = isinstance(value, (str, bytes, bool, complex)) or (hasattr(value, "dtype") and not hasattr(value, "is_complex")
                                                              and getattr(value.dtype, "kind", "f") not in "iuf")
    if isinstance(value, torch.Tensor):
        check_data_device(value, name)
        bad = value.dtype.is_complex or value.dtype == torch.bool or value.numel() != 1
    if bad:
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def check_real_tensor(M, name: str) -> None:
    """Raise TypeError for a complex (or non-numeric) matrix ``M`` and ValueError for one on the meta device.

    torch casts a complex tensor to a real dtype by dropping the imaginary part (only a warning), so
    a complex V would give another model silently. None passes (the identity).

    Examples
    --------
    >>> check_real_tensor(torch.eye(2), "V")
    >>> check_real_tensor(torch.eye(2, dtype=torch.complex64), "V")
    Traceback (most recent call last):
    ...
    TypeError: V must be real, got dtype torch.complex64: pass V.real if the imaginary part is zero by construction
    """
    if M is None:
        return
    M = _as_tensor(M, name, "a real tensor or array")
    if M.dtype.is_complex:
        raise TypeError(f"{name} must be real, got dtype {M.dtype}: pass {name}.real if the imaginary part is zero by construction")
    if M.dtype == torch.bool:
        raise TypeError(f"{name} must be a real tensor, got dtype {M.dtype}")
