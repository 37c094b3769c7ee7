"""Probes of paper A (LoRA forgetting) on a real pretrained transformer.

Everything takes a loaded Hugging Face model (any local causal LM; defaults name the Llama
modules) and token-id tensors, so the same code runs on the bundled SmolLM2-135M, on a tiny
random Llama in the tests, or on Qwen3 / Llama weights a user has on disk. transformers and
peft are imported inside the functions only.

Notation (paper A, Sec. 4): a LoRA update of a value projection is
``Delta V = (alpha / r) B A`` with ``A : (r, d_in)``, ``B : (d_out, r)``.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from .._validate import check_generator, check_positive
# The spectra (value and query-key matrices) live in companion.llm.spectra; re-exported here.
from .spectra import (  # noqa: F401
    _FOLDABLE_QK_NORMS,
    _attention_weights,
    _head_layout,
    _lin,
    _qk_norm_weight,
    numerical_rank,
    qk_head_matrices,
    qk_singular_values,
    value_head_matrices,
)

__all__ = [
    "LLAMA_TARGETS",
    "load_causal_lm",
    "load_encoder",
    "token_blocks",
    "random_word_text",
    "perplexity",
    "hidden_states",
    "perplexity_and_hidden_states",
    "add_lora",
    "lora_layers",
    "lora_delta",
    "set_random_adapter",
    "update_norm",
    "alignment",
    "random_subspace_alignment",
    "relative_drift",
    "bifurcation_depth",
    "train_lora",
    "value_head_matrices",
    "qk_head_matrices",
    "qk_singular_values",
    "numerical_rank",
    "repeat_layers",
    "mean_token_cosine",
]

# Module names of the attention projections in Llama-style models (also Qwen, Mistral, SmolLM).
LLAMA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")


def _offline() -> None:
    # Never reach a model hub: every path is local.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # Loading bars would land in notebook outputs that nbval compares.
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def load_causal_lm(path: str | os.PathLike, *, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"):
    """Load a local causal LM (safetensors only, no network) and its tokenizer if present.

    Parameters
    ----------
    path : str or Path
        A local folder with ``config.json`` and ``*.safetensors`` weights.
    dtype, device
        Where the weights go.

    Returns
    -------
    (model, tokenizer)
        ``model`` in eval mode; ``tokenizer`` is None when the folder holds none.

    Raises ValueError when the folder is missing, has no safetensors weights, is not a causal LM, or holds
    weights that are not finite.

    Examples
    --------
    >>> load_causal_lm("/no/such/model")
    Traceback (most recent call last):
    ...
    ValueError: path: model folder '/no/such/model' does not exist (give a local Hugging Face model folder)
    """
    _offline()
    p = Path(path)
    if not p.is_dir():
        raise ValueError(f"path: model folder '{p}' does not exist (give a local Hugging Face model folder)")
    if not (p / "config.json").is_file():
        raise ValueError(f"path: '{p}' has no config.json, so it is not a Hugging Face model folder")
    if not any(p.glob("*.safetensors")):
        raise ValueError(f"path: '{p}' has no *.safetensors weights (pickled weights are not loaded)")
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    try:
        cfg = AutoConfig.from_pretrained(p, local_files_only=True)
    except (OSError, ValueError, KeyError) as e:
        raise ValueError(f"path: '{p}/config.json' is not a readable model config ({type(e).__name__}: {e})") from None
    archs = list(cfg.architectures or [])
    causal_arch = any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs) if archs else True
    if cfg.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or not causal_arch:
        raise ValueError(
            f"path: '{p}' holds a {cfg.model_type!r} model ({', '.join(archs) or 'no architecture named'}), "
            "not a causal language model"
        )
    if cfg.model_type not in SUPPORTED_MODEL_TYPES:
        raise ValueError(f"path: '{p}' holds a {cfg.model_type!r} causal LM; the probes support "
                         f"{', '.join(SUPPORTED_MODEL_TYPES)} decoders only (their layers' q/k/v/o projections)")
    _check_weights(p, cfg)
    model = AutoModelForCausalLM.from_pretrained(p, local_files_only=True, use_safetensors=True, dtype=dtype)
    bad = [name for name, w in model.state_dict().items() if w.is_floating_point() and not torch.isfinite(w).all()]
    if bad:  # every probe of such a model would print NaN
        raise ValueError(f"path: '{p}' holds weights that are not finite (NaN or inf) in {len(bad)} tensors, "
                         f"first {bad[0]!r}; refused")
    model.to(device).eval()
    tok = None
    if any((p / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json", "vocab.json")):
        tok = AutoTokenizer.from_pretrained(p, local_files_only=True)
    return model, tok


# Model types whose decoder the probes address (``model.model.layers[i].self_attn.{q,k,v,o}_proj``):
# Llama-style, as SmolLM2 (the bundled model) is; others are refused rather than probed wrongly.
SUPPORTED_MODEL_TYPES = ("llama",)


def _check_weights(p: Path, cfg: Any) -> None:
    """Every parameter and persistent buffer of ``cfg``'s architecture is in ``p/*.safetensors`` with
    its shape, and nothing else is; a weight tied to another (``tie_word_embeddings``) may be absent.

    Else ValueError listing what is missing, unexpected or misshapen: transformers would initialise
    a missing weight at random and only log it, and every probe would then measure a random model.
    The architecture is built on the ``meta`` device (shapes, no memory) and the files are read for
    their headers only.
    """
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM

    stored: dict[str, tuple[int, ...]] = {}
    for f in sorted(p.glob("*.safetensors")):
        try:
            with safe_open(str(f), "pt") as st:
                for k in st.keys():
                    stored[k] = tuple(st.get_slice(k).get_shape())
        except Exception as e:  # a truncated or foreign file
            raise ValueError(f"path: '{f}' is not a readable safetensors file ({type(e).__name__}: {e})") from None
    with torch.device("meta"):
        skeleton = AutoModelForCausalLM.from_config(cfg)
    want = {k: tuple(v.shape) for k, v in skeleton.state_dict().items()}
    tied = getattr(skeleton, "_tied_weights_keys", None) or {}
    tied = set(tied) if not isinstance(tied, dict) else set(tied)
    allowed_absent = tied if getattr(cfg, "tie_word_embeddings", False) else set()
    missing = sorted(k for k in want if k not in stored and k not in allowed_absent)
    unexpected = sorted(k for k in stored if k not in want)
    misshapen = sorted(f"{k} {stored[k]} (the config needs {want[k]})" for k in want if k in stored and stored[k] != want[k])
    problems = []
    for what, keys in (("missing", missing), ("unexpected", unexpected), ("with the wrong shape", misshapen)):
        if keys:
            problems.append(f"{len(keys)} {what}: {', '.join(keys[:8])}{', ...' if len(keys) > 8 else ''}")
    if problems:
        raise ValueError(f"path: the weights in '{p}' do not match its config.json ({cfg.model_type}, "
                         f"{len(want)} tensors): " + "; ".join(problems) + " (nothing is initialised at random)")
    del skeleton


def load_encoder(path: str | os.PathLike, *, dtype: torch.dtype = torch.float32):
    """Load a local encoder (e.g. all-MiniLM-L6-v2, a BertModel) from safetensors, in eval mode."""
    _offline()
    p = Path(path)
    if not (p / "config.json").is_file():
        raise ValueError(f"path: '{p}' is not a Hugging Face model folder (no config.json)")
    from transformers import AutoModel

    return AutoModel.from_pretrained(p, local_files_only=True, use_safetensors=True, dtype=dtype).eval()


def token_blocks(tokenizer, text: str, block_len: int, n_blocks: int, *, offset: int = 0) -> torch.Tensor:
    """Consecutive non-overlapping blocks of token ids from ``text``.

    Returns
    -------
    ids : (n_blocks, block_len) long tensor, starting ``offset`` tokens into the text.
    """
    if int(block_len) < 2 or int(n_blocks) < 1:
        raise ValueError(f"block_len must be >= 2 and n_blocks >= 1, got {block_len}, {n_blocks}")
    need = offset + block_len * n_blocks
    # Tokenise only a prefix long enough (about 8 characters per token at most).
    ids = tokenizer(text[: max(8 * need, 1000)], add_special_tokens=False)["input_ids"]
    if len(ids) < need:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) < need:
        raise ValueError(f"text has {len(ids)} tokens, fewer than the {need} requested")
    return torch.tensor(ids[offset:need], dtype=torch.long).reshape(n_blocks, block_len)


def random_word_text(text: str, n_words: int, *, generator: torch.Generator) -> str:
    """``n_words`` words drawn uniformly (with replacement) from the distinct words of ``text``.

    Examples
    --------
    >>> random_word_text("a b c", 4, generator=torch.Generator().manual_seed(0)).count(" ")
    3
    """
    words = sorted(set(text.split()))
    if not words:
        raise ValueError("text: has no words")
    idx = torch.randint(len(words), (int(n_words),), generator=generator)
    return " ".join(words[i] for i in idx.tolist())


def _check_ids(ids: Any, name: str = "ids") -> torch.Tensor:
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long or ids.ndim != 2 or ids.shape[1] < 2:
        raise ValueError(f"{name} must be a (batch, seq >= 2) long tensor of token ids")
    return ids


def _bar(it, progress: bool, desc: str):
    """``it`` wrapped in a tqdm progress bar when ``progress`` (left off screen otherwise)."""
    if not progress:
        return it
    from tqdm.auto import tqdm

    return tqdm(it, desc=desc, leave=False)


@torch.no_grad()
def perplexity(model, ids: torch.Tensor, *, batch_size: int = 4, progress: bool = False) -> float:
    """exp(mean next-token negative log-likelihood) of ``model`` on ``ids : (blocks, seq)``.

    ``progress`` shows a progress bar over the batches.

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> _ = torch.manual_seed(0)
    >>> m = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
    ...     num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1)).eval()
    >>> 20 < perplexity(m, torch.randint(32, (2, 8))) < 50   # near-uniform over 32 tokens
    True
    """
    ids = _check_ids(ids)
    dev = next(model.parameters()).device
    total, count = 0.0, 0
    for i in _bar(range(0, ids.shape[0], batch_size), progress, "perplexity"):
        b = ids[i : i + batch_size].to(dev)
        logits = model(input_ids=b, use_cache=False).logits[:, :-1].float()
        nll = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), b[:, 1:].reshape(-1), reduction="sum")
        total += float(nll)
        count += b[:, 1:].numel()
    return math.exp(total / count)


def _final_norm(model):
    """The norm a decoder applies after its last layer (Llama ``norm``, GPT-2 ``ln_f``, ...), peft unwrapped."""
    m = model.get_base_model() if hasattr(model, "get_base_model") else model
    inner = getattr(m, "model", None) or getattr(m, "transformer", None) or getattr(m, "gpt_neox", None) or m
    for name in ("norm", "ln_f", "final_layer_norm", "final_layernorm"):
        mod = getattr(inner, name, None)
        if isinstance(mod, torch.nn.Module):
            return mod
    raise ValueError(f"model: found no final norm ({type(inner).__name__} has no norm, ln_f, final_layer_norm "
                     "or final_layernorm), so the residual stream before it cannot be read")


@torch.no_grad()
def perplexity_and_hidden_states(model, ids: torch.Tensor, *, batch_size: int = 4, before_final_norm: bool = False,
                                 progress: bool = False) -> tuple[float, torch.Tensor]:
    """:func:`perplexity` and :func:`hidden_states` from one forward pass per batch."""
    ids = _check_ids(ids)
    dev = next(model.parameters()).device
    outs, total, count = [], 0.0, 0
    raw: list[torch.Tensor] = []
    hook = _final_norm(model).register_forward_pre_hook(lambda mod, args: raw.append(args[0])) if before_final_norm else None
    try:
        for i in _bar(range(0, ids.shape[0], batch_size), progress, "hidden states"):
            b = ids[i : i + batch_size].to(dev)
            raw.clear()
            o = model(input_ids=b, output_hidden_states=True, use_cache=False)
            hs = list(o.hidden_states[1:])
            if before_final_norm:
                if len(raw) != 1:
                    raise ValueError(f"model: its final norm ran {len(raw)} times in one forward pass, expected once")
                hs[-1] = raw[0]
            outs.append(torch.stack([h.float() for h in hs]))
            logits = o.logits[:, :-1].float()
            total += float(torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), b[:, 1:].reshape(-1), reduction="sum"))
            count += b[:, 1:].numel()
    finally:
        if hook is not None:
            hook.remove()
    return math.exp(total / count), torch.cat(outs, dim=1)


def hidden_states(model, ids: torch.Tensor, *, batch_size: int = 4, before_final_norm: bool = False,
                  progress: bool = False) -> torch.Tensor:
    """Hidden states after each decoder layer.

    Parameters
    ----------
    model : a causal LM (peft-wrapped or not).
    ids : (blocks, seq) long token ids.
    batch_size : blocks per forward pass.
    before_final_norm : bool
        Hugging Face returns the last layer's state after the model's final norm (``norm``,
        ``ln_f``); True replaces it by the residual stream entering that norm (read with a forward
        pre-hook), so every entry is a raw residual-stream state, as paper A's drift (eq. 22) needs.
    progress : show a progress bar over the batches.

    Returns
    -------
    H : (L, blocks, seq, hidden) float tensor; ``H[l-1]`` is the output of layer ``l`` (the
        embeddings are dropped).

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> _ = torch.manual_seed(0)
    >>> m = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
    ...     num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1)).eval()
    >>> ids = torch.randint(32, (1, 6))
    >>> raw, normed = hidden_states(m, ids, before_final_norm=True), hidden_states(m, ids)
    >>> raw.shape, bool(torch.equal(raw[0], normed[0])), bool(torch.allclose(m.model.norm(raw[-1]), normed[-1]))
    (torch.Size([2, 1, 6, 16]), True, True)
    """
    return perplexity_and_hidden_states(model, ids, batch_size=batch_size, before_final_norm=before_final_norm,
                                        progress=progress)[1]


# ---------------------------------------------------------------- LoRA


def add_lora(model, rank: int, *, targets: Sequence[str] = ("v_proj",), alpha: float | None = None):
    """Wrap ``model`` with peft LoRA of rank ``rank`` on the modules named ``targets``.

    Default initialisation (peft: A random, B = 0), so the wrapped model computes the base
    function until trained. ``alpha`` defaults to ``rank`` (scaling alpha / r = 1), so
    ``Delta W = B A`` exactly. The base weights are frozen.
    """
    if int(rank) < 1:
        raise ValueError(f"rank must be >= 1, got {rank}")
    if not targets:
        raise ValueError("targets must name at least one module (e.g. 'v_proj')")
    from peft import LoraConfig, get_peft_model

    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    missing = [t for t in targets if t not in names]
    if missing:
        raise ValueError(f"targets {missing} are not module names of this model (it has e.g. {sorted(names)[:12]})")
    cfg = LoraConfig(r=int(rank), lora_alpha=float(alpha if alpha is not None else rank), lora_dropout=0.0,
                     target_modules=list(targets), bias="none")
    return get_peft_model(model, cfg)


def lora_layers(model, target: str = "v_proj") -> list:
    """The peft LoRA layers wrapping modules named ``target``, in depth order."""
    out = []
    for name, mod in model.named_modules():
        if name.rsplit(".", 1)[-1] == target and hasattr(mod, "lora_A"):
            out.append(mod)
    if not out:
        raise ValueError(f"target: no LoRA layer wraps a module named {target!r}")
    return out


def _factors(layer) -> tuple[torch.Tensor, torch.Tensor, float]:
    key = next(iter(layer.lora_A.keys()))
    return layer.lora_A[key].weight, layer.lora_B[key].weight, float(layer.scaling[key])


def lora_delta(layer) -> torch.Tensor:
    """``Delta W = scaling * B A : (d_out, d_in)`` of one peft LoRA layer (float64 copy)."""
    A, B, s = _factors(layer)
    return s * (B.detach().double() @ A.detach().double())


@torch.no_grad()
def set_random_adapter(model, norm: float, *, generator: torch.Generator, target: str = "v_proj") -> None:
    """Draw every LoRA factor of ``target`` as in Assumption 4.1, each layer at Frobenius norm ``norm``.

    Columns of ``B`` and rows of ``A`` are i.i.d. N(0, I/d) (``u_a, v_a`` of eq. 19, ``s_a`` equal),
    independently per layer; both factors are then scaled by the same factor so that
    ``||Delta V_l||_F = norm`` for every layer ``l``. ``norm = 0`` gives ``Delta V = 0``.
    """
    norm = check_positive(norm, "norm", strict=False)
    check_generator(generator, torch.device("cpu"))
    for layer in lora_layers(model, target):
        A, B, s = _factors(layer)
        r, d_in = A.shape
        d_out = B.shape[0]
        a = torch.randn(r, d_in, generator=generator, dtype=torch.float64) / math.sqrt(d_in)
        b = torch.randn(d_out, r, generator=generator, dtype=torch.float64) / math.sqrt(d_out)
        c = math.sqrt(norm / (s * float(torch.linalg.matrix_norm(b @ a)))) if norm > 0 else 0.0
        A.copy_((c * a).to(A.dtype))
        B.copy_((c * b).to(B.dtype))


def update_norm(model, target: str = "v_proj") -> torch.Tensor:
    """``||Delta W_l||_F`` for each LoRA layer of ``target`` : (L,) float64."""
    return torch.stack([torch.linalg.matrix_norm(lora_delta(l)) for l in lora_layers(model, target)])


def _row_basis(layer) -> torch.Tensor:
    """Orthonormal basis (d_in, r) of Row(Delta W); Row(A) while B = 0 (as in App. E.3)."""
    A, B, s = _factors(layer)
    r = A.shape[0]
    M = lora_delta(layer) if float(B.detach().abs().max()) > 0 else A.detach().double()
    _, _, Vh = torch.linalg.svd(M, full_matrices=False)
    return Vh[:r].T


def alignment(model, target: str = "v_proj") -> torch.Tensor:
    """Align_l = (d / r) |Pi_Row(Delta V_l) u1_l|^2 per layer (paper A, Sec. 4.1.2) : (L,) float64.

    ``u1_l`` is the top right singular vector of the frozen base weight ``V_l : (d_out, d_in)``,
    ``d = d_in``, ``r`` the LoRA rank. A uniformly random r-dimensional subspace scores 1 on average.
    """
    out = []
    for layer in lora_layers(model, target):
        W = layer.base_layer.weight.detach().double()
        u1 = torch.linalg.svd(W, full_matrices=False)[2][0]
        Q = _row_basis(layer)
        d, r = Q.shape
        out.append(d / r * float(((Q.T @ u1) ** 2).sum()))
    return torch.tensor(out, dtype=torch.float64)


# Frames per batch in :func:`random_subspace_alignment` (a multiple of 16: torch draws normals 16 at a time, so
# the batches draw exactly what one call would).
_SUBSPACE_CHUNK = 256


def random_subspace_alignment(d: int, r: int, samples: int, *, generator: torch.Generator) -> torch.Tensor:
    """Align of a fixed unit vector against ``samples`` Haar-random r-dim subspaces of R^d : (samples,).

    The mean is 1 exactly (E|P u|^2 = r / d for a uniformly random subspace). The frames are drawn
    :data:`_SUBSPACE_CHUNK` at a time, so memory stays at a few tens of MB even for d = 576, r = 64
    (4,000 frames at once would take 1.2 GB); the draws are those of one call for all samples.

    Examples
    --------
    >>> a = random_subspace_alignment(50, 3, 4000, generator=torch.Generator().manual_seed(0))
    >>> abs(float(a.mean()) - 1) < 0.1
    True
    """
    if not (1 <= int(r) <= int(d)):
        raise ValueError(f"need 1 <= r <= d, got r = {r}, d = {d}")
    if int(samples) < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    check_generator(generator, torch.device("cpu"))
    out = []
    for start in range(0, int(samples), _SUBSPACE_CHUNK):
        n = min(_SUBSPACE_CHUNK, int(samples) - start)
        G = torch.randn(n, int(d), int(r), generator=generator, dtype=torch.float64)
        Q = torch.linalg.qr(G).Q  # Haar-random orthonormal frames
        out.append(d / r * (Q[:, 0, :] ** 2).sum(-1))  # u = e_1 by rotation invariance
    return torch.cat(out)


def relative_drift(H_new: torch.Tensor, H_base: torch.Tensor, *, skip_first: int = 1) -> torch.Tensor:
    """Delta_l = ||H_l^new - H_l^base||_F / ||H_l^base||_F per layer (paper A eq. 22), positions
    ``>= skip_first`` only.

    .. math::

        \\Delta_\\ell = \\frac{\\| H^{\\mathrm{new}}_\\ell - H^{\\mathrm{base}}_\\ell \\|_F}{\\| H^{\\mathrm{base}}_\\ell \\|_F}

    Parameters
    ----------
    H_new, H_base : (L, blocks, seq, hidden) hidden states per layer (:func:`hidden_states`).
    skip_first : int
        Leading positions left out. Position 0 of a Llama model is an attention sink whose state has
        a norm hundreds of times the others': kept in, it makes the denominator and the drift measure
        that one token (as in :func:`mean_token_cosine`).

    Returns
    -------
    (L,) float64

    Examples
    --------
    >>> H = torch.randn(3, 2, 4, 5, generator=torch.Generator().manual_seed(0))
    >>> relative_drift(H, H).tolist()
    [0.0, 0.0, 0.0]
    >>> G = H.clone(); G[:, :, 0] *= 100  # only the sink position moves
    >>> relative_drift(G, H).tolist(), bool(relative_drift(G, H, skip_first=0).min() > 1)
    ([0.0, 0.0, 0.0], True)
    """
    if H_new.shape != H_base.shape:
        raise ValueError(f"H_new and H_base must have the same shape, got {tuple(H_new.shape)} and {tuple(H_base.shape)}")
    if H_base.ndim != 4:
        raise ValueError(f"H_new and H_base must be (L, blocks, seq, hidden), got {H_base.ndim} dimensions")
    if not 0 <= int(skip_first) < H_base.shape[2]:
        raise ValueError(f"skip_first must be in [0, seq = {H_base.shape[2]}), got {skip_first}")
    a = H_new[:, :, int(skip_first):].double().flatten(1)
    b = H_base[:, :, int(skip_first):].double().flatten(1)
    return (a - b).norm(dim=1) / b.norm(dim=1)


def bifurcation_depth(drift: torch.Tensor, tau: float = 0.2) -> int:
    """b_tau = first layer l (1-based) with Delta_l > tau; ``L + 1`` when no layer exceeds tau.

    Paper A (eq. 23) sets ``b_tau = L`` when none does, which cannot tell "no layer" from "only the
    last layer"; here ``L + 1`` means "none", and ``min(b, L)`` is the paper's convention.

    Parameters
    ----------
    drift : (L,) relative drift per layer (:func:`relative_drift`).
    tau : float > 0, the tolerance.

    Returns
    -------
    int in 1..L+1.

    Examples
    --------
    >>> bifurcation_depth(torch.tensor([0.0, 0.1, 0.3, 0.5]), 0.2), bifurcation_depth(torch.zeros(4))
    (3, 5)
    >>> bifurcation_depth(torch.tensor([0.0, 0.0, 0.0, 0.5]))  # only the last layer: L, not "none"
    4
    """
    tau = check_positive(tau, "tau")
    drift = torch.as_tensor(drift)
    if drift.ndim != 1 or drift.numel() < 1:
        raise ValueError(f"drift must be a (L,) tensor with L >= 1, got shape {tuple(drift.shape)}")
    above = (drift > tau).nonzero()
    return int(above[0, 0]) + 1 if len(above) else int(drift.shape[0]) + 1


def train_lora(
    model,
    train_ids: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    generator: torch.Generator,
    evaluate: Callable[[Any, int], dict[str, Any]],
    eval_every: int | None = None,
    eval_steps: Sequence[int] | None = None,
    schedule: str = "constant",
    autocast_bf16: bool = False,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """Train the LoRA parameters of a peft ``model`` with AdamW on next-token loss.

    Parameters
    ----------
    model : a peft model (:func:`add_lora`); only its trainable parameters move.
    train_ids : (blocks, seq) long; each step draws ``batch_size`` blocks with ``generator``.
    steps, batch_size, lr : AdamW steps (no weight decay), blocks per step, learning rate.
    evaluate : ``evaluate(model, step) -> dict``, called in eval mode without gradients at the
        checkpoints: step 0, then every ``eval_every`` steps and at the end, or exactly the steps
        ``eval_steps`` (each in 0..steps).
    schedule : ``"constant"`` learning rate, or ``"linear"``: decayed linearly from ``lr`` at the
        first step to ``lr / steps`` at the last (the Hugging Face Trainer's default, no warm-up).
    progress : a progress bar over the steps.

    Returns
    -------
    list of ``{"step": s, **evaluate(model, s)}``, one per checkpoint.

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> _ = torch.manual_seed(0)
    >>> m = add_lora(LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
    ...     num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1)), 2)
    >>> h = train_lora(m, torch.randint(32, (4, 8)), steps=3, batch_size=2, lr=1e-2, eval_steps=(0, 3),
    ...                generator=torch.Generator().manual_seed(0), evaluate=lambda m, s: {"norm": float(update_norm(m)[0])})
    >>> [x["step"] for x in h], h[0]["norm"] == 0 < h[1]["norm"]
    ([0, 3], True)
    """
    _check_ids(train_ids, "train_ids")
    check_generator(generator, torch.device("cpu"))
    steps = int(steps)
    if steps < 0 or int(batch_size) < 1:
        raise ValueError(f"steps must be >= 0 and batch_size >= 1, got {steps}, {batch_size}")
    if (eval_every is None) == (eval_steps is None):
        raise ValueError("give exactly one of eval_every and eval_steps")
    if eval_steps is not None:
        checkpoints = sorted({int(s) for s in eval_steps})
        if not checkpoints or checkpoints[0] < 0 or checkpoints[-1] > steps:
            raise ValueError(f"eval_steps must lie in 0..steps = {steps}, got {tuple(eval_steps)}")
    else:
        if int(eval_every) < 1:
            raise ValueError(f"eval_every must be >= 1, got {eval_every}")
        checkpoints = sorted({0, steps, *range(int(eval_every), steps + 1, int(eval_every))})
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("model has no trainable parameters (wrap it with add_lora first)")
    if schedule not in ("constant", "linear"):
        raise ValueError(f"schedule must be 'constant' or 'linear', got {schedule!r}")
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: 1.0 - k / steps if schedule == "linear" else 1.0)
    dev = params[0].device
    history = []
    wanted = set(checkpoints)

    def _eval(step: int) -> None:
        model.eval()
        with torch.no_grad():
            history.append({"step": step, **evaluate(model, step)})
        model.train()

    from tqdm.auto import tqdm

    if 0 in wanted:
        _eval(0)
    model.train()
    for step in tqdm(range(1, steps + 1), disable=not progress, desc="LoRA steps", leave=False):
        idx = torch.randint(train_ids.shape[0], (batch_size,), generator=generator)
        b = train_ids[idx].to(dev)
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=autocast_bf16):
            logits = model(input_ids=b, use_cache=False).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), b[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if step in wanted:
            _eval(step)
    model.eval()
    return history


# ---------------------------------------------------------------- layer repetition


def repeat_layers(model, times: int = 2):
    """Make the decoder run its layer stack ``times`` times in a row (weights shared, in place).

    Mirrors paper A, App. E.5 (Llama-2's 32 layers repeated to 64). Returns ``model``.
    """
    if int(times) < 1:
        raise ValueError(f"times must be >= 1, got {times}")
    inner = model.model if hasattr(model, "model") else model
    if not hasattr(inner, "layers"):
        raise ValueError("model: expected a decoder with a `layers` ModuleList (Llama-style)")
    base = list(inner.layers)
    inner.layers = torch.nn.ModuleList(base * int(times))
    model.config.num_hidden_layers = len(inner.layers)
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = list(model.config.layer_types) * int(times)
    return model


def mean_token_cosine(H: torch.Tensor, *, skip_first: int = 1) -> torch.Tensor:
    """Mean pairwise cosine similarity between distinct tokens, per layer.

    Parameters
    ----------
    H : (L, blocks, seq, hidden)
    skip_first : int
        Leading positions left out (position 0 is an attention sink with a huge norm in Llama models).

    Returns
    -------
    (L,) float64, averaged over blocks.

    Examples
    --------
    >>> [round(c, 12) for c in mean_token_cosine(torch.ones(1, 1, 4, 3), skip_first=0).tolist()]
    [1.0]
    """
    X = torch.nn.functional.normalize(H[:, :, skip_first:].double(), dim=-1)
    n = X.shape[2]
    if n < 2:
        raise ValueError("H must have at least 2 tokens after skip_first")
    G = X @ X.transpose(-1, -2)
    off = (G.sum((-1, -2)) - G.diagonal(dim1=-2, dim2=-1).sum(-1)) / (n * (n - 1))
    return off.mean(-1)
