"""Spectra of attention weights (companion.llm.spectra) on tiny RANDOM models of every supported layout,
checked against what the real modules compute (forward hooks, no weights read by hand). The llm-spectra
experiment and its claims are tested in tests/experiments/test_llm_probes.py.

Layouts: Llama with grouped key/value heads, Qwen3 (per-head q_norm / k_norm), GPT-2 (fused c_attn,
Conv1D), GPT-NeoX (fused query_key_value, rotary on part of each head), BERT and ALBERT (the paper's
Fig. 7 model family). Hidden size 32, two layers, built from transformers' config classes: no files.
"""
from __future__ import annotations

import math

import pytest
import torch

from companion.llm import spectra as S

transformers = pytest.importorskip("transformers")

D = 32
INIT = 0.2  # weights large enough that the attention logits are O(1), not a near-uniform softmax


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=D, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, initializer_range=INIT,
                                        attn_implementation="eager")).double().eval()


def _qwen3():
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    m = Qwen3ForCausalLM(Qwen3Config(vocab_size=64, hidden_size=D, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, head_dim=16, initializer_range=INIT,
                                     attn_implementation="eager")).double().eval()
    with torch.no_grad():
        for layer in m.model.layers:  # norm weights away from 1, so that leaving them out would show
            layer.self_attn.q_norm.weight.uniform_(0.2, 3.0)
            layer.self_attn.k_norm.weight.uniform_(0.2, 3.0)
    return m


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=D, n_layer=2, n_head=4, n_positions=64,
                                      initializer_range=INIT, attn_implementation="eager")).double().eval()


def _neox():
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(0)
    return GPTNeoXForCausalLM(GPTNeoXConfig(vocab_size=64, hidden_size=D, num_hidden_layers=2, num_attention_heads=4,
                                            intermediate_size=64, max_position_embeddings=64, initializer_range=INIT,
                                            attn_implementation="eager")).double().eval()


def _bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return BertModel(BertConfig(vocab_size=64, hidden_size=D, num_hidden_layers=2, num_attention_heads=4,
                                intermediate_size=64, initializer_range=INIT, attn_implementation="eager")).double().eval()


def _albert():
    from transformers import AlbertConfig, AlbertModel

    torch.manual_seed(0)
    return AlbertModel(AlbertConfig(vocab_size=64, embedding_size=16, hidden_size=D, num_hidden_layers=2,
                                    num_attention_heads=4, intermediate_size=64, initializer_range=INIT,
                                    attn_implementation="eager")).double().eval()


