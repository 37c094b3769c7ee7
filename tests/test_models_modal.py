"""Paper C's modal coordinates (companion.models.modal): the modal model's checks and the Jacobian in V's eigenbasis."""
import pytest
import torch

from companion import init, models
from companion.integrate import simulate
from companion.models.modal import ModalModel, pure_mode_jacobian

F64 = torch.float64


def _V(lams, seed=0):
    Q = init.random_orthogonal(len(lams), generator=torch.Generator().manual_seed(seed))
    V = (Q * torch.tensor(lams, dtype=F64)) @ Q.T
    return (V + V.T) / 2


def test_modal_model_refuses_bad_states():
    m = ModalModel(torch.tensor([1.0, 0.5, -0.5], dtype=F64))
    with pytest.raises(ValueError, match="d = 2"):
        simulate(m, torch.tensor([[[1.0, 0.0]]], dtype=F64), 1.0)
    with pytest.raises(ValueError, match="sphere"):
        simulate(m, torch.tensor([[[1.0, 1.0, 0.0]]], dtype=F64), 1.0)


def test_modal_model_is_the_field_in_eigen_coordinates():
    # F(x) written in the eigenbasis is the modal field of the coordinates c = E^T x
    lam = torch.tensor([1.2, 0.3, -0.7], dtype=F64)
    E = init.random_orthogonal(3, generator=torch.Generator().manual_seed(1))
    V = (E * lam) @ E.T
    X = init.uniform_sphere(2, 5, 3, generator=torch.Generator().manual_seed(2))
    direct = models.spectral(V, 0.8).vector_field(0.0, X) @ E
    assert (ModalModel(lam, 0.8).vector_field(0.0, X @ E) - direct).abs().max() < 1e-13


@pytest.mark.parametrize("signs", [[1.0, 1.0, -1.0], [1.0, -1.0, 1.0, -1.0], [-1.0]])
def test_pure_mode_jacobian_is_an_orthogonal_change_of_basis(signs):
    # Reassembled, the blocks have the spectrum of the tangent Jacobian: only the basis changed.
    V = _V([1.0, 0.4, -0.8, -1.3], seed=3)
    lam, E = torch.linalg.eigh(V)
    s = torch.tensor(signs, dtype=F64)
    n, d, p = len(signs), 4, 2
    model = models.spectral(V, 1.1)
    J = pure_mode_jacobian(model, E, p, s)  # (d - 1, d - 1, n, n)
    assert J.shape == (d - 1, d - 1, n, n)
    flat = J.permute(2, 0, 3, 1).reshape(n * (d - 1), n * (d - 1))
    X = s[:, None] * E[:, p][None, :]
    ev = torch.linalg.eigvals(models.tangent_jacobian(model, X)).real.sort().values
    assert (torch.linalg.eigvals(flat).real.sort().values - ev).abs().max() < 1e-10
    # finite differences and autograd agree
    assert (pure_mode_jacobian(model, E, p, s, mode="fd") - J).abs().max() < 1e-7
