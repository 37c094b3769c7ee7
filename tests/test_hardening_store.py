"""Issue 31, groups 4-7 and the code staleness: a stored result is one unit tied to its place, replaced
whole, read only through the verified loader, and says whether the code behind it changed since.

Each test scripts one of the issue's probes; each fails on the code before the issue's fixes.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import numpy as np
import pytest

from companion import pages, provenance, store
from companion.provenance import ResultError, save_result, sha256_file
from companion.runner import run_experiment
from companion.transport import pack_results, store_packed

NAME, OTHER = "intro-consensus", "intro-clustering"
SMALL = {"n": 4, "t1": 1.0}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """Small full-profile results of two experiments (with their figures), computed once."""
    out = tmp_path_factory.mktemp("template") / "results"
    for name, params in ((NAME, SMALL), (OTHER, {"n": 8, "trials": 2})):
        run_experiment(name, "full", out=out, params=params)
    return out


@pytest.fixture
def results(template, tmp_path, monkeypatch):
    """A repository root under tmp_path (COMPANION_ROOT) holding a copy of ``template`` as data/results."""
    monkeypatch.setenv("COMPANION_ROOT", str(tmp_path))
    out = store.results_dir()
    shutil.copytree(template, out)
    return out


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() if p.is_file() else None for p in sorted(folder.iterdir())}


def _rewrite_meta(path: Path, **changes) -> dict:
    """Change a stored JSON's fields, keeping it hash-valid (the attack of a crafted result)."""
    meta = json.loads(path.read_text())
    meta.update(changes)
    path.write_text(json.dumps(meta))
    return meta


# --- group 4: figures only by plain names in the result's folder; store checks each pack's unit ----

def test_figure_outside_the_folder_is_refused(results, tmp_path):
    secret = tmp_path / "elsewhere.png"
    secret.write_bytes(b"not the result's figure")
    meta_path = results / NAME / "full.json"
    meta = json.loads(meta_path.read_text())
    for name in (str(secret), "../elsewhere.png", "sub/full.png", ""):
        meta["figures"] = [name]
        meta["sha256"]["figures"] = {name: sha256_file(secret)}
        meta_path.write_text(json.dumps(meta))
        with pytest.raises(ResultError, match="not a plain file name"):
            store.load_run(NAME, "full")


def test_pack_of_crafted_provenance_leaves_it_out_and_store_copies_nothing_outside(results, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"secret")
    meta_path = results / NAME / "full.json"
    meta = json.loads(meta_path.read_text())
    meta["figures"] = [str(secret)]
    meta["sha256"]["figures"] = {str(secret): sha256_file(secret)}
    meta_path.write_text(json.dumps(meta))
    with pytest.warns(RuntimeWarning, match=f"{NAME}/full.npz left out"):
        packs = pack_results(results, tmp_path / "packs")  # no raw relative_to error: the other result packs
    names = tarfile.open(packs[0]).getnames()
    assert all(n.startswith(OTHER + "/") for n in names) and not any("secret" in n for n in names)


def test_store_refuses_a_pack_of_another_experiment_without_overwriting(results, tmp_path):
    good = _files(results / NAME)
    # a pack whose folder says intro-consensus but holds intro-clustering's (verified) result
    with tarfile.open(tmp_path / "swapped.tar.gz", "w:gz") as tar:
        for f in (results / OTHER).iterdir():
            tar.add(f, arcname=f"{NAME}/{f.name}")
    with pytest.raises(ValueError, match=f"swapped.tar.gz.*holds the 'full' result of '{OTHER}'.*nothing stored"):
        store_packed([tmp_path / "swapped.tar.gz"], results)
    assert _files(results / NAME) == good
    assert store.load_run(NAME, "full")[1]["config"]["experiment"] == NAME
    # the fast profile's file names over the full profile's: refused too
    with tarfile.open(tmp_path / "profile.tar.gz", "w:gz") as tar:
        for f in (results / NAME).iterdir():
            tar.add(f, arcname=f"{NAME}/{f.name.replace('full', 'fast')}")
    with pytest.raises(ValueError, match="profile.tar.gz: intro-consensus/fast.json: .*nothing stored"):
        store_packed([tmp_path / "profile.tar.gz"], results)
    assert not (results / NAME / "fast.json").exists()


