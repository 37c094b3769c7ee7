r"""Hypothesis tests for the ledger's declared tests, one helper per test, all from :mod:`scipy.stats`.

Each helper returns a :class:`Outcome`: the p-value of the paper's direction (``p``), the p-value of the
opposite direction where the statement has one (``against``), the estimated effect and its standard
error, the sample size, and ``needed``, the sample size at which a one-sided test at the ledger's
level :data:`companion.ledger.ALPHA` would have 80 % power against the observed effect:

.. math::

    n_\text{needed} = \Big\lceil n \Big(\frac{z_{1-\alpha} + z_{0.8}}{z}\Big)^2 \Big\rceil,
    \qquad z = \text{effect} / \text{se}.

Feed ``p``, ``against`` and ``needed`` to :func:`companion.ledger.significant` (an effect the paper
states) or ``p`` to :func:`companion.ledger.consistent` (a null the paper states).

Where trials share initial states, batches or seeds, test their paired differences
(:func:`paired`); pool seeds with :func:`pooled` rather than taking a worst case.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np
from scipy import stats

__all__ = ["Outcome", "mean_effect", "paired", "proportion", "trend", "equal_means", "homogeneity", "estimate", "matches",
           "correlation", "mcnemar", "pooled", "trials_needed"]

POWER = 0.8


@dataclasses.dataclass(frozen=True)
class Outcome:
    """The outcome of one test: ``p`` for the paper's direction, ``against`` for the opposite one
    (None for a two-sided or undirected test), ``effect`` and ``se`` (its standard error, nan where
    the test has none), the sample size ``n`` and the ``needed`` sample size for 80 % power.

    Examples
    --------
    >>> Outcome(p=0.01, against=0.99, effect=1.0, se=0.4, n=10, needed=None).p
    0.01
    """

    p: float
    against: float | None
    effect: float
    se: float
    n: int
    needed: int | None


def trials_needed(n: int, z: float, alpha: float | None = None, power: float = POWER) -> int | None:
    """Sample size at which a one-sided z test at ``alpha`` has ``power`` against an effect now seen
    at ``z`` standard errors with ``n`` samples (the standard error falling like n^-1/2); None when
    ``z`` is 0 or not finite (no effect to aim at).

    Examples
    --------
    >>> trials_needed(10, 1.0)       # (1.645 + 0.842)^2 = 6.18 times as many
    62
    >>> trials_needed(10, 0.0) is None
    True
    """
    from .ledger import ALPHA

    alpha = ALPHA if alpha is None else alpha
    if not (math.isfinite(z) and z != 0):
        return None
    k = (stats.norm.ppf(1 - alpha) + stats.norm.ppf(power)) / abs(z)
    return int(math.ceil(n * k * k))


def _alternative(alternative: str) -> str:
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be 'greater' or 'less' (the paper's direction), got {alternative!r}")
    return alternative


def _opposite(alternative: str) -> str:
    return "less" if alternative == "greater" else "greater"


def _finite(x: Any, name: str, least: int = 2) -> np.ndarray:
    a = np.asarray(x, dtype=float).ravel()
    if a.size < least or not np.isfinite(a).all():
        raise ValueError(f"{name} needs at least {least} finite values, got {a.size} ({int((~np.isfinite(a)).sum())} not finite)")
    return a


def mean_effect(x: Sequence[float], value: float = 0.0, alternative: str = "greater") -> Outcome:
    """One-sample Student t test that the mean of ``x`` (n,) lies above (``"greater"``) or below
    ``value``: :func:`scipy.stats.ttest_1samp`.

    Examples
    --------
    >>> t = mean_effect([0.9, 1.1, 1.0, 1.2, 0.8])
    >>> t.p < 1e-3, round(t.effect, 2), t.against > 0.99
    (True, 1.0, True)
    >>> mean_effect([0.1, -0.2, 0.05, -0.1]).p > 0.05        # no effect: the test cannot pass
    True
    """
    alternative = _alternative(alternative)
    a = _finite(x, "x")
    effect, se = float(a.mean() - value), float(a.std(ddof=1) / math.sqrt(a.size))
    if se == 0.0:  # no spread: the sign decides exactly
        p = 0.0 if (effect > 0) == (alternative == "greater") and effect != 0 else 1.0
        return Outcome(p, 1.0 - p if effect != 0 else 1.0, effect, se, a.size, None)
    p = float(stats.ttest_1samp(a, value, alternative=alternative).pvalue)
    q = float(stats.ttest_1samp(a, value, alternative=_opposite(alternative)).pvalue)
    z = effect / se if alternative == "greater" else -effect / se
    return Outcome(p, q, effect, se, a.size, trials_needed(a.size, z) if z > 0 else None)


def paired(a: Sequence[float], b: Sequence[float], alternative: str = "greater") -> Outcome:
    """Paired t test that ``a`` exceeds (``"greater"``) or falls below ``b``, trial by trial (a, b: (n,),
    trials sharing initial states, batches or seeds): :func:`mean_effect` of the differences.

    Examples
    --------
    >>> base = [0.50, 0.61, 0.42, 0.55, 0.47, 0.58]
    >>> t = paired([v + 0.02 for v in base], base)        # a small shift, far below the spread of base
    >>> t.p < 1e-6
    True
    """
    x, y = _finite(a, "a"), _finite(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"paired: a and b must pair trial by trial, got {x.size} and {y.size} values")
    return mean_effect(x - y, 0.0, alternative)


def proportion(k: int, n: int, p0: float, alternative: str = "greater") -> Outcome:
    """Exact binomial test that the success probability behind ``k`` of ``n`` lies above (or below)
    ``p0``: :func:`scipy.stats.binomtest`.

    Examples
    --------
    >>> proportion(19, 20, 0.5).p < 1e-4, proportion(10, 20, 0.5).p > 0.05
    (True, True)
    """
    alternative = _alternative(alternative)
    if isinstance(n, bool) or int(n) != n or n < 1 or isinstance(k, bool) or int(k) != k or not 0 <= k <= n:
        raise ValueError(f"proportion: need integers 0 <= k <= n, n >= 1; got k={k!r}, n={n!r}")
    if not 0.0 < p0 < 1.0:
        raise ValueError(f"proportion: p0 must lie in (0, 1), got {p0}")
    p = float(stats.binomtest(int(k), int(n), p0, alternative=alternative).pvalue)
    q = float(stats.binomtest(int(k), int(n), p0, alternative=_opposite(alternative)).pvalue)
    effect = k / n - p0
    se = math.sqrt(p0 * (1 - p0) / n)
    z = effect / se if alternative == "greater" else -effect / se
    return Outcome(p, q, effect, se, int(n), trials_needed(int(n), z) if z > 0 else None)


def trend(x: Sequence[float], y: Sequence[float], alternative: str = "greater") -> Outcome:
    """Kendall's tau test that ``y`` rises (``"greater"``) or falls with ``x`` (a monotone shape, no
    line assumed): :func:`scipy.stats.kendalltau`. ``effect`` is tau; ``se`` its null standard error.

    Examples
    --------
    >>> trend([1, 2, 3, 4, 5, 6, 7, 8], [0.1, 0.3, 0.2, 0.5, 0.6, 0.8, 0.7, 0.9]).p < 0.01
    True
    >>> trend([1, 2, 3, 4, 5, 6], [0.3, 0.1, 0.5, 0.2, 0.4, 0.3]).p > 0.05
    True
    """
    alternative = _alternative(alternative)
    u, v = _finite(x, "x", 3), _finite(y, "y", 3)
    if u.shape != v.shape:
        raise ValueError(f"trend: x and y must have the same length, got {u.size} and {v.size}")
    res = stats.kendalltau(u, v, alternative=alternative)
    q = float(stats.kendalltau(u, v, alternative=_opposite(alternative)).pvalue)
    n = u.size
    se = math.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1)))
    tau = float(res.statistic)
    z = tau / se if alternative == "greater" else -tau / se
    return Outcome(float(res.pvalue), q, tau, se, n, trials_needed(n, z) if z > 0 else None)


def equal_means(groups: Sequence[Sequence[float]], blocked: bool = False) -> Outcome:
    """Outcome of the null "every group has the same mean" (groups: (k, n) or k lists): one-way ANOVA
    (:func:`scipy.stats.f_oneway`), or, where the j-th entries of all groups share a block (an initial
    state, a seed, a batch), Friedman's test (:func:`scipy.stats.friedmanchisquare`) on the blocks.
    ``effect`` is the largest difference of group means, ``se`` its standard error. Undirected:
    ``against`` is None; judge it with :func:`companion.ledger.consistent`.

    Examples
    --------
    >>> g = [[1.0, 1.1, 0.9, 1.05], [1.02, 1.08, 0.95, 1.0], [0.98, 1.12, 0.93, 1.03]]
    >>> equal_means(g).p > 0.5, equal_means(g, blocked=True).p > 0.05
    (True, True)
    >>> equal_means([[1.0, 1.1, 0.9, 1.05], [2.0, 2.1, 1.9, 2.05]]).p < 1e-4
    True
    """
    arrays = [_finite(g, f"groups[{i}]") for i, g in enumerate(groups)]
    if len(arrays) < 2:
        raise ValueError(f"equal_means needs at least two groups, got {len(arrays)}")
    means = np.array([a.mean() for a in arrays])
    ses = np.array([a.std(ddof=1) / math.sqrt(a.size) for a in arrays])
    i, j = int(means.argmax()), int(means.argmin())
    effect, se = float(means[i] - means[j]), float(math.hypot(ses[i], ses[j]))
    if blocked:
        if len({a.size for a in arrays}) != 1:
            raise ValueError("equal_means(blocked=True): every group needs one value per block")
        p = float(stats.friedmanchisquare(*arrays).pvalue) if len(arrays) >= 3 else float(
            stats.wilcoxon(arrays[0], arrays[1]).pvalue)
    else:
        p = float(stats.f_oneway(*arrays).pvalue)
    return Outcome(p, None, effect, se, int(min(a.size for a in arrays)), None)


def homogeneity(means: Sequence[float], ses: Sequence[float], n: int = 1) -> Outcome:
    r"""Outcome of the null "every group has the same mean" from independent group means and their
    standard errors alone (groups: (k,), k >= 2; where the trials themselves are not kept): Cochran's
    Q, :math:`Q = \sum_j (m_j - \bar m)^2 / s_j^2` with :math:`\bar m` the inverse-variance mean,
    against :func:`scipy.stats.chi2` with k - 1 degrees of freedom (the standard errors taken as
    known: many trials per group). ``effect`` is the largest difference of means, ``se`` its standard
    error; ``needed``: the trials per group (``n`` now) at which a one-sided z test at ALPHA would
    detect that difference with 80 % power. Undirected: judge it with :func:`companion.ledger.consistent`.

    Examples
    --------
    >>> homogeneity([0.873, 0.867, 0.846], [0.0065, 0.0066, 0.0062]).p < 0.01     # 3 s.e. apart
    True
    >>> homogeneity([0.873, 0.867, 0.866], [0.0065, 0.0066, 0.0062]).p > 0.3      # within 1 s.e.
    True
    """
    m, s = _finite(means, "means"), _finite(ses, "ses")
    if m.shape != s.shape or not (s > 0).all():
        raise ValueError(f"homogeneity: need one standard error > 0 per mean, got {m.size} means and {s.size} errors")
    w = 1.0 / s**2
    q = float((w * (m - (w * m).sum() / w.sum()) ** 2).sum())
    i, j = int(m.argmax()), int(m.argmin())
    effect, se = float(m[i] - m[j]), float(math.hypot(s[i], s[j]))
    return Outcome(float(stats.chi2.sf(q, m.size - 1)), None, effect, se, int(n),
                   trials_needed(int(n), effect / se) if effect > 0 else None)


def estimate(value: float, se: float, expected: float = 0.0, alternative: str = "two-sided", n: int = 1) -> Outcome:
    """z test of one estimate with a known standard error (a fitted slope, a regression coefficient)
    against ``expected``: :func:`scipy.stats.norm`. ``"two-sided"`` tests the null "equal" (judge it
    with :func:`companion.ledger.consistent`; ``against`` is None); ``"greater"``/``"less"`` the
    paper's direction. ``n``: the trials behind ``se``, for ``needed``.

    Examples
    --------
    >>> estimate(-0.4983, 0.0016, -0.5).p > 0.05                  # a slope of -1/2, 1 standard error off
    True
    >>> estimate(-0.47, 0.0016, -0.5).p < 1e-6                    # 19 standard errors off: rejected
    True
    >>> t = estimate(1.13, 0.43, 0.0, "greater", n=112)
    >>> t.p < 0.01, t.against > 0.99
    (True, True)
    """
    if not (math.isfinite(value) and math.isfinite(se) and se > 0):
        raise ValueError(f"estimate needs a finite value and a standard error > 0, got {value!r} +- {se!r}")
    z = (value - expected) / se
    if alternative == "two-sided":
        return Outcome(float(2 * stats.norm.sf(abs(z))), None, float(value - expected), float(se), int(n), None)
    alternative = _alternative(alternative)
    zd = z if alternative == "greater" else -z
    return Outcome(float(stats.norm.sf(zd)), float(stats.norm.cdf(zd)), float(value - expected), float(se), int(n),
                   trials_needed(int(n), zd) if zd > 0 else None)


def matches(estimates: Sequence[float], ses: Sequence[float], expected: Sequence[float], dof: int) -> Outcome:
    """Outcome of the null "every estimate equals its expected value" (estimates, ses, expected: (m,);
    each standard error from ``dof`` degrees of freedom, e.g. a mean over ``dof + 1`` seeds): a two-sided
    Student t test per estimate (:func:`scipy.stats.t`), combined by Bonferroni (m times the smallest p,
    valid however the estimates depend on each other, e.g. computed from the same samples). ``effect``
    and ``se`` are those of the estimate with the smallest p. Undirected: judge it with
    :func:`companion.ledger.consistent`.

    Examples
    --------
    >>> matches([1.99, 3.02, 6.01], [0.05, 0.04, 0.1], [2.0, 3.0, 6.0], dof=3).p > 0.5     # within 1 s.e. each
    True
    >>> matches([1.99, 3.3, 6.01], [0.05, 0.04, 0.1], [2.0, 3.0, 6.0], dof=3).p < 0.05      # one 7.5 s.e. off
    True
    """
    e, s, v = _finite(estimates, "estimates", 1), _finite(ses, "ses", 1), _finite(expected, "expected", 1)
    if not (e.shape == s.shape == v.shape) or not (s > 0).all():
        raise ValueError(f"matches: need one standard error > 0 and one expected value per estimate, got {e.size}, {s.size}, {v.size}")
    if isinstance(dof, bool) or int(dof) != dof or dof < 1:
        raise ValueError(f"matches: dof must be an integer >= 1, got {dof!r}")
    p = 2 * stats.t.sf(np.abs(e - v) / s, int(dof))
    i = int(p.argmin())
    return Outcome(float(min(1.0, e.size * p[i])), None, float(e[i] - v[i]), float(s[i]), int(dof) + 1, None)


def correlation(x: Sequence[float], y: Sequence[float], blocks: Sequence[Any] | None = None,
                alternative: str = "greater") -> Outcome:
    """Pearson correlation test that ``y`` rises (``"greater"``) or falls with ``x`` (x, y: (n,)). Where
    trials share ``blocks`` (a seed, a batch), each block's means are removed first and the degrees of
    freedom fall by one per block: the correlation within blocks, ``t = r sqrt(df / (1 - r^2))`` with
    ``df = n - blocks - 1`` (:func:`scipy.stats.t`). ``effect`` is r, ``se`` its null standard error.

    Examples
    --------
    >>> x = [1, 2, 3, 4, 1, 2, 3, 4]
    >>> y = [0.1, 0.3, 0.2, 0.5, 1.1, 1.2, 1.4, 1.5]            # a block shift, and a rise within each block
    >>> correlation(x, y, blocks=[0] * 4 + [1] * 4).p < 0.01
    True
    >>> correlation([1, 2, 3, 4, 5, 6], [0.3, 0.1, 0.5, 0.2, 0.4, 0.3]).p > 0.05
    True
    """
    alternative = _alternative(alternative)
    u, v = _finite(x, "x", 3), _finite(y, "y", 3)
    if u.shape != v.shape:
        raise ValueError(f"correlation: x and y must have the same length, got {u.size} and {v.size}")
    k = 1
    if blocks is not None:
        labels = np.asarray(blocks)
        if labels.shape != u.shape:
            raise ValueError(f"correlation: blocks must label every trial, got {labels.size} labels for {u.size} trials")
        u, v = u.copy(), v.copy()
        for b in np.unique(labels):
            u[labels == b] -= u[labels == b].mean()
            v[labels == b] -= v[labels == b].mean()
        k = int(np.unique(labels).size)
    df = u.size - k - 1
    if df < 1 or u.std() == 0 or v.std() == 0:
        raise ValueError(f"correlation needs variation within blocks and n > blocks + 1, got n = {u.size}, {k} block(s)")
    r = float(np.clip(np.corrcoef(u, v)[0, 1], -1.0, 1.0))
    se = math.sqrt(max(1 - r * r, 1e-300) / df)
    t = r / se if alternative == "greater" else -r / se
    return Outcome(float(stats.t.sf(t, df)), float(stats.t.cdf(t, df)), r, se, int(u.size),
                   trials_needed(int(u.size), t) if t > 0 else None)


def mcnemar(b: int, c: int) -> Outcome:
    """Exact McNemar test on paired yes/no trials (the same initial data under two conditions): of the
    ``b + c`` discordant pairs, ``b`` went the stated way; a binomial test of that share against 1/2
    (:func:`proportion`). With no discordant pair nothing can be decided: ``n`` is 0 and ``p`` 1.

    Examples
    --------
    >>> mcnemar(12, 0).p < 1e-3, mcnemar(6, 6).p > 0.05, mcnemar(0, 0).n
    (True, True, 0)
    """
    if b + c == 0:
        return Outcome(1.0, 1.0, 0.0, math.nan, 0, None)
    return proportion(int(b), int(b + c), 0.5)


def pooled(tests: Sequence[Outcome]) -> Outcome:
    """Several independent one-sided tests of the same direction (one per seed, rank or case) pooled
    by Stouffer's method (:func:`scipy.stats.combine_pvalues`): a pooled test, not a worst case.

    Examples
    --------
    >>> one = mean_effect([0.2, -0.1, 0.4, 0.1])            # alone: not significant
    >>> one.p > 0.05, pooled([one] * 4).p < 0.05            # four such seeds together: significant
    (True, True)
    """
    if not tests:
        raise ValueError("pooled needs at least one test")
    clip = lambda p: min(max(p, 1e-300), 1 - 1e-16)  # Stouffer needs p strictly inside (0, 1)
    p = float(stats.combine_pvalues([clip(t.p) for t in tests], method="stouffer").pvalue)
    q = None if any(t.against is None for t in tests) else float(
        stats.combine_pvalues([clip(t.against) for t in tests], method="stouffer").pvalue)
    n = sum(t.n for t in tests)
    z = float(stats.norm.isf(p)) if 0 < p < 1 else math.nan
    w = [1 / t.se ** 2 for t in tests if t.se > 0 and math.isfinite(t.se)]
    effect = (sum(t.effect / t.se ** 2 for t in tests if t.se > 0 and math.isfinite(t.se)) / sum(w)) if w else math.nan
    se = (1 / math.sqrt(sum(w))) if w else math.nan
    return Outcome(p, q, float(effect), float(se), n, trials_needed(n, z) if math.isfinite(z) and z > 0 else None)
