"""LoRA training runs as resumable parts (companion.llm.training).

Tiny random Llama models (seconds, CPU, nothing from the hub) for the runner, the checkpoint
summaries and the Prop. 3.3 quantities. The experiments built on them (llm-training,
llm-training-indomain: claims, stored parts, a run killed midway and resumed) are tested in
tests/experiments/test_llm_probes.py.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from companion import fits
from companion.llm import probes as P
from companion.llm import training as T

transformers = pytest.importorskip("transformers")


def tiny_llama(seed: int = 0, layers: int = 3):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return LlamaForCausalLM(cfg).eval()


def test_prop33_layers_match_the_theory_module():
    # Second method: companion.theory.lora.spectral_perturbation on the dense symmetric pair (V^T V, dM).
    from companion.theory.lora import spectral_perturbation

    pm = P.add_lora(tiny_llama(), 3)
    P.set_random_adapter(pm, 1.5, generator=torch.Generator().manual_seed(2))
    q = T.prop33_layers(pm)
    for i, layer in enumerate(P.lora_layers(pm)):
        W = layer.base_layer.weight.detach().double()
        Wt = W + P.lora_delta(layer)
        sp = spectral_perturbation(W.T @ W, Wt.T @ Wt - W.T @ W)
        for mine, theirs in (("gap", sp.gap), ("a", sp.a), ("b_norm", sp.b_norm), ("E_norm", sp.E_norm),
                             ("margin", sp.margin), ("bound", sp.bound), ("u1_shift", sp.drift)):
            assert q[mine][i] == pytest.approx(theirs, rel=1e-7, abs=1e-9), mine


def test_drift_before_final_norm_and_without_the_sink():
    m = tiny_llama()
    ids = torch.randint(64, (2, 10), generator=torch.Generator().manual_seed(1))
    raw = P.hidden_states(m, ids, before_final_norm=True)
    normed = P.hidden_states(m, ids)
    assert torch.equal(raw[:-1], normed[:-1]) and not torch.allclose(raw[-1], normed[-1])
    with torch.no_grad():  # the last entry is what enters the final norm
        assert torch.allclose(m.model.norm(raw[-1]), normed[-1], atol=1e-6)
    moved = raw.clone()
    moved[:, :, 0] += 1e3  # only position 0 changes
    assert P.relative_drift(moved, raw).abs().max() == 0
    assert P.relative_drift(moved, raw, skip_first=0).min() > 1
    with pytest.raises(ValueError, match="skip_first"):
        P.relative_drift(raw, raw, skip_first=10)


def test_bifurcation_depth_tells_none_from_last_layer():
    assert P.bifurcation_depth(torch.tensor([0.0, 0.1, 0.0])) == 4  # none above tau: L + 1
    assert P.bifurcation_depth(torch.tensor([0.0, 0.1, 0.3])) == 3  # only the last layer: L
    assert P.bifurcation_depth(torch.tensor([0.5, 0.1, 0.3])) == 1
    with pytest.raises(ValueError, match="tau"):
        P.bifurcation_depth(torch.zeros(3), 0.0)


def test_train_lora_checkpoints_and_schedule():
    seq = torch.arange(16).repeat(8, 1) % 64
    pm = P.add_lora(tiny_llama(), 2, targets=("q_proj", "v_proj"))
    lrs = []
    hist = P.train_lora(pm, seq, steps=4, batch_size=2, lr=0.1, generator=torch.Generator().manual_seed(0),
                        eval_steps=(0, 1, 4), schedule="linear",
                        evaluate=lambda m, s: lrs.append(s) or {"n": float(P.update_norm(m).sum())})
    assert [h["step"] for h in hist] == [0, 1, 4] == lrs
    with pytest.raises(ValueError, match="eval_steps"):
        P.train_lora(pm, seq, steps=4, batch_size=2, lr=0.1, generator=torch.Generator(), eval_steps=(5,),
                     evaluate=lambda m, s: {})
    with pytest.raises(ValueError, match="exactly one"):
        P.train_lora(pm, seq, steps=4, batch_size=2, lr=0.1, generator=torch.Generator(), evaluate=lambda m, s: {})
    with pytest.raises(ValueError, match="schedule"):
        P.train_lora(pm, seq, steps=4, batch_size=2, lr=0.1, generator=torch.Generator(), eval_every=2,
                     schedule="cosine", evaluate=lambda m, s: {})


def _tiny_job(ids, H_base, calls, fail_at=None):
    """compute(rank, seed) of a tiny model: a real LoRA run with the chapter's checkpoint summaries."""
    held = {"model": tiny_llama()}

    def compute(r, s):
        calls.append((r, s))
        if fail_at is not None and (r, s) == fail_at:
            raise KeyboardInterrupt  # the job killed in the middle of this run
        held["model"], arrays = T.train_run(
            held["model"], r, s, train_ids=ids, targets=("q_proj", "v_proj"), steps=3, batch_size=2, lr=5e-2,
            checkpoints=(0, 1, 3), evaluate=lambda m, step: T.checkpoint_summary(m, base_ids=ids[:2], new_ids=ids[2:4],
                                                                                H_base=H_base))
        return arrays

    return compute


