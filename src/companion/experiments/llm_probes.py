"""Chapter "LoRA on a real model": paper A's LLM probes (Figs. 2, 3, 4, 6, 7, 14) on SmolLM2-135M.

Each experiment takes ``model_path`` (any local Hugging Face causal LM folder with safetensors;
default: the bundled SmolLM2-135M-Instruct, dequantised from its Q4_1 GGUF) and module names
(defaults for Llama), so the same code runs on Qwen3-0.6B or Llama-2 weights a user has.
Token counts, ranks and steps are small in the ``fast`` profile (2 CPU cores) and larger in ``full``.

* :func:`llm_random_adapters` (``llm-random-adapters``): Fig. 2, perplexity under random adapters;
* :func:`llm_training` (``llm-training``): Figs. 3, 4, 6, LoRA fine-tuning on Shakespeare;
* :func:`llm_training_indomain` (``llm-training-indomain``): the same runs, trained also on the first 80 % of
  the held-out play and scored on the rest;
* :func:`llm_spectra` (``llm-spectra``): Fig. 7 / App. E.4, value and query-key spectra;
* :func:`llm_layer_repetition` (``llm-layer-repetition``): Fig. 14 / App. E.5, layers run twice.

Each has a claims function beside it; its thresholds are the named constants below.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np
import torch

from .. import fits, ledger
from .._validate import check_positive
from ..registry import PaperScale, claims_for, experiment, plots

__all__ = [
    "RandomAdaptersConfig",
    "TrainingConfig",
    "IndomainConfig",
    "SpectraConfig",
    "RepetitionConfig",
    "llm_random_adapters",
    "llm_training",
    "llm_training_indomain",
    "training_from_parts",
    "llm_spectra",
    "llm_layer_repetition",
    "transition_norm",
    "adapter_summary",
    "training_summary",
    "run_ends",
    "random_adapters_claims",
    "training_claims",
    "indomain_claims",
    "spectra_summary",
    "spectra_claims",
    "repetition_claims",
    "plot_llm_random_adapters",
    "plot_llm_training",
    "plot_llm_alignment",
    "plot_llm_drift",
    "plot_llm_bridge",
    "plot_llm_spectra",
    "plot_llm_eigengaps",
    "plot_llm_qk_ranks",
    "plot_llm_layer_repetition",
]

CHAPTER = "llm_probes"

# Fig. 2 "unchanged": perplexity within 5 % of the base, about the fast profile's sampling noise.
FLAT_RATIO = 1.05
# Fig. 2 "destroyed past the transition" and the transition itself: perplexity doubled.
BROKEN_RATIO = 2.0
# A transition, not a smooth rise: a second-order response ln(ppl/base) = c |dV|^2 goes from +5 % to x2 over a
# factor sqrt(ln 2 / ln 1.05) = 3.77 in norm; a transition does it over a narrower factor.
SMOOTH_WIDTH = math.sqrt(math.log(BROKEN_RATIO) / math.log(FLAT_RATIO))
# The transition itself: from +5 % to x2 within the factor a response cubic in the norm needs, (ln 2 / ln 1.05)^(1/3)
# = 2.42, one power steeper than the second-order response, which therefore fails this check instead of sitting on it.
TRANSITION_WIDTH = (math.log(BROKEN_RATIO) / math.log(FLAT_RATIO)) ** (1 / 3)
# Rank independence: the doubling norms of ranks 1, 8, 64 agree within 25 % (max/min <= 1.25).
RANK_SPREAD = 0.25
# Fig. 3 "loss rises with the norm": a rank correlation of 0.8 between update norm and base perplexity over a run's
# checkpoints (with seven checkpoints: a few neighbouring pairs out of order, not a trend that reverses).
MIN_SPEARMAN = 0.8
# Fig. 3 "the rank matters": forgetting at one common update norm differs by more than 25 % between ranks.
RANK_MATTERS = 1.25
# Trained alignment above a random subspace's: (Align - 1) at least 2 combined standard errors (seeds and the
# random-subspace law) above 1, a one-sided 2.3 % false alarm per rank; between 0 and 2 the data cannot decide: partly.
ALIGN_Z = 2.0
# Fig. 4's "locking on" is reported for the lower-rank adapters, r = 8 and 32: ranks up to 32 here.
LOW_RANK = 32
# Fig. 6 "moves earlier": the seed mean of b_first - b_end above half a layer (b is an integer layer index).
B_MOVE = 0.5
# The fall of held-out Hamlet perplexity the full profile was sized for (issue #20: at least 20 % in every run). Not a
# gate (LEARNED_FALL is): whether the runs reached it is said in every training row's statement, met or not.
TARGET_FALL = 0.2
# A run "learned" the new domain when its held-out perplexity fell by 10 %, beyond the 7 % checkpoint-to-checkpoint
# wobble of the fast profile's held-out Hamlet perplexity; a probe that did not train gives no verdict.
LEARNED_FALL = 0.1
# A training row is a verdict only with a spread over seeds: one seed per rank gives the measurement without it.
MIN_SEEDS = 2
# Tokens at the head of Hamlet (title, cast list) that no run scores or trains on (SmolLM2's tokenizer: the first
# speech starts near token 1000).
NEW_HEAD = 1000
# Plain numerical ranks, printed at three thresholds a decade apart (the paper states none).
RANK_RTOLS = (1e-4, 1e-3, 1e-2)
# The rank a claim reads counts singular values above max(rank_rtol, the 4-bit rounding floor) times the largest;
# its uncertainty is the rank with that threshold moved by this factor each way (a decade in all).
RANK_SPREAD_FACTOR = math.sqrt(10.0)
# "Lower rank": below the later layers' median by more than 5 % (a few singular values at the threshold are rounding).
RANK_GAP = 0.05
# App. E.4.3 "very few heads satisfy Assumption 3.2": at most 10 % of the heads.
FEW_HEADS = 0.1
# Fig. 7's eigengap: a head has one when its leading eigenvalue is real, positive and dominates the next by more
# than 1 % of its modulus (the fraction hardly moves between 0 and 3 %: printed in the chapter).
GAP_MIN = 0.01
# "The gap the theory assumes" read as typical of pre-trained heads: more than half of them.
MOST_HEADS = 0.5
# A fraction differs from another (or from MOST_HEADS) when it does by 2 combined standard errors: a one-sided
# 2.3 % false alarm; heads are the sample, plus the rounding noise of 4-bit weights (resampled) where there is one.
GAP_Z = 2.0
# App. E.5 / Fig. 14 "towards 1": mean token cosine at least 0.9 at depth 2L.
NEAR_ONE = 0.9

@dataclasses.dataclass(frozen=True)
class RandomAdaptersConfig:
    """Random LoRA adapters (Assumption 4.1) on a causal LM.

    ``eval_blocks`` held-out BBC blocks of ``block_len`` tokens; LoRA ranks ``ranks``; per-layer
    Frobenius norms ``norms`` (increasing; dense enough around the transition that every other norm
    gives nearly the same crossings, which is how their uncertainty is read); ``targets``: groups of module names perturbed together, one curve set
    each; ``draws`` independent adapters per (rank, norm), whose scatter is the measurement's
    uncertainty; ``model_path``: a local Hugging Face folder (None: the bundled SmolLM2); ``seed``:
    rank ``r`` draws its factors from ``seed + 1000 r``; ``progress``: show progress bars.

    Examples
    --------
    >>> RandomAdaptersConfig().ranks, RandomAdaptersConfig().targets
    ((1, 8, 64), (('v_proj',),))
    """

    eval_blocks: int = 2
    block_len: int = 128
    ranks: tuple[int, ...] = (1, 8, 64)
    norms: tuple[float, ...] = tuple(float(2 ** (k / 3)) for k in range(3, 13))  # 2 to 16, ratio 2^(1/3)
    targets: tuple[tuple[str, ...], ...] = (("v_proj",),)
    draws: int = 1
    model_path: str | None = None
    seed: int = 0
    progress: bool = False


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
    """LoRA fine-tuning on Shakespeare, evaluated on held-out BBC news and *Hamlet*.

    ``eval_blocks`` held-out blocks of ``block_len`` tokens per domain; ``train_blocks`` training
    blocks of ``train_block_len`` tokens; one run per rank in ``ranks`` and seed in ``seeds``, LoRA
    on the modules ``targets`` (scaling alpha / r = 1); ``steps`` AdamW steps of ``batch_size``
    blocks at learning rate ``lr * r ** -lr_rank_power`` for rank ``r`` (one ``lr`` that teaches
    rank 1 makes rank 64 diverge), following ``schedule`` (``"constant"``, both profiles' choice: not
    decayed; ``"linear"``: decayed to ``lr / steps`` at the last step); checkpoints at the steps
    ``checkpoints`` (0 and ``steps`` among them); ``value_module`` is the module whose update norm, alignment and Prop. 3.3
    quantities are measured; ``tau`` the drift threshold of the bifurcation depth;
    ``baseline_samples`` random subspaces for the alignment baseline (drawn from ``seed``);
    ``model_path`` as in :class:`RandomAdaptersConfig`; ``progress``: progress bars. Seeds: see
    :func:`companion.llm.training.train_run`.

    Examples
    --------
    >>> TrainingConfig().steps, TrainingConfig().ranks, TrainingConfig().checkpoints
    (12, (4, 16), (0, 3, 6, 12))
    """

    eval_blocks: int = 2
    block_len: int = 128
    train_blocks: int = 256
    train_block_len: int = 64
    ranks: tuple[int, ...] = (4, 16)
    seeds: tuple[int, ...] = (0,)
    steps: int = 12
    batch_size: int = 2
    checkpoints: tuple[int, ...] = (0, 3, 6, 12)
    lr: float = 1e-2
    lr_rank_power: float = 0.5
    schedule: str = "constant"
    targets: tuple[str, ...] = ("q_proj", "v_proj")
    value_module: str = "v_proj"
    tau: float = 0.2
    baseline_samples: int = 4000
    model_path: str | None = None
    seed: int = 0
    progress: bool = False


@dataclasses.dataclass(frozen=True)
class IndomainConfig(TrainingConfig):
    """:class:`TrainingConfig` with the new domain's own text among the training data.

    *Hamlet*, the held-out play, is cut at ``new_fraction`` of its tokens
    (:func:`companion.llm.training.split_heldout`; its first :data:`NEW_HEAD` tokens, title and cast
    list, left out). The runs train on ``m`` blocks of ``train_block_len`` tokens from before the cut
    joined with the first ``m`` blocks of the other plays, ``m = min(train_blocks, the blocks that fit
    before the cut)``; each block of a batch is drawn uniformly from that joined pool, so half the
    blocks come from *Hamlet* on average (the pilot's mix). The new domain is scored on
    ``eval_blocks`` blocks of ``block_len`` tokens from the cut on: no token is both trained and
    scored on. Every other field as in :class:`TrainingConfig`.

    Examples
    --------
    >>> IndomainConfig().new_fraction, IndomainConfig().steps == TrainingConfig().steps
    (0.8, True)
    """

    new_fraction: float = 0.8


@dataclasses.dataclass(frozen=True)
class SpectraConfig:
    """Value and query-key spectra of a decoder (``model_path``, None: SmolLM2) and an encoder
    (``encoder_path``, None: all-MiniLM-L6-v2); ranks count singular values above ``rank_rtol``
    times the largest, or above the 4-bit rounding floor where that is higher (estimated from
    ``noise_draws`` draws of rounding noise); ``null_samples`` Gaussian heads of each model's shape
    give the eigengap's reference; ``seed`` seeds both draws.

    Examples
    --------
    >>> SpectraConfig().rank_rtol, SpectraConfig().null_samples
    (0.001, 1000)
    """

    model_path: str | None = None
    encoder_path: str | None = None
    rank_rtol: float = 1e-3
    noise_draws: int = 2
    null_samples: int = 1000
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class RepetitionConfig:
    """The model's layers run ``times`` times; mean token cosine on ``blocks`` blocks of ``block_len``
    tokens of held-out BBC text and of words drawn from the BBC vocabulary (from ``seed``);
    ``model_path`` as in :class:`RandomAdaptersConfig`.

    Examples
    --------
    >>> RepetitionConfig().times
    2
    """

    blocks: int = 2
    block_len: int = 64
    times: int = 2
    model_path: str | None = None
    seed: int = 0


PROFILES_RANDOM = {"fast": RandomAdaptersConfig(),
                   "full": RandomAdaptersConfig(eval_blocks=8, block_len=128, draws=3,
                                                norms=tuple(float(2 ** (k / 4)) for k in range(2, 19)), progress=True)}
PAPER_RANDOM = PaperScale(
    values={"model_path": "Qwen3-0.6B"},
    deviations={"model_path": "Qwen3-0.6B weights cannot be fetched offline; the bundled SmolLM2-135M"},
    note="The paper states neither the ranks nor the norms, draws or evaluation set of Fig. 2. Chosen: ranks 1, 8, 64, "
         "17 per-layer norms from 1.4 to 22.6 (ratio 2^(1/4)) around the doubling norm, 3 draws each, 1,024 held-out "
         "BBC tokens; value projections only (Theorem 4.2 perturbs V).")
PROFILES_TRAINING = {"fast": TrainingConfig(),
                     "full": TrainingConfig(eval_blocks=8, block_len=128, train_blocks=2048, train_block_len=128,
                                            ranks=(1, 4, 16, 64), seeds=(0, 1, 2), steps=180, batch_size=4,
                                            checkpoints=(0, 5, 11, 22, 45, 90, 180), lr=1e-2, progress=True)}
PAPER_TRAINING = PaperScale(
    values={"model_path": "Qwen3-0.6B", "eval_blocks": 512, "tau": 0.2},
    deviations={"model_path": "Qwen3-0.6B weights cannot be fetched offline; the bundled SmolLM2-135M (30 layers)",
                "eval_blocks": "512 held-out samples of unstated length; 8 blocks of 128 tokens per domain keep a "
                               "checkpoint near 5 s on 2 CPU cores"},
    note="The paper states neither the ranks of Fig. 3 (Fig. 4 names r = 8 and 32), nor the learning rate, steps, batch, "
         "data or seeds. Chosen: ranks 1, 4, 16, 64, three seeds, 180 AdamW steps of 4 x 128 Shakespeare tokens at "
         "lr 1e-2 / sqrt(r), constant (pilots: rank 64 diverges at 1e-2, learns at 1.25e-3), aimed at a 20 % fall of "
         "held-out Hamlet perplexity; the stored runs took 11-14 min each on 2 CPU cores and fell short of that target "
         "(the chapter prints by how much).")
# The same runs as llm-training's, profile for profile; only the data differ (new_fraction).
PROFILES_INDOMAIN = {p: IndomainConfig(**dataclasses.asdict(c), new_fraction=0.8) for p, c in PROFILES_TRAINING.items()}
PAPER_INDOMAIN = PaperScale(
    values=dict(PAPER_TRAINING.values),
    deviations=dict(PAPER_TRAINING.deviations),
    note="The paper states neither the fine-tuning data nor the ranks, learning rate, steps, batch or seeds of Figs. 3, "
         "4, 6. Chosen: llm-training's settings, the training data half Hamlet: its first 80 % (SmolLM2 tokens 1,000 to "
         "42,216 of 52,804) and as many blocks of the other plays; the new domain scored on 1,024 tokens from its last "
         "20 % (from token 42,243). Why: llm-training's held-out Hamlet perplexity stops falling at 12-16 %, and a pilot "
         "(rank 4, seed 0, 30 steps) measured the domain gap between the other plays and Hamlet: on Hamlet's last "
         "20 %, training on the other plays took the perplexity from 71.4 to 58.9 (-17.5 %), half Hamlet to 52.0 "
         "(-27.2 %).")
PROFILES_SPECTRA = {"fast": SpectraConfig(), "full": SpectraConfig(noise_draws=8, null_samples=4000)}
PAPER_SPECTRA = PaperScale(
    values={"model_path": "Llama-2-7B", "encoder_path": "ALBERT-xlarge-v2"},
    deviations={"model_path": "Llama-2-7B weights cannot be fetched offline; the bundled SmolLM2-135M (a Llama with "
                              "grouped key/value heads, 4-bit weights)",
                "encoder_path": "ALBERT-xlarge-v2 weights cannot be fetched offline; the bundled all-MiniLM-L6-v2 "
                                "(a BERT; ALBERT's layout is supported for a reader who has the weights)"},
    note="The paper states no rank threshold and not which heads Fig. 7 shows. Chosen: ranks above max(1e-3, the "
         "4-bit rounding floor) of the largest singular value, and the eigengap of every head against Gaussian heads "
         "of the same shape.")
PROFILES_REPETITION = {"fast": RepetitionConfig(), "full": RepetitionConfig(blocks=16, block_len=128)}
PAPER_REPETITION = PaperScale(
    values={"model_path": "Llama-2-7B", "times": 2},
    deviations={"model_path": "Llama-2-7B weights cannot be fetched offline; the bundled SmolLM2-135M (30 layers run "
                              "twice, as the paper runs 32 twice)"},
    note="The paper's inputs (random sentences from a dummy-text generator, one Wikipedia article) and their lengths "
         "are not given. Chosen: 16 blocks of 128 tokens of held-out BBC news and of words drawn from its vocabulary.")


def _load(model_path, device, tokenizer: bool = True):
    from ..llm import assets, probes

    path = assets.smollm2_path() if model_path is None else model_path
    model, tok = probes.load_causal_lm(path, device=device)
    if tokenizer and tok is None:
        raise ValueError(f"model_path: {path} has no tokenizer files; the probes need one to read text")
    return model, tok, str(path)


def _eval_ids(tok, corpus: str, block_len: int, blocks: int, split: str = "heldout") -> torch.Tensor:
    from ..llm import assets, probes

    # Skip the title and cast list at the head of Hamlet: start NEW_HEAD tokens in.
    off = NEW_HEAD if corpus == "shakespeare" else 0
    return probes.token_blocks(tok, assets.corpus_text(corpus, split), block_len, blocks, offset=off)


def _replay(state: torch.Tensor) -> torch.Generator:
    """A fresh CPU generator in ``state``: the same draws as the registry's generator before its first use."""
    g = torch.Generator()
    g.set_state(state)
    return g


def transition_norm(norms: Sequence[float], ppl: Sequence[float], ppl0: float, factor: float = 2.0) -> float:
    """Norm at which perplexity first reaches ``factor * ppl0``, log-log interpolated; nan if never.

    Examples
    --------
    >>> round(transition_norm([1, 10, 100], [10, 10, 40], 10.0), 3)   # 20 = 10 * 2: log-interp
    31.623
    """
    t = math.log(check_positive(factor, "factor"))
    return float(np.exp(fits.first_crossing(np.log(np.asarray(norms, float)), np.log(np.asarray(ppl, float) / ppl0), t)))


@experiment("llm-random-adapters", chapter=CHAPTER, profiles=PROFILES_RANDOM, paper=PAPER_RANDOM)
def llm_random_adapters(cfg: RandomAdaptersConfig, generator: torch.Generator, device) -> dict[str, Any]:
    """Fig. 2: base-domain perplexity under random LoRA adapters (Assumption 4.1) against their norm.

    Profiles: ``fast`` 256 held-out tokens, 10 norms from 2 to 16, one draw; ``full`` 1,024 tokens,
    17 norms from 1.4 to 22.6, three draws (see :class:`RandomAdaptersConfig`); ``v_proj`` only.

    Returns
    -------
    dict with ``ppl0`` (base perplexity), ``norms`` (N,), ``ranks`` (R,), ``draws``,
    ``mean_base_v_norm``, ``tokens``, ``model`` and ``curves[key]`` per target group:
    ``ppl_draws`` (R, D, N), ``ppl`` (R, N) their geometric mean over draws, and
    ``transition_norm`` (R,) (the norm where ``ppl`` doubles, nan if never).
    """
    from tqdm.auto import tqdm

    from ..llm import probes

    model, tok, path = _load(cfg.model_path, device)
    ids = _eval_ids(tok, "bbc", cfg.block_len, cfg.eval_blocks)
    ppl0 = probes.perplexity(model, ids)
    v_norm = float(np.mean([float(torch.linalg.matrix_norm(m.weight.detach().double()))
                            for n, m in model.named_modules() if n.endswith("v_proj")]))
    out: dict[str, Any] = {"model": path, "ppl0": ppl0, "norms": np.array(cfg.norms),
                           "ranks": np.array(cfg.ranks), "draws": int(cfg.draws), "mean_base_v_norm": v_norm,
                           "tokens": int(ids.numel()), "curves": {}}
    if int(cfg.draws) < 1:
        raise ValueError(f"draws must be >= 1, got {cfg.draws}")
    for targets in cfg.targets:
        key = "+".join(targets)
        draws = np.zeros((len(cfg.ranks), int(cfg.draws), len(cfg.norms)))
        for i, r in enumerate(cfg.ranks):
            pm = probes.add_lora(model, r, targets=targets)
            g = torch.Generator().manual_seed(cfg.seed + 1000 * r)  # one stream per rank, as in every earlier run
            for j, nrm in enumerate(tqdm(cfg.norms, disable=not cfg.progress, desc=f"{key} r={r}", leave=False)):
                for k in range(int(cfg.draws)):
                    for t in targets:
                        probes.set_random_adapter(pm, nrm, generator=g, target=t)
                    draws[i, k, j] = probes.perplexity(pm, ids)
            model = pm.unload()  # back to the bare base model
        ppl = np.exp(np.log(draws).mean(1))
        trans = np.array([transition_norm(cfg.norms, ppl[i], ppl0, BROKEN_RATIO) for i in range(len(cfg.ranks))])
        out["curves"][key] = {"ppl": ppl, "ppl_draws": draws, "transition_norm": trans}
    return out


def _crossings(norms: np.ndarray, ratio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per rank, the norms where perplexity / base first reaches FLAT_RATIO and BROKEN_RATIO (nan when
    it never does, or, for the first, when the smallest norm is not flat: the rise is not bracketed)."""
    flat = np.array([transition_norm(norms, row, 1.0, FLAT_RATIO) if row[0] <= FLAT_RATIO else np.nan for row in ratio])
    broken = np.array([transition_norm(norms, row, 1.0, BROKEN_RATIO) for row in ratio])
    return flat, broken


def _draw_noise(ratio: np.ndarray) -> float:
    """RMS of ln(ppl/base) over the norms below each rank's +5 % crossing: the scatter one random draw per
    norm leaves where the true ratio is about 1 (an upper estimate: the rise has begun there)."""
    vals: list[float] = []
    for row in ratio:
        hit = np.flatnonzero(row >= FLAT_RATIO)
        vals.extend(np.log(row[: hit[0] if hit.size else row.size]).tolist())
    return float(np.sqrt(np.mean(np.square(vals)))) if vals else math.nan


def adapter_summary(result: dict[str, Any], key: str = "v_proj") -> dict[str, Any]:
    """The numbers Fig. 2's claims read from a :func:`llm_random_adapters` result.

    Per rank, ``flat_norm`` and ``doubling_norm``: where perplexity / base (geometric mean over the
    draws) first reaches 1.05 and 2 (log-log interpolated); ``width``: the largest
    ``doubling_norm / flat_norm`` over ranks (the factor in norm over which the loss goes from
    unchanged to doubled); ``exponent``: the power ``p`` of a response ``ln(ppl/base) ~ norm^p``
    with that width, ``ln(ln 2 / ln 1.05) / ln(width)``; ``spread``: max / min over ranks of the
    doubling norm. Each has an uncertainty ``*_err``, two errors added in quadrature: how much it
    changes when read off every other norm of the grid, both ends kept (the interpolation's own
    error), and the draw-to-draw scatter: with several draws, the standard error over draws of the
    same number computed draw by draw; with one draw, how much it moves when the two levels move by
    ``noise``, the RMS of ln(ppl/base) below the +5 % crossing (an upper estimate: the rise has
    begun there). ``noise`` with several draws is the RMS of ln(ppl_draw / ppl_mean).
    ``ratio_small`` and ``ratio_large``: perplexity / base at the smallest and largest norm (max
    and min over ranks).

    Examples
    --------
    >>> norms = np.geomspace(1, 16, 9)
    >>> ppl = 10 * np.exp(0.01 * np.vstack([norms ** 2, (norms / 1.1) ** 2]))  # a smooth quadratic rise
    >>> s = adapter_summary({"ppl0": 10.0, "norms": norms, "curves": {"v_proj": {"ppl": ppl}}})
    >>> round(s["width"], 2), round(s["exponent"], 2), round(s["spread"], 2)  # exact: 3.77, p = 2, ranks 10 % apart
    (3.81, 1.98, 1.08)
    >>> round(s["noise"], 3), round(s["width_err"], 2)  # a smooth curve's start counts as scatter: an upper estimate
    (0.024, 1.64)
    >>> wobble = np.exp(0.01 * np.array([-1.0, 0.0, 1.0]))[None, :, None]  # three draws, +-1 % apart
    >>> s3 = adapter_summary({"ppl0": 10.0, "norms": norms, "curves": {"v_proj": {"ppl": ppl, "ppl_draws": ppl[:, None] * wobble}}})
    >>> round(s3["noise"], 4), s3["width_err"] < s["width_err"]
    (0.0082, True)
    """
    c = result["curves"][key]
    ppl, ppl0 = np.asarray(c["ppl"], float), float(result["ppl0"])
    norms, ratio = np.asarray(result["norms"], float), ppl / ppl0
    flat, broken = _crossings(norms, ratio)
    coarse = np.unique(np.r_[np.arange(0, norms.size, 2), norms.size - 1])  # every other norm, both ends kept
    flat2, broken2 = _crossings(norms[coarse], ratio[:, coarse])
    width, width2 = float(np.max(broken / flat)), float(np.max(broken2 / flat2))
    spread, spread2 = float(broken.max() / broken.min()), float(broken2.max() / broken2.min())
    draws = np.asarray(c["ppl_draws"], float) / ppl0 if "ppl_draws" in c else None
    if draws is not None and draws.shape[1] >= 2:
        n = draws.shape[1]
        noise = float(np.sqrt(np.mean(np.square(np.log(draws / ratio[:, None])))))
        each = [_crossings(norms, draws[:, k]) for k in range(n)]
        widths = np.array([np.max(b / f) for f, b in each])
        spreads = np.array([b.max() / b.min() for _, b in each])
        width_noise = float(np.std(widths, ddof=1) / math.sqrt(n))  # nan when a draw's rise is not bracketed
        spread_noise = float(np.std(spreads, ddof=1) / math.sqrt(n))
    else:
        noise = _draw_noise(ratio)

        def at(level):  # crossing norms per rank at a level moved by the noise
            return np.array([transition_norm(norms, row, 1.0, level) for row in ratio])

        if math.isfinite(noise):
            lo, hi = math.exp(-noise), math.exp(noise)
            widths_ = [float(np.max(at(BROKEN_RATIO * b) / at(FLAT_RATIO * f))) for f, b in ((lo, hi), (hi, lo))]
            spreads_ = [float(x.max() / x.min()) for x in (at(BROKEN_RATIO * lo), at(BROKEN_RATIO * hi))]
            width_noise = max(abs(w - width) for w in widths_)
            spread_noise = max(abs(x - spread) for x in spreads_)
        else:  # no norm below the +5 % level: the scatter, hence the uncertainty, is unknown
            width_noise = spread_noise = math.nan
    width_err = math.hypot(width - width2, width_noise)
    levels = math.log(math.log(BROKEN_RATIO) / math.log(FLAT_RATIO))
    exponent = levels / math.log(width) if width > 1 else math.nan
    return {"ratio_small": float(ratio[:, 0].max()), "ratio_large": float(ratio[:, -1].min()),
            "flat_norm": flat.tolist(), "doubling_norm": broken.tolist(), "noise": noise,
            "width": width, "width_err": width_err, "exponent": exponent,
            "exponent_err": levels * width_err / (width * math.log(width) ** 2) if width > 1 else math.nan,
            "spread": spread, "spread_err": math.hypot(spread - spread2, spread_noise)}


@claims_for("llm-random-adapters")
def random_adapters_claims(result: dict[str, Any], cfg: RandomAdaptersConfig) -> list[ledger.Claim]:
    """Fig. 2: a transition, the loss going from unchanged (+5 %) to doubled over a factor in norm no
    wider than a response cubic in the norm would need (:data:`TRANSITION_WIDTH`), so that the smooth
    second-order response (:data:`SMOOTH_WIDTH`) fails; the doubling norm the same for every rank
    (:data:`RANK_SPREAD`). Each measurement carries its uncertainty (interpolation and draw-to-draw
    scatter, :func:`adapter_summary`): a verdict it could flip is partly.

    Examples
    --------
    >>> norms = np.geomspace(1, 16, 9)
    >>> sharp = 10 * np.exp(0.01 * np.vstack([norms ** 4, (norms / 1.05) ** 4]) / 10)  # ln ratio ~ norm^4
    >>> res = {"ppl0": 10.0, "norms": norms, "tokens": 256, "curves": {"v_proj": {"ppl": sharp}}}
    >>> [c.status for c in random_adapters_claims(res, RandomAdaptersConfig())]
    ['reproduced', 'reproduced']
    >>> smooth = 10 * np.exp(0.02 * np.vstack([norms ** 1.5, (norms / 1.5) ** 1.5]))  # a slow rise, ranks 50 % apart
    >>> res["curves"]["v_proj"]["ppl"] = smooth
    >>> [c.status for c in random_adapters_claims(res, RandomAdaptersConfig())]
    ['not-reproduced', 'not-reproduced']
    """
    s = adapter_summary(result)
    return [
        ledger.Claim(
            id="A-fig2-norm-transition-smollm2", paper="A", where="Sec. 4.1.2, Fig. 2",
            statement="Random adapters leave the base loss unchanged at small norm and destroy it past a transition norm: "
                      "the loss goes from unchanged to doubled over a narrow range of norms, narrower than a smooth "
                      "second-order rise",
            verdict=ledger.within(s["width"], s["width_err"], TRANSITION_WIDTH, scale=TRANSITION_WIDTH),
            measured=s["width"],
            expected=f"doubling norm / norm of +{FLAT_RATIO - 1:.0%}, max over ranks, <= {TRANSITION_WIDTH:.3g} "
                     f"(ln(ppl) rising at least like norm^3; a smooth rise ln(ppl) ~ norm^2 gives {SMOOTH_WIDTH:.3g})",
            tolerance=TRANSITION_WIDTH, uncertainty=s["width_err"]),
        ledger.Claim(
            id="A-fig2-rank-independence-smollm2", paper="A", where="Sec. 4.1.2, Fig. 2",
            statement="At fixed Frobenius norm the random-adapter loss does not depend on the rank "
                      f"({', '.join(str(int(r)) for r in cfg.ranks)})",
            verdict=ledger.within(s["spread"], s["spread_err"], 1 + RANK_SPREAD, scale=RANK_SPREAD),
            measured=s["spread"], expected=f"max/min over ranks of the doubling norm <= {1 + RANK_SPREAD:g}",
            tolerance=RANK_SPREAD, uncertainty=s["spread_err"]),
    ]


@experiment("llm-training", chapter=CHAPTER, profiles=PROFILES_TRAINING, paper=PAPER_TRAINING)
def llm_training(cfg: TrainingConfig, generator: torch.Generator, device) -> dict[str, Any]:
    """Figs. 3, 4, 6 and Prop. 3.3: LoRA fine-tuning on Shakespeare; forgetting on BBC news, update
    norm, alignment with the top singular direction of V_l, hidden-state drift, bifurcation depth
    and the quantities of Prop. 3.3 for the trained value updates.

    One run per (rank, seed), each a part of its own: under ``python -m companion run llm-training
    --out DIR`` the parts are stored in ``DIR/llm-training/parts/`` as they finish and a killed run
    resumes from them (:func:`companion.llm.training.run_parts`). Profiles: ``fast`` ranks 4 and 16,
    one seed, 12 steps of 2 x 64 tokens, 256 held-out tokens per domain; ``full`` ranks 1, 4, 16,
    64, three seeds, 180 steps of 4 x 128 tokens, 1,024 held-out tokens per domain (see
    :class:`TrainingConfig`).

    Returns
    -------
    dict with ``ranks`` (R,), ``seeds`` (S,), ``runs[r]`` per rank: ``step`` (C,), ``ppl_base``,
    ``ppl_new``, ``b_tau`` (S, C), ``norm_layers``, ``align``, ``drift`` and the Prop. 3.3 fields
    ``gap``, ``a``, ``b_norm``, ``E_norm``, ``margin``, ``bound``, ``u1_shift`` (S, C, L); ``lr``
    per rank; ``layers``, ``tau``, ``d``, ``targets``, ``steps``, ``tokens_per_step``,
    ``eval_tokens``, ``random_baseline[r]`` and ``random_baseline_se[r]`` (sampled mean alignment of
    Haar-random r-dimensional subspaces and its standard error) and ``model``.
    """
    return _train_runs(cfg, generator, device, _training_data)


def _training_data(cfg: TrainingConfig, tok) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, np.ndarray]]:
    """llm-training's token ids: held-out BBC (base), the opening of *Hamlet* (new), the other plays (training); no extras."""
    from ..llm import assets, probes

    base_ids = _eval_ids(tok, "bbc", cfg.block_len, cfg.eval_blocks)
    new_ids = _eval_ids(tok, "shakespeare", cfg.block_len, cfg.eval_blocks)
    train_ids = probes.token_blocks(tok, assets.corpus_text("shakespeare", "train"), cfg.train_block_len, cfg.train_blocks)
    return base_ids, new_ids, train_ids, {}


# The token ranges of the held-out play that an llm-training-indomain part records, in this order (``new_split``).
SPLIT_FIELDS = ("tokens", "train_start", "train_end", "score_start", "score_end")


def _indomain_data(cfg: IndomainConfig, tok) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, np.ndarray]]:
    """llm-training-indomain's token ids (see :class:`IndomainConfig`), and ``new_split``: the play's token ranges
    (:data:`SPLIT_FIELDS`), kept in every part."""
    from ..llm import assets, probes, training

    play = tok(assets.corpus_text("shakespeare", "heldout"), add_special_tokens=False)["input_ids"]
    new_train, new_ids, b = training.split_heldout(play, head=NEW_HEAD, fraction=cfg.new_fraction, train_len=cfg.train_block_len,
                                                   eval_len=cfg.block_len, eval_blocks=cfg.eval_blocks)
    m = min(int(cfg.train_blocks), int(new_train.shape[0]))
    other = probes.token_blocks(tok, assets.corpus_text("shakespeare", "train"), cfg.train_block_len, m)
    b["train_end"] = b["train_start"] + m * int(cfg.train_block_len)
    base_ids = _eval_ids(tok, "bbc", cfg.block_len, cfg.eval_blocks)
    return base_ids, new_ids, torch.cat([new_train[:m], other]), {"new_split": np.array([b[k] for k in SPLIT_FIELDS])}


