"""Private solvers and their registry.

A new solver is one file in this package plus one line in :data:`SOLVERS`.
"""

from __future__ import annotations

from typing import Any

from skdp.solvers._base import BaseDPSolver, Plan, Problem, ProblemSpec, SolverResult
from skdp.solvers.accelerated_mirror_descent import DPAccMD
from skdp.solvers.approx_objective_perturbation import ApproxObjectivePerturbation
from skdp.solvers.frank_wolfe import PrivateFrankWolfe
from skdp.solvers.gd import NoisyGD
from skdp.solvers.intercept_only import InterceptOnly
from skdp.solvers.localized_mirror_descent import LocalizedMirrorDescent
from skdp.solvers.mirror_descent import NoisyMirrorDescent
from skdp.solvers.newton import DPNewton
from skdp.solvers.objective_perturbation import ObjectivePerturbation
from skdp.solvers.output_perturbation import OutputPerturbation
from skdp.solvers.phased_sgd import PhasedDPSGD
from skdp.solvers.regularized_mirror_descent import RegularizedMirrorDescent
from skdp.solvers.sufficient_statistics import SufficientStatistics
from skdp.solvers.svrg import DPSVRG
from skdp.solvers.svrg_pp import DPSVRGPlusPlus
from skdp.solvers.truncated_mirror_descent import (
    ShuffledTruncatedMirrorDescent,
    TruncatedMirrorDescent,
)

__all__ = [
    "InterceptOnly",
    "DPSVRG",
    "ApproxObjectivePerturbation",
    "DPAccMD",
    "DPNewton",
    "ObjectivePerturbation",
    "PhasedDPSGD",
    "PrivateFrankWolfe",
    "RegularizedMirrorDescent",
    "ShuffledTruncatedMirrorDescent",
    "TruncatedMirrorDescent",
    "LocalizedMirrorDescent",
    "NoisyMirrorDescent",
    "SOLVERS",
    "SufficientStatistics",
    "BaseDPSolver",
    "DPSVRGPlusPlus",
    "NoisyGD",
    "OutputPerturbation",
    "Plan",
    "Problem",
    "ProblemSpec",
    "SolverResult",
    "get_solver",
]

#: The registered solvers: the name an estimator's ``solver=`` accepts, and its class.
#:
#: Each class declares its ``capabilities``; docs/solvers.md tabulates them and says how
#: to add a solver (one file in this package and one line here).
SOLVERS: dict[str, type[BaseDPSolver]] = {
    "gd": NoisyGD,
    "svrg": DPSVRG,
    "svrg++": DPSVRGPlusPlus,
    "output_perturbation": OutputPerturbation,
    "accelerated_mirror_descent": DPAccMD,
    "mirror_descent": NoisyMirrorDescent,
    "localized_mirror_descent": LocalizedMirrorDescent,
    "frank_wolfe": PrivateFrankWolfe,
    "objective_perturbation": ObjectivePerturbation,
    "approx_objective_perturbation": ApproxObjectivePerturbation,
    "regularized_mirror_descent": RegularizedMirrorDescent,
    "truncated_mirror_descent": TruncatedMirrorDescent,
    "shuffled_truncated_mirror_descent": ShuffledTruncatedMirrorDescent,
    "phased_sgd": PhasedDPSGD,
    "sufficient_statistics": SufficientStatistics,
    "newton": DPNewton,
    "intercept_only": InterceptOnly,
}


def accepting_solvers(error: Exception) -> Exception:
    """``error`` with :data:`~skdp.solvers._capabilities.SEE_SOLVERS` replaced by the
    registered solvers that accept the problem it was raised for (its ``suggest``), or
    ``error`` itself. Used by the estimators: the solver layer does not import the
    registry."""
    from skdp.exceptions import IncompatibleSolverError
    from skdp.solvers._capabilities import SEE_SOLVERS, accepting

    suggest = getattr(error, "suggest", None)
    if suggest is None or SEE_SOLVERS not in str(error):
        return error
    name, spec, accounting, relation = suggest
    fits = [key for key, cls in SOLVERS.items()
            if key != name and accepting(cls.capabilities, key, spec, accounting, relation)]
    names = (f"({', '.join(map(repr, fits))})" if fits else
             "(no registered solver accepts this problem as it is)")
    return IncompatibleSolverError(str(error).replace(SEE_SOLVERS, names))


def get_solver(solver: str | BaseDPSolver, **params: Any) -> BaseDPSolver:
    """A solver instance from a registry name (with ``params``) or a solver object.

    A solver object is returned as a fresh copy with the same parameters, so that a fit
    never mutates the object the user passed.

    Parameters
    ----------
    solver : str or BaseDPSolver
        A key of :data:`SOLVERS`, or a solver object.
    **params
        Constructor parameters of the named solver (ignored for a solver object, whose
        own parameters are copied).

    Returns
    -------
    BaseDPSolver
        A new solver instance.

    Raises
    ------
    ValueError
        If ``solver`` is not a registered name.
    """
    if isinstance(solver, BaseDPSolver):
        return type(solver)(**solver.get_params())
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; available: {sorted(SOLVERS)}.")
    return SOLVERS[solver](**params)
