"""What several of the low-temperature experiments share: the Figure 3 matrices, the batched run
over inverse temperatures, the observables read from it, and the rate thresholds of Theorem 1 and
Lemma 5."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch

from ... import fits, init, models
from ...integrate import simulate
from ...registry import get
from ...theory import low_temperature as lt

__all__ = ["FIG3_B", "FIG3_V", "RATE_SLOPE", "TOL_RATE_SLOPE", "RATE_R2", "UNIFORM_LINE", "simulate_betas"]

F64 = torch.float64

# Figure 3 of the paper: V B^T = diag(1, -1, -2), E = span(e1), F = span(e2) (top of V).
FIG3_V = init.diagonal((-1.0, 1.0, -2.0))
FIG3_B = init.diagonal((-1.0, -1.0, 1.0))

# Thm. 1's rate (and Lemma 5's): the log-log slope of the distance against sqrt(log(beta+1)/beta) must
# be >= 1 ("at least as fast"), within TOL_RATE_SLOPE for the fit over four betas; the fit must be a line.
RATE_SLOPE = 1.0
TOL_RATE_SLOPE = 0.1  # printed beside the slope, no longer deciding (the paper gives the exponent, not a tolerance)
RATE_R2 = 0.9  # printed beside the slope, no longer deciding
# Mean |P x|^2 of the uniform law on S^2 for a line (one axis): 1/3. "The tokens concentrate on / align
# with a line" is tested as an effect against this value, the law with no concentration at all.
UNIFORM_LINE = 1.0 / 3.0


def simulate_betas(B, V, betas: Sequence[float], x0: torch.Tensor, t1: float, *, dt: float = 0.01, save_at=None, method: str = "euler"):
    r"""Paper B eq. (1) for several inverse temperatures in one batched run.

    ``beta <x_i, B x_j>`` is ``<(beta B^T) x_i, x_j>``, so trial ``(k, s)`` runs
    :class:`companion.models.Sphere` with ``A = beta_k B^T`` and the model's own beta 1:

    .. math::

        \dot x_i = \mathbf P_{x_i} \sum_j \frac{e^{\beta_k\langle x_i, B x_j\rangle}}{\sum_l e^{\beta_k\langle x_i, B x_l\rangle}}\, V x_j .

    Parameters
    ----------
    B, V : (d, d); betas : K inverse temperatures (finite, > 0); x0 : (S, n, d) initial tokens
        (S trials); t1, dt, save_at, method : as for :func:`companion.integrate.simulate`.

    Returns
    -------
    (ts, xs) with ``ts : (T,)`` and ``xs : (T, K, S, n, d)``.

    Examples
    --------
    >>> x0 = init.uniform_sphere(2, 5, 3, generator=torch.Generator().manual_seed(0))
    >>> ts, xs = simulate_betas(FIG3_B, FIG3_V, [1.0, 10.0], x0, 0.1)
    >>> tuple(xs.shape)
    (2, 2, 2, 5, 3)
    """
    betas = [float(b) for b in betas]
    if not betas or any(not (math.isfinite(b) and b > 0) for b in betas):
        raise ValueError(f"betas must be finite positive numbers, got {betas}")
    x0 = torch.as_tensor(x0)
    S = x0.shape[0]
    Bt = torch.as_tensor(B).to(x0).T
    A = torch.stack([b * Bt for b in betas for _ in range(S)])
    X0 = x0.repeat(len(betas), 1, 1)
    sol = simulate(models.Sphere(A=A, V=torch.as_tensor(V).to(x0), beta=1.0), X0, t1, method=method, dt=dt, save_at=save_at)
    return sol.ts, sol.xs.reshape(len(sol.ts), len(betas), S, *x0.shape[1:])


def w_to_pi(xs: torch.Tensor, x0: torch.Tensor, v: torch.Tensor, p: int = 2) -> torch.Tensor:
    """W_p(mu_t, Pi_# mu_0) (chordal) for every saved state, E = span(v). xs: (T, S, n, d) -> (T, S).

    Exact, by :func:`companion.theory.low_temperature.wasserstein_to_pi` (tested against POT)."""
    return torch.stack([lt.wasserstein_to_pi(x, x0, v, p) for x in xs])


def exit_time(ts, w, level: float) -> float:
    """End of the metastable phase: the first time after the minimum of ``w`` at which ``w`` reaches
    ``level`` (interpolated between saved times); nan if it never does."""
    ts, w = (torch.as_tensor(a, dtype=torch.float64).cpu().numpy() for a in (ts, w))
    return fits.first_crossing(ts, w, level, start=ts[int(np.argmin(w))])


def alignment(xs: torch.Tensor, basis: torch.Tensor) -> torch.Tensor:
    """Mean over tokens of |P x|^2 for the subspace spanned by ``basis``. xs: (..., n, d) -> (...)."""
    return ((xs @ basis) ** 2).sum(-1).mean(-1)


def save_grid(t1: float, every: float) -> torch.Tensor:
    """Saved times 0, every, 2 every, ..., t1."""
    return torch.linspace(0, t1, int(round(t1 / every)) + 1)


def config_of(result) -> Any:
    """The config a result was computed with, as today's config dataclass (a stored result's former
    field names, the registry's ``renamed``, read as today's): what a plot reads its parameters from."""
    return get(str(result["experiment"])).config_of(result)


def seeds_test(test, *samples, **kw) -> Any:
    """``test(*samples, **kw)`` (a test over seeds from :mod:`companion.inference`), or None when the
    first argument, the per-seed values, holds fewer than two seeds: no test over seeds can be made.

    Examples
    --------
    >>> from ... import inference
    >>> seeds_test(inference.mean_effect, [0.9], UNIFORM_LINE) is None
    True
    """
    if np.asarray(samples[0], dtype=float).size < 2:
        return None
    return test(*samples, **kw)


def effect(o) -> Any:
    """The ledger verdict of an effect the paper states, from a :class:`companion.inference.Outcome`:
    :func:`companion.ledger.significant` with its ``p``, ``against`` and ``needed``; inconclusive,
    needing a second seed, where no test could be made (``o`` None: one seed).

    Examples
    --------
    >>> effect(None).status, effect(None).needed
    ('inconclusive', 2)
    >>> from ... import inference
    >>> effect(inference.mean_effect([0.9, 0.95, 0.99, 0.97], UNIFORM_LINE)).status
    'reproduced'
    >>> effect(inference.mean_effect([0.3, 0.35, 0.31, 0.34], UNIFORM_LINE)).status   # no concentration
    'inconclusive'
    """
    from ... import ledger

    if o is None:
        return ledger.Verdict("inconclusive", needed=2, why="needed: at least 2 seeds for a test over seeds")
    p = 1.0 if not math.isfinite(o.p) else o.p  # a test with no variation to rank (a constant series): no evidence
    against = None if o.against is None else (1.0 if not math.isfinite(o.against) else o.against)
    return ledger.significant(p, against=against, needed=o.needed)


def p_value(o) -> str:
    """A test's one-sided p in words (``o`` None: one seed, no test).

    Examples
    --------
    >>> p_value(None)
    'n/a (one seed)'
    """
    return "n/a (one seed)" if o is None else f"{o.p:.2g}"


def p_text(o) -> str:
    """A test's outcome in words for a row's ``uncertainty``: its effect, standard error, p and n.

    Examples
    --------
    >>> from ... import inference
    >>> p_text(inference.mean_effect([1.0, 1.2, 0.8, 1.1]))
    'effect 1.025 +- 0.085, one-sided p = 0.00062, n = 4'
    """
    if o is None:
        return "one seed: no test over seeds"
    return f"effect {o.effect:.4g} +- {o.se:.2g}, one-sided p = {o.p:.2g}, n = {o.n}"
