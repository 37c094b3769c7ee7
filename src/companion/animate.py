"""Animations of the stored paper-scale runs: H.264 MP4 videos with a still frame, for the book.

Five runs whose result is a motion are drawn frame by frame with matplotlib and encoded by
:class:`matplotlib.animation.FFMpegWriter` with the ffmpeg binary of the ``imageio-ffmpeg`` package
(H.264, yuv420p, ``+faststart``, at most :attr:`AnimationConfig.max_bytes`):

* ``hero``: trial 0 of ``intro-sphere-merging``, 128 tokens on S^2 at beta = 9 that gather into
  several clusters and merge one at a time, on a slowly turning sphere;
* ``metastable-official``: both official runs, with the predicted angles and a cluster counter;
* ``lowtemp-figure3``: a cursor along paper B's two time scales;
* ``spectral-rho-min``: 200 trials' rho_min at three temperatures, consensus against polarisation
  (paper C);
* ``phase-depth-transition``: 20 tokens leaving the base clusters (paper A, Theorem 4.6).

Only saved states are drawn: no token's position is interpolated between two saves (a saved state
may be held for several frames, :func:`timeline`; the cursor of ``lowtemp-figure3`` runs along the
drawn lines). The hero's run keeps 200 saves geometric in t, so that formation, plateaus and merges
each get their share of frames; the other stored runs of tokens on :math:`S^2` (``intro-clustering``,
``lowtemp-figure3``, ``spectral-cone-bound``) keep 3 to 5 snapshots, too few for motion.

:func:`show` renders an animation once and keeps it with its still frame (poster PNG) and a manifest
under ``book/_static/animations/``; it renders again only when the manifest's :func:`cache_key` (the
stored result's SHA-256, this module's source, the ffmpeg version) changes. The files are committed,
so a fresh clone builds the book (also from the reference notebooks, without execution) without
rendering; ``python -m companion.animate`` renders every one whose key changed.

Examples
--------
>>> sorted(ANIMATIONS)
['hero', 'lowtemp-figure3', 'metastable-official', 'phase-depth-transition', 'spectral-rho-min']
>>> AnimationConfig().pixels
(864, 432)
"""
from __future__ import annotations

import hashlib
import html
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

__all__ = ["AnimationConfig", "Drawing", "Spec", "ANIMATIONS", "ffmpeg_exe", "timeline", "circle_points",
           "nearest_centre", "outcomes", "distance_to_set", "view_basis", "orthographic", "graticule",
           "rank_clusters", "multiplicity", "first_plateau", "draw_circle_runs", "draw_cursor", "draw_outcomes",
           "draw_plane", "draw_sphere_run", "encode", "save_poster", "cache_key", "render", "Video", "show",
           "animations_dir", "main"]

# Colours of the final clusters and of the outcomes (matplotlib's tab10, as the book's figures).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
OUTCOME_COLORS = {1: "#1f77b4", -1: "#d62728", 0: "#7f7f7f"}  # consensus, polarised, neither


