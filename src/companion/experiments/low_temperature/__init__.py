"""Paper B (Alcalde, Bungert, Riedl, Roith): low-temperature concentration, figure by figure.

Every experiment integrates paper B's particle system (eq. 1) with explicit Euler, dt = 0.01, as the
paper's Section 5 does, and the zero-temperature flow (eq. 3) with the same scheme (the paper's
Algorithm 2). Several inverse temperatures run as ONE batched simulation (:func:`simulate_betas`):
``beta <x_i, B x_j>`` is ``<(beta B^T) x_i, x_j>``, so trial k gets ``A_k = beta_k B^T`` and the
model's own beta is 1.

One experiment a module (``figure3``, ``beta_comparison``, ``rate_in_beta``, ``zero_temperature_rate``,
``conjecture1``, ``gradient_flow``, ``laplace``, ``gradient_flow_beta``, ``eigen_consensus``,
``hardmax``, ``assumptions_example``), each declared with a frozen config per profile (``fast``: CI, 2 CPU cores, about a
minute each; ``full``: the paper's sizes where it states them, more trials and tokens elsewhere, each
experiment's :class:`~companion.registry.PaperScale` saying which) and judged by its claims
function, which reads the numbers its ``<stem>_summary`` computes (the chapter glues the same). What several share (the Figure 3
matrices, the batched run, Theorem 1's rate thresholds) is in ``_shared``; every public name is
re-exported here.
"""
from ._shared import FIG3_B, FIG3_V, RATE_SLOPE, TOL_RATE_SLOPE, RATE_R2, UNIFORM_LINE, simulate_betas
from .figure3 import Figure3Config, figure3, plot_figure3, figure3_claims, PHASE1_TIME, TOL_PHASE1, TOL_PHASE2
from .beta_comparison import (BetaComparisonConfig, beta_comparison, plot_beta_comparison, beta_comparison_claims,
    EXIT_R2, EXIT_Z, NO_PHASE2_W2, MONOTONE_SLACK, COR4_EPS_MAX, COR4_FLOOR_FACTOR, COR4_POINTS, COR4_RANGE,
    cor4_window)
from .rate_in_beta import RateInBetaConfig, rate_in_beta, plot_rate_in_beta, rate_in_beta_claims, NONSYM_M, NONSYM_V
from .zero_temperature_rate import (ZeroTemperatureRateConfig, zero_temperature_rate, plot_zero_temperature_rate,
    zero_temperature_rate_claims, general_pair, decay_rate, BOUND_RATIO, TOL_PI_DRIFT, PROP8_RATIO)
from .conjecture1 import (Conjecture1Config, conjecture1, plot_conjecture1, conjecture1_claims, FABS_B, FABS_V,
    TOL_CONJ1, DIST_FLOOR)
from .gradient_flow import (GradientFlowConfig, gradient_flow, plot_gradient_flow, gradient_flow_claims, TOL_C3,
    MID_E_LEVEL, MID_E_DURATION, MID_E_FULL)
from .laplace import (LaplaceConfig, laplace, plot_laplace, laplace_claims, LAPLACE_B, LAPLACE_WEIGHTS,
    LAPLACE_CENTRES, LAPLACE_KAPPAS, TOL_HOLE)
from .gradient_flow_beta import (GradientFlowBetaConfig, gradient_flow_beta, plot_gradient_flow_beta,
    gradient_flow_beta_claims, TOL_ALIGN, TOL_ENERGY, TOL_ENERGY_PI, W2_CONTRAST, TOL_SWITCH, TOL_OPT)
from .eigen_consensus import (EigenConsensusConfig, eigen_consensus, plot_eigen_consensus, eigen_consensus_claims,
    TOL_STATIONARY, TOL_CONSENSUS_RATE)
from .assumptions_example import (AssumptionsExampleConfig, assumptions_example, plot_assumptions_example,
    assumptions_example_claims, tail_index, TOL_EXAMPLE_Z)
from .hardmax import (HardmaxConfig, hardmax, plot_hardmax, hardmax_claims, HARDMAX_GAP_FLOOR, HARDMAX_ROUNDING, HARDMAX_EXPONENT,
    TOL_HARDMAX_EXP)

