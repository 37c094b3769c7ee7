"""The particle models of the four papers, as frozen dataclasses sharing one protocol, :class:`Model`.

A model has ``on_sphere`` (bool: the state is retracted onto the unit sphere after every step),
``validate(X) -> X`` (shape, finiteness, sphere checks; raises clear errors), ``cast(X) -> model``
(parameters moved to X's device and dtype) and ``vector_field(t, X) -> dX/dt``, all with
``X : (trials, n, d)``. :func:`companion.integrate.simulate` integrates any object with this protocol
and refuses, naming what is missing, one without it. Besides the classes below,
:class:`companion.circle.Circle` (paper D on the circle, in angle form) and
:class:`companion.models.modal.ModalModel` (paper C's modal coordinates) follow it.

==============================  =================================================================
model                           paper and equation
==============================  =================================================================
:class:`Euclidean`              A (Koubbi et al.) eq. (6): tokens in R^d
:class:`Rescaled`               A eq. (7): z = e^{-tV} x
:class:`ScaleCappedRescaled`    A eq. (7) over long horizons (the logit scale capped, App. E.3)
:class:`Sphere`                 A eq. (8) (post-LayerNorm); B eq. (1) with A = B^T; C eq. (2.2)
                                with A = V; D's SA (softmax) and USA (1/n) models with A = V = I
:class:`ZeroTemperature`        B eq. (3): the beta -> infinity limit, x' = P_x M x / |B^T x|
:class:`MultiHead`              several heads on the same tokens, fields summed or averaged
:class:`TimeVarying`            A eqs. (6) / (8) with V(t), A(t) varying along depth (piecewise
                                linear between knots; one knot: the frozen model)
:class:`LayerMap`               A eq. (18): x <- N(x + (1/L) B_l[mu](x)), one step per layer
                                (a map, run by :func:`iterate_layers`, not by ``simulate``);
                                its LoRA-adapter chains in :mod:`companion.models.layer_maps`
:class:`HardmaxAttention`       B App. C.1: Algorithm 1 with a hardmax, x_i' = P_{x_i} V x_{j(i)}
                                (:mod:`companion.models.hardmax`)
:class:`ModalModel`             C's modal coordinates (:mod:`companion.models.modal`)
==============================  =================================================================

The attention models (:class:`Euclidean`, :class:`Rescaled`, :class:`Sphere`) take
``causal=True`` for masked attention, token i attending to tokens j <= i only. Your own model needs
no base class: any object with the four members of :class:`Model` runs in ``simulate`` (the book's
chapter "Your own dynamics" writes one).
"""
from __future__ import annotations

import bisect
import dataclasses
import math
from typing import Any, ClassVar, Protocol, runtime_checkable

import torch

from .._validate import (STATE_DTYPES, as_state, as_tokens, check_beta, check_count, check_generator, check_matrix, check_on_sphere,
                        check_positive, check_real, check_real_tensor, check_trials)
from ..attention import BACKENDS, NORMALIZATIONS, attend, attention_field, field_unchecked, tangent_project

__all__ = [
    "Model",
    "check_model",
    "Euclidean",
    "Rescaled",
    "ScaleCappedRescaled",
    "Sphere",
    "ZeroTemperature",
    "LayerMap",
    "MultiHead",
    "TimeVarying",
    "tangent_project",
    "tangent_basis",
    "tangent_jacobian",
    "from_qkv",
    "low_temperature",
    "spectral",
    "metastable",
    "random_value_adapters",
    "iterate_layers",
]


@runtime_checkable
class Model(Protocol):
    """What :func:`companion.integrate.simulate` requires of a model. X : (trials, n, d) throughout.

    Attributes
    ----------
    on_sphere : bool
        True when the state lives on the unit sphere: the integrator renormalises every token after
        each step (the retraction), so the field must be tangent.

    Methods
    -------
    validate(X) -> X
        Check the initial state against the model (shape, finiteness, sphere, parameter sizes);
        return it as (trials, n, d) or raise ValueError / TypeError naming the problem. Called once.
    cast(X) -> model
        The model with its tensor parameters on X's device and dtype. Called once, after validate.
    vector_field(t, X) -> dX/dt
        The velocity of every token at time t, (trials, n, d) on X's device and dtype. Called at
        every stage of every step, on states the integrator produced: it need not check them.

    Examples
    --------
    >>> isinstance(Sphere(), Model), isinstance(torch.eye(2), Model)
    (True, False)
    """

    on_sphere: bool

    def validate(self, X: torch.Tensor) -> torch.Tensor: ...

    def cast(self, X: torch.Tensor) -> "Model": ...

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor: ...


_MODEL_METHODS = ("validate", "cast", "vector_field")


def check_model(model: object, name: str = "model") -> None:
    """Raise TypeError naming every member of :class:`Model` that ``model`` lacks.

    Examples
    --------
    >>> check_model(Sphere())
    >>> check_model(object())
    Traceback (most recent call last):
    ...
    TypeError: model must follow the companion.models.Model protocol: object lacks on_sphere, validate(X), cast(X), vector_field(t, X)
    """
    missing = [] if hasattr(model, "on_sphere") else ["on_sphere"]
    signatures = {"validate": "validate(X)", "cast": "cast(X)", "vector_field": "vector_field(t, X)"}
    missing += [signatures[m] for m in _MODEL_METHODS if not callable(getattr(model, m, None))]
    if missing:
        raise TypeError(f"{name} must follow the companion.models.Model protocol: "
                        f"{type(model).__name__} lacks {', '.join(missing)}")


def _check_real_params(model, names: tuple[str, ...]) -> None:
    """Refuse complex or meta-device matrices at construction (torch would drop an imaginary part)."""
    for name in names:
        check_real_tensor(getattr(model, name), name)


def _eye_like(d: int, X: torch.Tensor) -> torch.Tensor:
    return torch.eye(d, dtype=X.dtype, device=X.device)


def _cast(M: torch.Tensor | None, X: torch.Tensor) -> torch.Tensor | None:
    return None if M is None else torch.as_tensor(M).to(device=X.device, dtype=X.dtype)