def _train_runs(cfg: TrainingConfig, generator: torch.Generator, device, data) -> dict[str, Any]:
    """The body of both training experiments: ``data(cfg, tokenizer) -> (base_ids, new_ids, train_ids, extra)``
    chooses the token ids; ``extra`` (arrays) is added to every part."""
    from ..llm import probes, training
    from . import output_folder

    if 0 not in cfg.checkpoints or cfg.steps not in cfg.checkpoints:
        raise ValueError(f"checkpoints must include 0 and steps = {cfg.steps}, got {cfg.checkpoints}")
    model, tok, path = _load(cfg.model_path, device)
    base_ids, new_ids, train_ids, extra = data(cfg, tok)
    H_base = probes.hidden_states(model, base_ids, before_final_norm=True, progress=cfg.progress)
    lrs = _learning_rates(cfg)
    held = {"model": model}

    def evaluate(m, step):
        return training.checkpoint_summary(m, base_ids=base_ids, new_ids=new_ids, H_base=H_base, target=cfg.value_module,
                                           tau=cfg.tau, progress=cfg.progress)

    def one_run(r: int, s: int) -> dict[str, Any]:
        held["model"], arrays = training.train_run(
            held["model"], r, s, train_ids=train_ids, targets=cfg.targets, steps=cfg.steps, batch_size=cfg.batch_size,
            lr=lrs[r], schedule=cfg.schedule, checkpoints=cfg.checkpoints, evaluate=evaluate, progress=cfg.progress)
        return {**arrays, **extra}

    folder = output_folder()
    parts = training.run_parts([(r, s) for s in cfg.seeds for r in cfg.ranks], one_run,
                               folder / "parts" if folder is not None else None, settings=_part_settings(cfg),
                               progress=cfg.progress, log=print if cfg.progress else None)
    return _training_result(cfg, parts, cfg.seeds, d=held["model"].config.hidden_size, model=path, generator=generator)


