"""What several experiments of the chapter "LoRA on a real model" share: the model and its held-out text."""
from __future__ import annotations

import torch

CHAPTER = "llm_probes"

# Tokens at the head of Hamlet (title, cast list) that no run scores or trains on (SmolLM2's tokenizer: the first
# speech starts near token 1000).
NEW_HEAD = 1000


def _load(model_path, device, tokenizer: bool = True, dtype: torch.dtype = torch.float32):
    """``(model, tokenizer, path)`` of a local causal LM (None: the bundled SmolLM2), its weights in ``dtype``."""
    from ...llm import assets, probes

    path = assets.smollm2_path() if model_path is None else model_path
    model, tok = probes.load_causal_lm(path, device=device, dtype=dtype)
    if tokenizer and tok is None:
        raise ValueError(f"model_path: {path} has no tokenizer files; the probes need one to read text")
    return model, tok, str(path)


def _eval_ids(tok, corpus: str, block_len: int, blocks: int, split: str = "heldout") -> torch.Tensor:
    """(blocks, block_len) token ids of a corpus split; Hamlet from its :data:`NEW_HEAD`-th token on."""
    from ...llm import assets, probes

    off = NEW_HEAD if corpus == "shakespeare" else 0
    return probes.token_blocks(tok, assets.corpus_text(corpus, split), block_len, blocks, offset=off)


def _ax(ax):
    """``ax``, or the axes of a new 5 x 3.5 figure."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(5, 3.5))
    return ax
