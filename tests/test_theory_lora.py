"""Paper A, Section 3 theory (companion.theory.lora) against hand-computed cases and closed forms."""
import math

import pytest
import torch

from companion import init
from companion.theory import lora

f64 = torch.float64


def _rot(d, seed):
    return init.random_orthogonal(d, generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------- Prop. 3.1


def test_prop31_t0_is_L0():
    I = torch.eye(3, dtype=f64)
    # dA = 0: L_0 = 6 |dV|^2 = 6 * 0.01
    b = lora.prop31_bound(I, I, 0 * I, 0.1 * I, 1.0, 0.0)
    assert b.L.item() == pytest.approx(0.06)
    assert 10 ** b.log10_sq_bound.item() == pytest.approx(0.06)
    assert b.log_log_excess.item() == -math.inf
    # dA term dominates: 6 |dA| |V| = 6 * 0.2 * 2 = 2.4 (and |dV|^2 = 0.09 is smaller)
    b = lora.prop31_bound(I, 2 * I, 0.2 * I, 0.3 * I, 1.0, 0.0)
    assert b.L.item() == pytest.approx(2.4)
    # appendix variant: L_0 = 6 R_0^3 max(...) with R_0 = M0 = 2: 6 * 8 * 0.01
    b = lora.prop31_bound(I, I, 0 * I, 0.1 * I, 2.0, 0.0, variant="appendix")
    assert b.L.item() == pytest.approx(0.48)


def test_prop31_main_constants_by_hand():
    # d = 1: A = 0.5, V = 0.5, dA = 0, dV = 0.1, M0 = 1, t = 0.5
    a, v, dv, M0, t = 0.5, 0.5, 0.1, 1.0, 0.5
    R = M0 * math.exp(max(v, v + dv) * t)  # e^{0.3}
    D = 2 * a * v * M0**2 * math.exp(2 * v * t) * t  # 0.25 e^{0.5}
    C = 4 * v**2 * a**2 * R**2 * (1 + math.exp(2 * R * a)) ** 2 * t
    L = 6 * dv**2
    log10_sq = math.log10(L * math.exp(2 * C * math.exp(3 * D)))
    b = lora.prop31_bound([[a]], [[v]], [[0.0]], [[dv]], M0, t)
    assert b.R.item() == pytest.approx(math.exp(0.3), rel=1e-12)
    assert b.D.item() == pytest.approx(0.25 * math.exp(0.5), rel=1e-12)
    assert b.C.item() == pytest.approx(C, rel=1e-12)
    assert b.log10_sq_bound.item() == pytest.approx(log10_sq, rel=1e-12)
    assert b.log10_w2_bound.item() == pytest.approx(log10_sq / 2, rel=1e-12)


def test_prop31_appendix_constants_by_hand():
    a, v, dv, M0, t = 0.5, 0.5, 0.1, 1.0, 0.5
    R = M0 * math.exp((v + dv) * t)
    C2 = 2 * R**2 * v * a * (1 + math.exp(2 * R**2 * a))  # eq. (43)
    b = lora.prop31_bound([[a]], [[v]], [[0.0]], [[dv]], M0, t, variant="appendix")
    assert b.L.item() == pytest.approx(6 * R**3 * dv**2, rel=1e-12)
    assert b.C.item() == pytest.approx(t * C2**2, rel=1e-12)


def test_prop31_doubly_exponential_growth_and_overflow():
    I = torch.eye(2, dtype=f64)
    b = lora.prop31_bound(I, I, 0.01 * I, 0.01 * I, 1.0, torch.linspace(0.1, 4.0, 40))
    lle = b.log_log_excess
    assert torch.isfinite(lle).all() and (lle[1:] > lle[:-1]).all()
    assert math.isinf(b.log10_sq_bound[-1].item())  # beyond float64: reported as inf, not NaN
    assert not torch.isnan(b.log10_sq_bound).any()


@pytest.mark.parametrize(
    "kw, msg",
    [
        (dict(t=-1.0), "t must"),
        (dict(M0=0.0), "M0"),
        (dict(variant="x"), "variant"),
        (dict(A=torch.ones(2, 3)), "A must be a square"),
        (dict(dV=torch.ones(3, 3)), "dV must be"),
        (dict(V=torch.tensor([[float("nan"), 0], [0, 1.0]])), "non-finite"),
    ],
)
def test_prop31_bad_input(kw, msg):
    I = torch.eye(2, dtype=f64)
    args = dict(A=I, V=I, dA=0 * I, dV=0.1 * I, M0=1.0, t=1.0)
    args.update(kw)
    variant = args.pop("variant", "main")
    with pytest.raises(ValueError, match=msg):
        lora.prop31_bound(**args, variant=variant)


# ----------------------------------------------------------------------------- Prop. 3.3


def _block(lams, a, s, e):
    """V = diag(lams); dV acts on span(e1, e2) as [[a, s], [s, e]]."""
    d = len(lams)
    V = torch.diag(torch.tensor(lams, dtype=f64))
    dV = torch.zeros(d, d, dtype=f64)
    dV[0, 0], dV[0, 1], dV[1, 0], dV[1, 1] = a, s, s, e
    return V, dV


@pytest.mark.parametrize("a, s, e", [(0.0, 0.1, 0.0), (0.2, 0.05, 0.1), (-0.2, 0.1, 0.05), (0.0, 0.0, 0.3), (0.1, -0.2, 0.6)])
@pytest.mark.parametrize("rotate", [False, True])
def test_spectral_perturbation_two_by_two_closed_form(a, s, e, rotate):
    lams = [2.0, 1.0, 0.5, 0.1]
    V, dV = _block(lams, a, s, e)
    if rotate:  # the quantities are basis-free
        Q = _rot(4, 3)
        V, dV = Q @ V @ Q.T, Q @ dV @ Q.T
    sp = lora.spectral_perturbation(V, dV, reference=(Q[:, 0] if rotate else torch.eye(4, dtype=f64)[0]))
    gap = 1.0
    assert sp.gap == pytest.approx(gap)
    assert sp.a == pytest.approx(a, abs=1e-12)
    assert sp.b_norm == pytest.approx(abs(s), abs=1e-12)
    assert sp.E_norm == pytest.approx(abs(e), abs=1e-12)
    assert sp.margin == pytest.approx(gap + a - 2 * abs(s) - abs(e), abs=1e-12)
    assert sp.holds == (gap + a - 2 * abs(s) - abs(e) > 0)
    assert sp.bound == pytest.approx((2 * abs(s) + abs(e)) / (gap + a), abs=1e-12)
    # top eigenvector of [[2 + a, s], [s, 1 + e]]: tan(2 theta) = 2 s / (1 + a - e)
    theta = 0.5 * math.atan2(2 * abs(s), gap + a - e)
    assert sp.drift == pytest.approx(2 * math.sin(theta / 2), abs=1e-10)
    assert float(sp.u1 @ sp.u1_tilde) >= 0


def test_bound16_holds_with_constant_one_under_condition15():
    # Derived in the chapter: under (15), tan(theta) <= |b| / (gap + a - |E|) <= (2|b| + |E|) / (gap + a),
    # and |u1 - u1~| = 2 sin(theta/2) <= tan(theta). Check on random symmetric updates.
    g = torch.Generator().manual_seed(0)
    lams = torch.tensor([1.5, 1.0, 0.8, 0.5, 0.2], dtype=f64)
    Q = _rot(5, 1)
    V = Q @ torch.diag(lams) @ Q.T
    checked = 0
    for _ in range(300):
        M = torch.randn(5, 5, generator=g, dtype=f64)
        M = (M + M.T) / 2
        M = M * (torch.rand(1, generator=g, dtype=f64).item() * 0.5 / lora.op_norm(M))
        sp = lora.spectral_perturbation(V, M)
        if not sp.holds:
            continue
        checked += 1
        tan = math.tan(math.acos(min(1.0, float(sp.u1 @ sp.u1_tilde))))
        assert sp.drift <= tan + 1e-12
        assert tan <= sp.b_norm / (sp.gap + sp.a - sp.E_norm) + 1e-12
        assert sp.drift <= sp.bound + 1e-12
    assert checked > 50


def test_in_span_and_orthogonal_updates_do_not_move_u1():
    V = torch.diag(torch.tensor([2.0, 1.0, 0.5], dtype=f64))
    sp = lora.spectral_perturbation(V, torch.diag(torch.tensor([0.7, 0.0, 0.0], dtype=f64)))
    assert sp.drift == 0.0 and sp.holds
    # E alone: u1 stays an eigenvector; it stays the top one while |E| < gap + a
    sp = lora.spectral_perturbation(V, torch.diag(torch.tensor([0.0, 0.9, 0.0], dtype=f64)))
    assert sp.drift < 1e-12 and sp.holds
    sp = lora.spectral_perturbation(V, torch.diag(torch.tensor([0.0, 1.1, 0.0], dtype=f64)))
    assert not sp.holds and sp.drift == pytest.approx(math.sqrt(2))  # crossing: u1~ = e2


def test_condition15_and_bound16_scalars():
    assert lora.condition15_margin(0.5, 0.0, 0.1, 0.2) == pytest.approx(0.1)
    assert lora.bound16(0.5, 0.0, 0.1, 0.2) == pytest.approx(0.8)
    assert lora.bound16(0.5, -0.5, 0.1, 0.2) == math.inf


def test_spectral_perturbation_bad_input():
    V = torch.diag(torch.tensor([2.0, 1.0], dtype=f64))
    with pytest.raises(ValueError, match="symmetric"):
        lora.spectral_perturbation(V, torch.tensor([[0.0, 1.0], [0.0, 0.0]], dtype=f64))
    with pytest.raises(ValueError, match="simple top eigenvalue"):
        lora.spectral_perturbation(torch.eye(2, dtype=f64), 0 * V)
    with pytest.raises(ValueError, match="dV must be"):
        lora.spectral_perturbation(V, torch.zeros(3, 3, dtype=f64))
    with pytest.raises(TypeError):
        lora.spectral_perturbation(V, object())


def test_top_eigenvector_sign():
    lam, v = lora.top_eigenvector(torch.tensor([[1.0, 0.0], [0.0, 3.0]], dtype=f64), [0.0, -2.0])
    assert lam == pytest.approx(3.0) and v.tolist() == pytest.approx([0.0, -1.0])


# ----------------------------------------------------------------------------- Remark 3.4


def test_remark34_by_hand():
    # (0.1 / (2 - 1 - 0.5))^2 = 0.04; the e_j = 0 term is dropped as printed
    assert lora.remark34_prediction([2.0, 1.0, 0.5], [0.0, 0.1, 0.2], [0.0, 0.5, 0.0]) == pytest.approx(0.04)
    # all terms: + (0.2 / 1.5)^2; with a = 0.5: (0.1 / 1.0)^2
    assert lora.remark34_prediction([2.0, 1.0, 0.5], [0.0, 0.1, 0.2], [0.0, 0.5, 0.0], all_terms=True) == pytest.approx(0.04 + (0.2 / 1.5) ** 2)
    assert lora.remark34_prediction([2.0, 1.0, 0.5], [0.0, 0.1, 0.2], [0.0, 0.5, 0.0], a=0.5) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="crosses"):
        lora.remark34_prediction([2.0, 1.0], [0.0, 0.1], [0.0, 1.5])
    with pytest.raises(ValueError, match="same d"):
        lora.remark34_prediction([2.0, 1.0], [0.0, 0.1, 0.0], [0.0, 0.5])


