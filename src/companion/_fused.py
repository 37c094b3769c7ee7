"""A fused CPU attention kernel in float32 or float64 (numba): scores, exponentials and weighted sums in one pass.

Private engine of :func:`companion.attention.field_unchecked` with ``backend="fused"``. The torch path runs
three kernels over a (trials, n, m) score array (a GEMM, a softmax, a GEMM) and moves that array
through memory between them; for the papers' small ensembles (80 tokens in d = 3) this costs as
much as the exponentials. Here a block of query rows is scored, exponentiated and summed while it
sits in the first-level cache, and the query and value projections (A x_i, V x_j) and the sphere
models' tangent projection are done in the same kernel (each of these 3-column products is a
separate pass over memory in torch; timings in ``bench/results/`` of the repository).

Two choices make the exponential loop vectorise (numba has no vector exp of its own here):

* the exponential is computed by the kernel itself, :func:`_exp_nonpositive`: x = k ln 2 + r with
  |r| <= ln 2 / 2 (Cody-Waite), e^r by its Taylor polynomial of degree 7 in float32 (remainder
  0.347^8 / 8! < 6e-9, under float32 rounding) and 13 in float64 (0.347^14 / 14! < 4e-18), and 2^k
  written into the exponent bits;
* each row is shifted by an upper bound of its largest score, beta |q_i| max_j |k_j|
  (Cauchy-Schwarz), instead of the row maximum (a reduction numba leaves scalar). A shift above the
  maximum only scales every term of the row alike; it is used when it exceeds the row's first score
  by at most 60, so the row sum stays >= e^-60, far above float32's smallest normal number.
  Otherwise the row's exact maximum is taken.

Every function works in the tokens' precision (``X.dtype.type`` for each constant, numba compiles one
version per dtype). float64 runs the same loops: it avoids torch's (trials, n, n) score arrays too, so
its memory is O(trials n d) and it is faster than torch's float64 path up to d = 24 (bench/fused64.py;
:mod:`companion.attention` says where "auto" takes it).

The work items (blocks of query rows) run on numba's threads, or one after another in a process forked
after the parent started them (:mod:`companion._omp`); each item is computed alike either way, so the
field does not depend on how many threads there are. The keys of a small ensemble are prepared on one
thread (a parallel region costs more than they do).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ._omp import forked

try:
    import numba
    from numba import prange

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - the tests monkeypatch the flag
    numba = None
    HAVE_NUMBA = False

__all__ = ["HAVE_NUMBA", "fused_field", "exp_nonpositive", "range_problem", "BLOCK_ELEMENTS"]

# Scores held per block of query rows: 8192 float32 (32 KiB) and as many int32 (a whole 80-token trial).
BLOCK_ELEMENTS = 8192
# Tokens' entries (T n d) below which their keys are prepared on one thread (_prepare_serial).
_PARALLEL_PREPARE = 1 << 18
_SHIFT_SLACK = 60.0
_LOG2E = 1.4426950408889634
_LN2_HI = 0.693359375  # 9 significant bits: k * _LN2_HI is exact in float32 for |k| < 2^15
_LN2_LO = -2.12194440e-4
_MIN_ARG = -87.0  # e^-87 = 1.6e-38 > float32's smallest normal number (1.2e-38)
# float64: ln 2 in two parts whose first has 32 significant bits (k * hi exact for |k| < 2^20)
_LN2_HI64 = 6.93147180369123816490e-01
_LN2_LO64 = 1.90821492927058770002e-10
_MIN_ARG64 = -708.0  # e^-708 = 3.3e-308 > float64's smallest normal number (2.2e-308)
_C64 = tuple(1.0 / math.factorial(k) for k in range(14))  # Taylor coefficients of e^r
# Reassociation lets LLVM vectorise the row sums (several partial sums); inputs are finite (checked
# once by the callers), so no-NaN/no-inf flags change nothing but the code generated.
_FASTMATH = {"reassoc", "contract", "nsz", "arcp", "nnan", "ninf"}
# The exponential keeps its order of operations (reassociation would merge the two halves of ln 2
# in the Cody-Waite reduction); it has no reduction to vectorise.
_FASTMATH_EXP = {"contract", "nnan", "ninf"}
_FASTMATH_PREPARE = {"reassoc", "contract", "nsz", "arcp"}


if HAVE_NUMBA:

    @numba.njit(cache=True, nogil=True, fastmath=_FASTMATH_EXP)
    def _exp32(S, bits, count):  # pragma: no cover - compiled; tested through exp_nonpositive
        """S[:count] <- e^S for float32 entries <= 0, in place; ``bits``: int32 scratch of S's size."""
        log2e = np.float32(_LOG2E)
        hi = np.float32(_LN2_HI)
        lo = np.float32(_LN2_LO)
        floor_arg = np.float32(_MIN_ARG)
        half = np.float32(0.5)
        c2, c3, c4 = np.float32(1 / 2), np.float32(1 / 6), np.float32(1 / 24)
        c5, c6, c7 = np.float32(1 / 120), np.float32(1 / 720), np.float32(1 / 5040)
        one = np.float32(1.0)
        for j in range(count):
            x = max(S[j], floor_arg)
            kf = np.floor(x * log2e + half)
            r = (x - kf * hi) - kf * lo
            p = one + r * (one + r * (c2 + r * (c3 + r * (c4 + r * (c5 + r * (c6 + r * c7))))))
            bits[j] = (np.int32(kf) + np.int32(127)) << np.int32(23)  # the float 2^k
            S[j] = p
        scale = bits[:count].view(np.float32)
        for j in range(count):
            S[j] *= scale[j]

    @numba.njit(cache=True, nogil=True, fastmath=_FASTMATH_EXP)
    def _exp64(S, bits, count):  # pragma: no cover - compiled; tested through exp_nonpositive
        """S[:count] <- e^S for float64 entries <= 0, in place; ``bits``: int64 scratch of S's size.
        The same reduction with ln 2 split for float64 and Taylor degree 13 (0.347^14 / 14! < 4e-18)."""
        floor_arg = _MIN_ARG64
        for j in range(count):
            x = max(S[j], floor_arg)
            kf = np.floor(x * _LOG2E + 0.5)
            r = (x - kf * _LN2_HI64) - kf * _LN2_LO64
            p = 1.0 + r * (1.0 + r * (_C64[2] + r * (_C64[3] + r * (_C64[4] + r * (_C64[5] + r * (_C64[6] + r * (
                _C64[7] + r * (_C64[8] + r * (_C64[9] + r * (_C64[10] + r * (_C64[11] + r * (_C64[12] + r * _C64[13]))))))))))))
            bits[j] = (np.int64(kf) + np.int64(1023)) << np.int64(52)  # the float 2^k
            S[j] = p
        scale = bits[:count].view(np.float64)
        for j in range(count):
            S[j] *= scale[j]

    @numba.njit(cache=True, nogil=True)
    def _exp_nonpositive(S, bits, count):  # pragma: no cover - compiled; tested through exp_nonpositive
        """S[:count] <- e^S for entries <= 0, in place, in S's precision (float32 or float64)."""
        if S.itemsize == 4:
            _exp32(S, bits, count)
        else:
            _exp64(S, bits, count)

    # No nnan/ninf here: _prepare is what detects non-finite tokens (cheap, O(T n d)).
    @numba.njit(cache=True, nogil=True, fastmath=_FASTMATH_PREPARE)
    def _prepare_trial(X, V, XT, VXT, knorm, t):  # pragma: no cover - compiled
        """Trial t: keys X^T (d, n), values (V X^T) (e, n) (V: (1 or T, e, d); for V = I, (0, 0, 0)
        and VXT is XT), and a little more than the largest key norm (an upper bound after rounding)."""
        T, n, d = X.shape
        e = VXT.shape[1]
        F = X.dtype.type  # float32 or float64: every constant in the tokens' precision
        for c in range(d):
            for j in range(n):
                XT[t, c, j] = X[t, j, c]
        if V.shape[0] != 0:  # else VXT is XT itself (the caller passes one array twice)
            tv = t if V.shape[0] == T else np.int64(0)
            for c in range(e):
                for j in range(n):
                    VXT[t, c, j] = F(0.0)
                for c2 in range(d):
                    vcc = V[tv, c, c2]
                    for j in range(n):
                        VXT[t, c, j] += vcc * XT[t, c2, j]
        mx = F(0.0)
        total = F(0.0)  # NaN or inf in any |x_j|^2 survives in the sum, not in max (fastmath)
        for j in range(n):
            s = F(0.0)
            for c in range(d):
                s += XT[t, c, j] * XT[t, c, j]
            mx = max(mx, s)
            total += s
        knorm[t] = np.sqrt(mx) * F(1 + 1e-5) if np.isfinite(total) else F(np.inf)

    @numba.njit(cache=True, parallel=True)
    def _prepare(X, V, XT, VXT, knorm):  # pragma: no cover - compiled
        """:func:`_prepare_trial` for every trial, in parallel."""
        for tp in prange(X.shape[0]):
            _prepare_trial(X, V, XT, VXT, knorm, np.int64(tp))  # prange's index is unsigned

    @numba.njit(cache=True, nogil=True)
    def _prepare_serial(X, V, XT, VXT, knorm):  # pragma: no cover - compiled
        """:func:`_prepare_trial` for every trial, one after another (a forked process: see fused_field)."""
        for t in range(X.shape[0]):
            _prepare_trial(X, V, XT, VXT, knorm, t)

    @numba.njit(cache=True, nogil=True, fastmath=_FASTMATH, inline="always")
    def _scores(X, A, XT, beta, t, i, knorm, qb, row):  # pragma: no cover - compiled
        """row[j] = s_ij - shift_i with s_ij = beta <A x_i, x_j>; returns shift_i (see the module docstring).
        qb: scratch of length d (X's precision) for beta A x_i."""
        F = X.dtype.type
        d = X.shape[2]
        m = XT.shape[2]
        ta = t if A.shape[0] == XT.shape[0] else 0
        qn = F(0.0)
        s0 = F(0.0)
        for c in range(d):
            if A.shape[0] == 0:
                qc = X[t, i, c]
            else:
                qc = F(0.0)
                for c2 in range(d):
                    qc += A[ta, c, c2] * X[t, i, c2]
            qc *= beta
            qb[c] = qc
            qn += qc * qc
            s0 += qc * XT[t, c, 0]
        sh = np.sqrt(qn) * knorm[t]
        exact = sh - s0 > F(_SHIFT_SLACK)
        if d == 3 and not exact:  # the papers' tokens on S^2: one pass over the row
            a0, a1, a2 = qb[0], qb[1], qb[2]
            k0, k1, k2 = XT[t, 0], XT[t, 1], XT[t, 2]
            for j in range(m):
                row[j] = a0 * k0[j] + a1 * k1[j] + a2 * k2[j] - sh
            return sh
        for j in range(m):
            row[j] = F(0.0)
        for c in range(d):
            qc = qb[c]
            kc = XT[t, c]
            for j in range(m):
                row[j] += qc * kc[j]
        if exact:
            sh = row[0]
            for j in range(1, m):
                sh = max(sh, row[j])
        for j in range(m):
            row[j] -= sh
        return sh

    # error_model="numpy": a division by zero gives inf, never a Python exception out of a parallel loop
    @numba.njit(cache=True, nogil=True, fastmath=_FASTMATH, error_model="numpy")
    def _block(X, A, XT, VXT, knorm, beta, softmax, project, t, i0, i1, S, bits, qb, out, shift):  # pragma: no cover - compiled
        """Rows i0..i1-1 of trial t into out[t, i] (softmax: the field; usa: sum_j e^{s_ij - shift_i} v_j),
        projected on the tangent space at x_i if ``project``."""
        F = X.dtype.type
        m = XT.shape[2]
        e = VXT.shape[1]
        rows = i1 - i0
        for r in range(rows):
            shift[t, i0 + r] = _scores(X, A, XT, beta, t, i0 + r, knorm, qb, S[r * m : (r + 1) * m])
        _exp_nonpositive(S, bits, rows * m)
        f = qb  # the query is spent: its scratch holds the row's field (e = d <= qb's length)
        for r in range(rows):
            i = i0 + r
            w = S[r * m : (r + 1) * m]
            den = F(0.0)
            if e == 3:
                f0 = F(0.0)
                f1 = F(0.0)
                f2 = F(0.0)
                v0, v1, v2 = VXT[t, 0], VXT[t, 1], VXT[t, 2]
                for j in range(m):
                    den += w[j]
                    f0 += w[j] * v0[j]
                    f1 += w[j] * v1[j]
                    f2 += w[j] * v2[j]
                f[0], f[1], f[2] = f0, f1, f2
            else:
                for j in range(m):
                    den += w[j]
                for c in range(e):
                    vc = VXT[t, c]
                    acc = F(0.0)
                    for j in range(m):
                        acc += w[j] * vc[j]
                    f[c] = acc
            if softmax:
                for c in range(e):
                    f[c] /= den
            if project:
                p = F(0.0)
                for c in range(e):
                    p += f[c] * X[t, i, c]
                for c in range(e):
                    f[c] -= p * X[t, i, c]
            for c in range(e):
                out[t, i, c] = f[c]

    @numba.njit(cache=True, nogil=True)
    def _field_items(X, A, XT, VXT, knorm, beta, softmax, project, items, w0, w1, rows_max, out, shift, bits_like):  # pragma: no cover - compiled
        """Work items w0..w1-1 (t, i0, i1) of ``items``, one after another, with their own scratch."""
        m = XT.shape[2]
        S = np.empty(rows_max * m, dtype=X.dtype)
        bits = np.empty(rows_max * m, dtype=bits_like.dtype)  # int32 for float32, int64 for float64
        qb = np.empty(max(X.shape[2], 3), dtype=X.dtype)
        for w in range(w0, w1):
            _block(X, A, XT, VXT, knorm, beta, softmax, project, items[w, 0], items[w, 1], items[w, 2], S, bits, qb, out, shift)

    @numba.njit(cache=True, parallel=True)
    def _field_all(X, A, XT, VXT, knorm, beta, softmax, project, items, rows_max, chunks, out, shift, bits_like):  # pragma: no cover - compiled
        """Every work item of ``items`` in ``chunks`` parallel groups (:func:`_field_items` each)."""
        W = items.shape[0]
        for c in prange(chunks):  # contiguous shares: equal work
            _field_items(X, A, XT, VXT, knorm, beta, softmax, project, items, W * c // chunks, W * (c + 1) // chunks,
                         rows_max, out, shift, bits_like)


