"""``llm-training-indomain``: ``llm-training``'s runs trained also on the first 80 % of the held-out play and scored on
the rest; judged by the same rows under ids of its own, drawn by the same figures."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from ... import ledger
from ...registry import PaperScale, claims_for, experiment, summary_for
from ._common import CHAPTER, NEW_HEAD, _eval_ids
from ._training_summary import _training_rows, training_summary
from .training import (ADDED, PAPER_TRAINING, PROFILES_TRAINING, TrainingConfig, _train_runs, plot_training,
                       plot_training_alignment, plot_training_bridge, plot_training_drift)

__all__ = ["TrainingIndomainConfig", "PROFILES_INDOMAIN", "PAPER_INDOMAIN", "training_indomain",
           "training_indomain_claims", "plot_training_indomain", "plot_training_indomain_alignment",
           "plot_training_indomain_drift", "plot_training_indomain_bridge", "replicate_line"]

# llm-training-indomain judges the same rows under ids of its own (the ledger's ids are unique), saying its data.
_INDOMAIN_SUFFIX = "-indomain"
_INDOMAIN_NOTE = " (LoRA trained on the other plays and the first 80 % of Hamlet, scored on its last 20 %)"


@dataclasses.dataclass(frozen=True)
class TrainingIndomainConfig(TrainingConfig):
    """:class:`~companion.experiments.llm_probes.training.TrainingConfig` with the new domain's own text
    among the training data.

    *Hamlet*, the held-out play, is cut at ``new_fraction`` of its tokens
    (:func:`companion.llm.training.split_heldout`; its first ``NEW_HEAD`` tokens, title and cast
    list, left out). The runs train on ``m`` blocks of ``train_block_len`` tokens from before the cut
    joined with the first ``m`` blocks of the other plays, ``m = min(train_blocks, the blocks that fit
    before the cut)``; each block of a batch is drawn uniformly from that joined pool, so half the
    blocks come from *Hamlet* on average (the pilot's mix). The new domain is scored on
    ``eval_blocks`` blocks of ``block_len`` tokens from the cut on: no token is both trained and
    scored on. Every other field as in ``TrainingConfig``.

    Examples
    --------
    >>> TrainingIndomainConfig().new_fraction, TrainingIndomainConfig().steps == TrainingConfig().steps
    (0.8, True)
    """

    new_fraction: float = 0.8


# The same runs as llm-training's, profile for profile; only the data differ (new_fraction).
PROFILES_INDOMAIN = {p: TrainingIndomainConfig(**dataclasses.asdict(c), new_fraction=0.8)
                     for p, c in PROFILES_TRAINING.items()}
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

def _example_run() -> dict[str, np.ndarray]:
    """One stacked run (one seed, two checkpoints, two layers), for the figures' examples."""
    return {"step": np.array([0, 5]), "ppl_base": np.array([[10.0, 12.0]]), "ppl_new": np.array([[50.0, 40.0]]),
            "norm_layers": np.array([[[0.0, 0.0], [1.0, 1.0]]]), "align": np.ones((1, 2, 2)),
            "drift": np.full((1, 2, 2), 0.3), "b_tau": np.array([[3, 1]]), "bound": np.full((1, 2, 2), 0.5),
            "u1_shift": np.full((1, 2, 2), 0.01)}


def plot_training_indomain(result: dict, ax=None):
    """Fig. 3 for ``llm-training-indomain``: :func:`~companion.experiments.llm_probes.training.plot_training`.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> res = {"runs": {4: _example_run()}, "d": 64, "layers": 2, "tau": 0.2, "experiment": "llm-training-indomain"}
    >>> plot_training_indomain(res).get_title()
    'forgetting vs update norm (trained partly on Hamlet)'
    """
    return plot_training(result, ax)


def plot_training_indomain_alignment(result: dict, ax=None):
    """Fig. 4 for ``llm-training-indomain``: :func:`~companion.experiments.llm_probes.training.plot_training_alignment`.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> res = {"runs": {4: _example_run()}, "d": 64, "layers": 2, "tau": 0.2, "experiment": "llm-training-indomain"}
    >>> plot_training_indomain_alignment(res).get_title()
    'alignment with $u_1$ (trained partly on Hamlet)'
    """
    return plot_training_alignment(result, ax)


def plot_training_indomain_drift(result: dict, ax=None):
    """Fig. 6 for ``llm-training-indomain``: :func:`~companion.experiments.llm_probes.training.plot_training_drift`.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> res = {"runs": {4: _example_run()}, "d": 64, "layers": 2, "tau": 0.2, "experiment": "llm-training-indomain"}
    >>> [a.get_title() for a in plot_training_indomain_drift(res)]
    ['hidden-state drift (trained partly on Hamlet)', 'bifurcation depth']
    """
    return plot_training_drift(result, ax)


def plot_training_indomain_bridge(result: dict, ax=None):
    """Prop. 3.3 and drift against forgetting for ``llm-training-indomain``:
    :func:`~companion.experiments.llm_probes.training.plot_training_bridge`.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> res = {"runs": {4: _example_run()}, "layers": 2, "experiment": "llm-training-indomain"}
    >>> plot_training_indomain_bridge(res)[0].get_title()
    'Prop. 3.3 on $V^\\\\top V$ (trained partly on Hamlet)'
    """
    return plot_training_bridge(result, ax)


def _indomain_data(cfg: TrainingIndomainConfig, tok) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, np.ndarray]]:
    """llm-training-indomain's token ids (see :class:`TrainingIndomainConfig`), and ``new_split``: the play's token
    ranges (:data:`companion.llm.training.SPLIT_FIELDS`), kept in every part."""
    from ...llm import assets, probes
    from ...llm import training as lora

    play = tok(assets.corpus_text("shakespeare", "heldout"), add_special_tokens=False)["input_ids"]
    new_train, new_ids, b = lora.split_heldout(play, head=NEW_HEAD, fraction=cfg.new_fraction, train_len=cfg.train_block_len,
                                               eval_len=cfg.block_len, eval_blocks=cfg.eval_blocks)
    m = min(int(cfg.train_blocks), int(new_train.shape[0]))
    other = probes.token_blocks(tok, assets.corpus_text("shakespeare", "train"), cfg.train_block_len, m)
    b["train_end"] = b["train_start"] + m * int(cfg.train_block_len)
    base_ids = _eval_ids(tok, "bbc", cfg.block_len, cfg.eval_blocks)
    return base_ids, new_ids, torch.cat([new_train[:m], other]), {"new_split": np.array([b[k] for k in lora.SPLIT_FIELDS])}


