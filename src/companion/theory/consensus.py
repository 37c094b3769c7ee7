"""The consensus manifold: all tokens at one point.

When every token sits at the same point x(t) of the sphere, softmax and USA weights are uniform,
the field is ``P_x V x`` and the flow is ``x(t) = e^{tV} x0 / |e^{tV} x0|`` for any V. For symmetric
``V = sum_k lambda_k e_k e_k^T`` the modal masses ``p_k = <x, e_k>^2`` obey (paper C)
``p_k(t) = p_k(0) e^{2 lambda_k t} / sum_l p_l(0) e^{2 lambda_l t}``.
"""
from __future__ import annotations

import torch

__all__ = ["consensus_solution", "consensus_modal_masses"]


def consensus_solution(x0: torch.Tensor, V: torch.Tensor, t: torch.Tensor | float) -> torch.Tensor:
    r"""``x(t) = e^{tV} x0 / |e^{tV} x0|``.

    .. math::

        x(t) = \frac{e^{tV} x_0}{\lVert e^{tV} x_0\rVert}, \qquad \dot x = \mathbf P_x V x,

    the motion of every token when all of them sit at one point (the weights are then uniform).

    Parameters
    ----------
    x0 : (d,) unit vector; V : (d, d); t : scalar or (T,) times.

    Returns
    -------
    (T, d) (T = 1 for a scalar t), x0's dtype.

    Examples
    --------
    >>> V = torch.diag(torch.tensor([1.0, 0.0], dtype=torch.float64))
    >>> x0 = torch.tensor([0.6, 0.8], dtype=torch.float64)
    >>> consensus_solution(x0, V, 0.0)
    tensor([[0.6000, 0.8000]], dtype=torch.float64)
    """
    x0 = torch.as_tensor(x0).reshape(-1)
    V = torch.as_tensor(V).to(x0)
    ts = torch.as_tensor(t, dtype=x0.dtype).reshape(-1)
    if V.shape != (x0.numel(), x0.numel()):
        raise ValueError(f"V must be ({x0.numel()}, {x0.numel()}) to match x0, got {tuple(V.shape)}")
    E = torch.linalg.matrix_exp(ts[:, None, None] * V)  # (T, d, d)
    y = E @ x0
    return y / y.norm(dim=-1, keepdim=True)


def consensus_modal_masses(p0: torch.Tensor, lambdas: torch.Tensor, t: torch.Tensor | float) -> torch.Tensor:
    r"""``p_k(t) = p_k(0) e^{2 lambda_k t} / sum_l p_l(0) e^{2 lambda_l t}`` (softmax over k, stable).

    .. math::

        p_k(t) = \frac{p_k(0)\, e^{2\lambda_k t}}{\sum_{l=1}^d p_l(0)\, e^{2\lambda_l t}},
        \qquad p_k = \langle x, e_k\rangle^2, \quad V = \sum_k \lambda_k e_k e_k^\top
        \ (\text{paper C, eq. (4.4)}).

    Parameters
    ----------
    p0 : (d,) non-negative, summing to 1; lambdas : (d,) eigenvalues; t : scalar or (T,).

    Returns
    -------
    (T, d).

    Examples
    --------
    >>> consensus_modal_masses(torch.tensor([0.5, 0.5]), torch.tensor([1.0, 0.0]), 0.0)
    tensor([[0.5000, 0.5000]])
    """
    p0 = torch.as_tensor(p0)
    lam = torch.as_tensor(lambdas).to(p0)
    ts = torch.as_tensor(t, dtype=p0.dtype).reshape(-1, 1)
    if (p0 < 0).any():
        raise ValueError("p0 must be non-negative")
    logits = torch.log(p0) + 2 * lam * ts
    return torch.softmax(logits, dim=-1)
