"""Paper C (Kuehn & Yoon): spectral selection in symmetric self-attention, checked numerically.

One experiment a file, each declared with :func:`companion.registry.experiment`: a frozen config per
profile, a body ``(cfg, generator, device) -> dict``, a plot and a claims function that turns the
result into ledger rows. Choices the paper leaves open (the V matrices, d, horizons, n for Fig. 4) are
config fields, stated in the chapter:

* positive-dominant regime (Figs. 1-2, Theorem 6.1): d = 3, ``V = diag(1, 0.5, -0.5)``, so
  ``lambda_1 = 1 > max_k |lambda_k| = 0.5``;
* negative-definite regime (Figs. 3-4): d = 3, ``V = diag(-0.5, -1, -1.5)`` (simple eigenvalues,
  ``e_3`` the most negative direction).

==============================================  ==========================================================
file                                            experiment
==============================================  ==========================================================
:mod:`.modal_form`                              ``spectral-modal-form`` (Sec. 3)
:mod:`.invariant_manifolds`                     ``spectral-invariant-manifolds`` (Sec. 2.2, Lemma 4.4, Prop. 4.5)
:mod:`.stability_cases`                         ``spectral-stability-cases`` (Prop. 5.1, Thm. 5.2, App. A.2)
:mod:`.lemma_a1`                                ``spectral-lemma-a1`` (Lemma A.1)
:mod:`.stability_boundary`                      ``spectral-stability-boundary`` (Rem. 5.3, Fig. 5)
:mod:`.cone_bound`                              ``spectral-cone-bound`` (Thm. 6.1, Cor. 6.2, Fig. 1)
:mod:`.rho_min`                                 ``spectral-rho-min`` (Fig. 2)
:mod:`.two_tokens`                              ``spectral-two-tokens`` (Lemma 6.3, Thm. 6.4, Fig. 3)
:mod:`.multi_token`                             ``spectral-multi-token`` (Sec. 7.3, Fig. 4)
==============================================  ==========================================================

What several experiments share (the two regimes' V, the rounding tolerances, the energy row) is in
``_shared``; every public name of the experiment files is re-exported here. The modal model is
:class:`companion.models.modal.ModalModel`, the closed forms are in :mod:`companion.theory.spectral`.
"""
from __future__ import annotations

from ._shared import V_POSITIVE, V_NEGATIVE, TOL_ROUNDING, TOL_BOUND, TOL_MONOTONE, MAJORITY, ON_AXIS
from .modal_form import ModalFormConfig, modal_form, plot_modal_form, modal_form_summary, modal_form_claims
from .invariant_manifolds import (InvariantManifoldsConfig, invariant_manifolds, plot_invariant_manifolds,
                                  invariant_manifolds_summary, invariant_manifolds_claims, TOL_STATIONARY)
from .stability_cases import StabilityCasesConfig, stability_cases, stability_cases_summary, stability_cases_claims, TOL_SPECTRUM
from .lemma_a1 import LemmaA1Config, lemma_a1, lemma_a1_summary, lemma_a1_claims, TOL_FD
from .stability_boundary import (StabilityBoundaryConfig, stability_boundary, plot_stability_boundary, stability_boundary_summary, stability_boundary_claims,
                                 TOL_BISECT, R_GROUPS)
from .cone_bound import (ConeBoundConfig, cone_bound, plot_cone_bound, plot_cone_bound_snapshots, cone_bound_summary, cone_bound_claims, CONE_RHO,
                         CONE_R)
from .rho_min import RhoMinConfig, rho_min, plot_rho_min, rho_min_summary, rho_min_claims, TOL_OUTCOME, BOTH_OUTCOMES, TOL_CLUSTER
from .two_tokens import TwoTokensConfig, two_tokens, plot_two_tokens, two_tokens_summary, two_tokens_claims, RHO_FLOOR
from .multi_token import MultiTokenConfig, multi_token, plot_multi_token, multi_token_summary, multi_token_claims

__all__ = [
    "V_POSITIVE",
    "V_NEGATIVE",
    "TOL_ROUNDING",
    "TOL_BOUND",
    "TOL_MONOTONE",
    "MAJORITY",
    "ON_AXIS",
    "ModalFormConfig",
    "modal_form",
    "plot_modal_form",
    "modal_form_summary",
    "modal_form_claims",
    "InvariantManifoldsConfig",
    "invariant_manifolds",
    "plot_invariant_manifolds",
    "invariant_manifolds_summary",
    "invariant_manifolds_claims",
    "TOL_STATIONARY",
    "StabilityCasesConfig",
    "stability_cases",
    "stability_cases_summary",
    "stability_cases_claims",
    "TOL_SPECTRUM",
    "LemmaA1Config",
    "lemma_a1",
    "lemma_a1_summary",
    "lemma_a1_claims",
    "TOL_FD",
    "StabilityBoundaryConfig",
    "stability_boundary",
    "plot_stability_boundary",
    "stability_boundary_summary",
    "stability_boundary_claims",
    "TOL_BISECT",
    "R_GROUPS",
    "ConeBoundConfig",
    "cone_bound",
    "plot_cone_bound",
    "plot_cone_bound_snapshots",
    "cone_bound_summary",
    "cone_bound_claims",
    "CONE_RHO",
    "CONE_R",
    "RhoMinConfig",
    "rho_min",
    "plot_rho_min",
    "rho_min_summary",
    "rho_min_claims",
    "TOL_OUTCOME",
    "BOTH_OUTCOMES",
    "TOL_CLUSTER",
    "TwoTokensConfig",
    "two_tokens",
    "plot_two_tokens",
    "two_tokens_summary",
    "two_tokens_claims",
    "RHO_FLOOR",
    "MultiTokenConfig",
    "multi_token",
    "plot_multi_token",
    "multi_token_summary",
    "multi_token_claims",
]
