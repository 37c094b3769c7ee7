"""Question 4 (paper C, Sec. 7.3): n >= 3 tokens with V negative definite, the final sign splits
against the block criterion of Thm. 5.2 with the singleton correction; experiment
``beyond-negdef-patterns``.

The criterion per split is :func:`companion.theory.questions.split_prediction`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import init, ledger, models
from ...integrate import simulate
from ...report import wilson
from ...registry import claims_for, experiment, summary_for
from ...theory.questions import split_prediction
from ._shared import F64, ON_SUBSPACE, OURS

__all__ = ["NegdefPatternsConfig", "negdef_patterns", "negdef_patterns_claims", "negdef_patterns_summary",
           "plot_negdef_patterns"]



@dataclasses.dataclass(frozen=True)
class NegdefPatternsConfig:
    """Question 4: paper C's dynamics with V = diag(``lambdas``) negative definite, ``trials``
    uniform ensembles of n tokens on S^{d-1} for each n of ``ns`` and beta of ``betas``, RK4 with
    step ``dt`` to ``t1``; the same initial tokens for every beta.

    Examples
    --------
    >>> NegdefPatternsConfig().ns, NegdefPatternsConfig().betas
    ((3, 4, 6), (0.1, 0.25, 1.0))
    """

    lambdas: tuple[float, ...] = (-0.5, -1.0, -1.5)
    ns: tuple[int, ...] = (3, 4, 6)
    betas: tuple[float, ...] = (0.1, 0.25, 1.0)
    trials: int = 32
    t1: float = 150.0
    dt: float = 0.75
    seed: int = 7


def plot_negdef_patterns(result: dict[str, Any], ax=None):
    """Distribution of the final split n_+ per (n, beta), predicted-stable splits marked: one panel
    per n, in rows of at most four, one legend for the betas below.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> len(plot_negdef_patterns(negdef_patterns(ns=(3,), betas=(1.0,), trials=2, t1=1.0)))
    1
    """
    import matplotlib.pyplot as plt

    from ...style import FULL_WIDTH

    fs = 10
    ns = result["ns"]
    if ax is None:
        ncol = min(len(ns), 4)
        nrow = -(-len(ns) // ncol)
        fig, grid = plt.subplots(nrow, ncol, figsize=(FULL_WIDTH, 2.4 * nrow + 0.5), squeeze=False)
        grid = grid.ravel()
        for a in grid[len(ns):]:
            a.set_visible(False)
        ax = list(grid[:len(ns)])
    nb = len(result["betas"])
    handles = []
    for a, n in zip(ax, ns):
        handles = []
        for j, beta in enumerate(result["betas"]):
            cell = result["cells"][f"n={n} beta={beta:g}"]
            k = np.arange(-1, n + 1)
            counts = np.array([int((np.asarray(cell["n_plus"]) == i).sum()) for i in k])
            off = (j - (nb - 1) / 2) * 0.8 / nb
            handles.append(a.bar(k + off, counts, width=0.8 / nb, label=rf"$\beta = {beta:g}$", color=f"C{j}"))
            stable = [int(i) for i, v in cell["stable"].items() if v]
            a.plot(np.array(stable) + off, [-0.04 * max(1, counts.max())] * len(stable), "^", color=f"C{j}", ms=5)
        a.set_title(f"n = {n}", fontsize=fs)
        a.tick_params(labelsize=fs)
        a.xaxis.get_major_locator().set_params(integer=True)
    fig = ax[0].figure
    spare = [a for a in fig.axes if not a.get_visible()]
    fig.supxlabel(r"final split $n_+$ ($-1$: no split on $e_3$)", fontsize=fs)
    fig.supylabel("trials", fontsize=fs)
    if spare:  # the legend in the grid's empty slot
        spare[0].set_visible(True)
        spare[0].axis("off")
        spare[0].legend(handles=handles, loc="center", fontsize=fs, frameon=False)
        fig.tight_layout()
    else:
        fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(nb, 6), fontsize=fs, frameon=False)
        fig.tight_layout()
    return ax


@experiment("beyond-negdef-patterns", chapter="beyond", plot=plot_negdef_patterns, paper=OURS,
            profiles={"fast": NegdefPatternsConfig(),
                      "full": NegdefPatternsConfig(ns=(3, 4, 5, 6, 8, 10, 16), betas=(0.1, 0.25, 0.5, 1.0, 2.0, 4.0), trials=400, t1=300.0,
                                           dt=0.25)})
def negdef_patterns(cfg: NegdefPatternsConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Question 4: the final patterns of n >= 3 tokens when V is negative definite.

    Profiles: ``fast`` n in (3, 4, 6), beta in (0.1, 0.25, 1), 32 trials each to t1 = 150 (a weakly
    stable split takes over 100 time units at beta = 0.25); ``full`` n up to 16, six betas, 400 trials,
    t1 = 300.

    Returns
    -------
    dict with ``ns``, ``betas`` and ``cells``: per ``"n/beta"`` the final ``n_plus`` per trial (-1
    when the tokens are not all on +-e_d), ``stable`` (``{n_plus: bool}``, block criterion),
    ``theorem`` (Thm. 5.2 as stated), ``in_stable``, ``in_theorem`` (counts of trials),
    ``singleton_saved`` (trials ending with a one-token group that only the correction allows),
    ``not_split``; and the totals ``trials``, ``in_stable``, ``in_theorem``, ``singleton_saved``,
    ``not_split``, ``in_unstable`` (trials ending in a split the criterion calls unstable),
    ``unsettled`` (trials ending in no split where some split is stable), ``none_stable_trials``
    (trials in cells where no split is stable) and ``none_stable_not_split`` (those of them not
    ending in a split).

    Examples
    --------
    >>> r = negdef_patterns(ns=(3,), betas=(1.0,), trials=2, t1=1.0)
    >>> sorted(r["cells"]), r["trials"]
    (['n=3 beta=1'], 2)
    """
    lam = torch.tensor(cfg.lambdas, dtype=F64)
    d, p = lam.numel(), int(torch.argmin(lam))
    cells: dict[str, Any] = {}
    for n in cfg.ns:
        x0 = init.uniform_sphere(cfg.trials, n, d, generator=generator).repeat(len(cfg.betas), 1, 1)
        A = torch.stack([b * torch.diag(lam) for b in cfg.betas for _ in range(cfg.trials)])
        sol = simulate(models.Sphere(A=A.to(device), V=torch.diag(lam).to(device), beta=1.0), x0.to(device), cfg.t1,
                       method="rk4", dt=cfg.dt, save_at=torch.tensor([0.0, cfg.t1]))
        cp = sol.xs[-1, ..., p].cpu().reshape(len(cfg.betas), cfg.trials, n)
        for j, beta in enumerate(cfg.betas):
            pred = split_prediction(cfg.lambdas, beta, n)
            on = (cp[j] ** 2 > ON_SUBSPACE).all(-1)
            n_plus = [int(k) if o else -1 for k, o in zip((cp[j] > 0).sum(-1).tolist(), on.tolist())]
            stable = {k: v["blocks"] for k, v in pred.items()}
            theorem = {k: v["theorem"] for k, v in pred.items()}
            cells[f"n={n} beta={beta:g}"] = {  # no "/": results are stored by "/"-joined keys
                "n": n, "beta": beta, "n_plus": n_plus, "stable": stable, "theorem": theorem,
                "in_stable": sum(stable.get(k, False) for k in n_plus),
                "in_theorem": sum(theorem.get(k, False) for k in n_plus),
                "singleton_saved": sum(stable.get(k, False) and not theorem.get(k, False) and k in (1, n - 1) for k in n_plus),
                "not_split": n_plus.count(-1),
                "in_unstable": sum(k != -1 and not stable.get(k, False) for k in n_plus),
                "none_stable": not any(stable.values()),
            }
    tot = lambda key: int(sum(c[key] for c in cells.values()))  # noqa: E731
    return {"ns": list(cfg.ns), "betas": list(cfg.betas), "lambdas": list(cfg.lambdas), "cells": cells,
            "trials": cfg.trials * len(cells), "in_stable": tot("in_stable"), "in_theorem": tot("in_theorem"),
            "singleton_saved": tot("singleton_saved"), "not_split": tot("not_split"), "in_unstable": tot("in_unstable"),
            "unsettled": int(sum(c["not_split"] for c in cells.values() if not c["none_stable"])),
            "none_stable_trials": cfg.trials * sum(c["none_stable"] for c in cells.values()),
            "none_stable_not_split": int(sum(c["not_split"] for c in cells.values() if c["none_stable"]))}


