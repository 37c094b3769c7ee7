"""``llm-layer-repetition``: paper A's Fig. 14 / App. E.5, mean token cosine by depth with the layers run twice."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from ... import ledger
from ...registry import PaperScale, claims_for, experiment
from ._common import CHAPTER, _ax, _load

__all__ = ["LayerRepetitionConfig", "PROFILES_REPETITION", "PAPER_REPETITION", "NEAR_ONE", "layer_repetition",
           "layer_repetition_claims", "plot_layer_repetition"]

# App. E.5 / Fig. 14 "towards 1": mean token cosine at least 0.9 at depth 2L.
NEAR_ONE = 0.9


@dataclasses.dataclass(frozen=True)
class LayerRepetitionConfig:
    """The model's layers run ``times`` times; mean token cosine on ``blocks`` blocks of ``block_len``
    tokens of held-out BBC text and of words drawn from the BBC vocabulary (from ``seed``);
    ``model_path`` as in :class:`~companion.experiments.llm_probes.random_adapters.RandomAdaptersConfig`.

    Examples
    --------
    >>> LayerRepetitionConfig().times
    2
    """

    blocks: int = 2
    block_len: int = 64
    times: int = 2
    model_path: str | None = None
    seed: int = 0


PROFILES_REPETITION = {"fast": LayerRepetitionConfig(), "full": LayerRepetitionConfig(blocks=16, block_len=128)}
PAPER_REPETITION = PaperScale(
    values={"model_path": "Llama-2-7B", "times": 2},
    deviations={"model_path": "Llama-2-7B weights cannot be fetched offline; the bundled SmolLM2-135M (30 layers run "
                              "twice, as the paper runs 32 twice)"},
    note="The paper's inputs (random sentences from a dummy-text generator, one Wikipedia article) and their lengths "
         "are not given. Chosen: 16 blocks of 128 tokens of held-out BBC news and of words drawn from its vocabulary.")


def plot_layer_repetition(result: dict, ax=None):
    """Mean pairwise token cosine similarity against depth, natural and random-word text (Fig. 14).

    Parameters
    ----------
    result : dict
        What :func:`layer_repetition` returns.
    ax : matplotlib.axes.Axes, optional
        Where to draw; None opens a new figure.

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> res = {"layers": 2, "natural": np.array([0.2, 0.5, 0.7, 0.8]), "random": np.array([0.2, 0.6, 0.8, 0.95])}
    >>> [line.get_label() for line in plot_layer_repetition(res).get_lines()]
    ['natural text (BBC)', 'random words', 'repetition starts']
    """
    ax = _ax(ax)
    depth = np.arange(1, len(result["natural"]) + 1)
    ax.plot(depth, result["natural"], label="natural text (BBC)")
    ax.plot(depth, result["random"], label="random words")
    ax.axvline(result["layers"] + 0.5, color="k", ls=":", label="repetition starts")
    ax.set(xlabel="depth", ylabel="mean token cosine", title="the 30 layers run twice")
    ax.legend(fontsize=10)
    return ax


@experiment("llm-layer-repetition", chapter=CHAPTER, profiles=PROFILES_REPETITION, paper=PAPER_REPETITION,
            plot=plot_layer_repetition)
def layer_repetition(cfg: LayerRepetitionConfig, generator: torch.Generator, device) -> dict[str, Any]:
    """Fig. 14 / App. E.5: mean pairwise token cosine similarity by depth with the layers repeated.

    Profiles: ``fast`` 2 blocks of 64 tokens, ``full`` 16 blocks of 128 (see :class:`LayerRepetitionConfig`).

    Returns
    -------
    dict with ``layers`` (L, before repetition), ``times``, ``natural`` and ``random`` (times * L,):
    mean token cosine after each layer on BBC text and on random BBC words, and ``model``.

    Examples
    --------
    >>> from companion.registry import get
    >>> full = get("llm-layer-repetition").configure("full")
    >>> full.times, full.blocks * full.block_len
    (2, 2048)
    """
    from ...llm import assets, probes

    model, tok, path = _load(cfg.model_path, device)
    L = model.config.num_hidden_layers
    probes.repeat_layers(model, cfg.times)
    text = assets.corpus_text("bbc", "heldout")
    natural = probes.token_blocks(tok, text, cfg.block_len, cfg.blocks)
    words = probes.random_word_text(assets.corpus_text("bbc", "train"), 4 * cfg.block_len * cfg.blocks, generator=generator)
    rand = probes.token_blocks(tok, words, cfg.block_len, cfg.blocks)
    return {"model": path, "layers": L, "times": cfg.times,
            "natural": probes.mean_token_cosine(probes.hidden_states(model, natural)),
            "random": probes.mean_token_cosine(probes.hidden_states(model, rand))}


@claims_for("llm-layer-repetition")
def layer_repetition_claims(result: dict[str, Any], cfg: LayerRepetitionConfig) -> list[ledger.Claim]:
    """Fig. 14: the mean token cosine rises with depth through both passes (needed), more for random
    words, and reaches :data:`NEAR_ONE` at depth 2L (both wanted: partly without them).

    Examples
    --------
    >>> res = {"layers": 2, "natural": np.array([0.2, 0.5, 0.7, 0.8]), "random": np.array([0.2, 0.6, 0.8, 0.95])}
    >>> layer_repetition_claims(res, LayerRepetitionConfig())[0].status
    'partly'
    >>> res["natural"] = np.array([0.2, 0.5, 0.4, 0.3])  # falling after the first pass
    >>> layer_repetition_claims(res, LayerRepetitionConfig())[0].status
    'not-reproduced'
    """
    nat, rnd, L = np.asarray(result["natural"]), np.asarray(result["random"]), int(result["layers"])
    rises = bool(nat[-1] > nat[L - 1] > nat[0] and rnd[-1] > rnd[L - 1] > rnd[0])
    random_higher = bool(rnd[-1] > nat[-1])
    near = ledger.verdict(min(float(nat[-1]), float(rnd[-1])), NEAR_ONE, better="higher", scale=1 - NEAR_ONE)
    return [ledger.Claim(
        id="A-E5-token-cosine-rises-smollm2", paper="A", where="App. E.5, Fig. 14",
        statement="With repeated layers the mean token cosine similarity rises with depth towards 1, more for random text",
        verdict=ledger.graded([ledger.verdict(rises)], [ledger.verdict(random_higher), near]),
        measured=[float(nat[-1]), float(rnd[-1])], expected=f"rising, random > natural, both >= {NEAR_ONE:g} at depth 2L",
        tolerance=1 - NEAR_ONE)]

