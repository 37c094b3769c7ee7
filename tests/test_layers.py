"""The package in layers (issue 47): every module of src/companion sits on one layer of :data:`LAYERS`,
and every import, at module level or inside a function, points to its own layer or one below.

A unit is a module directly under src/companion or a subpackage (``experiments``, ``llm``, ``metrics``,
``models``, ``theory``: its modules import each other freely). The package's ``__init__`` imports
nothing itself (it loads ``attention``, ``init``, ``metrics``, ``models`` and ``integrate`` on first
use) and is no layer. The registry imports the experiment modules by name (``importlib``), which is
not an import statement: it sits low, and ``experiments`` above it.
"""
from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "companion"

# Top first. A module imports only from its own layer or the layers below it (as declared, no module imports
# one of its own layer: the list also reads as strictly downward, the README's form).
LAYERS: list[tuple[tuple[str, ...], str]] = [
    (("__main__",), "the command line (python -m companion, or companion)"),
    (("runner", "pages"), "run experiments (one, over a grid, every missing one); what pages show of stored results"),
    (("experiments",), "one experiment a file: config per profile, body, plot, claims"),
    (("replicate", "transport"), "a stored result against its replicate; results carried between machines"),
    (("integrate",), "simulate, the one entry point for every model"),
    (("llm", "models"), "LLM probes on a local Hugging Face LM (and the training parts' assembly); the particle models"),
    (("theory",), "closed forms, one module per paper"),
    (("metrics", "circle"), "observables; tokens on the circle in angle form"),
    (("attention", "pde", "inference", "inventory"), "the attention field; paper D's PDE; hypothesis tests; the papers' inventory"),
    (("_fused", "_circle_grid", "init", "ledger", "registry", "report", "store", "sweep"),
     "kernels; initial states; the ledger; experiments declared; printing; stored results, verified; Dask sweeps"),
    (("_omp", "_rk", "_validate", "encoding", "fits", "gpu", "perf", "provenance", "style"),
     "threads, RK stages, checks, a result as npz arrays, fits, devices, settings, provenance, style"),
]


def units(src: Path = SRC) -> set[str]:
    """Every module and subpackage directly under ``src`` (the package's ``__init__`` aside)."""
    return {p.stem for p in src.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in src.iterdir() if p.is_dir() and (p / "__init__.py").exists()}


def imports(src: Path = SRC) -> set[tuple[str, str, str]]:
    """``(importer, imported, file)`` between the units of ``src``, from every import statement (in functions
    too), relative or absolute; imports within one unit are left out."""
    known, edges = units(src), set()
    for f in sorted(src.rglob("*.py")):
        parts = f.relative_to(src.parent).with_suffix("").parts  # ("companion", "llm", "parts")
        package = parts[:-1]  # what a relative import is relative to (a package's __init__: the package)
        me = parts[1] if len(parts) > 1 and parts[1] != "__init__" else None
        if me is None:
            continue
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
                mod = ".".join(p for p in (base, node.module or "") if p)
                names = [mod] + ([f"{mod}.{a.name}" for a in node.names] if mod == src.name else [])
            else:
                continue
            for name in names:
                bits = name.split(".")
                if bits[0] == src.name and len(bits) > 1 and bits[1] in known and bits[1] != me:
                    edges.add((me, bits[1], f.relative_to(src).as_posix()))
    return edges


def layering_problems(layers, modules: set[str], edges) -> list[str]:
    """Units the layers leave out, name twice or do not have, and imports that point up. Empty when none."""
    where: dict[str, int] = {}
    out = []
    for i, (names, _) in enumerate(layers):
        for name in names:
            if name in where:
                out.append(f"{name} is on two layers")
            where[name] = i
    out += [f"{m} is on no layer: add it to LAYERS (and to the README's list)" for m in sorted(modules - set(where))]
    out += [f"{m} is on a layer but is no module of src/companion" for m in sorted(set(where) - modules)]
    out += [f"{a} (layer {where[a] + 1}) imports {b} (layer {where[b] + 1}, above it) in {f}"
            for a, b, f in sorted(edges) if a in where and b in where and where[b] < where[a]]
    return out


def test_every_module_is_on_a_layer_and_imports_point_down_or_sideways():
    assert layering_problems(LAYERS, units(), imports()) == []


def test_store_imports_no_llm_sweep_or_registry():
    """Issue 47: the store keeps one job (where results live, the verified unit); it neither runs, judges
    nor assembles anything, so it needs none of these."""
    assert {b for a, b, _ in imports() if a == "store"} <= {"provenance", "encoding"}


def test_layering_check_can_fail(tmp_path):
    pkg = tmp_path / "companion"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .. import low\n")
    (pkg / "top.py").write_text("from . import low\n")
    (pkg / "low.py").write_text("def f():\n    from .top import g  # a function-level import counts\n")
    (pkg / "extra.py").write_text("import companion.low\n")
    layers = [(("top",), ""), (("low", "sub"), "")]
    assert units(pkg) == {"top", "low", "sub", "extra"}
    found = " ".join(layering_problems(layers, units(pkg), imports(pkg)))
    for why in ("extra is on no layer", "low (layer 2) imports top (layer 1, above it) in low.py"):
        assert why in found, found
    assert "sub (layer 2) imports low" not in found  # sideways, within a layer
    assert layering_problems(layers + [(("top", "gone"), "")], {"top", "low", "sub"}, set()) == [
        "top is on two layers", "gone is on a layer but is no module of src/companion"]
    assert ("runner", "store", "runner.py") in imports()  # the scan sees the package's real imports
