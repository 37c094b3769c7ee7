"""Question 3 (paper B, Conjecture 1): where the terminal phase ends, F or F^abs, as a map;
experiment ``beyond-terminal-map``.

The derived stability of the two candidate end states is
:func:`companion.theory.questions.terminal_prediction`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import init, ledger, models
from ...integrate import simulate
from ...report import below, wilson
from ...registry import claims_for, experiment, summary_for
from ...theory.questions import terminal_prediction, translation_rate
from ._shared import F64, ON_SUBSPACE, OURS, RATE_FLOOR, TOL_RATE

__all__ = ["TerminalMapConfig", "terminal_map", "terminal_map_claims", "terminal_map_summary", "plot_terminal_map"]


@dataclasses.dataclass(frozen=True)
class TerminalMapConfig:
    """Question 3's map: in dimension d (each of ``dims``), ``V = diag(-0.5, rho, -1, -0.5, ...)``
    and ``B = diag(-1, -0.5, -x/beta, -0.5, ...)``, so that E = e1 (top of V B^T), F = e2 when
    rho > -0.5, F^abs = e3; ``x = beta |<e3, B e3>|`` signed (x < 0: B pushes the two poles apart)
    over ``xs``, rho over ``rhos``, at inverse temperature ``beta``; ``trials`` sets of ``n`` uniform
    tokens per cell, RK4 with step ``dt`` to ``t1``. The linear check starts ``n_lin`` tokens on
    +-e3 shifted by ``eps`` along e2 and measures the growth rate up to ``t_lin``.

    Examples
    --------
    >>> TerminalMapConfig().xs, TerminalMapConfig().rhos
    ((-1.0, 0.5, 1.0, 2.0), (-0.3, 0.3, 0.6, 0.9))
    """

    xs: tuple[float, ...] = (-1.0, 0.5, 1.0, 2.0)
    rhos: tuple[float, ...] = (-0.3, 0.3, 0.6, 0.9)
    dims: tuple[int, ...] = (3,)
    beta: float = 5.0
    trials: int = 2
    n: int = 16
    t1: float = 40.0
    dt: float = 0.1
    n_lin: int = 4
    eps: float = 1e-7
    t_lin: float = 2.0
    seed: int = 5


def _family(d: int, x: float, rho: float, beta: float) -> tuple[list[float], list[float]]:
    """The map's diagonals (V, B) in dimension d (see :class:`TerminalMapConfig`)."""
    if d < 3:
        raise ValueError(f"dims: the map needs d >= 3, got {d}")
    return [-0.5, rho, -1.0] + [-0.5] * (d - 3), [-1.0, -0.5, -x / beta] + [-0.5] * (d - 3)


def _cells(cfg: TerminalMapConfig) -> list[tuple[int, float, float]]:
    return [(d, x, rho) for d in cfg.dims for x in cfg.xs for rho in cfg.rhos]


def _ends(X: torch.Tensor, F: int, A: int) -> list[str]:
    """End state of each trial: "F", "Fabs" or "neither". X: (trials, n, d)."""
    aF, aA = (X[..., F] ** 2).mean(-1), (X[..., A] ** 2).mean(-1)
    return ["F" if f > ON_SUBSPACE else ("Fabs" if a > ON_SUBSPACE else "neither") for f, a in zip(aF.tolist(), aA.tolist())]


