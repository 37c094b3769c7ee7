"""Spectra of attention weights (paper A, Sec. 3.2, Fig. 7, App. E.4) on any loaded transformer.

A layer's attention weights are read as ``(W_Q, W_K, W_V, W_O)`` in ``(out, in)`` form, whatever the
module layout (:func:`attention_weights`), and turned into the matrices the theory talks about:

- per query head ``h`` the value matrix ``V_h = W_V[kv(h)] W_O[:, h] : (hd, hd)``, whose eigenvalues
  are the nonzero ones of the head's residual-stream map ``W_O[:, h] W_V[kv(h)] : (d, d)``;
- the query-key form ``A_h = K_h^T Q_h : (d, d)``, ``<Q_h x, K_h y> = <A_h x, y>``, and the layer sum
  ``A = sum_h A_h``, whose rank the key/value layout caps (:func:`qk_rank_cap`);
- the eigengap of Prop. 3.3 / Assumption 4.5 per head (:func:`eigengap`), with the same statistic
  for Gaussian heads of the same shape as a reference (:func:`gaussian_head_eigengaps`);
- for weights stored on a 4-bit grid (the bundled SmolLM2 is dequantised from GGUF Q4_1), the
  rounding step (:func:`quantization_step`) and what the rounding does to the spectra: the noise
  floor below which singular values of ``A`` are not resolved (:func:`qk_noise_floor`) and the
  spread of the eigengaps under a fresh draw of rounding noise (:func:`resampled_eigengaps`).

Supported layouts: separate ``q_proj``/``k_proj``/``v_proj``/``o_proj`` (Llama, Mistral, Qwen2,
Qwen3 with its per-head ``q_norm``/``k_norm`` weights folded in, SmolLM), BERT's
``attention.self`` with ``attention.output.dense``, ALBERT's shared attention, GPT-2's fused
``c_attn`` and GPT-NeoX's fused ``query_key_value``. Anything else, adapters not merged, or a
query/key norm that does not fold into a bilinear form, is refused with a ValueError naming the
module. Everything is float64 on the CPU; transformers is not imported.
"""
from __future__ import annotations

import torch

from .._validate import check_generator

__all__ = [
    "attention_weights",
    "value_head_matrices",
    "qk_head_matrices",
    "qk_singular_values",
    "qk_rank_cap",
    "numerical_rank",
    "eigengap",
    "gaussian_head_eigengaps",
    "quantization_step",
    "qk_noise_floor",
    "resampled_eigengaps",
]

# Per-head query / key norms whose effect is a weight on each head coordinate (``w * x / rms(x)``):
# the weight folds into Q_h, K_h; the per-token 1 / rms is a positive scalar that rescales the form.
_FOLDABLE_QK_NORMS = ("Qwen3RMSNorm", "Qwen3MoeRMSNorm")
_FUSED = ("query_key_value", "c_attn", "qkv_proj", "Wqkv", "W_pack")
_SUPPORTED = ("q_proj/k_proj/v_proj/o_proj (Llama, Mistral, Qwen, SmolLM), BERT attention.self, ALBERT attention, "
              "GPT-2 c_attn, GPT-NeoX query_key_value")


def _lin(layer, name: str = "") -> torch.Tensor:
    """A projection's weight as ``(out, in)`` float64 (GPT-2's Conv1D stores ``(in, out)``)."""
    if hasattr(layer, "lora_A") or hasattr(layer, "base_layer"):
        raise ValueError(f"model: {name or type(layer).__name__} carries adapters (peft); merge them first "
                         "(merge_and_unload()) so that the spectra are those of the weights the model computes with")
    W = getattr(layer, "weight", None)
    if not isinstance(W, torch.Tensor) or W.ndim != 2:
        raise ValueError(f"model: {name or type(layer).__name__} has no 2-d weight; not a linear projection")
    W = W.detach().double().cpu()
    return W.T if type(layer).__name__ == "Conv1D" else W