@experiment("llm-training-indomain", chapter=CHAPTER, profiles=PROFILES_INDOMAIN, paper=PAPER_INDOMAIN,
            plot=(plot_training_indomain, plot_training_indomain_alignment, plot_training_indomain_drift,
                  plot_training_indomain_bridge),
            renamed={"baseline_samples": "baseline_trials"}, added=ADDED)
def training_indomain(cfg: TrainingIndomainConfig, generator: torch.Generator, device) -> dict[str, Any]:
    """Figs. 3, 4, 6 and Prop. 3.3 as in :func:`~companion.experiments.llm_probes.training.training`, from
    LoRA runs that also train on the new domain's own text: the first 80 % of *Hamlet* joined with as many
    blocks of the other plays, the new domain scored on *Hamlet*'s last 20 % (:class:`TrainingIndomainConfig`).

    The same ranks, seeds, steps, learning rates, checkpoints and summaries as ``llm-training``
    in each profile, one part per (rank, seed) in ``DIR/llm-training-indomain/parts/`` under
    ``python -m companion run llm-training-indomain --out DIR``; a killed run resumes from them.

    Returns
    -------
    dict as ``llm-training``'s, and ``new_split``: the play's half-open token ranges, ``tokens``,
    ``train_start``, ``train_end`` (trained on) and ``score_start``, ``score_end`` (scored on).

    Examples
    --------
    >>> from companion.registry import get
    >>> full = get("llm-training-indomain").configure("full")
    >>> full.new_fraction, dataclasses.replace(full, new_fraction=0.8) == full
    (0.8, True)
    >>> {k: v for k, v in dataclasses.asdict(full).items() if k != "new_fraction"} == dataclasses.asdict(PROFILES_TRAINING["full"])
    True
    """
    return _train_runs(cfg, generator, device, _indomain_data)