from .figure3 import figure3_summary
from .beta_comparison import beta_comparison_summary
from .rate_in_beta import rate_in_beta_summary
from .zero_temperature_rate import zero_temperature_rate_summary
from .conjecture1 import conjecture1_summary
from .gradient_flow import gradient_flow_summary
from .laplace import laplace_summary
from .gradient_flow_beta import gradient_flow_beta_summary
from .eigen_consensus import eigen_consensus_summary
from .assumptions_example import assumptions_example_summary
from .hardmax import hardmax_summary

__all__ = [
    "figure3_summary",
    "beta_comparison_summary",
    "rate_in_beta_summary",
    "zero_temperature_rate_summary",
    "conjecture1_summary",
    "gradient_flow_summary",
    "laplace_summary",
    "gradient_flow_beta_summary",
    "eigen_consensus_summary",
    "assumptions_example_summary",
    "hardmax_summary",
    "FIG3_B",
    "FIG3_V",
    "RATE_SLOPE",
    "TOL_RATE_SLOPE",
    "RATE_R2",
    "UNIFORM_LINE",
    "simulate_betas",
    "Figure3Config",
    "figure3",
    "plot_figure3",
    "figure3_claims",
    "PHASE1_TIME",
    "TOL_PHASE1",
    "TOL_PHASE2",
    "BetaComparisonConfig",
    "beta_comparison",
    "plot_beta_comparison",
    "beta_comparison_claims",
    "EXIT_R2",
    "EXIT_Z",
    "NO_PHASE2_W2",
    "MONOTONE_SLACK",
    "COR4_EPS_MAX",
    "COR4_FLOOR_FACTOR",
    "COR4_POINTS",
    "COR4_RANGE",
    "cor4_window",
    "RateInBetaConfig",
    "rate_in_beta",
    "plot_rate_in_beta",
    "rate_in_beta_claims",
    "NONSYM_M",
    "NONSYM_V",
    "ZeroTemperatureRateConfig",
    "zero_temperature_rate",
    "plot_zero_temperature_rate",
    "zero_temperature_rate_claims",
    "general_pair",
    "decay_rate",
    "BOUND_RATIO",
    "TOL_PI_DRIFT",
    "PROP8_RATIO",
    "Conjecture1Config",
    "conjecture1",
    "plot_conjecture1",
    "conjecture1_claims",
    "FABS_B",
    "FABS_V",
    "TOL_CONJ1",
    "DIST_FLOOR",
    "GradientFlowConfig",
    "gradient_flow",
    "plot_gradient_flow",
    "gradient_flow_claims",
    "TOL_C3",
    "MID_E_LEVEL",
    "MID_E_DURATION",
    "MID_E_FULL",
    "LaplaceConfig",
    "laplace",
    "plot_laplace",
    "laplace_claims",
    "LAPLACE_B",
    "LAPLACE_WEIGHTS",
    "LAPLACE_CENTRES",
    "LAPLACE_KAPPAS",
    "TOL_HOLE",
    "GradientFlowBetaConfig",
    "gradient_flow_beta",
    "plot_gradient_flow_beta",
    "gradient_flow_beta_claims",
    "TOL_ALIGN",
    "TOL_ENERGY",
    "TOL_ENERGY_PI",
    "W2_CONTRAST",
    "TOL_SWITCH",
    "TOL_OPT",
    "EigenConsensusConfig",
    "eigen_consensus",
    "plot_eigen_consensus",
    "eigen_consensus_claims",
    "TOL_STATIONARY",
    "TOL_CONSENSUS_RATE",
    "HardmaxConfig",
    "hardmax",
    "plot_hardmax",
    "hardmax_claims",
    "HARDMAX_GAP_FLOOR",
    "HARDMAX_ROUNDING",
    "HARDMAX_EXPONENT",
    "TOL_HARDMAX_EXP",
    "AssumptionsExampleConfig",
    "assumptions_example",
    "plot_assumptions_example",
    "assumptions_example_claims",
    "tail_index",
    "TOL_EXAMPLE_Z",
]
