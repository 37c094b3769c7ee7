"""The energy of an empirical measure on S^2 in each spherical-harmonic degree, from its spherical-harmonic
coefficients (the addition theorem): O(trials n lmax^2) work, O(trials n) memory, no pairs formed.
"""
from __future__ import annotations

import math

import torch

__all__ = ["harmonic_energy"]


def harmonic_energy(X: torch.Tensor, lmax: int) -> torch.Tensor:
    r"""Energy of the empirical measure in each degree l <= lmax on S^2: (1/n^2) sum_ij P_l(<x_i, x_j>).

    .. math::

        E_l = \frac{1}{n^2} \sum_{i, j} P_l(\langle x_i, x_j \rangle)
            = \frac{4\pi}{2l + 1} \sum_{m=-l}^{l} |c_{lm}|^2, \qquad c_{lm} = \frac1n \sum_i Y_{lm}(x_i),

    by the addition theorem (:math:`P_l` the Legendre polynomials), so in the linear phase it grows like
    :math:`e^{2 \gamma_l t}`. It is computed from the right-hand side, never from pairs: with
    :math:`z = x_3` and :math:`w = x_1 + i x_2` (for a unit vector :math:`(1 - z^2)^{m/2} e^{i m \phi} = w^m`),

    .. math::

        E_l = \sum_{m=-l}^{l} \Big| \frac1n \sum_i q_l^{|m|}(z_i)\, w_i^{|m|} \Big|^2, \qquad
        q_l^m = \sqrt{\tfrac{(l-m)!}{(l+m)!}}\, \frac{d^m P_l}{dz^m},

    the terms :math:`\pm m` equal, and :math:`q_l^m` from the recurrence
    :math:`q_m^m = \prod_{k \le m} \sqrt{(2k - 1)/(2k)}`,
    :math:`\sqrt{(l+1)^2 - m^2}\, q_{l+1}^m = (2l + 1) z q_l^m - \sqrt{l^2 - m^2}\, q_{l-1}^m`
    (:math:`|q_l^m w^m| \le 1` on S^2: nothing overflows in float32). The rows of ``X`` are taken to be
    unit vectors (not checked). In float64 this agrees with the pairwise sum to about 1e-14 relative
    (the tests hold it to 1e-12); float32 input is computed in float32, to about 1e-6 relative, flat in n
    (at most 1.1e-6 against float64, measured at lmax <= 30, n <= 1e5, random, clustered, antipodal).

    Parameters
    ----------
    X : (trials, n, 3) tokens on S^2
    lmax : int >= 1

    Returns
    -------
    (trials, lmax + 1) tensor, X's dtype and device

    Examples
    --------
    >>> X = torch.tensor([[[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]]], dtype=torch.float64)
    >>> harmonic_energy(X, 2)[0].tolist()  # antipodal pair: odd degrees cancel
    [1.0, 0.0, 1.0]
    >>> Y = torch.nn.functional.normalize(torch.randn(2, 50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)), dim=-1)
    >>> bool(torch.allclose(harmonic_energy(Y, 4)[:, 0], torch.ones(2, dtype=torch.float64)))  # E_0 = 1 always
    True
    """
    if X.ndim != 3 or X.shape[-1] != 3:
        raise ValueError(f"X must be (trials, n, 3) tokens on S^2, got {tuple(X.shape)}")
    if isinstance(lmax, bool) or not isinstance(lmax, int) or lmax < 1:
        raise ValueError(f"lmax must be an integer >= 1, got {lmax!r}")
    trials, n, _ = X.shape
    x1, x2, z = X.unbind(-1)  # (trials, n) each
    E = torch.zeros(trials, lmax + 1, dtype=X.dtype, device=X.device)
    re, im = torch.ones_like(z), torch.zeros_like(z)  # w^m, m = 0
    diag = 1.0  # q_m^m, a constant
    for m in range(lmax + 1):
        if m:
            re, im = re * x1 - im * x2, re * x2 + im * x1
            diag *= math.sqrt((2 * m - 1) / (2 * m))
        q_prev, q = torch.zeros_like(z), torch.full_like(z, diag)
        for l in range(m, lmax + 1):
            c2 = ((q * re).sum(-1) / n) ** 2 + ((q * im).sum(-1) / n) ** 2  # 4 pi / (2l + 1) |c_lm|^2
            E[:, l] += c2 if m == 0 else 2 * c2
            if l < lmax:
                q_prev, q = q, ((2 * l + 1) * z * q - math.sqrt((l - m) * (l + m)) * q_prev) / math.sqrt((l + 1) ** 2 - m**2)
    return E