@summary_for("llm-training-indomain")
def training_indomain_summary(result: dict[str, Any]) -> dict[str, Any]:
    """:func:`~companion.experiments.llm_probes.training_summary` of a :func:`training_indomain` result.

    Examples
    --------
    >>> run = {"step": np.array([0, 1]), "norm_layers": np.array([[[0.0], [1.0]]]), "ppl_base": np.array([[10.0, 12.0]]),
    ...        "ppl_new": np.array([[50.0, 40.0]]), "align": np.ones((1, 2, 1)), "drift": np.full((1, 2, 1), 0.1),
    ...        "b_tau": np.array([[2, 1]])}
    >>> round(training_indomain_summary({"runs": {4: run}, "d": 64, "layers": 1})["fall"][4], 2)
    0.2
    """
    return training_summary(result)


@claims_for("llm-training-indomain")
def training_indomain_claims(result: dict[str, Any], cfg: TrainingIndomainConfig) -> list[ledger.Claim]:
    """The rows of :func:`~companion.experiments.llm_probes.training.training_claims`, judged the same way on
    a :func:`training_indomain` result, under their ids with ``-indomain`` appended and a statement that
    names the data.

    Examples
    --------
    >>> C, L = 3, 4
    >>> def run(forget):
    ...     return {"step": np.array([0, 1, 2]), "norm_layers": np.array([[[0.0] * L, [0.5] * L, [1.0] * L]] * 3),
    ...             "ppl_base": 10 * np.exp(forget * np.array([[0.0, 0.5, 1.0]] * 3)),
    ...             "ppl_new": np.array([[50.0, 40.0, 30.0]] * 3), "align": np.full((3, C, L), 1.5),
    ...             "drift": np.full((3, C, L), 0.1) * forget, "b_tau": np.array([[5, 4, 2]] * 3)}
    >>> res = {"runs": {r: run(f) for r, f in ((1, 0.1), (4, 0.2), (16, 0.3), (64, 0.4))}, "layers": L, "d": 256}
    >>> rows = training_indomain_claims(res, TrainingIndomainConfig())
    >>> rows[1].id, rows[1].status, "first 80 % of Hamlet" in rows[1].statement
    ('A-fig3-rank-matters-smollm2-indomain', 'reproduced', True)
    >>> res["runs"] = {r: run(0.2) for r in (1, 4, 16, 64)}   # every rank forgets alike at the same norm
    >>> training_indomain_claims(res, TrainingIndomainConfig())[1].status
    'inconclusive'
    """
    return _training_rows(result, suffix=_INDOMAIN_SUFFIX, note=_INDOMAIN_NOTE)


def replicate_line(result: dict[str, Any], root=None) -> str:
    """What the chapter says of the latest stored replicate of ``llm-training-indomain`` (the same fine-tunes on
    another processor, :mod:`companion.replicate`) against the stored ``result``: its processor and date, how many
    runs part from the stored ones and where, and how many verdicts are the same (those that differ, listed);
    ``"not done yet"`` without one.

    Examples
    --------
    >>> import tempfile
    >>> replicate_line({}, tempfile.mkdtemp())
    'not done yet'
    """
    from ... import replicate, store

    reps = replicate.replicates("llm-training-indomain", root)
    if not reps:
        return "not done yet"
    label, rep, rep_meta = reps[-1]
    stored_meta = store.load_run("llm-training-indomain", "full", root)[1]
    rows, runs = replicate.verdicts(stored_meta, rep_meta), replicate.training_runs(result, rep)
    parted = replicate.departures(runs)
    changed = [f"{v['id']} {v['stored']} -> {v['replica']}, measured {v['measured'][0]} -> {v['measured'][1]}"
               for v in rows if v["stored"] != v["replica"]]
    return (f"{replicate.processor_of(rep_meta, root)}, {rep_meta['created'][:10]}: {len(parted)} of {len(runs)} runs part "
            "from the stored ones" + (f" (first apart at step {parted[0]} to {parted[-1]})" if parted else "")
            + f", and {len(rows) - len(changed)} of {len(rows)} verdicts are the same"
            + (f" ({'; '.join(changed)})" if changed else ""))
