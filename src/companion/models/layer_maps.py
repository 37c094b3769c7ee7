"""Post-LayerNorm layer maps with random value adapters (paper A, eq. 18 and Assumption 4.1).

The dynamics of paper A's norm transition, not an experiment:

* :func:`near_u1`: tokens started near the top eigenvector ``u_1 = e_1``;
* :func:`adapter_chain`: ``blocks`` blocks of L layers of (18), each block with fresh i.i.d.
  rank-r adapters (19), its observables saved along the way (all Monte Carlo samples on the trials
  axis of one :func:`companion.models.iterate_layers` call);
* :func:`weak_observable`, :func:`layer_map_samples` and :func:`coupled_samples`: the test function of
  Theorem D.2, the layer map at ``eta_L = sqrt(L)`` with rank-r adapters, and the Ito SDE (91)
  coupled to layer maps with Gaussian adapters on one Brownian path.

Random draws are made on the CPU generator passed in and moved to the tokens' device, so a seed
gives the same tokens and adapters on every device.
"""
from __future__ import annotations

import math

import torch

from ..attention import attention_field
from . import LayerMap, iterate_layers, random_value_adapters

__all__ = ["near_u1", "adapter_chain", "weak_observable", "layer_map_samples", "coupled_samples"]

F64 = torch.float64


def near_u1(trials: int, n: int, d: int, delta: float, generator: torch.Generator, device) -> torch.Tensor:
    """Tokens ``N(u_1 + delta g_i)`` on the sphere, ``u_1 = e_1`` and ``g_i`` standard normal.

    .. math:: x_i = \\frac{e_1 + \\delta g_i}{|e_1 + \\delta g_i|}, \\qquad g_i \\sim N(0, I_d).

    Parameters
    ----------
    trials, n, d : int
        Ensemble size, tokens and dimension.
    delta : float
        Size of the perturbation of ``e_1``.
    generator : torch.Generator
        CPU generator the draws are made with (then moved to ``device``).
    device : str or torch.device
        Where the tokens go.

    Returns
    -------
    torch.Tensor
        X: (trials, n, d), float64, unit rows.

    Examples
    --------
    >>> X = near_u1(2, 3, 3, 1e-3, torch.Generator().manual_seed(0), "cpu")
    >>> X.shape, bool(torch.allclose(X.norm(dim=-1), torch.ones(2, 3, dtype=F64))), bool((X[..., 0] > 0.99).all())
    (torch.Size([2, 3, 3]), True, True)
    """
    X = (delta * torch.randn(trials, n, d, generator=generator, dtype=F64)).to(device)
    X[..., 0] += 1.0
    return X / X.norm(dim=-1, keepdim=True)