@experiment("llm-training-indomain", chapter=CHAPTER, profiles=PROFILES_INDOMAIN, paper=PAPER_INDOMAIN)
def llm_training_indomain(cfg: IndomainConfig, generator: torch.Generator, device) -> dict[str, Any]:
    """Figs. 3, 4, 6 and Prop. 3.3 as in :func:`llm_training`, from LoRA runs that also train on the
    new domain's own text: the first 80 % of *Hamlet* joined with as many blocks of the other plays,
    the new domain scored on *Hamlet*'s last 20 % (:class:`IndomainConfig`).

    The same ranks, seeds, steps, learning rates, checkpoints and summaries as :func:`llm_training`
    in each profile, one part per (rank, seed) in ``DIR/llm-training-indomain/parts/`` under
    ``python -m companion run llm-training-indomain --out DIR``; a killed run resumes from them.

    Returns
    -------
    dict as :func:`llm_training`'s, and ``new_split``: the play's half-open token ranges, ``tokens``,
    ``train_start``, ``train_end`` (trained on) and ``score_start``, ``score_end`` (scored on).

    Examples
    --------
    >>> from companion.experiments import get
    >>> full = get("llm-training-indomain").configure("full")
    >>> full.new_fraction, dataclasses.replace(full, new_fraction=0.8) == full
    (0.8, True)
    >>> {k: v for k, v in dataclasses.asdict(full).items() if k != "new_fraction"} == dataclasses.asdict(PROFILES_TRAINING["full"])
    True
    """
    return _train_runs(cfg, generator, device, _indomain_data)


def _learning_rates(cfg: TrainingConfig) -> dict[int, float]:
    """The constant learning rate of each rank: ``lr * r ** -lr_rank_power``."""
    return {int(r): cfg.lr * float(r) ** -cfg.lr_rank_power for r in cfg.ranks}


def _part_settings(cfg: TrainingConfig) -> dict[str, Any]:
    """What makes a stored part current: every setting of a run (not the progress bars, the baseline, the run list)."""
    return {k: v for k, v in dataclasses.asdict(cfg).items() if k not in ("progress", "baseline_samples", "seed", "ranks", "seeds")}


def _training_result(cfg: TrainingConfig, parts: dict, seeds: Sequence[int], *, d: int, model: str,
                     generator: torch.Generator) -> dict[str, Any]:
    """The :func:`llm_training` result from its parts (``(rank, seed) -> arrays``) for ``cfg.ranks`` x ``seeds``."""
    from ..llm import probes, training

    runs = {int(r): training.stack_seeds({(r_, s_): p for (r_, s_), p in parts.items() if s_ in set(seeds)}, r)
            for r in cfg.ranks}
    samples = {int(r): probes.random_subspace_alignment(d, r, cfg.baseline_samples, generator=generator) for r in cfg.ranks}
    first = runs[int(cfg.ranks[0])]
    extra = {}
    if "new_split" in first:  # llm-training-indomain: every part trained and scored on the same token ranges
        split = np.concatenate([np.asarray(run["new_split"]).reshape(-1, len(SPLIT_FIELDS)) for run in runs.values()])
        if (split != split[0]).any():
            raise ValueError(f"parts: the runs were trained or scored on different token ranges: {np.unique(split, axis=0).tolist()}")
        extra["new_split"] = dict(zip(SPLIT_FIELDS, (int(x) for x in split[0])))
    return {**extra, "model": model, "ranks": np.array(cfg.ranks), "seeds": np.array(seeds), "runs": runs, "tau": cfg.tau,
            "layers": int(np.shape(first["drift"])[-1]), "d": int(d), "targets": tuple(cfg.targets),
            "lr": _learning_rates(cfg),
            "random_baseline": {r: float(a.mean()) for r, a in samples.items()},
            "random_baseline_se": {r: float(a.std() / math.sqrt(a.numel())) for r, a in samples.items()},
            "steps": cfg.steps, "tokens_per_step": cfg.batch_size * cfg.train_block_len,
            "eval_tokens": cfg.eval_blocks * cfg.block_len}


