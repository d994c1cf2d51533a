"""How each kernel matrix is represented: :class:`RepresentationConfig` builds one representation per
kernel matrix (:mod:`gpmodels.kernels.representation_base`): stored (:mod:`~gpmodels.kernels.stored_gram`),
recomputed in row blocks (:mod:`~gpmodels.kernels.blocked_gram`), the linear kernel's feature form
(:mod:`~gpmodels.kernels.feature_gram`) or low rank (:mod:`~gpmodels.kernels.lowrank_gram`); off the CPU
it hands over to a device configuration (:mod:`gpmodels.kernels.device.gram`).

Its ``auto`` kind chooses within a memory budget (:mod:`gpmodels.kernels.memory_budget`) and records the
choice as ``rep.choice``.
"""

from __future__ import annotations

import logging

import attrs
import scipy.sparse as sp

from gpmodels.errors import DeviceError
from gpmodels.kernels.base import Kernel
from gpmodels.kernels.blocked_gram import BlockedGram
from gpmodels.kernels.device import backend as device_backend
from gpmodels.kernels.device.config import DeviceRepresentationConfig
from gpmodels.kernels.feature_gram import FeatureGram
from gpmodels.kernels.lowrank_gram import LowRankGram
from gpmodels.kernels.memory_budget import (
    GIB,
    LinearShape,
    RepresentationChoice,
    choose_representation,
    default_budget_bytes,
)
from gpmodels.kernels.mixed_precision import STORAGE_DTYPES
from gpmodels.kernels.representation_base import Representation, RepresentationBuilder
from gpmodels.kernels.stored_gram import SqDistCache, StoredGram
from gpmodels.validation import (
    boolean,
    nonnegative_number,
    one_of,
    optional,
    positive_int,
    positive_number,
)

__all__ = ["RepresentationConfig", "REPRESENTATION_KINDS", "DEVICES"]

REPRESENTATION_KINDS = ("auto", "stored", "blocked", "features", "lowrank")
#: where kernel matrices live: ``cpu`` (the host representations), ``cuda`` (:mod:`gpmodels.kernels.device` on PyTorch's
#: GPU, an error if there is none), ``auto`` (the GPU when there is one and the kernel has a device form)
DEVICES = ("cpu", "cuda", "auto")
#: the squared-distance cache of a stored matrix may take this share of the memory budget
SQ_DIST_CACHE_SHARE = 0.1

LOG = logging.getLogger("gpmodels")