def test_remark34_is_first_order_exact():
    # Second method: the exact |u1 - u1~|^2 from eigh approaches (17) (with a) as the update shrinks.
    Q = _rot(5, 2)
    lams = torch.tensor([2.0, 1.4, 1.1, 0.7, 0.3], dtype=f64)
    V = Q @ torch.diag(lams) @ Q.T
    errs = []
    for eps in (1e-2, 1e-3):
        alpha = torch.tensor([0.0, 1.0, 0.5, 0.0, 0.0], dtype=f64) * eps
        e = torch.tensor([0.0, 0.3, 0.2, 0.0, 0.0], dtype=f64)  # E of order one, commuting
        Mb = torch.diag(e)
        Mb[0, 1:] = alpha[1:]
        Mb[1:, 0] = alpha[1:]
        Mb[0, 0] = eps
        dV = Q @ Mb @ Q.T
        lam, al, ee = lora.commuting_coefficients(V, dV)
        assert lam.tolist() == pytest.approx(lams.tolist())
        assert (al.abs()).tolist() == pytest.approx(alpha.abs().tolist(), abs=1e-12)
        assert ee.tolist() == pytest.approx(e.tolist(), abs=1e-12)
        pred = lora.remark34_prediction(lam, al, ee, a=eps)
        exact = lora.spectral_perturbation(V, dV).drift ** 2
        errs.append(abs(pred - exact) / exact)
    assert errs[1] < 1e-3 and errs[1] < errs[0] / 5