def _check_params(model, X: torch.Tensor, names: tuple[str, ...]) -> None:
    d, T = X.shape[-1], X.shape[0]
    for name in names:
        M = getattr(model, name)
        if M is None:
            continue
        check_trials(check_matrix(M, d, name), T, name)


def _params_like(M: torch.Tensor | None, X: torch.Tensor, name: str) -> torch.Tensor | None:
    """M on X's dtype and device, after O(1) checks only (no scan of the data: this runs every step)."""
    if M is None:
        return None
    if not isinstance(M, torch.Tensor) or M.ndim not in (2, 3) or M.shape[-2:] != (X.shape[-1], X.shape[-1]):
        M = check_matrix(M, X.shape[-1], name, like=X)  # the full check, with its error message
    check_trials(M, X.shape[0], name)
    return M if (M.dtype == X.dtype and M.device == X.device) else M.to(device=X.device, dtype=X.dtype)


@dataclasses.dataclass(frozen=True)
class _AttentionModel:
    A: torch.Tensor | None = None
    V: torch.Tensor | None = None
    beta: float = 1.0
    normalization: str = "softmax"
    backend: str = "auto"
    causal: bool = False

    on_sphere: ClassVar[bool] = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "beta", check_beta(check_real(self.beta, "beta")))
        if not isinstance(self.causal, bool):
            raise TypeError(f"causal must be True or False, got {self.causal!r}")
        if self.normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {self.normalization!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        _check_real_params(self, ("A", "V"))

    def validate(self, X: torch.Tensor) -> torch.Tensor:
        X = as_state(X, "x0")
        _check_params(self, X, ("A", "V"))
        if self.on_sphere:
            check_on_sphere(X, "x0")
        return X

    def cast(self, X: torch.Tensor):
        A = _cast(self.A, X)
        V = A if self.V is self.A else _cast(self.V, X)  # keep A is V (one product in the field)
        return dataclasses.replace(self, A=A, V=V)

    def field(self, X: torch.Tensor, project: bool = False) -> torch.Tensor:
        """The attention field ``B[mu_X](x_i)``, projected on the tangent spaces if ``project``. X: (trials, n, d).

        Unchecked: :func:`companion.integrate.simulate` checks the model against x0 once
        (:meth:`validate`) and casts its parameters to x0's device and dtype (:meth:`cast`)."""
        A = _params_like(self.A, X, "A")
        V = A if self.V is self.A else _params_like(self.V, X, "V")
        return field_unchecked(X, A, V, self.beta, normalization=self.normalization, backend=self.backend, project=project,
                               causal=self.causal)


@dataclasses.dataclass(frozen=True)
class Euclidean(_AttentionModel):
    r"""Paper A eq. (6): ``x_i' = sum_j softmax_j(beta <A x_i, x_j>) V x_j`` in R^d.

    .. math::

        \dot x_i = \sum_{j=1}^n \frac{e^{\beta\langle A x_i, x_j\rangle}}{\sum_{k=1}^n e^{\beta\langle A x_i, x_k\rangle}}\, V x_j,
        \qquad A = K^\top Q .

    Parameters
    ----------
    A : (d, d) or (trials, d, d), the score form ``K^T Q``; identity if None.
    V : (d, d) or (trials, d, d), the value matrix; identity if None.
    beta : inverse temperature, > 0.
    normalization : ``"softmax"`` or ``"usa"`` (weights divided by n, not by their sum).
    backend : how the field is computed (:func:`companion.attention.attend`).
    causal : token i attends to tokens j <= i only (both sums over j <= i).

    Examples
    --------
    >>> m = Euclidean(V=torch.eye(2))
    >>> m.vector_field(0.0, torch.tensor([[[1.0, 0.0]]]))
    tensor([[[1., 0.]]])
    """

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor:
        return self.field(X)


@dataclasses.dataclass(frozen=True)
class Rescaled(_AttentionModel):
    r"""Paper A eq. (7): ``z = e^{-tV} x`` obeys ``z_i' = sum_j w_ij(t) V (z_j - z_i)``,
    with weights ``softmax_j(beta <A e^{tV} z_i, e^{tV} z_j>)``. The field depends on t.

    .. math::

        z_i(t) = e^{-tV} x_i(t), \qquad
        \dot z_i = \sum_{j=1}^n w_{ij}(t)\, V (z_j - z_i), \qquad
        w_{ij}(t) = \frac{e^{\beta\langle A e^{tV} z_i, e^{tV} z_j\rangle}}{\sum_{k=1}^n e^{\beta\langle A e^{tV} z_i, e^{tV} z_k\rangle}},

    where x solves :class:`Euclidean` (differentiate :math:`e^{-tV} x_i`). Parameters as for
    :class:`Euclidean`.

    Examples
    --------
    >>> m = Rescaled(V=torch.eye(2))
    >>> m.vector_field(0.0, torch.tensor([[[1.0, 0.0], [1.0, 0.0]]]))  # a cluster does not move
    tensor([[[0., 0.],
             [0., 0.]]])
    """

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor:
        d = X.shape[-1]
        V = self.V if self.V is not None else _eye_like(d, X)
        Y = torch.matmul(X, torch.linalg.matrix_exp(t * V).transpose(-1, -2))  # e^{tV} z
        q = Y if self.A is None else torch.matmul(Y, self.A.transpose(-1, -2))
        VZ = torch.matmul(X, V.transpose(-1, -2))
        return attend(q, Y, VZ, self.beta, normalization=self.normalization, backend=self.backend, causal=self.causal) - VZ


@dataclasses.dataclass(frozen=True)
class ScaleCappedRescaled:
    r"""The rescaled dynamics (7) with the common logit scale capped for long horizons (paper A, App. E.3).

    .. math::

        \langle A e^{tV} z_i, e^{tV} z_j\rangle = e^{2\lambda_1 t} \langle A D_t z_i, D_t z_j\rangle,
        \qquad D_t = e^{t(V - \lambda_1 I)},

    (lambda_1 the top real eigenvalue of V), and the model replaces :math:`e^{2\lambda_1 t}` by
    :math:`e^{2\lambda_1 \min(t, t_{\rm cap})}`. The factor ``e^{2 lambda_1 t}`` overflows float64 near
    t = 350; this model uses ``e^{2 lambda_1 min(t, t_cap)}`` instead. For ``t_cap`` beyond a few tens
    the softmax is already an exact argmax in float64, so the cap changes no weight (tested), while
    the relative factor D, which drives the bifurcation, is kept exactly.

    Parameters
    ----------
    A, V : (d, d) or (trials, d, d), every trial's V with the same top eigenvalue; t_cap : cap on
        the scale time.

    Examples
    --------
    >>> m = ScaleCappedRescaled(A=torch.eye(2, dtype=torch.float64), V=torch.eye(2, dtype=torch.float64))
    >>> m.vector_field(0.0, torch.tensor([[[1.0, 0.0], [1.0, 0.0]]], dtype=torch.float64))
    tensor([[[0., 0.],
             [0., 0.]]], dtype=torch.float64)
    """

    A: torch.Tensor
    V: torch.Tensor
    t_cap: float = 150.0
    # Set by cast (once per simulate): V - lambda_1 I and max lambda_1, so a step needs no eigvals
    # (a host sync on a GPU) and no Python float of a device tensor.
    shifted: torch.Tensor | None = dataclasses.field(default=None, repr=False)
    lam1_max: float | None = None

    on_sphere: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.A is None or self.V is None:
            raise TypeError("ScaleCappedRescaled needs both A and V as (d, d) or (trials, d, d) tensors")
        _check_real_params(self, ("A", "V"))
        object.__setattr__(self, "t_cap", check_positive(check_real(self.t_cap, "t_cap"), "t_cap", strict=False))

    def validate(self, X: torch.Tensor) -> torch.Tensor:
        X = as_state(X, "x0")
        _check_params(self, X, ("A", "V"))
        return X

    def _top(self, V: torch.Tensor) -> torch.Tensor:
        return torch.linalg.eigvals(V).real.amax(dim=-1)  # () or (trials,)

    def cast(self, X: torch.Tensor) -> "ScaleCappedRescaled":
        V = self.V.to(X)
        lam1 = self._top(V)
        if lam1.ndim and not torch.allclose(lam1, lam1.max().expand_as(lam1)):
            raise ValueError("ScaleCappedRescaled needs the same top eigenvalue in every trial's V")
        eye = torch.eye(X.shape[-1], dtype=X.dtype, device=X.device)
        return dataclasses.replace(self, A=self.A.to(X), V=V, shifted=V - lam1[..., None, None] * eye,
                                   lam1_max=float(lam1.max()))

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor:
        m = self if self.shifted is not None else self.cast(X)
        A, V = m.A, m.V
        D = torch.linalg.matrix_exp(t * m.shifted)
        Y = torch.matmul(X, D.transpose(-1, -2))  # D z
        q = torch.matmul(Y, A.transpose(-1, -2))
        VZ = torch.matmul(X, V.transpose(-1, -2))
        beta = math.exp(2 * m.lam1_max * min(float(t), self.t_cap))
        return attend(q, Y, VZ, beta) - VZ


@dataclasses.dataclass(frozen=True)
class Sphere(_AttentionModel):
    r"""Post-LayerNorm dynamics on the sphere: ``x_i' = P_{x_i} sum_j w_ij V x_j``.

    .. math::

        \dot x_i = \mathbf P_{x_i} \sum_{j=1}^n w_{ij}\, V x_j, \qquad
        \mathbf P_x y = y - \langle x, y\rangle x, \qquad
        w_{ij} = \frac{e^{\beta\langle A x_i, x_j\rangle}}{\sum_{k=1}^n e^{\beta\langle A x_i, x_k\rangle}}
        \ \text{(SA)} \quad \text{or} \quad \frac{e^{\beta\langle A x_i, x_j\rangle}}{n} \ \text{(USA)}.

    Paper A eq. (8); paper B eq. (1) with ``A = B^T`` (B = Q^T K); paper C eq. (2.2) with
    ``A = V = V^T``; paper D with ``A = V = I`` and normalization ``"softmax"`` (SA) or ``"usa"``.
    Initial tokens must lie on the unit sphere. Parameters as for :class:`Euclidean`; with
    ``causal=True`` the sums run over :math:`j \le i` (Karagodin, Polyanskiy, Rigollet 2024).

    Examples
    --------
    >>> m = Sphere(beta=1.0)
    >>> X = torch.tensor([[[1.0, 0.0], [1.0, 0.0]]])
    >>> m.vector_field(0.0, X)  # consensus is an equilibrium when V = I
    tensor([[[0., 0.],
             [0., 0.]]])
    """

    on_sphere: ClassVar[bool] = True

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor:
        return self.field(X, project=True)


@dataclasses.dataclass(frozen=True)
class ZeroTemperature:
    r"""Paper B eq. (3), the beta -> infinity limit for a law with full support: every token moves
    on its own, ``x' = P_x M x / |B^T x|`` with ``M = V B^T``.

    .. math::

        \dot x = \frac{\mathbf P_x M x}{\lVert B^\top x\rVert}, \qquad M = V B^\top,

    the limit of the softmax picking :math:`y^* = B^\top x / \lVert B^\top x\rVert` as
    :math:`\beta \to \infty`.

    Parameters
    ----------
    B : (d, d), ``Q^T K``; V : (d, d) value matrix.

    Examples
    --------
    >>> m = ZeroTemperature(B=torch.eye(2), V=torch.diag(torch.tensor([2.0, 1.0])))
    >>> m.vector_field(0.0, torch.tensor([[[0.6, 0.8]]])).round(decimals=4)
    tensor([[[ 0.3840, -0.2880]]])
    """

    B: torch.Tensor
    V: torch.Tensor

    on_sphere: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.B is None or self.V is None:
            raise TypeError("ZeroTemperature needs both B and V as (d, d) or (trials, d, d) tensors")
        _check_real_params(self, ("B", "V"))

    def validate(self, X: torch.Tensor) -> torch.Tensor:
        X = as_state(X, "x0")
        _check_params(self, X, ("B", "V"))
        check_on_sphere(X, "x0")
        if (torch.matmul(X, torch.as_tensor(self.B).to(X)).norm(dim=-1) < 1e-12).any():
            raise ValueError("x0 has a token with B^T x = 0, where the zero-temperature flow is undefined")
        return X

    def cast(self, X: torch.Tensor) -> "ZeroTemperature":
        return dataclasses.replace(self, B=_cast(self.B, X), V=_cast(self.V, X))

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor:
        BtX = torch.matmul(X, self.B)  # rows (B^T x_i)^T
        MX = torch.matmul(BtX, self.V.transpose(-1, -2))  # rows (V B^T x_i)^T
        return tangent_project(X, MX) / BtX.norm(dim=-1, keepdim=True)


COMBINES = ("sum", "mean")


@dataclasses.dataclass(frozen=True)
class MultiHead:
    r"""Several attention heads acting on the same tokens, their fields summed or averaged.

    .. math::

        \dot x_i = c \sum_{h=1}^H F_h(t, X)_i, \qquad c = 1 \ (\text{sum}) \quad \text{or} \quad c = \frac1H \ (\text{mean}),

    with :math:`F_h` the field of head h. For heads on the sphere (:class:`Sphere`, each with its
    own :math:`A_h = K_h^\top Q_h`, :math:`V_h` and beta) this is
    :math:`\mathbf P_{x_i} \sum_h \sum_j w^h_{ij} V_h x_j`, since the projection is linear. A
    transformer layer concatenates the heads' outputs and maps them by :math:`W_O`: that is the sum
    with each :math:`V_h` standing for :math:`W_O^h V_h`, the block of :math:`W_O` that reads head h.

    Parameters
    ----------
    heads : sequence of :class:`Model` (at least one), all with the same ``on_sphere``; any model
        of this module or your own, run with the same t and X.
    combine : ``"sum"`` or ``"mean"``.

    Examples
    --------
    Two equal heads averaged move the tokens exactly as one head:

    >>> head = Sphere(beta=2.0)
    >>> X = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64)
    >>> both = MultiHead((head, head), combine="mean")
    >>> both.on_sphere, bool(torch.equal(both.vector_field(0.0, X), head.vector_field(0.0, X)))
    (True, True)
    """

    heads: tuple
    combine: str = "sum"
    on_sphere: bool = dataclasses.field(default=False, init=False)

    def __post_init__(self) -> None:
        if isinstance(self.heads, (str, bytes)) or not hasattr(self.heads, "__iter__"):
            raise TypeError(f"heads must be a sequence of models, got {type(self.heads).__name__}")
        heads = tuple(self.heads)
        if not heads:
            raise ValueError("heads must hold at least one model")
        for i, h in enumerate(heads):
            check_model(h, f"heads[{i}]")
        where = [bool(h.on_sphere) for h in heads]
        if len(set(where)) > 1:
            raise ValueError(f"heads must all live on the sphere or all in R^d, got on_sphere = {where}")
        if self.combine not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, got {self.combine!r}")
        object.__setattr__(self, "heads", heads)
        object.__setattr__(self, "on_sphere", where[0])

    def validate(self, X: torch.Tensor) -> torch.Tensor:
        for h in self.heads:
            X = h.validate(X)
        return X

    def cast(self, X: torch.Tensor) -> "MultiHead":
        return dataclasses.replace(self, heads=tuple(h.cast(X) for h in self.heads))

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor:
        F = self.heads[0].vector_field(t, X)
        for h in self.heads[1:]:
            F = F + h.vector_field(t, X)
        return F / len(self.heads) if self.combine == "mean" else F


GEOMETRIES = ("sphere", "euclidean")


@dataclasses.dataclass(frozen=True)
class TimeVarying:
    r"""Attention whose weights vary with depth t: ``V(t)`` (and ``A(t)``) piecewise linear between knots.

    .. math::

        \dot x_i = \mathbf P_{x_i} \sum_{j=1}^n w_{ij}(t)\, V(t) x_j \ \ (\text{sphere}), \qquad
        \dot x_i = \sum_{j=1}^n w_{ij}(t)\, V(t) x_j \ \ (\text{euclidean}),

        w_{ij}(t) = \frac{e^{\beta\langle A(t) x_i, x_j\rangle}}{\sum_k e^{\beta\langle A(t) x_i, x_k\rangle}}, \qquad
        V(t) = V_k + \frac{t - t_k}{t_{k+1} - t_k}\,(V_{k+1} - V_k) \quad (t_k \le t \le t_{k+1}),

    held at ``V_0`` before the first knot and at ``V_{K-1}`` after the last; ``A(t)`` likewise when A
    is a path. Paper A eq. (8) (sphere) and eq. (6) (euclidean) with Q, K, V no longer frozen
    across depth. With a single knot, or equal knots, it is :class:`Sphere` or :class:`Euclidean`
    exactly (a constant segment is evaluated as ``V_k + s * 0``).

    Parameters
    ----------
    times : (K,) strictly increasing knot times (depths), K >= 1.
    V : (K, d, d) or (trials, K, d, d), the value matrices at the knots.
    A : None (identity), a fixed (d, d) or (trials, d, d), or a path of V's number of dimensions on
        the same knots; pass V itself for ``A(t) = V(t)`` (paper A's Sec. 3.2 setting A = V).
    beta : inverse temperature, > 0; normalization, backend : as for :class:`Sphere`.
    geometry : ``"sphere"`` (tokens on the unit sphere, retracted after each step) or ``"euclidean"``.

    Examples
    --------
    A value matrix turning from diag(1, 0) to diag(0, 1) between t = 0 and t = 1; at t = 0.5 it is I/2:

    >>> V = torch.stack([torch.diag(torch.tensor([1.0, 0.0])), torch.diag(torch.tensor([0.0, 1.0]))])
    >>> m = TimeVarying(times=(0.0, 1.0), V=V, geometry="euclidean")
    >>> m.vector_field(0.5, torch.tensor([[[1.0, 1.0]]]))
    tensor([[[0.5000, 0.5000]]])
    >>> m.value_at(2.0)  # held after the last knot
    tensor([[0., 0.],
            [0., 1.]])
    """

    times: tuple
    V: torch.Tensor
    A: torch.Tensor | None = None
    beta: float = 1.0
    geometry: str = "sphere"
    normalization: str = "softmax"
    backend: str = "auto"
    on_sphere: bool = dataclasses.field(default=True, init=False)

    def __post_init__(self) -> None:
        try:
            times = tuple(float(s) for s in torch.as_tensor(self.times, dtype=torch.float64).reshape(-1))
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"times must be a sequence of numbers, got {self.times!r}") from None
        if not times or not all(math.isfinite(s) for s in times) or any(b <= a for a, b in zip(times, times[1:])):
            raise ValueError(f"times must be finite and strictly increasing (at least one knot), got {list(times)}")
        object.__setattr__(self, "times", times)
        if not isinstance(self.V, torch.Tensor):
            raise TypeError(f"V must be a (K, d, d) or (trials, K, d, d) tensor, got {type(self.V).__name__}")
        _check_real_params(self, ("V", "A"))
        V = self.V
        if V.ndim not in (3, 4) or V.shape[-3] != len(times) or V.shape[-1] != V.shape[-2]:
            raise ValueError(f"V must have shape ({len(times)}, d, d) or (trials, {len(times)}, d, d) for "
                             f"{len(times)} knots, got {tuple(V.shape)}")
        if not torch.isfinite(V).all():
            raise ValueError("V has non-finite entries (NaN or inf)")
        if self.A is not None and self.A is not self.V:
            if not isinstance(self.A, torch.Tensor):
                raise TypeError(f"A must be None or a tensor, got {type(self.A).__name__}")
            A, d = self.A, V.shape[-1]
            path = A.ndim == V.ndim and A.shape[-3] == len(times)
            fixed = A.ndim in (2, 3) and A.ndim == V.ndim - 1
            if A.shape[-2:] != (d, d) or not (path or fixed):
                raise ValueError(f"A must be fixed, ({d}, {d}) or (trials, {d}, {d}), or a path like V "
                                 f"{tuple(V.shape)}, got {tuple(A.shape)}")
            if not torch.isfinite(A).all():
                raise ValueError("A has non-finite entries (NaN or inf)")
        object.__setattr__(self, "beta", check_beta(check_real(self.beta, "beta")))
        if self.geometry not in GEOMETRIES:
            raise ValueError(f"geometry must be one of {GEOMETRIES}, got {self.geometry!r}")
        if self.normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {self.normalization!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        object.__setattr__(self, "on_sphere", self.geometry == "sphere")

    def _a_is_path(self) -> bool:
        return self.A is not None and (self.A is self.V or self.A.ndim == self.V.ndim)

    def validate(self, X: torch.Tensor) -> torch.Tensor:
        X = as_state(X, "x0")
        d, T = X.shape[-1], X.shape[0]
        for name in ("V", "A"):
            M = getattr(self, name)
            if M is None:
                continue
            if M.shape[-1] != d:
                raise ValueError(f"{name} is {M.shape[-1]} x {M.shape[-1]} but the tokens have d = {d}")
            lead = M.ndim - (3 if (name == "V" or self._a_is_path()) else 2)
            if lead == 1 and M.shape[0] not in (1, T):
                raise ValueError(f"{name} has {M.shape[0]} trials but x0 has {T}")
        if self.on_sphere:
            check_on_sphere(X, "x0")
        return X

    def cast(self, X: torch.Tensor) -> "TimeVarying":
        V = self.V.to(device=X.device, dtype=X.dtype)
        A = V if self.A is self.V else _cast(self.A, X)
        return dataclasses.replace(self, V=V, A=A)

    def _segment(self, t: float) -> tuple[int, float]:
        """Knot index k and fraction s in [0, 1) with ``M(t) = M_k + s (M_{k+1} - M_k)``."""
        ts = self.times
        if t <= ts[0] or len(ts) == 1:
            return 0, 0.0
        if t >= ts[-1]:
            return len(ts) - 1, 0.0
        k = bisect.bisect_right(ts, t) - 1
        return k, (t - ts[k]) / (ts[k + 1] - ts[k])

    def _at(self, M: torch.Tensor, t: float) -> torch.Tensor:
        k, s = self._segment(float(t))
        Mk = M[..., k, :, :]
        return Mk if s == 0.0 else Mk + s * (M[..., k + 1, :, :] - Mk)

    def value_at(self, t: float) -> torch.Tensor:
        """``V(t)``: (d, d) or (trials, d, d), on V's device and dtype."""
        return self._at(self.V, t)

    def score_at(self, t: float) -> torch.Tensor | None:
        """``A(t)``: (d, d) or (trials, d, d), or None for the identity."""
        if self.A is None:
            return None
        return self._at(self.A, t) if self._a_is_path() else self.A

    def vector_field(self, t: float, X: torch.Tensor) -> torch.Tensor:
        V = self.value_at(t)
        A = V if self.A is self.V else self.score_at(t)
        return field_unchecked(X, A, V, self.beta, normalization=self.normalization, backend=self.backend,
                               project=self.on_sphere)


def tangent_basis(X: torch.Tensor) -> torch.Tensor:
    r"""Orthonormal bases of the tangent spaces ``x_i^perp``. X: (n, d) unit rows -> (n, d, d-1).

    .. math::

        B_i \in \mathbb R^{d \times (d-1)}, \qquad B_i^\top B_i = I_{d-1}, \qquad B_i^\top x_i = 0 .

    Examples
    --------
    >>> B = tangent_basis(torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64))
    >>> B.shape, float((B[0].T @ torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)).abs().max())
    (torch.Size([1, 3, 2]), 0.0)
    """
    X = as_tokens(X)[0]
    _, _, Vh = torch.linalg.svd(X[:, None, :])  # (n, d, d): first row spans x_i, the rest x_i^perp
    return Vh[:, 1:, :].transpose(-1, -2)


JACOBIAN_MODES = ("autograd", "fd")


def tangent_jacobian(model: Model, X: torch.Tensor, *, mode: str = "autograd", h: float = 1e-6) -> torch.Tensor:
    r"""Jacobian of a sphere model's field at one configuration X, on the tangent spaces.

    .. math::

        J_{ij} = B_i^\top \frac{\partial F_i}{\partial x_j} B_j \in \mathbb R^{(d-1) \times (d-1)},

    With ``B_i`` the tangent basis at x_i (:func:`tangent_basis`), the (i, j) block is
    ``B_i^T (dF_i / dx_j) B_j``; at an equilibrium this is the linearisation of the dynamics on the
    sphere, whose eigenvalues decide its stability. ``mode`` is how the derivative is taken:

    * ``"autograd"``: :func:`torch.autograd.functional.jacobian` of the field in the ambient space,
      restricted and projected with the tangent bases;
    * ``"fd"``: central differences, step ``h``, of ``y -> B^T F(N(X + B y))`` (N = renormalisation):
      an independent computation that never differentiates the field's ambient extension.

    Parameters
    ----------
    model : a :class:`Model` with ``on_sphere`` (e.g. :func:`spectral`); X : (n, d) unit tokens, in
        float64.

    Returns
    -------
    (n (d-1), n (d-1)) float64 tensor.

    Examples
    --------
    >>> V = torch.diag(torch.tensor([1.0, 0.5], dtype=torch.float64))
    >>> tangent_jacobian(spectral(V, 1.0), torch.tensor([[1.0, 0.0]], dtype=torch.float64))  # one token at e_1: lambda_2 - lambda_1
    tensor([[-0.5000]], dtype=torch.float64)
    """
    if mode not in JACOBIAN_MODES:
        raise ValueError(f"mode must be one of {JACOBIAN_MODES}, got {mode!r}")
    check_model(model)
    if not model.on_sphere:
        raise ValueError(f"tangent_jacobian needs a model on the sphere, got {type(model).__name__} with on_sphere = False")
    X = as_tokens(X, "X")[0].to(torch.float64)
    X = model.validate(X[None])[0]
    model = model.cast(X)
    n, d = X.shape
    B = tangent_basis(X)  # (n, d, d-1)

    def field(Y: torch.Tensor) -> torch.Tensor:
        return model.vector_field(0.0, Y[None])[0]

    if mode == "autograd":
        J = torch.autograd.functional.jacobian(field, X)  # (n, d, n, d)
        return torch.einsum("iak,iajb,jbl->ikjl", B, J, B).reshape(n * (d - 1), n * (d - 1))

    def g(y: torch.Tensor) -> torch.Tensor:
        Y = X + torch.einsum("iak,ik->ia", B, y.reshape(n, d - 1))
        Y = Y / Y.norm(dim=-1, keepdim=True)
        return torch.einsum("iak,ia->ik", B, field(Y)).reshape(-1)

    m = n * (d - 1)
    cols = []
    for c in range(m):
        e = torch.zeros(m, dtype=torch.float64)
        e[c] = h
        cols.append((g(e) - g(-e)) / (2 * h))
    return torch.stack(cols, dim=1)


def from_qkv(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, beta: float = 1.0, *, geometry: str = "sphere", **kw):
    r"""Build a model from query, key and value matrices, ``A = K^T Q``.

    .. math::

        \langle Q x_i, K x_j\rangle = \langle A x_i, x_j\rangle, \qquad A = K^\top Q .

    Parameters
    ----------
    Q, K, V : (d, d) or (trials, d, d) query, key and value matrices.
    beta : inverse temperature, > 0.
    geometry : ``"euclidean"`` (paper A eq. 6, :class:`Euclidean`), ``"rescaled"`` (eq. 7,
        :class:`Rescaled`) or ``"sphere"`` (eq. 8, :class:`Sphere`).
    **kw : passed to the model: ``normalization``, ``backend``, ``causal``.

    Returns
    -------
    :class:`Euclidean`, :class:`Rescaled` or :class:`Sphere`.

    Examples
    --------
    >>> I = torch.eye(3)
    >>> from_qkv(I, 2 * I, I).A[0, 0].item()
    2.0
    >>> from_qkv(I, I, I, 4.0, geometry="rescaled", causal=True).causal
    True
    """
    classes = {"euclidean": Euclidean, "rescaled": Rescaled, "sphere": Sphere}
    if geometry not in classes:
        raise ValueError(f"geometry must be one of {tuple(classes)}, got {geometry!r}")
    Q, K, V = (_qkv_matrix(M, name) for M, name in ((Q, "Q"), (K, "K"), (V, "V")))
    for M, name in ((K, "K"), (V, "V")):
        if M.shape[-2:] != Q.shape[-2:]:
            raise ValueError(f"{name} has shape {tuple(M.shape)} but Q has {tuple(Q.shape)}: Q, K and V must all be "
                             f"(d, d) or (trials, d, d) with the same d")
    trials = {M.shape[0] for M in (Q, K, V) if M.ndim == 3} - {1}
    if len(trials) > 1:
        raise ValueError(f"Q, K and V have different numbers of trials {sorted(trials)}; give 1 or the same number")
    dtypes = {M.dtype for M in (Q, K, V)}
    if len(dtypes) > 1:
        raise TypeError(f"Q, K and V must have one dtype, got {', '.join(str(M.dtype) for M in (Q, K, V))} "
                        f"(cast them with .to(torch.float64), say)")
    devices = {M.device for M in (Q, K, V)}
    if len(devices) > 1:
        raise ValueError(f"Q, K and V must be on one device, got {', '.join(str(M.device) for M in (Q, K, V))}")
    return classes[geometry](A=K.transpose(-1, -2) @ Q, V=V, beta=beta, **kw)


def _qkv_matrix(M: Any, name: str) -> torch.Tensor:
    """``M`` (a tensor or array of numbers) as a floating (d, d) or (trials, d, d) tensor, else an error naming it."""
    if isinstance(M, (str, bytes)) or (isinstance(M, (list, tuple)) and any(isinstance(x, (str, bytes)) for x in _flat(M))):
        raise TypeError(f"{name} must be a (d, d) tensor or array of numbers, got {type(M).__name__} {M!r:.60}")
    if not isinstance(M, torch.Tensor):
        try:
            M = torch.as_tensor(M, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError) as e:
            raise TypeError(f"{name} must be a (d, d) tensor or array of numbers, got {type(M).__name__} ({e})") from None
    if not (M.is_floating_point() or M.dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)):
        raise TypeError(f"{name} must be real (a float or integer dtype), got dtype {M.dtype}")
    if not M.is_floating_point():
        M = M.to(torch.float64)
    if M.ndim not in (2, 3) or M.shape[-1] != M.shape[-2] or M.shape[-1] < 1:
        raise ValueError(f"{name} must have shape (d, d) or (trials, d, d), got {tuple(M.shape)}")
    return M


