"""The circle field's Fourier series evaluated through a uniform grid and local Taylor expansions.

Private engine of :func:`companion.circle.circle_field_fourier` with ``backend="grid"`` (CPU,
compiled with numba). It computes the same truncated series as the torch "powers" backend,

    F(theta) = sum_{k=0}^K a_k e^{i k theta},   a_k = c_k conj(m_k),   m_k = (1/n) sum_j e^{i k theta_j},

in O(n P + P M log M) work instead of O(n K) complex multiply-adds, with P ~ 7 real operations per
token and pass. Each angle is written theta = phi_c + delta, with phi_c = 2 pi c / M the nearest of
M grid points and |delta| <= pi / M, and e^{i k delta} is expanded in its Taylor series:

* moments: m_k = (1/n) sum_c e^{i k phi_c} sum_{p < P} (i k)^p / p! G_p[c],
  G_p[c] = sum_{theta_j near phi_c} delta_j^p   (a scatter of P powers per token, then P FFTs);
* evaluation: F(theta_i) = sum_{p < P} delta_i^p H_p[c_i],
  H_p[c] = sum_k a_k (i k)^p / p! e^{i k phi_c}   (P inverse FFTs, then a Horner sum per token).

Truncation: |e^{i y} - sum_{p < P} (i y)^p / p!| <= |y|^P / P! with |y| <= pi k / M for mode k, so
with |m_k| <= 1 the error is at most 2 sum_k |c_k| (pi k / M)^P / P! (moments and evaluation), against
the field's scale sum_k |c_k| (:func:`weighted_bound`). :func:`grid_size` picks M ~ 64 K and the
least P keeping this below 1e-17, under float64 rounding: the field's Bessel coefficients decay, so
P = 7 serves beta from 0.1 to 100 where the worst case (all weight at mode K) would need 9.

The two passes over the tokens (scatter and gather) are the cost, ~20 scalar instructions a token
each (no SIMD: every token adds to its own table row): the kernels are compiled for each P with the
loops over p unrolled (:func:`_kernels`).

Work is split over threads by trials, or by tokens of one trial with a table per thread; sums then
run in another order than on one thread, so results agree to rounding, not bitwise. The threads are
numba's (``prange``, its default threading layer: GNU OpenMP here): their teams stay hot between the
two passes, and 1000 Euler steps at N = 1e6 took 0.6 times as long as with a Python thread pool
(bench/results/README.md). GNU OpenMP cannot run in a process forked after it started, so a
forked child runs the same work items one after another on its own thread (the same sums, the same
result; :mod:`companion._omp`).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ._omp import forked

try:  # numba is optional: without it the torch "powers" backend serves every call
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised through a monkeypatched flag in the tests
    numba = None
    HAVE_NUMBA = False

__all__ = ["HAVE_NUMBA", "grid_size", "taylor_bound", "weighted_bound", "grid_field"]

# Below this many tokens in all, one thread (starting a parallel region costs some 10 us).
_MIN_PER_THREAD = 1 << 15
_BOUND = 1e-17


def taylor_bound(K: int, M: int, P: int) -> float:
    """(pi K / M)^P / P!: the remainder of mode K's Taylor expansion on the grid, relative to its coefficient.

    Examples
    --------
    >>> taylor_bound(25, 2048, 9) < 1e-17 < taylor_bound(25, 2048, 8)
    True
    """
    x = math.pi * K / M
    return x**P / math.factorial(P)


def weighted_bound(c, M: int, P: int) -> float:
    """Truncation error bound of the grid for coefficients ``c`` (K + 1 values), relative to sum_k |c_k|:

    .. math:: 2 \\sum_k |c_k| \\frac{(\\pi k / M)^P}{P!} \\Big/ \\sum_k |c_k|.

    Mode k's remainder (:func:`taylor_bound` with k) enters twice, in the moment m_k and in the
    evaluation, each time times |c_k| |m_k| <= |c_k|. The field's coefficients decay like Bessel
    values, so this is far below the worst case 2 taylor_bound(K, M, P) (all weight at mode K).

    Examples
    --------
    >>> c = np.zeros(26); c[25] = 1.0
    >>> weighted_bound(c, 2048, 9) == 2 * taylor_bound(25, 2048, 9)
    True
    """
    w = np.abs(np.asarray(c, dtype=np.float64))
    total = w.sum()
    if total == 0:
        return 0.0
    k = np.arange(w.shape[0], dtype=np.float64)
    return float(2.0 * (w * (math.pi * k / M) ** P).sum() / math.factorial(P) / total)


def grid_size(K: int, *coefs) -> tuple[int, int]:
    """Grid points M (a power of two, >= 64 (K + 1)) and Taylor terms P >= 2 for modes up to K.

    P is the least with :func:`weighted_bound` <= 1e-17 for each coefficient vector in ``coefs``
    (each K + 1 values), or, with none, for the worst case: all weight at mode K.

    Examples
    --------
    >>> grid_size(25)
    (2048, 9)
    >>> k = np.arange(26); grid_size(25, 1.0 / (1.0 + k) ** 8)  # decaying coefficients need fewer terms
    (2048, 5)
    """
    if not isinstance(K, int) or isinstance(K, bool) or K < 1:
        raise ValueError(f"K must be an integer >= 1, got {K!r}")
    weights = []
    for c in coefs:
        c = np.abs(np.asarray(c, dtype=np.float64))
        if c.shape != (K + 1,):
            raise ValueError(f"coefficients must have K + 1 = {K + 1} entries, got shape {c.shape}")
        weights.append(c.tobytes())
    return _grid_size(K, tuple(weights))


@functools.lru_cache(maxsize=256)
def _grid_size(K: int, weights: tuple[bytes, ...]) -> tuple[int, int]:
    M = max(256, 1 << (64 * (K + 1) - 1).bit_length())
    cs = [np.frombuffer(w) for w in weights]
    if not cs:
        cs = [np.eye(K + 1)[K]]
    P = 2
    while any(weighted_bound(c, M, P) > _BOUND for c in cs):
        P += 1
    return M, P


def _make_kernels(P: int):
    """The scatter and gather kernels for P Taylor terms, compiled with P a constant (numba treats a
    closure's variables as constants and caches one machine code per value): the loops over p unroll
    (1e6 tokens, P = 8, one core: gather 7.9 ms with a run-time P, 4.2 ms unrolled; scatter 4.9 and 4.5 ms)."""
    even, odd = (P - 1) // 2 * 2, (P - 2) // 2 * 2 + 1  # highest even and odd powers below P

    @numba.njit(cache=True, nogil=True, fastmath={"contract"})  # FMAs allowed, no reassociation
    def scatter(t, t0, t1, j0, j1, M, G):  # pragma: no cover - compiled; tested through grid_field
        """G[tr, P c + p] += delta^p for tokens j0..j1-1 of trials t0..t1-1 (G: (trials, M P), rows of P)."""
        h = 2.0 * np.pi / M
        inv = M / (2.0 * np.pi)
        for tr in range(t0, t1):
            for j in range(j0, j1):
                x = t[tr, j]
                r = np.floor(x * inv + 0.5)
                d = x - r * h
                c = (int(r) & (M - 1)) * P  # M is a power of two: the index mod M, negative r included
                w = 1.0
                for p in range(P):
                    G[tr, c + p] += w
                    w *= d

    @numba.njit(cache=True, nogil=True, fastmath={"contract"}, inline="always")
    def poly(H, tr, c, d, d2):  # pragma: no cover - compiled
        """sum_p d^p H[tr, c + p] as two Horner chains in d^2 (even and odd powers): half the dependent
        latency of one."""
        ev = H[tr, c + even]
        for p in range(even - 2, -1, -2):
            ev = ev * d2 + H[tr, c + p]
        od = H[tr, c + odd]
        for p in range(odd - 2, 0, -2):
            od = od * d2 + H[tr, c + p]
        return ev + d * od

    @numba.njit(cache=True, nogil=True, fastmath={"contract"})  # FMAs allowed, no reassociation
    def gather(t, t0, t1, j0, j1, M, H, D, out, scale):  # pragma: no cover - compiled
        """out[tr, j] = scale * sum_p delta^p H[tr, P c + p], divided by the same sum over D if D has rows."""
        h = 2.0 * np.pi / M
        inv = M / (2.0 * np.pi)
        softmax = D.shape[0] > 0
        for tr in range(t0, t1):
            for j in range(j0, j1):
                x = t[tr, j]
                r = np.floor(x * inv + 0.5)
                d = x - r * h
                c = (int(r) & (M - 1)) * P
                acc = poly(H, tr, c, d, d * d)
                if softmax:
                    out[tr, j] = scale * acc / poly(D, tr, c, d, d * d)
                else:
                    out[tr, j] = scale * acc

    return scatter, gather


@functools.lru_cache(maxsize=None)
def _kernels(P: int):
    """(scatter, gather, scatter over work items, gather over work items) for P terms, made once per
    process and P (machine code cached by numba on disk)."""
    if not HAVE_NUMBA:
        raise ImportError("the grid algorithm needs numba (pip install numba); use backend='powers'")
    scatter, gather = _make_kernels(P)

    @numba.njit(cache=True, parallel=True)
    def scatter_items(t, items, M, G):  # pragma: no cover - compiled; tested through grid_field
        """Each work item (t0, t1, j0, j1, s) of ``items`` in parallel, into its table G[s]: (tables, trials, M P)."""
        for w in numba.prange(items.shape[0]):
            scatter(t, items[w, 0], items[w, 1], items[w, 2], items[w, 3], M, G[items[w, 4]])

    @numba.njit(cache=True, parallel=True)
    def gather_items(t, items, M, H, D, out, scale):  # pragma: no cover - compiled
        """Each work item (t0, t1, j0, j1, s) of ``items`` in parallel (tokens or trials apart: no two write one entry)."""
        for w in numba.prange(items.shape[0]):
            gather(t, items[w, 0], items[w, 1], items[w, 2], items[w, 3], M, H, D, out, scale)

    return scatter, gather, scatter_items, gather_items


def _parts(T: int, n: int, threads: int) -> list[tuple[int, int, int, int]]:
    """(t0, t1, j0, j1) work items: whole trials when there are enough, else token ranges of each trial."""
    threads = max(1, min(threads, (T * n) // _MIN_PER_THREAD))
    if threads == 1:
        return [(0, T, 0, n)]
    if T >= threads:
        cuts = np.linspace(0, T, threads + 1).round().astype(int)
        return [(int(a), int(b), 0, n) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    cuts = np.linspace(0, n, threads + 1).round().astype(int)
    return [(0, T, int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def _items(parts: list[tuple[int, int, int, int]], split: bool) -> np.ndarray:
    """Work items (t0, t1, j0, j1, s): (W, 5) int64, s the table a scatter writes (its own when tokens are split)."""
    return np.array([p + ((i if split else 0),) for i, p in enumerate(parts)], dtype=np.int64).reshape(-1, 5)


def _serial(items: np.ndarray) -> bool:
    """Whether to run the work items one after another: there is one, or the process was forked (OpenMP's
    team would abort it). Otherwise numba gets one thread per item (at most its NUMBA_NUM_THREADS)."""
    if len(items) == 1 or forked():
        return True
    threads = min(len(items), numba.config.NUMBA_NUM_THREADS)
    if numba.get_num_threads() != threads:
        numba.set_num_threads(threads)
    return False


@functools.lru_cache(maxsize=64)
def _coeff_powers(K: int, P: int) -> np.ndarray:
    """(i k)^p / p! as (P, K + 1) complex, read-only (cached: the same for every field evaluation)."""
    k = np.arange(K + 1, dtype=np.float64)
    out = np.empty((P, K + 1), dtype=np.complex128)
    out[0] = 1.0
    for p in range(1, P):
        out[p] = out[p - 1] * (1j * k) / p
    out.setflags(write=False)
    return out


def _tables(coef: np.ndarray, E: np.ndarray, M: int, part: str) -> np.ndarray:
    """H[tr, c, p] = part of sum_k coef[tr, k] E[p, k] e^{i k phi_c}, shape (trials, M, P), contiguous.

    Real output, so one real inverse FFT: with y_k = coef_k E[p, k] (times -i for the imaginary
    part), Re sum_k y_k e^{i k phi_c} = M irfft(x)[c] for x_0 = y_0, x_k = y_k / 2 (0 < k < M / 2)."""
    T, K1 = coef.shape
    P = E.shape[0]
    x = np.zeros((T, P, M // 2 + 1), dtype=np.complex128)
    x[:, :, :K1] = coef[:, None, :] * E[None]
    if part == "imag":
        x *= -1j
    x[:, :, 1:K1] *= 0.5
    H = np.fft.irfft(x, n=M, axis=-1) * M
    return np.ascontiguousarray(H.transpose(0, 2, 1))


def _plan(num_c: np.ndarray, den_c: np.ndarray | None):
    """(M, P, kernels) for these coefficients."""
    K = num_c.shape[0] - 1
    coefs = [num_c] if den_c is None else [num_c, den_c]
    M, P = grid_size(K, *coefs) if K >= 1 else grid_size(1)  # K = 0: a constant series, any table serves
    return M, P, _kernels(P)


def _split_tokens(parts: list, T: int) -> bool:
    """Whether the work items split one trial's tokens (then every thread needs its own table)."""
    return len(parts) > 1 and parts[0][1] - parts[0][0] == T


def _scatter_all(kern, t: np.ndarray, M: int, P: int, parts: list) -> np.ndarray:
    """The delta-power tables G: (trials, M P) of angles t: (trials, n), a table per thread when tokens are split."""
    T = t.shape[0]
    split = _split_tokens(parts, T)
    G = np.zeros((len(parts) if split else 1, T, M * P))
    items = _items(parts, split)
    if _serial(items):
        for t0, t1, j0, j1, s in items.tolist():
            kern[0](t, t0, t1, j0, j1, M, G[s])
    else:
        kern[2](t, items, M, G)
    return G.sum(0) if split else G[0]


def _evaluation_tables(G: np.ndarray, n: int, num_c: np.ndarray, den_c: np.ndarray | None, M: int, P: int):
    """Moments from the delta-power tables G: (trials, M P), then the evaluation tables H and D
    (each (trials, M P); D has no rows for USA)."""
    T = G.shape[0]
    K = num_c.shape[0] - 1
    E = _coeff_powers(K, P)
    Gh = np.conj(np.fft.rfft(G.reshape(T, M, P), axis=1)[:, : K + 1, :])  # (T, K + 1, P): sum_c G_p[c] e^{+i k phi_c}
    m = np.einsum("tkp,pk->tk", Gh, E) / n
    H = _tables(num_c[None, :] * np.conj(m), E, M, "imag").reshape(T, M * P)
    D = _tables(den_c[None, :] * np.conj(m), E, M, "real").reshape(T, M * P) if den_c is not None else np.zeros((0, 1))
    return H, D


def grid_field(t: np.ndarray, num_c: np.ndarray, den_c: np.ndarray | None, scale: float, threads: int = 1) -> np.ndarray:
    """The circle field on float64 angles by the grid algorithm (see the module docstring).

    Parameters
    ----------
    t : (trials, n) float64 array
        Angles (any real values; they are reduced mod 2 pi on the grid).
    num_c : (K + 1,) float64 array
        Numerator coefficients c_k: the result is ``scale * Im sum_k c_k conj(m_k) e^{i k theta}``.
    den_c : (K + 1,) float64 array or None
        SA denominator coefficients: if given, the result is divided by
        ``Re sum_k den_c[k] conj(m_k) e^{i k theta}``.
    scale : float
        Overall factor.
    threads : int
        Threads to split the two passes over tokens.

    Returns
    -------
    (trials, n) float64 array

    Examples
    --------
    >>> t = np.array([[0.0, 0.5, 2.0]])
    >>> c = np.array([0.0, 1.0])                      # F = conj(m_1) e^{i theta}
    >>> v = grid_field(t, c, None, 1.0)
    >>> m1 = np.exp(1j * t[0]).mean()
    >>> bool(np.allclose(v[0], (np.conj(m1) * np.exp(1j * t[0])).imag, rtol=0, atol=1e-15))
    True
    """
    if not HAVE_NUMBA:
        raise ImportError("the grid algorithm needs numba (pip install numba); use backend='powers'")
    t = np.ascontiguousarray(t, dtype=np.float64)
    T, n = t.shape
    M, P, kern = _plan(num_c, den_c)
    parts = _parts(T, n, threads)
    H, D = _evaluation_tables(_scatter_all(kern, t, M, P, parts), n, num_c, den_c, M, P)
    out = np.empty((T, n))
    items = _items(parts, False)
    if _serial(items):
        for t0, t1, j0, j1, _ in items.tolist():
            kern[1](t, t0, t1, j0, j1, M, H, D, out, float(scale))
    else:
        kern[3](t, items, M, H, D, out, float(scale))
    return out

