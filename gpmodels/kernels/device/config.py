"""How a device holds an operator's kernel matrices: :class:`DeviceRepresentationConfig`, the device's
:class:`~gpmodels.kernels.representation_base.RepresentationBuilder`.

``auto`` chooses stored float64, stored float32 or recomputed from the device's free memory
(:func:`choose_device_representation`), as :mod:`gpmodels.kernels.memory_budget` does on the host; for the
linear kernel it chooses between X (X^T B) with X in PyTorch's sparse CSR and a stored Gram matrix by the
cost of one product (:mod:`gpmodels.kernels.device.features`).  One
matrix is a :mod:`~gpmodels.kernels.device.gram` representation; the stored matrices of several kernels of
one operator (``build_group``: a block-diagonal operator's distinct kernels) are one
:class:`~gpmodels.kernels.device.stack.DeviceGramStack`, multiplied in one batched product.
"""

from __future__ import annotations

import logging

import attrs
import scipy.sparse as sp

from gpmodels.errors import DeviceError
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.device.backend import ArrayBackend
from gpmodels.kernels.device.features import DeviceFeatureGram, DeviceLinearStoredGram
from gpmodels.kernels.device.gram import DeviceGram, DeviceRecomputedGram, DeviceStoredGram, device_form
from gpmodels.kernels.device.stack import build_stack
from gpmodels.kernels.memory_budget import (
    GIB,
    SAFETY_FRACTION,
    LinearShape,
    RepresentationChoice,
    linear_choice,
    stored_choice,
)
from gpmodels.kernels.mixed_precision import STORAGE_DTYPES
from gpmodels.kernels.product_cost import ProductRates
from gpmodels.kernels.representation_base import Representation, RepresentationBuilder
from gpmodels.validation import instance_of, one_of, optional, positive_int, positive_number

__all__ = ["DeviceRepresentationConfig", "DEVICE_KINDS", "choose_device_representation"]

DEVICE_KINDS = ("auto", "stored", "recomputed", "features")
LOG = logging.getLogger("gpmodels")


def choose_device_representation(
    n: int, n_matrices: int, *, budget_bytes: int, dtype: str | None, device: str
) -> RepresentationChoice:
    """`auto` on a device: ``stored`` float64 if G n^2 8 bytes fit the budget, else ``stored`` float32
    if G n^2 4 bytes fit, else ``recomputed`` (only Z kept; any n).  ``dtype`` restricts the stored
    steps to that storage type."""
    G = max(1, n_matrices)
    what = f"n = {n}, {G} kernel matri{'x' if G == 1 else 'ces'}, device budget {budget_bytes / GIB:.3g} GiB"
    stored = stored_choice(n, G, budget_bytes, dtype, what, device)
    if stored is not None:
        return stored
    return RepresentationChoice(
        "recomputed",
        "float64",
        f"no stored matrix fits: tiles rebuilt in every product ({what})",
        0,
        G,
        budget_bytes,
        device,
    )