def _observables(X: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per trial: ``q = sum_i (1 - <x_i,u1>^2)`` (Thm D.4), ``sq = sum_i |x_i - u1|^2`` (eq. 21),
    ``spread = sum_i |x_i - xbar|^2`` and ``disp = 1 - <xbar/|xbar|, u1>^2`` (Fig. 8)."""
    c = X[..., 0]
    xbar = X.mean(dim=1)
    m = xbar / xbar.norm(dim=-1, keepdim=True)
    return {
        "q": (1 - c**2).sum(-1),
        "sq": (2 - 2 * c).sum(-1),
        "spread": ((X - xbar[:, None, :]) ** 2).sum((-1, -2)),
        "disp": 1 - m[:, 0] ** 2,
        "mean_dir": m,
    }


def adapter_chain(V: torch.Tensor, x0: torch.Tensor, L: int, blocks: int, rank: int, scale: torch.Tensor,
                  gen: torch.Generator, saves_per_block: int = 8) -> dict[str, torch.Tensor]:
    """Run ``blocks * L`` layers of (18) with i.i.d. adapters ``scale_trial * sum_a u_a v_a^T``.

    .. math:: x_i^{\\ell+1} = \\mathrm N\\Big(x_i^\\ell + \\tfrac1L \\sum_j \\mathrm{softmax}_j(\\langle V x_i^\\ell,
              x_j^\\ell\\rangle)(V + \\Delta V^\\ell) x_j^\\ell\\Big), \\qquad
              \\Delta V^\\ell = \\mathrm{scale} \\sum_{a \\le r} u_a v_a^\\top,\\ u_a, v_a \\sim N(0, I_d / d).

    Saved per trial: ``q = sum_i (1 - <x_i,u1>^2)`` (Thm D.4), ``sq = sum_i |x_i - u1|^2`` (eq. 21),
    ``spread = sum_i |x_i - xbar|^2``, ``disp = 1 - <m, u1>^2`` and ``mean_dir`` ``m = xbar / |xbar|``
    (Fig. 8).

    Parameters
    ----------
    V : (d, d)
        Value matrix, with A = V.
    x0 : (trials, n, d)
        Initial tokens on the sphere.
    L : int
        Depth of a block (step 1/L); a multiple of ``saves_per_block``.
    blocks : int
        Number of blocks of L layers: the macroscopic time.
    rank : int
        Adapter rank.
    scale : (trials,)
        ``eta_L * s`` per trial.
    gen : torch.Generator
        CPU generator of the adapters.
    saves_per_block : int
        Observables kept per block.

    Returns
    -------
    dict
        (S, trials) observables (``mean_dir``: (S, trials, d)) and ``t`` (S,) macroscopic times, on
        the CPU; ``S = blocks * saves_per_block + 1``.

    Examples
    --------
    >>> x0 = near_u1(2, 3, 3, 0.01, torch.Generator().manual_seed(0), "cpu")
    >>> V = torch.diag(torch.tensor([1.0, 0.5, 0.25], dtype=F64))
    >>> out = adapter_chain(V, x0, 8, 2, 1, torch.zeros(2), torch.Generator().manual_seed(1), 2)
    >>> out["q"].shape, [round(float(t), 2) for t in out["t"]]
    (torch.Size([5, 2]), [0.0, 0.5, 1.0, 1.5, 2.0])
    """
    trials, n, d = x0.shape
    if L % saves_per_block:
        raise ValueError(f"L = {L} must be a multiple of saves_per_block = {saves_per_block}")
    k = L // saves_per_block
    obs = [_observables(x0)]
    X = x0
    for _ in range(blocks):
        dV = random_value_adapters(L, d, rank, 1.0, 1.0, trials=trials, generator=gen, device=gen.device).to(x0.device)
        dV = dV * scale.to(dV)[:, None, None, None]
        states = iterate_layers(LayerMap(A=V, V=V, dV=dV), X, save_every=k)
        obs += [_observables(S) for S in states[1:]]
        X = states[-1]
    out = {key: torch.stack([o[key] for o in obs]).cpu() for key in obs[0]}  # small observables: on the CPU
    out["t"] = torch.arange(len(obs), dtype=F64) / saves_per_block
    return out


def weak_observable(X: torch.Tensor) -> torch.Tensor:
    """The test function of the weak error, ``phi(X) = (1/n) sum_i <x_i, u_1>`` (smooth on the sphere).

    .. math:: \\varphi(X) = \\frac1n \\sum_i \\langle x_i, u_1 \\rangle, \\qquad u_1 = e_1.

    Parameters
    ----------
    X : (trials, n, d)
        Tokens.

    Returns
    -------
    torch.Tensor
        (trials,).

    Examples
    --------
    >>> weak_observable(torch.tensor([[[1.0, 0.0], [0.0, 1.0]]]))
    tensor([0.5000])
    """
    return X[..., 0].mean(-1)


def layer_map_samples(x0: torch.Tensor, V: torch.Tensor, L: int, kappa: float, rank: int, trials: int,
                      gen: torch.Generator) -> torch.Tensor:
    """``phi`` after L layers of (18) with i.i.d. adapters (19), ``eta_L = sqrt(L)``, ``A = V``.

    .. math:: x_i^{\\ell+1} = \\mathrm N\\Big(x_i^\\ell + \\tfrac1L \\sum_j \\mathrm{softmax}_j(\\langle V x_i^\\ell,
              x_j^\\ell\\rangle)(V + \\sqrt L\\, G_\\ell) x_j^\\ell\\Big), \\qquad
              G_\\ell = \\sum_{a \\le r} s\\, u_a v_a^\\top,\\ u_a, v_a \\sim N(0, I_d / d),

    with ``s = d sqrt(kappa / r)`` so that ``sum_a s_a^2 / d^2 = kappa``; one ``G_l`` per layer and
    trial, shared by the tokens.

    Parameters
    ----------
    x0 : (n, d)
        Initial tokens on the sphere.
    V : (d, d)
        Value matrix, with A = V.
    L : int
        Depth; the macroscopic time is 1.
    kappa : float
        Noise magnitude.
    rank : int
        Adapter rank.
    trials : int
        Independent samples of the adapters.
    gen : torch.Generator
        CPU generator (draws are made on the CPU, then moved to x0's device).

    Returns
    -------
    torch.Tensor
        (trials,) values of :func:`weak_observable`, on x0's device.

    Examples
    --------
    >>> x0 = torch.eye(3, dtype=torch.float64)[:2]
    >>> V = torch.diag(torch.tensor([1.0, 0.5, 0.25], dtype=F64))
    >>> v = layer_map_samples(x0, V, 4, 0.1, 1, 8, torch.Generator().manual_seed(0))
    >>> v.shape, bool((v.abs() <= 1).all())
    (torch.Size([8]), True)
    """
    n, d = x0.shape
    X = x0.expand(trials, n, d).contiguous()
    V = V.to(x0)
    for _ in range(int(L)):
        G = random_value_adapters(1, d, rank, d * math.sqrt(kappa / rank), math.sqrt(L), trials=trials,
                                  generator=gen)[:, 0].to(x0)
        Y = X + attention_field(X, V, V + G) / L
        X = Y / Y.norm(dim=-1, keepdim=True)
    return weak_observable(X)


def coupled_samples(x0: torch.Tensor, V: torch.Tensor, depths: tuple[int, ...], steps: int, kappa: float, trials: int,
                    gen: torch.Generator, *, ito_correction: bool = True) -> dict[str, torch.Tensor]:
    """``phi`` at t = 1 for the Ito SDE (91) of the layer map and for layer maps with Gaussian
    adapters, all driven by one Brownian path per trial.

    For value adapters with ``E G = 0`` and ``E G_ij G_kl = kappa delta_ik delta_jl`` (eq. 19 gives
    ``kappa = sum_a s_a^2 / d^2``), (91) reads, with ``m_i = sum_j softmax_j(<V x_i, x_j>) x_j``,

    .. math:: dx_i = P_{x_i}\\big(V m_i\\, dt + dW_t\\, m_i\\big) - \\tfrac12 (d - 1)\\kappa |m_i|^2 x_i\\, dt,

    W a (d, d) Brownian motion with entries of variance kappa t, common to the tokens. The last term
    is (91)'s ``-(1/2) x int |P_x xi_theta|^2 rho(d theta)``; ``ito_correction=False`` drops it. It is
    integrated by Euler-Maruyama in R^d, without projection, at steps ``1/steps`` and ``1/(2 steps)``.
    The layer map of depth L uses the adapter ``dV_l = L Delta W_l`` (Delta W_l the path's increment
    over the l-th layer), an i.i.d. Gaussian adapter ``sqrt(L) G_l`` with ``G_l`` entries
    ``N(0, kappa)``: the same law for each depth, coupled to the SDE.

    Parameters
    ----------
    x0 : (n, d)
        Initial tokens on the sphere.
    V : (d, d)
        Value matrix, with A = V.
    depths : tuple of int
        Depths L, each dividing ``2 steps``.
    steps : int
        Coarse number of SDE steps on [0, 1].
    kappa : float
        Noise magnitude.
    trials : int
        Independent Brownian paths.
    gen : torch.Generator
        CPU generator of the Brownian increments.
    ito_correction : bool
        Keep (91)'s drift term.

    Returns
    -------
    dict
        ``coarse``, ``fine`` (trials,) for the SDE (``2 fine - coarse`` is the Richardson
        extrapolation) and ``layers`` (len(depths), trials) for the layer maps.

    Examples
    --------
    >>> x0 = torch.eye(3, dtype=torch.float64)[:2]
    >>> V = torch.diag(torch.tensor([1.0, 0.5, 0.25], dtype=F64))
    >>> r = coupled_samples(x0, V, (2, 4), 2, 0.1, 8, torch.Generator().manual_seed(0))
    >>> r["coarse"].shape, r["layers"].shape
    (torch.Size([8]), torch.Size([2, 8]))
    """
    n, d = x0.shape
    V = V.to(x0)
    fine_n = 2 * int(steps)
    if any(fine_n % L for L in depths):
        raise ValueError(f"every depth must divide 2 steps = {fine_n}, got {depths!r}")
    h = 1.0 / fine_n

    def sde_step(X: torch.Tensor, dW: torch.Tensor, dt: float) -> torch.Tensor:
        m = attention_field(X, V, None)  # m_i = sum_j softmax_j(<V x_i, x_j>) x_j
        inc = m @ V.T * dt + m @ dW.transpose(-1, -2)
        out = X + inc - (inc * X).sum(-1, keepdim=True) * X
        if ito_correction:
            out = out - 0.5 * (d - 1) * kappa * (m * m).sum(-1, keepdim=True) * X * dt
        return out

    start = x0.expand(trials, n, d).contiguous()
    coarse, fine = start.clone(), start.clone()
    layers = [start.clone() for _ in depths]
    acc = [torch.zeros(trials, d, d, dtype=x0.dtype, device=x0.device) for _ in depths]
    pending = None
    sd = math.sqrt(kappa * h)
    for k in range(fine_n):
        dW = (sd * torch.randn(trials, d, d, generator=gen, dtype=F64)).to(x0)
        fine = sde_step(fine, dW, h)
        if pending is None:
            pending = dW
        else:
            coarse = sde_step(coarse, pending + dW, 2 * h)
            pending = None
        for i, L in enumerate(depths):
            acc[i] = acc[i] + dW
            if (k + 1) % (fine_n // L) == 0:  # end of a layer: dV_l = L Delta W_l
                Y = layers[i] + attention_field(layers[i], V, V + L * acc[i]) / L
                layers[i] = Y / Y.norm(dim=-1, keepdim=True)
                acc[i] = torch.zeros_like(acc[i])
    return {"coarse": weak_observable(coarse), "fine": weak_observable(fine),
            "layers": torch.stack([weak_observable(X) for X in layers])}
