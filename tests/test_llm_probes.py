"""LLM probes (companion.llm.probes, companion.llm.assets) on tiny random models built here (Llama, Qwen3, GPT-2,
GPT-NeoX, BERT: seconds, CPU, no files from the hub). The chapter's experiments are tested in
tests/experiments/test_llm_probes.py."""
from __future__ import annotations

import json
import math

import pytest
import torch

from companion.llm import assets
from companion.llm import probes as P

transformers = pytest.importorskip("transformers")


def tiny_llama(seed: int = 0, layers: int = 3):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return LlamaForCausalLM(cfg).eval()


@pytest.fixture
def ids():
    return torch.randint(64, (3, 12), generator=torch.Generator().manual_seed(1))


def test_load_roundtrip_and_errors(tmp_path, ids):
    m = tiny_llama()
    m.save_pretrained(tmp_path / "llama", safe_serialization=True)
    loaded, tok = P.load_causal_lm(tmp_path / "llama")
    assert tok is None
    with torch.no_grad():
        assert torch.equal(loaded(input_ids=ids).logits, m(input_ids=ids).logits)
    with pytest.raises(ValueError, match="does not exist"):
        P.load_causal_lm(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="config.json"):
        P.load_causal_lm(tmp_path / "empty")
    from transformers import BertConfig, BertModel

    BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(tmp_path / "bert")
    with pytest.raises(ValueError, match="not a causal language model"):
        P.load_causal_lm(tmp_path / "bert")


def test_load_refuses_weights_full_of_nan(tmp_path):
    """Weights that are all there but not finite: every probe would print NaN (issue 47, round 3)."""
    m = tiny_llama()
    with torch.no_grad():
        m.model.layers[1].self_attn.v_proj.weight.fill_(float("nan"))
    m.save_pretrained(tmp_path / "nan", safe_serialization=True)
    with pytest.raises(ValueError, match="not finite .* 'model.layers.1.self_attn.v_proj.weight'"):
        P.load_causal_lm(tmp_path / "nan")


def test_default_lora_is_identity(ids):
    m = tiny_llama()
    with torch.no_grad():
        base = m(input_ids=ids).logits.clone()
    pm = P.add_lora(m, 4, targets=("q_proj", "v_proj"))
    with torch.no_grad():
        assert torch.equal(pm(input_ids=ids).logits, base)
    assert float(P.update_norm(pm).max()) == 0.0
    with pytest.raises(ValueError, match="not module names"):
        P.add_lora(tiny_llama(), 2, targets=("value",))
    with pytest.raises(ValueError, match="rank"):
        P.add_lora(tiny_llama(), 0)


def test_random_adapter_norm_and_zero(ids):
    m = tiny_llama()
    ppl0 = P.perplexity(m, ids)
    # perplexity against a direct cross-entropy computation
    with torch.no_grad():
        lg = m(input_ids=ids).logits[:, :-1]
    ref = math.exp(float(torch.nn.functional.cross_entropy(lg.reshape(-1, 64), ids[:, 1:].reshape(-1))))
    assert ppl0 == pytest.approx(ref, rel=1e-6)
    pm = P.add_lora(m, 3)
    g = torch.Generator().manual_seed(0)
    P.set_random_adapter(pm, 0.0, generator=g)
    assert P.perplexity(pm, ids) == pytest.approx(ppl0, rel=1e-12)
    P.set_random_adapter(pm, 2.5, generator=g)
    for layer in P.lora_layers(pm):
        A, B = layer.lora_A["default"].weight, layer.lora_B["default"].weight
        assert float(torch.linalg.matrix_norm(B.double() @ A.double())) == pytest.approx(2.5, rel=1e-5)
    assert P.perplexity(pm, ids) != pytest.approx(ppl0, rel=1e-3)
    with pytest.raises(ValueError, match="norm"):
        P.set_random_adapter(pm, -1.0, generator=g)


