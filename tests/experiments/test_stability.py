"""Chapter "stability" experiments (companion.experiments.stability) on small sizes, against
independent numbers (identity-coupling upper bound for W2, the 2 x 2 closed form of the perturbed
top eigenvector, the exact eigenvectors the cone-collapse lemma predicts), and their claims: each
verdict is the chapter's on the experiment's result and changes on a wrong input."""

import numpy as np
import pytest
import torch

from companion import init, metrics, simulate
from companion.attention import attend, field_jacobian, rescaled_field_at, rescaled_field_jacobian
from companion.registry import judge
from companion.experiments import stability as st
from companion.models import Euclidean

SMALL = dict(n=8, t1=40.0, dt=0.2)


def statuses(result):
    return [c.status for c in judge(result)]


@pytest.fixture(scope="module")
def r31():
    return st.prop31(n=8, trials=2, eps=(1e-3, 1e-2, 1e-1), t1=1.0, save_count=5, dt=0.1)


@pytest.fixture(scope="module")
def r33():
    return st.prop33(steps=3, **SMALL)


@pytest.fixture(scope="module")
def rmit():
    return st.mitigation(trials=4, norms=(0.1, 1.2), **SMALL)


def test_prop31_small(r31):
    r = r31
    assert r["w2"].shape == (3, 3, 2, 5)
    assert np.all(r["w2"][..., 0] < 1e-12)  # same initial tokens
    assert r["all_below"] and r["all_below_appendix"]
    assert np.all(np.abs(r["slopes"] - 1) < 0.05)  # W2 linear in eps for small eps
    # the bound's own eps-exponent: 1 without dA, 1/2 with (L_t has |dA| |V|, linear in eps)
    assert r["bound_eps_exponent"].tolist() == pytest.approx([1.0, 0.5, 0.5], abs=1e-9)


ROWS31 = ["A-prop3.1-bound", "A-corC.9-v-bound", "A-propC.10-qk-bound", "A-prop3.1-linear-eps", "A-remarkC.7-rescaled"]


def test_prop31_claims_follow_the_measurement(r31):
    rows = judge(r31)
    assert [c.id for c in rows] == ROWS31
    # As in the chapter: the three bounds hold (vacuously: tens of decades of slack), W2 is linear in
    # eps, and eq. (69)'s constant e^{-t |lambda_n|} fails for the Gaussian V.
    assert [c.status for c in rows] == ["reproduced"] * 4 + ["not-reproduced"]
    assert all(c.measured > 10 and not c.fragile for c in rows[:3])
    assert all(c.quote and c.basis == "paper" and c.test for c in rows)
    # A measurement above a bound (negative slack) fails that bound's row, and only it.
    for key, row in (("min_slack", 0), ("min_slack_appendix", 0), ("min_slack_v", 1), ("min_slack_qk", 2)):
        got = statuses(dict(r31, **{key: -0.5}))
        assert got[row] == "not-reproduced" and got.count("not-reproduced") == 2, (key, got)
    # W2 ~ sqrt(eps) (the printed bound's exponent with dA != 0) contradicts W2 <= c eps: the local exponent is 1/2.
    sqrt_eps = dict(r31, w2=r31["w2"] / np.sqrt(r31["eps"])[None, :, None, None])
    assert statuses(sqrt_eps)[3] == "not-reproduced"
    # ... and an exponent below 1 in one family only makes the row partly (the other families still hold).
    w2 = r31["w2"].copy()
    w2[0] = w2[0] / np.sqrt(r31["eps"])[:, None, None]
    row = judge(dict(r31, w2=w2))[3]
    assert row.status == "partly" and "fails: dV only" in row.why
    # With the true Lipschitz constant |e^{-tV}|_op the ratio is <= 1 (any map); that ratio passes (69)'s check.
    assert r31["max_ratio69_true"] <= 1 + 1e-9 < r31["max_ratio69"]
    assert statuses(dict(r31, max_ratio69=r31["max_ratio69_true"]))[4] == "reproduced"


def test_prop31_bounds_not_checkable_without_their_family():
    r = st.prop31(n=6, trials=2, eps=(1e-3, 1e-2), families=("both",), t1=0.5, save_count=3, dt=0.1)
    assert [c.status for c in judge(r)][1:3] == ["not-checkable", "not-checkable"]


