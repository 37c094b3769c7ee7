"""companion.animate: the frames, the encoding (H.264, yuv420p, faststart, size cap), bad input,
determinism, the render cache, and the committed videos of the book."""
from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest

from companion import animate as an

SMALL = an.AnimationConfig(width=3.2, height=2.4, dpi=50)  # 160 x 120 pixels: quick to encode


def _probe(path) -> str:
    """ffmpeg's description of a file's streams (imageio-ffmpeg ships no ffprobe)."""
    out = subprocess.run([an.ffmpeg_exe(), "-hide_banner", "-i", str(path)], capture_output=True, text=True)
    return out.stderr


def _plane(saves: int = 6):
    ts = np.arange(float(saves))
    path = np.zeros((saves, 3, 2))
    path[:, 0, 0] = np.linspace(0, 2, saves)  # one token walks out of the circle
    return ts, path


def _sphere():
    """Four saves of five tokens on S^2 gathering into two clusters: (ts, traj, labels, counts)."""
    ends = np.array([[1.0, 0.0, 0.0]] * 3 + [[-1.0, 0.0, 0.0]] * 2)
    start = np.random.default_rng(2).normal(size=(5, 3))
    traj = np.stack([(1 - w) * start + w * ends for w in (0.0, 0.5, 0.9, 1.0)])
    traj /= np.linalg.norm(traj, axis=-1, keepdims=True)
    return [0.0, 1.0, 2.0, 4.0], traj, [0, 0, 0, 3, 3], [5, 4, 2, 2]


# --- frames ---------------------------------------------------------------------------------------
def test_timeline_snaps_to_saves_and_holds():
    ts = np.linspace(0, 1, 101)
    idx = an.timeline(ts, [(0, 0.1, 11, 3), (0.1, 1, 10, 1)])
    assert idx[:3].tolist() == [0, 0, 0] and idx[3] == 1
    assert set(np.diff(idx)) >= {0} and np.all(np.diff(idx) >= 0)  # time never runs backwards
    assert len(idx) == 11 * 3 + 9  # the second segment starts where the first ends: not repeated
    assert np.all(np.isin(idx, np.arange(101)))  # saved states only


@pytest.mark.parametrize("draw, frames", [
    (lambda: an.draw_circle_runs([{"traj": np.random.default_rng(0).uniform(0, 6, (7, 20)), "ts": np.linspace(0, 1, 7),
                                   "beta": 5.0, "counts": [0, 0, 1, 1, 2, 3, 3], "centres": [0.0, 2.0, 4.0],
                                   "predicted": [0.1, 2.1, 4.1], "k": 3}], SMALL, hold=3), 21),
    (lambda: an.draw_cursor(np.linspace(0, 20, 81), np.ones((81, 3)), np.ones((81, 3)), np.zeros((81, 3)), SMALL,
                            log_beta=4.6, level=0.5, frames=17), 17),
    (lambda: an.draw_outcomes(np.linspace(0, 1, 9), {1.0: np.linspace(-1, 1, 9)[:, None] * np.ones((1, 5))}, SMALL,
                              hold=2), 18),
    (lambda: an.draw_plane(*_plane(), [[0.0, 0.0]], 0.5, SMALL), 6),
    (lambda: an.draw_sphere_run(*_sphere(), SMALL, order=[0, 0, 1, 2, 3, 3, 3]), 7),
])
def test_drawings_count_frames_and_draw_each(draw, frames):
    d = draw()
    assert d.frames == frames and d.poster == frames - 1
    for k in range(d.frames):
        d.update(k)
    d.fig.canvas.draw()


def test_circle_colours_follow_the_final_cluster():
    traj = np.array([[0.0, 3.0, 0.2], [0.05, 3.1, 0.1]])
    d = an.draw_circle_runs([{"traj": traj, "ts": [0.0, 1.0], "beta": 1.0, "centres": [0.1, 3.1]}], SMALL)
    colors = d.fig.axes[0].collections[0].get_facecolors()
    assert np.allclose(colors[0], colors[2]) and not np.allclose(colors[0], colors[1])