def test_random_subspace_alignment_mean_is_one():
    a = P.random_subspace_alignment(40, 4, 20000, generator=torch.Generator().manual_seed(3))
    # |P u|^2 ~ Beta(r/2, (d-r)/2): mean r/d, so Align has mean 1 and variance (d-r) * 2 / (r (d + 2)).
    se = math.sqrt(2 * (40 - 4) / (4 * 42) / a.numel())
    assert abs(float(a.mean()) - 1.0) < 5 * se
    assert float(a.var()) == pytest.approx(2 * 36 / (4 * 42), rel=0.1)


def test_alignment_closed_forms():
    m = tiny_llama()
    pm = P.add_lora(m, 2)
    for layer in P.lora_layers(pm):
        W = layer.base_layer.weight.detach().double()
        _, _, Vh = torch.linalg.svd(W)
        with torch.no_grad():
            # Row(A) contains u1 -> Align = d / r ; Row(A) orthogonal to u1 -> Align = 0
            layer.lora_A["default"].weight.copy_(Vh[[0, 5]].float())
    al = P.alignment(pm)
    assert torch.allclose(al, torch.full_like(al, 32 / 2), rtol=1e-5)
    for layer in P.lora_layers(pm):
        Vh = torch.linalg.svd(layer.base_layer.weight.detach().double())[2]
        with torch.no_grad():
            layer.lora_A["default"].weight.copy_(Vh[[3, 7]].float())
            layer.lora_B["default"].weight.normal_()
    assert float(P.alignment(pm).abs().max()) < 1e-6


def test_drift_and_bifurcation(ids):
    m1, m2 = tiny_llama(0), tiny_llama(0)
    H1, H2 = P.hidden_states(m1, ids), P.hidden_states(m2, ids)
    assert H1.shape == (3, 3, 12, 32)
    assert float(P.relative_drift(H2, H1).abs().max()) == 0.0
    assert P.bifurcation_depth(P.relative_drift(H2, H1), 0.2) == 4  # no layer above tau: L + 1
    pm = P.add_lora(m2, 2)
    P.set_random_adapter(pm, 50.0, generator=torch.Generator().manual_seed(0))
    d = P.relative_drift(P.hidden_states(pm, ids), H1)
    assert float(d.min()) > 0.2 and P.bifurcation_depth(d, 0.2) == 1
    with pytest.raises(ValueError, match="same shape"):
        P.relative_drift(H1[:2], H1)


def test_train_lora_reduces_loss():
    m = tiny_llama()
    seq = torch.arange(16).repeat(8, 1) % 64  # a fixed pattern the model can learn
    pm = P.add_lora(m, 4, targets=("q_proj", "v_proj"))
    hist = P.train_lora(pm, seq, steps=40, batch_size=4, lr=5e-2, generator=torch.Generator().manual_seed(0),
                        eval_every=10, evaluate=lambda mm, s: {"ppl": P.perplexity(mm, seq[:2])})
    assert [h["step"] for h in hist] == [0, 10, 20, 30, 40]
    assert hist[-1]["ppl"] < 0.8 * hist[0]["ppl"]
    assert float(P.update_norm(pm).min()) > 0


def test_value_head_matrices_match_ov_circuit():
    m = tiny_llama()
    V = P.value_head_matrices(m)  # (layers, heads, hd, hd)
    assert V.shape == (3, 4, 8, 8)
    att = m.model.layers[1].self_attn
    Wv, Wo = att.v_proj.weight.double(), att.o_proj.weight.double()
    h = 3  # 4 query heads over 2 kv heads: head 3 reads kv head 1
    OV = Wo[:, 24:32] @ Wv[8:16]  # (d, d) residual-stream map of head 3
    ev_full = torch.linalg.eigvals(OV.detach())
    ev_full = ev_full[ev_full.abs().argsort(descending=True)][:8]
    ev = torch.linalg.eigvals(V[1, h])
    ev = ev[ev.abs().argsort(descending=True)]
    assert torch.allclose(ev.abs(), ev_full.abs(), rtol=1e-6, atol=1e-10)