@dataclass(frozen=True)
class AnimationConfig:
    """How a video is drawn and encoded.

    Parameters
    ----------
    fps : int
        Frames per second of the video.
    width, height : float
        Figure size in inches; ``width * dpi`` and ``height * dpi`` must be even (H.264 with yuv420p).
    dpi : int
        Pixels per inch of each frame.
    crf : int
        x264's constant rate factor (0-51: larger is smaller and coarser).
    max_bytes : int
        :func:`encode` raises when the video is larger.

    Examples
    --------
    >>> AnimationConfig(width=6.4, height=4.8, dpi=100).pixels
    (640, 480)
    >>> AnimationConfig(fps=0)
    Traceback (most recent call last):
    ...
    ValueError: fps must be a positive integer, got 0
    >>> AnimationConfig(width=7.21)
    Traceback (most recent call last):
    ...
    ValueError: width * dpi and height * dpi must be even integers (H.264, yuv420p), got 865.2 x 432.0
    """

    fps: int = 12
    width: float = 7.2
    height: float = 3.6
    dpi: int = 120
    crf: int = 26
    max_bytes: int = 1_000_000

    def __post_init__(self) -> None:
        for name in ("fps", "dpi", "max_bytes"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not isinstance(self.crf, int) or not 0 <= self.crf <= 51:
            raise ValueError(f"crf must be an integer in [0, 51], got {self.crf!r}")
        w, h = self.width * self.dpi, self.height * self.dpi
        if not all(abs(v - round(v)) < 1e-9 and round(v) % 2 == 0 and v > 0 for v in (w, h)):
            raise ValueError(f"width * dpi and height * dpi must be even integers (H.264, yuv420p), got {w:.1f} x {h:.1f}")

    @property
    def pixels(self) -> tuple[int, int]:
        """``(width, height)`` of a frame in pixels."""
        return round(self.width * self.dpi), round(self.height * self.dpi)


@dataclass
class Drawing:
    """A figure and how to draw its frames: ``update(k)`` draws frame ``k`` of ``frames``;
    ``poster`` is the frame saved as the still (the video's poster and the printed figure).

    Examples
    --------
    >>> d = draw_plane(np.arange(3.0), np.zeros((3, 2, 2)), [[0.0, 0.0]], 0.5)
    >>> isinstance(d, Drawing), d.frames, d.poster
    (True, 3, 2)
    """

    fig: Any
    update: Callable[[int], None]
    frames: int
    poster: int


# ------------------------------------------------------------------------------------------------
# Pure helpers
# ------------------------------------------------------------------------------------------------
def _array(x: Any, name: str, ndim: int | None = None, last: int | None = None) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {a.shape}")
    if last is not None and a.shape[-1] != last:
        raise ValueError(f"{name} must have {last} columns (its last axis), got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} holds a NaN or an infinity")
    return a


def _rgb(color: str) -> tuple[float, float, float, float]:
    from matplotlib.colors import to_rgba

    return to_rgba(color)


def timeline(times: Any, segments: Sequence[tuple[float, float, int, int]]) -> np.ndarray:
    """Indices of saved states, frame by frame: for each segment ``(t0, t1, count, hold)``, ``count``
    times spread evenly over ``[t0, t1]``, each snapped to the nearest saved time, consecutive repeats
    dropped, and each index repeated ``hold`` times (a slow segment holds each saved state longer).

    ``times``: ``(saves,)``, increasing. Returns ``(frames,)`` integers: nothing is interpolated.

    Examples
    --------
    >>> ts = np.arange(11.0)  # saves at t = 0, 1, ..., 10
    >>> timeline(ts, [(0, 3, 4, 2), (3, 10, 3, 1)]).tolist()
    [0, 0, 1, 1, 2, 2, 3, 3, 6, 10]
    >>> timeline(ts, [(0, 10, 50, 1)]).tolist() == list(range(11))  # more frames than saves: each once
    True
    >>> timeline(ts, [(5, 2, 3, 1)])
    Traceback (most recent call last):
    ...
    ValueError: segments: t0 must not exceed t1, got (5, 2, 3, 1)
    >>> timeline([0.0, 2.0, 1.0], [(0, 1, 2, 1)])
    Traceback (most recent call last):
    ...
    ValueError: times must be increasing
    """
    ts = _array(times, "times", ndim=1)
    if np.any(np.diff(ts) <= 0):
        raise ValueError("times must be increasing")
    if not segments:
        raise ValueError("segments must hold at least one (t0, t1, count, hold)")
    out: list[int] = []
    for seg in segments:
        if len(seg) != 4:
            raise ValueError(f"segments: each must be (t0, t1, count, hold), got {seg!r}")
        t0, t1, count, hold = seg
        if t0 > t1:
            raise ValueError(f"segments: t0 must not exceed t1, got {tuple(seg)!r}")
        if int(count) < 1 or int(hold) < 1:
            raise ValueError(f"segments: count and hold must be at least 1, got {tuple(seg)!r}")
        idx = np.abs(ts[None, :] - np.linspace(t0, t1, int(count))[:, None]).argmin(axis=1)
        idx = idx[np.r_[True, np.diff(idx) != 0]]
        if out and idx[0] == out[-1]:
            idx = idx[1:]
        out.extend(np.repeat(idx, int(hold)).tolist())
    return np.asarray(out, dtype=np.int64)


def circle_points(theta: Any) -> np.ndarray:
    """Angles ``theta: (...)`` to points on the unit circle ``(..., 2)``.

    Examples
    --------
    >>> circle_points([0.0, np.pi / 2]).round(12).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    th = _array(theta, "theta")
    return np.stack([np.cos(th), np.sin(th)], axis=-1)


def nearest_centre(theta: Any, centres: Any) -> np.ndarray:
    """For each angle ``theta: (n,)``, the index of the nearest of ``centres: (k,)`` along the circle.

    Examples
    --------
    >>> nearest_centre([0.1, 3.0, 6.2, 1.5], [0.0, np.pi]).tolist()  # 6.2 is 0.08 from 0 across 2 pi
    [0, 1, 0, 0]
    >>> nearest_centre([0.1], [])
    Traceback (most recent call last):
    ...
    ValueError: centres is empty
    """
    th = _array(theta, "theta", ndim=1)
    c = _array(centres, "centres", ndim=1)
    d = np.abs(np.angle(np.exp(1j * (th[:, None] - c[None, :]))))
    return d.argmin(axis=1)


def outcomes(rho: Any, tol: float = 1e-3) -> np.ndarray:
    """Each trial's outcome from its ``rho_min``: ``1`` consensus (``rho > 1 - tol``), ``-1`` polarised
    (``rho < -1 + tol``), ``0`` neither. ``rho: (trials,)`` or any shape; returns the same shape.

    Examples
    --------
    >>> outcomes([0.9995, -0.9999, 0.2]).tolist()
    [1, -1, 0]
    >>> outcomes([0.5], tol=0)
    Traceback (most recent call last):
    ...
    ValueError: tol must be in (0, 1), got 0
    """
    if not 0 < tol < 1:
        raise ValueError(f"tol must be in (0, 1), got {tol!r}")
    r = _array(rho, "rho")
    return np.where(r > 1 - tol, 1, np.where(r < -1 + tol, -1, 0)).astype(np.int64)


def distance_to_set(X: Any, C: Any) -> np.ndarray:
    """Distance of each point of ``X: (n, d)`` to the nearest point of ``C: (k, d)``: ``(n,)``.

    Examples
    --------
    >>> distance_to_set([[0.0, 0.0], [3.0, 4.0]], [[0.0, 0.0], [3.0, 0.0]]).tolist()
    [0.0, 4.0]
    >>> distance_to_set([[0.0, 0.0]], [[0.0, 0.0, 0.0]])
    Traceback (most recent call last):
    ...
    ValueError: C must have 2 columns (its last axis), got shape (1, 3)
    """
    x = _array(X, "X", ndim=2)
    c = _array(C, "C", ndim=2, last=x.shape[1])
    return np.linalg.norm(x[:, None, :] - c[None, :, :], axis=-1).min(axis=1)


def view_basis(azim: float, elev: float) -> np.ndarray:
    """The screen of a view of the sphere from azimuth ``azim`` and elevation ``elev`` (degrees):
    ``(3, 3)`` orthonormal rows, the screen's right, its up, and the direction towards the viewer.

    Examples
    --------
    >>> view_basis(0.0, 0.0).round(12) + 0.0  # from +x: right is +y, up is +z
    array([[0., 1., 0.],
           [0., 0., 1.],
           [1., 0., 0.]])
    >>> B = view_basis(37.0, -12.0)
    >>> bool(np.allclose(B @ B.T, np.eye(3)))
    True
    """
    a, e = np.radians(float(azim)), np.radians(float(elev))
    toward = np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
    right = np.array([-np.sin(a), np.cos(a), 0.0])
    return np.stack([right, np.cross(toward, right), toward])


def orthographic(X: Any, basis: Any) -> np.ndarray:
    """Points ``X: (..., 3)`` seen through ``basis`` (:func:`view_basis`): ``(..., 3)``, the screen's
    x and y and the depth (positive on the hemisphere that faces the viewer).

    Examples
    --------
    >>> orthographic([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], view_basis(0.0, 0.0)).round(12) + 0.0
    array([[0., 0., 1.],
           [0., 1., 0.]])
    >>> orthographic([[1.0, 0.0]], np.eye(3))
    Traceback (most recent call last):
    ...
    ValueError: X must have 3 columns (its last axis), got shape (1, 2)
    """
    return _array(X, "X", last=3) @ _array(basis, "basis", ndim=2, last=3).T


def graticule(basis: Any, step: float = 30.0, samples: int = 121) -> np.ndarray:
    """The parallels and meridians every ``step`` degrees, seen through ``basis``: ``(lines,
    samples, 2)`` screen points, NaN where a line runs behind the sphere (so it is not drawn).

    Examples
    --------
    >>> g = graticule(view_basis(0.0, 0.0), step=90.0, samples=5)
    >>> g.shape  # the equator, and the meridians at 0 and 90 degrees
    (3, 5, 2)
    >>> int(np.isnan(g[0, :, 0]).sum())  # the back half of the equator is hidden
    2
    """
    if not 0 < float(step) <= 90:
        raise ValueError(f"step must be in (0, 90] degrees, got {step!r}")
    s = np.linspace(0.0, 2 * np.pi, int(samples))
    lines = [np.stack([np.cos(lat) * np.cos(s), np.cos(lat) * np.sin(s), np.full_like(s, np.sin(lat))], -1)
             for lat in np.radians(np.arange(-90 + step, 90, step))]
    lines += [np.stack([np.cos(s) * np.cos(lon), np.cos(s) * np.sin(lon), np.sin(s)], -1)
              for lon in np.radians(np.arange(0, 180, step))]
    P = orthographic(np.stack(lines), basis)
    return np.where(P[..., 2:] >= 0, P[..., :2], np.nan)


def rank_clusters(labels: Any) -> np.ndarray:
    """Each token's cluster ``labels: (n,)`` renumbered ``0, 1, ...`` from the largest cluster down
    (ties: the smaller label first), so the largest cluster takes the palette's first colour.

    Examples
    --------
    >>> rank_clusters([5, 5, 0, 5, 2, 2]).tolist()
    [0, 0, 2, 0, 1, 1]
    """
    lab = np.asarray(labels)
    if lab.ndim != 1 or lab.size == 0:
        raise ValueError(f"labels must be a non-empty 1-D array, got shape {lab.shape}")
    values, inverse, counts = np.unique(lab, return_inverse=True, return_counts=True)
    order = np.lexsort((values, -counts))  # largest first, then the smaller label
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse]


def multiplicity(X: Any, radius: float) -> np.ndarray:
    """How many tokens sit at each token of ``X: (n, d)``, counting itself, weighted by
    ``exp(-|x_i - x_j|^2 / radius^2)``: ``(n,)``, 1 for a token alone, m for m tokens at one point.

    Examples
    --------
    >>> multiplicity([[0.0, 0.0], [0.0, 0.0], [5.0, 0.0]], 0.1).tolist()
    [2.0, 2.0, 1.0]
    >>> multiplicity([[0.0, 0.0]], 0.0)
    Traceback (most recent call last):
    ...
    ValueError: radius must be positive, got 0.0
    """
    x = _array(X, "X", ndim=2)
    if not radius > 0:
        raise ValueError(f"radius must be positive, got {radius!r}")
    d2 = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / float(radius) ** 2).sum(axis=1)


def first_plateau(counts: Any, min_saves: int = 10) -> tuple[int, int]:
    """The first run of one count of at least 2 clusters that lasts ``min_saves`` saves: ``(start,
    stop)`` save indices (``stop`` excluded), of ``counts: (saves,)``; ``(0, 0)`` if there is none.

    Examples
    --------
    >>> first_plateau([9, 9, 9, 7, 5, 5, 5, 5, 4, 4, 3], min_saves=3)
    (0, 3)
    >>> first_plateau([9, 7, 5, 5, 5, 5, 4, 4, 3], min_saves=4)
    (2, 6)
    >>> first_plateau([3, 2, 1, 1, 1], min_saves=2)
    (0, 0)
    """
    c = np.asarray(counts)
    starts = np.r_[0, np.flatnonzero(np.diff(c)) + 1]
    stops = np.r_[starts[1:], c.size]
    for a, b in zip(starts, stops):
        if c[a] >= 2 and b - a >= int(min_saves):
            return int(a), int(b)
    return 0, 0


# ------------------------------------------------------------------------------------------------
# Drawings: a figure and its frames, from arrays (no file, no pyplot state)
# ------------------------------------------------------------------------------------------------
def _figure(cfg: AnimationConfig, ncols: int = 1, **kw):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(cfg.width, cfg.height), dpi=cfg.dpi)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, squeeze=False, **kw)[0]
    return fig, list(axes)


def draw_circle_runs(runs: Sequence[Mapping[str, Any]], cfg: AnimationConfig = AnimationConfig(), *,
                     predicted: bool = True, hold: int = 2, size: float = 14.0) -> Drawing:
    """Tokens on the circle, one panel per run, coloured by the cluster they end in.

    Each run holds ``traj: (saves, n)`` angles, ``ts: (saves,)``, ``beta``, and optionally ``counts:
    (saves,)`` (clusters at each save, drawn as a counter), ``centres: (k,)`` (the final clusters:
    the colours) and, with ``predicted``, ``predicted: (k_max,)`` (marked outside the circle) and
    ``k``. The panels advance together: frame ``f`` shows each run's save nearest ``f`` of
    ``frames``, each held ``hold`` frames; ``size`` is the dots' area in points squared.

    Examples
    --------
    >>> ts = np.linspace(0, 1, 5)
    >>> traj = np.linspace(0, 1, 5)[:, None] * np.array([1.0, -1.0, 2.0])
    >>> d = draw_circle_runs([{"traj": traj, "ts": ts, "beta": 5.0, "counts": [0, 0, 1, 2, 2]}], hold=1)
    >>> d.frames, d.poster
    (5, 4)
    >>> d.update(2)
    >>> draw_circle_runs([{"traj": traj[0], "ts": ts, "beta": 5.0}])
    Traceback (most recent call last):
    ...
    ValueError: runs[0]['traj'] must have 2 dimensions, got shape (3,)
    """
    if not runs:
        raise ValueError("runs must hold at least one run")
    if int(hold) < 1:
        raise ValueError(f"hold must be at least 1, got {hold!r}")
    data = []
    for i, run in enumerate(runs):
        traj = _array(run["traj"], f"runs[{i}]['traj']", ndim=2)
        ts = _array(run["ts"], f"runs[{i}]['ts']", ndim=1)
        if ts.shape[0] != traj.shape[0]:
            raise ValueError(f"runs[{i}]: ts has {ts.shape[0]} saves, traj {traj.shape[0]}")
        counts = None if run.get("counts") is None else np.asarray(run["counts"], dtype=np.int64)
        if counts is not None and counts.shape != ts.shape:
            raise ValueError(f"runs[{i}]: counts must have shape {ts.shape}, got {counts.shape}")
        centres = run.get("centres")
        labels = nearest_centre(traj[-1] % (2 * np.pi), centres) if centres is not None and len(centres) else np.zeros(traj.shape[1], int)
        data.append((traj, ts, counts, labels, run))
    saves = max(d[0].shape[0] for d in data)
    base = np.repeat(np.arange(saves), int(hold))
    fig, axes = _figure(cfg, len(runs))
    fig.subplots_adjust(left=0.02, right=0.98, top=0.86, bottom=0.02, wspace=0.05)
    artists = []
    for ax, (traj, ts, counts, labels, run) in zip(axes, data):
        ax.set_aspect("equal")
        ax.set_xlim(-1.32, 1.32)
        ax.set_ylim(-1.32, 1.32)
        ax.axis("off")
        ring = np.linspace(0, 2 * np.pi, 361)
        ax.plot(np.cos(ring), np.sin(ring), color="#d0d7de", lw=1.0, zorder=1)
        if predicted and run.get("predicted") is not None:
            for j, a in enumerate(np.asarray(run["predicted"], dtype=float)):
                ax.plot([1.08 * np.cos(a), 1.25 * np.cos(a)], [1.08 * np.sin(a), 1.25 * np.sin(a)], color="black",
                        lw=2.0, zorder=2, label="predicted angle" if j == 0 else None)
        colors = np.array(PALETTE)[labels % len(PALETTE)]
        pts = ax.scatter(*circle_points(traj[0]).T, s=float(size), c=colors, alpha=0.75, linewidths=0, zorder=3)
        title = f"$\\beta = {float(run['beta']):g}$"
        if predicted and run.get("k") is not None:
            title += f", predicted $k_{{\\max}} = {int(run['k'])}$"
        ax.set_title(title, fontsize=12)
        label = ax.text(0, 0, "", ha="center", va="center", fontsize=12)
        artists.append((pts, label, traj, ts, counts))
    if predicted and any(r.get("predicted") is not None for r in runs):
        axes[0].legend(loc="lower left", fontsize=9, frameon=False, handlelength=1.2, borderaxespad=0)

    def update(k: int) -> None:
        s = base[k]
        for pts, label, traj, ts, counts in artists:
            i = min(int(round(s * (traj.shape[0] - 1) / max(saves - 1, 1))), traj.shape[0] - 1)
            pts.set_offsets(circle_points(traj[i]))
            text = f"t = {ts[i]:.3f}"
            if counts is not None:
                text += f"\n{int(counts[i])} cluster" + ("" if counts[i] == 1 else "s")
            label.set_text(text)

    update(0)
    return Drawing(fig, update, len(base), len(base) - 1)


def draw_cursor(ts: Any, w2: Any, align_E: Any, align_F: Any, cfg: AnimationConfig = AnimationConfig(), *,
                log_beta: float | None = None, level: float | None = None, frames: int = 120) -> Drawing:
    """Paper B's two time scales: ``w2: (saves, seeds)`` per seed (left) and the seed means of
    ``align_E, align_F: (saves, seeds)`` (right) against ``ts: (saves,)`` on a log axis, with a cursor
    moving at an even pace in log t. The cursor's dots sit on the drawn lines (interpolated in log t
    between saves, as the lines are drawn); ``log_beta`` and ``level`` add the dotted time and the
    dashed exit level.

    Examples
    --------
    >>> ts = np.linspace(0, 20, 81)
    >>> w = np.ones((81, 2))
    >>> d = draw_cursor(ts, w, w, w, frames=10)
    >>> d.frames, d.poster
    (10, 9)
    >>> draw_cursor(ts, w[:3], w, w)
    Traceback (most recent call last):
    ...
    ValueError: w2 must have 81 rows (one per time), got 3
    """
    t = _array(ts, "ts", ndim=1)
    arrays = {}
    for name, a in (("w2", w2), ("align_E", align_E), ("align_F", align_F)):
        a = _array(a, name, ndim=2)
        if a.shape[0] != t.shape[0]:
            raise ValueError(f"{name} must have {t.shape[0]} rows (one per time), got {a.shape[0]}")
        arrays[name] = a
    if int(frames) < 2:
        raise ValueError(f"frames must be at least 2, got {frames!r}")
    keep = t > 0  # a log axis
    t, w, e, f = t[keep], arrays["w2"][keep], arrays["align_E"][keep].mean(1), arrays["align_F"][keep].mean(1)
    wm = w.mean(1)
    cursor = np.geomspace(t[0], t[-1], int(frames))
    fig, (a1, a2) = _figure(cfg, 2)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.84, bottom=0.15, wspace=0.28)
    a1.plot(t, w, color="#1f77b4", lw=0.7, alpha=0.35)
    a1.plot(t, wm, color="#1f77b4", lw=2.0, label="mean over seeds")
    a2.plot(t, e, color="#ff7f0e", lw=2.0, label=r"$|P_E x|^2$")
    a2.plot(t, f, color="#2ca02c", lw=2.0, label=r"$|P_F x|^2$")
    for ax in (a1, a2):
        ax.set_xscale("log")
        ax.set_xlabel("t")
        if log_beta is not None:
            ax.axvline(log_beta, color="black", ls=":", lw=1.0)
    if level is not None:
        a1.axhline(level, color="black", ls="--", lw=1.0)
    a1.set_ylabel(r"$W_2(\mu_t, \Pi_\sharp\mu_0)$")
    a2.set_ylabel("mean alignment")
    a2.set_ylim(-0.02, 1.05)
    a2.legend(loc="center left", fontsize=9, frameon=False)
    a1.legend(loc="upper left", fontsize=9, frameon=False)
    lines = [ax.axvline(cursor[0], color="#57606a", lw=1.2) for ax in (a1, a2)]
    lt = np.log(t)
    dots = [a1.plot([], [], "o", color="#1f77b4", ms=7)[0], a2.plot([], [], "o", color="#ff7f0e", ms=7)[0],
            a2.plot([], [], "o", color="#2ca02c", ms=7)[0]]
    head = fig.text(0.5, 0.95, "", ha="center", va="center", fontsize=12)

    def update(k: int) -> None:
        c = cursor[k]
        for ln in lines:
            ln.set_xdata([c, c])
        for dot, y in zip(dots, (wm, e, f)):
            dot.set_data([c], [np.interp(np.log(c), lt, y)])
        phase = ("first time scale: towards E" if log_beta is None or c < log_beta else "second time scale: towards F")
        head.set_text(f"t = {c:5.2f}   {phase}")

    update(0)
    return Drawing(fig, update, int(frames), int(frames) - 1)


def draw_outcomes(ts: Any, rho: Mapping[float, Any], cfg: AnimationConfig = AnimationConfig(), *, tol: float = 1e-3,
                  hold: int = 1) -> Drawing:
    """Consensus against polarisation: for each ``beta`` of ``rho`` (``{beta: (saves, trials)}``
    of ``rho_min``), one row of dots, a trial each, at ``rho_min(t)``; coloured by the trial's outcome
    at the last save (:func:`outcomes`), with the counts at the current save.

    Examples
    --------
    >>> ts = np.linspace(0, 1, 4)
    >>> rho = {0.1: np.linspace(-1, 1, 4)[:, None] * np.ones((1, 3)), 1.5: -np.ones((4, 3))}
    >>> d = draw_outcomes(ts, rho)
    >>> d.frames, d.poster
    (4, 3)
    >>> draw_outcomes(ts, {})
    Traceback (most recent call last):
    ...
    ValueError: rho must hold at least one beta
    """
    t = _array(ts, "ts", ndim=1)
    if not rho:
        raise ValueError("rho must hold at least one beta")
    if int(hold) < 1:
        raise ValueError(f"hold must be at least 1, got {hold!r}")
    betas = sorted(rho)
    rows = {}
    for b in betas:
        r = _array(rho[b], f"rho[{b!r}]", ndim=2)
        if r.shape[0] != t.shape[0]:
            raise ValueError(f"rho[{b!r}] must have {t.shape[0]} rows (one per time), got {r.shape[0]}")
        rows[b] = r
    fig, (ax,) = _figure(cfg, 1)
    fig.subplots_adjust(left=0.12, right=0.70, top=0.88, bottom=0.15)
    ax.set_xlim(-1.05, 1.05)
    ax.set_ylim(-0.6, len(betas) - 0.4)
    ax.set_yticks(range(len(betas)), [f"$\\beta = {b:g}$" for b in betas])
    ax.set_xlabel(r"$\rho_{\min}(t) = \min_{i,j}\langle x_i, x_j\rangle$")
    for x in (-1 + tol, 1 - tol):
        ax.axvline(x, color="#d0d7de", lw=1.0, zorder=0)
    ax.text(-1.0, len(betas) - 0.45, "polarised", color=OUTCOME_COLORS[-1], fontsize=10, va="top")
    ax.text(1.0, len(betas) - 0.45, "consensus", color=OUTCOME_COLORS[1], fontsize=10, va="top", ha="right")
    ax.spines[["top", "right"]].set_visible(False)
    state = []
    for j, b in enumerate(betas):
        r = rows[b]
        trials = r.shape[1]
        y = j + 0.5 * ((np.arange(trials) * 0.6180339887) % 1.0 - 0.5)  # a deterministic spread
        final = outcomes(r[-1], tol)
        pts = ax.scatter(r[0], y, s=10, c=[OUTCOME_COLORS[int(o)] for o in final], alpha=0.7, linewidths=0)
        label = fig.text(0.72, 0.15 + (j + 0.5) / len(betas) * 0.73, "", va="center", fontsize=10)
        state.append((pts, y, label, r))
    head = fig.text(0.41, 0.95, "", ha="center", va="center", fontsize=12)
    base = np.repeat(np.arange(t.shape[0]), int(hold))

    def update(k: int) -> None:
        i = base[k]
        for pts, y, label, r in state:
            pts.set_offsets(np.column_stack([r[i], y]))
            o = outcomes(r[i], tol)
            n = o.size
            label.set_text(f"consensus {int(np.sum(o == 1))}/{n}\npolarised {int(np.sum(o == -1))}/{n}")
        head.set_text(f"t = {t[i]:.1f}")

    update(0)
    return Drawing(fig, update, len(base), len(base) - 1)


def draw_plane(ts: Any, path: Any, clusters: Any, radius: float, cfg: AnimationConfig = AnimationConfig(), *,
               segments: Sequence[tuple[float, float, int, int]] | None = None, trail: int = 4,
               exit_time: float | None = None) -> Drawing:
    """Tokens leaving the base clusters: ``path: (saves, n, 2)`` at ``ts: (saves,)`` in the plane, the
    base clusters ``clusters: (k, 2)`` each with a circle of ``radius`` (a token outside every circle
    has left), the count of tokens outside and, past ``exit_time``, the exit marked. Frames follow
    :func:`timeline` (``segments``; default: every save once); ``trail`` earlier frames fade behind.

    Examples
    --------
    >>> ts = np.arange(5.0)
    >>> path = np.zeros((5, 3, 2)); path[:, 0, 0] = np.arange(5.0)
    >>> d = draw_plane(ts, path, [[0.0, 0.0]], 0.5)
    >>> d.frames, d.poster
    (5, 4)
    >>> draw_plane(ts, path, [[0.0, 0.0]], -1.0)
    Traceback (most recent call last):
    ...
    ValueError: radius must be positive, got -1.0
    """
    t = _array(ts, "ts", ndim=1)
    P = _array(path, "path", ndim=3, last=2)
    C = _array(clusters, "clusters", ndim=2, last=2)
    if P.shape[0] != t.shape[0]:
        raise ValueError(f"path must have {t.shape[0]} saves (one per time), got {P.shape[0]}")
    if not radius > 0:
        raise ValueError(f"radius must be positive, got {radius!r}")
    idx = timeline(t, segments) if segments else np.arange(t.shape[0])
    fig, (ax,) = _figure(cfg, 1)
    fig.subplots_adjust(left=0.02, right=0.98, top=0.9, bottom=0.04)
    ax.set_aspect("equal")
    lo, hi = P.min(axis=(0, 1)), P.max(axis=(0, 1))
    pad = max(0.08 * float(np.max(hi - lo)), 4 * radius)
    ax.set_xlim(lo[0] - pad, hi[0] + pad)
    ax.set_ylim(lo[1] - pad, hi[1] + pad)
    ax.set_xticks([])
    ax.set_yticks([])
    from matplotlib.patches import Circle

    for j, c in enumerate(C):
        ax.add_patch(Circle(c, radius, fill=False, color="black", lw=1.0, zorder=2))
        ax.plot(*c, "+", color="black", ms=8, zorder=2, label="base clusters" if j == 0 else None)
    ghosts = [ax.scatter([], [], s=14, color="#ff7f0e", alpha=0.12 * (m + 1), linewidths=0, zorder=3)
              for m in range(int(trail))]
    pts = ax.scatter(P[0, :, 0], P[0, :, 1], s=26, color="#ff7f0e", linewidths=0, zorder=4, label="perturbed tokens")
    ax.legend(loc="upper right", fontsize=9, frameon=False)
    head = fig.text(0.5, 0.955, "", ha="center", va="center", fontsize=12)
    n = P.shape[1]

    def update(k: int) -> None:
        i = idx[k]
        for m, g in enumerate(ghosts):
            j = idx[max(k - int(trail) + m, 0)]
            g.set_offsets(P[j])
        pts.set_offsets(P[i])
        out = int(np.sum(distance_to_set(P[i], C) > radius))
        text = f"t = {t[i]:.0f}:  {out} of {n} tokens outside the circles"
        if exit_time is not None and t[i] >= exit_time:
            text += f"   (first exit $T^* = {exit_time:.1f}$)"
        head.set_text(text)

    update(0)
    return Drawing(fig, update, len(idx), len(idx) - 1)


def draw_sphere_run(ts: Any, traj: Any, labels: Any, counts: Any, cfg: AnimationConfig = AnimationConfig(), *,
                    order: Any = None, turns: float = 0.5, elev: float = 20.0, azim: float = 0.0,
                    size: float = 12.0, radius: float = 0.05, title: str = "") -> Drawing:
    """Tokens on the sphere ``S^2``, seen in orthographic projection from a slowly turning view, each
    coloured by the cluster it ends in, with the time and the cluster count above and a strip of the
    count against log t below (a cursor on it).

    ``ts: (saves,)`` increasing, ``traj: (saves, n, 3)`` unit vectors, ``labels: (n,)`` the final
    cluster of each token (:func:`rank_clusters` orders the colours), ``counts: (saves,)`` clusters at
    each save. Frame ``k`` shows save ``order[k]`` (default: each save once; geometric saves make it
    even in log t) from azimuth ``azim + 360 turns k / (frames - 1)`` and elevation ``elev``.
    Tokens on the near hemisphere are drawn over the sphere, those behind it faded through it. A
    token's dot has area ``size`` (points squared) times its :func:`multiplicity` at ``radius``: a
    cluster of m tokens is one dot m times the area of a token alone, so its mass shows.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(4, 6, 3)); X /= np.linalg.norm(X, axis=-1, keepdims=True)
    >>> d = draw_sphere_run([0.0, 1.0, 2.0, 4.0], X, [0, 0, 0, 3, 3, 5], [6, 4, 3, 3], order=[0, 0, 1, 2, 3])
    >>> d.frames, d.poster
    (5, 4)
    >>> d.update(2)
    >>> d.fig.texts[-1].get_text()
    't = 1.0     4 clusters'
    >>> draw_sphere_run([0.0, 1.0], X[:2], [0, 0, 0], [6, 4])
    Traceback (most recent call last):
    ...
    ValueError: labels must have one entry per token (6), got 3
    """
    t = _array(ts, "ts", ndim=1)
    P = _array(traj, "traj", ndim=3, last=3)
    if P.shape[0] != t.shape[0]:
        raise ValueError(f"traj must have {t.shape[0]} saves (one per time), got {P.shape[0]}")
    lab = np.asarray(labels)
    if lab.shape != (P.shape[1],):
        raise ValueError(f"labels must have one entry per token ({P.shape[1]}), got {lab.size}")
    c = np.asarray(counts, dtype=np.int64)
    if c.shape != t.shape:
        raise ValueError(f"counts must have shape {t.shape}, got {c.shape}")
    idx = np.arange(t.shape[0]) if order is None else np.asarray(order, dtype=np.int64)
    if idx.ndim != 1 or idx.size == 0 or idx.min() < 0 or idx.max() >= t.shape[0]:
        raise ValueError(f"order must be a non-empty list of save indices in [0, {t.shape[0]})")
    colors = np.array([_rgb(PALETTE[r % len(PALETTE)]) for r in rank_clusters(lab)])
    from matplotlib.patches import Circle

    fig, (ax,) = _figure(cfg, 1)
    strip = 0.9 / cfg.height  # the strip under the sphere: about 0.9 inch high
    ax.set_position([0.02, strip + 0.1, 0.96, 0.79 - strip])
    ax.set_aspect("equal")
    ax.set_xlim(-1.06, 1.06)
    ax.set_ylim(-1.06, 1.06)
    ax.axis("off")
    back = ax.scatter([], [], linewidths=0, zorder=1)
    ax.add_patch(Circle((0.0, 0.0), 1.0, facecolor="white", alpha=0.62, edgecolor="#8c959f", lw=1.2, zorder=2))
    grid = [ax.plot([], [], color="#d0d7de", lw=0.7, zorder=3)[0] for _ in graticule(view_basis(0.0, 0.0))]
    front = ax.scatter([], [], linewidths=0.5, edgecolors="white", zorder=4)
    if title:
        fig.text(0.5, 0.965, title, ha="center", va="center", fontsize=12)
    # the strip: the count of clusters against log t (tokens still alone run off its top)
    sx = fig.add_axes([0.14, 0.075, 0.8, strip])
    pos = t > 0
    top = int(min(max(c[pos].max() if pos.any() else 1, 2), 10))
    sx.step(t[pos], np.minimum(c[pos], top + 1), where="post", color="#57606a", lw=1.4)
    sx.set_xscale("log")
    left = t[pos][0] if pos.any() else 1.0
    sx.set_xlim(left, max(t[-1], 10 * left))
    sx.set_ylim(0.5, top + 0.5)
    sx.set_yticks(range(1, top + 1, 1 if top <= 6 else 2))
    sx.set_ylabel("clusters", fontsize=10)
    sx.set_xlabel("t (log scale)", fontsize=10, labelpad=1)
    sx.tick_params(labelsize=9)
    from matplotlib.ticker import FuncFormatter

    sx.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    sx.spines[["top", "right"]].set_visible(False)
    cursor = sx.axvline(left, color="#cf222e", lw=1.2)
    dot, = sx.plot([], [], "o", color="#cf222e", ms=5)
    head = fig.text(0.5, 0.915, "", ha="center", va="center", fontsize=12)
    frames = idx.size

    def update(k: int) -> None:
        i = int(idx[k])
        B = view_basis(float(azim) + 360.0 * float(turns) * k / max(frames - 1, 1), float(elev))
        Q = orthographic(P[i], B)
        near = Q[:, 2] >= 0
        area = float(size) * multiplicity(P[i], radius)
        back.set_offsets(Q[~near, :2])
        back.set_facecolors(colors[~near])
        back.set_sizes(0.6 * area[~near])
        front.set_offsets(Q[near, :2])
        front.set_facecolors(colors[near])
        front.set_sizes(area[near])
        for line, g in zip(grid, graticule(B)):
            line.set_data(g[:, 0], g[:, 1])
        visible = t[i] > 0
        cursor.set_visible(visible)
        dot.set_visible(visible)
        if visible:
            cursor.set_xdata([t[i], t[i]])
            dot.set_data([t[i]], [min(int(c[i]), top + 1)])
        when = f"{t[i]:.1f}" if t[i] < 10 else f"{t[i]:.0f}"
        head.set_text(f"t = {when}     {int(c[i])} cluster" + ("" if c[i] == 1 else "s"))

    update(0)
    return Drawing(fig, update, frames, frames - 1)


# ------------------------------------------------------------------------------------------------
# Encoding
# ------------------------------------------------------------------------------------------------
def ffmpeg_exe() -> str:
    """The ffmpeg binary of the ``imageio-ffmpeg`` package, set as matplotlib's
    ``animation.ffmpeg_path`` (no system ffmpeg needed).

    Examples
    --------
    >>> import matplotlib
    >>> ffmpeg_exe() == matplotlib.rcParams["animation.ffmpeg_path"]
    True
    """
    import imageio_ffmpeg
    import matplotlib

    exe = imageio_ffmpeg.get_ffmpeg_exe()
    matplotlib.rcParams["animation.ffmpeg_path"] = exe
    return exe


def encode(drawing: Drawing, path: Path | str, cfg: AnimationConfig = AnimationConfig()) -> dict[str, Any]:
    """Write ``drawing``'s frames as an H.264 MP4 (yuv420p, ``+faststart``, no timestamps or
    encoder tags in the container) to ``path``; returns ``{"frames", "fps", "seconds", "bytes"}``.

    Raises ValueError when the video is larger than ``cfg.max_bytes`` (the file is removed).

    Examples
    --------
    >>> import tempfile
    >>> d = draw_plane(np.arange(3.0), np.zeros((3, 2, 2)), [[0.0, 0.0]], 0.5)
    >>> info = encode(d, Path(tempfile.mkdtemp()) / "x.mp4")
    >>> info["frames"], info["fps"], 0 < info["bytes"] < 100_000
    (3, 12, True)
    >>> encode(d, Path(tempfile.mkdtemp()) / "x.mp4", AnimationConfig(max_bytes=100))
    Traceback (most recent call last):
    ...
    ValueError: the video is ... bytes, more than cfg.max_bytes = 100
    """
    from matplotlib.animation import FFMpegWriter

    ffmpeg_exe()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".part.mp4")
    writer = FFMpegWriter(fps=cfg.fps, codec="h264", bitrate=-1, extra_args=[
        "-pix_fmt", "yuv420p", "-crf", str(cfg.crf), "-preset", "slow", "-tune", "animation", "-threads", "1",
        "-movflags", "+faststart", "-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1"])
    with writer.saving(drawing.fig, str(tmp), dpi=cfg.dpi):
        for k in range(drawing.frames):
            drawing.update(k)
            writer.grab_frame()
    size = tmp.stat().st_size
    if size > cfg.max_bytes:
        tmp.unlink()
        raise ValueError(f"the video is {size} bytes, more than cfg.max_bytes = {cfg.max_bytes}")
    os.replace(tmp, path)
    return {"frames": drawing.frames, "fps": cfg.fps, "seconds": round(drawing.frames / cfg.fps, 2), "bytes": size}


# The poster is a figure of the book: drawn at twice the book's 100 dpi (book/_scripts/matplotlibrc),
# like the chapters' figures for high-density screens (companion.pages.book_figures).
POSTER_DPI = 200


def save_poster(drawing: Drawing, path: Path | str, cfg: AnimationConfig = AnimationConfig()) -> Path:
    """Draw the poster frame of ``drawing`` and save it as a PNG (the still
    frame of the video, and the figure of the printed book).

    Examples
    --------
    >>> import tempfile
    >>> d = draw_plane(np.arange(3.0), np.zeros((3, 2, 2)), [[0.0, 0.0]], 0.5)
    >>> save_poster(d, Path(tempfile.mkdtemp()) / "p.png").read_bytes()[:4]
    b'\x89PNG'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    drawing.update(drawing.poster)
    drawing.fig.savefig(path, dpi=POSTER_DPI)  # matplotlib's own metadata, like every figure of the book
    return path


