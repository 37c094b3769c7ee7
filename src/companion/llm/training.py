"""LoRA fine-tuning runs for paper A's Figs. 3, 4 and 6, one resumable part per (rank, seed).

A run trains peft LoRA on a causal LM (:func:`companion.llm.probes.train_lora`) and, at each
checkpoint, keeps only summaries (:func:`checkpoint_summary`), never weights:

* perplexities on the base domain (forgetting) and the new domain (learning);
* per layer ``l`` of the value module: the update norm ``||Delta V_l||_F``, the alignment
  ``Align_l`` with the top right singular vector of ``V_l`` (Sec. 4.1.2), the relative drift
  ``Delta_l`` of the residual stream before the final norm, position 0 left out (eq. 22), and the
  quantities of Proposition 3.3 for the trained update (:func:`prop33_layers`);
* the bifurcation depth ``b_tau`` (eq. 23; ``L + 1`` when no layer exceeds tau).

:func:`run_parts` is the resumable runner: each (rank, seed) run is one part, written atomically
with its provenance (:func:`companion.provenance.save_result`) as ``<folder>/r<rank>-s<seed>.npz``
and ``.json``; a part is either complete (it verifies and was computed with the same settings) or
recomputed, so a killed run continues from the last finished part (:func:`part_settings`: what makes it the
same run). :func:`stack_seeds` joins the parts of one rank over seeds, :func:`training_result` the parts of
an experiment into its result (:func:`companion.llm.parts.training_from_parts` reads stored ones back).

:func:`split_heldout` cuts one held-out text into training blocks before a cut and scoring blocks after it
(``llm-training-indomain`` trains on the first 80 % of *Hamlet* and scores on the rest).

Statistics across runs: :func:`pearson_interval` (Fisher z interval of a correlation) and
:func:`companion.fits.mean_interval` (Student t interval of a mean over seeds).
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

from . import probes

__all__ = [
    "PROP33_FIELDS",
    "prop33_layers",
    "checkpoint_summary",
    "stack_history",
    "train_run",
    "split_heldout",
    "SPLIT_FIELDS",
    "part_path",
    "load_part",
    "part_settings",
    "run_parts",
    "stack_seeds",
    "learning_rates",
    "training_result",
    "pearson_interval",
]

# The per-layer quantities of Prop. 3.3 that :func:`prop33_layers` returns, in order.
PROP33_FIELDS = ("gap", "a", "b_norm", "E_norm", "margin", "bound", "u1_shift")
# The token ranges of a held-out text that :func:`split_heldout` returns (and an llm-training-indomain part
# records as ``new_split``), in this order.
SPLIT_FIELDS = ("tokens", "train_start", "train_end", "score_start", "score_end")
# Config fields that do not make a stored part another run (:func:`part_settings`): the progress bars, the
# random-subspace baseline, the experiment's seed and its list of runs.
PART_IGNORED = ("progress", "baseline_trials", "seed", "ranks", "seeds")


@torch.no_grad()
def prop33_layers(model, target: str = "v_proj") -> dict[str, np.ndarray]:
    """Proposition 3.3's quantities for the trained value update of every LoRA layer of ``target``.

    A value projection ``V_l : (d_out, d_in)`` of a real model is neither square nor symmetric.
    Paper A (Sec. 4.1.2) takes ``u1`` as its top right singular vector, "equivalently the leading
    eigenvector of V^T V"; we apply the proposition to that symmetric positive semi-definite
    surrogate, ``M = V^T V`` (d_in x d_in, eigenvalues ``sigma_i^2``), and the update the trained
    adapter makes to it, ``dM = (V + dV)^T (V + dV) - V^T V``:

    .. math::

        \\mathrm{gap} = \\sigma_1^2 - \\sigma_2^2, \\quad a = u_1^\\top dM\\, u_1, \\quad
        b = P_\\perp dM\\, u_1, \\quad E = P_\\perp dM\\, P_\\perp,

    the margin of condition (15), ``gap + a - 2|b| - |E|_op`` (> 0: the proposition applies), the
    right side of bound (16), ``(2|b| + |E|_op) / (gap + a)``, and the measured shift
    ``|u1 - u1~|`` of the top eigenvector (``u1~`` of ``M + dM``, signed so ``<u1, u1~> >= 0``),
    which (16) bounds up to a constant. Each layer's pair ``(M, dM)`` goes through
    :func:`companion.theory.lora.spectral_perturbation` (in float64, on the CPU), written in an
    orthonormal basis ``Q`` of the span of the rows of ``V`` and of the adapter's ``A`` (``dV = s B A``),
    which holds the ranges of both: ``(Q^T M Q, Q^T dM Q)`` has the same gap, ``a``, ``|b|``, ``|E|_op``
    and shift (``M`` is 0 on the rest).

    Parameters
    ----------
    model : a peft model with LoRA on modules named ``target``.
    target : the value module.

    Returns
    -------
    dict of (L,) float64 arrays, keys :data:`PROP33_FIELDS`.

    Examples
    --------
    An untrained adapter (B = 0) leaves M unchanged: a = |b| = |E| = 0, the margin is the gap.

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> _ = torch.manual_seed(0)
    >>> m = probes.add_lora(LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
    ...     num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1)), 2)
    >>> q = prop33_layers(m)
    >>> q["a"].tolist(), q["u1_shift"].tolist(), bool((q["margin"] == q["gap"]).all())
    ([0.0, 0.0], [0.0, 0.0], True)
    """
    from ..theory.lora import spectral_perturbation

    out: dict[str, list[float]] = {k: [] for k in PROP33_FIELDS}
    for layer in probes.lora_layers(model, target):
        W = layer.base_layer.weight.detach().double().cpu()
        if min(W.shape) < 2:
            raise ValueError(f"target: {target} has a rank-1 weight, so V^T V has no spectral gap")
        dW = probes.lora_delta(layer).cpu()  # scaling * B A: its rows lie in the row space of A
        # M and dM act within the span of the rows of W and A: the same quantities in an orthonormal basis Q of
        # that span, a smaller problem where d_out + r < d_in (grouped key/value heads: 192 + r of 576 in SmolLM2).
        Q = torch.linalg.qr(torch.cat([W, probes._factors(layer)[0].detach().double().cpu()]).T).Q
        WQ, dWQ = W @ Q, dW @ Q
        sp = spectral_perturbation(WQ.T @ WQ, WQ.T @ dWQ + dWQ.T @ WQ + dWQ.T @ dWQ)
        for key, value in zip(PROP33_FIELDS, (sp.gap, sp.a, sp.b_norm, sp.E_norm, sp.margin, sp.bound, sp.drift)):
            out[key].append(value)
    return {k: np.array(v, dtype=np.float64) for k, v in out.items()}


@torch.no_grad()
def checkpoint_summary(model, *, base_ids: torch.Tensor, new_ids: torch.Tensor, H_base: torch.Tensor,
                       target: str = "v_proj", tau: float = 0.2, skip_first: int = 1, batch_size: int = 4,
                       progress: bool = False) -> dict[str, Any]:
    """Everything one checkpoint of a LoRA run keeps (summaries only).

    Parameters
    ----------
    model : a peft model with LoRA on ``target`` (among others).
    base_ids, new_ids : (blocks, seq) held-out token ids of the base and the new domain.
    H_base : (L, blocks, seq, hidden) the base model's hidden states on ``base_ids``, before the
        final norm (:func:`companion.llm.probes.hidden_states` with ``before_final_norm=True``).
    target : the value module whose update is measured.
    tau : drift tolerance of the bifurcation depth.
    skip_first : leading positions left out of the drift (position 0 is an attention sink).
    batch_size, progress : evaluation batches and progress bars.

    Returns
    -------
    dict with ``ppl_base``, ``ppl_new`` (floats), ``b_tau`` (int, ``L + 1``: no layer above tau),
    and (L,) arrays ``norm_layers`` (``||Delta V_l||_F``), ``align``, ``drift`` and the
    :data:`PROP33_FIELDS` of :func:`prop33_layers`.

    Examples
    --------
    An untrained adapter computes the base model: no drift, so no layer exceeds tau (b = L + 1).

    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> _ = torch.manual_seed(0)
    >>> base = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
    ...     num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1)).eval()
    >>> ids = torch.randint(32, (2, 6), generator=torch.Generator().manual_seed(1))
    >>> H = probes.hidden_states(base, ids, before_final_norm=True)
    >>> c = checkpoint_summary(probes.add_lora(base, 2), base_ids=ids, new_ids=ids, H_base=H)
    >>> c["drift"].tolist(), c["b_tau"], c["ppl_base"] == c["ppl_new"]
    ([0.0, 0.0], 3, True)
    """
    ppl_base, H = probes.perplexity_and_hidden_states(model, base_ids, batch_size=batch_size, before_final_norm=True,
                                                      progress=progress)
    drift = probes.relative_drift(H, H_base, skip_first=skip_first)
    return {
        "ppl_base": float(ppl_base),
        "ppl_new": float(probes.perplexity(model, new_ids, batch_size=batch_size, progress=progress)),
        "norm_layers": probes.update_norm(model, target).cpu().numpy(),
        "align": probes.alignment(model, target).cpu().numpy(),
        "drift": drift.cpu().numpy(),
        "b_tau": probes.bifurcation_depth(drift, tau),
        **prop33_layers(model, target),
    }


def stack_history(history: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Checkpoint dicts (:func:`companion.llm.probes.train_lora`'s list) as arrays over checkpoints.

    Parameters
    ----------
    history : C dicts with the same keys; numbers and (L,) arrays.

    Returns
    -------
    dict: each key -> (C,) or (C, L) array.

    Examples
    --------
    >>> h = stack_history([{"step": 0, "drift": np.zeros(3)}, {"step": 4, "drift": np.ones(3)}])
    >>> h["step"].tolist(), h["drift"].shape
    ([0, 4], (2, 3))
    """
    if not history:
        raise ValueError("history: no checkpoints")
    keys = list(history[0])
    if any(list(h) != keys for h in history):
        raise ValueError("history: every checkpoint must have the same keys")
    return {k: np.asarray([h[k] for h in history]) for k in keys}