def test_sphere_colours_sides_and_sizes():
    ts, traj, labels, counts = _sphere()
    d = an.draw_sphere_run(ts, traj, labels, counts, SMALL, azim=0.0, elev=0.0, turns=0.0, size=10.0)
    d.update(3)  # the last save: three tokens at +x (facing the viewer), two at -x (behind)
    back, front = d.fig.axes[0].collections[:2]
    assert len(front.get_offsets()) == 3 and len(back.get_offsets()) == 2
    assert np.allclose(front.get_offsets(), 0.0) and np.allclose(back.get_offsets(), 0.0)
    f, b = front.get_facecolors(), back.get_facecolors()
    assert np.allclose(f, f[0]) and np.allclose(b, b[0]) and not np.allclose(f[0], b[0])  # one colour per final cluster
    assert np.allclose(f[0], an._rgb(an.PALETTE[0]))  # the larger cluster takes the first colour
    assert np.allclose(front.get_sizes(), 30.0) and np.allclose(back.get_sizes(), 0.6 * 20.0)  # area grows with the mass
    assert d.fig.texts[-1].get_text() == "t = 4.0     2 clusters"
    # turned half a circle, the sides swap
    d = an.draw_sphere_run(ts, traj, labels, counts, SMALL, azim=180.0, elev=0.0, turns=0.0)
    d.update(3)
    assert len(d.fig.axes[0].collections[1].get_offsets()) == 2


def test_sphere_view_turns_and_hides_the_back():
    assert np.allclose(an.orthographic([[0.0, 1.0, 0.0]], an.view_basis(90.0, 0.0)), [[0.0, 0.0, 1.0]])
    g = an.graticule(an.view_basis(0.0, 30.0))
    shown = g[~np.isnan(g[..., 0])]
    assert np.all(np.hypot(shown[:, 0], shown[:, 1]) <= 1 + 1e-12) and np.isnan(g).any()
    assert an.rank_clusters([7, 1, 1, 7, 7]).tolist() == [0, 1, 1, 0, 0]
    assert an.first_plateau([128, 9, 5, 5, 5, 4], min_saves=3) == (2, 5)


def test_hero_poster_shows_several_formed_clusters():
    """The landing page's still: trial 0 of intro-sphere-merging with several clusters formed (no token
    alone), its count as the header says."""
    import dataclasses

    from companion.registry import get
    from companion.store import load_run

    result, _ = load_run("intro-sphere-merging", "full")
    result = {**result, "config": dataclasses.asdict(get("intro-sphere-merging").config_of(result))}
    d = an.ANIMATIONS["hero"].draw(result, an.ANIMATIONS["hero"].cfg)
    d.update(d.poster)
    head = d.fig.texts[-1].get_text()
    t, count = float(head.split()[2]), int(head.split()[3])
    i = int(np.argmin(np.abs(np.asarray(result["times"]) - t)))
    assert count >= 4 and result["singletons"][i, 0] == 0 and result["clusters"][i, 0] == count
    assert 0 < d.poster < d.frames - 1


def test_plane_counts_the_tokens_that_left():
    ts, path = _plane()
    d = an.draw_plane(ts, path, [[0.0, 0.0]], 0.5, SMALL, exit_time=3.0)
    d.update(d.frames - 1)
    head = d.fig.texts[-1].get_text()
    assert head.startswith("t = 5:  1 of 3 tokens outside") and "T^* = 3.0" in head


def test_outcome_counts_at_each_save():
    rho = {0.5: np.array([[-1.0, -1.0, 0.0], [1.0, -1.0, 0.0]])}
    d = an.draw_outcomes([0.0, 1.0], rho, SMALL)
    d.update(1)
    assert "consensus 1/3\npolarised 1/3" in [t.get_text() for t in d.fig.texts]


