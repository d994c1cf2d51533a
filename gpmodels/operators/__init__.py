"""The MVM operator protocol and its generic compositions."""

from gpmodels.operators.anova import ANOVA
from gpmodels.operators.base import Operator
from gpmodels.operators.blockdiag import BlockDiagonal
from gpmodels.operators.coupled import Coupled
from gpmodels.operators.intercept import Intercept
from gpmodels.operators.sum import Sum

__all__ = ["Operator", "BlockDiagonal", "Intercept", "Sum", "ANOVA", "Coupled"]
