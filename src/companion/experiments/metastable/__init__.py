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

from .cluster_limit import ClusterLimitConfig, cluster_limit, cluster_limit_claims, cluster_limit_summary, plot_cluster_limit
from .hminus1 import Hminus1Config, hminus1, hminus1_claims, hminus1_summary, plot_hminus1
from .linear_rates import (BETAS, KMAX_RESOLUTION, LinearRatesConfig, kmax_resolution, linear_rates, linear_rates_claims,
                           linear_rates_summary, plot_linear_rates)
from .ln_n import (LnNConfig, joint_fit, ln_n, ln_n_assemble, ln_n_claims, ln_n_grid, ln_n_point, ln_n_summary, plot_ln_n)
from .long_run import LongRunConfig, long_run, long_run_claims, long_run_summary, plot_long_run
from .official import (TOL_CENTRE, TRANSIENT_BETAS, OfficialConfig, official, official_claims, official_summary,
                       plot_official, transient_phase)
from .pde import PdeConfig, pde, pde_claims, pde_summary, plot_pde
from .sphere import SphereConfig, plot_sphere, sphere, sphere_claims, sphere_summary
from ._common import TOL_RATE

__all__ = [
    "LinearRatesConfig", "linear_rates", "plot_linear_rates", "linear_rates_claims", "linear_rates_summary", "kmax_resolution",
    "LnNConfig", "ln_n", "ln_n_point", "ln_n_assemble", "ln_n_grid", "joint_fit", "plot_ln_n", "ln_n_claims", "ln_n_summary",
    "OfficialConfig", "official", "plot_official", "official_claims", "official_summary", "transient_phase", "TRANSIENT_BETAS",
    "LongRunConfig", "long_run", "plot_long_run", "long_run_claims", "long_run_summary",
    "PdeConfig", "pde", "plot_pde", "pde_claims", "pde_summary",
    "SphereConfig", "sphere", "plot_sphere", "sphere_claims", "sphere_summary",
    "Hminus1Config", "hminus1", "plot_hminus1", "hminus1_claims", "hminus1_summary",
    "ClusterLimitConfig", "cluster_limit", "plot_cluster_limit", "cluster_limit_claims", "cluster_limit_summary",
    "BETAS", "KMAX_RESOLUTION", "TOL_RATE", "TOL_CENTRE",
]
