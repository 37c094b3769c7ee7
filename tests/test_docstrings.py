"""Every public function and class of the package has a doctest that runs, in its Examples section.

"Public" is what a module lists in ``__all__``; private modules (a name starting with ``_``, the
command line's ``__main__`` included) are left out. An example must be a ``>>>`` line under a
numpydoc ``Examples`` heading that is not skipped (``# doctest: +SKIP``): ``make test-unit``
runs the doctests of ``src/`` (``--doctest-modules``), so such an example is executed and checked.
The word "example" or a pointer to another function's example does not count.

``BACKLOG`` lists, module by module, the public objects that lacked one when this rule was made
(issue 18, 2026-11-30). The test fails when a module's list is wrong in either direction: a new
public object without a doctest, or one that gained a doctest and is still listed.
"""
from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re

import pytest

import companion

# numpydoc: "Examples" underlined with dashes, up to the next underlined heading
_SECTION = re.compile(r"^Examples\n-{3,}\n(.*?)(?=^[^\s>.][^\n]*\n-{3,}\n|\Z)", re.M | re.S)

BACKLOG: dict[str, set[str]] = {
    "companion.llm.assets": {"cache_dir", "find_gguf", "smollm2_path", "minilm_path", "prepare_corpus", "corpus_text", "main"},
    "companion.llm.probes": {
        "load_encoder", "token_blocks", "perplexity_and_hidden_states", "add_lora", "lora_layers",
        "lora_delta", "set_random_adapter", "update_norm", "alignment", "repeat_layers"},
    "companion.theory.lora": {"Prop31Bound", "SpectralPerturbation"},
    "companion.theory.lora_depth": {"DepthBound"},
    "companion.theory.low_temperature": {"TopEigenspace"},
}


def _modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(companion.__path__, "companion.")]
    return sorted(n for n in ["companion", *names] if not n.rsplit(".", 1)[-1].startswith("_"))


def runnable_examples(obj) -> list[doctest.Example]:
    """The ``>>>`` examples of ``obj``'s Examples section that doctest runs (not skipped)."""
    doc = inspect.getdoc(obj) or ""
    section = _SECTION.search(doc)
    if section is None:
        return []
    return [e for e in doctest.DocTestParser().get_examples(section.group(1)) if not e.options.get(doctest.SKIP)]


def lacking(modname: str) -> set[str]:
    """The public functions and classes of ``modname`` without a runnable example."""
    mod = importlib.import_module(modname)
    out = set()
    for name in getattr(mod, "__all__", ()):
        obj = getattr(mod, name, None)
        if obj is None:
            importlib.import_module(f"{modname}.{name}")  # a submodule listed in __all__: checked on its own
            continue
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and not runnable_examples(obj):
            out.add(name)
    return out


@pytest.mark.parametrize("modname", _modules())
def test_public_api_has_runnable_doctests(modname):
    missing, listed = lacking(modname), BACKLOG.get(modname, set())
    assert not missing - listed, f"{modname}: public objects without a doctest in an Examples section: {sorted(missing - listed)}"
    assert not listed - missing, f"{modname}: {sorted(listed - missing)} now have a doctest: remove them from BACKLOG"


def test_backlog_names_only_checked_modules():
    assert not set(BACKLOG) - set(_modules()), sorted(set(BACKLOG) - set(_modules()))


# Docstrings written as strings: as module-level functions, --doctest-modules would run them here.
SAMPLES = {
    "a pointer": ("Load a result (example there).", 0),
    "the word only": ("For example, nothing runs here.\n\nExamples\n--------\nCall it.\n", 0),
    "skipped": ("Skipped.\n\nExamples\n--------\n>>> f()  # doctest: +SKIP\n", 0),
    "outside the section": ("Elsewhere.\n\n>>> 1 + 1\n2\n\nReturns\n-------\nNone\n", 0),
    "in the section": ("Runs.\n\nExamples\n--------\n>>> f() is None\nTrue\n\nNotes\n-----\n>>> 2 + 2\n4\n", 1),
}


@pytest.mark.parametrize("sample", SAMPLES)
def test_only_a_runnable_example_in_the_examples_section_counts(sample):
    doc, n = SAMPLES[sample]

    def f():
        pass

    f.__doc__ = doc
    assert len(runnable_examples(f)) == n


def test_no_control_characters_in_the_source():
    """A docstring written without r'' turns \\frac, \\text, \\beta into form feed, tab, backspace: the
    formula prints garbled on the API page and in the PDF (theory.metastable.plateau_slope did)."""
    import re
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src" / "companion"
    bad = [f"{p.relative_to(src)}:{i}" for p in sorted(src.rglob("*.py"))
           for i, line in enumerate(p.read_text(encoding="utf-8").split("\n"), 1)
           if re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", line)]
    assert not bad, f"control characters (an escape read in a non-raw string?) at {bad}"
