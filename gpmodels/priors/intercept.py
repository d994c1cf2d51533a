"""The intercept policy shared by the priors: K̃ = K + σ² 1 1ᵀ per class when σ² > 0 (Seeger 2008, Sec. 2)."""

from __future__ import annotations

import attrs

from gpmodels.errors import InputError
from gpmodels.operators.base import Operator
from gpmodels.operators.intercept import Intercept

__all__ = ["InterceptPolicy"]


class InterceptPolicy:
    """Mixin of an attrs prior with the fields ``sigma2`` (σ² ≥ 0; 0 drops the intercept) and ``learn_sigma2``."""

    __slots__ = ()

    #: the intercept variance σ² can be learned with the other hyperparameters (:meth:`learning_sigma2`)
    can_learn_sigma2 = True

    def learning_sigma2(self):
        """This prior with σ² among its learned hyperparameters."""
        return attrs.evolve(self, learn_sigma2=True)

    def with_intercept(self, op: Operator) -> Operator:
        """``op`` wrapped in :class:`Intercept` when σ² > 0, else ``op`` itself."""
        if self.sigma2 == 0:
            if self.learn_sigma2:
                raise InputError("learn_sigma2 needs sigma2 > 0 to start from")
            return op
        return Intercept(op, self.sigma2, learn=self.learn_sigma2)
