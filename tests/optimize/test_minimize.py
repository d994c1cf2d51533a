"""The one outer optimiser ``minimize``: result type, bounds, failed evaluations of plain functions,
generic checkpoints (an opaque inner state), and Laplace / VB learning resumed after an interrupt
ending where the uninterrupted run ends."""

import attrs
import numpy as np
import pytest

from gpmodels.errors import CheckpointError, InputError
from gpmodels.inference.marginal.laplace import LaplaceOptions, learn_laplace
from gpmodels.inference.marginal.vb import VBOptions, learn_vb
from gpmodels.kernels.rbf import RBF
from gpmodels.likelihoods import Logistic
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.optimize import Checkpointing, OuterOptions, minimize
from gpmodels.optimize.checkpoint import CHECKPOINT_FORMAT, RunIdentity, read_checkpoint, write_checkpoint
from gpmodels.optimize.driver import OptimizeResult
from gpmodels.optimize.lbfgs import Trial
from gpmodels.optimize.objective import log_box


class Interrupt(Exception):
    pass


def _data(n=30, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 2))
    f = np.sin(2 * X[:, 0]) + X[:, 1]
    return X, np.where(f + 0.3 * r.normal(size=n) > 0, 1.0, -1.0)


def test_plain_function_result_and_describe():
    A = np.diag([1.0, 4.0])
    res = minimize(
        lambda x: (0.5 * x @ A @ x - x[0], A @ x - [1.0, 0.0]),
        [0.0, 0.0],
        ["kernel.log_w", "shift"],
        options=OuterOptions(ftol=0.0, gtol=1e-10, max_iter=50),
    )
    assert isinstance(res, OptimizeResult) and res.converged
    np.testing.assert_allclose(res.x, [1.0, 0.0], atol=1e-8)
    assert res.names == ("kernel.log_w", "shift") and res.values[0] == 0.0 and res.values[-1] == res.value
    assert res.iterations == len(res.trace) - 1 and res.evaluations >= res.iterations and res.failed == 0
    assert res.describe() == pytest.approx({"kernel.w": np.e, "shift": 0.0}, abs=1e-7)


def test_default_box_is_x0_plus_minus_ten_and_active_bounds_hold():
    res = minimize(lambda x: (float(-x @ x), -2 * x), [1.0, -2.0], ["a", "b"])  # unbounded below: ends at the box
    np.testing.assert_allclose(res.x, [11.0, -12.0])
    np.testing.assert_array_equal(log_box([0.0], half_width=1.0, lower=-0.5), [[-0.5, 1.0]])
    with pytest.raises(InputError, match="kernel.log_w = 3 .*outside the bounds"):
        log_box([3.0], upper=2.0, names=["kernel.log_w"])
    with pytest.raises(InputError, match="names must have 2 entries"):
        minimize(lambda x: (0.0, x), [0.0, 1.0], ["a"])


def test_errors_of_a_plain_function_are_failed_evaluations():
    """A LinAlgError beyond x = 1.5 is a right bracket of the line search, not a crash."""

    def fun(x):
        if x[0] > 1.5:
            raise np.linalg.LinAlgError("not positive definite")
        return float((x[0] - 2.0) ** 2), np.array([2.0 * (x[0] - 2.0)])

    res = minimize(fun, [0.0], ["a"], options=OuterOptions(max_iter=40, ftol=0.0))
    assert res.failed > 0 and res.x[0] <= 1.5 and res.x[0] > 1.3


class _Inner:
    """An inner state with to_arrays(), restored by the objective's restore_inner."""

    def __init__(self, v):
        self.v = np.asarray(v, dtype=float)

    def to_arrays(self):
        return {"v": self.v}


class _Objective:
    def __init__(self):
        self.seeds = []

    def evaluate(self, x, seed):
        self.seeds.append(seed)
        return Trial(float((x - 1.0) @ (x - 1.0)), 2 * (x - 1.0), True, _Inner(x))

    @staticmethod
    def restore_inner(arrays):
        return _Inner(arrays["v"])

    def identity(self):
        return {"problem": "shifted square"}


