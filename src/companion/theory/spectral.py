"""Closed-form theory of paper C (Kuehn & Yoon, *Spectral selection in symmetric self-attention*).

Model (2.2): ``x_i' = P_{x_i} sum_j K_ij V x_j`` with ``K_ij = softmax_j(beta <x_i, V x_j>)`` and
``V = V^T = sum_k lambda_k e_k e_k^T``. In modal coordinates ``c_ik = <x_i, e_k>`` (Section 3)

    f_ik = sum_j K_ij c_jk,   phi_i = sum_m lambda_m c_im f_im,   c_ik' = lambda_k f_ik - phi_i c_ik.

Pure-mode equilibria ``x_i* = s_i e_p`` (Section 5) with ``n_+`` tokens at ``+e_p`` and ``n_-`` at
``-e_p`` linearise, mode by mode for every ``k != p``, into ``-gamma_+`` (multiplicity n_+ - 1),
``-gamma_-`` (multiplicity n_- - 1) and the 2x2 mean block ``B_k`` (appendix A.2). This module
gives those pieces, Remark 5.3's ``sigma(c, r)``, the criteria of Proposition 5.1 and Theorem 5.2
(as stated, and the block criterion that also covers single-token groups), the balanced-bipolar
coefficient ``alpha(M) = tanh(beta M)`` and the Theorem 6.1 cone bound; :func:`pure_state` builds the
equilibrium and :func:`spectrum_distance` holds a computed spectrum against the closed form.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch

from .._validate import as_tokens, check_beta, check_positive

__all__ = [
    "sigma",
    "gammas",
    "sign_split_weights",
    "mean_block",
    "sign_split_spectrum",
    "homogeneous_stable",
    "sign_split_stable_theorem",
    "sign_split_stable_blocks",
    "modal_rhs",
    "pure_mode_linearisation",
    "bipolar_alpha",
    "bipolar_dM",
    "cone_ratio_bound",
    "threshold_beta",
    "pure_state",
    "spectrum_distance",
]


def _counts(n_plus: int, n_minus: int) -> tuple[int, int]:
    for name, v in (("n_plus", n_plus), ("n_minus", n_minus)):
        if int(v) != v or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    if n_plus + n_minus < 1:
        raise ValueError("n_plus + n_minus must be >= 1")
    return int(n_plus), int(n_minus)


def _sign_split(lambdas, p: int, beta: float, n_plus: int, n_minus: int):
    """Checked arguments of a sign-split state: (lambdas, beta, n_plus, n_minus, lambda_p)."""
    lam = _lambdas(lambdas, p)
    beta = check_beta(beta)
    n_plus, n_minus = _counts(n_plus, n_minus)
    if n_plus == 0 or n_minus == 0:
        raise ValueError("a sign-split state needs n_plus >= 1 and n_minus >= 1 (use homogeneous_stable)")
    return lam, beta, n_plus, n_minus, float(lam[p])


def _lambdas(lambdas: Sequence[float] | torch.Tensor, p: int) -> torch.Tensor:
    lam = torch.as_tensor(lambdas, dtype=torch.float64).reshape(-1)
    if lam.numel() < 2:
        raise ValueError(f"lambdas must hold at least two eigenvalues, got {lam.numel()}")
    if not torch.isfinite(lam).all():
        raise ValueError("lambdas has non-finite entries")
    if int(p) != p or not 0 <= p < lam.numel():
        raise ValueError(f"p must be an index in [0, {lam.numel()}), got {p!r}")
    return lam


def sigma(c: float | torch.Tensor, r: float | torch.Tensor) -> float | torch.Tensor:
    r"""Remark 5.3: ``sigma(c, r) = (c - r)(c r - 1) / (r (c^2 - 1))``.

    .. math::

        \sigma(c, r) = \frac{(c - r)(c r - 1)}{r (c^2 - 1)}, \qquad
        \sigma(e^{2\beta\lambda_p}, 1) = \tanh(\beta\lambda_p) .

    For ``r = 1`` it equals ``(c - 1)/(c + 1) = tanh(beta lambda_p)`` when ``c = e^{2 beta lambda_p}``.
    Undefined at ``c = 1`` (``lambda_p = 0``).

    Parameters
    ----------
    c : > 0, != 1 (float or tensor); r : ``n_+ / n_-`` > 0 (float or tensor, broadcast with c).

    Returns
    -------
    float if both inputs are floats, else a float64 tensor.

    Examples
    --------
    >>> round(sigma(math.exp(2.0), 1.0), 6) == round(math.tanh(1.0), 6)
    True
    >>> sigma(2.0, 2.0)  # the threshold beta = |ln r| / 2 for lambda_p = 1
    0.0
    """
    scalar = not isinstance(c, torch.Tensor) and not isinstance(r, torch.Tensor)
    ct = torch.as_tensor(c, dtype=torch.float64)
    rt = torch.as_tensor(r, dtype=torch.float64)
    if not torch.isfinite(ct).all() or (ct <= 0).any():
        raise ValueError("c must be finite and > 0")
    if not torch.isfinite(rt).all() or (rt <= 0).any():
        raise ValueError("r must be finite and > 0")
    if (ct == 1).any():
        raise ValueError("sigma(c, r) is undefined at c = 1 (lambda_p = 0)")
    out = (ct - rt) * (ct * rt - 1) / (rt * (ct * ct - 1))
    return float(out) if scalar else out


def threshold_beta(r: float, lambda_p: float = 1.0) -> float:
    r"""Where the sign-split window opens: ``beta = |ln r| / (2 |lambda_p|)``, i.e. ``sigma = 0``.

    .. math::

        \beta^* = \frac{\lvert \ln r\rvert}{2\lvert\lambda_p\rvert}, \qquad r = \frac{n_+}{n_-} .

    Examples
    --------
    >>> round(threshold_beta(4.0), 6)
    0.693147
    """
    r = check_positive(r, "r")
    if lambda_p == 0:
        raise ValueError("lambda_p must be non-zero")
    return abs(math.log(r)) / (2.0 * abs(float(lambda_p)))


def sign_split_weights(lambda_p: float, beta: float, n_plus: int, n_minus: int) -> tuple[float, float, float, float]:
    r"""Attention weights at ``x_i* = s_i e_p``: ``(a_+, b_+, a_-, b_-)`` (Section 5.2).

    .. math::

        a_\pm = \frac{e^{\beta\lambda_p}}{Z_\pm}, \quad b_\pm = \frac{e^{-\beta\lambda_p}}{Z_\pm}, \qquad
        Z_+ = n_+ e^{\beta\lambda_p} + n_- e^{-\beta\lambda_p}, \quad
        Z_- = n_- e^{\beta\lambda_p} + n_+ e^{-\beta\lambda_p} .

    ``a_+`` is the weight of a same-sign token seen from ``S_+``, ``b_+`` of an opposite-sign one;
    likewise for ``S_-``. Rows sum to one: ``n_+ a_+ + n_- b_+ = 1``.

    Examples
    --------
    >>> a, b, _, _ = sign_split_weights(1.0, 1.0, 2, 2)
    >>> round(2 * a + 2 * b, 12)
    1.0
    """
    beta = check_beta(beta)
    n_plus, n_minus = _counts(n_plus, n_minus)
    e, f = math.exp(beta * lambda_p), math.exp(-beta * lambda_p)
    zp, zm = n_plus * e + n_minus * f, n_minus * e + n_plus * f
    return e / zp, f / zp, e / zm, f / zm


def gammas(lambda_p: float, beta: float, n_plus: int, n_minus: int) -> tuple[float, float]:
    r"""``gamma_+ = lambda_p (r c - 1)/(r c + 1)``, ``gamma_- = lambda_p (c - r)/(c + r)``,
    ``c = e^{2 beta lambda_p}``, ``r = n_+/n_-`` (computed from the weights, so n_- = 0 is allowed:
    the homogeneous state, ``gamma_+ = lambda_p``).

    .. math::

        \gamma_+ = \lambda_p (n_+ a_+ - n_- b_+) = \lambda_p \frac{r c - 1}{r c + 1}, \qquad
        \gamma_- = \lambda_p (n_- a_- - n_+ b_-) = \lambda_p \frac{c - r}{c + r},

    with the weights of :func:`sign_split_weights`, :math:`c = e^{2\beta\lambda_p}`, :math:`r = n_+/n_-`.

    Examples
    --------
    >>> [round(g, 6) for g in gammas(1.0, 1.0, 3, 3)] == [round(math.tanh(1.0), 6)] * 2
    True
    """
    a_p, b_p, a_m, b_m = sign_split_weights(lambda_p, beta, n_plus, n_minus)
    return lambda_p * (n_plus * a_p - n_minus * b_p), lambda_p * (n_minus * a_m - n_plus * b_m)


def mean_block(lambda_k: float, lambda_p: float, beta: float, n_plus: int, n_minus: int) -> torch.Tensor:
    r"""The 2x2 block ``B_k`` acting on the group means ``(ybar_+, ybar_-)`` of mode k (appendix A.2).

    .. math::

        B_k = \begin{pmatrix} \lambda_k n_+ a_+ - \gamma_+ & \lambda_k n_- b_+ \\
                              \lambda_k n_+ b_- & \lambda_k n_- a_- - \gamma_- \end{pmatrix},

    with the weights of :func:`sign_split_weights` and the rates of :func:`gammas`.

    Returns
    -------
    (2, 2) float64 tensor.

    Examples
    --------
    >>> B = mean_block(0.0, 1.0, 1.0, 2, 2)  # lambda_k = 0: the block is -diag(gamma_+, gamma_-)
    >>> bool(torch.allclose(B, -math.tanh(1.0) * torch.eye(2, dtype=torch.float64)))
    True
    """
    a_p, b_p, a_m, b_m = sign_split_weights(lambda_p, beta, n_plus, n_minus)
    g_p, g_m = gammas(lambda_p, beta, n_plus, n_minus)
    lk = float(lambda_k)
    return torch.tensor(
        [[lk * n_plus * a_p - g_p, lk * n_minus * b_p], [lk * n_plus * b_m, lk * n_minus * a_m - g_m]],
        dtype=torch.float64,
    )


def sign_split_spectrum(lambdas: Sequence[float] | torch.Tensor, p: int, beta: float, n_plus: int, n_minus: int) -> torch.Tensor:
    r"""Every eigenvalue of the linearisation at ``x_i* = s_i e_p`` on the tangent space, from the
    invariant decomposition of appendix A.2: for each ``k != p``, ``-gamma_+`` (n_+ - 1 times),
    ``-gamma_-`` (n_- - 1 times) and the two eigenvalues of ``B_k``. ``n_minus = 0`` gives the
    homogeneous state (Section 5.1).

    .. math::

        \operatorname{spec} = \bigcup_{k \ne p} \Big( \{-\gamma_+\}^{n_+ - 1} \cup \{-\gamma_-\}^{n_- - 1}
            \cup \operatorname{spec} B_k \Big),

    with :math:`\gamma_\pm` of :func:`gammas` and :math:`B_k` of :func:`mean_block` (the scalar
    :math:`\lambda_k - \gamma_+` when :math:`n_- = 0`, :math:`\lambda_k - \gamma_-` when :math:`n_+ = 0`).

    Returns
    -------
    (n (d - 1),) complex128 tensor, sorted by (real, imag).

    Examples
    --------
    >>> ev = sign_split_spectrum([1.0, 0.5], 0, 1.0, 2, 0)  # homogeneous: -lambda_p and lambda_k - lambda_p
    >>> ev.real.tolist()
    [-1.0, -0.5]
    """
    lam = _lambdas(lambdas, p)
    beta = check_beta(beta)
    n_plus, n_minus = _counts(n_plus, n_minus)
    g_p, g_m = gammas(float(lam[p]), beta, n_plus, n_minus)
    out: list[complex] = []
    for k in range(lam.numel()):
        if k == p:
            continue
        out += [complex(-g_p)] * max(n_plus - 1, 0) + [complex(-g_m)] * max(n_minus - 1, 0)
        if n_plus and n_minus:
            out += torch.linalg.eigvals(mean_block(float(lam[k]), float(lam[p]), beta, n_plus, n_minus)).tolist()
        else:  # one group: the mean block is the scalar lambda_k - gamma
            out.append(complex(float(lam[k]) - (g_p if n_plus else g_m)))
    ev = torch.tensor(out, dtype=torch.complex128)
    key = sorted(range(len(out)), key=lambda i: (ev[i].real.item(), ev[i].imag.item()))
    return ev[key]


def homogeneous_stable(lambdas: Sequence[float] | torch.Tensor, p: int) -> bool:
    r"""Proposition 5.1 (n >= 2 tokens): ``x_i* = e_p`` is stable iff ``lambda_p > 0`` and
    ``lambda_k < lambda_p`` for all ``k != p``.

    .. math::

        x_i^* = e_p \ \text{stable} \iff \lambda_p > 0 \ \text{and} \ \lambda_k < \lambda_p \ \ \forall k \ne p .

    Examples
    --------
    >>> homogeneous_stable([1.0, 0.5, -2.0], 0), homogeneous_stable([-1.0, -2.0], 0)
    (True, False)
    """
    lam = _lambdas(lambdas, p)
    others = torch.cat([lam[:p], lam[p + 1 :]])
    return bool(lam[p] > 0 and (others < lam[p]).all())


def sign_split_stable_theorem(lambdas: Sequence[float] | torch.Tensor, p: int, beta: float, n_plus: int, n_minus: int) -> bool:
    r"""Theorem 5.2 as stated (``n_+, n_- >= 1``), ``c = e^{2 beta lambda_p}``, ``r = n_+/n_-``:

    * ``lambda_p > 0``: stable iff ``lambda_p > |ln r|/(2 beta)`` and ``lambda_k < lambda_p sigma(c, r)``;
    * ``lambda_p < 0``: stable iff ``lambda_p < -|ln r|/(2 beta)`` and
      ``lambda_p < lambda_k < lambda_p sigma(c, r)``, for every ``k != p``.

    .. math::

        \lambda_p > 0:\quad \lambda_p > \frac{|\ln r|}{2\beta}\ \text{and}\
            \lambda_k < \lambda_p\,\sigma(c, r)\ \ \forall k \ne p;
        \qquad
        \lambda_p < 0:\quad \lambda_p < -\frac{|\ln r|}{2\beta}\ \text{and}\
            \lambda_p < \lambda_k < \lambda_p\,\sigma(c, r)\ \ \forall k \ne p,

    with :math:`c = e^{2\beta\lambda_p}`, :math:`r = n_+/n_-` and :math:`\sigma` of :func:`sigma`.

    ``lambda_p = 0`` is never stable (sigma undefined; the within-group rates vanish).

    Examples
    --------
    >>> sign_split_stable_theorem([1.0, 0.5], 0, 2.0, 2, 2)   # 0.5 < tanh(2) = 0.96
    True
    >>> sign_split_stable_theorem([-1.0, -0.5], 0, 2.0, 2, 2)  # -1 < -0.5 < lambda_p tanh(beta lambda_p) = 0.96
    True
    >>> sign_split_stable_theorem([-1.0, -1.5], 0, 2.0, 2, 2)  # lambda_k below lambda_p
    False
    """
    lam, beta, n_plus, n_minus, lp = _sign_split(lambdas, p, beta, n_plus, n_minus)
    if lp == 0:
        return False
    r = n_plus / n_minus
    s = lp * sigma(math.exp(2 * beta * lp), r)
    others = torch.cat([lam[:p], lam[p + 1 :]])
    thr = abs(math.log(r)) / (2 * beta)
    if lp > 0:
        return bool(lp > thr and (others < s).all())
    return bool(lp < -thr and (others > lp).all() and (others < s).all())


def sign_split_stable_blocks(lambdas: Sequence[float] | torch.Tensor, p: int, beta: float, n_plus: int, n_minus: int) -> bool:
    r"""Stability from the invariant decomposition itself (the singleton caveat built in):
    ``gamma_+ > 0`` only if ``n_+ >= 2``, ``gamma_- > 0`` only if ``n_- >= 2``, and every mean block
    ``B_k`` (``k != p``) Hurwitz (trace < 0, det > 0). Agrees with Theorem 5.2 when both groups hold
    at least two tokens.

    .. math::

        \text{stable} \iff (n_+ < 2 \ \text{or}\ \gamma_+ > 0),\ (n_- < 2 \ \text{or}\ \gamma_- > 0)
            \ \text{and}\ \operatorname{tr} B_k < 0 < \det B_k \ \ \forall k \ne p .

    Examples
    --------
    >>> sign_split_stable_blocks([1.0, 0.5], 0, 2.0, 2, 2)
    True
    >>> # one token at +e_1 against four at -e_1 with beta = 0.5: the theorem's |ln r|/(2 beta) = 1.39
    >>> # exceeds lambda_p = 1, yet the singleton has no within-group mode
    >>> sign_split_stable_theorem([1.0, -0.5], 0, 0.5, 1, 4), sign_split_stable_blocks([1.0, -0.5], 0, 0.5, 1, 4)
    (False, True)
    """
    lam, beta, n_plus, n_minus, lp = _sign_split(lambdas, p, beta, n_plus, n_minus)
    g_p, g_m = gammas(lp, beta, n_plus, n_minus)
    if (n_plus >= 2 and g_p <= 0) or (n_minus >= 2 and g_m <= 0):
        return False
    for k in range(lam.numel()):
        if k == p:
            continue
        B = mean_block(float(lam[k]), lp, beta, n_plus, n_minus)
        if not (torch.trace(B) < 0 and torch.linalg.det(B) > 0):
            return False
    return True


def modal_rhs(C: torch.Tensor, lambdas: torch.Tensor, beta: float) -> torch.Tensor:
    r"""Right-hand side of the modal system (Section 3): ``c_ik' = lambda_k f_ik - phi_i c_ik`` with
    ``K_ij = softmax_j(beta sum_k lambda_k c_ik c_jk)``, ``f_ik = sum_j K_ij c_jk`` and
    ``phi_i = sum_m lambda_m c_im f_im``. Written on its own from the modal formulas (it does not call
    the attention field), so it is a second method for the dynamics.

    .. math::

        \dot c_{ik} = \lambda_k f_{ik} - \varphi_i c_{ik}, \qquad
        f_{ik} = \sum_j K_{ij} c_{jk}, \qquad \varphi_i = \sum_m \lambda_m c_{im} f_{im}, \qquad
        K_{ij} = \frac{e^{\beta \sum_k \lambda_k c_{ik} c_{jk}}}{\sum_l e^{\beta \sum_k \lambda_k c_{ik} c_{lk}}} .

    Parameters
    ----------
    C : (trials, n, d) modal coordinates; lambdas : (d,) eigenvalues; beta : > 0.

    Returns
    -------
    (trials, n, d), C's dtype and device.

    Examples
    --------
    >>> C = torch.tensor([[[1.0, 0.0], [-1.0, 0.0]]], dtype=torch.float64)  # a pure mode is at rest
    >>> modal_rhs(C, torch.tensor([1.0, 0.5]), 1.0).abs().max().item()
    0.0
    """
    C = as_tokens(C, "C")
    beta = check_beta(beta)
    lam = torch.as_tensor(lambdas).to(C).reshape(-1)
    if lam.numel() != C.shape[-1]:
        raise ValueError(f"lambdas must have d = {C.shape[-1]} entries, got {lam.numel()}")
    K = torch.softmax(beta * (C * lam) @ C.transpose(-1, -2), dim=-1)  # (trials, n, n)
    f = K @ C
    phi = (lam * C * f).sum(-1, keepdim=True)
    return lam * f - phi * C


def pure_mode_linearisation(lambdas: Sequence[float] | torch.Tensor, p: int, beta: float,
                            signs: Sequence[float] | torch.Tensor) -> torch.Tensor:
    r"""Lemma A.1, eq. (A.3): the linearisation at the pure-mode equilibrium ``x_i* = s_i e_p``, mode by mode.

    Write a tangent perturbation as :math:`y_i = \sum_{k \ne p} y_{ik} e_k`. At the equilibrium
    :math:`\sum_j K_{ij} V x_j^* \parallel e_p`, so a first-order change of the weights moves it along
    :math:`e_p` only, which the projection :math:`P_{x_i}` removes; what is left is
    :math:`\sum_j K^*_{ij} V y_j - \gamma_i y_i`, and V maps each :math:`e_k` to :math:`\lambda_k e_k`: no
    coupling between different modes. For each :math:`k \ne p`

    .. math::

        \dot y_{ik} = (L_k y_{\cdot k})_i = -\gamma_i\, y_{ik} + \lambda_k \sum_{j} K^*_{ij}\, y_{jk},
        \qquad K^*_{ij} = \frac{e^{\beta \lambda_p s_i s_j}}{\sum_l e^{\beta \lambda_p s_i s_l}},
        \qquad \gamma_i = \lambda_p\, s_i \sum_j K^*_{ij} s_j .

    Written from these formulas alone (no attention field): a closed form to compare Jacobians with.

    Parameters
    ----------
    lambdas : (d,) eigenvalues of V, d >= 2.
    p : int
        Index of the occupied eigendirection e_p.
    beta : float
        Inverse temperature, > 0.
    signs : (n,) entries +1 or -1, in any order (the two groups need not be contiguous).

    Returns
    -------
    (d - 1, n, n) float64 tensor: ``L_k`` for every ``k != p``, in increasing k.

    Examples
    --------
    Homogeneous state (all signs +1): ``L_k = -lambda_p I + (lambda_k / n) 1 1^T``.

    >>> pure_mode_linearisation([1.0, 0.5], 0, 1.0, [1, 1]).tolist()
    [[[-0.75, 0.25], [0.25, -0.75]]]

    Interleaved signs (+, -, +) give the weights and rates of the grouped sign split (n_+ = 2, n_- = 1):

    >>> L = pure_mode_linearisation([1.0, 0.3, -0.5], 0, 2.0, [1, -1, 1])
    >>> (gp, gm), (ap, bp, am, bm) = gammas(1.0, 2.0, 2, 1), sign_split_weights(1.0, 2.0, 2, 1)
    >>> tuple(L.shape), bool(abs(L[0, 0, 0] - (0.3 * ap - gp)) < 1e-15), bool(abs(L[1, 1, 1] - (-0.5 * am - gm)) < 1e-15)
    ((2, 3, 3), True, True)
    """
    lam = _lambdas(lambdas, p)
    beta = check_beta(beta)
    s = torch.as_tensor(signs, dtype=torch.float64).reshape(-1)
    if s.numel() < 1 or not bool(((s == 1) | (s == -1)).all()):
        raise ValueError(f"signs must be a non-empty sequence of +1 and -1, got {s.tolist()}")
    lp = float(lam[p])
    K = torch.softmax(beta * lp * s[:, None] * s[None, :], dim=-1)  # (n, n)
    gamma = lp * s * (K @ s)  # (n,)
    others = [k for k in range(lam.numel()) if k != p]
    return torch.stack([float(lam[k]) * K - torch.diag(gamma) for k in others])


def bipolar_alpha(M: float | torch.Tensor, beta: float, n_plus: int = 1, n_minus: int = 1) -> float | torch.Tensor:
    r"""Coefficient ``alpha`` of the bipolar reduction ``u' = alpha (V u - M u)``, ``M = <u, V u>``.

    .. math::

        \dot u = \alpha(M)\,(V u - M u), \qquad M = \langle u, V u\rangle, \qquad
        \alpha(M) = \tanh(\beta M) \ \text{(balanced)} .

    For the balanced manifold (n_+ = n_-) it is ``tanh(beta M)`` (Section 4.2). For unbalanced groups
    it differs between the groups (then u(t) is not shared and the manifold is not invariant); the
    balanced value is returned only when ``n_plus == n_minus``.

    Examples
    --------
    >>> round(bipolar_alpha(0.5, 2.0), 6) == round(math.tanh(1.0), 6)
    True
    """
    beta = check_beta(beta)
    n_plus, n_minus = _counts(n_plus, n_minus)
    if n_plus != n_minus:
        raise ValueError(f"the bipolar manifold is invariant only when balanced, got n_plus={n_plus}, n_minus={n_minus}")
    if isinstance(M, torch.Tensor):
        return torch.tanh(beta * M)
    return math.tanh(beta * float(M))


def bipolar_dM(p: torch.Tensor, lambdas: torch.Tensor, beta: float) -> torch.Tensor:
    r"""Lemma 4.4: ``M' = 2 alpha(M) sum_k p_k (lambda_k - M)^2`` with ``M = sum_k lambda_k p_k``.

    .. math::

        \dot M = 2 \tanh(\beta M) \sum_k p_k (\lambda_k - M)^2, \qquad M = \sum_k \lambda_k p_k .

    Parameters
    ----------
    p : (..., d) modal masses of u; lambdas : (d,).

    Returns
    -------
    (...,) tensor.

    Examples
    --------
    >>> bipolar_dM(torch.tensor([1.0, 0.0]), torch.tensor([1.0, -1.0]), 1.0)  # pure mode: at rest
    tensor(0.)
    """
    beta = check_beta(beta)
    lam = torch.as_tensor(lambdas).to(p)
    M = (p * lam).sum(-1)
    return 2 * torch.tanh(beta * M) * (p * (lam - M.unsqueeze(-1)) ** 2).sum(-1)


def cone_ratio_bound(R0: torch.Tensor, delta: float | torch.Tensor, lambda_1: float, lambda_k: float | torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    r"""Theorem 6.1: ``R_k(t) <= R_k(0) exp(-delta (lambda_1 - |lambda_k|) t)``, valid when
    ``lambda_1 > |lambda_k|`` and ``c_i1(0) >= delta > 0`` for every token.

    .. math::

        R_k(t) = \max_i \Big\lvert \frac{c_{ik}(t)}{c_{i1}(t)} \Big\rvert
        \le R_k(0)\, e^{-\delta(\lambda_1 - \lvert\lambda_k\rvert) t} .

    Parameters
    ----------
    R0 : (...,) initial ratios ``max_i |c_ik / c_i1|``; delta : scalar or broadcastable to R0;
    lambda_1 : leading eigenvalue; lambda_k : broadcastable to R0; t : (T,) times.

    Returns
    -------
    (T, ...) bound.

    Examples
    --------
    >>> cone_ratio_bound(torch.tensor(1.0), 0.5, 1.0, 0.0, torch.tensor([0.0, 2.0]))
    tensor([1.0000, 0.3679])
    """
    R0 = torch.as_tensor(R0)
    t = torch.as_tensor(t).to(R0).reshape((-1,) + (1,) * R0.ndim)
    lk = torch.as_tensor(lambda_k).to(R0)
    dl = torch.as_tensor(delta).to(R0)
    if (lk.abs() >= lambda_1).any():
        raise ValueError("Theorem 6.1 needs lambda_1 > |lambda_k| for every k >= 2")
    if (dl <= 0).any():
        raise ValueError("delta must be > 0 (one-sided cone data)")
    return R0 * torch.exp(-dl * (lambda_1 - lk.abs()) * t)


def pure_state(V: torch.Tensor, p: int, n_plus: int, n_minus: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The pure-mode equilibrium ``x_i* = s_i e_p`` (n_+ tokens at +e_p first, then n_- at -e_p).

    Parameters
    ----------
    V : (d, d) symmetric; p : the index of the eigenvector, in ascending order of the eigenvalues;
    n_plus, n_minus : the numbers of tokens at +e_p and at -e_p.

    Returns
    -------
    (X*, lambdas, E): X* (n, d), the ascending eigenvalues (d,) and eigenvectors (d, d) of V
    (``torch.linalg.eigh``), in float64.

    Examples
    --------
    >>> X, lam, E = pure_state(torch.diag(torch.tensor([2.0, -1.0], dtype=torch.float64)), 1, 1, 1)
    >>> X.abs().tolist(), lam.tolist()
    ([[1.0, 0.0], [1.0, 0.0]], [-1.0, 2.0])
    """
    lam, E = torch.linalg.eigh(torch.as_tensor(V, dtype=torch.float64))
    s = torch.tensor([1.0] * n_plus + [-1.0] * n_minus, dtype=lam.dtype)
    return s[:, None] * E[:, p][None, :], lam, E


def spectrum_distance(a: torch.Tensor, b: torch.Tensor) -> float:
    r"""The largest distance between matched eigenvalues of two spectra, e.g. a Jacobian's against a closed form.

    .. math::

        \max_i |a_i - b_{\pi(i)}|, \qquad \pi = \operatorname{arg\,min}_\pi \sum_i |a_i - b_{\pi(i)}| ,

    the matching ``pi`` being the one of least total distance
    (:func:`scipy.optimize.linear_sum_assignment`), so that the order of either list does not matter.

    Parameters
    ----------
    a, b : (m,) real or complex tensors (same length for a full matching).

    Returns
    -------
    float (0.0 for empty spectra).

    Examples
    --------
    >>> a = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    >>> round(spectrum_distance(a, torch.tensor([-2.0, 0.5, 1.001], dtype=torch.float64)), 12)  # any order
    0.001
    >>> spectrum_distance(torch.tensor([1j, -1j]), torch.tensor([-1j, 1j]))
    0.0
    """
    from scipy.optimize import linear_sum_assignment

    cost = (a[:, None] - b[None, :]).abs().cpu().numpy()
    r, c = linear_sum_assignment(cost)
    return float(cost[r, c].max()) if len(r) else 0.0