@summary_for("beyond-negdef-patterns")
def negdef_patterns_summary(result: dict[str, Any]) -> dict[str, Any]:
    """Every number the chapter and the answers read: the runs, those ending in a split the block
    criterion calls unstable, those unsettled, those in cells where no split is stable and how many of
    them end in no split, and whether the singleton correction changes any prediction on the grid
    (``correction_changes``: the cells where the block criterion and Thm. 5.2 as stated differ).

    Examples
    --------
    >>> r = {"trials": 100, "in_stable": 90, "in_theorem": 90, "in_unstable": 0, "unsettled": 0, "not_split": 10,
    ...      "none_stable_trials": 10, "none_stable_not_split": 10, "singleton_saved": 0,
    ...      "cells": {"n=3 beta=1": {"stable": {"1": True}, "theorem": {"1": True}}}}
    >>> s = negdef_patterns_summary(r)
    >>> s["bad"], s["no_split_share"], s["correction_changes"], s["settled"], s["criteria_word"]
    (0, 1.0, 0, 90, 'agree in every cell')
    """
    m, k = int(result["none_stable_trials"]), int(result["none_stable_not_split"])
    cells = result.get("cells", {})
    changes = sum(c["stable"] != c["theorem"] for c in cells.values())
    return {"runs": int(result["trials"]), "bad": int(result["in_unstable"]), "unsettled": int(result["unsettled"]),
            "settled": int(result["trials"]) - int(result["unsettled"]) - m,
            "in_stable": int(result["in_stable"]), "in_theorem": int(result["in_theorem"]),
            "singleton_saved": int(result.get("singleton_saved", 0)),
            "none_stable_runs": m, "none_stable_not_split": k, "no_split_share": k / m if m else math.nan,
            "cells": len(cells), "correction_changes": int(changes),
            "criteria_word": "agree in every cell" if changes == 0 else f"differ in {changes} of {len(cells)} cells",
            "ns_text": ", ".join(str(n) for n in result.get("ns", [])),
            "betas_text": ", ".join(f"{b:g}" for b in result.get("betas", [])),
            "per_cell": int(result["trials"]) // len(cells) if cells else 0}


_QUOTE_C = "and then briefly examine the multi-particle regime $n\\geq 3$, where the asymptotic selection mechanism remains open."


@claims_for("beyond-negdef-patterns")
def negdef_patterns_claims(result: dict[str, Any], cfg: NegdefPatternsConfig) -> list[ledger.Claim]:
    """Question 4's answers, from :func:`negdef_patterns_summary`: (a) the block criterion (Thm. 5.2 with
    the singleton correction) predicts the final splits: no run ends in a split it calls unstable (one
    such run refutes; runs unsettled at t1 decide nothing, and with none settled the answer is
    inconclusive); (b) where it calls no split stable, no run ends in a sign split (inconclusive when
    the grid has no such cell).

    Examples
    --------
    >>> r = {"trials": 100, "in_stable": 90, "in_theorem": 90, "in_unstable": 0, "unsettled": 0, "not_split": 10,
    ...      "none_stable_trials": 10, "none_stable_not_split": 10}
    >>> [c.status for c in negdef_patterns_claims(r, NegdefPatternsConfig())]
    ['supported', 'supported']
    >>> [c.status for c in negdef_patterns_claims(dict(r, in_unstable=5, none_stable_not_split=2), NegdefPatternsConfig())]  # a wrong model
    ['refuted', 'refuted']
    """
    s = negdef_patterns_summary(result)
    n, m, k, bad = s["runs"], s["none_stable_runs"], s["none_stable_not_split"], s["bad"]
    main = ledger.Verdict("inconclusive") if s["settled"] <= 0 else ledger.verdict(bad == 0)
    rows = [ledger.Claim(
        id="Q-C-negdef-patterns", paper="C", where="Thm. 5.2, Sec. 7.3 (beyond)",
        statement=r"Derived: for $n \ge 3$ and $V$ negative definite, no run ends in a sign split on $e_d$ that the block "
                  "criterion (Thm. 5.2 with the singleton correction) calls unstable; measured: runs ending in such a split",
        quote=_QUOTE_C, basis="derived",
        test="a counterexample check: a run ending in a split the criterion calls unstable refutes it (generic initial "
             "tokens do not converge to an unstable state); runs with no split yet where one is stable are unsettled and "
             "decide nothing",
        verdict=ledger.answer(main), measured=bad,
        expected=f"0 (unsettled at t1: {s['unsettled']} of {n})", tolerance=0,
        uncertainty=f"{wilson(bad, n, 'runs')}; in a stable split {s['in_stable']}/{n}, in a split Thm. 5.2 as stated calls "
                    f"stable {s['in_theorem']}/{n}",
        why="" if bad == 0 else f"{bad} runs ended in a split the criterion calls unstable")]
    rows.append(ledger.Claim(
        id="Q-C-negdef-no-split", paper="C", where="Thm. 5.2, Sec. 7.3 (beyond)",
        statement=r"Derived: where the criterion calls no sign split stable (small $\beta$, few tokens), the runs end in another "
                  "pattern; share of runs",
        quote=_QUOTE_C, basis="derived",
        test="a counterexample check: in the cells where no split is stable, one run ending in a sign split refutes it",
        verdict=ledger.answer(ledger.verdict(k == m)) if m else ledger.Verdict("inconclusive"),
        measured=k / m if m else None, expected=1.0, tolerance=0,
        uncertainty=wilson(k, m, "runs") if m else "no such cell in the grid",
        why="" if not m or k == m else f"{m - k} of {m} runs ended in a sign split no criterion allows"))
    return rows