def test_store_verifies_every_pack_before_storing_any(results, tmp_path):
    packs = pack_results(results, tmp_path / "packs")
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        tar.add(results / NAME / "full.json", arcname=f"{NAME}/full.json")  # its npz left out
    target = tmp_path / "target"
    with pytest.raises((ResultError, FileNotFoundError, ValueError)):
        store_packed(packs + [bad], target)
    assert not any(target.rglob("*.npz"))  # the good pack was not stored either


@pytest.mark.slow
def test_pack_of_no_folder_exits_non_zero(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "companion", "pack", str(tmp_path / "no" / "such"), "--to", str(tmp_path / "p")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "empty").mkdir()
    proc = subprocess.run([sys.executable, "-m", "companion", "pack", str(tmp_path / "empty"), "--to", str(tmp_path / "p")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "nothing packed" in proc.stderr


# --- group 5: a failed write leaves the previous result; ENOSPC names the file, leaves nothing -----

class _FullDisk:
    """``os.fdopen`` whose files raise ENOSPC on write once ``after`` writes went through."""

    def __init__(self, after: int):
        self.after, self.real = after, os.fdopen

    def __call__(self, fd, *a, **kw):
        f = self.real(fd, *a, **kw)
        disk = self

        class Wrapped:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                f.close()

            def write(self, data):
                if disk.after <= 0:
                    raise OSError(errno.ENOSPC, "No space left on device")
                disk.after -= 1
                return f.write(data)

            def __getattr__(self, k):
                return getattr(f, k)

        return Wrapped()


@pytest.mark.parametrize("after", [0, 1, 2])  # the figure, the npz, the JSON
def test_full_disk_names_the_file_and_keeps_the_previous_result(results, monkeypatch, after):
    before = _files(results / NAME)
    monkeypatch.setattr(provenance.os, "fdopen", _FullDisk(after))
    with pytest.raises(OSError) as info:
        run_experiment(NAME, "full", out=results, params={"n": 5, "t1": 1.0})
    monkeypatch.undo()
    assert info.value.errno == errno.ENOSPC
    assert str(results / NAME) in str(info.value) and "nothing was replaced" in str(info.value)
    assert _files(results / NAME) == before  # no orphan fast.png / .npz, no temporary folder left
    assert store.load_run(NAME, "full", results.parent.parent)[0]["config"]["n"] == 4


@pytest.mark.slow
def test_a_write_killed_midway_leaves_the_previous_result(results, tmp_path):
    """SIGKILL while the new result is being written (here: once its figure is written into the staging folder)."""
    before = _files(results / NAME)
    code = (f"import os, signal\nfrom companion import store\nfrom companion.runner import run_experiment\n"
            f"real = store.atomic_write_bytes\n"
            f"def killed(*a, **k):\n    path = real(*a, **k)\n    os.kill(os.getpid(), signal.SIGKILL)\n"
            f"store.atomic_write_bytes = killed\n"
            f"run_experiment({NAME!r}, 'full', out={str(results)!r}, params={{'n': 5, 't1': 1.0}})\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COMPANION_ROOT": str(tmp_path)})
    assert proc.returncode == -9
    leftover = [p.name for p in (results / NAME).iterdir() if p.name.startswith(".")]
    assert leftover and all(n.startswith(".full.new-") for n in leftover)  # the dead writer's folder
    assert {k: v for k, v in _files(results / NAME).items() if not k.startswith(".")} == before
    assert store.load_run(NAME, "full")[0]["config"]["n"] == 4
    run_experiment(NAME, "full", out=results, params={"n": 5, "t1": 1.0})  # the next write cleans it up
    assert not any(p.name.startswith(".") for p in (results / NAME).iterdir())
    assert store.load_run(NAME, "full")[0]["config"]["n"] == 5


def test_a_result_that_draws_fewer_figures_removes_the_old_ones(results):
    (results / NAME / "full-2.png").write_bytes(b"an older run's second figure")
    run_experiment(NAME, "full", out=results, params=SMALL, figure=False)
    assert sorted(p.name for p in (results / NAME).iterdir()) == ["full.json", "full.npz"]


def test_concurrent_writers_leave_one_verified_result(results):
    errors = []

    def write(n):
        try:
            run_experiment(NAME, "full", out=results, params={"n": n, "t1": 0.5})
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(n,)) for n in (3, 5, 7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.load_run(NAME, "full")[0]["config"]["n"] in (3, 5, 7)


# --- group 6: every reader of provenance goes through the verified loader ---------------------------

def _row(name):
    return next(r for r in pages.figure_sources("fast") if r["experiment"] == name)


def test_status_does_not_show_swapped_results(results):
    assert _row(NAME)["profile"] == "fast"  # stored with other parameters: not shown, and says why
    run_experiment(NAME, "full", out=results, figure=False)
    assert _row(NAME)["profile"] == "full" and _row(NAME)["stale"] is None
    tmp = results.parent / "swap"
    shutil.move(results / NAME, tmp)
    shutil.move(results / OTHER, results / NAME)
    shutil.move(tmp, results / OTHER)
    for name, other in ((NAME, OTHER), (OTHER, NAME)):
        row = _row(name)
        assert row["profile"] == "fast" and row["verdicts"] == {}, row
        assert f"result of '{other}'" in row["stale"]
        assert "no current paper-scale result" in pages.source_line(name)


@pytest.mark.parametrize("damage", ["truncated", "list", "latin-1", "hash"])
def test_status_reports_damaged_provenance(results, damage):
    meta_path = results / NAME / "full.json"
    text = meta_path.read_text()
    meta_path.write_bytes({"truncated": text[: len(text) // 2].encode(), "list": b"[1, 2]",
                           "latin-1": "{\"a\": \"\xe9\"}".encode("latin-1"),
                           "hash": text.replace(json.loads(text)["sha256"]["npz"], "0" * 64).encode()}[damage])
    row = _row(NAME)
    assert row["profile"] == "fast" and row["stale"].startswith("does not verify") and str(results / NAME) in row["stale"]
    with pytest.raises(ResultError, match="full.json"):
        store.load_run(NAME, "full")
    assert pages._current_full(NAME, None) is None


def test_a_damaged_part_is_named(results, capsys):
    parts = results / NAME / "parts"
    p = save_result(parts / "r1-s0", {"x": np.arange(3)}, wall_time_s=10.0)
    row = _row(NAME)
    assert (row["parts"], row["parts_s"]) == (1, 10.0)
    p.with_suffix(".json").write_text(p.with_suffix(".json").read_text()[:40])
    with pytest.raises(ResultError, match="r1-s0.json"):
        pages.figure_sources("fast")
    with pytest.raises(ResultError, match="r1-s0.json"):  # the line a page prints of a stored result
        pages._stored_line(store_get(NAME), "full", store.load_run(NAME, "full")[1], None)


# --- group 7: loader edge cases ------------------------------------------------------------------

def test_deeply_nested_json_is_a_clear_error(results):
    (results / NAME / "full.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ResultError, match="nested too deeply"):
        store.load_run(NAME, "full")
    assert store.stale_reason(store_get(NAME), "full").startswith("does not verify")
    assert pages._current_full(NAME, None) is None


def test_fifo_in_place_of_the_json_is_refused_without_hanging(results):
    for victim in ("full.json", "full.npz"):
        folder = results / NAME
        run_experiment(NAME, "full", out=results, params=SMALL)
        (folder / victim).unlink()
        os.mkfifo(folder / victim)
        done = {}
        t = threading.Thread(target=lambda: done.setdefault("e", _error(lambda: store.load_run(NAME, "full"))), daemon=True)
        t.start()
        t.join(20)
        if t.is_alive():  # unblock the reader before failing
            with open(folder / victim, "wb") as f:
                f.write(b"x")
            pytest.fail(f"load_run blocked on a FIFO in place of {victim}")
        assert isinstance(done["e"], ResultError) and "not a regular file" in str(done["e"]), done
        (folder / victim).unlink()


def _error(fn):
    try:
        fn()
    except Exception as e:
        return e
    return None


def test_missing_wall_time_is_handled(results, capsys):
    run_experiment(NAME, "full", out=results, figure=False)
    meta_path = results / NAME / "full.json"
    meta = json.loads(meta_path.read_text())
    del meta["wall_time_s"]
    meta_path.write_text(json.dumps(meta))  # hash-valid: the JSON's own fields are not hashed
    assert pages.show_full({"experiment": NAME}, draw=False)["profile"] == "full"
    assert "no wall time recorded" in capsys.readouterr().out
    assert pages._current_full(NAME, None) is not None
    assert "? s" in pages.source_line(NAME)
    assert _row(NAME)["full_s"] is None


# --- the code staleness ---------------------------------------------------------------------------

@pytest.mark.slow
def test_provenance_records_the_code_and_the_pages_say_when_it_changed(results, monkeypatch, capsys):
    run_experiment(NAME, "full", out=results, figure=False)
    meta = store.load_run(NAME, "full")[1]
    assert meta["code"] == store.code_version(store_get(NAME))
    assert store.code_status(store_get(NAME), meta) == "current" and _row(NAME)["code"] == "current"
    assert "(stale" not in pages.source_line(NAME)
    # the recorded hash no longer matches the checkout (the code changed since the commit)
    _rewrite_meta(results / NAME / "full.json", code={**meta["code"], "sha256": "0" * 16}, commit="abcdef0123456789")
    assert store.code_status(store_get(NAME), store.load_run(NAME, "full")[1]) == "code changed since abcdef0"
    assert _row(NAME)["code"] == "code changed since abcdef0"
    assert pages.source_line(NAME).endswith(" (stale: its code changed since commit abcdef0, so it may not be what the code now computes)")
    pages.show_full({"experiment": NAME}, draw=False)
    assert capsys.readouterr().out.rstrip().endswith("; code changed since abcdef0")
    assert store.stale_reason(store_get(NAME), "full") is None  # still shown: the configuration is the profile's
    # `full` recomputes it
    rows = __import__("companion.runner", fromlist=["run_profiles"]).run_profiles([NAME], "full", out=results, log=lambda s: None)
    assert rows[0]["status"] == "ran"
    assert store.code_status(store_get(NAME), store.load_run(NAME, "full")[1]) == "current"
    # a result stored before the code was recorded says so, and is kept
    _rewrite_meta(results / NAME / "full.json", code=None)
    assert _row(NAME)["code"] == "code version not recorded"
    assert pages.source_line(NAME).endswith(" (stale: no code version was recorded with it, so it may not be what the code now computes)")
    assert pages.state_words(_row(NAME)) == "stale: no code version was recorded with it"


def store_get(name):
    from companion.registry import get

    return get(name)


def test_the_sanitizer_removes_the_code_phrase_whole():
    """The chapters' reference notebooks predate the phrase: nbval compares them after this regex."""
    import re

    nbval = pytest.importorskip("nbval.plugin")
    text = (Path(__file__).resolve().parents[1] / "book" / "_scripts" / "nbval_sanitize.cfg").read_text()
    patterns = nbval.get_sanitize_patterns(text)  # as nbval reads the file (a malformed pair is skipped silently)
    line = "'the paper-scale (full) profile, computed at commit 1234567 on 2026-12-01, cpu, 5 s'"
    for stale in (" (stale: its code changed since commit abcdef0, so it may not be what the code now computes)'",
                  " (stale: no code version was recorded with it, so it may not be what the code now computes)'"):
        out = line[:-1] + stale
        for regex, replace in patterns:
            out = re.sub(regex, replace, out)
        assert out == line


def test_stored_full_results_say_when_their_code_changed():
    """Every stored full result: unless its code hash is the checkout's, the chapter's caption
    (source_line) says "stale" and the Status row never says current (issue 48)."""
    from companion.registry import registry

    for name in registry():
        stored = pages._current_full(name, None)
        if stored is None:
            continue
        status = store.code_status(store_get(name), stored[1])
        line = pages.source_line(name, None, stored)
        assert status in ("current", "code version not recorded") or status.startswith("code changed since ")
        assert ("(stale: " in line) == (status != "current"), (name, status, line)
        row = {"stale": None, "code": status}
        assert (pages.state_words(row) == "**current**") == (status == "current"), (name, status)


def test_source_hash_follows_the_imports():
    files = {f.relative_to(Path(provenance.__file__).parent).as_posix()
             for f in provenance.source_files("companion.experiments.introduction.consensus")}
    assert {"experiments/introduction/consensus.py", "integrate.py", "models/__init__.py"} <= files
    assert not files & {"store.py", "pages.py", "provenance.py", "runner.py"}
    assert provenance.source_hash("companion.experiments.introduction.consensus") == \
        provenance.source_hash("companion.experiments.introduction.consensus")


# --- a write killed at any point leaves the previous unit or the new one (second round) ----------
#
# A unit is replaced by renames in the result's folder. Killed between its first and its last rename
# (before issue 31's second round), the folder held the old JSON beside new figures or a new .npz:
# refused on load, and the previous result gone. Here a forked child runs a whole write and dies
# (os._exit, no handler runs) at its k-th change of the file system, for every k; the folder must
# then load as the old unit or the new one, read only, and the next write must leave just its own.

DEMO, KILLED = "demo", 77
MUTATING = ("replace", "rename", "link", "unlink", "remove", "rmdir", "mkdir")


def _demo_unit(folder: Path, n: int, figures: int) -> dict:
    """A verified ``full`` unit of the unregistered experiment ``demo`` in ``folder``: x = arange(n) and
    ``figures`` figure files; returns its provenance."""
    folder.mkdir(parents=True, exist_ok=True)
    names = ["full.png" if i == 0 else f"full-{i + 1}.png" for i in range(figures)]
    for i, name in enumerate(names):
        (folder / name).write_bytes(b"\x89PNG figure %d of the unit n=%d" % (i, n))
    save_result(folder / "full.npz", {"x": np.arange(n)}, config={"experiment": DEMO, "profile": "full"}, figures=names)
    return json.loads((folder / "full.json").read_text())


def _write(src: Path, folder: Path) -> None:
    """Store the unit in ``src`` into ``folder`` as save_run does: staged, then installed."""
    with store.staging(folder, "full") as tmp:
        for f in _files(src):
            shutil.copyfile(src / f, tmp / f)
        store.install(tmp, folder, "full", DEMO)


def _dies_at(k: int, action) -> bool:
    """Run ``action()`` in a forked child that exits at its ``k``-th file-system change (counted from 0);
    True when it made fewer changes and ran to its end."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            count = [0]

            def dying(fn):
                def call(*a, **kw):
                    if count[0] == k:
                        os._exit(KILLED)
                    count[0] += 1
                    return fn(*a, **kw)
                return call

            for f in MUTATING:
                setattr(os, f, dying(getattr(os, f)))
            action()
            code = 0
        finally:
            os._exit(code)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    assert code in (0, KILLED), f"the write failed (exit {code}) rather than being killed"
    return code == 0


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


@pytest.fixture
def units(tmp_path):
    """Old, new and next ``demo`` units (old and new drawing different numbers of figures), built once per test."""
    def make(old_figures, new_figures):
        made = {}
        for label, n, figs in (("old", 4, old_figures), ("new", 5, new_figures), ("next", 6, 1)):
            made[label] = (tmp_path / "units" / label, _demo_unit(tmp_path / "units" / label, n, figs)) if figs is not None else None
        return made
    return make


def _loads_as(folder: Path, *allowed: dict | None):
    """load_run of the demo unit, which must verify as one of ``allowed`` (None: nothing stored) and write nothing."""
    before = _snapshot(folder)
    got = store.load_run(DEMO, "full", folder=folder.parent)
    assert _snapshot(folder) == before, "the loader changed the folder"
    sums = None if got is None else got[1]["sha256"]
    assert sums in [None if a is None else a["sha256"] for a in allowed], f"loaded {sums}"
    return got


def _next_write_is_clean(folder: Path, units: dict) -> None:
    with store.staging(folder, "full"):  # rolls back or discards what the killed write left
        pass
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")], "backups or staging folders left"
    _write(units["next"][0], folder)
    assert sorted(p.name for p in folder.iterdir()) == sorted(_files(units["next"][0]))
    assert store.load_run(DEMO, "full", folder=folder.parent)[1]["sha256"] == units["next"][1]["sha256"]


@pytest.mark.parametrize("old_figures, new_figures", [(3, 1), (1, 3), (0, 2), (None, 2)],
                         ids=["fewer-figures", "more-figures", "first-figures", "nothing-stored-before"])
def test_a_write_killed_at_any_point_leaves_the_old_or_the_new_unit(tmp_path, units, old_figures, new_figures):
    made = units(old_figures, new_figures)
    old = made["old"][1] if made["old"] else None
    new_src, new = made["new"]
    seen, k = set(), 0
    while True:
        folder = tmp_path / f"k{k}" / "results" / DEMO
        if made["old"]:
            _write(made["old"][0], folder)
        else:
            folder.mkdir(parents=True)
        done = _dies_at(k, lambda: _write(new_src, folder))
        got = _loads_as(folder, old, new)
        seen.add("new" if got and got[1]["sha256"] == new["sha256"] else "old")
        if done:
            break
        _next_write_is_clean(folder, made)
        k += 1
    assert k > 5 and seen == {"old", "new"}  # every change of the write was a kill point, and both ends were seen


def test_a_recovery_killed_at_any_point_still_loads_the_old_unit(tmp_path, units):
    """The write killed midway through its renames; then the next writer's roll-back killed at every point."""
    made = units(3, 1)
    base = tmp_path / "base" / "results" / DEMO
    _write(made["old"][0], base)
    k = 0
    while True:  # the first kill that leaves a unit that does not verify beside a backup
        trial = tmp_path / f"try{k}" / "results" / DEMO
        shutil.copytree(base, trial)
        assert not _dies_at(k, lambda: _write(made["new"][0], trial))
        backup = any(p.name.startswith(".full.old-") for p in trial.iterdir())
        if backup and _error(lambda: provenance.load_result(trial / "full.npz")) is not None:
            break
        k += 1
    j = 0
    while True:
        folder = tmp_path / f"j{j}" / "results" / DEMO
        shutil.copytree(trial, folder, symlinks=True)
        done = _dies_at(j, lambda: store.staging(folder, "full").__enter__())
        _loads_as(folder, made["old"][1])  # restored or not yet: always the previous unit
        if done:
            assert provenance.load_result(folder / "full.npz")[1]["sha256"] == made["old"][1]["sha256"]
            assert not any(p.name.startswith(".full.old-") for p in folder.iterdir())
            break
        _next_write_is_clean(folder, made)
        j += 1
    assert j > 3


@pytest.mark.parametrize("lasting", [False, True], ids=["one-error", "every-rename-after"])
@pytest.mark.parametrize("k", range(6))  # the figure, the .npz, the JSON, and beyond
def test_an_error_during_the_renames_puts_the_previous_unit_back(tmp_path, units, monkeypatch, k, lasting):
    """An exception at the k-th rename of the store module: the previous unit is put back (or, when
    renames keep failing, left in the backup the loader reads), never a unit that is refused."""
    made = units(2, 1)
    folder = tmp_path / "results" / DEMO
    _write(made["old"][0], folder)
    real, count = os.replace, [0]

    def failing(src, dst, *a, **kw):  # the k-th rename made by the store module fails
        if Path(sys._getframe(1).f_code.co_filename).resolve() == Path(store.__file__).resolve():
            count[0] += 1
            if count[0] == k + 1 or (lasting and count[0] > k):
                raise OSError(errno.EIO, "Input/output error", str(dst))
        return real(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", failing)
    try:
        _write(made["new"][0], folder)
        failed = False
    except OSError:
        failed = True
    monkeypatch.undo()
    _loads_as(folder, made["old"][1] if failed else made["new"][1])  # an error: the previous unit; none: the new one
    if not lasting:  # the roll-back went through
        assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]
        assert not failed or provenance.load_result(folder / "full.npz")[1]["sha256"] == made["old"][1]["sha256"]
    _next_write_is_clean(folder, made)


def test_without_hard_links_the_backup_is_a_copy(tmp_path, units, monkeypatch):
    """A file system without hard links: the previous unit is copied aside, and put back the same way."""
    made = units(2, 1)
    folder = tmp_path / "results" / DEMO
    _write(made["old"][0], folder)
    real, seen = os.replace, []

    def no_link(*a, **kw):
        raise OSError(errno.EPERM, "Operation not permitted")

    def failing(src, dst, *a, **kw):  # the second rename into the folder (the .npz) fails
        if Path(dst).parent == folder and ".full.old-" not in str(src):
            seen.append(Path(dst).name)
            if len(seen) == 2:
                raise OSError(errno.EIO, "Input/output error", str(dst))
        return real(src, dst, *a, **kw)

    monkeypatch.setattr(os, "link", no_link)
    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError, match="Input/output error"):
        _write(made["new"][0], folder)
    monkeypatch.undo()
    assert seen == ["full.png", "full.npz"]
    _loads_as(folder, made["old"][1])
    assert sorted(p.name for p in folder.iterdir()) == sorted(_files(made["old"][0]))
    _next_write_is_clean(folder, made)


def test_pack_carries_the_unit_a_killed_write_left_in_its_backup(results, tmp_path):
    """A write killed after replacing the .npz leaves the previous unit in a backup beside it: the loader
    reads it, and so does pack (before: the result was left out of the pack)."""
    folder = results / NAME
    before = store.load_run(NAME, "full")[0]
    backup = folder / ".full.old-1-killed"
    backup.mkdir()
    for f in store._unit(folder, "full"):
        shutil.copy2(folder / f, backup / f)
    (folder / "full.npz").write_bytes(b"half of a new result")
    assert store.verified_unit(folder, "full") == backup
    stored = store_packed(pack_results(results, tmp_path / "packed"), tmp_path / "elsewhere")
    assert (tmp_path / "elsewhere" / NAME / "full.npz") in stored
    assert sha256_file(tmp_path / "elsewhere" / NAME / "full.npz") == sha256_file(backup / "full.npz")
    assert store.load_run(NAME, "full", folder=tmp_path / "elsewhere")[0].keys() == before.keys()


# --- round 3 (issue 47): typed provenance, bombs, packs, FIFOs, rejudge ------------------------------

@pytest.mark.parametrize("field, value", [("config", "n=4"), ("other", [1, 2]), ("claims", {"id": "x"}), ("claims", ["row"])])
def test_wrongly_typed_provenance_is_refused_naming_the_field(results, field, value):
    """The JSON is not covered by its own hashes: a wrongly typed field verifies, so the loader checks types
    (before: AttributeError or TypeError far away), and the Status page shows that one unit as not verifying."""
    meta_path = results / NAME / "full.json"
    meta = json.loads(meta_path.read_text())
    meta[field] = value
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ResultError, match=f"'{field}|claims\\[0\\]"):
        store.load_run(NAME, "full")
    rows = {r["experiment"]: r for r in pages.figure_sources("fast")}
    assert rows[NAME]["stale"].startswith("does not verify") and not rows[OTHER]["stale"].startswith("does not verify")


def test_zip_bomb_is_refused_unread(tmp_path):
    """An .npz of 1 KiB on disk that would load to 256 MiB verifies (its hash is recorded) but is refused."""
    import io
    import zipfile

    path = save_result(tmp_path / "bomb", {"x": np.zeros(3)})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        with z.open("x.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (2**25,)})
            for _ in range(64):
                f.write(bytes(2**22))
    path.write_bytes(buf.getvalue())
    meta_path = path.with_suffix(".json")
    meta_path.write_text(json.dumps({k: v for k, v in json.loads(meta_path.read_text()).items() if k != "sha256"}))
    provenance.seal_result(path)  # the hashes now match the bomb
    assert path.stat().st_size < 2**20
    with pytest.raises(ResultError, match="expands .* times"):
        provenance.load_result(path)


def test_store_refuses_a_fifo_and_an_oversized_pack(results, tmp_path, monkeypatch):
    fifo = tmp_path / "pack.tar.gz"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        store_packed([fifo], tmp_path / "stored")  # before: blocked forever reading the FIFO
    packs = pack_results(results, tmp_path / "packed")
    import companion.transport as transport

    monkeypatch.setattr(transport, "MAX_PACK_BYTES", 1000)
    with pytest.raises(ValueError, match="a pack may hold"):
        store_packed(packs, tmp_path / "stored")
    assert not (tmp_path / "stored").exists()


def test_rejudge_of_a_result_missing_arrays_names_the_file(results):
    from companion.runner import rejudge

    arrays, meta = store.load_run(NAME, "full")
    save_result(results / NAME / "full", {"unrelated": np.zeros(1)}, meta.get("config"), meta.get("seed"),
                **{k: v for k, v in meta.items() if k not in ("config", "seed", "sha256", "figures", "other")})
    assert store.load_run(NAME, "full") is not None  # it verifies: only its content is short
    with pytest.raises(ResultError, match="full.npz: the stored result lacks"):  # before: a raw KeyError
        rejudge(NAME, "full")
