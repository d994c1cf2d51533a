"""Hierarchical precision, recall and F1 (Kiritchenko et al. 2005; the definitions of HiClass's
``hiclass.metrics.precision`` / ``recall`` / ``f1``).

For example i let S_i be the set of the predicted class and all its ancestors, T_i the same for the
true class, the root excluded.  Micro-averaged (the default):

    hP = Σ_i |S_i ∩ T_i| / Σ_i |S_i|,    hR = Σ_i |S_i ∩ T_i| / Σ_i |T_i|,    hF = 2 hP hR / (hP + hR);

macro-averaged: the same ratios per example, then their mean (hF per example from that example's hP_i
and hR_i).  A prediction that is right at the top levels and wrong below earns partial credit, which
accuracy does not give.  A zero denominator gives 0 (no predicted, or no true, labels at all).

Two forms:
- :func:`hierarchical_prf` for class indices on a :class:`~gpmodels.hierarchy.ClassTree` (what the
  driver reports): |S_i| and |T_i| are the depths of the two leaves, |S_i ∩ T_i| the depth of their lowest
  common ancestor, in O(n · depth).
- :func:`hierarchical_precision`, :func:`hierarchical_recall`, :func:`hierarchical_f1` for label paths
  in HiClass's format: per example one path of labels from the top level down (``["Animal", "Mammal",
  "Cat"]``), "" padding ignored, or a list of such paths (several labels per example: the union of
  their labels), or a single label.  The sets are the labels named, as in HiClass; on a tree whose node
  names are unique (every :class:`ClassTree`) they are the node sets of the first form.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpmodels.errors import InputError

__all__ = ["AVERAGES", "hierarchical_prf", "hierarchical_precision", "hierarchical_recall", "hierarchical_f1"]

#: averaging modes: pooled counts over all examples, or the mean of the per-example ratios.
AVERAGES = ("micro", "macro")


def _ratio(num, den) -> np.ndarray:
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def _f(p, r) -> np.ndarray:
    return _ratio(2.0 * np.asarray(p) * np.asarray(r), np.asarray(p) + np.asarray(r))


def _from_counts(inter, n_pred, n_true, average: str) -> dict:
    """hP, hR, hF from per-example |S ∩ T|, |S|, |T| (module docstring)."""
    if average not in AVERAGES:
        raise InputError(f"average must be one of {AVERAGES}; got {average!r}")
    if average == "micro":
        p, r = float(_ratio(np.sum(inter), np.sum(n_pred))), float(_ratio(np.sum(inter), np.sum(n_true)))
        return {"hP": p, "hR": r, "hF": float(_f(p, r))}
    p, r = _ratio(inter, n_pred), _ratio(inter, n_true)
    if p.size == 0:
        return {"hP": 0.0, "hR": 0.0, "hF": 0.0}
    return {"hP": float(np.mean(p)), "hR": float(np.mean(r)), "hF": float(np.mean(_f(p, r)))}


def hierarchical_prf(y_true, y_pred, tree, average: str = "micro") -> dict:
    """{"hP", "hR", "hF"} of predicted classes ``y_pred`` against true classes ``y_true`` (class indices
    (n,) of ``tree``'s leaves), Kiritchenko et al.'s ancestor sets without the root (module docstring)."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim != 1 or y_pred.shape != y_true.shape:
        raise InputError(
            f"y_true and y_pred must be 1-D arrays of the same length; got shapes {y_true.shape} and {y_pred.shape}"
        )
    C = tree.n_classes
    for name, a in (("y_true", y_true), ("y_pred", y_pred)):
        if a.size and (a.dtype.kind not in "iu" or a.min() < 0 or a.max() >= C):
            raise InputError(f"{name} must hold class indices in 0..{C - 1}")
    y_true, y_pred = y_true.astype(np.intp), y_pred.astype(np.intp)
    depth = tree.depth[tree.leaves]  # (C,) |ancestors + itself| without the root
    d_true, d_pred = depth[y_true], depth[y_pred]
    inter = np.zeros(y_true.size, dtype=np.intp)
    for d, anc in enumerate(tree.leaf_ancestors_by_depth(), start=1):  # anc: (C,) the depth-d ancestor
        inter += (d_true >= d) & (d_pred >= d) & (anc[y_true] == anc[y_pred])
    return _from_counts(inter, d_pred, d_true, average)


def _label_set(entry) -> set:
    """The labels of one example: a label, a path of labels, or a list of paths ("" and None dropped)."""
    if isinstance(entry, (str, bytes)) or np.ndim(entry) == 0:
        items = [entry]
    else:
        items = []
        for e in entry:
            if isinstance(e, (str, bytes)) or np.ndim(e) == 0:
                items.append(e)
            else:
                items.extend(e)
    out = set()
    for v in items:
        if v is None:
            continue
        v = v.item() if isinstance(v, np.generic) else v
        if v != "":
            out.add(v)
    return out


def _path_counts(y_true: Sequence, y_pred: Sequence) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if len(y_true) != len(y_pred):
        raise InputError(f"y_true and y_pred must hold as many examples; got {len(y_true)} and {len(y_pred)}")
    inter, n_pred, n_true = np.zeros((3, len(y_true)), dtype=np.intp)
    for i, (t, p) in enumerate(zip(y_true, y_pred)):
        T, S = _label_set(t), _label_set(p)
        inter[i], n_pred[i], n_true[i] = len(S & T), len(S), len(T)
    return inter, n_pred, n_true


def hierarchical_precision(y_true: Sequence, y_pred: Sequence, average: str = "micro") -> float:
    """hP of label paths (module docstring; HiClass's ``hiclass.metrics.precision``)."""
    return _from_counts(*_path_counts(y_true, y_pred), average)["hP"]


def hierarchical_recall(y_true: Sequence, y_pred: Sequence, average: str = "micro") -> float:
    """hR of label paths (module docstring; HiClass's ``hiclass.metrics.recall``)."""
    return _from_counts(*_path_counts(y_true, y_pred), average)["hR"]


def hierarchical_f1(y_true: Sequence, y_pred: Sequence, average: str = "micro") -> float:
    """hF of label paths (module docstring; HiClass's ``hiclass.metrics.f1``)."""
    return _from_counts(*_path_counts(y_true, y_pred), average)["hF"]
