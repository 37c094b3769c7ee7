"""metastable-sphere: the growth of spherical-harmonic degrees on S^2 (A = V = I, SA) in the linear
phase against the Funk-Hecke rate formula."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import fits, ledger
from ...init import uniform_sphere
from ...integrate import simulate
from ...metrics.harmonics import harmonic_energy
from ...models import metastable as sphere_model
from ...registry import PaperScale, claims_for, experiment, summary_for
from ...theory.metastable import growth_rate, k_max
from ...perf import threads
from ._common import TOL_RATE, ensemble_generator, rel_errors

__all__ = ["SphereConfig", "sphere", "plot_sphere", "sphere_claims", "sphere_summary"]


@dataclasses.dataclass(frozen=True)
class SphereConfig:
    """Growth of spherical-harmonic degrees l <= ``lmax`` on S^2 (A = V = I).

    For each inverse temperature of ``betas`` (the i-th drawn with seed ``seed + i``), ``trials``
    ensembles of ``n`` uniform tokens; RK4 with 10 steps to ``frac`` t*, ``samples`` saved times; the
    ``normalization`` of the weights; ``threads``: torch threads (None: leave). None by default: the
    fused float64 field (d = 3) is 2x faster on two threads than on one, where torch's float64 field
    was slower on two (the other metastable experiments keep 1).

    Examples
    --------
    >>> SphereConfig().betas, SphereConfig().lmax
    ((1.0, 3.0, 5.0, 10.0), 6)
    """

    betas: tuple[float, ...] = (1.0, 3.0, 5.0, 10.0)
    n: int = 2000
    trials: int = 2
    lmax: int = 6
    frac: float = 0.35
    samples: int = 8
    normalization: str = "softmax"
    threads: int | None = None
    seed: int = 5


def plot_sphere(result: dict[str, Any], ax=None):
    """Measured growth rate of each degree l on S^2 (dots) against the formula (lines).

    Parameters
    ----------
    result : dict
        What :func:`sphere` returns.
    ax : matplotlib.axes.Axes, optional
        Where to draw; None opens a new figure.

    Returns
    -------
    ax : matplotlib.axes.Axes
        The axes drawn on.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> th = [growth_rate(np.arange(1, 4), 3.0, 3, "softmax")]
    >>> plot_sphere({"betas": np.array([3.0]), "rates": th, "theory": th, "normalization": "softmax"}).get_xlabel()
    'degree $l$'
    """
    import matplotlib.pyplot as plt

    from ...style import MIN_FONT

    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.8), layout="constrained")
    norm = "SA" if result["normalization"] == "softmax" else str(result["normalization"]).upper()
    for beta, r, th in zip(result["betas"], result["rates"], result["theory"]):
        l = np.arange(1, len(r) + 1)
        line, = ax.plot(l, th, "-", lw=1)
        ax.plot(l, r, "o", color=line.get_color(), ms=4, label=f"$\\beta = {beta:g}$")
    ax.set_xlabel("degree $l$", fontsize=MIN_FONT)
    ax.set_ylabel("growth rate", fontsize=MIN_FONT)
    ax.set_title(f"Rates on $S^2$, {norm}: $\\gamma_l$ (lines), measured (dots)", fontsize=MIN_FONT + 1)
    ax.legend(fontsize=MIN_FONT)
    ax.tick_params(labelsize=MIN_FONT)
    return ax


@experiment("metastable-sphere", chapter="metastable", plot=plot_sphere,
            profiles={"fast": SphereConfig(), "full": SphereConfig(n=10_000, trials=4)},
            paper=PaperScale(note="Paper D runs no sphere experiment (the rate formula is derived, NOTES D): n = 1e4 "
                                  "tokens (half the official N = 2e4), 4 ensembles per beta. The field is the fused kernel "
                                  "(O(trials n d) memory) and the energies come from the harmonic coefficients "
                                  "(addition theorem, O(trials n lmax^2), no pairs): no (n, n) array at all (one "
                                  "ensemble's Gram arrays took 5.0 GB before). Peak memory: bench/sphere_memory.py; "
                                  "time: the Status page."))
def sphere(cfg: SphereConfig, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Growth of spherical-harmonic degrees on S^2 (A = V = I) against the formula, a few beta.

    Returns
    -------
    dict with ``betas`` (B,), per beta ``rates`` and ``theory`` (lmax,), ``l_measured``, ``l_theory``,
    and ``max_rel_err`` (B,) over the degrees with gamma_l >= gamma_max / 2.

    Examples
    --------
    >>> r = sphere(n=200, betas=(3.0,), trials=1, lmax=3)
    >>> r["l_theory"], r["rates"][0].shape
    ([2], (3,))
    """
    out: dict[str, Any] = {"betas": np.array(cfg.betas), "n": cfg.n, "trials": cfg.trials, "normalization": cfg.normalization,
                           "rates": [], "theory": [], "l_measured": [], "l_theory": []}
    with threads(cfg.threads):
        for i, beta in enumerate(cfg.betas):
            theory = growth_rate(np.arange(1, cfg.lmax + 1), beta, 3, cfg.normalization)
            t_fit = cfg.frac * math.log(cfg.n) / (2 * theory.max())
            ts = np.linspace(0, t_fit, cfg.samples)
            X0 = uniform_sphere(cfg.trials, cfg.n, 3, generator=ensemble_generator(generator, cfg.seed, i)).to(device)
            sol = simulate(sphere_model(beta, cfg.normalization), X0, t_fit, method="rk4", dt=t_fit / 10, save_at=ts)
            E = torch.stack([harmonic_energy(x, cfg.lmax) for x in sol.xs]).mean(1).cpu().numpy()  # (T, lmax + 1)
            rates = np.array([fits.line_fit(ts, 0.5 * np.log(E[:, l]))["slope"] for l in range(1, cfg.lmax + 1)])
            out["rates"].append(rates)
            out["theory"].append(theory)
            out["l_measured"].append(int(np.argmax(rates)) + 1)
            out["l_theory"].append(k_max(beta, 3))
    out["max_rel_err"] = rel_errors(out["rates"], out["theory"])
    return out