# ------------------------------------------------------------------------------------------------
# The book's animations
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Spec:
    """One animation of the book: the stored run it draws (``experiment``'s full profile), how
    (``draw(result, cfg) -> Drawing``) and the words for a reader who cannot see it (``alt``).

    Examples
    --------
    >>> spec = ANIMATIONS["phase-depth-transition"]
    >>> spec.experiment, spec.cfg.pixels
    ('phase-depth-transition', (720, 576))
    """

    name: str
    experiment: str
    draw: Callable[[Mapping[str, Any], AnimationConfig], Drawing]
    alt: str
    cfg: AnimationConfig = field(default_factory=AnimationConfig)


def _forming(counts: Any, before: int = 2) -> int:
    """The save ``before`` saves ahead of the one where ``counts: (saves,)`` first reaches its final
    value: clusters seen while the last tokens still gather (the poster of a circle run).

    Examples
    --------
    >>> _forming([0, 0, 1, 2, 3, 3, 3])
    2
    """
    c = np.asarray(counts)
    return max(int(np.argmax(c == c[-1])) - int(before), 0)


def _best_view(traj: np.ndarray, order: np.ndarray, keys: Sequence[int], turns: float,
               radius: float = 0.05) -> tuple[float, float]:
    """The starting azimuth and the elevation (degrees) of a view turning ``turns`` over the frames
    of ``order`` that shows the most clusters on the near side at the frames ``keys``: each token of
    ``traj: (saves, n, 3)`` clearly in front (depth > 0.15) counts 1 / sqrt(its :func:`multiplicity`),
    so a cluster of m tokens counts sqrt(m): every cluster counts, the heavy ones more.

    Examples
    --------
    >>> X = np.array([[[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]])  # one save: tokens at +x and -x
    >>> _best_view(np.repeat(X, 2, axis=0), np.array([0, 1]), [0], 0.0)  # either side shows one
    (0.0, -30.0)
    """
    mass = {k: 1.0 / multiplicity(traj[order[k]], radius) ** 0.5 for k in keys}
    best, score = (0.0, 0.0), -1.0
    for elev in (-30.0, -15.0, 0.0, 15.0, 30.0):
        for azim in np.arange(0.0, 360.0, 10.0):
            total = 0.0
            for k, w in mass.items():
                toward = view_basis(azim + 360.0 * turns * k / max(order.size - 1, 1), elev)[2]
                total += float(w[traj[order[k]] @ toward > 0.15].sum())
            if total > score + 1e-9:
                best, score = (float(azim), elev), total
    return best


