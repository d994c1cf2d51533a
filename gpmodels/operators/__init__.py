"""The MVM operator protocol and its generic compositions."""

from .anova import ANOVA
from .base import CrossOperator, Operator
from .blockdiag import SHARING_MODES, BlockDiagonal
from .coupled import Coupled
from .intercept import Intercept
from .sum import Sum

__all__ = ["Operator", "CrossOperator", "BlockDiagonal", "Intercept", "Sum", "SHARING_MODES", "ANOVA", "Coupled"]