def training_from_parts(folder, profile: str = "full", *, d: int | None = None, cfg: TrainingConfig | None = None,
                        experiment: str = "llm-training", stored_ranks: bool = False) -> dict[str, Any] | None:
    """The ``profile`` result of :func:`llm_training` (or of ``experiment``, :func:`llm_training_indomain`)
    assembled from the runs stored so far as parts.

    ``python -m companion run llm-training --out DIR`` stores each (rank, seed) run as it finishes in
    ``DIR/llm-training/parts`` (:func:`companion.llm.training.run_parts`); this reads every part there
    that is current for the profile (verified, computed with its settings: :func:`companion.llm.training.load_part`)
    and keeps the seeds that every rank of the profile has, so that rank comparisons stay paired.
    Nothing is trained. The result is what :func:`llm_training` returns for those seeds, with
    ``experiment``, ``config`` (the profile's, ``seeds`` those kept), ``profile`` (the profile's
    name when every run is there, else ``"<profile>, k of n runs"``), ``parts`` (the kept keys) and
    ``left_out`` (parts stored but not kept: their seed is missing in some rank).

    Parameters
    ----------
    folder : str or Path
        The parts folder (``data/results/llm-training/parts`` for the stored full profile).
    profile : str
        The profile whose runs to read (its settings decide which parts are current).
    d : int, optional
        Hidden size of the model (the alignment's random-subspace law depends on it); None reads
        ``hidden_size`` from the config.json of the profile's ``model_path`` (the bundled SmolLM2).
    cfg : TrainingConfig, optional
        The config whose runs to read instead of the profile's (its ranks, seeds and settings).
    experiment : str
        ``"llm-training"`` or ``"llm-training-indomain"``: whose profiles, and the name the result
        carries (so that :func:`companion.experiments.judge` applies that experiment's claims).
    stored_ranks : bool
        False: every rank of the profile is needed (None until some seed has them all). True: the
        ranks with no stored part are left out, and the seeds kept are those every remaining rank
        has (a profile still being computed: ``config`` then names the ranks kept, and ``profile``
        counts the runs against the profile's).

    Returns
    -------
    dict or None
        As :func:`llm_training`'s result; None when no seed is stored for every rank.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from companion.llm import training
    >>> cfg = dataclasses.replace(PROFILES_TRAINING["fast"], baseline_samples=8)
    >>> folder = Path(tempfile.mkdtemp())
    >>> def part(r, s):  # two checkpoints, three layers
    ...     return {"step": np.array([0, 12]), "ppl_base": np.array([10.0, 11.0]), "ppl_new": np.array([50.0, 40.0 - s]),
    ...             "b_tau": np.array([4, 2]), **{k: np.ones((2, 3)) for k in ("norm_layers", "align", "drift")}}
    >>> _ = training.run_parts([(4, 0), (16, 0), (4, 1)], part, folder, settings=_part_settings(cfg))
    >>> res = training_from_parts(folder, "fast", d=64, cfg=dataclasses.replace(cfg, seeds=(0, 1)))
    >>> res["profile"], res["seeds"].tolist(), res["left_out"], res["runs"][16]["ppl_new"].tolist()
    ('fast, 2 of 4 runs', [0], [(4, 1)], [[50.0, 40.0]])
    >>> training_from_parts(Path(tempfile.mkdtemp()), "fast") is None   # nothing stored
    True
    >>> training_from_parts(folder, "fast", d=64, experiment="llm-training-indomain") is None   # other settings: not its parts
    True
    >>> _ = training.run_parts([(4, 2)], part, folder, settings=_part_settings(cfg))
    >>> mine = dataclasses.replace(cfg, ranks=(4, 16, 64), seeds=(0, 1, 2))   # rank 64 not stored yet
    >>> training_from_parts(folder, "fast", d=64, cfg=mine) is None
    True
    >>> res = training_from_parts(folder, "fast", d=64, cfg=mine, stored_ranks=True)
    >>> res["profile"], res["ranks"].tolist(), res["config"]["ranks"], res["left_out"]
    ('fast, 2 of 9 runs', [4, 16], (4, 16), [(4, 1), (4, 2)])
    """
    from pathlib import Path

    from ..llm import training

    profiles = {"llm-training": PROFILES_TRAINING, "llm-training-indomain": PROFILES_INDOMAIN}
    if experiment not in profiles:
        raise ValueError(f"experiment must be one of {tuple(profiles)}, got {experiment!r}")
    if profile not in profiles[experiment]:
        raise ValueError(f"profile must be one of {tuple(profiles[experiment])}, got {profile!r}")
    cfg = profiles[experiment][profile] if cfg is None else cfg
    settings = _part_settings(cfg)
    parts = {}
    for r in cfg.ranks:
        for s in cfg.seeds:
            arrays = training.load_part(training.part_path(Path(folder), r, s), settings)
            if arrays is not None:
                parts[(int(r), int(s))] = arrays
    total = len(cfg.ranks) * len(cfg.seeds)
    if stored_ranks:  # a profile still being computed: the ranks with some stored part
        cfg = dataclasses.replace(cfg, ranks=tuple(r for r in cfg.ranks if any(r_ == int(r) for r_, _ in parts)))
    seeds = [int(s) for s in cfg.seeds if cfg.ranks and all((int(r), int(s)) in parts for r in cfg.ranks)]
    if not seeds:
        return None
    if d is None:
        d = _hidden_size(cfg.model_path)
    res = _training_result(cfg, parts, seeds, d=d, model=str(cfg.model_path or "SmolLM2-135M-Instruct (bundled)"),
                           generator=torch.Generator().manual_seed(cfg.seed))
    kept = [(int(r), s) for s in seeds for r in cfg.ranks]
    res.update(experiment=experiment, config=dataclasses.asdict(dataclasses.replace(cfg, seeds=tuple(seeds))),
               profile=profile if len(kept) == total else f"{profile}, {len(kept)} of {total} runs",
               parts=kept, left_out=sorted(k for k in parts if k not in set(kept)))
    return res


def _hidden_size(model_path: str | None) -> int:
    """``hidden_size`` from the config.json of a local model folder (None: the bundled SmolLM2), no weights loaded."""
    import json
    from pathlib import Path

    from ..llm import assets

    path = Path(assets.smollm2_path(prepare=False) if model_path is None else model_path) / "config.json"
    try:
        return int(json.loads(path.read_text())["hidden_size"])
    except (OSError, KeyError, ValueError) as e:
        raise ValueError(f"model_path: cannot read hidden_size from {path} ({e}); pass d") from e


def _spearman(x: Any, y: Any) -> float:
    """Rank correlation (ranks by argsort: ties broken by order, none occur in a training curve)."""
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


def _total_norm(run: dict[str, Any]) -> np.ndarray:
    """(S, C) ``(sum_l ||Delta V_l||_F^2)^{1/2}`` of a stacked run."""
    return np.sqrt(np.square(np.asarray(run["norm_layers"], float)).sum(-1))


def _forgetting(run: dict[str, Any]) -> np.ndarray:
    """(S, C) ``ln(ppl_base / ppl_base at step 0)``: the base-domain forgetting of a stacked run."""
    p = np.asarray(run["ppl_base"], float)
    return np.log(p / p[:, :1])


def run_ends(result: dict[str, Any]) -> dict[tuple[int, int], tuple[float, float]]:
    """Per run ``(rank, seed)`` of a training result: its final total update norm
    ``(sum_l ||Delta V_l||_F^2)^{1/2}`` and its final / initial base-domain perplexity, to pair the
    runs of two experiments run by run.

    Examples
    --------
    >>> run = {"norm_layers": np.array([[[0.0, 0.0], [3.0, 4.0]]]), "ppl_base": np.array([[10.0, 12.0]])}
    >>> run_ends({"runs": {4: run}, "seeds": np.array([2])})
    {(4, 2): (5.0, 1.2)}
    """
    ends = {}
    for r, run in result["runs"].items():
        for s, n, f in zip(result["seeds"], _total_norm(run)[:, -1], np.exp(_forgetting(run)[:, -1])):
            ends[(int(r), int(s))] = (float(n), float(f))
    return ends


def _at_norm(norm: np.ndarray, value: np.ndarray, at: float) -> float:
    """``value`` at update norm ``at`` along one run's checkpoints, linear in log norm (step 0 left out)."""
    keep = norm > 0
    return float(np.interp(math.log(at), np.log(norm[keep]), value[keep]))


def _interval(x: Any) -> tuple[float, float]:
    """Mean over seeds and its 95 % t half-width (0 with one seed: no spread measured)."""
    from ..fits import mean_interval

    m, h = mean_interval(np.asarray(x, float))
    return float(m), (0.0 if not np.isfinite(h) else float(h))


def training_summary(result: dict[str, Any]) -> dict[str, Any]:
    """The numbers the training claims read from a :func:`llm_training` result.

    Per rank ``r`` (each a mean over seeds with its 95 % t half-width ``*_err``; the half-width is 0
    with one seed, where no spread is measured):

    * ``fall``: held-out new-domain perplexity, 1 - final / initial (learning); ``fall_min``,
      ``fall_max``: the smallest and largest over all runs; ``target_met``: ``fall_min`` >=
      :data:`TARGET_FALL`;
    * ``forgot``: final / initial base-domain perplexity; ``rho``: Spearman correlation of update
      norm and base perplexity over the checkpoints of each run; ``norm_end``: the total update
      norm ``(sum_l ||Delta V_l||_F^2)^{1/2}`` at the end (seed mean); ``norm_span``: largest over
      smallest nonzero total update norm of any checkpoint of any run (the range Fig. 3 covers);
    * ``common_norm``: the largest total update norm every run reaches (inside every run's range,
      nan when the ranges do not overlap); ``at_norm``: forgetting ``ln(ppl / ppl_0)`` there,
      interpolated in log norm; ``common_step``: the step at which the rank's seed-mean norm reaches
      it (interpolated in log norm; the ranks are compared at one norm, not at one step);
      ``rank_ratio``: max / min over ranks of ``at_norm`` (nan unless all are positive) and
      ``rank_ratio_err`` from the two ranks' errors;
    * ``align_start``: layer-mean Align at step 0 (peft's random A) and ``align_start_se`` its
      standard error under the random-subspace law; ``align_first``, ``align_end``: at the first
      checkpoint after step 0 and at the last; ``align_rise`` their difference; ``align_z``:
      (end - 1) / sqrt(seed error^2 + random-law standard error^2), the distance of the trained
      alignment from a random subspace's;
    * ``b_first``, ``b_end``: bifurcation depth at the first checkpoint after step 0 and at the
      last (``L + 1``: no layer above tau); ``b_drop``: first - end;
    * ``drift_end``: drift at the last layer (before the final norm) at the end, per run, and
      ``corr``: Pearson correlation across all runs of ``ln drift_end`` and final forgetting with its
      Fisher z 95 % interval ``corr_low``, ``corr_high`` (nan with fewer than 4 runs, or when either
      does not vary).

    Examples
    --------
    >>> C, L = 3, 4
    >>> run = {"step": np.array([0, 1, 2]), "norm_layers": np.array([[[0.0] * L, [0.5] * L, [1.0] * L]]),
    ...        "ppl_base": np.array([[10.0, 11.0, 12.0]]), "ppl_new": np.array([[50.0, 40.0, 30.0]]),
    ...        "align": np.ones((1, C, L)), "drift": np.full((1, C, L), 0.1), "b_tau": np.array([[5, 5, 2]])}
    >>> s = training_summary({"runs": {8: run}, "d": 64, "layers": L})
    >>> s["rho"], round(s["fall"][8], 2), round(s["forgot"][8], 2), s["b_end"][8], s["norm_span"]
    ({8: 1.0}, 0.4, 1.2, 2.0, 2.0)
    """
    runs, d, L = result["runs"], int(result.get("d", 0)), int(result.get("layers", 0))
    ranks = list(runs)
    out: dict[str, Any] = {k: {} for k in (
        "fall", "fall_err", "forgot", "forgot_err", "rho", "rho_err", "at_norm", "at_norm_err", "align_start",
        "align_start_se", "align_first", "align_end", "align_end_err", "align_rise", "align_rise_err", "align_z",
        "b_first", "b_first_err", "b_end", "b_end_err", "b_drop", "b_drop_err", "norm_end", "common_step")}
    norms = {r: _total_norm(runs[r]) for r in ranks}
    forget = {r: _forgetting(runs[r]) for r in ranks}
    for r in ranks:
        run = runs[r]
        new = np.asarray(run["ppl_new"], float)
        out["fall"][r], out["fall_err"][r] = _interval(1 - new[:, -1] / new[:, 0])
        out["forgot"][r], out["forgot_err"][r] = _interval(np.exp(forget[r][:, -1]))
        out["norm_end"][r] = float(norms[r][:, -1].mean())
        out["rho"][r], out["rho_err"][r] = _interval([_spearman(n, p) for n, p in zip(norms[r], run["ppl_base"])])
        al = np.asarray(run["align"], float).mean(-1)  # (S, C) layer mean
        out["align_start"][r] = float(al[:, 0].mean())
        # Random-subspace law: |Pi u|^2 ~ Beta(r/2, (d - r)/2), so Align = (d/r) |Pi u|^2 has variance
        # 2 (d - r) / (r (d + 2)); the mean over L independent layers (and S seeds), that over L S.
        var1 = 2 * (d - int(r)) / (int(r) * (d + 2)) if d else math.nan
        out["align_start_se"][r] = math.sqrt(var1 / (np.shape(run["align"])[-1] * al.shape[0])) if d else math.nan
        out["align_first"][r] = float(al[:, 1].mean())
        out["align_end"][r], out["align_end_err"][r] = _interval(al[:, -1])
        out["align_rise"][r], out["align_rise_err"][r] = _interval(al[:, -1] - al[:, 1])
        se_seeds = float(al[:, -1].std(ddof=1) / math.sqrt(al.shape[0])) if al.shape[0] > 1 else 0.0
        se_rand = out["align_start_se"][r]  # a random subspace per (seed, layer), averaged as the trained ones are
        out["align_z"][r] = (out["align_end"][r] - 1) / math.hypot(se_seeds, se_rand)
        b = np.asarray(run["b_tau"], float)
        out["b_first"][r], out["b_first_err"][r] = _interval(b[:, 1])
        out["b_end"][r], out["b_end_err"][r] = _interval(b[:, -1])
        out["b_drop"][r], out["b_drop_err"][r] = _interval(b[:, 1] - b[:, -1])
    falls = np.concatenate([1 - np.asarray(runs[r]["ppl_new"], float)[:, -1] / np.asarray(runs[r]["ppl_new"], float)[:, 0]
                            for r in ranks])
    out["fall_min"], out["fall_max"] = float(falls.min()), float(falls.max())
    out["target_met"] = bool(out["fall_min"] >= TARGET_FALL)
    moved = np.concatenate([n[n > 0] for n in norms.values()])
    out["norm_span"] = float(moved.max() / moved.min()) if moved.size else math.nan
    # Forgetting at one norm that every run reaches: the largest final norm all share, inside each run's range.
    lo = max(float(n[:, 1:][n[:, 1:] > 0].min()) for n in norms.values())
    hi = min(float(n[:, -1].min()) for n in norms.values())
    common = hi if hi >= lo else math.nan
    out["common_norm"] = common
    for r in ranks:
        vals = [_at_norm(n, f, common) for n, f in zip(norms[r], forget[r])] if np.isfinite(common) else [math.nan]
        out["at_norm"][r], out["at_norm_err"][r] = _interval(vals)
        mean_norm = norms[r].mean(0)
        out["common_step"][r] = (_at_norm(mean_norm, np.asarray(runs[r]["step"], float), common)
                                 if np.isfinite(common) else math.nan)
    m = np.array([out["at_norm"][r] for r in ranks])
    if np.all(m > 0):
        i, j = int(m.argmax()), int(m.argmin())
        out["rank_ratio"] = float(m[i] / m[j])
        out["rank_ratio_err"] = out["rank_ratio"] * math.hypot(out["at_norm_err"][ranks[i]] / m[i], out["at_norm_err"][ranks[j]] / m[j])
        out["rank_pair"] = (int(ranks[i]), int(ranks[j]))
    else:
        out["rank_ratio"], out["rank_ratio_err"], out["rank_pair"] = math.nan, math.nan, None
    drift_end = np.concatenate([np.asarray(runs[r]["drift"], float)[:, -1, -1] for r in ranks])
    forget_end = np.concatenate([forget[r][:, -1] for r in ranks])
    out["drift_end"], out["forget_end"] = drift_end, forget_end
    if drift_end.size >= 4 and np.all(drift_end > 0) and np.ptp(drift_end) > 0 and np.ptp(forget_end) > 0:
        from ..llm.training import pearson_interval

        out["corr"], out["corr_low"], out["corr_high"] = pearson_interval(np.log(drift_end), forget_end)
    else:
        out["corr"] = out["corr_low"] = out["corr_high"] = math.nan
    out["layers"] = L
    return out