@summary_for("metastable-sphere")
def sphere_summary(result: dict[str, Any]) -> dict[str, Any]:
    """Every number the chapter and the row read: the worst relative rate error over the fast degrees,
    and the fastest degree per beta against the formula's.

    Examples
    --------
    >>> th = [np.array([1.0, 2.0, 1.5])]
    >>> s = sphere_summary({"rates": th, "theory": th, "betas": [5.0], "l_measured": [2], "l_theory": [2], "n": 10, "trials": 1})
    >>> s["rate_error"], s["lmax_matches"], s["lmax_word"]
    (0.0, 1, 'every')
    """
    err = rel_errors([np.asarray(r, dtype=np.float64) for r in result["rates"]],
                     [np.asarray(t, dtype=np.float64) for t in result["theory"]])
    lm, lt = [int(x) for x in result.get("l_measured", [])], [int(x) for x in result.get("l_theory", [])]
    matches = int(np.sum(np.asarray(lm) == np.asarray(lt))) if lm else 0
    return {"rate_error": float(np.max(err)), "rate_errors": err.tolist(), "lmax_matches": matches,
            "n_betas": len(lt), "n": int(result.get("n", 0)), "trials": int(result.get("trials", 0)),
            # the chapter's sentence "the fastest degree is the predicted one for every beta" reads this word
            "lmax_word": "every" if lt and matches == len(lt) else f"{matches} of {len(lt)} values of"}


QUOTE = ("In dimension d, degree-l spherical harmonics grow at l (l + d - 2)/beta * Gamma(d/2) "
         "(2/beta)^{d/2 - 1} I_{l + d/2 - 1}(beta).")


@claims_for("metastable-sphere")
def sphere_claims(result: dict[str, Any], cfg: SphereConfig) -> list[ledger.Claim]:
    """The growth rates of the degrees on S^2, from NOTES D's linearisation in d dimensions, labelled
    [derived] there: basis ``derived``. Worst relative error within
    :data:`~companion.experiments.metastable.TOL_RATE`, the method's error (as for the circle).

    Examples
    --------
    >>> th = [np.array([1.0, 2.0, 1.5])]
    >>> def status(rates):
    ...     return sphere_claims({"rates": [np.array(rates)], "theory": th}, SphereConfig())[0].status
    >>> status([1.0, 2.1, 1.45]), status([1.0, 2.1, 1.0])  # 5 % off; a degree 33 % off
    ('reproduced', 'not-reproduced')
    """
    err = sphere_summary(result)["rate_error"]
    return [ledger.Claim(
        id="D-sphere-rates", paper="D", where="linearisation in d dimensions (NOTES D)",
        statement=r"On $S^2$ degree-$l$ harmonics grow at $\frac{l(l+1)}{\beta}\Gamma(\tfrac32)(\tfrac2\beta)^{1/2} "
                  r"I_{l+1/2}(\beta)$ (SA: divided by the $l = 0$ value)",
        quote=QUOTE, source=ledger.NOTES, basis="derived",
        test=f"worst relative error of the measured rates (degrees with gamma_l >= gamma_max/2) within {TOL_RATE:g}, "
             "the method's error (neglected O(N^-1/2) quadratic terms and the slope fit's scatter)",
        verdict=ledger.verdict(err, TOL_RATE), measured=err, expected="relative error 0", tolerance=TOL_RATE)]
