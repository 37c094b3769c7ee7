"""LLM probes (paper A, Sections 4.1.2, 4.2.1, App. E) on any local Hugging Face causal LM.

transformers and peft are imported lazily inside the functions, so ``import companion.llm`` is light.
Submodules: :mod:`companion.llm.assets` (bundled model and corpora, prepared offline),
:mod:`companion.llm.probes` (loading, perplexity, random and trained LoRA, alignment, drift,
layer repetition), :mod:`companion.llm.spectra` (value and query-key spectra of any supported
attention layout, re-exported by ``probes``), :mod:`companion.llm.training` (LoRA runs kept as
summaries, one resumable stored part per rank and seed; Prop. 3.3 for trained value updates).
"""
from __future__ import annotations

__all__ = ["assets", "probes", "spectra", "training"]
