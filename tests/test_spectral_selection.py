"""Paper C experiments: Jacobians (autograd vs finite differences vs the closed-form spectrum),
the modal system against the direct simulation, and small versions of the chapter's checks."""
import math

import pytest
import torch

from companion import init, models
from companion.experiments import spectral_selection as ss
from companion.theory import spectral as th


def _V(lams, seed=0):
    Q = init.random_orthogonal(len(lams), generator=torch.Generator().manual_seed(seed))
    V = (Q * torch.tensor(lams, dtype=torch.float64)) @ Q.T
    return (V + V.T) / 2


@pytest.mark.parametrize(
    "lams,p,beta,npl,nmi",
    [
        ([1.0, 0.4, -0.8], 2, 1.0, 3, 0),  # homogeneous at the top mode
        ([1.0, 0.4, -0.8], 2, 1.0, 2, 3),  # sign split, lambda_p > 0
        ([-1.5, -1.0, -0.5], 0, 2.0, 2, 2),  # sign split, lambda_p < 0
        ([-1.5, 0.3, 1.1], 1, 0.7, 1, 3),  # singleton group
    ],
)
def test_jacobian_matches_closed_form_spectrum(lams, p, beta, npl, nmi):
    V = _V(lams)
    X, lam, _ = ss.pure_state(V, p, npl, nmi)
    assert ss.models.spectral(V, beta).vector_field(0.0, X[None]).abs().max() < 1e-14  # an equilibrium
    J = models.tangent_jacobian(models.spectral(V, beta), X)
    Jfd = models.tangent_jacobian(models.spectral(V, beta), X, mode="fd")
    assert (J - Jfd).abs().max() < 1e-7
    ev = torch.linalg.eigvals(J)
    ev_th = th.sign_split_spectrum(lam, p, beta, npl, nmi)
    assert ss._match_error(ev, ev_th) < 1e-10


def test_jacobian_of_a_moving_state_differs_from_the_spectrum():
    # the check can fail: away from an equilibrium the same comparison is off by O(1)
    V = _V([1.0, 0.4, -0.8])
    X, lam, _ = ss.pure_state(V, 2, 2, 2)
    Y = X + 0.3 * torch.randn(X.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    Y = Y / Y.norm(dim=-1, keepdim=True)
    ev = torch.linalg.eigvals(models.tangent_jacobian(models.spectral(V, 1.0), Y))
    assert ss._match_error(ev, th.sign_split_spectrum(lam, 2, 1.0, 2, 2)) > 1e-3


def test_tangent_basis_is_orthonormal_and_tangent():
    X = init.uniform_sphere(1, 5, 4, generator=torch.Generator().manual_seed(1))[0]
    B = models.tangent_basis(X)
    assert torch.allclose(B.transpose(-1, -2) @ B, torch.eye(3, dtype=torch.float64).expand(5, 3, 3), atol=1e-14)
    assert (torch.einsum("iak,ia->ik", B, X)).abs().max() < 1e-14


def test_modal_model_reproduces_direct_simulation():
    r = ss.modal_form(trials=2, n=6, t1=2.0, dt=0.05)
    assert r["max_error"] < 1e-11
    assert abs(r["masses"].sum(-1) - 1).max() < 1e-12


def test_consensus_and_bipolar_checks():
    r = ss.invariant_manifolds(t1=3.0, dt=0.02, energy_trials=4, energy_dt=0.05)
    assert r["consensus_error"] < 1e-7
    assert r["bipolar_offset"] < 1e-12
    assert r["min_signed_dM"] >= 0
    assert r["alpha_error"] < 1e-12
    assert r["dM_error"] < 1e-12
    assert r["min_dlogE"] >= -1e-12


def test_stability_cases_small():
    r = ss.stability_cases(count=25, seed=5)
    assert r["agree_blocks"] == r["count"]
    assert r["agree_stated_no_singleton"] == r["no_singleton"]
    assert all(d["singleton"] for d in r["disagreements"])
    assert r["max_spectrum_error"] < 1e-10


def test_cone_bound_small():
    r = ss.cone_bound(trials=3, n=12, t1=4.0, dt=0.05)
    assert r["max_ratio"] <= 1 + 1e-9
    assert r["min_dm"] >= -1e-12


def test_two_tokens_small():
    r = ss.two_tokens(trials=20, t1=20.0, dt=0.05, saves=81)
    assert r["not_decreasing"] == 0
    assert r["md_below"] == 0


def test_boundary_point_matches_sigma():
    # bisection on the Jacobian for r = 2 (4 vs 2 tokens), beta = 1, lambda_p = 1
    lo, hi = -0.999, 0.999
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ss._stable_at(mid, 1.0, 4, 2) else (lo, mid)
    assert lo == pytest.approx(th.sigma(math.exp(2.0), 2.0), abs=1e-7)


def test_unknown_option_and_profile():
    with pytest.raises(ValueError, match="unknown options"):
        ss.two_tokens(nonsense=1)
    with pytest.raises(ValueError, match="profile"):
        ss.two_tokens(profile="huge")
    e1 = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match="mode must be one of"):
        models.tangent_jacobian(models.spectral(torch.eye(2, dtype=torch.float64), 1.0), e1, mode="x")
    with pytest.raises(ValueError, match="on the sphere"):
        models.tangent_jacobian(models.Euclidean(), e1)
    with pytest.raises(TypeError, match="lacks"):
        models.tangent_jacobian(torch.eye(2), e1)
