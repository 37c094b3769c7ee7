"""Shared fixtures: the repository root and the book pipeline helpers (book/_scripts/pipeline.py)."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_pipeline():
    spec = importlib.util.spec_from_file_location("companion_book_pipeline", ROOT / "book" / "_scripts" / "pipeline.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def root() -> Path:
    """The repository root."""
    return ROOT


@pytest.fixture(scope="session")
def pipeline():
    """book/_scripts/pipeline.py as a module (toc, cache guard, render config)."""
    return _load_pipeline()


@pytest.fixture(scope="session")
def in_ci() -> bool:
    """True in CI (env CI set to true/1/yes): checks that would skip locally must fail there."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.fixture
def one_thread():
    """One torch thread for the test: a second OpenMP thread on a loaded 2-core machine mostly
    waits at barriers (paper D's small-batch tests)."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
