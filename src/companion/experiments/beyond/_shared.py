"""What several experiments of the chapter "beyond" share: the dtype, the paper scale (none: the
questions are ours) and the thresholds used by more than one answer."""
from __future__ import annotations

import dataclasses
from typing import Mapping

import torch

from ... import ledger
from ...registry import PaperScale

F64 = torch.float64
OURS = PaperScale(note="not in any paper: our question; sizes ours")

# Q3/Q4: a token is on a subspace when the mean of |P x|^2 exceeds 0.99.
ON_SUBSPACE = 0.99
# Q2/Q3: linear growth rates against their derived value (Q3: the translation mode against rho - tanh(x);
# Q2: the merge rate of two clusters): RK4 error and the O(eps) nonlinearity (eps = 1e-7) are below 1e-6;
# 1e-4 leaves room and is far below any rate that matters.
TOL_RATE = 1e-4
# ... and reported floored at 1e-6 (its last digits are rounding and the O(eps^2) remainder).
RATE_FLOOR = 1e-6


def every(named: Mapping[str, ledger.Verdict]) -> ledger.Verdict:
    """One law stated for several cases (speeds, covariances): it holds when every case does and fails
    when any does (:func:`companion.ledger.worst`), with ``why`` naming the cases as
    :func:`companion.ledger.cases` does.

    Examples
    --------
    >>> v = every({"a": ledger.verdict(0.01, 0.1), "b": ledger.verdict(0.5, 0.1)})
    >>> v.status, v.why
    ('not-reproduced', 'holds: a; fails: b')
    """
    return dataclasses.replace(ledger.worst(*named.values()), why=ledger.cases(named).why)
