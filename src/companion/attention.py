"""The self-attention vector field, shared by every particle model of the four papers.

For tokens ``x_1..x_n`` the field at token ``i`` is ``sum_j w_ij V x_j`` with

* ``softmax``: ``w_ij = exp(beta <A x_i, x_j>) / sum_k exp(beta <A x_i, x_k>)`` (A = K^T Q, so
  ``<A x_i, x_j> = <Q x_i, K x_j>``);
* ``usa`` (the unnormalised model of Bruno et al.): ``w_ij = exp(beta <A x_i, x_j>) / n``.

With ``causal=True`` token ``i`` attends to tokens ``j <= i`` only (masked, decoder-style attention):
the sums run over ``j <= i`` and, for softmax, so does the normalisation; usa keeps its ``1/n``.

Everything is batched over a leading ``trials`` axis. Scores are shifted by their row maximum
(log-sum-exp) so large ``beta`` neither overflows nor produces NaN. For large ``n`` the field is
evaluated in blocks of queries, so memory grows linearly in ``n``; on CUDA the softmax field can go
through :func:`torch.nn.functional.scaled_dot_product_attention` (flash / memory-efficient kernels).

The mean-field field of an empirical measure at arbitrary query points (:func:`field_at`, and the
rescaled field (87) of paper A, :func:`rescaled_field_at`) and their Jacobians by automatic
differentiation (:func:`field_jacobian`, :func:`rescaled_field_jacobian`) serve the checks of paper A's
Appendix C.
"""
from __future__ import annotations

import math

import torch

from . import _fused
from ._validate import as_state, check_beta, check_matrix, check_real, check_real_tensor, check_trials

__all__ = ["attention_field", "field_unchecked", "attend", "tangent_project", "field_at", "field_jacobian", "rescaled_field_at",
           "rescaled_field_jacobian", "overflow_message", "NORMALIZATIONS", "BACKENDS", "DEFAULT_BLOCK_ELEMENTS"]

NORMALIZATIONS = ("softmax", "usa")
BACKENDS = ("auto", "dense", "blocked", "sdpa", "fused")
# Score-matrix elements held at once by the blocked path: 2**22 float64 = 32 MiB, a few temporaries
# of that size keep one evaluation well under 1 GB at any n.
DEFAULT_BLOCK_ELEMENTS = 2**22


def _mT(M: torch.Tensor) -> torch.Tensor:
    return M.transpose(-1, -2)


def _needs_grad(*tensors: torch.Tensor) -> bool:
    """Whether autograd will differentiate through this evaluation (then nothing is done in place)."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def _values_operand(v: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """The operand :func:`_weighted_values` multiplies by, and whether it is ``v^T``.

    For few value columns (tokens in low dimension) the batched GEMM is several times faster as
    ``(v^T w^T)^T`` (a wide output instead of a 3-column one). Made once per field evaluation, not
    per block: per-block copies churn the allocator and inflate resident memory."""
    if v.shape[-1] < 16:
        return _mT(v).contiguous(), True
    return v, False


def _weighted_values(w: torch.Tensor, vop: tuple[torch.Tensor, bool]) -> torch.Tensor:
    """``w @ v`` for w: (T, b, n), with ``vop = _values_operand(v)``, v: (T, n, e) -> (T, b, e)."""
    op, transposed = vop
    return torch.matmul(op, _mT(w)).transpose(-1, -2) if transposed else torch.matmul(w, op)


def _causal_mask(rows: int, cols: int, first: int, device: torch.device) -> torch.Tensor:
    """(rows, cols) bool mask, True where key j lies after query ``first + r`` (j > first + r).

    Examples
    --------
    >>> _causal_mask(2, 3, 1, torch.device("cpu")).int()
    tensor([[0, 0, 1],
            [0, 0, 0]], dtype=torch.int32)
    """
    return torch.ones(rows, cols, dtype=torch.bool, device=device).triu_(first + 1)


def _attend_block(
    q: torch.Tensor,
    k: torch.Tensor,
    vop: tuple[torch.Tensor, bool],
    beta: float,
    normalization: str,
    bufs: tuple[torch.Tensor, torch.Tensor] | None = None,
    causal_from: int | None = None,
) -> torch.Tensor:
    """Dense attention for a block of queries. q: (T, b, d), k: (T, n, d), vop = _values_operand(v)
    with v: (T, n, e) -> (T, b, e). ``bufs``: two (T, b, n) workspaces for the scores and the
    weights (the blocked path reuses them; no autograd through them). ``causal_from``: the index of
    the block's first query when the attention is causal (query i sees keys j <= i), else None."""
    # scaling the (T, b, d) queries saves a pass over the (T, b, n) scores
    s = torch.matmul(q * beta, _mT(k)) if bufs is None else torch.matmul(q * beta, _mT(k), out=bufs[0])
    if causal_from is not None:
        # e^-inf = 0: masked keys get no weight; the diagonal is never masked, so no row is empty
        mask = _causal_mask(q.shape[-2], k.shape[-2], causal_from, q.device)
        s = s.masked_fill(mask, -math.inf) if bufs is None else s.masked_fill_(mask, -math.inf)
    if normalization == "softmax":
        # torch's fused softmax subtracts the row maximum itself (stable for any beta) in one pass
        w = torch.softmax(s, dim=-1) if bufs is None else torch.softmax(s, dim=-1, out=bufs[1])
        return _weighted_values(w, vop)
    m = s.amax(dim=-1, keepdim=True)
    if _needs_grad(q, k, vop[0]):
        w = torch.exp(s - m)  # out of place: autograd (e.g. Jacobians) needs s and exp(s) intact
    else:
        w = torch.exp_(s.sub_(m))  # in place: the (T, b, n) block is the memory that matters
    return _usa_rescale(_weighted_values(w, vop), m, k.shape[-2], beta)


