"""Issue 42: a precomputed Gram matrix is checked as a kernel matrix (square, finite, symmetric, positive
semi-definite within a jitter of GRAM_JITTER x its mean diagonal) by one function, in the Python API and
in the spec path alike; a refusal says how far the matrix is from one."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpmodels.driver.build import build_kernel
from gpmodels.driver.loader import spec_from_dict
from gpmodels.errors import InputError, SpecError
from gpmodels.kernels.precomputed import GRAM_JITTER, Precomputed, check_gram, index_inputs


def _psd(seed: int, n: int, rank: int, scale: float) -> np.ndarray:
    B = np.random.default_rng(seed).standard_normal((n, rank)) * scale
    G = B @ B.T
    return (G + G.T) / 2


@given(seed=st.integers(0, 10**6), n=st.integers(1, 12), rank=st.integers(1, 12), scale=st.floats(1e-3, 1e3))
def test_generated_kernel_matrices_are_accepted_low_rank_included(seed, n, rank, scale):
    G = _psd(seed, n, min(rank, n), scale)
    np.testing.assert_array_equal(Precomputed(G).gram(index_inputs(range(n)), index_inputs(range(n))), G)


@given(
    seed=st.integers(0, 10**6),
    n=st.integers(2, 12),
    depth=st.floats(1e-5, 10.0),
)
def test_generated_indefinite_matrices_are_refused_with_their_smallest_eigenvalue(seed, n, depth):
    """G = B B^T - depth * mean(diag) * v v^T (|v| = 1, v orthogonal to nothing in particular) has an
    eigenvalue at most -depth * mean(diag) + (B B^T's part along v): made indefinite beyond the jitter."""
    G = _psd(seed, n, n, 1.0)
    w, V = np.linalg.eigh(G)
    v = V[:, 0]
    G = G - (w[0] + depth * np.mean(np.diag(G))) * np.outer(v, v)
    G = (G + G.T) / 2
    lam = np.linalg.eigvalsh(G)[0]
    assert lam < -GRAM_JITTER * np.mean(np.diag(G))
    with pytest.raises(InputError, match="positive semi-definite") as info:
        Precomputed(G)
    message = str(info.value)
    if "diagonal entries are negative" not in message:
        assert "smallest eigenvalue is" in message
        stated = float(message.split("smallest eigenvalue is ")[1].split(",")[0])
        assert stated == pytest.approx(lam, rel=1e-2, abs=1e-10 * np.abs(G).max())


@pytest.mark.parametrize(
    ("G", "fragment"),
    [
        (np.array([[1.0, 0.5], [0.4, 1.0]]), "symmetric"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), "finite|NaN"),
        (np.array([[-1.0, 0.0], [0.0, 1.0]]), "diagonal entries are negative"),
        (np.ones((2, 3)), "square"),
        (np.array([[1.0, 2.0], [2.0, 1.0]]), "smallest eigenvalue is -1"),
    ],
)
def test_each_property_is_refused_by_name(G, fragment):
    with pytest.raises(InputError, match=fragment):
        check_gram(G)


@pytest.mark.parametrize("G", [np.array([[1.0, 2.0], [2.0, 1.0]]), np.array([[-1.0, 0.0], [0.0, 1.0]])])
def test_the_spec_path_runs_the_same_check_and_names_the_key(tmp_path, G):
    np.save(tmp_path / "g.npy", G)
    spec = spec_from_dict(
        {
            "name": "g",
            "data": {"path": str(tmp_path / "d.npz"), "test": "split"},
            "model": {"kernel": {"type": "precomputed", "gram": str(tmp_path / "g.npy")}},
        }
    )
    with pytest.raises(SpecError, match="model.kernel.*positive semi-definite") as info:
        build_kernel(spec.model.kernel, index_inputs([0, 1]), tmp_path)
    with pytest.raises(InputError) as direct:
        check_gram(G)
    assert str(direct.value).split("must be", 1)[1] in str(info.value)