def _hero(r: Mapping[str, Any], cfg: AnimationConfig) -> Drawing:
    ts, counts = np.asarray(r["times"], dtype=np.float64), np.asarray(r["clusters"])[:, 0]
    traj = np.asarray(r["trajectory"])
    saves = np.arange(ts.size)
    # t = 0 held a second; the slow start (t < 4) at every other save; the end held two seconds
    order = np.r_[np.zeros(cfg.fps, np.int64), saves[(ts > 0) & (ts < 4)][::2], saves[ts >= 4],
                  np.full(2 * cfg.fps, ts.size - 1)]
    formed = int(np.argmax(np.asarray(r["singletons"])[:, 0] == 0))  # no token alone any more
    a, b = first_plateau(counts[formed:])
    shown = formed + (a + b) // 2  # the middle of the first plateau (in log t): several clusters, formed
    poster = int(np.argmax(order >= shown))
    # the view: most clusters in front at the poster and just before each merge once formed
    merges = [int(np.argmax(order >= i)) for i in np.flatnonzero(np.diff(counts[formed:]) < 0) + formed]
    turns = 0.5
    azim, elev = _best_view(traj, order, [poster] + [k for k in merges if k > poster], turns)
    c = r["config"]
    d = draw_sphere_run(ts, traj, r["labels"], counts, cfg, order=order, turns=turns, elev=elev, azim=azim,
                        title=f"{traj.shape[1]} tokens on $S^2$, $\\beta = {float(c['beta']):g}$, $Q = K = V = I$")
    d.poster = poster
    return d