def test_prop31_linear_eps_tests_the_papers_direction_only():
    # A real result at sizes far outside the linear range (|dV| up to 30 |V|): W2 grows faster than eps there
    # (exponent well above 1), which W2 <= c eps does not forbid; only an exponent below 1 would contradict it.
    r = st.prop31(n=8, trials=3, eps=(1.0, 10.0, 30.0), families=("V",), t1=1.0, save_count=3, dt=0.05)
    assert abs(r["slopes"][0] - 1) > 0.2
    assert statuses(r)[3] == "reproduced", r["slopes"]


def test_remark_c7_rescaled_w2_is_a_pushforward():
    # A pushforward by e^{-tV} changes W2 by at most |e^{-tV}|_op, whatever V is.
    r = st.prop31(n=6, trials=1, eps=(1e-3, 1e-2), families=("V",), t1=0.5, save_count=3, dt=0.1)
    ratio = r["w2_rescaled"][..., 1:] / r["w2"][..., 1:]
    assert np.all(ratio <= r["lip_true"][1:] * (1 + 1e-9))
    # eq. (69)'s constant from V redrawn as the experiment draws it (A first, then V, operator norm 1)
    g = torch.Generator().manual_seed(0)
    torch.randn(4, 4, generator=g, dtype=torch.float64)
    V = torch.randn(4, 4, generator=g, dtype=torch.float64).numpy()
    V = V / np.linalg.norm(V, 2)
    lam = np.abs(np.linalg.eigvals(V)).min()
    np.testing.assert_allclose(r["lip_claimed"], np.exp(-r["ts"] * lam), rtol=1e-12)


def test_prop31_w2_below_identity_coupling():
    # W2 is the optimum over couplings, so the identity coupling (token i <-> token i) bounds it.
    g = torch.Generator().manual_seed(3)
    d = 3
    A = torch.randn(d, d, generator=g, dtype=torch.float64) * 0.5
    V = torch.randn(d, d, generator=g, dtype=torch.float64) * 0.5
    x0 = init.ball(2, 10, d, 1.0, generator=g)
    x = simulate(Euclidean(A=A, V=V), x0, 1.0, dt=0.1).final
    y = simulate(Euclidean(A=A + 0.05, V=V - 0.05), x0, 1.0, dt=0.1).final
    w2 = metrics.wasserstein(x, y)
    ident = ((x - y) ** 2).sum(-1).mean(-1).sqrt()
    assert (w2 <= ident + 1e-12).all() and (w2 > 0).all()


def test_prop33_map_matches_two_by_two_closed_form(r33):
    r = r33["map"]
    ok = r["conv_err"] < 1e-6
    assert ok.sum() >= 5
    np.testing.assert_allclose(r["dyn_drift"][ok], r["exact_drift"][ok], atol=1e-6)
    # where (15) holds both dynamics converge and the drift obeys (16) with constant 1
    h = r["holds"].astype(bool)
    assert h.any() and np.all(r["base_err"][h] < 1e-6) and np.all(r["conv_err"][h] < 1e-6)
    assert np.all(r["dyn_drift"][h] <= r["bound"][h] + 1e-9)


def test_drift_matches_limit_holds_on_the_map_and_catches_a_wrong_closed_form(r33):
    r = r33["map"]
    # Where the perturbed top eigenvalue is double (tilde_gap 0: the map's cell with a = -gap), u1~ is
    # not defined: the closed form picks one vector of the eigenspace, the eigensolver and the slow
    # dynamics another, and which one depends on the processor's LAPACK (an Intel host differs here).
    simple = r["tilde_gap"] > 1e-9
    assert simple.sum() >= 6 and st.drift_matches_limit(r)[simple].all()
    # the closed form of a neighbouring angle (theta + 0.1) is outside the bound wherever X~(T) converged
    wrong = dict(r, exact_drift=2 * np.sin(2 * np.arcsin(r["exact_drift"] / 2) / 2 + 0.05))
    ok = (r["conv_err"] < 1e-3) & simple
    assert ok.any() and not st.drift_matches_limit(wrong)[ok].any()


