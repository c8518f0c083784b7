"""Named warnings and errors raised by skdp."""

__all__ = [
    "BudgetError",
    "IncompatibleSolverError",
    "NoiseDominatedWarning",
    "PrivacyAccountingError",
    "PrivacyLeakWarning",
]


class PrivacyLeakWarning(UserWarning):
    """A setting weakens or removes the privacy guarantee.

    Raised for public facts only (the budget, the dataset size, a seed), never for
    anything computed from private data.
    """


class NoiseDominatedWarning(UserWarning):
    """The fit's noise is at least as large as the signal it could carry.

    Raised from public quantities (the dataset size, the shape, the budget) and released
    (DP) bounds only, so the warning itself costs no privacy (docs/privacy.md, 1.6).
    """


class BudgetError(ValueError):
    """The privacy budget (epsilon, delta) is invalid or cannot be met."""


class IncompatibleSolverError(ValueError):
    """A solver cannot run on the requested loss, constraint or accounting method."""


class PrivacyAccountingError(RuntimeError):
    """Re-accounting the ledger of a fit exceeded the budget (a bug, never silent)."""
