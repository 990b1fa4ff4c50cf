"""FedDUAL's re-weighted Wasserstein barycenter (eqs. 12–13) on vectors small enough to follow by hand."""
import numpy as np
import pytest
import torch

from fedkit.algorithms.barycenter import wasserstein_barycenter


def w1(a, b):
    """W1 between the value distributions of two equal-length vectors: the mean gap of their sorted values."""
    return np.abs(np.sort(a) - np.sort(b)).mean()


def test_one_iteration_by_hand():
    u = np.array([[0.0, 1.0], [0.0, 1.02], [5.0, 9.0]])
    b = u.mean(0)
    gamma = np.exp(-np.array([w1(b, row) for row in u]) / 1.0)  # eq. 12, ε = 1
    expected = (gamma / 3) @ u / ((gamma / 3).sum() + 1e-10)  # eq. 13, w_k = 1/3
    out = wasserstein_barycenter(torch.tensor(u), eps=1.0, iterations=1)
    np.testing.assert_allclose(out.value.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(out.gamma.numpy(), gamma, rtol=1e-12)
    assert out.value.dtype == torch.float64 and out.collapse == "mixed"


def test_identical_clients_give_their_vector():
    u = torch.tensor([[0.3, -1.0, 2.0]] * 4)
    out = wasserstein_barycenter(u, eps=1e-5, iterations=20)
    torch.testing.assert_close(out.value, u[0].double(), rtol=1e-9, atol=0)


def test_a_permutation_of_entries_applied_to_every_client_permutes_the_barycenter():
    g = torch.Generator().manual_seed(0)
    u = torch.randn(5, 7, generator=g, dtype=torch.float64)
    perm = torch.randperm(7, generator=g)
    a = wasserstein_barycenter(u, eps=0.5, iterations=10).value
    b = wasserstein_barycenter(u[:, perm], eps=0.5, iterations=10).value
    torch.testing.assert_close(b, a[perm])


def test_huge_eps_is_the_plain_mean():
    u = torch.tensor([[0.0, 1.0], [2.0, 5.0], [1.0, -3.0]], dtype=torch.float64)
    torch.testing.assert_close(wasserstein_barycenter(u, eps=1e12, iterations=5).value, u.mean(0))


def test_tiny_eps_collapses_to_zero_when_every_client_is_far_from_the_mean():
    u = torch.tensor([[0.0, 1.0], [0.0, 1.02], [5.0, 9.0]], dtype=torch.float64)
    out = wasserstein_barycenter(u, eps=1e-5, iterations=3)
    assert out.collapse == "zero" and out.winner is None
    assert torch.equal(out.value, torch.zeros(2, dtype=torch.float64))


def test_tiny_eps_is_winner_take_all_onto_the_client_at_the_mean():
    u = torch.tensor([[0.0, 2.0], [-1.0, 3.0], [1.0, 1.0]], dtype=torch.float64)  # the mean is client 0's vector
    out = wasserstein_barycenter(u, eps=1e-5, iterations=5)
    assert out.collapse == "one" and out.winner == 0
    torch.testing.assert_close(out.value, u[0] / (1 + 3e-10), rtol=1e-12, atol=0)  # w_0 γ_0 = 1/3, + 1e-10


@pytest.mark.parametrize("eps, iterations", [(0.0, 10), (1e-5, 0)])
def test_bad_settings_are_refused(eps, iterations):
    with pytest.raises(ValueError, match="eps|iterations"):
        wasserstein_barycenter(torch.zeros(2, 3), eps=eps, iterations=iterations)


def test_w1_is_pots_and_a_fixed_point_ends_the_iterations_early():
    import ot

    from fedkit.algorithms.barycenter import w1_sorted

    g = torch.Generator().manual_seed(0)
    u, b = torch.randn(4, 50, generator=g, dtype=torch.float64), torch.randn(50, generator=g, dtype=torch.float64)
    torch.testing.assert_close(w1_sorted(b, u.sort(1).values), ot.wasserstein_1d(b[:, None].expand(-1, 4), u.T, p=1))
    far = torch.tensor([[0.0, 1.0], [5.0, 9.0]])  # both farther than 745 ε from their mean: b = 0 after one step
    once, many = wasserstein_barycenter(far, eps=1e-5, iterations=1), wasserstein_barycenter(far, iterations=10**6)
    assert torch.equal(once.value, many.value) and once.collapse == many.collapse == "zero"