def exp_nonpositive(x: np.ndarray) -> np.ndarray:
    """The kernel's exponential on a float32 or float64 array of values <= 0 (for tests and inspection);
    other inputs are taken as float32.

    Examples
    --------
    >>> y = exp_nonpositive(np.array([0.0, -1.0, -50.0], dtype=np.float32))
    >>> bool(np.allclose(y, np.exp([0.0, -1.0, -50.0]), rtol=3e-7, atol=0))
    True
    >>> y = exp_nonpositive(np.array([0.0, -1.0, -500.0]))
    >>> y.dtype.name, bool(np.allclose(y, np.exp([0.0, -1.0, -500.0]), rtol=5e-16, atol=0))
    ('float64', True)
    """
    if not HAVE_NUMBA:
        raise ImportError("the fused kernel needs numba (pip install numba)")
    dtype = np.float64 if np.asarray(x).dtype == np.float64 else np.float32
    S = np.array(x, dtype=dtype).ravel()
    if (S > 0).any():
        raise ValueError("x must be <= 0")
    _exp_nonpositive(S, np.empty(S.size, dtype=_BITS[S.dtype]), S.size)
    return S.reshape(np.shape(x))


def _norm_bound(M: np.ndarray) -> float:
    """An upper bound of the spectral norm of each (d, d) matrix of M: (k, d, d) (the largest Frobenius
    norm); 1 for the identity (an empty M). Computed in float64, so it is finite for any float32 M.
    Cached by value: the integrators pass the same A and V at every evaluation."""
    return 1.0 if M.size == 0 else _norm_bound_of(M.tobytes(), M.shape, M.dtype.str)