def test_commuting_coefficients_rejects_noncommuting():
    V = torch.diag(torch.tensor([2.0, 1.0, 0.5], dtype=f64))
    dV = torch.zeros(3, 3, dtype=f64)
    dV[1, 2] = dV[2, 1] = 0.1
    with pytest.raises(ValueError, match="commute"):
        lora.commuting_coefficients(V, dV)


# ----------------------------------------------------------------------------- mitigation


def test_orthogonal_projection_update():
    g = torch.Generator().manual_seed(4)
    Q = _rot(4, 5)
    V = Q @ torch.diag(torch.tensor([1.5, 1.0, 0.6, 0.2], dtype=f64)) @ Q.T
    M = torch.randn(4, 4, generator=g, dtype=f64)
    M = 0.3 * (M + M.T) / torch.linalg.matrix_norm(M + M.T)
    P = lora.orthogonal_projection_update(M, Q[:, 0])
    assert torch.allclose(P, P.T)
    assert float(torch.linalg.matrix_norm(P)) == pytest.approx(float(torch.linalg.matrix_norm(M)))
    sp = lora.spectral_perturbation(V, P)
    assert abs(sp.a) < 1e-12 and sp.b_norm < 1e-12
    assert sp.drift < 1e-12  # |E| < gap: u1 stays the top eigenvector
    assert lora.spectral_perturbation(V, M).drift > 1e-3
    assert lora.op_norm(lora.orthogonal_projection_update(M, Q[:, 0], keep_norm="op")) == pytest.approx(lora.op_norm(M))
    with pytest.raises(ValueError, match="unit vector"):
        lora.orthogonal_projection_update(M, 2 * Q[:, 0])
    with pytest.raises(ValueError, match="keep_norm"):
        lora.orthogonal_projection_update(M, Q[:, 0], keep_norm="nuc")