def test_checkpoint_carries_an_opaque_inner_state(tmp_path):
    ck = Checkpointing(tmp_path / "ck.npz")
    opts = OuterOptions(max_iter=3, ftol=0.0, gtol=0.0)

    def stop_at_1(rec):
        if rec.iteration == 1:
            raise Interrupt()

    with pytest.raises(Interrupt):
        minimize(_Objective(), [3.0, -2.0], ["a", "b"], options=opts, checkpoint=ck, on_iteration=stop_at_1)
    obj = _Objective()
    res = minimize(obj, [3.0, -2.0], ["a", "b"], options=opts, checkpoint=ck)
    assert res.resumed_from == 1 and isinstance(obj.seeds[0], _Inner)  # the restored inner state seeds the rest
    with pytest.raises(CheckpointError, match="another run.*problem"):
        other = _Objective()
        other.identity = lambda: {"problem": "another"}
        minimize(other, [3.0, -2.0], ["a", "b"], options=opts, checkpoint=ck)
    st = res.state
    ident = RunIdentity({}, np.zeros(2), np.zeros(0))
    with pytest.raises(CheckpointError, match="inner state of type object"):
        write_checkpoint(tmp_path / "x.npz", attrs.evolve(st, inner=object()), ident)
    write_checkpoint(tmp_path / "d.npz", st, ident)
    back, _ = read_checkpoint(tmp_path / "d.npz", ident)
    assert set(back.inner) == {"v"}  # no restore_inner: the named arrays
    np.testing.assert_array_equal(back.inner["v"], st.inner.v)


def test_a_checkpoint_of_the_old_format_is_refused(tmp_path):
    res = minimize(
        _Objective(), [3.0], ["a"], options=OuterOptions(max_iter=1), checkpoint=Checkpointing(tmp_path / "ck.npz")
    )
    path = tmp_path / "ck.npz"
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    header = bytes(arrays["header"]).decode().replace(CHECKPOINT_FORMAT, "gpmodels.cv-checkpoint/1")
    from gpmodels.optimize.checkpoint import _checksum

    arrays.pop("checksum")
    arrays.pop("header")
    arrays["checksum"] = np.frombuffer(_checksum(header.encode(), arrays).encode(), dtype=np.uint8)
    arrays["header"] = np.frombuffer(header.encode(), dtype=np.uint8)
    np.savez(path, **arrays)
    with pytest.raises(CheckpointError, match=r"format 'gpmodels.cv-checkpoint/1'.*refused"):
        minimize(_Objective(), [3.0], ["a"], options=OuterOptions(max_iter=1), checkpoint=Checkpointing(path))
    assert res.iterations == 1


def _same(a, b):
    np.testing.assert_allclose(a.x, b.x, rtol=1e-11, atol=1e-12)
    assert a.value == pytest.approx(b.value, rel=1e-12)
    assert a.iterations == b.iterations and a.evaluations == b.evaluations
    assert a.values == pytest.approx(b.values, rel=1e-12)


LEARNERS = {
    "laplace": lambda X, yb, **kw: learn_laplace(
        BlockDiagonal.from_sharing(X, RBF(5.0), 1, "tied", 0.3), Logistic(), yb, LaplaceOptions(path="exact"), **kw
    ),
    "vb": lambda X, yb, **kw: learn_vb(
        BlockDiagonal.from_sharing(X, RBF(5.0), 1, "tied", 0.3), Logistic(), yb[:, None], VBOptions(), **kw
    ),
}


@pytest.mark.parametrize("name", list(LEARNERS))
def test_interrupted_marginal_learning_resumes_to_the_uninterrupted_result(tmp_path, name):
    X, yb = _data()
    learn = LEARNERS[name]
    outer = OuterOptions(max_iter=5, ftol=0.0, gtol=0.0)
    full, _, _ = learn(X, yb, outer=outer, checkpoint=Checkpointing(tmp_path / "full.npz"))
    assert full.iterations == 5
    seen = []

    def stop_at_2(rec):
        seen.append(rec.iteration)
        if rec.iteration == 2:
            raise Interrupt()

    with pytest.raises(Interrupt):
        learn(X, yb, outer=outer, checkpoint=Checkpointing(tmp_path / "ck.npz"), on_iteration=stop_at_2)
    assert seen == [0, 1, 2]
    seen.clear()
    resumed, op, lik = learn(
        X,
        yb,
        outer=outer,
        checkpoint=Checkpointing(tmp_path / "ck.npz"),
        on_iteration=lambda rec: seen.append(rec.iteration),
    )
    assert resumed.resumed_from == 2 and seen == [3, 4, 5]
    _same(resumed, full)
    np.testing.assert_allclose(np.concatenate([op.params, lik.params]), full.x, rtol=1e-12)
    with pytest.raises(CheckpointError, match="another run.*targets"):
        learn(X, -yb, outer=outer, checkpoint=Checkpointing(tmp_path / "ck.npz"))