def _usa_log_scale(shift: torch.Tensor, m: int, dtype: torch.dtype) -> torch.Tensor | None:
    """log(e^{shift_i} / m), the usa factor of each row, or None where it overflows ``dtype``."""
    log_scale = shift - math.log(m)
    return None if (log_scale > math.log(torch.finfo(dtype).max) - 1).any() else log_scale


def _usa_rescale(out: torch.Tensor, shift: torch.Tensor, m: int, beta: float) -> torch.Tensor:
    """usa: (1/m) sum_j e^{s_ij} v_j = e^{shift_i} / m * sum_j e^{s_ij - shift_i} v_j, with a clear
    error where e^{shift_i} / m overflows. out: (T, b, e), shift: (T, b, 1)."""
    log_scale = _usa_log_scale(shift, m, out.dtype)
    if log_scale is None:
        raise ValueError(_usa_overflow(beta, float(shift.max()) - math.log(m), out.dtype))
    return out * torch.exp(log_scale)


def _usa_overflow(beta: float, log_weight: float, dtype: torch.dtype) -> str:
    """The refusal of a usa field whose largest weight e^{log_weight} (= e^{beta <A x_i, x_j>} / n)
    overflows ``dtype``: what helps depends on the dtype (float64 is no remedy for float64 tokens)."""
    fits = math.log(torch.finfo(dtype).max)
    head = (f"beta = {beta:g} is too large for the unnormalised ('usa') field in {dtype}: the largest weight "
            f"e^(beta <A x_i, x_j>) / n = e^{log_weight:.4g} overflows (the largest {dtype} is e^{fits:.1f}); ")
    if dtype == torch.float64:
        return head + "lower beta (or the scale of A) so that beta <A x_i, x_j> stays below ~700, or use normalization='softmax'"
    return head + "use float64 tokens (weights up to e^709), a smaller beta, or normalization='softmax'"


def tangent_project(X: torch.Tensor, F: torch.Tensor) -> torch.Tensor:
    r"""``P_x F = F - <F, x> x`` token by token. X, F: (trials, n, d) -> (trials, n, d).

    .. math::

        \mathbf P_{x_i} F_i = F_i - \langle F_i, x_i\rangle\, x_i,

    the projection on the tangent space of the sphere at a unit token :math:`x_i`.

    Examples
    --------
    >>> X = torch.tensor([[[1.0, 0.0]]]); F = torch.tensor([[[2.0, 3.0]]])
    >>> tangent_project(X, F)
    tensor([[[0., 3.]]])
    """
    return F - (F * X).sum(-1, keepdim=True) * X


