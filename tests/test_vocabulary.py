"""One word per idea in the experiments' parameters: when a run keeps its states and how tight a
tolerance is are each spelled one way, and a stored result of an old spelling still loads current."""
from __future__ import annotations

import dataclasses
import importlib
import re

import pytest

from companion.registry import _experiment_modules, registry

# save_at: the times kept; save_every: the interval between them; save_count: how many, equally spaced.
SAVE_WORDS = {"save_at", "save_every", "save_count"}
# Spellings the experiments used before (renamed through ``renamed=``).
FORMER = {"saves", "n_save", "n_saves", "every", "snapshots", "save_dt", "count_every_dt"}


def _fields() -> list[tuple[str, str]]:
    return [(name, f.name) for name, exp in registry().items()
            for f in dataclasses.fields(type(exp.configure("fast")))]


def test_save_times_have_one_spelling():
    odd = [(name, field) for name, field in _fields()
           if field in FORMER or (re.search(r"save|snap", field) and field not in SAVE_WORDS)]
    assert not odd, f"spell save times {sorted(SAVE_WORDS)}: {odd}"


def test_tolerances_start_with_tol():
    odd = []
    for m in _experiment_modules():
        module = importlib.import_module(m)
        odd += [f"{m}.{k}" for k in vars(module) if k.isupper() and "TOL" in k.split("_") and not k.startswith("TOL_")]
    assert not odd, f"module tolerances are spelled TOL_<WHAT>: {odd}"


@pytest.mark.parametrize("name", ["spectral-multi-token", "spectral-rho-min", "spectral-two-tokens", "metastable-official",
                                  "metastable-cluster-limit", "intro-clustering", "stability-closeness-window",
                                  "stability-initial-laws", "stability-prop31", "stability-cone-collapse"])
def test_a_stored_config_of_the_old_spelling_reads_under_the_new(name):
    exp = registry()[name]
    old = {v: k for k, v in exp.renamed.items()}
    cfg = dataclasses.asdict(exp.configure("full"))
    field = next(k for k in cfg if k in SAVE_WORDS)
    stored = {"config": {(old.get(k, k)): v for k, v in cfg.items()}}
    assert field in old, f"{name}: {field} has no former spelling in renamed="
    assert dataclasses.asdict(exp.config_of(stored)) == cfg