def _flat(x: Any):
    for v in x:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def low_temperature(B: torch.Tensor, V: torch.Tensor, beta: float) -> Sphere:
    r"""Paper B eq. (1): ``x_i' = P_{x_i} sum_j softmax_j(beta <x_i, B x_j>) V x_j`` (B = Q^T K).

    .. math::

        \dot x_i = \mathbf P_{x_i} \sum_{j=1}^n \frac{e^{\beta\langle x_i, B x_j\rangle}}{\sum_k e^{\beta\langle x_i, B x_k\rangle}}\, V x_j,
        \qquad B = Q^\top K \ (\text{so } A = B^\top).

    Examples
    --------
    >>> low_temperature(torch.diag(torch.tensor([1.0, 2.0])), torch.eye(2), 10.0).A
    tensor([[1., 0.],
            [0., 2.]])
    """
    B = torch.as_tensor(B)
    return Sphere(A=B.transpose(-1, -2), V=torch.as_tensor(V), beta=beta)


def spectral(V: torch.Tensor, beta: float) -> Sphere:
    r"""Paper C eq. (2.2): symmetric attention ``Q^T K = V = V^T``.

    .. math::

        \dot x_i = \mathbf P_{x_i} \sum_{j=1}^n K_{ij} V x_j, \qquad
        K_{ij} = \frac{e^{\beta\langle x_i, V x_j\rangle}}{\sum_k e^{\beta\langle x_i, V x_k\rangle}} .

    Raises ValueError if V is not symmetric.

    Examples
    --------
    >>> spectral(torch.eye(2), 1.0).beta
    1.0
    """
    V = torch.as_tensor(V)
    if not torch.allclose(V, V.transpose(-1, -2), atol=1e-12 if V.dtype == torch.float64 else 1e-6):
        raise ValueError("V must be symmetric for the spectral-selection model (Q^T K = V = V^T)")
    return Sphere(A=V, V=V, beta=beta)