_TRAINING_ROWS = {
    "A-fig3-forgetting-vs-norm-smollm2": ("Sec. 4.1.2, Fig. 3", "During LoRA training base-domain loss rises with the update norm"),
    "A-fig3-rank-matters-smollm2": ("Sec. 4.1.2, Fig. 3", "After training, forgetting at a given update norm depends on the rank"),
    "A-align-random-baseline": (
        "Sec. 4.1.2, App. E.3",
        "Trained LoRA updates align with the top singular direction u1 of V_l more than a random subspace of the same "
        "rank does (Align, normalised to 1 for a random subspace)"),
    "A-fig4-alignment-above-one-smollm2": (
        "Sec. 4.1.2, Fig. 4",
        "Trained LoRA updates align with u1 more than random (Align > 1) and, for the lower ranks, the alignment rises "
        "during training"),
    "A-fig6-bifurcation-depth-smollm2": ("Sec. 4.2.1, Fig. 6", "The bifurcation depth b_0.2 moves to earlier layers as LoRA training proceeds"),
    "A-drift-forgetting-correlation-smollm2": (
        "Sec. 4.1.2",
        "The update drives the representation away from the base model's, and that drift goes with forgetting: "
        "across runs, last-layer hidden-state drift and base-domain forgetting are positively correlated"),
}


# llm-training-indomain judges the same rows under ids of its own (the ledger's ids are unique), saying its data.
_INDOMAIN_SUFFIX = "-indomain"
_INDOMAIN_NOTE = " (LoRA trained on the other plays and the first 80 % of Hamlet, scored on its last 20 %)"


def _pm(v: float, e: float) -> str:
    return f"{v:.3g} +- {e:.2g}"


@claims_for("llm-training")
def training_claims(result: dict[str, Any], cfg: TrainingConfig) -> list[ledger.Claim]:
    """Figs. 3, 4, 6, App. E.3 and the premise of Sec. 4.1.2, each judged with its uncertainty over seeds.

    Judged only on runs that learned (held-out new-domain perplexity down by :data:`LEARNED_FALL` in
    every run) with at least :data:`MIN_SEEDS` seeds per rank, otherwise every row is not-checkable
    with the measured perplexities. A judged row's
    statement says how far the perplexity fell and whether that met :data:`TARGET_FALL`. Then (see
    :func:`training_summary` for the numbers; ``x +- e`` is a seed mean with its 95 % half-width;
    a verdict the half-width could flip is partly):

    * forgetting rises with the norm: Spearman(norm, base ppl) over checkpoints >= :data:`MIN_SPEARMAN`
      (the rank with the lowest mean), and base perplexity up at the end in every rank;
    * the rank matters: forgetting at the common norm differs by more than :data:`RANK_MATTERS`
      (max / min over ranks);
    * trained alignment above a random subspace's: ``align_z`` >= :data:`ALIGN_Z` in every rank
      (partly between 0 and :data:`ALIGN_Z`);
    * Fig. 4: the mean end alignment above 1 in every rank (needed), and wanted: above 1 beyond its
      half-width, and rising from the first checkpoint beyond its half-width for the ranks <=
      :data:`LOW_RANK`;
    * Fig. 6: at the end some layer exceeds tau (mean b_end <= L, needed) and b moved earlier
      (b_first - b_end > :data:`B_MOVE` beyond its half-width, wanted);
    * drift and forgetting correlate across runs: the Fisher-z interval's lower end > 0 (partly when
      only the estimate is; not-checkable with fewer than 4 runs).

    Examples
    --------
    >>> C, L = 3, 4
    >>> def run(scale, forget, align_end):
    ...     return {"step": np.array([0, 1, 2]), "norm_layers": scale * np.array([[[0.0] * L, [0.5] * L, [1.0] * L]] * 3),
    ...             "ppl_base": 10 * np.exp(forget * np.array([[0.0, 0.5, 1.0]] * 3)),
    ...             "ppl_new": np.array([[50.0, 40.0, 30.0]] * 3),
    ...             "align": np.stack([np.ones((3, L)) * np.array([[1.0], [1.2], [align_end]])] * 3),
    ...             "drift": np.full((3, C, L), 0.1) * scale * forget, "b_tau": np.array([[5, 4, 2]] * 3)}
    >>> res = {"runs": {4: run(1.0, 0.2, 1.5), 16: run(1.0, 0.4, 1.6)}, "layers": L, "d": 64}
    >>> [c.status for c in training_claims(res, TrainingConfig())]
    ['reproduced', 'reproduced', 'reproduced', 'reproduced', 'reproduced', 'reproduced']
    >>> res["runs"][16] = run(1.0, 0.2, 1.6)  # both ranks forget alike at the same norm: the rank does not matter
    >>> training_claims(res, TrainingConfig())[1].status
    'not-reproduced'
    >>> one = {r: {k: (v[:1] if k != "step" else v) for k, v in run.items()} for r, run in res["runs"].items()}
    >>> {c.status for c in training_claims(dict(res, runs=one), TrainingConfig())}  # one seed: no spread, no verdict
    {'not-checkable'}
    >>> res["runs"][4]["ppl_new"] = np.array([[50.0, 49.0, 48.0]] * 3)  # rank 4 barely learned: no verdict
    >>> {c.status for c in training_claims(res, TrainingConfig())}
    {'not-checkable'}
    """
    return _training_rows(result)


@claims_for("llm-training-indomain")
def indomain_claims(result: dict[str, Any], cfg: IndomainConfig) -> list[ledger.Claim]:
    """The rows of :func:`training_claims`, judged the same way on a :func:`llm_training_indomain`
    result, under their ids with ``-indomain`` appended and a statement that names the data.

    Examples
    --------
    >>> C, L = 3, 4
    >>> def run(forget):
    ...     return {"step": np.array([0, 1, 2]), "norm_layers": np.array([[[0.0] * L, [0.5] * L, [1.0] * L]] * 3),
    ...             "ppl_base": 10 * np.exp(forget * np.array([[0.0, 0.5, 1.0]] * 3)),
    ...             "ppl_new": np.array([[50.0, 40.0, 30.0]] * 3), "align": np.full((3, C, L), 1.5),
    ...             "drift": np.full((3, C, L), 0.1) * forget, "b_tau": np.array([[5, 4, 2]] * 3)}
    >>> res = {"runs": {4: run(0.2), 16: run(0.4)}, "layers": L, "d": 64}
    >>> rows = indomain_claims(res, IndomainConfig())
    >>> rows[1].id, rows[1].status, "first 80 % of Hamlet" in rows[1].statement
    ('A-fig3-rank-matters-smollm2-indomain', 'reproduced', True)
    >>> res["runs"][16] = run(0.2)   # both ranks forget alike at the same norm
    >>> indomain_claims(res, IndomainConfig())[1].status
    'not-reproduced'
    """
    return _training_rows(result, suffix=_INDOMAIN_SUFFIX, note=_INDOMAIN_NOTE)