def test_pole_err_is_the_distance_to_the_nearer_pole_past_the_crossing(one_thread):
    """dV = e u2 u2^T with e above the gap: u1~ = +-u2 is orthogonal to u1, its sign roundoff; the
    tokens of the cone around u1 reach one pole, and pole_err measures the distance to it."""
    from companion.experiments.stability._shared import run_pairs

    cfg = st.Prop33Config(d=3, lambdas=(1.5, 1.0, 0.2), n=8, t1=60.0, dt=0.1)
    V = torch.diag(torch.tensor(cfg.lambdas, dtype=torch.float64))
    e1, e2 = torch.eye(3, dtype=torch.float64)[0], torch.eye(3, dtype=torch.float64)[1]
    x0 = init.cone(1, cfg.n, 3, cfg.gamma, axis=e1, generator=torch.Generator().manual_seed(0))[0]
    x0 = torch.cat([x0[:, :1], x0[:, 1:2].abs() + 0.05, x0[:, 2:]], dim=1)
    x0 = x0 / x0.norm(dim=1, keepdim=True)  # every token on the +e2 side ...
    mirror = x0 * torch.tensor([1.0, -1.0, 1.0], dtype=torch.float64)  # ... or every token on the -e2 side
    dV = torch.stack([1.0 * torch.outer(e2, e2), 0.1 * torch.outer(e1, e1)])  # past the crossing; in span
    r, m = (run_pairs(torch.stack([V, V]), dV, x, e1, cfg, "cpu") for x in (x0, mirror))
    # the two token sets end at opposite poles: one of them is at -u1~, whatever sign u1~ got
    assert max(r["conv_err"][0], m["conv_err"][0]) > 2 - 1e-6 and min(r["conv_err"][0], m["conv_err"][0]) < 1e-6
    assert r["pole_err"][0] < 1e-6 and m["pole_err"][0] < 1e-6
    for x in (r, m):  # the cone fixes the sign: the same number
        assert x["conv_err"][1] < 1e-6 and x["pole_err"][1] == x["conv_err"][1] and np.all(x["pole_err"] <= x["conv_err"])


def test_prop33_families_small(r33):
    for fam in ("a", "b", "E"):
        f = r33["families"][fam]
        h = f["holds"].astype(bool)
        assert np.all(f["conv_err"][h] < 1e-6)
        np.testing.assert_allclose(f["dyn_drift"][h], f["eig_drift"][h], atol=1e-6)
    # in-span update with gap + a > 0 and orthogonal updates without a crossing: no drift at all
    assert np.all(r33["families"]["E"]["eig_drift"] < 1e-9)
    fa = r33["families"]["a"]
    assert np.all(fa["dyn_drift"][fa["size"] > -0.5 + 1e-9] < 1e-6)


def test_lemma_c13_rate_bounds_the_simulated_error(r33):
    for f in r33["families"].values():
        assert np.all(f["base_err"] <= f["lemma_base"] * (1 + 1e-6) + 1e-9)
        ok = np.isfinite(f["lemma_pert"])
        assert np.all(f["conv_err"][ok] <= f["lemma_pert"][ok] * (1 + 1e-6) + 1e-9)


def test_prop33_claims_follow_the_measurement(r33):
    assert statuses(r33) == ["reproduced", "reproduced"]
    # The reading "X~ converges to u1" (not u1~): the mixing family's tokens are then far from
    # their limit, beyond Lemma C.13's rate.
    fams = {k: dict(v) for k, v in r33["families"].items()}
    fams["b"]["conv_err"] = np.maximum(fams["b"]["conv_err"], fams["b"]["dyn_drift"])
    assert statuses(dict(r33, families=fams))[0] != "reproduced"
    # A drift 1.5 times bound (16) is within the proof's constant 2 sqrt(2) = 2.83 (the chapter's sharper 1 is
    # printed, not used); 3 times it is beyond: violated.
    fams = {k: dict(v) for k, v in r33["families"].items()}
    fams["b"]["dyn_drift"] = 1.5 * fams["b"]["bound"]
    row = judge(dict(r33, families=fams))[1]
    assert row.status == "reproduced" and "above the constant" in row.statement
    fams["b"]["dyn_drift"] = 3.0 * fams["b"]["bound"]
    assert statuses(dict(r33, families=fams))[1] == "not-reproduced"
    # Remark 3.4's tolerance is our reading of its "simeq": the row says so.
    assert judge(st.remark34(ranks=(1,), n=4, t1=40.0, dt=0.2))[0].basis == "reading"


