"""Deterministic, seeded splits: train/test, q-fold partitions, subsamples.

Every function takes an explicit ``seed`` (an int or a numpy Generator); the same seed always
gives the same split.  Stratified variants keep class proportions within one point per class.
"""

from __future__ import annotations

import numpy as np

from gpmodels.errors import InputError

__all__ = ["rng_from", "train_test_split", "kfold_partition", "subsample", "stratified_counts"]


def rng_from(seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, (bool, float)) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"seed must be an integer (splits are always seeded); got {seed!r}")
    return np.random.default_rng(int(seed))


def _class_blocks_order(y, rng) -> np.ndarray:
    """A permutation that lays the classes out one after the other (classes in random order, each
    class' points shuffled), so that dealing its positions round robin to q folds gives every
    class ⌊n_c/q⌋ or ⌈n_c/q⌉ points in each fold and the fold sizes within one point."""
    y = np.asarray(y)
    classes = np.unique(y)
    return np.concatenate([rng.permutation(np.flatnonzero(y == c)) for c in rng.permutation(classes)])


def train_test_split(n: int, test_fraction: float, seed, y=None) -> tuple[np.ndarray, np.ndarray]:
    """Sorted index arrays (train, test).

    With ``y`` the split is stratified: round(test_fraction * n) test points shared among the
    classes in proportion to their sizes (largest remainders), never taking a class' last point.
    """
    if not 0.0 < test_fraction < 1.0:
        raise InputError(f"test_fraction must lie in (0, 1); got {test_fraction}")
    rng = rng_from(seed)
    n_test = int(round(test_fraction * n))
    if n_test == 0 or n_test == n:
        raise InputError(f"test_fraction {test_fraction} of {n} points leaves an empty train or test set")
    if y is None:
        test = rng.choice(n, size=n_test, replace=False)
    else:
        y = np.asarray(y)
        if y.shape != (n,):
            raise InputError(f"Dimension mismatch: y must have shape ({n},); got {y.shape}")
        classes, counts = np.unique(y, return_counts=True)
        quota = test_fraction * counts
        take = np.minimum(np.floor(quota).astype(int), counts - 1)
        room = counts - 1 - take
        order = np.argsort(-(quota - np.floor(quota)), kind="stable")
        for c in order:
            if take.sum() >= n_test:
                break
            if room[c] > 0:
                take[c] += 1
                room[c] -= 1
        test = np.concatenate(
            [rng.choice(np.flatnonzero(y == c), size=k, replace=False) for c, k in zip(classes, take)]
        )
        if test.size == 0:
            raise InputError(
                f"test_fraction {test_fraction} leaves no test point when every class keeps one training point"
            )
    mask = np.zeros(n, dtype=bool)
    mask[test] = True
    return np.flatnonzero(~mask), np.flatnonzero(mask)


def kfold_partition(n: int, q: int, seed, y=None) -> list[np.ndarray]:
    """A random partition of range(n) into q folds I_k (sorted index arrays), stratified by y: each
    class has ⌊n_c/q⌋ or ⌈n_c/q⌉ points in every fold, and fold sizes differ by at most one.

    Each class is shuffled and laid out as one block before the folds deal the points out in turn.
    Interleaving the classes by evenly spaced random keys instead would be periodic in the class
    for equal class sizes, and when q divides C every fold would hold out whole classes (on
    news20-small, 20 classes of 100, each fold would hold out 4 classes and none of the others)."""
    if int(q) != q or q < 2 or q > n:
        raise InputError(f"the number of folds q must be an integer in 2..{n}; got {q}")
    rng = rng_from(seed)
    order = _class_blocks_order(y, rng) if y is not None else rng.permutation(n)
    folds = [np.sort(order[k::q]) for k in range(q)]
    return folds


def stratified_counts(counts, size: int, what: str | None = "the subsample size") -> np.ndarray:
    """Per-class counts of a stratified sample of ``size`` from classes with ``counts`` points.

    Quotas q_c = size · n_c / n are rounded by largest remainder (floors first, the leftover
    points to the largest fractional parts), then every class that got none gets one point,
    taken back from the classes most over their quota.  So every class has at least one point
    and each count is within one point of its quota, except where a small class' one point
    forces it.  ``size`` below the number of classes is an error naming ``what``; with
    ``what=None`` it is allowed and the classes with the smallest quotas get no point.
    """
    counts = np.asarray(counts, dtype=np.int64)
    n, C = int(counts.sum()), counts.size
    if size < C and what is not None:
        raise InputError(
            f"{what} {size} is smaller than the {C} classes of the data; a stratified subsample "
            f"keeps at least one point of every class, so it needs at least {C}"
        )
    quota = size * counts / n
    take = np.floor(quota).astype(np.int64)
    for c in np.argsort(-(quota - take), kind="stable")[: size - int(take.sum())]:
        take[c] += 1
    if size < C:
        return take
    for c in np.flatnonzero(take == 0):  # a class below one point's quota still keeps one point
        donors = np.flatnonzero(take > 1)
        donor = donors[np.argmax((take - quota)[donors])]
        take[donor] -= 1
        take[c] = 1
    return take


def subsample(n: int, size: int, seed, y=None, *, what: str | None = None) -> np.ndarray:
    """Sorted indices of ``size`` points: seeded; with ``y`` stratified by :func:`stratified_counts`
    (every class keeps a share proportional to its size, and at least one point when size is at
    least the number of classes).  ``what`` (e.g. ``"max_train"``) makes a size below the number of
    classes an error naming it; without it such a sample keeps the largest classes."""
    if size >= n:
        return np.arange(n)
    if size < 1:
        raise InputError(f"{what or 'the subsample size'} must be >= 1; got {size}")
    rng = rng_from(seed)
    if y is None:
        order = rng.permutation(n)
        step = np.round(np.linspace(0, n - 1, size)).astype(int)
        return np.sort(order[step])
    y = np.asarray(y)
    if y.shape != (n,):
        raise InputError(f"Dimension mismatch: y must have shape ({n},); got {y.shape}")
    _, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    take = stratified_counts(counts, size, what)
    inverse = inverse.ravel()
    keep = [rng.choice(np.flatnonzero(inverse == c), size=int(k), replace=False) for c, k in enumerate(take)]
    return np.sort(np.concatenate(keep))
