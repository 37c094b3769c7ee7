"""What several experiments of the chapter share: the two regimes' V, tolerances and thresholds, the energy row."""
from __future__ import annotations

from ... import ledger

__all__ = ["V_POSITIVE", "V_NEGATIVE", "TOL_ROUNDING", "TOL_BOUND", "TOL_MONOTONE", "MAJORITY", "ON_AXIS", "energy_claim"]

# Positive-dominant regime (Figs. 1-2, Theorem 6.1): lambda_1 = 1 > max_k |lambda_k| = 0.5.
V_POSITIVE = (1.0, 0.5, -0.5)
# Negative-definite regime (Figs. 3-4): simple eigenvalues, e_3 the most negative direction.
V_NEGATIVE = (-0.5, -1.0, -1.5)

# --- thresholds of the claims (each verdict comes from companion.ledger.verdict)
# Two integrations of one flow with the same RK4 steps differ only by rounding (~1e-13 here).
TOL_ROUNDING = 1e-10
# A ratio to a bound may exceed 1 only by rounding.
TOL_BOUND = 1e-9
# A monotone quantity may step back only by rounding.
TOL_MONOTONE = 1e-12
# Fig. 2: "mostly" is a majority of trials (Fig. 4: the same for the bipolar collapse).
MAJORITY = 0.5
# Fig. 3/4: a token is on +-e_d when c_id^2 > 0.99 (m_d for a pair, |c_id| for a token).
ON_AXIS = 0.99


def energy_claim(min_dlogE: float, id: str, data: str) -> ledger.Claim:
    """Sec. 2.2: the interaction energy never decreases (increments of log E above -:data:`TOL_MONOTONE`).

    Examples
    --------
    >>> energy_claim(1e-6, "C-x", "two runs").status, energy_claim(-1e-6, "C-x", "two runs").status
    ('reproduced', 'not-reproduced')
    """
    return ledger.Claim(
        id=id, paper="C", where="Sec. 2.2", statement=f"The interaction energy $E_\\beta$ never decreases ({data})",
        verdict=ledger.verdict(-min_dlogE, TOL_MONOTONE), measured=f"> {-TOL_MONOTONE:g}" if min_dlogE > -TOL_MONOTONE else min_dlogE,
        expected=">= 0", tolerance=TOL_MONOTONE)