def test_remark34_small_and_its_claim():
    r = st.remark34(ranks=(1, 3), n=8, t1=100.0, dt=0.2)  # effective gap ~0.3: needs long t
    assert np.all(r["rel_err_with_a"] < 0.05) and np.all(r["rel_err_printed"] < 0.1)
    assert r["measured"][1] > r["measured"][0]  # more directions, more drift
    np.testing.assert_allclose(r["measured"], r["eig_sq"], rtol=1e-5)
    assert statuses(r) == ["reproduced"]
    # Eq. (17) for sigma = 0.3 against the dynamics of an update 4/3 as large: a wrong model fails.
    other = st.remark34(ranks=(1, 3), sigma=0.4, n=8, t1=100.0, dt=0.2)
    wrong = dict(r, rel_err_printed=np.abs(r["pred_printed"] - other["measured"]) / other["measured"])
    assert statuses(wrong) == ["not-reproduced"]


def test_mitigation_small_and_its_claim(rmit):
    assert np.all(rmit["raw"] > 1e-3)
    assert np.all(rmit["proj"][0] < 1e-6)  # below the gap: an identity
    assert rmit["proj_commutator"].min() > 0.05  # E does not commute with Lambda
    # Above the gap the outcome of each draw is the block-structure prediction (independent: eigh of P(V+E)P).
    moved = rmit["proj"][1] >= st.MOVED
    np.testing.assert_array_equal(moved, rmit["proj_crosses"][1])
    assert rmit["crossing_predicted"] == 1.0
    # A crossing needs |E|_op >= gap (Weyl: the top eigenvalue of P(V + E)P is at most lambda_2 + |E|_op), so a
    # draw that moves is outside (15) for the projected update (a = b = 0): the row, on that reading, holds.
    assert np.all(rmit["proj_E_norm"][rmit["proj"] >= st.MOVED] >= rmit["gap"])
    rows = judge(rmit)
    assert [c.status for c in rows] == ["reproduced"] and rows[0].basis == "reading"
    # A projected draw under (15) that moves (the fate of a wrong mitigation) contradicts it.
    under = rmit["proj_E_norm"] < rmit["gap"]
    assert statuses(dict(rmit, proj=np.where(under, 0.5, rmit["proj"]))) == ["not-reproduced"]


def test_mitigation_not_checkable_without_a_draw_under_15():
    r = st.mitigation(trials=1, norms=(0.1,), n=4, t1=20.0, dt=0.2)
    assert statuses(r) == ["reproduced"]  # |E|_op <= |E|_F = 0.1 < gap: under (15)
    assert statuses(dict(r, proj_E_norm=np.full_like(r["proj_E_norm"], 10.0))) == ["not-checkable"]


@pytest.mark.parametrize(
    "fn, kw, err, msg",
    [
        (st.prop31, dict(profile="huge"), ValueError, "profile"),
        (st.prop31, dict(families=("Q",)), ValueError, "families"),
        (st.prop33, dict(lambdas=(1.0, 1.0, 0.5, 0.4, 0.3, 0.2)), ValueError, "strictly decreasing"),
        (st.prop33, dict(lambdas=(1.0, 0.5)), ValueError, "lambdas must hold"),
        (st.remark34, dict(ranks=(6,)), ValueError, "ranks"),
        (st.mitigation, dict(bogus=1), ValueError, "bogus"),
        (st.mitigation, dict(trials="6"), TypeError, "trials"),
    ],
)
def test_bad_input(fn, kw, err, msg):
    with pytest.raises(err, match=msg):
        fn(**kw)


# ----------------------------------------------------------------------------- Appendix C (issue 17)

from companion.theory import lora  # noqa: E402


@pytest.fixture(scope="module")
def rfield():
    return st.field_bounds(trials=6, queries=6, radii=(0.5, 2.0), norms_A=(0.05, 1.0))


def test_field_jacobian_is_the_weighted_covariance():
    # Independent closed form: grad_x m_A = Cov_w(y) A, so grad X = V Cov_w(y) A (w the softmax weights at x).
    g = torch.Generator().manual_seed(2)
    A, V = (torch.randn(2, 3, 3, generator=g, dtype=torch.float64) for _ in range(2))
    Y = torch.randn(2, 5, 3, generator=g, dtype=torch.float64)
    x = torch.randn(2, 4, 3, generator=g, dtype=torch.float64)
    J = field_jacobian(x, Y, A, V)
    w = torch.softmax(torch.einsum("tkd,ted,tme->tkm", x, A, Y), dim=-1)  # <A x, y>
    ybar = torch.einsum("tkm,tmd->tkd", w, Y)
    C = torch.einsum("tkm,tmd,tme->tkde", w, Y, Y) - ybar[..., :, None] * ybar[..., None, :]
    np.testing.assert_allclose(J.numpy(), (V[:, None] @ C @ A[:, None]).numpy(), atol=1e-12)