def _training_rows(result: dict[str, Any], *, suffix: str = "", note: str = "") -> list[ledger.Claim]:
    """:func:`training_claims`' rows: ids :data:`_TRAINING_ROWS` + ``suffix``, ``note`` after each statement."""
    s = training_summary(result)
    L = int(result["layers"])
    ranks = list(s["fall"])
    n_seeds = int(np.shape(result["runs"][ranks[0]]["ppl_base"])[0])
    seeds_note = f"{n_seeds} seed{'s' if n_seeds != 1 else ''} per rank" + (
        "; one seed: no spread measured, the half-widths are 0" if n_seeds < 2 else ", 95 % t half-widths")

    def claim(key, verdict, measured, expected, tolerance, uncertainty=None):
        w, st = _TRAINING_ROWS[key]
        return ledger.Claim(id=key + suffix, paper="A", where=w, statement=st + note + f" [{seeds_note}]", verdict=verdict,
                            measured=measured, expected=expected, tolerance=tolerance, uncertainty=uncertainty)

    if s["fall_min"] < LEARNED_FALL:  # the probe did not train: none of its rows is a verdict
        new = {r: (float(np.mean(run["ppl_new"][:, 0])), float(np.mean(run["ppl_new"][:, -1]))) for r, run in result["runs"].items()}
        why = "no run that learned: held-out new-domain ppl " + ", ".join(f"{a:.3g} -> {b:.3g} (r = {r})" for r, (a, b) in new.items())
        return [claim(k, ledger.NOT_CHECKABLE, why, f"runs whose held-out new-domain ppl fell >= {LEARNED_FALL:.0%}", LEARNED_FALL)
                for k in _TRAINING_ROWS]
    lo, hi = f"{s['fall_min']:.0%}", f"{s['fall_max']:.0%}"
    if n_seeds < MIN_SEEDS:  # learned, but one seed cannot say how much of a number is the seed's
        why = (f"{n_seeds} seed per rank (ranks {', '.join(str(r) for r in ranks)}; held-out new-domain ppl fell "
               f"{lo if lo == hi else lo + ' to ' + hi}): no spread over seeds")
        return [claim(k, ledger.NOT_CHECKABLE, why, f"at least {MIN_SEEDS} seeds per rank", MIN_SEEDS) for k in _TRAINING_ROWS]
    rows = []
    # Said in every judged row: how much the runs learned, and whether that reached the target the profile aimed at.
    seeds_note += (f"; held-out new-domain ppl fell {lo if lo == hi else lo + ' to ' + hi} over the runs "
                   f"(target {TARGET_FALL:.0%}: {'met' if s['target_met'] else 'not met'})")

    def row(key, verdict, measured, expected, tolerance, uncertainty):
        rows.append(claim(key, verdict, measured, expected, tolerance, uncertainty))

    # Fig. 3, the norm: the rank whose mean Spearman is lowest decides.
    r0 = min(ranks, key=lambda r: s["rho"][r])
    forgot_min = min(ranks, key=lambda r: s["forgot"][r])
    row("A-fig3-forgetting-vs-norm-smollm2",
        ledger.worst(ledger.within(s["rho"][r0], s["rho_err"][r0], MIN_SPEARMAN, better="higher", scale=1 - MIN_SPEARMAN),
                     ledger.within(s["forgot"][forgot_min], s["forgot_err"][forgot_min], 1.0, better="higher", scale=0.1)),
        [s["rho"][r0], s["forgot"][forgot_min]],
        f"Spearman(norm, base ppl) over checkpoints >= {MIN_SPEARMAN:g} in every rank (lowest: r = {r0}) and final/initial "
        f"base ppl > 1 in every rank (lowest: r = {forgot_min})", MIN_SPEARMAN,
        [s["rho_err"][r0], s["forgot_err"][forgot_min]])
    # Fig. 3, the rank: forgetting at the common norm.
    if len(ranks) < 2:
        row("A-fig3-rank-matters-smollm2", ledger.NOT_CHECKABLE, f"one rank (r = {ranks[0]}): no other rank to compare",
            f"max/min over ranks of forgetting at a common norm > {RANK_MATTERS:g}", RANK_MATTERS - 1, None)
    elif np.isfinite(s["rank_ratio"]):
        a, b = s["rank_pair"]
        row("A-fig3-rank-matters-smollm2",
            ledger.within(s["rank_ratio"], s["rank_ratio_err"], RANK_MATTERS, better="higher", scale=RANK_MATTERS - 1),
            s["rank_ratio"], f"forgetting ln(ppl/ppl_0) at the common norm {s['common_norm']:.3g}, max/min over ranks "
            f"(r = {a} / r = {b}) > {RANK_MATTERS:g}", RANK_MATTERS - 1, s["rank_ratio_err"])
    else:
        row("A-fig3-rank-matters-smollm2", ledger.NOT_CHECKABLE,
            f"no common norm with positive forgetting in every rank (common norm {s['common_norm']:.3g}, forgetting there "
            + ", ".join(f"{s['at_norm'][r]:.3g} (r = {r})" for r in ranks) + ")",
            f"max/min over ranks of forgetting at a common norm > {RANK_MATTERS:g}", RANK_MATTERS - 1, None)
    # App. E.3: trained alignment against the random-subspace law, with the seeds' spread.
    zr = min(ranks, key=lambda r: s["align_z"][r])
    row("A-align-random-baseline",
        ledger.verdict(s["align_z"][zr], ALIGN_Z, partly=0.0, better="higher"),
        [s["align_end"][r] for r in ranks],
        f"(end layer-mean Align - 1) / sqrt(seed se^2 + random-subspace se^2) >= {ALIGN_Z:g} in every rank "
        f"(lowest: {s['align_z'][zr]:.3g} at r = {zr}); between 0 and {ALIGN_Z:g}: partly", ALIGN_Z,
        [s["align_end_err"][r] for r in ranks])
    # Fig. 4: above 1 (needed) and rising for the lower ranks (wanted).
    low = [r for r in ranks if int(r) <= LOW_RANK] or ranks[:1]
    ra = min(ranks, key=lambda r: s["align_end"][r] - s["align_end_err"][r])
    rr = min(low, key=lambda r: s["align_rise"][r] - s["align_rise_err"][r])
    re_ = min(ranks, key=lambda r: s["align_end"][r])
    row("A-fig4-alignment-above-one-smollm2",
        ledger.graded([ledger.verdict(s["align_end"][re_], 1.0, better="higher")],
                      [ledger.within(s["align_end"][ra], s["align_end_err"][ra], 1.0, better="higher"),
                       ledger.within(s["align_rise"][rr], s["align_rise_err"][rr], 0.0, better="higher", scale=1.0)]),
        [s["align_end"][ra], s["align_rise"][rr]],
        f"end layer-mean Align > 1 in every rank (lowest: r = {ra}); end - first checkpoint > 0 for r <= {LOW_RANK} "
        f"(lowest: r = {rr})", 0.0, [s["align_end_err"][ra], s["align_rise_err"][rr]])
    # Fig. 6: a layer above tau at the end (needed), b moved earlier (wanted).
    rb = max(ranks, key=lambda r: s["b_end"][r])
    rd = min(ranks, key=lambda r: s["b_drop"][r] - s["b_drop_err"][r])
    row("A-fig6-bifurcation-depth-smollm2",
        ledger.graded([ledger.verdict(s["b_end"][rb], L, scale=L)],
                      [ledger.within(s["b_drop"][rd], s["b_drop_err"][rd], B_MOVE, better="higher", scale=L)]),
        [s["b_end"][r] / L for r in ranks],
        f"b_end / L <= 1 in every rank (L + 1: no layer above tau) and b_first - b_end > {B_MOVE:g} (lowest: r = {rd}, "
        f"{_pm(s['b_drop'][rd], s['b_drop_err'][rd])}); Qwen3: 28/28 -> 16/28 = 0.57", 0,
        [s["b_end_err"][r] / L for r in ranks])
    # The premise: drift goes with forgetting across runs.
    if np.isfinite(s["corr"]):
        row("A-drift-forgetting-correlation-smollm2",
            ledger.graded([ledger.verdict(s["corr"], 0.0, better="higher", scale=1.0)],
                          [ledger.verdict(s["corr_low"], 0.0, better="higher", scale=1.0)]),
            s["corr"], f"Pearson r(ln last-layer drift, ln(ppl/ppl_0)) over {len(s['drift_end'])} runs at the end, "
            "95 % Fisher-z interval above 0", 0.0, [s["corr_low"], s["corr_high"]])
    else:
        row("A-drift-forgetting-correlation-smollm2", ledger.NOT_CHECKABLE,
            f"{len(s['drift_end'])} runs: a correlation with an interval needs at least 4", "r > 0 with its interval", 0.0, None)
    return rows


def _spectra_of(model, cfg: SpectraConfig, generator: torch.Generator) -> dict[str, Any]:
    from ..llm import spectra

    V = spectra.value_head_matrices(model)  # (layers, heads, hd, hd)
    ev = torch.linalg.eigvals(V)  # complex
    lead = ev.gather(-1, ev.abs().argmax(-1, keepdim=True)).squeeze(-1)
    scale = ev.abs().amax(-1, keepdim=True)
    real_nonneg = ((ev.imag.abs() <= 1e-6 * scale) & (ev.real >= -1e-6 * scale)).all(-1)
    layers, heads, hd = V.shape[:3]
    d = int(spectra.attention_weights(model)[0][0].shape[1])
    gap_resampled = spectra.resampled_eigengaps(model, generator=generator, draws=cfg.noise_draws)
    null_gap = spectra.gaussian_head_eigengaps(hd, d, cfg.null_samples, generator=generator)
    s_head, s_layer = spectra.qk_singular_values(model)
    cap_head, cap_layer = spectra.qk_rank_cap(model)
    floor = spectra.qk_noise_floor(model, generator=generator, draws=cfg.noise_draws).mean(0)  # (layers,)
    s1 = s_layer[:, :1]
    tau = floor.clamp(min=cfg.rank_rtol)  # per layer: the threshold a rank is read at

    def count(t):
        return (s_layer > t[:, None] * s1).sum(-1)

    sv = torch.linalg.svdvals(V)
    return {
        "eigvals": ev, "gap": spectra.eigengap(V), "gap_resampled": gap_resampled, "null_gap": null_gap,
        "frac_lead_real_positive": float(((lead.imag.abs() <= 1e-6 * lead.abs()) & (lead.real > 0)).double().mean()),
        "frac_heads_psd_like": float(real_nonneg.double().mean()),
        "frac_eig_negative_real": float((ev.real < 0).double().mean()),
        "rank_head": (s_head > cfg.rank_rtol * s_head[..., :1]).sum(-1), "rank_layer": count(torch.full_like(floor, cfg.rank_rtol)),
        "rank_layer_rtols": torch.stack([count(torch.full_like(floor, t)) for t in RANK_RTOLS]),  # (thresholds, layers)
        "noise_floor": floor, "rank_resolved": count(tau),
        "rank_resolved_band": torch.stack([count(tau / RANK_SPREAD_FACTOR), count(tau * RANK_SPREAD_FACTOR)]),
        "sv_layer": (s_layer / s1)[:, :cap_layer], "cap_head": cap_head, "cap_layer": cap_layer,
        "d": d, "heads": heads, "head_dim": hd, "rank_rtol": cfg.rank_rtol,
        "sv_ratio_min_max": float((sv[..., -1] / sv[..., 0]).median()),
    }


@experiment("llm-spectra", chapter=CHAPTER, profiles=PROFILES_SPECTRA, paper=PAPER_SPECTRA)
def llm_spectra(cfg: SpectraConfig, generator: torch.Generator, device) -> dict[str, Any]:
    """Fig. 7 / App. E.4: eigenvalues and eigengaps of per-head value matrices, ranks of A_h = K_h^T Q_h.

    Both profiles read the same weights; ``full`` draws more rounding noise and more Gaussian heads.
    Everything is computed on the CPU in float64 (``device`` is accepted but not used: the probe is a
    few small eigen- and singular-value problems per head).

    Returns
    -------
    dict with ``decoder`` and ``encoder``, each: ``path``; ``eigvals`` (layers, heads, hd) complex;
    ``gap`` (layers, heads), the relative eigengap of :func:`companion.llm.spectra.eigengap`, and
    ``gap_resampled`` (draws, layers, heads) the same after a fresh draw of 4-bit rounding noise;
    ``null_gap`` (null_samples,) of Gaussian heads of the same shape; the fractions of heads with a
    real nonnegative spectrum and with a real positive leading eigenvalue, of eigenvalues with
    negative real part; ``rank_head`` (layers, heads) and ``rank_layer`` (layers,) at ``rank_rtol``,
    ``rank_layer_rtols`` (3, layers) at :data:`RANK_RTOLS`; ``noise_floor`` (layers,) (0 for float
    weights), ``rank_resolved`` (layers,) above max(rank_rtol, noise floor) and ``rank_resolved_band``
    (2, layers) with that threshold divided and multiplied by :data:`RANK_SPREAD_FACTOR`; ``sv_layer``
    (layers, cap_layer) singular values of the layer sum over the largest; ``cap_head``, ``cap_layer``
    (:func:`companion.llm.spectra.qk_rank_cap`), ``d``, ``heads``, ``head_dim``, ``rank_rtol``, and the
    median sigma_min / sigma_max of V_h.
    """
    from ..llm import assets, probes

    check_positive(cfg.rank_rtol, "rank_rtol")
    model, _, path = _load(cfg.model_path, "cpu", tokenizer=False)  # weights only
    enc_path = assets.minilm_path() if cfg.encoder_path is None else cfg.encoder_path
    enc = probes.load_encoder(enc_path)
    return {"decoder": {"path": path, **_spectra_of(model, cfg, generator)},
            "encoder": {"path": str(enc_path), **_spectra_of(enc, cfg, generator)}}


def spectra_summary(side: dict[str, Any]) -> dict[str, Any]:
    """The numbers the llm-spectra claims read from one model's part of a :func:`llm_spectra` result.

    ``frac_gap``: fraction of heads whose :func:`companion.llm.spectra.eigengap` exceeds :data:`GAP_MIN`,
    with ``frac_gap_err``, its binomial standard error over heads and the rms change of the fraction under
    a fresh draw of rounding noise (``rounding``) in quadrature; ``null_frac`` (``null_err``) the same
    fraction for the Gaussian heads, ``excess = frac_gap - null_frac`` (``excess_err``); ``frac_gap_layer``
    per layer. ``rank_frac`` (3, layers): the layer sum's rank over its cap at the threshold divided by
    :data:`RANK_SPREAD_FACTOR`, at the threshold, and multiplied by it; ``first_to_later`` (3,): layer 1's
    over the median of layers >= 3 at each.

    Examples
    --------
    >>> side = {"gap": np.array([[0.2, -0.5], [0.1, 0.3]]), "gap_resampled": np.zeros((0, 2, 2)),
    ...         "null_gap": np.array([0.5, -1.0, -1.0, -1.0]), "cap_layer": 10,
    ...         "rank_resolved": np.array([2, 10, 9]), "rank_resolved_band": np.array([[4, 10, 10], [1, 8, 8]])}
    >>> s = spectra_summary(side)
    >>> s["frac_gap"], round(s["frac_gap_err"], 3), s["null_frac"], s["excess"]
    (0.75, 0.217, 0.25, 0.5)
    >>> s["rank_frac"][:, 0].tolist(), [round(float(r), 3) for r in s["first_to_later"]]
    ([0.4, 0.2, 0.1], [0.4, 0.222, 0.125])
    """
    gap = np.asarray(side["gap"], float)
    n = gap.size
    frac = float(np.mean(gap > GAP_MIN))
    resampled = np.asarray(side["gap_resampled"], float)
    moved = [float(np.mean(r > GAP_MIN)) - frac for r in resampled]
    rounding = float(np.sqrt(np.mean(np.square(moved)))) if moved else 0.0
    err = math.hypot(math.sqrt(frac * (1 - frac) / n), rounding)
    null = np.asarray(side["null_gap"], float)
    p0 = float(np.mean(null > GAP_MIN))
    se0 = math.sqrt(p0 * (1 - p0) / null.size)
    band = np.asarray(side["rank_resolved_band"], float)
    ranks = np.vstack([band[0], np.asarray(side["rank_resolved"], float), band[1]]) / float(side["cap_layer"])
    ratio = np.full(3, np.nan)  # needs layers >= 3
    if ranks.shape[1] >= 3:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = ranks[:, 0] / np.median(ranks[:, 2:], axis=1)
    return {"frac_gap": frac, "frac_gap_err": err, "rounding": rounding, "null_frac": p0, "null_err": se0,
            "excess": frac - p0, "excess_err": math.hypot(err, se0), "frac_gap_layer": np.mean(gap > GAP_MIN, axis=1),
            "rank_frac": ranks, "first_to_later": ratio}