def _official(r: Mapping[str, Any], cfg: AnimationConfig) -> Drawing:
    d = draw_circle_runs(list(r["runs"]), cfg, predicted=True, hold=2)
    d.poster = 2 * _forming(r["runs"][0]["counts"])
    return d


def _figure3(r: Mapping[str, Any], cfg: AnimationConfig) -> Drawing:
    c = r["config"]
    return draw_cursor(r["ts"], r["w2"], r["align_E"], r["align_F"], cfg, log_beta=float(np.log(c["beta"])),
                       level=float(c["level"]), frames=120)


def _rho_min(r: Mapping[str, Any], cfg: AnimationConfig) -> Drawing:
    return draw_outcomes(r["ts"], r["rho"], cfg)


def _depth(r: Mapping[str, Any], cfg: AnimationConfig) -> Drawing:
    c = r["config"]
    path = np.asarray(r["pert_path0"])
    ts = np.linspace(0.0, float(c["t1"]), path.shape[0])
    exit_time = float(np.asarray(r["exit_a"])[0])
    segments = [(0, 8, 9, 3), (8, exit_time - 2, 12, 1), (exit_time - 2, exit_time + 8, 11, 4),
                (exit_time + 8, float(c["t1"]), 24, 1)]
    d = draw_plane(ts, path, r["clusters0"], 2 * float(c["delta"]), cfg, segments=segments, exit_time=exit_time)
    shown = ts[timeline(ts, segments)]
    d.poster = int(np.argmax(shown >= exit_time + 1.0))  # the exit under way, with its trail
    return d