def test_field_bounds_extremal_cases_match_closed_forms(rfield):
    ext = rfield["extremal"]
    for key in ("field", "jacobian", "value", "qk_in", "general_in", "c43"):
        got, want = ext[key]
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=key)
    got, want = ext["qk_out"]  # off the ball a random query may exceed the chosen one by O(b^3)
    np.testing.assert_allclose(got, want, rtol=1e-3)
    # the derived sharp constants hold on every case (|x| <= R)
    for key in ("r41_sharp", "r45_sharp", "r49_sharp"):
        assert np.nanmax(rfield[key]) <= 1 + 1e-9, key
    # (43) fails exactly below the derived threshold for the Dirac pair
    dirac = rfield["kind"] == 1
    np.testing.assert_array_equal(rfield["r42"][dirac] > 1, rfield["z"][dirac] < lora.c43_threshold())


def test_field_bounds_claims_follow_the_measurement(rfield):
    rows = judge(rfield)
    assert [c.id for c in rows] == ["A-lemmaC.1-field-bound", "A-lemmaC.1-jacobian-bound", "A-lemmaC.1-lipschitz-constant",
                                    "A-lemmaC.2-value-bound", "A-lemmaC.3-qk-bound", "A-lemmaC.4-general-bound"]
    assert [c.status for c in rows] == ["reproduced", "reproduced", "not-reproduced", "reproduced", "partly", "partly"]
    # Each inequality fails when its measurement moves 1 % above the bound ...
    for key, row in (("r40", 0), ("r41", 1), ("r44", 3), ("r45_in", 4), ("r49_in", 5)):
        moved = dict(rfield, **{key: np.maximum(rfield[key], 1.01)})
        assert statuses(moved)[row] == "not-reproduced", key
    # C.3 / C.4 name their cases: the bound holds on the ball and fails at |x| = 10R (a closed form: tanh(10 z')/(4 z')).
    assert all(c.why.startswith("holds: |x| <= R") and "fails: |x| = 10R" in c.why for c in rows[4:])
    assert "two Dirac masses" in rows[2].why and not rows[0].why
    # ... (42)-(43) holds where R^2 |A| is large, and C.3 / C.4 are reproduced when nothing is measured off the ball.
    big = rfield["z"] > 1
    assert statuses(dict(rfield, r42=np.where(big, rfield["r42"], 0.0)))[2] == "reproduced"
    assert statuses(dict(rfield, r45_out=rfield["r45_in"], r49_out=rfield["r49_in"]))[4:] == ["reproduced"] * 2
    # A wrong model: weights not normalised (the "usa" field, sum_j e^{<Ax, y_j>} V y_j / m) breaks (40).
    c = st.field_cases(st.FieldBoundsConfig(trials=4, queries=4, radii=(2.0,), norms_A=(1.0,)), torch.Generator().manual_seed(0))
    x, Y, A, V = c["xin"], c["Y"], c["A"], c["V"]
    usa = attend(x @ A.transpose(-1, -2), Y, Y @ V.transpose(-1, -2), 1.0, normalization="usa").norm(dim=-1).amax(-1)
    r40 = (usa / (torch.linalg.matrix_norm(V, ord=2) * c["R"])).numpy()
    assert statuses(dict(rfield, r40=r40))[0] == "not-reproduced"


@pytest.fixture(scope="module")
def rwin():
    return st.closeness_window(n=8, eps=(0.03, 0.01, 0.003), t1=30.0, save_count=61)


def test_closeness_window_shape(rwin):
    r = rwin
    assert np.all(np.diff(r["t_star"]) > 0)  # smaller perturbations stay close longer
    assert np.all(r["t_bound"] < 0.1 * r["t_star"])  # the guaranteed window is far shorter
    # W2 is linear in eps at early times: the growth curves W2/eps coincide (independent of the level)
    early = r["ts"] <= 2.0
    g = r["w2"][:, early][:, 1:] / r["eps"][:, None]
    np.testing.assert_allclose(g[0], g[-1], rtol=0.02)
    # the slope of t* against ln(1/eps) is 1 / lambda, lambda read off W2's growth (a second estimate)
    assert r["slope"] * r["growth_rate"] == pytest.approx(1.0, abs=0.3)


def test_closeness_window_claims_follow_the_measurement(rwin):
    assert statuses(rwin) == ["reproduced"]
    # A measured t* before the guaranteed window (the bound violated) fails the row.
    assert statuses(dict(rwin, min_ratio=0.9)) == ["not-reproduced"]


