"""The front page stays one (issue 46).

README.md is at most 120 lines, shows one picture that a fresh clone has, and carries no dated
measurement, host name or ratio history: those live in bench/results/README.md (and the book's
Performance page), where the tests that check quotes against stored runs read them. The few times it
quotes are copied from there, the counts it states are computed here, and the architecture it draws
(also in book/guide.md) is checked against the imports of every module of src/companion.
"""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BENCH = ROOT / "bench" / "results" / "README.md"
SRC = ROOT / "src" / "companion"

MAX_LINES = 120
MAX_MEASURED_PER_LINE = 3  # "a handful": more on one line is a measurement report, which belongs in bench/results
MAX_MEASURED = 6           # and on the whole page

_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
          r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
DATE = re.compile(
    r"\b(?:19|20)\d\d-[01]\d(?:-[0-3]\d)?\b"                             # 2026-12-04, 2026-12
    rf"|\b{_MONTH}\.? [0-3]?\d(?:st|nd|rd|th)?\b|\b[0-3]?\d {_MONTH}\b"   # Dec 4, 4 December
    rf"|\b{_MONTH} (?:19|20)\d\d\b"                                      # December 2026
    r"|\b(?:on|of|from|since|until|to) [01]\d-[0-3]\d\b")                # on 12-01
HOST = re.compile(r"\b(?:EPYC|Xeon|Zen ?\d|Ryzen|Threadripper|Graviton|Sapphire Rapids|Ice Lake)\b|\bhosts?\b")
# A measured quantity: a number with a unit of time, size, speed, ratio or share ("13 min 19 s" is one).
MEASURED = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?(?:min(?:\s\d+(?:\.\d+)?\ss)?|ms|µs|s|h|[kMG]i?B|GFLOP(?:/s)?|x|×|%"
    r"|evaluations|steps|runs)(?![\w/])")


def measured(line: str) -> list[str]:
    """The measured quantities on one line of prose, as written.

    >>> measured("took 13 min 19 s, then 712 to 913 s; 2.7x faster, 0.45 GB, 187 evaluations and 3 cores")
    ['13 min 19 s', '913 s', '2.7x', '0.45 GB', '187 evaluations']
    """
    return [m.group(0) for m in MEASURED.finditer(line)]


