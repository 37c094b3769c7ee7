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
    """Return ``float(value)`` after checking it is finite and > 0 (>= 0 if not strict)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
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


def check_matrix(M: Any, d: int, name: str, *, like: torch.Tensor | None = None) -> torch.Tensor:
    """Return ``M`` as a (d, d) or (trials, d, d) tensor on ``like``'s device and dtype.

    Raises ValueError when its trailing shape is not (d, d) or it has non-finite entries.
    """
    if not isinstance(M, torch.Tensor):
        try:
            M = torch.as_tensor(M)
        except Exception:
            raise TypeError(f"{name} must be a (d, d) tensor or array, got {type(M).__name__}") from None
    check_data_device(M, name)
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