def _gap_verdict(s: dict[str, Any]) -> ledger.Verdict:
    """More heads with a gap than Gaussian heads (needed), and most heads (wanted), each by GAP_Z errors."""
    above_random = ledger.verdict(s["excess"] - GAP_Z * s["excess_err"], 0.0, better="higher", scale=s["excess_err"] or 1.0)
    typical = ledger.verdict(s["frac_gap"] - GAP_Z * s["frac_gap_err"], MOST_HEADS, better="higher",
                             scale=s["frac_gap_err"] or 1.0)
    return ledger.graded([above_random], [typical])


@claims_for("llm-spectra")
def spectra_claims(result: dict[str, Any], cfg: SpectraConfig) -> list[ledger.Claim]:
    """Fig. 7 / App. E.4 on a decoder and an encoder (:func:`spectra_summary`).

    * ``A-fig7-value-eigengap``: the leading eigenvalue of V_h is real, positive and dominant (gap above
      :data:`GAP_MIN`) in more heads than for Gaussian heads of the same shape (needed) and in most heads
      (:data:`MOST_HEADS`, wanted), each by :data:`GAP_Z` standard errors, in both models;
    * ``A-E4-value-assumption-rare``: few heads (:data:`FEW_HEADS`) satisfy Assumption 3.2;
    * ``A-E4-qk-rank-first-layer-low``: the decoder's first layer's K^T Q has a lower rank (over its
      architectural cap) than the median of layers >= 3 by more than :data:`RANK_GAP`, at the threshold
      max(rank_rtol, 4-bit rounding floor) (needed) and with it moved by :data:`RANK_SPREAD_FACTOR` either way
      (wanted: the rank's uncertainty);
    * the ALBERT / Llama-2 numbers themselves are not checkable.

    Examples
    --------
    >>> def side(gap, resolved, band):
    ...     return {"gap": np.array(gap), "gap_resampled": np.zeros((0, 1, len(gap[0]))), "frac_heads_psd_like": 0.0,
    ...             "null_gap": np.r_[np.ones(100), -np.ones(900)], "cap_layer": 100,
    ...             "rank_resolved": np.array(resolved), "rank_resolved_band": np.array(band)}
    >>> low = side([[0.2] * 50 + [-1.0] * 50], [20, 90, 95, 95], [[40, 100, 100, 100], [10, 80, 85, 85]])
    >>> res = {"decoder": low, "encoder": side([[0.2] * 80 + [-1.0] * 20], [100] * 4, [[100] * 4] * 2)}
    >>> [c.status for c in spectra_claims(res, SpectraConfig())]
    ['partly', 'reproduced', 'reproduced', 'not-checkable']
    >>> res["decoder"]["rank_resolved_band"][0, 0] = 97   # not lower once the threshold is lowered
    >>> spectra_claims(res, SpectraConfig())[2].status
    'partly'
    >>> res["decoder"]["rank_resolved"][0] = 95           # nor at the threshold itself
    >>> spectra_claims(res, SpectraConfig())[2].status
    'not-reproduced'
    """
    dec, enc = spectra_summary(result["decoder"]), spectra_summary(result["encoder"])
    frac_ok = max(float(result["encoder"]["frac_heads_psd_like"]), float(result["decoder"]["frac_heads_psd_like"]))
    ratio, ranks, cap = dec["first_to_later"], dec["rank_frac"], int(result["decoder"]["cap_layer"])
    later = np.median(ranks[:, 2:], axis=1) if ranks.shape[1] >= 3 else np.full(3, np.nan)
    rank_ok = ledger.graded([ledger.verdict(ratio[1], 1 - RANK_GAP, scale=RANK_GAP)],
                            [ledger.verdict(ratio[0], 1 - RANK_GAP, scale=RANK_GAP),
                             ledger.verdict(ratio[2], 1 - RANK_GAP, scale=RANK_GAP)])
    return [
        ledger.Claim(
            id="A-fig7-value-eigengap", paper="A", where="Sec. 3.2, Fig. 7",
            statement="Pre-trained value matrices have the eigengap Prop. 3.3 relies on: a real, positive, dominant "
                      "leading eigenvalue",
            verdict=ledger.worst(_gap_verdict(dec), _gap_verdict(enc)),
            measured=[dec["frac_gap"], enc["frac_gap"]],
            expected=f"fraction of heads (decoder, encoder) with gap > {GAP_MIN:g}: above the Gaussian-head reference "
                     f"[{dec['null_frac']:.3g}, {enc['null_frac']:.3g}] and above {MOST_HEADS:g}, by {GAP_Z:g} errors",
            tolerance=GAP_Z, uncertainty=[dec["frac_gap_err"], enc["frac_gap_err"]]),
        ledger.Claim(
            id="A-E4-value-assumption-rare", paper="A", where="App. E.4.3",
            statement="Very few attention heads of real models satisfy Assumption 3.2 (V positive semi-definite)",
            verdict=ledger.verdict(frac_ok, FEW_HEADS), measured=frac_ok,
            expected=f"fraction of heads with real nonnegative spectrum <= {FEW_HEADS:g}", tolerance=FEW_HEADS),
        ledger.Claim(
            id="A-E4-qk-rank-first-layer-low", paper="A", where="App. E.4.4",
            statement="The query-key product K^T Q has a lower rank in the first layer than in later layers",
            verdict=rank_ok, measured=[float(ranks[1, 0]), float(later[1])],
            expected=f"rank/cap of layer 1 < {1 - RANK_GAP:g} x median rank/cap of layers >= 3 (cap {cap}), ranks above "
                     f"max(rtol {cfg.rank_rtol:g}, rounding floor) x sigma_1, also with that threshold x/÷ "
                     f"{RANK_SPREAD_FACTOR:.3g}",
            tolerance=RANK_GAP,
            uncertainty=f"layer 1: {ranks[2, 0]:.3g}-{ranks[0, 0]:.3g}, layers >= 3: {later[2]:.3g}-{later[0]:.3g} of the "
                        f"cap over the threshold x/÷ {RANK_SPREAD_FACTOR:.3g}"),
        ledger.Claim(
            id="A-E4-albert-llama2-spectra", paper="A", where="App. E.4.1-E.4.4, Fig. 7",
            statement="The specific spectra of ALBERT-xlarge-v2 and Llama-2-7B (e.g. rank of K^T Q about 3500 of 4096)",
            verdict=ledger.NOT_CHECKABLE, measured="weights not available offline", expected="ALBERT / Llama-2 weights"),
    ]


