"""make_kernel: the one kernel-by-name factory of specs and estimators."""

import subprocess
import sys

import numpy as np
import pytest

from gpmodels.errors import InputError
from gpmodels.kernels import ARD, RBF, Linear, Polynomial, Precomputed, make_kernel


def test_names_build_their_kernels():
    X = np.random.default_rng(0).normal(size=(10, 3))
    assert isinstance(make_kernel("rbf", w=0.5), RBF)
    assert make_kernel("rbf", X=X, w="auto").w == pytest.approx(1.0 / np.sum(np.var(X, axis=0)), rel=1e-6)
    ard = make_kernel("ard", X=X, w=2.0)
    assert isinstance(ard, ARD) and np.allclose(ard.w, [2.0, 2.0, 2.0])
    assert isinstance(make_kernel("linear"), Linear)
    poly = make_kernel("polynomial", degree=3, offset=None)
    assert isinstance(poly, Polynomial) and (poly.degree, poly.scale, poly.offset) == (3, 1.0, 1.0)
    assert isinstance(make_kernel("precomputed", gram=np.eye(4)), Precomputed)


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: make_kernel("rbff", w=1.0),
            "unknown kernel 'rbff'; allowed: 'rbf', 'ard', 'matern', 'matern_ard', "
            "'rational_quadratic', 'rational_quadratic_ard', 'constant', 'white', "
            "'linear', 'polynomial', 'precomputed', 'sum', 'product' "
            "(did you mean 'rbf'?)",
        ),
        (lambda: make_kernel("linear", w=1.0), "kernel 'linear' takes no parameter 'w'"),
        (lambda: make_kernel("rbf"), "kernel 'rbf' needs `w`"),
        (lambda: make_kernel("rbf", w="automatic"), "must be 'auto' or a positive number"),
        (lambda: make_kernel("ard", X=np.zeros((4, 3)), w=[1.0, 2.0]), "Dimension mismatch"),
        (lambda: make_kernel("precomputed"), "needs `gram`"),
    ],
)
def test_one_error_shape(call, message):
    with pytest.raises(InputError) as info:
        call()
    assert message in str(info.value)


@pytest.mark.parametrize("kernel", [RBF(0.5), ARD([1.0, 2.0]), Linear(), Polynomial(3, 2.0, 0.5)], ids=repr)
def test_a_kernel_s_spec_section_rebuilds_it(kernel):
    section = dict(kernel.spec_section())
    rebuilt = make_kernel(section.pop("type"), **section)
    assert type(rebuilt) is type(kernel)
    np.testing.assert_array_equal(rebuilt.params, kernel.params)
    assert rebuilt.spec_section() == kernel.spec_section()


def test_sums_and_products_name_their_terms_and_a_kernel_without_a_spec_name_says_so():
    from sklearn.gaussian_process.kernels import ExpSineSquared

    from gpmodels.kernels import KernelProduct, KernelSum
    from gpmodels.kernels.sklearn_adapter import SklearnKernel

    assert KernelSum((RBF(1.0), Linear())).spec_section() == {
        "type": "sum",
        "terms": [{"type": "rbf", "w": 1.0}, {"type": "linear"}],
    }
    assert KernelProduct((RBF(1.0), Linear())).spec_section()["type"] == "product"
    assert Precomputed(np.eye(3)).spec_section() is None  # its spec form names a file, not a matrix
    assert KernelSum((RBF(1.0), SklearnKernel(ExpSineSquared()))).spec_section() is None


def test_making_a_spec_kernel_does_not_import_scikit_learn():
    """Whether a kernel value is a scikit-learn kernel is decided without importing scikit-learn (about a
    second, paid inside a timed build otherwise); its kernels are still recognised once it is imported."""
    code = (
        "import sys\n"
        "from gpmodels.kernels import make_kernel\n"
        "from gpmodels.kernels.sklearn_adapter import is_sklearn_kernel\n"
        "make_kernel('rbf', w=0.5)\n"
        "assert 'sklearn' not in sys.modules, 'scikit-learn was imported'\n"
        "from sklearn.gaussian_process.kernels import RBF\n"
        "assert is_sklearn_kernel(RBF(1.0)) and make_kernel(RBF(1.0)).params.size == 1\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