def train_run(model, rank: int, seed: int, *, train_ids: torch.Tensor, targets: Sequence[str], steps: int,
              batch_size: int, lr: float, checkpoints: Sequence[int], evaluate: Callable[[Any, int], dict[str, Any]],
              schedule: str = "constant", progress: bool = False) -> tuple[Any, dict[str, np.ndarray]]:
    """One LoRA run: rank ``rank`` on ``targets``, AdamW, evaluated at ``checkpoints``.

    Seeds: peft draws the initial ``A`` with the global torch generator, seeded with
    ``1000 * seed + rank``; the batches come from ``torch.Generator().manual_seed(seed)``, so every
    rank of one seed sees the same batches (rank comparisons are paired).

    Parameters
    ----------
    model : the base causal LM (unwrapped).
    rank, seed : the run.
    train_ids : (blocks, seq) training token ids.
    targets, steps, batch_size, lr, schedule : as in :func:`companion.llm.probes.add_lora` and ``train_lora``.
    checkpoints : steps at which ``evaluate(model, step) -> dict`` is called.
    progress : progress bar over the steps.

    Returns
    -------
    (the base model with the adapter removed, :func:`stack_history` of the checkpoints).

    Examples
    --------
    >>> from transformers import LlamaConfig, LlamaForCausalLM
    >>> _ = torch.manual_seed(0)
    >>> base = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32,
    ...     num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1)).eval()
    >>> base, h = train_run(base, 2, 0, train_ids=torch.randint(32, (4, 8)), targets=("v_proj",), steps=2,
    ...                     batch_size=2, lr=1e-2, checkpoints=(0, 2),
    ...                     evaluate=lambda m, s: {"norm": float(probes.update_norm(m)[0])})
    >>> h["step"].tolist(), bool(h["norm"][0] == 0 < h["norm"][1]), type(base).__name__
    ([0, 2], True, 'LlamaForCausalLM')
    """
    torch.manual_seed(1000 * int(seed) + int(rank))
    pm = probes.add_lora(model, int(rank), targets=tuple(targets))
    try:
        hist = probes.train_lora(pm, train_ids, steps=steps, batch_size=batch_size, lr=lr,
                                 generator=torch.Generator().manual_seed(int(seed)), eval_steps=checkpoints,
                                 schedule=schedule, evaluate=evaluate, progress=progress)
    finally:
        model = pm.unload()  # the base model back, whatever happened
    return model, stack_history(hist)