def _zero_biases(model) -> None:
    """A_h and V_h are the bilinear parts; with the projection biases at 0 the logits are exactly the forms."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") and any(k in name for k in ("attn", "attention")):
                p.zero_()


# Per layout: the model, the modules whose input is the attention's input x (one per layer, in depth order),
# the output projection (its input is the concatenated head outputs z), causal or not, and the head layout.
LAYOUTS = {
    "llama-gqa": (_llama, lambda m: [l.self_attn for l in m.model.layers], lambda a: a.o_proj, 4, 2, 8),
    "qwen3": (_qwen3, lambda m: [l.self_attn for l in m.model.layers], lambda a: a.o_proj, 4, 2, 16),
    "gpt2": (_gpt2, lambda m: [b.attn for b in m.transformer.h], lambda a: a.c_proj, 4, 4, 8),
    "gpt-neox": (_neox, lambda m: [l.attention for l in m.gpt_neox.layers], lambda a: a.dense, 4, 4, 8),
    "bert": (_bert, lambda m: [l.attention.self for l in m.encoder.layer], None, 4, 4, 8),
    "albert": (_albert, lambda m: [m.encoder.albert_layer_groups[0].albert_layers[0].attention], lambda a: a.dense,
               4, 4, 8),
}


def _run(model, layout, ids):
    """Forward with hooks: per attention call its input x : (seq, d), and the attention probabilities.

    Positions are all 0, so rotary embeddings are the identity and every logit is the form at relative
    position 0 (what A_h describes); learned absolute positions enter before the attention input, which is
    what is captured. Qwen3's per-token norm factors rms(q), rms(k) are captured from its q_norm / k_norm."""
    _, attn_of, _, h, kv, hd = LAYOUTS[layout]
    xs, rms = [], []
    hooks = []
    for att in attn_of(model):
        hooks.append(att.register_forward_pre_hook(
            lambda mod, args, kwargs: xs.append((args[0] if args else kwargs["hidden_states"])[0].detach()),
            with_kwargs=True))
        if hasattr(att, "q_norm"):
            for nm in ("q_norm", "k_norm"):
                norm = getattr(att, nm)
                hooks.append(norm.register_forward_pre_hook(
                    lambda mod, args, nm=nm, norm=norm: rms.append(
                        (nm, (args[0][0].pow(2).mean(-1) + norm.variance_epsilon).sqrt().detach()))))
    try:
        with torch.no_grad():
            extra = {"position_ids": torch.zeros_like(ids)} if layout in ("llama-gqa", "qwen3", "gpt-neox") else {}
            out = model(input_ids=ids, output_attentions=True, **extra)
    finally:
        for hk in hooks:
            hk.remove()
    return xs, [a[0].double() for a in out.attentions], rms


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_qk_forms_give_the_modules_attention_logits(layout):
    """log p_ij - log p_i0 = s (<A_h x_i, x_j> - <A_h x_i, x_0>) with s = hd^-1/2, from the real forward pass."""
    make, _, _, h, kv, hd = LAYOUTS[layout]
    model = make()
    _zero_biases(model)
    A = S.qk_head_matrices(model)  # (modules, heads, d, d)
    assert A.shape == ((1 if layout == "albert" else 2), h, D, D)
    ids = torch.randint(64, (1, 7), generator=torch.Generator().manual_seed(1))
    xs, probs, rms = _run(model, layout, ids)
    assert len(xs) == len(probs) == 2
    rms_q = [r for nm, r in rms if nm == "q_norm"]
    rms_k = [r for nm, r in rms if nm == "k_norm"]
    for layer, (x, p) in enumerate(zip(xs, probs)):
        form = torch.einsum("hab,ib,ja->hij", A[min(layer, A.shape[0] - 1)], x, x)  # <A_h x_i, x_j> : (h, n, n)
        if rms_q:  # Qwen3: logit = <g q_i, g k_j> / (rms(q_i) rms(k_j)), per head
            kv_of = torch.arange(h) // (h // kv)
            form = form / (rms_q[layer].T[:, :, None] * rms_k[layer].T[kv_of][:, None, :])
        ok = p > 0  # the causal mask leaves j <= i
        measured = (p.log() - p[..., :1].log())[ok]
        predicted = (form - form[..., :1])[ok]
        scale = float(measured @ predicted / (predicted @ predicted))
        assert scale == pytest.approx(hd ** -0.5, rel=1e-4)
        assert float((measured - scale * predicted).abs().max()) <= 1e-5 * float(measured.abs().max())


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_value_heads_give_the_modules_output_maps(layout):
    """At sequence length 1 each head outputs W_O[:, h] W_V[kv(h)] x (+ a constant): fitted from inputs x fed to the
    real attention module (a pre-hook replaces its input by random full-rank states; the model's own ones lie in
    the hyperplane a LayerNorm centres them to) and the output projection's input, its nonzero spectrum is that of
    V_h (tr M^p = tr V_h^p, p = 1..3)."""
    make, attn_of, out_of, h, kv, hd = LAYOUTS[layout]
    model = make()
    V = S.value_head_matrices(model)
    atts = attn_of(model)
    if out_of is None:  # BERT: the output dense layer sits beside attention.self
        outs = [l.attention.output.dense for l in model.encoder.layer]
    else:
        outs = [out_of(a) for a in atts]
    xs, zs, hooks = [], [], []
    gen = torch.Generator().manual_seed(2)

    def inject(mod, args, kwargs):
        old = args[0] if args else kwargs["hidden_states"]
        x = torch.randn(old.shape, generator=gen, dtype=old.dtype)
        xs.append(x[:, 0])
        return ((x,) + tuple(args[1:]), kwargs) if args else (args, dict(kwargs, hidden_states=x))

    for att, o in zip(atts, outs):
        hooks.append(att.register_forward_pre_hook(inject, with_kwargs=True))
        hooks.append(o.register_forward_pre_hook(lambda mod, args: zs.append(args[0][:, 0].detach())))
    ids = torch.randint(64, (80, 1), generator=torch.Generator().manual_seed(2))  # 80 > d + 1 inputs
    try:
        with torch.no_grad():
            model(input_ids=ids)
    finally:
        for hk in hooks:
            hk.remove()
    for layer, (x, z, o) in enumerate(zip(xs, zs, outs * 2 if layout == "albert" else outs)):
        X = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], 1)  # affine fit: biases go to the last row
        for j in range(h):
            zj = torch.zeros_like(z)
            zj[:, j * hd : (j + 1) * hd] = z[:, j * hd : (j + 1) * hd]
            with torch.no_grad():
                y = o(zj) - o(torch.zeros_like(zj))  # the head's share of the output, bias removed
            M = torch.linalg.lstsq(X, y).solution[:-1].T  # (d, d): y = M x + c
            Vh = V[min(layer, V.shape[0] - 1), j]
            for k in (1, 2, 3):
                tm, tv = float(torch.linalg.matrix_power(M, k).trace()), float(torch.linalg.matrix_power(Vh, k).trace())
                assert tm == pytest.approx(tv, rel=1e-6, abs=1e-9 * float(Vh.norm()) ** k)