@attrs.frozen
class RepresentationConfig(RepresentationBuilder):
    """How to represent each kernel matrix.

    ``kind``: ``stored`` / ``blocked`` / ``features`` / ``lowrank``, or ``auto``: chosen per kernel
    matrix from n, the number of distinct kernel matrices and the memory budget ``memory_gb`` (None:
    a fraction of the machine's available memory), see :mod:`gpmodels.kernels.memory_budget`.
    ``auto`` approximates (``lowrank``) only with ``allow_lowrank``; when nothing exact fits it raises.
    ``dtype``: storage of ``stored`` matrices (None: float64, or for ``auto`` the first that fits).
    ``memory_mb`` bounds one on-the-fly block (blocked MVMs, cross blocks, building M).
    ``columns``: the number of columns of one product that ``auto`` costs the linear kernel's forms for
    (None: the operator's, :meth:`for_columns`, else 1); ``dtype`` float32 also stores a sparse X of the
    ``features`` form in float32 (float64 sums).

    ``device``: ``cpu``, ``cuda`` or ``auto`` (:data:`DEVICES`); off the CPU, ``build`` hands over to
    :meth:`device_builder` (``stored`` and ``auto`` keep their meaning there, ``blocked`` is the
    device's ``recomputed`` form).

    A configuration holds no engine: an engine that keeps kernel matrices on its workers wraps it
    (``engine.representation(config)``).
    """

    kind: str = attrs.field(default="auto", validator=one_of(REPRESENTATION_KINDS))
    memory_mb: float = attrs.field(default=256.0, validator=positive_number())
    rank: int = attrs.field(default=200, validator=positive_int())  # lowrank: maximal rank of the ICF
    tol: float = attrs.field(default=1e-8, validator=nonnegative_number())  # lowrank: ICF stopping tolerance
    dtype: str | None = attrs.field(default=None, validator=optional(one_of(STORAGE_DTYPES)))
    memory_gb: float | None = attrs.field(default=None, validator=optional(positive_number()))
    allow_lowrank: bool = attrs.field(default=False, validator=boolean())
    blocked_max_n: int = attrs.field(default=50_000, validator=positive_int())
    device: str = attrs.field(default="cpu", validator=one_of(DEVICES))
    columns: int | None = attrs.field(default=None, validator=optional(positive_int()))

    def for_columns(self, columns: int) -> RepresentationConfig:
        """This configuration costing products of ``columns`` columns, unless it names its own."""
        return self if self.columns is not None else attrs.evolve(self, columns=max(1, int(columns)))

    def device_builder(self, kernel: Kernel, X=None) -> RepresentationBuilder | None:
        """The device configuration that builds ``kernel``'s matrices, or None for the CPU.  ``cuda``
        raises a :class:`~gpmodels.errors.DeviceError` naming what is missing (the extra, a CUDA build
        of PyTorch, a GPU, the kernel's device form); ``auto`` falls back to the CPU only then."""
        if self.device == "cpu":
            return None
        if self.device == "auto" and (self._why_cpu(kernel, X) is not None or device_backend.cuda_status() is not None):
            return None
        if self.kind == "lowrank" or (self.kind == "features" and not kernel.is_linear):
            raise DeviceError(
                f"representation kind {self.kind!r} has no device form for the {type(kernel).__name__} kernel; "
                "on device 'cuda' allowed: auto, stored, blocked (recomputed tiles), features (linear kernel)"
            )
        kind = {"blocked": "recomputed"}.get(self.kind, self.kind)
        return DeviceRepresentationConfig(
            device_backend.cuda_backend(),
            kind=kind,
            dtype=self.dtype,
            memory_mb=self.memory_mb,
            memory_gb=self.memory_gb,
            columns=self.columns,
        )

    def budget_bytes(self) -> int:
        return default_budget_bytes() if self.memory_gb is None else int(self.memory_gb * GIB)

    def choose(self, n: int, kernel: Kernel, n_matrices: int = 1, X=None) -> RepresentationChoice:
        """The representation of one of ``n_matrices`` kernel matrices over n points, with its reason; ``X``
        (the points): what the linear kernel's choice costs a product by."""
        if self.kind != "auto":
            dtype = self.dtype or "float64"
            return RepresentationChoice(
                self.kind,
                dtype if self.kind in ("stored", "features") else "float64",
                "given in the configuration",
                0,
                n_matrices,
                None,
            )
        return choose_representation(
            n,
            n_matrices,
            linear=kernel.is_linear,
            budget_bytes=self.budget_bytes(),
            dtype=self.dtype,
            allow_lowrank=self.allow_lowrank,
            rank=self.rank,
            blocked_max_n=self.blocked_max_n,
            blocked_memory_mb=self.memory_mb,
            linear_shape=self._linear_shape(X) if kernel.is_linear else None,
        )

    def _linear_shape(self, X) -> LinearShape | None:
        if X is None:
            return None
        sparse = sp.issparse(X)
        return LinearShape(
            int(X.shape[1]), int(X.nnz) if sparse else int(X.shape[0] * X.shape[1]), sparse, self.columns or 1
        )

    def build(
        self, X, kernel: Kernel, n_matrices: int = 1, *, log: bool = False, like: Representation | None = None
    ) -> Representation:
        """The representation of M(X, X); ``n_matrices``: how many distinct kernel matrices the
        operator holds (``auto`` budgets for all of them); ``log``: say the choice on the
        ``gpmodels`` logger.  The choice is kept as ``rep.choice``.

        ``like``: a representation this configuration built on the same X for another kernel
        value (an operator at its previous hyperparameters); a stored matrix then reuses its
        squared-distance cache.  Stored matrices (float64 or float32) of kernels with ``has_sq_dist_form``
        get such a cache when it takes at most ``SQ_DIST_CACHE_SHARE`` of the memory budget
        (its kept blocks share the rest of that share)."""
        kernel.check_inputs(X)
        device = self.device_builder(kernel, X)
        if device is not None:
            return device.build(X, kernel, n_matrices, log=log, like=like)
        if isinstance(like, StoredGram) and like.sq_dists is not None and like.X is X:
            rep = StoredGram(X, kernel, cross_memory_mb=self.memory_mb, dtype=like.dtype, sq_dists=like.sq_dists)
            rep.choice = like.choice
            return rep
        choice = self.choose(X.shape[0], kernel, n_matrices, X)
        if log:
            LOG.info("representation %s: %s", self.kind, choice.describe())
        kind = choice.kind
        if kind == "stored":
            cache, share = None, SQ_DIST_CACHE_SHARE * self.budget_bytes()
            if kernel.has_sq_dist_form and 8 * X.shape[0] ** 2 <= share:
                cache = SqDistCache(X, max_block_bytes=share - 8 * X.shape[0] ** 2)
            rep = StoredGram(X, kernel, cross_memory_mb=self.memory_mb, dtype=choice.dtype, sq_dists=cache)
        elif kind == "blocked":
            rep = BlockedGram(X, kernel, self.memory_mb)
        elif kind == "features":
            rep = FeatureGram(X, kernel, choice.dtype)
        else:
            rep = LowRankGram.from_icf(X, kernel, self.rank, self.tol)
        if self.device != "cpu":
            why = self._why_cpu(kernel, X) or device_backend.cuda_status()
            choice = attrs.evolve(choice, device=f"cpu (device auto: {why})")
        rep.choice = choice
        return rep

    def build_group(self, X, kernels, n_matrices, *, log=False, like=None):
        """Several kernels' matrices: on a device (every kernel there) the device configuration's group,
        one stack of stored matrices; on the CPU one ``build`` each."""
        device = self.device_builder(kernels[0], X)
        if device is None or any(self.device_builder(k, X) is None for k in kernels[1:]):
            return super().build_group(X, kernels, n_matrices, log=log, like=like)
        for k in kernels:
            k.check_inputs(X)
        return device.build_group(X, kernels, n_matrices, log=log, like=like)

    def _why_cpu(self, kernel: Kernel, X) -> str | None:
        """Why this matrix cannot live on a device (None: it can, given a GPU)."""
        if kernel.is_linear and self.kind in ("auto", "stored", "features"):
            return None  # X (X^T B) with PyTorch's sparse CSR, or a stored Gram matrix (device.features)
        if kernel.distance_form is None:
            return f"the {type(kernel).__name__} kernel has no device form"
        if self.kind in ("features", "lowrank"):
            return f"kind {self.kind} has no device form"
        if X is not None and sp.issparse(X):
            return "sparse inputs"
        return None

    def keeps_full_matrix(self, kernel: Kernel) -> bool:
        """Whether this configuration keeps an exact full matrix of ``kernel`` (``stored``,
        ``blocked``, or ``auto`` for a kernel without a feature form): what an engine may hold on
        its workers instead."""
        return self.kind in ("stored", "blocked") or (self.kind == "auto" and not kernel.is_linear)