def test_run_parts_resume_after_a_kill(tmp_path):
    ids = torch.randint(64, (6, 12), generator=torch.Generator().manual_seed(3))
    H = P.hidden_states(tiny_llama(), ids[:2], before_final_norm=True)
    keys = [(1, 0), (2, 0), (1, 1)]
    settings = {"steps": 3}
    whole: list = []
    ref = T.run_parts(keys, _tiny_job(ids, H, whole), tmp_path / "whole", settings=settings)
    assert whole == keys
    calls: list = []
    with pytest.raises(KeyboardInterrupt):
        T.run_parts(keys, _tiny_job(ids, H, calls, fail_at=(2, 0)), tmp_path / "parts", settings=settings)
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == ["r1-s0.json", "r1-s0.npz"]  # complete or absent
    calls.clear()
    got = T.run_parts(keys, _tiny_job(ids, H, calls), tmp_path / "parts", settings=settings)
    assert calls == [(2, 0), (1, 1)]  # the finished part is read back, not recomputed
    for k in keys:  # same seeds, same numbers, resumed or not
        assert ref[k].keys() == got[k].keys()
        for name in ref[k]:
            np.testing.assert_array_equal(ref[k][name], got[k][name], err_msg=f"{k} {name}")
    st = T.stack_seeds(got, 1)
    assert st["seeds"].tolist() == [0, 1] and st["drift"].shape == (2, 3, 3) and st["step"].tolist() == [0, 1, 3]
    assert (st["b_tau"][:, 0] == 4).all()  # step 0: the untrained adapter, no layer above tau (L + 1)


def test_a_half_written_or_stale_part_is_recomputed(tmp_path):
    calls: list = []

    def work(r, s):
        calls.append((r, s))
        return {"x": np.arange(3) * r}

    T.run_parts([(1, 0), (2, 0)], work, tmp_path, settings={"steps": 3})
    T.part_path(tmp_path, 2, 0).with_suffix(".json").unlink()  # killed between the .npz and its JSON
    T.run_parts([(1, 0), (2, 0)], work, tmp_path, settings={"steps": 3})
    assert calls == [(1, 0), (2, 0), (2, 0)]
    T.run_parts([(1, 0)], work, tmp_path, settings={"steps": 4})  # other settings: not the same run
    assert calls[-1] == (1, 0) and len(calls) == 4
    T.part_path(tmp_path, 1, 0).write_bytes(b"garbage")  # changed after it was sealed
    T.run_parts([(1, 0)], work, tmp_path, settings={"steps": 4})
    assert len(calls) == 5
    with pytest.raises(ValueError, match="each"):
        T.run_parts([(1, 0), (1, 0)], work, tmp_path, settings={})


