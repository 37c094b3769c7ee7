"""Chapter "stability under perturbations": paper A, Section 3 (Prop. 3.1, Prop. 3.3, Remark 3.4),
the orthogonal-projection mitigation it motivates, and the lemmas of Appendix C.

One experiment a module, each registered as ``stability-<thing>`` for ``python -m companion run
NAME`` with a frozen config per profile (``fast``, ``full``): :mod:`.prop31`, :mod:`.prop33`,
:mod:`.remark34`, :mod:`.mitigation`, :mod:`.field_bounds`, :mod:`.closeness_window`,
:mod:`.initial_laws`, :mod:`.cone_collapse` and :mod:`.top_eigvec`. Each claims function turns its
result into ledger rows that quote paper A and say their basis, from the numbers its
``<stem>_summary`` computes once (the chapter glues the same numbers); a printed inequality is
judged on its excess over the float64 error (:data:`TOL_BOUND_REL`, :data:`TOL_RATE_REL`), not on a
pass mark of ours. All runs are float64, RK4, beta = 1 (the paper's setting), batched: each
perturbation is one trial of a single :func:`companion.simulate` call. Every public name of the
experiment modules is re-exported here (``from companion.experiments import stability as st;
st.prop31(...)``).
"""
from __future__ import annotations

from ._shared import CLUSTER_RADIUS, TOL_BOUND_REL, TOL_RATE_REL
from .closeness_window import (ClosenessWindowConfig, closeness_window, closeness_window_claims, closeness_window_summary,
                               plot_closeness_window)
from .cone_collapse import (CONE_FLOOR, ConeCollapseConfig, cone_collapse, cone_collapse_claims, cone_collapse_summary,
                            plot_cone_collapse)
from .field_bounds import (FieldBoundsConfig, field_bounds, field_bounds_claims, field_bounds_summary, field_cases,
                           plot_field_bounds)
from .initial_laws import InitialLawsConfig, initial_laws, initial_laws_claims, initial_laws_summary, plot_initial_laws
from .mitigation import MOVED, MitigationConfig, mitigation, mitigation_claims, mitigation_summary, plot_mitigation
from .prop31 import SLACK_HOLDS, TOL_RATIO69, Prop31Config, plot_prop31_wasserstein, prop31, prop31_claims, prop31_summary
from .prop33 import (BOUND16_CONSTANT, TOL_RATE_ABS, Prop33Config, drift_matches_limit, prop33_summary,
                     drift_ratio, plot_prop33_families, plot_prop33_map, prop33, prop33_claims, within_rate)
from .remark34 import Remark34Config, plot_remark34_ranks, remark34, remark34_claims, remark34_summary
from .top_eigvec import TopEigvecConfig, plot_top_eigvec, top_eigvec, top_eigvec_claims, top_eigvec_summary

__all__ = [
    "Prop31Config", "prop31", "prop31_claims", "plot_prop31_wasserstein",
    "Prop33Config", "prop33", "prop33_claims", "plot_prop33_families", "plot_prop33_map", "within_rate", "drift_ratio", "drift_matches_limit",
    "Remark34Config", "remark34", "remark34_claims", "plot_remark34_ranks",
    "MitigationConfig", "mitigation", "mitigation_claims", "plot_mitigation",
    "FieldBoundsConfig", "field_bounds", "field_bounds_claims", "plot_field_bounds", "field_cases",
    "ClosenessWindowConfig", "closeness_window", "closeness_window_claims", "plot_closeness_window",
    "InitialLawsConfig", "initial_laws", "initial_laws_claims", "plot_initial_laws",
    "ConeCollapseConfig", "cone_collapse", "cone_collapse_claims", "plot_cone_collapse",
    "TopEigvecConfig", "top_eigvec", "top_eigvec_claims", "plot_top_eigvec",
    "TOL_BOUND_REL", "TOL_RATE_REL", "TOL_RATE_ABS", "CLUSTER_RADIUS", "SLACK_HOLDS", "TOL_RATIO69",
    "BOUND16_CONSTANT",
    "prop31_summary", "prop33_summary", "remark34_summary", "mitigation_summary", "field_bounds_summary",
    "closeness_window_summary", "initial_laws_summary", "cone_collapse_summary", "top_eigvec_summary",
    "MOVED", "CONE_FLOOR",
]