def test_qk_head_matrices_bilinear_form():
    m = tiny_llama()
    A = P.qk_head_matrices(m)
    assert A.shape == (3, 4, 32, 32)
    att = m.model.layers[0].self_attn
    x, y = torch.randn(2, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    q = att.q_proj.weight.double() @ x
    k = att.k_proj.weight.double() @ y
    lhs = float(q[16:24] @ k[8:16])  # query head 2 reads kv head 1
    assert float(A[0, 2] @ x @ y) == pytest.approx(lhs, rel=1e-10)
    assert int(P.numerical_rank(A[0, 2])) == 8  # K^T Q of one head has rank <= head_dim


def test_repeat_layers_and_cosine(ids):
    m = tiny_llama()
    H = P.hidden_states(m, ids)
    P.repeat_layers(m, 2)
    H2 = P.hidden_states(m, ids)
    assert H2.shape[0] == 6
    assert torch.allclose(H2[:2], H[:2], atol=1e-6)  # the first pass is unchanged (last entry is normed)
    X = torch.eye(5).reshape(1, 1, 5, 5)
    assert P.mean_token_cosine(X, skip_first=0).item() == pytest.approx(0.0)
    assert torch.allclose(P.mean_token_cosine(torch.ones(2, 1, 3, 4), skip_first=0), torch.ones(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="times"):
        P.repeat_layers(m, 0)


def test_assets_errors():
    with pytest.raises(FileNotFoundError, match="not installed"):
        assets.package_dir("no_such_package_xyz")
    with pytest.raises(ValueError, match="split"):
        assets.corpus_text("bbc", "test")
    with pytest.raises(ValueError, match="name"):
        assets.prepare_corpus("wikipedia")


def test_prepared_corpora_checksums():
    """After `make llm-assets` the corpora match their manifests and the splits are disjoint."""
    import hashlib

    for name in assets.CORPORA:
        folder = assets.cache_dir() / "corpora" / name
        if not (folder / "manifest.json").is_file():
            pytest.skip(f"corpus {name} not prepared (run python -m companion.llm.assets)")
        man = json.loads((folder / "manifest.json").read_text())
        for split in assets.SPLITS:
            assert hashlib.sha256((folder / f"{split}.txt").read_bytes()).hexdigest() == man["sha256"][split]
        held = (folder / "heldout.txt").read_text()[:2000]
        assert held not in (folder / "train.txt").read_text()


def test_qk_singular_values_match_dense():
    m = tiny_llama()
    A = P.qk_head_matrices(m)
    s_head, s_layer = P.qk_singular_values(m)
    dense = torch.linalg.svdvals(A)[..., :8]
    assert torch.allclose(s_head, dense, rtol=1e-8, atol=1e-12)
    assert torch.allclose(s_layer, torch.linalg.svdvals(A.sum(1)), rtol=1e-8, atol=1e-12)


# ---------------------------------------------------------------- attention layouts beyond Llama (tiny random models)


def _head_form(q, k, j, kv_j):
    """<Q_j x, K_kv(j) y> from per-head query and key vectors (heads, hd)."""
    return float(q[j] @ k[kv_j])


def _check_form(model, qk_of, h, kv, hd, d, rel=1e-9):
    """A_h against the model's own projections: <A_h x, y> = <q_h(x), k_kv(h)(y)> for random x, y."""
    A = P.qk_head_matrices(model)
    s_head, s_layer = P.qk_singular_values(model)
    assert A.shape == (model.config.num_hidden_layers, h, d, d)
    assert torch.allclose(s_layer, torch.linalg.svdvals(A.sum(1)), rtol=1e-8, atol=1e-12)
    assert torch.allclose(s_head, torch.linalg.svdvals(A)[..., :hd], rtol=1e-8, atol=1e-12)
    x, y = torch.randn(2, d, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    for layer in range(A.shape[0]):
        q, k = qk_of(layer, x, y)
        for j in range(h):
            assert float(A[layer, j] @ x @ y) == pytest.approx(_head_form(q, k, j, j // (h // kv)), rel=rel, abs=1e-12)


def test_qwen3_query_key_norms_are_folded():
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    m = Qwen3ForCausalLM(Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                     max_position_embeddings=64)).double().eval()
    with torch.no_grad():
        for layer in m.model.layers:  # norm weights away from 1, so that leaving them out would show
            layer.self_attn.q_norm.weight.uniform_(0.2, 3.0)
            layer.self_attn.k_norm.weight.uniform_(0.2, 3.0)

    def qk_of(i, x, y):
        att = m.model.layers[i].self_attn
        with torch.no_grad():
            q = att.q_proj(x).view(4, 16)
            k = att.k_proj(y).view(2, 16)
            # The model's own norms, with the per-token factor 1/rms (left out of A_h, see the docstring) undone.
            rq = (q.pow(2).mean(-1, keepdim=True) + att.q_norm.variance_epsilon).sqrt()
            rk = (k.pow(2).mean(-1, keepdim=True) + att.k_norm.variance_epsilon).sqrt()
            return att.q_norm(q) * rq, att.k_norm(k) * rk

    _check_form(m, qk_of, h=4, kv=2, hd=16, d=32, rel=1e-6)  # the model's RMS norm computes in float32
    # Without the fold the form is another one: the test would catch a dropped norm weight.
    att = m.model.layers[0].self_attn
    plain = att.k_proj.weight[:16].double().T @ att.q_proj.weight[:16].double()
    assert not torch.allclose(plain, P.qk_head_matrices(m)[0, 0])


def test_gpt2_fused_qkv():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    m = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=64)).double().eval()

    def qk_of(i, x, y):
        att = m.transformer.h[i].attn
        with torch.no_grad():
            zero = att.c_attn(torch.zeros(32, dtype=torch.float64))  # the bias: A_h is the bilinear part
            q = (att.c_attn(x) - zero).split(32)[0].view(4, 8)
            k = (att.c_attn(y) - zero).split(32)[1].view(4, 8)
        return q, k

    _check_form(m, qk_of, h=4, kv=4, hd=8, d=32)
    V = P.value_head_matrices(m)
    att = m.transformer.h[1].attn
    with torch.no_grad():
        zero = att.c_attn(torch.zeros(32, dtype=torch.float64))
        E = torch.eye(32, dtype=torch.float64)
        v = (att.c_attn(E) - zero)[:, 64:]  # (inputs, d): row i = v(e_i)
        masked = torch.zeros_like(v)
        masked[:, 16:24] = v[:, 16:24]  # head 2 only
        OV = (att.c_proj(masked) - att.c_proj(torch.zeros_like(masked))).T  # (d, d): residual map of head 2
    for p in (1, 2):  # nonzero spectra agree: tr(V^p) = tr(OV^p)
        assert float(torch.linalg.matrix_power(V[1, 2], p).trace()) == pytest.approx(
            float(torch.linalg.matrix_power(OV, p).trace()), rel=1e-9)


def test_gpt_neox_fused_qkv():
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(0)
    m = GPTNeoXForCausalLM(GPTNeoXConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                         intermediate_size=64, max_position_embeddings=64)).double().eval()

    def qk_of(i, x, y):
        att = m.gpt_neox.layers[i].attention
        with torch.no_grad():
            zero = att.query_key_value(torch.zeros(32, dtype=torch.float64))
            q = (att.query_key_value(x) - zero).view(4, 24).chunk(3, dim=-1)[0]
            k = (att.query_key_value(y) - zero).view(4, 24).chunk(3, dim=-1)[1]
        return q, k

    _check_form(m, qk_of, h=4, kv=4, hd=8, d=32)


def test_unsupported_layouts_are_refused():
    from transformers import Phi3Config, Phi3ForCausalLM, Qwen3Config, Qwen3ForCausalLM

    phi = Phi3ForCausalLM(Phi3Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                     num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64,
                                     pad_token_id=0))
    with pytest.raises(ValueError, match="fused query-key-value layout"):
        P.qk_head_matrices(phi)
    qwen = Qwen3ForCausalLM(Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                        num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                        max_position_embeddings=64))
    qwen.model.layers[0].self_attn.q_norm = torch.nn.LayerNorm(8)  # a norm with a mean shift: no bilinear fold
    with pytest.raises(ValueError, match="q_norm of type LayerNorm is not supported"):
        P.qk_singular_values(qwen)
    mlp = torch.nn.Sequential(torch.nn.Linear(32, 32))
    mlp.config = qwen.config
    with pytest.raises(ValueError, match="no self-attention modules"):
        P.value_head_matrices(mlp)