def test_cone_collapse_bound_solves_its_ode():
    # phi(t) solves phi' = gap phi (1 - phi^2); check by finite differences, and the limits
    phi0, gap = 0.3, 0.7
    ts = torch.linspace(0.0, 5.0, 501, dtype=f64)
    err = lora.cone_collapse_bound(phi0, gap, ts)
    phi = 1 - err**2 / 2
    dphi = (phi[2:] - phi[:-2]) / (ts[2:] - ts[:-2])
    rhs = gap * phi[1:-1] * (1 - phi[1:-1] ** 2)
    assert torch.allclose(dphi, rhs, atol=1e-4)
    assert err[0].item() == pytest.approx(math.sqrt(2 * (1 - phi0)))
    assert lora.cone_collapse_bound(phi0, gap, 200.0).item() < 1e-40  # no cancellation to 0 too early
    with pytest.raises(ValueError, match="phi0"):
        lora.cone_collapse_bound(-0.1, gap, 1.0)


# ----------------------------------------------------------------------------- Appendix C (issue 17)


def test_c2_constant_by_hand_and_the_dirac_threshold():
    # (43) at R = 0.5, |A| = 2, |V| = 3: 2 * 0.25 * 3 * 2 * (1 + e^{2 * 0.25 * 2})
    assert lora.c2_constant(0.5, 2.0, 3.0) == pytest.approx(3.0 * (1 + math.e))
    z = lora.c43_threshold()
    assert 0.19 < z < 0.21 and lora.dirac_pair_ratio(z) == pytest.approx(1.0, abs=1e-12)
    # two Dirac masses by hand: the field is V y whatever A, so the ratio to C2 W2 is |V| / C2
    R, nA = 1.0, 0.05
    assert lora.dirac_pair_ratio(R**2 * nA) == pytest.approx(1.0 / lora.c2_constant(R, nA, 1.0))
    assert lora.dirac_pair_ratio(0.9 * z) > 1 > lora.dirac_pair_ratio(1.1 * z)
    with pytest.raises(ValueError, match="R"):
        lora.c2_constant(0.0, 1.0, 1.0)


