"""The inner state of CV learning: every fold's α[J_k] and what warm-starts its next solves (Seeger 2008,
Sec. 4), as the arrays of a checkpoint."""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.errors import InputError

__all__ = ["CVState"]


@attrs.frozen(eq=False)
class CVState:
    """The inner state: α[J_k] of every fold, shape (|J_k|, C) each (Sec. 4), and optionally the
    last accumulation solutions β_k (same shapes), which warm-start the next accumulation CG, and
    the ``lowrank`` preconditioner's eigensolver subspaces of every fold's K̃_J, shape (|J_k|, m),
    which start the next evaluation's eigensolvers (:func:`~gpmodels.inference.map.newton_cg`)."""

    alphas: tuple
    betas: tuple | None = None
    bases: tuple | None = None

    def __attrs_post_init__(self):
        object.__setattr__(self, "alphas", tuple(np.asarray(a, dtype=np.float64) for a in self.alphas))
        if self.betas is not None:
            betas = tuple(np.asarray(b, dtype=np.float64) for b in self.betas)
            if len(betas) != len(self.alphas) or any(b.shape != a.shape for a, b in zip(self.alphas, betas)):
                raise InputError("CVState.betas must match alphas: one array of the same shape per fold")
            object.__setattr__(self, "betas", betas)
        if self.bases is not None:
            bases = tuple(np.asarray(b, dtype=np.float64) for b in self.bases)
            if len(bases) != len(self.alphas) or any(
                b.ndim != 2 or b.shape[0] != a.shape[0] for a, b in zip(self.alphas, bases)
            ):
                raise InputError("CVState.bases must match alphas: one (|J_k|, m) array per fold")
            object.__setattr__(self, "bases", bases)

    def to_arrays(self) -> dict:
        """Named arrays for checkpoints: ``alpha_<k>`` and (when kept) ``beta_<k>`` and ``basis_<k>``
        per fold k."""
        out = {f"alpha_{k}": a for k, a in enumerate(self.alphas)}
        out.update({f"beta_{k}": b for k, b in enumerate(self.betas or ())})
        out.update({f"basis_{k}": b for k, b in enumerate(self.bases or ())})
        return out

    @classmethod
    def from_arrays(cls, arrays: dict) -> CVState:
        """The inverse of :meth:`to_arrays`; a missing fold raises :class:`InputError`."""
        q = sum(1 for name in arrays if name.startswith("alpha_"))

        def optional(prefix):
            return (
                tuple(arrays[f"{prefix}_{k}"] for k in range(q))
                if any(n.startswith(f"{prefix}_") for n in arrays)
                else None
            )

        try:
            alphas = tuple(arrays[f"alpha_{k}"] for k in range(q))
            betas, bases = optional("beta"), optional("basis")
        except KeyError as exc:
            raise InputError(
                f"CVState arrays must hold alpha_0..alpha_{q - 1} (and beta_k, basis_k alike); {exc} is missing"
            ) from None
        return cls(alphas, betas, bases)