# --- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, message", [
    (lambda: an.timeline([0.0, 1.0], []), "segments must hold"),
    (lambda: an.timeline([0.0, 1.0], [(0, 1, 0, 1)]), "segments: count and hold"),
    (lambda: an.timeline([0.0, np.nan], [(0, 1, 2, 1)]), "times holds a NaN"),
    (lambda: an.circle_points([]), "theta is empty"),
    (lambda: an.nearest_centre([[0.1]], [0.0]), "theta must have 1 dimensions"),
    (lambda: an.outcomes([0.0], tol=1.5), "tol must be in"),
    (lambda: an.distance_to_set([[0.0, 0.0]], [[0.0]]), "C must have 2 columns"),
    (lambda: an.draw_circle_runs([], SMALL), "runs must hold"),
    (lambda: an.draw_circle_runs([{"traj": np.zeros((3, 2)), "ts": [0.0, 1.0], "beta": 1.0}], SMALL),
     r"runs\[0\]: ts has 2 saves, traj 3"),
    (lambda: an.draw_circle_runs([{"traj": np.zeros((2, 2)), "ts": [0.0, 1.0], "beta": 1.0, "counts": [1]}], SMALL),
     r"runs\[0\]: counts must have shape"),
    (lambda: an.draw_cursor(np.linspace(0, 1, 5), np.ones((5, 2)), np.ones((5, 2)), np.ones((4, 2)), SMALL),
     "align_F must have 5 rows"),
    (lambda: an.draw_cursor(np.linspace(0, 1, 5), *[np.ones((5, 2))] * 3, SMALL, frames=1), "frames must be at least 2"),
    (lambda: an.draw_outcomes([0.0, 1.0], {1.0: np.ones((3, 2))}, SMALL), r"rho\[1.0\] must have 2 rows"),
    (lambda: an.draw_plane(*_plane(), [[0.0, 0.0]], 0.0, SMALL), "radius must be positive"),
    (lambda: an.draw_plane(np.arange(3.0), np.zeros((4, 2, 2)), [[0.0, 0.0]], 0.5, SMALL), "path must have 3 saves"),
    (lambda: an.draw_plane(np.arange(3.0), np.zeros((3, 2, 3)), [[0.0, 0.0]], 0.5, SMALL), "path must have 2 columns"),
    (lambda: an.draw_sphere_run(*_sphere()[:2], [0, 0], [5, 4, 2, 2], SMALL), "labels must have one entry per token"),
    (lambda: an.draw_sphere_run(*_sphere()[:3], [5, 4], SMALL), "counts must have shape"),
    (lambda: an.draw_sphere_run(*_sphere(), SMALL, order=[0, 4]), "order must be a non-empty list of save indices"),
    (lambda: an.draw_sphere_run([0.0, 1.0], *_sphere()[1:], SMALL), "traj must have 2 saves"),
    (lambda: an.orthographic([[1.0, 0.0]], np.eye(3)), "X must have 3 columns"),
    (lambda: an.graticule(np.eye(3), step=0.0), "step must be in"),
    (lambda: an.multiplicity([[0.0, 0.0]], -1.0), "radius must be positive"),
    (lambda: an.rank_clusters([]), "labels must be a non-empty 1-D array"),
    (lambda: an.AnimationConfig(crf=60), "crf must be an integer"),
    (lambda: an.AnimationConfig(dpi=0), "dpi must be a positive integer"),
    (lambda: an.AnimationConfig(width=3.21, dpi=100), "width \\* dpi and height \\* dpi must be even"),
    (lambda: an.render("no-such-animation"), "name must be one of"),
    (lambda: an.cache_key(an.ANIMATIONS["hero"], {"sha256": {}}), "meta must hold the stored result's sha256"),
])
def test_bad_input_names_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --- encoding -------------------------------------------------------------------------------------
def test_encode_writes_h264_yuv420p_with_faststart(tmp_path):
    info = an.encode(an.draw_plane(*_plane(), [[0.0, 0.0]], 0.5, SMALL), tmp_path / "v.mp4", SMALL)
    data = (tmp_path / "v.mp4").read_bytes()
    probe = _probe(tmp_path / "v.mp4")
    assert re.search(r"Video: h264 .*yuv420p.*160x120", probe), probe
    assert data.index(b"moov") < data.index(b"mdat")  # +faststart: the index first, so a browser plays at once
    assert info == {"frames": 6, "fps": SMALL.fps, "seconds": 0.5, "bytes": len(data)}
    assert not list(tmp_path.glob("*.part.mp4"))


