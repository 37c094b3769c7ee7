"""Paper B's Algorithm 1 with a hardmax in place of the softmax (App. C.1), a :class:`companion.models.Model`."""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import torch

from .._validate import as_tokens, check_matrix, check_on_sphere
from ..attention import tangent_project

__all__ = ["HardmaxAttention"]


@dataclasses.dataclass(frozen=True)
class HardmaxAttention:
    r"""Paper B's Algorithm 1 with the softmax replaced by a hardmax (App. C.1): every token attends
    only to the token that maximises its score, on the sphere.

    .. math::

        \dot x_i = \mathbf P_{x_i} V x_{j(i)}, \qquad j(i) = \operatorname{argmax}_j \langle x_i, B x_j\rangle,
        \qquad \mathbf P_x y = y - \langle x, y\rangle x,

    formally eq. (1) at beta = infinity for finitely many tokens (not eq. (3), whose maximiser
    ``B^T x / |B^T x|`` need not be a token). A :class:`companion.models.Model`, run by
    :func:`companion.integrate.simulate` on ``X : (trials, n, d)``.

    Parameters
    ----------
    B : (d, d)
        ``Q^T K``.
    V : (d, d)
        The value matrix.
    chunk : int
        Scores are computed ``chunk`` rows at a time (memory n * chunk per trial).

    Examples
    --------
    >>> m = HardmaxAttention(B=torch.eye(2, dtype=torch.float64), V=torch.eye(2, dtype=torch.float64))
    >>> X = torch.tensor([[[1.0, 0.0], [0.6, 0.8]]], dtype=torch.float64)
    >>> m.vector_field(0.0, X)  # each token's best match is itself: P_x x = 0
    tensor([[[0., 0.],
             [0., 0.]]], dtype=torch.float64)
    >>> swap = HardmaxAttention(B=-torch.eye(2, dtype=torch.float64), V=torch.eye(2, dtype=torch.float64))
    >>> swap.vector_field(0.0, X)  # now each token picks the other one
    tensor([[[ 0.0000,  0.8000],
             [ 0.6400, -0.4800]]], dtype=torch.float64)
    """

    B: torch.Tensor
    V: torch.Tensor
    chunk: int = 1024

    on_sphere: ClassVar[bool] = True

    def validate(self, X: torch.Tensor) -> torch.Tensor:
        X = as_tokens(X, "x0")
        check_on_sphere(X, "x0")
        check_matrix(self.B, X.shape[-1], "B", like=X)
        check_matrix(self.V, X.shape[-1], "V", like=X)
        return X

    def cast(self, X: torch.Tensor) -> "HardmaxAttention":
        return dataclasses.replace(self, B=torch.as_tensor(self.B).to(X), V=torch.as_tensor(self.V).to(X))

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor:
        XB = X @ self.B  # rows (B^T x_i)^T: score_ij = <B^T x_i, x_j>
        idx = torch.cat([(XB[:, i:i + self.chunk] @ X.transpose(-1, -2)).argmax(-1) for i in range(0, X.shape[1], self.chunk)], 1)
        Y = torch.gather(X, 1, idx[..., None].expand(-1, -1, X.shape[-1]))
        return tangent_project(X, Y @ self.V.T)
