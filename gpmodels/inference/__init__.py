"""Algorithms over the operator and likelihood protocols."""

from .cg import CGResult, cg
from .exact_newton import exact_newton
from .line_search import pair_line_search
from .map import MAPModel, fit_map
from .newton_cg import NewtonDiagnostics, NewtonOptions, NewtonResult, newton_cg

__all__ = ["cg", "CGResult", "newton_cg", "NewtonOptions", "NewtonResult", "NewtonDiagnostics", "exact_newton",
           "pair_line_search", "fit_map", "MAPModel"]