@pytest.fixture(scope="module")
def rinit():
    return st.initial_laws(n=8, trials=1, deltas=(1e-2, 1e-1), t1=2.0, save_count=6, lip_points=32)


def test_initial_laws_small(rinit):
    r = rinit
    assert np.all(r["ratio"][..., 0] == pytest.approx(1.0))  # equality at t = 0
    assert r["max_ratio"] <= 1 and r["max_ratio_proof"] <= 1
    assert np.all(np.diff(r["L"], axis=1) >= 0)  # running maximum
    # The sampled Lipschitz constant is at least |V|_op minus the attention term's share, and it matches a
    # finite-difference Jacobian at a token (a second method).
    g = torch.Generator().manual_seed(0)
    V = torch.diag(torch.tensor([0.5, 0.1, -0.4], dtype=torch.float64))[None]
    A = torch.eye(3, dtype=torch.float64)[None]
    Y = torch.randn(1, 5, 3, generator=g, dtype=torch.float64)
    x = Y[:, :1].clone()
    J = np.zeros((3, 3))
    for b in range(3):
        e = torch.zeros(3, dtype=torch.float64)
        e[b] = 1e-6
        J[:, b] = ((rescaled_field_at(x + e, Y, A, V, 0.3) - rescaled_field_at(x - e, Y, A, V, 0.3)) / 2e-6)[0, 0].numpy()
    lip = torch.linalg.matrix_norm(rescaled_field_jacobian(x, Y, A, V, 0.3), ord=2).amax(-1)
    assert lip.item() == pytest.approx(np.linalg.norm(J, 2), rel=1e-6)


def test_initial_laws_claims_follow_the_measurement(rinit):
    assert statuses(rinit) == ["reproduced"]
    assert statuses(dict(rinit, max_ratio=1.0 + 1e-6)) == ["not-reproduced"]


@pytest.fixture(scope="module")
def rcone():
    return st.cone_collapse(n=8, gammas=(0.05, 0.5), trials=2, t1=30.0, dt=0.1, save_count=31)


def test_cone_collapse_small(rcone):
    r = rcone
    assert np.all(r["phi0"] >= r["gamma"])
    assert np.all(r["final_err"] < 1e-3)  # every token at u1
    assert r["max_ratio"] <= 1


def test_cone_collapse_claims_follow_the_measurement(rcone):
    assert statuses(rcone) == ["reproduced"]
    # The rate of a wrong model (a gap three times too large, a faster guaranteed collapse) is violated.
    ts = rcone["ts"]
    fast = np.stack([lora.cone_collapse_bound(float(p), 3 * float(g), ts).numpy() for p, g in zip(rcone["phi0"], rcone["gap"])])
    ok = (fast > st.CONE_FLOOR) & (np.asarray(ts) > 0)
    wrong = float(np.max(np.where(ok, rcone["err"] / np.where(ok, fast, 1.0), 0.0)))
    assert statuses(dict(rcone, max_ratio=wrong)) == ["not-reproduced"]


def test_top_eigvec_against_spectral_perturbation():
    r = st.top_eigvec(dims=(3, 5), trials=200)
    assert r["max_dk_ratio"] <= 1 + 1e-9 and r["max_ratio"] <= lora.DAVIS_KAHAN_CONSTANT
    assert 0 < r["kept"] <= r["drawn"] == 400
    # under (15) the constant of (16) is at most 1 (the chapter's derivation), and well above 0
    assert 0.1 < r["max_ratio_holds"] <= 1
    assert statuses(r) == ["reproduced"]
    assert statuses(dict(r, max_ratio=1.01 * lora.DAVIS_KAHAN_CONSTANT)) == ["not-reproduced"]


@pytest.mark.parametrize(
    "fn, kw, err, msg",
    [
        (st.field_bounds, dict(radii=(0.0,)), ValueError, "radii"),
        (st.closeness_window, dict(eps=(0.01, 0.1, 0.001)), ValueError, "decreasing"),
        (st.initial_laws, dict(lambdas=(1.0, 0.5)), ValueError, "lambdas"),
        (st.cone_collapse, dict(gammas=(1.5,)), ValueError, "gammas"),
        (st.top_eigvec, dict(gaps=(0.5, 2.0)), ValueError, "gaps"),
    ],
)
def test_bad_input_appendix_c(fn, kw, err, msg):
    with pytest.raises(err, match=msg):
        fn(**kw)
