"""skdp: differentially private empirical risk minimisation for scikit-learn."""

# Subpackages reachable as attributes after ``import skdp`` (skdp.metrics.make_private_scorer).
from skdp import (  # noqa: F401
    decomposition,
    metrics,
    model_selection,
    naive_bayes,
    preprocessing,
)
from skdp._report import privacy_report, privacy_spent
from skdp.exceptions import (
    BudgetError,
    IncompatibleSolverError,
    NoiseDominatedWarning,
    PrivacyAccountingError,
    PrivacyLeakWarning,
)
from skdp.linear_model import (
    DPHuberRegressor,
    DPLasso,
    DPLinearRegression,
    DPLinearSVC,
    DPLogisticRegression,
)
from skdp.privacy.budget_accountant import BudgetAccountant
from skdp.solvers import (
    DPSVRG,
    SOLVERS,
    ApproxObjectivePerturbation,
    DPAccMD,
    DPNewton,
    DPSVRGPlusPlus,
    LocalizedMirrorDescent,
    NoisyGD,
    NoisyMirrorDescent,
    ObjectivePerturbation,
    OutputPerturbation,
    PhasedDPSGD,
    PrivateFrankWolfe,
    RegularizedMirrorDescent,
    ShuffledTruncatedMirrorDescent,
    TruncatedMirrorDescent,
)

__version__ = "0.1.0"

__all__ = [
    "DPSVRG",
    "ApproxObjectivePerturbation",
    "DPHuberRegressor",
    "DPLasso",
    "PhasedDPSGD",
    "RegularizedMirrorDescent",
    "ShuffledTruncatedMirrorDescent",
    "TruncatedMirrorDescent",
    "ObjectivePerturbation",
    "PrivateFrankWolfe",
    "DPAccMD",
    "DPNewton",
    "LocalizedMirrorDescent",
    "NoisyMirrorDescent",
    "SOLVERS",
    "BudgetAccountant",
    "BudgetError",
    "DPLinearRegression",
    "DPLinearSVC",
    "DPLogisticRegression",
    "DPSVRGPlusPlus",
    "IncompatibleSolverError",
    "NoisyGD",
    "OutputPerturbation",
    "NoiseDominatedWarning",
    "PrivacyAccountingError",
    "PrivacyLeakWarning",
    "__version__",
    "privacy_report",
    "privacy_spent",
]
