"""skdp: differentially private empirical risk minimisation for scikit-learn."""

from skdp.exceptions import (
    BudgetError,
    IncompatibleSolverError,
    PrivacyAccountingError,
    PrivacyLeakWarning,
)
from skdp.linear_model import DPLinearRegression, DPLinearSVC, DPLogisticRegression
from skdp.solvers import DPSVRG, SOLVERS, DPSVRGPlusPlus, NoisyGD, OutputPerturbation

__version__ = "0.1.0"

__all__ = [
    "DPSVRG",
    "SOLVERS",
    "BudgetError",
    "DPLinearRegression",
    "DPLinearSVC",
    "DPLogisticRegression",
    "DPSVRGPlusPlus",
    "IncompatibleSolverError",
    "NoisyGD",
    "OutputPerturbation",
    "PrivacyAccountingError",
    "PrivacyLeakWarning",
    "__version__",
]