ANIMATIONS: dict[str, Spec] = {s.name: s for s in (
    Spec("hero", "intro-sphere-merging", _hero,
         "128 tokens on a slowly turning sphere at beta = 9: scattered at t = 0, they gather into five clusters by "
         "t = 8.1; two of them merge at t = 35.5 and two more at t = 78.1, leaving three clusters that hold to t = 400. "
         "Each token is coloured by the cluster it ends in, a dot grows with the tokens it holds, and a strip below "
         "plots the number of clusters against log t.",
         AnimationConfig(width=5.4, height=6.3)),
    Spec("metastable-official", "metastable-official", _official,
         "Two circles: tokens of paper D's official runs at beta = 5 and beta = 7 gather into clusters next to "
         "the black marks of the predicted angles; the counters go 0, 1, 2, 3 clusters and never reach 4 at beta = 7."),
    Spec("lowtemp-figure3", "lowtemp-figure3", _figure3,
         "A cursor moves along paper B's Figure 3 curves on a log time axis: W2 to the projected law falls by t = 3 "
         "while the alignment with E rises to 1; after t = log beta W2 rises, E falls and F rises to 1 by t = 20."),
    Spec("spectral-rho-min", "spectral-rho-min", _rho_min,
         "Three rows of 200 dots, one per trial, at rho_min(t) for beta = 0.1, 1 and 1.5: at 0.1 every dot travels "
         "from -1 to consensus at +1; at 1 about half do; at 1.5 almost all stay polarised at -1. Counters give both numbers."),
    Spec("phase-depth-transition", "phase-depth-transition", _depth,
         "20 tokens in the plane form three clusters inside the circles of the base clusters by t = 5, stay until "
         "t = 88, then the six tokens of one cluster leave it and join another by t = 95; two clusters remain to t = 1000.",
         AnimationConfig(width=6.0, height=4.8)),
)}


