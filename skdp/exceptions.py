"""Named warnings and errors raised by skdp."""

__all__ = [
    "BudgetError",
    "IncompatibleSolverError",
    "PrivacyAccountingError",
    "PrivacyLeakWarning",
]


class PrivacyLeakWarning(UserWarning):
    """A setting weakens or removes the privacy guarantee.

    Raised for public facts only (the budget, the dataset size, a seed), never for
    anything computed from private data.
    """


class BudgetError(ValueError):
    """The privacy budget (epsilon, delta) is invalid or cannot be met."""


class IncompatibleSolverError(ValueError):
    """A solver cannot run on the requested loss, constraint or accountant."""


class PrivacyAccountingError(RuntimeError):
    """Re-accounting the ledger of a fit exceeded the budget (a bug, never silent)."""
