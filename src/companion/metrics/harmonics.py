"""The energy of an empirical measure on S^2 in each spherical-harmonic degree, from the Gram matrix of
the tokens (the addition theorem), with no harmonics evaluated.
"""
from __future__ import annotations

import torch

__all__ = ["harmonic_energy"]


def harmonic_energy(X: torch.Tensor, lmax: int) -> torch.Tensor:
    r"""Energy of the empirical measure in each degree l <= lmax on S^2: (1/n^2) sum_ij P_l(<x_i, x_j>).

    .. math::

        E_l = \frac{1}{n^2} \sum_{i, j} P_l(\langle x_i, x_j \rangle)
            = \frac{4\pi}{2l + 1} \sum_{m=-l}^{l} |c_{lm}|^2, \qquad c_{lm} = \frac1n \sum_i Y_{lm}(x_i),

    by the addition theorem (:math:`P_l` the Legendre polynomials, by their three-term recurrence),
    so in the linear phase it grows like :math:`e^{2 \gamma_l t}`.

    Parameters
    ----------
    X : (trials, n, 3) tokens on S^2
    lmax : int >= 1

    Returns
    -------
    (trials, lmax + 1) tensor

    Examples
    --------
    >>> X = torch.tensor([[[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]]], dtype=torch.float64)
    >>> harmonic_energy(X, 2)[0].tolist()  # antipodal pair: odd degrees cancel
    [1.0, 0.0, 1.0]
    """
    if X.ndim != 3 or X.shape[-1] != 3:
        raise ValueError(f"X must be (trials, n, 3) tokens on S^2, got {tuple(X.shape)}")
    G = (X @ X.transpose(-1, -2)).clamp(-1.0, 1.0)
    n2 = X.shape[1] ** 2
    p_prev, p = torch.ones_like(G), G
    out = [p_prev.sum((-1, -2)) / n2, p.sum((-1, -2)) / n2]
    for l in range(1, lmax):
        p_prev, p = p, ((2 * l + 1) * G * p - l * p_prev) / (l + 1)
        out.append(p.sum((-1, -2)) / n2)
    return torch.stack(out[: lmax + 1], dim=-1)
