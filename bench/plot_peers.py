"""Draw the work-precision figure from stored ``bench/peers.py`` JSONs (issue 32, item 2).

Left: maximum final error over all trials against field evaluations; right: against wall time (one
run each, on the machine and load the JSONs record). float64 solid, float32 dashed; the package's
solvers in colour, the peers in grey tones. Several JSONs of one problem (say a float32 run and a
float64 run) are drawn together; two holding the same sweep, or different problems, are refused.

Usage: python bench/plot_peers.py JSON [JSON ...] PNG
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

REQUIRED = ("problem", "sweeps", "versions", "load_start")


def load(path: Path) -> dict:
    """The JSON, checked to hold what the figure reads (a clear error naming the file otherwise)."""
    data = json.loads(path.read_text())
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise ValueError(f"{path}: not a bench/peers.py result, missing {missing}")
    for key, rows in data["sweeps"].items():
        if " | " not in key or not rows or not all({"rtol", "error", "evaluations", "seconds"} <= set(r) for r in rows):
            raise ValueError(f"{path}: sweep {key!r} is malformed")
    return data


def merge(runs: list[dict]) -> dict:
    """One figure's data from runs of one problem: their sweeps together, the highest load any recorded."""
    first = runs[0]
    sweeps: dict = {}
    for data in runs:
        if data["problem"] != first["problem"]:
            raise ValueError(f"runs of different problems: {first['problem']} and {data['problem']}")
        twice = set(sweeps) & set(data["sweeps"])
        if twice:
            raise ValueError(f"sweeps {sorted(twice)} are in more than one run")
        sweeps.update(data["sweeps"])
    return dict(first, sweeps=sweeps, load_start=max((d["load_start"] for d in runs), key=lambda a: a[0]))


def draw(data: dict, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"companion dopri5": "#1f77b4", "companion tsit5": "#2ca02c", "companion tsit5 max_trial": "#d62728",
               "torchdiffeq dopri5": "#555555", "torchode tsit5": "#8c8c8c", "torchode dopri5": "#bbbbbb"}
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.4), sharey=True)
    for key, rows in sorted(data["sweeps"].items()):
        name, dname = key.split(" | ")
        style = dict(color=colours.get(name, "k"), ls="-" if dname == "float64" else "--", marker="o", ms=3, lw=1.2)
        label = f"{name} ({dname})"
        err = [r["error"] for r in rows]
        axes[0].loglog([r["evaluations"] for r in rows], err, label=label, **style)
        axes[1].loglog([r["seconds"] for r in rows], err, **style)
    p = data["problem"]
    axes[0].set_xlabel("field evaluations")
    axes[1].set_xlabel("wall time (s), one run each")
    axes[0].set_ylabel("max final error over all trials")
    for ax in axes:
        ax.grid(True, which="major", alpha=0.3)
        ax.tick_params(labelsize=10)
    axes[0].set_title(f"{p['trials']} trials x {p['n']} tokens on $S^2$, T = {p['T']:g}", fontsize=10)
    load = data["load_start"][0]
    axes[1].set_title(f"{p['threads']} threads, load average {load:.1f} at the start", fontsize=10)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.2, 1, 1))
    fd, tmp = tempfile.mkstemp(dir=png.parent, prefix=png.name, suffix=".tmp.png")
    os.close(fd)
    fig.savefig(tmp, dpi=150)
    os.replace(tmp, png)


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit("usage: python bench/plot_peers.py JSON [JSON ...] PNG")
    draw(merge([load(Path(a)) for a in sys.argv[1:-1]]), Path(sys.argv[-1]))
    print(f"wrote {sys.argv[-1]}")


if __name__ == "__main__":
    main()
