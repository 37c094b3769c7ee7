"""Chapter "beyond": open questions the four papers leave, probed numerically, one experiment a file.

Each question gets a prediction derived for it (a closed form of :mod:`companion.theory.questions`,
its derivation in the docstring, checked against the simulator where it must hold), a measurement,
and an answer recorded in the ledger as a row of its own kind (id ``Q-...``, status supported /
inconclusive / refuted, :func:`companion.ledger.answer`), kept apart from the papers' claims.

* Question 1 (paper A, Thm. 4.2): anisotropic random adapters, :mod:`.aniso_adapters`
  (experiment ``beyond-aniso-adapters``; derived level
  :func:`~companion.theory.questions.aniso_level`).
* Question 2 (papers A and D): paper D's metastable dynamics with a rank-1 adapter, V = I + eps E,
  :mod:`.lora_metastable` (``beyond-lora-metastable``; the ``lora_*`` laws of
  :mod:`companion.theory.questions`).
* Question 3 (paper B, Conjecture 1): where the terminal phase ends, F or F^abs, as a map,
  :mod:`.terminal_map` (``beyond-terminal-map``; :func:`~companion.theory.questions.terminal_prediction`).
* Question 4 (paper C, Sec. 7.3): n >= 3 tokens with V negative definite, the final sign splits
  against the block criterion of Thm. 5.2 with the singleton correction, :mod:`.negdef_patterns`
  (``beyond-negdef-patterns``; :func:`~companion.theory.questions.split_prediction`).
* Question 5 (paper A, Sec. 4.2): weights that vary along depth (:class:`companion.models.TimeVarying`),
  :mod:`.depth_paths` (``beyond-depth-paths``; :func:`~companion.theory.questions.tracking_lag`,
  :func:`~companion.theory.questions.turning_rate`, :func:`~companion.theory.questions.gap_closing_angle`,
  :func:`~companion.theory.questions.ramp_depths`).

Sizes are ours (no paper runs these): the ``full`` profiles are larger versions of the ``fast`` ones.
The thresholds several answers share (:data:`ON_SUBSPACE`, :data:`TOL_RATE`,
:data:`RATE_FLOOR`) are here; each experiment's own are in its file.
"""
from __future__ import annotations

from ._shared import ON_SUBSPACE, RATE_FLOOR, TOL_RATE
from .aniso_adapters import AnisoAdaptersConfig, aniso_adapters, aniso_adapters_claims, aniso_adapters_summary, plot_aniso_adapters
from .depth_paths import (DEPTH_PATHS_TINY, EUCLID_T_MAX, TOL_ANGLE, TOL_DEPTH, TOL_FROZEN, DepthPathsConfig, depth_paths,
                          depth_paths_claims, depth_paths_summary, plot_depth_paths)
from .lora_metastable import (LORA_METASTABLE_TINY, TOL_AXIS, TOL_LORA_COEF, TOL_LORA_FORCING, LoraMetastableConfig,
                              lora_circle_check, lora_metastable, lora_metastable_claims, lora_metastable_summary,
                              lora_synthetic_result, plot_lora_metastable)
from .negdef_patterns import (NegdefPatternsConfig, negdef_patterns, negdef_patterns_claims, negdef_patterns_summary,
                              plot_negdef_patterns)
from .terminal_map import TerminalMapConfig, plot_terminal_map, terminal_map, terminal_map_claims, terminal_map_summary

__all__ = [
    "ON_SUBSPACE", "TOL_RATE", "RATE_FLOOR",
    "AnisoAdaptersConfig", "aniso_adapters", "aniso_adapters_claims", "aniso_adapters_summary", "plot_aniso_adapters",
    "LoraMetastableConfig", "lora_metastable", "lora_metastable_claims", "plot_lora_metastable", "lora_circle_check",
    "lora_synthetic_result", "lora_metastable_summary", "LORA_METASTABLE_TINY", "TOL_LORA_COEF", "TOL_LORA_FORCING", "TOL_AXIS",
    "TerminalMapConfig", "terminal_map", "terminal_map_claims", "terminal_map_summary", "plot_terminal_map",
    "NegdefPatternsConfig", "negdef_patterns", "negdef_patterns_claims", "negdef_patterns_summary", "plot_negdef_patterns",
    "DepthPathsConfig", "depth_paths", "depth_paths_claims", "depth_paths_summary", "plot_depth_paths", "DEPTH_PATHS_TINY",
    "TOL_FROZEN", "TOL_ANGLE", "TOL_DEPTH", "EUCLID_T_MAX",
]
