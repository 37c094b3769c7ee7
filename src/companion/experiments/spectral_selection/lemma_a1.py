"""Lemma A.1: the linearisation at a pure-mode equilibrium, entry by entry in V's eigenbasis, against eq. (A.3)."""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from ... import init, ledger, models
from ...models.modal import pure_mode_jacobian
from ...registry import PaperScale, claims_for, experiment, summary_for
from ...report import below
from ...theory import spectral as th

__all__ = ["LemmaA1Config", "lemma_a1", "lemma_a1_summary", "lemma_a1_claims", "TOL_FD"]

# Lemma A.1: central differences at h = 1e-6 err by about h^2 |F'''| + eps |F| / h, below 1e-9 for these V and beta;
# 1e-7 leaves a factor 100, while a coupling or a misstated entry is O(lambda) = O(1).
TOL_FD = 1e-7


@dataclasses.dataclass(frozen=True)
class LemmaA1Config:
    """Lemma A.1: ``trials`` random pure-mode equilibria ``x_i* = s_i e_p`` drawn from ``seed``: d in
    {2, ..., 5}, eigenvalues uniform in [-2, 2] in a random eigenbasis, beta log-uniform in [0.2, 3],
    p, n in {1, ..., 6} tokens with i.i.d. random signs (in any order); central differences with step
    ``h``. ``qk_offset``: the attention matrix is ``Q^T K = V + qk_offset S`` (S a random symmetric
    matrix of unit spectral norm); 0 is the paper's model. With another value the pure states are still
    equilibria and the modes still decouple, but the weights become softmax(beta s_i s_j <e_p, Q^T K e_p>),
    not (A.3)'s: a model on which the check must fail.

    Examples
    --------
    >>> LemmaA1Config().trials, LemmaA1Config().qk_offset
    (80, 0.0)
    """

    trials: int = 80
    h: float = 1e-6
    qk_offset: float = 0.0
    seed: int = 3


def _case(V: torch.Tensor, A: torch.Tensor, beta: float, p: int, signs: torch.Tensor, h: float) -> dict[str, Any]:
    """One pure-mode state: its finite-difference Jacobian in eigen-coordinates against eq. (A.3)."""
    lam, E = torch.linalg.eigh(V)
    n, d = len(signs), len(lam)
    model = models.Sphere(A=A, V=V, beta=beta)
    J = pure_mode_jacobian(model, E, p, signs, mode="fd", h=h)  # (d - 1, d - 1, n, n): blocks (k, k')
    Jad = pure_mode_jacobian(model, E, p, signs)
    L = th.pure_mode_linearisation(lam, p, beta, signs)  # (d - 1, n, n)
    same = torch.eye(d - 1, dtype=torch.bool)
    cross = J[~same]  # blocks (k, k'), k != k'
    diag = J[same]  # (d - 1, n, n)
    grouped = bool((signs[:-1] >= signs[1:]).all() or (signs[:-1] <= signs[1:]).all())
    return dict(d=d, n=n, p=p, beta=beta, n_plus=int((signs > 0).sum()), interleaved=not grouped,
                coupling=float(cross.abs().max()) if cross.numel() else 0.0,
                block_error=float((diag - L).abs().max()), scale=float(L.abs().max()),
                fd_vs_autograd=float((J - Jad).abs().max()))


@experiment("spectral-lemma-a1", chapter="spectral_selection",
            profiles={"fast": LemmaA1Config(), "full": LemmaA1Config(trials=2000)}, renamed={"count": "trials"},
            paper=PaperScale(note="Lemma A.1 holds for every V, beta and sign pattern and the paper tests no case; "
                                  "the full profile draws 2000 random ones, the fast 80"))