def split_heldout(ids: Any, *, head: int, fraction: float, train_len: int, eval_len: int,
                  eval_blocks: int) -> tuple[torch.Tensor, torch.Tensor, dict[str, int]]:
    """Cut one held-out text in two: training blocks from its first part, scoring blocks from the rest.

    With ``n`` tokens, the cut is ``c = floor(fraction * n)``; the training part is every whole block
    of ``train_len`` tokens from ``head`` (leading tokens left out, e.g. a title and cast list) up to
    the cut, the scoring part the first ``eval_blocks`` blocks of ``eval_len`` tokens from the cut:

    .. math::

        \\mathrm{train} = \\mathrm{ids}[h,\\ h + m\\,\\ell), \\quad m = \\lfloor (c - h)/\\ell \\rfloor, \\qquad
        \\mathrm{score} = \\mathrm{ids}[c,\\ c + k\\,\\ell'), \\qquad h + m\\,\\ell \\le c,

    with ``h = head``, ``l = train_len``, ``l' = eval_len``, ``k = eval_blocks``: no token is in both.
    Deterministic: no draw.

    Parameters
    ----------
    ids : (n,) token ids of the whole text (a sequence of ints or a 1-D long tensor).
    head : leading tokens left out of the training part (>= 0).
    fraction : where the cut lies, in (0, 1).
    train_len, eval_len : block lengths of the two parts (>= 2).
    eval_blocks : scoring blocks (>= 1); they must fit between the cut and the end.

    Returns
    -------
    (train (m, train_len), score (eval_blocks, eval_len), bounds): long tensors and a dict of ints
    ``tokens`` (n), ``train_start`` (h), ``train_end`` (h + m train_len), ``score_start`` (c) and
    ``score_end`` (c + eval_blocks eval_len), as half-open token ranges.

    Examples
    --------
    >>> train, score, b = split_heldout(list(range(100)), head=10, fraction=0.8, train_len=8, eval_len=5, eval_blocks=2)
    >>> train.shape, score.shape, b
    (torch.Size([8, 8]), torch.Size([2, 5]), {'tokens': 100, 'train_start': 10, 'train_end': 74, 'score_start': 80, 'score_end': 90})
    >>> int(train[-1, -1]), score[0].tolist()   # the last training token lies before the cut
    (73, [80, 81, 82, 83, 84])
    """
    ids = torch.as_tensor(ids, dtype=torch.long)
    if ids.ndim != 1:
        raise ValueError(f"ids must be (n,) token ids of one text, got shape {tuple(ids.shape)}")
    if not 0 < float(fraction) < 1:
        raise ValueError(f"fraction must be in (0, 1), got {fraction}")
    head, train_len, eval_len, eval_blocks = int(head), int(train_len), int(eval_len), int(eval_blocks)
    if head < 0 or train_len < 2 or eval_len < 2 or eval_blocks < 1:
        raise ValueError(f"head must be >= 0, train_len and eval_len >= 2 and eval_blocks >= 1, got {head}, "
                         f"{train_len}, {eval_len}, {eval_blocks}")
    n = int(ids.numel())
    cut = math.floor(float(fraction) * n)
    m = (cut - head) // train_len
    if m < 1:
        raise ValueError(f"head: no whole block of {train_len} tokens between head = {head} and the cut at {cut} "
                         f"(fraction {fraction} of {n} tokens)")
    end = cut + eval_blocks * eval_len
    if end > n:
        raise ValueError(f"eval_blocks: {eval_blocks} blocks of {eval_len} tokens from the cut at {cut} need {end} "
                         f"tokens, the text has {n}")
    bounds = {"tokens": n, "train_start": head, "train_end": head + m * train_len, "score_start": cut, "score_end": end}
    return (ids[head: head + m * train_len].reshape(m, train_len), ids[cut:end].reshape(eval_blocks, eval_len), bounds)