def test_qwen3_norm_weights_matter():
    """Leaving the q_norm / k_norm weights out gives another form: the logits test above would catch it."""
    m = _qwen3()
    att = m.model.layers[0].self_attn
    plain = att.k_proj.weight[:16].double().T @ att.q_proj.weight[:16].double()
    assert not torch.allclose(plain, S.qk_head_matrices(m)[0, 0])


@pytest.mark.parametrize("layout, caps", [("llama-gqa", (8, 16)), ("qwen3", (16, 32)), ("gpt2", (8, 32)),
                                          ("bert", (8, 32))])
def test_rank_cap_is_what_random_weights_reach(layout, caps):
    """Generic (random) weights reach the cap min(kv * hd, d) exactly, and never exceed it."""
    model = LAYOUTS[layout][0]()
    assert S.qk_rank_cap(model) == caps
    s_head, s_layer = S.qk_singular_values(model)
    assert (S.numerical_rank(S.qk_head_matrices(model), 1e-10) == caps[0]).all()
    assert ((s_layer > 1e-10 * s_layer[:, :1]).sum(-1) == caps[1]).all()
    assert torch.allclose(s_layer, torch.linalg.svdvals(S.qk_head_matrices(model).sum(1)), rtol=1e-8, atol=1e-12)


def test_eigengap_closed_forms_and_gaussian_reference():
    # Symmetric PSD: Prop. 3.3's (lambda_1 - lambda_2) / lambda_1 whatever the basis.
    Q = torch.linalg.qr(torch.randn(5, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))).Q
    V = Q @ torch.diag(torch.tensor([4.0, 3.0, 1.0, 0.5, 0.0], dtype=torch.float64)) @ Q.T
    assert float(S.eigengap(V)) == pytest.approx(0.25, rel=1e-10)
    assert float(S.eigengap(-V)) == pytest.approx(-1.75, rel=1e-10)  # a negative leading eigenvalue: -1 - 3/4
    # 2 x 2 Gaussian heads through a wide d are nearly 2 x 2 real Ginibre matrices, whose eigenvalues are real with
    # probability 1 / sqrt(2) (Edelman 1997); a real pair has a positive dominant one with probability 1 / 2.
    g = S.gaussian_head_eigengaps(2, 2000, 4000, generator=torch.Generator().manual_seed(1))
    assert g.shape == (4000,) and float(g.max()) <= 1 and float(g.min()) >= -2
    assert float((g > 0).double().mean()) == pytest.approx(0.5 / math.sqrt(2), abs=0.03)
    g2 = S.gaussian_head_eigengaps(2, 2000, 4000, generator=torch.Generator().manual_seed(1))
    assert torch.equal(g, g2)  # same seed, same numbers
    with pytest.raises(ValueError, match="head_dim"):
        S.gaussian_head_eigengaps(8, 4, 10, generator=torch.Generator())
    with pytest.raises(ValueError, match="V must be"):
        S.eigengap(torch.ones(3))


def _q4_1(W: torch.Tensor) -> torch.Tensor:
    """Round-to-nearest blockwise affine 4-bit quantisation (as GGUF Q4_1 does), written independently here."""
    B = W.reshape(W.shape[0], -1, 32)
    lo, hi = B.amin(-1, keepdim=True), B.amax(-1, keepdim=True)
    d = (hi - lo) / 15
    return (lo + d * ((B - lo) / d).round()).reshape(W.shape)