def animations_dir(root: Path | str | None = None) -> Path:
    """``book/_static/animations`` of the repository (or of ``root``), where the videos are kept.

    Examples
    --------
    >>> animations_dir("/tmp/clone").as_posix()
    '/tmp/clone/book/_static/animations'
    """
    from .provenance import repo_root

    return (Path(root) if root is not None else repo_root()) / "book" / "_static" / "animations"


def cache_key(spec: Spec, meta: Mapping[str, Any]) -> str:
    """SHA-256 (16 hex digits) of what a video is made of: the stored result's SHA-256 (``meta``,
    its provenance), this module's source, the animation's name and config, and ffmpeg's version.

    Examples
    --------
    >>> spec = ANIMATIONS["hero"]
    >>> k = cache_key(spec, {"sha256": {"npz": "ab"}})
    >>> len(k), k == cache_key(spec, {"sha256": {"npz": "ab"}}), k == cache_key(spec, {"sha256": {"npz": "cd"}})
    (16, True, False)
    >>> cache_key(spec, {})
    Traceback (most recent call last):
    ...
    ValueError: meta must hold the stored result's sha256 (its provenance), got keys []
    """
    import imageio_ffmpeg

    digest = (meta.get("sha256") or {}).get("npz")
    if not digest:
        raise ValueError(f"meta must hold the stored result's sha256 (its provenance), got keys {sorted(meta)}")
    h = hashlib.sha256()
    for part in (digest, Path(__file__).read_bytes().replace(b"\r\n", b"\n"), spec.name, repr(spec.cfg),
                 imageio_ffmpeg.__version__):
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def render(name: str, root: Path | str | None = None, out: Path | str | None = None, *,
           force: bool = False) -> dict[str, Any]:
    """The manifest of animation ``name``, rendering its video and poster into ``out`` (default
    :func:`animations_dir`) unless a manifest with the current :func:`cache_key` is there.

    The stored result is read through the verified loader (:func:`companion.store.load_run`), its
    ``"config"`` with every parameter under its name now (:meth:`~companion.registry.Experiment.config_of`:
    a result stored before a parameter was renamed draws like one computed today). The
    manifest (``<name>.json``) records the key, the frames, the size and the render time.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> m = render("phase-depth-transition", out=out)
    >>> m["frames"], m["pixels"], sorted(p.name for p in out.iterdir())
    (101, [720, 576], ['phase-depth-transition.json', 'phase-depth-transition.mp4', 'phase-depth-transition.png'])
    >>> render("phase-depth-transition", out=out) == m  # the key matched: nothing rendered
    True
    """
    from .store import load_run

    if name not in ANIMATIONS:
        raise ValueError(f"name must be one of {sorted(ANIMATIONS)}, got {name!r}")
    spec = ANIMATIONS[name]
    out = Path(out) if out is not None else animations_dir(root)
    stored = load_run(spec.experiment, "full", root)
    if stored is None:
        raise FileNotFoundError(f"no stored full result of {spec.experiment!r} under data/results")
    result, meta = stored
    import dataclasses

    from .registry import get

    result = {**result, "config": dataclasses.asdict(get(spec.experiment).config_of(result))}
    key = cache_key(spec, meta)
    manifest_path = out / f"{name}.json"
    if not force and manifest_path.exists() and (out / f"{name}.mp4").exists() and (out / f"{name}.png").exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("key") == key:
            return manifest
    import matplotlib

    t0 = time.perf_counter()
    with matplotlib.rc_context({"font.size": 11}):
        drawing = spec.draw(result, spec.cfg)
        info = encode(drawing, out / f"{name}.mp4", spec.cfg)
        save_poster(drawing, out / f"{name}.png", spec.cfg)
    manifest = {"name": name, "experiment": spec.experiment, "key": key, **info,
                "pixels": list(spec.cfg.pixels), "render_seconds": round(time.perf_counter() - t0, 1),
                "result_sha256": meta["sha256"]["npz"], "commit": meta.get("commit")}
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