def test_field_bounds_printed_and_sharp():
    g = torch.Generator().manual_seed(4)
    A, V, dA, dV = (torch.randn(3, 3, generator=g, dtype=f64) for _ in range(4))
    b = lora.field_bounds(1.5, A, V, dA, dV)
    nA, nV, ndA, ndV = (lora.op_norm(M) for M in (A, V, dA, dV))
    nmin = min(nV, lora.op_norm(V + dV))
    assert b.field == pytest.approx(nV * 1.5)
    assert b.jacobian == pytest.approx(2 * b.jacobian_sharp) and b.jacobian_sharp == pytest.approx(nA * nV * 1.5**2)
    assert b.qk == pytest.approx(4 * b.qk_sharp) and b.qk_sharp == pytest.approx(1.5**3 * nV * ndA)
    assert b.general == pytest.approx(2 * 1.5**3 * nmin * ndA + ndV * 1.5)
    assert b.general_sharp == pytest.approx(1.5**3 * nmin * ndA + ndV * 1.5)
    assert b.c2 == pytest.approx(lora.c2_constant(1.5, nA, nV))
    with pytest.raises(ValueError, match="dV"):
        lora.field_bounds(1.0, A, V, dA, torch.zeros(2, 2, dtype=f64))


def test_bound_crossing_time_is_where_the_bound_meets_the_level():
    g = torch.Generator().manual_seed(1)
    A, V, dV = (torch.randn(3, 3, generator=g, dtype=f64) / 3 for _ in range(3))
    for eps in (1e-2, 1e-4):
        t = lora.bound_crossing_time(A, V, 0 * A, eps * dV, 1.0, 0.1)
        assert 0 < t < 10
        at = lora.prop31_bound(A, V, 0 * A, eps * dV, 1.0, [0.999 * t, t]).log10_w2_bound
        assert float(at[0]) < -1.0 <= float(at[1]) + 1e-9
    # smaller perturbations, longer windows; a bound already above the level gives 0
    assert lora.bound_crossing_time(A, V, 0 * A, 1e-4 * dV, 1.0, 0.1) > lora.bound_crossing_time(A, V, 0 * A, 1e-2 * dV, 1.0, 0.1)
    assert lora.bound_crossing_time(A, V, 0 * A, 10 * dV, 1.0, 0.1) == 0.0


def test_davis_kahan_drift_bound_holds_on_random_updates():
    # The explicit constant 2 sqrt(2) (Yu, Wang, Samworth) with |R| <= |b| + |E|: never exceeded,
    # including updates that break condition (15); the exact drift comes from eigh (spectral_perturbation).
    g = torch.Generator().manual_seed(7)
    worst = 0.0
    for k in range(300):
        d = 3 + k % 5
        Q = init.random_orthogonal(d, generator=g)
        lam = torch.sort(torch.rand(d, generator=g, dtype=f64), descending=True).values
        V = Q @ torch.diag(lam) @ Q.T
        W = torch.randn(d, d, generator=g, dtype=f64)
        dV = (10 ** (-3 + 3.5 * torch.rand(1, generator=g, dtype=f64))).item() * (W + W.T) / 2
        sp = lora.spectral_perturbation(V, dV)
        dk = lora.davis_kahan_drift_bound(sp.gap, sp.a, sp.b_norm, sp.E_norm)
        if math.isfinite(dk):
            assert sp.drift <= dk * (1 + 1e-9)
            worst = max(worst, sp.drift / dk)
    assert 0.05 < worst <= 1.0
    assert lora.davis_kahan_drift_bound(1.0, -1.5, 0.1, 0.1) == math.inf