@attrs.frozen
class DeviceRepresentationConfig(RepresentationBuilder):
    """How to hold each kernel matrix on ``backend``'s device.

    ``kind``: ``stored`` / ``recomputed``, or ``auto`` (:func:`choose_device_representation` within
    ``memory_gb``, default :data:`~gpmodels.kernels.memory_budget.SAFETY_FRACTION` of the device's
    free memory).  ``dtype``: storage of ``stored`` matrices (None: float64, or for ``auto`` the first
    that fits).  ``memory_mb`` bounds one tile (building M, recomputed products, gradients).
    """

    backend: ArrayBackend = attrs.field(validator=instance_of(ArrayBackend, what="an array backend"))
    kind: str = attrs.field(default="auto", validator=one_of(DEVICE_KINDS))
    dtype: str | None = attrs.field(default=None, validator=optional(one_of(STORAGE_DTYPES)))
    memory_mb: float = attrs.field(default=256.0, validator=positive_number())
    memory_gb: float | None = attrs.field(default=None, validator=optional(positive_number()))
    #: the number of columns of one product that ``auto`` costs the linear kernel's forms for
    columns: int | None = attrs.field(default=None, validator=optional(positive_int()))

    def for_columns(self, columns: int) -> DeviceRepresentationConfig:
        return self if self.columns is not None else attrs.evolve(self, columns=max(1, int(columns)))

    def budget_bytes(self) -> int:
        if self.memory_gb is not None:
            return int(self.memory_gb * GIB)
        free = self.backend.free_bytes()
        if free is None:
            raise DeviceError(f"the free memory of {self.backend.label} cannot be read; give representation.memory_gb")
        return int(SAFETY_FRACTION * free)

    def choose(self, n: int, kernel: Kernel, n_matrices: int = 1) -> RepresentationChoice:
        if self.kind != "auto":
            dtype = (self.dtype or "float64") if self.kind == "stored" else "float64"
            return RepresentationChoice(
                self.kind, dtype, "given in the configuration", 0, n_matrices, None, self.backend.label
            )
        return choose_device_representation(
            n, n_matrices, budget_bytes=self.budget_bytes(), dtype=self.dtype, device=self.backend.label
        )

    def build(
        self, X, kernel: Kernel, n_matrices: int = 1, *, log: bool = False, like: Representation | None = None
    ) -> Representation:
        """M(X, X) on the device; ``like``: this configuration's representation of the same X at
        another kernel value, whose device inputs are reused (no second upload)."""
        if kernel.is_linear:
            return self._build_linear(X, kernel, n_matrices, log)
        device_form(kernel)
        if isinstance(like, DeviceGram) and like.X is X and like.backend is self.backend:
            rep = like.with_kernel(kernel)
            rep.choice = like.choice
            return rep
        choice = self.choose(X.shape[0], kernel, n_matrices)
        if log:
            LOG.info("representation on %s: %s", self.backend.label, choice.describe())
        if choice.kind == "stored":
            rep = DeviceStoredGram(X, kernel, self.backend, choice.dtype, self.memory_mb)
        else:
            rep = DeviceRecomputedGram(X, kernel, self.backend, self.memory_mb)
        rep.choice = choice
        return rep

    def choose_linear(self, X, n_matrices: int = 1) -> RepresentationChoice:
        """The linear kernel's form on the device: ``features`` or ``stored`` as given, or for ``auto`` the one
        whose product costs less (stored only where M fits the device budget)."""
        n, G = X.shape[0], max(1, n_matrices)
        if self.kind in ("stored", "features"):
            dtype = (self.dtype or "float64") if self.kind == "stored" else "float64"
            return RepresentationChoice(self.kind, dtype, "given in the configuration", 0, G, None, self.backend.label)
        if self.kind != "auto":
            raise DeviceError(
                f"the linear kernel has no {self.kind!r} form on a device; allowed there: auto, stored, features"
            )
        budget = self.budget_bytes()
        sparse = sp.issparse(X)
        nnz = int(X.nnz) if sparse else int(X.shape[0] * X.shape[1])
        shape = LinearShape(int(X.shape[1]), nnz, sparse, self.columns or 1)
        what = f"n = {n}, {G} kernel matri{'x' if G == 1 else 'ces'}, device budget {budget / GIB:.3g} GiB"
        choice = linear_choice(n, G, budget, None if self.dtype is None else self.dtype, what, shape, ProductRates())
        return attrs.evolve(
            choice, dtype="float64" if choice.kind == "features" else choice.dtype, device=self.backend.label
        )

    def _build_linear(self, X, kernel: Kernel, n_matrices: int, log: bool) -> Representation:
        choice = self.choose_linear(X, n_matrices)
        if log:
            LOG.info("representation on %s: %s", self.backend.label, choice.describe())
        if choice.kind == "stored":
            rep = DeviceLinearStoredGram(X, kernel, self.backend, choice.dtype, self.memory_mb)
        else:
            rep = DeviceFeatureGram(X, kernel, self.backend, self.memory_mb)
        rep.choice = choice
        return rep

    def build_group(self, X, kernels, n_matrices, *, log=False, like=None):
        """The matrices of several kernels over X: stored ones as the members of one
        :class:`~gpmodels.kernels.device.stack.DeviceGramStack` (one batched product for all of them),
        recomputed ones one ``build`` each.  ``like``: as for :meth:`build` (its kind and storage, and X
        already on the device)."""
        if any(k.is_linear for k in kernels):
            return [self.build(X, k, n_matrices, log=log, like=like) for k in kernels]
        for k in kernels:
            device_form(k)
        if len(kernels) < 2:
            return super().build_group(X, kernels, n_matrices, log=log, like=like)
        if isinstance(like, DeviceGram) and like.X is X and like.backend is self.backend:
            if not isinstance(like, DeviceStoredGram):
                return super().build_group(X, kernels, n_matrices, log=log, like=like)
            choice, device_X = like.choice, like.inputs.X
        else:
            choice, device_X = self.choose(X.shape[0], kernels[0], n_matrices), None
            if log:
                LOG.info("representation on %s: %s", self.backend.label, choice.describe())
            if choice.kind != "stored":
                return super().build_group(X, kernels, n_matrices, like=like)
        reps = build_stack(X, kernels, self.backend, choice.dtype, self.memory_mb, device_X)
        for rep in reps:
            rep.choice = choice
        return reps

    def keeps_full_matrix(self, kernel: Kernel) -> bool:
        return True