def _prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks (the tested example's output has numbers of its own)."""
    out, fenced = [], False
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append((i, line))
    return out


def front_page_problems(text: str) -> list[str]:
    """What turns a front page into a lab notebook: too long, a date, a host name, a line with more than
    a handful of measured numbers, too many on the page. Empty when none."""
    lines = text.splitlines()
    out = [f"{len(lines)} lines (at most {MAX_LINES})"] if len(lines) > MAX_LINES else []
    total = 0
    for i, line in _prose(text):
        if DATE.search(line):
            out.append(f"line {i} carries a date ({DATE.search(line).group(0)!r}): dated numbers go to bench/results/README.md")
        if HOST.search(line):
            out.append(f"line {i} names a host ({HOST.search(line).group(0)!r})")
        found = measured(line)
        total += len(found)
        if len(found) > MAX_MEASURED_PER_LINE:
            out.append(f"line {i} carries {len(found)} measured numbers {found} (at most {MAX_MEASURED_PER_LINE})")
    if total > MAX_MEASURED:
        out.append(f"{total} measured numbers on the page (at most {MAX_MEASURED})")
    return out


def test_readme_is_a_front_page():
    assert front_page_problems(README.read_text()) == []


def test_front_page_check_can_fail():
    history = ("the package was 2.7x faster (median of 2.4-3.2x over 4 runs on a Zen 1 host, 2026-12-04 and 05, "
               "187 evaluations against 230; 2.6x on the AVX-512 host)")
    found = " ".join(front_page_problems(history))
    for why in ("carries a date", "names a host", "measured numbers"):
        assert why in found, why
    assert front_page_problems("re-timed on Dec 3: 33 s")[0].startswith("line 1 carries a date")
    assert front_page_problems("x\n" * (MAX_LINES + 1))[0] == f"{MAX_LINES + 1} lines (at most {MAX_LINES})"
    spread = "\n".join(f"step {k}: {k} min" for k in range(MAX_MEASURED + 1))
    assert "measured numbers on the page" in " ".join(front_page_problems(spread))
    assert front_page_problems("Koubbi et al. (2026), Python 3.11 to 3.13, 64 tokens, `make book`") == []


def test_quoted_times_are_copied_from_bench_results():
    """Each measured number of the front page stands, as written, in bench/results/README.md, where its
    date and machine are said; a number only the README has is a measurement nobody recorded."""
    bench = " ".join(BENCH.read_text().replace("**", "").split())
    quoted = [q for _, line in _prose(README.read_text()) for q in measured(line)]
    assert quoted, "the README quotes no measured time for its two commands"
    missing = [q for q in quoted if " ".join(q.split()) not in bench]
    assert not missing, f"README quotes {missing}, which bench/results/README.md does not hold"


def test_counts_in_the_readme_are_the_real_ones():
    from companion.registry import registry

    text = " ".join(README.read_text().split())
    real = {"experiments": len(registry()), "chapters": len(list((ROOT / "book" / "chapters").glob("*.md")))}
    for what, n in real.items():
        for said in re.findall(rf"\b(\d+) {what}\b", text):
            assert int(said) == n, f"README says {said} {what}; there are {n}"


def test_readme_shows_one_picture_a_fresh_clone_has():
    text = README.read_text()
    pictures = re.findall(r"!\[([^\]]*)\]\(([^)\s]+)\)", text) + [("", s) for s in re.findall(r"<img [^>]*src=\"([^\"]+)\"", text)]
    assert len(pictures) == 1, f"expected one picture, found {pictures}"
    (alt, path), = pictures
    assert alt.strip(), "the picture has no alt text"
    assert (ROOT / path).is_file(), f"{path} does not exist"
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", path], cwd=ROOT, capture_output=True, text=True)
    assert tracked.returncode == 0, f"{path} is not committed: a fresh clone would show a broken image"


# --------------------------------------------------------------------------- the architecture
def units() -> set[str]:
    """Every module and subpackage directly under src/companion (the package's __init__ aside)."""
    return {p.stem for p in SRC.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}


def imports() -> set[tuple[str, str]]:
    """(importer, imported) between those units, from every import statement, in functions too."""
    known, edges = units(), set()
    for f in SRC.rglob("*.py"):
        parts = f.relative_to(SRC.parent).with_suffix("").parts
        package = parts if f.name == "__init__.py" else parts[:-1]
        package = package[:-1] if package[-1] == "__init__" else package
        me = parts[1] if len(parts) > 1 and parts[1] != "__init__" else None
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
                mod = ".".join(p for p in (base, node.module or "") if p)
                names = [mod] + [f"{mod}.{a.name}" for a in node.names] if mod == "companion" else [mod]
            else:
                continue
            for name in names:
                bits = name.split(".")
                if bits[0] == "companion" and len(bits) > 1 and bits[1] in known and me and bits[1] != me:
                    edges.add((me, bits[1]))
    return edges


def architecture(text: str) -> list[set[str]]:
    """The layers the README draws, top first: the names before the description on each line of the
    code block under "## Architecture" (``experiments/<chapter>/<stem>.py`` -> ``experiments``)."""
    block = re.search(r"^## Architecture\b.*?^```\n(.*?)^```", text, re.S | re.M)
    assert block, "README.md: no code block under '## Architecture'"
    layers = []
    for line in block.group(1).splitlines():
        names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        layers.append({re.split(r"[/ (]", n.strip())[0] for n in names.split(",")})
    return layers


def layering_problems(layers: list[set[str]], modules: set[str], edges: set[tuple[str, str]]) -> list[str]:
    """Modules the layers leave out or name twice or do not have, and imports that do not point down."""
    where = {}
    out = []
    for i, layer in enumerate(layers):
        for name in layer:
            if name in where:
                out.append(f"{name} is in two layers")
            where[name] = i
    out += [f"{m} is in no layer" for m in sorted(modules - set(where))]
    out += [f"{m} is no module of src/companion" for m in sorted(set(where) - modules)]
    out += [f"{a} (layer {where[a] + 1}) imports {b} (layer {where[b] + 1}): not a layer below"
            for a, b in sorted(edges) if a in where and b in where and where[b] <= where[a]]
    return out


def test_architecture_names_every_module_and_imports_point_down():
    """The layers drawn in README.md and in the book's guide are the same and true of the imports."""
    layers = architecture(README.read_text())
    assert layering_problems(layers, units(), imports()) == []
    assert architecture((ROOT / "book" / "guide.md").read_text()) == layers, "book/guide.md draws other layers than README.md"


def test_layering_check_can_fail():
    layers = [{"runner"}, {"store"}, {"provenance"}]
    assert layering_problems(layers, {"runner", "store", "provenance"}, {("runner", "store"), ("store", "provenance")}) == []
    found = " ".join(layering_problems(layers + [{"store"}], {"runner", "store", "provenance", "ledger"},
                                       {("provenance", "runner"), ("store", "store")}))
    for why in ("in two layers", "ledger is in no layer", "provenance (layer 3) imports runner"):
        assert why in found, why
    assert {("integrate", "models"), ("circle", "attention")} <= imports()  # the scan sees the package's real imports
    assert architecture("## Architecture\n\n```\nexperiments/<chapter>/<stem>.py, store   x\ntheory/   y\n```\n") == [
        {"experiments", "store"}, {"theory"}]


def test_store_imports_no_llm_sweep_or_registry():
    """Issue 47: the store keeps one job (where results live, the verified unit); it neither runs, judges
    nor assembles anything, so it imports none of these (function-level imports counted)."""
    assert {b for a, b in imports() if a == "store"} <= {"provenance", "encoding"}
