"""Algorithms over the operator and likelihood protocols: the public names of the sub-packages
:mod:`.map` (MAP fits), :mod:`.cv` (CV learning), :mod:`.marginal` (Laplace and VB learning) and
:mod:`.mkl` (kernel-weight learning), re-exported as they list them."""

from gpmodels.inference import cv, map, marginal, mkl
from gpmodels.inference.cv import *  # noqa: F403
from gpmodels.inference.map import *  # noqa: F403
from gpmodels.inference.marginal import *  # noqa: F403
from gpmodels.inference.mkl import *  # noqa: F403

__all__ = []
__all__ += map.__all__
__all__ += cv.__all__
__all__ += marginal.__all__
__all__ += mkl.__all__