def plot_terminal_map(result: dict[str, Any], ax=None):
    """The map: per cell the share of runs ending on F^abs (colour), the predicted set of stable
    end states (letter in the cell: F, A for F^abs, B both, N neither), the predicted boundary
    rho = tanh(x) of the bipolar state's stability, and the cells where runs end on neither (crosses).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> len(plot_terminal_map(terminal_map(xs=(1.0,), rhos=(0.3,), trials=1, n=4, t1=1.0)))
    1
    """
    import matplotlib.pyplot as plt

    from ...style import COLORS, FULL_WIDTH

    fs = 10
    letter = {"F": "F", "Fabs": "A", "both": "B", "neither": "N"}
    dims = sorted(set(result["dim"]))
    if ax is None:
        _, ax = plt.subplots(1, len(dims), figsize=(FULL_WIDTH if len(dims) > 1 else FULL_WIDTH / 2, 4.8), squeeze=False)
        ax = ax[0]
    xs, rhos = np.array(result["xs"]), np.array(result["rhos"])
    for a, d in zip(ax, dims):
        sel = [i for i, dd in enumerate(result["dim"]) if dd == d]
        for i in sel:
            x, rho, fa, ne = result["x"][i], result["rho"][i], result["frac_Fabs"][i], result["frac_neither"][i]
            a.scatter([x], [rho], s=190, c=[[fa, 0.2, 1 - fa]], marker="s" if ne == 0 else "X", edgecolors="k")
            a.text(x, rho, letter.get(result["predicted"][i], "?"), ha="center", va="center", color="w", fontsize=fs,
                   fontweight="bold")
        grid = np.linspace(min(0.01, xs.min()), xs.max() * 1.05, 200)
        a.plot(grid[grid > 0], np.tanh(grid[grid > 0]), "--", color=COLORS["theory"], lw=1,
               label=r"$\rho = \tanh x$ ($F^{\mathrm{abs}}$ stable below)")
        a.axhline(0, color=COLORS["reference"], lw=0.6)
        a.set_xlabel(r"$x = -\beta\langle e_3, B e_3\rangle$", fontsize=fs)
        a.set_ylabel(r"$\rho$, top eigenvalue of $V$", fontsize=fs)
        a.set_title(f"Where the runs end, d = {d}", fontsize=fs)
        a.set_ylim(rhos.min() - 0.2, max(1.05, rhos.max() + 0.1))
        a.tick_params(labelsize=fs)
    fig = ax[0].figure
    h, lab = ax[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="lower center", fontsize=fs, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return ax


@experiment("beyond-terminal-map", chapter="beyond", plot=plot_terminal_map, paper=OURS, renamed={"seeds": "trials"},
            profiles={"fast": TerminalMapConfig(),
                      "full": TerminalMapConfig(xs=(-1.0, 0.25, 0.5, 1.0, 1.5, 2.0), rhos=(-0.3, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95),
                                                dims=(3, 6), trials=8, n=64, t1=80.0, dt=0.05)})
def terminal_map(cfg: TerminalMapConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Question 3: where paper B's terminal phase ends, on F or on F^abs, over (d, x, rho).

    Profiles: ``fast`` d = 3, 4 x 4 cells, 2 trials of 16 tokens; ``full`` d = 3 and 6, 6 x 7 cells,
    8 trials of 64 tokens, t1 = 80.

    Returns
    -------
    dict with per cell (lists over cells) ``dim``, ``x``, ``rho``, ``predicted`` (label of
    :func:`~companion.theory.questions.terminal_prediction`), ``ends`` (per trial), ``frac_F``,
    ``frac_Fabs``, ``frac_neither``; the linear check ``rate_measured``, ``rate_predicted`` (per cell
    of the first dimension); and the sizes, ``seeds`` being the config's ``trials``.

    Examples
    --------
    >>> r = terminal_map(xs=(1.0,), rhos=(0.3,), trials=1, n=4, t1=1.0)
    >>> r["predicted"], len(r["ends"][0])
    (['both'], 1)
    """
    cells = _cells(cfg)
    out: dict[str, Any] = {k: [] for k in ("dim", "x", "rho", "predicted", "ends", "frac_F", "frac_Fabs", "frac_neither")}
    for d in cfg.dims:
        mine = [c for c in cells if c[0] == d]
        fam = [_family(d, x, rho, cfg.beta) for _, x, rho in mine]
        A = torch.stack([cfg.beta * torch.diag(torch.tensor(b, dtype=F64)) for _, b in fam for _ in range(cfg.trials)])
        Vs = torch.stack([torch.diag(torch.tensor(v, dtype=F64)) for v, _ in fam for _ in range(cfg.trials)])
        x0 = init.uniform_sphere(cfg.trials, cfg.n, d, generator=generator).repeat(len(mine), 1, 1)
        sol = simulate(models.Sphere(A=A.to(device), V=Vs.to(device), beta=1.0), x0.to(device), cfg.t1, method="rk4", dt=cfg.dt,
                       save_at=torch.tensor([0.0, cfg.t1]))
        X = sol.xs[-1].cpu()
        for j, ((_, x, rho), (v, b)) in enumerate(zip(mine, fam)):
            pred = terminal_prediction(v, b, cfg.beta)
            ends = _ends(X[j * cfg.trials:(j + 1) * cfg.trials], pred["F"], pred["Fabs"])
            for k, val in (("dim", d), ("x", x), ("rho", rho), ("predicted", pred["label"]), ("ends", ends),
                           ("frac_F", ends.count("F") / cfg.trials), ("frac_Fabs", ends.count("Fabs") / cfg.trials),
                           ("frac_neither", ends.count("neither") / cfg.trials)):
                out[k].append(val)
    out.update(_linear_check(cfg, device))
    out.update(xs=list(cfg.xs), rhos=list(cfg.rhos), beta=cfg.beta, seeds=cfg.trials, n=cfg.n, t1=cfg.t1)
    return out


def _linear_check(cfg: TerminalMapConfig, device: str) -> dict[str, list[float]]:
    """Growth rate of the translation mode of the balanced bipolar state on +-e3, per (x, rho) cell of
    the first dimension, against :func:`~companion.theory.questions.translation_rate`."""
    d = cfg.dims[0]
    m = cfg.n_lin // 2
    if m < 1:
        raise ValueError(f"n_lin must be >= 2, got {cfg.n_lin}")
    pairs = [(x, rho) for x in cfg.xs for rho in cfg.rhos]
    fam = [_family(d, x, rho, cfg.beta) for x, rho in pairs]
    X0 = torch.zeros(len(pairs), 2 * m, d, dtype=F64)
    X0[:, :m, 2], X0[:, m:, 2] = 1.0, -1.0
    X0[..., 1] = cfg.eps
    X0 = X0 / X0.norm(dim=-1, keepdim=True)
    A = torch.stack([cfg.beta * torch.diag(torch.tensor(b, dtype=F64)) for _, b in fam])
    Vs = torch.stack([torch.diag(torch.tensor(v, dtype=F64)) for v, _ in fam])
    sol = simulate(models.Sphere(A=A.to(device), V=Vs.to(device), beta=1.0), X0.to(device), cfg.t_lin, method="rk4", dt=0.01,
                   save_at=torch.tensor([0.0, cfg.t_lin]))
    c2 = sol.xs[:, :, :, 1].mean(-1).cpu()  # (2, cells): the mean e2-coordinate
    measured = (torch.log(c2[1] / c2[0]) / cfg.t_lin).tolist()
    return {"rate_measured": measured, "rate_predicted": [translation_rate(rho, x) for x, rho in pairs]}


def _tally(result: dict[str, Any]) -> dict[str, int]:
    """Runs that contradict the prediction, runs not settled, runs in predicted-neither cells ending on neither."""
    allowed = {"F": {"F"}, "Fabs": {"Fabs"}, "both": {"F", "Fabs"}, "neither": {"neither"}}
    bad = undecided = runs = nn = n_neither = 0
    for label, ends in zip(result["predicted"], result["ends"]):
        for e in ends:
            runs += 1
            if label == "neither":
                n_neither += 1
                nn += e == "neither"
                bad += e != "neither"
            elif e == "neither":
                undecided += 1
            elif e not in allowed[label]:
                bad += 1
    return {"runs": runs, "contradictions": bad, "undecided": undecided, "neither_cells_runs": n_neither, "neither_ends": nn}


@summary_for("beyond-terminal-map")
def terminal_map_summary(result: dict[str, Any]) -> dict[str, Any]:
    """Every number the chapter and the answers read: the linear check's worst error, the tally of runs
    (contradicting the derived stability, unsettled, in the cells where neither candidate is stable and
    ending on neither), the cells by predicted label and the runs by end state.

    Examples
    --------
    >>> r = {"predicted": ["F", "both", "neither"], "ends": [["F", "F"], ["Fabs", "neither"], ["neither", "neither"]],
    ...      "rate_measured": [0.1, -0.2], "rate_predicted": [0.1, -0.2]}
    >>> s = terminal_map_summary(r)
    >>> s["rate_err"], s["contradictions"], s["undecided"], s["settled"], s["neither_ends"], s["ends_count"]
    (0.0, 0, 1, 3, 2, {'F': 2, 'Fabs': 1, 'neither': 3})
    """
    t = _tally(result)
    ends = [e for run in result["ends"] for e in run]
    labels = [str(v) for v in result["predicted"]]
    return dict(t, rate_err=float(np.max(np.abs(np.subtract(result["rate_measured"], result["rate_predicted"])))),
                settled=t["runs"] - t["undecided"] - t["neither_cells_runs"],
                frac_neither=t["neither_ends"] / t["neither_cells_runs"] if t["neither_cells_runs"] else math.nan,
                cells=len(labels), predicted_count={k: labels.count(k) for k in ("F", "Fabs", "both", "neither")},
                ends_count={k: ends.count(k) for k in ("F", "Fabs", "neither")})


_QUOTE_B = ("Besides these extensions, a systematic understanding of Conjecture 1 and the quantification of the convergence in "
            "the terminal phase that we observed numerically, as well as its possible connections to the Oja flow of the value "
            "matrix $V$, see Altafini (2026), are also of interest.")


@claims_for("beyond-terminal-map")
def terminal_map_claims(result: dict[str, Any], cfg: TerminalMapConfig) -> list[ledger.Claim]:
    """Question 3's answers, from :func:`terminal_map_summary`: (a) the derived translation rate
    rho - tanh(x) matches the simulator in the linear regime (within :data:`TOL_RATE`, the method's
    error); (b) the end state follows the derived stability of the two candidates: no run ends on a
    state predicted unstable (one such run refutes; runs not settled at t1 are counted apart, and
    with none settled the answer is inconclusive); (c) counterexamples to our reading that every
    (B, V) ends on F or F^abs: in the cells where neither candidate is stable, no run ends on either
    and some end on neither.

    Examples
    --------
    >>> r = {"predicted": ["F", "both", "neither"], "ends": [["F", "F"], ["Fabs", "F"], ["neither", "neither"]],
    ...      "rate_measured": [0.1, -0.2], "rate_predicted": [0.1, -0.2]}
    >>> [c.status for c in terminal_map_claims(r, TerminalMapConfig())]
    ['supported', 'supported', 'supported']
    >>> r2 = dict(r, ends=[["Fabs", "F"], ["Fabs", "F"], ["F", "neither"]], rate_measured=[0.1, 0.0])  # a wrong model
    >>> [c.status for c in terminal_map_claims(r2, TerminalMapConfig())]
    ['refuted', 'refuted', 'refuted']
    """
    s = terminal_map_summary(result)
    main = ledger.Verdict("inconclusive") if s["settled"] == 0 else ledger.verdict(s["contradictions"] == 0)
    nn = s["neither_cells_runs"]
    neither = (ledger.verdict(s["neither_ends"] == nn) if nn else ledger.NOT_CHECKABLE)
    return [
        ledger.Claim(
            id="Q-B-terminal-linear-rate", paper="B", where="Conjecture 1, Sec. 5 (beyond)",
            statement=r"Derived: moving both poles of the bipolar state on $F^{\mathrm{abs}}$ along $F$ grows at rate "
                      r"$\rho - \tanh x$; max $|\text{measured} - \text{derived}|$ over the map's cells",
            quote=_QUOTE_B, basis="derived",
            test=f"the method's error, stated: RK4 (dt 0.01) and the O(eps) nonlinearity (eps = {cfg.eps:g}) leave below 1e-6 "
                 f"in the rate; tolerance {TOL_RATE:g}",
            verdict=ledger.answer(ledger.verdict(s["rate_err"], TOL_RATE)), measured=below(s["rate_err"], RATE_FLOOR), expected=0.0,
            tolerance=TOL_RATE),
        ledger.Claim(
            id="Q-B-terminal-map", paper="B", where="Conjecture 1, Sec. 5 (beyond)",
            statement=r"Derived: the terminal phase ends on $F$ where only the consensus on $F$ is stable, on $F^{\mathrm{abs}}$ "
                      r"where only its bipolar state is, on either where both are ($F^{\mathrm{abs}}$ needs "
                      r"$\langle v, Bv\rangle < 0$ and $\rho < \tanh x$): runs contradicting that",
            quote=_QUOTE_B, basis="derived",
            test="a counterexample check: a run that settles on a state the derivation calls unstable refutes it (generic "
                 "initial tokens do not converge to an unstable state); runs not settled on F or F^abs at t1 are counted apart "
                 "and decide nothing",
            verdict=ledger.answer(main), measured=s["contradictions"],
            expected=f"0 of the {s['settled']} settled runs (unsettled at t1: {s['undecided']} of {s['runs']})", tolerance=0,
            uncertainty=wilson(s["contradictions"], s["runs"], "runs"),
            why="" if s["contradictions"] == 0 else f"{s['contradictions']} runs settled on a state the derivation calls unstable"),
        ledger.Claim(
            id="Q-B-terminal-neither", paper="B", where="Conjecture 1, Sec. 5 (beyond)",
            statement=r"Our reading of the conjecture as 'every $(B, V)$ ends on $F$ or $F^{\mathrm{abs}}$' (the paper says "
                      r"'in certain cases' and the conjecture's hypotheses are lost): with no positive eigenvalue of $V$ and $B$ "
                      r"pushing the poles of $F^{\mathrm{abs}}$ apart ($x < 0$) neither candidate is stable, and the runs end on "
                      "neither: counterexamples to that reading; share of such runs",
            quote="we have numerical evidence suggesting convergence to the top eigenspace $F$ of $V$, that is, the eigenspace "
                  "associated with its largest eigenvalue, or to the dominant eigenspace $F^{\\mathrm{abs}}$ of $V$ associated "
                  "with an eigenvalue of largest magnitude for large times in certain cases",
            basis="reading",
            test="a counterexample check: in the cells where the derivation makes both candidates unstable, every run ends on "
                 "neither F nor F^abs (one run ending on either refutes the counterexample)",
            verdict=ledger.answer(neither), measured=s["frac_neither"], expected=1.0, tolerance=0,
            uncertainty=wilson(s["neither_ends"], nn, "runs") if nn else None,
            why="" if not nn or s["neither_ends"] == nn else f"{nn - s['neither_ends']} of {nn} runs ended on F or F^abs"),
    ]
