"""The inner MAP solvers by name: ``newton-cg`` (:class:`NewtonCG`, Seeger 2008, Alg. 1) and ``exact``
(:class:`ExactNewton`, App. C).  Options classes and specs name a solver; :func:`make_solver` builds
the object, which every fit takes (``fit_map(..., solver=NewtonCG(options))``)."""

from __future__ import annotations

from gpmodels.errors import InputError
from gpmodels.inference.map.exact_newton import ExactNewton
from gpmodels.inference.map.newton import NewtonOptions, NewtonSolver
from gpmodels.inference.map.newton_cg import NewtonCG

__all__ = ["SOLVERS", "SOLVER_NAMES", "make_solver"]

#: solver name -> class (each built from ``NewtonOptions``)
SOLVERS = {NewtonCG.name: NewtonCG, ExactNewton.name: ExactNewton}
SOLVER_NAMES = tuple(SOLVERS)


def make_solver(name: str, options: NewtonOptions | None = None) -> NewtonSolver:
    """The solver called ``name`` (one of :data:`SOLVER_NAMES`) with ``options``."""
    if name not in SOLVERS:
        raise InputError(f"solver must be one of {SOLVER_NAMES}; got {name!r}")
    return SOLVERS[name](options or NewtonOptions())
