"""Paper C closed forms: sigma, gamma, the mean block, the criteria and the modal right-hand side.

Every check compares against an independent computation: the attention field of the core, a
hand-derived limit, or the determinant identity that defines the stability boundary.
"""
import math

import pytest
import torch

from companion import init, models
from companion.theory import spectral as th


@pytest.mark.parametrize("beta_lp", [0.1, 0.7, 2.5, -0.4, -3.0])
def test_sigma_balanced_is_tanh(beta_lp):
    assert th.sigma(math.exp(2 * beta_lp), 1.0) == pytest.approx(math.tanh(beta_lp), rel=1e-12)


@pytest.mark.parametrize("r", [0.25, 0.5, 2.0, 3.0])
def test_sigma_vanishes_at_threshold_and_is_symmetric_in_r(r):
    c = r if r > 1 else 1 / r  # beta = |ln r| / 2 with lambda_p = 1
    assert th.sigma(c, r) == pytest.approx(0.0, abs=1e-14)
    for c in (0.3, 1.7, 9.0):
        assert th.sigma(c, r) == pytest.approx(th.sigma(c, 1 / r), rel=1e-12)


@pytest.mark.parametrize("lp,beta,npl,nmi", [(1.0, 1.0, 3, 2), (0.7, 2.0, 2, 5), (-1.2, 1.5, 4, 3), (-0.5, 3.0, 1, 2)])
def test_mean_block_is_singular_exactly_at_lambda_p_sigma(lp, beta, npl, nmi):
    # the boundary lambda_k = lambda_p sigma(c, r) is a root of det B_k (the other root: lambda_k = lambda_p)
    s = lp * th.sigma(math.exp(2 * beta * lp), npl / nmi)
    assert torch.linalg.det(th.mean_block(s, lp, beta, npl, nmi)).item() == pytest.approx(0.0, abs=1e-12)
    assert torch.linalg.det(th.mean_block(lp, lp, beta, npl, nmi)).item() == pytest.approx(0.0, abs=1e-12)
    assert abs(torch.linalg.det(th.mean_block(0.5 * s + 0.1, lp, beta, npl, nmi)).item()) > 1e-6


def test_gammas_match_closed_forms():
    lp, beta, npl, nmi = 0.8, 1.3, 3, 5
    c, r = math.exp(2 * beta * lp), npl / nmi
    gp, gm = th.gammas(lp, beta, npl, nmi)
    assert gp == pytest.approx(lp * (r * c - 1) / (r * c + 1), rel=1e-12)
    assert gm == pytest.approx(lp * (c - r) / (c + r), rel=1e-12)
    assert th.gammas(lp, beta, 4, 0)[0] == pytest.approx(lp)  # homogeneous: gamma = lambda_p


def test_gamma_from_attention_field():
    # gamma_i = <x_i*, sum_j K_ij V x_j*> (= lambda_p s_i sum_j K_ij s_j) with the core's attention field
    V = torch.diag(torch.tensor([0.9, -0.3], dtype=torch.float64))
    X = torch.tensor([[1.0, 0.0]] * 3 + [[-1.0, 0.0]] * 2, dtype=torch.float64)
    A = models.spectral(V, 1.7).field(X[None])[0]
    gam = (A * X).sum(-1)
    gp, gm = th.gammas(0.9, 1.7, 3, 2)
    assert torch.allclose(gam, torch.tensor([gp] * 3 + [gm] * 2, dtype=torch.float64), atol=1e-14)


def test_criteria_homogeneous():
    assert th.homogeneous_stable([1.0, 0.99, -2.0], 0)
    assert not th.homogeneous_stable([1.0, 1.01], 0)
    assert not th.homogeneous_stable([-1.0, -2.0], 0)


def test_theorem_and_blocks_agree_without_singletons():
    g = torch.Generator().manual_seed(0)
    agree = 0
    for _ in range(300):
        lam = (4 * torch.rand(3, generator=g, dtype=torch.float64) - 2).tolist()
        beta = 0.2 + 3 * torch.rand(1, generator=g).item()
        npl, nmi = (int(x) for x in torch.randint(2, 6, (2,), generator=g))
        p = int(torch.randint(0, 3, (1,), generator=g))
        agree += th.sign_split_stable_theorem(lam, p, beta, npl, nmi) == th.sign_split_stable_blocks(lam, p, beta, npl, nmi)
    assert agree == 300


def test_singleton_caveat_example():
    # gamma_+ < 0 for the lone token, yet the Jacobian spectrum (below) is stable
    lam, beta = [1.0, -0.5], 0.5
    assert th.gammas(1.0, beta, 1, 4)[0] < 0
    assert not th.sign_split_stable_theorem(lam, 0, beta, 1, 4)
    assert th.sign_split_stable_blocks(lam, 0, beta, 1, 4)
    assert th.sign_split_spectrum(lam, 0, beta, 1, 4).real.max() < 0


