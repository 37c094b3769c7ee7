"""Chapter "phase_transitions": paper A, Section 4 (norm transition, Theorem 4.2; depth transition,
Theorem 4.6) and Appendix E.1-E.3.

Norm transition: the post-LayerNorm layer map (18) with V = A = diag(lambda), tokens started near
u_1 = e_1 and i.i.d. random value adapters (19) with ``eta_L = c L^alpha``
(:mod:`companion.models.layer_maps`). Monte Carlo trials sit on the trials axis, so one
:func:`companion.models.iterate_layers` call runs them all; a run of ``blocks`` macroscopic time
units chains ``blocks`` blocks of L layers (step 1/L), each with fresh adapters.

Depth transition: the rescaled dynamics (7) ``z = e^{-tV} x`` in d = 2 (App. E.1.1 / E.3.1 settings),
base ``Q = K = V = I`` against ``V~ = diag(1, 1 - eps)`` or ``Q~ = K~ = e_1 e_1^T``.

One experiment a module, each with its config per profile, its figure and its claims:
:mod:`.norm_transition`, :mod:`.critical_kappa`, :mod:`.rank_independence`, :mod:`.weak_error`,
:mod:`.depth_transition`, :mod:`.eps_sweep`; what several of them share is in :mod:`._shared`.
"""
from __future__ import annotations

# Imported in the order the experiments were declared in, which is their order in the registry.
from .norm_transition import (NORM_ALPHAS, NormTransitionConfig, norm_assemble, norm_grid, norm_point, norm_transition,
                              norm_transition_claims, norm_transition_summary, plot_norm_transition)
from .critical_kappa import (CriticalKappaConfig, critical_kappa, critical_kappa_claims, critical_kappa_summary,
                             plot_critical_kappa)
from .rank_independence import (RankIndependenceConfig, plot_rank_independence, rank_independence,
                                rank_independence_claims, rank_independence_summary)
from .depth_transition import (TOL_HULL, DepthTransitionConfig, depth_transition, depth_transition_claims,
                               depth_transition_summary, plot_depth_transition)
from .eps_sweep import EpsSweepConfig, eps_sweep, eps_sweep_claims, eps_sweep_summary, plot_eps_sweep
from .weak_error import WeakErrorConfig, plot_weak_error, weak_error, weak_error_claims, weak_error_summary
from ._shared import BOUND_RATIO, LAMBDAS3, SYNC_RATIO, base_run, perturbed_times, tail_slope, window_mean

__all__ = [
    "NormTransitionConfig", "norm_transition", "norm_point", "norm_assemble", "norm_grid", "norm_transition_claims",
    "norm_transition_summary", "plot_norm_transition", "NORM_ALPHAS",
    "CriticalKappaConfig", "critical_kappa", "critical_kappa_claims", "critical_kappa_summary", "plot_critical_kappa",
    "RankIndependenceConfig", "rank_independence", "rank_independence_claims", "rank_independence_summary",
    "plot_rank_independence",
    "DepthTransitionConfig", "depth_transition", "depth_transition_claims", "depth_transition_summary",
    "plot_depth_transition", "TOL_HULL",
    "EpsSweepConfig", "eps_sweep", "eps_sweep_claims", "eps_sweep_summary", "plot_eps_sweep",
    "WeakErrorConfig", "weak_error", "weak_error_claims", "weak_error_summary", "plot_weak_error",
    "LAMBDAS3", "SYNC_RATIO", "BOUND_RATIO", "tail_slope", "window_mean", "base_run", "perturbed_times",
]