def _fused_refusal(X: torch.Tensor, A: torch.Tensor | None, V: torch.Tensor | None) -> str | None:
    """Why the fused kernel cannot take these tensors (CPU float32 or float64, one dtype, no autograd), or None if it can."""
    ps = [p for p in (A, V) if p is not None]
    if X.device.type != "cpu" or X.dtype not in _FUSED_DTYPES or any(p.dtype != X.dtype or p.device != X.device for p in ps):
        got = ", ".join(f"{k} {t.dtype} on {t.device}" for k, t in (("X", X), ("A", A), ("V", V)) if t is not None)
        return f"backend='fused' takes float32 or float64 tensors of one dtype on the CPU, got {got}; use 'auto'"
    if _needs_grad(X, *ps):
        return "backend='fused' does not support autograd; use 'dense' or 'blocked'"
    return None


def _fused_applies(X: torch.Tensor, A: torch.Tensor | None, V: torch.Tensor | None) -> bool:
    """Whether "auto" takes the fused kernel: it can (:func:`_fused_refusal`), numba is installed, d <= _FUSED_MAX_D[dtype].

    Its scores are scalar loops over d, so torch's GEMMs win in higher dimension (see _FUSED_MAX_D)."""
    return _fused.HAVE_NUMBA and X.shape[-1] <= _FUSED_MAX_D.get(X.dtype, 0) and _fused_refusal(X, A, V) is None


def _fused_field(X: torch.Tensor, A: torch.Tensor | None, V: torch.Tensor | None, beta: float, normalization: str,
                 project: bool) -> torch.Tensor | None:
    """backend="fused": :func:`companion._fused.fused_field` on CPU float32 or float64 tensors, no autograd.

    None for a usa field whose rescaling by the kernel's shift (an upper bound of the row maximum)
    would overflow: the caller then takes the exact row maximum (and raises if that overflows too)."""
    refusal = _fused_refusal(X, A, V)
    if refusal is not None:
        raise ValueError(refusal)
    return _fused_run(X, A, V, beta, normalization, project)


def _fused_run(X: torch.Tensor, A: torch.Tensor | None, V: torch.Tensor | None, beta: float, normalization: str,
               project: bool) -> torch.Tensor | None:
    """:func:`_fused_field` for tensors the kernel takes (:func:`_fused_refusal` None, checked by the caller)."""
    Anp = None if A is None else A.detach().numpy()
    Vnp = Anp if V is A else (None if V is None else V.detach().numpy())
    out, shift = _fused.fused_field(X.detach().numpy(), Anp, Vnp, beta, normalization == "softmax", project,
                                    threads=torch.get_num_threads())
    out = torch.from_numpy(out)
    if normalization == "softmax":
        return out
    log_scale = _usa_log_scale(torch.from_numpy(shift), X.shape[1], out.dtype)
    return None if log_scale is None else out * torch.exp(log_scale)


_FUSED_DTYPES = (torch.float32, torch.float64)
_SDPA_FUSED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# Up to which dimension "auto" takes the fused kernel, per dtype. float32, measured on the 2-core
# development machine (2026-11-30): at d = 16 torch's GEMMs beat the kernel (0.86 against 1.35 ms for
# one trial of 1000 tokens); at d <= 8 the kernel wins, 1.7-5x over the shapes measured (bench/ensemble.py
# times the d = 3 ensemble; bench/results/cpu-2026-11-30). float64: bench/fused64.py against the faster
# of torch's dense and blocked paths (bench/results/cpu-2026-12-02/fused64.log): the kernel wins at
# d = 3 to 24 and loses at d = 32 and 64; 16 leaves a margin.
_FUSED_MAX_D = {torch.float32: 8, torch.float64: 16}


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: float, causal: bool = False) -> torch.Tensor:
    """torch's fused attention with ``scale=beta``. q: (T, n, d), k: (T, m, d), v: (T, m, e) -> (T, n, e).
    ``causal``: query i sees keys j <= i (torch's ``is_causal``, aligned at the first token).

    The fused kernels accept 4-D (batch, heads, length, dim) inputs only (3-D ones silently go
    to the math kernel, which holds the whole (T, n, m) score matrix), and some want the head
    dimension a multiple of 8: so one head is added and d, e are zero-padded (zeros change no
    score and no output column).
    """
    def pad(x: torch.Tensor) -> torch.Tensor:
        r = (-x.shape[-1]) % 8
        return torch.nn.functional.pad(x, (0, r)) if r else x

    e = v.shape[-1]
    out = torch.nn.functional.scaled_dot_product_attention(pad(q)[:, None], pad(k)[:, None], pad(v)[:, None], scale=beta,
                                                           is_causal=causal)
    return out[:, 0, :, :e]


def attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: float,
    *,
    normalization: str = "softmax",
    backend: str = "auto",
    block_elements: int = DEFAULT_BLOCK_ELEMENTS,
    causal: bool = False,
) -> torch.Tensor:
    r"""Generic attention ``sum_j w_ij v_j`` with ``w_ij`` from scores ``beta <q_i, k_j>``.

    .. math::

        \mathrm{out}_i = \sum_{j=1}^m w_{ij} v_j, \qquad
        w_{ij} = \frac{e^{\beta\langle q_i, k_j\rangle}}{\sum_{l=1}^m e^{\beta\langle q_i, k_l\rangle}}
        \ (\text{softmax}) \quad \text{or} \quad \frac{e^{\beta\langle q_i, k_j\rangle}}{m} \ (\text{usa}),

    the sums running over :math:`j \le i` when ``causal``.

    Parameters
    ----------
    q : (trials, n, d) queries; k : (trials, m, d) keys; v : (trials, m, e) values.
    beta : float, inverse temperature (> 0).
    normalization : ``"softmax"`` or ``"usa"`` (divide by m instead of the row sum).
    backend : ``"dense"`` (one (trials, n, m) score matrix), ``"blocked"`` (query blocks of at most
        ``block_elements`` scores), ``"sdpa"`` (torch's fused kernel; softmax only) or ``"auto"``
        (sdpa on CUDA for large problems, blocked when the dense matrix would exceed
        ``block_elements``, dense otherwise). The self-attention field has one more, ``"fused"``
        (:func:`field_unchecked`).
    block_elements : int, most scores the blocked backend holds at once.
    causal : bool, query ``i`` attends to keys ``j <= i`` only (needs m >= n: the first n keys
        sit at the queries' own positions).

    Returns
    -------
    (trials, n, e) tensor, on q's device and dtype.

    Examples
    --------
    >>> q = k = torch.eye(2, dtype=torch.float64)[None]
    >>> attend(q, k, k, beta=1.0).round(decimals=4)
    tensor([[[0.7311, 0.2689],
             [0.2689, 0.7311]]], dtype=torch.float64)

    Causal: the first query sees only the first key.

    >>> attend(q, k, k, beta=1.0, causal=True).round(decimals=4)
    tensor([[[1.0000, 0.0000],
             [0.2689, 0.7311]]], dtype=torch.float64)
    """
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    T, n, _ = q.shape
    m = k.shape[-2]
    if causal and m < n:
        raise ValueError(f"causal attention needs at least as many keys as queries, got {m} keys for {n} queries")
    if backend == "auto":
        # Fused CUDA kernels (flash, memory-efficient) take half/bfloat16/float32 only; float64 would
        # fall back to the math kernel, which materialises every score, so it stays blocked.
        if q.is_cuda and normalization == "softmax" and n * m >= 2**20 and q.dtype in _SDPA_FUSED_DTYPES:
            backend = "sdpa"
        elif T * n * m > block_elements:
            backend = "blocked"
        else:
            backend = "dense"
    if backend == "sdpa":
        if normalization != "softmax":
            raise ValueError("backend='sdpa' supports normalization='softmax' only")
        return _sdpa(q, k, v, beta, causal)
    if backend == "fused":
        raise ValueError("backend='fused' computes the self-attention field (attention_field, the models), not attend(q, k, v)")
    vop = _values_operand(v)
    if backend == "dense":
        return _attend_block(q, k, vop, beta, normalization, causal_from=0 if causal else None)
    b = max(1, block_elements // max(1, T * m))
    # Each block's result goes straight into one preallocated output. Holding the small results in a
    # list for a final torch.cat interleaves long-lived small allocations with the freed score blocks,
    # and glibc's heap then fragments: at n = 1e5 resident memory grew by 16 MB a block (24 GB, OOM).
    out = torch.empty(T, n, v.shape[-1], dtype=v.dtype, device=v.device)
    # One pair of (T, b, m) workspaces for all blocks: a fresh 16 MB allocation per block went back
    # to the OS on every free, and page faults took half the time (9 s of 18 at n = 5e4).
    full = None
    if not _needs_grad(q, k, v):
        sb = torch.empty(T, b, m, dtype=q.dtype, device=q.device)
        full = (sb, torch.empty_like(sb) if normalization == "softmax" else sb)  # usa: exp in place in sb
    for i in range(0, n, b):
        r = min(b, n - i)
        bufs = None if full is None else (full[0][:, :r], full[1][:, :r])
        out[:, i : i + r] = _attend_block(q[:, i : i + r], k, vop, beta, normalization, bufs, i if causal else None)
    return out


def attention_field(
    X: torch.Tensor,
    A: torch.Tensor | None = None,
    V: torch.Tensor | None = None,
    beta: float = 1.0,
    *,
    normalization: str = "softmax",
    backend: str = "auto",
    block_elements: int = DEFAULT_BLOCK_ELEMENTS,
    causal: bool = False,
) -> torch.Tensor:
    r"""Self-attention field ``B[mu_X](x_i) = sum_j w_ij V x_j`` at every token.

    .. math::

        B[\mu_X](x_i) = \sum_{j=1}^n w_{ij}\, V x_j, \qquad
        w_{ij} = \frac{e^{\beta \langle A x_i, x_j\rangle}}{\sum_{k=1}^n e^{\beta \langle A x_i, x_k\rangle}}
        \ (\text{softmax}), \qquad
        w_{ij} = \frac{e^{\beta \langle A x_i, x_j\rangle}}{n} \ (\text{usa}),

    with ``A = K^T Q`` (so :math:`\langle A x_i, x_j\rangle = \langle Q x_i, K x_j\rangle`); with
    ``causal=True`` both sums run over :math:`j \le i` only.

    Parameters
    ----------
    X : (trials, n, d) or (n, d) tokens.
    A : (d, d) or (trials, d, d), the bilinear form of the scores, ``A = K^T Q``; identity if None.
    V : (d, d) or (trials, d, d), the value matrix; identity if None.
    beta : inverse temperature, > 0.
    normalization, backend, block_elements, causal : see :func:`attend`.

    Returns
    -------
    (trials, n, d) tensor (a (n, d) input gives trials = 1), X's device and dtype.

    Examples
    --------
    Two orthogonal tokens with identity parameters attract each other symmetrically:

    >>> X = torch.eye(2, dtype=torch.float64)
    >>> attention_field(X, beta=1.0).round(decimals=4)
    tensor([[[0.7311, 0.2689],
             [0.2689, 0.7311]]], dtype=torch.float64)

    Large beta stays finite (log-sum-exp):

    >>> bool(torch.isfinite(attention_field(X, beta=1e4)).all())
    True
    """
    X = as_state(X, "X")
    beta = check_beta(check_real(beta, "beta"))
    check_real_tensor(A, "A")
    check_real_tensor(V, "V")
    d = X.shape[-1]
    A = None if A is None else check_trials(check_matrix(A, d, "A", like=X), X.shape[0], "A")
    V = None if V is None else check_trials(check_matrix(V, d, "V", like=X), X.shape[0], "V")
    out = field_unchecked(X, A, V, beta, normalization=normalization, backend=backend, block_elements=block_elements,
                          causal=causal)
    if not torch.isfinite(out).all():  # the torch paths overflow to inf or NaN silently (O(T n d) to check)
        raise FloatingPointError(overflow_message(X))
    return out


def overflow_message(X: torch.Tensor) -> str:
    """The refusal of an attention field that overflowed X's dtype, saying what to do.

    Examples
    --------
    >>> overflow_message(torch.ones(1, 2, 3))[:60]
    'the attention field overflows torch.float32 (largest 3.4e+38'
    """
    big = torch.finfo(X.dtype).max
    fix = ("use float64 tokens (x0.double(), largest 1.8e308), smaller tokens or a smaller beta"
           if X.dtype != torch.float64 else "use smaller tokens, a smaller beta (or scale of A, V), or a shorter run")
    return (f"the attention field overflows {X.dtype} (largest {big:.2g}) at these tokens (largest entry "
            f"{X.detach().abs().max().item():.3g}): {fix}")


def field_unchecked(
    X: torch.Tensor,
    A: torch.Tensor | None,
    V: torch.Tensor | None,
    beta: float,
    *,
    normalization: str = "softmax",
    backend: str = "auto",
    block_elements: int = DEFAULT_BLOCK_ELEMENTS,
    project: bool = False,
    causal: bool = False,
) -> torch.Tensor:
    r""":func:`attention_field` without the argument checks, for callers that validated once.

    .. math::

        F_i = \sum_j w_{ij}\, V x_j \quad \text{or, with project,} \quad
        F_i = \mathbf P_{x_i} \sum_j w_{ij}\, V x_j,

    with the weights of :func:`attention_field`.

    The integrators call the field thousands of times on states they produced themselves; scanning
    X, A and V for NaN and checking shapes on every call costs 10-20 % of a small ensemble's field.
    X: (trials, n, d); A, V: (d, d), (trials, d, d) or None, already on X's device and dtype.
    ``project``: return the field projected on the tangent space at each token (the sphere models).
    ``causal``: token i attends to tokens j <= i only (see :func:`attend`; the fused kernel has no
    mask, so ``"auto"`` then takes the torch path and ``"fused"`` is refused).

    Besides :func:`attend`'s backends, ``backend="fused"`` (CPU, float32 or float64, numba; no autograd)
    computes the queries A x_i, the scores, their exponentials, the weighted sums of V x_j and the
    projection in one kernel over cache-sized blocks of rows (:mod:`companion._fused`), memory O(trials n d);
    ``"auto"`` takes it on the CPU for float32 tokens in dimension <= 8 and float64 ones in dimension
    <= 16 when numba is installed and nothing needs a gradient. Results agree with the other backends to
    rounding (not bitwise: the kernel sums in another order and computes its own exponential, within
    1.1e-7 relative of exp in float32 and one unit in the last place, 2.2e-16, in float64).

    Examples
    --------
    >>> X = torch.eye(2, dtype=torch.float64)[None]
    >>> torch.equal(field_unchecked(X, None, None, 1.0), attention_field(X, beta=1.0))
    True
    """
    if backend == "fused" and causal:
        raise ValueError("backend='fused' has no causal mask; use 'auto', 'dense', 'blocked' or 'sdpa'")
    if backend == "fused" or (backend == "auto" and not causal and _fused_applies(X, A, V)):
        out = (_fused_field if backend == "fused" else _fused_run)(X, A, V, beta, normalization, project)
        if out is not None:
            return out
        backend = "auto"  # usa whose bound-based rescaling would overflow: the exact row maximum decides
    q = X if A is None else torch.matmul(X, _mT(A))
    if V is None:
        v = X
    elif V is A:  # paper C (A = V): one product, not two
        v = q
    else:
        v = torch.matmul(X, _mT(V))
    out = attend(q, X, v, beta, normalization=normalization, backend=backend, block_elements=block_elements, causal=causal)
    return tangent_project(X, out) if project else out


def field_at(x: torch.Tensor, Y: torch.Tensor, A: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    r"""The mean-field attention field (12) of paper A of the empirical measure of Y, at the points x.

    .. math:: \mathcal X[\mu_Y](x) = \sum_j \mathrm{softmax}_j(\langle A x, y_j\rangle)\, V y_j

    Unlike :func:`attention_field`, the query points need not be the measure's own points.

    Parameters
    ----------
    x : (trials, k, d)
        Query points (anywhere in R^d).
    Y : (trials, m, d)
        The points of the measure (uniform weights).
    A, V : (trials, d, d)
        Score matrix ``A = K^T Q`` and value matrix per trial.

    Returns
    -------
    torch.Tensor
        (trials, k, d), on x's device and dtype.

    Examples
    --------
    >>> I = torch.eye(2, dtype=torch.float64)[None]
    >>> Y = torch.tensor([[[1.0, 0.0], [-1.0, 0.0]]], dtype=torch.float64)
    >>> field_at(torch.tensor([[[0.0, 1.0]]], dtype=torch.float64), Y, I, I)  # equal weights: the mean
    tensor([[[0., 0.]]], dtype=torch.float64)
    """
    return attend(x @ A.transpose(-1, -2), Y, Y @ V.transpose(-1, -2), 1.0, backend="dense")


def _jacobian(field, x: torch.Tensor) -> torch.Tensor:
    """``d field(x) / dx`` at each point of x (trials, k, d) by automatic differentiation: (trials, k, d, d)."""
    with torch.enable_grad():
        xg = x.detach().clone().requires_grad_(True)
        F = field(xg)
        rows = [torch.autograd.grad(F[..., a].sum(), xg, retain_graph=a + 1 < F.shape[-1])[0] for a in range(F.shape[-1])]
    return torch.stack(rows, dim=-2).detach()


def field_jacobian(x: torch.Tensor, Y: torch.Tensor, A: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    r"""The Jacobian ``d X[mu_Y](x) / dx`` of :func:`field_at` at each query point, by automatic differentiation.

    .. math:: \nabla_x \mathcal X[\mu_Y](x) = V\, \mathrm{Cov}_{w(x)}(y)\, A,
        \qquad w_j(x) = \mathrm{softmax}_j(\langle A x, y_j\rangle)

    Parameters
    ----------
    x, Y, A, V
        As in :func:`field_at`: x (trials, k, d), Y (trials, m, d), A and V (trials, d, d).

    Returns
    -------
    torch.Tensor
        (trials, k, d, d): entry [t, i, a, b] is ``d X_a / d x_b`` at the i-th query of trial t.

    Examples
    --------
    With equal weights on ``+-e1`` and ``A = V = I`` the Jacobian is the covariance ``e1 e1^T``:

    >>> I = torch.eye(2, dtype=torch.float64)[None]
    >>> Y = torch.tensor([[[1.0, 0.0], [-1.0, 0.0]]], dtype=torch.float64)
    >>> field_jacobian(torch.tensor([[[0.0, 1.0]]], dtype=torch.float64), Y, I, I)[0, 0]
    tensor([[1., 0.],
            [0., 0.]], dtype=torch.float64)
    """
    return _jacobian(lambda z: field_at(z, Y, A, V), x)


def rescaled_field_at(x: torch.Tensor, Y: torch.Tensor, A: torch.Tensor, V: torch.Tensor, t: float) -> torch.Tensor:
    r"""The rescaled field (87) of paper A (tokens ``z = e^{-tV} x``) of the empirical measure of Y at the points x, at time t.

    .. math:: \mathcal X[\mu_t](x) = \sum_j \mathrm{softmax}_j(\langle A e^{tV} x, e^{tV} y_j\rangle)\, V (y_j - x)

    Parameters
    ----------
    x : (trials, k, d)
        Query points.
    Y : (trials, m, d)
        The measure's points (uniform weights).
    A, V : (trials, d, d)
        ``A = K^T Q`` and V per trial.
    t : float
        Time.

    Returns
    -------
    torch.Tensor
        (trials, k, d).

    Examples
    --------
    >>> I = torch.eye(2, dtype=torch.float64)[None]
    >>> Y = torch.tensor([[[1.0, 0.0]]], dtype=torch.float64)
    >>> rescaled_field_at(Y, Y, I, I, 0.5)  # a Dirac mass does not move
    tensor([[[0., 0.]]], dtype=torch.float64)
    """
    E = torch.linalg.matrix_exp(t * V)
    Vt = V.transpose(-1, -2)
    return attend(x @ E.transpose(-1, -2) @ A.transpose(-1, -2), Y @ E.transpose(-1, -2), Y @ Vt, 1.0,
                  backend="dense") - x @ Vt


def rescaled_field_jacobian(x: torch.Tensor, Y: torch.Tensor, A: torch.Tensor, V: torch.Tensor, t: float) -> torch.Tensor:
    r"""The Jacobian in x of :func:`rescaled_field_at` at each query point, by automatic differentiation.

    .. math:: \nabla_x \mathcal X[\mu_t](x) = V\, \mathrm{Cov}_{w(x)}(y)\, e^{tV^\top} A\, e^{tV} - V

    Its largest operator norm over a set of points is the sampled Lipschitz constant L of Lemma C.12.

    Parameters
    ----------
    x, Y, A, V, t
        As in :func:`rescaled_field_at`: x (trials, k, d), Y (trials, m, d), A and V (trials, d, d).

    Returns
    -------
    torch.Tensor
        (trials, k, d, d): entry [s, i, a, b] is ``d X_a / d x_b`` at the i-th query of trial s.

    Examples
    --------
    At a Dirac mass the weights do not depend on x, so the Jacobian is ``-V``:

    >>> V = torch.diag(torch.tensor([0.5, -0.4], dtype=torch.float64))[None]
    >>> Y = torch.tensor([[[1.0, 0.0]]], dtype=torch.float64)
    >>> J = rescaled_field_jacobian(Y, Y, torch.eye(2, dtype=torch.float64)[None], V, 0.3)
    >>> J.shape, torch.allclose(J[0, 0], -V[0])
    (torch.Size([1, 1, 2, 2]), True)
    """
    return _jacobian(lambda z: rescaled_field_at(z, Y, A, V, t), x)