def test_noise_floor_matches_the_true_rounding_error():
    """Quantise a model here, keep the original: the estimated floor is ||A_quantised - A_true||_2 / sigma_1."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    m = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2)).double().eval()
    A_true = S.qk_head_matrices(m).sum(1)
    with torch.no_grad():
        for layer in m.model.layers:
            for p in ("q_proj", "k_proj", "v_proj", "o_proj"):
                W = getattr(layer.self_attn, p).weight
                step = ((W.reshape(W.shape[0], -1, 32).amax(-1) - W.reshape(W.shape[0], -1, 32).amin(-1)) / 15)
                W.copy_(_q4_1(W))
                assert torch.allclose(S.quantization_step(W), step.repeat_interleave(32, -1))
    A_q = S.qk_head_matrices(m).sum(1)
    true = torch.linalg.matrix_norm(A_q - A_true, 2) / torch.linalg.matrix_norm(A_q, 2)
    est = S.qk_noise_floor(m, generator=torch.Generator().manual_seed(3), draws=8).mean(0)
    assert torch.allclose(est, true, rtol=0.25), (est, true)
    # Weyl: no singular value moved by more than the true error, so those above it are resolved.
    s_q, s_t = torch.linalg.svdvals(A_q), torch.linalg.svdvals(A_true)
    assert float(((s_q - s_t).abs() / s_q[:, :1]).max()) <= float(true.max()) + 1e-12
    # The resampled gaps spread about the measured ones by about as much as the rounding moved them.
    g = S.resampled_eigengaps(m, generator=torch.Generator().manual_seed(4), draws=4)
    assert g.shape == (4, 2, 4) and not torch.equal(g[0], g[1])


def test_quantization_step_refuses_and_declines():
    assert S.quantization_step(torch.randn(4, 33)) is None  # not a whole number of blocks
    with pytest.raises(ValueError, match="2-d"):
        S.quantization_step(torch.randn(4))
    with pytest.raises(ValueError, match="draws"):
        S.qk_noise_floor(_llama(), generator=torch.Generator(), draws=0)


# ---------------------------------------------------------------- refusals


def test_unsupported_layouts_are_refused_by_name():
    from transformers import Phi3Config, Phi3ForCausalLM, Qwen3Config, Qwen3ForCausalLM

    phi = Phi3ForCausalLM(Phi3Config(vocab_size=64, hidden_size=D, intermediate_size=64, num_hidden_layers=1,
                                     num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
                                     pad_token_id=0))
    with pytest.raises(ValueError, match=r"fused query-key-value layout of model.layers.0.self_attn \(Phi3Attention, qkv_proj\)"):
        S.qk_head_matrices(phi)
    qwen = Qwen3ForCausalLM(Qwen3Config(vocab_size=64, hidden_size=D, intermediate_size=64, num_hidden_layers=1,
                                        num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                        max_position_embeddings=64))
    qwen.model.layers[0].self_attn.k_norm = torch.nn.LayerNorm(8)  # a mean shift: no bilinear fold
    with pytest.raises(ValueError, match=r"model.layers.0.self_attn.k_norm of type LayerNorm is not supported"):
        S.value_head_matrices(qwen)
    m = _llama()
    m.model.layers[1].self_attn.q_layernorm = torch.nn.LayerNorm(8)  # Phi-style extra norm
    with pytest.raises(ValueError, match=r"model.layers.1.self_attn.q_layernorm \(LayerNorm\) is a norm inside"):
        S.qk_singular_values(m)


def test_adapters_and_bad_configs_are_refused():
    from transformers import GPT2Config, GPT2LMHeadModel

    from companion.llm import probes as P

    pm = P.add_lora(_llama(), 2, targets=("v_proj",))
    with pytest.raises(ValueError, match=r"v_proj carries adapters \(peft\); merge them first"):
        S.value_head_matrices(pm)
    cross = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=D, n_layer=1, n_head=4, add_cross_attention=True))
    with pytest.raises(ValueError, match="cross-attention"):
        S.qk_head_matrices(cross)
    m = _llama()
    m.config.num_key_value_heads = 4  # the config contradicts the weights
    with pytest.raises(ValueError, match=r"W_K has shape \(16, 32\), expected \(32, 32\)"):
        S.qk_head_matrices(m)
    m.config.num_key_value_heads = 3
    with pytest.raises(ValueError, match="cannot share 3 key/value heads"):
        S.qk_rank_cap(m)
    with pytest.raises(ValueError, match="no self-attention modules"):
        mlp = torch.nn.Sequential(torch.nn.Linear(D, D))
        mlp.config = m.config
        m.config.num_key_value_heads = 2
        S.value_head_matrices(mlp)