def part_path(folder: Path | str, rank: int, seed: int) -> Path:
    """``<folder>/r<rank>-s<seed>.npz``: where the part of run (rank, seed) is stored.

    Examples
    --------
    >>> part_path("/tmp/parts", 16, 2).as_posix()
    '/tmp/parts/r16-s2.npz'
    """
    return Path(folder) / f"r{int(rank)}-s{int(seed)}.npz"


def _plain_json(x: Any) -> Any:
    return json.loads(json.dumps(x, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))


def load_part(path: Path | str, settings: Mapping[str, Any]) -> dict[str, np.ndarray] | None:
    """The arrays of a finished part at ``path``, or None when it must be (re)computed.

    None when the part is absent, incomplete (no provenance JSON: a write cut short), does not
    verify (its files differ from the hashes its JSON records), or was computed with other
    ``settings`` (compared as JSON).

    Examples
    --------
    >>> import tempfile
    >>> from companion.provenance import save_result
    >>> p = save_result(Path(tempfile.mkdtemp()) / "r1-s0", {"x": np.arange(2)}, {"settings": {"steps": 4}})
    >>> load_part(p, {"steps": 4})["x"].tolist(), load_part(p, {"steps": 5}), load_part(p.with_name("r2-s0.npz"), {})
    ([0, 1], None, None)
    """
    from ..provenance import ResultError, load_result

    try:
        arrays, meta = load_result(path)
    except (FileNotFoundError, ResultError):
        return None
    if (meta.get("config") or {}).get("settings") != _plain_json(dict(settings)):
        return None
    return arrays


