"""Tokens on the circle in angle form (paper D with Q = K = V = I, d = 2).

The state is an angle tensor ``theta`` of shape (trials, n, 1), so the generic integrator
(:func:`companion.integrate.simulate`) runs it like any other model. The velocity of token i is

    USA:  theta_i' = -(1/n) sum_j e^{beta cos(theta_i - theta_j)} sin(theta_i - theta_j)
    SA :  theta_i' = -sum_j e^{beta cos(.)} sin(.) / sum_j e^{beta cos(.)}

(the projection of x_i' = P_{x_i} sum_j w_ij x_j onto the tangent (-sin, cos)).

Two evaluations of the same field (the ``backend``, as for the attention field: :data:`BACKENDS`):

* :func:`circle_field_dense` (``"dense"``): the pairwise n x n formula (the official notebook's), O(n^2).
* :func:`circle_field_fourier` (``"powers"``, ``"grid"``, ``"auto"``): with e^{beta cos p} = I_0(beta) + 2 sum_k I_k(beta) cos(k p) and
  e^{beta cos p} sin p = (2/beta) sum_k k I_k(beta) sin(k p), the field is a Fourier series in
  theta_i whose coefficients are Bessel values times the empirical moments
  m_k = (1/n) sum_j e^{i k theta_j}. Truncated at K (:func:`fourier_truncation`), a step costs
  O(n K). All powers z^k = e^{i k theta} come from z^(qL + r) = (z^L)^q z^r with L ~ sqrt(K), so
  only ~2 sqrt(K) complex multiplications per token are elementwise; the moments and the
  series are then two small complex matrix products (BLAS), see :func:`_block_powers`.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np
import scipy.special
import torch

from . import _circle_grid
from ._validate import as_state, as_tokens, check_beta, check_normalization, check_positive, check_real
from .attention import NORMALIZATIONS  # one tuple, one order, for every model

__all__ = [
    "NORMALIZATIONS",
    "BACKENDS",
    "fourier_truncation",
    "circle_moments",
    "circle_field_dense",
    "circle_field_fourier",
    "circle_field",
    "Circle",
    "to_angles",
    "to_points",
    "wrap",
    "circular_distance",
]

# How the field is evaluated (the kernel choice, as in attention.BACKENDS): the Fourier series summed
# by "powers" (torch, any device) or "grid" (numba, CPU), the pairwise formula "dense" (O(n^2)), or
# "auto" (grid on the CPU from _GRID_MIN_N tokens per trial when numba is installed, else powers).
BACKENDS = ("auto", "powers", "grid", "dense")
_FOURIER_BACKENDS = ("auto", "powers", "grid")
_GRID_MIN_N = 8192
# e^beta overflows float64 near beta = 709.8; the USA field carries that factor.
_MAX_USA_BETA = 700.0
# The Fourier field needs K ~ 9 sqrt(beta) modes and the truncation scans ~beta Bessel ratios: at
# beta = 1e6, K = 9188 in 0.9 s; at 1e8 it would take minutes and 1e8-element arrays. Beyond this the
# Fourier backends are refused (the dense field has no such cost).
_MAX_FOURIER_BETA = 1e6
# Tokens per block in the Fourier field: the O(n K) work runs as small complex matrix products on
# blocks of this many tokens. 32768 is torch's grain size, the least work it splits between threads
# (at N = 1e6, 2 threads: 52.7 ms a field, median of 8, against 59.5 ms with blocks of 16384).
_CHUNK = 32768
# Up to this many powers (complex numbers; 2**24 complex128 = 256 MiB) the first pass keeps them for
# the second: at N = 1e6, beta = 5 (11 M powers) this is 1.2x faster than recomputing them (measured
# on 2 cores). Same blocks either way, so the result does not depend on the choice.
_KEEP = 1 << 24


def _check_beta_for(beta: float, normalization: str) -> float:
    beta = check_beta(check_real(beta, "beta"))
    if normalization == "usa" and beta > _MAX_USA_BETA:
        raise ValueError(f"beta = {beta:g} is too large for the USA field: e^beta overflows float64 beyond ~{_MAX_USA_BETA:g}")
    return beta


def _check_usa_dtype(beta: float, normalization: str, dtype: torch.dtype) -> None:
    """The USA factor e^beta in ``dtype``: float32 overflows near beta = 88 (float64's 700 is checked
    with beta alone)."""
    limit = _MAX_USA_BETA if dtype == torch.float64 else math.log(torch.finfo(dtype).max) - 9.8
    if normalization == "usa" and beta > limit:
        raise ValueError(f"beta = {beta:g} is too large for the USA field in {dtype}: e^beta overflows beyond ~{limit:.3g}; "
                         f"use float64 angles (beta up to {_MAX_USA_BETA:g}) or normalization='softmax'")


def _as_angles(theta: Any, name: str = "theta") -> torch.Tensor:
    theta = as_state(theta, name)
    if theta.shape[-1] != 1:
        raise ValueError(f"{name} must hold angles, shape (trials, n, 1), got {tuple(theta.shape)}")
    return theta


@functools.lru_cache(maxsize=256)
def fourier_truncation(beta: float, tol: float = 1e-16) -> int:
    """Smallest K such that the Fourier series of the field, cut after mode K, errs by at most ``tol``.

    The error bound is relative to I_0(beta) (the size of the normaliser, and of the kernel's mean):
    with |m_k| <= 1, dropping the modes k > K changes the numerator by at most
    (2/beta) sum_{k>K} k I_k(beta) and the SA denominator by at most 2 sum_{k>K} I_k(beta).

    Parameters
    ----------
    beta : float
        Inverse temperature, > 0.
    tol : float
        Tolerance on both tails divided by I_0(beta).

    Returns
    -------
    int
        K >= 1.

    Examples
    --------
    >>> fourier_truncation(1.0), fourier_truncation(5.0) < fourier_truncation(50.0)
    (15, True)
    """
    beta = check_beta(check_real(beta, "beta"))
    tol = check_positive(check_real(tol, "tol"), "tol")
    if beta > _MAX_FOURIER_BETA:
        raise ValueError(f"beta = {beta:g} is too large for the Fourier field (it needs ~{9 * math.sqrt(beta):.3g} modes; "
                         f"limit {_MAX_FOURIER_BETA:g}): use backend='dense'")
    kmax = int(beta + 60 * math.sqrt(beta) + 60)  # I_k decays like exp(-k^2 / 2 beta) beyond sqrt(beta)
    k = np.arange(kmax + 1, dtype=np.float64)
    r = scipy.special.ive(k, beta) / scipy.special.ive(0, beta)  # I_k / I_0, no overflow
    num = (2.0 / beta) * k * r
    den = 2.0 * r
    # tails[K] = sum_{k > K}
    tail_num = np.concatenate([np.cumsum(num[::-1])[::-1][1:], [0.0]])
    tail_den = np.concatenate([np.cumsum(den[::-1])[::-1][1:], [0.0]])
    ok = np.nonzero((tail_num <= tol) & (tail_den <= tol))[0]
    return int(max(1, ok[0]))


def _split(K: int) -> tuple[int, int]:
    """Powers 0..K as z^(qL + r), r < L, q < Q: L ~ sqrt(K + 1), the one of isqrt and isqrt - 1 that
    wastes fewer slots L Q - (K + 1) (each slot is a complex multiply-add per token and pass; K = 25
    gives 4 x 7 = 28 rather than 5 x 6 = 30)."""
    best = None
    for L in {max(1, math.isqrt(K + 1)), max(1, math.isqrt(K + 1) - 1)}:
        Q = -(-(K + 1) // L)
        if best is None or (L * Q, L + Q) < (best[0] * best[1], best[0] + best[1]):
            best = (L, Q)
    return best


def _block_powers(t: torch.Tensor, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Powers of z = e^{i t} for k = 0..K as two factors: z^(qL + r) = W[..., q, :] * Z[..., r, :].

    t : (tb, b) real angles. Returns W : (tb, Q, b), Z : (tb, L, b) complex, with L*Q >= K + 1,
    L ~ sqrt(K + 1) (see :func:`_split`). Only L + Q - 2 elementwise complex products per token
    instead of K, each written in place; the error of a power grows like (q + r) eps, harmless for K
    in the hundreds.
    """
    L, Q = _split(K)
    tb, b = t.shape
    ctype = torch.complex128 if t.dtype == torch.float64 else torch.complex64
    Z = torch.empty(tb, L, b, dtype=ctype, device=t.device)
    W = torch.empty(tb, Q, b, dtype=ctype, device=t.device)
    Z[:, 0] = 1
    z = Z[:, 1] if L > 1 else torch.empty(tb, b, dtype=ctype, device=t.device)
    torch.complex(torch.cos(t), torch.sin(t), out=z)  # cos and sin: ~4x faster than torch.polar on CPU
    for r in range(2, L):
        torch.mul(Z[:, r - 1], z, out=Z[:, r])
    W[:, 0] = 1
    if Q > 1:
        zL = torch.mul(Z[:, L - 1], z, out=W[:, 1])
    for q in range(2, Q):
        torch.mul(W[:, q - 1], zL, out=W[:, q])
    return W, Z


def _blocks(T: int, n: int, chunk: int) -> list[tuple[slice, slice]]:
    """(trials, tokens) blocks of about ``chunk`` tokens: one trial at a time when n is large,
    several trials together when n is small (fewer, larger operations)."""
    if n >= chunk:
        return [(slice(i, i + 1), sl) for i in range(T) for sl in _chunks(n, chunk)]
    per = max(1, chunk // n)
    return [(slice(i, min(T, i + per)), slice(0, n)) for i in range(0, T, per)]


def _chunks(n: int, chunk: int) -> list[slice]:
    return [slice(s, min(n, s + chunk)) for s in range(0, n, chunk)]


def circle_moments(theta: torch.Tensor, K: int) -> torch.Tensor:
    """Empirical Fourier moments m_k = (1/n) sum_j e^{i k theta_j}, k = 0..K.

    Parameters
    ----------
    theta : (trials, n, 1) or (n, 1) real tensor
        Angles.
    K : int
        Highest mode, >= 0.

    Returns
    -------
    (trials, K + 1) complex tensor

    Examples
    --------
    >>> th = torch.tensor([[0.0], [math.pi / 2]], dtype=torch.float64)
    >>> m = circle_moments(th, 2)
    >>> [round(v, 6) + 0.0 for v in torch.view_as_real(m[0]).flatten().tolist()]
    [1.0, 0.0, 0.5, 0.5, 0.0, 0.0]
    """
    theta = _as_angles(theta)
    if not isinstance(K, int) or isinstance(K, bool) or K < 0:
        raise ValueError(f"K must be an integer >= 0, got {K!r}")
    return _moments(theta[..., 0], K, chunk=_CHUNK)[0][:, : K + 1]


def _moments(t: torch.Tensor, K: int, chunk: int, keep: bool = False):
    """m_k, k = 0..QL-1 as (trials, Q*L) (exact beyond K too), and the per-block powers if ``keep``.

    Tokens go in blocks of about ``chunk`` (see :func:`_blocks`) so that a block's powers stay in cache.
    """
    T, n = t.shape
    L, Q = _split(K)
    M = torch.zeros(T, Q, L, dtype=torch.complex128 if t.dtype == torch.float64 else torch.complex64, device=t.device)
    kept = []
    for tr, sl in _blocks(T, n, chunk):
        W, Z = _block_powers(t[tr, sl], K)
        M[tr] += W @ Z.transpose(-1, -2)  # entry (q, r) sums z^(qL + r)
        if keep:
            kept.append((W, Z))
    return (M / n).reshape(T, Q * L), kept


def circle_field_dense(theta: torch.Tensor, beta: float, normalization: str = "usa", *, block_elems: int = 1 << 22) -> torch.Tensor:
    """The angle velocity by the pairwise formula, O(n^2) work, rows in blocks of ``block_elems`` pairs.

    Exponentials are shifted by -beta (e^{beta (cos - 1)} <= 1), so nothing overflows; the USA field
    gets the factor e^beta back at the end.

    Parameters
    ----------
    theta : (trials, n, 1) or (n, 1) tensor
        Angles, float32 or float64.
    beta : float
        Inverse temperature, > 0.
    normalization : {"usa", "softmax"}
        USA divides by n, SA (softmax) by sum_j e^{beta cos(theta_i - theta_j)}.

    Returns
    -------
    (trials, n, 1) tensor, same dtype and device as ``theta``.

    Examples
    --------
    >>> th = torch.tensor([[0.0], [0.5]], dtype=torch.float64)
    >>> v = circle_field_dense(th, 1.0, "softmax")[0, :, 0]
    >>> round(v[0].item(), 6) == round(math.sin(0.5) / (1 + math.exp(1 - math.cos(0.5))) , 6)
    True
    """
    normalization = check_normalization(normalization)
    theta = _as_angles(theta)
    beta = _check_beta_for(beta, normalization)
    _check_usa_dtype(beta, normalization, theta.dtype)
    t = theta[..., 0]  # (trials, n)
    n = t.shape[1]
    rows = max(1, block_elems // n)
    out = torch.empty_like(t)
    for s in range(0, n, rows):
        D = t[:, s : s + rows, None] - t[:, None, :]  # (trials, b, n): theta_i - theta_j
        E = torch.exp(beta * (torch.cos(D) - 1.0))
        num = (E * torch.sin(D)).sum(-1)
        if normalization == "usa":
            out[:, s : s + rows] = -math.exp(beta) * num / n
        else:
            out[:, s : s + rows] = -num / E.sum(-1)
    return out.unsqueeze(-1)


@functools.lru_cache(maxsize=256)
def _bessel_coeffs(beta: float, K: int) -> tuple[np.ndarray, np.ndarray]:
    """(2/beta) k I_k e^{-beta} and 2 I_k e^{-beta} (k >= 1; I_0 e^{-beta} at k = 0), k = 0..K."""
    k = np.arange(K + 1, dtype=np.float64)
    ive = scipy.special.ive(k, beta)
    num = (2.0 / beta) * k * ive
    den = 2.0 * ive
    den[0] = ive[0]
    return num, den


def circle_field_fourier(theta: torch.Tensor, beta: float, normalization: str = "usa", *, tol: float = 1e-16, K: int | None = None,
                         backend: str = "auto") -> torch.Tensor:
    """The angle velocity from the truncated Fourier/Bessel series, O(n K) work.

    field_i = -(2/beta) sum_{k=1}^K k I_k(beta) Im(e^{i k theta_i} conj(m_k))      (numerator, times 1)
    Z_i     = I_0(beta) + 2 sum_{k=1}^K I_k(beta) Re(e^{i k theta_i} conj(m_k))   (SA normaliser / n)
    USA returns the numerator, SA the numerator divided by Z_i.

    Accuracy: the truncation error is below ``tol`` x I_0(beta) and the rounding error is a few eps
    times the kernel's scale (e^beta for USA, 1 for SA), so the relative error against the pairwise
    field is ~1e-15 for generic configurations (tested <= 1e-12 over beta in [0.1, 100]); a field
    much smaller than that scale (two tokens far apart at large beta) is resolved only absolutely.

    Two backends sum the same series:

    * ``"powers"`` (torch, any device): the powers e^{i k theta} for every token, ~2 K complex
      multiply-adds per token as small complex matrix products.
    * ``"grid"`` (CPU, needs numba): each angle is a point of a uniform grid of M ~ 64 K points plus
      an offset, whose exponential is expanded in a Taylor series of P ~ 7 terms, so a token costs
      ~2 P real operations and the rest is 2 P FFTs of length M (:mod:`companion._circle_grid`;
      extra truncation error below 1e-17 of the field's scale, bounded with the decay of the
      Bessel coefficients). Computed in float64 whatever the input dtype.
    * ``"auto"`` (default): "grid" on the CPU for n >= 8192 tokens per trial when numba is
      installed, else "powers".

    Parameters
    ----------
    theta : (trials, n, 1) or (n, 1) tensor
        Angles, float64 recommended (float32 gives complex64 arithmetic).
    beta : float
        Inverse temperature, > 0 (USA: <= 700, e^beta must fit in float64).
    normalization : {"usa", "softmax"}
    tol : float
        Truncation tolerance relative to I_0(beta), see :func:`fourier_truncation`.
    K : int, optional
        Override the number of modes.
    backend : {"auto", "powers", "grid"}
        How the series is summed (above).

    Returns
    -------
    (trials, n, 1) tensor, dtype and device of ``theta``.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> th = 2 * math.pi * torch.rand(2, 50, 1, generator=g, dtype=torch.float64)
    >>> a = circle_field_fourier(th, 3.0, "usa"); b = circle_field_dense(th, 3.0, "usa")
    >>> bool(((a - b).abs().max() / b.abs().max()) < 1e-12)
    True
    """
    normalization = check_normalization(normalization)
    theta = _as_angles(theta)
    beta = _check_beta_for(beta, normalization)
    _check_usa_dtype(beta, normalization, theta.dtype)
    if K is None:
        K = fourier_truncation(beta, tol)
    elif not isinstance(K, int) or isinstance(K, bool) or K < 1:
        raise ValueError(f"K must be an integer >= 1, got {K!r}")
    return _fourier_field(theta[..., 0], beta, normalization, K, backend).unsqueeze(-1)


def _pick_backend(backend: str, t: torch.Tensor) -> str:
    """The Fourier backend for angles t: (trials, n); "auto" takes the grid on the CPU with numba for n >= _GRID_MIN_N."""
    if backend not in _FOURIER_BACKENDS:
        raise ValueError(f"backend must be one of {_FOURIER_BACKENDS} for the Fourier field, got {backend!r}")
    if backend == "grid":
        if t.device.type != "cpu":
            raise ValueError(f"backend='grid' runs on the CPU only, got angles on {t.device}; use 'powers' or 'auto'")
        if not _circle_grid.HAVE_NUMBA:
            raise ImportError("backend='grid' needs numba (pip install numba, or make venv); use 'powers' or 'auto'")
        return "grid"
    if backend == "auto":
        use_grid = t.device.type == "cpu" and _circle_grid.HAVE_NUMBA and t.shape[1] >= _GRID_MIN_N
        return "grid" if use_grid else "powers"
    return backend


def _grid_field(t: torch.Tensor, beta: float, normalization: str, K: int) -> torch.Tensor:
    """The grid backend (:mod:`companion._circle_grid`) on a CPU tensor; computed in float64, returned in t's dtype."""
    num_c, den_c = _bessel_coeffs(beta, K)
    usa = normalization == "usa"
    out = _circle_grid.grid_field(t.detach().to(torch.float64).numpy(), num_c, None if usa else den_c,
                                  -math.exp(beta) if usa else -1.0, threads=torch.get_num_threads())
    return torch.from_numpy(out).to(t.dtype)


def _fourier_field(t: torch.Tensor, beta: float, normalization: str, K: int, backend: str = "auto") -> torch.Tensor:
    """:func:`circle_field_fourier` on checked arguments. t: (trials, n) angles -> (trials, n)."""
    if _pick_backend(backend, t) == "grid":
        return _grid_field(t, beta, normalization, K)
    n = t.shape[1]
    L, Q = _split(K)
    keep = t.shape[0] * n * (L + Q) <= _KEEP
    m, kept = _moments(t, K, _CHUNK, keep)
    num_c, den_c = (torch.as_tensor(c, dtype=t.dtype, device=t.device) for c in _bessel_coeffs(beta, K))
    pad = Q * L - (K + 1)
    if pad:
        num_c = torch.cat([num_c, num_c.new_zeros(pad)])
        den_c = torch.cat([den_c, den_c.new_zeros(pad)])
    mc = m.conj()
    # coefficient blocks: A[:, r, q] multiplies z^(qL + r); numerator rows 0..L-1, SA denominator rows L..2L-1
    blocks = [(num_c * mc).reshape(-1, Q, L).transpose(-1, -2)]
    if normalization != "usa":
        blocks.append((den_c * mc).reshape(-1, Q, L).transpose(-1, -2))
    A = torch.cat(blocks, dim=1)  # (trials, L or 2L, Q)
    out = torch.empty_like(t)
    scale = math.exp(beta) if normalization == "usa" else 1.0  # softmax: no factor (e^beta overflows beyond 709)
    kept.reverse()
    for tr, sl in _blocks(t.shape[0], n, _CHUNK):
        W, Z = kept.pop() if keep else _block_powers(t[tr, sl], K)
        S = A[tr] @ W  # (tb, L or 2L, b): row r is sum_q A[r, q] z^(qL)
        num = (S[:, :L] * Z).imag.sum(1)
        if normalization == "usa":
            torch.mul(num, -scale, out=out[tr, sl])
        else:
            out[tr, sl] = -num / (S[:, L:] * Z).real.sum(1)
    return out


def circle_field(theta: torch.Tensor, beta: float, normalization: str = "usa", *, backend: str = "auto", tol: float = 1e-16) -> torch.Tensor:
    """The angle velocity by ``backend``: ``"dense"`` (:func:`circle_field_dense`, pairwise) or a
    Fourier summation, ``"powers"``, ``"grid"`` or ``"auto"`` (:func:`circle_field_fourier`).

    Examples
    --------
    >>> th = torch.zeros(1, 3, 1, dtype=torch.float64)
    >>> circle_field(th, 2.0).abs().max().item()
    0.0
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "dense":
        return circle_field_dense(theta, beta, normalization)
    return circle_field_fourier(theta, beta, normalization, tol=tol, backend=backend)


@dataclasses.dataclass(frozen=True)
class Circle:
    """Paper D's model on the circle in angle form, for :func:`companion.integrate.simulate`.

    Parameters
    ----------
    beta : float
        Inverse temperature.
    normalization : {"usa", "softmax"}
        "usa": weights e^{beta cos}/n (paper D's USA); "softmax": SA.
    backend : {"auto", "powers", "grid", "dense"}
        How the field is evaluated, see :func:`circle_field`.
    tol : float
        Fourier truncation tolerance.

    Examples
    --------
    >>> m = Circle(5.0)
    >>> th = torch.tensor([[[0.0], [0.1]]], dtype=torch.float64)
    >>> v = m.vector_field(0.0, th)
    >>> v.shape, bool(v[0, 0, 0] > 0 > v[0, 1, 0]), m.on_sphere
    (torch.Size([1, 2, 1]), True, False)
    """

    beta: float
    normalization: str = "usa"
    backend: str = "auto"
    tol: float = 1e-16
    on_sphere: bool = dataclasses.field(default=False, init=False)
    _K: int = dataclasses.field(default=0, init=False, repr=False, compare=False)  # modes, from beta and tol

    def __post_init__(self) -> None:
        object.__setattr__(self, "normalization", check_normalization(self.normalization))
        object.__setattr__(self, "beta", _check_beta_for(self.beta, self.normalization))
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        object.__setattr__(self, "tol", check_positive(check_real(self.tol, "tol"), "tol"))
        # the dense backend has no Fourier modes: no truncation to compute (nor a beta limit for it)
        object.__setattr__(self, "_K", 0 if self.backend == "dense" else fourier_truncation(self.beta, self.tol))

    def cast(self, X: torch.Tensor) -> "Circle":
        """No tensor parameters to move: the model itself."""
        return self

    def validate(self, X: Any) -> torch.Tensor:
        """Check that X is an angle tensor (trials, n, 1); returns it (a (n, 1) input gains trials = 1)."""
        X = _as_angles(X, "x0")
        _check_usa_dtype(self.beta, self.normalization, X.dtype)
        return X

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor:
        """theta' for angles X : (trials, n, 1).

        Checks only the shape: :func:`companion.integrate.simulate` validated x0 once, and a
        NaN scan of every state would cost ~3 % of a step at N = 1e6."""
        if X.ndim != 3 or X.shape[-1] != 1:
            X = _as_angles(X, "X")
        if self.backend == "dense":
            return circle_field_dense(X, self.beta, self.normalization)
        return _fourier_field(X[..., 0], self.beta, self.normalization, self._K, self.backend).unsqueeze(-1)


def to_angles(X: torch.Tensor) -> torch.Tensor:
    """Points (trials, n, 2) on the circle to angles (trials, n, 1) in (-pi, pi].

    Examples
    --------
    >>> round(to_angles(torch.tensor([[[0.0, 1.0]]], dtype=torch.float64)).item(), 12) == round(math.pi / 2, 12)
    True
    """
    X = as_tokens(X)
    if X.shape[-1] != 2:
        raise ValueError(f"X must be points in the plane, shape (trials, n, 2), got {tuple(X.shape)}")
    return torch.atan2(X[..., 1], X[..., 0]).unsqueeze(-1)


def to_points(theta: torch.Tensor) -> torch.Tensor:
    """Angles (trials, n, 1) to unit vectors (trials, n, 2).

    Examples
    --------
    >>> to_points(torch.zeros(1, 1, 1)).tolist()
    [[[1.0, 0.0]]]
    """
    theta = _as_angles(theta)
    return torch.cat([torch.cos(theta), torch.sin(theta)], dim=-1)


def wrap(theta: torch.Tensor) -> torch.Tensor:
    """Angles reduced to [0, 2 pi).

    Examples
    --------
    >>> round(wrap(torch.tensor([-0.5])).item(), 6) == round(2 * math.pi - 0.5, 6)
    True
    """
    return torch.remainder(theta, 2 * math.pi)


def circular_distance(a: Any, b: Any) -> np.ndarray:
    """|a - b| on the circle, in [0, pi] (broadcasting numpy arrays).

    Examples
    --------
    >>> float(circular_distance(0.1, 2 * np.pi - 0.1)).__round__(6)
    0.2
    """
    d = np.remainder(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64), 2 * np.pi)
    return np.minimum(d, 2 * np.pi - d)
