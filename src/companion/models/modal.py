"""Paper C's modal coordinates: the modal system as a model, and Jacobians read in V's eigenbasis.

With ``V = V^T = sum_k lambda_k e_k e_k^T`` the coordinates ``c_ik = <x_i, e_k>`` evolve by the modal
system of Section 3 (:func:`companion.theory.spectral.modal_rhs`); :class:`ModalModel` integrates it
with :func:`companion.integrate.simulate` like any other model (:class:`companion.models.Model`).
:func:`pure_mode_jacobian` writes the tangent Jacobian of a sphere model at a pure-mode equilibrium
``x_i* = s_i e_p`` in the coordinates along ``e_k``, ``k != p``, where Lemma A.1 states its blocks.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import torch

from .._validate import as_tokens, check_on_sphere
from ..theory import spectral as th
from . import Model, tangent_basis, tangent_jacobian

__all__ = ["ModalModel", "pure_mode_jacobian"]


@dataclasses.dataclass(frozen=True)
class ModalModel:
    """The modal system of Section 3 as a simulate-able model: state ``C : (trials, n, d)`` of
    coordinates ``c_ik = <x_i, e_k>``, field :func:`companion.theory.spectral.modal_rhs`.

    Examples
    --------
    >>> m = ModalModel(torch.tensor([1.0, -1.0], dtype=torch.float64), beta=1.0)
    >>> C = torch.tensor([[[0.6, 0.8]]], dtype=torch.float64)
    >>> m.vector_field(0.0, C)  # one token: c' = Lambda c - <c, Lambda c> c
    tensor([[[ 0.7680, -0.5760]]], dtype=torch.float64)
    """

    lambdas: torch.Tensor
    beta: float = 1.0

    on_sphere: ClassVar[bool] = True

    def validate(self, X: torch.Tensor) -> torch.Tensor:
        X = as_tokens(X, "c0")
        if torch.as_tensor(self.lambdas).numel() != X.shape[-1]:
            raise ValueError(f"lambdas must have d = {X.shape[-1]} entries")
        check_on_sphere(X, "c0")
        return X

    def cast(self, X: torch.Tensor) -> "ModalModel":
        return dataclasses.replace(self, lambdas=torch.as_tensor(self.lambdas).to(X))

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor:
        return th.modal_rhs(X, self.lambdas, self.beta)


def pure_mode_jacobian(model: Model, E: torch.Tensor, p: int, signs: torch.Tensor, *, mode: str = "autograd",
                       h: float = 1e-6) -> torch.Tensor:
    r"""The tangent Jacobian of a sphere model at the pure-mode state ``x_i = s_i e_p``, in V's eigenbasis.

    .. math::

        J_{ab,ij} = \Big\langle e_{k_a},\ \frac{\partial F_i}{\partial x_j}\, e_{k_b} \Big\rangle,
        \qquad k_a, k_b \ne p ,

    ``k_a`` being the a-th index other than ``p``: :func:`companion.models.tangent_jacobian` (``mode``
    and ``h`` as there) rotated from the tangent bases to the directions ``e_k``, ``k != p``, which span
    the tangent space at ``+-e_p``. Lemma A.1 states that ``J_{ab}`` vanishes for ``a != b`` and that
    ``J_{aa}`` is :func:`companion.theory.spectral.pure_mode_linearisation`'s block of mode ``k_a``.

    Parameters
    ----------
    model : a :class:`companion.models.Model` on the sphere, its field F.
    E : (d, d) orthonormal eigenvectors of V as columns (``torch.linalg.eigh``'s order).
    p : the column of E the tokens sit on.
    signs : (n,) the signs ``s_i`` in {-1, +1}, in any order.

    Returns
    -------
    J : (d - 1, d - 1, n, n) float64 tensor.

    Examples
    --------
    >>> from companion import models
    >>> V = torch.diag(torch.tensor([0.5, 1.0], dtype=torch.float64))
    >>> lam, E = torch.linalg.eigh(V)
    >>> J = pure_mode_jacobian(models.spectral(V, 1.0), E, 1, torch.tensor([1.0], dtype=torch.float64))
    >>> J.shape, round(J.item(), 12)  # one token at e_2: lambda_1 - lambda_2 along e_1
    (torch.Size([1, 1, 1, 1]), -0.5)
    """
    X = signs[:, None] * E[:, p][None, :]  # (n, d)
    n, d = X.shape
    B = tangent_basis(X)  # (n, d, d - 1)
    others = [k for k in range(d) if k != p]
    T = torch.einsum("ak,iab->ikb", E[:, others], B)  # (n, d - 1, d - 1): tangent basis -> e_k, k != p
    blockdiag = torch.block_diag(*T)
    J = blockdiag @ tangent_jacobian(model, X, mode=mode, h=h) @ blockdiag.T
    return J.reshape(n, d - 1, n, d - 1).permute(1, 3, 0, 2)