class Video:
    """A video on a page: ``<video controls>`` with its poster in HTML, the poster as the PNG of
    the notebook and of the printed book, and one stable line of text (what nbval compares).

    Examples
    --------
    >>> v = Video("hero", ANIMATIONS["hero"].alt, {"frames": 122, "fps": 12, "pixels": [864, 432]})
    >>> repr(v).split(":")[0]
    'Animation "hero" (video, 122 frames at 12 fps, 10.2 s)'
    >>> '<video class="companion-animation" controls' in v._repr_html_()
    True
    """

    def __init__(self, name: str, alt: str, manifest: Mapping[str, Any], src: str = "../_static/animations/",
                 folder: Path | None = None):
        self.name, self.alt, self.manifest, self.src, self.folder = name, alt, dict(manifest), src, folder

    def _repr_html_(self) -> str:
        w, h = self.manifest["pixels"]
        mp4, png, alt = (html.escape(self.src + self.name + ext, quote=True) for ext in (".mp4", ".png", ""))
        alt = html.escape(self.alt, quote=True)
        return (f'<video class="companion-animation" controls preload="metadata" playsinline width="{w}" height="{h}" '
                f'poster="{png}" aria-label="{alt}"><source src="{mp4}" type="video/mp4">'
                f'<img src="{png}" alt="{alt}"></video>')

    def _repr_png_(self) -> bytes | None:
        if self.folder is None:
            return None
        return (self.folder / f"{self.name}.png").read_bytes()

    def __repr__(self) -> str:
        m = self.manifest
        return (f'Animation "{self.name}" (video, {m["frames"]} frames at {m["fps"]} fps, '
                f'{m["frames"] / m["fps"]:.1f} s): {self.alt}')


def show(name: str, root: Path | str | None = None, src: str = "../_static/animations/") -> Video:
    """The animation ``name`` for a chapter cell: rendered if its key changed (:func:`render`), shown
    as a :class:`Video` whose files the book serves from ``src`` (relative to the page).

    Examples
    --------
    >>> repr(show("phase-depth-transition")).split(":")[0]
    'Animation "phase-depth-transition" (video, 101 frames at 12 fps, 8.4 s)'
    """
    manifest = render(name, root)
    return Video(name, ANIMATIONS[name].alt, manifest, src, animations_dir(root))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m companion.animate [--force] [NAME ...]``: render the book's animations whose key
    changed (all, or the names given) and print one line each.

    Examples
    --------
    >>> main(["phase-depth-transition"])
    phase-depth-transition: phase-depth-transition, 101 frames, ... kB, rendered in ... s
    0
    """
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    force = "--force" in args
    names = [a for a in args if a != "--force"] or list(ANIMATIONS)
    for name in names:
        m = render(name, force=force)
        print(f"{name}: {m['experiment']}, {m['frames']} frames, {m['bytes'] / 1000:.0f} kB, "
              f"rendered in {m['render_seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