def lemma_a1(cfg: LemmaA1Config, generator: torch.Generator, device: str) -> dict[str, Any]:
    """Lemma A.1: finite-difference Jacobians at random pure-mode equilibria, in the eigenbasis of V,
    against the mode-by-mode operators of eq. (A.3).

    ``device`` is accepted but not used: Jacobians of at most 6 tokens in d <= 5 (size <= 24) are
    linear algebra the CPU does faster.

    Returns
    -------
    dict with ``rows`` (one dict per case: ``coupling``, the largest entry between different modes
    k != k'; ``block_error``, the largest deviation of a diagonal block from L_k; ``scale``, the
    largest entry of L_k; ``fd_vs_autograd``, the finite-difference Jacobian against autograd), and
    their maxima ``max_coupling``, ``max_block_error``, ``max_scale``, ``max_fd_vs_autograd``; ``count``,
    ``interleaved`` (cases whose signs are not grouped), ``sign_split`` (cases with both signs).

    Examples
    --------
    >>> r = lemma_a1(trials=4)
    >>> r["count"], r["max_coupling"] < 1e-7, r["max_block_error"] < 1e-7
    (4, True, True)
    >>> lemma_a1(trials=4, qk_offset=0.2)["max_block_error"] > 1e-3  # Q^T K != V: other weights
    True
    """
    g = generator
    rows = []
    for _ in range(cfg.trials):
        d = int(torch.randint(2, 6, (1,), generator=g))
        lam = 4 * torch.rand(d, generator=g, dtype=torch.float64) - 2
        Q = init.random_orthogonal(d, generator=g)
        V = (Q * lam) @ Q.T
        V = (V + V.T) / 2
        S = init.random_orthogonal(d, generator=g)
        S = (S * (2 * torch.rand(d, generator=g, dtype=torch.float64) - 1)) @ S.T
        S = (S + S.T) / 2
        S = S / torch.linalg.matrix_norm(S, ord=2)
        beta = float(math.exp(math.log(0.2) + (math.log(3.0) - math.log(0.2)) * torch.rand(1, generator=g).item()))
        p = int(torch.randint(0, d, (1,), generator=g))
        n = int(torch.randint(1, 7, (1,), generator=g))
        signs = torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).to(torch.float64)
        rows.append(_case(V, V + cfg.qk_offset * S, beta, p, signs, cfg.h))
    return dict(rows=rows, count=len(rows), interleaved=sum(r["interleaved"] for r in rows),
                sign_split=sum(0 < r["n_plus"] < r["n"] for r in rows),
                max_coupling=max(r["coupling"] for r in rows), max_block_error=max(r["block_error"] for r in rows),
                max_scale=max(r["scale"] for r in rows), max_fd_vs_autograd=max(r["fd_vs_autograd"] for r in rows))


@summary_for("spectral-lemma-a1")
def lemma_a1_summary(result: dict[str, Any]) -> dict[str, Any]:
    """What the chapter and the claims read: the case counts, the largest coupling between modes, the
    largest error of the diagonal blocks against eq. (A.3), the finite-difference Jacobian's distance
    to autograd (its numerical error) and the largest scale of the blocks.

    Examples
    --------
    >>> s = lemma_a1_summary({"count": 10, "interleaved": 4, "max_coupling": 3e-11, "max_block_error": 2e-10,
    ...                       "max_fd_vs_autograd": 1e-10, "max_scale": 3.0})
    >>> s["count"], s["max_block_error"]
    (10, 2e-10)
    """
    out = {k: float(result[k]) for k in ("max_coupling", "max_block_error", "max_fd_vs_autograd")}
    out.update(count=int(result["count"]), interleaved=int(result.get("interleaved", 0)),
               max_scale=float(result.get("max_scale", float("nan"))))
    return out


@claims_for("spectral-lemma-a1")
def lemma_a1_claims(result: dict[str, Any], cfg: LemmaA1Config) -> list[ledger.Claim]:
    """Lemma A.1: in the eigenbasis of V the finite-difference Jacobian has no entry between different
    modes and its diagonal blocks equal eq. (A.3), both within :data:`TOL_FD` (the error of central
    differences, measured against autograd); the verdict is the worse of the two.

    Examples
    --------
    >>> r = {"count": 10, "max_coupling": 3e-11, "max_block_error": 2e-10, "max_fd_vs_autograd": 1e-10}
    >>> [c.status for c in lemma_a1_claims(r, LemmaA1Config())]
    ['reproduced']
    >>> [c.status for c in lemma_a1_claims(dict(r, max_coupling=0.02), LemmaA1Config())]  # modes coupled
    ['not-reproduced']
    """
    s = lemma_a1_summary(result)
    coupling, block = s["max_coupling"], s["max_block_error"]
    return [ledger.Claim(
        id="C-lemA.1-modewise", paper="C", where="Lemma A.1, eq. (A.3)",
        statement="At a pure-mode equilibrium $x_i^* = s_i e_p$ the linearisation decouples over $e_k$, $k \\ne p$ (eq. A.3)",
        quote="By Lemma A.1, the linearization around the sign-split equilibrium (5.3) decouples mode by mode over the "
              "transverse eigendirections $e_{k}$, $k\\neq p$.",
        basis="paper",
        test=f"finite-difference Jacobian in the eigenbasis of V at {s['count']} random pure states: coupling between modes "
             f"and distance of the diagonal blocks to eq. (A.3) <= {TOL_FD:g}, the error of central differences "
             "(measured against autograd)",
        verdict=ledger.worst(ledger.verdict(coupling, TOL_FD), ledger.verdict(block, TOL_FD)),
        measured=[below(coupling, 1e-9), below(block, 1e-9)],
        expected=["coupling between modes <= 1e-7", "block error <= 1e-7"], tolerance=TOL_FD,
        uncertainty=f"finite differences vs autograd: {below(s['max_fd_vs_autograd'], 1e-9)} ({s['count']} cases)")]
