"""skdp: differentially private empirical risk minimisation for scikit-learn."""

from skdp.exceptions import (
    BudgetError,
    IncompatibleSolverError,
    PrivacyAccountingError,
    PrivacyLeakWarning,
)
from skdp.linear_model import DPLogisticRegression
from skdp.solvers import DPSVRG, SOLVERS, DPSVRGPlusPlus, NoisyGD

__version__ = "0.1.0"

__all__ = [
    "DPSVRG",
    "SOLVERS",
    "BudgetError",
    "DPLogisticRegression",
    "DPSVRGPlusPlus",
    "IncompatibleSolverError",
    "NoisyGD",
    "PrivacyAccountingError",
    "PrivacyLeakWarning",
    "__version__",
]