@functools.lru_cache(maxsize=64)
def _norm_bound_of(data: bytes, shape: tuple[int, ...], dtype: str) -> float:
    M = np.frombuffer(data, dtype=dtype).reshape(shape)
    return float(np.sqrt((M.astype(np.float64) ** 2).sum(axis=(1, 2)).max()))


# Per precision: the largest finite number, an empty matrix standing for the identity, and the integer
# scratch type of the exponential (module constants: fused_field runs at every integrator stage).
_LARGEST = {np.dtype(t): float(np.finfo(t).max) for t in (np.float32, np.float64)}
_NONE = {t: np.zeros((0, 0, 0), dtype=t) for t in (np.float32, np.float64)}


def range_problem(X: np.ndarray, key_norm: float, A: np.ndarray, V: np.ndarray, beta: float, m: int) -> str | None:
    r"""Why the fused kernel would overflow on these inputs in X's precision (a message saying what to do), or None.

    X: (T, n, d) the tokens, float32 or float64 (read for their values only when ``key_norm`` is not
    finite, to say why). With :math:`K = \max_j |x_j|` (``key_norm``, inf when a token or its squared
    norm is not finite) and :math:`a, v` the bounds of :func:`_norm_bound` for A and V, the kernel's
    intermediates are bounded by

    .. math::

        |\beta A x_i|\,K \le \beta a K^2 \ (\text{scores and shift}), \qquad
        |\beta A x_i|^2 \le (\beta a K)^2, \qquad
        \Big|\sum_j w_{ij} V x_j\Big| \le m\, v K \ (w_{ij} \le 1),

    each of which must stay below a quarter of the precision's largest number (3.4e38 in float32,
    1.8e308 in float64).

    Examples
    --------
    >>> none = np.zeros((0, 0, 0), dtype=np.float32)
    >>> X = np.ones((1, 80, 3), dtype=np.float32)
    >>> range_problem(X, 1.8, none, none, 1.0, 80) is None
    True
    >>> range_problem(X, 1e20, none, none, 1.0, 80)[:44]
    'the fused attention field overflows float32:'
    >>> range_problem(X.astype(np.float64), 1e20, none, none, 1.0, 80) is None  # float64 holds 1e40
    True
    >>> range_problem(X * 1e-30, 1.8e-30, none, none, 1e39, 80)[:64]  # tiny scores, but beta itself is no float32
    'the fused attention field cannot be computed: beta = 1e+39 does '
    """
    largest = _LARGEST.get(X.dtype) or float(np.finfo(X.dtype).max)
    bound = largest / 4  # room for the shift's subtraction
    if math.isfinite(key_norm) and beta <= largest:  # the common case first: no names, no messages
        a, v = _norm_bound(A), _norm_bound(V)
        scores = beta * a * key_norm * key_norm
        query = beta * a * key_norm
        sums = m * v * key_norm
        if scores <= bound and query * query <= bound and sums <= bound:
            return None
    name = np.dtype(X.dtype).name
    wider = "use float64 tokens (x0.double()), " if name == "float32" else ""
    if not beta <= largest:  # the kernel takes beta in X's precision: cast, it would be inf (inf * 0 = NaN in the scores)
        return (f"the fused attention field cannot be computed: beta = {beta:g} does not fit {name} (largest "
                f"{largest:.3g}): {wider}or a smaller beta")
    if not math.isfinite(key_norm):
        what = (f"a token's squared norm |x_j|^2 overflows {name} (largest {largest:.2g})" if np.isfinite(X).all()
                else f"a token is not finite (it overflowed {name}, largest {largest:.2g}, or is NaN)")
        return (f"the fused attention field cannot be computed: {what}: "
                + ("use float64 tokens (x0.double(), largest 1.8e308), " if wider else "use ")
                + "smaller tokens, a shorter run or a smaller step")
    return (f"the fused attention field overflows {name}: scores beta <A x_i, x_j> up to {scores:.3g}, "
            f"|beta A x_i|^2 up to {query * query:.3g}, value sums up to {sums:.3g} (largest token norm {key_norm:.3g}, "
            f"beta = {beta:g}; {name} holds {bound:.3g} here): {wider}smaller "
            "tokens or a smaller beta (or scale of A, V)")


