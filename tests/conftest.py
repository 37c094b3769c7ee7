"""Shared fixtures: the repository root and the book pipeline helpers (book/_scripts/pipeline.py)."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_script(relpath: str, name: str):
    """A script of the repository (not a package module) imported as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, ROOT / relpath)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _load_pipeline():
    return load_script("book/_scripts/pipeline.py", "companion_book_pipeline")


@pytest.fixture(scope="session")
def root() -> Path:
    """The repository root."""
    return ROOT


@pytest.fixture(scope="session")
def gpu_experiments():
    """bench/gpu_experiments.py as a module (the CPU-vs-CUDA comparison)."""
    return load_script("bench/gpu_experiments.py", "bench_gpu_experiments")


@pytest.fixture(scope="session")
def plot_peers():
    """bench/plot_peers.py as a module (the work-precision figure)."""
    return load_script("bench/plot_peers.py", "bench_plot_peers")


@pytest.fixture(scope="session")
def full_profiles():
    """bench/full_profiles.py as a module (the full profiles re-timed alone)."""
    return load_script("bench/full_profiles.py", "bench_full_profiles")


@pytest.fixture(scope="session")
def book_ext():
    """book/_ext/companion_book.py (the Sphinx hooks) as a module."""
    return load_script("book/_ext/companion_book.py", "companion_book_ext")


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


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """The bundled SmolLM2-135M folder, with the LLM corpora prepared (``make llm-assets``), or skip."""
    from companion.llm import assets

    try:
        path = assets.smollm2_path(prepare=False)
        for name in assets.CORPORA:
            assets.corpus_text(name, "heldout", prepare=False)
    except FileNotFoundError as e:
        pytest.skip(f"LLM assets not prepared: {e}")
    return path