def test_intervals_against_scipy():
    from scipy import stats

    x = np.array([0.1, 0.4, 0.35, 0.8, 0.9, 1.3, 0.2])
    y = np.array([1.0, 1.5, 1.2, 2.6, 2.2, 3.1, 1.4])
    r, lo, hi = T.pearson_interval(x, y)
    ci = stats.pearsonr(x, y).confidence_interval(0.95)  # Fisher z, as scipy computes it
    assert (r, lo, hi) == pytest.approx((stats.pearsonr(x, y).statistic, ci.low, ci.high), rel=1e-9)
    m, h = fits.mean_interval(np.array([[1.0, 2.0], [2.0, 4.0], [4.0, 9.0]]))
    want = stats.t.ppf(0.975, 2) * np.array([1.5275252, 3.6055513]) / math.sqrt(3)
    np.testing.assert_allclose(h, want, rtol=1e-4)
    assert np.isnan(fits.mean_interval(np.ones((1, 2)))[1]).all()
    with pytest.raises(ValueError, match="n >= 4"):
        T.pearson_interval([1, 2, 3], [1, 2, 3])


def test_random_subspace_alignment_in_batches_draws_as_one_call():
    g = torch.Generator().manual_seed(3)
    a = P.random_subspace_alignment(40, 5, 600, generator=g)  # three batches of at most 256
    g = torch.Generator().manual_seed(3)
    Q = torch.linalg.qr(torch.randn(600, 40, 5, generator=g, dtype=torch.float64)).Q
    torch.testing.assert_close(a, 40 / 5 * (Q[:, 0, :] ** 2).sum(-1), rtol=0, atol=0)
    with pytest.raises(ValueError, match="samples"):
        P.random_subspace_alignment(40, 5, 0, generator=g)


# ---------------------------------------------------------------- llm-training-indomain's split


def test_split_heldout_boundaries_sizes_and_no_overlap():
    n = 1003
    ids = torch.arange(n) + 7  # token id = position + 7: every position is recognisable
    train, score, b = T.split_heldout(ids, head=20, fraction=0.8, train_len=16, eval_len=10, eval_blocks=3)
    cut = 802  # floor(0.8 * 1003)
    assert b == {"tokens": n, "train_start": 20, "train_end": 20 + 48 * 16, "score_start": cut, "score_end": cut + 30}
    assert train.shape == (48, 16) and score.shape == (3, 10)  # (802 - 20) // 16 = 48 whole blocks
    assert train.flatten().tolist() == list(range(20 + 7, 20 + 48 * 16 + 7))  # consecutive, in order, from the head
    assert score.flatten().tolist() == list(range(cut + 7, cut + 30 + 7))
    assert b["train_end"] <= b["score_start"] and not set(train.flatten().tolist()) & set(score.flatten().tolist())
    again = T.split_heldout(ids.tolist(), head=20, fraction=0.8, train_len=16, eval_len=10, eval_blocks=3)
    assert torch.equal(again[0], train) and torch.equal(again[1], score) and again[2] == b  # deterministic, list or tensor
    with pytest.raises(ValueError, match="eval_blocks"):  # the scoring blocks must fit after the cut
        T.split_heldout(ids, head=20, fraction=0.8, train_len=16, eval_len=10, eval_blocks=21)
    with pytest.raises(ValueError, match="head"):
        T.split_heldout(ids, head=800, fraction=0.8, train_len=16, eval_len=10, eval_blocks=1)
    with pytest.raises(ValueError, match="fraction"):
        T.split_heldout(ids, head=0, fraction=1.0, train_len=16, eval_len=10, eval_blocks=1)
    with pytest.raises(ValueError, match="ids"):
        T.split_heldout(ids.reshape(17, 59), head=0, fraction=0.5, train_len=16, eval_len=10, eval_blocks=1)


def test_training_dtype_named_when_unknown_and_the_fast_profile_trains_in_float64():
    import importlib

    tr = importlib.import_module("companion.experiments.llm_probes.training")
    with pytest.raises(ValueError, match="dtype must be one of"):
        tr.TrainingConfig(dtype="bfloat16")
    assert tr.PROFILES_TRAINING["fast"].dtype == "float64" and tr.PROFILES_TRAINING["full"].dtype == "float32"
    assert tr.DTYPES[tr.PROFILES_TRAINING["fast"].dtype] is torch.float64
