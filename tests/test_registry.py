"""The declared-experiment registry: profiles, overrides, generator, device, numpy results, claims."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from companion import registry
from companion import ledger
from companion.registry import CHAPTER_PREFIXES, claims_for, experiment, judge


@dataclasses.dataclass(frozen=True)
class DrawConfig:
    n: int = 3
    scale: float = 1.0
    shape: tuple[int, ...] = (2,)
    label: str | None = None
    seed: int = 0


NAME = "_test-registry-draw"


@pytest.fixture
def draw():
    @experiment(NAME, chapter="_test", profiles={"fast": DrawConfig(), "full": DrawConfig(n=5)})
    def draw_body(cfg, generator, device):
        """Draws cfg.n normals on the CPU generator."""
        x = torch.randn(cfg.n, generator=generator, dtype=torch.float64) * cfg.scale
        return {"x": x.to(device), "nested": {"y": [x[:1]]}, "device": str(device)}

    @claims_for(NAME)
    def draw_claims(result, cfg):
        err = abs(float(np.mean(result["x"])))  # |mean| of n normals: small for large n only
        return [ledger.Claim(id="X-draw", paper="A", where="-", statement="mean near 0",
                             verdict=ledger.verdict(err, 3.0 / cfg.n ** 0.5), measured=err, expected=0.0, tolerance=3.0 / cfg.n ** 0.5)]

    yield draw_body
    registry._REGISTRY.pop(NAME, None)


def test_profiles_overrides_and_numpy(draw):
    fast, full = draw(), draw("full")
    assert fast["x"].shape == (3,) and full["x"].shape == (5,)
    assert isinstance(fast["x"], np.ndarray) and isinstance(fast["nested"]["y"][0], np.ndarray)
    # The generator is the CPU one seeded from cfg.seed: the same numbers as drawn here by hand.
    expected = torch.randn(3, generator=torch.Generator().manual_seed(0), dtype=torch.float64).numpy()
    np.testing.assert_array_equal(fast["x"], expected)
    assert not np.array_equal(draw(seed=1)["x"], expected)
    assert (fast["experiment"], fast["profile"], fast["config"]["n"]) == (NAME, "fast", 3)
    assert draw(seed=0)["profile"] == "fast"  # an override equal to the profile's value keeps its name
    assert draw(n=4)["profile"] == "custom"
    assert draw(shape=[1, 2])["config"]["shape"] == (1, 2)  # lists accepted for tuples
    assert draw(scale=2)["config"]["scale"] == 2.0 and isinstance(draw(scale=2)["config"]["scale"], float)


@pytest.mark.parametrize("kw, err, words", [
    ({"bad": 1}, ValueError, ["no parameter 'bad'", "n, scale, shape, label, seed"]),
    ({"n": "3"}, TypeError, ["'n'", "integer"]),
    ({"n": 2.5}, TypeError, ["'n'", "integer"]),
    ({"n": True}, TypeError, ["'n'"]),
    ({"scale": "x"}, TypeError, ["'scale'", "number"]),
    ({"shape": 3}, TypeError, ["'shape'", "tuple"]),
    ({"label": 3}, TypeError, ["'label'"]),
])
def test_bad_overrides_are_refused(draw, kw, err, words):
    with pytest.raises(err) as e:
        draw(**kw)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_bad_profile_and_device(draw):
    with pytest.raises(ValueError, match="profile must be one of"):
        draw("huge")
    with pytest.raises(ValueError, match="device"):
        draw(device="tpu")


def test_claims_can_fail(draw):
    assert [c.status for c in judge(draw(n=400))] == ["reproduced"]
    shifted = dict(draw(n=400))
    shifted["x"] = shifted["x"] + 1.0  # a mean of 1 is 20 standard errors away
    assert [c.status for c in judge(shifted)] == ["not-reproduced"]
    c = judge(draw(n=400))[0]
    assert (c.chapter, c.profile) == ("_test", "custom") and c.margin is not None


def test_registration_is_checked():
    with pytest.raises(TypeError, match="profiles"):
        experiment("_test-x", chapter="_test")  # no undeclared experiments
    with pytest.raises(ValueError, match="profiles must be given"):
        experiment("_test-x", chapter="_test", profiles={"fast": DrawConfig()})
    with pytest.raises(TypeError, match="frozen dataclass"):
        experiment("_test-x", chapter="_test", profiles={"fast": {"n": 1}, "full": {"n": 1}})

    @dataclasses.dataclass(frozen=True)
    class NoSeed:
        n: int = 1

    with pytest.raises(TypeError, match="'seed' field"):
        experiment("_test-x", chapter="_test", profiles={"fast": NoSeed(), "full": NoSeed()})
    with pytest.raises(ValueError, match="must be named 'intro-<thing>'"):
        experiment("introduction_bad", chapter="introduction", profiles={"fast": DrawConfig(), "full": DrawConfig()})
    with pytest.raises(TypeError, match="'n' must be an integer"):
        experiment("_test-x", chapter="_test", profiles={"fast": DrawConfig(n="1"), "full": DrawConfig()})


def test_every_experiment_is_declared_and_named_by_its_chapter():
    reg = registry.registry()
    assert len(reg) >= 35
    for name, exp in reg.items():
        assert dataclasses.is_dataclass(exp.config) and exp.runner is not None, name
        assert name.startswith(CHAPTER_PREFIXES[exp.chapter] + "-"), name
        for p in ("fast", "full"):
            assert dataclasses.is_dataclass(exp.profiles[p]) and exp.profiles[p].seed is not None


def test_judge_needs_a_named_result():
    with pytest.raises(ValueError, match="names no experiment"):
        judge({"x": 1})
    with pytest.raises(ValueError, match="unknown experiment"):
        judge({"experiment": "nope"})


def test_verdict_rule():
    v = ledger.verdict
    assert v(0.1, 0.1).status == "reproduced" and v(0.1000001, 0.1).status == "not-reproduced"
    assert v(0.5, 1.0, better="higher").status == "not-reproduced" and v(1.5, 1.0, better="higher").status == "reproduced"
    assert v(0.2, 0.1).margin == pytest.approx(0.3, abs=0.01)  # a factor 2 from the tolerance: log10(2) decades
    assert v(0.09, 0.1).fragile and not v(0.05, 0.1).fragile  # tolerance x 0.8 = 0.08 < 0.09
    with pytest.raises(ValueError, match="status"):
        ledger.Claim(id="x", paper="A", where="w", statement="s", status="ok")
    with pytest.raises(ValueError, match="contradicts"):
        ledger.Claim(id="x", paper="A", where="w", statement="s", status="reproduced", verdict=v(1.0, 0.1))


def test_paper_scale_is_checked_against_the_full_profile():
    import dataclasses

    from companion.registry import PaperScale

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        n: int = 10
        seed: int = 0

    PaperScale({"n": 10}).check("x", Cfg, Cfg())
    PaperScale({"n": 200}, {"n": "cost"}).check("x", Cfg, Cfg())
    with pytest.raises(ValueError, match="the paper has n = 200, the full profile 10"):
        PaperScale({"n": 200}).check("x", Cfg, Cfg())
    with pytest.raises(ValueError, match="'m', not a parameter"):
        PaperScale({"m": 1}).check("x", Cfg, Cfg())


def test_every_experiment_states_its_paper_scale():
    """Each full profile says what the paper used (the registry checks the values against it)."""
    missing = sorted(n for n, e in registry.registry().items() if e.paper is None)
    assert not missing, f"experiments without a PaperScale: {missing}"


# --------------------------------------------------------------------------- one experiment, one file
EXPERIMENTS = __import__("pathlib").Path(__file__).resolve().parents[1] / "src" / "companion" / "experiments"


def test_every_experiment_has_its_own_file_named_after_its_stem():
    """``<prefix>-<thing>`` lives in ``experiments/<chapter>/<stem>.py``, with ``<stem>``,
    ``<Stem>Config``, ``<stem>_claims`` and ``plot_<stem>*`` (the registry refuses anything else)."""
    import inspect

    reg = registry.registry()
    files = {}
    for name, exp in reg.items():
        stem = name[len(CHAPTER_PREFIXES[exp.chapter]) + 1:].replace("-", "_")
        path = inspect.getsourcefile(exp.body)
        assert path == str(EXPERIMENTS / exp.chapter / f"{stem}.py"), f"{name}: body defined in {path}"
        files.setdefault(path, []).append(name)
        assert exp.config.__name__.endswith("Config") and exp.claims is not None, name
    assert all(len(v) == 1 for v in files.values()), {k: v for k, v in files.items() if len(v) > 1}


def test_experiment_files_are_small_and_hold_no_class_but_configs():
    import ast

    long, classes = [], []
    for path in sorted(EXPERIMENTS.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > 500:
            long.append(f"{path.relative_to(EXPERIMENTS)}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and not node.name.endswith("Config"):
                classes.append(f"{path.relative_to(EXPERIMENTS)}: class {node.name}")
    assert not long and not classes, long + classes


def test_a_drifting_name_is_refused():
    @dataclasses.dataclass(frozen=True)
    class WrongConfig:
        seed: int = 0

    def square(cfg, generator, device):
        return {}

    square.__module__ = "companion.experiments.introduction.square"
    with pytest.raises(ValueError, match="its config must be called SquareConfig"):
        experiment("intro-square", chapter="introduction", profiles={"fast": WrongConfig(), "full": WrongConfig()})(square)
    assert "intro-square" not in registry.registry()


def test_renamed_parameters_and_former_names_load_as_current():
    """A result stored under a parameter's former name, or the experiment's former name, reads back
    as the current profile's (the names the registry declares for the move)."""
    exp = registry.get("metastable-lnN")  # a former name resolves
    assert exp.name == "metastable-ln-n" and "metastable-lnN" in exp.formerly
    for name, e in registry.registry().items():
        for before, now in e.renamed.items():
            stored = {"config": {**dataclasses.asdict(e.profiles["full"]), before: getattr(e.profiles["full"], now)}}
            del stored["config"][now]
            assert e.config_of(stored) == e.profiles["full"], (name, before, now)


def test_added_parameters_take_their_declared_value_in_older_results():
    """A stored config without a parameter added since reads back with the ``added`` value (what every
    earlier result was computed with), not the fast profile's; without ``added``, the fast profile's."""
    e = registry.get("llm-training")
    assert e.profiles["fast"].dtype == "float64" and e.added == {"dtype": "float32"}
    older = dataclasses.asdict(e.profiles["full"])
    del older["dtype"]
    assert e.config_of({"config": older}) == e.profiles["full"]
    plain = dataclasses.replace(e, added={})
    assert plain.config_of({"config": older}).dtype == "float64"  # the fast profile's: stale


def test_added_must_name_a_parameter():
    @dataclasses.dataclass(frozen=True)
    class AddedConfig:
        x: float = 1.0
        seed: int = 0

    with pytest.raises(ValueError, match=r"added \['y'\] must name parameters"):
        experiment("_doc-added", chapter="_doc", profiles={"fast": AddedConfig(), "full": AddedConfig()}, added={"y": 1})
    assert "_doc-added" not in registry.registry()