def test_encode_refuses_a_video_over_the_cap_and_leaves_no_file(tmp_path):
    cfg = an.AnimationConfig(width=3.2, height=2.4, dpi=50, max_bytes=200)
    with pytest.raises(ValueError, match="more than cfg.max_bytes = 200"):
        an.encode(an.draw_plane(*_plane(), [[0.0, 0.0]], 0.5, cfg), tmp_path / "v.mp4", cfg)
    assert list(tmp_path.iterdir()) == []


def test_encoding_and_poster_are_deterministic(tmp_path):
    outs = []
    for k in range(2):
        d = an.draw_circle_runs([{"traj": np.random.default_rng(1).uniform(0, 6, (5, 30)), "ts": np.linspace(0, 1, 5),
                                  "beta": 5.0, "counts": [0, 1, 2, 3, 3]}], SMALL)
        an.encode(d, tmp_path / f"v{k}.mp4", SMALL)
        an.save_poster(d, tmp_path / f"p{k}.png", SMALL)
        outs.append(((tmp_path / f"v{k}.mp4").read_bytes(), (tmp_path / f"p{k}.png").read_bytes()))
    assert outs[0] == outs[1]


def test_ffmpeg_comes_from_imageio_ffmpeg():
    import imageio_ffmpeg
    import matplotlib

    assert an.ffmpeg_exe() == imageio_ffmpeg.get_ffmpeg_exe() == matplotlib.rcParams["animation.ffmpeg_path"]


# --- the render cache and the display -------------------------------------------------------------
def test_render_caches_on_the_key(tmp_path):
    first = an.render("phase-depth-transition", out=tmp_path)
    video = tmp_path / "phase-depth-transition.mp4"
    data, mtime = video.read_bytes(), video.stat().st_mtime_ns
    again = an.render("phase-depth-transition", out=tmp_path)
    assert again == first and video.stat().st_mtime_ns == mtime  # the key matched: nothing rendered
    manifest = json.loads((tmp_path / "phase-depth-transition.json").read_text())
    manifest["key"] = "stale"
    (tmp_path / "phase-depth-transition.json").write_text(json.dumps(manifest))
    assert an.render("phase-depth-transition", out=tmp_path)["key"] == first["key"]
    assert video.stat().st_mtime_ns != mtime and video.read_bytes() == data  # rendered again, the same bytes


def test_video_shows_controls_poster_and_stable_text(tmp_path):
    v = an.show("phase-depth-transition")
    html = v._repr_html_()
    assert '<video class="companion-animation" controls' in html
    assert 'src="../_static/animations/phase-depth-transition.mp4" type="video/mp4"' in html
    assert 'poster="../_static/animations/phase-depth-transition.png"' in html
    assert f'aria-label="{an.ANIMATIONS["phase-depth-transition"].alt}"' in html
    assert v._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"
    text = repr(v)
    assert text.startswith('Animation "phase-depth-transition" (video, 101 frames at 12 fps, 8.4 s): ')
    assert "kB" not in text and "bytes" not in text and "key" not in html  # nothing that varies between renders


@pytest.mark.parametrize("name", sorted(an.ANIMATIONS))
def test_committed_video_is_current_small_and_playable(name):
    """The book's videos are committed (book/_static/animations): each is the rendering of its
    stored result by this code (else: python -m companion.animate), at most 1 MB, H.264 yuv420p."""
    from companion.store import load_run

    folder = an.animations_dir()
    manifest = json.loads((folder / f"{name}.json").read_text())
    spec = an.ANIMATIONS[name]
    _, meta = load_run(spec.experiment, "full")
    assert manifest["key"] == an.cache_key(spec, meta), f"{name}: stale video; run python -m companion.animate {name}"
    mp4 = folder / f"{name}.mp4"
    assert mp4.stat().st_size == manifest["bytes"] <= spec.cfg.max_bytes <= 1_000_000
    assert (folder / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = spec.cfg.pixels
    assert re.search(rf"Video: h264 .*yuv420p.*{w}x{h}", _probe(mp4))
