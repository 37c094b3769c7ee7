"""stability-remark34: paper A, Remark 3.4 (the squared drift of rank-r updates whose orthogonal
block commutes with Lambda, eq. (17)), in the setting of Prop. 3.3."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import torch

from ... import init, ledger
from ...integrate import simulate
from ...models import Sphere
from ...registry import PaperScale, claims_for, experiment, summary_for
from ...report import fmt
from ...theory import lora
from ._shared import CHAPTER, FULL33, NOTE33, base_matrix
from .prop33 import Prop33Config

__all__ = ["Remark34Config", "remark34", "remark34_claims", "remark34_summary", "plot_remark34_ranks"]



@dataclasses.dataclass(frozen=True)
class Remark34Config(Prop33Config):
    """The setting of :class:`~companion.experiments.stability.prop33.Prop33Config` with rank-r
    updates ``dV = sigma sum_{k<=r} w_k w_k^T``, ``w_k = cos_phi u1 + sqrt(1 - cos_phi^2) u_{k+1}``,
    one run per entry of ``ranks`` (each in [1, d - 1]).

    Examples
    --------
    >>> Remark34Config().ranks, Remark34Config(**FULL33, ranks=(1, 2, 4, 8)).d
    ((1, 2, 3, 5), 12)
    """

    ranks: tuple[int, ...] = (1, 2, 3, 5)
    sigma: float = 0.3
    cos_phi: float = 0.05

    def __post_init__(self) -> None:
        super().__post_init__()
        bad = [r for r in self.ranks if not 1 <= r <= self.d - 1]
        if bad or not self.ranks:
            raise ValueError(f"ranks must lie in [1, d - 1] = [1, {self.d - 1}], got {self.ranks!r}")
        if not 0 <= self.cos_phi < 1:
            raise ValueError(f"cos_phi must lie in [0, 1), got {self.cos_phi}")


def plot_remark34_ranks(result: dict[str, Any], ax=None):
    """Measured squared cluster displacement against rank, with eq. (17) printed and with a.

    Parameters
    ----------
    result : dict
        What :func:`remark34` returns.
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
    >>> ax = plot_remark34_ranks(remark34(ranks=(1,), n=4, t1=40.0, dt=0.2))
    >>> len(ax.get_lines()), ax.get_xlabel()
    (3, 'rank $r$ of the update')
    """
    import matplotlib.pyplot as plt

    from ...style import COLORS

    if ax is None:
        _, ax = plt.subplots(figsize=(5.2, 3.6), layout="constrained")
    r = result["ranks"]
    ax.plot(r, result["measured"], "o", ms=8, color=COLORS["measured"], label="measured at $T$")
    ax.plot(r, result["pred_printed"], "s--", color=COLORS["theory"], label="eq. (17) as printed")
    ax.plot(r, result["pred_with_a"], "^:", color=COLORS["reference"], label=r"eq. (17) with $\lambda_1 + a$")
    ax.set_xlabel("rank $r$ of the update", fontsize=10)
    ax.set_ylabel(r"$\frac{1}{n}\sum_i |x_i - \tilde x_i|^2$", fontsize=10)
    ax.set_title("Squared drift against the rank", fontsize=10)
    ax.legend(fontsize=10)
    ax.tick_params(labelsize=10)
    return ax


@experiment("stability-remark34", chapter=CHAPTER, plot=plot_remark34_ranks,
            profiles={"fast": Remark34Config(), "full": Remark34Config(**FULL33, ranks=(1, 2, 4, 8))},
            paper=PaperScale({"dt": 0.1}, note=NOTE33 + " Ranks 1, 2, 4, 8, sigma = 0.3, cos phi = 0.05."))
def remark34(cfg: Remark34Config, generator: torch.Generator, device: Any) -> dict[str, Any]:
    """Remark 3.4: rank-r updates ``dV = sigma sum_{k<=r} w_k w_k^T``, ``w_k = c u1 + sqrt(1-c^2) u_{k+1}``,
    whose orthogonal block commutes with Lambda; measured ``(1/n) sum_i |x_i(T) - x~_i(T)|^2``
    against eq. (17) as printed and with the top-eigenvalue shift ``a`` restored.

    Profiles: ``fast`` d = 6, ranks 1, 2, 3, 5; ``full`` d = 12, ranks 1, 2, 4, 8 (see
    :class:`Remark34Config`).

    Returns
    -------
    dict
        With ``ranks (K,)``, ``measured``, ``pred_printed``, ``pred_with_a``, ``eig_sq`` (exact
        |u1 - u1~|^2), ``rel_err_printed``, ``rel_err_with_a``, ``a``, ``conv_err`` (all (K,)),
        ``sigma`` and ``cos_phi``.

    Examples
    --------
    >>> r = remark34(ranks=(1,), n=4, t1=40.0, dt=0.2)
    >>> bool(r["rel_err_printed"][0] < 0.2)
    True
    """
    V, Q = base_matrix(cfg, generator)
    u1 = Q[:, 0]
    x0 = init.cone(1, cfg.n, cfg.d, cfg.gamma, axis=u1, generator=generator)[0]
    c, sn = float(cfg.cos_phi), math.sqrt(1 - float(cfg.cos_phi) ** 2)
    dVs = []
    for r in cfg.ranks:
        Wk = c * u1[:, None] + sn * Q[:, 1 : r + 1]  # (d, r)
        dVs.append(cfg.sigma * Wk @ Wk.T)
    K = len(cfg.ranks)
    dev = torch.device(device)
    X0 = x0.expand(K, *x0.shape).contiguous().to(dev)
    Vs = V.expand(K, -1, -1).contiguous()
    Vt = Vs + torch.stack(dVs)
    xb = simulate(Sphere(A=Vs.to(dev), V=Vs.to(dev)), X0, cfg.t1, method="rk4", dt=cfg.dt).final.cpu()
    xp = simulate(Sphere(A=Vt.to(dev), V=Vt.to(dev)), X0, cfg.t1, method="rk4", dt=cfg.dt).final.cpu()
    measured = ((xb - xp) ** 2).sum(-1).mean(-1).cpu().numpy()
    pp, pa, eig_sq, a_s, conv = [], [], [], [], []
    for k in range(K):
        lam, alpha, e = lora.commuting_coefficients(V, dVs[k])
        sp = lora.spectral_perturbation(V, dVs[k], reference=u1)
        pp.append(lora.remark34_prediction(lam, alpha, e))
        pa.append(lora.remark34_prediction(lam, alpha, e, a=sp.a))
        eig_sq.append(sp.drift**2)
        a_s.append(sp.a)
        conv.append(float((xp[k] - sp.u1_tilde).norm(dim=-1).max()))
    pp, pa = np.asarray(pp), np.asarray(pa)
    return {
        "ranks": np.asarray(cfg.ranks),
        "sigma": cfg.sigma,
        "cos_phi": cfg.cos_phi,
        "measured": measured,
        "pred_printed": pp,
        "pred_with_a": pa,
        "eig_sq": np.asarray(eig_sq),
        "a": np.asarray(a_s),
        "conv_err": np.asarray(conv),
        "rel_err_printed": np.abs(pp - measured) / measured,
        "rel_err_with_a": np.abs(pa - measured) / measured,
    }


QUOTE_17 = (r"Assume that $E$ and $\Lambda$ commutes, then for large $t$ we have \|X(t)-\widetilde{X}(t)\|^{2}\simeq"
            r"\sum_{j\colon e_{j}\neq 0}\left(\frac{\alpha_{j}}{\lambda_{1}-\lambda_{j}-e_{j}(r)}\right)^{2}, (17)")


@summary_for("stability-remark34")
def remark34_summary(result: dict[str, Any]) -> dict[str, Any]:
    """Every number the chapter and the claims read from a :func:`remark34` result: the largest relative
    errors of (17) as printed and with ``lambda_1 + a``, the drift theta per rank (the square root of
    the measured squared drift), the largest relative error over theta, the growth of the drift with
    the rank and whether it rises at every step.

    Examples
    --------
    >>> s = remark34_summary({"ranks": np.array([1, 2]), "measured": np.array([0.01, 0.04]), "sigma": 0.3, "cos_phi": 0.05,
    ...                       "rel_err_printed": np.array([0.02, 0.05]), "rel_err_with_a": np.array([0.01, 0.02])})
    >>> s["err_printed"], s["theta"], s["err_over_theta"], s["growth"], s["rises"]
    (0.05, [0.1, 0.2], 0.25, 4.0, 'rises')
    """
    measured = np.asarray(result["measured"], dtype=float)
    err = np.asarray(result["rel_err_printed"], dtype=float)
    theta = np.sqrt(measured)
    cfg = result.get("config", {})
    ranks = [int(r) for r in np.asarray(result["ranks"])]
    return {
        "setup": (f"sigma = {fmt(result['sigma'])}, c = {fmt(result['cos_phi'])}, ranks {', '.join(str(r) for r in ranks)}; "
                  f"d = {cfg.get('d')}, n = {cfg.get('n')} tokens, T = {fmt(cfg.get('t1', math.nan))}") if cfg else "",
        "err_printed": float(err.max()), "err_with_a": float(np.max(result["rel_err_with_a"])),
        "theta": [float(x) for x in theta], "err_over_theta": float(np.max(err / theta)),
        "growth": float(measured[-1] / measured[0]),
        "rises": "rises" if bool(np.all(np.diff(measured) > 0)) else "does not rise",
        "err_rises": "grows" if bool(np.all(np.diff(err) > 0)) else "does not grow at every step",
    }


@claims_for("stability-remark34")
def remark34_claims(result: dict[str, Any], cfg: Remark34Config) -> list[ledger.Claim]:
    """Remark 3.4: eq. (17) as printed against the measured squared drift. "simeq" states no accuracy;
    read as leading order in the drift theta = |u1 - u1~|, its relative error must be of the order of
    theta: the row takes the largest ratio relative error / theta over the ranks, against 1.

    Examples
    --------
    >>> ok = {"ranks": np.array([1, 2]), "measured": np.array([0.01, 0.04]), "rel_err_printed": np.array([0.02, 0.05]),
    ...       "rel_err_with_a": np.array([0.01, 0.02]), "sigma": 0.3, "cos_phi": 0.05}
    >>> [c.status for c in remark34_claims(ok, Remark34Config())]
    ['reproduced']
    >>> [c.status for c in remark34_claims(dict(ok, rel_err_printed=np.array([0.02, 0.5])), Remark34Config())]
    ['not-reproduced']
    """
    s = remark34_summary(result)
    return [ledger.Claim(
        id="A-remark3.4", paper="A", where="Remark 3.4, eq. (17)", quote=QUOTE_17, basis="reading",
        test=("'\\simeq' gives no accuracy; a leading-order formula in the drift theta = |u1 - u1~| errs by a relative "
              "O(theta): the row takes the largest (relative error of (17) as printed) / theta over the ranks, against 1 "
              "(our reading of the order, with constant 1; the relative errors themselves are printed)"),
        statement=r"With $E$ and $\Lambda$ commuting, $\|X - \tilde X\|^2$ per token "
                  r"$\simeq \sum_j \alpha_j^2/(\lambda_1 - \lambda_j - e_j)^2$, read as leading order in the drift "
                  r"$\theta$ (the remark gives no accuracy; our reading: relative error at most $\theta$) (measured: the largest relative error over "
                  rf"ranks, {s['err_printed']:.2g}; {s['err_with_a']:.2g} with $\lambda_1 + a$; the drift {s['rises']} "
                  "with the rank, as the remark says higher-rank updates can forget more)",
        verdict=ledger.verdict(s["err_over_theta"], 1.0), measured=s["err_printed"],
        expected="relative error <= theta (the drift) at every rank", tolerance=1.0,
        uncertainty=f"largest relative error / theta {s['err_over_theta']:.2g}")]