def metastable(beta: float, normalization: str = "softmax") -> Sphere:
    r"""Paper D: ``Q = K = V = I`` on the sphere, SA (``"softmax"``) or USA (``"usa"``, 1/n).

    .. math::

        \dot x_i = \mathbf P_{x_i} \frac{1}{Z_i} \sum_{j=1}^n e^{\beta\langle x_i, x_j\rangle} x_j,
        \qquad Z_i = \sum_{k=1}^n e^{\beta\langle x_i, x_k\rangle} \ \text{(SA)} \quad \text{or} \quad Z_i = n \ \text{(USA)}.

    Examples
    --------
    >>> metastable(5.0, "usa").normalization
    'usa'
    """
    return Sphere(A=None, V=None, beta=beta, normalization=normalization)


# ----------------------------------------------------------------------------- depth-L layer map


def random_value_adapters(
    depth: int,
    d: int,
    rank: int,
    s: float | torch.Tensor,
    eta: float,
    *,
    trials: int = 1,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    r"""I.i.d. random value adapters (paper A, Assumption 4.1, eq. 19):
    ``dV_l = eta * sum_{a=1}^r s_a u_a^l (v_a^l)^T`` with ``u_a^l, v_a^l ~ N(0, I_d / d)``.

    .. math::

        \Delta V_l = \eta \sum_{a=1}^r s_a\, u_a^l (v_a^l)^\top, \qquad
        u_a^l, v_a^l \sim \mathcal N(0, I_d / d) \ \text{i.i.d.}

    Parameters
    ----------
    depth : number of layers L; d : dimension; rank : r, 1 <= r <= d.
    s : scalar or (r,) positive singular-value weights; eta : scale eta_L (>= 0).
    trials : independent draws; generator : explicit torch.Generator on ``device``.

    Returns
    -------
    (trials, depth, d, d) tensor.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> random_value_adapters(4, 3, 2, 1.0, 0.5, trials=2, generator=g).shape
    torch.Size([2, 4, 3, 3])
    """
    depth, d, trials = check_count(depth, "depth"), check_count(d, "d"), check_count(trials, "trials")
    if isinstance(rank, bool) or int(rank) != rank:
        raise TypeError(f"rank must be an integer, got {rank!r}")
    rank = int(rank)
    if not 1 <= rank <= d:
        raise ValueError(f"rank must satisfy 1 <= rank <= d = {d}, got {rank}")
    eta = check_positive(check_real(eta, "eta"), "eta", strict=False)
    check_real_tensor(s, "s")
    device = torch.device(device) if device is not None else torch.device("cpu")
    check_generator(generator, device)
    s = torch.as_tensor(s, dtype=dtype, device=device).reshape(-1)
    if s.numel() == 1:
        s = s.expand(rank)
    if s.numel() != rank or (s <= 0).any() or not torch.isfinite(s).all():
        raise ValueError(f"s must be a positive scalar or {rank} positive numbers, got {s.tolist()}")
    shape = (trials, depth, rank, d)
    u = torch.randn(shape, generator=generator, dtype=dtype, device=device) / d**0.5
    v = torch.randn(shape, generator=generator, dtype=dtype, device=device) / d**0.5
    return eta * torch.einsum("tlai,a,tlaj->tlij", u, s, v)


@dataclasses.dataclass(frozen=True)
class LayerMap:
    r"""Paper A eq. (18): ``x_i^{l+1} = N(x_i^l + (1/L) B_{V_l, A}[mu_{X^l}](x_i^l))``, N(x) = x/|x|.

    .. math::

        x_i^{l+1} = \mathcal N\Big(x_i^l + \frac1L \sum_{j=1}^n
        \frac{e^{\beta\langle A x_i^l, x_j^l\rangle}}{\sum_k e^{\beta\langle A x_i^l, x_k^l\rangle}}\, V_l x_j^l\Big),
        \qquad \mathcal N(x) = \frac{x}{\lVert x\rVert}, \qquad V_l = V + \Delta V_l .

    Parameters
    ----------
    A : (d, d) or (trials, d, d), shared by every layer (``A~^l = A``).
    V : (d, d) or (trials, d, d), the base value matrix.
    dV : (depth, d, d) or (trials, depth, d, d) per-layer adapters (``V_l = V + dV_l``); a (d, d)
        tensor is a tied adapter used at every layer; None for the base model.
    depth : L; required when dV is None or tied.
    beta : inverse temperature.

    Examples
    --------
    >>> m = LayerMap(A=torch.eye(2), V=torch.eye(2), depth=8)
    >>> X = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    >>> bool(torch.allclose(iterate_layers(m, X)[-1].norm(dim=-1), torch.ones(1, 2)))
    True
    """

    A: torch.Tensor
    V: torch.Tensor
    dV: torch.Tensor | None = None
    depth: int | None = None
    beta: float = 1.0

    def __post_init__(self) -> None:
        if self.A is None or self.V is None:
            raise TypeError("LayerMap needs both A and V as (d, d) or (trials, d, d) tensors")
        _check_real_params(self, ("A", "V", "dV"))
        object.__setattr__(self, "beta", check_beta(check_real(self.beta, "beta")))
        if self.depth is not None:
            object.__setattr__(self, "depth", check_count(self.depth, "depth"))
        L = self.n_layers
        if L < 1:
            raise ValueError(f"depth must be >= 1, got {L}")

    @property
    def n_layers(self) -> int:
        if self.dV is not None and torch.as_tensor(self.dV).ndim >= 3:
            L = torch.as_tensor(self.dV).shape[-3]
            if self.depth is not None and self.depth != L:
                raise ValueError(f"depth = {self.depth} but dV holds {L} layers")
            return L
        if self.depth is None:
            raise ValueError("depth is required when dV is None or a single tied (d, d) adapter")
        return int(self.depth)

    def layer_value(self, layer: int, X: torch.Tensor) -> torch.Tensor:
        """``V_l`` on X's device and dtype: (d, d) or (trials, d, d)."""
        V = torch.as_tensor(self.V).to(X)
        if self.dV is None:
            return V
        dV = torch.as_tensor(self.dV).to(X)
        return V + (dV if dV.ndim == 2 else dV[..., layer, :, :])


def iterate_layers(model: LayerMap, x0: torch.Tensor, *, save_every: int | None = None) -> torch.Tensor:
    r"""Run the depth-L layer map (paper A eq. 18) from ``x0``.

    .. math::

        X^{l+1} = \mathcal N\big(X^l + \tfrac1L B_{V_l, A}[\mu_{X^l}](X^l)\big), \qquad l = 0, \dots, L-1,

    with :math:`\mathcal N` the token-wise normalisation (:class:`LayerMap`).

    Parameters
    ----------
    model : :class:`LayerMap`.
    x0 : (trials, n, d) tokens on the unit sphere.
    save_every : keep every k-th layer (default: only the input and the output).

    Returns
    -------
    (S, trials, n, d): the states at layers 0, k, 2k, ..., and L.

    Examples
    --------
    >>> m = LayerMap(A=torch.eye(2), V=torch.eye(2), depth=4)
    >>> iterate_layers(m, torch.tensor([[[1.0, 0.0]]]), save_every=2).shape
    torch.Size([3, 1, 1, 2])
    """
    X = as_state(x0, "x0")
    check_on_sphere(X, "x0")
    d, T = X.shape[-1], X.shape[0]
    _check_params(model, X, ("A", "V"))
    if model.dV is not None:
        dV = torch.as_tensor(model.dV)
        if dV.shape[-2:] != (d, d):
            raise ValueError(f"dV must end in ({d}, {d}) to match d, got {tuple(dV.shape)}")
        if dV.ndim == 4 and dV.shape[0] not in (1, T):
            raise ValueError(f"dV has {dV.shape[0]} trials but x0 has {T}")
    L = model.n_layers
    if save_every is not None:
        save_every = check_count(save_every, "save_every")
    A = torch.as_tensor(model.A).to(X)
    saved = [X]
    for layer in range(L):
        F = attention_field(X, A, model.layer_value(layer, X), model.beta)
        Y = X + F / L
        X = Y / Y.norm(dim=-1, keepdim=True)
        if save_every is not None and (layer + 1) % save_every == 0 and layer + 1 != L:
            saved.append(X)
    saved.append(X)
    return torch.stack(saved)


# Model families in files of their own (imported last: they build on the classes above).
from .hardmax import HardmaxAttention  # noqa: E402
from .layer_maps import adapter_chain, coupled_samples, layer_map_samples, near_u1, weak_observable  # noqa: E402
from .modal import ModalModel, pure_mode_jacobian  # noqa: E402

__all__ += ["HardmaxAttention", "ModalModel", "pure_mode_jacobian", "adapter_chain", "coupled_samples",
            "layer_map_samples", "near_u1", "weak_observable"]
