"""The linear kernel on a device (kernels/device/features.py): X (X^T B) with PyTorch's sparse CSR, or a
stored Gram matrix, chosen by the cost of one product as on the host; run on PyTorch's CPU tensors."""

import numpy as np
import pytest
import scipy.sparse as sp

from gpmodels.kernels.device.config import DeviceRepresentationConfig
from gpmodels.kernels.device.features import DeviceFeatureGram, DeviceLinearStoredGram
from gpmodels.kernels.linear import Linear
from gpmodels.operators.blockdiag import BlockDiagonal

pytest.importorskip("torch")
pytest.importorskip("array_api_compat")

from gpmodels.kernels.device.backend import torch_backend  # noqa: E402


@pytest.fixture(scope="module")
def backend():
    return torch_backend("cpu", fused=False)


def _sparse(rng, n, d, density):
    X = sp.random(n, d, density=density, format="csr", random_state=rng)
    X.data = rng.normal(size=X.nnz)
    return X


@pytest.mark.parametrize("kind", ["features", "stored"])
def test_device_linear_forms_against_the_dense_gram(rng, backend, kind):
    X = _sparse(rng, 60, 200, 0.05)
    M = (X @ X.T).toarray()
    rep = DeviceRepresentationConfig(backend, kind=kind).build(X, Linear())
    assert isinstance(rep, DeviceFeatureGram if kind == "features" else DeviceLinearStoredGram)
    B = rng.normal(size=(60, 520))  # C >= 500 columns
    np.testing.assert_allclose(rep.mvm(B), M @ B, rtol=1e-10, atol=1e-10 * np.abs(M @ B).max())
    np.testing.assert_allclose(rep.diag(), np.diag(M), rtol=1e-12)
    J, I = np.arange(0, 60, 2), np.arange(1, 60, 3)
    np.testing.assert_allclose(rep.restrict(J).mvm(B[J]), M[np.ix_(J, J)] @ B[J], rtol=1e-10, atol=1e-9)
    block = rep.cross(I, J)
    np.testing.assert_allclose(block.mvm(B[J]), M[np.ix_(I, J)] @ B[J], rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(block.rmvm(B[I]), M[np.ix_(I, J)].T @ B[I], rtol=1e-10, atol=1e-9)
    X_new = _sparse(rng, 5, 200, 0.1)
    np.testing.assert_allclose(rep.cross_test(X_new).mvm(B), (X_new @ X.T).toarray() @ B, rtol=1e-10, atol=1e-9)


def test_device_auto_chooses_by_the_cost_of_a_product_and_says_why(rng, backend):
    sparse_rows = _sparse(rng, 2000, 3000, 0.002)
    rep = DeviceRepresentationConfig(backend, memory_gb=1.0, columns=10).build(sparse_rows, Linear())
    assert isinstance(rep, DeviceFeatureGram) and "X (X^T B)" in rep.choice.reason
    assert rep.choice.device == backend.label
    long_rows = _sparse(rng, 120, 3000, 0.5)
    rep = DeviceRepresentationConfig(backend, memory_gb=1.0, columns=10).build(long_rows, Linear())
    assert isinstance(rep, DeviceLinearStoredGram) and "costs less stored" in rep.choice.reason


def test_a_block_diagonal_operator_over_the_device_feature_form(rng, backend):
    X = _sparse(rng, 40, 100, 0.1)
    M = (X @ X.T).toarray()
    config = DeviceRepresentationConfig(backend, kind="features")
    op = BlockDiagonal.from_sharing(X, Linear(), 3, "semi", variance=[1.0, 2.0, 0.5], representation=config)
    V = rng.normal(size=(40, 3, 2))
    ref = np.einsum("ij,jck->ick", M, V) * np.array([1.0, 2.0, 0.5])[None, :, None]
    np.testing.assert_allclose(op.mvm(V), ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
