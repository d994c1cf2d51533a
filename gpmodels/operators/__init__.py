"""The MVM operator protocol and its generic compositions."""

from gpmodels.operators.anova import ANOVA
from gpmodels.operators.base import CrossOperator, Operator
from gpmodels.operators.blockdiag import SHARING_MODES, BlockDiagonal
from gpmodels.operators.coupled import Coupled
from gpmodels.operators.intercept import Intercept
from gpmodels.operators.sum import Sum

__all__ = ["Operator", "CrossOperator", "BlockDiagonal", "Intercept", "Sum", "SHARING_MODES", "ANOVA", "Coupled"]
