"""What several experiments of the chapter phase_transitions share: the base value matrix of the norm
experiments, the slope tolerance of the claims, the time average of a chain's observable, and the
base and perturbed runs of the depth transition (``phase-depth-transition``, ``phase-eps-sweep``)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ... import fits
from ...integrate import simulate
from ...metrics import cluster_centres
from ...models import Rescaled, ScaleCappedRescaled

__all__ = ["LAMBDAS3", "SYNC_RATIO", "BOUND_RATIO", "tail_slope", "window_mean", "base_run", "perturbed_times"]

F64 = torch.float64

# Base value matrix of the norm experiments (d = 3): spectral gaps 0.5 and 0.75.
LAMBDAS3 = (1.0, 0.5, 0.25)

# Printed beside the synchronisation rows (not a pass mark): a spread 1000x below the displacement of the
# common direction.
SYNC_RATIO = 1e-3
# T* / bound of Thm 4.6 (2): at most 1 (the paper's bound itself).
BOUND_RATIO = 1.0


def _gen(seed: int) -> torch.Generator:
    """A CPU generator: random draws are made on the CPU and moved, so a seed gives the same
    initial state (and adapters) on every device."""
    return torch.Generator().manual_seed(int(seed))


def _plot_ax(ax):
    import matplotlib.pyplot as plt

    return ax if ax is not None else plt.subplots(figsize=(6.4, 4.2), layout="constrained")[1]


def tail_slope(depths: Any, y: Any, se: Any) -> dict[str, float]:
    """The weighted log-log slope of ``y`` (with standard errors ``se``) against ``depths`` over the upper
    half of the depths, ``depths[len // 2:]`` (at least two): the large-depth regime where a rate
    in 1/L applies; ``from`` is its first depth.

    Examples
    --------
    >>> L = np.array([2, 4, 8, 16, 32])
    >>> f = tail_slope(L, [1.0, 0.9, 1 / 8, 1 / 16, 1 / 32], [0.01] * 5)    # 1/L from L = 8 on, flat before
    >>> f["from"], round(f["slope"], 9)
    (8, -1.0)
    """
    depths, y, se = np.asarray(depths, dtype=float), np.abs(np.asarray(y, dtype=float)), np.asarray(se, dtype=float)
    k = min(len(depths) // 2, len(depths) - 2)
    f = fits.line_fit(depths[k:], y[k:], se=se[k:], loglog=True)
    return {"slope": float(f["slope"]), "slope_se": float(f["slope_se"]), "from": int(depths[k])}


def window_mean(series: torch.Tensor, t: torch.Tensor, t_from: float) -> tuple[float, float]:
    """Per-trial time average over ``t >= t_from``, then its mean and standard error over trials.

    .. math:: \\bar q_k = \\operatorname{mean}_{t_s \\ge t_{\\rm from}} q_k(t_s), \\qquad
              (\\operatorname{mean}_k \\bar q_k,\\ \\operatorname{sd}_k \\bar q_k / \\sqrt{K}).

    Parameters
    ----------
    series : (S, trials)
        An observable of :func:`companion.models.layer_maps.adapter_chain`.
    t : (S,)
        Its macroscopic times.
    t_from : float
        Start of the averaging window.

    Returns
    -------
    (mean, standard error) : tuple of float

    Examples
    --------
    >>> q = torch.tensor([[9.0, 9.0], [1.0, 2.0], [3.0, 4.0]], dtype=F64)  # (S = 3, trials = 2)
    >>> window_mean(q, torch.tensor([0.0, 1.0, 2.0], dtype=F64), 1.0)
    (2.5, 0.5)
    """
    per_trial = series[t >= t_from].mean(0)  # (trials,)
    m = per_trial.mean().item()
    se = per_trial.std().item() / math.sqrt(per_trial.numel())
    return m, se


def _centres(Z: torch.Tensor, tol: float) -> list[np.ndarray]:
    """Cluster centres per trial (single linkage at ``tol``): list of (k, d) arrays."""
    return [c for c, _ in cluster_centres(Z, tol)]


def _dist_to_set(Z: torch.Tensor, C: np.ndarray) -> torch.Tensor:
    """``max_i d(z_i, C)`` at every saved time: Z (T, n, d) -> (T,), on the CPU (compared with ``sol.ts``)."""
    c = torch.as_tensor(C, dtype=Z.dtype, device=Z.device)
    return torch.cdist(Z, c.expand(Z.shape[0], *c.shape)).amin(-1).amax(-1).cpu()


def base_run(Z0: torch.Tensor, t1: float, dt: float, delta: float):
    """The base of the depth transition, ``Q = K = V = I_2`` in the rescaled dynamics (7), by RK4.

    Parameters
    ----------
    Z0 : (trials, n, 2)
        Initial tokens.
    t1 : float
        Horizon; the limiting clusters are read there (single linkage at ``delta / 2``).
    dt : float
        RK4 step, also the save step.
    delta : float
        Cluster radius.

    Returns
    -------
    (solution, clusters, T_delta)
        The solution, the cluster centres per trial (list of (k, 2) arrays) and ``T_delta``
        (trials,): the time after which every token stays within ``delta`` of its trial's clusters.

    Examples
    --------
    >>> from companion import init
    >>> Z0 = init.cube(1, 6, 2, 5.0, generator=torch.Generator().manual_seed(0))
    >>> sol, C, T_delta = base_run(Z0, 10.0, 0.1, 0.1)
    >>> sol.xs.shape, C[0].shape[1], T_delta.shape
    (torch.Size([101, 1, 6, 2]), 2, (1,))
    """
    base = simulate(Rescaled(A=torch.eye(2, dtype=F64), V=torch.eye(2, dtype=F64)), Z0, t1, method="rk4", dt=dt,
                    save_at=torch.arange(0, t1 + dt / 2, dt, dtype=F64))
    C = _centres(base.xs[-1], delta / 2)
    T_delta = [fits.settle_time(base.ts, _dist_to_set(base.xs[:, tr], C[tr]), delta) for tr in range(Z0.shape[0])]
    return base, C, np.array(T_delta)


def perturbed_times(Z0: torch.Tensor, V_t: torch.Tensor, A_t: torch.Tensor, C: list[Any], T_delta: np.ndarray, t1: float,
                    dt: float, delta: float, save_dt: float = 0.5):
    """The perturbed run (``ScaleCappedRescaled(A_t, V_t)`` by RK4 at step ``dt`` to ``t1``) and its
    exit times T*(delta) from the base clusters ``C``, at resolution ``save_dt``.

    Parameters
    ----------
    Z0 : (trials, n, 2)
        Initial tokens (those of the base run).
    V_t, A_t : (2, 2) or (trials, 2, 2)
        Perturbed value and key-query matrices.
    C, T_delta : list of (k, 2) arrays, (trials,)
        What :func:`base_run` gives for the same tokens.
    t1, dt, delta, save_dt : float
        Horizon, RK4 step, cluster radius, save step.

    Returns
    -------
    (solution, exits, settle)
        ``exits`` (trials,): the first saved t >= T_delta at which a token is ``2 delta`` away from
        C (inf: none within the horizon); ``settle`` (trials,): the perturbed dynamics' own settle
        time (time to cluster), nan when it falls in the last 20 % of the horizon.

    Examples
    --------
    >>> from companion import init
    >>> Z0 = init.cube(1, 6, 2, 5.0, generator=torch.Generator().manual_seed(0))
    >>> _, C, T_delta = base_run(Z0, 10.0, 0.1, 0.1)
    >>> _, exits, settle = perturbed_times(Z0, torch.diag(torch.tensor([1.0, 0.9], dtype=F64)), torch.eye(2, dtype=F64),
    ...                                    C, T_delta, 20.0, 0.1, 0.1)
    >>> exits.shape, settle.shape
    ((1,), (1,))
    """
    ts = torch.arange(0, t1 + save_dt / 2, save_dt, dtype=F64)
    sol = simulate(ScaleCappedRescaled(A=A_t, V=V_t), Z0, t1, method="rk4", dt=dt, save_at=ts)
    trials = Z0.shape[0]
    # the exit: the first saved t >= T_delta at which a token is 2 delta away from C (inf: none in the horizon)
    exits = np.array([fits.first_crossing(sol.ts, _dist_to_set(sol.xs[:, tr], C[tr]), 2 * delta, start=T_delta[tr] - 1e-9,
                                          interpolate=False, never=math.inf) for tr in range(trials)])
    Ct = _centres(sol.xs[-1], delta / 2)
    settle = np.array([fits.settle_time(sol.ts, _dist_to_set(sol.xs[:, tr], Ct[tr]), delta) for tr in range(trials)])
    # a settle time in the last 20% of the horizon is not trusted (the run may still be moving)
    settle = np.where(settle > 0.8 * t1, np.nan, settle)
    return sol, exits, settle
