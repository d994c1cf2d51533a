"""The folds of CV: a checked partition {I_k} of the training points, the training sets
J_k = {1..n} \\ I_k, and each fold's task with its part of the inner state."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from gpmodels.errors import InputError
from gpmodels.inference.cv.state import CVState

__all__ = ["check_partition", "complements", "FoldTask", "fold_tasks"]


def check_partition(folds: Sequence, n: int) -> tuple[np.ndarray, ...]:
    """Validate a q-partition of range(n): q >= 2 non-empty, disjoint folds covering every point."""
    if isinstance(folds, np.ndarray) or len(folds) < 2:
        raise InputError(
            f"folds must be a list of q >= 2 index arrays (a partition of 0..{n - 1}); got {type(folds).__name__}"
            f"{'' if isinstance(folds, np.ndarray) else f' of length {len(folds)}'}"
        )
    out, seen = [], np.zeros(n, dtype=np.intp)
    for k, I in enumerate(folds):
        I = np.asarray(I)
        if I.ndim != 1 or I.size == 0 or I.dtype.kind not in "iu":
            raise InputError(
                f"fold {k} must be a non-empty 1-D integer index array; got dtype {I.dtype}, shape {I.shape}"
            )
        if I.min() < 0 or I.max() >= n:
            raise InputError(f"fold {k} must index range(0, {n}); got values from {I.min()} to {I.max()}")
        np.add.at(seen, I, 1)
        out.append(np.sort(I.astype(np.intp)))
    if np.any(seen != 1):
        twice, never = np.flatnonzero(seen > 1), np.flatnonzero(seen == 0)
        raise InputError(
            f"folds must partition 0..{n - 1}: {twice.size} points lie in more than one fold "
            f"(first {twice[:5].tolist()}), {never.size} in none (first {never[:5].tolist()})"
        )
    return tuple(out)


def complements(folds, n: int) -> list[np.ndarray]:
    """The training sets J_k = {1..n} \\ I_k of the folds, sorted."""
    mask = np.ones(n, dtype=bool)
    out = []
    for I in folds:
        mask[I] = False
        out.append(np.flatnonzero(mask))
        mask[I] = True
    return out


@attrs.frozen(eq=False)
class FoldTask:
    """What fold k needs besides the evaluation's common inputs: its held-out set I_k, training set
    J_k = {1..n} \\ I_k and its part of the inner state (α[J_k] and β_k, or None: cold)."""

    k: int
    I: np.ndarray
    J: np.ndarray
    alpha0: np.ndarray | None = None
    beta0: np.ndarray | None = None
    basis0: np.ndarray | None = None


def fold_tasks(folds, n: int, C: int, state: CVState | None) -> list[FoldTask]:
    """One :class:`FoldTask` per fold, with the state's α[J_k], β_k checked against |J_k| x C."""
    tasks = []
    for k, (I, J) in enumerate(zip(folds, complements(folds, n))):
        alpha0 = None if state is None else state.alphas[k]
        if alpha0 is not None and alpha0.shape != (J.size, C):
            raise InputError(f"state.alphas[{k}] must have shape ({J.size}, {C}); got {alpha0.shape}")
        beta0 = None if state is None or state.betas is None else state.betas[k]
        basis0 = None if state is None or state.bases is None else state.bases[k]
        if basis0 is not None and basis0.shape[0] != J.size:
            raise InputError(f"state.bases[{k}] must have {J.size} rows; got {basis0.shape[0]}")
        tasks.append(FoldTask(k, I, J, alpha0, beta0, basis0))
    return tasks
