"""Every public function and class of the core modules has a docstring with a doctested example."""
from __future__ import annotations

import importlib
import inspect

import pytest

CORE = (
    "companion.attention",
    "companion.models",
    "companion.integrate",
    "companion.init",
    "companion.metrics",
    "companion.theory.consensus",
    "companion.ledger",
    "companion.provenance",
    "companion.report",
)


def _public(modname: str):
    mod = importlib.import_module(modname)
    for name in getattr(mod, "__all__", ()):
        obj = getattr(mod, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            yield f"{modname}.{name}", obj


@pytest.mark.parametrize("modname", CORE)
def test_core_public_api_has_examples(modname):
    missing = []
    for qual, obj in _public(modname):
        doc = inspect.getdoc(obj) or ""
        # an example of its own, or a pointer to the function whose example covers it
        if "Examples" not in doc and "example" not in doc.lower():
            missing.append(qual)
    assert not missing, f"public objects without an example: {missing}"