@functools.lru_cache(maxsize=64)
def _items(T: int, n: int, m: int) -> np.ndarray:
    """(trial, first row, end row) blocks of at most BLOCK_ELEMENTS scores (at least one row), (W, 3).

    Examples
    --------
    >>> _items(2, 5, 3000).tolist()
    [[0, 0, 2], [0, 2, 4], [0, 4, 5], [1, 0, 2], [1, 2, 4], [1, 4, 5]]
    """
    rows = max(1, BLOCK_ELEMENTS // max(1, m))
    starts = np.arange(0, n, rows, dtype=np.int64)
    i0 = np.tile(starts, T)
    return np.stack([np.repeat(np.arange(T, dtype=np.int64), starts.size), i0, np.minimum(i0 + rows, n)], axis=1)


# The integer type whose bits build 2^k in the exponential, per precision.
_BITS = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}
_BITS_LIKE = {t: np.empty(0, dtype=_BITS[np.dtype(t)]) for t in (np.float32, np.float64)}


def fused_field(X: np.ndarray, A: np.ndarray | None, V: np.ndarray | None, beta: float, softmax: bool,
                project: bool, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The self-attention field of float32 or float64 tokens in one fused pass, in their precision.

    Parameters
    ----------
    X : (T, n, d) float32 or float64 tokens (keys are the tokens, queries A x_i, values V x_j);
        any other dtype is taken as float32.
    A, V : (d, d) or (T, d, d), or None for the identity; cast to X's dtype.
    beta : float, > 0.
    softmax : bool, softmax weights; else usa (e^{s_ij} / n, see Returns).
    project : bool, project each token's field on the tangent space at x_i (F - <F, x_i> x_i).
    threads : int, parallel groups of blocks (at most numba's thread count).

    Returns
    -------
    out : (T, n, d), X's dtype: softmax: the field; usa: the field times n e^{-shift_i}.
    shift : (T, n, 1), X's dtype, the per-row shift (>= max_j beta <A x_i, x_j>, up to rounding).

    Raises
    ------
    FloatingPointError
        A token is not finite, or the scores or sums could overflow X's precision
        (:func:`range_problem`); the message says what to do.

    Examples
    --------
    >>> X = np.eye(2, dtype=np.float32)[None]
    >>> out, _ = fused_field(X, None, None, 1.0, True, False)
    >>> np.round(out[0].astype(np.float64), 4).tolist()
    [[0.7311, 0.2689], [0.2689, 0.7311]]
    >>> out, _ = fused_field(np.eye(2)[None], None, None, 1.0, True, False)
    >>> out.dtype.name, bool(abs(out[0, 0, 0] - 1 / (1 + np.exp(-1.0))) < 3e-16)
    ('float64', True)
    """
    if not HAVE_NUMBA:
        raise ImportError("backend='fused' needs numba (pip install numba, or make venv)")
    dtype = np.float64 if np.asarray(X).dtype == np.float64 else np.float32
    X = np.ascontiguousarray(X, dtype=dtype)
    T, n, d = X.shape
    none = _NONE[dtype]
    A = none if A is None else np.ascontiguousarray(A, dtype=dtype).reshape(-1, d, d)
    V = none if V is None else np.ascontiguousarray(V, dtype=dtype).reshape(-1, d, d)
    XT = np.empty((T, d, n), dtype=dtype)
    VXT = XT if V is none else np.empty((T, d, n), dtype=dtype)
    knorm = np.empty(T, dtype=dtype)
    items = _items(T, n, n)
    rows_max = int(items[0, 2] - items[0, 1])
    serial = forked()  # GNU OpenMP cannot start in a forked child (companion._omp): one thread there
    chunks = 1 if serial else max(1, min(int(threads), items.shape[0], numba.config.NUMBA_NUM_THREADS))
    if not serial and numba.get_num_threads() != chunks:
        numba.set_num_threads(chunks)
    # A parallel region costs tens of microseconds: worth it for the keys of large ensembles only.
    (_prepare_serial if serial or T * n * d < _PARALLEL_PREPARE else _prepare)(X, V, XT, VXT, knorm)
    problem = range_problem(X, float(knorm.max()), A, V, float(beta), n)
    if problem is not None:
        raise FloatingPointError(problem)
    out = np.empty((T, n, d), dtype=dtype)
    shift = np.empty((T, n, 1), dtype=dtype)
    args = (X, A, XT, VXT, knorm, dtype(beta), softmax, project, items)
    bits_like = _BITS_LIKE[dtype]
    if serial:
        _field_items(*args, 0, items.shape[0], rows_max, out, shift[..., 0], bits_like)
    else:
        _field_all(*args, rows_max, chunks, out, shift[..., 0], bits_like)
    return out, shift