def _qk_norm_weight(mod, name: str, hd: int, where: str = "") -> torch.Tensor | None:
    norm = getattr(mod, name, None)
    if norm is None:
        return None
    kind = type(norm).__name__
    w = getattr(norm, "weight", None)
    if kind not in _FOLDABLE_QK_NORMS or w is None or tuple(w.shape) != (hd,):
        raise ValueError(f"model: attention {where}.{name} of type {kind} is not supported: only per-head "
                         f"{' / '.join(_FOLDABLE_QK_NORMS)} (weight of shape (head_dim,)) fold into the query-key form")
    return w.detach().double().cpu()


def _head_layout(model) -> tuple[int, int, int]:
    """``(heads, kv_heads, head_dim)`` from the model's config."""
    cfg = getattr(model, "config", None)
    if cfg is None or getattr(cfg, "num_attention_heads", None) is None:
        raise ValueError("model: needs a transformers config with num_attention_heads")
    h = int(cfg.num_attention_heads)
    kv = int(getattr(cfg, "num_key_value_heads", None) or h)
    hd = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // h)
    if h % kv:
        raise ValueError(f"model: {h} query heads cannot share {kv} key/value heads evenly")
    return h, kv, hd


def _check_shapes(name: str, Wq, Wk, Wv, Wo, h: int, kv: int, hd: int) -> None:
    d = Wq.shape[1]
    want = {"W_Q": (h * hd, d), "W_K": (kv * hd, d), "W_V": (kv * hd, d), "W_O": (d, h * hd)}
    for key, W in zip(want, (Wq, Wk, Wv, Wo)):
        if tuple(W.shape) != want[key]:
            raise ValueError(f"model: {name}: {key} has shape {tuple(W.shape)}, expected {want[key]} from the config "
                             f"({h} heads, {kv} key/value heads of size {hd}, d = {d})")


def _attention_weights(model) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
    h, kv, hd = _head_layout(model)
    named = dict(model.named_modules())
    out = []
    for name, mod in named.items():
        kind = type(mod).__name__
        if all(hasattr(mod, a) for a in ("q_proj", "k_proj", "v_proj", "o_proj")):
            Wq, Wk, Wv, Wo = (_lin(getattr(mod, a), f"{name}.{a}") for a in ("q_proj", "k_proj", "v_proj", "o_proj"))
            others = [n for n, c in mod.named_children()
                      if "norm" in type(c).__name__.lower() and n not in ("q_norm", "k_norm")]
            if others:
                kind_o = type(getattr(mod, others[0])).__name__
                raise ValueError(f"model: {name}.{others[0]} ({kind_o}) is a norm inside the "
                                 "attention that does not fold into the query-key form; not supported")
            gq, gk = _qk_norm_weight(mod, "q_norm", hd, name), _qk_norm_weight(mod, "k_norm", hd, name)
            if gq is not None:
                Wq = (Wq.reshape(h, hd, -1) * gq[:, None]).reshape(h * hd, -1)
            if gk is not None:
                Wk = (Wk.reshape(kv, hd, -1) * gk[:, None]).reshape(kv * hd, -1)
        elif name.endswith("attention.self") and all(hasattr(mod, a) for a in ("query", "key", "value")):
            Wq, Wk, Wv = (_lin(getattr(mod, a), f"{name}.{a}") for a in ("query", "key", "value"))
            Wo = _lin(named[name[: -len("self")] + "output.dense"], name[: -len("self")] + "output.dense")
        elif kind.startswith("Albert") and all(hasattr(mod, a) for a in ("query", "key", "value", "dense")):
            Wq, Wk, Wv, Wo = (_lin(getattr(mod, a), f"{name}.{a}") for a in ("query", "key", "value", "dense"))
        elif hasattr(mod, "c_attn") and kind.startswith("GPT2"):
            if getattr(mod, "is_cross_attention", False):
                raise ValueError(f"model: {name} is a cross-attention block; only self-attention is supported")
            Wq, Wk, Wv = _lin(mod.c_attn, f"{name}.c_attn").split(h * hd, dim=0)  # output = [q | k | v]
            Wo = _lin(mod.c_proj, f"{name}.c_proj")
        elif hasattr(mod, "query_key_value") and kind.startswith("GPTNeoX"):
            W = _lin(mod.query_key_value, f"{name}.query_key_value")
            if W.shape[0] != 3 * h * hd:
                raise ValueError(f"model: {name}.query_key_value has {W.shape[0]} outputs, expected 3 x {h} x {hd}")
            W = W.reshape(h, 3, hd, -1)  # output viewed as (heads, 3 * hd): q, k, v per head
            Wq, Wk, Wv = (W[:, i].reshape(h * hd, -1) for i in range(3))
            Wo = _lin(mod.dense, f"{name}.dense")
        elif any(hasattr(mod, a) for a in _FUSED):
            fused = next(a for a in _FUSED if hasattr(mod, a))
            raise ValueError(f"model: the fused query-key-value layout of {name} ({kind}, {fused}) is not supported; "
                             f"supported: {_SUPPORTED}")
        else:
            continue
        _check_shapes(name, Wq, Wk, Wv, Wo, h, kv, hd)
        out.append((Wq, Wk, Wv, Wo))
    if not out:
        raise ValueError(f"model: found no self-attention modules of a supported layout ({_SUPPORTED})")
    return out