@pytest.mark.parametrize(
    "bad", [dict(c=0.0, r=1.0), dict(c=1.0, r=2.0), dict(c=2.0, r=-1.0), dict(c=float("nan"), r=1.0)]
)
def test_sigma_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        th.sigma(**bad)


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_plus"):
        th.gammas(1.0, 1.0, -1, 2)
    with pytest.raises(ValueError, match="p must"):
        th.homogeneous_stable([1.0, 2.0], 5)
    with pytest.raises(ValueError, match="beta"):
        th.sign_split_stable_blocks([1.0, 2.0], 0, 0.0, 1, 1)
    with pytest.raises(ValueError, match="n_minus >= 1"):
        th.sign_split_stable_theorem([1.0, 2.0], 0, 1.0, 2, 0)
    with pytest.raises(ValueError, match="balanced"):
        th.bipolar_alpha(0.3, 1.0, 2, 3)
    with pytest.raises(ValueError, match="lambda_1"):
        th.cone_ratio_bound(torch.tensor(1.0), 0.5, 1.0, 1.5, torch.tensor([0.0]))


def test_modal_rhs_equals_rotated_attention_field():
    g = torch.Generator().manual_seed(1)
    d = 5
    Q = init.random_orthogonal(d, generator=g)
    lam = torch.tensor([1.2, 0.4, 0.0, -0.7, -1.5], dtype=torch.float64)
    V = (Q * lam) @ Q.T
    X = init.uniform_sphere(3, 7, d, generator=g)
    for beta in (0.3, 4.0):
        F = models.spectral((V + V.T) / 2, beta).vector_field(0.0, X)
        Fm = th.modal_rhs(X @ Q, lam, beta)
        assert torch.allclose(Fm, F @ Q, atol=1e-13)


def test_modal_rhs_masses_equation():
    # a_ik' = 2 c_ik (lambda_k f_ik - phi_i c_ik) and the masses of each token sum to a constant
    g = torch.Generator().manual_seed(2)
    C = init.uniform_sphere(2, 6, 4, generator=g)
    lam = torch.tensor([1.0, 0.5, -0.5, -1.0], dtype=torch.float64)
    dC = th.modal_rhs(C, lam, 1.0)
    assert torch.allclose((2 * C * dC).sum(-1), torch.zeros(2, 6, dtype=torch.float64), atol=1e-14)


def test_bipolar_dM_nonnegative_times_sign():
    g = torch.Generator().manual_seed(3)
    p = torch.rand(50, 4, generator=g, dtype=torch.float64)
    p = p / p.sum(-1, keepdim=True)
    lam = torch.tensor([1.0, 0.2, -0.3, -1.1], dtype=torch.float64)
    M = (p * lam).sum(-1)
    assert (th.bipolar_dM(p, lam, 2.0) * torch.sign(M) >= 0).all()


@pytest.mark.parametrize("lams,p,beta,npl,nmi", [([1.0, 0.4, -0.8], 0, 1.3, 3, 2), ([-1.5, -1.0, 0.5], 0, 0.8, 2, 4),
                                                  ([0.7, -0.2], 1, 2.0, 4, 0)])
def test_pure_mode_linearisation_has_the_invariant_decomposition_spectrum(lams, p, beta, npl, nmi):
    # the blocks of (A.3), written from the weights alone, against App. A.2's -gamma_+-, eig(B_k) (sign_split_spectrum)
    L = th.pure_mode_linearisation(lams, p, beta, [1.0] * npl + [-1.0] * nmi)
    ev = torch.cat([torch.linalg.eigvals(Lk) for Lk in L])
    ev = ev[torch.argsort(ev.real * 1e6 + ev.imag)]
    ref = th.sign_split_spectrum(lams, p, beta, npl, nmi)
    assert torch.allclose(ev, ref, atol=1e-12)


def test_pure_mode_linearisation_equals_the_attention_jacobian():
    # entry by entry against autograd of the core's attention field, in V's eigenbasis (signs interleaved)
    lam = torch.tensor([0.9, -0.4, 0.3], dtype=torch.float64)
    V, s, p, beta = torch.diag(lam), torch.tensor([1.0, -1.0, 1.0, 1.0], dtype=torch.float64), 2, 1.7
    X = s[:, None] * torch.eye(3, dtype=torch.float64)[p][None, :]
    J = torch.autograd.functional.jacobian(lambda Y: models.spectral(V, beta).vector_field(0.0, Y[None])[0], X)
    L = th.pure_mode_linearisation(lam, p, beta, s)
    for a, k in enumerate([0, 1]):
        assert torch.allclose(J[:, k, :, k], L[a], atol=1e-13)
    assert J[:, 0, :, 1].abs().max() < 1e-13 and J[:, 1, :, 0].abs().max() < 1e-13  # no coupling between modes


def test_pure_mode_linearisation_rejects_bad_signs():
    with pytest.raises(ValueError, match="signs"):
        th.pure_mode_linearisation([1.0, 0.5], 0, 1.0, [1.0, 0.5])