@experiment("llm-layer-repetition", chapter=CHAPTER, profiles=PROFILES_REPETITION, paper=PAPER_REPETITION)
def llm_layer_repetition(cfg: RepetitionConfig, generator: torch.Generator, device) -> dict[str, Any]:
    """Fig. 14 / App. E.5: mean pairwise token cosine similarity by depth with the layers repeated.

    Profiles: ``fast`` 2 blocks of 64 tokens, ``full`` 16 blocks of 128 (see :class:`RepetitionConfig`).

    Returns
    -------
    dict with ``layers`` (L, before repetition), ``times``, ``natural`` and ``random`` (times * L,):
    mean token cosine after each layer on BBC text and on random BBC words, and ``model``.
    """
    from ..llm import assets, probes

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
def repetition_claims(result: dict[str, Any], cfg: RepetitionConfig) -> list[ledger.Claim]:
    """Fig. 14: the mean token cosine rises with depth through both passes (needed), more for random
    words, and reaches :data:`NEAR_ONE` at depth 2L (both wanted: partly without them).

    Examples
    --------
    >>> res = {"layers": 2, "natural": np.array([0.2, 0.5, 0.7, 0.8]), "random": np.array([0.2, 0.6, 0.8, 0.95])}
    >>> repetition_claims(res, RepetitionConfig())[0].status
    'partly'
    >>> res["natural"] = np.array([0.2, 0.5, 0.4, 0.3])  # falling after the first pass
    >>> repetition_claims(res, RepetitionConfig())[0].status
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


# ---------------------------------------------------------------- plots


def _ax(ax):
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(5, 3.5))
    return ax


@plots("llm-random-adapters")
def plot_llm_random_adapters(result: dict, ax=None, key: str = "v_proj"):
    """Perplexity against random-adapter norm, one line per rank (paper A, Fig. 2).

    Parameters
    ----------
    result : dict
        What :func:`llm_random_adapters` returns.
    ax : matplotlib.axes.Axes, optional
        Where to draw; None opens a new figure.
    key : str
        Which adapted module's curves to draw, a key of ``result["curves"]`` (default ``"v_proj"``).

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes drawn on.
    """
    ax = _ax(ax)
    c = result["curves"][key]
    for r, row in zip(result["ranks"], c["ppl"]):
        ax.plot(result["norms"], row, "o-", label=f"r = {r}")
    ax.axhline(result["ppl0"], color="k", ls=":", label="base")
    ax.set(xscale="log", yscale="log", xlabel=r"$\|\Delta V_\ell\|_F$ per layer", ylabel="BBC perplexity",
           title=f"random adapters on {key} (llm-random-adapters)")
    ax.legend(fontsize=8)
    return ax


def _log_x(ax) -> None:
    """A log x axis labelled at 1, 2, 5 times powers of ten (matplotlib's default labels crowd narrow ranges)."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_xscale("log")
    ax.xaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    for set_formatter in (ax.xaxis.set_major_formatter, ax.xaxis.set_minor_formatter):
        set_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def _tag(result: dict) -> str:
    """``"(llm-training)"``, or the experiment a result names."""
    return f"({result.get('experiment', 'llm-training')})"


def _seed_band(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over seeds (axis 0) and the standard deviation over seeds (0 with one seed)."""
    x = np.asarray(x, float)
    return x.mean(0), (x.std(0, ddof=1) if x.shape[0] > 1 else np.zeros(x.shape[1:]))


@plots("llm-training")
def plot_llm_training(result: dict, ax=None):
    """Forgetting against update norm, every checkpoint of every run (Fig. 3).

    Small dots: each (rank, seed, checkpoint); large markers: the mean over seeds at each
    checkpoint, with the seeds' standard deviation as error bars in both directions; ranks coloured.
    Step 0 (norm 0) is left out of the log axis.

    Parameters
    ----------
    result : dict
        What :func:`llm_training` returns.
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
    >>> run = {"step": np.array([0, 5, 10]), "ppl_base": np.array([[10.0, 10.5, 12.0], [10.0, 10.4, 11.0]]),
    ...        "norm_layers": np.array([[[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]] * 2), "align": np.ones((2, 3, 2)),
    ...        "drift": np.full((2, 3, 2), 0.3), "b_tau": np.array([[3, 2, 1], [3, 3, 1]])}
    >>> res = {"runs": {4: run}, "d": 64, "layers": 2, "tau": 0.2}
    >>> ax = plot_llm_training(res)
    >>> [round(float(y), 3) for y in ax.get_lines()[1].get_ydata()]   # seed means at steps 5 and 10
    [1.045, 1.15]
    """
    ax = _ax(ax)
    for i, (r, run) in enumerate(result["runs"].items()):
        norm, forget = _total_norm(run)[:, 1:], np.exp(_forgetting(run))[:, 1:]
        color = f"C{i}"
        ax.plot(norm.ravel(), forget.ravel(), ".", color=color, alpha=0.35, ms=4)
        (mx, sx), (my, sy) = _seed_band(norm), _seed_band(forget)
        ax.errorbar(mx, my, xerr=sx, yerr=sy, fmt="o-", color=color, capsize=2, label=f"r = {r}")
    ax.axhline(1.0, color="k", ls=":", lw=0.8)
    _log_x(ax)
    ax.set(xlabel=r"update norm $(\sum_\ell \|\Delta V_\ell\|_F^2)^{1/2}$",
           ylabel="BBC perplexity / before training", title=f"forgetting vs update norm {_tag(result)}")
    ax.legend(fontsize=8)
    return ax


@plots("llm-training")
def plot_llm_alignment(result: dict, ax=None):
    """Layer-mean Align against step, mean over seeds with the seeds' spread, per rank (Fig. 4).

    The dotted line is the random-subspace value 1; each rank's dashed line lies 2 standard errors
    above it (the random-subspace law of a mean over the seeds' layers: wide for rank 1, narrow for
    rank 64).

    Parameters
    ----------
    result : dict
        What :func:`llm_training` returns.
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
    >>> run = {"step": np.array([0, 5, 10]), "ppl_base": np.array([[10.0, 10.5, 12.0], [10.0, 10.4, 11.0]]),
    ...        "norm_layers": np.array([[[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]] * 2), "align": np.ones((2, 3, 2)),
    ...        "drift": np.full((2, 3, 2), 0.3), "b_tau": np.array([[3, 2, 1], [3, 3, 1]])}
    >>> res = {"runs": {4: run}, "d": 64, "layers": 2, "tau": 0.2}
    >>> ax = plot_llm_alignment(res)
    >>> # dashed: 1 + 2 se, se^2 = 2 (d - r) / (r (d + 2)) / (layers x seeds) = 2 * 60 / (4 * 66) / 4
    >>> ax.get_lines()[0].get_ydata().tolist(), round(float(ax.get_lines()[1].get_ydata()[0]), 3)
    ([1.0, 1.0, 1.0], 1.674)
    """
    ax = _ax(ax)
    d, L = int(result["d"]), int(result["layers"])
    for i, (r, run) in enumerate(result["runs"].items()):
        m, s = _seed_band(np.asarray(run["align"], float).mean(-1))
        ax.plot(run["step"], m, "o-", color=f"C{i}", label=f"r = {r}")
        ax.fill_between(run["step"], m - s, m + s, color=f"C{i}", alpha=0.2)
        se = math.sqrt(2 * (d - int(r)) / (int(r) * (d + 2)) / (L * np.shape(run["align"])[0]))
        ax.axhline(1 + 2 * se, color=f"C{i}", ls="--", lw=0.8, label="random + 2 se" if i == 0 else None)
    ax.axhline(1.0, color="k", ls=":", label="random subspace")
    ax.set(xlabel="step", ylabel=r"mean$_\ell$ Align$_\ell$", title=f"alignment with $u_1$ {_tag(result)}")
    ax.legend(fontsize=8)
    return ax


@plots("llm-training")
def plot_llm_drift(result: dict, axes=None):
    """Fig. 6: drift per layer at the last checkpoint and the bifurcation depth against step.

    Left: relative drift ``Delta_l`` of the residual stream before the final norm (position 0 left
    out), mean over seeds with the seeds' spread, per rank, tau dotted. Right: ``b_tau`` against
    step, mean over seeds with the seeds' spread; ``L + 1`` (top line) means no layer exceeds tau.

    Parameters
    ----------
    result : dict
        What :func:`llm_training` returns.
    axes : sequence of 2 matplotlib.axes.Axes, optional
        The panels, left to right; None opens a new figure with them.

    Returns
    -------
    axes : sequence of matplotlib.axes.Axes
        The panels drawn on: ``axes`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> run = {"step": np.array([0, 5, 10]), "ppl_base": np.array([[10.0, 10.5, 12.0], [10.0, 10.4, 11.0]]),
    ...        "norm_layers": np.array([[[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]] * 2), "align": np.ones((2, 3, 2)),
    ...        "drift": np.full((2, 3, 2), 0.3), "b_tau": np.array([[3, 2, 1], [3, 3, 1]])}
    >>> res = {"runs": {4: run}, "d": 64, "layers": 2, "tau": 0.2}
    >>> axes = plot_llm_drift(res)
    >>> axes[1].get_lines()[0].get_ydata().tolist()   # b_tau, seed mean by step
    [3.0, 2.5, 1.0]
    """
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    L, tau = int(result["layers"]), float(result["tau"])
    layers = np.arange(1, L + 1)
    for i, (r, run) in enumerate(result["runs"].items()):
        m, s = _seed_band(np.asarray(run["drift"], float)[:, -1])
        axes[0].plot(layers, m, color=f"C{i}", label=f"r = {r}")
        axes[0].fill_between(layers, np.maximum(m - s, 1e-6), m + s, color=f"C{i}", alpha=0.2)
        mb, sb = _seed_band(run["b_tau"])
        axes[1].errorbar(run["step"], mb, yerr=sb, fmt="o-", color=f"C{i}", capsize=2, label=f"r = {r}")
    axes[0].axhline(tau, color="k", ls=":", label=r"$\tau$")
    axes[0].set(yscale="log", xlabel="layer", ylabel=r"$\Delta_\ell$ at the last step",
                title=f"hidden-state drift {_tag(result)}")
    axes[1].axhline(L + 1, color="0.5", ls="--", lw=0.8)
    axes[1].text(0, L + 1, " no layer above tau", va="bottom", fontsize=7, color="0.4")
    axes[1].set(xlabel="step", ylabel=rf"$b_{{{tau:g}}}$ (layer)", ylim=(0, L + 3), title=f"bifurcation depth {_tag(result)}")
    for ax in axes:
        ax.legend(fontsize=7)
    return axes


@plots("llm-training")
def plot_llm_bridge(result: dict, axes=None):
    """Prop. 3.3 for the trained value updates, and drift against forgetting across runs.

    Left: per layer at the last checkpoint, the right side of bound (16), ``(2|b| + |E|) / (gap + a)``
    (solid; condition (15) holds below 1) and the measured shift ``|u1 - u1~|`` (dashed), mean over
    seeds, per rank, for ``V^T V`` (:func:`companion.llm.training.prop33_layers`). Right: each run's
    last-layer drift and forgetting at the end.

    Examples
    --------
    >>> run = {"step": np.array([0, 5]), "ppl_base": np.array([[10.0, 12.0]]), "drift": np.full((1, 2, 3), 0.1),
    ...        "bound": np.full((1, 2, 3), 0.5), "u1_shift": np.full((1, 2, 3), 0.01)}
    >>> len(plot_llm_bridge({"runs": {4: run}, "layers": 3}))
    2
    """
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    layers = np.arange(1, int(result["layers"]) + 1)
    for i, (r, run) in enumerate(result["runs"].items()):
        bound = np.asarray(run["bound"], float)[:, -1]
        bound = np.where(np.isfinite(bound), bound, np.nan)  # inf where gap + a <= 0: no bound, not drawn
        seen = np.isfinite(bound).sum(0)
        mean = np.where(seen > 0, np.nansum(bound, 0) / np.maximum(seen, 1), np.nan)
        axes[0].plot(layers, mean, color=f"C{i}", label=f"r = {r}: bound (16)")
        axes[0].plot(layers, np.asarray(run["u1_shift"], float)[:, -1].mean(0), "--", color=f"C{i}",
                     label=r"$|u_1 - \tilde u_1|$ (dashed)" if i == 0 else None)
        axes[1].plot(np.asarray(run["drift"], float)[:, -1, -1], np.exp(_forgetting(run)[:, -1]), "o", color=f"C{i}", label=f"r = {r}")
    axes[0].axhline(1.0, color="k", ls=":", lw=0.8)
    axes[0].set(yscale="log", xlabel="layer", ylabel="at the last step", title=r"Prop. 3.3 on $V^\top V$ " + _tag(result))
    _log_x(axes[1])
    axes[1].set(xlabel=r"last-layer drift $\Delta_L$ at the end", ylabel="BBC perplexity / before training",
                title="drift and forgetting, one point per run")
    for ax in axes:
        ax.legend(fontsize=6)
    return axes


def _shown_heads(gap: np.ndarray) -> list[tuple[int, int]]:
    """Fig. 7 shows "a couple of heads": the head with the largest eigengap and the one with the median gap."""
    flat = gap.reshape(-1)
    order = np.argsort(flat, kind="stable")
    return [tuple(int(i) for i in np.unravel_index(k, gap.shape)) for k in (order[-1], order[(flat.size - 1) // 2])]


@plots("llm-spectra")
def plot_llm_spectra(result: dict, axes=None):
    """Eigenvalues of two value matrices V_h per model over their spectral radius: the head with the largest
    eigengap and the median one, encoder and decoder (Fig. 7).

    Parameters
    ----------
    result : dict
        What :func:`llm_spectra` returns.
    axes : sequence of 2 matplotlib.axes.Axes, optional
        The panels, left to right; None opens a new figure with them.

    Returns
    -------
    axes : sequence of matplotlib.axes.Axes
        The panels drawn on: ``axes`` as given, or the new figure's.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ev = np.array([[[1.0, 0.5j, -0.5j], [0.2 + 0.9j, 0.2 - 0.9j, 0.1]]])   # (layers, heads, hd)
    >>> side = {"eigvals": ev, "gap": np.array([[0.5, -0.8]])}
    >>> axes = plot_llm_spectra({"encoder": side, "decoder": side})
    >>> axes[0].get_legend_handles_labels()[1]
    ['layer 1, head 1: gap 0.50', 'layer 1, head 2: gap -0.80']
    """
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 2, figsize=(9, 4))
    t = np.linspace(0, 2 * np.pi, 200)
    for ax, key in zip(axes, ("encoder", "decoder")):
        side = result[key]
        for (layer, head), marker in zip(_shown_heads(np.asarray(side["gap"])), ("o", "x")):
            ev = np.asarray(side["eigvals"])[layer, head]
            ev = ev / np.abs(ev).max()
            ax.scatter(ev.real, ev.imag, s=14, marker=marker,
                       label=f"layer {layer + 1}, head {head + 1}: gap {round(float(side['gap'][layer, head]), 2) + 0.0:.2f}")
        ax.plot(np.cos(t), np.sin(t), color="0.6", lw=0.6)
        ax.axvline(0, color="k", lw=0.5)
        ax.set(xlabel=r"Re $\lambda / |\lambda_1|$", ylabel=r"Im $\lambda / |\lambda_1|$", aspect="equal",
               title=f"{key}: eig $V_h$ (llm-spectra)")
        ax.legend(fontsize=7, loc="lower left")
    return axes


@plots("llm-spectra")
def plot_llm_eigengaps(result: dict, ax=None):
    """Per layer, the fraction of heads whose leading eigenvalue is real, positive and dominant (gap >
    GAP_MIN), against depth over the model's depth; dashed: Gaussian heads of the same shape.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> side = {"gap": np.array([[0.3, -1.0], [0.3, 0.2]]), "gap_resampled": np.zeros((0, 2, 2)),
    ...         "null_gap": np.array([0.5, -1.0]), "cap_layer": 4, "rank_resolved": np.array([2, 4]),
    ...         "rank_resolved_band": np.array([[3, 4], [1, 4]])}
    >>> ax = plot_llm_eigengaps({"encoder": side, "decoder": side})
    >>> ax.get_lines()[0].get_ydata().tolist()   # encoder: half the heads of layer 1, both of layer 2
    [0.5, 1.0]
    """
    ax = _ax(ax)
    for key, color in (("encoder", "C0"), ("decoder", "C1")):
        s = spectra_summary(result[key])
        frac = s["frac_gap_layer"]
        ax.plot(np.arange(1, frac.size + 1) / frac.size, frac, "o-", color=color, ms=3, label=f"{key}")
        ax.axhline(s["null_frac"], color=color, ls="--", lw=1, label=f"{key}: Gaussian heads")
    ax.axhline(MOST_HEADS, color="k", ls=":", lw=1, label="half of the heads")
    ax.set(xlabel="layer / number of layers", ylabel=f"heads with eigengap > {GAP_MIN:g}", ylim=(0, 1),
           title="eigengap of $V_h$ by depth (llm-spectra)")
    ax.legend(fontsize=7)
    return ax


@plots("llm-spectra")
def plot_llm_qk_ranks(result: dict, ax=None):
    """Rank of the layer sum K^T Q over its architectural cap, per layer (App. E.4.4): above max(rank_rtol,
    rounding floor) with the band of that threshold x/÷ sqrt(10), and the plain rank at rank_rtol (dashed).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> side = {"gap": np.zeros((3, 2)), "gap_resampled": np.zeros((0, 3, 2)), "null_gap": np.zeros(4),
    ...         "cap_layer": 8, "rank_resolved": np.array([2, 8, 7]), "rank_resolved_band": np.array([[4, 8, 8], [1, 6, 5]]),
    ...         "rank_layer": np.array([6, 8, 8]), "rank_rtol": 1e-3}
    >>> ax = plot_llm_qk_ranks({"encoder": side, "decoder": side})
    >>> [line.get_label() for line in ax.get_lines()][:2], ax.get_lines()[0].get_ydata().tolist()
    (['encoder: resolved rank / 8', 'encoder: rank at rtol 0.001'], [0.25, 1.0, 0.875])
    """
    ax = _ax(ax)
    for key, color in (("encoder", "C0"), ("decoder", "C1")):
        side, s = result[key], spectra_summary(result[key])
        layers = np.arange(1, s["rank_frac"].shape[1] + 1)
        cap = int(side["cap_layer"])
        ax.fill_between(layers, s["rank_frac"][2], s["rank_frac"][0], color=color, alpha=0.25, lw=0)
        ax.plot(layers, s["rank_frac"][1], "o-", color=color, ms=3, label=f"{key}: resolved rank / {cap}")
        ax.plot(layers, np.asarray(side["rank_layer"]) / cap, "--", color=color, lw=1,
                label=f"{key}: rank at rtol {float(side['rank_rtol']):g}")
    ax.set(xlabel="layer", ylabel="rank of $K^T Q$ / cap", ylim=(0, 1.05), title="query-key rank by layer (llm-spectra)")
    ax.legend(fontsize=7)
    return ax


@plots("llm-layer-repetition")
def plot_llm_layer_repetition(result: dict, ax=None):
    """Mean pairwise token cosine similarity against depth, natural and random-word text (Fig. 14).

    Parameters
    ----------
    result : dict
        What :func:`llm_layer_repetition` returns.
    ax : matplotlib.axes.Axes, optional
        Where to draw; None opens a new figure.

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes drawn on.
    """
    ax = _ax(ax)
    depth = np.arange(1, len(result["natural"]) + 1)
    ax.plot(depth, result["natural"], label="natural text (BBC)")
    ax.plot(depth, result["random"], label="random words")
    ax.axvline(result["layers"] + 0.5, color="k", ls=":", label="repetition starts")
    ax.set(xlabel="depth", ylabel="mean token cosine", title="layers repeated (llm-layer-repetition)")
    ax.legend(fontsize=8)
    return ax


# llm-training-indomain is drawn by llm-training's figures (Figs. 3, 4, 6 and the bridge), in the same order.
for _plot in (plot_llm_training, plot_llm_alignment, plot_llm_drift, plot_llm_bridge):
    plots("llm-training-indomain")(_plot)
del _plot
