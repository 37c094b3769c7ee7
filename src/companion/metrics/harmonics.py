"""The energy of an empirical measure on S^2 in each spherical-harmonic degree, from the Gram matrix of
the tokens (the addition theorem), with no harmonics evaluated.
"""
from __future__ import annotations

import torch

__all__ = ["harmonic_energy", "BLOCK_ENTRIES"]

# Gram entries formed at once (all trials together): 2**22 float64 entries are 32 MB per array.
BLOCK_ENTRIES = 2**22


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
    >>> Y = torch.nn.functional.normalize(torch.randn(2, 50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)), dim=-1)
    >>> bool(torch.allclose(harmonic_energy(Y, 4)[:, 0], torch.ones(2, dtype=torch.float64)))  # E_0 = 1 always
    True
    """
    if X.ndim != 3 or X.shape[-1] != 3:
        raise ValueError(f"X must be (trials, n, 3) tokens on S^2, got {tuple(X.shape)}")
    if isinstance(lmax, bool) or not isinstance(lmax, int) or lmax < 1:
        raise ValueError(f"lmax must be an integer >= 1, got {lmax!r}")
    trials, n, _ = X.shape
    # Rows of the Gram matrix a block at a time: memory O(trials * rows * n), not O(trials * n^2)
    # (4 trials of 1e4 tokens would need ~20 GB for G and the two Legendre arrays at once).
    rows = max(1, min(n, BLOCK_ENTRIES // max(1, trials * n)))
    sums = torch.zeros(trials, lmax + 1, dtype=X.dtype, device=X.device)
    for start in range(0, n, rows):
        G = (X[:, start:start + rows] @ X.transpose(-1, -2)).clamp_(-1.0, 1.0)
        p_prev, p = torch.ones_like(G), G
        sums[:, 0] += p_prev.sum((-1, -2))
        sums[:, 1] += p.sum((-1, -2))
        for l in range(1, lmax):
            p_prev, p = p, ((2 * l + 1) * G * p - l * p_prev) / (l + 1)
            sums[:, l + 1] += p.sum((-1, -2))
    return sums / n**2
