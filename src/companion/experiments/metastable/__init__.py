"""Paper D (metastable clustering): the experiments behind ``book/chapters/metastable.md``, one file each.

Each experiment is declared with its config per profile (``fast``: a few minutes on 2 CPU cores for
the whole chapter; ``full``: the official code's sizes where it gives them, N = 2e4, and up to
N = 1e6 elsewhere, as each experiment's :class:`~companion.registry.PaperScale` says), a body
``(cfg, generator, device)``, a plot and the claims it checks (:mod:`companion.registry`):

* :mod:`.linear_rates` (``metastable-linear-rates``): the growth rates gamma_k and k_max;
* :mod:`.ln_n` (``metastable-ln-n``, formerly ``metastable-lnN``): the end of the linear phase against ln N;
* :mod:`.official` (``metastable-official``): the official notebook's runs and ensembles around them;
* :mod:`.long_run` (``metastable-long-run``): plateau and merging;
* :mod:`.pde` (``metastable-pde``): the mean-field PDE of Fig. 4 against particles;
* :mod:`.sphere` (``metastable-sphere``): the growth of spherical harmonics on S^2;
* :mod:`.hminus1` (``metastable-hminus1``): Lemma E.3, the H^{-1} size of the initial perturbation;
* :mod:`.cluster_limit` (``metastable-cluster-limit``): the N -> infinity limits and the plateau in ln N.

Particle runs on the circle use :class:`companion.circle.Circle` (Fourier/Bessel field, float64)
through :func:`companion.integrate.simulate`; the sphere runs use :func:`companion.models.metastable`
(A = V = I). The observables live in :mod:`companion.metrics` (:mod:`~companion.metrics.hminus1`,
:mod:`~companion.metrics.circle_w1`, :mod:`~companion.metrics.harmonics`,
:mod:`~companion.metrics.cluster_history`), the closed forms in :mod:`companion.theory.metastable`.
"""
from __future__ import annotations

from .cluster_limit import (CENSORED_FRACTION, FLOOR_FRACTION, TREND_SIGMA, ClusterLimitConfig, cluster_limit,
                            cluster_limit_claims, plot_cluster_limit)
from .hminus1 import PARTLY_SIGMA, TOL_SIGMA, Hminus1Config, hminus1, hminus1_claims, plot_hminus1
from .linear_rates import (BETAS, KMAX_RESOLUTION, LinearRatesConfig, kmax_resolution, linear_rates, linear_rates_claims,
                           plot_linear_rates)
from .ln_n import (PARTLY_LN_N, TOL_LN_N, LnNConfig, joint_fit, ln_n, ln_n_assemble, ln_n_claims, ln_n_grid, ln_n_point,
                   plot_ln_n)
from .long_run import REACHED_FRACTION, LongRunConfig, long_run, long_run_claims, plot_long_run
from .official import (MOST_SEEDS, OFFICIAL_FRACTION, TOL_CENTRE, TRANSIENT_BETAS, OfficialConfig, official,
                       official_claims, plot_official, transient_phase)
from .pde import PARTLY_W1, TOL_W1, PdeConfig, pde, pde_claims, plot_pde
from .sphere import SphereConfig, plot_sphere, sphere, sphere_claims
from ._common import PARTLY_RATE, TOL_RATE

__all__ = [
    "LinearRatesConfig", "linear_rates", "plot_linear_rates", "linear_rates_claims", "kmax_resolution",
    "LnNConfig", "ln_n", "ln_n_point", "ln_n_assemble", "ln_n_grid", "joint_fit", "plot_ln_n", "ln_n_claims",
    "OfficialConfig", "official", "plot_official", "official_claims", "transient_phase", "TRANSIENT_BETAS", "MOST_SEEDS",
    "LongRunConfig", "long_run", "plot_long_run", "long_run_claims",
    "PdeConfig", "pde", "plot_pde", "pde_claims",
    "SphereConfig", "sphere", "plot_sphere", "sphere_claims",
    "Hminus1Config", "hminus1", "plot_hminus1", "hminus1_claims",
    "ClusterLimitConfig", "cluster_limit", "plot_cluster_limit", "cluster_limit_claims",
    "BETAS", "KMAX_RESOLUTION", "TOL_RATE", "PARTLY_RATE", "TOL_LN_N", "PARTLY_LN_N", "OFFICIAL_FRACTION", "TOL_CENTRE",
    "REACHED_FRACTION", "TOL_W1", "PARTLY_W1", "TOL_SIGMA", "PARTLY_SIGMA", "TREND_SIGMA", "FLOOR_FRACTION",
    "CENSORED_FRACTION",
]
