"""Re-execute chapters into their reference notebooks: book/chapters/<slug>.md -> <slug>.ipynb.

    python book/_scripts/refresh.py SLUG [SLUG ...]

Reads the MyST source with jupytext, executes it with nbclient in book/chapters/ (as nbval and
the book build do), and writes the executed .ipynb. A raising cell aborts with a non-zero exit and
leaves the previous reference untouched. The notebook's ``metadata.companion`` records how long
the execution took, when, where and in which profile (the status chapter shows it). Uses nbclient
directly: `jupytext --execute` needs nbconvert, which the pins do not include.
"""
from __future__ import annotations

import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

CHAPTERS = Path(__file__).resolve().parents[1] / "chapters"


def refresh(slug: str, timeout: int = 1800) -> Path:
    src = CHAPTERS / f"{slug}.md"
    if not src.exists():
        raise SystemExit(f"refresh: {src} does not exist")
    nb = jupytext.read(src)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                            resources={"metadata": {"path": str(CHAPTERS)}})
    t0 = time.perf_counter()
    client.execute()
    # Build record for the Status chapter (companion.runs.chapter_times): nbval ignores notebook
    # metadata, so this one volatile block never breaks a comparison.
    nb.metadata["companion"] = {
        "execution_seconds": round(time.perf_counter() - t0, 1),
        "executed": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "profile": os.environ.get("COMPANION_PROFILE", "fast"),
    }
    out = src.with_suffix(".ipynb")
    tmp = out.with_suffix(".ipynb.tmp")
    nbformat.write(nb, tmp)
    tmp.replace(out)
    return out


def main(argv: list[str]) -> int:
    for slug in argv:
        t = time.perf_counter()
        out = refresh(slug)
        print(f"refresh: wrote {out.relative_to(CHAPTERS.parents[1])} ({time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