def part_settings(cfg: Any, added: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What makes a stored part current: every field of the run config ``cfg`` (a dataclass instance)
    but :data:`PART_IGNORED` (the progress bars, the baseline, the seed and the run list), and but a
    field of ``added`` that holds its value there: a field added since parts were stored, with the value
    all of them were computed with (the experiment's ``added``, :func:`companion.registry.experiment`),
    so that those parts stay current.

    Examples
    --------
    >>> import dataclasses
    >>> @dataclasses.dataclass(frozen=True)
    ... class Runs:
    ...     steps: int = 12
    ...     ranks: tuple = (4, 16)
    ...     seeds: tuple = (0,)
    ...     progress: bool = False
    ...     seed: int = 0
    >>> part_settings(Runs())
    {'steps': 12}
    >>> part_settings(Runs(), added={"steps": 12}), part_settings(Runs(steps=3), added={"steps": 12})
    ({}, {'steps': 3})
    """
    import dataclasses

    added = added or {}
    return {k: v for k, v in dataclasses.asdict(cfg).items()
            if k not in PART_IGNORED and not (k in added and v == added[k])}


def run_parts(keys: Sequence[tuple[int, int]], compute: Callable[[int, int], Mapping[str, Any]],
              folder: Path | str | None, *, settings: Mapping[str, Any], progress: bool = False,
              log: Callable[[str], None] | None = None) -> dict[tuple[int, int], dict[str, np.ndarray]]:
    """Compute ``compute(rank, seed) -> dict of arrays`` for every key, resuming from stored parts.

    With a ``folder``, each finished run is written at once (:func:`part_path`, atomically, its
    provenance recording ``settings``, the wall and CPU time), and a run whose part is already
    there and current (:func:`load_part`) is read back instead of computed: a killed job continues
    from the last finished part. Without one, nothing is written.

    Parameters
    ----------
    keys : (rank, seed) pairs, in the order they are run.
    compute : the run; returns arrays (numbers, numpy arrays).
    folder : where the parts go, or None.
    settings : JSON-able settings that make a stored part current (the config of the runs).
    progress : a progress bar over the parts.
    log : called with one line per part (loaded or computed); None: silent.

    Returns
    -------
    dict (rank, seed) -> arrays.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> calls = []
    >>> def work(r, s):
    ...     calls.append((r, s))
    ...     return {"x": np.full(2, 10 * r + s)}
    >>> out = run_parts([(1, 0), (4, 0)], work, folder, settings={"steps": 2})
    >>> out[(4, 0)]["x"].tolist(), sorted(p.name for p in folder.iterdir())
    ([40, 40], ['r1-s0.json', 'r1-s0.npz', 'r4-s0.json', 'r4-s0.npz'])
    >>> _ = run_parts([(1, 0), (4, 0), (4, 1)], work, folder, settings={"steps": 2})  # only the new run computes
    >>> calls
    [(1, 0), (4, 0), (4, 1)]
    """
    from ..provenance import save_result

    keys = [(int(r), int(s)) for r, s in keys]
    if len(set(keys)) != len(keys):
        raise ValueError(f"keys: each (rank, seed) once, got {keys}")
    settings = _plain_json(dict(settings))
    out: dict[tuple[int, int], dict[str, np.ndarray]] = {}
    from tqdm.auto import tqdm

    for r, s in tqdm(keys, disable=not progress, desc="LoRA runs (rank, seed)", leave=True):
        path = part_path(folder, r, s) if folder is not None else None
        stored = load_part(path, settings) if path is not None else None
        if stored is not None:
            out[(r, s)] = stored
            if log:
                log(f"part r = {r}, seed {s}: stored ({path})")
            continue
        c0, t0 = time.process_time(), time.perf_counter()
        arrays = {k: np.asarray(v) for k, v in compute(r, s).items()}
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if path is not None:
            save_result(path, arrays, config={"part": {"rank": r, "seed": s}, "settings": settings}, seed=s,
                        wall_time_s=round(wall, 1), cpu_time_s=round(cpu, 1))
        out[(r, s)] = arrays
        if log:
            log(f"part r = {r}, seed {s}: computed in {wall:.0f} s" + (f" ({path})" if path is not None else ""))
    return out


def stack_seeds(parts: Mapping[tuple[int, int], Mapping[str, np.ndarray]], rank: int) -> dict[str, np.ndarray]:
    """The parts of one rank stacked over seeds (in increasing seed order).

    Returns
    -------
    dict: ``seeds`` (S,) and each part key -> (S, ...) array; ``step`` (C,) is shared, so kept once.

    Examples
    --------
    >>> parts = {(1, 0): {"step": np.array([0, 2]), "ppl_base": np.array([3.0, 4.0])},
    ...          (1, 1): {"step": np.array([0, 2]), "ppl_base": np.array([3.0, 5.0])}}
    >>> st = stack_seeds(parts, 1)
    >>> st["seeds"].tolist(), st["step"].tolist(), st["ppl_base"].tolist()
    ([0, 1], [0, 2], [[3.0, 4.0], [3.0, 5.0]])
    """
    seeds = sorted(s for r, s in parts if r == int(rank))
    if not seeds:
        raise ValueError(f"rank: no part of rank {rank}")
    first = parts[(int(rank), seeds[0])]
    out: dict[str, np.ndarray] = {"seeds": np.array(seeds)}
    for k in first:
        vals = [np.asarray(parts[(int(rank), s)][k]) for s in seeds]
        if k == "step":
            if any(not np.array_equal(v, vals[0]) for v in vals):
                raise ValueError(f"rank {rank}: the seeds' parts have different checkpoints")
            out[k] = vals[0]
        else:
            out[k] = np.stack(vals)
    return out


def pearson_interval(x: Any, y: Any, level: float = 0.95) -> tuple[float, float, float]:
    """Pearson correlation of ``x`` and ``y`` with its Fisher z interval.

    .. math::

        z = \\operatorname{artanh} r, \\qquad r \\in \\tanh\\big(z \\pm z_{1-\\alpha/2} / \\sqrt{n - 3}\\big)

    Parameters
    ----------
    x, y : (n,) with n >= 4 (independent pairs, e.g. one per run).
    level : two-sided confidence level.

    Returns
    -------
    (r, low, high).

    Examples
    --------
    >>> r, lo, hi = pearson_interval([1, 2, 3, 4, 5, 6], [1.1, 1.9, 3.2, 3.9, 5.1, 6.2])
    >>> round(r, 3), lo < r < hi <= 1
    (0.998, True)
    """
    from scipy.stats import norm

    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1 or x.size < 4:
        raise ValueError(f"x and y must be (n,) with n >= 4, got {x.shape} and {y.shape}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    r = float(np.corrcoef(x, y)[0, 1])
    z, half = math.atanh(max(min(r, 1 - 1e-15), -1 + 1e-15)), float(norm.ppf(0.5 + level / 2)) / math.sqrt(x.size - 3)
    return r, math.tanh(z - half), math.tanh(z + half)


def learning_rates(lr: float, power: float, ranks: Sequence[int]) -> dict[int, float]:
    """The constant learning rate of each rank ``r``: ``lr * r ** -power``.

    .. math::

        \\eta_r = \\eta\\, r^{-p}

    Examples
    --------
    >>> learning_rates(1e-2, 0.5, (1, 4, 16))
    {1: 0.01, 4: 0.005, 16: 0.0025}
    """
    return {int(r): lr * float(r) ** -power for r in ranks}


def training_result(cfg: Any, parts: Mapping[tuple[int, int], Mapping[str, np.ndarray]], seeds: Sequence[int], *,
                    d: int, model: str, generator: torch.Generator) -> dict[str, Any]:
    """The result of a LoRA training experiment (``llm-training``, ``llm-training-indomain``) from its parts.

    Parameters
    ----------
    cfg : the experiment's config (:class:`companion.experiments.llm_probes.training.TrainingConfig`):
        its ``ranks``, ``baseline_trials``, ``tau``, ``targets``, ``lr``, ``lr_rank_power``, ``steps``,
        ``batch_size``, ``train_block_len``, ``eval_blocks`` and ``block_len`` are read.
    parts : (rank, seed) -> the run's arrays (:func:`run_parts`); every rank of ``cfg`` for every seed of ``seeds``.
    seeds : the seeds kept.
    d : hidden size of the model (the random-subspace law of the alignment depends on it).
    model : the model's name or path, as the result names it.
    generator : draws the ``baseline_trials`` random ``r``-dimensional subspaces of each rank, ranks in order.

    Returns
    -------
    dict with ``runs[r]`` (:func:`stack_seeds` of the rank's parts over ``seeds``), ``ranks``, ``seeds``,
    ``tau``, ``layers``, ``d``, ``targets``, ``lr`` (:func:`learning_rates`), ``random_baseline[r]`` and
    ``random_baseline_se[r]`` (mean alignment of the random subspaces and its standard error), ``steps``,
    ``tokens_per_step``, ``eval_tokens``, ``model``; and ``new_split`` (:data:`SPLIT_FIELDS` -> int) when the
    parts record one, which must then be the same in every part.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> cfg = SimpleNamespace(ranks=(4,), baseline_trials=8, tau=0.2, targets=("v_proj",), lr=1e-2, lr_rank_power=0.5,
    ...                       steps=2, batch_size=2, train_block_len=8, eval_blocks=1, block_len=8)
    >>> part = {"step": np.array([0, 2]), "drift": np.zeros((2, 3))}
    >>> res = training_result(cfg, {(4, 0): part}, [0], d=16, model="tiny", generator=torch.Generator().manual_seed(0))
    >>> res["layers"], res["lr"], res["runs"][4]["drift"].shape, res["tokens_per_step"]
    (3, {4: 0.005}, (1, 2, 3), 16)
    """
    runs = {int(r): stack_seeds({(r_, s_): p for (r_, s_), p in parts.items() if s_ in set(seeds)}, r)
            for r in cfg.ranks}
    samples = {int(r): probes.random_subspace_alignment(d, r, cfg.baseline_trials, generator=generator) for r in cfg.ranks}
    first = runs[int(cfg.ranks[0])]
    extra = {}
    if "new_split" in first:  # llm-training-indomain: every part trained and scored on the same token ranges
        split = np.concatenate([np.asarray(run["new_split"]).reshape(-1, len(SPLIT_FIELDS)) for run in runs.values()])
        if (split != split[0]).any():
            raise ValueError(f"parts: the runs were trained or scored on different token ranges: {np.unique(split, axis=0).tolist()}")
        extra["new_split"] = dict(zip(SPLIT_FIELDS, (int(x) for x in split[0])))
    return {**extra, "model": model, "ranks": np.array(cfg.ranks), "seeds": np.array(seeds), "runs": runs, "tau": cfg.tau,
            "layers": int(np.shape(first["drift"])[-1]), "d": int(d), "targets": tuple(cfg.targets),
            "lr": learning_rates(cfg.lr, cfg.lr_rank_power, cfg.ranks),
            "random_baseline": {r: float(a.mean()) for r, a in samples.items()},
            "random_baseline_se": {r: float(a.std() / math.sqrt(a.numel())) for r, a in samples.items()},
            "steps": cfg.steps, "tokens_per_step": cfg.batch_size * cfg.train_block_len,
            "eval_tokens": cfg.eval_blocks * cfg.block_len}
