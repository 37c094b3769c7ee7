"""Chapter "LoRA on a real model": paper A's LLM probes (Figs. 2, 3, 4, 6, 7, 14) on SmolLM2-135M.

Each experiment takes ``model_path`` (any local Hugging Face causal LM folder with safetensors;
default: the bundled SmolLM2-135M-Instruct, dequantised from its Q4_1 GGUF) and module names
(defaults for Llama), so the same code runs on Qwen3-0.6B or Llama-2 weights a user has.
Token counts, ranks and steps are small in the ``fast`` profile (2 CPU cores) and larger in ``full``.
One experiment a file:

* :mod:`.random_adapters` (``llm-random-adapters``): Fig. 2, perplexity under random adapters;
* :mod:`.training` (``llm-training``): Figs. 3, 4, 6, LoRA fine-tuning on Shakespeare;
* :mod:`.training_indomain` (``llm-training-indomain``): the same runs, trained also on the first 80 % of
  the held-out play and scored on the rest;
* :mod:`.spectra` (``llm-spectra``): Fig. 7 / App. E.4, value and query-key spectra;
* :mod:`.layer_repetition` (``llm-layer-repetition``): Fig. 14 / App. E.5, layers run twice.

Each has a claims function beside it, its thresholds named constants there; the two training experiments
share their summary and rows (``_training_summary``). Their runs stored as parts are read back by
:func:`companion.llm.parts.training_from_parts`.
"""
from __future__ import annotations

from ._common import CHAPTER, NEW_HEAD
from ._training_summary import (LEARNED_FALL, LOW_RANK, MIN_SEEDS, MIN_SPEARMAN, RANK_MATTERS, TARGET_FALL,
                                indomain_against, run_ends, training_summary)
from .layer_repetition import (NEAR_ONE, PAPER_REPETITION, PROFILES_REPETITION, LayerRepetitionConfig,
                               layer_repetition, layer_repetition_claims, layer_repetition_summary,
                               plot_layer_repetition)
from .random_adapters import (BROKEN_RATIO, DROP_SIGMA, FLAT_RATIO, PAPER_RANDOM, PLATEAU_NORMS, PROFILES_RANDOM,
                              RANK_SPREAD, SMOOTH_WIDTH, TRANSITION_WIDTH, RandomAdaptersConfig, adapter_summary,
                              random_adapters_summary,
                              plot_random_adapters, random_adapters, random_adapters_claims, transition_norm,
                              transition_shape)
from .spectra import (FEW_HEADS, GAP_MIN, MOST_HEADS, PAPER_SPECTRA, PROFILES_SPECTRA, RANK_GAP, RANK_RTOLS,
                      RANK_SPREAD_FACTOR, SpectraConfig, plot_spectra, plot_spectra_eigengaps, plot_spectra_qk_ranks,
                      side_summary, spectra, spectra_claims, spectra_summary)
from .training import (PAPER_TRAINING, PROFILES_TRAINING, TrainingConfig, plot_training, plot_training_alignment,
                       plot_training_bridge, plot_training_drift, training, training_claims)
from .training_indomain import (PAPER_INDOMAIN, PROFILES_INDOMAIN, TrainingIndomainConfig,
                                plot_training_indomain, plot_training_indomain_alignment,
                                plot_training_indomain_bridge, plot_training_indomain_drift, replicate_line,
                                training_indomain, training_indomain_claims, training_indomain_summary)

__all__ = [
    "CHAPTER", "NEW_HEAD",
    # llm-random-adapters
    "RandomAdaptersConfig", "PROFILES_RANDOM", "PAPER_RANDOM", "FLAT_RATIO", "BROKEN_RATIO", "SMOOTH_WIDTH",
    "TRANSITION_WIDTH", "RANK_SPREAD", "random_adapters", "transition_norm", "transition_shape", "DROP_SIGMA", "PLATEAU_NORMS", "adapter_summary", "random_adapters_summary", "random_adapters_claims",
    "plot_random_adapters",
    # llm-training and llm-training-indomain
    "MIN_SPEARMAN", "RANK_MATTERS", "LOW_RANK", "TARGET_FALL", "LEARNED_FALL", "MIN_SEEDS",
    "training_summary", "run_ends", "indomain_against",
    "TrainingConfig", "PROFILES_TRAINING", "PAPER_TRAINING", "training", "training_claims", "plot_training",
    "plot_training_alignment", "plot_training_drift", "plot_training_bridge",
    "TrainingIndomainConfig", "PROFILES_INDOMAIN", "PAPER_INDOMAIN", "training_indomain", "training_indomain_claims",
    "training_indomain_summary", "replicate_line",
    "plot_training_indomain", "plot_training_indomain_alignment", "plot_training_indomain_drift",
    "plot_training_indomain_bridge",
    # llm-spectra
    "SpectraConfig", "PROFILES_SPECTRA", "PAPER_SPECTRA", "RANK_RTOLS", "RANK_SPREAD_FACTOR", "RANK_GAP", "FEW_HEADS",
    "GAP_MIN", "MOST_HEADS", "spectra", "side_summary", "spectra_summary", "spectra_claims", "plot_spectra",
    "plot_spectra_eigengaps", "plot_spectra_qk_ranks",
    # llm-layer-repetition
    "LayerRepetitionConfig", "PROFILES_REPETITION", "PAPER_REPETITION", "NEAR_ONE", "layer_repetition",
    "layer_repetition_summary", "layer_repetition_claims", "plot_layer_repetition",
]