def attention_weights(model) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Per attention module, in depth order, ``(W_Q, W_K, W_V, W_O)`` as ``(out, in)`` float64 CPU matrices.

    Parameters
    ----------
    model : torch.nn.Module
        A transformers model (its ``config`` gives the heads, key/value heads and head size).

    Returns
    -------
    list of (W_Q : (heads * hd, d), W_K : (kv * hd, d), W_V : (kv * hd, d), W_O : (d, heads * hd))
        Rows of ``W_Q``, ``W_K``, ``W_V`` and columns of ``W_O`` grouped by head. Biases are left out:
        the forms below are the bilinear parts. ALBERT shares one attention module across its layers
        and gives one entry.

    Raises
    ------
    ValueError
        For a layout other than those of the module docstring, naming the module: fused layouts
        other than GPT-2's and GPT-NeoX's, query/key norms other than Qwen3's per-head RMS norms,
        projections wrapped by peft adapters, shapes that contradict the config.

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> m = LlamaForCausalLM(LlamaConfig(vocab_size=16, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
    ...                                  num_attention_heads=4, num_key_value_heads=2))
    >>> [tuple(W.shape) for W in attention_weights(m)[0]]
    [(32, 32), (16, 32), (16, 32), (32, 32)]
    >>> attention_weights(torch.nn.Linear(2, 2))
    Traceback (most recent call last):
    ...
    ValueError: model: needs a transformers config with num_attention_heads
    """
    return _attention_weights(model)


def value_head_matrices(model) -> torch.Tensor:
    """Per-query-head value matrices ``V_h = W_V[kv(h)] W_O[:, h]``.

    ``W_O[:, h] W_V[kv(h)]`` is the head's output-value map on the residual stream (d x d, rank <= hd);
    its nonzero eigenvalues are those of the (hd x hd) ``V_h`` returned here
    (:math:`\\operatorname{eig}(AB) \\setminus \\{0\\} = \\operatorname{eig}(BA) \\setminus \\{0\\}`). With grouped
    key/value heads (SmolLM2: 9 query, 3 kv heads), query head ``h`` reads kv head ``h // (heads / kv)`` as in
    transformers' ``repeat_kv``.

    Parameters
    ----------
    model : torch.nn.Module
        A model of a layout :func:`attention_weights` reads.

    Returns
    -------
    V : (layers, heads, hd, hd) float64

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> m = LlamaForCausalLM(LlamaConfig(vocab_size=16, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
    ...                                  num_attention_heads=4, num_key_value_heads=2))
    >>> value_head_matrices(m).shape
    torch.Size([2, 4, 8, 8])
    """
    h, kv, hd = _head_layout(model)
    rep = h // kv
    return torch.stack([
        torch.stack([Wv[(j // rep) * hd : (j // rep + 1) * hd] @ Wo[:, j * hd : (j + 1) * hd] for j in range(h)])
        for _, _, Wv, Wo in _attention_weights(model)])


def qk_head_matrices(model) -> torch.Tensor:
    """Query-key forms ``A_h = K_h^T Q_h``, so that :math:`\\langle Q_h x, K_h y\\rangle = \\langle A_h x, y\\rangle`.

    Rotary position embeddings (Llama, Qwen, GPT-NeoX) rotate Q and K by the relative position; ``A_h``
    is the bilinear form at relative position 0. Grouped kv heads are mapped as in
    :func:`value_head_matrices`. Per-head query / key RMS norms (Qwen3's ``q_norm``, ``k_norm``) compute
    ``g * q / rms(q)``: their weights ``g`` are folded into ``Q_h`` and ``K_h``, and the per-token factor
    ``1 / (rms(q) rms(k))``, positive, is left out: it rescales each logit without changing the rank or
    the singular directions of the form. Biases are left out (the bilinear part).

    Parameters
    ----------
    model : torch.nn.Module
        A model of a layout :func:`attention_weights` reads.

    Returns
    -------
    A : (layers, heads, d, d) float64

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> m = LlamaForCausalLM(LlamaConfig(vocab_size=16, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
    ...                                  num_attention_heads=4, num_key_value_heads=2))
    >>> A = qk_head_matrices(m)
    >>> A.shape, numerical_rank(A[0, 0]).item()   # rank <= head size 8
    (torch.Size([2, 4, 32, 32]), 8)
    """
    h, kv, hd = _head_layout(model)
    rep = h // kv
    return torch.stack([
        torch.stack([Wk[(j // rep) * hd : (j // rep + 1) * hd].T @ Wq[j * hd : (j + 1) * hd] for j in range(h)])
        for Wq, Wk, _, _ in _attention_weights(model)])


def _qk_layer_factors(Wq: torch.Tensor, Wk: torch.Tensor, h: int, kv: int,
                      hd: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``A = sum_h A_h = K^T Qg`` with ``K = W_K : (kv * hd, d)`` and ``Qg : (kv * hd, d)`` the query rows summed
    over the heads of each key/value group."""
    return Wk, Wq.reshape(kv, h // kv, hd, -1).sum(1).reshape(kv * hd, -1)


def qk_singular_values(model) -> tuple[torch.Tensor, torch.Tensor]:
    """Singular values of ``A_h = K_h^T Q_h`` per head and of the layer sum ``A = sum_h A_h``.

    With ``K_h^T = U_k R_k`` and ``Q_h^T = U_q R_q`` (thin QR, ``(d, hd)`` factors), ``A_h =
    U_k (R_k R_q^T) U_q^T`` has the singular values of the small ``R_k R_q^T : (hd, hd)``: no d x d SVD.
    ``A_h`` as in :func:`qk_head_matrices` (query / key norm weights folded in).

    Parameters
    ----------
    model : torch.nn.Module
        A model of a layout :func:`attention_weights` reads.

    Returns
    -------
    (per_head : (layers, heads, hd), per_layer : (layers, d)) float64, descending.

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> m = LlamaForCausalLM(LlamaConfig(vocab_size=16, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
    ...                                  num_attention_heads=4, num_key_value_heads=2))
    >>> s_head, s_layer = qk_singular_values(m)
    >>> s_head.shape, s_layer.shape, int((s_layer[0] > 1e-9 * s_layer[0, 0]).sum())   # capped at 2 x 8
    (torch.Size([2, 4, 8]), torch.Size([2, 32]), 16)
    """
    h, kv, hd = _head_layout(model)
    rep = h // kv
    heads, layers = [], []
    for Wq, Wk, _, _ in _attention_weights(model):
        K, Qg = _qk_layer_factors(Wq, Wk, h, kv, hd)
        layers.append(torch.linalg.svdvals(K.T @ Qg))
        Wk = Wk.reshape(kv, hd, -1).repeat_interleave(rep, 0)  # (h, hd, d): kv head of each query head
        Wq = Wq.reshape(h, hd, -1)
        Rk = torch.linalg.qr(Wk.transpose(1, 2)).R
        Rq = torch.linalg.qr(Wq.transpose(1, 2)).R
        heads.append(torch.linalg.svdvals(Rk @ Rq.transpose(1, 2)))
    return torch.stack(heads), torch.stack(layers)


def qk_rank_cap(model) -> tuple[int, int]:
    """The ranks the architecture allows: ``(per head, per layer sum)``.

    .. math::

        \\operatorname{rank} A_h \\le \\min(h_d, d), \\qquad
        \\operatorname{rank} \\sum_h A_h = \\operatorname{rank} K^\\top \\tilde Q \\le \\min(n_{kv} h_d, d),

    since the heads sharing key/value head ``g`` add up to ``K_g^T (sum_{h in g} Q_h)``, so the layer sum
    is one product through ``n_kv * hd`` dimensions (``K : (n_kv hd, d)``, ``Q~`` the group-summed queries).
    SmolLM2: ``hd = 64``, 3 key/value heads, ``d = 576``: 64 and 192. Without grouping (BERT,
    Llama-2-7B) the layer cap is ``min(heads * hd, d) = d``.

    Parameters
    ----------
    model : torch.nn.Module
        A model of a layout :func:`attention_weights` reads.

    Returns
    -------
    (int, int)

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> m = LlamaForCausalLM(LlamaConfig(vocab_size=16, hidden_size=32, intermediate_size=32, num_hidden_layers=1,
    ...                                  num_attention_heads=4, num_key_value_heads=2))
    >>> qk_rank_cap(m)
    (8, 16)
    """
    h, kv, hd = _head_layout(model)
    d = int(_attention_weights(model)[0][0].shape[1])
    return min(hd, d), min(kv * hd, d)


def numerical_rank(M: torch.Tensor, rtol: float = 1e-3) -> torch.Tensor:
    """Number of singular values above ``rtol * sigma_max`` for each matrix in ``M : (..., m, n)``.

    Parameters
    ----------
    M : (..., m, n) tensor
    rtol : float
        Threshold relative to each matrix's largest singular value.

    Returns
    -------
    (...) long tensor

    Examples
    --------
    >>> numerical_rank(torch.diag(torch.tensor([1.0, 0.5, 1e-6]))).item()
    2
    """
    s = torch.linalg.svdvals(M)
    return (s > rtol * s[..., :1]).sum(-1)


def _gap_of(ev: torch.Tensor) -> torch.Tensor:
    mod = ev.abs()
    top = mod.topk(2, dim=-1)
    lead = ev.gather(-1, top.indices[..., :1]).squeeze(-1)
    return (lead.real - top.values[..., 1]) / top.values[..., 0]


def eigengap(V: torch.Tensor) -> torch.Tensor:
    """Relative dominance gap of each matrix: Assumption 4.5's ``gap = lambda_1 - |lambda_2|`` over ``|lambda_1|``.

    With the eigenvalues ordered by modulus, :math:`|\\lambda_{(1)}| \\ge |\\lambda_{(2)}| \\ge \\dots`,

    .. math::

        g(V) = \\frac{\\operatorname{Re}\\lambda_{(1)} - |\\lambda_{(2)}|}{|\\lambda_{(1)}|} \\in [-2, 1].

    ``g > 0`` exactly when the leading eigenvalue is real, positive and strictly dominant (a complex
    leading pair gives ``Re lambda - |lambda| <= 0``, a negative one ``g <= -1``). For a symmetric positive
    semi-definite ``V`` it is Prop. 3.3's ``(lambda_1 - lambda_2) / lambda_1``.

    Parameters
    ----------
    V : (..., n, n) real tensor, n >= 2

    Returns
    -------
    (...) float tensor (nan for a zero matrix)

    Examples
    --------
    >>> eigengap(torch.diag(torch.tensor([3.0, 1.0, -2.0], dtype=torch.float64))).item()   # (3 - 2) / 3
    0.3333333333333333
    >>> import math
    >>> c, s = math.cos(0.3), math.sin(0.3)   # a rotation by 0.3 on top: g = cos 0.3 - 1
    >>> round(eigengap(torch.tensor([[c, -s, 0], [s, c, 0], [0, 0, 0.5]], dtype=torch.float64)).item(), 6)
    -0.044664
    """
    if not isinstance(V, torch.Tensor) or V.ndim < 2 or V.shape[-1] != V.shape[-2] or V.shape[-1] < 2:
        raise ValueError(f"V must be a (..., n, n) tensor with n >= 2, got {tuple(getattr(V, 'shape', ()))}")
    return _gap_of(torch.linalg.eigvals(V))


def gaussian_head_eigengaps(head_dim: int, d: int, samples: int, *, generator: torch.Generator,
                            chunk: int = 128) -> torch.Tensor:
    """:func:`eigengap` of ``samples`` random heads ``V = G_V G_O`` with i.i.d. Gaussian ``G_V : (hd, d)``,
    ``G_O : (d, hd)``: what an untrained head of the same shape gives (the scale does not matter).

    Parameters
    ----------
    head_dim, d : int
        The head size and the model width, ``1 < head_dim <= d``.
    samples : int
        Number of random heads.
    generator : torch.Generator
        CPU generator the factors are drawn from.
    chunk : int
        Heads drawn at a time (memory ``2 * chunk * hd * d`` doubles).

    Returns
    -------
    (samples,) float64

    Examples
    --------
    >>> g = gaussian_head_eigengaps(8, 32, 2000, generator=torch.Generator().manual_seed(0))
    >>> 0.15 < float((g > 0).double().mean()) < 0.45   # a real, positive, dominant top eigenvalue is not rare
    True
    """
    head_dim, d, samples = int(head_dim), int(d), int(samples)
    if not (1 < head_dim <= d) or samples < 1:
        raise ValueError(f"need 1 < head_dim <= d and samples >= 1, "
                         f"got head_dim = {head_dim}, d = {d}, samples = {samples}")
    check_generator(generator, torch.device("cpu"))
    out = []
    for start in range(0, samples, int(chunk)):
        b = min(int(chunk), samples - start)
        Gv = torch.randn(b, head_dim, d, generator=generator, dtype=torch.float64)
        Go = torch.randn(b, d, head_dim, generator=generator, dtype=torch.float64)
        out.append(eigengap(Gv @ Go))
    return torch.cat(out)


def quantization_step(W: torch.Tensor, *, block: int = 32, levels: int = 16, rtol: float = 1e-3) -> torch.Tensor | None:
    """The rounding step of each entry of a weight stored on a blockwise affine grid, or None.

    GGUF Q4_1 (the bundled SmolLM2) stores each block of 32 consecutive weights of a row as
    ``x = d q + m`` with ``q`` in ``0..15``; the block's minimum is ``m`` and its maximum ``15 d + m``, so a
    dequantised block reveals its step ``d = (max - min) / 15``, and rounding to the nearest level left
    an error uniform in ``[-d/2, d/2]`` (variance ``d^2 / 12``).

    Parameters
    ----------
    W : (out, in) tensor
        Weights as stored (rows along the output).
    block, levels : int
        Block length along the input and number of levels (Q4_1: 32 and 16).
    rtol : float
        Largest distance from a grid level, in steps, still counted as on the grid.

    Returns
    -------
    (out, in) float64 tensor of steps, or None when some block is not on such a grid (float weights).

    Examples
    --------
    >>> q = torch.randint(16, (2, 64), generator=torch.Generator().manual_seed(0)).double()
    >>> q[:, ::32], q[:, 1::32] = 0, 15            # every block spans all 16 levels
    >>> step = quantization_step(0.1 * q - 0.7)
    >>> tuple(step.shape), round(float(step.max()), 12), quantization_step(torch.randn(2, 64)) is None
    ((2, 64), 0.1, True)
    """
    if not isinstance(W, torch.Tensor) or W.ndim != 2:
        raise ValueError(f"W must be a 2-d tensor, got {type(W).__name__} of shape {tuple(getattr(W, 'shape', ()))}")
    if int(block) < 2 or int(levels) < 2:
        raise ValueError(f"block and levels must be >= 2, got {block}, {levels}")
    out, n = W.shape
    if n % int(block):
        return None
    B = W.detach().double().cpu().reshape(out, n // int(block), int(block))
    lo, hi = B.amin(-1, keepdim=True), B.amax(-1, keepdim=True)
    step = (hi - lo) / (int(levels) - 1)
    safe = torch.where(step > 0, step, torch.ones_like(step))
    q = (B - lo) / safe
    if float((q - q.round()).abs().max()) > rtol:
        return None
    return step.expand_as(B).reshape(out, n).clone()


def _noise(step: torch.Tensor | None, generator: torch.Generator) -> torch.Tensor | float:
    """A fresh rounding error, uniform in [-step/2, step/2] per entry (0 when the weight is not quantised)."""
    if step is None:
        return 0.0
    return (torch.rand(step.shape, generator=generator, dtype=torch.float64) - 0.5) * step


def qk_noise_floor(model, *, generator: torch.Generator, draws: int = 4) -> torch.Tensor:
    """Spectral norm of what 4-bit rounding does to each layer's ``A = sum_h A_h``, relative to ``sigma_1(A)``.

    If the weights are the rounded ``W + E`` of unknown ``W``, the measured ``A`` is off by
    ``N = (K + E_K)^T (Q~ + E_Q~) - K^T Q~``, and by Weyl's inequality every singular value moves by at most
    :math:`\\|N\\|_2`: singular values below it are not resolved. ``N`` is estimated by drawing fresh
    rounding errors of the same per-entry size (:func:`quantization_step`) on the measured weights.
    Layers whose query and key weights are not on a grid get 0.

    Parameters
    ----------
    model : torch.nn.Module
        A model of a layout :func:`attention_weights` reads.
    generator : torch.Generator
        CPU generator of the rounding errors.
    draws : int
        Independent draws per layer.

    Returns
    -------
    (draws, layers) float64: :math:`\\|N\\|_2 / \\sigma_1(A)`.

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> m = LlamaForCausalLM(LlamaConfig(vocab_size=16, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
    ...                                  num_attention_heads=4, num_key_value_heads=2))
    >>> qk_noise_floor(m, generator=torch.Generator().manual_seed(0), draws=2).tolist()   # float weights: no floor
    [[0.0, 0.0], [0.0, 0.0]]
    """
    check_generator(generator, torch.device("cpu"))
    if int(draws) < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    h, kv, hd = _head_layout(model)
    cols = []
    for Wq, Wk, _, _ in _attention_weights(model):
        sq, sk = quantization_step(Wq), quantization_step(Wk)
        col = torch.zeros(int(draws), dtype=torch.float64)
        if sq is not None or sk is not None:
            K, Qg = _qk_layer_factors(Wq, Wk, h, kv, hd)
            s1 = float(torch.linalg.matrix_norm(K.T @ Qg, 2))
            for i in range(int(draws)):
                Kn, Qn = _qk_layer_factors(Wq + _noise(sq, generator), Wk + _noise(sk, generator), h, kv, hd)
                col[i] = torch.linalg.matrix_norm(Kn.T @ Qn - K.T @ Qg, 2) / s1
        cols.append(col)
    return torch.stack(cols, dim=1)


def resampled_eigengaps(model, *, generator: torch.Generator, draws: int = 4) -> torch.Tensor:
    """:func:`eigengap` of every ``V_h`` after adding a fresh draw of rounding noise to ``W_V`` and ``W_O``.

    For weights rounded to a grid, ``W + E`` is measured instead of ``W``; adding a second, independent
    error of the same size moves the statistics about as much as the first one did, so the spread over
    draws estimates what the rounding did to the measured gaps (a parametric bootstrap). Weights not on
    a grid get no noise (every draw equals the measured gaps).

    Parameters
    ----------
    model : torch.nn.Module
        A model of a layout :func:`attention_weights` reads.
    generator : torch.Generator
        CPU generator of the rounding errors.
    draws : int
        Independent draws.

    Returns
    -------
    (draws, layers, heads) float64

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> m = LlamaForCausalLM(LlamaConfig(vocab_size=16, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
    ...                                  num_attention_heads=4, num_key_value_heads=2))
    >>> g = resampled_eigengaps(m, generator=torch.Generator().manual_seed(0), draws=2)
    >>> g.shape, bool(torch.equal(g[0], eigengap(value_head_matrices(m))))   # float weights: unchanged
    (torch.Size([2, 2, 4]), True)
    """
    check_generator(generator, torch.device("cpu"))
    if int(draws) < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    h, kv, hd = _head_layout(model)
    rep = h // kv
    weights = _attention_weights(model)
    steps = [(quantization_step(Wv), quantization_step(Wo)) for _, _, Wv, Wo in weights]
    out = []
    for _ in range(int(draws)):
        layers = []
        for (_, _, Wv, Wo), (sv, so) in zip(weights, steps):
            Wv, Wo = Wv + _noise(sv, generator), Wo + _noise(so, generator)
            layers.append(torch.stack([Wv[(j // rep) * hd : (j // rep + 1) * hd] @ Wo[:, j * hd : (j + 1) * hd]
                                       for j in range(h)]))
        out.append(eigengap(torch.stack(layers)))
    return torch.stack(out)
