"""Chapter "stability" experiments (companion.experiments.stability) on small sizes, against
independent numbers: identity-coupling upper bound for W2, the 2 x 2 closed form of the perturbed
top eigenvector, and the exact eigenvectors the cone-collapse lemma predicts."""
import math

import numpy as np
import pytest
import torch

from companion import init, metrics, simulate
from companion.experiments import stability as st
from companion.models import Euclidean
from companion.theory import lora

SMALL = dict(n=8, t1=40.0, dt=0.2)


def test_prop31_small():
    r = st.prop31_wasserstein(n=8, seeds=2, eps=(1e-3, 1e-2, 1e-1), t1=1.0, n_save=5, dt=0.1)
    assert r["w2"].shape == (3, 3, 2, 5)
    assert np.all(r["w2"][..., 0] < 1e-12)  # same initial tokens
    assert r["all_below"] and r["all_below_appendix"]
    assert np.all(np.abs(r["slopes"] - 1) < 0.05)  # W2 linear in eps for small eps
    # the bound's own eps-exponent: 1 without dA, 1/2 with (L_t has |dA| |V|, linear in eps)
    assert r["bound_eps_exponent"].tolist() == pytest.approx([1.0, 0.5, 0.5], abs=1e-9)


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


def test_prop33_map_matches_two_by_two_closed_form():
    r = st.prop33_map(steps=3, **SMALL)
    ok = r["conv_err"] < 1e-6
    assert ok.sum() >= 5
    np.testing.assert_allclose(r["dyn_drift"][ok], r["exact_drift"][ok], atol=1e-6)
    # where (15) holds both dynamics converge and the drift obeys (16) with constant 1
    h = r["holds"].astype(bool)
    assert h.any() and np.all(r["base_err"][h] < 1e-6) and np.all(r["conv_err"][h] < 1e-6)
    assert np.all(r["dyn_drift"][h] <= r["bound"][h] + 1e-9)


def test_prop33_families_small():
    r = st.prop33_families(steps=3, **SMALL)
    for fam in ("a", "b", "E"):
        f = r["families"][fam]
        h = f["holds"].astype(bool)
        assert np.all(f["conv_err"][h] < 1e-6)
        np.testing.assert_allclose(f["dyn_drift"][h], f["eig_drift"][h], atol=1e-6)
    # in-span update with gap + a > 0 and orthogonal updates without a crossing: no drift at all
    assert np.all(r["families"]["E"]["eig_drift"] < 1e-9)
    fa = r["families"]["a"]
    assert np.all(fa["dyn_drift"][fa["size"] > -0.5 + 1e-9] < 1e-6)


def test_remark34_small():
    r = st.remark34_ranks(ranks=(1, 3), n=8, t1=100.0, dt=0.2)  # effective gap ~0.3: needs long t
    assert np.all(r["rel_err_with_a"] < 0.05) and np.all(r["rel_err_printed"] < 0.1)
    assert r["measured"][1] > r["measured"][0]  # more directions, more drift
    np.testing.assert_allclose(r["measured"], r["eig_sq"], rtol=1e-5)


def test_mitigation_small():
    r = st.mitigation(draws=2, norms=(0.1, 0.3), **SMALL)
    assert np.all(r["raw"] > 1e-3)
    assert np.all(r["proj"] < 1e-6)


@pytest.mark.parametrize(
    "fn, kw, err, msg",
    [
        (st.prop31_wasserstein, dict(profile="huge"), ValueError, "profile"),
        (st.prop31_wasserstein, dict(families=("Q",), n=4, seeds=1, t1=0.1, n_save=2), ValueError, "families"),
        (st.prop33_families, dict(lambdas=(1.0, 1.0, 0.5, 0.4, 0.3, 0.2)), ValueError, "strictly decreasing"),
        (st.prop33_map, dict(lambdas=(1.0, 0.5)), ValueError, "lambdas must hold"),
        (st.remark34_ranks, dict(ranks=(6,)), ValueError, "ranks"),
        (st.mitigation, dict(bogus=1), TypeError, "bogus"),
    ],
)
def test_bad_input(fn, kw, err, msg):
    with pytest.raises(err, match=msg):
        fn(**kw)


def test_lemma_c13_rate_bounds_the_simulated_error():
    r = st.prop33_families(steps=3, **SMALL)
    for f in r["families"].values():
        assert np.all(f["base_err"] <= f["lemma_base"] * (1 + 1e-6) + 1e-9)
        ok = np.isfinite(f["lemma_pert"])
        assert np.all(f["conv_err"][ok] <= f["lemma_pert"][ok] * (1 + 1e-6) + 1e-9)
