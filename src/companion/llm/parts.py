"""The LoRA training experiments' result, assembled from the runs stored so far as parts.

``python -m companion run llm-training`` (and ``llm-training-indomain``) stores each (rank, seed)
fine-tune as it finishes, one verified part under ``<results>/<name>/parts``
(:func:`companion.llm.training.run_parts`); :func:`training_from_parts` reads the parts that are
current for a profile back into what the experiment returns, so that a chapter can show a full profile
still being computed. Nothing here trains.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["TRAINING_EXPERIMENTS", "training_from_parts"]

# The LoRA training experiments whose runs are stored one part per (rank, seed) (companion.llm.training.run_parts).
TRAINING_EXPERIMENTS = ("llm-training", "llm-training-indomain")




def training_from_parts(folder: Path | str, profile: str = "full", *, d: int | None = None, cfg: Any = None,
                        experiment: str = "llm-training", stored_ranks: bool = False) -> dict[str, Any] | None:
    """The ``profile`` result of ``llm-training`` (or of ``experiment``, ``llm-training-indomain``)
    assembled from the runs stored so far as parts.

    ``python -m companion run llm-training --out DIR`` stores each (rank, seed) run as it finishes in
    ``DIR/llm-training/parts`` (:func:`companion.llm.training.run_parts`); this reads every part there
    that is current for the profile (verified, computed with its settings: :func:`companion.llm.training.load_part`
    and :func:`companion.llm.training.part_settings`) and keeps the seeds that every rank of the profile has,
    so that rank comparisons stay paired. Nothing is trained. The result is what the experiment returns for
    those seeds (:func:`companion.llm.training.training_result`), with ``experiment``, ``config`` (the
    profile's, ``seeds`` those kept), ``profile`` (the profile's name when every run is there, else
    ``"<profile>, k of n runs"``), ``parts`` (the kept keys) and ``left_out`` (parts stored but not kept:
    their seed is missing in some rank).

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
        carries (so that :func:`companion.registry.judge` applies that experiment's claims).
    stored_ranks : bool
        False: every rank of the profile is needed (None until some seed has them all). True: the
        ranks with no stored part are left out, and the seeds kept are those every remaining rank
        has (a profile still being computed: ``config`` then names the ranks kept, and ``profile``
        counts the runs against the profile's).

    Returns
    -------
    dict or None
        As the experiment's result; None when no seed is stored for every rank.

    Examples
    --------
    >>> import dataclasses, tempfile
    >>> import numpy as np
    >>> from companion.llm import training
    >>> from companion.registry import get
    >>> cfg = get("llm-training").configure("fast", baseline_trials=8)
    >>> folder = Path(tempfile.mkdtemp())
    >>> def part(r, s):  # two checkpoints, three layers
    ...     return {"step": np.array([0, 12]), "ppl_base": np.array([10.0, 11.0]), "ppl_new": np.array([50.0, 40.0 - s]),
    ...             "b_tau": np.array([4, 2]), **{k: np.ones((2, 3)) for k in ("norm_layers", "align", "drift")}}
    >>> _ = training.run_parts([(4, 0), (16, 0), (4, 1)], part, folder, settings=training.part_settings(cfg))
    >>> res = training_from_parts(folder, "fast", d=64, cfg=dataclasses.replace(cfg, seeds=(0, 1)))
    >>> res["profile"], res["seeds"].tolist(), res["left_out"], res["runs"][16]["ppl_new"].tolist()
    ('fast, 2 of 4 runs', [0], [(4, 1)], [[50.0, 40.0]])
    >>> training_from_parts(Path(tempfile.mkdtemp()), "fast") is None   # nothing stored
    True
    >>> training_from_parts(folder, "fast", d=64, experiment="llm-training-indomain") is None   # other settings: not its parts
    True
    >>> _ = training.run_parts([(4, 2)], part, folder, settings=training.part_settings(cfg))
    >>> mine = dataclasses.replace(cfg, ranks=(4, 16, 64), seeds=(0, 1, 2))   # rank 64 not stored yet
    >>> training_from_parts(folder, "fast", d=64, cfg=mine) is None
    True
    >>> res = training_from_parts(folder, "fast", d=64, cfg=mine, stored_ranks=True)
    >>> res["profile"], res["ranks"].tolist(), res["config"]["ranks"], res["left_out"]
    ('fast, 2 of 9 runs', [4, 16], (4, 16), [(4, 1), (4, 2)])
    """
    import dataclasses

    import torch

    from ..registry import get
    from . import assets, training

    if experiment not in TRAINING_EXPERIMENTS:
        raise ValueError(f"experiment must be one of {TRAINING_EXPERIMENTS}, got {experiment!r}")
    profiles = get(experiment).profiles
    if profile not in profiles:
        raise ValueError(f"profile must be one of {tuple(profiles)}, got {profile!r}")
    cfg = profiles[profile] if cfg is None else cfg
    settings = training.part_settings(cfg, get(experiment).added)
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
        d = assets.hidden_size(cfg.model_path)
    res = training.training_result(cfg, parts, seeds, d=d, model=str(cfg.model_path or "SmolLM2-135M-Instruct (bundled)"),
                                   generator=torch.Generator().manual_seed(cfg.seed))
    kept = [(int(r), s) for s in seeds for r in cfg.ranks]
    res.update(experiment=experiment, config=dataclasses.asdict(dataclasses.replace(cfg, seeds=tuple(seeds))),
               profile=profile if len(kept) == total else f"{profile}, {len(kept)} of {total} runs",
               parts=kept, left_out=sorted(k for k in parts if k not in set(kept)))
    return res
